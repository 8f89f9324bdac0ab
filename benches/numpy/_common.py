"""Shared driver of the NumPy baselines of vm-bench.

Every script defines ``ARITY`` (how many numbers its size has), ``setup(dims, dtype)`` (builds
the inputs, untimed) and ``run(state, dims, dtype)`` (the timed part; returns the checksum), and
calls ``main(...)``. The harness runs::

    python3 SCRIPT --size 2000*2000*100 --dtype f64 --warmup 1 --reps 3

and reads, for each timed repetition, one line in the fixed format::

    RESULT <seconds> <checksum>

where the checksum is written with ``repr`` so that it round-trips exactly. Errors go to stderr
and make the exit status nonzero.
"""

import argparse
import time

import numpy as np

DTYPES = {"f64": np.float64, "f32": np.float32}


def parse_size(text, arity):
    """Parses ``a*b*c`` (``x`` also separates) into a tuple of ``arity`` positive integers."""
    parts = text.replace("x", "*").split("*")
    dims = tuple(int(p) for p in parts)
    if len(dims) != arity or any(d <= 0 for d in dims):
        raise SystemExit(f"size {text!r}: want {arity} positive integers separated by '*'")
    return dims


def main(arity, setup, run):
    """Parses the command line, runs the warm-up and the timed repetitions, prints results."""
    p = argparse.ArgumentParser()
    p.add_argument("--size", required=True)
    p.add_argument("--dtype", default="f64", choices=sorted(DTYPES))
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    dims = parse_size(a.size, arity)
    dtype = DTYPES[a.dtype]
    with np.errstate(all="ignore"):
        for rep in range(a.warmup + a.reps):
            state = setup(dims, dtype)
            t0 = time.perf_counter()
            # float() inside the timer: a lazy array library (vmnp) computes when the value is read.
            checksum = float(run(state, dims, dtype))
            elapsed = time.perf_counter() - t0
            if rep >= a.warmup:
                print(f"RESULT {elapsed!r} {checksum!r}", flush=True)
    return 0
