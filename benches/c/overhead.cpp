// overhead with vm.hpp: the per-instruction cost of the C++ users' path (see benches/README.md).
//
// The same program as benches/src/benchmarks/overhead/vm.rs: many dependent element-wise
// operations on a small array, alternately x * 0.9999 and x + 0.0001, each a new array as a C++
// program writes them (the wrapper frees the old one), and a read of sum(x) after each loop.
//
// SIZE is elements*ops*loops; the command line and output are benches/c/driver.hpp's.
#include "driver.hpp"

namespace {

// One repetition: the array is made and read back untimed, then the loops are timed.
template <class T>
double repetition(const vm::context &ctx, uint64_t n, uint64_t ops, uint64_t loops, double *checksum) {
    const T mul = T(0.9999), add = T(0.0001);
    auto x = vm::arange<T>(n, ctx) / T(static_cast<double>(n));
    x.to_vector();
    double total = 0.0;
    double t0 = bench::now();
    for (uint64_t loop = 0; loop < loops; loop++) {
        for (uint64_t op = 0; op < ops; op++) {
            x = op % 2 == 0 ? x * mul : x + add;
        }
        total = static_cast<double>(vm::sum(x).item());
    }
    *checksum = total;
    return bench::now() - t0;
}

}  // namespace

int main(int argc, char **argv) {
    return bench::main(argc, argv, "overhead.cpp", "elements*ops*loops", 1,
                       [](auto zero, const vm::context &ctx, const uint64_t *size, double *checksum) {
                           using T = decltype(zero);
                           return repetition<T>(ctx, size[0], size[1], size[2], checksum);
                       });
}
