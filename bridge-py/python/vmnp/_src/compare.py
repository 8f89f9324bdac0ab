"""Comparisons of whole arrays and dtype queries."""

import numpy as _np

from .._vmnp import ndarray
from .convert import asarray
from .public import export
from .ufunc import absolute, isfinite, isnan, less_equal


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Element-wise ``|a - b| <= atol + rtol * |b|`` for finite ``b``, or ``a == b`` (NumPy's
    definition: an infinity is close only to itself), computed as NumPy computes it: Python
    numbers stay weak (a float32 array is compared in float32), an array ``b`` is made inexact
    (``result_type(b, 1.0)``), ``a`` is not cast."""
    x, y, atol, rtol = (v if isinstance(v, (int, float)) else asarray(v) for v in (a, b, atol, rtol))
    if hasattr(y, "dtype"):
        y = asarray(y, _np.result_type(y.dtype, 1.0))
    elif isinstance(y, int):
        y = float(y)
    result = less_equal(absolute(x - y), atol + rtol * absolute(y)) & isfinite(y) | (x == y)
    if equal_nan:
        result = result | (isnan(x) & isnan(y))
    return result


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is ``isclose``."""
    return bool(isclose(a, b, rtol, atol, equal_nan).all())


def array_equal(a1, a2, equal_nan=False):
    """True when the shapes and all elements are equal."""
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return False
    if equal_nan:
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


# The public functions as programs call them (see ``public.export``).
export(globals())
