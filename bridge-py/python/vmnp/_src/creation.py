"""New arrays: ``empty``, ``zeros``, ``ones``, ``full`` and their ``_like`` forms, ``arange``,
``linspace``, ``eye``, ``meshgrid``, and broadcasting."""

import builtins as _b
import math as _math
import operator as _operator

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from .convert import asarray
from .dtypes import _dt, _dt_or_float, _UnsupportedDType, float64, int64
from .public import export
from .ufunc import floor


def _shape(shape):
    """A shape argument (an integer or a sequence of them, NumPy's or vmnp's included) as a
    list, with NumPy's errors for anything else and for negative extents."""
    dims = _vmnp._plain_shape(shape)  # the common spellings, checked at once
    if dims is not None:
        return dims
    t = type(shape)
    if t is int:
        dims = [shape]
    elif (t is tuple or t is list) and _b.all(type(s) is int for s in shape):
        dims = list(shape)
    else:
        try:
            dims = [_operator.index(shape)]
        except TypeError:
            if shape is None:
                raise TypeError("Use () not None as shape arguments") from None
            if not hasattr(shape, "__iter__") or (isinstance(shape, ndarray) and shape.ndim == 0):
                raise TypeError(f"expected a sequence of integers or a single integer, got '{shape!r}'") from None
            dims = [_operator.index(s) for s in shape]
    if dims and _b.min(dims) < 0:
        raise ValueError("negative dimensions are not allowed")
    if dims and _b.max(dims) > _INTP_MAX:
        raise ValueError("Maximum allowed dimension exceeded")
    if len(dims) > _MAX_NDIM:
        raise ValueError(f"maximum supported dimension for an ndarray is currently {_MAX_NDIM}, found {len(dims)}")
    return dims


_MAX_NDIM = 16  # the VM's views (NumPy allows 64)


_INTP_MAX = _np.iinfo(_np.intp).max


def _in_order(make, shape, order):
    """``make(shape)``, laid out column-major for ``order='F'`` (made transposed, viewed back)."""
    if order in ("F", "f"):
        return make(_shape(shape)[::-1]).T
    if order not in ("C", "c", None):
        raise ValueError(f"order must be one of 'C', 'F' (got {order!r})")
    return make(_shape(shape))


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """A new array with unspecified contents."""
    return _in_order(lambda s: _vmnp._empty(s, _dt_or_float(dtype)), shape, order)


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    """A new array of zeros (a new base reads as zeros until written)."""
    return _in_order(lambda s: _vmnp._empty(s, _dt_or_float(dtype)), shape, order)


def ones(shape, dtype=float, order="C", *, device=None, like=None):
    """A new array of ones."""
    return _in_order(lambda s: _vmnp._full(s, 1, _dt_or_float(dtype)), shape, order)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """A new array filled with ``fill_value``."""
    if dtype is None:
        # NumPy's dtype of the value on its own: int64, uint64 past it, a list's common dtype.
        dtype = fill_value.dtype if hasattr(fill_value, "dtype") else _np.asarray(fill_value).dtype
    return _in_order(lambda s: _vmnp._full(s, fill_value, _dt(dtype)), shape, order)


def _like(a, dtype, shape, order):
    """Shape, dtype and memory order of an array made like ``a`` (order 'K' and 'A' keep a
    column-major layout)."""
    a = asarray(a)
    keep_f = order in ("K", "A") and shape is None and a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
    return (
        (a.shape if shape is None else shape),
        (a.dtype if dtype is None else dtype),
        "F" if keep_f or order == "F" else "C",
    )


def empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """A new array shaped like ``a``, unspecified contents."""
    return empty(*_like(a, dtype, shape, order))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Zeros shaped like ``a``."""
    return zeros(*_like(a, dtype, shape, order))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Ones shaped like ``a``."""
    return ones(*_like(a, dtype, shape, order))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``fill_value`` shaped like ``a``."""
    s, d, o = _like(a, dtype, shape, order)
    return full(s, fill_value, d, o)


def arange(start, stop=None, step=None, dtype=None, *, device=None, like=None):
    """Evenly spaced values in ``[start, stop)``: ``start + i * step``."""
    if dtype is None and type(start) is int and type(stop) in (int, type(None)) and type(step) in (int, type(None)):
        r = _int_range(start, stop, step)
        if r is not None:
            return r
    if dtype is not None:
        _dt(dtype)  # a dtype the VM lacks (datetimes): NumPy's, in the fallback
    if _b.any(isinstance(x, (str, bytes)) for x in (start, stop, step)):
        raise _UnsupportedDType("vmnp does not support text as arange's bounds")
    # 0-d vmnp arrays stand for NumPy scalars: their values, with their kind.
    start, stop, step = (x.item() if isinstance(x, ndarray) and x.ndim == 0 else x for x in (start, stop, step))
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise ZeroDivisionError("division by zero")
    n = _b.max(int(_math.ceil((stop - start) / step)), 0)
    if n > _INTP_MAX:
        raise ValueError("Maximum allowed size exceeded")
    if dtype is None:
        ints = _b.all(isinstance(x, (int, _np.integer)) for x in (start, stop, step))
        dtype = int64 if ints else float64
    name = _dt(dtype)
    if n > 2 and name == "bool":
        raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
    if n <= 2 or name == "bool":
        return asarray(_np.arange(start, stop, step, dtype=name))
    # NumPy's fill: the first two elements are `start` and `start + step` stored into the dtype
    # (a float into an integer dtype truncates), the rest `first + i * (second - first)` in the
    # dtype's arithmetic (integers in 64 bits, then wrapped into the dtype).
    begin, by = (x.item() if isinstance(x, _np.generic) else x for x in (start, step))
    first, second = _np.arange(begin, begin + 2 * by, by, dtype=name)[:2].tolist()
    if name in ("float32", "float64"):
        ft = _np.dtype(name).type
        delta = ft(second) - ft(first)
        r = _vmnp._range(n, name) * delta + ft(first)
        r[1] = second
    else:
        wide = "uint64" if name == "uint64" else "int64"
        delta = (second - first) % (1 << 64) if wide == "uint64" else second - first
        r = _vmnp._range(n, wide)
        if delta != 1:
            r = r * _np.dtype(wide).type(delta)
        if first != 0:
            r = r + _np.dtype(wide).type(first)
        if wide != name:
            r = r.astype(name)
        last = first + (n - 1) * (second - first)
        info = _np.iinfo(name)
        if info.min <= _b.min(first, last) and _b.max(first, last) <= info.max:
            _vmnp._set_bounds(r, _b.min(first, last), _b.max(first, last))  # for indexing with it
    return r


def _int_range(start, stop, step):
    """``arange`` of Python ints into int64 (the common ``np.arange(n)``), without NumPy's help;
    None where the general path must answer (a step of 0, values past int64, two elements or
    fewer)."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        return None
    n = _b.max(-((start - stop) // step), 0)
    last = start + (n - 1) * step
    if n <= 2 or not (_INT64_MIN <= _b.min(start, last) and _b.max(start, last) <= _INT64_MAX):
        return None
    r = _vmnp._range(n, "int64")
    if step != 1:
        r = r * step
    if start != 0:
        r = r + start
    _vmnp._set_bounds(r, _b.min(start, last), _b.max(start, last))  # for indexing with it
    return r


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (NumPy's arithmetic order), computed
    in the inexact dtype ``start`` and ``stop`` promote to (float32 for float32 bounds)."""
    num = _operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if num > _INTP_MAX:
        raise ValueError("Maximum allowed size exceeded")
    div = (num - 1) if endpoint else num
    dt = _linspace_dtype(start, stop)
    if _np.ndim(start) or _np.ndim(stop) or isinstance(start, ndarray) or isinstance(stop, ndarray):
        return _linspace_arrays(start, stop, num, div, endpoint, retstep, dtype, axis, dt)
    delta = _np.subtract(stop, start, dtype=dt)
    y = _vmnp._range(num, dt)
    step = delta / div if div > 0 else _np.nan
    if div > 0:
        y = y * step + start if step != 0 else y / div * delta + start
    else:
        y = y * delta + start
    if endpoint and num > 1:
        y[-1] = stop
    if axis != 0:
        from .manip import moveaxis  # (a call-time import: manip builds on this module)

        y = moveaxis(y, 0, axis)  # NumPy's error for an axis other than 0 and -1
    y = _linspace_cast(y, dtype)
    return (y, step) if retstep else y


def _linspace_dtype(start, stop):
    """The dtype ``linspace`` computes in: ``start`` and ``stop`` promoted (Python numbers weak),
    integers and bools made float64."""
    dt = _np.result_type(
        *(x.dtype if isinstance(x, ndarray) else _np.asarray(x) if _np.ndim(x) else x for x in (start, stop))
    )
    return _dt(dt) if dt.kind == "f" else "float64"


def _linspace_cast(y, dtype):
    """Samples ``y`` in the requested dtype: integers are rounded down first, as NumPy does."""
    if dtype is None:
        return y
    if _np.dtype(dtype).kind in "iu":
        y = floor(y)
    return y.astype(dtype)


def _linspace_arrays(start, stop, num, div, endpoint, retstep, dtype, axis, dt):
    """``linspace`` between arrays: the samples along a new axis ``axis`` (NumPy's arithmetic)."""
    start, stop = asarray(start).astype(dt), asarray(stop)
    delta = stop.astype(dt) - start
    y = _vmnp._range(num, dt).reshape((num,) + (1,) * delta.ndim)
    step = delta / div if div > 0 else _np.nan
    if div > 0 and _b.bool((step == 0).any()):
        y = y / div * delta
    elif div > 0:
        y = y * step
    else:
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y[-1, ...] = stop
    if axis != 0:
        from .manip import moveaxis

        y = moveaxis(y, 0, axis)
    y = _linspace_cast(y, dtype)
    return (y, step) if retstep else y


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    """A 2-D array with ones on diagonal ``k``."""
    M = N if M is None else M
    r = zeros((N, M), dtype, order)
    n = _b.max(0, _b.min(N, M - k) if k >= 0 else _b.min(N + k, M))
    if n > 0:
        s0, s1 = r._strides  # in elements, for either memory order
        start = r._start + (k * s1 if k >= 0 else -k * s0)
        _vmnp._view(r, start, [n], [s0 + s1])[...] = 1
    return r


def identity(n, dtype=None, *, like=None):
    """The ``n x n`` identity matrix."""
    return eye(n, dtype=float if dtype is None else dtype)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors."""
    xs = [asarray(x).ravel() for x in xi]
    nd = len(xs)
    out = []
    for i, x in enumerate(xs):
        shape = [1] * nd
        shape[i] = x.size
        if indexing == "xy" and nd > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        out.append(x.reshape(shape))
    if sparse:
        return tuple(out)
    full_shape = broadcast_shapes(*[o.shape for o in out])
    return tuple(broadcast_to(o, full_shape).copy() for o in out)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to."""
    return _np.broadcast_shapes(*shapes)


def broadcast_to(a, shape, subok=False):
    """A read-only view of ``a`` stretched to ``shape``."""
    a = asarray(a)
    shape = (shape,) if not hasattr(shape, "__iter__") else shape
    if _b.any(_operator.index(n) < 0 for n in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    shape = tuple(_shape(shape))
    if not shape and a.shape:
        raise ValueError("cannot broadcast a non-scalar to a scalar array")
    if a.ndim > len(shape):
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    if _b.any(n != m and n != 1 for n, m in zip(a.shape, shape[len(shape) - a.ndim :])):
        from .manip import _shape_text as _manip_shape_text  # (a call-time import: manip builds on this module)

        raise ValueError(
            "operands could not be broadcast together with remapped shapes [original->remapped]: "
            f"{_manip_shape_text(a.shape)}  and requested shape {_manip_shape_text(shape)}"
        )
    lead = len(shape) - a.ndim
    strides = [0] * lead + [0 if (n == 1 and m != 1) else s for n, m, s in zip(a.shape, shape[lead:], a._strides)]
    r = _vmnp._view(a, a._start, list(shape), strides)
    r._set_writeable(False)  # as NumPy's: its elements repeat
    return r


def broadcast_arrays(*args):
    """The arguments broadcast against each other (views)."""
    arrays = [asarray(a) for a in args]
    shape = _np.broadcast_shapes(*[a.shape for a in arrays])
    return tuple(broadcast_to(a, shape) for a in arrays)


# The public functions as programs call them (see ``public.export``); new arrays of a plain
# shape and dtype recorded natively.
export(globals(), {n: n for n in ("empty", "zeros", "ones", "empty_like", "zeros_like", "ones_like", "arange", "full")})
