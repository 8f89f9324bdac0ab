#!/usr/bin/env bash
# Checks vmnp's wheel as a user outside the repository meets it: builds it
# (scripts/build-wheel.sh), installs it into a fresh virtual environment that holds nothing of
# the checkout (NumPy comes from PyPI as its dependency), and from a directory outside the
# checkout imports vmnp and runs a NumPy program under `python -m vmnp`, whose checksum must be
# NumPy's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test-wheel: $*" >&2; exit 1; }

bash scripts/build-wheel.sh "$tmp/dist" >/dev/null
wheel=$(ls "$tmp"/dist/vmnp-*.whl)
case "$(basename "$wheel")" in
  vmnp-*-cp311-abi3-manylinux_*_x86_64.whl) ;;
  *) fail "$(basename "$wheel") is not an abi3 manylinux wheel" ;;
esac

# The environment's interpreter, not the project's .venv (a venv made from a venv's python uses
# the base interpreter anyway).
base=$(.venv/bin/python -c 'import sys; print(sys.base_prefix)')/bin/python3
"$base" -m venv "$tmp/venv"
py="$tmp/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check "$wheel"

cp benches/numpy/heat_equation.py benches/numpy/_common.py "$tmp/"
cd "$tmp"
"$py" - "$root" <<'PY'
import pathlib, sys
import vmnp
where = pathlib.Path(vmnp.__file__).resolve()
assert not where.is_relative_to(sys.argv[1]), f"vmnp imported from the checkout: {where}"
assert any(p.name.endswith(".abi3.so") for p in where.parent.iterdir()), "no abi3 extension"
PY
checksum() { "$@" heat_equation.py --size '64*64*20' --warmup 0 --reps 1 | awk '/^RESULT/ {print $3}'; }
want=$(checksum "$py")
got=$(VM_STACK=cpu VMNP_FALLBACK=error checksum "$py" -m vmnp)
"$py" -c "import math, sys; w, g = map(float, sys.argv[1:]); sys.exit(not math.isclose(w, g, rel_tol=1e-9))" \
  "$want" "$got" || fail "checksum under vmnp $got, NumPy's $want"
echo "test-wheel: $(basename "$wheel") installs alone and runs heat_equation with NumPy's checksum ($got)"
