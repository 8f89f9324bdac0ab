#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what is missing, checks formatting and
# lints, and runs every test (unit, property, differential, C programs against libvm.so).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== format"
cargo fmt --all -- --check

echo "== lints"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== tests"
cargo test --workspace --locked

echo "== cluster manager under MPI (feature mpi)"
cargo clippy -p vm-cluster --features mpi --all-targets --locked -- -D warnings
bash scripts/test-mpi.sh
