"""Functions of ``numpy.linalg`` that run on the VM when called on vmnp arrays (NumPy's
``__array_function__`` protocol hands them here); the rest of ``numpy.linalg`` is NumPy's,
through the fallback."""

import operator as _operator

import numpy as _np

import vmnp as _v


def _axes(axis, ndim):
    """``axis`` as a tuple of normalised axes (every axis for None)."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (_operator.index(axis),)
    norm = tuple(x % ndim if -ndim <= x < ndim else None for x in axes)
    if None in norm:
        raise _np.exceptions.AxisError(axes[norm.index(None)], ndim)
    if len(set(norm)) != len(norm):
        raise ValueError("Duplicate axes given.")
    return norm


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 (NumPy's name)
    """Vector norms (any ``ord``) along one axis and the Frobenius norm of matrices, as
    ``numpy.linalg.norm`` computes them; matrix norms of other orders (2, 'nuc', 1, inf) are
    NumPy's, through the fallback."""
    x = _v.asarray(x)
    if x.dtype.kind not in "biuf":
        raise _v._UnsupportedDType(f"vmnp does not support dtype {x.dtype}")
    if x.dtype.kind != "f":
        x = x.astype("float64")
    axes = _axes(axis, x.ndim)
    # No ord and no axis: the 2-norm of all elements, whatever the dimensions (NumPy's).
    vector = len(axes) == 1 or (ord is None and axis is None)
    if len(axes) == 2 and ord in (None, "fro", "f"):
        vector, ord = True, None
    if not vector or isinstance(ord, str):
        raise _v._UnsupportedDType("a matrix norm of this order")
    if ord is None and axis is None and not keepdims:
        # NumPy's: the square root of the flattened array's dot product with itself.
        flat = x.ravel()
        return _v.sqrt(flat.dot(flat))
    a = _v.absolute(x) if ord not in (None, 2, 0) else None
    if ord is None or ord == 2:
        r = _v.sqrt(_v.sum(x * x, axis=axes, keepdims=keepdims))
    elif ord == _np.inf:
        r = _v.max(a, axis=axes, keepdims=keepdims)
    elif ord == -_np.inf:
        r = _v.min(a, axis=axes, keepdims=keepdims)
    elif ord == 0:
        r = _v.sum(x != 0, axis=axes, keepdims=keepdims).astype(x.dtype)
    elif ord == 1:
        r = _v.sum(a, axis=axes, keepdims=keepdims)
    else:
        p = float(ord)
        r = _v.sum(a**p, axis=axes, keepdims=keepdims) ** (1.0 / p)
    return r


#: ``numpy.linalg`` functions vmnp computes, by name.
FUNCTIONS = {"norm": norm}
