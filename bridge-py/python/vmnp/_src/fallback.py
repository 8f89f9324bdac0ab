"""The fallback to NumPy: NumPy's functions run on synced copies of vmnp's arrays, their results
converted back; NumPy's attributes vmnp lacks, and the operators meeting a dtype the VM lacks,
through it."""

import builtins as _b
import operator as _operator
import os as _os
import warnings as _warnings

import numpy as _np

from .. import _profile, _vmnp
from .._vmnp import VMError, ndarray
from .convert import _from_numpy, _read_view, _to_numpy, asarray
from .public import _foreign


class FallbackWarning(UserWarning):
    """A function ran on NumPy instead of the VM (its arguments were synced and converted)."""


class FallbackError(VMError):
    """A fallback to NumPy was needed while ``VMNP_FALLBACK=error`` forbids it."""


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
