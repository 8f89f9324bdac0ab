"""Results that once differed from NumPy 2.4 (found by differential fuzzing): each case runs the
same statements with ``np`` bound to NumPy and to vmnp and compares what they leave or raise;
the cases where vmnp deliberately differs test the behaviour ``docs/python.md`` documents."""

import numpy
import pytest
from differential import both, same_error

import vmnp


def same(code):
    want, got = both(code)
    g, w = numpy.asarray(got), numpy.asarray(want)
    assert (g.shape, g.dtype) == (w.shape, w.dtype), (g.shape, g.dtype, w.shape, w.dtype)
    numpy.testing.assert_array_equal(g, w)


# 1. min and max with both where= and initial=


@pytest.mark.parametrize(
    "code",
    [
        "out = np.max(np.array([-3, -1, -2]), where=np.array([True, False, True]), initial=0)",
        "out = np.min(np.array([3, 1, 2]), where=np.array([True, False, True]), initial=0)",
        "out = np.min(np.array([[3, 1], [2, 5]]), axis=0, where=np.array([[True, False], [True, True]]), initial=0)",
        "out = np.max(np.array([[-3.0, 1], [-2, 5]]), axis=1, where=np.array([[1, 1], [1, 0]], bool), initial=0)",
        "out = np.maximum.reduce(np.array([-3, -1]), where=np.array([True, True]), initial=0)",
    ],
)
def test_min_max_join_initial_with_a_where_mask(code):
    same(code)


# 2. integer and bool sums with initial= accumulate in the platform integer, empty ones too


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "uint8", "uint32"])
@pytest.mark.parametrize("shape", ["(3,)", "(0,)", "(0, 2)"])
@pytest.mark.parametrize("func", ["sum", "prod", "add.reduce", "multiply.reduce"])
def test_small_integer_sums_with_initial_widen(dtype, shape, func):
    same(f"out = np.{func}(np.ones({shape}, np.{dtype}), initial=1)")
    same(f"out = np.{func}(np.ones({shape}, np.{dtype}), axis=0, initial=1)")


# 3. clip never returns its input


@pytest.mark.parametrize("bounds", ["None, None", "-1000, None", "None, 300", "-1000, 1000"])
def test_clip_returns_a_new_array_when_no_bound_applies(bounds):
    for module in (numpy, vmnp):
        a = module.arange(3, dtype=module.int8)
        r = module.clip(a, *eval(bounds))  # noqa: S307 (the test's own literals)
        assert r is not a
        r[0] = 9
        assert int(a[0]) == 0


# 4. diag of a 2-d array is a view


def test_diag_of_a_matrix_is_a_read_only_view():
    same("b = np.arange(9.0).reshape(3, 3); d = np.diag(b); b[0, 0] = 100; b[2, 2] = -1; out = d")
    same("b = np.arange(12.0).reshape(3, 4); d = np.diag(b, 1); b[1, 2] = 7; out = d")
    same_error("b = np.arange(9.0).reshape(3, 3); np.diag(b)[0] = 1", ValueError)


# 5. a failed computation stays failed when NumPy converts the result


@pytest.mark.parametrize("convert", [numpy.asarray, numpy.array, float])
def test_a_failed_result_is_not_converted_to_zero(convert):
    # 2**40 elements of int64 are 8 TiB: the array or its computation is a MemoryError.
    with pytest.raises(MemoryError):
        x = vmnp.arange(2**40)[-1]
        convert(x)


# 6. a Python float promotes small integers to float64 in the float functions of two arguments


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "uint8", "uint16", "int32", "float32", "float64"])
@pytest.mark.parametrize("name", ["arctan2", "hypot", "copysign", "logaddexp", "logaddexp2"])
def test_float_functions_take_a_python_float_as_the_default_float(name, dtype):
    want, got = both(f"out = np.{name}(np.ones(3, np.{dtype}), 1.5)")
    assert got.dtype == want.dtype
    numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-6)
    want, got = both(f"out = np.{name}(2.5, np.ones(3, np.{dtype}))")
    assert got.dtype == want.dtype
    # A Python int is the array's dtype, but an int64 next to bools.
    want, got = both(f"out = np.{name}(np.ones(3, np.{dtype}), 2)")
    assert got.dtype == want.dtype or want.dtype == numpy.float16


# 7. clip's bounds promote together with the array


@pytest.mark.parametrize(
    "code",
    [
        "out = np.clip(np.arange(3, dtype=np.int8), 128, np.float64(6.5))",
        "out = np.clip(np.array([1.0, 5.0], np.float32), 3.8, np.float64(6))",
        "out = np.clip(np.ones(2, np.int8), np.float32(1), 2.5)",
        "out = np.clip(np.ones(2, np.int8), np.int16(3), None)",
        "out = np.clip(np.ones(2, np.int8), np.array(1, np.int16), 2)",
        "out = np.clip(np.arange(4, dtype=np.uint8), -1, 2)",
        "out = np.arange(4, dtype=np.int16).clip(1.5)",
        # A Python int bound past the integer input's range clips nothing, also when a float
        # bound makes the result float.
        "out = np.clip(np.zeros(2, np.int8), 128.0, 127)",
        "out = np.clip(np.arange(4, dtype=np.uint8), -1, 2.5)",
    ],
)
def test_clip_promotes_its_bounds_like_numpys_ufunc(code):
    same(code)


# 8. NumPy's results where vmnp raised


def test_astype_to_a_dtype_the_vm_lacks_on_scalar_results(monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    # A sum computed at once is NumPy's scalar already; a queued one a 0-d array (the fallback).
    with pytest.warns(vmnp.FallbackWarning):
        for n in (3, 5000):
            r = vmnp.arange(n).sum().astype(complex)
            assert r == numpy.arange(n).sum().astype(complex) and r.dtype == numpy.complex128
        assert vmnp.array(6).astype(complex) == 6 + 0j


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "logical_xor", "bitwise_or"])
@pytest.mark.parametrize("value", ["5", "np.int8(5)", "True"])
@pytest.mark.parametrize("axis", ["", ", axis=-1", ", axis=None", ", axis=()", ", keepdims=True"])
def test_reduce_of_a_0d_array_is_its_value(name, value, axis):
    same(f"out = np.{name}.reduce(np.array({value}){axis})")


@pytest.mark.parametrize(
    "code, error",
    [
        ("np.add.reduce(np.array(5), axis=1)", numpy.exceptions.AxisError),
        ("np.add.reduce(np.array(5), axis=(0,))", numpy.exceptions.AxisError),
        ("np.add.accumulate(np.array(5))", TypeError),
        ("np.multiply.accumulate(np.array(5.0))", TypeError),
        ("np.add.reduceat(np.array(5), [0])", TypeError),
        ("np.add.accumulate(np.array(5), axis=1)", numpy.exceptions.AxisError),
    ],
)
def test_ufunc_methods_of_a_0d_array_raise_numpys_errors(code, error):
    same_error(code, error)


@pytest.mark.parametrize(
    "code", ["np.bitwise_and.reduce(np.array(0.0))", "np.bitwise_or.reduce(np.array(1.5), axis=0)"]
)
def test_reduce_of_a_0d_array_checks_the_ufuncs_loops(code):
    for module in (numpy, vmnp):
        with pytest.raises(TypeError):
            exec(code, {"np": module})  # noqa: S102


@pytest.mark.parametrize(
    "code",
    [
        "out = np.arange(3).clip(1j)",
        "out = np.arange(3.0).clip(None, 1 + 0j)",
        "b = np.array([True, False]); b[np.array([True, False])] = 0.5j; out = b",
        "b = np.array([True, False, True]); b[[0, 1]] = 0.5j; out = b",
    ],
)
def test_complex_scalars_go_through_numpys_fallback(code, monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    want, got = both(code)
    assert got.dtype == want.dtype
    numpy.testing.assert_array_equal(numpy.asarray(got), want)


@pytest.mark.parametrize(
    "code",
    [
        "a = np.arange(4) * 3\na[1] /= 2\nout = a",
        "a = np.arange(4) * 3\na[1] **= np.int8(2)\nout = a",
        "a = np.arange(4) * 3\na[1] += 2\nout = a",
        "a = np.arange(4, dtype=np.int8) * 3\na[2] *= 1.5\nout = a",
        "t = (np.arange(4) * 3).sum()\nt /= 4\nout = t",
        "t = (np.arange(4.0, dtype=np.float32) * 3).sum()\nt += np.float64(1) / 3\nout = t",
        "a = np.arange(4) * 3\nx = a[1]\nx += 5\nout = (a, x)",
        "t = (np.arange(4) * 3).sum()\nt += np.arange(3)\nout = t",
    ],
)
def test_in_place_operators_on_a_scalar_result_rebind_it_as_numpys_scalars(code):
    # An element of an array still being computed, or a reduction's result, is a 0-d vmnp
    # array standing for NumPy's scalar: `op=` gives the result of `op`, whatever its dtype,
    # and never writes where the element was read from.
    got, want = {"np": vmnp}, {"np": numpy}
    exec(code, got)  # noqa: S102
    exec(code, want)  # noqa: S102
    for g, w in _pairs(got["out"], want["out"]):
        assert numpy.asarray(g).dtype == numpy.asarray(w).dtype, code
        numpy.testing.assert_array_equal(numpy.asarray(g), numpy.asarray(w), err_msg=code)


def _pairs(got, want):
    return zip(got, want) if isinstance(want, tuple) else [(got, want)]


@pytest.mark.parametrize(
    "code",
    [
        "out = np.zeros((1,) * 17)",
        "out = np.ones([2] * 20, np.int8)",
        "out = np.arange(2).reshape((2,) + (1,) * 16)",
    ],
)
def test_more_than_16_dimensions_are_a_value_error(code):
    # Documented deviation: the VM's views have at most 16 dimensions (NumPy's 64).
    with pytest.raises(ValueError, match="16"):
        exec(code, {"np": vmnp})  # noqa: S102
    exec(code, {"np": numpy})  # noqa: S102
    assert vmnp.zeros((1,) * 16).ndim == 16


# 9. NumPy's errors


@pytest.mark.parametrize(
    "code",
    [
        "np.average(np.zeros((0, 3)), axis=0, weights=np.zeros(0))",
        "np.average(np.zeros((0, 3)), weights=np.zeros((0, 3)))",
        "np.average(np.ones((2, 3)), axis=0, weights=np.array([1.0, -1.0]))",
        "np.average(np.ones((2, 3)), weights=np.zeros((2, 3)))",
        # NumPy scales the count by ``a.size / avg.size``: an empty average divides by zero.
        "np.average(np.zeros((6, 0)), axis=0)",
        "np.average(np.zeros((6, 0)), axis=0, returned=True)",
        "np.average(np.zeros((0, 2, 0)), axis=(0, 1), keepdims=True)",
    ],
)
def test_average_with_weights_summing_to_zero_or_of_nothing_is_a_zero_division(code):
    same_error(code, ZeroDivisionError)


@pytest.mark.parametrize(
    "shape, axis, indices, mode",
    [((0, 3), 0, [0], "raise"), ((0, 3), 0, [0], "clip"), ((0, 3), 0, [1], "wrap"), ((3, 0), 1, [0], "clip")],
)
def test_take_from_an_empty_axis(shape, axis, indices, mode):
    same_error(f"np.take(np.zeros({shape}), {indices}, axis={axis}, mode={mode!r})", IndexError)


@pytest.mark.parametrize(
    "shape, axis, indices, mode",
    [((0, 3), 0, [], "raise"), ((3, 0), 0, [0, 2], "raise"), ((3, 0), 0, [5], "wrap"), ((0,), None, [], "clip")],
)
def test_take_of_nothing_or_along_a_full_axis_of_an_empty_array(shape, axis, indices, mode):
    same(f"out = np.take(np.zeros({shape}), {indices}, axis={axis}, mode={mode!r})")


@pytest.mark.parametrize(
    "code",
    [
        "a = np.zeros(3); a[0] = np.array([5.0])",
        "a = np.ones(1); a[0] += a",
        "a = np.ones((2, 2)); a[0, 0] = np.array([5.0])",
        "a = np.ones((2, 3)); a[np.int64(0), 1] = np.array([5.0])",
        "a = np.ones(3); a[-1] = np.zeros((1, 1))",
        "a = np.array(1.0); a[()] = np.array([5.0])",
    ],
)
def test_one_element_takes_no_array_of_one_element(code):
    for module in (numpy, vmnp):
        with pytest.raises(ValueError, match="setting an array element with a sequence"):
            exec(code, {"np": module})  # noqa: S102


def test_an_element_still_being_computed_takes_no_array_either():
    for module in (numpy, vmnp):
        with pytest.raises(ValueError):
            exec("a = np.ones(3) * 2; a[0] += a[:1]", {"np": module})  # noqa: S102


def test_one_element_takes_0d_arrays_and_rows_take_arrays():
    same("a = np.ones(3); a[0] = np.array(5.0); out = a")
    same("a = np.ones((2, 2)); a[0] = np.array([[5.0]]); out = a")
    same("a = np.ones((2, 3)); a[0, 1:2] = np.array([[5.0]]); out = a")
    same("a = np.array(1.0); a[...] = np.array([5.0]); out = a")


@pytest.mark.parametrize(
    "code",
    [
        "np.zeros((2**64,))",
        "np.zeros(2**63)",
        "np.ones([2**64, 2])",
        "np.empty(2**64)",
        "np.full(2**64, 1)",
        "np.eye(2**64)",
        "np.arange(0, 1e20)",
        "np.arange(2**64)",
        "np.arange(0, 1e19)",
        "np.linspace(0, 1, 2**64)",
    ],
)
def test_sizes_past_the_index_range_are_numpys_value_errors(code):
    same_error(code, ValueError)


# 10. assigning strides views the same memory (NumPy 2.4 warns that it is deprecated)


@pytest.mark.filterwarnings("ignore:Setting the strides:DeprecationWarning")
@pytest.mark.parametrize(
    "code",
    [
        # The diagonal of a matrix, as a benchmark program builds it.
        "a = np.arange(12.0).reshape(3, 4); d = a[0, :3]; d.strides = (a.strides[0] + a.strides[1],);"
        " a[1, 1] = -5; out = d",
        # Written through: the matrix changes.
        "a = np.arange(12.0).reshape(3, 4); d = a[0, :3]; d.strides = (40,); d[2] = 99; out = a",
        # A zero stride repeats an element; a negative one walks back from the first element.
        "a = np.arange(6); b = a[:3]; b.strides = 0; out = b",
        "a = np.arange(6, dtype=np.int32); b = a[3:]; b.strides = [-4]; out = b",
        "a = np.arange(24.0).reshape(4, 6); b = a[:2, :3]; b.strides = (8, 48); out = b.sum(axis=0)",
    ],
)
def test_assigned_strides_view_the_same_memory(code):
    same(code)


@pytest.mark.parametrize(
    "code, error",
    [
        ("a = np.arange(6.0); b = a[:4]; b.strides = (16,)", ValueError),  # past the end
        ("a = np.arange(6.0); b = a[2:]; b.strides = (-24,)", ValueError),  # before the start
        ("a = np.arange(6.0).reshape(2, 3); a.strides = (8,)", ValueError),  # a stride per axis
        ("a = np.arange(6.0); a.strides = 'x'", TypeError),
    ],
)
def test_assigned_strides_outside_the_memory_are_numpys_errors(code, error):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        same_error(code, error)
    a = vmnp.arange(6.0)
    with pytest.raises(ValueError, match="whole elements"):  # documented: strides of whole elements
        with pytest.warns(DeprecationWarning, match="strides"):
            a.strides = (4,)
    assert a.strides == (8,) and a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "unchanged"


def test_a_view_of_another_dtype_is_a_read_only_copy():
    # Documented: the VM has no reinterpreting views; writing the copy would not change `b`.
    import warnings

    for module in (numpy, vmnp):
        b = module.arange(3, dtype=module.int64)
        with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
            warnings.simplefilter("ignore")
            mp.setenv("VMNP_FALLBACK", "")
            v = b.view(module.float64)
        assert v.dtype == numpy.float64 and v[1] == numpy.arange(3).view(numpy.float64)[1]
    with pytest.raises(ValueError, match="read-only"):
        v[0] = 1.5
    assert b.tolist() == [0, 1, 2]


# 11. `a ** 2` is NumPy's square: int8 for a bool array


@pytest.mark.parametrize("exponent", ["2", "3", "2.0", "np.int64(2)", "np.array(2)"])
def test_bool_arrays_to_a_power(exponent):
    same(f"b = np.array([[True, False], [False, True]]); out = b ** {exponent}")


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all"])
@pytest.mark.parametrize("axis", ["(1, 2)", "(-1, 0)", "(0, 1, 2, 3)", "()", "(2,)"])
def test_reductions_over_a_tuple_of_axes(name, axis):
    # `np.sum(x, axis=(1, 2))`, `np.sum(x, (1, 2))` and the method (the native path) as NumPy's,
    # on the product of a window and broadcast weights (a convolution's step). Sums over several
    # axes add in an order of their own: equal to rounding.
    setup = "x = np.arange(120.0).reshape(2, 3, 4, 5) / 7 - 8; w = np.linspace(0.5, 1.5, 5)"
    want, got = both(f"{setup}; out = [np.{name}(x * w, axis={axis}), (x * w).{name}({axis}), np.{name}(x, {axis})]")
    for g, w in zip(got, want, strict=True):
        g, w = numpy.asarray(g), numpy.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        numpy.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("axis", ["(0, 0)", "(1, -3)", "(0, 3)"])
def test_reductions_over_a_bad_tuple_of_axes_raise_numpys_errors(axis):
    same_error(f"np.sum(np.ones((2, 3)), axis={axis})", (ValueError, numpy.exceptions.AxisError))


@pytest.mark.parametrize(
    "make, args",
    [
        ("np.arange(12.0).reshape(3, 4)", "5"),
        ("np.arange(12.0).reshape(3, 4)", "-1"),
        ("np.arange(12.0).reshape(3, 4)", "1, 2"),
        ("np.arange(12.0).reshape(3, 4)", "(-1, -1)"),
        ("np.arange(12).reshape(3, 4)[:, ::-2]", "5"),
        ("np.arange(12).reshape(3, 4)[:, ::-2]", "2, 1"),
        ("np.array(2.5)", ""),
        ("np.array(2.5)", "0"),
        ("np.array([True])", ""),
        ("np.arange(5, dtype=np.uint64)", "4"),
        ("np.arange(5, dtype=np.float32) / 3", "2"),
        ("np.linspace(0, 1, 100001) * 3 + 1", "77777"),  # queued: computed for the read
    ],
)
def test_item_reads_one_element_as_a_python_number(make, args):
    want, got = both(f"a = {make}; out = a.item({args})")
    assert (type(got), got) == (type(want), want)


@pytest.mark.parametrize("args", ["12", "3, 0", "1, 2, 3", "1.0", ""])
def test_item_of_a_missing_element_raises_numpys_error(args):
    same_error(f"np.arange(12.0).reshape(3, 4).item({args})", (IndexError, ValueError, TypeError))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "logical_and", "logical_or", "bitwise_or"])
@pytest.mark.parametrize("axis", ["", ", 1", ", axis=None", ", axis=(0, 1)", ", axis=-1"])
@pytest.mark.parametrize("make", ["np.arange(12).reshape(3, 4) - 5", "np.array([[100, 100, 100]], np.int8)"])
def test_ufunc_reduce_of_an_array(name, axis, make):
    same(f"out = np.{name}.reduce({make}{axis})")


@pytest.mark.parametrize("axis", ["", ", axis=1", ", axis=None"])
def test_bitwise_reduce_of_floats_raises_numpys_error(axis):
    same_error(f"np.bitwise_or.reduce(np.ones((2, 3)){axis})", TypeError)


@pytest.mark.parametrize("name", ["add", "multiply"])
@pytest.mark.parametrize("axis", ["", ", 0", ", axis=1", ", axis=-1", ", axis=None", ", axis=2"])
@pytest.mark.parametrize("make", ["np.arange(12).reshape(3, 4) - 5", "np.array([[100, 100, 100]], np.int8)"])
def test_ufunc_accumulate_of_an_array(name, axis, make):
    want, got = both(f"try:\n    out = np.{name}.accumulate({make}{axis})\nexcept Exception as e:\n    out = type(e)")
    if isinstance(want, type):
        assert got is want or issubclass(got, want)
    else:
        g, w = numpy.asarray(got), numpy.asarray(want)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        numpy.testing.assert_array_equal(g, w)


@pytest.mark.parametrize(
    "code",
    [
        "np.concatenate((M[:, 1:2], M[:, ::-2], M[:, 3:4]), 1)",
        "np.concatenate((M, M[::-1] * 2))",
        "np.concatenate((I, I[::-1]), axis=-1)",
        "np.concatenate((M[:0], M[:2]))",
        "np.concatenate((I, M[:4]))",
        "np.hstack((M[:, :1], M[:, 2:], M[:, 1:2]))",
        "np.hstack((M[0], M[1][:2], 5.0))",
        "np.vstack((M, M[:1], M[2]))",
        "np.stack((M[0], M[3]), axis=1)",
        "np.stack([M[1], M[2], M[3]], -1)",
        "np.concatenate((np.arange(50000.0)[::7] * 3, M[0]))",  # a queued operand
    ],
)
def test_joins_of_small_arrays_in_host_memory(code):
    # Small arrays that host memory holds are joined there (strided, reversed, of two dtypes,
    # empty parts), others by the VM's copies: NumPy's result either way.
    same(f"M = np.arange(42.0).reshape(7, 6) / 3; I = np.arange(24, dtype=np.int32).reshape(4, 6); out = {code}")


@pytest.mark.parametrize("index", ["[3, 0, 20, 5]", "np.arange(0, 20, 7).astype(np.uint8)", "np.array([], int)"])
@pytest.mark.parametrize("source", ["x", "xi", "x[::-3]", "x[5:60:2]", "(x * 2)[:40]"])
def test_gathers_by_an_integer_vector(index, source):
    # `x[cols]` with the positions in host memory: gathered there when the source is too.
    same(f"x = np.arange(100.0) / 7; xi = np.arange(100, dtype=np.int16) - 50; out = {source}[np.asarray({index})]")


@pytest.mark.parametrize("index", ["[-1, 2]", "[10**6]", "np.arange(10, dtype=np.uint64) + 2**63"])
def test_gathers_by_positions_out_of_range(index):
    # Negative positions count from the end; others past the end raise NumPy's IndexError.
    code = (
        f"x = np.arange(100.0)[::-3]; i = np.asarray({index})\ntry:\n    out = x[i]\nexcept IndexError:\n    out = -1"
    )
    same(code)
