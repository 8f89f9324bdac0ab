"""Comparisons of whole arrays and dtype queries."""

import numpy as _np

from . import asarray, ndarray


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Element-wise ``|a - b| <= atol + rtol * |b|`` for finite ``b``, or ``a == b`` (NumPy's
    definition: an infinity is close only to itself)."""
    from . import absolute, isfinite, isnan, logical_and, where

    a, b = asarray(a), asarray(b)
    a = a.astype("float64") if a.dtype.kind in "biu" else a
    b = b.astype("float64") if b.dtype.kind in "biu" else b
    close = (absolute(a - b) <= atol + rtol * absolute(b)) & isfinite(b)
    close = close | (a == b)
    if equal_nan:
        close = close | logical_and(isnan(a), isnan(b))
    return where(close, True, False)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is ``isclose``."""
    return bool(isclose(a, b, rtol, atol, equal_nan).all())


def array_equal(a1, a2, equal_nan=False):
    """True when the shapes and all elements are equal."""
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return False
    if equal_nan:
        from . import isnan

        return bool(((a1 == a2) | (isnan(a1) & isnan(a2))).all())
    return bool((a1 == a2).all())


def isscalar(element):
    """True for Python and NumPy scalars, and for 0-d arrays: they stand for NumPy's scalar
    results (``x.sum()``, ``x[3]``), whose ``isscalar`` is True."""
    return element.ndim == 0 if isinstance(element, ndarray) else _np.isscalar(element)


def result_type(*arrays_and_dtypes):
    """The dtype NumPy's promotion gives the arguments."""
    args = [a.dtype if isinstance(a, ndarray) else a for a in arrays_and_dtypes]
    return _np.result_type(*args)
