// doc_example.cpp: the example of docs/cpp.md. A smoothed random signal, its statistics, and a
// clipped copy written back through a view.
#include <cstdio>
#include <vector>

#include "vm.hpp"

int main() {
    try {
        using vm::range;
        auto x = vm::random<double>({1000}, /*seed=*/42); // uniform in [0, 1), counters 0..999
        // a 3-point moving average of the interior: views of one base, shifted
        auto smooth = (x(range(vm::none, -2)) + x(range(1, -1)) + x(range(2, vm::none))) / 3.0;
        auto centred = smooth - vm::mean(smooth);
        // clip the centred signal to [-0.1, 0.1] and write it back into x's interior
        x(range(1, -1)) = vm::minimum(vm::maximum(centred, -0.1), 0.1);
        // nothing has run yet: reading a result runs the recorded work
        double lo = vm::min(x(range(1, -1))).item();
        double hi = vm::max(x(range(1, -1))).item();
        long clipped = static_cast<long>(vm::sum((vm::abs(x) == 0.1).astype<int64_t>()).item());
        std::printf("min %.3f, max %.3f, %ld of 998 clipped\n", lo, hi, clipped);
        std::vector<double> head = x(range(0, 3)).to_vector();
        std::printf("first three: %.3f %.3f %.3f\n", head[0], head[1], head[2]);
        return 0;
    } catch (const std::exception &e) { // vm::error, std::invalid_argument, std::out_of_range
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
