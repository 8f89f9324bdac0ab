"""Set routines: ``isin`` (the test elements sorted, each element searched for, found where the
value at its position equals it: NumPy's booleans, NaN in nothing, ``-0.0`` in ``0.0``), and
``union1d``, ``intersect1d``, ``setdiff1d`` and ``setxor1d`` as NumPy writes them, on ``unique``,
``sort`` and ``isin``."""

import numpy as _np

from .. import _vmnp
from . import fallback
from . import sorting as _sorting
from .convert import asarray
from .creation import ones, zeros
from .manip import concatenate, ravel
from .public import export
from .ufunc import minimum


def _fallback(name, args, kwargs):
    return fallback._fallback(name, getattr(_np, name), args, kwargs)


def _plain(*xs):
    """The arguments as vmnp arrays of real dtypes, or None when NumPy alone handles one."""
    arrays = [_sorting._searchable(x) for x in xs]
    return None if any(a is None for a in arrays) else arrays


#: Test elements up to which ``isin`` compares each element with each of them (NumPy does so
#: below about ``10 * x.size ** 0.145`` of them), not sorted and searched.
_FEW_TEST_ELEMENTS = 16


def _isin(x, t, invert):
    """``isin`` of vmnp arrays: each element of ``x`` compared with each of a few test elements,
    or searched for in ``t`` sorted, both in the dtype they promote to (NumPy compares them
    concatenated, in that dtype)."""
    dtype = _np.promote_types(x.dtype, t.dtype)
    if 0 < t.size <= _FEW_TEST_ELEMENTS:
        # One comparison per test element, all fused into one pass over ``x``.
        values, tests = x.astype(dtype, copy=False), ravel(t).astype(dtype, copy=False)
        found = values == tests[0]
        for k in range(1, tests.shape[0]):
            found = found | (values == tests[k])
        return ~found if invert else found
    s = _vmnp._sort(ravel(t).astype(dtype, copy=False), 0)
    values = x.astype(dtype, copy=False)
    if s.shape[0] == 0:
        found = zeros(x.shape, _np.bool_)
    else:
        at = minimum(_vmnp._search(s, values), s.shape[0] - 1)
        found = asarray(_vmnp._gather(s, at) == values)
    return ~found if invert else found


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element of ``element`` is among ``test_elements`` (of ``element``'s shape)."""
    arrays = _plain(element, test_elements)
    if arrays is None:
        kwargs = {"assume_unique": assume_unique, "invert": invert, "kind": kind}
        return _fallback("isin", (element, test_elements), kwargs)
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: {kind!r}. Please use None, 'sort' or 'table'.")
    if kind == "table" and any(a.dtype.kind not in "biu" for a in arrays):
        raise ValueError(
            "The 'table' method is only supported for boolean or integer arrays. Please select 'sort' or None for kind."
        )
    return _isin(*arrays, bool(invert))


def union1d(ar1, ar2):
    """The sorted distinct values of both."""
    if _plain(ar1, ar2) is None:
        return _fallback("union1d", (ar1, ar2), {})
    return _sorting.unique(concatenate((ar1, ar2), axis=None))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """The sorted values in both (with their first positions in each)."""
    arrays = _plain(ar1, ar2)
    if arrays is None:
        kwargs = {"assume_unique": assume_unique, "return_indices": return_indices}
        return _fallback("intersect1d", (ar1, ar2), kwargs)
    a, b = arrays
    if not assume_unique:
        if return_indices:
            a, ind1 = _sorting.unique(a, return_index=True)
            b, ind2 = _sorting.unique(b, return_index=True)
        else:
            a, b = _sorting.unique(a), _sorting.unique(b)
    else:
        a, b = ravel(a), ravel(b)
    aux = concatenate((a, b))
    if return_indices:
        order = _sorting.argsort(aux, kind="mergesort")
        aux = aux[order]
    else:
        aux = _sorting.sort(aux)
    mask = aux[1:] == aux[:-1]
    common = aux[:-1][mask]
    if not return_indices:
        return common
    first, second = order[:-1][mask], order[1:][mask] - a.size
    if not assume_unique:
        first, second = ind1[first], ind2[second]
    return common, first, second


def setdiff1d(ar1, ar2, assume_unique=False):
    """The values of ``ar1`` not in ``ar2`` (distinct and sorted unless ``assume_unique``)."""
    arrays = _plain(ar1, ar2)
    if arrays is None:
        return _fallback("setdiff1d", (ar1, ar2), {"assume_unique": assume_unique})
    a, b = arrays
    if assume_unique:
        a = ravel(a)
    else:
        a, b = _sorting.unique(a), _sorting.unique(b)
    return a[_isin(a, b, True)]


def setxor1d(ar1, ar2, assume_unique=False):
    """The sorted values in exactly one of the two."""
    arrays = _plain(ar1, ar2)
    if arrays is None:
        return _fallback("setxor1d", (ar1, ar2), {"assume_unique": assume_unique})
    a, b = arrays
    if not assume_unique:
        a, b = _sorting.unique(a), _sorting.unique(b)
    aux = concatenate((a, b), axis=None)
    if aux.size == 0:
        return aux
    aux = _sorting.sort(aux)
    flag = concatenate((ones(1, _np.bool_), aux[1:] != aux[:-1], ones(1, _np.bool_)))
    return aux[flag[1:] & flag[:-1]]


# The public functions as programs call them (see ``public.export``).
export(globals())
