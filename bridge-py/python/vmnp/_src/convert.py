"""Conversion between vmnp's arrays and everything else: ``asarray``, ``array`` and their
relatives, NumPy arrays in and out, and operands of the native layer."""

import builtins as _b

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from .dtypes import _SUPPORTED, _dt, _dtype_name, _UnsupportedDType
from .public import export


def _copy_flag(copy):
    """NumPy's ``copy=`` argument as True (always), False (never) or None (if needed)."""
    mode = getattr(_np, "_CopyMode", None)
    if mode is not None and isinstance(copy, mode):
        return {mode.ALWAYS: True, mode.NEVER: False}.get(copy)
    return copy if copy is None else _b.bool(copy)


def _no_copy():
    return ValueError(
        "Unable to avoid copy while creating an array as requested.\nIf using `np.array(obj, copy=False)` "
        "replace it with `np.asarray(obj)` to allow a copy when needed (no behavior change in NumPy 1.x).\n"
        "For more details, see https://numpy.org/devdocs/numpy_2_0_migration_guide.html#adapting-to-changes-"
        "in-the-copy-keyword."
    )


def _check_device(device):
    if device not in (None, "vm", "cpu"):
        raise ValueError(f'Device not understood. Only "vm" (or "cpu") is allowed, but received: {device}')


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """A vmnp array of ``a``: vmnp arrays pass through (cast when ``dtype`` differs, laid out
    as ``order`` asks), objects with ``__array__`` give their array, anything else is converted
    by NumPy and copied in."""
    if type(a) is ndarray and dtype is None and order is None and copy is None and device is None:
        return a  # the common case, on every path that takes array-likes
    _check_device(device)
    if isinstance(a, _np.ndarray) and type(a) is not _np.ndarray:
        # NumPy's subclasses (masked arrays, matrices, memmaps) keep their semantics: the
        # function meeting one is NumPy's (its public wrapper falls back).
        raise _UnsupportedDType(f"vmnp does not hold NumPy's {type(a).__name__}")
    copy = _copy_flag(copy)
    if not isinstance(a, (ndarray, _np.ndarray, list, tuple)) and hasattr(a, "__array__"):
        got = a.__array__() if dtype is None else a.__array__(_np.dtype(dtype))
        if isinstance(got, ndarray):
            return asarray(got, dtype, order, copy=copy)
    if isinstance(a, ndarray):
        r = a
        if dtype is not None and _dt(dtype) != _dtype_name(a.dtype):
            if copy is False:
                raise _no_copy()
            r = _vmnp._cast(a, _dt(dtype))
        if order in ("C", "c") and not r.flags.c_contiguous or order in ("F", "f") and not r.flags.f_contiguous:
            if copy is False:
                raise _no_copy()
            from .manip import copy_  # (call-time imports: those modules build on this one)

            return copy_(r, order=order)
        return r.copy() if copy and r is a else r
    if (
        isinstance(a, (list, tuple))
        and not _NUMBERS.issuperset(map(type, a))
        and _b.any(isinstance(x, ndarray) for x in _flat(a))
    ):
        from .creation import empty
        from .manip import stack

        _dt(dtype)  # a dtype the VM lacks (`dtype=object` for ragged rows): NumPy's array
        if copy is False:
            raise _no_copy()
        if not a:
            return asarray(_np.asarray(a), dtype)
        parts = [asarray(x) for x in a]
        if len({p.shape for p in parts}) > 1:
            raise ValueError(
                "setting an array element with a sequence. The requested array has an inhomogeneous shape "
                f"after 1 dimensions. The detected shape was ({len(parts)},) + inhomogeneous part."
            )
        if _b.all(p.ndim == 0 for p in parts):
            # Scalar results gathered into a vector (`np.array([x.sum(), y.max()])` in a time
            # step): one store per element, without stacking's reshapes.
            r = empty(len(parts), _np.result_type(*[p.dtype for p in parts]))
            for i, p in enumerate(parts):
                r[i] = p
        else:
            r = stack(parts)
        return r if dtype is None or _dt(dtype) == _dtype_name(r.dtype) else _vmnp._cast(r, _dt(dtype))
    n = _np.asarray(a, dtype=dtype)
    if _dtype_name(n.dtype) not in _SUPPORTED:
        if n.dtype.kind == "f" and n.dtype.itemsize < 4:
            n = n.astype(_np.float32)
        elif n.dtype.kind in "U" and n.size == 0:
            n = n.astype(_np.float64)
        else:
            raise _UnsupportedDType(f"vmnp does not support dtype {_dtype_name(n.dtype)}")
    if not n.flags.c_contiguous:
        if n.ndim > 1 and n.flags.f_contiguous and order not in ("C", "c"):
            # NumPy's column-major array (`np.load` of a Fortran-ordered file) keeps its layout.
            return _vmnp._from_bytes(_bytes_of(n.T), _dtype_name(n.dtype), list(n.shape[::-1])).T
        n = n.copy(order="C")
    r = _vmnp._from_bytes(_bytes_of(n), _dtype_name(n.dtype), list(n.shape))
    if order in ("F", "f") and r.ndim > 1:
        from .manip import copy_

        return copy_(r, order="F")
    return r


def _bytes_of(n):
    """The bytes of C-contiguous NumPy array ``n``, read where they lie (no copy)."""
    return memoryview(n).cast("B") if n.size else b""


#: Element types of a sequence of plain numbers (no vmnp array inside, at any depth).
_NUMBERS = frozenset((float, int, _b.bool))


def frombuffer(buffer, dtype=float, count=-1, offset=0, *, like=None):
    """The elements of ``buffer`` as a vmnp array (a copy: a vmnp array's memory is the
    VM's), read-only where the buffer is (``bytes``), as NumPy's view of it would be."""
    n = _np.frombuffer(buffer, dtype, count, offset)
    r = asarray(n)
    if not n.flags.writeable:
        r.flags.writeable = False
    return r


def _flat(seq):
    for x in seq:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def array(a, dtype=None, *, device=None, copy=True, order="K", subok=False, ndmin=0, like=None):
    """A new vmnp array with the data of ``a`` (a copy, unless ``copy=False`` or ``None`` allows
    sharing); ``order='F'`` lays it out column-major."""
    copy = _copy_flag(copy)
    r = asarray(a, dtype, device=device, copy=False if copy is False else None)
    if copy is False and r is not a:
        raise _no_copy()
    if order in ("F", "f") and r.ndim > 1 and not r.flags.f_contiguous:
        r = asfortranarray(r)
    elif order in ("C", "c") and _column_major(r):
        r = r.copy("C")
    elif copy and r is a:
        r = r.copy(order)
    while r.ndim < ndmin:
        r = r[None]
    return r


asanyarray = asarray


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` in ``dtype`` (the array API's function form of ``x.astype``)."""
    _check_device(device)
    x = asarray(x)
    if not copy and _dt(dtype) == _dtype_name(x.dtype):
        return x
    return _vmnp._cast(x, _dt(dtype))


def real(val):
    """The real part: the array itself for the real dtypes vmnp has (a view)."""
    return asarray(val)


def imag(val):
    """The imaginary part: zeros for the real dtypes vmnp has."""
    from .creation import zeros_like

    return zeros_like(val)


def require(a, dtype=None, requirements=None, *, like=None):
    """``a`` with ``dtype`` and the layout ``requirements`` ask for ('C', 'F'; the others hold
    for every vmnp array), copied only when needed."""
    r = asarray(a, dtype)
    wanted = {str(x).upper()[:1] for x in (requirements or ())}
    if "F" in wanted and not r.flags.f_contiguous:
        r = asfortranarray(r)
    if "C" in wanted and not r.flags.c_contiguous:
        r = ascontiguousarray(r)
    return r


def may_share_memory(a, b, max_work=None):
    """True when ``a`` and ``b`` view the same base (vmnp arrays; anything else shares nothing
    with them)."""
    if not (isinstance(a, ndarray) and isinstance(b, ndarray)):
        return False
    return _vmnp._overlap(a, b) != "disjoint" if max_work is not None else a._base_id == b._base_id


def shares_memory(a, b, max_work=None):
    """True when ``a`` and ``b`` have an element in common (exactly, for vmnp arrays)."""
    if not (isinstance(a, ndarray) and isinstance(b, ndarray)):
        return False
    return _vmnp._overlap(a, b) != "disjoint"


def ascontiguousarray(a, dtype=None, *, like=None):
    """``a`` as a row-major contiguous array of at least one dimension (a copy when needed)."""
    r = asarray(a, dtype)
    if r.ndim == 0:
        r = r.reshape(1)
    if r.flags.c_contiguous:
        return r
    from .manip import copy

    return copy(r, order="C")


def asfortranarray(a, dtype=None, *, like=None):
    """``a`` as a column-major contiguous array of at least one dimension (a copy when needed)."""
    r = asarray(a, dtype)
    if r.ndim == 0:
        r = r.reshape(1)
    return r if r.flags.f_contiguous else ascontiguousarray(r.T).T


def _to_numpy(a):
    """The array's elements as a new NumPy array (runs what they depend on), laid out
    column-major when ``a`` is (so that NumPy's functions meeting the layout, ``save``,
    ``ravel(order='K')``, see NumPy's)."""
    if _column_major(a):
        return _to_numpy(a.T).T
    data = a._host()
    return _np.frombuffer(data, dtype=a.dtype).reshape(a.shape)


def _read_view(a):
    """A read-only NumPy view of the array's synced host memory (runs what it depends on; no
    copy): for NumPy code that reads it and keeps nothing of it (the buffer stays pinned at
    its address for the base's life)."""
    return _np.asarray(memoryview(a))


def _column_major(a):
    """True when ``a`` (of 2 or more dimensions) is dense in column-major order and not in
    row-major order."""
    if a.ndim < 2 or a._contiguous:
        return False
    step = 1
    for n, st in zip(a.shape, a._strides, strict=True):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def _rebuild(data, dtype, shape, fortran=False):
    """The array a pickle holds (see ``ndarray.__reduce__``): ``data`` in row-major order, or
    column-major where ``fortran``."""
    if fortran:
        return asarray(_np.frombuffer(data, dtype=dtype).reshape(shape[::-1])).T
    return asarray(_np.frombuffer(data, dtype=dtype).reshape(shape))


def asnumpy(a):
    """``a`` as a NumPy array (vmnp arrays are synced and copied out)."""
    return _to_numpy(a) if isinstance(a, ndarray) else _np.asarray(a)


def _convert(obj):
    """Operand conversion for the native layer: NumPy arrays, NumPy scalars, sequences, and
    objects with ``__array__`` that leave ufuncs to NumPy (no ``__array_ufunc__`` of their own)."""
    array_like = hasattr(type(obj), "__array__") and getattr(type(obj), "__array_ufunc__", None) is None
    if isinstance(obj, (_np.ndarray, _np.generic, list, tuple)) or array_like:
        try:
            return asarray(obj)
        except TypeError:
            return None
    return None


def _from_numpy(n):
    """A NumPy result back as vmnp (arrays of supported dtypes, also inside lists, tuples and
    named tuples such as ``linalg.qr``'s); anything else unchanged."""
    # NumPy's subclasses (matrix, memmap, masked arrays) keep their own semantics: unchanged.
    if type(n) is _np.ndarray and _dtype_name(n.dtype) in _SUPPORTED:
        return asarray(n)
    if isinstance(n, tuple) and hasattr(n, "_fields"):
        return type(n)(*(_from_numpy(x) for x in n))
    if isinstance(n, (list, tuple)):
        return type(n)(_from_numpy(x) for x in n)
    return n


# The public functions as programs call them (see ``public.export``); ``array`` and ``asarray``
# of vmnp arrays and of lists of numbers recorded natively.
export(globals(), {"array": "array", "asarray": "asarray"})
