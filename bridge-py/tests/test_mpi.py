"""The cluster stack under MPI: ``VM_STACK=cluster mpirun -n 2 python -m vmnp prog.py`` runs the
unchanged program distributed (rank 0 runs it, rank 1 serves). Needs vmnp built with the ``mpi``
feature and ``mpirun``; runs when ``VMNP_TEST_MPI=1``."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from test_programs import BENCHES, SCRIPTS, checksums, run

pytestmark = pytest.mark.skipif(
    os.environ.get("VMNP_TEST_MPI") != "1" or shutil.which("mpirun") is None,
    reason="set VMNP_TEST_MPI=1 (with vmnp built with --features mpi and mpirun installed)",
)


@pytest.mark.parametrize(("script", "size", "deterministic"), SCRIPTS)
def test_numpy_baselines_on_two_ranks(script, size, deterministic):
    args = [str(BENCHES / f"{script}.py"), "--size", size, "--warmup", "0", "--reps", "1"]
    mpirun = ["mpirun", "-n", "2"]
    if os.geteuid() == 0:
        mpirun += ["--allow-run-as-root", "--oversubscribe"]
    env = dict(os.environ, VM_STACK="cluster", VMNP_FALLBACK="error")
    p = subprocess.run([*mpirun, sys.executable, "-m", "vmnp", *args], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    got = checksums(p.stdout)
    assert len(got) == 1, p.stdout  # only rank 0 runs the program
    if deterministic:
        np.testing.assert_allclose(got, checksums(run(args)), rtol=1e-12)
