#!/usr/bin/env bash
# Checks vmnp's wheel as a user outside the repository meets it: builds it and the sdist
# (scripts/build-wheel.sh), checks what the sdist holds, installs the wheel (or, with
# VMNP_TEST_SDIST=1, the sdist) into a fresh virtual environment that holds nothing of
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
# The sdist holds every crate the extension is built from and the file the default config is
# embedded from. (VMNP_TEST_SDIST=1 also builds it with pip, from scratch: minutes.)
sdist=$(ls "$tmp"/dist/vmnp-*.tar.gz)
listing=$(tar tzf "$sdist")
for f in config/default.toml config/src/lib.rs vm/host/src/engines.rs engines/cpu/src/engine.rs \
  python/vmnp/__init__.py python/vmnp/_src/__init__.py pyproject.toml Cargo.lock; do
  grep -qx "vmnp-[0-9.]*/$f" <<<"$listing" || fail "$(basename "$sdist") lacks $f"
done

# The environment's interpreter, not the project's .venv (a venv made from a venv's python uses
# the base interpreter anyway).
base=$(.venv/bin/python -c 'import sys; print(sys.base_prefix)')/bin/python3
"$base" -m venv "$tmp/venv"
py="$tmp/venv/bin/python"
if [ "${VMNP_TEST_SDIST:-0}" = 1 ]; then
  "$py" -m pip install -q --disable-pip-version-check "$sdist"
  wheel=$sdist
else
  "$py" -m pip install -q --disable-pip-version-check "$wheel"
fi

cp benches/numpy/heat_equation.py benches/numpy/_common.py "$tmp/"
cd "$tmp"
"$py" - "$root" "$wheel" <<'PY'
import pathlib, sys
import vmnp
where = pathlib.Path(vmnp.__file__).resolve()
assert not where.is_relative_to(sys.argv[1]), f"vmnp imported from the checkout: {where}"
if sys.argv[2].endswith(".whl"):
    assert any(p.name.endswith(".abi3.so") for p in where.parent.iterdir()), "no abi3 extension"
PY
checksum() { "$@" heat_equation.py --size '64*64*20' --warmup 0 --reps 1 | awk '/^RESULT/ {print $3}'; }
want=$(checksum "$py")
got=$(VM_STACK=cpu VMNP_FALLBACK=error checksum "$py" -m vmnp)
"$py" -c "import math, sys; w, g = map(float, sys.argv[1:]); sys.exit(not math.isclose(w, g, rel_tol=1e-9))" \
  "$want" "$got" || fail "checksum under vmnp $got, NumPy's $want"
echo "test-wheel: $(basename "$wheel") installs alone and runs heat_equation with NumPy's checksum ($got)"
