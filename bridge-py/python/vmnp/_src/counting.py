"""Counting: ``bincount`` and ``histogram`` with equal bins, each one ``scatter_add`` on the VM
(repeated positions accumulate in order, as NumPy's loops add); ``histogram`` with explicit
edges by a search of the edges for each value."""

import builtins as _b
import operator as _operator

import numpy as _np

from .. import _vmnp
from . import reductions as _reductions
from . import sorting as _sorting
from .convert import asarray
from .creation import zeros
from .fallback import _fallback
from .manip import concatenate, diff, where
from .public import _foreign, export
from .ufunc import isnan

# NumPy's ``histogram`` adds its counts block by block (``numpy.lib._histograms_impl.BLOCK``):
# weighted sums are made of per-block sums, in this order.
_BLOCK = 65536


def _index_array(x):
    """``x`` as a vmnp array of non-negative integer positions for ``bincount`` (NumPy's errors),
    or None for input NumPy alone handles (other dtypes, more dimensions: its errors)."""
    x = asarray(x)
    if x.ndim != 1 or x.dtype.kind not in "biu" or x.dtype == _np.uint64:
        return None
    return x.astype(_np.int64) if x.dtype == _np.bool_ else x


def bincount(x, /, weights=None, minlength=0):
    """The number of occurrences of each value in ``x`` (or the sum of ``weights`` at them): a
    ``scatter_add`` into zeros, its length ``max(x) + 1`` read back (one flush)."""
    xs = _index_array(x)
    w = None if weights is None else asarray(weights)
    if xs is None or (w is not None and w.dtype.kind not in "biuf"):
        return _fallback("bincount", _np.bincount, (x,), {"weights": weights, "minlength": minlength})
    minlength = _operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if w is not None and w.shape != xs.shape:
        raise ValueError("The weights and list don't have the same length.")
    if xs.size == 0:
        return zeros(minlength, _np.int64)  # NumPy's, weights or not
    low, high = xs.min(), xs.max()  # read back in one flush
    if int(low) < 0:
        raise ValueError("'list' argument must have no negative elements")
    counts = zeros(max(int(high) + 1, minlength), _np.int64 if w is None else _np.float64)
    _vmnp._scatter(counts, xs, 1 if w is None else w.astype(_np.float64, copy=False), True)
    return counts


def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 (NumPy's name)
    """NumPy's histogram with ``bins`` equal bins (float64 or integer data, no or float64
    weights): each value's bin found as NumPy finds it (scaled, truncated, corrected against
    the edges), the counts one ``scatter_add``; the edges are NumPy's own
    (``histogram_bin_edges`` of the data's extremes). Other bins and dtypes through the
    fallback."""
    x = asarray(a)
    w = None if weights is None else asarray(weights)
    edges = None if isinstance(bins, str) or _foreign(bins) else asarray(bins)
    if edges is not None and edges.ndim > 0 and w is None and x.dtype.kind in "iuf" and edges.dtype.kind in "biuf":
        return _histogram_of_edges(x, edges, density)
    simple = isinstance(bins, (int, _np.integer)) and not isinstance(bins, (bool, _np.bool_))
    simple = simple and (x.dtype == _np.float64 or x.dtype.kind in "iu") and x.dtype != _np.uint64
    if not simple or (w is not None and w.dtype != _np.float64):
        kwargs = {"bins": bins, "range": range, "density": density, "weights": weights}
        return _fallback("histogram", _np.histogram, (a,), kwargs)
    if w is not None:
        if w.shape != x.shape:
            raise ValueError("weights should have the same shape as a.")
        w = w.ravel()
    x = x.ravel()
    # The edges depend on the data only through its extremes (and whether it has any), both
    # computed in one flush.
    extremes = _np.array([], dtype=x.dtype)
    if x.size:
        low, high = x.min(), x.max()
        _vmnp.flush()
        extremes = _np.array([low.item(), high.item()], dtype=x.dtype)
    edges = _np.histogram_bin_edges(extremes, bins, range)
    if range is not None:
        first, last = range
    elif x.size:
        first, last = extremes[0].item(), extremes[1].item()
    else:
        first, last = 0, 1
    if first == last:
        first, last = first - 0.5, last + 0.5
    integral = isinstance(first, (int, _np.integer)) and isinstance(last, (int, _np.integer))
    # NumPy subtracts integer edges exactly (in uint64) before dividing by the difference.
    width = float(int(last) - int(first)) if integral else float(last) - float(first)
    first = float(first)
    bins = int(bins)
    # One bin more where a range leaves values out: theirs, dropped at the end.
    counts = zeros(bins + (range is not None), _np.int64 if w is None else _np.float64)
    if x.size == 0:
        return _finish(counts[:bins], edges, density)
    values = x.astype(_np.float64, copy=False)
    keep = None
    if range is not None:
        keep = (values >= first) & (values <= float(last))
        values = where(keep, values, first)  # in the first bin until dropped
    # Positions in 0..bins-1 by construction, so the edges are gathered unchecked.
    index = ((values - first) / width * bins).astype(_np.int64)
    index = where(index == bins, bins - 1, index)
    edge = _edge_of_index(edges, bins)
    index = where(values < edge(index), index - 1, index)
    index = where((values >= edge(index + 1)) & (index != bins - 1), index + 1, index)
    if keep is not None:
        index = where(keep, index, bins)
    if w is None:
        _vmnp._scatter(counts, index, 1, True)
    else:
        for start in _b.range(0, x.size, _BLOCK):
            part = zeros(counts.shape, _np.float64)
            _vmnp._scatter(part, index[start : start + _BLOCK], w[start : start + _BLOCK], True)
            counts += part
    return _finish(counts[:bins].copy() if range is not None else counts, edges, density)


def _edge_of_index(edges, bins):
    """A function of an index array (``0..bins-1``) to NumPy's ``bins`` equal-bin ``edges`` at
    it: computed as ``linspace`` computes them (``k * step + first``, a product and a sum per
    element, so fused with what reads them) when that gives these edges exactly, else gathered
    from them."""
    first, step = edges[0], (edges[-1] - edges[0]) / bins
    if _np.array_equal(_np.arange(bins, dtype=_np.float64) * step + first, edges[:-1]):
        first, step = float(first), float(step)
        return lambda index: index.astype(_np.float64) * step + first
    table = asarray(edges)
    return lambda index: _vmnp._gather(table, index)


def _histogram_of_edges(x, edges, density):
    """NumPy's histogram with the edges ``edges`` and no weights. NumPy counts the sorted data
    below each edge (not above the last), the counts the differences; a value's bin is thus the
    number of edges not above it, less one (the last edge's value in the last bin): searched for
    each value, the counts one ``scatter_add``. Edges holding a NaN take NumPy's way itself."""
    if edges.ndim != 1:
        raise ValueError("`bins` must be 1d, when an array")
    if edges.size > 1 and bool(_reductions.any(edges[:-1] > edges[1:])):
        raise ValueError("`bins` must increase monotonically, when an array")
    values = x.ravel()
    if edges.dtype.kind == "f" and bool(isnan(edges).any()):
        s = _vmnp._sort(values, 0)
        low, high = _sorting.searchsorted(s, edges[:-1], "left"), _sorting.searchsorted(s, edges[-1:], "right")
        return _finish(diff(concatenate([low, high])), edges, density)
    m = edges.shape[0]
    if m < 2:
        return _finish(zeros(0, _np.int64), edges, density)
    k = _sorting.searchsorted(edges, values, "right")
    k = where((k == m) & (values == edges[m - 1]), m - 1, k)
    counts = zeros(m + 1, _np.int64)
    _vmnp._scatter(counts, k, 1, True)
    return _finish(counts[1:m].copy(), edges, density)


def _finish(counts, edges, density):
    """``histogram``'s result: the counts (or NumPy's density of them) and the edges."""
    if density:
        widths = asarray(_np.diff(edges).astype(float))
        return counts / widths / counts.sum(), asarray(edges)
    return counts, asarray(edges)


# The public functions as programs call them (see ``public.export``).
export(globals())
