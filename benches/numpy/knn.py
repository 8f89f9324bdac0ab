"""knn: k nearest neighbours by brute force (see BENCHMARKS.md). Size n*q*d*k.

D = sum((Q[:, None, :] - E[None, :, :])**2, axis=2); then k times: the row minimum is recorded
and every entry equal to it is replaced by +inf. Inputs come from NumPy's generator, so the
checksum (sum of the k*q minima) is not compared with the VM's.
"""

import numpy as np

from _common import main

ARITY = 4


def setup(dims, dtype):
    n, q, d, _ = dims
    rng = np.random.default_rng(42)
    return rng.random((n, d)).astype(dtype), rng.random((q, d)).astype(dtype)


def run(state, dims, dtype):
    E, Q = state
    k = dims[3]
    diff = Q[:, None, :] - E[None, :, :]
    D = np.sum(diff * diff, axis=2)
    total = 0.0
    for _ in range(k):
        m = np.min(D, axis=1)
        total += np.sum(m)
        D = np.where(D == m[:, None], np.inf, D)
    return total


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
