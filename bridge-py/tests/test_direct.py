"""Small operations run at once (the runtime's direct execution) and the native paths of the
per-operation calls a loop makes: the same results as NumPy, and as with everything queued
(``VM_DIRECT=0``), whichever path runs them."""

import os
import subprocess
import sys

import numpy
import pytest
from differential import both, same_error

import vmnp

STACK = os.environ.get("VM_STACK", "interp")
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


def same(code):
    want, got = both(code)
    for w, g in zip(want, got, strict=True) if isinstance(want, tuple) else [(want, got)]:
        g, w = numpy.asarray(g), numpy.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype), (code, g.shape, g.dtype, w.shape, w.dtype)
        numpy.testing.assert_allclose(g, w, rtol=1e-13, atol=0)


def test_a_loop_of_small_operations_reading_values_never_flushes():
    x = vmnp.linspace(0.0, 1.0, 64)
    x.sum()  # computed and in host memory
    before = vmnp._vmnp._runtime_stats()
    for _ in range(50):
        x = x * 0.5 + 0.25
        if float(x[3]) > 10:  # a value read each step
            break
        s = x.sum()
    after = vmnp._vmnp._runtime_stats()
    assert after["flushes"] == before["flushes"], (before, after)
    assert after["direct"] - before["direct"] >= 150
    assert isinstance(s, numpy.float64)
    want = numpy.linspace(0.0, 1.0, 64)
    for _ in range(50):
        want = want * 0.5 + 0.25
    assert s == pytest.approx(want.sum(), rel=1e-14)


def test_large_operations_are_still_queued():
    x = vmnp.ones(100_000)
    before = vmnp._vmnp._runtime_stats()
    y = x * 2.0 + 1.0
    assert vmnp._vmnp._runtime_stats()["direct"] == before["direct"]
    assert float(y[7]) == 3.0


@pytest.mark.parametrize(
    "code",
    [
        # element stores of numbers (the native path) and of what it leaves to the general one
        "out = np.zeros(4); out[1] = 2.5; out[2] = 3; out[3] = np.float64(-1.0)",
        "out = np.zeros(3, np.float32); out[0] = 1e-50; out[1] = 3; out[2] = np.float64(0.1)",
        "out = np.zeros(3, np.int64); out[0] = 2**62; out[1] = np.int64(-5); out[2] = True",
        "out = np.zeros(3, np.int32); out[0] = 7; out[1] = np.int32(-9); out[2] = 2.9",
        "out = np.zeros((2, 2)); out[1, 0] = 4; out[0, 1] = out[1, 0] + 1",
        # the reduction methods with at most an axis, and with more (the Python layer)
        "a = np.arange(12.0).reshape(3, 4); out = (a.sum(), a.sum(0), a.sum(axis=1), a.max(None), a.min(-1))",
        "a = np.arange(12).reshape(3, 4); out = (a.prod(1), a.any(), a.all(axis=0), a.sum(dtype=np.float32))",
        "a = np.arange(12.0).reshape(3, 4); out = (a.sum(axis=(0, 1)), a.sum(0, keepdims=True), a.max(initial=50))",
        "a = np.array([True, False]); out = (a.sum(), a.max(), a.min(0))",
        "a = np.arange(12.0).reshape(3, 4); out = (np.sum(a), np.sum(a, 0), np.max(a, axis=1), np.amin(a, None))",
        "a = np.arange(12).reshape(3, 4); out = (np.prod(a, 1), np.any(a), np.all(a, axis=0), np.sum(a, dtype='i1'))",
        "out = (np.sum([1.5, 2.5]), np.max(np.arange(3.0), initial=7.0), np.sum(np.arange(4.0), axis=(0,)))",
        # products of vectors and matrices
        "a = np.arange(5.0); out = (a @ a, np.dot(a, a), np.matmul(a, a))",
        "a = np.arange(6.0).reshape(2, 3); v = np.arange(3.0); out = (a @ v, np.dot(a, v), v @ a.T, a @ a.T)",
        "a = np.arange(6, dtype=np.float32).reshape(2, 3); out = (a @ a.T, a[0] @ a[1])",
        "a = np.arange(6).reshape(2, 3); out = (a @ a.T, np.dot(a[0], a[1]))",
        "e = np.zeros(0); out = (e @ e, np.dot(e, e))",
        "a = np.arange(4.0); out = np.zeros(()); np.dot(a, a, out=out)",
        # ufunc calls with arrays and Python numbers (native) and anything else
        "a = np.arange(4.0); out = (np.add(a, 1), np.add(2, a), np.sqrt(a), np.maximum(a, True), np.add(a, a))",
        "a = np.arange(4.0); out = (np.add(a, 1, dtype=np.float32), np.add(a, np.float32(1)), np.negative(a))",
        "a = np.arange(4.0); out = np.zeros(4); np.multiply(a, 3, out=out)",
        # ufuncs of numbers only: NumPy's scalars
        "a = np.arange(4.0); out = (np.sqrt(a[2]), np.add(1, 2), np.maximum(a[1], 0.5), np.exp(np.float32(1)))",
        "out = (np.add(np.float32(1), 2.0), np.logical_not(0), np.multiply(np.int8(10), np.int8(2)))",
        # element reads by Python ints, and by anything else
        "a = np.arange(12.0).reshape(3, 4); out = (a[1, 2], a[-1, -4], a[2][3], a[np.int64(1), 1], a[True, 0, 1])",
        "a = np.arange(5); b = a * 2; out = (b[4], b[-5], a[a[1]])",
        # gathers of vectors by integer vectors in host memory, and by others
        "x = np.arange(10.0) * 3; c = np.array([9, 0, 3, 3]); out = (x[c], x[c[1:3]], x[c[::2]])",
        "x = np.arange(10.0); c = np.array([-1, 2], np.int32); out = (x[c], x[np.array([1, 8], np.uint8)])",
        "x = np.arange(10.0); out = (x[np.array([], np.int64)], x[np.arange(3)])",
    ],
)
def test_native_paths_agree_with_numpy(code):
    same(code)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("np.zeros(2, np.int64)[0] = 2**70", OverflowError),
        ("np.zeros(2, np.int8)[0] = 300", OverflowError),
        ("np.arange(3.0) @ np.arange(4.0)", ValueError),
        ("np.dot(np.arange(3.0), np.arange(4.0))", ValueError),
        ("np.ones((2, 3)) @ np.ones((2, 3))", ValueError),
        ("np.zeros(2)[0] = np.zeros(2)", ValueError),
        ("np.arange(10.0)[np.array([3, 10])]", IndexError),
        ("np.arange(10.0)[np.array([3, -11])]", IndexError),
        ("np.arange(6.0).reshape(2, 3)[1, 3]", IndexError),
        ("np.arange(6.0).reshape(2, 3)[2, 0]", IndexError),
        ("np.arange(6.0)[1, 2]", IndexError),
    ],
)
def test_native_paths_raise_numpys_errors(code, error):
    same_error(code, error)


PROGRAM = """
import numpy as np
rng = np.random.default_rng(5)
A = np.asarray(rng.random((24, 24))) + 24 * np.eye(24)
b = np.asarray(rng.random(24))
x = np.zeros(24)
for i in range(24):
    x[i] = (b[i] - A[i, :i] @ x[:i]) / A[i, i]
L = np.tril(A)
for i in range(1, 24):
    for j in range(i):
        L[i, j] -= np.dot(L[i, :j], L[j, :j])
        L[i, j] /= L[j, j]
v = np.linspace(-1, 1, 300)
for _ in range(20):
    v = np.tanh(v * 1.5) - 0.1 * v
    if v.max() > 10:
        break
print(repr((float(x.sum()), float(L.sum()), float(v.sum()), float(np.abs(v).max()))))
"""


def run_program(path, direct):
    env = dict(os.environ, VM_DIRECT=direct, VM_STACK=STACK)
    done = subprocess.run(
        [sys.executable, "-m", "vmnp", str(path)], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    return eval(done.stdout.strip())  # noqa: S307 (the program's own repr of floats)


def test_direct_execution_computes_what_the_queue_computes(tmp_path):
    path = tmp_path / "loops.py"
    path.write_text(PROGRAM)
    direct, queued = run_program(path, "512"), run_program(path, "0")
    # interp runs both ways in the same order; cpu may combine sums otherwise when queued.
    assert direct == pytest.approx(queued, rel=1e-12 if STACK == "cpu" else 0)


def test_a_bad_vm_direct_is_a_clear_error():
    env = dict(os.environ, VM_DIRECT="lots")
    done = subprocess.run(
        [sys.executable, "-c", "import vmnp; vmnp.ones(3).sum()"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode != 0 and "VM_DIRECT=lots" in done.stderr


@pytest.mark.parametrize("n", [0, 1, 3, 5000])
def test_float_sums_start_from_plus_zero_as_numpys(n):
    # run at once (the value's +0.0 applied on the host) and queued (one more instruction)
    for module in (numpy, vmnp):
        a = module.zeros(n) * -1.0
        for s in (a.sum(), module.sum(a), a.reshape(1, n).sum(1)[0], a.astype(module.float32).sum()):
            assert not numpy.signbit(s), (module.__name__, n, s)
    want, got = numpy.array(-0.0).sum(), vmnp.array(-0.0).sum()
    assert numpy.signbit(got) == numpy.signbit(want)


def test_a_sum_over_no_axis_starts_from_plus_zero_as_numpys():
    for code in ["z = np.array(-0.0); out = (np.add.reduce(z), np.sum(z), z.sum(), np.sum(z, axis=()))",
                 "out = (np.array([[-0.0]]).sum(axis=()), np.array([-0.0, -0.0]).sum(axis=()))"]:  # fmt: skip
        want, got = both(code)
        for w, g in zip(want, got, strict=True):
            assert (numpy.signbit(numpy.asarray(g)) == numpy.signbit(numpy.asarray(w))).all(), (code, w, g)


def extreme_values(dtype):
    """NumPy values of `dtype` at its limits (and signed zeros, NaN, subnormals for floats)."""
    floats = {
        "float32": [-0.0, float("nan"), float("inf"), 1e-45, 3.4e38],
        "float64": [-0.0, float("nan"), float("-inf"), 5e-324, 1.7e308],
    }
    if dtype == "bool":
        return numpy.array([True, False])
    info = None if dtype in floats else numpy.iinfo(dtype)
    return numpy.array(floats.get(dtype) or [info.min, info.max, 0, 1], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_element_reads_are_numpys_scalars_of_each_dtype(dtype):
    want = extreme_values(dtype)
    got = vmnp.array(want)
    for i in range(len(want)):
        g, w = got[i], want[i]
        assert type(g) is type(w), (dtype, i, type(g), type(w))
        assert numpy.asarray(g).tobytes() == numpy.asarray(w).tobytes(), (dtype, i, g, w)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_scalars_of_each_dtype_are_stored_and_computed_with_their_bits(dtype):
    values = extreme_values(dtype)
    stored = vmnp.zeros(len(values), dtype=dtype)
    for i, x in enumerate(values):
        stored[i] = x  # a NumPy scalar of the array's dtype: the element store's own path
    assert vmnp.asnumpy(stored).tobytes() == values.tobytes(), dtype
    for x in values:
        # A NumPy scalar operand is a typed constant of its value.
        got = vmnp.ones(2, dtype=dtype) * x if dtype != "bool" else vmnp.zeros(2, dtype=bool) | x
        want = numpy.ones(2, dtype=dtype) * x if dtype != "bool" else numpy.zeros(2, dtype=bool) | x
        assert vmnp.asnumpy(got).tobytes() == want.tobytes(), (dtype, x)
