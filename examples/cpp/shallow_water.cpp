// shallow_water.cpp: the 2-D shallow-water model with vm.hpp, as the shallow_water benchmark of
// benches/src/benchmarks/shallow_water/: Lax-Wendroff steps with reflecting boundaries on an h x w
// grid that includes its boundary, two 8x8 droplets at (h/4, w/4) and (h/2, w/2). The checksum is
// sum(H), printed in full; a plain C++ loop doing the same operations in the same order gives the
// reference the final H is compared with.
//
// Usage: shallow_water [h w iterations]   (default 20 24 3, the suite's tiny size; h, w >= 16)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vm.hpp"

using vm::range;

namespace {

const double G = 9.80665, DT = 0.02, DX = 1.0, DY = 1.0;
const double G2 = G / 2.0, C1 = DT / (2.0 * DX), C1Y = DT / (2.0 * DY), C2 = DT / DX, C2Y = DT / DY;

// The 8x8 droplet 8 exp(-5 (x^2 + y^2)) on linspace(-1, 1, 8), row-major.
std::vector<double> droplet() {
    double lin[8];
    for (int i = 0; i < 8; i++) {
        lin[i] = i == 7 ? 1.0 : -1.0 + i * (2.0 / 7.0);
    }
    std::vector<double> d;
    for (double y : lin) {
        for (double x : lin) {
            d.push_back(8.0 * std::exp(-5.0 * (x * x + y * y)));
        }
    }
    return d;
}

using A = vm::array<double>;

A momentum(const A &p, const A &q, const A &h) { return (p * q) / h; }
A pressure(const A &p, const A &h) { return momentum(p, p, h) + (h * h) * G2; }

// The VM program; returns H.
A run_vm(size_t h, size_t w, int iterations, double &checksum) {
    auto hh = vm::ones<double>({h, w});
    auto uu = vm::zeros<double>({h, w});
    auto vv = vm::zeros<double>({h, w});
    auto drop = vm::from_vector(droplet(), {8, 8});
    const size_t corners[2][2] = {{h / 4, w / 4}, {h / 2, w / 2}};
    for (const auto &c : corners) {
        hh(range(c[0], c[0] + 8), range(c[1], c[1] + 8)) += drop;
    }
    const int64_t bounds[2][2] = {{0, 1}, {-1, -2}};
    for (int it = 0; it < iterations; it++) {
        // reflecting boundary: columns, then rows
        for (const auto &b : bounds) {
            hh(range(), b[0]) = hh(range(), b[1]);
            uu(range(), b[0]) = uu(range(), b[1]);
            vv(range(), b[0]) = -vv(range(), b[1]);
        }
        for (const auto &b : bounds) {
            hh(b[0]) = hh(b[1]);
            uu(b[0]) = -uu(b[1]);
            vv(b[0]) = vv(b[1]);
        }
        // first half step, x direction
        A h1 = hh(range(1, vm::none), range(1, -1)), h0 = hh(range(vm::none, -1), range(1, -1));
        A u1 = uu(range(1, vm::none), range(1, -1)), u0 = uu(range(vm::none, -1), range(1, -1));
        A v1 = vv(range(1, vm::none), range(1, -1)), v0 = vv(range(vm::none, -1), range(1, -1));
        A hx = (h1 + h0) / 2.0 - (u1 - u0) * C1;
        A ux = (u1 + u0) / 2.0 - (pressure(u1, h1) - pressure(u0, h0)) * C1;
        A vx = (v1 + v0) / 2.0 - (momentum(u1, v1, h1) - momentum(u0, v0, h0)) * C1;
        // first half step, y direction
        h1 = hh(range(1, -1), range(1, vm::none));
        h0 = hh(range(1, -1), range(vm::none, -1));
        u1 = uu(range(1, -1), range(1, vm::none));
        u0 = uu(range(1, -1), range(vm::none, -1));
        v1 = vv(range(1, -1), range(1, vm::none));
        v0 = vv(range(1, -1), range(vm::none, -1));
        A hy = (h1 + h0) / 2.0 - (v1 - v0) * C1Y;
        A uy = (u1 + u0) / 2.0 - (momentum(v1, u1, h1) - momentum(v0, u0, h0)) * C1Y;
        A vy = (v1 + v0) / 2.0 - (pressure(v1, h1) - pressure(v0, h0)) * C1Y;
        // second half step
        auto x1 = [](const A &a) -> A { return a(range(1, vm::none), range()); };
        auto x0 = [](const A &a) -> A { return a(range(vm::none, -1), range()); };
        auto y1 = [](const A &a) -> A { return a(range(), range(1, vm::none)); };
        auto y0 = [](const A &a) -> A { return a(range(), range(vm::none, -1)); };
        auto inner = [](const A &a) -> A { return a(range(1, -1), range(1, -1)); };
        inner(hh) -= (x1(ux) - x0(ux)) * C2 + (y1(vy) - y0(vy)) * C2Y;
        inner(uu) -= (pressure(x1(ux), x1(hx)) - pressure(x0(ux), x0(hx))) * C2 +
                     (momentum(y1(vy), y1(uy), y1(hy)) - momentum(y0(vy), y0(uy), y0(hy))) * C2Y;
        inner(vv) -= (momentum(x1(ux), x1(vx), x1(hx)) - momentum(x0(ux), x0(vx), x0(hx))) * C2 +
                     (pressure(y1(vy), y1(hy)) - pressure(y0(vy), y0(hy))) * C2Y;
    }
    checksum = vm::sum(hh).item();
    return hh;
}

// The same model in plain loops, operation for operation; returns H (row-major).
std::vector<double> run_loop(size_t h, size_t w, int iterations) {
    std::vector<double> H(h * w, 1.0), U(h * w, 0.0), V(h * w, 0.0);
    std::vector<double> d = droplet();
    const size_t corners[2][2] = {{h / 4, w / 4}, {h / 2, w / 2}};
    for (const auto &c : corners) {
        for (size_t a = 0; a < 8; a++) {
            for (size_t b = 0; b < 8; b++) {
                H[(c[0] + a) * w + c[1] + b] += d[a * 8 + b];
            }
        }
    }
    auto mom = [](double p, double q, double hv) { return (p * q) / hv; };
    auto pre = [](double p, double hv) { return (p * p) / hv + (hv * hv) * G2; };
    // hx, ux, vx: (h-1) x (w-2); hy, uy, vy: (h-2) x (w-1)
    std::vector<double> Hx((h - 1) * (w - 2)), Ux(Hx.size()), Vx(Hx.size());
    std::vector<double> Hy((h - 2) * (w - 1)), Uy(Hy.size()), Vy(Hy.size());
    for (int it = 0; it < iterations; it++) {
        const size_t cols[2][2] = {{0, 1}, {w - 1, w - 2}};
        for (const auto &b : cols) {
            for (size_t i = 0; i < h; i++) {
                H[i * w + b[0]] = H[i * w + b[1]];
                U[i * w + b[0]] = U[i * w + b[1]];
                V[i * w + b[0]] = -V[i * w + b[1]];
            }
        }
        const size_t rows[2][2] = {{0, 1}, {h - 1, h - 2}};
        for (const auto &b : rows) {
            for (size_t j = 0; j < w; j++) {
                H[b[0] * w + j] = H[b[1] * w + j];
                U[b[0] * w + j] = -U[b[1] * w + j];
                V[b[0] * w + j] = V[b[1] * w + j];
            }
        }
        for (size_t i = 0; i < h - 1; i++) {
            for (size_t j = 0; j < w - 2; j++) {
                size_t p1 = (i + 1) * w + j + 1, p0 = i * w + j + 1, o = i * (w - 2) + j;
                Hx[o] = (H[p1] + H[p0]) / 2.0 - (U[p1] - U[p0]) * C1;
                Ux[o] = (U[p1] + U[p0]) / 2.0 - (pre(U[p1], H[p1]) - pre(U[p0], H[p0])) * C1;
                Vx[o] = (V[p1] + V[p0]) / 2.0 - (mom(U[p1], V[p1], H[p1]) - mom(U[p0], V[p0], H[p0])) * C1;
            }
        }
        for (size_t i = 0; i < h - 2; i++) {
            for (size_t j = 0; j < w - 1; j++) {
                size_t p1 = (i + 1) * w + j + 1, p0 = (i + 1) * w + j, o = i * (w - 1) + j;
                Hy[o] = (H[p1] + H[p0]) / 2.0 - (V[p1] - V[p0]) * C1Y;
                Uy[o] = (U[p1] + U[p0]) / 2.0 - (mom(V[p1], U[p1], H[p1]) - mom(V[p0], U[p0], H[p0])) * C1Y;
                Vy[o] = (V[p1] + V[p0]) / 2.0 - (pre(V[p1], H[p1]) - pre(V[p0], H[p0])) * C1Y;
            }
        }
        for (size_t i = 0; i < h - 2; i++) {
            for (size_t j = 0; j < w - 2; j++) {
                size_t x1 = (i + 1) * (w - 2) + j, x0 = i * (w - 2) + j; // rows of the x arrays
                size_t y1 = i * (w - 1) + j + 1, y0 = i * (w - 1) + j;   // columns of the y arrays
                size_t c = (i + 1) * w + j + 1;
                H[c] = H[c] - ((Ux[x1] - Ux[x0]) * C2 + (Vy[y1] - Vy[y0]) * C2Y);
                U[c] = U[c] - ((pre(Ux[x1], Hx[x1]) - pre(Ux[x0], Hx[x0])) * C2 +
                               (mom(Vy[y1], Uy[y1], Hy[y1]) - mom(Vy[y0], Uy[y0], Hy[y0])) * C2Y);
                V[c] = V[c] - ((mom(Ux[x1], Vx[x1], Hx[x1]) - mom(Ux[x0], Vx[x0], Hx[x0])) * C2 +
                               (pre(Vy[y1], Hy[y1]) - pre(Vy[y0], Hy[y0])) * C2Y);
            }
        }
    }
    return H;
}

} // namespace

int main(int argc, char **argv) {
    size_t h = 20, w = 24;
    int iterations = 3;
    if (argc == 4) {
        h = std::strtoul(argv[1], nullptr, 10);
        w = std::strtoul(argv[2], nullptr, 10);
        iterations = std::atoi(argv[3]);
    } else if (argc != 1) {
        std::fprintf(stderr, "usage: %s [h w iterations]\n", argv[0]);
        return 2;
    }
    if (h < 16 || w < 16) {
        std::fprintf(stderr, "shallow_water: h and w must be at least 16\n");
        return 2;
    }
    try {
        double checksum = 0.0;
        std::vector<double> got = run_vm(h, w, iterations, checksum).to_vector();
        std::vector<double> want = run_loop(h, w, iterations);
        double max_diff = 0.0, loop_sum = 0.0;
        for (size_t i = 0; i < want.size(); i++) {
            max_diff = std::fmax(max_diff, std::fabs(got[i] - want[i]));
            loop_sum += want[i];
        }
        bool ok = max_diff == 0.0 && std::fabs(checksum - loop_sum) <= 1e-9 * std::fabs(loop_sum);
        std::printf("shallow_water %zu*%zu*%d\n", h, w, iterations);
        std::printf("shallow_water checksum %.17g\n", checksum);
        std::printf("shallow_water max |vm - c loop| = %g\n", max_diff);
        std::printf("shallow_water checksum agrees with the loop: %s\n", ok ? "yes" : "no");
        return ok ? 0 : 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "shallow_water: %s\n", e.what());
        return 1;
    }
}
