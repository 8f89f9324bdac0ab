// heat_equation with vm.hpp: the C++ users' path of vm-bench (see benches/README.md).
//
// The same algorithm as benches/src/benchmarks/heat_equation/vm.rs and
// benches/c/heat_equation.c, written as a C++ program writes it with vm.hpp: slices of a grid,
// expressions whose temporaries the wrapper frees as they go out of scope, one read-back per
// repetition.
//
// SIZE is h*w*iterations; the command line and output are benches/c/driver.hpp's.
#include "driver.hpp"

using vm::range;

namespace {

// One repetition: set the grid up (untimed), then time the iterations and the read-back.
template <class T>
double repetition(const vm::context &ctx, size_t h, size_t w, uint64_t iterations, double *checksum) {
    auto grid = vm::zeros<T>({h + 2, w + 2}, ctx);
    grid(range(), 0) = T(-273.15);
    grid(range(), -1) = T(-273.15);
    grid(-1, range()) = T(-273.15);
    grid(0, range()) = T(40.0);
    ctx.flush();
    auto center = grid(range(1, -1), range(1, -1));
    auto north = grid(range(vm::none, -2), range(1, -1));
    auto south = grid(range(2, vm::none), range(1, -1));
    auto east = grid(range(1, -1), range(2, vm::none));
    auto west = grid(range(1, -1), range(vm::none, -2));
    vm::array<T> delta;
    double t0 = bench::now();
    for (uint64_t it = 0; it < iterations; it++) {
        auto work = (center + north + south + east + west) * T(0.2);
        delta = vm::sum(vm::abs(work - center));
        center = work;
    }
    *checksum = delta.valid() ? static_cast<double>(delta.item()) : 0.0;
    return bench::now() - t0;
}

}  // namespace

int main(int argc, char **argv) {
    return bench::main(argc, argv, "heat_equation.cpp", "h*w*iterations", 2,
                       [](auto zero, const vm::context &ctx, const uint64_t *size, double *checksum) {
                           using T = decltype(zero);
                           return repetition<T>(ctx, size[0], size[1], size[2], checksum);
                       });
}
