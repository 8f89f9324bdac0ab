#!/usr/bin/env bash
# Builds the cluster manager with MPI (cargo feature `mpi`) and runs its differential test under
# mpirun with 1, 2, 3 and 4 ranks: every opcode and random programs over bases of uneven sizes,
# compared byte for byte with the reference engine. Needs OpenMPI and libclang (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build -p vm-cluster --features mpi --example differential
bin="$CARGO_TARGET_DIR/debug/examples/differential"
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
for n in 1 2 3 4; do
  echo "== mpirun -n $n"
  timeout 600 mpirun -n "$n" --oversubscribe "$bin" "${SEEDS:-40}"
done
echo "MPI differential tests passed on 1-4 ranks"
