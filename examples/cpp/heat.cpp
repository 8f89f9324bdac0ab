// heat.cpp: the heat equation with vm.hpp, twice.
//
// 1. The program of tests/c/heat.c: an N x N grid (N = 34), its top edge held at 100 and a hot
//    spot of 500, 25 explicit steps of new = 0.5 * (centre + 0.25 * (((north + south) + west) +
//    east)); prints the same "checksum" line as heat.c, and the largest difference from a plain
//    C++ loop computing the same thing in the same order (0: the results are identical).
// 2. The heat_equation benchmark of benches/src/benchmarks/heat_equation/: Jacobi iteration of
//    work = 0.2 * ((((c + n) + s) + e) + w) on an (h+2) x (w+2) grid with cold edges and a warm
//    top row; delta = sum |work - c|; c = work. Its checksum is the last delta, printed in full.
//
// Usage: heat [h w iterations]   (default 20 30 5, the suite's tiny size)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vm.hpp"

using vm::range;

namespace {

// Part 1: tests/c/heat.c's program. Returns 0 when the VM and the loop agree exactly.
int heat_c_program() {
    const size_t n = 34;
    const int steps = 25;
    std::vector<double> initial(n * n, 0.0);
    for (size_t j = 0; j < n; j++) {
        initial[j] = 100.0;
    }
    initial[(n / 2) * n + n / 3] = 500.0;

    // the plain loop
    std::vector<double> expect = initial, next((n - 2) * (n - 2));
    for (int s = 0; s < steps; s++) {
        for (size_t i = 1; i < n - 1; i++) {
            for (size_t j = 1; j < n - 1; j++) {
                double acc = expect[(i - 1) * n + j] + expect[(i + 1) * n + j];
                acc = acc + expect[i * n + j - 1];
                acc = acc + expect[i * n + j + 1];
                acc = acc * 0.25;
                acc = acc + expect[i * n + j];
                next[(i - 1) * (n - 2) + (j - 1)] = acc * 0.5;
            }
        }
        for (size_t i = 1; i < n - 1; i++) {
            for (size_t j = 1; j < n - 1; j++) {
                expect[i * n + j] = next[(i - 1) * (n - 2) + (j - 1)];
            }
        }
    }

    // the VM
    auto grid = vm::from_vector(initial, {n, n});
    auto centre = grid(range(1, -1), range(1, -1));
    auto north = grid(range(vm::none, -2), range(1, -1));
    auto south = grid(range(2, vm::none), range(1, -1));
    auto west = grid(range(1, -1), range(vm::none, -2));
    auto east = grid(range(1, -1), range(2, vm::none));
    for (int s = 0; s < steps; s++) {
        centre = ((((north + south) + west) + east) * 0.25 + centre) * 0.5;
    }
    double vm_total = vm::sum(grid).item();
    std::vector<double> got = grid.to_vector();

    double sum = 0.0, max_diff = 0.0;
    for (size_t i = 0; i < n * n; i++) {
        max_diff = std::fmax(max_diff, std::fabs(got[i] - expect[i]));
        sum += got[i];
    }
    std::printf("heat: %zux%zu grid, %d steps\n", n, n, steps);
    std::printf("centre %.17g, hot spot %.17g\n", got[(n / 2) * n + n / 2], got[(n / 2) * n + n / 3]);
    std::printf("checksum %.17g, vm total %.9g\n", sum, vm_total);
    std::printf("max |vm - c loop| = %g\n", max_diff);
    if (max_diff != 0.0 || std::fabs(vm_total - sum) > 1e-9 * std::fabs(sum)) {
        std::fprintf(stderr, "heat: the VM and the loop disagree\n");
        return 1;
    }
    return 0;
}

// Part 2: the heat_equation benchmark. Returns 0 when the VM and the loop agree.
int heat_equation_benchmark(size_t h, size_t w, int iterations) {
    const size_t rows = h + 2, cols = w + 2;
    auto grid = vm::zeros<double>({rows, cols});
    grid(range(), 0) = -273.15;
    grid(range(), -1) = -273.15;
    grid(-1, range()) = -273.15;
    grid(0, range()) = 40.0;
    auto center = grid(range(1, -1), range(1, -1));
    auto north = grid(range(vm::none, -2), range(1, -1));
    auto south = grid(range(2, vm::none), range(1, -1));
    auto east = grid(range(1, -1), range(2, vm::none));
    auto west = grid(range(1, -1), range(vm::none, -2));
    vm::array<double> delta;
    for (int it = 0; it < iterations; it++) {
        auto work = (center + north + south + east + west) * 0.2;
        delta = vm::sum(vm::abs(work - center));
        center = work;
    }
    double checksum = delta.valid() ? delta.item() : 0.0;
    std::vector<double> got = grid.to_vector();

    // the plain loop, in the same order
    std::vector<double> g(rows * cols, 0.0), work(h * w);
    for (size_t i = 0; i < rows; i++) {
        g[i * cols] = -273.15;
        g[i * cols + cols - 1] = -273.15;
    }
    for (size_t j = 0; j < cols; j++) {
        g[(rows - 1) * cols + j] = -273.15;
        g[j] = 40.0;
    }
    double loop_delta = 0.0;
    for (int it = 0; it < iterations; it++) {
        loop_delta = 0.0;
        for (size_t i = 1; i <= h; i++) {
            for (size_t j = 1; j <= w; j++) {
                double c = g[i * cols + j];
                double x = c + g[(i - 1) * cols + j];
                x = x + g[(i + 1) * cols + j];
                x = x + g[i * cols + j + 1];
                x = x + g[i * cols + j - 1];
                work[(i - 1) * w + (j - 1)] = x * 0.2;
                loop_delta += std::fabs(x * 0.2 - c);
            }
        }
        for (size_t i = 1; i <= h; i++) {
            for (size_t j = 1; j <= w; j++) {
                g[i * cols + j] = work[(i - 1) * w + (j - 1)];
            }
        }
    }
    double max_diff = 0.0;
    for (size_t i = 0; i < rows * cols; i++) {
        max_diff = std::fmax(max_diff, std::fabs(got[i] - g[i]));
    }
    std::printf("heat_equation %zu*%zu*%d\n", h, w, iterations);
    std::printf("heat_equation checksum %.17g\n", checksum);
    std::printf("heat_equation max |vm - c loop| = %g\n", max_diff);
    bool delta_ok = std::fabs(checksum - loop_delta) <= 1e-9 * std::fabs(loop_delta);
    std::printf("heat_equation delta agrees with the loop: %s\n", delta_ok ? "yes" : "no");
    return max_diff == 0.0 && delta_ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
    size_t h = 20, w = 30;
    int iterations = 5;
    if (argc == 4) {
        h = std::strtoul(argv[1], nullptr, 10);
        w = std::strtoul(argv[2], nullptr, 10);
        iterations = std::atoi(argv[3]);
    } else if (argc != 1) {
        std::fprintf(stderr, "usage: %s [h w iterations]\n", argv[0]);
        return 2;
    }
    try {
        int status = heat_c_program();
        return heat_equation_benchmark(h, w, iterations) | status;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "heat: %s\n", e.what());
        return 1;
    }
}
