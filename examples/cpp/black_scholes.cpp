// black_scholes.cpp: European call prices with vm.hpp, as the black_scholes benchmark of
// benches/src/benchmarks/black_scholes/: S uniform in [58, 62) from the VM's random stream (seed
// 0xB5, counters 0..n), T = (i+1)/365 in iteration i, the 5-term polynomial CND. The checksum is
// the sum over iterations of the mean price, printed in full; the same operations in a plain C++
// loop over the same S give the reference it is compared with.
//
// Usage: black_scholes [n iterations]   (default 1000 3, the suite's tiny size)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vm.hpp"

namespace {

const uint64_t SEED = 0xB5;
const double X = 65.0, R = 0.08, V = 0.3;
const double A[5] = {0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429};
const double PI = 3.14159265358979323846;

// a = (r + v^2/2) T, b = v sqrt(T), X e^(-r T) for iteration i.
void iteration_constants(int i, double &a, double &b, double &xe) {
    double t = static_cast<double>(i + 1) / 365.0;
    a = (R + V * V / 2.0) * t;
    b = V * std::sqrt(t);
    xe = X * std::exp(-R * t);
}

// The cumulative normal distribution, recorded on the VM.
vm::array<double> cnd(const vm::array<double> &x) {
    auto l = vm::abs(x);
    auto k = 1.0 / (l * 0.2316419 + 1.0);
    auto poly = ((((k * A[4] + A[3]) * k + A[2]) * k + A[1]) * k + A[0]) * k;
    const double c = 1.0 / std::sqrt(2.0 * PI);
    auto e = vm::exp((-l * l) / 2.0);
    auto w = 1.0 - ((e * c) * poly);
    return vm::where(x < 0.0, 1.0 - w, w);
}

// The same, one element at a time.
double cnd_loop(double x) {
    double l = std::fabs(x);
    double k = 1.0 / (l * 0.2316419 + 1.0);
    double poly = ((((k * A[4] + A[3]) * k + A[2]) * k + A[1]) * k + A[0]) * k;
    const double c = 1.0 / std::sqrt(2.0 * PI);
    double e = std::exp((-l * l) / 2.0);
    double w = 1.0 - ((e * c) * poly);
    return x < 0.0 ? 1.0 - w : w;
}

} // namespace

int main(int argc, char **argv) {
    size_t n = 1000;
    int iterations = 3;
    if (argc == 3) {
        n = std::strtoul(argv[1], nullptr, 10);
        iterations = std::atoi(argv[2]);
    } else if (argc != 1) {
        std::fprintf(stderr, "usage: %s [n iterations]\n", argv[0]);
        return 2;
    }
    try {
        auto s = vm::random<double>({n}, SEED, 0) * 4.0 + 58.0;
        double total = 0.0;
        vm::array<double> last_price;
        for (int i = 0; i < iterations; i++) {
            double a, b, xe;
            iteration_constants(i, a, b, xe);
            auto d1 = (vm::log(s / X) + a) / b;
            auto d2 = d1 - b;
            auto price = s * cnd(d1) - cnd(d2) * xe;
            total += vm::sum(price).item() / static_cast<double>(n);
            last_price = price;
        }

        // the reference: the same operations on the same S, element by element
        std::vector<double> sv = s.to_vector();
        std::vector<double> got = last_price.valid() ? last_price.to_vector() : std::vector<double>();
        double loop_total = 0.0, max_diff = 0.0;
        for (int i = 0; i < iterations; i++) {
            double a, b, xe, sum = 0.0;
            iteration_constants(i, a, b, xe);
            for (size_t j = 0; j < n; j++) {
                double d1 = (std::log(sv[j] / X) + a) / b;
                double d2 = d1 - b;
                double price = sv[j] * cnd_loop(d1) - cnd_loop(d2) * xe;
                sum += price;
                if (i == iterations - 1) {
                    max_diff = std::fmax(max_diff, std::fabs(price - got[j]));
                }
            }
            loop_total += sum / static_cast<double>(n);
        }
        bool ok = std::fabs(total - loop_total) <= 1e-9 * std::fabs(loop_total) && max_diff <= 1e-9;
        std::printf("black_scholes %zu*%d\n", n, iterations);
        std::printf("black_scholes checksum %.17g\n", total);
        // libm and the engines' exp and log may differ in the last bits: a tolerance, not 0
        std::printf("black_scholes prices and checksum agree with the loop (1e-9): %s\n", ok ? "yes" : "no");
        if (!ok) {
            std::fprintf(stderr, "black_scholes: loop checksum %.17g, max price difference %g\n", loop_total, max_diff);
        }
        return ok ? 0 : 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "black_scholes: %s\n", e.what());
        return 1;
    }
}
