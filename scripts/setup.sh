#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine for building, testing and benchmarking the VM:
#
# 1. system packages: C and C++ compilers (gcc and clang: the C and C++ tests against libvm.so),
#    CMake and pkg-config (the installed library's tests), OpenMPI and libclang
#    (rsmpi's bindgen, for the cluster manager), PoCL and the OpenCL ICD loader (the OpenCL
#    engine's CPU device), valgrind (the C tests run under it), Python with venv and its headers (vmnp's tests
#    link libpython);
# 2. the project's Python environment `.venv` (git-ignored) with the packages of
#    scripts/requirements.txt (NumPy for the benchmark baselines, the Python frontend's build
#    and test tools), the benchmark peers of scripts/requirements-peers.txt (numba, JAX,
#    numexpr; a failure there is a warning: vm-bench skips a peer that is missing), and the
#    Python frontend `vmnp` when bridge-py/ exists.
#
# Idempotent: installs only what is missing. Needs the Rust toolchain (see README.md).
# Environment: VM_SETUP_SKIP_VMNP=1 skips building vmnp (the suite builds it itself), VMNP_PGO=0
# builds it once without profile-guided optimisation (scripts/build-vmnp.sh);
# VM_SETUP_SKIP_PEERS=1 skips the benchmark peers.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "setup: $*" >&2
  exit 1
}

if ! command -v cargo >/dev/null 2>&1; then
  die "cargo not found. Install the Rust toolchain with rustup (https://rustup.rs):
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --default-toolchain 1.95 --component rustfmt,clippy
  . \"\$HOME/.cargo/env\""
fi

packages=(build-essential clang cmake pkg-config libopenmpi-dev openmpi-bin libclang-dev
          pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev clinfo valgrind
          python3 python3-venv python3-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    die "these Debian packages are missing: ${missing[*]}
and this user is not root and has no sudo. Ask an administrator to run:
  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}
then run scripts/setup.sh again."
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python: a virtual environment of the project's own, because Debian's python3 refuses
# `pip install` outside one (PEP 668). vm-bench and the tests use .venv/bin/python.
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating the Python environment $venv"
  python3 -m venv "$venv" || die "python3 -m venv failed: install the python3-venv package"
fi
py="$venv/bin/python"
if ! "$py" -m pip install -q --disable-pip-version-check -r scripts/requirements.txt; then
  die "installing scripts/requirements.txt into $venv failed (is PyPI reachable?)"
fi
if [ -z "${VM_SETUP_SKIP_PEERS:-}" ] &&
  ! "$py" -m pip install -q --disable-pip-version-check -r scripts/requirements-peers.txt; then
  echo "setup: warning: the benchmark peers (scripts/requirements-peers.txt) did not install; vm-bench skips them" >&2
fi

if [ -f bridge-py/pyproject.toml ] && [ -z "${VM_SETUP_SKIP_VMNP:-}" ]; then
  echo "setup: building and installing vmnp (the Python frontend) into $venv"
  bash scripts/build-vmnp.sh "$py" || die "building vmnp failed"
fi

echo "setup: done. NumPy $("$py" -c 'import numpy; print(numpy.__version__)') in $venv (activate with: . $venv/bin/activate)"
