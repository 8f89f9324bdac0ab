"""equation_of_state: a long element-wise expression over a 3-d grid (see BENCHMARKS.md).
Size nx*ny*nz*rounds: 22 operations per round update the temperature t from itself, the
salinity s and a (1, 1, nz) pressure profile p. Checksum: the mean of the final t.
"""

import numpy as np

from _common import main

ARITY = 4
OPS_PER_ROUND = 22


def constants(r):
    """Round r's constants c0..c7 (as the Rust program computes them)."""
    x = float(r)
    return (
        1.0 + 0.01 * x,
        0.5 - 0.02 * x,
        2.0 + 0.1 * x,
        0.6 + 0.05 * x,
        0.3 + 0.01 * x,
        0.02 + 0.001 * x,
        0.1 / (1.0 + x),
        0.05 + 0.002 * x,
    )


def setup(dims, dtype):
    nx, ny, nz, _ = dims
    i, j, k = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    t = (10.0 + ((i * 7 + j * 13 + k * 3) % 17) * 0.5).astype(dtype)
    s = (34.0 + ((i * 5 + j * 11 + k * 7) % 13) * 0.25).astype(dtype)
    p = (np.arange(nz) * 0.01).astype(dtype).reshape(1, 1, nz)
    return t, s, p


def run(state, dims, dtype):
    t, s, p = state
    for r in range(dims[3]):
        c0, c1, c2, c3, c4, c5, c6, c7 = constants(r)
        a = t * t * c0 + t * c1 + c2
        b = np.sqrt(s) * (p * c3 + c4)
        q = np.log(a * a + 1.0) / (b * b + 1.0)
        e = np.exp(-(p * c5))
        t = t + q * c6 - e * c7
    return float(np.sum(t)) / t.size


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
