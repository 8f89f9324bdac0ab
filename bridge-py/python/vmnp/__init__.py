"""vmnp: NumPy programs on the vector VM.

``import vmnp as np`` gives a NumPy-like namespace whose arrays (:class:`vmnp.ndarray`) live in
the VM: operations are recorded as bytecode and run only when a value is observed (repr, item,
bool, conversion to NumPy, a result-dependent shape) or on :func:`flush`. The per-operation path
(operators, ufuncs, basic indexing, reductions) is native; the modules of ``vmnp._src`` build
the rest of the namespace on top, and fall back to NumPy (with a :class:`FallbackWarning`) for
what the VM cannot express; this module gathers them. ``python -m vmnp prog.py`` runs an
unchanged NumPy program on the VM.
"""

import atexit as _atexit
import importlib as _importlib
import os as _os
import sys as _sys
import types as _types

# NumPy's OpenBLAS threads busy-wait for work for about 0.1 s after they start and after each
# call; vmnp runs its own thread pool and calls NumPy's BLAS only for fallbacks, so there they
# sleep at once instead of taking the cores from the VM's threads (a value the user set wins,
# and nothing changes when NumPy was imported first).
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as _np  # noqa: E402 (after OpenBLAS's setting)
import numpy.random  # noqa: E402, F401 (NumPy's own, loaded before `python -m vmnp` maps the name)

from . import _interrupt, _profile, _vmnp  # noqa: E402
from ._profile import profile  # noqa: E402
from ._src import methods as _methods  # noqa: E402
from ._src.compare import (
    allclose,
    array_equal,
    isclose,
    isscalar,
    result_type,
)
from ._src.convert import (
    _rebuild,
    array,
    asanyarray,
    asarray,
    ascontiguousarray,
    asfortranarray,
    asnumpy,
    astype,
    frombuffer,
    imag,
    may_share_memory,
    real,
    require,
    shares_memory,
)
from ._src.counting import (
    bincount,
    histogram,
)
from ._src.creation import (
    arange,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    meshgrid,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from ._src.dtypes import (
    NAN,
    NINF,
    PINF,
    Inf,
    Infinity,
    __array_namespace_info__,
    bool,
    bool_,
    byte,
    can_cast,
    double,
    dtype,
    e,
    errstate,
    euler_gamma,
    finfo,
    float32,
    float64,
    float_,
    floating,
    generic,
    get_printoptions,
    geterr,
    iinfo,
    inexact,
    inf,
    int8,
    int16,
    int32,
    int64,
    int_,
    intc,
    integer,
    intp,
    isdtype,
    issubdtype,
    longlong,
    nan,
    newaxis,
    number,
    pi,
    printoptions,
    promote_types,
    set_printoptions,
    seterr,
    short,
    signedinteger,
    single,
    ubyte,
    uint8,
    uint16,
    uint32,
    uint64,
    uintc,
    uintp,
    ulonglong,
    unsignedinteger,
    ushort,
)
from ._src.fallback import (
    FallbackError,
    FallbackWarning,
    _fallback,
    _FallbackUfunc,
    _through_fallback,
)
from ._src.linalg import (
    convolve,
    corrcoef,
    correlate,
    cov,
    dot,
    einsum,
    inner,
    kron,
    matmul,
    outer,
    tensordot,
    trace,
    vdot,
)
from ._src.manip import (
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    clip,
    column_stack,
    concat,
    concatenate,
    copy,
    copy_,
    diag,
    diagonal,
    diff,
    dstack,
    expand_dims,
    fill_diagonal,
    flip,
    fliplr,
    flipud,
    hsplit,
    hstack,
    isfortran,
    matrix_transpose,
    moveaxis,
    ndim,
    pad,
    permute_dims,
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
    tile,
    transpose,
    tril,
    triu,
    unstack,
    vsplit,
    vstack,
    where,
)
from ._src.numeric import (
    nan_to_num,
    polyval,
    unravel_index,
)
from ._src.reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    argwhere,
    average,
    count_nonzero,
    cumprod,
    cumsum,
    divmod,
    flatnonzero,
    max,
    mean,
    min,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
    nditer,
    nonzero,
    prod,
    ptp,
    std,
    sum,
    var,
)
from ._src.sets import (
    intersect1d,
    isin,
    setdiff1d,
    setxor1d,
    union1d,
)
from ._src.sorting import (
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
from ._src.ufunc import (
    _UFUNCS,
    abs,
    absolute,
    acos,
    acosh,
    add,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    around,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    cbrt,
    ceil,
    conj,
    conjugate,
    copysign,
    cos,
    cosh,
    deg2rad,
    degrees,
    divide,
    equal,
    exp,
    exp2,
    expm1,
    fabs,
    fix,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    greater,
    greater_equal,
    hypot,
    invert,
    isfinite,
    isinf,
    isnan,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    positive,
    pow,
    power,
    rad2deg,
    radians,
    reciprocal,
    remainder,
    right_shift,
    rint,
    round,
    round_,
    sign,
    signbit,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    trunc,
    ufunc,
)
from ._vmnp import VMError, flush, ndarray, set_stack  # noqa: E402

__all__ = ["ndarray", "VMError", "FallbackWarning", "flush", "set_stack"]

# A program checks ``numpy.__version__`` for the API it may use: that of the NumPy vmnp mirrors.
__version__ = _np.__version__
__vmnp_version__ = "0.1.0"  # vmnp's own (the package's)


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


# Submodules are imported by path: `from . import name` would consult the module __getattr__
# above first, which hands out NumPy's attributes.
random = _importlib.import_module(".random", __name__)

__array_api_version__ = "2024.12"

# The native class's hooks into the Python layers, given this namespace (what
# `ndarray.__array_namespace__` returns and NumPy's `__array_function__` dispatches to).
_vmnp._set_hooks(_methods.hooks(_sys.modules[__name__]))
# The VM shuts down (queued work dropped, engines reporting under VM_PROFILE) before the
# interpreter goes away.
_atexit.register(_vmnp._shutdown)
# Ctrl-C stops a flush in progress instead of waiting for it.
_interrupt.install()

# The namespace's classes and functions are vmnp's, whichever module of `_src` writes them
# (`export` made the public functions so; the class reprs, and pickles: `ndarray.__reduce__`
# names `vmnp._rebuild`).
for _func in list(globals().values()):
    if isinstance(_func, (_types.FunctionType, type)) and _func.__module__.startswith("vmnp._src."):
        _func.__module__ = "vmnp"
del _func

# `from numpy import *` in a program under `python -m vmnp`: NumPy's public names, vmnp's own
# where it has them and NumPy's through the fallback otherwise.
__all__ = sorted(set(__all__) | set(_np.__all__))
