"""The Python side of ``vmnp.ndarray``: methods the native class forwards here, advanced
indexing, display, conversion, and NumPy's ``__array_function__`` protocol."""

import builtins as _b
import math as _math
import numbers as _numbers
import operator as _operator
import warnings as _warnings

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from . import linalg as _linalg
from . import manip as _manip
from . import reductions as _reductions
from . import sorting as _sorting
from . import ufunc as _ufunc
from .convert import _column_major, _convert, _flat, _read_view, _rebuild, _to_numpy, array, asarray, asnumpy
from .creation import arange, empty, full_like, zeros_like
from .dtypes import _dt, _dtype_name, _UnsupportedDType
from .fallback import _fallback, _inplace_fallback, _numpy_operator, _operator_fallback, _text_operand
from .linalg import matmul
from .manip import _copy_in, _shape_text, ravel, swapaxes, tile, where
from .public import _foreign
from .ufunc import floor_divide, remainder

# The public namespace (the ``vmnp`` module, given to ``hooks``): what ``__array_namespace__``
# returns, whose functions the forwarded methods call and ``__array_function__`` dispatches to.
_namespace = None


def _np_key(key):
    """An index with vmnp arrays replaced by NumPy ones (for the host path)."""
    if isinstance(key, tuple):
        return tuple(_np_key(k) for k in key)
    if isinstance(key, ndarray):
        return _to_numpy(key)
    return key


def _leading_mask(a, key):
    """``key`` as a vmnp array when it is a boolean mask over the leading axes of ``a`` (of
    shape ``a.shape[:key.ndim]``, at least 1-d); None otherwise (NumPy's errors for a mask of
    another shape come from the host path)."""
    if not (isinstance(key, (ndarray, _np.ndarray)) and key.dtype == _np.bool_):
        return None
    if key.ndim == 0 or key.shape != a.shape[: key.ndim]:
        return None
    return key if isinstance(key, ndarray) else asarray(key)


def _masked_rows(a, mask):
    """``a`` with the axes ``mask`` covers made one (a view where ``a``'s layout allows), and
    the row-major positions in it of the elements ``mask`` selects: what a gather or scatter
    of ``a[mask]`` takes (the mask is computed: its count is the result's length)."""
    rows = a if mask.ndim == 1 else a.reshape((-1,) + a.shape[mask.ndim :])
    return rows, _flat_index(rows, _vmnp._true_positions(mask))


def _flat_index(a, key):
    """``key``, an integer array or list indexing the first axis of ``a``, as the checked
    row-major positions in ``a`` of the elements it selects (of shape ``key.shape +
    a.shape[1:]``, negative indexes wrapped); None for any other key. Indexes out of range are
    NumPy's IndexError: checked on the host for a list, with one flush for a vmnp array."""
    if not (isinstance(key, (ndarray, list)) and a.ndim >= 1):
        return None
    n = a.shape[0]
    if isinstance(key, list):
        host = _np.asarray(key)
        if host.size == 0:
            host = host.astype(_np.intp)  # NumPy's index of nothing: `a[[]]`
        if host.dtype.kind not in "iu" or host.ndim != 1:
            return None
        bad = host[(host < -n) | (host >= n)]
        if bad.size:
            raise IndexError(f"index {bad[0]} is out of bounds for axis 0 with size {n}")
        idx = asarray(_np.where(host < 0, host + n, host))
    else:
        idx = key
        if idx.dtype.kind not in "iu":
            return None
        # A range known for the index's values (a permutation, an arange) needs no check; any
        # other is checked on its values, which runs what computes them.
        lo, hi = _vmnp._bounds(idx) or (-n - 1, n)
        if idx.size and not (-n <= lo and hi < n):
            out_of_range = (idx >= n) if idx.dtype.kind == "u" else (idx < -n) | (idx >= n)
            if bool(out_of_range.any()):
                bad = _to_numpy(idx)
                bad = bad[(bad < -n) | (bad >= n)][0]
                raise IndexError(f"index {bad} is out of bounds for axis 0 with size {n}")
        if idx.dtype.kind == "i" and lo < 0:
            idx = where(idx < 0, idx + n, idx)
    if a.ndim == 1:
        return idx
    # Whole rows: each index's first position, plus the positions within a row.
    rest = a.shape[1:]
    row = _math.prod(rest)
    first = idx.astype("int64").reshape(idx.shape + (1,) * len(rest)) * row
    return first + arange(row).reshape(rest)


def getitem(a, key):
    """Advanced indexing: an integer array or list selecting along the first axis gathers on
    the VM; masks and other fancy indexes have result-dependent shapes and run on the synced
    data."""
    if type(key) is ndarray and key.dtype == _np.bool_ and key.shape == a.shape and a.ndim:
        # A mask of every axis (``x[x > 0]``): the elements it selects, in row-major order.
        return _vmnp._compress(a, key)
    idx = _flat_index(a, key)
    if idx is not None:
        return _vmnp._gather(a, idx)
    mask = _leading_mask(a, key)
    if mask is not None:
        return _vmnp._gather(*_masked_rows(a, mask))
    r = _read_view(a)[_np_key(key)]
    return asarray(r)


def _broadcasts(shape, target):
    """True when an array of ``shape`` broadcasts to ``target`` unchanged."""
    return len(shape) <= len(target) and _b.all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _checked_scalar(a, value):
    """``value``, a scalar about to be stored into ``a``, as a 0-d array of ``a``'s dtype: the
    conversion raises NumPy's errors (NaN or out-of-range into integers)."""
    t = empty((), a.dtype)
    t[()] = value
    return t


def setitem(a, key, value):
    """Advanced assignment: an integer array or list selecting along the first axis scatters on
    the VM (the last of repeated indexes wins); a same-shape mask with a broadcastable value is a lazy
    ``where``; anything else runs on the synced data and is written back."""
    if not a._writeable:
        raise ValueError("assignment destination is read-only")
    if _foreign(value):
        # A value the VM cannot hold (complex): NumPy's assignment, on the synced data.
        n = _np.array(_read_view(a))
        n[_np_key(key)] = value
        _vmnp._assign(a, asarray(n))
        return
    if isinstance(value, _np.generic) and value.dtype != a.dtype and value.dtype.kind in "biuf":
        # A NumPy scalar through an index array or a mask is cast as an array (integers wrap).
        value = asarray(value).astype(a.dtype)
    idx = _flat_index(a, key)
    if idx is not None:
        try:
            _vmnp._scatter(a, idx, value)
        except ValueError as e:
            if not str(e).startswith("could not broadcast input array"):
                raise
            shape = value.shape if isinstance(value, ndarray) else _np.shape(value)
            raise ValueError(
                f"shape mismatch: value array of shape {_shape_text(shape)} could not be broadcast "
                f"to indexing result of shape {_shape_text(a[key].shape)}"
            ) from None
        return
    mask = _leading_mask(a, key)
    if mask is not None:
        if _vmnp._masked_fill(a, mask, value) or _vmnp._masked_store(a, mask, value):
            return
        v = value if isinstance(value, (int, float, bool, ndarray)) else asarray(value)
        if not isinstance(v, ndarray):
            v = _checked_scalar(a, v)
        if v.ndim == 0:
            # One value: a lazy ``where`` (nothing computed), the mask broadcast over the rest;
            # the value cast to the array's dtype first, as NumPy's assignment casts it (a
            # ``where`` of two dtypes would promote, and the array's other elements would come
            # back rounded through the promoted dtype).
            if v.dtype != a.dtype:
                v = v.astype(a.dtype)
            _vmnp._assign(a, where(mask.reshape(mask.shape + (1,) * (a.ndim - mask.ndim)), v, a))
            return
        if mask.ndim == 1 or a._contiguous:
            rows, idx = _masked_rows(a, mask)
            if _broadcasts(v.shape, idx.shape):
                _vmnp._scatter(rows, idx, v)
                return
            # NumPy's error for values that do not fit comes from the host path.
    n = _np.array(_read_view(a))
    n[_np_key(key)] = value.__array__() if isinstance(value, ndarray) else value
    _vmnp._assign(a, asarray(n))


def convert_as(obj, dtype):
    """A list or tuple of Python numbers, or another object, about to be stored into an array of
    ``dtype``, converted as NumPy converts it (Python ints must fit, ``None`` is NaN in floats);
    None when it holds vmnp arrays."""
    if isinstance(obj, (list, tuple)) and _b.any(isinstance(x, ndarray) for x in _flat(obj)):
        return None
    return asarray(_np.asarray(obj, dtype=dtype))


def convert(obj):
    """Operands the native layer does not know directly (NumPy arrays and scalars, lists)."""
    return _convert(obj)


def __repr__(a):
    if a.ndim == 0:
        return repr(_to_numpy(a)[()])
    return repr(_to_numpy(a))


def __str__(a):
    if a.ndim == 0:
        return str(_to_numpy(a)[()])
    return str(_to_numpy(a))


def __format__(a, spec):
    if a.ndim == 0:
        return format(_to_numpy(a)[()], spec)
    return format(_to_numpy(a), spec)


def item(a, *args):
    if not args and a.size != 1:
        raise ValueError("can only convert an array of size 1 to a Python scalar")
    return _to_numpy(a).item(*args)


def tolist(a):
    return _to_numpy(a).tolist()


def __array__(a, dtype=None, copy=None):
    # NumPy 2's protocol: copy=True must copy, copy=False must not, None copies only if needed.
    if copy:
        n = _to_numpy(a)
        return n if dtype is None else n.astype(dtype, copy=False)
    n = _np.asarray(memoryview(a))  # a read-only view of the synced data (the buffer protocol)
    if dtype is None or n.dtype == _np.dtype(dtype):
        return n
    if copy is False:
        raise ValueError("Unable to avoid copy while creating an array as requested.")
    return n.astype(dtype)


def __bool__(a):
    if a.size == 0:
        raise ValueError(
            "The truth value of an empty array is ambiguous. Use `array.size > 0` to check that an array is not empty."
        )
    if a.size != 1:
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()")
    return _b.bool(item(a))


def _converts_to_scalar_only_at_0d():
    """True when the installed NumPy converts only 0-d arrays to Python scalars (2.4 and
    later; before, any one-element array)."""
    try:
        float(_np.array([1.0]))
    except TypeError:
        return True
    return False


_ONLY_0D = _converts_to_scalar_only_at_0d()


def _check_scalar(a):
    if _ONLY_0D and a.ndim != 0:
        raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
    if a.size != 1:
        raise TypeError("only length-1 arrays can be converted to Python scalars")


def __float__(a):
    _check_scalar(a)
    return float(item(a))


def __int__(a):
    _check_scalar(a)
    return int(item(a))


def __index__(a):
    if a.ndim == 0 and a.dtype.kind not in "iub":
        # A 0-d array stands for a NumPy scalar (`range(x.mean())`): its error.
        raise TypeError(f"'numpy.{a.dtype.type.__name__}' object cannot be interpreted as an integer")
    if a.ndim != 0 or a.dtype.kind not in "iub":
        raise TypeError("only integer scalar arrays can be converted to a scalar index")
    return int(item(a))


def __iter__(a):
    if a.ndim == 0:  # a 0-d array stands for NumPy's scalar (`for v in x.sum()`): its error
        raise TypeError(f"'numpy.{a.dtype.type.__name__}' object is not iterable")
    if a.ndim == 1:
        # NumPy's scalars, as NumPy iterates (statistics.mean(x), isinstance(v, float)): the
        # values as they are when the loop starts, synced once.
        return iter(_to_numpy(a))
    return (a[i] for i in range(a.shape[0]))


def __contains__(a, item):
    return _b.bool((a == item).any())


def __matmul__(a, b):
    if _text_operand(a, b):
        return _numpy_operator(_operator.matmul, a, b)
    return matmul(a, b)


def __rmatmul__(a, b):
    if _text_operand(a, b):
        return _numpy_operator(_operator.matmul, b, a)
    return matmul(b, a)


def __divmod__(a, b):
    if _text_operand(a, b):
        return _numpy_operator(divmod, a, b)
    return floor_divide(a, b), remainder(a, b)


def __rdivmod__(a, b):
    if _text_operand(a, b):
        return _numpy_operator(divmod, b, a)
    return floor_divide(b, a), remainder(b, a)


def __round__(a, ndigits=None):
    # A 0-d array stands for a NumPy scalar, which rounds to a Python int without ndigits;
    # NumPy's arrays do not round (`round(x)` is a TypeError, `np.round(x)` rounds).
    if a.ndim != 0:
        raise TypeError("type numpy.ndarray doesn't define __round__ method")
    if ndigits is None:
        return round(item(a))
    return _ufunc.round(a, ndigits or 0)


def __trunc__(a):
    _check_scalar(a)
    return _math.trunc(item(a))


def __floor__(a):
    _check_scalar(a)
    return _math.floor(item(a))


def __ceil__(a):
    _check_scalar(a)
    return _math.ceil(item(a))


def __copy__(a):
    return _manip.copy(a)


def __deepcopy__(a, memo=None):
    return _manip.copy(a)


def __reduce__(a):
    # Bytes, not a NumPy array: under `python -m vmnp` the name `numpy.ndarray` is vmnp's, so
    # pickle could not name NumPy's class.
    if _column_major(a):  # NumPy's pickle keeps a column-major layout
        return (_rebuild, (a.T._host(), _dtype_name(a.dtype), tuple(a.shape), True))
    return (_rebuild, (a._host(), _dtype_name(a.dtype), tuple(a.shape)))


def __setstate__(a, state):
    raise TypeError("vmnp arrays are restored through __reduce__")


def __array_namespace__(a, api_version=None):
    if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(f'Version "{api_version}" of the Array API Standard is not supported.')
    return _namespace


def to_device(a, device, stream=None):
    return a


def astype(a, dtype, order="K", casting="unsafe", subok=True, copy=True):
    if dtype is None:  # NumPy's default dtype
        dtype = "float64"
    if casting != "unsafe" and not _np.can_cast(a.dtype, dtype, casting):
        raise TypeError(
            f"Cannot cast array data from {a.dtype!r} to {_np.dtype(dtype)!r} according to the rule {casting!r}"
        )
    if not copy and _np.dtype(dtype) == a.dtype:
        return a
    try:
        target = _dt(dtype)
    except _UnsupportedDType:  # NumPy's array of that dtype

        def numpy_astype(x, dtype, **kwargs):
            # A 0-d vmnp array reaches NumPy as the scalar it stands for, which has `astype` too.
            return _np.asarray(x).astype(dtype, **kwargs)[()] if _np.ndim(x) == 0 else x.astype(dtype, **kwargs)

        return _fallback("ndarray.astype", numpy_astype, (a, dtype), {"order": order, "casting": casting})
    return _copy_in(a, target, order)


def fill(a, value):
    a[...] = value


def reshape(a, *shape, order="C", copy=None):
    if len(shape) == 1 and not isinstance(shape[0], (int, _np.integer)):
        shape = shape[0]
    return _manip.reshape(a, shape, order, copy=copy)


def flatten(a, order="C"):
    return ravel(a, order).copy()


def transpose(a, *axes):
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return _manip.transpose(a, axes or None)


def nonzero(a):
    return _reductions.nonzero(a)


def conj(a):
    """``ndarray.conj``: the array itself (vmnp arrays are real; NumPy returns real arrays
    unchanged)."""
    return a


def _forward(name):
    # The Python function itself, not the public wrapper (the native class has tried its own
    # path; a warning's stack level then points at the program's line).
    func = getattr(_namespace, name)
    func = getattr(func, "__wrapped__", func)

    def method(a, *args, **kwargs):
        try:
            return func(a, *args, **kwargs)
        except _UnsupportedDType:
            # An argument of a dtype the VM lacks (`x.clip(1j)`): NumPy's method, through the
            # fallback (on an array: a 0-d one stands for a scalar, whose methods are the same).
            def numpy_method(x, *args, **kwargs):
                return getattr(_np.asarray(x), name)(*args, **kwargs)

            return _fallback(f"ndarray.{name}", numpy_method, (a, *args), kwargs)

    method.__name__ = name
    return method


_FORWARDED = [
    "sum", "prod", "min", "max", "mean", "std", "var", "any", "all", "argmin", "argmax", "cumsum", "cumprod",
    "ravel", "swapaxes", "clip", "dot", "round", "squeeze", "diagonal",
]  # fmt: skip


def copy(a, order="C"):
    """``ndarray.copy``: row-major unless ``order`` asks otherwise (``numpy.copy`` keeps the
    layout by default)."""
    return _manip.copy(a, order)


#: NumPy functions outside NumPy's top-level namespace and ``numpy.linalg`` that vmnp computes.
_SUBMODULE_FUNCTIONS = {_np.lib.stride_tricks.sliding_window_view: _manip.sliding_window_view}


def __array_function__(a, func, types, args, kwargs):
    """NumPy functions called on vmnp arrays (``numpy.sum(x)``) run on the VM where vmnp has
    them, else through the fallback."""
    if func.__module__ == "numpy.linalg":
        mine = _linalg.FUNCTIONS.get(func.__name__)
    elif func in _SUBMODULE_FUNCTIONS:
        mine = _SUBMODULE_FUNCTIONS[func]
    elif getattr(_np, func.__name__, None) is func:
        mine = vars(_namespace).get(func.__name__)
    else:
        # A function of another NumPy module (`numpy.emath.sqrt`, `numpy.char.mod`): vmnp's
        # function of the same name is another function.
        mine = None
    if mine is not None and callable(mine) and func.__module__.startswith("numpy") and mine is not func:
        try:
            return mine(*args, **kwargs)
        except _UnsupportedDType:  # an argument of a dtype the VM lacks
            pass
    return _fallback(func.__name__, func, args, kwargs)


# numpy.ndarray methods that change the array in place: through the fallback they run on a
# copy, which is then written back.
_IN_PLACE = {"put", "partition", "itemset", "setfield", "byteswap"}


def _row_major_dense(shape, strides):
    """True when a view of ``shape`` and ``strides`` (in elements) is dense in row-major order
    (NumPy's C-contiguity: extents of 1 take any stride, empty arrays are contiguous)."""
    if 0 in shape:
        return True
    step = 1
    for n, st in zip(reversed(shape), reversed(strides), strict=True):
        if n != 1 and st != step:
            return False
        step *= n
    return True


class _Flags:
    """``ndarray.flags``: the memory layout of a vmnp array's view."""

    _NAMES = {"C": "C_CONTIGUOUS", "CONTIGUOUS": "C_CONTIGUOUS", "F": "F_CONTIGUOUS", "FORTRAN": "F_CONTIGUOUS"}
    _NAMES.update(W="WRITEABLE", A="ALIGNED", O="OWNDATA", X="WRITEBACKIFCOPY", B="BEHAVED")
    _NAMES.update(CA="CARRAY", FA="FARRAY")

    def __init__(self, a):
        object.__setattr__(self, "_array", a)
        shape, strides = tuple(a.shape), tuple(a._strides)
        c = _row_major_dense(shape, strides)
        f = _row_major_dense(shape[::-1], strides[::-1])
        values = {
            "C_CONTIGUOUS": c,
            "F_CONTIGUOUS": f,
            "OWNDATA": c and a._start == 0,
            "WRITEABLE": a._writeable,
            "ALIGNED": True,
            "WRITEBACKIFCOPY": False,
            "FNC": f and not c,
            "FORC": f or c,
            "BEHAVED": True,
            "CARRAY": c,
            "FARRAY": f and not c,
        }
        object.__setattr__(self, "_values", values)

    def __setitem__(self, key, value):
        name = self._NAMES.get(key.upper(), key.upper())
        if name != "WRITEABLE":
            raise ValueError(f"vmnp arrays can only set the WRITEABLE flag, not {key}")
        self._array._set_writeable(_b.bool(value))
        self._values["WRITEABLE"] = _b.bool(value)

    def __setattr__(self, name, value):
        self[name] = value

    def __getitem__(self, key):
        name = self._NAMES.get(key.upper(), key.upper())
        if name not in self._values:
            raise KeyError(f"Unknown flag {key}")
        return self._values[name]

    def __getattr__(self, name):
        key = {"contiguous": "C_CONTIGUOUS", "fortran": "F_CONTIGUOUS"}.get(name, name.upper())
        if key in self._values:
            return self._values[key]
        raise AttributeError(f"'flagsobj' object has no attribute '{name}'")

    def __repr__(self):
        keys = ["C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED", "WRITEBACKIFCOPY"]
        return "".join(f"  {k} : {self._values[k]}\n" for k in keys)


class flatiter:
    """``ndarray.flat``: the elements in row-major order, to read and to assign; an iterator over
    them (NumPy's scalars of their values as they are when the iteration starts)."""

    def __init__(self, a):
        self.base = a
        self.index = 0
        self._items = None

    def __len__(self):
        return self.base.size

    def __iter__(self):
        return self

    def __next__(self):
        if self._items is None:
            self._items = iter(ravel(self.base))
        item = next(self._items)
        self.index += 1
        return item

    @property
    def coords(self):
        return tuple(int(i) for i in _np.unravel_index(self.index, self.base.shape))

    def copy(self):
        return self.base.flatten()

    def __array__(self, dtype=None, copy=None):
        return asnumpy(self.base.flatten()).astype(dtype, copy=False) if dtype else asnumpy(self.base.flatten())

    def __getitem__(self, key):
        return ravel(self.base)[key]

    def __setitem__(self, key, value):
        a = self.base
        if _np.ndim(value) != 0:
            # NumPy repeats the values over the selected elements (and drops any beyond them).
            value = ravel(asarray(value))
            if isinstance(key, slice):
                shape = (len(range(*key.indices(a.size))),)
            else:
                shape = _np.shape(_np.arange(a.size)[asnumpy(key) if isinstance(key, ndarray) else key])
            n = _math.prod(shape)
            if value.size != n and value.size > 0:
                value = tile(value, -(-n // value.size))[:n]
            value = value.reshape(shape)
        strides = _manip._view_strides(a.shape, a._strides, [a.size])
        if strides is not None:
            flat = _vmnp._view(a, a._start, [a.size], strides)
            flat[key] = value
            return
        key = asnumpy(key) if isinstance(key, ndarray) else key
        positions = _np.arange(a.size)[key]
        a[tuple(asarray(i) for i in _np.unravel_index(positions, a.shape))] = value


def view(a, dtype=None, type=None):  # noqa: A002 (NumPy's name)
    """A new array object viewing the same elements (``dtype``: only ``a``'s own; the VM has no
    reinterpreting views, so another dtype goes through the fallback, as a copy made read-only:
    writing it would not change ``a``, so it is an error rather than a silent difference)."""
    if dtype is None or _np.dtype(dtype) == a.dtype:
        return a[...]
    r = _fallback("ndarray.view", _to_numpy(a).copy().view, (dtype,), {})
    if isinstance(r, ndarray):
        r._set_writeable(False)
    return r


def __reversed__(a):
    if a.ndim == 0:
        raise TypeError(f"'numpy.{a.dtype.type.__name__}' object is not reversible")
    return iter(a[::-1])


# Methods of Python's numbers that a 0-d array (vmnp's stand-in for a NumPy scalar) answers
# with its value: `statistics` and `fractions` call them.
_SCALAR_METHODS = {
    "as_integer_ratio",
    "is_integer",
    "bit_length",
    "bit_count",
    "hex",
    "fromhex",
    "numerator",
    "denominator",
}


# Methods that are the namespace's functions of the array (the same parameters).
_FUNCTION_METHODS = {"take", "trace", "repeat", "argsort", "searchsorted", "argpartition"}


def getattr_(a, name):
    """Attributes of ``numpy.ndarray`` that vmnp's class does not define."""
    if name in _SCALAR_METHODS and a.ndim == 0 and hasattr(a.dtype.type, name):
        # Those the NumPy scalar of the dtype has (`np.int64` has `numerator`, no `as_integer_ratio`).
        return getattr(_to_numpy(a)[()], name)
    if name in _FUNCTION_METHODS:
        func = getattr(_namespace, name)
        return lambda *args, **kwargs: func(a, *args, **kwargs)
    if name == "view":
        return lambda *args, **kwargs: view(a, *args, **kwargs)
    if name == "sort":
        return lambda *args, **kwargs: _sorting.sort_in_place(a, *args, **kwargs)
    if name == "partition":
        return lambda *args, **kwargs: _sorting.partition_in_place(a, *args, **kwargs)
    if name == "flags":
        return _Flags(a)
    if name == "setflags":

        def setflags(write=None, align=None, uic=None):
            if write is not None:
                a._set_writeable(_b.bool(write))

        return setflags
    if name == "base":
        # An array that is all of its base owns its data; another view gets an array of the
        # whole base (vmnp does not keep the array a view was taken from).
        if a._contiguous and a._start == 0 and a.size == a._base_nelem:
            return None
        return _vmnp._view(a, 0, [a._base_nelem], [1])
    if name == "real":
        return a
    if name == "imag":
        return zeros_like(a)
    if name == "mT":
        return swapaxes(a, -1, -2)
    if name == "device":
        return "vm"
    if name == "ctypes":
        # Of a view of the synced data (which stays put while the view lives), as NumPy's
        # `a.ctypes.data` is the address of the array's own elements.
        return _np.asarray(a).ctypes
    if name == "data":
        return memoryview(a)
    attr = None if name.startswith("__") else getattr(_np.ndarray, name, None)
    if attr is None:
        owner = f"numpy.{a.dtype.type.__name__}" if a.ndim == 0 else "vmnp.ndarray"  # a 0-d one: the scalar's
        raise AttributeError(f"'{owner}' object has no attribute '{name}'")
    if not callable(attr):
        return getattr(_to_numpy(a), name)

    if name == "resize":
        # NumPy's resize changes the array's shape in place; a vmnp array's shape is fixed.
        raise ValueError("a vmnp array cannot change its shape in place: use np.resize(a, shape) for a new array")

    def method(*args, **kwargs):
        n = _np.array(_read_view(a))
        r = _fallback(f"ndarray.{name}", getattr(n, name), args, kwargs)
        if name in _IN_PLACE:
            _vmnp._assign(a, asarray(n))
        return r

    method.__name__ = name
    return method


def ndarray_new(shape, dtype, buffer, offset, strides, order):
    """What ``numpy.ndarray(shape, dtype, buffer, offset, strides, order)`` makes: an
    uninitialised array, or the elements of ``buffer`` (copied: a vmnp array's memory is the
    VM's)."""
    if isinstance(shape, _numbers.Real) and not hasattr(shape, "__index__") and dtype is None and buffer is None:
        # A number that is no extent (a float, a Fraction): vmnp's class called as the NumPy
        # scalar type that a 0-d result stands for, as `statistics` calls `type(x)(value)`.
        return array(float(shape))
    if buffer is None and strides is None:
        return empty(shape, float if dtype is None else dtype, order=order or "C")
    n = _np.ndarray(shape, dtype=dtype, buffer=buffer, offset=offset or 0, strides=strides, order=order)
    return array(n)


def set_shape(a, shape):
    """The view of ``a`` that ``a.shape = shape`` puts in place: NumPy's reshape without a
    copy, with NumPy's errors."""
    if shape is None:
        raise TypeError("Use () not None as shape arguments")
    try:
        return _manip.reshape(a, shape, copy=False)
    except ValueError as e:
        if "copy" not in str(e):
            raise
    raise AttributeError(
        "Incompatible shape for in-place modification. Use `.reshape()` to make a copy with the desired shape."
    )


# NumPy 2.4 deprecated assigning ``strides``: vmnp warns where the NumPy it runs beside does.
_STRIDES_SETTER_DEPRECATED = _np.lib.NumpyVersion(_np.__version__) >= "2.4.0.dev0"


def set_strides(a, strides):
    """The view of ``a`` that ``a.strides = strides`` puts in place: the same first element
    with other byte strides, NumPy's errors when they leave the memory of ``a``'s base. On the
    VM a stride must be a whole number of elements."""
    if _STRIDES_SETTER_DEPRECATED:
        _warnings.warn(
            "Setting the strides on a NumPy array has been deprecated in NumPy 2.4.\n"
            "As an alternative, you can create a new view using np.lib.stride_tricks.as_strided.",
            DeprecationWarning,
            stacklevel=2,
        )
    try:
        new = (_operator.index(strides),) if not isinstance(strides, (tuple, list)) else strides
        new = tuple(_operator.index(s) for s in new)
    except TypeError:
        raise TypeError("invalid strides") from None
    if len(new) != a.ndim:
        raise ValueError(f"strides must be  same length as shape ({a.ndim})")  # (NumPy's two spaces)
    size = a.itemsize
    if any(s % size for s in new):
        raise ValueError(f"vmnp: strides must be whole elements ({size} bytes each), got {new}")
    try:
        return _vmnp._view(a, a._start, list(a.shape), [s // size for s in new])
    except ValueError:
        raise ValueError("strides is not compatible with available memory") from None


def set_real(a, value):
    a[...] = value


def set_imag(a, value):
    raise TypeError("array does not have imaginary part to set")


def hooks(namespace):
    """The dict the native class calls into; ``namespace`` is the public module, ``vmnp``."""
    global _namespace
    _namespace = namespace
    h = {name: _forward(name) for name in _FORWARDED}
    g = globals()
    h["getattr"] = getattr_
    h["full_like"] = lambda a, value, dtype: full_like(a, value, dtype=dtype)
    h["convert_as"] = convert_as
    h["ndarray_new"] = ndarray_new
    h["set_shape"] = set_shape
    h["set_strides"] = set_strides
    h["flat"] = flatiter
    h["set_flat"] = lambda a, value: flatiter(a).__setitem__(slice(None), value)
    h["set_real"], h["set_imag"] = set_real, set_imag
    h["operator_fallback"] = _operator_fallback
    h["inplace_fallback"] = _inplace_fallback
    h["conj"] = h["conjugate"] = conj
    for name in [
        "getitem", "setitem", "convert", "__repr__", "__str__", "__format__", "item", "tolist", "__array__",
        "__bool__", "__float__", "__int__", "__index__", "__iter__", "__contains__", "__matmul__", "__rmatmul__",
        "__divmod__", "__rdivmod__", "__round__", "__trunc__", "__floor__", "__ceil__", "__copy__", "__deepcopy__",
        "__reduce__", "__setstate__", "__reversed__",
        "__array_namespace__", "to_device", "astype", "copy", "fill", "reshape", "flatten", "transpose", "nonzero",
        "__array_function__",
    ]:  # fmt: skip
        h[name] = g[name]
    return h
