"""``numpy.linalg`` functions that run on the VM, against NumPy on generated inputs: results
within rounding of NumPy's (LAPACK's order of operations is not the VM's), dtypes and shapes
exactly, and NumPy's errors for input they reject. The suite runs with ``VMNP_FALLBACK=error``,
so a function that went to NumPy instead fails here."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vmnp

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def positive_definite(draw):
    """A stack of symmetric positive definite matrices, ``m @ m.T + n * I`` of random ``m``,
    in float32, float64 or int64, with garbage above the diagonal where ``upper`` is not read."""
    n = draw(st.integers(0, 7))
    stack = draw(st.lists(st.integers(1, 3), max_size=2))
    dtype = draw(st.sampled_from(["float32", "float64", "int64"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    m = rng.integers(-4, 5, (*stack, n, n)).astype("float64")
    a = m @ np.swapaxes(m, -1, -2) + n * np.eye(n)
    return a.astype(dtype)


@FAST
@given(positive_definite(), st.booleans(), st.booleans())
def test_cholesky_agrees_with_numpy(a, upper, garbage):
    """The factor of each matrix, lower or upper, read from its own triangle only."""
    if garbage and a.shape[-1] > 1:
        # The triangle not read may hold anything.
        rows, cols = np.triu_indices(a.shape[-1], 1) if not upper else np.tril_indices(a.shape[-1], -1)
        a = a.copy()
        a[..., rows, cols] = 1e6
    want = np.linalg.cholesky(a, upper=upper)
    got = np.linalg.cholesky(vmnp.asarray(a), upper=upper)
    assert isinstance(got, vmnp.ndarray)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-4 if a.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0))))
    # The zero triangle is exactly zero.
    mask = np.tril(np.ones(a.shape[-2:], bool), -1) if upper else np.triu(np.ones(a.shape[-2:], bool), 1)
    assert not got[..., mask].any()


def errors(a, function=np.linalg.cholesky):
    """(type, message) of what NumPy's and vmnp's ``function`` raise for ``a``."""
    raised = []
    for x in (a, vmnp.asarray(a)):
        with pytest.raises(np.linalg.LinAlgError) as e:
            function(x)
        raised.append((type(e.value), str(e.value)))
    return raised


@pytest.mark.parametrize(
    "a",
    [
        np.array([[1.0, 2.0], [2.0, 1.0]]),  # indefinite
        np.array([[0.0, 0.0], [0.0, 0.0]]),  # singular
        np.array([[[4.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]]),  # the second of a stack
        np.array([1.0, 2.0]),  # one dimension
        np.ones((2, 3)),  # not square
    ],
)
def test_cholesky_errors_as_numpy(a):
    want, got = errors(a)
    assert got == want


def test_cholesky_of_nan_and_inf_as_numpy(monkeypatch):
    """Matrices holding NaN or infinities that the VM does not factorise go to NumPy, whose
    LAPACK carries them through (and does not raise)."""
    monkeypatch.setenv("VMNP_FALLBACK", "")
    for a in ([[np.nan, 0.0], [0.0, 1.0]], [[1.0, 0.0], [np.nan, 1.0]], [[np.inf, 0.0], [0.0, 1.0]]):
        a = np.array(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", vmnp.FallbackWarning)
            got = np.asarray(np.linalg.cholesky(vmnp.asarray(a)))
        np.testing.assert_array_equal(got, np.linalg.cholesky(a))


def test_cholesky_upper_reads_the_upper_triangle():
    """``upper`` factorises the matrix the upper triangle holds: an indefinite lower triangle
    is not read."""
    a = np.array([[4.0, 2.0], [-9.0, 5.0]])
    np.testing.assert_allclose(np.asarray(np.linalg.cholesky(vmnp.asarray(a), upper=True)), [[2.0, 1.0], [0.0, 2.0]])
    want, got = errors(a)  # the lower triangle is indefinite
    assert got == want


@st.composite
def systems(draw):
    """A stack of well-conditioned matrices (diagonally dominant, random signs, so that partial
    pivoting exchanges rows) and right-hand sides of a shape ``linalg.solve`` takes: a vector,
    or a stack of ``k`` columns whose stack dimensions broadcast against the matrices'."""
    n = draw(st.integers(1, 6))
    stack = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(-5, 6, (*stack, n, n)).astype("float64")
    a += np.eye(n) * rng.choice([-1, 1], n) * (5 * n + 1)
    a = a[..., rng.permutation(n), :]  # the large entries off the diagonal
    dtype = draw(st.sampled_from(["float32", "float64", "int64"]))
    if draw(st.booleans()):
        b = rng.integers(-9, 10, n)
    else:
        b_stack = stack[len(stack) - draw(st.integers(0, len(stack))) :]
        b = rng.integers(-9, 10, (*b_stack, n, draw(st.integers(1, 3))))
    return a.astype(dtype), b.astype(draw(st.sampled_from([dtype, "float64"])))


def close(got, want):
    assert isinstance(got, (vmnp.ndarray, np.generic)), type(got)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    tol = 1e-4 if want.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0))))


@FAST
@given(systems())
def test_solve_inv_det_agree_with_numpy(system):
    a, b = system
    va, vb = vmnp.asarray(a), vmnp.asarray(b)
    close(np.linalg.solve(va, vb), np.linalg.solve(a, b))
    close(np.linalg.inv(va), np.linalg.inv(a))
    want = np.linalg.det(a)
    got = np.linalg.det(va)
    if a.ndim == 2:
        assert isinstance(got, np.generic) and not isinstance(got, np.ndarray)
    close(got, np.asarray(want))
    want, got = np.linalg.slogdet(a), np.linalg.slogdet(va)
    assert type(got) is type(want)
    close(got.sign, np.asarray(want.sign))
    close(got.logabsdet, np.asarray(want.logabsdet))


@pytest.mark.parametrize(
    "a",
    [
        np.array([[1.0, 2.0], [2.0, 4.0]]),  # singular
        np.zeros((3, 3)),
        np.array([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]]),  # the second of a stack
        np.array([1.0, 2.0]),  # one dimension
        np.ones((2, 3)),  # not square
    ],
)
def test_solve_and_inv_errors_as_numpy(a):
    for function in (np.linalg.inv, lambda x: np.linalg.solve(x, np.ones(x.shape[-1]))):
        want, got = errors(a, function)
        assert got == want


def test_det_and_slogdet_of_singular_and_empty_matrices():
    for a in (np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((2, 0, 0)), np.ones((0, 3, 3))):
        want = np.linalg.det(a)
        got = np.linalg.det(vmnp.asarray(a))
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        for got, want in zip(np.linalg.slogdet(vmnp.asarray(a)), np.linalg.slogdet(a), strict=True):
            np.testing.assert_array_equal(np.asarray(got), want)


@FAST
@given(
    st.integers(1, 4),
    st.lists(st.integers(1, 2), max_size=1),
    st.integers(-3, 9),
    st.sampled_from(["int64", "float64"]),
)
def test_matrix_power_agrees_with_numpy(m, stack, n, dtype):
    rng = np.random.default_rng(m * 100 + n)
    a = rng.integers(-2, 3, (*stack, m, m)).astype(dtype)
    if n < 0:
        a = (a + np.eye(m) * (3 * m + 1)).astype("float64")  # invertible
    want = np.linalg.matrix_power(a, n)
    got = np.linalg.matrix_power(vmnp.asarray(a), n)
    if a.dtype.kind == "i":
        assert isinstance(got, vmnp.ndarray) and np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
    else:
        close(got, want)


def test_matrix_power_errors_as_numpy():
    for a, n, error in ((np.ones(3), 2, np.linalg.LinAlgError), (np.ones((2, 2)), 1.5, TypeError)):
        raised = []
        for x in (a, vmnp.asarray(a)):
            with pytest.raises(error) as e:
                np.linalg.matrix_power(x, n)
            raised.append(str(e.value))
        assert raised[0] == raised[1]
