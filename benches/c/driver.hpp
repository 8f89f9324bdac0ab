// The command line and output shared by vm-bench's C++ programs (see benches/README.md):
//
//   PROGRAM SIZE DTYPE WARMUP REPS [CONFIG|-] [STACK|-]
//
// SIZE is three numbers a*b*c (what they mean is the benchmark's), DTYPE f64 or f32; CONFIG and
// STACK choose the stack as vm_init_stack does ("-": the lookup order, $VM_STACK). Prints one
// line per timed repetition:
//
//   RESULT <seconds> <checksum>
//
// and exits 1 on a usage error, 2 with the VM's message on stderr when a call fails.
#pragma once

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "vm.hpp"

namespace bench {

/** Seconds on a monotonic clock. */
inline double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** Runs a benchmark program: parses the command line (the first `nonzero` of the three sizes
 * must be positive; `dims` names them for the usage line), then calls
 * `repetition(T{}, ctx, sizes, &checksum)` with T = double or float for every warm-up and timed
 * repetition; it returns the seconds it timed. */
template <class Repetition>
int main(int argc, char **argv, const char *name, const char *dims, int nonzero, Repetition repetition) {
    uint64_t size[3] = {0, 0, 0};
    bool parsed = argc >= 5 && std::sscanf(argv[1], "%" SCNu64 "*%" SCNu64 "*%" SCNu64, &size[0], &size[1],
                                           &size[2]) == 3;
    for (int d = 0; parsed && d < nonzero; d++) {
        parsed = size[d] > 0;
    }
    if (!parsed) {
        std::fprintf(stderr, "usage: %s %s f64|f32 WARMUP REPS [CONFIG|-] [STACK|-]\n", argv[0], dims);
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
            double t = f32 ? repetition(float{}, ctx, size, &checksum) : repetition(double{}, ctx, size, &checksum);
            if (r >= warmup) std::printf("RESULT %.17g %.17g\n", t, checksum);
            std::fflush(stdout);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 2;
    }
    return 0;
}

}  // namespace bench
