#!/usr/bin/env bash
# Builds vmnp's wheel and source distribution into dist/ (or the directory given): one wheel for
# every CPython from 3.11 on (the stable ABI, PyO3's abi3), tagged manylinux for the glibc it
# needs, with the default config built in; and an sdist holding the crates the extension is built
# from, which pip builds with cargo (Rust 1.95 or newer). Needs the project's environment
# (scripts/setup.sh).
#
#   bash scripts/build-wheel.sh [OUT_DIR]
#   pip install dist/vmnp-*.whl          # anywhere: NumPy is its one dependency
#   pip install dist/vmnp-*.tar.gz       # anywhere with Rust; add
#                                        # --config-settings=build-args="--features mpi" for MPI
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
rm -f "$out"/vmnp-*.whl "$out"/vmnp-*.tar.gz
# maturin checks the wheel against the manylinux policies (its own auditwheel) and tags it with
# the oldest one its glibc symbols allow.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" .venv/bin/maturin build --quiet --profile vmnp \
  --manifest-path bridge-py/Cargo.toml --features abi3 --out "$out"
# (cargo package's notes on every crate's missing metadata are shown only when it fails)
log=$(mktemp)
.venv/bin/maturin sdist --manifest-path bridge-py/Cargo.toml --out "$out" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
rm -f "$log"
ls "$out"/vmnp-*.whl "$out"/vmnp-*.tar.gz
