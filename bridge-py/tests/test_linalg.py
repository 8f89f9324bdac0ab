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


def errors(a, **kwargs):
    """(type, message) of what NumPy's and vmnp's ``linalg.cholesky`` raise for ``a``."""
    raised = []
    for x in (a, vmnp.asarray(a)):
        with pytest.raises(np.linalg.LinAlgError) as e:
            np.linalg.cholesky(x, **kwargs)
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
