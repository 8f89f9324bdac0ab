"""NumPy's ufuncs recorded on the VM (the ``ufunc`` class and its instances, ``add`` to
``bitwise_not``), and ``round`` and ``fix`` on them."""

import builtins as _b
import operator as _operator

import numpy as _np

from .. import _vmnp
from .._vmnp import ndarray
from .convert import asarray
from .dtypes import _dt, _dtype_name, _UnsupportedDType
from .fallback import _fallback
from .public import _called_from_vmnp, _foreign, export

# The ufuncs whose reduction the VM has.
_REDUCIBLE = {"add", "multiply", "minimum", "maximum", "logical_and", "logical_or", "logical_xor"}
_REDUCIBLE |= {"bitwise_and", "bitwise_or", "bitwise_xor"}


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
                from .creation import full  # (call-time imports: those modules build on this one)

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
        if (
            type(a) is ndarray
            and dtype is None
            and out is None
            and not keepdims
            and initial is None
            and where is True
            and a.ndim
            and self.__name__ in _REDUCIBLE
            and (a.dtype.kind != "f" or not self.__name__.startswith("bitwise"))
        ):
            # The common call (`np.add.reduce(x)`, `np.maximum.reduce(x, axis=1)`): what the
            # general path below comes to, without its steps.
            return _vmnp._reduce(self.__name__, a, axis, False, None, True, None)
        if isinstance(out, tuple):
            (out,) = out
        if axis is not None and not isinstance(axis, tuple) and _np.ndim(a) == 0:
            # A 0-d array reduces along its one pseudo-axis (0 or -1) to its value, as NumPy's.
            if _operator.index(axis) not in (0, -1):
                raise _np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
            axis = ()
        if self.__name__ in _REDUCIBLE:
            # NumPy's TypeError where the ufunc has no loop for the dtype (`bitwise_and` of floats).
            x = asarray(a)
            none = x if x.ndim == 0 else x.reshape(-1)[:0]
            self(none, none)
        from .reductions import _nan_ignoring, _red  # (a call-time import: reductions builds on this module)

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
        if (
            type(a) is ndarray
            and dtype is None
            and out is None
            and axis is not None
            and a.ndim
            and self.__name__ in names
        ):
            # The common call (`np.add.accumulate(x)`): what the general path comes to.
            return _vmnp._accumulate(names[self.__name__], a, axis, None)
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
                from .methods import _flat_index

                idx = _flat_index(a, indices)
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
    from .manip import where

    return _store(where(x >= 0, floor(x), ceil(x)), out)  # noqa: F821


# The public functions as programs call them (see ``public.export``).
export(globals())
