/*
 * vm.hpp: a header-only C++17 frontend for the vector VM, over the C ABI of vm.h (libvm.so).
 *
 *   #include "vm.hpp"
 *   auto x = vm::linspace<double>(0.0, 1.0, 1000);
 *   auto y = vm::sqrt(x * x + 1.0);          // recorded, not run
 *   double s = vm::sum(y).item();           // runs the batch, reads the result
 *
 * Arrays are strided views of reference-counted bases; operations record VM instructions
 * (buffered and submitted in batches with vm_submit) and nothing runs until a result is read.
 * Every vm_* status is checked: failures throw vm::error. Misuse the wrapper can see by itself
 * (a shape mismatch, a bad slice) throws std::invalid_argument or std::out_of_range.
 * Reference: docs/cpp.md. Link with -lvm.
 */
#ifndef VM_HPP
#define VM_HPP

#if __cplusplus < 201703L
#error "vm.hpp needs C++17"
#endif

#include "vm.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace vm {

/* ---- Errors ---------------------------------------------------------------------------------- */

/** A failed vm_* call: the status code (a VM_ERR_*) and the library's explanation. */
class error : public std::runtime_error {
  public:
    error(int status, const std::string &what) : std::runtime_error(what), status_(status) {}
    /** The VM_ERR_* status of the failed call. */
    int status() const noexcept { return status_; }
    /** The status's name, e.g. "VM_ERR_INVALID_INSTRUCTION". */
    const char *status_name() const noexcept { return vm_status_name(status_); }

  private:
    int status_;
};

namespace detail {

[[noreturn]] inline void fail(int status, const char *call) {
    throw error(status, std::string(call) + ": " + vm_status_name(status) + ": " + vm_last_error());
}

inline void check(int status, const char *call) {
    if (status != VM_OK) {
        fail(status, call);
    }
}

/* The dtype of each element type and its constant operand. */
template <class T> struct dtype_of;
#define VM_HPP_DTYPE(T, ID, FIELD)                                                                                     \
    template <> struct dtype_of<T> {                                                                                   \
        static constexpr uint32_t value = ID;                                                                          \
        static void set(vm_constant &c, T x) { c.value.FIELD = x; }                                                   \
    };
VM_HPP_DTYPE(bool, VM_DTYPE_BOOL, u)
VM_HPP_DTYPE(int8_t, VM_DTYPE_I8, i)
VM_HPP_DTYPE(int16_t, VM_DTYPE_I16, i)
VM_HPP_DTYPE(int32_t, VM_DTYPE_I32, i)
VM_HPP_DTYPE(int64_t, VM_DTYPE_I64, i)
VM_HPP_DTYPE(uint8_t, VM_DTYPE_U8, u)
VM_HPP_DTYPE(uint16_t, VM_DTYPE_U16, u)
VM_HPP_DTYPE(uint32_t, VM_DTYPE_U32, u)
VM_HPP_DTYPE(uint64_t, VM_DTYPE_U64, u)
VM_HPP_DTYPE(float, VM_DTYPE_F32, f)
VM_HPP_DTYPE(double, VM_DTYPE_F64, f)
#undef VM_HPP_DTYPE

static_assert(sizeof(bool) == 1, "vm.hpp stores bool elements as one byte");

template <class T, class = void> struct is_element : std::false_type {};
template <class T> struct is_element<T, std::void_t<decltype(dtype_of<T>::value)>> : std::true_type {};

template <class T> inline void set_constant(vm_operand &o, T x) {
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = dtype_of<T>::value;
    o.u.constant.value.u = 0;
    dtype_of<T>::set(o.u.constant, x);
}

inline void set_i64(vm_operand &o, int64_t x) { set_constant<int64_t>(o, x); }

/** Copies only the first ndim entries: the rest of the 280-byte view is never read. */
inline void set_view(vm_operand &o, const vm_view &v) {
    o.kind = VM_OPERAND_VIEW;
    o.u.view.base = v.base;
    o.u.view.start = v.start;
    o.u.view.ndim = v.ndim;
    for (uint32_t d = 0; d < v.ndim; d++) {
        o.u.view.shape[d] = v.shape[d];
        o.u.view.stride[d] = v.stride[d];
    }
}

/* The state of one context: the C context and the instructions buffered for the next vm_submit. */
class context_state {
  public:
    context_state(const char *config_path, const char *stack) {
        if (vm_abi_version() != VM_ABI_VERSION) {
            throw error(VM_ERR_INVALID_ARGUMENT, "vm: libvm.so has ABI version " + std::to_string(vm_abi_version()) +
                                                     ", vm.h describes version " + std::to_string(VM_ABI_VERSION));
        }
        if (stack != nullptr) {
            check(vm_init_stack(config_path, stack, &ctx_), "vm_init_stack");
        } else {
            check(vm_init(config_path, &ctx_), "vm_init");
        }
        pending_.reset(new vm_instruction[capacity]);
    }
    context_state(const context_state &) = delete;
    context_state &operator=(const context_state &) = delete;
    ~context_state() {
        if (ctx_ != nullptr) {
            submit_pending_noexcept();
            vm_shutdown(ctx_);
        }
    }

    vm_context *get() const noexcept { return ctx_; }

    /** The next free instruction slot of the buffer, opcode and operand count set; the caller
     * fills the operands, then push() adds it (an exception in between leaves it out). */
    vm_instruction &slot(uint32_t opcode, uint32_t noperands) {
        if (n_ == batch_) {
            submit_pending();
        }
        vm_instruction &in = pending_[n_];
        in.opcode = opcode;
        in.noperands = noperands;
        return in;
    }
    void push() noexcept { n_++; }

    /** Gives the buffered instructions to the VM (vm_submit); they run at the next sync/flush. */
    void submit_pending() {
        throw_deferred();
        if (n_ == 0) {
            return;
        }
        size_t n = n_;
        n_ = 0;
        if (vm_submit(ctx_, pending_.get(), n) == VM_OK) {
            return;
        }
        // Nothing of the batch was queued: queue its instructions one by one, so that only the
        // invalid ones are left out, and throw the first one's error.
        int first = VM_OK;
        std::string why;
        for (size_t i = 0; i < n; i++) {
            int status = vm_submit(ctx_, &pending_[i], 1);
            if (status != VM_OK && first == VM_OK) {
                first = status;
                why = std::string("vm_submit: ") + vm_status_name(status) + ": " + vm_last_error();
            }
        }
        if (first != VM_OK) {
            throw error(first, why);
        }
    }

    /** Buffers a FREE of a base; never throws (called from destructors): a failure is kept and
     * thrown by the next call that submits. */
    void free_base(vm_base base, uint64_t nelem) noexcept {
        if (n_ == batch_) {
            submit_pending_noexcept();
            if (n_ == batch_) {
                return;
            }
        }
        vm_instruction &in = pending_[n_++];
        in.opcode = VM_OP_FREE;
        in.noperands = 1;
        vm_operand &o = in.operands[0];
        o.kind = VM_OPERAND_VIEW;
        o.u.view.base = base;
        o.u.view.start = 0;
        o.u.view.ndim = 1;
        o.u.view.shape[0] = nelem;
        o.u.view.stride[0] = 1;
    }

    void flush() {
        submit_pending();
        check(vm_flush(ctx_), "vm_flush");
    }

    void sync(vm_base base) {
        submit_pending();
        check(vm_sync(ctx_, base), "vm_sync");
    }

    /** How many instructions are buffered before a vm_submit (1: every instruction at once). */
    void set_batch(size_t n) {
        submit_pending();
        batch_ = n < 1 ? 1 : (n > capacity ? capacity : n);
    }

    static constexpr size_t capacity = 64;

  private:
    void submit_pending_noexcept() noexcept {
        if (n_ == 0) {
            return;
        }
        size_t n = n_;
        n_ = 0;
        int status = vm_submit(ctx_, pending_.get(), n);
        if (status != VM_OK && deferred_status_ == VM_OK) {
            deferred_status_ = status;
            deferred_ = std::string("vm_submit: ") + vm_status_name(status) + ": " + vm_last_error();
        }
    }

    void throw_deferred() {
        if (deferred_status_ != VM_OK) {
            int status = deferred_status_;
            deferred_status_ = VM_OK;
            throw error(status, deferred_);
        }
    }

    vm_context *ctx_ = nullptr;
    std::unique_ptr<vm_instruction[]> pending_;
    size_t n_ = 0;
    size_t batch_ = capacity;
    int deferred_status_ = VM_OK;
    std::string deferred_;
};

struct state_tag {};

} // namespace detail

/* ---- Context --------------------------------------------------------------------------------- */

/**
 * A VM: the stack a configuration names (vm_init). A shared handle: copies name the same VM, and
 * arrays keep their VM alive, so it is shut down (vm_shutdown) when the last of them goes.
 */
class context {
  public:
    /** The stack of the configuration found as vm_init looks (config_path NULL), or of the file
     * config_path; stack (when not NULL) names the stack to build instead, as VM_STACK would. */
    explicit context(const char *config_path = nullptr, const char *stack = nullptr)
        : state_(std::make_shared<detail::context_state>(config_path, stack)) {}
    /** The context of a state (what array::ctx() returns). */
    context(detail::state_tag, std::shared_ptr<detail::context_state> s) : state_(std::move(s)) {}

    /** The C context, for calls of vm.h. Submit buffered work first (flush()) when mixing. */
    vm_context *get() const noexcept { return state_->get(); }
    /** Submits the buffered instructions and runs everything queued (vm_flush). */
    void flush() const { state_->flush(); }
    /** Asks the flush running on this context in another thread to stop (vm_interrupt): it
     * throws vm::error with status VM_ERR_INTERRUPTED. Returns at once. */
    void interrupt() const { detail::check(vm_interrupt(state_->get()), "vm_interrupt"); }
    /** How many instructions are buffered before one vm_submit (1 to 64; default 64). */
    void set_batch(size_t n) const { state_->set_batch(n); }

    const std::shared_ptr<detail::context_state> &state() const noexcept { return state_; }
    bool operator==(const context &o) const noexcept { return state_ == o.state_; }
    bool operator!=(const context &o) const noexcept { return state_ != o.state_; }

  private:
    std::shared_ptr<detail::context_state> state_;
};

/** The context arrays use when none is given: vm_init(NULL), made on first use. */
inline context &default_context() {
    static context ctx;
    return ctx;
}

/* ---- Shapes and indexes ---------------------------------------------------------------------- */

/** A shape of up to VM_MAX_NDIM extents: `{rows, cols}`, or from a std::vector. */
struct shape_t {
    uint32_t ndim = 0;
    uint64_t dim[VM_MAX_NDIM] = {};

    shape_t() = default;
    shape_t(std::initializer_list<size_t> d) { assign(d.begin(), d.size()); }
    shape_t(const std::vector<size_t> &d) { assign(d.data(), d.size()); }

    uint64_t size() const noexcept {
        uint64_t n = 1;
        for (uint32_t i = 0; i < ndim; i++) {
            n *= dim[i];
        }
        return n;
    }

  private:
    void assign(const size_t *d, size_t n) {
        if (n > VM_MAX_NDIM) {
            throw std::invalid_argument("vm: a shape of " + std::to_string(n) + " dimensions (at most " +
                                        std::to_string(VM_MAX_NDIM) + ")");
        }
        ndim = static_cast<uint32_t>(n);
        for (size_t i = 0; i < n; i++) {
            dim[i] = d[i];
        }
    }
};

/** A missing bound of a range (`vm::range(vm::none, -1)`: from the start to the last but one). */
struct none_t {};
inline constexpr none_t none{};

/** Adds a new axis of extent 1 (NumPy's np.newaxis). */
struct newaxis_t {};
inline constexpr newaxis_t newaxis{};

/** A slice of one axis: start, stop, step as in Python (negative counts from the end; a missing
 * bound is vm::none). */
struct range {
    int64_t start = 0, stop = 0, step = 1;
    bool has_start = false, has_stop = false;

    struct bound {
        int64_t v = 0;
        bool set = false;
        bound(none_t) {}
        template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0> bound(I x) : v(static_cast<int64_t>(x)), set(true) {}
    };

    /** The whole axis (`:`). */
    range() = default;
    /** `start:stop:step`. */
    range(bound a, bound b, int64_t s = 1) : start(a.v), stop(b.v), step(s), has_start(a.set), has_stop(b.set) {}
};

/** One index argument of array::operator(): a range, an integer (drops the axis) or vm::newaxis. */
struct index_arg {
    enum kind_t { slice, single, add_axis } kind;
    range r;
    int64_t i = 0;

    index_arg(const range &x) : kind(slice), r(x) {}
    index_arg(newaxis_t) : kind(add_axis) {}
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    index_arg(I x) : kind(single), i(static_cast<int64_t>(x)) {}
};

namespace detail {

inline std::string shape_string(const vm_view &v) {
    std::string s = "(";
    for (uint32_t d = 0; d < v.ndim; d++) {
        s += (d ? ", " : "") + std::to_string(v.shape[d]);
    }
    return s + (v.ndim == 1 ? ",)" : ")");
}

/** The broadcast shape of two shapes (NumPy's rules), into out. */
inline void broadcast_shape(vm_view &out, const vm_view &a, const vm_view &b) {
    uint32_t n = a.ndim > b.ndim ? a.ndim : b.ndim;
    out.ndim = n;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t x = k < a.ndim ? a.shape[a.ndim - 1 - k] : 1;
        uint64_t y = k < b.ndim ? b.shape[b.ndim - 1 - k] : 1;
        if (x != y && x != 1 && y != 1) {
            throw std::invalid_argument("vm: shapes " + shape_string(a) + " and " + shape_string(b) +
                                        " do not broadcast together");
        }
        out.shape[n - 1 - k] = x == 1 ? y : x;
    }
}

/** Writes the operand of view v broadcast to shape (stride 0 along new and extent-1 axes). */
inline void set_broadcast(vm_operand &o, const vm_view &v, const vm_view &shape) {
    if (v.ndim > shape.ndim) {
        throw std::invalid_argument("vm: shape " + shape_string(v) + " does not broadcast to " + shape_string(shape));
    }
    o.kind = VM_OPERAND_VIEW;
    o.u.view.base = v.base;
    o.u.view.start = v.start;
    o.u.view.ndim = shape.ndim;
    uint32_t lead = shape.ndim - v.ndim;
    for (uint32_t d = 0; d < shape.ndim; d++) {
        o.u.view.shape[d] = shape.shape[d];
        if (d < lead) {
            o.u.view.stride[d] = 0;
        } else {
            uint64_t e = v.shape[d - lead];
            if (e == shape.shape[d]) {
                o.u.view.stride[d] = v.stride[d - lead];
            } else if (e == 1) {
                o.u.view.stride[d] = 0;
            } else {
                throw std::invalid_argument("vm: shape " + shape_string(v) + " does not broadcast to " +
                                            shape_string(shape));
            }
        }
    }
}

/** A base: its handle, size and VM. Freed (a buffered FREE) when the last array of it goes. */
struct base_rec {
    std::shared_ptr<context_state> ctx;
    vm_base id = 0;
    uint64_t nelem = 0;
    uint32_t dtype = 0;

    base_rec(std::shared_ptr<context_state> c, uint32_t dt, uint64_t n) : ctx(std::move(c)), nelem(n), dtype(dt) {
        check(vm_base_new(ctx->get(), dt, n, &id), "vm_base_new");
    }
    base_rec(const base_rec &) = delete;
    base_rec &operator=(const base_rec &) = delete;
    ~base_rec() { ctx->free_base(id, nelem); }
};

} // namespace detail

/* ---- Host views of synced data ---------------------------------------------------------------- */

/** A read-only strided view of an array's host data, valid until the base is next written or
 * freed (see array::host()). Strides are in elements. */
template <class T> class host_view {
  public:
    host_view(const T *base_data, const vm_view &v) : data_(base_data), v_(v) {}
    /** The pointer to element 0 of the view (inside the base's data). */
    const T *data() const noexcept { return data_ + v_.start; }
    uint32_t ndim() const noexcept { return v_.ndim; }
    size_t shape(uint32_t d) const { return static_cast<size_t>(v_.shape[d]); }
    int64_t stride(uint32_t d) const { return v_.stride[d]; }
    size_t size() const noexcept {
        uint64_t n = 1;
        for (uint32_t d = 0; d < v_.ndim; d++) {
            n *= v_.shape[d];
        }
        return static_cast<size_t>(n);
    }
    /** Element (i, j, ...) of the view (no bounds checks). */
    template <class... I> const T &operator()(I... idx) const {
        static_assert(sizeof...(I) <= VM_MAX_NDIM, "too many indexes");
        int64_t ix[] = {static_cast<int64_t>(idx)..., 0};
        int64_t off = v_.start;
        for (size_t d = 0; d < sizeof...(I); d++) {
            off += ix[d] * v_.stride[d];
        }
        return data_[off];
    }
    /** The element at row-major position i of the view. */
    const T &flat(size_t i) const {
        int64_t off = v_.start;
        for (uint32_t d = v_.ndim; d-- > 0;) {
            uint64_t e = v_.shape[d];
            off += static_cast<int64_t>(i % e) * v_.stride[d];
            i /= e;
        }
        return data_[off];
    }

  private:
    const T *data_;
    vm_view v_;
};

/* ---- Arrays ---------------------------------------------------------------------------------- */

template <class T> class array_ref;

/**
 * A strided view (start, shape, strides in elements, up to 16 dimensions) of a base of elements
 * of T; copies share the base (the base is freed when the last array of it goes). Assigning one
 * array to another rebinds the handle; writing into the elements is `a.assign(x)`, `a(...) = x`
 * or a compound assignment (`a += x`).
 */
template <class T> class array {
    static_assert(detail::is_element<T>::value,
                  "vm::array<T>: T must be bool, int8_t..int64_t, uint8_t..uint64_t, float or double");

  public:
    using value_type = T;

    /** An empty handle (no base); most operations on it throw std::invalid_argument. */
    array() { std::memset(&view_, 0, sizeof view_); }

    /** A new, uninitialised-to-zero array of shape (the VM zero-fills bases) in ctx. */
    explicit array(const shape_t &shape, const context &ctx = default_context()) {
        std::memset(&view_, 0, sizeof view_);
        base_ = std::make_shared<detail::base_rec>(ctx.state(), detail::dtype_of<T>::value, shape.size());
        set_contiguous(shape.ndim, shape.dim);
    }

    /* -- Layout */
    bool valid() const noexcept { return base_ != nullptr; }
    uint32_t ndim() const noexcept { return view_.ndim; }
    size_t shape(uint32_t d) const {
        if (d >= view_.ndim) {
            throw std::out_of_range("vm: axis " + std::to_string(d) + " of a " + std::to_string(view_.ndim) + "-d array");
        }
        return static_cast<size_t>(view_.shape[d]);
    }
    std::vector<size_t> shape() const { return std::vector<size_t>(view_.shape, view_.shape + view_.ndim); }
    std::vector<int64_t> strides() const { return std::vector<int64_t>(view_.stride, view_.stride + view_.ndim); }
    int64_t start() const noexcept { return view_.start; }
    size_t size() const noexcept {
        uint64_t n = 1;
        for (uint32_t d = 0; d < view_.ndim; d++) {
            n *= view_.shape[d];
        }
        return static_cast<size_t>(n);
    }
    /** True when the view covers its elements in row-major order without gaps. */
    bool is_contiguous() const noexcept {
        int64_t expect = 1;
        for (uint32_t d = view_.ndim; d-- > 0;) {
            if (view_.shape[d] != 1 && view_.stride[d] != expect) {
                return false;
            }
            expect *= static_cast<int64_t>(view_.shape[d]);
        }
        return true;
    }
    /** The C view (base handle, start, shape, strides). */
    const vm_view &c_view() const noexcept { return view_; }
    vm_base base() const noexcept { return view_.base; }
    context ctx() const { return context_of(); }

    /* -- Views */

    /** A view: one argument per leading axis, each a vm::range, an integer (drops the axis) or
     * vm::newaxis; axes not named are taken whole. Assigning to the result writes its elements. */
    template <class... I> array_ref<T> operator()(const I &...idx) const {
        const index_arg args[] = {index_arg(idx)..., index_arg(newaxis)};
        return array_ref<T>(slice(args, sizeof...(I)));
    }

    /** The view with the same elements in shape (this view must be contiguous). */
    array reshape(const shape_t &shape) const {
        require();
        if (shape.size() != size()) {
            throw std::invalid_argument("vm: cannot reshape " + detail::shape_string(view_) + " (" +
                                        std::to_string(size()) + " elements) to " + std::to_string(shape.size()) +
                                        " elements");
        }
        if (!is_contiguous()) {
            throw std::invalid_argument("vm: reshape of a non-contiguous view " + detail::shape_string(view_) +
                                        "; copy() it first");
        }
        array r = *this;
        r.set_contiguous(shape.ndim, shape.dim);
        r.view_.start = view_.start;
        return r;
    }

    /** The view with axes a and b exchanged (2-d: the transpose). */
    array swapaxes(uint32_t a, uint32_t b) const {
        (void)shape(a);
        (void)shape(b);
        array r = *this;
        std::swap(r.view_.shape[a], r.view_.shape[b]);
        std::swap(r.view_.stride[a], r.view_.stride[b]);
        return r;
    }
    array transpose() const {
        array r = *this;
        for (uint32_t d = 0; d < view_.ndim; d++) {
            r.view_.shape[d] = view_.shape[view_.ndim - 1 - d];
            r.view_.stride[d] = view_.stride[view_.ndim - 1 - d];
        }
        return r;
    }

    /** This view broadcast to shape (stride-0 axes; read-only use). */
    array broadcast_to(const shape_t &shape) const {
        require();
        vm_view target{};
        target.ndim = shape.ndim;
        for (uint32_t d = 0; d < shape.ndim; d++) {
            target.shape[d] = shape.dim[d];
        }
        vm_operand o{};
        detail::set_broadcast(o, view_, target);
        array r = *this;
        r.view_ = o.u.view;
        return r;
    }

    /* -- Writing */

    /** Writes src (broadcast to this view's shape) into this view's elements (identity). */
    template <class U> void assign(const array<U> &src) const {
        require();
        src.require();
        same_context(src);
        vm_instruction &in = state().slot(VM_OP_IDENTITY, 2);
        detail::set_view(in.operands[0], view_);
        detail::set_broadcast(in.operands[1], src.c_view(), view_);
        state().push();
    }
    /** Writes value into every element of this view. */
    template <class S, std::enable_if_t<std::is_arithmetic_v<S>, int> = 0> void assign(S value) const {
        require();
        vm_instruction &in = state().slot(VM_OP_IDENTITY, 2);
        detail::set_view(in.operands[0], view_);
        detail::set_constant<T>(in.operands[1], static_cast<T>(value));
        state().push();
    }
    /** Copies n = size() host elements (row-major) into this array, which must be a whole,
     * contiguous base (vm_write; queued work runs first). */
    void write(const T *src, size_t n) const {
        require();
        if (n != size() || !is_contiguous()) {
            throw std::invalid_argument("vm: write of " + std::to_string(n) + " values into a view of shape " +
                                        detail::shape_string(view_) + (is_contiguous() ? "" : " (not contiguous)"));
        }
        state().submit_pending();
        check_ctx(vm_write(state().get(), view_.base, static_cast<uint64_t>(view_.start), src, n * sizeof(T)),
                  "vm_write");
    }
    void write(const std::vector<T> &src) const {
        if constexpr (std::is_same_v<T, bool>) {
            std::unique_ptr<bool[]> tmp(new bool[src.size()]);
            for (size_t i = 0; i < src.size(); i++) {
                tmp[i] = src[i];
            }
            write(tmp.get(), src.size());
        } else {
            write(src.data(), src.size());
        }
    }

    /** this = this op x, in place, for each compound assignment. */
    template <class X> array &operator+=(const X &x) { return update(VM_OP_ADD, x); }
    template <class X> array &operator-=(const X &x) { return update(VM_OP_SUBTRACT, x); }
    template <class X> array &operator*=(const X &x) { return update(VM_OP_MULTIPLY, x); }
    template <class X> array &operator/=(const X &x) {
        return update(std::is_floating_point_v<T> ? VM_OP_DIVIDE : VM_OP_FLOOR_DIVIDE, x);
    }
    template <class X> array &operator%=(const X &x) { return update(VM_OP_REMAINDER, x); }
    template <class X> array &operator&=(const X &x) { return update(VM_OP_BITWISE_AND, x); }
    template <class X> array &operator|=(const X &x) { return update(VM_OP_BITWISE_OR, x); }
    template <class X> array &operator^=(const X &x) { return update(VM_OP_BITWISE_XOR, x); }

    /* -- Conversions and copies */

    /** The elements converted to U in a new array (identity: integers wrap, floats truncate
     * toward zero and saturate, NaN becomes 0, anything to bool is != 0). */
    template <class U> array<U> astype() const {
        require();
        array<U> out(shape_of(), context_of());
        vm_instruction &in = state().slot(VM_OP_IDENTITY, 2);
        detail::set_view(in.operands[0], out.c_view());
        detail::set_view(in.operands[1], view_);
        state().push();
        return out;
    }
    /** A copy in a new, contiguous base. */
    array copy() const { return astype<T>(); }

    /* -- Reading (these run the queued work) */

    /** Runs the queued work and returns a read-only view of the host data of this array, valid
     * until its base is next written or freed. */
    host_view<T> host() const {
        require();
        state().sync(view_.base);
        const void *data = nullptr;
        size_t nbytes = 0;
        check_ctx(vm_data(state().get(), view_.base, &data, &nbytes), "vm_data");
        return host_view<T>(static_cast<const T *>(data), view_);
    }
    /** The elements in row-major order. */
    std::vector<T> to_vector() const {
        host_view<T> h = host();
        size_t n = h.size();
        std::vector<T> out(n);
        if constexpr (!std::is_same_v<T, bool>) {
            if (is_contiguous()) {
                if (n > 0) {
                    std::memcpy(static_cast<void *>(out.data()), h.data(), n * sizeof(T));
                }
                return out;
            }
        }
        for (size_t i = 0; i < n; i++) {
            out[i] = h.flat(i);
        }
        return out;
    }
    /** The single element of a 0-d or one-element array. */
    T item() const {
        if (size() != 1) {
            throw std::invalid_argument("vm: item() of an array of shape " + detail::shape_string(view_) + " (" +
                                        std::to_string(size()) + " elements)");
        }
        return host().flat(0);
    }

    /* -- Internals used by the free functions */
    array(std::shared_ptr<detail::base_rec> b, const vm_view &v) : base_(std::move(b)), view_(v) {}
    const std::shared_ptr<detail::base_rec> &base_rec() const noexcept { return base_; }
    detail::context_state &state() const { return *base_->ctx; }
    context context_of() const;
    shape_t shape_of() const {
        shape_t s;
        s.ndim = view_.ndim;
        for (uint32_t d = 0; d < view_.ndim; d++) {
            s.dim[d] = view_.shape[d];
        }
        return s;
    }
    void require() const {
        if (!base_) {
            throw std::invalid_argument("vm: use of an empty array handle");
        }
    }
    template <class U> void same_context(const array<U> &o) const {
        if (base_->ctx != o.base_rec()->ctx) {
            throw std::invalid_argument("vm: arrays of two different contexts in one operation");
        }
    }

  protected:
    void set_contiguous(uint32_t ndim, const uint64_t *dims) {
        view_.base = base_->id;
        view_.start = 0;
        view_.ndim = ndim;
        int64_t stride = 1;
        for (uint32_t d = ndim; d-- > 0;) {
            view_.shape[d] = dims[d];
            view_.stride[d] = stride;
            stride *= static_cast<int64_t>(dims[d]);
        }
    }

    void check_ctx(int status, const char *call) const { detail::check(status, call); }

    array slice(const index_arg *args, size_t n) const {
        require();
        vm_view v{};
        v.base = view_.base;
        v.start = view_.start;
        v.ndim = 0;
        uint32_t src = 0;
        auto push = [&](uint64_t extent, int64_t stride) {
            if (v.ndim == VM_MAX_NDIM) {
                throw std::invalid_argument("vm: a view of more than " + std::to_string(VM_MAX_NDIM) + " dimensions");
            }
            v.shape[v.ndim] = extent;
            v.stride[v.ndim] = stride;
            v.ndim++;
        };
        for (size_t k = 0; k < n; k++) {
            const index_arg &a = args[k];
            if (a.kind == index_arg::add_axis) {
                push(1, 0);
                continue;
            }
            if (src >= view_.ndim) {
                throw std::out_of_range("vm: " + std::to_string(n) + " indexes into a " + std::to_string(view_.ndim) +
                                        "-d array of shape " + detail::shape_string(view_));
            }
            int64_t extent = static_cast<int64_t>(view_.shape[src]);
            int64_t stride = view_.stride[src];
            if (a.kind == index_arg::single) {
                int64_t i = a.i < 0 ? a.i + extent : a.i;
                if (i < 0 || i >= extent) {
                    throw std::out_of_range("vm: index " + std::to_string(a.i) + " out of range for axis " +
                                            std::to_string(src) + " of extent " + std::to_string(extent));
                }
                v.start += i * stride;
            } else {
                int64_t step = a.r.step;
                if (step == 0) {
                    throw std::invalid_argument("vm: a slice step of 0 (axis " + std::to_string(src) + ")");
                }
                // Python's slice.indices: clamp the bounds into the axis.
                auto clamp = [&](bool has, int64_t x, int64_t dflt) {
                    if (!has) {
                        return dflt;
                    }
                    if (x < 0) {
                        x += extent;
                        if (x < 0) {
                            x = step < 0 ? -1 : 0;
                        }
                    } else if (x >= extent) {
                        x = step < 0 ? extent - 1 : extent;
                    }
                    return x;
                };
                int64_t lo = clamp(a.r.has_start, a.r.start, step < 0 ? extent - 1 : 0);
                int64_t hi = clamp(a.r.has_stop, a.r.stop, step < 0 ? -1 : extent);
                int64_t len = 0;
                if (step > 0 && hi > lo) {
                    len = (hi - lo + step - 1) / step;
                } else if (step < 0 && lo > hi) {
                    len = (lo - hi + (-step) - 1) / (-step);
                }
                if (len > 0) {
                    v.start += lo * stride;
                }
                push(static_cast<uint64_t>(len), stride * step);
            }
            src++;
        }
        for (; src < view_.ndim; src++) {
            push(view_.shape[src], view_.stride[src]);
        }
        return array(base_, v);
    }

    template <class X> array &update(uint32_t op, const X &x);

    std::shared_ptr<detail::base_rec> base_;
    vm_view view_;
};

/** The result of array::operator(): a view whose assignment writes its elements
 * (`a(vm::range(1, -1)) = b + 1;`). */
template <class T> class array_ref : public array<T> {
  public:
    explicit array_ref(const array<T> &a) : array<T>(a) {}
    array_ref(const array_ref &) = default;
    array_ref &operator=(const array_ref &src) {
        this->assign(static_cast<const array<T> &>(src));
        return *this;
    }
    template <class U> array_ref &operator=(const array<U> &src) {
        this->assign(src);
        return *this;
    }
    template <class S, std::enable_if_t<std::is_arithmetic_v<S>, int> = 0> array_ref &operator=(S value) {
        this->assign(value);
        return *this;
    }
};

namespace detail {

/* Operands of element-wise operations: an array (view, broadcast) or a scalar constant. */
template <class X> struct is_array : std::false_type {};
template <class T> struct is_array<array<T>> : std::true_type {};
template <class T> struct is_array<array_ref<T>> : std::true_type {};

template <class X> const vm_view *view_of(const X &x) {
    if constexpr (std::is_arithmetic_v<X>) {
        return nullptr;
    } else {
        x.require();
        return &x.c_view();
    }
}

/** Writes input operand o for x (an array broadcast to out, or a scalar converted to E). */
template <class E, class X> void set_input(vm_operand &o, const X &x, const vm_view &out) {
    if constexpr (std::is_arithmetic_v<X>) {
        set_constant<E>(o, static_cast<E>(x));
    } else {
        set_broadcast(o, x.c_view(), out);
    }
}

template <class X> std::shared_ptr<context_state> state_of(const X &x) {
    if constexpr (std::is_arithmetic_v<X>) {
        return nullptr;
    } else {
        x.require();
        return x.base_rec()->ctx;
    }
}

inline std::shared_ptr<context_state> common_state(std::initializer_list<std::shared_ptr<context_state>> states) {
    std::shared_ptr<context_state> s;
    for (const auto &x : states) {
        if (x) {
            if (s && s != x) {
                throw std::invalid_argument("vm: arrays of two different contexts in one operation");
            }
            s = x;
        }
    }
    return s ? s : default_context().state();
}

/** out = op(inputs...) element-wise with broadcasting, into a new array of Out; inputs are
 * converted to In (scalars) or must be arrays of In. */
template <class Out, class In, class... X> array<Out> elementwise(uint32_t op, const X &...xs) {
    vm_view shape{};
    for (const vm_view *v : {view_of(xs)...}) {
        if (v) {
            vm_view prev = shape;
            broadcast_shape(shape, prev, *v);
        }
    }
    auto st = common_state({state_of(xs)...});
    shape_t s;
    s.ndim = shape.ndim;
    for (uint32_t d = 0; d < shape.ndim; d++) {
        s.dim[d] = shape.shape[d];
    }
    array<Out> out(s, context(state_tag{}, st));
    vm_instruction &in = st->slot(op, static_cast<uint32_t>(1 + sizeof...(X)));
    set_view(in.operands[0], out.c_view());
    uint32_t k = 1;
    ((set_input<In>(in.operands[k++], xs, out.c_view())), ...);
    st->push();
    return out;
}

/* The element type of an operand: an array's T, else none (scalars adapt). */
template <class X> struct elem_of {
    using type = void;
};
template <class T> struct elem_of<array<T>> {
    using type = T;
};
template <class T> struct elem_of<array_ref<T>> {
    using type = T;
};
} // namespace detail

template <class T> context array<T>::context_of() const {
    require();
    return context(detail::state_tag{}, base_->ctx);
}

template <class T> template <class X> array<T> &array<T>::update(uint32_t op, const X &x) {
    require();
    if constexpr (!std::is_arithmetic_v<X>) {
        x.require();
        same_context(x);
    }
    vm_instruction &in = state().slot(op, 3);
    detail::set_view(in.operands[0], view_);
    detail::set_view(in.operands[1], view_);
    detail::set_input<T>(in.operands[2], x, view_);
    state().push();
    return *this;
}

/* ---- Creation -------------------------------------------------------------------------------- */

/** An array of shape filled with value. */
template <class T> array<T> full(const shape_t &shape, T value, const context &ctx = default_context()) {
    array<T> a(shape, ctx);
    a.assign(value);
    return a;
}
template <class T> array<T> zeros(const shape_t &shape, const context &ctx = default_context()) {
    return full<T>(shape, T(0), ctx);
}
template <class T> array<T> ones(const shape_t &shape, const context &ctx = default_context()) {
    return full<T>(shape, T(1), ctx);
}
/** [0, 1, ..., n-1]. */
template <class T> array<T> arange(size_t n, const context &ctx = default_context()) {
    array<T> a(shape_t{n}, ctx);
    vm_instruction &in = a.state().slot(VM_OP_RANGE, 1);
    detail::set_view(in.operands[0], a.c_view());
    a.state().push();
    return a;
}
/** start, start + step, ... below stop (above it for a negative step). */
template <class T> array<T> arange(T start, T stop, T step, const context &ctx = default_context()) {
    if (step == T(0)) {
        throw std::invalid_argument("vm: arange with a step of 0");
    }
    double n = (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
    size_t len = n > 0 ? static_cast<size_t>(n) + (static_cast<double>(static_cast<size_t>(n)) < n ? 1 : 0) : 0;
    array<T> r = arange<T>(len, ctx);
    r *= step;
    r += start;
    return r;
}
/** n evenly spaced values from start to stop, both included (NumPy's linspace). */
template <class T> array<T> linspace(T start, T stop, size_t n, const context &ctx = default_context()) {
    static_assert(std::is_floating_point_v<T>, "linspace of a float type");
    array<T> r = arange<T>(n, ctx);
    double step = n > 1 ? (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(n - 1) : 0.0;
    r *= static_cast<T>(step);
    r += start;
    if (n > 1) {
        r(-1) = stop;
    }
    return r;
}
/** Random numbers from counters offset.. of the Philox stream of seed (floats uniform in
 * [0, 1), integers over their range, bool fair coins); the same seed and offset give the same
 * numbers on every stack. */
template <class T>
array<T> random(const shape_t &shape, uint64_t seed, uint64_t offset = 0, const context &ctx = default_context()) {
    array<T> a(shape, ctx);
    vm_instruction &in = a.state().slot(VM_OP_RANDOM, 3);
    detail::set_view(in.operands[0], a.c_view());
    detail::set_constant<uint64_t>(in.operands[1], seed);
    detail::set_constant<uint64_t>(in.operands[2], offset);
    a.state().push();
    return a;
}
/** An array of shape holding data (row-major; a host write). */
template <class T>
array<T> from_vector(const std::vector<T> &data, const shape_t &shape, const context &ctx = default_context()) {
    array<T> a(shape, ctx);
    a.write(data);
    return a;
}
template <class T> array<T> from_vector(const std::vector<T> &data, const context &ctx = default_context()) {
    return from_vector(data, shape_t{data.size()}, ctx);
}

/* ---- Element-wise operators and functions ------------------------------------------------------ */

namespace detail {
/* E: the element type of the operation, from whichever operand is an array. */
template <class A, class B> using elem2 = std::conditional_t<std::is_void_v<typename elem_of<A>::type>,
                                                             typename elem_of<B>::type, typename elem_of<A>::type>;
template <class A, class B>
inline constexpr bool binary_ok = (is_array<A>::value || is_array<B>::value) &&
                                  (is_array<A>::value || std::is_arithmetic_v<A>) &&
                                  (is_array<B>::value || std::is_arithmetic_v<B>) &&
                                  (!is_array<A>::value || !is_array<B>::value ||
                                   std::is_same_v<typename elem_of<A>::type, typename elem_of<B>::type>);
} // namespace detail

#define VM_HPP_BINARY(NAME, OP, RESULT)                                                                                \
    template <class A, class B, std::enable_if_t<detail::binary_ok<A, B>, int> = 0>                                    \
    auto NAME(const A &a, const B &b) {                                                                                \
        using E = detail::elem2<A, B>;                                                                                 \
        return detail::elementwise<RESULT, E>(OP, a, b);                                                               \
    }

VM_HPP_BINARY(operator+, VM_OP_ADD, E)
VM_HPP_BINARY(operator-, VM_OP_SUBTRACT, E)
VM_HPP_BINARY(operator*, VM_OP_MULTIPLY, E)
VM_HPP_BINARY(operator/, (std::is_floating_point_v<E> ? VM_OP_DIVIDE : VM_OP_FLOOR_DIVIDE), E)
VM_HPP_BINARY(operator%, VM_OP_REMAINDER, E)
VM_HPP_BINARY(operator&, VM_OP_BITWISE_AND, E)
VM_HPP_BINARY(operator|, VM_OP_BITWISE_OR, E)
VM_HPP_BINARY(operator^, VM_OP_BITWISE_XOR, E)
VM_HPP_BINARY(operator<<, VM_OP_LEFT_SHIFT, E)
VM_HPP_BINARY(operator>>, VM_OP_RIGHT_SHIFT, E)
VM_HPP_BINARY(operator==, VM_OP_EQUAL, bool)
VM_HPP_BINARY(operator!=, VM_OP_NOT_EQUAL, bool)
VM_HPP_BINARY(operator<, VM_OP_LESS, bool)
VM_HPP_BINARY(operator<=, VM_OP_LESS_EQUAL, bool)
VM_HPP_BINARY(operator>, VM_OP_GREATER, bool)
VM_HPP_BINARY(operator>=, VM_OP_GREATER_EQUAL, bool)
VM_HPP_BINARY(operator&&, VM_OP_LOGICAL_AND, bool)
VM_HPP_BINARY(operator||, VM_OP_LOGICAL_OR, bool)
VM_HPP_BINARY(logical_and, VM_OP_LOGICAL_AND, bool)
VM_HPP_BINARY(logical_or, VM_OP_LOGICAL_OR, bool)
VM_HPP_BINARY(logical_xor, VM_OP_LOGICAL_XOR, bool)
VM_HPP_BINARY(pow, VM_OP_POWER, E)
VM_HPP_BINARY(power, VM_OP_POWER, E)
VM_HPP_BINARY(maximum, VM_OP_MAXIMUM, E)
VM_HPP_BINARY(minimum, VM_OP_MINIMUM, E)
VM_HPP_BINARY(fmax, VM_OP_FMAX, E)
VM_HPP_BINARY(fmin, VM_OP_FMIN, E)
VM_HPP_BINARY(fmod, VM_OP_FMOD, E)
VM_HPP_BINARY(floor_divide, VM_OP_FLOOR_DIVIDE, E)
VM_HPP_BINARY(remainder, VM_OP_REMAINDER, E)
VM_HPP_BINARY(atan2, VM_OP_ARCTAN2, E)
VM_HPP_BINARY(arctan2, VM_OP_ARCTAN2, E)
VM_HPP_BINARY(hypot, VM_OP_HYPOT, E)
VM_HPP_BINARY(copysign, VM_OP_COPYSIGN, E)
#undef VM_HPP_BINARY

#define VM_HPP_UNARY(NAME, OP, RESULT)                                                                                 \
    template <class T> array<RESULT> NAME(const array<T> &a) { return detail::elementwise<RESULT, T>(OP, a); }

VM_HPP_UNARY(operator-, VM_OP_NEGATIVE, T)
VM_HPP_UNARY(operator~, VM_OP_INVERT, T)
VM_HPP_UNARY(operator!, VM_OP_LOGICAL_NOT, bool)
VM_HPP_UNARY(logical_not, VM_OP_LOGICAL_NOT, bool)
VM_HPP_UNARY(abs, VM_OP_ABSOLUTE, T)
VM_HPP_UNARY(absolute, VM_OP_ABSOLUTE, T)
VM_HPP_UNARY(sign, VM_OP_SIGN, T)
VM_HPP_UNARY(square, VM_OP_SQUARE, T)
VM_HPP_UNARY(reciprocal, VM_OP_RECIPROCAL, T)
VM_HPP_UNARY(sqrt, VM_OP_SQRT, T)
VM_HPP_UNARY(cbrt, VM_OP_CBRT, T)
VM_HPP_UNARY(exp, VM_OP_EXP, T)
VM_HPP_UNARY(exp2, VM_OP_EXP2, T)
VM_HPP_UNARY(expm1, VM_OP_EXPM1, T)
VM_HPP_UNARY(log, VM_OP_LOG, T)
VM_HPP_UNARY(log2, VM_OP_LOG2, T)
VM_HPP_UNARY(log10, VM_OP_LOG10, T)
VM_HPP_UNARY(log1p, VM_OP_LOG1P, T)
VM_HPP_UNARY(sin, VM_OP_SIN, T)
VM_HPP_UNARY(cos, VM_OP_COS, T)
VM_HPP_UNARY(tan, VM_OP_TAN, T)
VM_HPP_UNARY(asin, VM_OP_ARCSIN, T)
VM_HPP_UNARY(acos, VM_OP_ARCCOS, T)
VM_HPP_UNARY(atan, VM_OP_ARCTAN, T)
VM_HPP_UNARY(sinh, VM_OP_SINH, T)
VM_HPP_UNARY(cosh, VM_OP_COSH, T)
VM_HPP_UNARY(tanh, VM_OP_TANH, T)
VM_HPP_UNARY(asinh, VM_OP_ARCSINH, T)
VM_HPP_UNARY(acosh, VM_OP_ARCCOSH, T)
VM_HPP_UNARY(atanh, VM_OP_ARCTANH, T)
VM_HPP_UNARY(deg2rad, VM_OP_DEG2RAD, T)
VM_HPP_UNARY(rad2deg, VM_OP_RAD2DEG, T)
VM_HPP_UNARY(floor, VM_OP_FLOOR, T)
VM_HPP_UNARY(ceil, VM_OP_CEIL, T)
VM_HPP_UNARY(trunc, VM_OP_TRUNC, T)
VM_HPP_UNARY(rint, VM_OP_RINT, T)
VM_HPP_UNARY(isnan, VM_OP_ISNAN, bool)
VM_HPP_UNARY(isinf, VM_OP_ISINF, bool)
VM_HPP_UNARY(isfinite, VM_OP_ISFINITE, bool)
VM_HPP_UNARY(signbit, VM_OP_SIGNBIT, bool)
#undef VM_HPP_UNARY

/** cond ? a : b element-wise, the three broadcast together (a and b: arrays of T or scalars). */
template <class A, class B, std::enable_if_t<detail::binary_ok<A, B>, int> = 0>
auto where(const array<bool> &cond, const A &a, const B &b) {
    using E = detail::elem2<A, B>;
    return detail::elementwise<E, E>(VM_OP_SELECT, cond, a, b);
}

namespace detail {
/* set_input of the condition: an array<bool> operand of select is bool, whatever E is. */
} // namespace detail

/* ---- Reductions and scans ---------------------------------------------------------------------- */

namespace detail {
inline uint32_t normalize_axis(int axis, uint32_t ndim) {
    int a = axis < 0 ? axis + static_cast<int>(ndim) : axis;
    if (a < 0 || a >= static_cast<int>(ndim)) {
        throw std::out_of_range("vm: axis " + std::to_string(axis) + " of a " + std::to_string(ndim) + "-d array");
    }
    return static_cast<uint32_t>(a);
}

/** out = op(a) along axis: a reduction (axis dropped) or a scan (shape kept). */
template <class Out, class T> array<Out> along(uint32_t op, const array<T> &a, int axis, bool reduce) {
    a.require();
    uint32_t ax = normalize_axis(axis, a.ndim());
    shape_t s;
    for (uint32_t d = 0; d < a.ndim(); d++) {
        if (!reduce || d != ax) {
            s.dim[s.ndim++] = a.c_view().shape[d];
        }
    }
    array<Out> out(s, a.context_of());
    vm_instruction &in = a.state().slot(op, 3);
    set_view(in.operands[0], out.c_view());
    set_view(in.operands[1], a.c_view());
    set_i64(in.operands[2], ax);
    a.state().push();
    return out;
}

/** op over every axis, as a 0-d array: one reduction of the flattened view when it is 1-d or
 * contiguous, else the last axis first and then the (contiguous) rest. */
template <class Out, class T> array<Out> along_all(uint32_t op, const array<T> &a) {
    a.require();
    if (a.ndim() == 0) {
        return along<Out>(op, a.reshape(shape_t{1}), 0, true);
    }
    if (a.ndim() == 1) {
        return along<Out>(op, a, 0, true);
    }
    if (a.is_contiguous()) {
        return along<Out>(op, a.reshape(shape_t{a.size()}), 0, true);
    }
    if (op == VM_OP_ARGMIN_REDUCE || op == VM_OP_ARGMAX_REDUCE) {
        array<T> c = a.copy();
        return along<Out>(op, c.reshape(shape_t{c.size()}), 0, true);
    }
    array<Out> partial = along<Out>(op, a, -1, true);
    return along<Out>(op, partial.reshape(shape_t{partial.size()}), 0, true);
}
} // namespace detail

#define VM_HPP_REDUCE(NAME, OP, RESULT)                                                                                \
    template <class T> array<RESULT> NAME(const array<T> &a, int axis) {                                               \
        return detail::along<RESULT>(OP, a, axis, true);                                                               \
    }                                                                                                                  \
    template <class T> array<RESULT> NAME(const array<T> &a) { return detail::along_all<RESULT>(OP, a); }

VM_HPP_REDUCE(sum, VM_OP_ADD_REDUCE, T)
VM_HPP_REDUCE(prod, VM_OP_MULTIPLY_REDUCE, T)
VM_HPP_REDUCE(min, VM_OP_MINIMUM_REDUCE, T)
VM_HPP_REDUCE(max, VM_OP_MAXIMUM_REDUCE, T)
VM_HPP_REDUCE(all, VM_OP_LOGICAL_AND_REDUCE, bool)
VM_HPP_REDUCE(any, VM_OP_LOGICAL_OR_REDUCE, bool)
VM_HPP_REDUCE(bitwise_and_reduce, VM_OP_BITWISE_AND_REDUCE, T)
VM_HPP_REDUCE(bitwise_or_reduce, VM_OP_BITWISE_OR_REDUCE, T)
VM_HPP_REDUCE(bitwise_xor_reduce, VM_OP_BITWISE_XOR_REDUCE, T)
VM_HPP_REDUCE(argmin, VM_OP_ARGMIN_REDUCE, int64_t)
VM_HPP_REDUCE(argmax, VM_OP_ARGMAX_REDUCE, int64_t)
#undef VM_HPP_REDUCE

/** The mean along axis, or of all elements (float arrays). */
template <class T> array<T> mean(const array<T> &a, int axis) {
    static_assert(std::is_floating_point_v<T>, "mean of a float array");
    size_t n = a.shape(detail::normalize_axis(axis, a.ndim()));
    return sum(a, axis) / static_cast<T>(n);
}
template <class T> array<T> mean(const array<T> &a) {
    static_assert(std::is_floating_point_v<T>, "mean of a float array");
    return sum(a) / static_cast<T>(a.size());
}

/** Running sum / product along axis (default 0). */
template <class T> array<T> cumsum(const array<T> &a, int axis = 0) {
    return detail::along<T>(VM_OP_ADD_ACCUMULATE, a, axis, false);
}
template <class T> array<T> cumprod(const array<T> &a, int axis = 0) {
    return detail::along<T>(VM_OP_MULTIPLY_ACCUMULATE, a, axis, false);
}

} // namespace vm

#endif /* VM_HPP */
