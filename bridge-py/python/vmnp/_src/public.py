"""The public functions as programs call them. ``export`` wraps each so that one meeting a dtype
the VM lacks runs NumPy's function instead, through the fallback, and has the native layer
record the common calls of some without the Python layers. Each module of functions applies it
to itself once they are written: its own calls and those of the modules above it go through the
same wrappers."""

import builtins as _b
import functools as _functools
import sys as _sys
import types as _types

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from .dtypes import _SUPPORTED, _dtype_name, _UnsupportedDType


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
            from .fallback import _fallback  # (a call-time import: fallback builds on this module)

            return _fallback(name, numpy_func, args, kwargs)

    return public


def export(namespace, natives=None):
    """Makes the public functions written in the module whose globals are ``namespace`` the
    namespace's (``__module__`` ``vmnp``), each one NumPy has as programs call it (wrapped by
    ``_falling_back``), and those named in ``natives`` (name: native path) recorded natively
    first, for the common arguments (``_vmnp._NativeFirst``). The module's own calls and those of
    the modules above it go through the same wrappers."""
    module = namespace["__name__"]
    own = [
        (name, func)
        for name, func in namespace.items()
        if not name.startswith("_") and isinstance(func, _types.FunctionType) and func.__module__ == module
    ]
    for _name, func in own:
        func.__module__ = "vmnp"
    for name, func in own:  # (an alias, `amin = min`, is wrapped under its own name)
        if callable(getattr(_np, name, None)):
            namespace[name] = _falling_back(name, func, getattr(_np, name))
    for name, native in (natives or {}).items():
        namespace[name] = _vmnp._NativeFirst(native, namespace[name])
