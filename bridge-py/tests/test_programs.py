"""Whole programs: the suite's NumPy baselines under ``python -m vmnp``, the import hook, and
memory staying flat over a long loop."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vmnp

ROOT = Path(__file__).resolve().parents[2]
BENCHES = ROOT / "benches" / "numpy"

# (script, tiny size, deterministic: the checksum must equal NumPy's)
SCRIPTS = [
    ("heat_equation", "20*20*10", True),
    ("leibnitz_pi", "1000*3", True),
    ("overhead", "100*10*3", True),
    ("shallow_water", "20*20*5", True),
    ("black_scholes", "100*5", False),
    ("knn", "50*10*3*3", False),
    ("montecarlo_pi", "1000*3", False),
    ("nbody", "20*3", False),
]


def run(args, **env):
    e = dict(os.environ, VMNP_FALLBACK="error", **env)
    p = subprocess.run([sys.executable, "-W", "error::UserWarning", *args], capture_output=True, text=True, env=e)
    assert p.returncode == 0, p.stderr
    return p.stdout


def checksums(out):
    return [float(line.split()[2]) for line in out.splitlines() if line.startswith("RESULT")]


@pytest.mark.parametrize(("script", "size", "deterministic"), SCRIPTS)
def test_numpy_baselines_run_unchanged(script, size, deterministic):
    args = [str(BENCHES / f"{script}.py"), "--size", size, "--warmup", "0", "--reps", "2"]
    got = checksums(run(["-m", "vmnp", *args]))
    assert len(got) == 2 and got[0] == got[1], got
    if deterministic:
        want = checksums(run(args))
        # The VM may sum in another order than NumPy's pairwise summation: last-bit differences.
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_every_import_form_resolves_to_vmnp(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import numpy\nimport numpy as np\nfrom numpy import zeros\nimport numpy.random\n"
        "from numpy.random import default_rng\n"
        "print(numpy.__name__, np.__name__, zeros.__module__, numpy.random.__name__, default_rng.__module__)\n"
        "print(type(np.zeros(3)).__module__)\n"
    )
    out = run(["-m", "vmnp", str(prog)]).split()
    assert out == ["vmnp", "vmnp", "vmnp", "vmnp.random", "vmnp.random", "vmnp"]


def run_with_fallbacks(prog):
    """The words `python -m vmnp prog` prints with fallbacks allowed (VMNP_FALLBACK unset)."""
    e = dict(os.environ)
    e.pop("VMNP_FALLBACK", None)
    p = subprocess.run([sys.executable, "-m", "vmnp", str(prog)], capture_output=True, text=True, env=e)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def test_a_fallback_warns_once_and_can_be_made_an_error(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import warnings\nimport numpy as np\nwith warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    a = np.unwrap(np.asarray([3.0, 1.0, 2.0]))\n    b = np.unwrap(a)\n"
        "print(type(a).__module__, a.tolist(), len(w), w[0].category.__name__, 'unwrap' in str(w[0].message))\n"
    )
    assert run_with_fallbacks(prog) == ["vmnp", "[3.0,", "1.0,", "2.0]", "1", "FallbackWarning", "True"]
    p = subprocess.run([sys.executable, "-m", "vmnp", str(prog)], capture_output=True, text=True)
    assert p.returncode != 0 and "FallbackError" in p.stderr


def test_memory_stays_flat_over_10000_heat_steps():
    grid = vmnp.zeros((34, 34))
    grid[0, :] = 40.0
    center = grid[1:-1, 1:-1]
    north, south, east, west = grid[:-2, 1:-1], grid[2:, 1:-1], grid[1:-1, 2:], grid[1:-1, :-2]
    live = []
    for step in range(10_000):
        work = 0.2 * (center + north + south + east + west)
        delta = vmnp.sum(vmnp.absolute(work - center))
        center[:] = work
        if step % 1000 == 999:
            vmnp.flush()
            live.append(vmnp._vmnp._live_bases())
    del work, delta
    vmnp.flush()
    assert max(live) == min(live), live
    want = np.zeros((34, 34))
    want[0, :] = 40.0
    for _ in range(10_000):
        want[1:-1, 1:-1] = 0.2 * (
            want[1:-1, 1:-1] + want[:-2, 1:-1] + want[2:, 1:-1] + want[1:-1, 2:] + want[1:-1, :-2]
        )
    np.testing.assert_allclose(np.asarray(grid), want, rtol=1e-12)


def test_the_vm_shuts_down_at_exit_and_the_engines_report(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import numpy as np\nx = np.arange(1000.0)\nfor i in range(300):\n    x = x * 0.5 + i\nprint(float(x.sum()))\n"
    )
    e = dict(os.environ, VM_STACK="cpu", VM_PROFILE="1")
    p = subprocess.run([sys.executable, "-m", "vmnp", str(prog)], capture_output=True, text=True, env=e)
    assert p.returncode == 0, p.stderr
    want = np.arange(1000.0)
    for i in range(300):
        want = want * 0.5 + i
    assert float(p.stdout.split()[0]) == pytest.approx(float(want.sum()), rel=1e-12)
    assert "vm cpu profile" in p.stderr and "kernels formed" in p.stderr, p.stderr


@pytest.mark.parametrize("stack", ["cpu", "interp"])
def test_work_never_observed_is_not_run_at_exit(tmp_path, stack):
    # Recorded and never looked at: the VM drops it on the way out (VM_TRACE would print any
    # batch it ran). An array larger than the machine is NumPy's MemoryError when made.
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import numpy as np\nx = np.ones(2**20)\ny = x + 1\n"
        "try:\n    np.ones(2**40)\nexcept MemoryError:\n    print('MemoryError')\nprint('done')\n"
    )
    e = dict(os.environ, VM_STACK=stack, VM_TRACE="1")
    p = subprocess.run([sys.executable, "-m", "vmnp", str(prog)], capture_output=True, text=True, env=e)
    assert (p.returncode, p.stdout, p.stderr) == (0, "MemoryError\ndone\n", "")


def test_a_programs_error_filter_does_not_turn_fallback_notes_into_errors(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import warnings\nimport numpy as np\nwarnings.simplefilter('error')\n"
        "print(np.nanmedian(np.array([3.0, 1.0, 2.0])), np.partition(np.arange(3), 0)[0])\n"
    )
    assert run_with_fallbacks(prog) == ["2.0", "0"]
