#!/usr/bin/env bash
# Builds the cluster manager with MPI (cargo feature `mpi`) and runs, under mpirun with 1, 2, 3
# and 4 ranks: the differential test (every opcode, random programs over bases of uneven sizes,
# byte for byte against the reference engine), the benchmark suite at its tiny sizes (checksums
# against the eager interp: bit for bit with interp on every rank, within tolerance with cpu),
# and the SPMD start through the engine registry as vm_init does it (two sessions; rank 0
# exiting inside a session; rank 0 dying, which must end the job). Needs OpenMPI and libclang
# (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build -p vm-cluster --features mpi --examples
cargo build -p vm-host --features mpi --examples
cargo build -p vm-bench --features mpi --examples
bin="$CARGO_TARGET_DIR/debug/examples"
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
run() { timeout 600 mpirun -n "$1" --oversubscribe "${@:2}"; }
for n in 1 2 3 4; do
  echo "== mpirun -n $n"
  run "$n" "$bin/differential" "${SEEDS:-40}"
  run "$n" "$bin/cluster_suite" interp
  run "$n" "$bin/cluster_suite" cpu
  run "$n" "$bin/spmd" ok
  run "$n" "$bin/spmd" exit-in-session
done
echo "== rank 0 dies inside a session: mpirun must end the job"
set +e
out=$(timeout 120 mpirun -n 3 --oversubscribe "$bin/spmd" die 2>&1)
status=$?
set -e
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
  echo "$out"
  echo "expected the job to fail (not succeed, not hang): status $status"
  exit 1
fi
echo "job ended with status $status"
echo "== vmnp on the cluster stack: the NumPy scripts under mpirun -n 2 python -m vmnp"
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
py=.venv/bin/python
CARGO_TARGET_DIR="$(realpath "$CARGO_TARGET_DIR")" "$py" -m pip install -q --disable-pip-version-check \
  --config-settings=build-args="--features mpi" ./bridge-py
VMNP_TEST_MPI=1 "$py" -m pytest -q bridge-py/tests/test_mpi.py
# Leave the environment with the default build, as scripts/setup.sh made it.
CARGO_TARGET_DIR="$(realpath "$CARGO_TARGET_DIR")" "$py" -m pip install -q --disable-pip-version-check ./bridge-py
echo "MPI tests passed on 1-4 ranks"
