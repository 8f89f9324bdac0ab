"""montecarlo_pi: 4 * count(sqrt(x*x + y*y) <= 1) / n with x, y uniform in [0, 1) (see
BENCHMARKS.md). Size n*iterations. NumPy's generator, not the VM's RANDOM: the checksum (the mean
estimate) is not compared with the VM's.
"""

import numpy as np

from _common import main

ARITY = 2


def setup(dims, dtype):
    return np.random.default_rng(42)


def run(rng, dims, dtype):
    n, iterations = dims
    total = 0.0
    for _ in range(iterations):
        x = rng.random(n, dtype=dtype)
        y = rng.random(n, dtype=dtype)
        inside = np.sqrt(x * x + y * y) <= 1.0
        total += 4.0 * np.count_nonzero(inside) / n
    return total / iterations


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
