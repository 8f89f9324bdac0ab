#!/usr/bin/env bash
# Builds vmnp's wheel into dist/ (or the directory given): one wheel for every CPython from 3.11
# on (the stable ABI, PyO3's abi3), tagged manylinux for the glibc it needs, with the default
# config built in. Needs the project's environment (scripts/setup.sh).
#
#   bash scripts/build-wheel.sh [OUT_DIR]
#   pip install dist/vmnp-*.whl          # anywhere: NumPy is its one dependency
#
# From source, in a checkout (cargo builds the workspace; the cluster stack's MPI transport
# only this way):
#   pip install ./bridge-py [--config-settings=build-args="--features mpi"]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
py=.venv/bin/python
[ -x "$py" ] || { echo "build-wheel: run scripts/setup.sh first (no .venv)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/vmnp-*.whl
# maturin checks the wheel against the manylinux policies (its own auditwheel) and tags it with
# the oldest one its glibc symbols allow.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" .venv/bin/maturin build --quiet --release \
  --manifest-path bridge-py/Cargo.toml --features abi3 --out "$out"
ls "$out"/vmnp-*.whl
