"""overhead: many dependent element-wise operations on a small array (see BENCHMARKS.md).
Size elements*ops*loops: each loop applies `ops` operations, alternately x*0.9999 and x+0.0001, each
making a new array as a user would write it, then reads sum(x). x starts as arange(n)/n.
Checksum: the last sum.
"""

import numpy as np

from _common import main

ARITY = 3


def setup(dims, dtype):
    n = dims[0]
    return np.arange(n, dtype=dtype) / dtype(n)


def run(x, dims, dtype):
    _, ops, loops = dims
    mul = dtype(0.9999)
    add = dtype(0.0001)
    total = 0.0
    for _ in range(loops):
        for op in range(ops):
            x = x * mul if op % 2 == 0 else x + add
        total = float(np.sum(x))
    return total


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
