"""NumPy functions written as NumPy writes them, on vmnp's arrays: ``unravel_index``,
``polyval``, ``nan_to_num``."""

import builtins as _b
import math as _math
import operator as _operator

import numpy as _np

from .._vmnp import ndarray
from .convert import array, asarray, asnumpy
from .creation import zeros_like
from .fallback import _fallback
from .manip import ndim, where
from .public import _foreign, export
from .ufunc import isnan


def unravel_index(indices, shape, order="C"):
    """The coordinates in an array of ``shape`` of each flat position in ``indices``: NumPy
    scalars for a number, arrays of ``indices``' shape otherwise (NumPy's bounds errors)."""
    dims = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    scalar = isinstance(indices, (int, _np.integer))
    flat = None if scalar else asarray(indices) if isinstance(indices, (ndarray, _np.ndarray)) else None
    plain = all(isinstance(n, (int, _np.integer)) and n >= 0 for n in dims) and order in ("C", "F")
    if not plain or not (scalar or (flat is not None and flat.dtype.kind in "iu")):
        return _fallback("unravel_index", _np.unravel_index, (indices, shape), {"order": order})
    dims = tuple(int(n) for n in dims)
    size = _math.prod(dims)
    walk = dims[::-1] if order == "C" else dims
    if scalar:
        i = _operator.index(indices)
        if not 0 <= i < size:
            raise ValueError(f"index {i} is out of bounds for array with size {size}")
        coords = []
        for n in walk:
            i, c = divmod(i, n)
            coords.append(_np.intp(c))
        return tuple(coords[::-1] if order == "C" else coords)
    if not dims and flat.ndim:
        raise ValueError("multiple indices are not supported for 0d arrays")
    if flat.size:
        low, high = int(flat.min()), int(flat.max())
        for i in (low, high):
            if not 0 <= i < size:
                raise ValueError(f"index {i} is out of bounds for array with size {size}")
    rest = flat.astype(_np.intp)
    coords = []
    for k, n in enumerate(walk):
        coords.append(rest % n if k + 1 < len(walk) else rest)
        rest = rest // n
    return tuple(coords[::-1] if order == "C" else coords)


def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's rule
    from zeros like ``x``, as NumPy evaluates it (NumPy scalars for a scalar ``x``)."""
    if isinstance(p, _np.poly1d) or isinstance(x, _np.poly1d) or _foreign(x):
        return _fallback("polyval", _np.polyval, (p, x), {})
    coefficients = asnumpy(p) if isinstance(p, ndarray) else _np.asarray(p)
    x = asarray(x)
    y = zeros_like(x)
    for c in coefficients:
        y = y * x + c
    # NumPy's arithmetic on 0-d arrays gives scalars: only when a coefficient was applied.
    return y[()] if ndim(y) == 0 and len(coefficients) else y


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaNs, infinities and negative infinities replaced (by ``nan``, the dtype's
    largest and smallest values, or those given); other dtypes as they are."""
    if _foreign(x):
        kwargs = {"copy": copy, "nan": nan, "posinf": posinf, "neginf": neginf}
        return _fallback("nan_to_num", _np.nan_to_num, (x,), kwargs)
    x = array(x, copy=copy)
    scalar = x.ndim == 0
    if x.dtype.kind == "f":
        info = _np.finfo(x.dtype)
        value = x.dtype.type
        big = value(info.max if posinf is None else posinf)
        small = value(info.min if neginf is None else neginf)
        x[...] = where(isnan(x), value(nan), where(x == _b.float("inf"), big, where(x == -_b.float("inf"), small, x)))
    return x[()] if scalar else x


# The public functions as programs call them (see ``public.export``).
export(globals())
