"""Property tests against NumPy on generated inputs: reductions with ``where=`` and ``initial=``,
the dtype of integer sums, ``clip``'s promotion and aliasing, views of diagonals, weak and strong
scalars in every binary ufunc, and 0-d arrays in every ufunc method."""

import contextlib
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vmnp

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float64"]
ALL = ["bool", *INTS, *FLOATS]


def arrays(dtypes=ALL, min_dims=0, max_dims=3, min_side=0, max_side=4, low=-10, high=10):
    """NumPy arrays of small values (integers in ``[low, high]``, kept in the dtype's range)."""

    def elements(dt):
        if dt in FLOATS:
            return st.floats(low, high, width=32 if dt == "float32" else 64)
        if dt == "bool":
            return st.booleans()
        info = np.iinfo(dt)
        return st.integers(max(low, int(info.min)), min(high, int(info.max)))

    return st.sampled_from(dtypes).flatmap(
        lambda dt: hnp.arrays(
            dt,
            hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side),
            elements=elements(dt),
        )
    )


def numpy_scalars(dtypes=ALL, low=-10, high=10):
    """NumPy scalars (strong: typed) of small values."""
    return st.sampled_from(dtypes).flatmap(
        lambda dt: st.integers(0 if dt[0] == "u" else low, high).map(
            lambda v: np.dtype(dt).type(bool(v) if dt == "bool" else v)
        )
    )


def python_scalars(low=-10, high=10):
    """Python numbers (weak under NEP 50)."""
    return st.one_of(st.booleans(), st.integers(low, high), st.floats(low, high).map(lambda f: round(f, 2)))


def kind(e):
    for base in (OverflowError, IndexError, ZeroDivisionError, ValueError, TypeError):
        if isinstance(e, base):
            return base
    return type(e)


def outcome(f):
    """``f()``, or the class of error it raised (NumPy's private subclasses as their base)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return f()
        except Exception as e:  # noqa: BLE001 (any error is compared)
            if isinstance(e, vmnp.FallbackError):
                raise
            return kind(e)


def agree(got, want):
    """vmnp's outcome ``got`` is NumPy's ``want``: the same error, or the same shape, dtype and
    values (floats to a few ulps)."""
    if isinstance(want, type):
        assert got is want, (got, want)
        return
    assert not isinstance(got, type), (got, want)
    g, w = np.asarray(got), np.asarray(want)
    assert (g.shape, g.dtype) == (w.shape, w.dtype), (g.shape, g.dtype, w.shape, w.dtype)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        rtol = 1e-5 if g.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-300, equal_nan=True)


def both(f, *args, **kwargs):
    """``f`` of NumPy's module and of vmnp's on the same arguments (vmnp's arrays copied in)."""

    def to_vm(x):
        return vmnp.asarray(x) if isinstance(x, np.ndarray) else x

    want = outcome(lambda: f(np, *args, **kwargs))
    got = outcome(lambda: f(vmnp, *map(to_vm, args), **{k: to_vm(v) for k, v in kwargs.items()}))
    agree(got, want)
    return got, want


@contextlib.contextmanager
def fallbacks_allowed():
    """NumPy's fallback allowed (the suite forbids it): for what vmnp hands to NumPy on purpose."""
    before = os.environ.get("VMNP_FALLBACK")
    os.environ["VMNP_FALLBACK"] = "warn"
    try:
        yield
    finally:
        if before is None:
            del os.environ["VMNP_FALLBACK"]
        else:
            os.environ["VMNP_FALLBACK"] = before


# ---------------------------------------------------------------------------- reductions


def axes(ndim):
    return st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.none())


@FAST
@given(st.sampled_from(["sum", "prod", "min", "max"]), arrays(low=-3, high=3), st.data())
def test_reductions_with_where_and_initial(name, a, data):
    axis = data.draw(axes(a.ndim), label="axis")
    mask_shape = data.draw(st.sampled_from([a.shape, a.shape[1:], ()]), label="mask shape")
    where = data.draw(hnp.arrays(bool, mask_shape), label="where")
    initial = data.draw(st.one_of(st.none(), st.integers(-3, 3)), label="initial")
    keepdims = data.draw(st.booleans(), label="keepdims")
    kwargs = {"axis": axis, "where": where, "keepdims": keepdims}
    if initial is not None:
        kwargs["initial"] = initial
    if a.dtype == np.bool_ and initial is not None:
        kwargs["initial"] = bool(initial)
    if a.dtype.kind == "u" and initial is not None:
        kwargs["initial"] = abs(initial)
    both(lambda m, x, **kw: getattr(m, name)(x, **kw), a, **kwargs)


@FAST
@given(arrays(["bool", *INTS], low=0, high=3), st.data())
def test_integer_and_bool_sums_accumulate_in_the_platform_integer(a, data):
    axis = data.draw(axes(a.ndim), label="axis")
    initial = data.draw(st.one_of(st.none(), st.integers(0, 3)), label="initial")
    kwargs = {"axis": axis} if initial is None else {"axis": axis, "initial": initial}
    got, want = both(lambda m, x, **kw: m.sum(x, **kw), a, **kwargs)
    both(lambda m, x, **kw: m.add.reduce(x, **kw), a, **kwargs)
    both(lambda m, x, **kw: m.prod(x, **kw), a, **kwargs)


# -------------------------------------------------------------------------------- clip


def bounds():
    return st.one_of(st.none(), python_scalars(-300, 300), numpy_scalars(low=-100, high=100))


@FAST
@given(arrays(min_side=1, low=-200, high=200), bounds(), bounds())
def test_clip_promotes_like_numpys_ufunc(a, lo, hi):
    both(lambda m, x: m.clip(x, lo, hi), a)


@FAST
@given(arrays(min_side=1), bounds(), bounds())
def test_clip_never_returns_or_views_its_input(a, lo, hi):
    x = vmnp.asarray(a)
    r = outcome(lambda: vmnp.clip(x, lo, hi))
    assume(not isinstance(r, type))
    assert r is not x
    assert not vmnp.shares_memory(r, x)
    before = x.copy()
    r[...] = 0
    assert np.array_equal(np.asarray(x), np.asarray(before))


# --------------------------------------------------------------------------- diagonals


@FAST
@given(arrays(["int32", "float64"], min_dims=2, max_dims=2, min_side=1, max_side=5), st.integers(-5, 5), st.data())
def test_diag_is_a_view_that_shows_writes_to_its_base(a, k, data):
    i = data.draw(st.integers(0, a.shape[0] - 1), label="row")
    j = data.draw(st.integers(0, a.shape[1] - 1), label="column")
    for name in ("diag", "diagonal"):
        b, x = a.copy(), vmnp.asarray(a.copy())
        want, got = getattr(np, name)(b, k), getattr(vmnp, name)(x, k)
        b[i, j] = 77
        x[i, j] = 77
        agree(got, want)
        assert got.flags.writeable == want.flags.writeable


@FAST
@given(arrays(["float64"], min_dims=3, max_dims=3, min_side=1, max_side=4), st.integers(-3, 3), st.data())
def test_diagonal_of_3d_arrays_is_a_view(a, k, data):
    axis1, axis2 = data.draw(st.permutations([0, 1, 2]), label="axes")[:2]
    b, x = a.copy(), vmnp.asarray(a.copy())
    want, got = np.diagonal(b, k, axis1, axis2), vmnp.diagonal(x, k, axis1, axis2)
    b[...] = b * 2 + 1
    x[...] = x * 2 + 1
    agree(got, want)


# ------------------------------------------------------------------ scalars in ufuncs

BINARY = sorted(name for name, u in vmnp._UFUNCS.items() if getattr(np, name).nin == 2)
# Arguments with no result defined by C: shifts past the width, integer powers to negative values.
SMALL_NONNEGATIVE = {"left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift", "power", "pow"}


def float16_result(name, *args):
    """True when NumPy computes in float16 (vmnp's float32: a documented deviation)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return getattr(np, name)(*args).dtype == np.float16
        except Exception:  # noqa: BLE001
            return False


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(BINARY),
    arrays(min_dims=1, max_dims=2, min_side=1, low=-5, high=5),
    python_scalars(-5, 5),
    numpy_scalars(low=-5, high=5),
    st.integers(0, 3),
)
def test_weak_and_strong_scalars_in_every_binary_ufunc(name, a, weak, strong, form):
    if name in SMALL_NONNEGATIVE:
        a = np.abs(a) if a.dtype != np.bool_ else a
        weak = abs(weak) if type(weak) is not bool else weak
        strong = abs(strong) if strong.dtype != np.bool_ else strong
    args = [(a, weak), (weak, a), (a, strong), (strong, a)][form]
    assume(not float16_result(name, *args))
    # Mixed in one call: a strong scalar with a weak one (NumPy's scalar result, on the host).
    assume(not float16_result(name, strong, weak))
    both(lambda m, x, y: getattr(m, name)(x, y), *args)
    both(lambda m, x, y: getattr(m, name)(x, y), strong, weak)


# ----------------------------------------------------------------- 0-d ufunc methods


@FAST
@given(
    st.sampled_from(BINARY),
    arrays(min_dims=0, max_dims=0, low=0, high=5),
    st.sampled_from(["reduce", "accumulate", "reduceat", "outer"]),
    st.sampled_from([{}, {"axis": 0}, {"axis": -1}, {"axis": None}, {"axis": 1}, {"keepdims": True}]),
)
def test_0d_arrays_in_every_ufunc_method(name, a, method, kwargs):
    if method == "reduceat":
        call = lambda m, x: getattr(getattr(m, name), method)(x, [0], **kwargs)  # noqa: E731
    elif method == "outer":
        call = lambda m, x: getattr(getattr(m, name), method)(x, x)  # noqa: E731
    elif method == "accumulate":
        call = lambda m, x: getattr(getattr(m, name), method)(x, **{k: v for k, v in kwargs.items() if k == "axis"})  # noqa: E731
    else:
        call = lambda m, x: getattr(getattr(m, name), method)(x, **kwargs)  # noqa: E731
    assume(not float16_result(name, a, a))
    with fallbacks_allowed():
        both(call, a)


def test_the_binary_ufuncs_tested_are_all_of_vmnps():
    assert {"add", "arctan2", "hypot", "copysign", "logaddexp", "logaddexp2", "left_shift"} <= set(BINARY)
    assert len(BINARY) >= 30


@pytest.mark.parametrize("name", BINARY)
def test_every_binary_ufunc_records_on_the_vm(name):
    # The properties above run on the VM, not through NumPy's fallback (which the suite forbids).
    x = vmnp.arange(1, 4, dtype="int32")
    getattr(vmnp, name)(x, 2)


def pad_widths(ndim):
    """NumPy's forms of ``pad_width``: one number, one pair, a pair per axis."""
    pair = st.tuples(st.integers(0, 6), st.integers(0, 6))
    return st.one_of(st.integers(0, 6), pair, st.lists(pair, min_size=ndim, max_size=ndim).map(tuple))


@FAST
@given(
    arrays(min_dims=1, max_dims=3, max_side=4),
    st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]),
    st.data(),
)
def test_pad_on_the_vm_is_numpys(a, mode, data):
    widths = data.draw(pad_widths(a.ndim), label="pad_width")
    kwargs = {}
    if mode == "constant" and data.draw(st.booleans(), label="values"):
        kwargs["constant_values"] = data.draw(
            st.one_of(python_scalars(), st.tuples(python_scalars(), python_scalars()))
        )
    both(lambda m, x: m.pad(x, widths, mode=mode, **kwargs), a)


@FAST
@given(
    st.lists(arrays(["bool"], min_dims=0, max_dims=2, min_side=1, max_side=3), min_size=1, max_size=3),
    st.data(),
)
def test_select_on_the_vm_is_numpys(conds, data):
    choices = [
        data.draw(st.one_of(arrays(min_dims=0, max_dims=2, min_side=1, max_side=3), python_scalars())) for _ in conds
    ]
    default = data.draw(st.one_of(python_scalars(), numpy_scalars()), label="default")
    assume(not any(isinstance(c, np.ndarray) and c.dtype == np.float16 for c in choices))
    both(lambda m, *cs: m.select(cs[: len(conds)], cs[len(conds) :], default), *conds, *choices)


def test_select_and_pad_raise_numpys_errors():
    x = np.arange(4)
    for call in (
        lambda m, x: m.select([], [], 0),
        lambda m, x: m.select([x > 1], [], 0),
        lambda m, x: m.select([x], [x], 0),
        lambda m, x: m.pad(x, -1),
        lambda m, x: m.pad(x[:0], 1, mode="edge"),
    ):
        got, want = both(call, x)
        assert isinstance(want, type), want


@FAST
@given(
    arrays(["int32", "float32", "float64"], min_dims=1, max_dims=2, min_side=1, max_side=5, low=-100, high=100),
    st.booleans(),
    st.sampled_from([{}, {"bias": True}, {"ddof": 0}, {"ddof": 2}]),
)
def test_cov_and_corrcoef_on_the_vm_are_numpys(m, rowvar, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # too few degrees of freedom
        want, got = np.cov(m, rowvar=rowvar, **kwargs), vmnp.cov(vmnp.asarray(m), rowvar=rowvar, **kwargs)
        g = np.asarray(got)
        assert (g.shape, g.dtype) == (want.shape, want.dtype)
        # One matrix product on the VM, BLAS's in NumPy: sums in another order.
        scale = float(np.abs(want[np.isfinite(want)]).max(initial=1.0))
        tol = 1e-5 if g.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol * scale, equal_nan=True)
        want, got = np.corrcoef(m, rowvar=rowvar), np.asarray(vmnp.corrcoef(vmnp.asarray(m), rowvar=rowvar))
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@st.composite
def einsum_cases(draw):
    """Subscripts of up to three operands over labels of random extents (an operand may have
    extent 1 where the others have more: it broadcasts), with an explicit output (any order) or
    none, and arrays of one dtype or, sometimes, one dtype each."""
    extents = {c: draw(st.integers(1, 3), label=f"extent {c}") for c in "abcd"}
    terms = ["".join(draw(st.permutations("abcd"))[: draw(st.integers(0, 3))]) for _ in range(draw(st.integers(1, 3)))]
    used = sorted(set("".join(terms)))
    if draw(st.booleans(), label="explicit output"):
        out = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
        subscripts = ",".join(terms) + "->" + out
    else:
        subscripts = ",".join(terms)
    dtypes = st.sampled_from(["int32", "int64", "float32", "float64"])
    dt = draw(dtypes, label="dtype")
    mixed = draw(st.booleans(), label="a dtype each")
    arrays = []
    for t in terms:
        d = draw(dtypes, label="operand dtype") if mixed else dt
        shape = tuple(1 if draw(st.integers(0, 5)) == 0 else extents[c] for c in t)
        arrays.append(draw(hnp.arrays(d, shape, elements=st.integers(-5, 5).map(float if "f" in d else int))))
    return subscripts, arrays


def close(got, want):
    """Same shape and dtype, values within a few ulps of the largest (sums in another order)."""
    g = np.asarray(got)
    assert (g.shape, g.dtype) == (want.shape, want.dtype), (g.shape, g.dtype, want.shape, want.dtype)
    tol = 1e-5 if g.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol * float(np.abs(want).max(initial=1.0)))


@FAST
@given(einsum_cases())
def test_einsum_on_the_vm_is_numpys(case):
    subscripts, arrays = case
    close(vmnp.einsum(subscripts, *map(vmnp.asarray, arrays)), np.einsum(subscripts, *arrays))


@FAST
@given(arrays(["bool", "int32", "float64"], max_dims=3), st.data())
def test_count_nonzero_is_numpys(a, data):
    """Counts of whole arrays (bool ones counted in host memory) and along an axis, of the array
    and of a strided view of it: values and types as NumPy's."""
    x = vmnp.asarray(a)
    views = [(x, a), (x[..., ::2], a[..., ::2])] if a.ndim else [(x, a)]
    for got, want in views:
        n, m = vmnp.count_nonzero(got), np.count_nonzero(want)
        assert (type(n), n) == (type(m), m)
        if want.ndim:
            axis = data.draw(st.integers(0, want.ndim - 1), label="axis")
            np.testing.assert_array_equal(np.asarray(vmnp.count_nonzero(got, axis=axis)), np.count_nonzero(want, axis))


@FAST
@given(arrays(["int32", "float64", "bool"], max_dims=3), st.integers(0, 3), st.data())
def test_repeat_and_tile_are_numpys(a, n, data):
    """Of arrays and of strided views of them: ``repeat`` along no axis (flattened) or any,
    ``tile`` by a count or by a tuple of any length."""
    for x, want in [(vmnp.asarray(a), a)] + ([(vmnp.asarray(a)[::-2], a[::-2])] if a.ndim else []):
        axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)) if x.ndim else st.none(), label="axis")
        reps = data.draw(st.one_of(st.integers(0, 3), st.tuples(*[st.integers(0, 3)] * data.draw(st.integers(0, 4)))))
        for got, expected in [
            (vmnp.repeat(x, n, axis), np.repeat(want, n, axis)),
            (vmnp.tile(x, reps), np.tile(want, reps)),
        ]:
            g = np.asarray(got)
            assert (g.shape, g.dtype) == (expected.shape, expected.dtype)
            np.testing.assert_array_equal(g, expected)


@st.composite
def matmul_cases(draw):
    """Operands of ``@`` of rank 1 to 4: vectors, matrices and stacks of matrices whose stack
    shapes broadcast (a stack times one matrix is the common case: ``x @ W`` of a batch), of
    one dtype or two."""
    m, k, n = (draw(st.integers(1, 4), label=label) for label in "mkn")
    batch = draw(st.lists(st.integers(1, 3), max_size=2), label="stack shape")

    def operand(core, vector):
        rank = draw(st.integers(1, 2 + len(batch)), label="rank")
        if rank == 1:
            shape = (vector,)
        else:
            stack = [1 if draw(st.integers(0, 3)) == 0 else e for e in batch[len(batch) - (rank - 2) :]]
            shape = (*stack, *core)
        dt = draw(st.sampled_from(["float64", "float32", "int64"]), label="dtype")
        return draw(hnp.arrays(dt, shape, elements=st.integers(-5, 5).map(float if "f" in dt else int)))

    return operand((m, k), k), operand((k, n), k)


@FAST
@given(matmul_cases())
def test_matmul_of_stacks_on_the_vm_is_numpys(case):
    a, b = case
    close(vmnp.asarray(a) @ vmnp.asarray(b), a @ b)


@FAST
@given(arrays(["int32", "float64"], min_dims=0, max_dims=3, min_side=1, max_side=3), st.data())
def test_tensordot_and_kron_on_the_vm_are_numpys(a, data):
    b = data.draw(arrays([str(a.dtype)], min_dims=0, max_dims=3, min_side=1, max_side=3), label="b")
    close(vmnp.kron(vmnp.asarray(a), vmnp.asarray(b)), np.kron(a, b))
    n = data.draw(st.integers(0, min(a.ndim, b.ndim)), label="axes")
    assume(a.shape[a.ndim - n :] == b.shape[:n])
    close(vmnp.tensordot(vmnp.asarray(a), vmnp.asarray(b), n), np.tensordot(a, b, n))


@FAST
@given(
    arrays(["int32", "float64"], min_dims=1, max_dims=1, min_side=1, max_side=9),
    arrays(["int32", "float32", "float64"], min_dims=1, max_dims=1, min_side=1, max_side=9),
    st.sampled_from(["valid", "same", "full"]),
)
def test_convolve_and_correlate_on_the_vm_are_numpys(a, v, mode):
    for name in ("convolve", "correlate"):
        close(getattr(vmnp, name)(vmnp.asarray(a), vmnp.asarray(v), mode), getattr(np, name)(a, v, mode))


@FAST
@given(arrays(min_dims=1, max_dims=3, min_side=1, max_side=5), st.data())
def test_sliding_window_view_on_the_vm_is_numpys(a, data):
    from numpy.lib.stride_tricks import sliding_window_view

    axis = data.draw(st.integers(0, a.ndim - 1), label="axis")
    window = data.draw(st.integers(0, a.shape[axis]), label="window")
    x = vmnp.asarray(a)
    got = sliding_window_view(x, window, axis)  # NumPy's function, handed to vmnp's
    agree(got, sliding_window_view(a, window, axis))
    assert type(got) is vmnp.ndarray and not got.flags.writeable
    assert vmnp.shares_memory(got, x) == (got.size > 0), "a view (an empty one shares nothing)"


# ---------------------------------------------------------------------------- counting


def same_bits(got, want):
    """vmnp's outcome ``got`` is NumPy's ``want`` exactly: the same error, or the same shape,
    dtype and every bit."""
    if isinstance(want, type):
        assert got is want, (got, want)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert (g.shape, g.dtype) == (w.shape, w.dtype), (g.shape, g.dtype, w.shape, w.dtype)
    assert g.tobytes() == w.tobytes(), (g, w)


@FAST
@given(
    arrays(["int8", "int32", "int64", "uint8", "float32", "float64", "bool"], min_dims=1, max_dims=2, min_side=1),
    st.data(),
)
def test_add_at_is_numpys_repeated_indexes_accumulating_in_order(a, data):
    n = a.shape[0]
    idx = data.draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=8), label="indices")
    as_array = data.draw(st.booleans(), label="index array")
    shape = (len(idx), *a.shape[1:])
    # A Python number, or an array of `a`'s dtype broadcasting to the selection's shape.
    lead = data.draw(st.integers(0, len(shape)), label="b's dimensions dropped")
    ones = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)), label="b's extents of 1")
    b_shape = tuple(1 if one else n for n, one in zip(shape[lead:], ones, strict=False))
    values = (np.arange(math.prod(b_shape)) % 7 - 3).reshape(b_shape).astype(a.dtype)
    b = data.draw(st.one_of(python_scalars(), st.just(values)), label="b")
    want = outcome(lambda: (w := a.copy(), np.add.at(w, np.array(idx, dtype=np.int64) if as_array else idx, b), w)[2])
    x = vmnp.asarray(a)
    key = vmnp.asarray(np.array(idx, dtype=np.int64)) if as_array else idx
    values = vmnp.asarray(b) if isinstance(b, np.ndarray) else b
    # `a`'s dtype after promotion (`b` as an array: NumPy's `at` makes one of a number too):
    # on the VM (the suite forbids the fallback); else NumPy's.
    on_vm = np.result_type(a.dtype, np.asarray(b).dtype) == a.dtype
    with contextlib.nullcontext() if on_vm else fallbacks_allowed():
        got = outcome(lambda: (vmnp.add.at(x, key, values), x)[1])
    same_bits(got, want)


@FAST
@given(
    arrays(["int8", "int32", "int64", "uint16", "bool"], min_dims=1, max_dims=1, low=-2, high=12),
    st.booleans(),
    st.integers(0, 15),
)
def test_bincount_on_the_vm_is_numpys(x, weighted, minlength):
    w = np.linspace(-1.5, 2.5, x.size) if weighted else None
    want = outcome(lambda: np.bincount(x, weights=w, minlength=minlength))
    got = outcome(
        lambda: vmnp.bincount(vmnp.asarray(x), weights=None if w is None else vmnp.asarray(w), minlength=minlength)
    )
    same_bits(got, want)


@FAST
@given(
    arrays(["int16", "int64", "float64"], min_dims=1, max_dims=2, min_side=0, max_side=30, low=-50, high=50),
    st.integers(1, 12),
    st.one_of(st.none(), st.tuples(st.integers(-60, 0), st.integers(-5, 60)), st.just((-1.5, 7.25))),
    st.booleans(),
    st.booleans(),
)
def test_histogram_with_equal_bins_is_numpys(a, bins, range_, weighted, density):
    w = np.cos(np.arange(a.size, dtype=np.float64)).reshape(a.shape) if weighted else None
    want = outcome(lambda: np.histogram(a, bins, range_, density=density, weights=w))
    got = outcome(
        lambda: vmnp.histogram(
            vmnp.asarray(a), bins, range_, density=density, weights=None if w is None else vmnp.asarray(w)
        )
    )
    if isinstance(want, type):
        assert got is want, (got, want)
        return
    same_bits(got[1], want[1])
    if density or weighted:
        agree(got[0], want[0])  # NumPy's own sums (density divides by them)
    else:
        same_bits(got[0], want[0])


@FAST
@given(st.integers(1, 40), st.floats(-1e3, 1e3), st.floats(1e-3, 1e3), st.booleans(), st.booleans())
def test_histogram_bins_values_at_and_next_to_every_edge_as_numpy(bins, first, width, ranged, weighted):
    # Edges of inexact steps, each with the values on it and one ulp to either side: the bin of
    # every value exactly as NumPy finds it, with the range given or taken from the data.
    range_ = (first, first + width)
    edges = np.histogram_bin_edges(np.array(range_), bins)
    a = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    w = np.cos(np.arange(a.size, dtype=np.float64)) if weighted else None
    r = range_ if ranged else None
    want = np.histogram(a, bins, r, weights=w)
    got = vmnp.histogram(vmnp.asarray(a), bins, r, weights=None if w is None else vmnp.asarray(w))
    same_bits(got[1], want[1])
    if weighted:
        agree(got[0], want[0])
    else:
        same_bits(got[0], want[0])


def test_histogram_drops_what_the_range_leaves_out_and_counts_the_last_edge():
    a = np.array([-3.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan, 4.0, 4.0 - 1e-15])
    for bins, range_ in [(4, (0.0, 4.0)), (3, (0.5, 2.0)), (1, (4.0, 4.0))]:
        want = np.histogram(a, bins, range_)
        got = vmnp.histogram(vmnp.asarray(a), bins, range_)
        same_bits(got[0], want[0])
        same_bits(got[1], want[1])
    with pytest.raises(ValueError, match="autodetected range of \\[nan, nan\\] is not finite"):
        vmnp.histogram(vmnp.asarray(np.array([np.nan])))


# ---------------------------------------------------------------------------- sorting

SPECIAL = [-np.inf, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, np.nan]


def sortable_arrays(min_dims=1, max_dims=3, max_side=6):
    """Arrays with repeats, and for floats zeros of both signs, infinities and NaNs."""

    def elements(dt):
        if dt in FLOATS:
            return st.sampled_from(SPECIAL)
        if dt == "bool":
            return st.booleans()
        info = np.iinfo(dt)
        return st.sampled_from([v for v in [int(info.min), -3, -1, 0, 1, 2, 7, int(info.max)] if info.min <= v])

    return st.sampled_from(ALL).flatmap(
        lambda dt: hnp.arrays(
            dt,
            hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side),
            elements=elements(dt),
        )
    )


def same_order(got, want):
    """Sorted values: NumPy's, where zeros of either sign count as one value (NumPy's sort is
    not stable for them: their signs may come in another order)."""
    if isinstance(want, type):
        assert got is want, (got, want)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert (g.shape, g.dtype) == (w.shape, w.dtype), (g.shape, g.dtype, w.shape, w.dtype)
    np.testing.assert_array_equal(g, w)


@FAST
@given(sortable_arrays(min_dims=0), st.sampled_from([None, -1, 0, 1, 2, -3]))
def test_sort_and_argsort_are_numpys_nans_last_positions_stable(a, axis):
    x = vmnp.asarray(a)
    same_order(outcome(lambda: vmnp.sort(x, axis)), outcome(lambda: np.sort(a, axis)))
    same_bits(outcome(lambda: vmnp.argsort(x, axis)), outcome(lambda: np.argsort(a, axis, kind="stable")))
    same_bits(outcome(lambda: x.argsort(axis, kind="stable")), outcome(lambda: a.argsort(axis, kind="stable")))


@FAST
@given(sortable_arrays(min_dims=2, max_dims=2), st.sampled_from([-1, 0]))
def test_sort_in_place_writes_the_array_and_its_views_base(a, axis):
    want, x = a.copy(), vmnp.asarray(a)
    want[:, ::2].sort(axis)
    x[:, ::2].sort(axis)
    same_order(x, want)


def test_sort_errors_are_numpys():
    a = np.arange(6.0).reshape(2, 3)
    x = vmnp.asarray(a)
    for call in [
        lambda m: m.sort(a if m is np else x, kind="foo"),
        lambda m: m.sort(a if m is np else x, kind="stable", stable=True),
        lambda m: m.sort(a if m is np else x, axis=2),
        lambda m: m.sort(a if m is np else x, axis=1.0),
        lambda m: m.sort((a if m is np else x)[0, 0]),
        lambda m: (a if m is np else x).sort(axis=None),
        lambda m: m.argsort(np.array(5.0) if m is np else vmnp.asarray(np.array(5.0))),
        lambda m: m.median(a if m is np else x, axis=(0, 0)),
        lambda m: m.quantile(a if m is np else x, 0.5, axis=(1, -1)),
        lambda m: m.percentile(a if m is np else x, 50, axis=(0, 2)),
    ]:
        same_bits(outcome(lambda call=call: call(vmnp)), outcome(lambda call=call: call(np)))
    with pytest.raises(ValueError, match="read-only"):
        vmnp.broadcast_to(x, (4, 2, 3)).sort()


@FAST
@given(
    sortable_arrays(min_dims=1, max_dims=3).filter(lambda a: a.size > 0 and a.dtype != np.bool_),
    st.sampled_from([None, 0, -1, (0, -1)]),
    st.sampled_from([0.0, 0.25, 0.3, 0.5, 0.75, 1.0, 0, 1, np.float64(0.3), [0.1, 0.5, 0.9], [0, 1]]),
    st.booleans(),
)
def test_median_quantile_and_percentile_are_numpys_exactly(a, axis, q, keepdims):
    assume(axis is None or a.ndim >= 2 or axis in (0, -1))
    # Exact but for the sign of a zero: NumPy's partition leaves zeros of both signs in an
    # order of its own.
    x = vmnp.asarray(a)
    with np.errstate(all="ignore"):
        same_order(
            outcome(lambda: vmnp.median(x, axis, keepdims=keepdims)),
            outcome(lambda: np.median(a, axis, keepdims=keepdims)),
        )
        same_order(
            outcome(lambda: vmnp.quantile(x, q, axis, keepdims=keepdims)),
            outcome(lambda: np.quantile(a, q, axis, keepdims=keepdims)),
        )
        pct = np.multiply(q, 100).tolist()
        same_order(outcome(lambda: vmnp.percentile(x, pct, axis)), outcome(lambda: np.percentile(a, pct, axis)))


@FAST
@given(sortable_arrays(min_dims=0, max_dims=2), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_unique_and_its_indices_inverse_and_counts_are_numpys(a, index, inverse, counts, equal_nan):
    x = vmnp.asarray(a)
    kwargs = {"return_index": index, "return_inverse": inverse, "return_counts": counts, "equal_nan": equal_nan}
    want = outcome(lambda: np.unique(a, **kwargs))
    got = outcome(lambda: vmnp.unique(x, **kwargs))
    if not isinstance(want, tuple):
        want, got = (want,), (got,)
    assert len(got) == len(want)
    same_order(got[0], want[0])
    names = [name for name, on in (("index", index), ("inverse", inverse), ("counts", counts)) if on]
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    for name, g, w in zip(names, got[1:], want[1:], strict=True):
        if name == "inverse" and not equal_nan and nan.sum() > 1:
            # Each NaN is a value of its own, and NumPy numbers them in the order of its unstable
            # sort: any numbering of them is right, the rest NumPy's.
            g = np.asarray(g)
            assert (g.shape, g.dtype) == (w.shape, w.dtype)
            same_bits(g[~nan], w[~nan])
            assert sorted(g[nan].tolist()) == sorted(w[nan].tolist()), (g, w)
        else:
            same_bits(g, w)


# ---------------------------------------------------------------------------- searching


@FAST
@given(
    sortable_arrays(min_dims=1, max_dims=1, max_side=10),
    sortable_arrays(min_dims=0, max_dims=2),
    st.sampled_from(["left", "right"]),
    st.sampled_from(["sorted", "as drawn", "sorter"]),
)
def test_searchsorted_gives_numpys_positions_sorted_or_not(a, keys, side, how):
    # Unsorted values too: NumPy's binary search step for step gives its positions.
    if how == "sorted":
        a = np.sort(a)
    sorter = np.argsort(a, kind="stable") if how == "sorter" else None
    key = keys[()] if keys.ndim == 0 else keys  # a NumPy scalar for 0-d keys
    want = outcome(lambda: np.searchsorted(a, key, side=side, sorter=sorter))
    got = outcome(
        lambda: vmnp.searchsorted(vmnp.asarray(a), key if keys.ndim == 0 else vmnp.asarray(keys), side, sorter)
    )
    same_bits(got, want)
    assert isinstance(got, vmnp.ndarray) == isinstance(want, np.ndarray), (type(got), type(want))
    same_bits(outcome(lambda: vmnp.asarray(a).searchsorted(key, side)), outcome(lambda: a.searchsorted(key, side)))


def test_searchsorted_promotes_and_errs_as_numpy():
    a = np.array([0.1, 0.5, 1.0], np.float32)
    ints = np.array([1, 5, 9], np.int8)
    for call in [
        lambda m, x: m.searchsorted(x(a), 0.1, "right"),  # in float64: 0.1 is below float32's 0.1
        lambda m, x: m.searchsorted(x(ints), 300),
        lambda m, x: m.searchsorted(x(ints), [2.5, -1.5]),
        lambda m, x: m.searchsorted(x(a), True),
        lambda m, x: m.searchsorted(x(a), 0.5, side="L"),
        lambda m, x: m.searchsorted(x(a), 0.5, side="x"),
        lambda m, x: m.searchsorted(x(a), 0.5, side=None),
        lambda m, x: m.searchsorted(x(a).reshape(3, 1), 0.5),
        lambda m, x: m.searchsorted(x(a)[0], 0.5),
        lambda m, x: m.searchsorted(x(a), 0.5, sorter=[0, 1]),
        lambda m, x: m.searchsorted(x(a), 0.5, sorter=[0.0, 1, 2]),
        lambda m, x: m.searchsorted(x(a), 0.5, sorter=[[0, 1, 2]]),
        lambda m, x: m.searchsorted(x(a), 0.5, sorter=[2, 1, 0]),
        lambda m, x: m.searchsorted(x(np.zeros(0)), [1.0, 2.0]),
    ]:
        same_bits(outcome(lambda call=call: call(vmnp, vmnp.asarray)), outcome(lambda call=call: call(np, np.asarray)))


FINITE = [v for v in SPECIAL if not np.isnan(v)]


@FAST
@given(
    st.lists(st.sampled_from(FINITE), min_size=1, max_size=7).map(sorted),
    st.lists(st.sampled_from([*SPECIAL, 0.25, -1.7, 2.0, 10.0]), max_size=12),
    st.data(),
    st.sampled_from([None, -9.0, np.nan]),
    st.sampled_from([None, 4.5]),
)
def test_interp_is_numpys_bit_for_bit(xp, x, data, left, right):
    fp = data.draw(st.lists(st.sampled_from(SPECIAL), min_size=len(xp), max_size=len(xp)))
    xp, fp, x = np.array(xp), np.array(fp), np.array(x)
    want = outcome(lambda: np.interp(x, xp, fp, left, right))
    same_bits(outcome(lambda: vmnp.interp(vmnp.asarray(x), vmnp.asarray(xp), vmnp.asarray(fp), left, right)), want)
    for k in range(min(len(x), 3)):  # a scalar x gives NumPy's float64 scalar
        want = np.interp(x[k], xp, fp, left, right)
        got = vmnp.interp(x[k], vmnp.asarray(xp), fp, left, right)
        assert type(got) is type(want)
        same_bits(got, want)


def test_interp_errors_are_numpys():
    for args in [([1.0], [], []), ([1.0], [1.0, 2.0], [1.0]), ([1.0], 1.0, 1.0), ([1.0], [[1.0, 2.0]], [1.0, 2.0])]:
        want = outcome(lambda args=args: np.interp(*args))
        same_bits(outcome(lambda args=args: vmnp.interp(*(vmnp.asarray(np.array(t)) for t in args))), want)


@FAST
@given(
    sortable_arrays(min_dims=0, max_dims=2),
    st.lists(st.sampled_from(FINITE), max_size=6).map(sorted),
    st.booleans(),
    st.booleans(),
)
def test_digitize_is_numpys(x, bins, right, decreasing):
    bins = bins[::-1] if decreasing else bins
    want = outcome(lambda: np.digitize(x, bins, right))
    got = outcome(lambda: vmnp.digitize(vmnp.asarray(x), vmnp.asarray(np.array(bins)), right))
    same_bits(got, want)
    # Bins in any order, NaNs among them: NumPy's monotonicity check decides.
    shuffled = [*bins[1::2], *bins[::2], np.nan][: len(bins)]
    want = outcome(lambda: np.digitize(x, shuffled, right))
    same_bits(outcome(lambda: vmnp.digitize(vmnp.asarray(x), shuffled, right)), want)
    with pytest.raises(ValueError, match="monotonically"):
        vmnp.digitize(vmnp.asarray(x), [1.0, 3.0, 2.0])


@FAST
@given(
    sortable_arrays(min_dims=0, max_dims=2).filter(lambda a: a.dtype != np.bool_),
    st.lists(st.sampled_from([-np.inf, -3.0, -0.0, 0.0, 0.5, 2.0, 7.0, np.inf]), max_size=6).map(sorted),
    st.booleans(),
)
def test_histogram_with_edges_is_numpys(a, edges, density):
    want = outcome(lambda: np.histogram(a, edges, density=density))
    got = outcome(lambda: vmnp.histogram(vmnp.asarray(a), edges, density=density))
    if isinstance(want, type):
        same_bits(got, want)
        return
    same_bits(got[0], want[0])
    same_bits(got[1], want[1])
    for bad in ([[0.0, 1.0]], [2.0, 1.0]):
        same_bits(
            outcome(lambda bad=bad: vmnp.histogram(vmnp.asarray(a), bad)), outcome(lambda bad=bad: np.histogram(a, bad))
        )


def partitioned(got, a, kth, axis):
    """``got`` partitions ``a`` along ``axis`` around every ``kth``: a permutation of each line
    with NumPy's value at each ``kth``, nothing after it smaller and nothing before it larger
    (NaNs last)."""
    want = np.partition(a, kth, axis)
    g = np.asarray(got)
    assert (g.shape, g.dtype) == (want.shape, want.dtype)
    same_order(np.sort(g, axis), np.sort(a, axis))
    line = -1 if axis is None else axis
    g, w = (g, want) if axis is not None else (g.ravel(), want.ravel())
    for k in np.atleast_1d(kth):
        same_order(np.take(g, [k], line), np.take(w, [k], line))


@FAST
@given(
    sortable_arrays(min_dims=1, max_dims=2).filter(lambda a: a.shape[-1] > 0),
    st.data(),
    st.sampled_from([-1, 0, None]),
)
def test_partition_and_argpartition_partition_around_numpys_kth(a, data, axis):
    n = a.size if axis is None else a.shape[axis]
    assume(n > 0)
    kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(0, n - 1), min_size=1, max_size=3)))
    x = vmnp.asarray(a)
    partitioned(vmnp.partition(x, kth, axis), a, kth, axis)
    positions = np.asarray(vmnp.argpartition(x, kth, axis))
    partitioned(
        np.take_along_axis(a if axis is not None else a.ravel(), positions, -1 if axis is None else axis), a, kth, axis
    )
    if axis is not None:
        x.partition(kth, axis)
        partitioned(x, a, kth, axis)


def test_partition_errors_are_numpys():
    a = np.array([3.0, 1.0, 2.0])
    for call in [
        lambda m, x: m.partition(x(a), 5),
        lambda m, x: m.partition(x(a), -4),
        lambda m, x: m.partition(x(a), True),
        lambda m, x: m.partition(x(a), 1, kind="quick"),
        lambda m, x: m.partition(x(np.array(5.0)), 0),
        lambda m, x: m.partition(x(a), 1.0),
        lambda m, x: m.partition(x(a), []),
        lambda m, x: m.argpartition(x(np.array(5.0)), 0),
        lambda m, x: m.partition(x(np.zeros((2, 0))), 1, axis=1),
        lambda m, x: m.partition(x(np.zeros((2, 3))), 1, kind="x", axis=7),
        lambda m, x: m.partition(x(np.zeros((2, 3))), 9, axis=7),
        lambda m, x: m.partition(x(a), [1, 5]),
        lambda m, x: x(np.arange(6.0).reshape(2, 3)).partition(1, axis=None),
    ]:
        same_bits(outcome(lambda call=call: call(vmnp, vmnp.asarray)), outcome(lambda call=call: call(np, np.asarray)))


# ---------------------------------------------------------------------------- sets


@FAST
@given(sortable_arrays(min_dims=0, max_dims=2), sortable_arrays(min_dims=0, max_dims=2), st.booleans())
def test_isin_is_numpys(element, test_elements, invert):
    want = outcome(lambda: np.isin(element, test_elements, invert=invert))
    got = outcome(lambda: vmnp.isin(vmnp.asarray(element), vmnp.asarray(test_elements), invert=invert))
    same_bits(got, want)
    assert isinstance(got, vmnp.ndarray)


@FAST
@given(sortable_arrays(min_dims=0, max_dims=2), sortable_arrays(min_dims=0, max_dims=2), st.booleans())
def test_set_routines_are_numpys(a, b, assume_unique):
    x, y = vmnp.asarray(a), vmnp.asarray(b)
    same_order(outcome(lambda: vmnp.union1d(x, y)), outcome(lambda: np.union1d(a, b)))
    same_order(outcome(lambda: vmnp.setxor1d(x, y)), outcome(lambda: np.setxor1d(a, b)))
    same_order(outcome(lambda: vmnp.setdiff1d(x, y)), outcome(lambda: np.setdiff1d(a, b)))
    same_order(outcome(lambda: vmnp.intersect1d(x, y)), outcome(lambda: np.intersect1d(a, b)))
    got, want = vmnp.intersect1d(x, y, return_indices=True), np.intersect1d(a, b, return_indices=True)
    same_order(got[0], want[0])
    same_bits(got[1], want[1])
    same_bits(got[2], want[2])
    if assume_unique:
        ua, ub = np.unique(a), np.unique(b)
        same_order(vmnp.setdiff1d(vmnp.asarray(ua), vmnp.asarray(ub), True), np.setdiff1d(ua, ub, True))
        same_order(vmnp.setxor1d(vmnp.asarray(ua), vmnp.asarray(ub), True), np.setxor1d(ua, ub, True))


def test_isin_kinds_and_errors_are_numpys():
    for call in [
        lambda m, x: m.isin(x(np.array([1.0, 2.0])), [1], kind="table"),
        lambda m, x: m.isin(x(np.array([1, 2])), [2], kind="table"),
        lambda m, x: m.isin(x(np.array([1, 2])), 2, kind="sort"),
        lambda m, x: m.isin(x(np.array([1, 2])), [2], kind="x"),
        lambda m, x: m.isin(x(np.array(2)), [1, 2]),
    ]:
        same_bits(outcome(lambda call=call: call(vmnp, vmnp.asarray)), outcome(lambda call=call: call(np, np.asarray)))


# ---------------------------------------------------------------------------- written as NumPy writes them


@FAST
@given(
    st.lists(st.integers(0, 4), min_size=0, max_size=3),
    st.one_of(st.integers(-3, 70), st.lists(st.integers(-1, 70), min_size=1, max_size=5)),
    st.sampled_from(["C", "F"]),
)
def test_unravel_index_is_numpys(shape, indices, order):
    want = outcome(lambda: np.unravel_index(np.array(indices) if isinstance(indices, list) else indices, shape, order))
    got = outcome(
        lambda: vmnp.unravel_index(vmnp.asarray(indices) if isinstance(indices, list) else indices, shape, order)
    )
    if isinstance(want, type):
        assert got is want, (got, want)
        return
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        same_bits(g, w)
        assert isinstance(g, vmnp.ndarray) == isinstance(w, np.ndarray), (type(g), type(w))


@FAST
@given(
    arrays(["int8", "int64", "float32", "float64"], min_dims=0, max_dims=2),
    st.lists(st.sampled_from([0, 1, -2, 2.5, np.float32(0.5), np.int16(3)]), max_size=4),
)
def test_polyval_is_numpys(x, p):
    want = outcome(lambda: np.polyval(p, x))
    got = outcome(lambda: vmnp.polyval(p, vmnp.asarray(x)))
    same_bits(got, want)
    assert isinstance(got, vmnp.ndarray) == isinstance(want, np.ndarray), (type(got), type(want))


@FAST
@given(
    sortable_arrays(min_dims=0, max_dims=2),
    st.sampled_from([(0.0, None, None), (-1.0, 9.0, -9.0), (1e300, 1e300, None)]),
)
def test_nan_to_num_is_numpys(a, values):
    nan, posinf, neginf = values
    want = outcome(lambda: np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf))
    x = vmnp.asarray(a)
    got = outcome(lambda: vmnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf))
    same_bits(got, want)
    if a.ndim and a.dtype.kind == "f":
        assert vmnp.nan_to_num(x, copy=False, nan=nan, posinf=posinf, neginf=neginf) is x
        same_bits(x, want)


@FAST
@given(st.lists(sortable_arrays(min_dims=1, max_dims=1, max_side=6), min_size=1, max_size=3))
def test_lexsort_is_numpys(keys):
    n = keys[0].shape[0]
    keys = [k[:n] for k in keys if k.shape[0] >= n]  # one length
    want = outcome(lambda: np.lexsort(keys))
    same_bits(outcome(lambda: vmnp.lexsort([vmnp.asarray(k) for k in keys])), want)
    same_bits(outcome(lambda: vmnp.lexsort(tuple(keys))), want)
    if len({k.dtype for k in keys}) == 1:
        stacked = np.stack(keys)
        same_bits(outcome(lambda: vmnp.lexsort(vmnp.asarray(stacked))), outcome(lambda: np.lexsort(stacked)))
    for call in [lambda m: m.lexsort([]), lambda m: m.lexsort((np.zeros(2), np.zeros(3)))]:
        same_bits(outcome(lambda call=call: call(vmnp)), outcome(lambda call=call: call(np)))
