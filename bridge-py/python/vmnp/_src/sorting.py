"""Sorting and searching: ``sort``, ``argsort`` and ``ndarray.sort`` as the VM's ``sort`` and
``argsort`` instructions (each line along the axis ascending, NaNs last, stable: the order
NumPy's every ``kind`` gives the values, and its ``kind="stable"`` the positions);
``partition`` and ``argpartition`` as the stack's ``partition`` and ``argpartition`` extension
methods (a sort where it lacks them); ``median``, ``percentile`` and ``quantile`` (NumPy's
default ``linear`` method) built on the partition, ``unique`` on the sort; ``searchsorted`` as
the VM's ``searchsorted_left`` and ``searchsorted_right`` (NumPy's binary search), and
``digitize`` and ``interp`` built on it."""

import builtins as _b
import operator as _operator

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from .convert import asarray, ascontiguousarray, asnumpy
from .creation import empty, full, ones, zeros
from .fallback import _fallback
from .manip import _norm_axes, _norm_axis, clip, concatenate, moveaxis, ravel, stack, transpose, where
from .public import _foreign, export
from .reductions import cumsum, mean, nonzero
from .ufunc import _is_scalar, _store, isnan

_KINDS = "qQhHmMsS"


def _check_kind(kind, stable):
    """NumPy's errors for a sort ``kind`` it does not know, or one given beside ``stable``."""
    if kind is not None and stable is not None:
        raise ValueError("`kind` and keyword parameters can't be provided at the same time. Use only one of them.")
    if kind is not None and not (isinstance(kind, str) and kind[:1] and kind[0] in _KINDS):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")


def _sortable(a):
    """``a`` as a vmnp array the VM sorts, or None for what NumPy alone sorts (complex, text,
    records, objects)."""
    if _foreign(a):
        return None
    return asarray(a)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """A sorted copy of ``a``: each line along ``axis`` ascending (None: the flattened array),
    NaNs last."""
    _check_kind(kind, stable)
    x = _sortable(a)
    if x is None or order is not None:
        return _fallback("sort", _np.sort, (a,), {"axis": axis, "kind": kind, "order": order, "stable": stable})
    return _vmnp._sort(x, axis)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """The int64 positions that sort ``a`` along ``axis`` (None: the flattened array), equal
    values in their order (NumPy's ``kind="stable"``, a valid answer for every kind)."""
    _check_kind(kind, stable)
    x = _sortable(a)
    if x is None or order is not None:
        kwargs = {"axis": axis, "kind": kind, "order": order, "stable": stable}
        return _fallback("argsort", _np.argsort, (a,), kwargs)
    if x.ndim == 0:
        x = x.reshape(1)  # NumPy's: a 0-d array's positions as of a 1-d one
    return _vmnp._sort(x, axis, True)


def lexsort(keys, axis=-1):
    """The positions that sort by the last key, ties by the one before, and so on: one stable
    ``argsort`` per key, the last one first applied last (stable sorts compose: NumPy's
    positions exactly). Keys of more than one dimension go to NumPy."""
    if isinstance(keys, (tuple, list)):
        ks = [_searchable(k) for k in keys]
    elif isinstance(keys, (ndarray, _np.ndarray)) and _np.ndim(keys) == 2:
        ks = [asarray(keys)[i] for i in range(len(keys))]
    else:
        ks = [None]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(k is None for k in ks) or ks[0].ndim != 1 or axis not in (-1, 0):
        return _fallback("lexsort", _np.lexsort, (keys,), {"axis": axis})
    if any(k.shape != ks[0].shape for k in ks):
        raise ValueError("all keys need to be the same shape")
    order = _vmnp._sort(ks[0], 0, True)
    for k in ks[1:]:
        order = order[_vmnp._sort(k[order], 0, True)]
    return order


def sort_in_place(a, axis=-1, kind=None, order=None, *, stable=None):
    """``ndarray.sort``: ``a`` sorted along ``axis`` in place."""
    _check_kind(kind, stable)
    axis = _operator.index(axis)  # NumPy's TypeError for None
    if order is not None:
        a[...] = sort(a, axis, kind, order, stable=stable)
        return
    _vmnp._sort(a, axis, False, True)


def _partition_lines(a, kth, axis, kind):
    """``a``, the axis to partition along and the ``kth`` positions (from the start), after
    NumPy's checks of ``kind``, ``axis`` and ``kth`` (integers, negative ones from the end,
    within the axis unless there is nothing to partition); None for a ``kth`` of more than one
    dimension (NumPy's own error)."""
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    if axis is None:
        a, axis = ravel(a), -1
    axis = _norm_axis(axis, a.ndim)
    k = _np.asarray(kth)
    if k.dtype == _np.bool_:
        raise ValueError("Booleans unacceptable as partition index")
    if k.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    if k.ndim > 1:
        return None
    n = a.shape[axis]
    ks = []
    for v in k.reshape(-1).tolist():
        v = v + n if v < 0 else v
        if a.size and not 0 <= v < n:
            raise ValueError(f"kth(={v}) out of bounds ({n})")
        ks.append(v)
    return a, axis, ks


def _partitioned(a, axis, ks, positions=False):
    """``a`` partitioned along ``axis`` around each of the positions ``ks``, or the positions
    that partition it: the lines between the least and the greatest of them in sorted order,
    by the stack's partial sort (the whole line sorted where the stack lacks it, or where there
    is nothing to partition)."""
    if a.size and ks:
        last = moveaxis(a, axis, -1)
        r = _vmnp._partition(last, _b.min(ks), _b.max(ks), positions)
        if r is not None:
            return r if axis == a.ndim - 1 else ascontiguousarray(moveaxis(r, -1, axis))
    return _vmnp._sort(a, axis, positions)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``a`` partitioned along ``axis`` around each ``kth`` position: each there holds the value
    a sort puts there, the values before it are not greater and those after not smaller (NumPy
    leaves the order within each part unspecified; so does the VM)."""
    x = _sortable(a)
    lines = None if x is None or order is not None else _partition_lines(x, kth, axis, kind)
    if lines is None:
        kwargs = {"axis": axis, "kind": kind, "order": order}
        return _fallback("partition", _np.partition, (a, kth), kwargs)
    return _partitioned(*lines)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Positions that partition ``a`` along ``axis`` around each ``kth``: at each ``kth`` the
    one a stable argsort puts there."""
    x = _sortable(a)
    if x is not None and x.ndim == 0:
        x = x.reshape(1)  # NumPy's: a 0-d array's positions as of a 1-d one
    lines = None if x is None or order is not None else _partition_lines(x, kth, axis, kind)
    if lines is None:
        kwargs = {"axis": axis, "kind": kind, "order": order}
        return _fallback("argpartition", _np.argpartition, (a, kth), kwargs)
    return _partitioned(*lines, positions=True)


def partition_in_place(a, kth, axis=-1, kind="introselect", order=None):
    """``ndarray.partition``: ``a`` partitioned in place along ``axis``."""
    axis = _operator.index(axis)  # NumPy's TypeError for None
    lines = None if order is not None else _partition_lines(a, kth, axis, kind)
    if lines is None:
        a[...] = partition(a, kth, axis, kind, order)
        return
    a[...] = _partitioned(*lines)


def _lines_last(a, axis):
    """``a`` with the lines to reduce along its last axis: the flattened array for None, one
    axis moved last, or several axes moved last and merged; and the shape the result keeps
    (``keepdims``)."""
    if axis is None:
        return ravel(a), (1,) * a.ndim
    axes = _norm_axes(axis, a.ndim)
    rest = [k for k in range(a.ndim) if k not in axes]
    moved = transpose(a, rest + list(axes))
    kept = tuple(1 if k in axes else n for k, n in enumerate(a.shape))
    return moved.reshape(moved.shape[: len(rest)] + (-1,)), kept


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    """NumPy's ``quantile`` with its default ``linear`` method: each line sorted on the VM, then
    NumPy's own arithmetic (see ``_quantile``)."""
    kwargs = {"axis": axis, "out": out, "overwrite_input": overwrite_input, "method": method}
    kwargs.update(keepdims=keepdims, weights=weights)
    qs = _np.asanyarray(q._to_numpy() if isinstance(q, ndarray) else q)
    if qs.dtype.kind in "biuf" and not ((qs >= 0) & (qs <= 1)).all():
        raise ValueError("Quantiles must be in the range [0, 1]")
    return _quantile("quantile", _np.quantile, a, q, qs, type(q) in (int, float), kwargs)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    """NumPy's ``percentile``: ``quantile`` of ``q / 100``."""
    kwargs = {"axis": axis, "out": out, "overwrite_input": overwrite_input, "method": method}
    kwargs.update(keepdims=keepdims, weights=weights)
    qs = _np.asanyarray(q._to_numpy() if isinstance(q, ndarray) else q)
    if qs.dtype.kind in "biuf":
        qs = _np.asanyarray(_np.true_divide(qs, 100))
        if not ((qs >= 0) & (qs <= 1)).all():
            raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantile("percentile", _np.percentile, a, q, qs, type(q) in (int, float), kwargs)


def _quantile(name, func, a, q, qs, weak, kwargs):
    """The ``linear`` quantiles ``qs`` (in ``[0, 1]``) of ``a`` as NumPy computes them: the
    virtual index ``(n - 1) * q``; an integer one picks its element; otherwise its two
    neighbours interpolated by NumPy's ``_lerp`` from the nearer side, with the weight a Python
    float for a Python number ``q`` (``weak``: a float32 input stays float32) and a float64
    otherwise; a line holding a NaN gives NaN. The elements picked come from one partition of
    each line around all of them."""
    x = _sortable(a)
    plain = kwargs["method"] == "linear" and kwargs["weights"] is None and qs.dtype.kind in "biuf"
    if x is None or not plain or x.dtype.kind not in "biuf":
        return _fallback(name, func, (a, q), kwargs)
    axis, keepdims = kwargs["axis"], kwargs["keepdims"]
    lines, kept = _lines_last(x, axis)
    n = lines.shape[-1]
    if n == 0:
        return _fallback(name, func, (a, q), kwargs)
    virtual = (n - 1) * qs  # NumPy's, dtype and all
    picks = []  # per quantile: (below, above, gamma), above None for an integer index
    for v in _np.asarray(virtual).reshape(-1):
        if virtual.dtype.kind in "iu":
            picks.append((int(v), None, None))
        else:
            below = n - 1 if v >= n - 1 else _b.max(int(_np.floor(v)), 0)
            picks.append((below, _b.min(below + 1, n - 1), _np.float64(v) - below))
    ks = [k for p in picks for k in p[:2] if k is not None]
    s = _partitioned(lines, lines.ndim - 1, ks)
    if s.dtype.kind == "f":
        # NaN where the line holds one, in the input's dtype (NumPy's result then).
        last = where(isnan(lines).any(axis=-1), _np.nan, s[..., ks[0]])
    results = []
    for below, above, gamma in picks:
        if above is None:
            r = s[..., below]
        else:
            t = float(gamma) if weak else gamma
            lo, hi = s[..., below], s[..., above]
            diff = hi - lo
            r = lo + diff * t
            if gamma >= 0.5:
                r = (hi - diff * (1 - t)).astype(r.dtype)
        if s.dtype.kind == "f":
            if r.ndim == 0 and not qs.ndim and r.dtype != s.dtype and bool(isnan(last)):
                r = last
            else:
                r = where(isnan(last), last, r).astype(r.dtype)
        results.append(r.reshape(kept) if keepdims else r)
    r = stack(results).reshape(qs.shape + results[0].shape) if qs.ndim else results[0]
    return _store(r, kwargs["out"])


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The middle of each line in sorted order (the mean of the two middle values for an even
    count; each line partitioned around them), NaN for a line holding a NaN, as NumPy's."""
    x = _sortable(a)
    if x is None or x.dtype.kind not in "biuf":
        kwargs = {"axis": axis, "out": out, "overwrite_input": overwrite_input, "keepdims": keepdims}
        return _fallback("median", _np.median, (a,), kwargs)
    lines, kept = _lines_last(x, axis)
    n = lines.shape[-1]
    if n == 0:
        return mean(x, axis=axis, out=out, keepdims=keepdims)  # NumPy's NaN and warning
    lo, hi = (n - 1) // 2, n // 2
    s = _partitioned(lines, lines.ndim - 1, [lo, hi])
    r = mean(s[..., lo : hi + 1], axis=-1)
    r = where(isnan(lines).any(axis=-1), _np.nan, r) if s.dtype.kind == "f" else r
    return _store(r.reshape(kept) if keepdims else r, out)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True):
    """The sorted distinct values of ``ar`` (flattened), with NumPy's optional first positions,
    inverse and counts; NaNs collapse to one (``equal_nan``), as NumPy's."""
    x = _sortable(ar)
    if x is None or axis is not None or x.dtype.kind not in "biuf":
        kwargs = {"return_index": return_index, "return_inverse": return_inverse, "return_counts": return_counts}
        kwargs.update(axis=axis, equal_nan=equal_nan)
        return _fallback("unique", _np.unique, (ar,), kwargs)
    flat = ravel(x)
    n = flat.shape[0]
    order = _vmnp._sort(flat, 0, True) if (return_index or return_inverse) else None
    s = flat[order] if order is not None else _vmnp._sort(flat, 0)
    if n == 0:
        first = zeros(0, _np.int64)
    else:
        first = concatenate([ones(1, _np.bool_), s[1:] != s[:-1]])
        if equal_nan and s.dtype.kind == "f":
            # NaNs sort last and differ from each other: keep the first of them only.
            nan = isnan(s)
            first = first & ~(nan & concatenate([zeros(1, _np.bool_), nan[:-1]]))
    starts = nonzero(first)[0]
    values = s[starts]
    if not (return_index or return_inverse or return_counts):
        return values
    r = [values]
    if return_index:
        r.append(order[starts])
    if return_inverse:
        group = cumsum(first) - 1
        inverse = empty(n, _np.int64)
        inverse[order] = group
        r.append(inverse.reshape(x.shape))
    if return_counts:
        ends = concatenate([starts[1:], full(1, n, _np.int64)])
        r.append(ends - starts)
    return tuple(r)


def _side(side):
    """True for ``side="right"``, False for ``"left"``; NumPy's errors for anything else."""
    if side == "left" or side == "right":
        return side == "right"
    if not isinstance(side, str):
        raise TypeError(f"search side must be str, not {type(side).__name__}")
    if side[:1] in ("l", "L", "r", "R"):
        raise ValueError("search side must be one of 'left' or 'right'")
    raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")


def _searchable(x):
    """``x`` as a vmnp array of a real dtype, or None for what NumPy alone searches."""
    if _foreign(x):
        return None
    x = asarray(x)
    return x if x.dtype.kind in "biuf" else None


def searchsorted(a, v, side="left", sorter=None):
    """The int64 positions in the sorted 1-d ``a`` (or ``a[sorter]``) where the elements of
    ``v`` go to keep the order, before equal values (``side="left"``) or after them, NaNs
    last; both searched in the dtype they promote to, as NumPy's."""
    x, keys = _searchable(a), _searchable(v)
    if x is None or keys is None:
        return _fallback("searchsorted", _np.searchsorted, (a, v), {"side": side, "sorter": sorter})
    right = _side(side)
    if x.ndim != 1:
        raise ValueError(
            "object too deep for desired array" if x.ndim else "object of too small depth for desired array"
        )
    if sorter is not None:
        order = asarray(sorter)
        if order.ndim != 1:
            raise TypeError("could not parse sorter argument")
        if order.dtype.kind not in "iu":
            raise TypeError("sorter must only contain integers")
        if order.shape[0] != x.shape[0]:
            raise ValueError("sorter.size must equal a.size")
        if order.size and (int(order.min()) < 0 or int(order.max()) >= x.shape[0]):
            raise ValueError("Sorter index out of range.")
        x = x[order]
    dtype = _np.promote_types(x.dtype, keys.dtype)
    r = _vmnp._search(x.astype(dtype, copy=False), keys.astype(dtype, copy=False), right)
    return r[()] if r.ndim == 0 else r


def _monotonicity(bins):
    """1 for bins that never decrease, -1 for bins that never increase (and are not all
    equal), 0 otherwise: NumPy's check, in float64 (its errors for bins of more than one
    dimension)."""
    if bins.ndim > 1:
        raise ValueError("object too deep for desired array")
    b = bins.reshape(-1).astype(_np.float64).tolist()
    first = next((k for k in range(1, len(b)) if b[k] != b[0]), None)
    if first is None:
        return 1
    pairs = zip(b[first - 1 : -1], b[first:], strict=True)
    if b[0] < b[first]:
        return 0 if any(x > y for x, y in pairs) else 1
    return 0 if any(x < y for x, y in pairs) else -1


def digitize(x, bins, right=False):
    """The bin of each element of ``x``: positions in the monotonic ``bins`` (NumPy's check of
    them), searched from the side NumPy searches."""
    xs, b = _searchable(x), _searchable(bins)
    if xs is None or b is None:
        return _fallback("digitize", _np.digitize, (x, bins), {"right": right})
    mono = _monotonicity(asnumpy(b))
    if mono == 0:
        raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    if mono == -1:
        return len(b) - searchsorted(b[::-1], xs, side=side)
    return searchsorted(b, xs, side=side)


def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's piecewise-linear ``interp`` over increasing ``xp``, in float64: each ``x``'s
    interval found by ``searchsorted``, then NumPy's arithmetic and special cases (a point
    of ``xp`` gives its ``fp``, NaN results retried from the interval's other end, ``left`` and
    ``right`` outside, NaN for NaN)."""
    args = (x, xp, fp)
    ends_plain = all(e is None or _is_scalar(e) for e in (left, right))
    xs, dx, dy = (_searchable(t) for t in args)
    if period is not None or xs is None or dx is None or dy is None or not ends_plain:
        return _fallback("interp", _np.interp, args, {"left": left, "right": right, "period": period})
    for t in (dy, dx):
        if t.ndim != 1:
            raise ValueError(
                "object too deep for desired array" if t.ndim else "object of too small depth for desired array"
            )
    n = dx.shape[0]
    if n == 0:
        raise ValueError("array of sample points is empty")
    if dy.shape[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    xs, dx, dy = (t.astype(_np.float64, copy=False) for t in (xs, dx, dy))
    lval = dy[0] if left is None else float(left)
    rval = dy[n - 1] if right is None else float(right)
    if n == 1:
        r = where(xs < dx[0], lval, where(xs > dx[0], rval, dy[0]))
    else:
        j = searchsorted(dx, xs, "right") - 1
        k = clip(j, 0, n - 2)
        x0, x1, y0, y1 = dx[k], dx[k + 1], dy[k], dy[k + 1]
        slope = (y1 - y0) / (x1 - x0)
        r = slope * (xs - x0) + y0
        r = where(isnan(r), slope * (xs - x1) + y1, r)
        r = where(isnan(r) & (y0 == y1), y0, r)
        r = where(x0 == xs, y0, r)
        r = where(j == n - 1, dy[n - 1], r)
        r = where(j == -1, lval, r)
        r = where(xs > dx[n - 1], rval, r)
        r = where(isnan(xs), xs, r)
    return r[()] if r.ndim == 0 else r


# The public functions as programs call them (see ``public.export``).
export(globals())
