"""Shape manipulation, joining, splitting, padding, selecting and clipping of arrays."""

import builtins as _b
import math as _math
import operator as _operator

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from . import creation as _creation
from .convert import _to_numpy, asarray, asnumpy
from .creation import _shape, arange, broadcast_arrays, broadcast_to, empty, zeros
from .dtypes import _dtype_name, _UnsupportedDType
from .fallback import _fallback
from .public import _foreign, export
from .ufunc import _store, maximum, minimum, positive


def _norm_axis(axis, ndim, what=None):
    axis = _operator.index(axis)  # NumPy's TypeError for a tuple or a float
    if not -ndim <= axis < ndim:
        raise _np.exceptions.AxisError(axis, ndim, what)
    return axis % ndim


def _row_major(shape):
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= n
    return strides[::-1]


def _view_strides(shape, strides, new_shape):
    """Strides that view the elements of (``shape``, ``strides``) in row-major order as
    ``new_shape``, or None when no view can (NumPy's no-copy reshape rule)."""
    old = [(n, st) for n, st in zip(shape, strides, strict=True) if n != 1]
    new = list(new_shape)
    out = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(old):
        np_, op = new[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = out[ni - 1] if ni >= 1 else 1
    for k in range(ni, len(new)):
        out[k] = last
    return out


def _new_shape(a, shape):
    if isinstance(shape, (tuple, list)):
        shape = [_operator.index(s) for s in shape]
    else:
        try:
            shape = [_operator.index(shape)]
        except TypeError:
            shape = _shape(shape)  # a sequence of another type, or NumPy's error
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if _b.any(s < -1 for s in shape):
        raise ValueError("negative dimensions not allowed")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or a.size % known:
            raise ValueError(f"cannot reshape array of size {a.size} into shape {_shape_text(shape)}")
        shape[shape.index(-1)] = a.size // known
    n = 1
    for s in shape:
        n *= s
    if n != a.size:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {_shape_text(shape)}")
    return shape


def _shape_text(shape):
    """A shape as NumPy writes it in reshape errors: ``(2,2)``, ``(5,)``; a negative dimension
    is ``newaxis``, left out where it leads (``(-1, 5)`` is ``(5)``)."""
    shape = list(shape)
    lead = 0
    while lead < len(shape) and shape[lead] < 0:
        lead += 1
    if lead == len(shape):
        return "()"
    text = ",".join("newaxis" if n < 0 else str(n) for n in shape[lead:])
    return f"({text},)" if len(shape) == 1 else f"({text})"


def _f_order(a, order):
    """True when ``order`` reads ``a`` in column-major order."""
    if order in ("F", "f"):
        return True
    if order in ("A", "a"):
        return a.flags.f_contiguous and not a.flags.c_contiguous
    if order in ("C", "c", None):
        return False
    raise ValueError(f"order must be one of 'C', 'F', 'A' (got {order!r})")


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """``a`` with a new shape: a view when the layout allows (NumPy's rule), else a copy;
    ``order='F'`` reads and places the elements in column-major order."""
    a = asarray(a)
    if shape is None:
        shape = newshape
    shape = _new_shape(a, shape)
    if _f_order(a, order):
        return transpose(reshape(transpose(a), shape[::-1], copy=copy))
    if a.size == 0 or a._contiguous:
        strides = _row_major(shape)  # row-major elements in a row-major shape: always a view
    else:
        strides = _view_strides(a.shape, a._strides, shape)
    if copy or strides is None:
        if copy is False:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        a = _vmnp._cast(a, _dtype_name(a.dtype))
        strides = _row_major(shape)
    return _vmnp._view(a, a._start, shape, strides)


def ravel(a, order="C"):
    """``a`` as 1-D (a view when the layout allows), in ``order``: 'C' row-major, 'F'
    column-major, 'A' column-major for Fortran-contiguous arrays, 'K' the order in memory."""
    a = asarray(a)
    if order in ("C", "c"):
        return a.ravel()  # (natively)
    if order in ("K", "k"):
        if a._contiguous:
            return reshape(a, [a.size])
        # Axes by decreasing stride size, each walked in its own direction (as NumPy does).
        axes = sorted(range(a.ndim), key=lambda d: -_b.abs(a._strides[d]))
        return reshape(transpose(a, axes), [a.size])
    return reshape(a, [a.size], order)


def copy(a, order="K", subok=False):
    """A new array with ``a``'s elements: row-major ('C'), column-major ('F'; 'A' for a
    column-major ``a``), or in ``a``'s order in memory ('K')."""
    a = asarray(a)
    return _copy_in(a, _dtype_name(a.dtype), order)


def _copy_in(a, name, order):
    """:func:`copy` of vmnp array ``a`` into dtype ``name`` (``astype``)."""
    if order in ("K", "k") and a.ndim > 1:
        # The layout of ``a`` in memory: axes by decreasing stride size, each stored ascending.
        axes = sorted(range(a.ndim), key=lambda d: -_b.abs(a._strides[d]))
        if axes != list(range(a.ndim)):
            return transpose(_vmnp._cast(transpose(a, axes), name), [axes.index(d) for d in range(a.ndim)])
        return _vmnp._cast(a, name)
    f = a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
    if order in ("F", "f") or (order in ("A", "a") and f):
        return transpose(_vmnp._cast(transpose(a), name))
    return _vmnp._cast(a, name)


def rot90(m, k=1, axes=(0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (a view)."""
    m = asarray(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    axes = tuple(axes)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if not (-m.ndim <= axes[0] < m.ndim and -m.ndim <= axes[1] < m.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    a0, a1 = (_norm_axis(x, m.ndim) for x in axes)
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


def rollaxis(a, axis, start=0):
    """``a`` with ``axis`` moved to before ``start`` (a view)."""
    a = asarray(a)
    n = a.ndim
    axis = _norm_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise _np.exceptions.AxisError(f"start arg requires {-n} <= start < {n + 1}")
    if axis < start:
        start -= 1
    if axis == start:
        return a[...]
    return moveaxis(a, axis, start)


def matrix_transpose(x):
    """``x`` with its last two axes swapped (a view)."""
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional")
    return swapaxes(x, -1, -2)


def unstack(x, /, *, axis=0):
    """Views of ``x`` along ``axis``."""
    x = moveaxis(asarray(x), axis, 0)
    return tuple(x[i] if x.ndim > 1 else x[i : i + 1].reshape(()) for i in range(x.shape[0]))


def transpose(a, axes=None):
    """``a`` with its axes permuted (a view)."""
    a = asarray(a)
    if axes is None:
        return a.transpose()  # (natively)
    nd = a.ndim
    axes = list(range(nd))[::-1] if axes is None else [_norm_axis(x, nd) for x in axes]
    if len(axes) != nd:
        raise ValueError("axes don't match array")
    if len(set(axes)) != nd:
        raise ValueError("repeated axis in transpose")
    st = a._strides
    return _vmnp._view(a, a._start, [a.shape[i] for i in axes], [st[i] for i in axes])


def swapaxes(a, axis1, axis2):
    """``a`` with two axes swapped (a view)."""
    a = asarray(a)
    p = list(range(a.ndim))
    i, j = _norm_axis(axis1, a.ndim, "axis1"), _norm_axis(axis2, a.ndim, "axis2")
    p[i], p[j] = p[j], p[i]
    return transpose(a, p)


def _norm_axes(axes, ndim, what=None, prefix=False):
    """An axis or a sequence of axes, normalised; NumPy's ValueError when one repeats (naming
    ``what`` where given; ``prefix``: an axis out of range is named by ``what`` in the error, as
    NumPy's ``moveaxis`` names it)."""
    if not isinstance(axes, (tuple, list)):
        try:
            axes = (_operator.index(axes),)
        except TypeError:
            pass  # iterated below, as NumPy does (`'float' object is not iterable`)
    axes = [_norm_axis(x, ndim, what if prefix else None) for x in axes]
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis" if what is None else f"repeated axis in `{what}` argument")
    return axes


def moveaxis(a, source, destination):
    """``a`` with the axes ``source`` (one or a sequence) moved to ``destination`` (a view)."""
    a = asarray(a)
    s = _norm_axes(source, a.ndim, "source", prefix=True)
    d = _norm_axes(destination, a.ndim, "destination", prefix=True)
    if len(s) != len(d):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    p = [i for i in range(a.ndim) if i not in s]
    for dest, src in sorted(zip(d, s)):
        p.insert(dest, src)
    return transpose(a, p)


def expand_dims(a, axis):
    """``a`` with new axes of extent 1 at ``axis`` (a view)."""
    a = asarray(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = sorted(_norm_axes(axes, a.ndim + len(axes)))
    shape, strides = list(a.shape), list(a._strides)
    for x in axes:
        shape.insert(x, 1)
        strides.insert(x, 0)
    return _vmnp._view(a, a._start, shape, strides)


def squeeze(a, axis=None):
    """``a`` without axes of extent 1 (a view)."""
    a = asarray(a)
    if axis is None:
        keep = [i for i in range(a.ndim) if a.shape[i] != 1]
    else:
        axes = [_norm_axis(x, a.ndim) for x in (axis if isinstance(axis, tuple) else (axis,))]
        if len(set(axes)) != len(axes):
            raise ValueError("duplicate value in 'axis'")
        for x in axes:
            if a.shape[x] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
        keep = [i for i in range(a.ndim) if i not in axes]
    return _vmnp._view(a, a._start, [a.shape[i] for i in keep], [a._strides[i] for i in keep])


def flip(a, axis=None):
    """``a`` reversed along ``axis`` (all axes when None; a view)."""
    a = asarray(a)
    axes = range(a.ndim) if axis is None else _norm_axes(axis, a.ndim)
    key = [slice(None)] * a.ndim
    for x in axes:
        key[x] = slice(None, None, -1)
    return a[tuple(key)]


def fliplr(m):
    """``m`` with its columns reversed (a view)."""
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return m[:, ::-1]


def flipud(m):
    """``m`` with its rows reversed (a view)."""
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return m[::-1]


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th differences along ``axis`` (bools: where neighbours differ)."""

    a = asarray(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = _norm_axis(axis, a.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        e = asarray(extra)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([x for x in (parts[0], a, parts[1]) if x is not None], axis=axis)
    head = (slice(None),) * axis
    for _ in range(n):
        hi, lo = a[(*head, slice(1, None))], a[(*head, slice(None, -1))]
        a = hi != lo if a.dtype.kind == "b" else hi - lo
    return a


def array_split(ary, indices_or_sections, axis=0):
    """Views of ``ary`` cut along ``axis`` into sections (as equal as possible) or at indices."""
    ary = asarray(ary)
    n = ary.shape[axis]
    if _np.ndim(indices_or_sections) == 0:
        sections = _operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = [0]
        for size in sizes:
            bounds.append(bounds[-1] + size)
    else:
        bounds = [0, *[int(i) for i in indices_or_sections], n]
    head = (slice(None),) * _norm_axis(axis, ary.ndim)
    return [ary[(*head, slice(lo, hi))] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def split(ary, indices_or_sections, axis=0):
    """Views of ``ary`` cut along ``axis`` into equal sections or at indices."""
    ary = asarray(ary)
    if _np.ndim(indices_or_sections) == 0 and ary.shape[axis] % _operator.index(indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """``split`` along columns (axis 1; axis 0 for 1-D arrays)."""
    ary = asarray(ary)
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """``split`` along rows."""
    return split(ary, indices_or_sections, 0)


def dstack(tup):
    """Arrays stacked along a third axis."""
    return concatenate([atleast_3d(x) for x in tup], axis=2)


def atleast_1d(*arys):
    """Each argument with at least one dimension."""
    r = [asarray(a) if asarray(a).ndim >= 1 else asarray(a).reshape(1) for a in arys]
    return r[0] if len(r) == 1 else tuple(r)


def atleast_2d(*arys):
    """Each argument with at least two dimensions."""
    r = []
    for a in arys:
        a = asarray(a)
        r.append(a.reshape(1, 1) if a.ndim == 0 else a[None, :] if a.ndim == 1 else a)
    return r[0] if len(r) == 1 else tuple(r)


def atleast_3d(*arys):
    """Each argument with at least three dimensions."""
    r = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = a.reshape(1, 1, 1)
        elif a.ndim == 1:
            a = a[None, :, None]
        elif a.ndim == 2:
            a = a[:, :, None]
        r.append(a)
    return r[0] if len(r) == 1 else tuple(r)


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """The arrays joined along an existing axis (``axis=None``: flattened)."""
    arrays = [a if type(a) is ndarray else asarray(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    axis = _operator.index(axis)  # NumPy's TypeError for a tuple or a float
    if out is None and dtype is None:
        return _vmnp._concatenate(arrays, axis)
    shape, dt, axis = _vmnp._concat_shape(arrays, axis)
    if dtype is not None:
        dt = dtype
    if out is None:
        return _concat_into(empty(shape, dt), arrays, axis)
    if tuple(out.shape) != tuple(shape):
        raise ValueError("Output array is the wrong shape")
    return _concat_into(out, arrays, axis)


def _concat_into(r, arrays, axis):
    """``arrays`` copied one after another along ``axis`` into ``r`` (a NumPy ``out`` through
    its own assignment)."""
    if isinstance(r, ndarray):
        _vmnp._concat_into(r, arrays, axis)
        return r
    pos, key = 0, [slice(None)] * r.ndim
    for a in arrays:
        key[axis] = slice(pos, pos + a.shape[axis])
        r[tuple(key)] = a
        pos += a.shape[axis]
    return r


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """The arrays joined along a new axis."""
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    if _b.any(a.shape != arrays[0].shape for a in arrays):
        raise ValueError("all input arrays must have the same shape")
    axis = _norm_axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis, out, dtype)


def hstack(tup, *, dtype=None, casting="same_kind"):
    """The arrays joined column-wise (along axis 1, or 0 for 1-D)."""
    arrs = [a if type(a) is ndarray and a.ndim else atleast_1d(a) for a in tup]
    axis = 0 if arrs[0].ndim == 1 else 1
    # (Without a dtype, the call the native layer records.)
    return concatenate(arrs, axis) if dtype is None else concatenate(arrs, axis, dtype=dtype)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """The arrays joined row-wise."""
    arrs = [a if type(a) is ndarray and a.ndim == 2 else atleast_2d(a) for a in tup]
    return concatenate(arrs, 0) if dtype is None else concatenate(arrs, 0, dtype=dtype)


def column_stack(tup):
    """1-D arrays as columns of a 2-D array."""
    return concatenate([atleast_2d(a).T if asarray(a).ndim < 2 else asarray(a) for a in tup], 1)


def repeat(a, repeats, axis=None):
    """Each element repeated ``repeats`` times (one count, or one per element along ``axis``)."""
    a = asarray(a)
    if _np.ndim(repeats) or isinstance(repeats, ndarray):
        counts = asnumpy(repeats)
        if counts.size == 0:
            counts = counts.astype(_np.intp)  # `[]` (float64 to NumPy) counts nothing
        if counts.size == 1:
            return repeat(a, int(counts.reshape(())), axis)
        if axis is None:
            a, axis = ravel(a), 0
        axis = _norm_axis(axis, a.ndim)
        if counts.ndim != 1 or counts.size != a.shape[axis]:
            raise ValueError(f"operands could not be broadcast together with shape ({a.shape[axis]},) ({counts.size},)")
        if (counts < 0).any():
            raise ValueError("repeats may not contain negative values.")

        return take(a, asarray(_np.repeat(_np.arange(counts.size), counts)), axis=axis)
    if _operator.index(repeats) < 0:
        raise ValueError("negative dimensions are not allowed")
    if axis is None:
        a, axis = ravel(a), 0
    axis = _norm_axis(axis, a.ndim)
    n = int(repeats)
    # Each element `n` times: a view with an axis of stride 0 after `axis`, copied.
    shape, strides = list(a.shape), list(a._strides)
    shape.insert(axis + 1, n)
    strides.insert(axis + 1, 0)
    out_shape = list(a.shape)
    out_shape[axis] *= n
    return _vmnp._view(a, a._start, shape, strides).copy().reshape(out_shape)


def tile(a, reps):
    """``a`` repeated ``reps`` times along each axis."""
    a = asarray(a)
    reps = (_operator.index(reps),) if _np.ndim(reps) == 0 else tuple(_operator.index(r) for r in reps)
    if _b.any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    nd = _b.max(a.ndim, len(reps))
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    reps = (1,) * (nd - len(reps)) + reps

    # The whole array `r` times along each axis: a view with an axis of stride 0 before each
    # of its axes, copied.
    shape = [v for r, n in zip(reps, a.shape) for v in (r, n)]
    strides = [v for s in a._strides for v in (0, s)]
    big = _vmnp._view(a, a._start, shape, strides).copy()
    return big.reshape([r * n for r, n in zip(reps, a.shape)])


def roll(a, shift, axis=None):
    """Elements shifted cyclically along ``axis`` (shifts and axes may be sequences, broadcast
    against each other)."""
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    if _np.ndim(shift) or _np.ndim(axis):
        shifts, axes = _np.broadcast_arrays(_np.asarray(shift), _np.asarray(axis))
        total = {}
        for s, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist(), strict=True):
            ax = _norm_axis(ax, a.ndim)
            total[ax] = total.get(ax, 0) + s
        for ax, s in total.items():
            a = roll(a, s, ax)
        return a
    axis = _norm_axis(axis, a.ndim)
    n = a.shape[axis]
    if n == 0:
        return a.copy()
    s = int(shift) % n
    if s == 0:
        return a.copy()
    lo = [slice(None)] * a.ndim
    hi = [slice(None)] * a.ndim
    lo[axis], hi[axis] = slice(n - s, None), slice(None, n - s)
    return concatenate([a[tuple(lo)], a[tuple(hi)]], axis)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of ``a`` in the plane of ``axis1`` and ``axis2``, as the last axis (a
    read-only view, as NumPy's)."""
    d = _diagonal_view(a, offset, axis1, axis2)
    if isinstance(d, ndarray):
        d._set_writeable(False)
    return d


def _diagonal_view(a, offset=0, axis1=0, axis2=1):
    """The diagonal of ``a``: a view as writeable as ``a`` (for ``diag`` to write through)."""
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i, j = _norm_axis(axis1, a.ndim, "axis1"), _norm_axis(axis2, a.ndim, "axis2")
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    n, m = a.shape[i], a.shape[j]
    si, sj = a._strides[i], a._strides[j]
    k = _b.max(0, _b.min(n, m - offset) if offset >= 0 else _b.min(n + offset, m))
    start = a._start + (offset * sj if offset >= 0 else -offset * si) if k else a._start
    rest = [d for d in range(a.ndim) if d not in (i, j)]
    shape = [a.shape[d] for d in rest] + [k]
    strides = [a._strides[d] for d in rest] + [si + sj]
    return _vmnp._view(a, start, shape, strides)


def diag(v, k=0):
    """The diagonal of a 2-D array, or a 2-D array with ``v`` on its diagonal."""
    v = asarray(v)
    if v.ndim == 2:
        return diagonal(v, k)  # NumPy's: a read-only view
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + _b.abs(k)

    r = zeros((n, n), v.dtype)
    _diagonal_view(r, k)[...] = v
    return r


def fill_diagonal(a, val, wrap=False):
    """Writes ``val`` on the main diagonal of ``a`` (in place), as NumPy does: every
    ``shape[1] + 1``-th element of the flattened 2-D array (past the last column, too, with
    ``wrap``), the values of ``val`` repeated in turn."""
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = a.size if wrap else _b.min(a.size, a.shape[1] * a.shape[1])
    else:
        step = 1 + _b.sum(_math.prod(a.shape[:i]) for i in range(1, a.ndim))
        end = a.size
    k = -(-end // step) if end > 0 else 0
    v = asarray(val).ravel()
    if k == 0 or v.size == 0:
        return
    if v.size != 1 and v.size != k:
        v = v[arange(k) % v.size]
    if a.flags.c_contiguous:
        _vmnp._view(a, a._start, [k], [step])[...] = v
    else:
        n = _to_numpy(a).copy()
        n.flat[:end:step] = _to_numpy(v)
        _vmnp._assign(a, asarray(n))


def _matrix_shape(m):
    """The matrix shape ``tril`` and ``triu`` work on: the last two axes (a vector as both)."""
    if m.ndim == 0:
        raise TypeError("tri() missing 1 required positional argument: 'N'")
    return (m.shape[0], m.shape[0]) if m.ndim == 1 else m.shape[-2:]


# The masks of ``tril`` and ``triu`` made so far, by (rows, cols, k, lower), for matrices of up
# to ``_TRI_MASK_ELEMENTS`` elements: a loop calling ``triu`` on matrices of one shape (an
# n-body step) makes its mask once. At most ``_TRI_MASKS`` are kept, the oldest dropped first.
_tri_masks = {}
_TRI_MASKS = 16
_TRI_MASK_ELEMENTS = 1 << 16


def _tri_mask(rows, cols, k, lower):
    """The boolean ``(rows, cols)`` mask of the elements on and below (``lower``) or on and
    above diagonal ``k``; never handed out, so it can be kept and shared."""
    kept = isinstance(k, (int, float, _np.integer, _np.floating)) and rows * cols <= _TRI_MASK_ELEMENTS
    key = (rows, cols, k, lower)
    mask = _tri_masks.get(key) if kept else None
    if mask is None:
        r, c = arange(rows)[:, None] + k, arange(cols)[None, :]
        mask = r >= c if lower else r <= c
        if kept:
            if len(_tri_masks) >= _TRI_MASKS:
                del _tri_masks[next(iter(_tri_masks))]
            _tri_masks[key] = mask
    return mask


def tril(m, k=0):
    """``m`` with the elements above diagonal ``k`` zeroed."""

    m = asarray(m)
    rows, cols = _matrix_shape(m)
    mask = _tri_mask(rows, cols, k, True)
    return where(mask, m, 0).astype(m.dtype, copy=False)  # (a bool m: where's result is int64)


def triu(m, k=0):
    """``m`` with the elements below diagonal ``k`` zeroed."""

    m = asarray(m)
    rows, cols = _matrix_shape(m)
    mask = _tri_mask(rows, cols, k, False)
    return where(mask, m, 0).astype(m.dtype, copy=False)  # (a bool m: where's result is int64)


def take(a, indices, axis=None, out=None, mode="raise"):
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened array when None)."""

    a = asarray(a)
    if mode not in ("raise", "clip", "wrap"):
        return _fallback("take", _np.take, (a, indices), {"axis": axis, "out": out, "mode": mode})
    if axis is None:
        a, axis = ravel(a), 0
    axis = _norm_axis(axis, a.ndim)
    idx = asarray(indices)
    if a.shape[axis] == 0 and idx.size > 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    if idx.size == 0 and not isinstance(indices, (ndarray, _np.ndarray)):
        idx = idx.astype("int64")  # `take(a, [])`: no positions
    elif idx.dtype.kind == "b":
        idx = idx.astype("int64")  # positions 0 and 1, never a mask
    elif idx.dtype.kind not in "iu":
        raise TypeError(f"Cannot cast array data from {idx.dtype!r} to dtype('int64') according to the rule 'safe'")
    n = a.shape[axis]
    if mode == "clip":
        idx = clip(idx.astype("int64"), 0, n - 1)
    elif mode == "wrap":
        idx = idx.astype("int64") % n
    return _store(a[(slice(None),) * axis + (idx,)], out)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    """``a`` limited to ``[a_min, a_max]``."""

    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    if _foreign(a_min) or _foreign(a_max):
        raise _UnsupportedDType("vmnp does not support complex bounds")
    r = asarray(a)
    # NumPy's clip is one ufunc of the array and both bounds: they promote together (NumPy
    # scalars and arrays by their dtypes, Python numbers as weak scalars), before either bound
    # is applied in that dtype.
    bounds = [x for x in (a_min, a_max) if x is not None]
    strong = [x for x in bounds if type(x) not in (int, float, _b.bool)]
    dt = r.dtype
    if strong:
        dt = _np.result_type(dt, *(x.dtype if hasattr(x, "dtype") else _np.asarray(x).dtype for x in strong))
    if dt.kind in "biu" and _b.any(type(x) is float for x in bounds):
        dt = _np.dtype(_np.float64)
    if r.dtype.kind in "iu":
        # Python ints beyond the input dtype's range clip nothing (NumPy compares them
        # exactly), also when a float bound promotes the result.
        info = _np.iinfo(r.dtype)
        if type(a_min) is int and a_min <= info.min:
            a_min = None
        if type(a_max) is int and a_max >= info.max:
            a_max = None
    if dt != r.dtype:
        r = r.astype(dt)
    operands = [r] + [x for x in (a_min, a_max) if x is not None] + ([out] if out is not None else [])
    if a_min is None and a_max is None:
        return _store(positive(r), out, "clip")  # NumPy's: a copy (and its error for bools)
    try:
        if a_min is not None:
            r = maximum(r, a_min)
        if a_max is not None:
            r = minimum(r, a_max)
        return _store(r, out, "clip")
    except ValueError as e:
        if "broadcast" not in str(e):
            raise
        # NumPy's clip is one ufunc: its error lists every operand.
        shapes = [x.shape if hasattr(x, "shape") else _np.shape(x) for x in operands]
        try:
            full = _np.broadcast_shapes(*shapes)
        except ValueError:
            text = " ".join(_shape_text(s) for s in shapes)
            raise ValueError(f"operands could not be broadcast together with shapes {text} ") from None
        if out is None or full == out.shape:
            raise
        raise ValueError(
            f"non-broadcastable output operand with shape {_shape_text(out.shape)} doesn't match "
            f"the broadcast shape {_shape_text(full)}"
        ) from None


_MISSING = object()


def where(condition, x=_MISSING, y=_MISSING):
    """``x`` where ``condition`` holds, else ``y`` (one argument: ``nonzero``)."""
    if x is _MISSING and y is _MISSING:
        from .reductions import nonzero  # (a call-time import: reductions builds on this module)

        return nonzero(condition)
    if (x is _MISSING) != (y is _MISSING):
        raise ValueError("either both or neither of x and y should be given")
    for v in (x, y):
        if v is None or isinstance(v, (str, bytes)):  # text or objects: NumPy's, in the fallback
            raise _UnsupportedDType(f"vmnp does not support values of type {type(v).__name__}")
    return _vmnp._where(condition, x, y)


def isfortran(a):
    """True for a column-major array that is not also row-major."""
    a = a if isinstance(a, ndarray) else asarray(a)
    return a.flags.f_contiguous and not a.flags.c_contiguous


def ndim(a):
    """Number of dimensions."""
    return asarray(a).ndim if not hasattr(a, "ndim") else a.ndim


def shape(a):
    """The shape."""
    return asarray(a).shape if not hasattr(a, "shape") else a.shape


def size(a, axis=None):
    """Number of elements (along ``axis``)."""
    a = a if hasattr(a, "shape") else asarray(a)
    return a.size if axis is None else a.shape[axis]


def select(condlist, choicelist, default=0):
    """Per element, the choice of the first condition that holds, else ``default`` (NumPy's
    rules: Python scalars among the choices are weak in the result's dtype; conditions must be
    boolean)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    weak = (int, float, complex)
    choices = [c if type(c) in weak else asarray(c) for c in [*choicelist, default]]
    try:
        dtype = _np.result_type(*[c if type(c) in weak else c.dtype for c in choices])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    # NumPy's order of errors: shapes that do not broadcast (the conditions together, the
    # choices together, then the choices into the result's shape), conditions that are not
    # boolean, then the casts of the choices into the result.
    conds = broadcast_arrays(*condlist)
    choice_shape = _np.broadcast_shapes(*(_np.shape(c) for c in choices))
    for i, cond in enumerate(conds):
        if cond.dtype != _np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = _np.broadcast_shapes(conds[0].shape, choice_shape) if choice_shape else conds[0].shape
    if _np.broadcast_shapes(shape, choice_shape) != shape:
        raise ValueError(f"could not broadcast input array from shape {choice_shape} into shape {shape}")
    for c in choices[:-1]:
        # NumPy copies each choice into the result as an array: a Python int as an int64 one.
        if type(c) is int and dtype.kind == "u":
            raise TypeError(
                f"Cannot cast scalar from dtype('int64') to dtype('{dtype}') according to the rule 'same_kind'"
            )
    if type(choices[-1]) in weak:
        # The default fills the result as NumPy's `full` does: cast unsafely (-1 -> 255 in uint8).
        choices[-1] = _np.asarray(choices[-1]).astype(dtype)
    choices = [asarray(c, dtype=dtype) for c in choices]
    result = choices[-1]
    # The last condition first: the first one that holds takes precedence.
    for cond, choice in zip(conds[::-1], choices[-2::-1], strict=True):
        result = where(cond, choice, result)
    shape = _np.broadcast_shapes(conds[0].shape, choices[0].shape, result.shape)
    return broadcast_to(result, shape).copy() if result.shape != shape else result.astype(dtype, copy=False)


# Modes of `pad` whose new elements are copies of elements of the array, found by index.
_PAD_BY_INDEX = ("edge", "reflect", "symmetric", "wrap")


def _pad_pairs(x, ndim, what):
    """``(before, after)`` for each axis from NumPy's forms of ``pad_width``: one number, one
    pair, one pair per axis."""
    x = _np.round(_np.asarray(x)).astype(_np.intp) if what == "pad_width" else _np.asarray(x)
    if x.ndim > 2 or (x.ndim == 2 and x.shape[1] != 2 and x.size != 1):
        raise ValueError(f"`{what}` must be a scalar, a pair or a pair per axis, got shape {x.shape}")
    if what == "pad_width" and x.size and x.min() < 0:
        raise ValueError("index can't contain negative values")
    if x.size == 1:
        x = x.ravel()[:1].repeat(2)
    return _np.broadcast_to(x, (ndim, 2)).tolist()


def pad(array, pad_width, mode="constant", **kwargs):
    """``array`` padded along each axis (NumPy's ``pad``): modes ``constant`` (with
    ``constant_values``), ``edge``, ``reflect``, ``symmetric``, ``wrap`` and ``empty`` on the VM;
    the others (statistics, ``linear_ramp``, a function, ``reflect_type='odd'``) through the
    fallback."""
    on_vm = (mode == "constant" and set(kwargs) <= {"constant_values"}) or (
        mode in (*_PAD_BY_INDEX, "empty")
        and set(kwargs) <= ({"reflect_type"} if mode in ("reflect", "symmetric") else set())
    )
    if not on_vm or kwargs.get("reflect_type", "even") != "even":
        return _fallback("pad", _np.pad, (array, pad_width, mode), kwargs)
    a = asarray(array)
    widths = _pad_pairs(pad_width, a.ndim, "pad_width")
    for axis, (n, w) in enumerate(zip(a.shape, widths, strict=True)):
        if mode in _PAD_BY_INDEX and n == 0 and any(w):
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
    values = _pad_pairs(kwargs.get("constant_values", 0), a.ndim, "constant_values") if mode == "constant" else None
    for axis, (before, after) in enumerate(widths):
        if before == after == 0:
            continue
        if mode in _PAD_BY_INDEX:
            # NumPy's own padding of the positions along the axis says which element goes where.
            index = _np.pad(_np.arange(a.shape[axis]), (before, after), mode=mode)
            a = take(a, index, axis=axis)
            continue
        fill = (0, 0) if mode == "empty" else values[axis]
        parts = []
        for width, value in ((before, fill[0]), (0, None), (after, fill[1])):
            if value is None:
                parts.append(a)
            elif width:
                shape = a.shape[:axis] + (width,) + a.shape[axis + 1 :]
                # The value as the array's dtype holds it (NumPy casts it unsafely: 2.7 -> 2).
                parts.append(_creation.full(shape, _np.asarray(value).astype(a.dtype), dtype=a.dtype))
        a = concatenate(parts, axis=axis)
    return a.copy() if a is array else a


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """Every window of ``window_shape`` over ``x`` (along ``axis``), as one view of its memory
    (NumPy's ``lib.stride_tricks.sliding_window_view``): read-only unless ``writeable``."""
    window_shape = tuple(window_shape) if _np.iterable(window_shape) else (window_shape,)
    x = asarray(x)
    if any(w < 0 for w in window_shape):
        raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        axis = tuple(range(x.ndim))
        if len(window_shape) != len(axis):
            raise ValueError(
                "Since axis is `None`, must provide window_shape for all dimensions of `x`; "
                f"got {len(window_shape)} window_shape elements and `x.ndim` is {x.ndim}."
            )
    else:
        axis = [_norm_axis(ax, x.ndim) for ax in (axis if _np.iterable(axis) else (axis,))]
        if len(window_shape) != len(axis):
            raise ValueError(
                "Must provide matching length window_shape and axis; "
                f"got {len(window_shape)} window_shape elements and {len(axis)} axes elements."
            )
    strides = [s // x.itemsize for s in x.strides]
    shape = list(x.shape)
    for ax, w in zip(axis, window_shape, strict=True):
        if shape[ax] < w:
            raise ValueError("window shape cannot be larger than input array shape")
        shape[ax] -= w - 1
    r = _vmnp._view(x, x._start, shape + list(window_shape), strides + [strides[ax] for ax in axis])
    r._set_writeable(_b.bool(writeable) and x.flags.writeable)
    return r


concat = concatenate  # (the array API's names)
permute_dims = transpose
copy_ = copy  # `asarray`'s and `array`'s parameter `copy` hides the function there

# The public functions as programs call them (see ``public.export``); the layout functions of
# one array, and joining, recorded natively.
export(
    globals(),
    {n: n for n in ("concatenate", "reshape", "ravel", "transpose", "squeeze", "flip", "copy", "swapaxes", "stack")},
)
