"""leibnitz_pi: 4 * sum(1/(4k+1) - 1/(4k+3)) for k = range(n) as floats (see BENCHMARKS.md).
Size n*iterations. Checksum: the mean estimate over the iterations.
"""

import numpy as np

from _common import main

ARITY = 2


def setup(dims, dtype):
    return None


def run(_, dims, dtype):
    n, iterations = dims
    total = 0.0
    for _ in range(iterations):
        k = np.arange(n, dtype=dtype)
        total += 4.0 * np.sum(1.0 / (4.0 * k + 1.0) - 1.0 / (4.0 * k + 3.0))
    return total / iterations


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
