"""vmnp's dtypes: NumPy's dtype objects, scalar types and constants, the dtypes the VM has, and
the names the VM knows them by; the array API's inspection namespace."""

import numpy as _np

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
