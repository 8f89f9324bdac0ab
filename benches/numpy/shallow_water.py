"""shallow_water: the 2-D Lax-Wendroff shallow-water model (see BENCHMARKS.md). Size h*w*iterations.

The grid is h x w including its reflecting boundary; two 8x8 droplets are added at (h//4, w//4)
and (h//2, w//2). Checksum: sum(H).
"""

import numpy as np

from _common import main

ARITY = 3
G = 9.80665
DT = 0.02
DX = 1.0
DY = 1.0


def droplet(height, width, dtype):
    x = np.linspace(-1, 1, num=width).astype(dtype)
    y = np.linspace(-1, 1, num=width).astype(dtype)
    xx, yy = np.meshgrid(x, y)
    return height * np.exp(-5 * (xx * xx + yy * yy))


def setup(dims, dtype):
    h, w, _ = dims
    H = np.ones((h, w), dtype=dtype)
    d = droplet(8, 8, dtype)
    for r, c in ((h // 4, w // 4), (h // 2, w // 2)):
        H[r : r + 8, c : c + 8] += d
    U = np.zeros((h, w), dtype=dtype)
    V = np.zeros((h, w), dtype=dtype)
    return H, U, V


def reflect(H, U, V):
    """The reflecting boundary, in place: columns first, then rows."""
    H[:, 0] = H[:, 1]
    U[:, 0] = U[:, 1]
    V[:, 0] = -V[:, 1]
    H[:, -1] = H[:, -2]
    U[:, -1] = U[:, -2]
    V[:, -1] = -V[:, -2]
    H[0, :] = H[1, :]
    U[0, :] = -U[1, :]
    V[0, :] = V[1, :]
    H[-1, :] = H[-2, :]
    U[-1, :] = -U[-2, :]
    V[-1, :] = V[-2, :]


def step(H, U, V):
    g2 = G / 2
    c1 = DT / (2 * DX)
    c1y = DT / (2 * DY)
    c2 = DT / DX
    c2y = DT / DY
    reflect(H, U, V)
    # first half step, x direction
    H1, H0 = H[1:, 1:-1], H[:-1, 1:-1]
    U1, U0 = U[1:, 1:-1], U[:-1, 1:-1]
    V1, V0 = V[1:, 1:-1], V[:-1, 1:-1]
    Hx = (H1 + H0) / 2 - c1 * (U1 - U0)
    Ux = (U1 + U0) / 2 - c1 * ((U1 * U1 / H1 + g2 * (H1 * H1)) - (U0 * U0 / H0 + g2 * (H0 * H0)))
    Vx = (V1 + V0) / 2 - c1 * ((U1 * V1 / H1) - (U0 * V0 / H0))
    # first half step, y direction
    H1, H0 = H[1:-1, 1:], H[1:-1, :-1]
    U1, U0 = U[1:-1, 1:], U[1:-1, :-1]
    V1, V0 = V[1:-1, 1:], V[1:-1, :-1]
    Hy = (H1 + H0) / 2 - c1y * (V1 - V0)
    Uy = (U1 + U0) / 2 - c1y * ((V1 * U1 / H1) - (V0 * U0 / H0))
    Vy = (V1 + V0) / 2 - c1y * ((V1 * V1 / H1 + g2 * (H1 * H1)) - (V0 * V0 / H0 + g2 * (H0 * H0)))
    # second half step
    Hx1, Hx0, Ux1, Ux0, Vx1, Vx0 = Hx[1:, :], Hx[:-1, :], Ux[1:, :], Ux[:-1, :], Vx[1:, :], Vx[:-1, :]
    Hy1, Hy0, Uy1, Uy0, Vy1, Vy0 = Hy[:, 1:], Hy[:, :-1], Uy[:, 1:], Uy[:, :-1], Vy[:, 1:], Vy[:, :-1]
    H[1:-1, 1:-1] -= c2 * (Ux1 - Ux0) + c2y * (Vy1 - Vy0)
    U[1:-1, 1:-1] -= c2 * ((Ux1 * Ux1 / Hx1 + g2 * (Hx1 * Hx1)) - (Ux0 * Ux0 / Hx0 + g2 * (Hx0 * Hx0))) + c2y * (
        (Vy1 * Uy1 / Hy1) - (Vy0 * Uy0 / Hy0)
    )
    V[1:-1, 1:-1] -= c2 * ((Ux1 * Vx1 / Hx1) - (Ux0 * Vx0 / Hx0)) + c2y * (
        (Vy1 * Vy1 / Hy1 + g2 * (Hy1 * Hy1)) - (Vy0 * Vy0 / Hy0 + g2 * (Hy0 * Hy0))
    )


def run(state, dims, dtype):
    H, U, V = state
    for _ in range(dims[2]):
        step(H, U, V)
    return np.sum(H)


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
