"""Shared driver of vm-bench's peers: the suite written for numba, JAX and numexpr.

Each peer module defines, for every science benchmark it has a version of, a function of the
benchmark's name, ``run(state, dims, dtype)``, and calls ``main(globals(), tool)``. A peer
reuses the NumPy baseline's ``ARITY`` and ``setup`` (the same inputs, so its checksum is
comparable with NumPy's wherever it draws no random numbers of its own) and its driver
(``benches/numpy/_common.py``: ``RESULT <seconds> <checksum>`` per timed repetition, the warm-up
repetitions untimed, so that compile time is excluded). The harness runs::

    python benches/peers/peer_numba.py heat_equation --size 2000*2000*100 --dtype f64 --warmup 1 --reps 3

A benchmark the peer has no version of exits with status 3 and says so.
"""

import importlib
import os
import sys

NUMPY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numpy")
sys.path.insert(0, NUMPY_DIR)

from _common import main as drive  # noqa: E402

NO_VERSION = 3


def baseline(name):
    """The NumPy baseline ``benches/numpy/<name>.py`` as a module (its constants, its setup)."""
    return importlib.import_module(name)


#: The benchmarks a peer may have a version of (``overhead`` measures the cost of an array
#: library's operations, which the peers' fused code does not have).
SCIENCE = (
    "heat_equation",
    "shallow_water",
    "black_scholes",
    "montecarlo_pi",
    "leibnitz_pi",
    "nbody",
    "knn",
    "equation_of_state",
)


def main(namespace, tool, own_random=()):
    """Runs the benchmark named by the first argument with the peer's function of that name in
    ``namespace`` (the peer module's globals). Says
    ``INPUTS own`` first when the benchmark is in ``own_random`` (the peer draws its own random
    numbers instead of using NumPy's, so its checksum is not NumPy's), else ``INPUTS numpy``."""
    if len(sys.argv) < 2:
        print(
            f"usage: {sys.argv[0]} BENCHMARK --size ... [--dtype f64] [--warmup 1] [--reps 3]",
            file=sys.stderr,
        )
        return 2
    name = sys.argv.pop(1)
    run = namespace.get(name) if name in SCIENCE else None
    if run is None:
        print(f"no {tool} version of {name}", file=sys.stderr)
        return NO_VERSION
    print("INPUTS own" if name in own_random else "INPUTS numpy", flush=True)
    module = baseline(name)
    return drive(module.ARITY, module.setup, run)
