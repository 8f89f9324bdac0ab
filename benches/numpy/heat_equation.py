"""heat_equation: Jacobi iteration of a 5-point stencil (see BENCHMARKS.md). Size h*w*iterations."""

import numpy as np

from _common import main

ARITY = 3


def setup(dims, dtype):
    h, w, _ = dims
    grid = np.zeros((h + 2, w + 2), dtype=dtype)
    grid[:, 0] = -273.15
    grid[:, -1] = -273.15
    grid[-1, :] = -273.15
    grid[0, :] = 40.0
    return grid


def run(grid, dims, dtype):
    iterations = dims[2]
    center = grid[1:-1, 1:-1]
    north = grid[:-2, 1:-1]
    south = grid[2:, 1:-1]
    east = grid[1:-1, 2:]
    west = grid[1:-1, :-2]
    delta = 0.0
    for _ in range(iterations):
        work = 0.2 * (center + north + south + east + west)
        delta = np.sum(np.absolute(work - center))
        center[:] = work
    return delta


if __name__ == "__main__":
    raise SystemExit(main(ARITY, setup, run))
