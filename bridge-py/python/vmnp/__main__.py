"""``python -m vmnp prog.py args...``: runs an unchanged NumPy program on the VM."""

import os
import runpy
import sys

USAGE = """usage: python -m vmnp [--profile[=TRACE.json]] SCRIPT [ARGS...]

Runs SCRIPT with `numpy` resolving to vmnp.

  --profile             print at exit the lines of SCRIPT that made the VM run most often and
                        longest (flushes, reads of arrays and elements) and the fallbacks to NumPy
  --profile=TRACE.json  the same, and a Chrome trace-event file of every run (Perfetto,
                        chrome://tracing)"""


def main(argv=None):
    """Installs the import hook and runs the script as ``__main__``."""
    argv = sys.argv[1:] if argv is None else argv
    trace, profiling = None, False
    while argv and argv[0].startswith("--profile"):
        profiling = True
        trace = argv[0].partition("=")[2] or trace
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    from . import _hook, _vmnp

    # The VM is built before the program runs: on the cluster stack under mpirun, every rank but
    # 0 serves rank 0's batches inside this call and exits when rank 0's process does, so only
    # rank 0 runs the program.
    _vmnp._context_token()
    _hook.install()
    script = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    if not profiling:
        runpy.run_path(script, run_name="__main__")
        return 0
    from ._profile import profile

    p = profile(trace)
    try:
        with p:
            runpy.run_path(script, run_name="__main__")
    finally:
        print(p.report(), file=sys.stderr)
        if trace:
            print(f"vmnp profile: trace written to {trace}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
