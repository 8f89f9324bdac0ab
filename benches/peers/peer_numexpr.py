"""vm-bench peer: the suite with numexpr, written as a competent numexpr user would: every
element-wise expression (and its sum, where numexpr can reduce) one ``numexpr.evaluate`` on every
core, NumPy for the rest (slicing, broadcasting views, minimum along an axis, random draws)."""

import math
import sys

import numexpr as ne

import numpy as np

from _peers import baseline, main

bs = baseline("black_scholes")
eos = baseline("equation_of_state")
nb = baseline("nbody")
sw = baseline("shallow_water")


def heat_equation(grid, dims, dtype):
    c, n, s, e, w = (
        grid[1:-1, 1:-1],
        grid[:-2, 1:-1],
        grid[2:, 1:-1],
        grid[1:-1, 2:],
        grid[1:-1, :-2],
    )
    delta = 0.0
    for _ in range(dims[2]):
        work = ne.evaluate("0.2 * (c + n + s + e + w)")
        delta = ne.evaluate("sum(abs(work - c))")
        c[:] = work
    return delta


def leibnitz_pi(_, dims, dtype):
    n, iterations = dims
    total = 0.0
    for _ in range(iterations):
        k = np.arange(n, dtype=dtype)
        total += 4.0 * ne.evaluate("sum(1.0 / (4.0 * k + 1.0) - 1.0 / (4.0 * k + 3.0))")
    return total / iterations


def montecarlo_pi(_, dims, dtype):
    n, iterations = dims
    rng = np.random.default_rng(42)
    total = 0.0
    for _ in range(iterations):
        x = rng.random(n, dtype=dtype)
        y = rng.random(n, dtype=dtype)
        total += 4.0 * ne.evaluate("sum(where(sqrt(x * x + y * y) <= 1.0, 1, 0))") / n
    return total / iterations


def cnd(x):
    """The cumulative normal distribution of variable ``x`` as a numexpr expression (the NumPy
    baseline's 5-term polynomial)."""
    k = f"(1.0 / (1.0 + 0.2316419 * abs({x})))"
    poly = f"{k} * (a1 + {k} * (a2 + {k} * (a3 + {k} * (a4 + {k} * a5))))"
    w = f"(1.0 - rsqrt2pi * exp(-abs({x}) * abs({x}) / 2.0) * ({poly}))"
    return f"where({x} < 0, 1.0 - {w}, {w})"


def black_scholes(S, dims, dtype):
    n, iterations = dims
    a1, a2, a3, a4, a5 = bs.A
    X, R, V = bs.X, bs.R, bs.V
    rsqrt2pi = 1.0 / math.sqrt(2 * math.pi)
    price = f"sum(S * {cnd('d1')} - disc * {cnd('d2')})"
    total = 0.0
    for i in range(iterations):
        T = (i + 1) / 365.0
        a = (R + V * V / 2.0) * T
        b = V * math.sqrt(T)
        disc = X * math.exp(-R * T)
        d1 = ne.evaluate("(log(S / X) + a) / b")
        d2 = ne.evaluate("d1 - b")
        total += ne.evaluate(price) / n
    return total


def nbody(state, dims, dtype):
    m, pos, vel = state
    gm = (nb.G * m)[:, None]
    DT = nb.DT
    for _ in range(dims[1]):
        d = [ne.evaluate("a - b", {"a": p[:, None], "b": p[None, :]}) for p in pos]
        d0, d1, d2 = d
        r = ne.evaluate("sqrt(d0 * d0 + d1 * d1 + d2 * d2)")
        np.fill_diagonal(r, 1.0)
        rinv = ne.evaluate("1.0 / where(r < 1.0, 1.0, r)")
        for k in range(3):
            dk = d[k]
            f = ne.evaluate("gm * dk * rinv * rinv * rinv")
            np.fill_diagonal(f, 0.0)
            vel[k] += DT * np.sum(f, axis=0)
        for k in range(3):
            p, v = pos[k], vel[k]
            ne.evaluate("p + DT * v", out=p)
    return sum(np.sum(np.absolute(p)) for p in pos)


def knn(state, dims, dtype):
    E, Q = state
    q = Q[:, None, :]
    e = E[None, :, :]
    D = ne.evaluate("sum((q - e) ** 2, axis=2)")
    total = 0.0
    for _ in range(dims[3]):
        m = np.min(D, axis=1)
        total += np.sum(m)
        mc = m[:, None]
        D = ne.evaluate("where(D == mc, inf, D)", {"D": D, "mc": mc, "inf": np.inf})
    return total


def shallow_water(state, dims, dtype):
    H, U, V = state
    g2 = sw.G / 2
    c1 = sw.DT / (2 * sw.DX)
    c1y = sw.DT / (2 * sw.DY)
    c2 = sw.DT / sw.DX
    c2y = sw.DT / sw.DY
    for _ in range(dims[2]):
        sw.reflect(H, U, V)
        H1, H0, U1, U0, V1, V0 = (
            H[1:, 1:-1],
            H[:-1, 1:-1],
            U[1:, 1:-1],
            U[:-1, 1:-1],
            V[1:, 1:-1],
            V[:-1, 1:-1],
        )
        Hx = ne.evaluate("(H1 + H0) / 2 - c1 * (U1 - U0)")
        Ux = ne.evaluate("(U1 + U0) / 2 - c1 * ((U1 * U1 / H1 + g2 * (H1 * H1)) - (U0 * U0 / H0 + g2 * (H0 * H0)))")
        Vx = ne.evaluate("(V1 + V0) / 2 - c1 * ((U1 * V1 / H1) - (U0 * V0 / H0))")
        H1, H0, U1, U0, V1, V0 = (
            H[1:-1, 1:],
            H[1:-1, :-1],
            U[1:-1, 1:],
            U[1:-1, :-1],
            V[1:-1, 1:],
            V[1:-1, :-1],
        )
        Hy = ne.evaluate("(H1 + H0) / 2 - c1y * (V1 - V0)")
        Uy = ne.evaluate("(U1 + U0) / 2 - c1y * ((V1 * U1 / H1) - (V0 * U0 / H0))")
        Vy = ne.evaluate("(V1 + V0) / 2 - c1y * ((V1 * V1 / H1 + g2 * (H1 * H1)) - (V0 * V0 / H0 + g2 * (H0 * H0)))")
        Hx1, Hx0, Ux1, Ux0, Vx1, Vx0 = (
            Hx[1:, :],
            Hx[:-1, :],
            Ux[1:, :],
            Ux[:-1, :],
            Vx[1:, :],
            Vx[:-1, :],
        )
        Hy1, Hy0, Uy1, Uy0, Vy1, Vy0 = (
            Hy[:, 1:],
            Hy[:, :-1],
            Uy[:, 1:],
            Uy[:, :-1],
            Vy[:, 1:],
            Vy[:, :-1],
        )
        Hc, Uc, Vc = H[1:-1, 1:-1], U[1:-1, 1:-1], V[1:-1, 1:-1]
        Hn = ne.evaluate("Hc - (c2 * (Ux1 - Ux0) + c2y * (Vy1 - Vy0))")
        Un = ne.evaluate(
            "Uc - (c2 * ((Ux1 * Ux1 / Hx1 + g2 * (Hx1 * Hx1)) - (Ux0 * Ux0 / Hx0 + g2 * (Hx0 * Hx0)))"
            " + c2y * ((Vy1 * Uy1 / Hy1) - (Vy0 * Uy0 / Hy0)))"
        )
        Vn = ne.evaluate(
            "Vc - (c2 * ((Ux1 * Vx1 / Hx1) - (Ux0 * Vx0 / Hx0))"
            " + c2y * ((Vy1 * Vy1 / Hy1 + g2 * (Hy1 * Hy1)) - (Vy0 * Vy0 / Hy0 + g2 * (Hy0 * Hy0))))"
        )
        Hc[:], Uc[:], Vc[:] = Hn, Un, Vn
    return np.sum(H)


def equation_of_state(state, dims, dtype):
    t, s, p = state
    for r in range(dims[3]):
        c0, c1, c2, c3, c4, c5, c6, c7 = eos.constants(r)
        t = ne.evaluate(
            "t + log((t * t * c0 + t * c1 + c2) ** 2 + 1.0) / ((sqrt(s) * (p * c3 + c4)) ** 2 + 1.0) * c6"
            " - exp(-(p * c5)) * c7"
        )
    return float(np.sum(t)) / t.size


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main(globals(), "numexpr"))
