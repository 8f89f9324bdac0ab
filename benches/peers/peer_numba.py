"""vm-bench peer: the suite with numba, written as a competent numba user would: fused loops
under ``@njit(parallel=True)`` (``prange`` over the outer loop, on every core), float semantics
unchanged (no fastmath). Compile time is excluded: the warm-up repetition compiles."""

import math
import sys

from numba import njit, prange

import numpy as np

from _peers import baseline, main

bs = baseline("black_scholes")
eos = baseline("equation_of_state")
nb = baseline("nbody")
sw = baseline("shallow_water")


@njit(parallel=True, cache=False)
def _heat(grid, iterations):
    h, w = grid.shape[0] - 2, grid.shape[1] - 2
    old = grid
    new = grid.copy()
    delta = 0.0
    for _ in range(iterations):
        delta = 0.0
        for i in prange(1, h + 1):
            for j in range(1, w + 1):
                v = 0.2 * (old[i, j] + old[i - 1, j] + old[i + 1, j] + old[i, j + 1] + old[i, j - 1])
                delta += abs(v - old[i, j])
                new[i, j] = v
        old, new = new, old
    if iterations % 2 == 1:
        grid[:, :] = old
    return delta


def heat_equation(grid, dims, dtype):
    return _heat(grid, dims[2])


@njit(parallel=True)
def _leibnitz(n, iterations):
    total = 0.0
    for _ in range(iterations):
        s = 0.0
        for k in prange(n):
            kf = float(k)
            s += 1.0 / (4.0 * kf + 1.0) - 1.0 / (4.0 * kf + 3.0)
        total += 4.0 * s
    return total / iterations


def leibnitz_pi(_, dims, dtype):
    return _leibnitz(dims[0], dims[1])


#: Chunks of the Monte Carlo draws, each from its own seed, so that the result is the same
#: whichever thread draws which chunk (numba's generator state is per thread).
CHUNKS = 64


@njit(parallel=True)
def _montecarlo(n, iterations, seed):
    total = 0.0
    per = (n + CHUNKS - 1) // CHUNKS
    for it in range(iterations):
        inside = 0
        for c in prange(CHUNKS):
            np.random.seed(seed + it * CHUNKS + c)
            for _i in range(c * per, min(n, (c + 1) * per)):
                x = np.random.random()
                y = np.random.random()
                if math.sqrt(x * x + y * y) <= 1.0:
                    inside += 1
        total += 4.0 * inside / n
    return total / iterations


def montecarlo_pi(_, dims, dtype):
    return _montecarlo(dims[0], dims[1], 42)


@njit
def _cnd(x, a1, a2, a3, a4, a5):
    L = abs(x)
    K = 1.0 / (1.0 + 0.2316419 * L)
    poly = K * (a1 + K * (a2 + K * (a3 + K * (a4 + K * a5))))
    w = 1.0 - (1.0 / math.sqrt(2 * math.pi)) * math.exp(-L * L / 2.0) * poly
    return 1.0 - w if x < 0 else w


@njit(parallel=True)
def _black_scholes(S, iterations, X, R, V, A):
    n = S.shape[0]
    a1, a2, a3, a4, a5 = A
    total = 0.0
    for i in range(iterations):
        T = (i + 1) / 365.0
        a = (R + V * V / 2.0) * T
        b = V * math.sqrt(T)
        disc = X * math.exp(-R * T)
        s = 0.0
        for j in prange(n):
            d1 = (math.log(S[j] / X) + a) / b
            d2 = d1 - b
            s += S[j] * _cnd(d1, a1, a2, a3, a4, a5) - disc * _cnd(d2, a1, a2, a3, a4, a5)
        total += s / n
    return total


def black_scholes(S, dims, dtype):
    return _black_scholes(S, dims[1], bs.X, bs.R, bs.V, bs.A)


@njit(parallel=True)
def _nbody(m, px, py, pz, vx, vy, vz, steps, G, DT):
    n = m.shape[0]
    for _ in range(steps):
        for j in prange(n):
            fx = 0.0
            fy = 0.0
            fz = 0.0
            for i in range(n):
                if i == j:
                    continue
                dx = px[i] - px[j]
                dy = py[i] - py[j]
                dz = pz[i] - pz[j]
                r = math.sqrt(dx * dx + dy * dy + dz * dz)
                if r < 1.0:
                    r = 1.0
                rinv = 1.0 / r
                gm = G * m[i]
                fx += gm * dx * rinv * rinv * rinv
                fy += gm * dy * rinv * rinv * rinv
                fz += gm * dz * rinv * rinv * rinv
            vx[j] += DT * fx
            vy[j] += DT * fy
            vz[j] += DT * fz
        for j in prange(n):
            px[j] += DT * vx[j]
            py[j] += DT * vy[j]
            pz[j] += DT * vz[j]
    return np.sum(np.abs(px)) + np.sum(np.abs(py)) + np.sum(np.abs(pz))


def nbody(state, dims, dtype):
    m, pos, vel = state
    return _nbody(m, *pos, *vel, dims[1], nb.G, nb.DT)


@njit(parallel=True)
def _knn(E, Q, k):
    q, d = Q.shape
    n = E.shape[0]
    totals = np.zeros(q)
    for qi in prange(q):
        dist = np.empty(n, dtype=E.dtype)
        for j in range(n):
            s = 0.0
            for c in range(d):
                diff = Q[qi, c] - E[j, c]
                s += diff * diff
            dist[j] = s
        t = 0.0
        for _ in range(k):
            m = np.inf
            for j in range(n):
                if dist[j] < m:
                    m = dist[j]
            t += m
            for j in range(n):
                if dist[j] == m:
                    dist[j] = np.inf
        totals[qi] = t
    return totals.sum()


def knn(state, dims, dtype):
    E, Q = state
    return _knn(E, Q, dims[3])


@njit(parallel=True)
def _shallow_step(H, U, V, Hx, Ux, Vx, Hy, Uy, Vy, g2, c1, c1y, c2, c2y):
    h, w = H.shape
    for i in prange(h):
        H[i, 0] = H[i, 1]
        U[i, 0] = U[i, 1]
        V[i, 0] = -V[i, 1]
        H[i, w - 1] = H[i, w - 2]
        U[i, w - 1] = U[i, w - 2]
        V[i, w - 1] = -V[i, w - 2]
    for j in prange(w):
        H[0, j] = H[1, j]
        U[0, j] = -U[1, j]
        V[0, j] = V[1, j]
        H[h - 1, j] = H[h - 2, j]
        U[h - 1, j] = -U[h - 2, j]
        V[h - 1, j] = V[h - 2, j]
    for i in prange(h - 1):
        for j in range(w - 2):
            h1, h0 = H[i + 1, j + 1], H[i, j + 1]
            u1, u0 = U[i + 1, j + 1], U[i, j + 1]
            v1, v0 = V[i + 1, j + 1], V[i, j + 1]
            Hx[i, j] = (h1 + h0) / 2 - c1 * (u1 - u0)
            Ux[i, j] = (u1 + u0) / 2 - c1 * ((u1 * u1 / h1 + g2 * (h1 * h1)) - (u0 * u0 / h0 + g2 * (h0 * h0)))
            Vx[i, j] = (v1 + v0) / 2 - c1 * ((u1 * v1 / h1) - (u0 * v0 / h0))
    for i in prange(h - 2):
        for j in range(w - 1):
            h1, h0 = H[i + 1, j + 1], H[i + 1, j]
            u1, u0 = U[i + 1, j + 1], U[i + 1, j]
            v1, v0 = V[i + 1, j + 1], V[i + 1, j]
            Hy[i, j] = (h1 + h0) / 2 - c1y * (v1 - v0)
            Uy[i, j] = (u1 + u0) / 2 - c1y * ((v1 * u1 / h1) - (v0 * u0 / h0))
            Vy[i, j] = (v1 + v0) / 2 - c1y * ((v1 * v1 / h1 + g2 * (h1 * h1)) - (v0 * v0 / h0 + g2 * (h0 * h0)))
    for i in prange(h - 2):
        for j in range(w - 2):
            hx1, hx0, ux1, ux0, vx1, vx0 = (
                Hx[i + 1, j],
                Hx[i, j],
                Ux[i + 1, j],
                Ux[i, j],
                Vx[i + 1, j],
                Vx[i, j],
            )
            hy1, hy0, uy1, uy0, vy1, vy0 = (
                Hy[i, j + 1],
                Hy[i, j],
                Uy[i, j + 1],
                Uy[i, j],
                Vy[i, j + 1],
                Vy[i, j],
            )
            H[i + 1, j + 1] -= c2 * (ux1 - ux0) + c2y * (vy1 - vy0)
            U[i + 1, j + 1] -= c2 * (
                (ux1 * ux1 / hx1 + g2 * (hx1 * hx1)) - (ux0 * ux0 / hx0 + g2 * (hx0 * hx0))
            ) + c2y * ((vy1 * uy1 / hy1) - (vy0 * uy0 / hy0))
            V[i + 1, j + 1] -= c2 * ((ux1 * vx1 / hx1) - (ux0 * vx0 / hx0)) + c2y * (
                (vy1 * vy1 / hy1 + g2 * (hy1 * hy1)) - (vy0 * vy0 / hy0 + g2 * (hy0 * hy0))
            )


def shallow_water(state, dims, dtype):
    H, U, V = state
    h, w, iterations = dims
    Hx, Ux, Vx = (np.empty((h - 1, w - 2), dtype=dtype) for _ in range(3))
    Hy, Uy, Vy = (np.empty((h - 2, w - 1), dtype=dtype) for _ in range(3))
    g2, c1, c1y, c2, c2y = (
        sw.G / 2,
        sw.DT / (2 * sw.DX),
        sw.DT / (2 * sw.DY),
        sw.DT / sw.DX,
        sw.DT / sw.DY,
    )
    for _ in range(iterations):
        _shallow_step(H, U, V, Hx, Ux, Vx, Hy, Uy, Vy, g2, c1, c1y, c2, c2y)
    return np.sum(H)


@njit(parallel=True, cache=False)
def _eos(t, s, p, cs):
    nx, ny, nz = t.shape
    total = 0.0
    for i in prange(nx):
        for j in range(ny):
            for k in range(nz):
                x, sk, pk = t[i, j, k], s[i, j, k], p[0, 0, k]
                for r in range(cs.shape[0]):
                    c = cs[r]
                    a = x * x * c[0] + x * c[1] + c[2]
                    b = math.sqrt(sk) * (pk * c[3] + c[4])
                    q = math.log(a * a + 1.0) / (b * b + 1.0)
                    e = math.exp(-(pk * c[5]))
                    x = x + q * c[6] - e * c[7]
                t[i, j, k] = x
                total += x
    return total / t.size


def equation_of_state(state, dims, dtype):
    t, s, p = state
    cs = np.array([eos.constants(r) for r in range(dims[3])], dtype=t.dtype).reshape(dims[3], 8)
    return _eos(t.copy(), s, p, cs)


if __name__ == "__main__":
    sys.exit(main(globals(), "numba", own_random={"montecarlo_pi"}))
