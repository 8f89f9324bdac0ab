"""vm-bench peer: the suite with JAX, written as a competent JAX user would: each benchmark one
``jax.jit``-compiled function, its time loop a ``lax.fori_loop``, in 64-bit floats where the run
asks for f64 (``jax_enable_x64``). Compile time is excluded: the warm-up repetition compiles (jit
caches by shapes). Results are read back with ``float()``, which waits for the computation."""

import functools
import math
import sys

import jax
import jax.numpy as jnp
from jax import lax

import numpy as np

from _peers import baseline, main

bs = baseline("black_scholes")
eos = baseline("equation_of_state")
nb = baseline("nbody")
sw = baseline("shallow_water")

jax.config.update("jax_enable_x64", True)


@functools.partial(jax.jit, static_argnums=1)
def _heat(grid, iterations):
    def body(_, carry):
        grid, _delta = carry
        center = grid[1:-1, 1:-1]
        work = 0.2 * (center + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, 2:] + grid[1:-1, :-2])
        delta = jnp.sum(jnp.abs(work - center))
        return grid.at[1:-1, 1:-1].set(work), delta

    return lax.fori_loop(0, iterations, body, (grid, jnp.zeros((), grid.dtype)))[1]


def heat_equation(grid, dims, dtype):
    return _heat(jnp.asarray(grid), dims[2])


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _leibnitz(n, iterations, dtype):
    def body(_, total):
        k = jnp.arange(n, dtype=dtype)
        return total + 4.0 * jnp.sum(1.0 / (4.0 * k + 1.0) - 1.0 / (4.0 * k + 3.0))

    return lax.fori_loop(0, iterations, body, jnp.zeros((), dtype)) / iterations


def leibnitz_pi(_, dims, dtype):
    return _leibnitz(dims[0], dims[1], dtype)


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _montecarlo(key, n, iterations, dtype):
    def body(i, total):
        kx, ky = jax.random.split(jax.random.fold_in(key, i))
        x = jax.random.uniform(kx, (n,), dtype=dtype)
        y = jax.random.uniform(ky, (n,), dtype=dtype)
        return total + 4.0 * jnp.count_nonzero(jnp.sqrt(x * x + y * y) <= 1.0) / n

    return lax.fori_loop(0, iterations, body, jnp.zeros((), jnp.float64)) / iterations


def montecarlo_pi(_, dims, dtype):
    return _montecarlo(jax.random.key(42), dims[0], dims[1], dtype)


def _cnd(x):
    a1, a2, a3, a4, a5 = bs.A
    L = jnp.abs(x)
    K = 1.0 / (1.0 + 0.2316419 * L)
    poly = K * (a1 + K * (a2 + K * (a3 + K * (a4 + K * a5))))
    w = 1.0 - (1.0 / math.sqrt(2 * math.pi)) * jnp.exp(-L * L / 2.0) * poly
    return jnp.where(x < 0, 1.0 - w, w)


@functools.partial(jax.jit, static_argnums=1)
def _black_scholes(S, iterations):
    n = S.shape[0]

    def body(i, total):
        T = (i + 1) / 365.0
        a = (bs.R + bs.V * bs.V / 2.0) * T
        b = bs.V * jnp.sqrt(T)
        d1 = (jnp.log(S / bs.X) + a) / b
        d2 = d1 - b
        price = S * _cnd(d1) - (bs.X * jnp.exp(-bs.R * T)) * _cnd(d2)
        return total + jnp.sum(price) / n

    return lax.fori_loop(0, iterations, body, jnp.zeros((), jnp.float64))


def black_scholes(S, dims, dtype):
    return _black_scholes(jnp.asarray(S), dims[1])


@functools.partial(jax.jit, static_argnums=3)
def _nbody(m, pos, vel, steps):
    n = m.shape[0]
    gm = (nb.G * m)[:, None]
    diagonal = jnp.eye(n, dtype=bool)

    def body(_, carry):
        pos, vel = carry
        d = [p[:, None] - p[None, :] for p in pos]
        r = jnp.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        r = jnp.where(diagonal, 1.0, r)
        r = jnp.where(r < 1.0, 1.0, r)
        rinv = 1.0 / r
        vel = [
            v + nb.DT * jnp.sum(jnp.where(diagonal, 0.0, gm * dk * rinv * rinv * rinv), axis=0)
            for v, dk in zip(vel, d, strict=True)
        ]
        pos = [p + nb.DT * v for p, v in zip(pos, vel, strict=True)]
        return pos, vel

    pos, vel = lax.fori_loop(0, steps, body, (pos, vel))
    return sum(jnp.sum(jnp.abs(p)) for p in pos)


def nbody(state, dims, dtype):
    m, pos, vel = state
    return _nbody(
        jnp.asarray(m),
        [jnp.asarray(p) for p in pos],
        [jnp.asarray(v) for v in vel],
        dims[1],
    )


@functools.partial(jax.jit, static_argnums=2)
def _knn(E, Q, k):
    diff = Q[:, None, :] - E[None, :, :]
    D = jnp.sum(diff * diff, axis=2)

    def body(_, carry):
        D, total = carry
        m = jnp.min(D, axis=1)
        return jnp.where(D == m[:, None], jnp.inf, D), total + jnp.sum(m)

    return lax.fori_loop(0, k, body, (D, jnp.zeros((), D.dtype)))[1]


def knn(state, dims, dtype):
    E, Q = state
    return _knn(jnp.asarray(E), jnp.asarray(Q), dims[3])


def _shallow_step(H, U, V):
    g2 = sw.G / 2
    c1 = sw.DT / (2 * sw.DX)
    c1y = sw.DT / (2 * sw.DY)
    c2 = sw.DT / sw.DX
    c2y = sw.DT / sw.DY
    H = H.at[:, 0].set(H[:, 1])
    U = U.at[:, 0].set(U[:, 1])
    V = V.at[:, 0].set(-V[:, 1])
    H = H.at[:, -1].set(H[:, -2])
    U = U.at[:, -1].set(U[:, -2])
    V = V.at[:, -1].set(-V[:, -2])
    H = H.at[0, :].set(H[1, :])
    U = U.at[0, :].set(-U[1, :])
    V = V.at[0, :].set(V[1, :])
    H = H.at[-1, :].set(H[-2, :])
    U = U.at[-1, :].set(-U[-2, :])
    V = V.at[-1, :].set(V[-2, :])
    H1, H0 = H[1:, 1:-1], H[:-1, 1:-1]
    U1, U0 = U[1:, 1:-1], U[:-1, 1:-1]
    V1, V0 = V[1:, 1:-1], V[:-1, 1:-1]
    Hx = (H1 + H0) / 2 - c1 * (U1 - U0)
    Ux = (U1 + U0) / 2 - c1 * ((U1 * U1 / H1 + g2 * (H1 * H1)) - (U0 * U0 / H0 + g2 * (H0 * H0)))
    Vx = (V1 + V0) / 2 - c1 * ((U1 * V1 / H1) - (U0 * V0 / H0))
    H1, H0 = H[1:-1, 1:], H[1:-1, :-1]
    U1, U0 = U[1:-1, 1:], U[1:-1, :-1]
    V1, V0 = V[1:-1, 1:], V[1:-1, :-1]
    Hy = (H1 + H0) / 2 - c1y * (V1 - V0)
    Uy = (U1 + U0) / 2 - c1y * ((V1 * U1 / H1) - (V0 * U0 / H0))
    Vy = (V1 + V0) / 2 - c1y * ((V1 * V1 / H1 + g2 * (H1 * H1)) - (V0 * V0 / H0 + g2 * (H0 * H0)))
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
    H = H.at[1:-1, 1:-1].add(-(c2 * (Ux1 - Ux0) + c2y * (Vy1 - Vy0)))
    U = U.at[1:-1, 1:-1].add(
        -(
            c2 * ((Ux1 * Ux1 / Hx1 + g2 * (Hx1 * Hx1)) - (Ux0 * Ux0 / Hx0 + g2 * (Hx0 * Hx0)))
            + c2y * ((Vy1 * Uy1 / Hy1) - (Vy0 * Uy0 / Hy0))
        )
    )
    V = V.at[1:-1, 1:-1].add(
        -(
            c2 * ((Ux1 * Vx1 / Hx1) - (Ux0 * Vx0 / Hx0))
            + c2y * ((Vy1 * Vy1 / Hy1 + g2 * (Hy1 * Hy1)) - (Vy0 * Vy0 / Hy0 + g2 * (Hy0 * Hy0)))
        )
    )
    return H, U, V


@functools.partial(jax.jit, static_argnums=1)
def _shallow(state, iterations):
    H, _, _ = lax.fori_loop(0, iterations, lambda _, s: _shallow_step(*s), state)
    return jnp.sum(H)


def shallow_water(state, dims, dtype):
    return _shallow(tuple(jnp.asarray(a) for a in state), dims[2])


@functools.partial(jax.jit, static_argnums=3)
def _eos(t, s, p, rounds):
    for r in range(rounds):  # unrolled: one fused computation of every round
        c0, c1, c2, c3, c4, c5, c6, c7 = eos.constants(r)
        a = t * t * c0 + t * c1 + c2
        b = jnp.sqrt(s) * (p * c3 + c4)
        q = jnp.log(a * a + 1.0) / (b * b + 1.0)
        e = jnp.exp(-(p * c5))
        t = t + q * c6 - e * c7
    return jnp.sum(t) / t.size


def equation_of_state(state, dims, dtype):
    t, s, p = (jnp.asarray(a) for a in state)
    return float(_eos(t, s, p, dims[3]))


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main(globals(), "JAX", own_random={"montecarlo_pi"}))
