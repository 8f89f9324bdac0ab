#!/usr/bin/env bash
# Installs the system packages the build and the tests need on a fresh Debian 12 machine:
# a C compiler (C tests against libvm.so), OpenMPI and libclang (rsmpi's bindgen), PoCL and the
# OpenCL ICD loader (the OpenCL engine's CPU device), and NumPy for the benchmark baselines.
# Idempotent: does nothing for packages already present.
set -euo pipefail

packages=(build-essential pkg-config libopenmpi-dev openmpi-bin libclang-dev
          pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev clinfo)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! python3 -c 'import numpy' 2>/dev/null; then
  python3 -m pip install -q numpy || echo "note: numpy not installed; benchmark baselines will be skipped"
fi
