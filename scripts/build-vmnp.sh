#!/usr/bin/env bash
# Builds vmnp (the Python frontend, bridge-py/) and installs it into a Python environment, with
# profile-guided optimisation: a first build instrumented for profiling runs the workload of
# bridge-py/pgo/train.py, and the second build is laid out by what it measured. A program of
# many small operations runs 15-30% faster that way (the path from a Python operator through the
# runtime to the interpreter stays in the instruction cache and its branches predicted). Every
# build uses cargo's profile `vmnp` (the workspace's Cargo.toml: one optimisation unit, fat LTO).
#
# Usage: scripts/build-vmnp.sh PYTHON   (the interpreter of the environment to install into)
# Environment: VMNP_PGO=0 builds once, without a profile (a quicker build for development; with
# CARGO_PROFILE_VMNP_LTO=off quicker still);
# CARGO_TARGET_DIR as cargo's (the default is target/ of the workspace; the profiled builds use
# target/pgo-generate and target/pgo-use, since their compiler flags differ from a plain build's).
#
# The profile needs LLVM's llvm-profdata of the Rust toolchain (rustup's `llvm-tools` component,
# added here when rustup is at hand); without it vmnp is built once, plainly, with a notice.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:?usage: scripts/build-vmnp.sh PYTHON}
target=${CARGO_TARGET_DIR:-$PWD/target}

install_vmnp() { # RUSTFLAGS TARGET_DIR
  RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }$1" CARGO_TARGET_DIR="$2" \
    "$py" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./bridge-py
}

plain() {
  # In the workspace's target directory (target/vmnp/), kept between builds.
  CARGO_TARGET_DIR="$target" "$py" -m pip install -q --disable-pip-version-check ./bridge-py
}

if [ "${VMNP_PGO:-1}" = 0 ]; then
  plain
  exit 0
fi

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v rustup >/dev/null 2>&1; then
  rustup component add llvm-tools >/dev/null 2>&1 || true
fi
if [ ! -x "$profdata" ]; then
  echo "build-vmnp: llvm-profdata not found ($profdata; rustup component add llvm-tools):" \
    "building vmnp without profile-guided optimisation" >&2
  plain
  exit 0
fi

profile="$target/pgo-profile"
rm -rf "$profile"
mkdir -p "$profile/raw"
echo "build-vmnp: instrumented build" >&2
# The profiled builds install vmnp alone (--no-deps): its dependency, NumPy, first.
"$py" -c 'import numpy' 2>/dev/null || "$py" -m pip install -q --disable-pip-version-check numpy
install_vmnp "-Cprofile-generate=$profile/raw" "$target/pgo-generate"
echo "build-vmnp: profiling bridge-py/pgo/train.py" >&2
LLVM_PROFILE_FILE="$profile/raw/vmnp-%p-%m.profraw" VMNP_FALLBACK=error "$py" bridge-py/pgo/train.py
"$profdata" merge -o "$profile/vmnp.profdata" "$profile/raw"
echo "build-vmnp: optimised build" >&2
# -pgso=false: code the workload ran rarely or not at all is still optimised for speed, not size
# (with LLVM's default a cold loop loses its vectorisation: np.sin of 4,000 elements took 2x).
install_vmnp "-Cprofile-use=$profile/vmnp.profdata -Cllvm-args=-pgso=false" "$target/pgo-use"
