"""vmnp: NumPy programs on the vector VM.

``import vmnp as np`` gives a NumPy-like namespace whose arrays (:class:`vmnp.ndarray`) live in
the VM: operations are recorded as bytecode and run only when a value is observed (repr, item,
bool, conversion to NumPy, a result-dependent shape) or on :func:`flush`. The per-operation path
(operators, ufuncs, basic indexing, reductions) is native; this module builds the rest of the
namespace on top, and falls back to NumPy (with a :class:`FallbackWarning`) for what the VM
cannot express. ``python -m vmnp prog.py`` runs an unchanged NumPy program on the VM.
"""

import atexit as _atexit
import builtins as _b
import functools as _functools
import importlib as _importlib
import math as _math
import operator as _operator
import os as _os
import sys as _sys
import types as _types
import warnings as _warnings

# NumPy's OpenBLAS threads busy-wait for work for about 0.1 s after they start and after each
# call; vmnp runs its own thread pool and calls NumPy's BLAS only for fallbacks, so there they
# sleep at once instead of taking the cores from the VM's threads (a value the user set wins,
# and nothing changes when NumPy was imported first).
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as _np  # noqa: E402 (after OpenBLAS's setting)
import numpy.random  # noqa: E402, F401 (NumPy's own, loaded before `python -m vmnp` maps the name)

from . import _interrupt, _profile, _vmnp
from ._profile import profile
from ._vmnp import VMError, flush, ndarray, set_stack

__all__ = ["ndarray", "VMError", "FallbackWarning", "flush", "set_stack"]

# A program checks ``numpy.__version__`` for the API it may use: that of the NumPy vmnp mirrors.
__version__ = _np.__version__
__vmnp_version__ = "0.1.0"  # vmnp's own (the package's)

# NumPy's dtype objects and scalar types are reused rather than re-invented.
dtype = _np.dtype
bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64 = _np.float32, _np.float64
intp, uintp, int_, float_ = _np.intp, _np.uintp, _np.int_, _np.float64
double, single, byte, ubyte, short, ushort = _np.double, _np.single, _np.byte, _np.ubyte, _np.short, _np.ushort
intc, uintc, longlong, ulonglong = _np.intc, _np.uintc, _np.longlong, _np.ulonglong
generic, number, integer, signedinteger, unsignedinteger = (
    _np.generic,
    _np.number,
    _np.integer,
    _np.signedinteger,
    _np.unsignedinteger,
)
floating, inexact, bool = _np.floating, _np.inexact, _np.bool  # noqa: A001 (NumPy's name)
finfo, iinfo, can_cast, promote_types = _np.finfo, _np.iinfo, _np.can_cast, _np.promote_types
newaxis = None
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
PINF, NINF, NAN, Inf, Infinity = _np.inf, -_np.inf, _np.nan, _np.inf, _np.inf
errstate, seterr, geterr = _np.errstate, _np.seterr, _np.geterr
# Functions of dtypes and of NumPy's printing state (which vmnp's repr and str use): NumPy's.
issubdtype, isdtype = _np.issubdtype, _np.isdtype
set_printoptions, get_printoptions, printoptions = _np.set_printoptions, _np.get_printoptions, _np.printoptions

_SUPPORTED = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
)


class FallbackWarning(UserWarning):
    """A function ran on NumPy instead of the VM (its arguments were synced and converted)."""


class FallbackError(VMError):
    """A fallback to NumPy was needed while ``VMNP_FALLBACK=error`` forbids it."""


class _UnsupportedDType(TypeError):
    """A dtype the VM lacks (complex, strings, objects, datetimes, records) was asked for or
    met in data: the public function or operator meeting it runs on NumPy instead."""


_NAMES = {}


def _dtype_name(dtype_like):
    """NumPy's name of a dtype-like (``numpy.dtype(x).name``, which NumPy computes in Python on
    every access: ~2 us), remembered per hashable dtype-like."""
    try:
        return _NAMES[dtype_like]
    except (KeyError, TypeError):
        d = _np.dtype(dtype_like)
        # A byte order other than the machine's is no dtype the VM has (NumPy keeps it).
        name = d.name if d.isnative else d.str
        try:
            _NAMES[dtype_like] = name
        except TypeError:  # an unhashable dtype-like (a list of fields)
            pass
        return name


def _dt(dtype_like):
    """NumPy's name of a dtype-like, checked to be one the VM has; ``None`` passes through."""
    if dtype_like is None:
        return None
    name = _dtype_name(dtype_like)
    if name not in _SUPPORTED:
        raise _UnsupportedDType(f"vmnp does not support dtype {name}")
    return name


def _dt_or_float(dtype_like):
    """``_dt`` where ``None`` means NumPy's default dtype, float64 (``zeros(3, dtype=None)``)."""
    return "float64" if dtype_like is None else _dt(dtype_like)


# ---------------------------------------------------------------------------------- conversion


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
            return copy_(r, order=order)
        return r.copy() if copy and r is a else r
    if (
        isinstance(a, (list, tuple))
        and not _NUMBERS.issuperset(map(type, a))
        and _b.any(isinstance(x, ndarray) for x in _flat(a))
    ):
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
    return copy_(r, order="F") if order in ("F", "f") and r.ndim > 1 else r


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
    return r if r.flags.c_contiguous else copy(r, order="C")  # noqa: F821


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


# ------------------------------------------------------------------------------------ fallback

_warned = set()


# Fallbacks that write into an argument (0-d ones included, so those stay arrays for them).
_WRITES_ARGUMENTS = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "nan_to_num"}
_WRITES_ARGUMENTS |= {"random.shuffle", "Generator.shuffle", "ndarray.fill", "ndarray.itemset"}


def _fallback(name, func, args, kwargs):
    """Runs NumPy's ``func`` on synced copies of the arguments and converts the result back."""
    if _os.environ.get("VMNP_FALLBACK", "") == "error":
        raise FallbackError(f"vmnp: {name} is not implemented on the VM (VMNP_FALLBACK=error)")
    if name not in _warned:
        _warned.add(name)
        try:
            _warnings.warn(f"vmnp: {name} falls back to NumPy", FallbackWarning, stacklevel=3)
        except FallbackWarning:
            # A program's filter turning warnings into errors (`simplefilter("error")`, `-W
            # error`) is about NumPy's warnings: vmnp's note does not stop an unchanged NumPy
            # program (VMNP_FALLBACK=error is vmnp's way to make fallbacks errors).
            pass

    # Each vmnp array becomes one NumPy array (the same one wherever it appears, so that
    # aliasing holds). Functions that write into arguments (`out=`, `copyto`, `put`, ...) get
    # writable copies, written back when NumPy changed them; any other function gets read-only
    # views of the synced host memory (no copy: the VM's buffer export), so that a write NumPy
    # attempts is an error, never a silent loss.
    copies = {}

    def down(x):
        if isinstance(x, ndarray):
            if id(x) not in copies:
                n = _to_numpy(x) if writes else _read_view(x)
                copies[id(x)] = (x, n, n.copy() if writes else None)
            n = copies[id(x)][1]
            # A 0-d vmnp array stands for a NumPy scalar (NumPy's functions format and compare
            # scalars and 0-d arrays differently); writes need the array.
            return n[()] if n.ndim == 0 and not writes else n
        if isinstance(x, (list, tuple)):
            return type(x)(down(y) for y in x)
        return x

    out = kwargs.get("out")
    writes = out is not None or name in _WRITES_ARGUMENTS or name.endswith(".at")
    args = [down(a) for a in args]
    kwargs = {k: down(v) for k, v in kwargs.items()}
    r = _profile.fallback(name, lambda: func(*args, **kwargs))
    for x, n, before in copies.values():
        if before is not None and n.tobytes() != before.tobytes():
            x[...] = asarray(n)
    if out is not None:
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return _from_numpy(r)


def _foreign(x):
    """True when NumPy holds ``x`` in a dtype the VM lacks: a complex number, or a NumPy array
    or scalar (or a sequence NumPy makes one of) of complex numbers, text, objects, datetimes or
    records."""
    if isinstance(x, (ndarray, _b.bool, int, float, str, bytes)) or x is None:
        return False
    if isinstance(x, complex):
        return True
    if isinstance(x, _np.ndarray) and type(x) is not _np.ndarray:
        return True  # a subclass (a masked array, a matrix): NumPy's semantics
    if isinstance(x, (_np.ndarray, _np.generic)):
        return _dtype_name(x.dtype) not in _SUPPORTED and _dtype_name(x.dtype) != "float16"
    if isinstance(x, (list, tuple)):
        try:
            return _foreign(_np.asarray(x))
        except (TypeError, ValueError):
            return False
    return False


def _called_from_vmnp():
    """True when the function calling this one was called by vmnp's own code (which handles a
    dtype the VM lacks itself) rather than by a program."""
    name = _sys._getframe(2).f_globals.get("__name__", "")
    return name == "vmnp" or name.startswith("vmnp.")


def _operator_fallback(name, a, b):
    """``a op b`` where an operand is of a dtype the VM lacks (``x * 1j``): NumPy's ufunc
    ``name`` through the fallback; ``NotImplemented`` for any other operand, so that Python
    asks the other operand."""
    if not (_foreign(a) or _foreign(b)):
        if name in _TEXT_OPERATORS and _text_operand(a, b):
            return _numpy_operator(_TEXT_OPERATORS[name], a, b)
        return NotImplemented
    return _fallback(name, getattr(_np, name), (a, b), {})


def _text_operand(a, b):
    """True when one operand is text or None, the other a vmnp array: NumPy's operators raise
    their own errors for those (`x < "a"`, `x + None`)."""
    return _b.any(isinstance(x, (str, bytes)) or x is None for x in (a, b))


def _numpy_operator(func, a, b):
    """``func(a, b)`` on NumPy's copies of vmnp operands (0-d ones as the scalars they stand for)."""
    n = [(_to_numpy(x)[()] if x.ndim == 0 else _to_numpy(x)) if isinstance(x, ndarray) else x for x in (a, b)]
    return _from_numpy(func(*n))


def _inplace_fallback(name, a, b):
    """``a op= b`` with an operand the VM cannot hold (text, None, complex): NumPy's ufunc into
    a copy of ``a`` (which raises NumPy's error where the result does not fit), written back."""
    n = _to_numpy(a)
    getattr(_np, name)(n, b, out=n)
    _vmnp._assign(a, asarray(n))


_TEXT_OPERATORS = {
    "add": _operator.add, "subtract": _operator.sub, "multiply": _operator.mul, "divide": _operator.truediv,
    "floor_divide": _operator.floordiv, "remainder": _operator.mod, "power": _operator.pow,
    "less": _operator.lt, "less_equal": _operator.le, "greater": _operator.gt, "greater_equal": _operator.ge,
    "bitwise_and": _operator.and_, "bitwise_or": _operator.or_, "bitwise_xor": _operator.xor,
    "left_shift": _operator.lshift, "right_shift": _operator.rshift,
}  # fmt: skip


def _falling_back(name, func, numpy_func):
    """``func`` for programs: where it meets a dtype the VM lacks (``zeros(3, complex)``,
    ``array(["a", "b"])``, an operand ``1j``), NumPy's ``numpy_func`` runs instead, through the
    fallback, and its result (NumPy's array of that dtype) is returned."""

    @_functools.wraps(func)
    def public(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except TypeError as e:
            foreign = isinstance(e, _UnsupportedDType) or _b.any(map(_foreign, (*args, *kwargs.values())))
            if not foreign or _called_from_vmnp():
                raise
            return _fallback(name, numpy_func, args, kwargs)

    return public


def __getattr__(name):
    """Anything NumPy has and vmnp does not: NumPy's, through the fallback."""
    try:
        obj = getattr(_np, name)
    except AttributeError:
        raise AttributeError(f"module 'vmnp' has no attribute {name!r}") from None
    if isinstance(obj, _np.ufunc):
        return _FallbackUfunc(obj)
    if callable(obj) and not isinstance(obj, type):
        return _through_fallback(name, obj)
    return obj


def _through_fallback(name, func):
    """``func``, NumPy's, called through the fallback under ``name`` (a wrapper keeping its
    name and documentation)."""

    def wrapper(*args, **kwargs):
        return _fallback(name, func, args, kwargs)

    wrapper.__name__ = getattr(func, "__name__", name)
    wrapper.__doc__ = func.__doc__
    return wrapper


class _FallbackUfunc:
    """A NumPy ufunc vmnp does not record (``gcd``, ``ldexp``, ...): every use, the call and
    the methods, goes through the fallback."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.__doc__ = ufunc.__doc__

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def __call__(self, *args, **kwargs):
        return _fallback(self.__name__, self._ufunc, args, kwargs)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        return _through_fallback(f"{self.__name__}.{name}", attr) if callable(attr) else attr


# ------------------------------------------------------------------------------------- ufuncs


def _foreign_override(inputs):
    """The first input that overrides NumPy's ufuncs itself (NEP 13's ``__array_ufunc__``),
    other than vmnp's and NumPy's arrays and scalars; None when there is none."""
    for x in inputs:
        if isinstance(x, (ndarray, _np.ndarray, _np.generic, int, float, bool, complex, list, tuple)):
            continue
        override = getattr(type(x), "__array_ufunc__", None)
        if override is not None:
            return x
    return None


def _is_scalar(x):
    """True for a Python number or a NumPy scalar (not for arrays, vmnp's 0-d ones included)."""
    return type(x) in (float, int, _b.bool) or isinstance(x, _np.generic)


class ufunc(_vmnp._UfuncBase):
    """A NumPy ufunc recorded on the VM: call, ``reduce``, ``accumulate``, ``outer``. A call with
    vmnp arrays and Python numbers only is recorded natively (``_vmnp._UfuncBase``); any other
    goes to ``_call_any``."""

    def __new__(cls, name, op, nin):
        return super().__new__(cls, name, op, nin, getattr(_np, name, None))

    def __init__(self, name, op, nin):
        self.__name__ = name
        self._op = op
        self._numpy = getattr(_np, name, None)
        self.__doc__ = getattr(self._numpy, "__doc__", None)  # NumPy's documentation (`np.info(np.add)`)
        self.nin = nin
        self.nout = 1
        self.nargs = nin + 1

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def _call_any(self, *inputs, out=None, where=True, dtype=None, casting="same_kind", **kwargs):
        if out is None and where is True and not kwargs:
            if dtype is None and casting == "same_kind" and len(inputs) == self.nin:
                if _b.all(map(_is_scalar, inputs)):
                    return self._numpy(*inputs)
            elif _b.all(map(_is_scalar, inputs)):
                # Python and NumPy scalars only: NumPy's scalar result at once (`np.sin(x[i])` in
                # an element loop), as NumPy computes it.
                return self._numpy(*inputs, dtype=dtype, casting=casting)
        try:
            return self._call(inputs, out, where, dtype, casting, kwargs)
        except _UnsupportedDType:
            if _called_from_vmnp():
                raise
            given = {"out": out, "where": where, "dtype": dtype, "casting": casting}
            defaults = {"out": None, "where": True, "dtype": None, "casting": "same_kind"}
            kwargs.update((k, v) for k, v in given.items() if v is not defaults[k])
            return _fallback(self.__name__, getattr(_np, self.__name__), inputs, kwargs)

    def _call(self, inputs, out, where, dtype, casting, kwargs):
        foreign = _foreign_override(inputs)
        if foreign is not None:
            if where is not True:
                kwargs["where"] = where
            if out is not None:
                kwargs["out"] = out if isinstance(out, tuple) else (out,)
            if dtype is not None:
                kwargs["dtype"] = dtype
            r = foreign.__array_ufunc__(getattr(_np, self.__name__), "__call__", *inputs, **kwargs)
            if r is NotImplemented:
                raise TypeError(
                    f"operand type(s) all returned NotImplemented from __array_ufunc__ for ufunc '{self.__name__}'"
                )
            return r
        if len(inputs) > self.nin:
            if out is not None:
                raise TypeError("cannot specify 'out' as both a positional and keyword argument")
            inputs, out = inputs[: self.nin], inputs[self.nin]
        if isinstance(out, tuple):
            (out,) = out
        if kwargs or (out is not None and not isinstance(out, ndarray)):
            return _fallback(self.__name__, getattr(_np, self.__name__), inputs, {"out": out, "where": where, **kwargs})
        if where is not True:
            # Where the mask is False the output keeps its value (a new output's is unspecified
            # in NumPy; here it is the result's).
            r = self(*inputs, dtype=dtype)
            if out is None:
                return r
            self._check_output(r, out, casting)
            _vmnp._assign(out, _vmnp._where(asarray(where, "bool"), r, out))
            return out
        if dtype is not None:
            for k, x in enumerate(inputs):
                if isinstance(x, ndarray) and not _np.can_cast(x.dtype, dtype, casting):
                    raise TypeError(
                        f"Cannot cast ufunc '{self.__name__}' input {k} from {x.dtype!r} to {_np.dtype(dtype)!r} "
                        f"with casting rule {casting!r}"
                    )
            inputs = tuple(asarray(x, dtype) for x in inputs)
        if out is not None and casting != "same_kind":
            # Another casting rule for the output: compute, check the rule, store.
            r = self(*inputs)
            self._check_output(r, out, casting)
            out[...] = r
            return out
        r = _vmnp._ufunc(self._op, inputs, out)
        if r is None and self.__name__ in ("equal", "not_equal"):
            # Against None or text NumPy compares element by element: nothing is equal.
            arrays = [x for x in inputs if isinstance(x, ndarray)]
            if arrays and _b.all(isinstance(x, (ndarray, str, type(None))) for x in inputs):
                shape = _np.broadcast_shapes(*(x.shape for x in arrays))
                return _store(full(shape, self.__name__ == "not_equal", "bool"), out)
        if r is None and self.__name__ == "reciprocal":
            # NumPy's integer reciprocal: 1.0 / x cast back to the integer dtype (int8 for bool;
            # at 0 a cast out of range).
            x = asarray(inputs[0])
            return _store(true_divide(1.0, x).astype("int8" if x.dtype == _b.bool else x.dtype), out)  # noqa: F821
        if r is None:
            error = _UnsupportedDType if _b.any(_foreign(x) for x in inputs) else TypeError
            raise error(
                f"ufunc '{self.__name__}' not supported for the input types, and the inputs could not be "
                "safely coerced to any supported types according to the casting rule ''safe''"
            )
        return r

    def _check_output(self, r, out, casting):
        """NumPy's TypeError unless result ``r`` may be stored into ``out`` under ``casting``."""
        if isinstance(r, ndarray) and not _np.can_cast(r.dtype, out.dtype, casting):
            raise TypeError(
                f"Cannot cast ufunc '{self.__name__}' output from {r.dtype!r} to {out.dtype!r} "
                f"with casting rule {casting!r}"
            )

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True):
        """Reduces ``a`` along ``axis`` (None: all axes) with this ufunc."""
        if isinstance(out, tuple):
            (out,) = out
        if axis is not None and not isinstance(axis, tuple) and _np.ndim(a) == 0:
            # A 0-d array reduces along its one pseudo-axis (0 or -1) to its value, as NumPy's.
            if _operator.index(axis) not in (0, -1):
                raise _np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
            axis = ()
        if self.__name__ in _REDUCIBLE and _np.ndim(a) == 0:
            x = asarray(a)
            self(x, x)  # NumPy's TypeError where the ufunc has no loop for the dtype (`bitwise_and` of floats)
        if self.__name__ in ("fmax", "fmin"):
            return _nan_ignoring(self.__name__[1:], a, axis, dtype, out, keepdims, initial, where)
        if self.__name__ not in _REDUCIBLE:
            func = getattr(_np, self.__name__).reduce
            kwargs = {"axis": axis, "dtype": dtype, "out": out, "keepdims": keepdims, "where": where}
            return _fallback(
                f"{self.__name__}.reduce", func, (a,), kwargs if initial is None else {**kwargs, "initial": initial}
            )
        return _red(self.__name__, a, axis, dtype, out, keepdims, initial, where)

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """Running reduction along ``axis``."""
        names = {"add": "cumsum", "multiply": "cumprod"}
        if _np.ndim(a) == 0:
            raise _scalar_method_error("accumulate", axis)
        if self.__name__ not in names:
            func = getattr(_np, self.__name__).accumulate
            r = _fallback(f"{self.__name__}.accumulate", func, (a,), {"axis": axis, "dtype": dtype})
            return r if out is None else _store(r, out)
        a = asarray(a)
        if axis is None and a.ndim > 1:
            raise ValueError("accumulate does not allow multiple axes")
        # Without a dtype, small integers and bools accumulate in the platform's integers (NumPy's).
        r = _vmnp._accumulate(names[self.__name__], a, axis, _dt(dtype))
        return _store(r, out)

    def at(self, a, indices, b=None):
        """In place, unbuffered, at ``indices``: ``add.at`` of an integer array or list indexing
        the first axis, with ``b`` of ``a``'s dtype after promotion, is one ``scatter_add`` on the
        VM (repeated indexes accumulate, in order); any other call NumPy's, through the
        fallback (``a`` is written back)."""
        if self.__name__ == "add" and b is not None and isinstance(a, ndarray) and a._writeable:
            # NumPy makes an array of ``b`` first: a Python number is not weak here.
            kind = b.dtype if isinstance(b, ndarray) else None if _foreign(b) else _np.asarray(b).dtype
            if kind is not None and _np.result_type(a.dtype, kind) == a.dtype:
                idx = _methods._flat_index(a, indices)
                if idx is not None:
                    _vmnp._scatter(a, idx, b, True)
                    return
        args = (a, indices) if b is None else (a, indices, b)
        _fallback(f"{self.__name__}.at", getattr(_np, self.__name__).at, args, {})

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions over slices: NumPy's, through the fallback."""
        if _np.ndim(a) == 0:
            raise _scalar_method_error("reduceat", axis)
        func = getattr(_np, self.__name__).reduceat
        return _fallback(f"{self.__name__}.reduceat", func, (a, indices), {"axis": axis, "dtype": dtype, "out": out})

    def __getattr__(self, name):
        """NumPy's ufunc attributes (``identity``, ``types``, ``signature``, ...)."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(getattr(_np, self.__name__), name)

    def outer(self, a, b, **kwargs):
        """``self(a[..., None, ...], b)``: every pair of elements."""
        a, b = asarray(a), asarray(b)
        return self(a.reshape(a.shape + (1,) * b.ndim), b, **kwargs)


def _scalar_method_error(method, axis):
    """NumPy's error for ufunc method ``method`` (``accumulate``, ``reduceat``) of a 0-d array:
    its axis, other than 0 and -1, is out of bounds; else the method needs an axis."""
    if axis is not None and _operator.index(axis) not in (0, -1):
        return _np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
    return TypeError(f"cannot {method} on a scalar")


def _store(r, out, ufunc=None):
    """``r``, or ``r`` stored into ``out`` and ``out``; ``ufunc``: the name of the NumPy ufunc the
    function is (``clip``, ``matmul``), whose output casting rule, ``same_kind``, applies."""
    if out is None:
        return r
    if ufunc is not None and isinstance(r, ndarray) and not _np.can_cast(r.dtype, out.dtype, "same_kind"):
        raise TypeError(
            f"Cannot cast ufunc '{ufunc}' output from {r.dtype!r} to {out.dtype!r} with casting rule 'same_kind'"
        )
    out[...] = r
    return out


_UFUNCS = {
    # binary
    "add": "add",
    "subtract": "subtract",
    "multiply": "multiply",
    "divide": "divide",
    "true_divide": "divide",
    "floor_divide": "floor_divide",
    "remainder": "remainder",
    "mod": "remainder",
    "fmod": "fmod",
    "power": "power",
    "maximum": "maximum",
    "minimum": "minimum",
    "fmax": "fmax",
    "fmin": "fmin",
    "arctan2": "arctan2",
    "hypot": "hypot",
    "copysign": "copysign",
    "logaddexp": "logaddexp",
    "logaddexp2": "logaddexp2",
    "equal": "equal",
    "not_equal": "not_equal",
    "less": "less",
    "less_equal": "less_equal",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "left_shift": "left_shift",
    "right_shift": "right_shift",
    # unary
    "negative": "negative",
    "positive": "positive",
    "conjugate": "conjugate",
    "absolute": "absolute",
    "fabs": "fabs",
    "sign": "sign",
    "square": "square",
    "reciprocal": "reciprocal",
    "sqrt": "sqrt",
    "cbrt": "cbrt",
    "exp": "exp",
    "exp2": "exp2",
    "expm1": "expm1",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "log1p": "log1p",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "arcsin",
    "arccos": "arccos",
    "arctan": "arctan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "arcsinh": "arcsinh",
    "arccosh": "arccosh",
    "arctanh": "arctanh",
    "deg2rad": "deg2rad",
    "rad2deg": "rad2deg",
    "radians": "deg2rad",
    "degrees": "rad2deg",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "rint": "rint",
    "isnan": "isnan",
    "isinf": "isinf",
    "isfinite": "isfinite",
    "signbit": "signbit",
    "logical_not": "logical_not",
    "invert": "invert",
    "bitwise_not": "invert",
}

for _name, _op in _UFUNCS.items():
    globals()[_name] = ufunc(_name, _op, getattr(_np, _name).nin)
abs = absolute  # noqa: A001, F821 (NumPy's alias; defined by the loop above)
bitwise_invert, bitwise_left_shift, bitwise_right_shift = invert, left_shift, right_shift  # noqa: F821
acos, asin, atan, atan2 = arccos, arcsin, arctan, arctan2  # noqa: F821
acosh, asinh, atanh, pow = arccosh, arcsinh, arctanh, power  # noqa: A001, F821
conj = conjugate  # noqa: F821 (complex arrays are NumPy's, through the fallback)


def _power_of_ten(n):
    """NumPy's ``power_of_ten``: 10**n by repeated multiplication past 1e8 (``1e300`` is
    ``1.0000000000000002e+300`` there), the factor its ``round`` scales by."""
    if n < 9:
        return float(10**n)
    r = 1e9
    for _ in range(n - 9):
        r *= 10.0
    return r


def round(a, decimals=0, out=None):  # noqa: A001 (NumPy's name)
    """Rounds half to even at ``decimals`` digits (NumPy's algorithm: scale, rint, unscale)."""
    a = asarray(a)
    decimals = _operator.index(decimals)
    if decimals == 0 and a.dtype.kind not in "iu":
        return rint(a, out=out)  # noqa: F821 (bools too: NumPy's rint of them is a float)
    if a.dtype.kind == "b":
        op = "multiply" if decimals > 0 else "divide"
        raise TypeError(
            f"Cannot cast ufunc '{op}' output from dtype('float64') to dtype('bool') with casting rule 'same_kind'"
        )
    f = _power_of_ten(_b.abs(decimals))
    if a.dtype.kind in "iu":
        if decimals >= 0:
            return _store(a.copy(), out)
        # NumPy's integer rounding: through float64, half to even, back to the dtype.
        return _store((rint(a.astype("float64") / f) * f).astype(_dtype_name(a.dtype)), out)  # noqa: F821
    if decimals > 0:
        return _store(rint(a * f) / f, out)  # noqa: F821
    return _store(rint(a / f) * f, out)  # noqa: F821


around = round_ = round


def fix(x, out=None):
    """Rounds toward zero (integers and bools keep their dtype, as ``floor`` and ``ceil`` do)."""
    x = asarray(x)
    return _store(where(x >= 0, floor(x), ceil(x)), out)  # noqa: F821


# --------------------------------------------------------------------------------- reductions


# The ufuncs whose reduction the VM has.
_REDUCIBLE = {"add", "multiply", "minimum", "maximum", "logical_and", "logical_or", "logical_xor"}
_REDUCIBLE |= {"bitwise_and", "bitwise_or", "bitwise_xor"}

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
        a = _vmnp._where(broadcast_to(asarray(where), a.shape), a, asarray(fill, _dtype_name(a.dtype)))  # noqa: F821
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
    nan = isnan(a)  # noqa: F821
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
    keep = ~isnan(a)  # noqa: F821
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
        w = broadcast_to(w, a.shape)  # noqa: F821
    total = sum(w, axis, _float_dtype(w, None), None, keepdims)
    if bool(any(total == 0.0)):  # NumPy's check, on the weights' sums (it runs what they depend on)
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    r = sum(a * w, axis, None, None, keepdims) / total
    return (r, broadcast_to(total, r.shape)) if returned else r  # noqa: F821


def divmod(x1, x2, *outs, out=None):  # noqa: A001 (NumPy's name)
    """``(x1 // x2, x1 % x2)``, into ``out`` (or the positional outputs) when given."""
    if outs:
        if out is not None:
            raise TypeError("cannot specify 'out' as both a positional and keyword argument")
        out = outs
    q_out, r_out = (None, None) if out is None else out
    return floor_divide(x1, x2, out=q_out), remainder(x1, x2, out=r_out)  # noqa: F821


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (maximum minus minimum) over the given axes."""
    return _store(max(a, axis, None, keepdims) - min(a, axis, None, keepdims), out)


def _count(a, axis, keepdims=False, where=True):
    """Elements per reduced group (a number, or an int64 array with a ``where`` mask)."""
    if where is not True:
        mask = broadcast_to(asarray(where, "bool"), a.shape)  # noqa: F821
        return _vmnp._reduce("sum", mask, axis, _b.bool(keepdims), "int64")
    if axis is None:
        return a.size
    n = 1
    for ax in _axes(axis, a.ndim):
        n *= a.shape[ax]
    return n


def _float_dtype(a, dtype):
    return float64 if dtype is None and a.dtype.kind in "biu" else dtype  # noqa: F821


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
    return _store(_per_count(s, maximum(n - ddof, 0) if isinstance(n, ndarray) else _b.max(n - ddof, 0)), out)  # noqa: F821


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Standard deviation over the given axes."""
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _store(sqrt(v), out)  # noqa: F821


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
            r = expand_dims(r, axis)  # noqa: F821
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
    return stack(nonzero(a), axis=1)  # noqa: F821


# ----------------------------------------------------------------------------------- creation


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
        y = moveaxis(y, 0, axis)  # noqa: F821 (NumPy's error for an axis other than 0 and -1)
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
        y = floor(y)  # noqa: F821
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
        y = moveaxis(y, 0, axis)  # noqa: F821
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
    from ._manip import _shape_text as _manip_shape_text

    if _b.any(n != m and n != 1 for n, m in zip(a.shape, shape[len(shape) - a.ndim :])):
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


from ._compare import allclose, array_equal, isclose, isscalar, result_type  # noqa: E402
from ._counting import bincount, histogram  # noqa: E402
from ._manip import (  # noqa: E402 (needs the names above)
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    clip,
    column_stack,
    concatenate,
    convolve,
    copy,
    corrcoef,
    correlate,
    cov,
    diag,
    diagonal,
    diff,
    dot,
    dstack,
    einsum,
    expand_dims,
    fill_diagonal,
    flip,
    fliplr,
    flipud,
    hsplit,
    hstack,
    inner,
    isfortran,
    kron,
    matmul,
    matrix_transpose,
    moveaxis,
    ndim,
    outer,
    pad,
    ravel,
    repeat,
    reshape,
    roll,
    rollaxis,
    rot90,
    select,
    shape,
    size,
    split,
    squeeze,
    stack,
    swapaxes,
    take,
    tensordot,
    tile,
    trace,
    transpose,
    tril,
    triu,
    unstack,
    vdot,
    vsplit,
    vstack,
    where,
)
from ._numeric import nan_to_num, polyval, unravel_index  # noqa: E402
from ._sets import intersect1d, isin, setdiff1d, setxor1d, union1d  # noqa: E402
from ._sorting import (  # noqa: E402
    argpartition,
    argsort,
    digitize,
    interp,
    lexsort,
    median,
    partition,
    percentile,
    quantile,
    searchsorted,
    sort,
    unique,
)

# Submodules are imported by path: `from . import name` would consult the module __getattr__
# above first, which hands out NumPy's attributes.
random = _importlib.import_module(".random", __name__)
_methods = _importlib.import_module("._methods", __name__)

concat = concatenate
permute_dims = transpose

__array_api_version__ = "2024.12"


class _Info:
    """What the array API standard's inspection namespace reports about vmnp."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 16}

    def default_device(self):
        return "vm"

    def devices(self):
        return ["vm"]

    def default_dtypes(self, *, device=None):
        return {"real floating": dtype("float64"), "integral": dtype("int64"), "indexing": dtype("int64")}

    def dtypes(self, *, device=None, kind=None):
        names = sorted(_SUPPORTED)
        kinds = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu", "real floating": "f"}
        want = kinds.get(kind, "biuf") if isinstance(kind, str) or kind is None else "".join(kinds[k] for k in kind)
        return {n: dtype(n) for n in names if dtype(n).kind in want}


def __array_namespace_info__():
    """The array API standard's inspection namespace."""
    return _Info()


_vmnp._set_hooks(_methods.hooks())
# The VM shuts down (queued work dropped, engines reporting under VM_PROFILE) before the
# interpreter goes away.
_atexit.register(_vmnp._shutdown)
# Ctrl-C stops a flush in progress instead of waiting for it.
_interrupt.install()

copy_ = copy  # `asarray`'s and `array`'s parameter `copy` hides the function there

# The namespace's functions, as programs call them: NumPy's where they meet a dtype the VM lacks.
for _name, _func in list(globals().items()):
    if _name.startswith("_") or not isinstance(_func, _types.FunctionType):
        continue
    if _func.__module__.startswith("vmnp") and callable(getattr(_np, _name, None)):
        globals()[_name] = _falling_back(_name, _func, getattr(_np, _name))
del _name, _func
# Products of two vmnp arrays, reductions of one with at most an axis, new arrays of a plain
# shape and dtype, and the layout functions of one array are recorded natively, without the
# Python layers.
_NATIVE = ("sum", "prod", "min", "max", "any", "all", "empty", "zeros", "ones", "empty_like", "zeros_like", "ones_like")
_NATIVE += ("arange", "full", "concatenate", "array", "asarray", "reshape", "ravel", "transpose", "squeeze", "flip")
_NATIVE += ("copy", "swapaxes", "stack")
for _native, _name in [("product", "dot"), ("product", "matmul"), ("min", "amin"), ("max", "amax")] + [
    (_n, _n) for _n in _NATIVE
]:
    globals()[_name] = _vmnp._NativeFirst(_native, globals()[_name])
del _native, _name

# `from numpy import *` in a program under `python -m vmnp`: NumPy's public names, vmnp's own
# where it has them and NumPy's through the fallback otherwise.
__all__ = sorted(set(__all__) | set(_np.__all__))
