/*
 * vm.h: the C ABI of the vector VM (libvm.so). C99/C11 and C++ compatible.
 *
 * GENERATED from the Rust tables by `vm header` (bridge-c/src/header.rs): do not edit by hand;
 * regenerate with `cargo run -p vm-bridge-c --bin vm -- header > bridge-c/include/vm.h`.
 * A test fails when this file and the Rust tables disagree.
 *
 * Reference and a complete example: docs/c-abi.md. In short:
 *   - vm_init() builds the stack the configuration names and returns a context;
 *   - vm_base_new() creates a base (a flat typed array); views are strided windows onto bases;
 *   - vm_submit() queues instructions (an opcode and views/constants); a SYNC runs the batch;
 *   - vm_sync() + vm_data() read results; vm_write() writes host data into a base;
 *   - every function returns VM_OK or a VM_ERR_* status, and vm_last_error() says why.
 *
 * Link with -lvm (e.g. cc prog.c -I bridge-c/include -L target/release -lvm -Wl,-rpath,...).
 */
#ifndef VM_H
#define VM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version and limits */
#define VM_ABI_VERSION  1u   /* the ABI this header describes; vm_abi_version() returns the library's */
#define VM_MAX_NDIM     16   /* the most dimensions a view may have */
#define VM_MAX_OPERANDS 6    /* the most operands an instruction may have */

/* ---- Status codes: every function returning int returns one of these; vm_last_error() says more */
#define VM_OK                      0    /* success */
#define VM_ERR_INVALID_INSTRUCTION 1    /* a malformed instruction: arity, operand kind, dtype, shape, a view outside its base, a dead base */
#define VM_ERR_UNKNOWN_OPCODE      2    /* an opcode not in the table, or an extension opcode never registered */
#define VM_ERR_UNKNOWN_DTYPE       3    /* a dtype id that names no dtype */
#define VM_ERR_UNKNOWN_BASE        4    /* a base handle never created or already freed */
#define VM_ERR_PARSE               5    /* bytecode text that does not parse */
#define VM_ERR_CONFIG              6    /* a bad configuration: file not found, TOML syntax, unknown key, engine or stack */
#define VM_ERR_UNSUPPORTED         7    /* nothing in the stack implements it (e.g. an extension) */
#define VM_ERR_EXECUTION           8    /* a data-dependent failure while executing, e.g. an index out of range */
#define VM_ERR_INVALID_ARGUMENT    9    /* a null pointer, a dead context, or another unusable argument */
#define VM_ERR_PROTOCOL            10   /* breaks the ownership protocol, e.g. reading a base not synced */
#define VM_ERR_DEVICE              11   /* an engine's device or library is unavailable */
#define VM_ERR_OUT_OF_MEMORY       12   /* an allocation failed */
#define VM_ERR_INTERNAL            13   /* a bug in the VM (a panic is reported as this) */
#define VM_ERR_INTERRUPTED         14   /* the flush was stopped by vm_interrupt; the bases it wrote are unspecified */

/* ---- Element types (vm_base_new, vm_constant.dtype) */
#define VM_DTYPE_BOOL 0    /* bool: 1 byte(s), elements are uint8_t holding 0 or 1 */
#define VM_DTYPE_I8   1    /* i8: 1 byte(s), elements are int8_t */
#define VM_DTYPE_I16  2    /* i16: 2 byte(s), elements are int16_t */
#define VM_DTYPE_I32  3    /* i32: 4 byte(s), elements are int32_t */
#define VM_DTYPE_I64  4    /* i64: 8 byte(s), elements are int64_t */
#define VM_DTYPE_U8   5    /* u8: 1 byte(s), elements are uint8_t */
#define VM_DTYPE_U16  6    /* u16: 2 byte(s), elements are uint16_t */
#define VM_DTYPE_U32  7    /* u32: 4 byte(s), elements are uint32_t */
#define VM_DTYPE_U64  8    /* u64: 8 byte(s), elements are uint64_t */
#define VM_DTYPE_F32  9    /* f32: 4 byte(s), elements are float */
#define VM_DTYPE_F64  10   /* f64: 8 byte(s), elements are double */

/* ---- Operand kinds (vm_operand.kind); 0 is none, so zeroed operands are rejected */
#define VM_OPERAND_VIEW     1    /* the operand is u.view */
#define VM_OPERAND_CONSTANT 2    /* the operand is u.constant */

/* ---- Opcodes (vm_instruction.opcode): the opcode table of vm-ir; ids are stable. Operand 0 is the output */
#define VM_OP_ADD                 1    /* out = a + b (integers wrap). */
#define VM_OP_SUBTRACT            2    /* out = a - b (integers wrap). */
#define VM_OP_MULTIPLY            3    /* out = a * b (integers wrap). */
#define VM_OP_DIVIDE              4    /* out = a / b, true division (floats only; frontends cast integers first). */
#define VM_OP_FLOOR_DIVIDE        5    /* out = floor(a / b), NumPy's divmod quotient (float x // 0 is x / 0); integer division by zero gives 0. */
#define VM_OP_REMAINDER           6    /* out = a mod b with the sign of b (NumPy remainder; float x % 0 is NaN); integer x % 0 gives 0. */
#define VM_OP_FMOD                7    /* out = a mod b with the sign of a (C fmod); integer x % 0 gives 0. */
#define VM_OP_POWER               8    /* out = a ** b; integers by repeated squaring with wrapping, negative integer exponents give 0 (1 for base 1, +-1 for base -1). */
#define VM_OP_MAXIMUM             9    /* out = max(a, b); NaN if either is NaN; b of equal values (max(0.0, -0.0) is -0.0). */
#define VM_OP_MINIMUM             10   /* out = min(a, b); NaN if either is NaN; b of equal values (min(-0.0, 0.0) is 0.0). */
#define VM_OP_FMAX                11   /* out = max(a, b) ignoring NaN (NaN only if both are). */
#define VM_OP_FMIN                12   /* out = min(a, b) ignoring NaN (NaN only if both are). */
#define VM_OP_ARCTAN2             13   /* out = atan2(a, b). */
#define VM_OP_HYPOT               14   /* out = sqrt(a*a + b*b) without undue overflow. */
#define VM_OP_COPYSIGN            15   /* out = |a| with the sign of b. */
#define VM_OP_NEGATIVE            16   /* out = -a (unsigned integers wrap). */
#define VM_OP_ABSOLUTE            17   /* out = |a| (the minimum signed integer stays itself, as in NumPy). */
#define VM_OP_SIGN                18   /* out = -1, 0 or 1 by the sign of a (NaN for NaN). */
#define VM_OP_SQUARE              19   /* out = a * a. */
#define VM_OP_RECIPROCAL          20   /* out = 1 / a. */
#define VM_OP_LOGADDEXP           21   /* out = ln(e ** a + e ** b) without overflow (NumPy logaddexp). */
#define VM_OP_LOGADDEXP2          22   /* out = log2(2 ** a + 2 ** b) without overflow (NumPy logaddexp2). */
#define VM_OP_SQRT                30   /* out = sqrt(a). */
#define VM_OP_CBRT                31   /* out = cube root of a. */
#define VM_OP_EXP                 32   /* out = e ** a. */
#define VM_OP_EXP2                33   /* out = 2 ** a. */
#define VM_OP_EXPM1               34   /* out = e ** a - 1, accurate near 0. */
#define VM_OP_LOG                 35   /* out = natural logarithm of a. */
#define VM_OP_LOG2                36   /* out = base-2 logarithm of a. */
#define VM_OP_LOG10               37   /* out = base-10 logarithm of a. */
#define VM_OP_LOG1P               38   /* out = ln(1 + a), accurate near 0. */
#define VM_OP_SIN                 39   /* out = sin(a). */
#define VM_OP_COS                 40   /* out = cos(a). */
#define VM_OP_TAN                 41   /* out = tan(a). */
#define VM_OP_ARCSIN              42   /* out = arcsin(a). */
#define VM_OP_ARCCOS              43   /* out = arccos(a). */
#define VM_OP_ARCTAN              44   /* out = arctan(a). */
#define VM_OP_SINH                45   /* out = sinh(a). */
#define VM_OP_COSH                46   /* out = cosh(a). */
#define VM_OP_TANH                47   /* out = tanh(a). */
#define VM_OP_ARCSINH             48   /* out = arcsinh(a). */
#define VM_OP_ARCCOSH             49   /* out = arccosh(a). */
#define VM_OP_ARCTANH             50   /* out = arctanh(a). */
#define VM_OP_DEG2RAD             51   /* out = a in radians, given degrees. */
#define VM_OP_RAD2DEG             52   /* out = a in degrees, given radians. */
#define VM_OP_FLOOR               53   /* out = largest integer <= a. */
#define VM_OP_CEIL                54   /* out = smallest integer >= a. */
#define VM_OP_TRUNC               55   /* out = a rounded toward zero. */
#define VM_OP_RINT                56   /* out = a rounded to the nearest integer, ties to even. */
#define VM_OP_ISNAN               57   /* out = true where a is NaN. */
#define VM_OP_ISINF               58   /* out = true where a is +-infinity. */
#define VM_OP_ISFINITE            59   /* out = true where a is neither NaN nor infinite. */
#define VM_OP_SIGNBIT             60   /* out = true where the sign bit of a is set (-0.0 included). */
#define VM_OP_EQUAL               70   /* out = a == b. */
#define VM_OP_NOT_EQUAL           71   /* out = a != b. */
#define VM_OP_LESS                72   /* out = a < b. */
#define VM_OP_LESS_EQUAL          73   /* out = a <= b. */
#define VM_OP_GREATER             74   /* out = a > b. */
#define VM_OP_GREATER_EQUAL       75   /* out = a >= b. */
#define VM_OP_LOGICAL_AND         80   /* out = a && b. */
#define VM_OP_LOGICAL_OR          81   /* out = a || b. */
#define VM_OP_LOGICAL_XOR         82   /* out = a != b as truth values. */
#define VM_OP_LOGICAL_NOT         83   /* out = !a. */
#define VM_OP_BITWISE_AND         90   /* out = a & b. */
#define VM_OP_BITWISE_OR          91   /* out = a | b. */
#define VM_OP_BITWISE_XOR         92   /* out = a ^ b. */
#define VM_OP_INVERT              93   /* out = !a (bitwise not; logical not for bool). */
#define VM_OP_LEFT_SHIFT          94   /* out = a << b; shifts of the width or more, or negative, give 0. */
#define VM_OP_RIGHT_SHIFT         95   /* out = a >> b (arithmetic for signed); shifts of the width or more, or negative, give 0 (-1 for negative a). */
#define VM_OP_IDENTITY            100  /* out = a converted to out's dtype (a copy when the dtypes agree); see scalar::Cast. */
#define VM_OP_SELECT              101  /* out = cond ? a : b. */
#define VM_OP_ADD_REDUCE          110  /* Sum along an axis (integers wrap); the sum of nothing is 0. */
#define VM_OP_MULTIPLY_REDUCE     111  /* Product along an axis; the product of nothing is 1. */
#define VM_OP_MINIMUM_REDUCE      112  /* Minimum along an axis (NaN if any is NaN); of nothing: the dtype's largest value (+inf). */
#define VM_OP_MAXIMUM_REDUCE      113  /* Maximum along an axis (NaN if any is NaN); of nothing: the dtype's smallest value (-inf). */
#define VM_OP_LOGICAL_AND_REDUCE  114  /* All along an axis (true for nothing). */
#define VM_OP_LOGICAL_OR_REDUCE   115  /* Any along an axis (false for nothing). */
#define VM_OP_LOGICAL_XOR_REDUCE  116  /* Parity of the number of true values along an axis. */
#define VM_OP_BITWISE_AND_REDUCE  117  /* Bitwise and along an axis (all ones for nothing). */
#define VM_OP_BITWISE_OR_REDUCE   118  /* Bitwise or along an axis (0 for nothing). */
#define VM_OP_BITWISE_XOR_REDUCE  119  /* Bitwise xor along an axis (0 for nothing). */
#define VM_OP_ARGMIN_REDUCE       120  /* Position (i64) along an axis of the first minimum, or of the first NaN (NumPy's argmin; -0.0 equals 0.0); an empty axis is invalid. */
#define VM_OP_ARGMAX_REDUCE       121  /* Position (i64) along an axis of the first maximum, or of the first NaN (NumPy's argmax; -0.0 equals 0.0); an empty axis is invalid. */
#define VM_OP_ADD_ACCUMULATE      130  /* Running sum along an axis. */
#define VM_OP_MULTIPLY_ACCUMULATE 131  /* Running product along an axis. */
#define VM_OP_RANGE               140  /* out[i] = i (row-major position), cast to out's dtype. */
#define VM_OP_RANDOM              141  /* Counter-based random numbers (Philox-4x32-10). */
#define VM_OP_GATHER              142  /* out[i] = src.flat[index[i]]. */
#define VM_OP_SCATTER             143  /* dst.flat[index[i]] = src[i] (of repeated positions, the last index element's value wins). */
#define VM_OP_SCATTER_ADD         144  /* dst.flat[index[i]] += src[i], in index order: repeated positions accumulate (NumPy's add.at; integers wrap, bools or). */
#define VM_OP_SORT                150  /* Each line along an axis in ascending order: -0.0 before 0.0, NaNs last in their order (NumPy's sort). */
#define VM_OP_ARGSORT             151  /* Positions (i64) that sort each line along an axis: NaNs last, equal values in their order (NumPy's argsort(kind="stable")). */
#define VM_OP_SEARCHSORTED_LEFT   152  /* Positions (i64) in a sorted 1-d view before the values equal to each key (NumPy's searchsorted(side="left")). */
#define VM_OP_SEARCHSORTED_RIGHT  153  /* Positions (i64) in a sorted 1-d view after the values equal to each key (NumPy's searchsorted(side="right")). */
#define VM_OP_SYNC                200  /* Make the host copy of the view's base current. */
#define VM_OP_DISCARD             201  /* Drop engine-side copies of the view's base (the host copy is authoritative). */
#define VM_OP_FREE                202  /* End the view's base: its memory is released everywhere. */
#define VM_OP_NONE                203  /* Do nothing. */
#define VM_OP_EXTENSION_BASE      1024 /* opcodes from here on are extension methods; vm_extension() returns them */

/* ---- Types ---------------------------------------------------------------------------------- */

/** A VM instance: one stack built from a configuration. Opaque; from vm_init, ended by vm_shutdown. */
typedef struct vm_context vm_context;

/** A base: a flat array of one dtype. A handle from vm_base_new; 0 is never a handle. */
typedef uint64_t vm_base;

/**
 * A strided view of a base. Element idx of the view is element start + sum(idx[d] * stride[d])
 * of the base (strides in elements, not bytes; 0 broadcasts, negative walks backwards). Only the
 * first ndim entries of shape and stride are read; ndim 0 is a single element (element start).
 */
typedef struct vm_view {
    vm_base base;
    int64_t start;
    uint32_t ndim;
    uint64_t shape[VM_MAX_NDIM];
    int64_t stride[VM_MAX_NDIM];
} vm_view;

/**
 * A constant. The value lives in the union member its dtype selects: signed integers in i,
 * unsigned integers and bool in u, f32 and f64 in f (as a double). vm_submit rejects a value
 * its dtype cannot hold (an i8 of 300, a bool of 2, a finite f32 beyond +-3.4e38) with
 * VM_ERR_INVALID_INSTRUCTION; infinities and NaN are constants of f32 and f64.
 */
typedef struct vm_constant {
    uint32_t dtype;
    union {
        int64_t i;
        uint64_t u;
        double f;
    } value;
} vm_constant;

/** An operand: a view (kind VM_OPERAND_VIEW) or a constant (kind VM_OPERAND_CONSTANT). */
typedef struct vm_operand {
    uint32_t kind;
    union {
        vm_view view;
        vm_constant constant;
    } u;
} vm_operand;

/**
 * One instruction: an opcode and its operands; operand 0 is the output (see the opcode table).
 * Only the first noperands operands are read. Plain data: build it with the helpers below.
 */
typedef struct vm_instruction {
    uint32_t opcode;
    uint32_t noperands;
    vm_operand operands[VM_MAX_OPERANDS];
} vm_instruction;

/* ---- Functions ------------------------------------------------------------------------------ */
/* Every function returning int returns VM_OK or a VM_ERR_* status and sets vm_last_error().    */
/* Pointers must be valid for the sizes given; NULL where a pointer is required is an error.      */
/* A context may be used from several threads; calls on one context are serialised.             */

/** The ABI version of the loaded library; compare with VM_ABI_VERSION. */
uint32_t vm_abi_version(void);

/**
 * Builds the stack the configuration names and returns a new context in *out.
 * config_path: a TOML file, or NULL to look it up ($VM_CONFIG, ./vm.toml,
 * $XDG_CONFIG_HOME/vm/config.toml, ~/.config/vm/config.toml, then the built-in default).
 * The stack is the file's `stack`, unless $VM_STACK names another; VM_<COMPONENT>_<KEY>=value
 * overrides one setting; VM_TRACE=1 prints every batch to stderr.
 */
int vm_init(const char *config_path, vm_context **out);

/**
 * Like vm_init, but stack (when not NULL) names the stack to build, as VM_STACK would; an empty
 * name is VM_ERR_CONFIG.
 */
int vm_init_stack(const char *config_path, const char *stack, vm_context **out);

/** Runs pending work, shuts the stack down and frees the context (even when it reports an error). */
int vm_shutdown(vm_context *ctx);

/** Creates a base of nelem elements of dtype (a VM_DTYPE_*), returned in *out. */
int vm_base_new(vm_context *ctx, uint32_t dtype, uint64_t nelem, vm_base *out);

/** Ends a base (queues a FREE): its handle is invalid from now on, its data pointer too. */
int vm_base_free(vm_context *ctx, vm_base base);

/**
 * Validates n instructions and queues them; a batch runs when it holds a SYNC, when it is full,
 * or at vm_flush. On error nothing is queued and vm_last_error() names the instruction and
 * operand at fault. Work already queued may also fail here, when this call runs it.
 */
int vm_submit(vm_context *ctx, const vm_instruction *instrs, size_t n);

/** Runs all queued instructions. */
int vm_flush(vm_context *ctx);

/**
 * Asks the flush running on ctx (in another thread's vm_flush, vm_sync, vm_write or vm_submit)
 * to stop: it returns VM_ERR_INTERRUPTED within milliseconds, the bases its batch wrote are in
 * an unspecified state, and the context stays usable. Returns at once and never waits for the
 * context's lock; a request made while no flush runs is dropped when the next one starts.
 */
int vm_interrupt(vm_context *ctx);

/** Makes the host copy of base current: queues a SYNC of the whole base and runs the batch. */
int vm_sync(vm_context *ctx, vm_base base);

/**
 * The host data of a synced base: *data points at its nbytes bytes (elements in the C type of
 * its dtype, contiguous, 64-byte aligned). Fails with VM_ERR_PROTOCOL unless a SYNC of the base
 * has run and nothing has written it since. The pointer stays valid until the base is next
 * written (by an instruction or vm_write) or freed, or the context shut down. Read only.
 */
int vm_data(vm_context *ctx, vm_base base, const void **data, size_t *nbytes);

/**
 * Writes nbytes bytes from src into base, starting at element elem_offset (nbytes must be a
 * whole number of elements, all inside the base). Queued work runs first; afterwards the host
 * copy is current (vm_data works without a sync) and engines drop copies of their own.
 */
int vm_write(vm_context *ctx, vm_base base, uint64_t elem_offset, const void *src, size_t nbytes);

/**
 * Registers the extension method name (e.g. "matmul") with the stack and returns its opcode in
 * *opcode (>= VM_OP_EXTENSION_BASE). VM_ERR_UNSUPPORTED when no component implements it.
 */
int vm_extension(vm_context *ctx, const char *name, uint32_t *opcode);

/**
 * Starts recording what the engines do (batches, instructions run at once, kernels compiled and
 * run, matrix products, host-device copies, with their sizes) for every context of the process,
 * dropping what was recorded before. Not recording, each span costs one atomic load.
 */
int vm_trace_start(void);

/**
 * Stops recording and writes what was recorded since vm_trace_start to path as a Chrome
 * trace-event file (JSON; it opens in Perfetto and chrome://tracing); NULL drops it. A file that
 * cannot be written is VM_ERR_INVALID_ARGUMENT naming it. (VM_PROFILE=trace.json in the
 * environment records from the first context on and writes the file at each vm_shutdown.)
 */
int vm_trace_stop(const char *path);

/**
 * Why the last call on this thread failed; "" after a success. Never NULL. The text stays
 * valid until the next call of this API on the same thread.
 */
const char *vm_last_error(void);

/** The name of a status code ("VM_OK", "VM_ERR_UNKNOWN_BASE", ...). Never NULL; static. */
const char *vm_status_name(int status);

/* ---- Helpers -------------------------------------------------------------------------------- */

/** A 1-d view: n elements of base from element start, stride elements apart. */
static inline vm_view vm_view_1d(vm_base base, int64_t start, uint64_t n, int64_t stride) {
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = start;
    v.ndim = 1;
    v.shape[0] = n;
    v.stride[0] = stride;
    return v;
}

/** A 2-d view: rows x cols elements from element start, strides in elements. */
static inline vm_view vm_view_2d(vm_base base, int64_t start, uint64_t rows, uint64_t cols, int64_t row_stride,
                                 int64_t col_stride) {
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = start;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.stride[0] = row_stride;
    v.stride[1] = col_stride;
    return v;
}

/** An n-d view (shape and stride hold ndim entries; more than VM_MAX_NDIM is refused on submit). */
static inline vm_view vm_view_nd(vm_base base, int64_t start, uint32_t ndim, const uint64_t *shape,
                                 const int64_t *stride) {
    uint32_t d;
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = start;
    v.ndim = ndim;
    for (d = 0; d < ndim && d < VM_MAX_NDIM; d++) {
        v.shape[d] = shape[d];
        v.stride[d] = stride[d];
    }
    return v;
}

/** A 0-d view: the single element `offset` of base (e.g. the output of a full reduction). */
static inline vm_view vm_view_scalar(vm_base base, int64_t offset) {
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = offset;
    v.ndim = 0;
    return v;
}

/** A view operand. */
static inline vm_operand vm_operand_view(vm_view view) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_VIEW;
    o.u.view = view;
    return o;
}

/** A 1-d contiguous view operand: elements [start, start + n) of base. */
static inline vm_operand vm_operand_range(vm_base base, int64_t start, uint64_t n) {
    return vm_operand_view(vm_view_1d(base, start, n, 1));
}

/** A constant operand of dtype bool. */
static inline vm_operand vm_operand_bool(int x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_BOOL;
    o.u.constant.value.u = x != 0;
    return o;
}

/** A constant operand of dtype i8. */
static inline vm_operand vm_operand_i8(int8_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_I8;
    o.u.constant.value.i = x;
    return o;
}

/** A constant operand of dtype i16. */
static inline vm_operand vm_operand_i16(int16_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_I16;
    o.u.constant.value.i = x;
    return o;
}

/** A constant operand of dtype i32. */
static inline vm_operand vm_operand_i32(int32_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_I32;
    o.u.constant.value.i = x;
    return o;
}

/** A constant operand of dtype i64. */
static inline vm_operand vm_operand_i64(int64_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_I64;
    o.u.constant.value.i = x;
    return o;
}

/** A constant operand of dtype u8. */
static inline vm_operand vm_operand_u8(uint8_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_U8;
    o.u.constant.value.u = x;
    return o;
}

/** A constant operand of dtype u16. */
static inline vm_operand vm_operand_u16(uint16_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_U16;
    o.u.constant.value.u = x;
    return o;
}

/** A constant operand of dtype u32. */
static inline vm_operand vm_operand_u32(uint32_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_U32;
    o.u.constant.value.u = x;
    return o;
}

/** A constant operand of dtype u64. */
static inline vm_operand vm_operand_u64(uint64_t x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_U64;
    o.u.constant.value.u = x;
    return o;
}

/** A constant operand of dtype f32. */
static inline vm_operand vm_operand_f32(float x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_F32;
    o.u.constant.value.f = x;
    return o;
}

/** A constant operand of dtype f64. */
static inline vm_operand vm_operand_f64(double x) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = VM_DTYPE_F64;
    o.u.constant.value.f = x;
    return o;
}

/** An instruction of n operands (copied from operands; n > VM_MAX_OPERANDS is refused on submit). */
static inline vm_instruction vm_instr(uint32_t opcode, uint32_t n, const vm_operand *operands) {
    uint32_t k;
    vm_instruction in;
    memset(&in, 0, sizeof in);
    in.opcode = opcode;
    in.noperands = n;
    for (k = 0; k < n && k < VM_MAX_OPERANDS; k++) {
        in.operands[k] = operands[k];
    }
    return in;
}

/** An instruction of one operand (sync, discard, free, range). */
static inline vm_instruction vm_instr1(uint32_t opcode, vm_operand a) {
    return vm_instr(opcode, 1, &a);
}

/** An instruction of two operands (unary element-wise: out, in). */
static inline vm_instruction vm_instr2(uint32_t opcode, vm_operand a, vm_operand b) {
    vm_operand ops[2];
    ops[0] = a;
    ops[1] = b;
    return vm_instr(opcode, 2, ops);
}

/** An instruction of three operands (binary element-wise: out, a, b; reductions: out, in, axis). */
static inline vm_instruction vm_instr3(uint32_t opcode, vm_operand a, vm_operand b, vm_operand c) {
    vm_operand ops[3];
    ops[0] = a;
    ops[1] = b;
    ops[2] = c;
    return vm_instr(opcode, 3, ops);
}

/** An instruction of four operands (select: out, cond, a, b). */
static inline vm_instruction vm_instr4(uint32_t opcode, vm_operand a, vm_operand b, vm_operand c, vm_operand d) {
    vm_operand ops[4];
    ops[0] = a;
    ops[1] = b;
    ops[2] = c;
    ops[3] = d;
    return vm_instr(opcode, 4, ops);
}

#ifdef __cplusplus
}
#endif

#endif /* VM_H */
