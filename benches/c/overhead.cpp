// overhead with vm.hpp: the per-instruction cost of the C++ users' path (see benches/README.md).
//
// The same program as benches/src/suite/overhead.rs: many dependent element-wise operations on a
// small array, alternately x * 0.9999 and x + 0.0001, each a new array as a C++ program writes
// them (the wrapper frees the old one), and a read of sum(x) after each loop.
//
//   overhead SIZE DTYPE WARMUP REPS [CONFIG|-] [STACK|-]
//
// SIZE is elements*ops*loops, DTYPE f64 or f32; CONFIG and STACK choose the stack as
// vm_init_stack does ("-": the lookup order, $VM_STACK). Prints one line per timed repetition:
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

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One repetition: the array is made and read back untimed, then the loops are timed.
template <class T>
double repetition(const vm::context &ctx, uint64_t n, uint64_t ops, uint64_t loops, double *checksum) {
    const T mul = T(0.9999), add = T(0.0001);
    auto x = vm::arange<T>(n, ctx) / T(static_cast<double>(n));
    x.to_vector();
    double total = 0.0;
    double t0 = now();
    for (uint64_t loop = 0; loop < loops; loop++) {
        for (uint64_t op = 0; op < ops; op++) {
            x = op % 2 == 0 ? x * mul : x + add;
        }
        total = static_cast<double>(vm::sum(x).item());
    }
    *checksum = total;
    return now() - t0;
}

}  // namespace

int main(int argc, char **argv) {
    uint64_t n = 0, ops = 0, loops = 0;
    if (argc < 5 || std::sscanf(argv[1], "%" SCNu64 "*%" SCNu64 "*%" SCNu64, &n, &ops, &loops) != 3 || n == 0) {
        std::fprintf(stderr, "usage: %s elements*ops*loops f64|f32 WARMUP REPS [CONFIG|-] [STACK|-]\n", argv[0]);
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
            double t = f32 ? repetition<float>(ctx, n, ops, loops, &checksum)
                           : repetition<double>(ctx, n, ops, loops, &checksum);
            if (r >= warmup) std::printf("RESULT %.17g %.17g\n", t, checksum);
            std::fflush(stdout);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "overhead.cpp: %s\n", e.what());
        return 2;
    }
    return 0;
}
