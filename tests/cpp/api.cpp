// api.cpp: the surface of vm.hpp, each result checked against values computed here in plain C++.
// Prints one line per check group and "api ok" at the end; exits 1 on the first mismatch.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "vm.hpp"

namespace {

int failures = 0;

template <class T> void expect_eq(const char *what, const std::vector<T> &got, const std::vector<T> &want) {
    bool same = got.size() == want.size();
    for (size_t i = 0; same && i < got.size(); i++) {
        same = got[i] == want[i];
    }
    if (!same) {
        std::fprintf(stderr, "FAIL %s: got", what);
        for (const T &x : got) {
            std::fprintf(stderr, " %g", static_cast<double>(x));
        }
        std::fprintf(stderr, ", want");
        for (const T &x : want) {
            std::fprintf(stderr, " %g", static_cast<double>(x));
        }
        std::fprintf(stderr, "\n");
        failures++;
    }
}

void expect_near(const char *what, const std::vector<double> &got, const std::vector<double> &want) {
    bool same = got.size() == want.size();
    for (size_t i = 0; same && i < got.size(); i++) {
        same = std::fabs(got[i] - want[i]) <= 1e-12 * (1.0 + std::fabs(want[i]));
    }
    if (!same) {
        std::fprintf(stderr, "FAIL %s (sizes %zu, %zu)\n", what, got.size(), want.size());
        failures++;
    }
}

void expect(const char *what, bool ok) {
    if (!ok) {
        std::fprintf(stderr, "FAIL %s\n", what);
        failures++;
    }
}

// Runs f, which must throw E whose message contains needle.
template <class E, class F> void expect_throw(const char *what, F f, const char *needle) {
    try {
        f();
    } catch (const E &e) {
        if (std::string(e.what()).find(needle) == std::string::npos) {
            std::fprintf(stderr, "FAIL %s: message `%s` lacks `%s`\n", what, e.what(), needle);
            failures++;
        } else {
            std::printf("ok %s: %s\n", what, e.what());
        }
        return;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "FAIL %s: wrong exception type: %s\n", what, e.what());
        failures++;
        return;
    }
    std::fprintf(stderr, "FAIL %s: nothing thrown\n", what);
    failures++;
}

// 0..n-1 as doubles, row-major for a rows x cols matrix.
std::vector<double> iota(size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) {
        v[i] = static_cast<double>(i);
    }
    return v;
}

} // namespace

int main() {
    using vm::range;
    vm::context ctx; // the configuration's stack (VM_STACK picks one)

    // -- creation
    auto z = vm::zeros<double>({2, 3}, ctx);
    auto o = vm::ones<int32_t>({4}, ctx);
    auto f = vm::full<float>({3}, 2.5f, ctx);
    auto r = vm::arange<int64_t>(5, ctx);
    auto r2 = vm::arange<double>(1.0, 2.0, 0.25, ctx);
    auto l = vm::linspace<double>(0.0, 1.0, 5, ctx);
    expect_eq<double>("zeros", z.to_vector(), {0, 0, 0, 0, 0, 0});
    expect_eq<int32_t>("ones", o.to_vector(), {1, 1, 1, 1});
    expect_eq<float>("full", f.to_vector(), {2.5f, 2.5f, 2.5f});
    expect_eq<int64_t>("arange", r.to_vector(), {0, 1, 2, 3, 4});
    expect_eq<double>("arange start stop step", r2.to_vector(), {1.0, 1.25, 1.5, 1.75});
    expect_eq<double>("linspace", l.to_vector(), {0.0, 0.25, 0.5, 0.75, 1.0});
    expect("shape", z.ndim() == 2 && z.shape(0) == 2 && z.shape(1) == 3 && z.size() == 6);
    std::printf("creation ok\n");

    // -- slicing: a 4 x 5 matrix m[i][j] = 5 i + j
    auto m = vm::from_vector(iota(20), {4, 5}, ctx);
    auto inner = m(range(1, -1), range(1, -1)); // rows 1..2, cols 1..3
    expect_eq<double>("inner", inner.to_vector(), {6, 7, 8, 11, 12, 13});
    expect("inner shape", inner.shape() == std::vector<size_t>{2, 3});
    auto stepped = m(range(vm::none, vm::none, 2), range(4, vm::none, -2)); // rows 0, 2; cols 4, 2, 0
    expect_eq<double>("steps and negative steps", stepped.to_vector(), {4, 2, 0, 14, 12, 10});
    expect("negative step stride", stepped.strides() == std::vector<int64_t>{10, -2});
    auto row = m(-1); // the last row, a 1-d view
    expect_eq<double>("negative integer index", row.to_vector(), {15, 16, 17, 18, 19});
    auto col = m(range(), 2); // column 2
    expect_eq<double>("integer index drops an axis", col.to_vector(), {2, 7, 12, 17});
    expect("column is 1-d", col.ndim() == 1 && col.shape(0) == 4);
    auto reversed = m(range(vm::none, vm::none, -1), -2);
    expect_eq<double>("reversed column", reversed.to_vector(), {18, 13, 8, 3});
    auto with_axis = col(vm::newaxis, range());
    expect("newaxis shape", with_axis.shape() == std::vector<size_t>{1, 4});
    auto elem = m(2, 3);
    expect("0-d item", elem.ndim() == 0 && elem.item() == 13.0);
    auto empty = m(range(3, 1), range());
    expect("empty slice", empty.size() == 0 && empty.shape(0) == 0);
    auto clamped = m(range(-100, 100), range(2, 3));
    expect_eq<double>("clamped bounds", clamped.to_vector(), {2, 7, 12, 17});
    {
        auto h = m(range(1, 3), range(0, 5, 2)).host();
        expect("host view", h.size() == 6 && h(1, 2) == 14.0 && h.flat(1) == 7.0 && h.stride(1) == 2);
    }
    std::printf("slicing ok\n");

    // -- broadcasting: column + row gives an outer sum
    auto colv = vm::from_vector(std::vector<double>{0, 10, 20}, ctx)(range(), vm::newaxis); // 3 x 1
    auto rowv = vm::from_vector(std::vector<double>{1, 2, 3, 4}, ctx);                     // 4
    auto outer = colv + rowv;
    expect("broadcast shape", outer.shape() == std::vector<size_t>{3, 4});
    {
        std::vector<double> want;
        for (double a : {0.0, 10.0, 20.0}) {
            for (double b : {1.0, 2.0, 3.0, 4.0}) {
                want.push_back(a + b);
            }
        }
        expect_eq("outer sum", outer.to_vector(), want);
    }
    expect_eq<double>("scalar on the left", (100.0 - rowv).to_vector(), {99, 98, 97, 96});
    expect_eq<double>("broadcast_to", rowv.broadcast_to({2, 4}).to_vector(), {1, 2, 3, 4, 1, 2, 3, 4});
    std::printf("broadcasting ok\n");

    // -- element-wise arithmetic, math, comparisons, bitwise
    auto x = vm::from_vector(std::vector<double>{-2.5, -1.0, 0.0, 0.5, 4.0}, ctx);
    {
        std::vector<double> xs{-2.5, -1.0, 0.0, 0.5, 4.0}, w1, w2, w3, w4;
        for (double v : xs) {
            w1.push_back((v * 2.0 + 1.0) / 4.0 - v);
            w2.push_back(-v);
            w3.push_back(std::fabs(v));
            w4.push_back(std::floor(v) + std::ceil(v));
        }
        expect_eq("arithmetic", ((x * 2.0 + 1.0) / 4.0 - x).to_vector(), w1);
        expect_eq("negation", (-x).to_vector(), w2);
        expect_eq("abs", vm::abs(x).to_vector(), w3);
        expect_eq("floor + ceil", (vm::floor(x) + vm::ceil(x)).to_vector(), w4);
        std::vector<double> pos{0.5, 1.0, 2.0, 9.0}, ws, we, wl, wt, wp;
        for (double v : pos) {
            ws.push_back(std::sqrt(v));
            we.push_back(std::exp(v));
            wl.push_back(std::log(v));
            wt.push_back(std::tanh(v) + std::sin(v) * std::cos(v));
            wp.push_back(std::pow(v, 3.0));
        }
        auto p = vm::from_vector(pos, ctx);
        expect_near("sqrt", vm::sqrt(p).to_vector(), ws);
        expect_near("exp", vm::exp(p).to_vector(), we);
        expect_near("log", vm::log(p).to_vector(), wl);
        expect_near("tanh sin cos", (vm::tanh(p) + vm::sin(p) * vm::cos(p)).to_vector(), wt);
        expect_near("pow", vm::pow(p, 3.0).to_vector(), wp);
        expect_eq<double>("minimum maximum", (vm::minimum(x, 0.0) + vm::maximum(x, 0.25)).to_vector(),
                          {-2.5 + 0.25, -1.0 + 0.25, 0.0 + 0.25, 0.0 + 0.5, 0.0 + 4.0});
    }
    expect_eq<bool>("less", (x < 0.0).to_vector(), {true, true, false, false, false});
    expect_eq<bool>("equal", (x == 0.5).to_vector(), {false, false, false, true, false});
    expect_eq<bool>("not and or", ((x >= 0.0) && !(x > 1.0)).to_vector(), {false, false, true, true, false});
    auto iv = vm::from_vector(std::vector<int32_t>{12, -7, 5, 0}, ctx);
    expect_eq<int32_t>("int %", (iv % 5).to_vector(), {2, 3, 0, 0});    // sign of the divisor
    expect_eq<int32_t>("int /", (iv / 5).to_vector(), {2, -2, 1, 0});   // floor division
    expect_eq<int32_t>("& | ^", ((iv & 6) | (iv ^ 1)).to_vector(), {(12 & 6) | (12 ^ 1), (-7 & 6) | (-7 ^ 1), (5 & 6) | (5 ^ 1), 1});
    expect_eq<int32_t>("~ and <<", (~iv + (iv << 1)).to_vector(), {~12 + 24, ~-7 + -14, ~5 + 10, -1});
    auto bits = vm::from_vector(std::vector<bool>{true, false, true}, ctx);
    expect_eq<bool>("bool ~ and ^", (~bits ^ bits).to_vector(), {true, true, true});
    std::printf("element-wise ok\n");

    // -- where
    expect_eq<double>("where arrays", vm::where(x < 0.0, -x, x).to_vector(), {2.5, 1.0, 0.0, 0.5, 4.0});
    expect_eq<double>("where scalar", vm::where(x > 0.0, x, 0.0).to_vector(), {0, 0, 0, 0.5, 4.0});
    expect_eq<double>("where broadcast", vm::where(colv > 5.0, colv, rowv)(range(), 0).to_vector(), {1, 10, 20});
    std::printf("where ok\n");

    // -- reductions along axes and over everything (m[i][j] = 5 i + j)
    expect_eq<double>("sum axis 0", vm::sum(m, 0).to_vector(), {30, 34, 38, 42, 46});
    expect_eq<double>("sum axis -1", vm::sum(m, -1).to_vector(), {10, 35, 60, 85});
    expect("sum all", vm::sum(m).item() == 190.0);
    expect("sum of a strided view", vm::sum(stepped).item() == 4 + 2 + 0 + 14 + 12 + 10);
    expect_eq<double>("prod", vm::prod(m(range(0, 2), range(1, 3)), 1).to_vector(), {2, 42});
    expect("min max", vm::min(m).item() == 0.0 && vm::max(m).item() == 19.0);
    expect_eq<double>("max axis 0 of inner", vm::max(inner, 0).to_vector(), {11, 12, 13});
    expect("any all", vm::any(x > 3.0).item() && !vm::all(x > -1.0).item() && vm::all(x > -3.0).item());
    expect_eq<bool>("any axis", vm::any(m > 17.0, 1).to_vector(), {false, false, false, true});
    expect_eq<int64_t>("argmax axis 1", vm::argmax(outer, 1).to_vector(), {3, 3, 3});
    expect("argmin all", vm::argmin(x).item() == 0 && vm::argmax(x).item() == 4);
    expect("mean", vm::mean(m).item() == 9.5);
    std::printf("reductions ok\n");

    // -- scans
    expect_eq<double>("cumsum", vm::cumsum(rowv).to_vector(), {1, 3, 6, 10});
    expect_eq<double>("cumprod", vm::cumprod(rowv).to_vector(), {1, 2, 6, 24});
    expect_eq<double>("cumsum axis 1", vm::cumsum(m(range(0, 2)), 1).to_vector(), {0, 1, 3, 6, 10, 5, 11, 18, 26, 35});
    std::printf("scans ok\n");

    // -- astype
    expect_eq<int32_t>("astype truncates", x.astype<int32_t>().to_vector(), {-2, -1, 0, 0, 4});
    expect_eq<bool>("astype bool", x.astype<bool>().to_vector(), {true, true, false, true, true});
    expect_eq<double>("astype from bool", bits.astype<double>().to_vector(), {1, 0, 1});
    expect_eq<uint8_t>("astype wraps", vm::from_vector(std::vector<int32_t>{256, 257, -1}, ctx).astype<uint8_t>().to_vector(),
                       {0, 1, 255});
    std::printf("astype ok\n");

    // -- in-place assignment through views
    auto g = vm::zeros<double>({3, 4}, ctx);
    g(range(), 0) = -1.0;                             // a column, a scalar
    g(0, range(1, vm::none)) = rowv(range(0, 3)) * 2.0; // a row, an expression
    g(range(1, vm::none), range(1, vm::none)) = rowv(range(1, vm::none)); // broadcast over rows
    g(2, range(vm::none, vm::none, -1)) += 100.0;       // compound assignment on a reversed view
    expect_eq<double>("assignment", g.to_vector(), {-1, 2, 4, 6, -1, 2, 3, 4, 99, 102, 103, 104});
    auto shifted = vm::arange<double>(6, ctx);
    shifted(range(1, vm::none)) = shifted(range(vm::none, -1)) + 10.0; // reads before writes
    expect_eq<double>("overlapping assignment", shifted.to_vector(), {0, 10, 11, 12, 13, 14});
    auto alias = g; // a handle: shares the base
    alias(0, 0) = 7.0;
    expect("shared base", g(0, 0).item() == 7.0);
    auto ints = vm::zeros<int64_t>({3}, ctx);
    ints() = x(range(0, 3)); // a converting assignment
    expect_eq<int64_t>("converting assignment", ints.to_vector(), {-2, -1, 0});
    std::printf("assignment ok\n");

    // -- random: counter based, so a slice of the stream equals the stream at an offset
    auto r_all = vm::random<double>({10}, 7, 0, ctx);
    auto r_tail = vm::random<double>({4}, 7, 6, ctx);
    auto tail = r_all(range(6, vm::none)).to_vector();
    expect_eq("random offsets", r_tail.to_vector(), tail);
    expect("random in [0, 1)", vm::all((r_all >= 0.0) && (r_all < 1.0)).item());
    std::printf("random ok\n");

    // -- errors
    expect_throw<std::invalid_argument>(
        "shape mismatch", [&] { auto bad = m + rowv; }, "do not broadcast");
    expect_throw<std::out_of_range>(
        "index out of range", [&] { auto bad = m(4); }, "index 4 out of range");
    expect_throw<std::out_of_range>(
        "too many indexes", [&] { auto bad = m(0, 0, 0); }, "3 indexes into a 2-d array");
    expect_throw<std::invalid_argument>(
        "zero step", [&] { auto bad = m(range(0, 4, 0)); }, "step of 0");
    expect_throw<std::invalid_argument>(
        "assignment that does not broadcast", [&] { g(0) = rowv(range(0, 3)); }, "does not broadcast");
    expect_throw<std::invalid_argument>(
        "item of many", [&] { (void)m.item(); }, "item()");
    expect_throw<std::out_of_range>(
        "bad axis", [&] { auto bad = vm::sum(m, 2); }, "axis 2");
    expect_throw<vm::error>(
        "sqrt of integers (the VM refuses)", [&] { (void)vm::sqrt(iv).to_vector(); }, "VM_ERR_INVALID_INSTRUCTION");
    try {
        (void)vm::sqrt(iv).to_vector();
    } catch (const vm::error &e) {
        expect("error status", e.status() == VM_ERR_INVALID_INSTRUCTION);
    }
    expect_throw<vm::error>(
        "unknown stack", [] { vm::context bad(nullptr, "no-such-stack"); }, "VM_ERR_CONFIG");
    // the context still works after errors
    expect("usable after errors", vm::sum(rowv).item() == 10.0);
    std::printf("errors ok\n");

    // -- the default context
    auto d = vm::arange<double>(4) * 2.0;
    expect("default context", vm::sum(d).item() == 12.0 && d.ctx() == vm::default_context());

    if (failures != 0) {
        std::fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    std::printf("api ok\n");
    return 0;
}
