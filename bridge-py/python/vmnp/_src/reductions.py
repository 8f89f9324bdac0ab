"""Reductions (``sum``, ``mean``, ``var``, ``argmax``, ...), their NaN-ignoring forms, and the
positions of nonzero elements; ``nditer``."""

import builtins as _b
import math as _math
import operator as _operator
import warnings as _warnings

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from .convert import _to_numpy, asarray
from .creation import broadcast_to
from .dtypes import _dt, _dtype_name, bool_, float64
from .manip import expand_dims, stack
from .public import export
from .ufunc import _store, floor_divide, isnan, maximum, remainder, sqrt

# What a `where=` mask fills excluded elements with, per reduction; min and max have none, so
# NumPy asks for `initial` there.
_IDENTITY = {"sum": 0, "add": 0, "prod": 1, "multiply": 1, "any": False, "logical_or": False}
_IDENTITY.update({"all": True, "logical_and": True, "logical_xor": False, "bitwise_or": 0, "bitwise_xor": 0})
_NP_REDUCTION = {"sum": "add", "prod": "multiply", "min": "minimum", "max": "maximum", "any": "logical_or"}
_NP_REDUCTION["all"] = "logical_and"


def _axes(axis, ndim):
    """``axis`` (None, an int or a tuple) as a sorted tuple of axes in ``range(ndim)``."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for ax in axes:
        ax = _operator.index(ax)
        if not -ndim <= ax < ndim:
            raise _np.exceptions.AxisError(f"axis {ax} is out of bounds for array of dimension {ndim}")
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _reduced_shape(shape, axis, keepdims):
    axes = _axes(axis, len(shape))
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def _red(name, a, axis, dtype, out, keepdims, initial=None, where=True):
    """Reduction ``name`` of ``a``; ``where`` excludes elements (they count as the reduction's
    identity, or as ``initial``), ``initial`` starts every reduced group."""
    a = asarray(a)
    if where is not True:
        # Excluded elements count as the reduction's identity (min and max have none: `initial`
        # stands in for it).
        fill = _IDENTITY.get(name, initial)
        if fill is None:
            np_name = _NP_REDUCTION.get(name, name)
            raise ValueError(
                f"reduction operation '{np_name}' does not have an identity, so to use a where mask one "
                "has to specify 'initial'"
            )
        a = _vmnp._where(broadcast_to(asarray(where), a.shape), a, asarray(fill, _dtype_name(a.dtype)))
    r = _vmnp._reduce(name, a, axis, _b.bool(keepdims), _dt(dtype), True, initial)
    return _store(r, out)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Sum of elements over the given axes."""
    return _red("sum", a, axis, dtype, out, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """Product of elements over the given axes."""
    return _red("prod", a, axis, dtype, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Minimum over the given axes."""
    return _red("min", a, axis, None, out, keepdims, initial, where)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Maximum over the given axes."""
    return _red("max", a, axis, None, out, keepdims, initial, where)


amin, amax = min, max


def all(a, axis=None, out=None, keepdims=False, *, where=True):  # noqa: A001
    """True where every element along the axes is nonzero."""
    return _red("all", a, axis, None, out, keepdims, None, where)


def any(a, axis=None, out=None, keepdims=False, *, where=True):  # noqa: A001
    """True where some element along the axes is nonzero."""
    return _red("any", a, axis, None, out, keepdims, None, where)


def _nan_ignoring(name, a, axis, dtype, out, keepdims, initial, where):
    """``min`` or ``max`` skipping NaNs (NaN where a group is all NaN): ``fmin.reduce``,
    ``nanmin``."""
    a = asarray(a)
    if a.dtype.kind != "f":
        return _red(name, a, axis, dtype, out, keepdims, initial, where)
    nan = isnan(a)
    fill = _math.inf if name == "min" else -_math.inf
    r = _red(name, _vmnp._where(nan, fill, a), axis, dtype, None, keepdims, initial, where)
    if initial is None:
        r = _vmnp._where(_red("all", nan, axis, None, None, keepdims, None, where), _math.nan, r)
    return _store(r, out)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """Minimum over the given axes, ignoring NaNs."""
    return _nan_ignoring("min", a, axis, None, out, keepdims, initial, where)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """Maximum over the given axes, ignoring NaNs."""
    return _nan_ignoring("max", a, axis, None, out, keepdims, initial, where)


def _not_nan(a, where):
    """``where`` without the NaNs of ``a``."""
    a = asarray(a)
    if a.dtype.kind != "f":
        return where
    keep = ~isnan(a)
    return keep if where is True else keep & asarray(where, "bool")


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """Sum over the given axes, NaNs counting as zero."""
    return _red("sum", a, axis, dtype, out, keepdims, initial, _not_nan(a, where))


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """Product over the given axes, NaNs counting as one."""
    return _red("prod", a, axis, dtype, out, keepdims, initial, _not_nan(a, where))


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Mean over the given axes of the elements that are not NaN."""
    return mean(a, axis, dtype, out, keepdims, where=_not_nan(a, where))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Variance over the given axes of the elements that are not NaN."""
    return var(a, axis, dtype, out, ddof, keepdims, where=_not_nan(a, where), mean=mean, correction=correction)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Standard deviation over the given axes of the elements that are not NaN."""
    return std(a, axis, dtype, out, ddof, keepdims, where=_not_nan(a, where), mean=mean, correction=correction)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted mean over the given axes (the mean without ``weights``)."""
    a = asarray(a)
    if weights is None:
        r = mean(a, axis, keepdims=keepdims)
        if r.size == 0:  # NumPy divides the sizes (``a.size / avg.size``) to scale the count
            raise ZeroDivisionError("division by zero")
        n = _count(a, axis, keepdims)
        return (r, r * 0 + n) if returned else r
    w = asarray(weights)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1 or not isinstance(axis, int) or w.shape[0] != a.shape[axis]:
            raise ValueError("Axis must be specified when shapes of a and weights differ.")
        w = w.reshape((-1,) + (1,) * (a.ndim - _operator.index(axis) % a.ndim - 1))
        w = broadcast_to(w, a.shape)
    total = sum(w, axis, _float_dtype(w, None), None, keepdims)
    if _np.bool(any(total == 0.0)):  # NumPy's check, on the weights' sums (it runs what they depend on)
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    r = sum(a * w, axis, None, None, keepdims) / total
    return (r, broadcast_to(total, r.shape)) if returned else r


def divmod(x1, x2, *outs, out=None):  # noqa: A001 (NumPy's name)
    """``(x1 // x2, x1 % x2)``, into ``out`` (or the positional outputs) when given."""
    if outs:
        if out is not None:
            raise TypeError("cannot specify 'out' as both a positional and keyword argument")
        out = outs
    q_out, r_out = (None, None) if out is None else out
    return floor_divide(x1, x2, out=q_out), remainder(x1, x2, out=r_out)


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (maximum minus minimum) over the given axes."""
    return _store(max(a, axis, None, keepdims) - min(a, axis, None, keepdims), out)


def _count(a, axis, keepdims=False, where=True):
    """Elements per reduced group (a number, or an int64 array with a ``where`` mask)."""
    if where is not True:
        mask = broadcast_to(asarray(where, "bool"), a.shape)
        return _vmnp._reduce("sum", mask, axis, _b.bool(keepdims), "int64")
    if axis is None:
        return a.size
    n = 1
    for ax in _axes(axis, a.ndim):
        n *= a.shape[ax]
    return n


def _float_dtype(a, dtype):
    return float64 if dtype is None and a.dtype.kind in "biu" else dtype


def _per_count(s, n):
    """``s / n`` in ``s``'s float dtype (``n`` a count, or an int64 array of counts)."""
    if isinstance(n, ndarray):
        n = n.astype(_dtype_name(s.dtype) if s.dtype.kind == "f" else "float64")
    return s / n


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Arithmetic mean over the given axes (integers average in float64; an integer ``dtype``
    truncates the mean, as NumPy's)."""
    a = asarray(a)
    s = _red("sum", a, axis, _float_dtype(a, dtype), None, keepdims, None, where)
    n = _count(a, axis, keepdims, where)
    if not isinstance(n, ndarray) and n == 0:
        _warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)  # NumPy's
    r = _per_count(s, n)
    if dtype is not None and _dt(dtype) != _dtype_name(r.dtype):
        r = r.astype(_dt(dtype))
    return _store(r, out)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Variance over the given axes: the mean of squared deviations, over ``n - ddof``."""
    a = asarray(a)
    if correction is not None:
        ddof = correction
    dtype = _float_dtype(a, dtype)
    if mean is None:
        m = _per_count(_red("sum", a, axis, dtype, None, True, None, where), _count(a, axis, True, where))
    else:
        m = asarray(mean)
    d = a - m
    s = _red("sum", d * d, axis, dtype, None, keepdims, None, where)
    n = _count(a, axis, keepdims, where)
    if not isinstance(n, ndarray) and ddof >= n:
        _warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)  # NumPy's
    return _store(_per_count(s, maximum(n - ddof, 0) if isinstance(n, ndarray) else _b.max(n - ddof, 0)), out)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Standard deviation over the given axes."""
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _store(sqrt(v), out)


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sum along ``axis`` (None: over the flattened array)."""
    a = asarray(a)
    return _store(_vmnp._accumulate("cumsum", a, axis, _dt(dtype)), out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Running product along ``axis`` (None: over the flattened array)."""
    a = asarray(a)
    return _store(_vmnp._accumulate("cumprod", a, axis, _dt(dtype)), out)


def _arg(name, a, axis, out, keepdims):
    a = asarray(a)
    if axis is None:
        r = _vmnp._argreduce(name, a.reshape(-1), 0)
        if keepdims:
            r = r.reshape((1,) * a.ndim)
    else:
        r = _vmnp._argreduce(name, a, axis)
        _vmnp._set_bounds(r, 0, _b.max(a.shape[axis] - 1, 0))  # positions along the axis
        if keepdims:
            r = expand_dims(r, axis)
    return _store(r, out)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Positions of the (first) minima along ``axis`` (the flattened array's when None)."""
    return _arg("argmin", a, axis, out, keepdims)


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Positions of the (first) maxima along ``axis`` (the flattened array's when None)."""
    return _arg("argmax", a, axis, out, keepdims)


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of nonzero elements over the given axes."""
    a = asarray(a)
    nz = a if _dtype_name(a.dtype) == "bool" else a != 0
    if axis is None and not keepdims:
        return _vmnp._count_true(nz)
    return _vmnp._reduce("sum", nz, axis, _b.bool(keepdims), "int64")


class nditer:
    """``numpy.nditer`` over vmnp arrays: NumPy's iterator over NumPy copies of them (laid out
    as they are); the copies of operands flagged ``readwrite`` or ``writeonly`` are written back
    into their vmnp arrays when the iteration ends (``StopIteration``, ``iternext()`` returning
    False, ``close()`` or the end of a ``with`` block)."""

    def __init__(self, op, flags=None, op_flags=None, *args, **kwargs):
        ops = list(op) if isinstance(op, (list, tuple)) else [op]
        if op_flags is None or (op_flags and isinstance(op_flags[0], str)):
            per_op = [op_flags or ()] * len(ops)
        else:
            per_op = list(op_flags)
        copies = [_to_numpy(x) if isinstance(x, ndarray) else x for x in ops]
        self._written = [
            (x, n)
            for x, n, f in zip(ops, copies, per_op + [()] * (len(ops) - len(per_op)))
            if isinstance(x, ndarray) and ("readwrite" in f or "writeonly" in f)
        ]
        op = copies if isinstance(op, (list, tuple)) else copies[0]
        self._it = _np.nditer(op, flags, op_flags, *args, **kwargs)

    def _write_back(self):
        for x, n in self._written:
            _vmnp._assign(x, asarray(n))

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self._it)
        except StopIteration:
            self._write_back()
            raise

    def iternext(self):
        more = self._it.iternext()
        if not more:
            self._write_back()
        return more

    def close(self):
        self._write_back()
        self._it.close()

    def __enter__(self):
        self._it.__enter__()
        return self

    def __exit__(self, *exc):
        self._write_back()
        return self._it.__exit__(*exc)

    def __len__(self):
        return len(self._it)

    def __getitem__(self, key):
        return self._it[key]

    def __setitem__(self, key, value):
        self._it[key] = value

    def __copy__(self):
        return self._it.copy()

    copy = __copy__

    @property
    def operands(self):
        self._write_back()
        return self._it.operands

    def __getattr__(self, name):
        return getattr(self._it, name)


def _nonzero_positions(a):
    """Row-major positions of ``a``'s nonzero elements (a result-dependent length: ``a`` is
    computed and its truth values scanned; the positions stay on the VM)."""
    return _vmnp._true_positions(a if a.dtype == bool_ else a.astype(bool_))


def nonzero(a):
    """Indexes of the nonzero elements, one array per axis."""
    a = asarray(a)
    if a.ndim == 0:
        return tuple(asarray(i) for i in _np.nonzero(_to_numpy(a)))  # NumPy's error
    flat = _nonzero_positions(a)
    if a.ndim == 1:
        return (flat,)
    strides = [_math.prod(a.shape[k + 1 :]) for k in range(a.ndim)]
    return tuple((flat // s) % n if k else flat // s for k, (s, n) in enumerate(zip(strides, a.shape)))


def flatnonzero(a):
    """Flat indexes of the nonzero elements."""
    return _nonzero_positions(asarray(a).ravel())


def argwhere(a):
    """Indexes of the nonzero elements, one row each."""
    a = asarray(a)
    if a.ndim == 0:
        return asarray(_np.argwhere(_to_numpy(a)))
    return stack(nonzero(a), axis=1)


# The public functions as programs call them (see ``public.export``); reductions of one array
# with at most an axis recorded natively.
export(
    globals(),
    {
        "sum": "sum",
        "prod": "prod",
        "min": "min",
        "max": "max",
        "any": "any",
        "all": "all",
        "amin": "min",
        "amax": "max",
    },
)
