// heat_equation with vm.hpp: the C++ users' path of vm-bench (see benches/README.md).
//
// The same algorithm as benches/src/suite/heat_equation.rs and benches/c/heat_equation.c,
// written as a C++ program writes it with vm.hpp: slices of a grid, expressions whose
// temporaries the wrapper frees as they go out of scope, one read-back per repetition.
//
//   heat_equation SIZE DTYPE WARMUP REPS [CONFIG|-] [STACK|-]
//
// SIZE is h*w*iterations, DTYPE f64 or f32; CONFIG and STACK choose the stack as vm_init_stack
// does ("-": the lookup order, $VM_STACK). Prints one line per timed repetition:
//
//   RESULT <seconds> <checksum>
//
// and exits nonzero, with the VM's message on stderr, when a call fails.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "vm.hpp"

using vm::range;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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
    double t0 = now();
    for (uint64_t it = 0; it < iterations; it++) {
        auto work = (center + north + south + east + west) * T(0.2);
        delta = vm::sum(vm::abs(work - center));
        center = work;
    }
    *checksum = delta.valid() ? static_cast<double>(delta.item()) : 0.0;
    return now() - t0;
}

}  // namespace

int main(int argc, char **argv) {
    uint64_t h = 0, w = 0, iterations = 0;
    if (argc < 5 || std::sscanf(argv[1], "%" SCNu64 "*%" SCNu64 "*%" SCNu64, &h, &w, &iterations) != 3 || h == 0 ||
        w == 0) {
        std::fprintf(stderr, "usage: %s h*w*iterations f64|f32 WARMUP REPS [CONFIG|-] [STACK|-]\n", argv[0]);
        return 1;
    }
    bool f32 = std::strcmp(argv[2], "f32") == 0;
    int warmup = std::atoi(argv[3]), reps = std::atoi(argv[4]);
    const char *config = argc > 5 && std::strcmp(argv[5], "-") != 0 ? argv[5] : nullptr;
    const char *stack = argc > 6 && std::strcmp(argv[6], "-") != 0 ? argv[6] : nullptr;
    try {
        vm::context ctx(config, stack);
        for (int r = 0; r < warmup + reps; r++) {
            double checksum = 0.0;
            double t = f32 ? repetition<float>(ctx, h, w, iterations, &checksum)
                           : repetition<double>(ctx, h, w, iterations, &checksum);
            if (r >= warmup) std::printf("RESULT %.17g %.17g\n", t, checksum);
            std::fflush(stdout);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "heat_equation.cpp: %s\n", e.what());
        return 2;
    }
    return 0;
}
