"""nbody: O(n^2) Newtonian gravity (see BENCHMARKS.md). Size bodies*steps.

F = G*m*d * (1/r) * (1/r) * (1/r), evaluated left to right, which is G*m*d/r^3 without the
float32 overflow of r^3 (~1e41). Inputs come from NumPy's generator, so the checksum
(sum(|x|) + sum(|y|) + sum(|z|)) is not compared with the VM's.
"""

import numpy as np

from _common import main

ARITY = 2
G = 6.67384e-11
DT = 60 * 60 * 24 * 365.25
M_SUN = 1.98892e30
LIGHTYEAR = 9.4605284e15


def setup(dims, dtype):
    n = dims[0]
    rng = np.random.default_rng(42)
    m = ((rng.random(n) + 10.0) * M_SUN / 10.0).astype(dtype)
    pos = [((rng.random(n) - 0.5) * LIGHTYEAR / 100.0).astype(dtype) for _ in range(3)]
    vel = [np.zeros(n, dtype=dtype) for _ in range(3)]
    return m, pos, vel


def run(state, dims, dtype):
    m, pos, vel = state
    n, steps = dims
    gm = (G * m)[:, None]
    for _ in range(steps):
        d = [p[:, None] - p[None, :] for p in pos]
        r = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        np.fill_diagonal(r, 1.0)
        r = np.where(r < 1.0, 1.0, r)
        rinv = 1.0 / r
        for k in range(3):
            f = gm * d[k] * rinv * rinv * rinv
            np.fill_diagonal(f, 0.0)
            vel[k] += DT * np.sum(f, axis=0)
        for k in range(3):
            pos[k] += DT * vel[k]
    return sum(np.sum(np.absolute(p)) for p in pos)


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
