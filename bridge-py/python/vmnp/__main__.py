"""``python -m vmnp prog.py args...``: runs an unchanged NumPy program on the VM."""

import os
import runpy
import sys


def main(argv=None):
    """Installs the import hook and runs the script as ``__main__``."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m vmnp SCRIPT [ARGS...]\n\nRuns SCRIPT with `numpy` resolving to vmnp.", file=sys.stderr)
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
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
