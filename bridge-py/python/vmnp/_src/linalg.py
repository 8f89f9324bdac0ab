"""Linear algebra: products (``dot``, ``matmul``, ``inner``, ``outer``, ``vdot``, ``tensordot``,
``kron``, ``einsum``), ``trace``, and what NumPy computes with them (``cov``, ``corrcoef``,
``correlate``, ``convolve``), each as broadcast products and sums or one ``matmul`` on the VM;
and the functions of ``numpy.linalg`` that run on the VM when called on vmnp arrays (NumPy's
``__array_function__`` protocol hands them here): the rest of ``numpy.linalg`` is NumPy's,
through the fallback."""

import functools as _functools
import math as _math
import operator as _operator
import warnings as _warnings

import numpy as _np

from .. import _vmnp
from . import reductions as _reductions
from .convert import asarray
from .creation import broadcast_to, identity, zeros
from .dtypes import _dtype_name, _UnsupportedDType
from .fallback import _fallback
from .manip import _shape_text, clip, concatenate, diagonal, pad, ravel, swapaxes, transpose
from .public import export
from .ufunc import _store, absolute, isfinite, isnan, multiply, sqrt


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum of the diagonal."""

    return _reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def matmul(a, b, out=None, **kwargs):
    """Matrix product (broadcast multiply and a sum over the shared axis)."""

    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"matmul: Input operand {0 if a.ndim == 0 else 1} does not have enough dimensions (has 0, gufunc "
            f"core with signature (n?,k),(k,m?)->(n?,m?) requires 1)"
        )
    va, vb = a.ndim == 1, b.ndim == 1
    if va and vb and a.shape == b.shape:  # a dot product of vectors: one product, one sum
        return _store(_reductions.sum(a * b, dtype=_product_dtype(a, b)), out, "matmul")
    if va:
        a = a[None, :]
    if vb:
        b = b[:, None]
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
            f"(n?,k),(k,m?)->(n?,m?) (size {b.shape[-2]} is different from {a.shape[-1]})"
        )
    # Float matrices: one `matmul` instruction where the stack implements it (an engine without
    # fusion would otherwise hold the whole broadcast product).
    r = None
    if a.ndim == 2 and b.ndim == 2:
        r = _vmnp._matmul(a, b)
    elif b.ndim == 2 and a.dtype == b.dtype and a.dtype.kind == "f":
        # A stack of matrices times one matrix (`x @ W` of a batch) is one matrix product of
        # the stack's rows: (..., m, k) as (-1, k).
        r = _vmnp._matmul(a.reshape((_math.prod(a.shape[:-1]), a.shape[-1])), b)
        if r is not None:
            r = r.reshape(a.shape[:-1] + b.shape[-1:])
    if r is None:
        r = _reductions.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2, dtype=_product_dtype(a, b))
    if va:
        r = r[..., 0, :]
    if vb:
        r = r[..., 0]
    return _store(r, out, "matmul")


_PRODUCT_DTYPES = {}


def _product_dtype(a, b):
    """The dtype of a sum of products of ``a``'s and ``b``'s elements (NumPy's: their promoted
    dtype, not the wider one a plain sum of integers accumulates in), remembered per pair."""
    key = (a.dtype, b.dtype)
    name = _PRODUCT_DTYPES.get(key)
    if name is None:
        name = _PRODUCT_DTYPES[key] = _dtype_name(_np.result_type(a.dtype, b.dtype))
    return name


def dot(a, b, out=None):
    """Dot product: ``matmul`` for 1-D and 2-D operands, a product for scalars, and for N-D
    operands a sum over the last axis of ``a`` and the second-to-last of ``b``."""

    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b, out=out)
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(
            f"shapes {_shape_text(a.shape)} and {_shape_text(b.shape)} not aligned: {a.shape[-1]} "
            f"(dim {a.ndim - 1}) != {b.shape[-2 if b.ndim > 1 else 0]} (dim {b.ndim - 2 if b.ndim > 1 else 0})"
        )
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, out=out)
    if b.ndim == 1:
        bt = b
    else:
        bt = transpose(b, [*range(b.ndim - 2), b.ndim - 1, b.ndim - 2])
    lead = a.reshape(a.shape[:-1] + (1,) * (bt.ndim - 1) + a.shape[-1:])
    return _store(_reductions.sum(lead * bt, axis=-1, dtype=_product_dtype(a, b)), out)


def vdot(a, b):
    """Dot product of the flattened arrays."""

    a, b = asarray(a), asarray(b)
    return _reductions.sum(ravel(a) * ravel(b), dtype=_product_dtype(a, b))


def inner(a, b):
    """Inner product over the last axes."""

    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return _reductions.sum(a[(..., *([None] * (b.ndim - 1)), slice(None))] * b, axis=-1, dtype=_product_dtype(a, b))


def outer(a, b, out=None):
    """Every product of an element of ``a`` with one of ``b``."""

    a, b = ravel(asarray(a)), ravel(asarray(b))
    return _store(a[:, None] * b[None, :], out)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """The covariance matrix of the variables in the rows (``rowvar``) or columns of ``m`` (and
    ``y``), as NumPy computes it: centred by the means, one matrix product; weights through the
    fallback."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")

    def fallback(dtype):
        kwargs = {"rowvar": rowvar, "bias": bias, "ddof": ddof, "dtype": dtype}
        kwargs.update((k, w) for k, w in (("fweights", fweights), ("aweights", aweights)) if w is not None)
        return _fallback("cov", _np.cov, (m, y), kwargs)

    if fweights is not None or aweights is not None:
        return fallback(dtype)
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = asarray(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = _np.result_type(m.dtype, _np.float64) if y is None else _np.result_type(m.dtype, y.dtype, _np.float64)
    if _np.dtype(dtype).kind not in "f":
        return fallback(dtype)
    x = m.astype(dtype).reshape((1, -1) if m.ndim < 2 else m.shape)
    if not rowvar and m.ndim != 1:
        x = x.T
    if x.shape[0] == 0:
        return zeros((0, 0))
    if y is not None:
        y = y.astype(dtype).reshape((1, -1) if y.ndim < 2 else y.shape)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        x = concatenate((x, y), axis=0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    fact = x.shape[1] - ddof
    if fact <= 0:
        _warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    x = x - x.mean(axis=1, keepdims=True)
    # (A Python float: the product keeps the dtype, as NumPy's in-place one.)
    c = matmul(x, x.T) * float(_np.true_divide(1, fact))
    return c.squeeze()


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients (NumPy's ``corrcoef``): the covariance matrix over the
    products of the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c  # nan for nan, inf or 0, else 1
    d = sqrt(diagonal(c))
    c = c / d[:, None] / d[None, :]
    return clip(c, -1, 1)


def tensordot(a, b, axes=2):
    """The sum of products over ``axes`` of ``a`` and ``b`` (the last ``axes`` of ``a`` with
    the first of ``b``, or two lists): NumPy's ``tensordot``, as one matrix product of the
    operands transposed and reshaped."""
    try:
        iter(axes)
    except TypeError:
        axes_a, axes_b = list(range(-axes, 0)), list(range(axes))
    else:
        axes_a, axes_b = axes
    axes_a = list(axes_a) if hasattr(axes_a, "__len__") else [axes_a]
    axes_b = list(axes_b) if hasattr(axes_b, "__len__") else [axes_b]
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    a, b = asarray(a), asarray(b)
    if len(axes_a) != len(axes_b) or any(a.shape[i] != b.shape[j] for i, j in zip(axes_a, axes_b, strict=True)):
        raise ValueError("shape-mismatch for sum")
    axes_a = [i % a.ndim if a.ndim else i for i in axes_a]
    axes_b = [j % b.ndim if b.ndim else j for j in axes_b]
    keep_a = [k for k in range(a.ndim) if k not in axes_a]
    keep_b = [k for k in range(b.ndim) if k not in axes_b]
    summed = _math.prod(a.shape[i] for i in axes_a)
    at = a.transpose(keep_a + axes_a).reshape((_math.prod(a.shape[i] for i in keep_a), summed))
    bt = b.transpose(axes_b + keep_b).reshape((summed, _math.prod(b.shape[j] for j in keep_b)))
    return dot(at, bt).reshape([a.shape[i] for i in keep_a] + [b.shape[j] for j in keep_b])


def kron(a, b):
    """The Kronecker product: blocks of ``b`` scaled by each element of ``a`` (NumPy's, as one
    broadcast product of the operands interleaved with new axes)."""
    b = asarray(b)
    a = asarray(a)
    if a.ndim < b.ndim:
        a = a.reshape((1,) * (b.ndim - a.ndim) + a.shape)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    nd = max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    # a's axes at the even positions, b's at the odd: each element of a times all of b.
    wide_a = a.reshape(tuple(x for n in sa for x in (n, 1)))
    wide_b = b.reshape(tuple(x for n in sb for x in (1, n)))
    return multiply(wide_a, wide_b).reshape(tuple(m * n for m, n in zip(sa, sb, strict=True)))


def _einsum_sum_out(steps, k, t, other, keep, dtype):
    """Plans the sum of operand ``k`` (subscripts ``t``) over its labels that neither the other
    operand's subscripts ``other`` nor ``keep`` hold; returns the labels left."""
    drop = [c for c in t if c not in other and c not in keep]
    if drop:
        steps.append(("sum", k, (tuple(t.index(c) for c in drop), dtype)))
    return "".join(c for c in t if c not in drop)


def _einsum_permute(steps, k, t, labels):
    """Plans operand ``k`` (subscripts ``t``) with its axes in the order of ``labels``."""
    axes = tuple(t.index(c) for c in labels)
    if axes != tuple(range(len(t))):
        steps.append(("transpose", k, axes))


def _einsum_pair(steps, ta, tb, k, keep, size, dtype):
    """Plans the contraction of the accumulated operand 0 (subscripts ``ta``) with operand ``k``
    (``tb``) to the labels in ``keep`` (and no others): labels of one operand alone that are not
    kept are summed first, then one batched matrix product sums the shared ones. Returns the
    result's labels."""
    ta, tb = _einsum_sum_out(steps, 0, ta, tb, keep, dtype), _einsum_sum_out(steps, k, tb, ta, keep, dtype)
    batch = [c for c in ta if c in tb and c in keep]
    summed = [c for c in ta if c in tb and c not in keep]
    left, right = [c for c in ta if c not in tb], [c for c in tb if c not in ta]
    prod = _math.prod
    _einsum_permute(steps, 0, ta, batch + left + summed)
    _einsum_permute(steps, k, tb, batch + summed + right)
    nb, nl, ns, nr = (prod(size[c] for c in group) for group in (batch, left, summed, right))
    # Without shared labels kept, a product of matrices (one instruction where the stack has it).
    steps.append(("reshape", 0, (nb, nl, ns) if batch else (nl, ns)))
    steps.append(("reshape", k, (nb, ns, nr) if batch else (ns, nr)))
    steps.append(("matmul", 0, k))
    labels = batch + left + right
    steps.append(("reshape", 0, tuple(size[c] for c in labels)))
    return "".join(labels)


@_functools.lru_cache(maxsize=256)
def _einsum_plan(subscripts, shapes, dtypes):
    """The steps of ``einsum(subscripts, ...)`` over operands of ``shapes`` and ``dtypes`` (see
    ``_einsum_run``), or ``None`` where it goes through the fallback (ellipses, a label repeated
    within one operand, boolean operands). Kept per arguments: a loop calling einsum on arrays
    of the same shapes plans once."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if not arrow:
        output = "".join(sorted(c for c in set(inputs) if c != "," and inputs.count(c) == 1))
    simple = (
        len(terms) == len(shapes) > 0
        and all(t.isalpha() or t == "" for t in [*terms, output])
        and all(len(set(t)) == len(t) for t in [*terms, output])
        and all(len(t) == len(n) for t, n in zip(terms, shapes, strict=True))
        and set(output) <= set(inputs)
        and not any(d == _np.bool_ for d in dtypes)
    )
    if not simple:
        return None
    if len(terms) == 1 and set(terms[0]) == set(output):
        # Only a permutation of the axes: a view, as NumPy's.
        return (("transpose", 0, tuple(terms[0].index(c) for c in output)),)
    # A label's extent is its largest; extent 1 broadcasts, as NumPy's.
    size = {}
    for k, (t, shape) in enumerate(zip(terms, shapes, strict=True)):
        for c, n in zip(t, shape, strict=True):
            if size.get(c, 1) != 1 and n not in (1, size[c]):
                raise ValueError(f"einsum: operand {k} has {n} elements along {c!r}, another {size[c]}")
            size[c] = n if size.get(c, 1) == 1 else size[c]
    steps = []
    result_dtype = _np.result_type(*dtypes)
    for k, (t, shape, dtype) in enumerate(zip(terms, shapes, dtypes, strict=True)):
        full = tuple(size[c] for c in t)
        if shape != full:
            steps.append(("broadcast", k, full))
        if dtype != result_dtype:
            steps.append(("astype", k, result_dtype))
    t = terms[0]
    for k in range(1, len(terms)):
        needed = set(output).union(*terms[k + 1 :])
        keep = [c for c in dict.fromkeys(t + terms[k]) if c in needed]
        t = _einsum_pair(steps, t, terms[k], k, keep, size, result_dtype)
    t = _einsum_sum_out(steps, 0, t, "", output, result_dtype)
    _einsum_permute(steps, 0, t, output)
    return tuple(steps)


def _einsum_run(steps, arrays):
    """Runs the steps of an einsum plan (``_einsum_plan``) on its operands; operand 0
    accumulates the result."""
    x = list(arrays)
    for op, k, arg in steps:
        if op == "matmul":
            x[k] = matmul(x[k], x[arg])
        elif op == "sum":
            x[k] = _reductions.sum(x[k], axis=arg[0], dtype=arg[1])
        elif op == "transpose":
            x[k] = x[k].transpose(arg)
        elif op == "reshape":
            x[k] = x[k].reshape(arg)
        elif op == "broadcast":
            x[k] = broadcast_to(x[k], arg)
        else:  # astype
            x[k] = x[k].astype(arg)
    return x[0]


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """Einstein summation (NumPy's ``einsum``) for subscripts of letters, explicit or implicit
    output, any number of operands: contracted pairwise from the left, each pair as one batched
    matrix product (``optimize`` changes nothing but the order NumPy would take). Ellipses,
    a label repeated within one operand (diagonals), boolean operands and ``out``, ``dtype``,
    ``order`` or ``casting`` go through the fallback."""
    subscripts = operands[0] if operands else None
    plan = None
    if (
        isinstance(subscripts, str)
        and out is None
        and dtype is None
        and order == "K"
        and casting == "safe"
        and "." not in subscripts
    ):
        arrays = [asarray(x) for x in operands[1:]]
        plan = _einsum_plan(subscripts, tuple(x.shape for x in arrays), tuple(x.dtype for x in arrays))
    if plan is None:
        kwargs = {"out": out, "dtype": dtype, "order": order, "casting": casting, "optimize": optimize}
        return _fallback("einsum", _np.einsum, operands, kwargs)
    return _einsum_run(plan, arrays)


def correlate(a, v, mode="valid"):
    """The cross-correlation of two 1-D sequences (NumPy's ``correlate``; modes ``valid``,
    ``same``, ``full``): the windows of the zero-padded longer sequence, a view with overlapping
    rows, times the shorter one, as one matrix-vector product."""
    a, v = asarray(a), asarray(v)
    if a.ndim != 1 or v.ndim != 1 or mode not in ("valid", "same", "full") or _np.bool_ in (a.dtype, v.dtype):
        return _fallback("correlate", _np.correlate, (a, v), {"mode": mode})
    if a.size == 0:
        raise ValueError("a cannot be empty")
    if v.size == 0:
        raise ValueError("v cannot be empty")
    dtype = _np.result_type(a.dtype, v.dtype)
    inverted = v.size > a.size
    if inverted:
        a, v = v, a
    n, m = a.size, v.size
    left, right = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}[mode]
    padded = pad(a.astype(dtype), (left, right)) if left or right else a.astype(dtype)
    # Row k of the windows is padded[k : k + m] (the padded copy is contiguous).
    windows = _vmnp._view(padded, padded._start, [n + left + right - m + 1, m], [1, 1])
    r = matmul(windows, v.astype(dtype))
    return r[::-1].copy() if inverted else r


def convolve(a, v, mode="full"):
    """The discrete linear convolution of two 1-D sequences (NumPy's ``convolve``): the
    correlation with one of them reversed."""
    a, v = asarray(a), asarray(v)
    if a.ndim != 1 or v.ndim != 1:
        return _fallback("convolve", _np.convolve, (a, v), {"mode": mode})
    if a.size == 0:
        raise ValueError("a cannot be empty")
    if v.size == 0:
        raise ValueError("v cannot be empty")
    if v.size > a.size:
        a, v = v, a
    return correlate(a, v[::-1], mode)


# ------------------------------------------------------------------------------- numpy.linalg


def _axes(axis, ndim):
    """``axis`` as a tuple of normalised axes (every axis for None)."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (_operator.index(axis),)
    norm = tuple(x % ndim if -ndim <= x < ndim else None for x in axes)
    if None in norm:
        raise _np.exceptions.AxisError(axes[norm.index(None)], ndim)
    if len(set(norm)) != len(norm):
        raise ValueError("Duplicate axes given.")
    return norm


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 (NumPy's name)
    """Vector norms (any ``ord``) along one axis and the Frobenius norm of matrices, as
    ``numpy.linalg.norm`` computes them; matrix norms of other orders (2, 'nuc', 1, inf) are
    NumPy's, through the fallback."""
    x = asarray(x)
    if x.dtype.kind not in "biuf":
        raise _UnsupportedDType(f"vmnp does not support dtype {x.dtype}")
    if x.dtype.kind != "f":
        x = x.astype("float64")
    axes = _axes(axis, x.ndim)
    # No ord and no axis: the 2-norm of all elements, whatever the dimensions (NumPy's).
    vector = len(axes) == 1 or (ord is None and axis is None)
    if len(axes) == 2 and ord in (None, "fro", "f"):
        vector, ord = True, None
    if not vector or isinstance(ord, str):
        raise _UnsupportedDType("a matrix norm of this order")
    if ord is None and axis is None and not keepdims:
        # NumPy's: the square root of the flattened array's dot product with itself.
        flat = x.ravel()
        return sqrt(flat.dot(flat))
    a = absolute(x) if ord not in (None, 2, 0) else None
    if ord is None or ord == 2:
        r = sqrt(_reductions.sum(x * x, axis=axes, keepdims=keepdims))
    elif ord == _np.inf:
        r = _reductions.max(a, axis=axes, keepdims=keepdims)
    elif ord == -_np.inf:
        r = _reductions.min(a, axis=axes, keepdims=keepdims)
    elif ord == 0:
        r = _reductions.sum(x != 0, axis=axes, keepdims=keepdims).astype(x.dtype)
    elif ord == 1:
        r = _reductions.sum(a, axis=axes, keepdims=keepdims)
    else:
        p = float(ord)
        r = _reductions.sum(a**p, axis=axes, keepdims=keepdims) ** (1.0 / p)
    return r


def _stacked_square(a):
    """NumPy's ``LinAlgError`` unless ``a`` is a stack of square matrices."""
    if a.ndim < 2:
        raise _np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise _np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _float64_inputs(*arrays):
    """``arrays`` as float64 (NumPy's ``linalg`` computes real matrices in float64) and the dtype
    NumPy returns for them: float32 when every one is float32, else float64. Complex and float16
    inputs are NumPy's (``_UnsupportedDType``)."""
    if any(x.dtype.kind not in "biuf" or x.dtype == _np.float16 for x in arrays):
        raise _UnsupportedDType("vmnp's linalg computes real matrices of float32, float64, ints and bools")
    result = "float32" if all(x.dtype == _np.float32 for x in arrays) else "float64"
    return [x.astype("float64", copy=False) for x in arrays], result


def _on_vm(name, shape, inputs):
    """The stack's linear algebra method ``name`` over ``inputs`` into a new array of ``shape``
    (``_UnsupportedDType`` on a stack without it)."""
    r = _vmnp._linalg(name, list(shape), list(inputs))
    if r is None:
        raise _UnsupportedDType(f"linalg: the stack has no {name} method")
    return r


def _raise_if_failed(r, inputs, message):
    """NumPy's ``LinAlgError(message)`` when the VM's method filled matrices of ``r`` with NaN
    (a matrix that does not factorise) from finite ``inputs``; from inputs holding NaN or
    infinities, which NumPy's LAPACK carries through where the VM's factorisation stops at
    them, NumPy computes the result (``_UnsupportedDType``)."""
    if r.size and bool(isnan(r).any()):
        if not all(bool(isfinite(x).all()) for x in inputs):
            raise _UnsupportedDType("linalg of matrices holding NaN or infinities")
        raise _np.linalg.LinAlgError(message)


def cholesky(a, /, *, upper=False):
    """The Cholesky factor of each matrix of ``a`` (shape ``(..., n, n)``), as
    ``numpy.linalg.cholesky`` computes it: the lower-triangular ``L`` with ``L @ L.T == a``
    from ``a``'s lower triangle, or with ``upper`` the upper-triangular ``U`` with ``U.T @ U ==
    a`` from its upper triangle; in float64 (a float32 result rounded to float32), integers as
    float64, ``LinAlgError`` for a matrix that is not positive definite."""
    a = asarray(a)
    _stacked_square(a)
    (x,), result = _float64_inputs(a)
    if upper:
        x = swapaxes(x, -1, -2)
    r = _on_vm("cholesky", x.shape, [x])
    _raise_if_failed(r, [x], "Matrix is not positive definite")
    if upper:
        r = swapaxes(r, -1, -2)
    return r.astype(result, copy=False)


def solve(a, b):
    """The solution ``x`` of ``a @ x == b`` for each matrix of ``a`` (shape ``(..., n, n)``) and
    ``b`` (``(..., n, k)``, stacks broadcast; or ``(n,)``), as ``numpy.linalg.solve``: LU with
    partial pivoting in float64, ``LinAlgError`` for a singular matrix. Shapes NumPy rejects
    get NumPy's error through the fallback."""
    a, b = asarray(a), asarray(b)
    _stacked_square(a)
    (a, b), result = _float64_inputs(a, b)
    n, vector = a.shape[-1], b.ndim == 1
    if vector:
        b = b[:, None]
    try:
        stack = _np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        stack = None
    if b.ndim < 2 or b.shape[-2] != n or stack is None:
        raise _UnsupportedDType("linalg.solve of shapes that do not match (NumPy's error)")
    k = b.shape[-1]
    a, b = broadcast_to(a, (*stack, n, n)), broadcast_to(b, (*stack, n, k))
    x = _on_vm("solve", (*stack, n, k), [a, b])
    _raise_if_failed(x, [a, b], "Singular matrix")
    return (x[..., 0] if vector else x).astype(result, copy=False)


def inv(a):
    """The inverse of each matrix of ``a`` (shape ``(..., n, n)``), as ``numpy.linalg.inv``: the
    solution of ``a @ x == I``, ``LinAlgError`` for a singular matrix."""
    a = asarray(a)
    _stacked_square(a)
    (a,), result = _float64_inputs(a)
    eye = broadcast_to(identity(a.shape[-1]), a.shape)
    x = _on_vm("solve", a.shape, [a, eye])
    _raise_if_failed(x, [a], "Singular matrix")
    return x.astype(result, copy=False)


def det(a):
    """The determinant of each matrix of ``a`` (shape ``(..., n, n)``), as ``numpy.linalg.det``:
    the product of the pivots of its LU decomposition with partial pivoting, in float64; a
    NumPy scalar for one matrix."""
    a = asarray(a)
    _stacked_square(a)
    (a,), result = _float64_inputs(a)
    d = _on_vm("det", a.shape[:-2], [a]).astype(result, copy=False)
    return d[()] if d.ndim == 0 else d


#: NumPy's named tuple of ``slogdet``'s results.
_SlogdetResult = type(_np.linalg.slogdet(_np.eye(1)))


def slogdet(a):
    """The sign and the natural logarithm of the absolute value of each matrix's determinant
    (``a`` of shape ``(..., n, n)``), as ``numpy.linalg.slogdet``: from the pivots of its LU
    decomposition in float64 (no overflow where the determinant itself would), ``(0, -inf)``
    for a singular matrix; NumPy scalars for one matrix."""
    a = asarray(a)
    _stacked_square(a)
    (a,), result = _float64_inputs(a)
    r = _on_vm("slogdet", (*a.shape[:-2], 2), [a]).astype(result, copy=False)
    sign, logabsdet = r[..., 0], r[..., 1]
    if sign.ndim == 0:
        sign, logabsdet = sign[()], logabsdet[()]
    return _SlogdetResult(sign, logabsdet)


def matrix_power(a, n):
    """Each matrix of ``a`` (shape ``(..., m, m)``) raised to the integer power ``n``, as
    ``numpy.linalg.matrix_power``: by repeated squaring with ``matmul`` in ``a``'s dtype, the
    identity for 0, the inverse's powers for negative ``n``."""
    a = asarray(a)
    _stacked_square(a)
    try:
        n = _operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        r = zeros(a.shape, a.dtype)
        r[...] = identity(a.shape[-1], dtype=a.dtype)
        return r
    if n < 0:
        a, n = inv(a), -n
    if n <= 3:
        r = a
        for _ in range(n - 1):
            r = matmul(r, a)
        return r
    # NumPy's order of products: the squares z of a, multiplied into the result where n's
    # binary digits are 1, from the lowest.
    z = r = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            r = z if r is None else matmul(r, z)
    return r


#: ``numpy.linalg`` functions vmnp computes, by name.
FUNCTIONS = {
    "norm": norm,
    "cholesky": cholesky,
    "solve": solve,
    "inv": inv,
    "det": det,
    "slogdet": slogdet,
    "matrix_power": matrix_power,
}


# The public functions as programs call them (see ``public.export``); products of two vmnp
# arrays recorded natively.
export(globals(), {"dot": "product", "matmul": "product"})
