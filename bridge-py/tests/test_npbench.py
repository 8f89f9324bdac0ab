"""NPBench's NumPy programs, unchanged, under vmnp: each validates against NumPy.

Runs ``benches/npbench/run.py --validate-only`` at preset S on the suite's stack (``VM_STACK``)
over an NPBench checkout (``../shared/npbench`` next to the repository, or ``NPBENCH_DIR``), and
unit-tests the runner's choice of outputs where NPBench's own declarations fall short. No timing.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "benches" / "npbench" / "run.py"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"npbench_runner_{name}", RUNNER.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_npbench = _load("_npbench")
_outputs = _load("_outputs")

CHECKOUT = Path(os.environ["NPBENCH_DIR"]) if os.environ.get("NPBENCH_DIR") else _npbench.default_checkout(REPO)
needs_npbench = pytest.mark.skipif(
    CHECKOUT is None or not CHECKOUT.is_dir(),
    reason=f"no NPBench checkout at ../shared/npbench (`{_npbench.CLONE_HINT}` there, or set NPBENCH_DIR)",
)

# The programs that need NumPy for part of their work (a fallback), and what for. They run with
# fallbacks allowed; every other NPBench program runs with VMNP_FALLBACK=error.
NEEDS_FALLBACK = {
    "contour_integral": "complex numbers",
    "mandelbrot1": "complex numbers",
    "mandelbrot2": "complex numbers",
    "scattering_self_energies": "complex numbers",
    "stockham_fft": "complex numbers",
}

STACK = os.environ.get("VM_STACK", "cpu")


def _validate(tmp_path, names, fallback):
    env = dict(os.environ)
    if fallback:
        env.pop("VMNP_FALLBACK", None)
    else:
        env["VMNP_FALLBACK"] = "error"
    out = tmp_path / "npbench.json"
    cmd = [sys.executable, str(RUNNER), "--npbench", str(CHECKOUT), "--preset", "S", "--tools", "numpy,vmnp"]
    cmd += ["--validate-only", "--stack", STACK, "--jobs", "2", "--timeout", "300", "-q", "--json", str(out)]
    cmd += ["--bench", *names]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    assert out.exists(), f"the runner wrote no JSON (exit status {proc.returncode}):\n{proc.stderr[-3000:]}"
    records = {r["benchmark"]: r for r in json.loads(out.read_text())["benchmarks"]}
    failures = []
    for name in names:
        run = records[name]["tools"].get("vmnp", {})
        if run.get("status") != "valid":
            wrong = [o["name"] for o in run.get("outputs") or [] if o["valid"] is False]
            failures.append(f"{name}: {run.get('status')} {run.get('error') or ''} {wrong or ''}".strip())
    return records, failures


@needs_npbench
def test_every_program_validates_on_the_vm(tmp_path):
    names = [n for n in _npbench.Checkout(CHECKOUT).names() if n not in NEEDS_FALLBACK]
    _, failures = _validate(tmp_path, names, fallback=False)
    assert not failures, f"on {STACK} with VMNP_FALLBACK=error:\n" + "\n".join(failures)


@needs_npbench
def test_programs_with_fallbacks_validate(tmp_path):
    names = [n for n in NEEDS_FALLBACK if n in _npbench.Checkout(CHECKOUT).names()]
    _, failures = _validate(tmp_path, names, fallback=True)
    assert not failures, f"on {STACK} with fallbacks allowed:\n" + "\n".join(failures)


def test_missing_checkout_is_a_clear_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--npbench", str(tmp_path / "none")], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "git clone https://github.com/spcl/npbench" in proc.stderr


# ------------------------------------------------------------------ outputs where NPBench's gaps are


def _check(ref, val):
    return np.shape(ref) == np.shape(val) and bool(np.allclose(ref, val))


def _info(inputs, outputs, arrays=None):
    return {"input_args": list(inputs), "array_args": arrays or list(inputs), "output_args": outputs}


def test_an_undeclared_argument_changed_in_place_is_the_output():
    # doitgen: no output declared; the kernel writes A.
    a = np.arange(6.0)
    outputs, _ = _outputs.detect_outputs(_info(["A", "C4"], []), {"A": a, "C4": a}, [], {"A": a * 2, "C4": a})
    assert [(o.name, o.side) for o in outputs] == [("A", False)]
    assert _outputs.match_outputs(outputs, [], {"A": a * 2, "C4": a}, _check) == [("A", "A", True)]
    assert _outputs.match_outputs(outputs, [], {"A": a, "C4": a}, _check) == [("A", "A", False)]


def test_a_declared_output_left_unchanged_is_noted_and_the_written_one_found():
    # trisolv: `b` declared, `x` written.
    b, x = np.ones(3), np.zeros(3)
    inputs = {"L": np.eye(3), "x": x, "b": b}
    after = {"L": np.eye(3), "x": b.copy(), "b": b}
    outputs, notes = _outputs.detect_outputs(_info(inputs, ["b"]), inputs, [], after)
    assert [(o.name, o.side) for o in outputs] == [("b", False), ("x", False)]
    assert any("b is declared an output but these inputs leave it unchanged" in n for n in notes)
    # JAX returns x: paired with it, b stays the unchanged argument.
    assert _outputs.match_outputs(outputs, [b.copy()], inputs, _check) == [("b", "b", True), ("x", "return[0]", True)]


def test_outputs_returned_in_another_order_are_paired_by_value():
    # gemver: NumPy changes A, w, x in place; JAX returns A, x, w (w and x of one shape).
    a, w, x = np.ones((2, 2)), np.zeros(2), np.zeros(2)
    inputs = {"A": a, "w": w, "x": x}
    after = {"A": a + 1, "w": w + 1, "x": x + 2}
    outputs, _ = _outputs.detect_outputs(_info(inputs, ["A", "w", "x"]), inputs, [], after)
    jax_returned = [a + 1, x + 2, w + 1]
    assert _outputs.match_outputs(outputs, jax_returned, inputs, _check) == [
        ("A", "return[0]", True),
        ("w", "return[2]", True),
        ("x", "return[1]", True),
    ]
    # vadv: three intermediates of the output's shape are returned before it.
    outputs, _ = _outputs.detect_outputs(_info(["u"], ["u"]), {"u": w}, [], {"u": w + 5})
    matched = _outputs.match_outputs(outputs, [w + 1, w + 2, w + 3, w + 5], {"u": w}, _check)
    assert matched == [("u", "return[3]", True)]
    # A wrong value is wrong wherever it is looked for.
    assert _outputs.match_outputs(outputs, [w + 1], {"u": w}, _check) == [("u", "u", False)]


def test_a_side_effect_binds_numpys_program_only():
    # covariance: returns cov and centres `data` in place, undeclared.
    data = np.arange(4.0)
    outputs, _ = _outputs.detect_outputs(_info(["data"], []), {"data": data}, [np.ones(1)], {"data": data - 1.5})
    assert [(o.name, o.side) for o in outputs] == [("return[0]", False), ("data", True)]
    other = _outputs.match_outputs(outputs, [np.ones(1)], {"data": data}, _check, same_program=False)
    assert other == [("return[0]", "return[0]", True), ("data", None, None)]
    same = _outputs.match_outputs(outputs, [np.ones(1)], {"data": data}, _check, same_program=True)
    assert same == [("return[0]", "return[0]", True), ("data", "data", False)]


def test_an_unstable_side_effect_is_not_held_against_numpys_program():
    # nbody: returns the energies and moves `vel` in place, chaotically at preset M.
    vel = np.arange(4.0)
    outputs, _ = _outputs.detect_outputs(_info(["vel"], []), {"vel": vel}, [np.ones(1)], {"vel": vel + 1})
    outputs[1].unstable = True
    same = _outputs.match_outputs(outputs, [np.ones(1)], {"vel": vel + 9}, _check, same_program=True)
    assert same == [("return[0]", "return[0]", True), ("vel", None, None)]
    # The declared output is validated as before.
    wrong = _outputs.match_outputs(outputs, [np.zeros(1)], {"vel": vel + 1}, _check, same_program=True)
    assert wrong == [("return[0]", "return[0]", False), ("vel", "vel", True)]


def test_nudged_inputs_move_floats_by_one_ulp_and_leave_the_rest():
    a, i = np.array([1.0, -2.0, 0.0]), np.arange(3)
    n = _outputs.nudged({"a": a, "i": i, "s": 1.5})
    assert np.array_equal(n["a"], np.nextafter(a, np.inf)) and not np.array_equal(n["a"], a)
    assert n["i"] is i and n["s"] == 1.5


def test_a_no_op_on_these_inputs_is_noted():
    # heat_3d: the inputs are linear in each index, so the stencil leaves A and B as they are.
    a = np.fromfunction(lambda i, j: i + j, (4, 4))
    inputs = {"A": a, "B": a.copy()}
    outputs, notes = _outputs.detect_outputs(_info(inputs, ["A", "B"]), inputs, [], {"A": a, "B": a.copy()})
    assert [o.name for o in outputs] == ["A", "B"]
    assert sum("cannot tell the kernel from one that does nothing" in n for n in notes) == 2
    outputs, notes = _outputs.detect_outputs(_info(inputs, ["A"]), inputs, [], {"A": a + 1e-12, "B": a})
    assert any("equal to its input within the tolerance" in n for n in notes)


def test_nothing_to_validate_is_said():
    outputs, notes = _outputs.detect_outputs(_info(["A"], []), {"A": np.ones(2)}, [], {"A": np.ones(2)})
    assert outputs == [] and any("nothing to validate" in n for n in notes)


def test_an_argument_changed_and_returned_is_one_output():
    # adi: NumPy's kernel changes u and returns it; numba's only changes it, JAX's only returns it.
    u = np.zeros(3)
    after = u + 1
    outputs, notes = _outputs.detect_outputs(_info(["u"], ["u"]), {"u": u}, [after], {"u": after})
    assert [o.name for o in outputs] == ["return[0]"]
    assert _outputs.match_outputs(outputs, [], {"u": u + 1}, _check) == [("return[0]", "u", True)]
    assert _outputs.match_outputs(outputs, [u + 1], {"u": u}, _check) == [("return[0]", "return[0]", True)]
