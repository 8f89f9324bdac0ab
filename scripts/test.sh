#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what is missing, checks formatting and
# lints, and runs every test (unit, property, differential, C programs against libvm.so, the
# Python frontend's suite, the cluster manager under MPI).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== format"
cargo fmt --all -- --check

echo "== lints"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== tests"
cargo test --workspace --locked

echo "== Python: format and lints (vmnp, the benchmark scripts); vmnp's tests on the interp and cpu stacks"
py=.venv/bin/python
.venv/bin/ruff format --check bridge-py benches
.venv/bin/ruff check bridge-py benches
VM_STACK=interp "$py" -m pytest -q bridge-py/tests
VM_STACK=cpu "$py" -m pytest -q bridge-py/tests

echo "== Python: vmnp's wheel, installed alone into a fresh environment"
bash scripts/test-wheel.sh

echo "== cluster manager under MPI (feature mpi)"
cargo clippy -p vm-cluster -p vm-host -p vm-bridge-c -p vm-bench \
  --features vm-cluster/mpi,vm-host/mpi,vm-bridge-c/mpi,vm-bench/mpi --all-targets --locked -- -D warnings
bash scripts/test-mpi.sh
