"""NumPy semantics that a program can observe beyond values: copies versus views, in-place
updates, ``where=`` and ``initial=``, memory order, flags. Each case is a small program run
with ``np`` bound to NumPy and to vmnp; what it leaves in ``out`` must agree."""

import warnings

import numpy
import pytest

import vmnp


def run(code, module):
    scope = {"np": module}
    exec(code, scope)  # noqa: S102 (the test's own programs)
    return scope["out"]


def errors_of(code, error, scope=lambda module: {"np": module}):
    """What ``code`` raises (``error``: a type or a tuple) with ``np`` bound to NumPy and to vmnp
    (``scope`` gives its names for each module): (type, message) each, NumPy's first."""
    raised = []
    for module in (numpy, vmnp):
        with pytest.raises(error) as e:
            exec(code, scope(module))  # noqa: S102 (the test's own statements)
        raised.append((type(e.value), str(e.value)))
    return raised


def agree(got, want, where="out"):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (where, got, want)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            agree(g, w, f"{where}[{k}]")
        return
    if isinstance(want, (bool, int, float, str, dict)) or want is None:
        assert got == want, (where, got, want)
        return
    g, w = numpy.asarray(got), numpy.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (where, g.shape, g.dtype, w.shape, w.dtype)
    if w.dtype.kind == "f":
        numpy.testing.assert_allclose(g, w, rtol=1e-12, err_msg=where)
    else:
        numpy.testing.assert_array_equal(g, w, err_msg=where)


CASES = {
    # An element read by integers is a scalar: a copy, whatever happens to the array after.
    "element swap": "a = np.arange(5); a[0], a[4] = a[4], a[0]; out = a",
    "element kept": "a = np.arange(6.0); s = a[2]; a[2] = 100; out = (s, a)",
    "element accumulated": "a = np.arange(4.0); t = a[0]\nfor i in range(1, 4): t += a[i]\nout = (t, a)",
    "iterated elements": "a = np.arange(4); v = [x for x in a]; a[:] = 0; out = (v, a)",
    "2-d element": "a = np.arange(6).reshape(2, 3); e = a[1, -1]; a *= 2; out = (e, a)",
    "row view": "a = np.arange(6).reshape(2, 3); r = a[1]; a *= 2; out = r",
    "element with ellipsis is a view": "a = np.arange(3); e = a[1, ...]; a += 1; out = e",
    # The C sequence protocol (a length and items by position), which bisect uses.
    "bisect over an array": "import bisect\na = np.arange(10) * 2\n"
    "out = (bisect.bisect(a, 7), bisect.bisect_left(a, 8), bisect.bisect_right(a[::-1][::-1], 8, 2, 9))",
    "elements as dict keys": "a = np.arange(3); d = {a[1]: 'x'}; out = (d[1], a[2] in {2, 3}, hash(a[0]) == hash(0))",
    # Element loops: values read and stored in memory once the array is at hand, in order with
    # what is queued.
    "element loop over a computed array": "a = np.arange(40.0) * 0.5 + 1; s = 0.0\n"
    "for i in range(len(a)): s += a[i] * i\na[3] = -1.0\nout = (s, a[3], a[20], a)",
    "elements of each step's result": "a = np.arange(6.0); h = []\n"
    "for k in range(12):\n    a *= 1.5\n    h += [a[0], a[1], a[5]]\nout = (h, a)",
    "scalar draws": "rng = np.random.default_rng(3); v = [rng.random() for _ in range(300)]\n"
    "w = [rng.random(dtype=np.float32), rng.standard_normal(), np.random.rand(), rng.random(2).shape]\n"
    "out = ([type(x).__name__ for x in v[:2] + w], all(0 <= x < 1 for x in v), len(set(v)))",
    "element loop over rows": "m = (np.arange(30.0) * 3).reshape(10, 3); s = 0.0\n"
    "for row in m: s += row[0] * row[1] - row[2]\nm += 1\nout = (s, m[2, 1], m)",
    "element types": "a = np.arange(4.0); b = a.astype(np.float32); c = a > 1; float(a.sum())\n"
    "out = [type(x[1]).__name__ for x in (a, b, c, a.astype(np.int16), a.astype(np.uint8))]",
    "scalar recurrence": "x = np.linspace(0, 1, 50); y = np.zeros(50)\n"
    "for i in range(1, 50): y[i] = 0.9 * y[i - 1] + x[i]\nout = y",
    "element loop with a condition": "x = np.sin(np.arange(200) * 0.1); s = 0.0\n"
    "for i in range(len(x)):\n    if x[i] > 0: s += x[i]\nout = s",
    "element stores then array work": "m = np.zeros((5, 5))\nfor i in range(5):\n"
    "    for j in range(5): m[i, j] = i * j\nt = m * 2; m[1, 1] = -7; out = (t, m, m[1, 1])",
    "store after a queued read": "a = np.arange(4.0); a[0]; b = a * 10; a[1] = 5; c = a + 1; a[2] = 9; out = (b, c, a)",
    "stores into a computed array": "a = np.arange(6) * 3; a[2] = -1; a[5] = 100; out = (a, a[2] + a[5])",
    "flat assignment repeats values": "a = np.arange(6).reshape(2, 3); a.flat = [7, 8]; b = a.copy(); a.flat = 1.9\n"
    "c = np.arange(5.0); c.flat[:] = [1, 2]; c.flat[[0, 1]] = [5, 6, 7]; c.flat[1:4] = 9\n"
    "t = np.arange(6).reshape(2, 3).T; t.flat = np.arange(10); t.flat[::2] = [-1, -2]; out = (b, a, c, t)",
    "NumPy integers stored as NumPy casts them": "u = np.zeros(5, np.uint8); u[0] = np.int64(-1)\n"
    "u[1:3] = np.int64(300); u[u == 0] = np.uint16(258); i = np.zeros(3, np.int8)\n"
    "i[[0, 1]] = np.int64(300); i[i == 0] = np.int16(-200)\n"
    "w = np.zeros(2, np.uint32); w.fill(np.int64(-1)); v = np.zeros(2, np.uint64); v[v == 0] = np.int64(-1)\n"
    "f = np.zeros(2, np.uint8); f[0] = np.float64(3.7); out = (u, i, w, v, f)",
    "integer element stores": "a = np.zeros(3, np.int8); a[0] = 127; a[1] = -128; a[2] = 7.9; out = a",
    "Python numbers into elements of each dtype": "out = []\n"
    "for d in (bool, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float32):\n"
    "    a = np.zeros((2, 3), d); a[1, 2] = True; a[0, 1] = 1; a[-1, 0] = 0\n"
    "    if d is not bool: a[0, 0] = 100\n"
    "    out.append(a)",
    # where= and initial=.
    "ufunc where into out": "a = np.arange(6.0); o = np.zeros(6); np.add(a, 100, out=o, where=a > 2); out = o",
    "ufunc where in place": "a = np.arange(6.0); np.multiply(a, -1, out=a, where=a % 2 == 0); out = a",
    "sum where": "out = np.sum(np.arange(6).reshape(2, 3), axis=1, where=np.array([True, False, True]))",
    "mean where": "out = np.arange(6.0).reshape(2, 3).mean(axis=0, where=np.array([[True], [False]]))",
    "std where": "out = np.std(np.arange(6.0).reshape(2, 3), where=np.array([True, False, True]), ddof=1)",
    "any where": "out = np.any(np.array([[1, 0], [0, 0]]), axis=1, where=np.array([False, True]))",
    "max initial": "a = np.arange(6).reshape(2, 3); out = (a.max(initial=10), a.min(axis=0, initial=1))",
    "min where initial": "out = np.arange(6).reshape(2, 3).min(axis=1, where=np.array([0, 1, 1], bool), initial=9)",
    "reduce initial": "out = np.add.reduce(np.arange(6).reshape(2, 3), axis=0, initial=10)",
    "empty min initial": "out = np.zeros((3, 0)).min(axis=1, initial=5)",
    "sum initial dtype": "out = np.arange(6, dtype=np.int8).sum(initial=3)",
    # `initial` starts each group: a product from 0.0 stays 0.0 where the values overflow.
    "reductions start from initial": "a = np.array([1e300, 1e300, 3.0])\n"
    "out = (np.prod(a, initial=0.0).tolist(), np.multiply.reduce(a.reshape(1, 3), axis=1, initial=0.0).tolist(), "
    "np.prod(np.stack([a, a]), axis=(0, 1), initial=0.0).tolist(), "
    "np.prod(a[:, None] * np.ones(2), axis=0, initial=0.0), "
    "np.signbit(np.sum(np.array([-0.0]), initial=-0.0)).tolist(), "
    "np.signbit(np.sum(np.zeros(0), initial=-0.0)).tolist(), "
    "np.prod(np.zeros((2, 0), np.float32), axis=1, initial=3), np.logical_and.reduce(np.array([1, 0]), initial=True), "
    "np.bitwise_or.reduce(np.array([1, 2]), initial=8), np.prod(np.arange(6.0).reshape(2, 3), axis=(), initial=2))",
    # Memory order and views.
    "reshape F": "out = np.arange(12).reshape((3, 4), order='F')",
    "ravel orders": "a = np.arange(12).reshape(3, 4)\n"
    "out = (a.ravel('F'), a.flatten('F'), a.T.ravel('K'), a.T.ravel('A'))",
    "reshape of a column view": "a = np.arange(12).reshape(3, 4); c = a[:, 1].reshape(3, 1); c[1, 0] = -5; out = a",
    "reshape of a strided view": "a = np.arange(12).reshape(3, 4); b = a[:, :2].reshape(3, 2, 1); b[0] = 9; out = a",
    "reshape of a transpose copies": "a = np.arange(12).reshape(3, 4); d = a.T.reshape(2, 6); d[...] = 0; out = (a, d)",
    "flags": "a = np.arange(12).reshape(3, 4); out = (a.T.flags['C_CONTIGUOUS'], a.T.flags.f_contiguous, "
    "a[:, ::2].flags['C'], a.flags.c_contiguous, a[:1].flags['F_CONTIGUOUS'])",
    "flat assignment": "x = np.arange(10.0); x.flat[1:3] = 0; out = x",
    "flat of a strided view": "y = np.arange(12.0).reshape(3, 4)[:, ::2]; y.flat[[0, 3]] = -1; out = (y, y.flat[2])",
    # Result dtypes.
    "int8 dot": "out = np.dot(np.arange(3, dtype=np.int8), np.arange(3, dtype=np.int8))",
    "bool matmul": "out = np.array([True, True]) @ np.array([True, False])",
    "int8 matmul wraps": "out = np.array([100, 100], np.int8) @ np.array([2, 2], np.int8)",
    "mixed vdot": "out = np.vdot(np.arange(3, dtype=np.int8), np.arange(3, dtype=np.uint8))",
    "N-d dot": "a = np.arange(24.0).reshape(2, 3, 4)\n"
    "b, c = np.arange(20.0).reshape(4, 5), np.arange(40.0).reshape(2, 4, 5)\n"
    "out = (np.dot(a, b), np.dot(a, c), np.dot(a, np.arange(4.0)))",
    "integer division is float64": "out = (np.array([1], np.int8) / 3, np.array([True]) / np.array([True]))",
    "take": "out = (np.take(np.arange(10) * 2, [1, 3]), np.take(np.arange(12).reshape(3, 4), [0, 2], axis=1))",
    # Scalars stored into integer arrays go through Python ints.
    "float into int": "z = np.zeros(3, int); z[0] = 3.7; z[1] = np.float32(-2.5); out = z",
    # NaN-skipping reductions and the rest of the common namespace.
    "fmax fmin reduce": "a = np.array([[np.nan, 1.0, 3.0], [np.nan] * 3, [2.0, np.nan, -1.0]])\n"
    "out = (np.fmax.reduce(a, axis=1), np.fmin.reduce(a, axis=0), np.nanmax(a), np.nanmin(a, axis=1))",
    "nan reductions": "a = np.array([[np.nan, 1.0, 3.0], [np.nan] * 3, [2.0, np.nan, -1.0]])\n"
    "out = (np.nansum(a, axis=0), np.nanprod(a, axis=1), np.nanmean(a, axis=1), np.nanstd(a[0]), "
    "np.nanvar(a, axis=0, ddof=0), np.nanmax(a, axis=1, initial=0.5), np.nansum(np.arange(5)))",
    "ptp average divmod": "a = np.arange(12.0).reshape(3, 4) ** 2\n"
    "out = (np.ptp(a, axis=1), np.average(a), np.average(a, axis=1, weights=[1, 2, 3, 4]), "
    "np.average(a, axis=0, weights=[1, 0, 1], returned=True), np.divmod(np.arange(7), 3))",
    "diff": "a = np.arange(12.0).reshape(3, 4) ** 2\n"
    "out = (np.diff(a), np.diff(a, axis=0), np.diff(a, n=2), np.diff(np.arange(5), prepend=0, append=[9]), "
    "np.diff(np.array([True, False, False, True])))",
    "flips and splits": "a = np.arange(12.0).reshape(3, 4)\n"
    "out = (np.fliplr(a), np.flipud(a), np.array_split(np.arange(10), 3), np.split(a, 2, axis=1), "
    "np.split(np.arange(9), [2, 5]), np.hsplit(a, 4), np.vsplit(a, 3), np.dstack([a, a]))",
    "repeat per element": "a = np.array([[1, 2], [3, 4]])\n"
    "out = (np.repeat(a, [1, 2], axis=0), np.repeat(np.array([1, 2]), np.array([2, 0])), "
    "np.repeat(np.arange(3), [2]))",
    "linspace between arrays": "out = (np.linspace([0, 1], [1, 3], 3), "
    "np.linspace(np.array([0.0, 1.0]), 5.0, 4, axis=-1), "
    "np.linspace(np.zeros(2), 1, 3, endpoint=False, axis=1), np.linspace(0, 1, 5, retstep=True))",
    "round trunc floor ceil": "import math\na = np.arange(10.0); r = round(a[5] / 2)\n"
    "out = (r, type(r).__name__, list(range(round(a.mean()))), math.trunc(a[5] / 2), math.floor(a[7] / 2), "
    "math.ceil(a[7] / 2))",
    "contiguous copies": "a = np.arange(6).reshape(2, 3)\n"
    "out = (np.ascontiguousarray(a.T).flags['C_CONTIGUOUS'], np.asfortranarray(a).flags['F_CONTIGUOUS'], "
    "np.ascontiguousarray(a.T), np.ascontiguousarray(np.float64(2.0)).shape)",
    "views by functions": "a = np.arange(6.0).reshape(2, 3)\n"
    "t = a.view(); t[0, 0] = 100; r = np.rollaxis(a, 1); r[0, 1] = -1; q = np.rot90(a); q[0, 0] = -2\n"
    "np.real(a)[1, 1] = -3; np.require(a)[1, 0] = -4; np.matrix_transpose(a)[1, 0] = -5; np.unstack(a)[1][2] = -6\n"
    "out = (a, np.rot90(a, 2), np.rot90(a, 3), np.rot90(a, -1, axes=(1, 0)), np.rollaxis(np.zeros((2, 3, 4)), 2))",
    "integer rounding": "out = (np.round(np.array([15, 25, 35, -15, 149, 150]), -1), "
    "np.round(np.array([149, 250], np.int16), -2), np.round(np.array([5, 15], np.uint8), -1), "
    "round(np.arange(30)[25], -1), np.arange(30)[25].round(-1))",
    "array of vmnp parts with a dtype": "s = np.arange(5.0).sum()\n"
    "out = (np.array([s, s], dtype=np.int32), np.array([np.arange(3.0) + 0.7], dtype=np.int64), "
    "np.asarray([np.arange(3.0)], dtype=bool))",
    "divmod outputs": "x = np.arange(5.0); q = np.zeros(5); r = np.zeros(5); got = np.divmod(x, 3, out=(q, r))\n"
    "q2 = np.zeros(5); r2 = np.zeros(5); np.divmod(x, 2, q2, r2); out = (q, r, got[0] is q, q2, r2)",
    "compare with None and text": "a = np.arange(3)\n"
    "out = (a == None, a != None, a == 'a', np.where(a == None, 1, 0), np.equal(a, None), np.not_equal(None, a))",
    "arange of 0-d results": "n = np.arange(10)[3]; out = (np.arange(n), np.arange(np.arange(10).max() + 1), "
    "np.zeros(10)[np.arange(np.arange(5)[3])])",
    "reversed": "out = (list(reversed(np.arange(4))), list(reversed(np.arange(6).reshape(2, 3))))",
    "0-d counts": "out = (np.tile(np.arange(2), np.int64(2)), np.tile(np.arange(2), np.arange(5)[2]), "
    "np.split(np.arange(6), np.arange(5)[3]), np.array_split(np.arange(6), np.arange(5)[4]))",
    "memory sharing": "a = np.arange(8.0)\n"
    "out = (np.shares_memory(a, a[1:]), np.shares_memory(a[::2], a[1::2]), np.may_share_memory(a, a[::2]), "
    "np.shares_memory(a, np.arange(8.0)))",
    "orders at creation": "z = np.zeros((2, 3), order='F'); m = np.array([[1, 2], [3, 4]], order='F')\n"
    "f = np.asfortranarray(np.arange(6).reshape(2, 3))\n"
    "out = (z.flags['F_CONTIGUOUS'], m.strides, m.ravel('K'), f.copy('K').strides, np.zeros_like(f).strides, "
    "np.ones((2, 2), order='F').strides, np.copy(f, order='C').strides)",
    "scalar methods of 0-d results": "import fractions, statistics\n"
    "x = np.arange(4.0)[1] / 2\n"
    "out = (x.as_integer_ratio(), x.is_integer(), fractions.Fraction(*x.as_integer_ratio()))",
    "float functions of mixed small ints": "a, b = np.array([1], np.int8), np.array([1], np.uint16)\n"
    "out = (np.arctan2(a, b).dtype.name, np.hypot(np.array([3], np.int16), b).dtype.name)",
    "roll along several axes": "x = np.arange(12).reshape(3, 4)\n"
    "out = (np.roll(x, (1, 1), axis=(0, 1)), np.roll(x, 1, axis=(0, 1)), np.roll(x, [2, -1], axis=[1, 1]))",
    "atleast with several arguments": "r = np.atleast_2d(1, [1, 2]); out = (type(r).__name__, r[0].shape, r[1].shape)",
    "asarray order and copy modes": "v = np.arange(6).reshape(2, 3)[:, 1:]\n"
    "out = (np.asarray(v, order='C').flags['C_CONTIGUOUS'], np.asarray(v.T, order='C').strides, "
    "np.asarray(np.arange(4).reshape(2, 2), order='F').strides, np.array([1, 2], copy=np._CopyMode.IF_NEEDED), "
    "np.astype(np.arange(3.0), np.int8))",
    "int64 crossing into NumPy": "import numpy\nn = numpy.asarray(np.arange(3))\n"
    "out = (n.dtype.char, n.dtype.type is numpy.int64, numpy.asarray(np.arange(3, dtype=np.uint64)).dtype.char)",
    "objects with __array__": "class A:\n"
    "    def __array__(self, dtype=None, copy=None):\n        return np.arange(3.0)\n"
    "out = (np.asarray(A()), np.sum(A()), np.arange(3) + A(), np.concatenate([A(), A()]))",
    "writeable flags": "a = np.arange(6).reshape(2, 3); y = np.arange(3); y.flags.writeable = False\n"
    "r = (np.broadcast_to(a[0], (2, 3)).flags.writeable, a.diagonal().flags.writeable, y[1:].flags.writeable)\n"
    "y.setflags(write=True); y[0] = 9; out = (r, y, (y + 1).flags.writeable)",
    "diagonal writers": "a = np.zeros((3, 3)); np.fill_diagonal(a, 2.0)\n"
    "out = (np.diag(np.arange(3.0)), np.diag(np.arange(2.0), 1), a, np.trace(a))",
    "base of views": "a = np.arange(12.0)\n"
    "out = (a.base is None, a[2:].base is not None, a.reshape(3, 4)[::2].base is not None, a.copy().base is None)",
    "where with initial": "x = np.arange(6.0).reshape(2, 3)\n"
    "m = np.array([[True, False, False], [False, True, True]])\n"
    "out = (x.sum(where=m, initial=5), x.sum(axis=1, where=m, initial=5), np.sum(x, where=x > 100, initial=1), "
    "np.nansum(np.array([1.0, np.nan, np.nan, 2.0]), initial=10), "
    "np.nanprod(np.array([1.0, np.nan, 2.0]), initial=3), "
    "np.array([[True, False], [False, False]]).max(where=np.array([[True, True], [False, True]]), initial=0, axis=1))",
    "float32 means with where": "f = np.array([[1.5, -2.25, 3.0], [4.0, 1.0, 0.5]], dtype=np.float32)\n"
    "m = np.array([[True, False, True], [True, True, False]])\n"
    "out = (f.mean(where=m), f.var(where=m), f.std(where=m, axis=1), f.mean(where=True))",
    "integer mean dtype": "out = (np.mean(np.array([1, 2, 4], dtype=np.int32), dtype=np.int32), "
    "np.arange(5, dtype=np.int8).mean(dtype=np.int8))",
    "fancy stores": "u = np.zeros(10); u[np.array([1, 3, 3])] = np.array([1.0, 2.0, 3.0]); u[[0, -1]] = 7\n"
    "idx = np.arange(0, 10, 4); u[idx] += 1; out = u",
    "prod of a zero before an overflow": "a = np.full((2, 5, 5), 35.0, np.float32); a[0, 0, 0] = 0\n"
    "out = (a.prod(), a.sum())",
    "ufunc casting": "a = np.arange(4.0); o = np.zeros(4, np.int32)\n"
    "out = (np.add(a, a, out=o, casting='unsafe'), np.full(3, np.nan, dtype=np.float32))",
    # Python ints past int64 with uint64 arrays.
    "uint64 past int64": "u = np.arange(3, dtype=np.uint64); u[0] = 2**64 - 1\n"
    "out = (u + 2**63, u == 2**64 - 1, np.full(2, 2**63, dtype=np.uint64), np.maximum(u, 2**63))",
    "strings stored as numbers": "a = np.zeros(3); a[0] = '2.5'; b = np.zeros(3, int); b[1] = '7'; out = (a, b)",
    "clip past the dtype": "u, i = np.arange(10, dtype=np.uint8), np.arange(10, dtype=np.int8)\n"
    "out = (np.clip(u, -5, 300), np.clip(i, -200, 5))",
    # 0-d arrays as shapes.
    "0-d shapes": "x = np.arange(5); out = (np.zeros(x[2]).shape, np.empty(x.sum()).shape, np.full(x[3], 1.0))",
    # dtype=None is NumPy's default dtype; a fill value's own dtype.
    "dtype None": "out = (np.zeros(3, dtype=None), np.ones(2, None), np.empty(2, None).dtype, np.eye(2, dtype=None), "
    "np.arange(3).astype(None), np.full((2, 3), [1, 2, 3]), np.full(2, 2**63), np.full((2, 2), [[True], [False]]))",
    "copy orders": "t = np.ones((3, 4)).T\n"
    "out = (t.copy().flags['C_CONTIGUOUS'], np.copy(t).flags['F_CONTIGUOUS'], t.copy('K').flags['F_CONTIGUOUS'], "
    "np.eye(2, 3, k=1, dtype=np.float32, order='F').strides, np.eye(3, 2, k=-1, order='F'))",
    "K order of flipped views": "a = np.arange(24).reshape(2, 3, 4); t = np.arange(12).reshape(3, 4).T[::-1]\n"
    "c = np.copy(t, order='K')\n"
    "out = (t.ravel('K'), a.transpose(1, 2, 0)[:, ::-1].ravel('K'), a[::-1, :, ::-2].ravel('K'), c, c.strides, "
    "np.copy(a.transpose(2, 0, 1), order='K').strides, c.ravel('K'))",
    "isclose of infinities": "x = np.array([1e308, -np.inf, np.inf, 1.0])\n"
    "out = (np.isclose(x, np.inf), np.isclose(x, x), np.allclose([np.inf], [-np.inf]), np.allclose(x, x))",
    "sequences repeated by integer results": "n = np.arange(4).sum(); m = np.arange(3).max()\n"
    "out = ([0] * n, m * (1,), 'ab' * m, n * [1, 2], len([None] * np.int64(2)))",
    "rounding integers keeps their dtype": "i, b = np.array([1, -2]), np.array([True, False])\n"
    "u = np.arange(3, dtype=np.uint8)\n"
    "out = (np.floor(i), np.ceil(b), np.trunc(u), np.fix(i), np.floor(np.arange(3.5)))",
    "accumulate as NumPy": "out = (np.add.accumulate(np.array([200, 100], dtype=np.uint8)), "
    "np.add.accumulate(np.array([True, True])), np.multiply.accumulate(np.array([100, 3], dtype=np.int8)))",
    "inverse hyperbolics near their poles": "out = (np.arctanh(np.array([-0.9991785321550495, 0.5, -1e-300])), "
    "np.arccosh(np.array([1.0000001, 1.5, 2.0, 3.7, 1e5])))",
    "ufunc outputs broadcast their inputs": "o, p = np.zeros((2, 3), int), np.zeros((4, 2, 3))\n"
    "np.add(np.arange(3), 1, out=o); np.multiply(np.arange(2)[:, None], np.arange(3), out=p)\n"
    "out = (o, p, np.sqrt(np.arange(3.0), out=np.zeros((2, 3))))",
    "ufuncs of scalars are NumPy's scalars": "x = np.arange(4.0); float(x.sum()); e = x[2]\n"
    "out = (np.sin(e), type(np.sin(e)).__name__, np.add(2, 3), type(np.maximum(np.float32(2), 3)).__name__, "
    "np.add(1, 2, dtype=np.float32), np.sqrt(-1.0 + 5), np.where(x > 1, 1, 2.5))",
    "rows chosen by integer arrays": "x = np.arange(60.0).reshape(12, 5); t = np.arange(24).reshape(2, 3, 4)\n"
    "y = np.zeros((5, 3)); y[np.array([4, 1])] = np.array([[1, 2, 3], [4, 5, 6]]); y[[0]] = 7\n"
    "out = (x[np.array([3, -1, 0, 3])], x[[1, 2]], x[np.array([[1, 2], [0, -12]])], x[np.array([], dtype=int)], "
    "t[np.array([1, 0, 1])], t.transpose(2, 0, 1)[[3, 0]], y, np.take(x, np.array([2, 2]), axis=0))",
    "vector and Frobenius norms": "x = np.arange(12.0).reshape(3, 4) - 5; i = np.arange(5)\n"
    "out = (np.linalg.norm(x), np.linalg.norm(x, axis=0), np.linalg.norm(x, axis=1, keepdims=True), "
    "np.linalg.norm(x, 'fro'), np.linalg.norm(x, axis=(0, 1)), np.linalg.norm(x, 1, axis=1), "
    "np.linalg.norm(x, np.inf, axis=0), np.linalg.norm(x, -np.inf, axis=-1), np.linalg.norm(x, 0, axis=1), "
    "np.linalg.norm(x, 3, axis=1), np.linalg.norm(i), np.linalg.norm(x.T[::2], keepdims=True))",
    "vectors of scalar results": "x = np.arange(6.0).reshape(2, 3); s, m = x.sum(), x.max()\n"
    "i = np.arange(4, dtype=np.int8).sum(); f = np.arange(3, dtype=np.float32).mean()\n"
    "out = (np.array([s, m, x.min()]), np.array([s, 1]), np.array([i, 1]), np.array([f, f]), "
    "np.array([s, m], dtype=int), np.array((i, i)))",
    "Python ints past int64": "i, h = np.array([2**63 - 1, -5]), np.array([1], np.int8)\n"
    "f = np.array([1.5], np.float32)\n"
    "out = (i == 2**63, i != 2**63, i < 2**63, 2**63 > i, i >= 2**64 - 1, h < 2**70, i == 2**64, 2**80 > i, "
    "f + 2**100, np.arange(3.0) * 10**20, np.array([1.0]) / -10**30, np.arange(3, dtype=np.uint64) == 2**63)",
    "Python ints in uint64's range past int64 stay weak": "f = np.array([1.5], np.float32)\n"
    "u = np.arange(3, dtype=np.uint8); m = np.array([True, False])\n"
    "out = (f + 2**63, f * 2**64 - 1, u < 2**63, 2**63 != u, np.where(m, np.array([1, 2]), 2**63))",
    "where casts Python ints": "a = np.array([50, 200], dtype=np.uint8); i = np.array([1, 2], np.int8)\n"
    "out = (np.where(a > 100, a, -1), np.where(a > 100, 256, a), np.where(i > 1, i, 200), np.where(i > 1, 3, i))",
    "statistics of reduction results": "import statistics\na = np.arange(10.0)\n"
    "r = [a[: k + 2].mean() for k in range(5)]\n"
    "out = [float(f(r)) for f in (statistics.mean, statistics.variance, statistics.pvariance, statistics.stdev)]",
    "iterating vectors gives NumPy's scalars": "import statistics\nx = np.arange(4) * 1.5; i = np.arange(3)\n"
    "out = (statistics.mean(x), [type(v).__name__ for v in x], sum(v for v in i), sorted(-i), list(x[::-1]), "
    "[isinstance(v, float) for v in x])",
    "moveaxis sequences": "z = np.zeros((2, 3, 4))\n"
    "out = (np.moveaxis(z, [0, 1], [2, 0]).shape, np.moveaxis(z, (0, -1), (-1, 0)).shape, "
    "np.expand_dims(np.arange(3), (0, 2)).shape)",
    "take edge indexes": "a = np.arange(5) + 10\n"
    "out = (np.take(a, []), np.take(a, np.array([True, False])), np.take(a.reshape(5, 1), [], axis=0))",
    "trace of a stack": "a = np.arange(24).reshape(2, 3, 4)\n"
    "out = (np.trace(a), np.trace(np.arange(12).reshape(3, 4), 1), np.diagonal(a, 1, 2, 0), a.diagonal(-1, -1, 1))",
    "fill_diagonal as NumPy": "a, b, c = np.zeros((4, 3), int), np.zeros((7, 3)), np.zeros((3, 7))\n"
    "d = np.zeros((5, 3), int).T\n"
    "np.fill_diagonal(a, [7, 8]); np.fill_diagonal(b, [1, 2, 3, 4], wrap=True); np.fill_diagonal(c, 5, wrap=True)\n"
    "np.fill_diagonal(d, [1, 2], wrap=True); e = np.zeros((3, 3, 3)); np.fill_diagonal(e, 4); out = (a, b, c, d, e)",
    "stacking scalars and vectors": "out = (np.column_stack([1, 2]), np.column_stack([np.arange(3), np.ones((3, 2))]), "
    "np.triu([1, 2, 3]), np.tril(np.arange(3), -1), np.tril(np.arange(24).reshape(2, 3, 4), 1))",
    "linspace into integers": "out = (np.linspace(-1, 1, 7, dtype=np.int8), np.linspace(-2.5, 2.5, 6, dtype=np.int64), "
    "np.linspace([0, 1], [2, -3], 5, dtype=int))",
    "ufunc calls of arrays and numbers": "a, i = np.arange(4.0), np.arange(4, dtype=np.int32)\n"
    "out = (np.add(a, 2), np.add(3, i), np.multiply(i, True), np.subtract(i, 2.5), np.power(2, i), np.sqrt(i), "
    "np.maximum(i, np.float32(1.5)), np.add(i[1], 1), np.sin(np.float32(0.5)), np.add(2, 3), np.negative(2.5))",
    "float functions of integers": "i = np.array([1, -2, 3, -1, 7], dtype=np.int32)\n"
    "out = (np.fabs(i), np.fabs(np.arange(-2, 2)), np.fabs(np.array([-1.5, 2.0])), np.reciprocal(i), "
    "np.reciprocal(np.array([1, 2, -1], dtype=np.int64)), np.reciprocal(np.array([2.0, -4.0])))",
    "reshapes of views": "a = np.arange(24).reshape(4, 6)\n"
    "out = (a[:, ::2].reshape(12), a.T.reshape(6, 4), a[1:3].reshape(-1), a[1:3].reshape(3, 4)[2], "
    "a.reshape(2, -1, 3))",
    "squares by the power operator": "a = np.arange(5.0) - 2.5\n"
    "out = (a ** 2, a ** 2.0, np.power(a, 2), np.arange(4, dtype=np.float32) ** 2, np.arange(4) ** 2, "
    "np.array([1e200, -0.0, np.inf, np.nan]) ** 2, np.arange(3) ** 2.0, a ** 3)",
    "arrays of numbers and of scalar arrays": "a = np.arange(3.0)\n"
    "out = (np.array([1, 2.5, True]), np.array((1, 2)), np.array([a[1], 2, a.sum()]), np.array([[1, 2], [a[0], 4]]), "
    "np.array([np.int8(3), 300]))",
    "scalar results are scalars": "a = np.arange(5)\n"
    "out = [np.isscalar(x) for x in (a.sum(), a[0], a, a.mean() + 1, 3.5, [1], a[:1], np.float32(2), a.max(axis=0))]",
    # A value with more dimensions than the destination: its leading unit ones are dropped.
    "values with leading unit dimensions": "a, b, c = np.zeros((3, 5)), np.zeros(4), np.zeros((2, 3))\n"
    "a[0] = np.ones((1, 5)); b[1:3] = np.arange(2.0)[None, None]; c[...] = np.arange(3)[None, None, None]\n"
    "a[1:, 1:] = np.full((1, 1, 2, 4), 7.0); out = (a, b, c)",
    "degrees and radians": "x = np.array([1.0, -0.5, 3.0, 1e-3, 720.0])\n"
    "out = [[repr(e) for e in v.tolist()] for v in (np.degrees(x), np.radians(x), np.degrees(x.astype(np.float32)), "
    "np.rad2deg(x.astype(np.float32)), np.deg2rad(x.astype(np.float32)))]",
    # Many in-place updates of one array through slices of different strides, in one batch.
    "strided updates of one array": "n = 3000; omega = np.zeros(n + 1, dtype=np.int64)\n"
    "for q in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73) * 4:\n"
    "    omega[q::q] += 1\n"
    "omega[::97] *= 2; out = (omega, omega.sum())",
    # NumPy's float sums start from +0.0 (cumulative sums and an `initial` from their own).
    "sums of negative zeros": "a = np.full((3, 4), -0.0)\n"
    "out = [np.signbit(x).tolist() for x in (a.sum(), a.sum(axis=0), a.sum(axis=1), a.astype(np.float32).sum(0), "
    "np.add.reduce(a, axis=None), a.mean(), np.nansum(a), np.cumsum(a[0]), a.sum(initial=-0.0), "
    "np.sum(a, axis=(0, 1), keepdims=True), a.prod(), a[:, :0].sum(axis=1))]",
    # NumPy's float power loop takes a scalar exponent of 0.5 as sqrt: -0.0 stays -0.0 and -inf
    # is NaN (pow gives 0.0 and inf); a scalar's `**` (a reduction's result) is pow.
    "power by a scalar half is sqrt": "x = np.array([-0.0, -np.inf, 4.0, 2.0, np.nan])\n"
    "f = x.astype(np.float32); y = np.array([-0.0, 1.0])\n"
    "r = [x ** 0.5, np.power(x, 0.5), x ** np.float64(0.5), f ** 0.5, f ** np.float32(0.5), np.power(f, 0.5)]\n"
    "out = ([np.signbit(v) for v in r], [np.isnan(v) for v in r], (x ** 0.5)[2:4].tolist(), "
    "(f ** 0.5)[2:4].tolist(), np.signbit(y.min() ** 0.5), np.array([4, 9], np.int8) ** 0.5)",
    # NumPy's round: x * 10**d, rint, / 10**d (x / 10**-d, rint, * 10**-d for negative d), with its
    # factor 10**d multiplied up from 1e9 past d = 8; a bool is rounded by rint (a float).
    "round scales as NumPy": "x = np.array([1e300, 2.5, -1234.5, 0.125, 2.675, 1.5, -0.0])\n"
    "out = (np.round(x, -300).tolist(), np.round(x, 2).tolist(), np.round(x, -1).tolist(), np.round(x, 20).tolist(), "
    "np.round(x.astype(np.float32), 2).tolist(), np.round(np.array([15, 25, -35, 149], np.int16), -1), "
    "np.round(np.array([True, False])).dtype.kind, np.round(np.array([5, 6], np.uint8), 3), "
    "np.signbit(np.round(x, 1)))",
    # isclose computes as NumPy's: Python numbers stay weak (float32 arrays compare in float32),
    # an array `b` is made inexact, `a` is not cast.
    "isclose in the operands' dtype": "f = np.array([1e10, 1.0, np.inf, np.nan], np.float32)\n"
    "out = (np.isclose(f, 1.00001e10), np.isclose(f, np.float64(1.00001e10)), np.allclose(f[:1], 1.00001e10), "
    "np.isclose(np.array([1, 2, -128], np.int8), 2), np.isclose(np.array([-128], np.int8), np.array([-128], np.int8)), "
    "np.isclose(f, f, equal_nan=True), np.isclose(f, np.inf), np.isclose(np.array([True, False]), True), "
    "np.isclose(5, f), np.isclose(np.array([1.0]), np.array([1.1]), rtol=np.array([0.2])))",
    # A 0-d array of another dtype stored through a mask is cast as NumPy casts it, and the
    # elements the mask leaves keep their exact values (2**62 + 1 is no float64).
    "masked store of a 0-d array of another dtype": "a = np.array([2**62 + 1, 0], dtype=np.int64)\n"
    "a[a == 0] = np.array(-3.5)\nb = np.array([2**63 + 1, 0], dtype=np.uint64); b[b == 0] = np.array(-5)\n"
    "c = np.array([5, 0], np.int8); c[c == 0] = np.array(2**63 + 1, np.uint64)\n"
    "d = np.array([2**53 + 1, 7]); d[np.array([False, True])] = np.array(2.5, np.float32)\nout = (a, b, c, d)",
    "repeat of nothing by no counts": "a = np.zeros(0, np.uint8)\n"
    "out = (np.repeat(a, []), np.repeat(np.zeros((2, 0)), [], axis=1), np.repeat(a, np.array([], int)))",
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's all-NaN and empty-slice warnings
def test_semantics_agree_with_numpy(name):
    agree(run(CASES[name], vmnp), run(CASES[name], numpy))


def test_reshape_without_copy_refuses_when_it_must_copy():
    with pytest.raises(ValueError, match="copy"):
        vmnp.arange(12).reshape(3, 4).T.reshape(12, copy=False)
    # Every other element of every row is evenly spaced: a view.
    v = vmnp.arange(12).reshape(3, 4)[:, ::2].reshape(6, copy=False)
    v[0] = -1
    assert v.tolist() == [-1, 2, 4, 6, 8, 10]


IN_PLACE_FALLBACKS = {
    "copyto": "a = np.array([3, 1, 2]); np.copyto(a, np.array([7, 8, 9])); out = a",
    "copyto view": "a = np.arange(12.0).reshape(3, 4); np.copyto(a[:, 1], 7); out = a",
    "put": "a = np.arange(5); np.put(a, [0, 2], [-1, -2]); out = a",
    "place": "a = np.arange(6); np.place(a, a > 2, [40, 50]); out = a",
    "putmask": "a = np.arange(6); np.putmask(a, a > 3, 0); out = a",
    "ufunc at": "x = np.ones(5); np.multiply.at(x, [0, 0, 2], 3); out = x",
    "ufunc reduceat": "out = np.add.reduceat(np.arange(8), [0, 4, 1, 5])",
    "named tuple results": "q, r = np.linalg.qr(np.array([[2.0, 1.0], [1.0, 3.0]]))\n"
    "out = (q @ r, np.unique_counts([3, 1, 3]))",
    "ufunc not recorded": "a = np.array([12, 18, 24])\n"
    "out = (np.gcd.reduce(a), np.gcd(np.array([4, 6]), 4), np.lcm.outer([2, 3], [4, 5]))",
    "subtract reduce": "out = np.subtract.reduce(np.arange(6).reshape(2, 3), axis=1)",
    "out and where": "x = np.arange(6.0) - 3; o = np.ones(6); np.heaviside(x, 0.5, out=o, where=x > -2); out = o",
    "matrix norms of other orders": "x = np.arange(12.0).reshape(3, 4) - 5\n"
    "out = (np.linalg.norm(x, 2), np.linalg.norm(x, 'nuc'), np.linalg.norm(x, 1), np.linalg.norm(x, -np.inf))",
    "accumulate into out": "o = np.zeros(3, int); np.maximum.accumulate(np.array([3, 1, 4]), out=o)\n"
    "out = (o, np.minimum.accumulate(np.array([[3, 1], [0, 4]]), 1))",
}


# Fallbacks that only read their arguments get read-only views of the VM's host memory: every
# layout a view can have, and results that stay put when the arrays change afterwards.
READ_ONLY_FALLBACKS = {
    "strided": "out = np.histogram(np.arange(20.0)[::3], [0.0, 5.0, 20.0], weights=np.ones(7))",
    "reversed": "out = np.unwrap(np.arange(10.0)[::-1] * 1.5)",
    "column-major": "out = np.nanmedian((np.arange(12.0).reshape(3, 4) ** 2).T, axis=0)",
    "rows with gaps": "a = np.arange(24.0).reshape(4, 6); out = np.unwrap(a[1::2, ::-2], axis=1)",
    "bools": "out = np.packbits(np.array([True, False, True]))",
    "one array twice": "a = np.arange(5.0) * 2; out = np.ediff1d(a, to_end=a)",
    "0-d": "out = np.nanpercentile(np.ones(()) * 3, 50)",
    "empty": "out = np.packbits(np.zeros(0, bool))",
    "computed lazily": "x = np.arange(8.0); y = (x * 3 - 1)[::-1]; out = np.unwrap(y)",
    "changed after": "x = np.arange(6.0); s = np.unwrap(x[::-1]); m = np.nanmedian(x)\nx[:] = -1\nout = (s, m, x)",
    "weights reversed": "x = np.arange(4.0); out = np.histogram(x, [0.0, 1.5, 3.0], weights=x[::-1])",
}


FALLBACKS = {**IN_PLACE_FALLBACKS, **READ_ONLY_FALLBACKS}


@pytest.mark.parametrize("name", list(FALLBACKS))
def test_fallbacks_agree_with_numpy(name, monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    monkeypatch.setattr(vmnp._src.fallback, "_warned", set())
    with pytest.warns(vmnp.FallbackWarning):
        got = run(FALLBACKS[name], vmnp)
    agree(got, run(FALLBACKS[name], numpy))


def test_a_fallback_writing_an_argument_it_only_reads_is_an_error(monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    x = vmnp.arange(4.0)

    def scribble(a):
        a[0] = 5.0

    with pytest.warns(vmnp.FallbackWarning), pytest.raises(ValueError, match="read-only"):
        vmnp._fallback("scribble", scribble, (x,), {})
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_arrays_larger_than_memory_are_memory_errors_not_aborts():
    # More than the machine's memory and swap: NumPy's MemoryError when made, as NumPy's.
    for make in [lambda: vmnp.zeros(2**40), lambda: vmnp.full((2**20, 2**20), 1.5), lambda: vmnp.arange(2**40)]:
        with pytest.raises(MemoryError, match="Unable to allocate"):
            make()
    with pytest.raises(ValueError, match="too big"):
        vmnp.ones((2**62, 4))
    # The session goes on.
    assert float(vmnp.arange(5).sum()) == 10


ERRORS = {
    "sign of bools": ("np.sign(np.array([True, False]))", TypeError),
    "round of bools to decimals": ("np.round(np.array([True]), 1)", TypeError),
    "repeated moveaxis source": ("np.moveaxis(np.zeros((2, 3, 4)), [0, 0], [1, 2])", ValueError),
    "repeated expand_dims axis": ("np.expand_dims(np.zeros(3), (1, 1))", ValueError),
    "float take index": ("np.take(np.arange(5), np.array([1.0]))", TypeError),
    "float linspace count": ("np.linspace(0, 1, 2.0)", TypeError),
    "diag of a scalar": ("np.diag(5)", ValueError),
    "int array plus an int past uint64": ("np.array([1, 2]) + 2**64", OverflowError),
    "an int past uint64 into an int array": ("a = np.zeros(2, int); a[0] = 10**20", OverflowError),
    "an int past int8 into an element": ("a = np.zeros((2, 2), np.int8); a[1, 0] = 128", OverflowError),
    "a negative int into a uint16 element": ("a = np.zeros(2, np.uint16); a[-1] = -1", OverflowError),
    "int array plus an int past int64": ("np.array([1, 2]) + 2**63", OverflowError),
    "int8 array times an int past int64": ("np.arange(3, dtype=np.int8) * 2**63", OverflowError),
    "uint32 array minus an int past int64": ("np.arange(3, dtype=np.uint32) - 2**63", OverflowError),
    "maximum with an int past int64": ("np.maximum(np.arange(3), 2**63)", OverflowError),
    "bool array compared with an int past int64": ("np.array([True, False]) < 2**63", OverflowError),
    "bool array compared with an int past uint64": ("np.array([True, False]) == 2**70", OverflowError),
    "an int past int64 into an int array": ("a = np.zeros(2, int); a[0] = 2**63", OverflowError),
    "row index out of range": ("np.zeros((3, 2))[np.array([0, 3])]", IndexError),
    "negative row index out of range": ("np.zeros((3, 2))[[-4]]", IndexError),
    "ufunc output of another shape": ("np.add(np.arange(3), 1, out=np.zeros((2, 4), int))", ValueError),
    "maximum of no bools": ("np.max(np.zeros(0, bool))", ValueError),
    "minimum of no bools": ("np.zeros((0, 3), bool).min(axis=0)", ValueError),
    "accumulate over every axis": ("np.add.accumulate(np.ones((2, 2)), axis=None)", ValueError),
    "negative integer power": ("np.array([2, 3]) ** -1", ValueError),
    "negative NumPy integer power": ("np.arange(3) ** np.int64(-2)", ValueError),
    "ufunc of a string": ("np.sqrt('x')", TypeError),
    "float extent": ("np.zeros((2, 2.5))", TypeError),
    "negative extent": ("np.zeros(-1)", ValueError),
    "negative eye": ("np.eye(-1)", ValueError),
    "NaN into int": ("z = np.zeros(3, int); z[0] = np.nan", ValueError),
    "inf into int": ("z = np.zeros(3, int); z[1:] = np.inf", OverflowError),
    "fill NaN into int": ("np.zeros(3, int).fill(np.nan)", ValueError),
    "large float into int8": ("a = np.arange(6, dtype=np.int8); a[0] = np.float64(1e10)", OverflowError),
    "NumPy int out of range": ("a = np.arange(6, dtype=np.int8); a[0] = np.int64(1000)", OverflowError),
    "NumPy int out of range in a slice": ("a = np.arange(6, dtype=np.int16); a[1:] = np.int64(70000)", OverflowError),
    "Python int out of range": ("a = np.zeros(2, np.uint8); a[0] = -1", OverflowError),
    "unparsable string": ("a = np.zeros(3); a[0] = 'x'", ValueError),
    "repeated transpose axis": ("np.arange(6).reshape(2, 3).transpose(1, 1)", ValueError),
    "unsigned negative power": ("np.arange(3, dtype=np.uint8) ** -1", OverflowError),
    "empty truth": ("bool(np.array([]))", ValueError),
    "ragged parts": ("np.array([np.arange(2), np.arange(3)])", ValueError),
    "copy refused": ("np.array([np.arange(3.0)], copy=False)", ValueError),
    "write into a broadcast view": ("b = np.broadcast_to(np.arange(3), (2, 3)); b[0, 0] = 1", ValueError),
    "write into a diagonal": ("np.arange(9).reshape(3, 3).diagonal()[0] = 1", ValueError),
    "write into a read-only array": ("y = np.arange(3); y.flags.writeable = False; y[y > 0] = 5", ValueError),
    "output read-only": ("y = np.arange(3); y.setflags(write=False); np.multiply(y, 2, out=y)", ValueError),
    "in place read-only": ("y = np.arange(3); y.flags['WRITEABLE'] = False; y += 1", ValueError),
    "masked NaN into int": ("u = np.zeros(4, np.int16); u[u == 0] = np.nan", ValueError),
    "masked inf into int": ("u = np.zeros(4, np.int16); u[u == 0] = np.inf", OverflowError),
    "masked out of range": ("i = np.zeros(4, np.int32); i[i == 0] = 1e20", OverflowError),
    "fancy list out of range": ("a = np.zeros(4, np.uint8); a[[2, 3]] = [300, 1]", OverflowError),
    "slice list out of range": ("a = np.zeros(4, np.uint8); a[1:3] = [300, 1]", OverflowError),
    "fancy index out of range": ("a = np.zeros(4); a[np.array([1, 4])] = 1", IndexError),
    "astype casting": ("np.arange(3.0).astype(np.int32, casting='safe')", TypeError),
    "ufunc safe output": ("np.add(np.arange(3.0), 1, out=np.zeros(3, np.float32), casting='safe')", TypeError),
    "ufunc dtype input": ("np.add(np.arange(3.0), 1, dtype=np.int32)", TypeError),
    "copy refused for a cast": ("np.asarray(np.arange(3.0), dtype=np.float32, copy=False)", ValueError),
    "array API version": ("np.arange(3).__array_namespace__(api_version='1999.01')", ValueError),
    "string shape": ("np.arange(3).reshape((2, 'a'))", TypeError),
    "normal scale": ("np.random.normal(0, -1, 3)", ValueError),
    "legacy seed": ("np.random.seed(2**40)", ValueError),
    "negative seed": ("np.random.default_rng(-5)", ValueError),
    "text seed": ("np.random.default_rng('seed')", TypeError),
    "choice too many": ("np.random.choice(3, 5, replace=False)", ValueError),
    "choice p": ("np.random.choice(3, 5, p=[0.5, 0.6, 0.1])", ValueError),
}


# Values of dtypes the VM lacks (complex, text, objects, datetimes): what meets them runs on
# NumPy through the fallback and gives NumPy's arrays; results of dtypes the VM has come back.
FOREIGN = {
    "complex scalar operands": "a = np.arange(3.0)\n"
    "out = (a * (1 + 2j), (1 + 2j) * a, a - 1j, 1j / (a + 1), a ** 0.5j)",
    "complex array operands": "a = np.arange(3.0); c = numpy.array([1j, 2, 3])\nout = (a + c, c + a, a * c.conj())",
    "complex comparisons": "a = np.arange(3.0)\nout = (a == 0j, a != 1j, a < 1j, 0j == a)",
    "creation in other dtypes": "out = (np.zeros(3, complex), np.array(['a', 'bc']), np.array([None, 1]), "
    "np.ones(2, dtype='U3'), np.full(2, 1 + 1j), np.array(3 + 1j), np.asarray([1j]), "
    "np.array(numpy.datetime64('2020-01-02')))",
    "casts to other dtypes": "a = np.arange(3)\n"
    "out = (a.astype(complex), a.astype('U2'), np.asarray(a, dtype=complex))",
    "functions meeting other dtypes": "a = np.arange(3.0)\n"
    "out = (np.concatenate([a, numpy.array([1j])]), np.where(a > 0, 1j, a), np.exp(1j * a), np.abs(a * 1j), "
    "np.sum(numpy.array([1j, 2])), np.linspace(0, 1j, 3), np.zeros_like(numpy.array([1j])), "
    "np.stack([a, a * 1j]), np.add(a, 1j), np.sqrt(a - 4 + 0j), np.real(a + 2j), np.angle(a * 1j + 1))",
    "numpy functions on mixed arguments": "a = np.arange(3.0)\n"
    "out = (numpy.add(a, 1j), numpy.concatenate([a, numpy.array([1j])]), numpy.multiply(1j, a))",
    "text and objects chosen by where": "s = np.array([95, 85, 70])\n"
    "out = (np.where(s > 90, 'A', 'B'), np.where(s > 90, 'A', np.where(s > 80, 'B', 'C')), "
    "np.where(s > 80, None, s), np.arange('2024-01-01', '2024-01-04', dtype='datetime64[D]'))",
    "mandelbrot": "x = np.linspace(-2, 1, 30); y = np.linspace(-1.5, 1.5, 20)\n"
    "c = x[None, :] + 1j * y[:, None]; z = np.zeros_like(c); m = np.zeros(c.shape, dtype=int)\n"
    "for _ in range(12):\n    inside = np.abs(z) <= 2\n    z[inside] = z[inside] ** 2 + c[inside]\n"
    "    m[inside] += 1\nout = (m, float(m.sum()))",
    "conjugates": "c = np.array([1 + 2j, 3 - 1j]); out = (np.conj(c), np.conjugate(c), c.conj(), np.conj(c * 2))",
    # A byte order other than the machine's is NumPy's dtype (the bytes written are big-endian).
    "byte orders": "big = np.array([1, 256], dtype='>i2')\n"
    "out = (big, big.tobytes(), np.zeros(2, dtype='>f4'), np.frombuffer(b'\\x00\\x01', dtype='>u2'), big + 1, "
    "np.asarray(numpy.array([1, 2], dtype='>i4')) * 2, np.arange(3.0).astype('>f8').tobytes(), "
    "np.array([1.5, 2], dtype='>f8').tolist())",
    # NumPy's subclasses keep their semantics in functions, ufuncs and operators.
    "masked arrays": "m = np.ma.masked_array([4.0, -1.0, 9.0, 16.0], mask=[0, 0, 1, 0])\n"
    "r = [np.sqrt(m), np.add(m, 1), np.arange(4.0) + m, np.maximum(m, 5), np.concatenate([m, m]), np.clip(m, 0, 5), "
    "np.cumsum(m), np.log(np.ma.array([1.0, 0.0]))]\n"
    "out = ([np.ma.filled(x, -7) for x in r], [np.ma.getmaskarray(x) for x in r], [type(x).__name__ for x in r], "
    "np.mean(m), np.sum(m), np.std(m), np.max(m))",
    "matrices": "mm = np.asmatrix(np.eye(2) * 2)\n"
    "out = (np.sqrt(mm), type(np.sqrt(mm)).__name__, type(np.multiply(mm, np.ones((2, 2)))).__name__, "
    "np.sum(mm, axis=0), type(np.sum(mm, axis=0)).__name__, type(np.arange(2.0) * mm).__name__)",
    # Functions of NumPy's other modules that share a name with one of the namespace's.
    "other modules' functions": "x = np.arange(3.0)\n"
    "out = (np.emath.sqrt(-x), np.emath.log(-x - 1), np.char.mod('%d-x', np.arange(3)), np.lib.scimath.sqrt(x - 1))",
    "ragged object arrays": "r = np.array([np.arange(2), np.arange(3)], dtype=object)\n"
    "out = (r.dtype.str, r.shape, [x.tolist() for x in r])",
}


@pytest.mark.parametrize("name", list(FOREIGN))
def test_other_dtypes_run_on_numpy(name, monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    code = FOREIGN[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own (0 ** 0.5j)
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # NumPy's matrix class
        want = run_with_numpy(code, numpy)
        warnings.simplefilter("ignore", vmnp.FallbackWarning)
        got = run_with_numpy(code, vmnp)
    agree(got, want)


def run_with_numpy(code, module):
    scope = {"np": module, "numpy": numpy}
    exec(code, scope)  # noqa: S102 (the test's own programs)
    return scope["out"]


def test_results_of_the_vms_dtypes_come_back_from_numpy(monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    a = vmnp.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmnp.FallbackWarning)
        assert isinstance(vmnp.abs(a * 1j), vmnp.ndarray) and isinstance(a == 0j, vmnp.ndarray)
        assert isinstance(a * 1j, numpy.ndarray) and (a * 1j).dtype == numpy.complex128
    # Not a dtype question: operands no dtype holds are still the TypeError they are in NumPy.
    with pytest.raises(TypeError):
        a + object()
    with pytest.raises(TypeError):
        vmnp.zeros((2, 2.5))


def test_other_dtypes_are_fallback_errors_when_fallbacks_are():
    a = vmnp.arange(3.0)
    for code in ["a * 1j", "1j * a", "vmnp.zeros(3, complex)", "vmnp.array(['x'])", "a.astype(complex)"]:
        with pytest.raises(vmnp.FallbackError):
            eval(code, {"vmnp": vmnp, "a": a})  # noqa: S307 (the test's own expressions)


def test_index_arrays_of_known_range_index_without_a_check_and_writes_forget_the_range():
    bounds = vmnp._vmnp._bounds
    rng = vmnp.random.default_rng(3)
    perm, ints, a = rng.permutation(50), rng.integers(-4, 9, size=20), vmnp.arange(40, 2, -3)
    arg = vmnp.argmax(vmnp.ones((3, 7)), axis=1)
    assert (bounds(perm), bounds(perm[5:9]), bounds(ints), bounds(a), bounds(arg)) == (
        (0, 49),
        (0, 49),
        (-4, 8),
        (4, 40),
        (0, 6),
    )
    assert sorted(numpy.asarray(perm).tolist()) == list(range(50))
    x = numpy.arange(100.0).reshape(50, 2)
    v = vmnp.asarray(x)
    for idx in (perm[10:20], ints, a, perm):
        numpy.testing.assert_array_equal(numpy.asarray(v[idx]), x[numpy.asarray(idx)])
    # A write forgets the range: the check runs again and finds the bad index.
    perm[3] = 50
    a += 100
    assert bounds(perm) is None and bounds(a) is None
    for idx in (perm, a):
        with pytest.raises(IndexError):
            v[idx]


def test_generators_take_every_seed_numpy_takes():
    # Sequences of integers, SeedSequences, NumPy bit generators and generators: each a
    # reproducible stream of its own.
    def draw(seed):
        return vmnp.random.default_rng(seed).random(4).tolist()

    forms = {
        "int": 5,
        "sequence": [5, 6],
        "seed sequence": numpy.random.SeedSequence(5),
        "bit generator": numpy.random.PCG64(numpy.random.SeedSequence(7)),
        "numpy generator": numpy.random.default_rng(numpy.random.SeedSequence(8)),
    }
    streams = {name: draw(seed) for name, seed in forms.items()}
    assert streams["sequence"] == draw([5, 6])
    assert streams["seed sequence"] == draw(numpy.random.SeedSequence(5))
    assert streams["bit generator"] == draw(numpy.random.SeedSequence(7))
    assert streams["numpy generator"] == draw(numpy.random.SeedSequence(8))
    assert len({tuple(s) for s in streams.values()}) == len(forms), streams


def test_scalar_and_array_draws_continue_one_stream():
    # As NumPy's generators: one stream, whether drawn a number or an array at a time.
    for module in (numpy, vmnp):
        a, b = module.random.default_rng(11), module.random.default_rng(11)
        mixed = [a.random()] + module.asarray(a.random(300)).tolist() + [a.random(), a.random()]
        assert mixed == module.asarray(b.random(303)).tolist(), module.__name__
        a, b = module.random.default_rng(11), module.random.default_rng(12)
        assert a.random() != b.random(), module.__name__


def test_random_draws_broadcast_array_parameters_and_fill_out():
    g = vmnp.random.default_rng(7)
    # One draw per element of the broadcast parameters, each within its own bounds.
    ints = numpy.asarray(g.integers(numpy.array([0, 100, -5]), numpy.array([1, 101, -4])))
    numpy.testing.assert_array_equal(ints, [0, 100, -5])
    assert g.integers(0, [1, 2, 3], size=(5, 3)).shape == (5, 3)
    u = numpy.asarray(vmnp.random.uniform([0, 10], [1, 11], size=(4, 2)))
    assert u.shape == (4, 2) and (u[:, 0] < 1).all() and (u[:, 1] >= 10).all()
    n = numpy.asarray(vmnp.random.normal(loc=[0, 1000], scale=[[1], [2], [3]]))
    assert n.shape == (3, 2) and (n[:, 1] > 900).all()
    assert vmnp.random.exponential([1.0, 2.0, 3.0]).shape == (3,)
    # out= receives as many distinct draws as it holds.
    for draw in (g.random, g.standard_normal):
        o = vmnp.zeros((2, 3))
        assert draw(out=o) is o and len(set(numpy.asarray(o).ravel().tolist())) == 6
    with pytest.raises(ValueError):
        g.random(size=3, out=vmnp.zeros(4))
    # Lists shuffle in place; text is chosen from.
    items = list(range(20))
    vmnp.random.shuffle(items)
    assert sorted(items) == list(range(20)) and items != list(range(20))
    picks = g.choice(["a", "b", "c"], 10)
    assert picks.shape == (10,) and set(picks.tolist()) <= {"a", "b", "c"}
    assert type(g.integers(10)) is numpy.int64 and type(vmnp.random.randint(0, 5, dtype=numpy.int8)) is numpy.int8


def test_resizing_in_place_is_refused_not_ignored():
    a = vmnp.arange(5) * 2
    with pytest.raises(ValueError, match="np.resize"):
        a.resize(7, refcheck=False)
    numpy.testing.assert_array_equal(numpy.asarray(a), numpy.arange(5) * 2)


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_are_numpys(name):
    code, error = ERRORS[name]
    for module in (numpy, vmnp):
        with pytest.raises(error):
            exec(code, {"np": module})  # noqa: S102


def test_random_draws_without_replacement_and_with_probabilities():
    rng = vmnp.random.default_rng(7)
    perm = rng.permutation(50)
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    assert sorted(rng.choice(20, 20, replace=False).tolist()) == list(range(20))
    assert set(rng.choice(3, 500, p=[0.5, 0.5, 0.0]).tolist()) == {0, 1}
    picked = rng.choice(6, 4, replace=False, p=[0, 0, 0.25, 0.25, 0.25, 0.25]).tolist()
    assert sorted(picked) == [2, 3, 4, 5]
    x = vmnp.arange(10)
    vmnp.random.shuffle(x)
    assert sorted(x.tolist()) == list(range(10))
    grid = vmnp.random.default_rng(3).permutation(vmnp.arange(12).reshape(4, 3))
    assert sorted(grid[:, 0].tolist()) == [0, 3, 6, 9] and (grid[:, 1] - grid[:, 0]).tolist() == [1] * 4
    # Reproducible for a seed.
    again = vmnp.random.default_rng(7).permutation(50)
    assert again.tolist() == perm.tolist()
    e = vmnp.random.default_rng(1).exponential(2.0, 20000)
    assert float(e.min()) >= 0 and abs(float(e.mean()) - 2.0) < 0.1


HOOKED = """
import numpy as np
import numpy.linalg
from numpy import fft
print(np.median(np.arange(5.0)), np.unique(np.array([3, 1, 3])).tolist(), np.percentile(np.arange(10.0), 30))
print(np.unique(np.array([[1, 2], [1, 2], [3, 4]]), axis=0).tolist(), np.isin(np.array([1.0, 2.0]), [2.0]).tolist())
print(fft.fft(np.arange(4.0)).real.tolist(), np.polynomial.polynomial.polyval(2.0, [1, 2, 3]))
print(np.ma.masked_array([1, 2], mask=[0, 1]).sum(), numpy.linalg.norm(np.arange(3.0)))
import numpy.typing
np.testing.assert_allclose(np.arange(3.0), [0, 1, 2])
import pickle
x = np.arange(6.0).reshape(2, 3)[:, ::2]
print(pickle.loads(pickle.dumps(x)).tolist())
from numpy import *
print(array([1, 2]) * pi, type(arange(3)).__module__)
from numpy.random import default_rng
import numpy.random as npr
print(type(default_rng(1).random(2)).__module__, npr.__name__, type(np).__name__, np.__name__)
"""


def test_numpy_submodules_import_under_the_hook(tmp_path):
    import os
    import subprocess
    import sys

    prog = tmp_path / "prog.py"
    prog.write_text(HOOKED)
    env = {**os.environ, "VMNP_FALLBACK": "warn", "PYTHONWARNINGS": "ignore"}
    vm = subprocess.run([sys.executable, "-m", "vmnp", str(prog)], capture_output=True, text=True, env=env, check=True)
    plain = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, check=True)
    assert vm.stdout.splitlines()[:-2] == plain.stdout.splitlines()[:-2], vm.stderr
    assert vm.stdout.splitlines()[-2] == "[3.14159265 6.28318531] vmnp"
    assert vm.stdout.splitlines()[-1] == "vmnp vmnp.random module vmnp"


def test_error_messages_write_shapes_as_numpy_does():
    for code in [
        "np.arange(5).reshape(2, 2)",
        "np.zeros((2, 3))[...] = np.zeros((3, 2))",
        "np.zeros((2, 3)) + np.zeros(4)",
    ]:
        (_, want), (_, got) = errors_of(code, ValueError)
        assert got == want


def test_user_types_overriding_ufuncs_answer_for_them():
    import numpy.lib.mixins

    class Wrapped(numpy.lib.mixins.NDArrayOperatorsMixin):
        def __init__(self, value):
            self.value = value

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            plain = [x.value if isinstance(x, Wrapped) else x for x in inputs]
            return Wrapped(getattr(ufunc, method)(*plain, **kwargs))

    w = Wrapped(numpy.arange(3.0))
    for got in (vmnp.arange(3.0) + w, vmnp.sqrt(w), vmnp.add(vmnp.arange(3.0), w), w * vmnp.arange(3.0)):
        assert isinstance(got, Wrapped)
    assert numpy.asarray((vmnp.arange(3.0) + w).value).tolist() == [0.0, 2.0, 4.0]


def test_reshape_errors_write_unknown_dimensions_as_numpy_does():
    for shape in [(2, -1), (-1, 5), (5, -1, 2), (5,), (-1, -1)]:
        with pytest.raises(ValueError) as want:
            numpy.arange(3).reshape(shape)
        with pytest.raises(ValueError) as got:
            vmnp.arange(3).reshape(shape)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize(
    "args", [(3, 4), ((3, 4),), ([2, -1],), (-1,), (12,), ((2, 2, 3),), (1, 12, 1), ((),)], ids=repr
)
def test_reshape_spellings_are_views_and_copies_are_not(args):
    size = 1 if args == ((),) else 12
    for module in (numpy, vmnp):
        a = module.arange(float(size))
        r = a.reshape(*args)
        r[(0,) * r.ndim] = -1.0  # a view: writes through
        c = a.copy()
        c[0] = 7.0  # a copy: does not
        assert numpy.asarray(a)[0] == -1.0 and numpy.asarray(c)[0] == 7.0
    assert vmnp.arange(float(size)).reshape(*args).shape == numpy.arange(float(size)).reshape(*args).shape
    # A strided array reshapes by copy, as NumPy's.
    t = vmnp.arange(12.0).reshape(3, 4).T
    assert numpy.asarray(t.reshape(12)).tolist() == numpy.arange(12.0).reshape(3, 4).T.reshape(12).tolist()


def test_operators_with_text_or_none_raise_numpys_errors():
    for code in [
        "x < 'a'", "x + 'a'", "'a' + x", "None - x", "x * b'a'", "x // None", "x ** None", "'a' >= x",
        "x += 'a'", "x *= None", "x += 1j", "x @ 'a'", "'a' @ x", "divmod(x, 'a')", "x.sum() + 'a'", "x[0] < 'a'",
    ]:  # fmt: skip
        (_, want), (_, got) = errors_of(code, TypeError, lambda module: {"x": module.arange(3.0)})
        assert got == want, code
    for module in (numpy, vmnp):
        x = module.arange(3.0)
        assert numpy.asarray(x == "a").tolist() == [False] * 3 and numpy.asarray(x != None).all()  # noqa: E711


def test_conjugate_and_positive_follow_numpys_loops():
    out = {}
    for module in (numpy, vmnp):
        b = module.array([True, False])
        f = module.arange(3.0)
        with pytest.raises(TypeError):
            module.positive(b)
        with pytest.raises(TypeError):
            +b  # noqa: B018 (the operator raises)
        out[module] = (module.conj(b), module.conj(f), module.positive(f), b.conj() is b)
        out[module] += (module.conj.__name__, module.isfortran(f.reshape(1, 3).T), module.isfortran(f.reshape(3, 1).T))
    agree(out[vmnp], out[numpy])


def test_broadcast_errors_of_outputs_and_index_assignments_are_numpys():
    for code in [
        "np.add(np.arange(3), np.ones((1, 3)), out=np.zeros((4, 1)))",
        "np.add(np.ones(2), np.ones(3), out=np.zeros(4))",
        "np.add(np.arange(3.0), 1.0, out=np.zeros(2))",
        "np.sqrt(np.arange(3.0), out=np.zeros(2))",
        "np.multiply(np.ones(3), 2, out=np.zeros(1))",
        "np.where(np.ones(3) > 0, 1, np.ones(2))",
        "np.clip(np.arange(3), 0, np.ones(2))",
        "np.clip(np.arange(3), 0, 1, out=np.zeros(2))",
        "np.clip(np.arange(3), np.ones((2, 1)), 1, out=np.zeros(3))",
        "a = np.zeros((3, 4)); a[[0, 1]] = np.ones(3)",
        "a = np.zeros(5); a[np.array([0, 1])] = [1, 2, 3]",
    ]:
        (_, want), (_, got) = errors_of(code, ValueError)
        assert got == want, code


def test_objects_stored_into_elements_convert_as_numpy_converts_them():
    from decimal import Decimal
    from fractions import Fraction

    class Number:
        def __float__(self):
            return 2.5

        def __int__(self):
            return 7

    out = {}
    for module in (numpy, vmnp):
        got = []
        for dtype in ("int64", "float64", "bool", "uint8"):
            for value in (None, Fraction(3, 2), Decimal("1.5"), Number(), object()):
                a = module.zeros(3, dtype=dtype)
                try:
                    a[1] = value
                    got.append(a)
                except TypeError as e:
                    got.append(str(e))
        out[module] = got
    agree(out[vmnp], out[numpy])


def test_axis_arguments_repeated_or_not_integers_fail_as_in_numpy():
    for code in [
        "np.flip(x, (0, 0))",
        "np.expand_dims(x, (0, 0))",
        "np.squeeze(np.ones((1, 3, 1)), (0, 0))",
        "np.diff(x, axis=(0, 0))",
        "np.take(x, [0], axis=(0, 2))",
        "np.flip(x, 1.5)",
        "np.moveaxis(x, (0, 0), (1, 0))",
    ]:
        want, got = errors_of(code, (TypeError, ValueError), lambda m: {"np": m, "x": m.arange(12).reshape(3, 4)})
        assert got == want, code


def test_shape_and_operand_errors_are_numpys():
    for code in [
        "np.ones(3) @ 2",
        "2 @ np.ones(3)",
        "np.matmul(np.float64(2), np.ones(2))",
        "np.zeros(2.5)",
        "np.ones(np.float64(2))",
        "np.full(2.5, 1)",
        "np.zeros(None)",
        "np.zeros((2, 1.5))",
        "np.arange(6).reshape(2.5)",
        "np.arange(6).reshape((2, 3.0))",
        "np.repeat(np.arange(3), -1)",
        "np.repeat(np.arange(6).reshape(2, 3), -2, axis=1)",
    ]:
        want, got = errors_of(code, (TypeError, ValueError))
        assert got == want, code


def test_linspace_computes_in_the_dtype_of_its_bounds():
    bounds = [
        "np.float32(0), np.float32(1)", "np.float32(-1), 2", "0, 1", "np.int8(-100), np.int8(100)",
        "np.zeros(2, np.float32), 1", "np.zeros(2, np.int16), 5", "np.float32(0), np.float64(1)", "0.5, 0.5",
        "np.arange(4.0).astype(np.float32).min(), 1", "np.arange(4.0).max(), 10",
    ]  # fmt: skip
    for b in bounds:
        for num in (0, 1, 7):
            code = f"out = np.linspace({b}, {num}, retstep=True)"
            want, got = run(code, numpy), run(code, vmnp)
            agree(got[0], want[0])
            assert repr(got[1]) == repr(want[1]), (b, num)  # the step: a scalar of the same type, or nan


def test_arange_fills_as_numpy_from_its_first_two_elements():
    # NumPy stores start and start + step into the dtype, then steps by their difference.
    for args in [
        "0, 5, 1.5, int", "0.5, 5, 1.5, int", "-3, 3, 0.7, np.int8", "10, 0, -2.5, np.int16", "0, 300, 7, np.uint8",
        "1, 2, 0.3, np.uint8", "0.1, 1.0, 0.1", "0.1, 2.3, 0.7", "0.3, 5.0, 0.37, np.float32", "1e-3, 1, 0.013",
        "np.int8(3), 40, np.int8(5)", "0, 2, 1, bool", "1, 3, 1, bool", "5.9, None, None, int", "2, 9, 3, np.uint64",
    ]:  # fmt: skip
        code = f"out = np.arange({args})"
        want, got = run(code, numpy), run(code, vmnp)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), (args, got, want)
    for code in ["np.arange(5, dtype=bool)", "np.arange(0, 3, dtype=np.bool_)"]:
        want, got = errors_of(code, TypeError)
        assert got == want, code


def test_flat_is_an_iterator_as_numpys():
    out = {}
    for module in (numpy, vmnp):
        a = module.arange(6).reshape(2, 3)
        f = a.flat
        got = [type(f).__name__, next(f), next(f), f.index, f.coords, f.copy(), numpy.asarray(a.flat), len(f)]
        got += [numpy.array(a.flat, dtype=float), list(f), f.index, f.base is a, str(module.ones(3).flags)]
        out[module] = got
    agree(out[vmnp], out[numpy])


def test_generators_have_numpys_bit_generator_and_spawn():
    g = vmnp.random.default_rng(5)
    assert type(g.bit_generator).__name__ == type(numpy.random.default_rng(5).bit_generator).__name__
    a, b = g.spawn(2)
    (c,) = g.spawn(1)
    draws = [x.random(4).tolist() for x in (a, b, c)]
    assert isinstance(a, vmnp.random.Generator) and len({tuple(d) for d in draws}) == 3
    assert vmnp.random.default_rng(5).spawn(2)[0].random(4).tolist() == draws[0]  # reproducible


def test_values_too_deep_for_an_assignment_fail_as_in_numpy():
    for code in [
        "a = np.zeros((3, 5)); a[:, 0] = np.ones((3, 1))",
        "a = np.zeros(4); a[1:3] = np.ones((2, 1, 2))",
        "a = np.zeros((2, 3)); a[:] = [[[1, 2, 3]]]",
        "a = np.zeros((2, 3), int); a[0] = [[1, 2, 3]]",
        "a = np.zeros(4); a[1:3] = np.ones((1, 2, 3))",
    ]:
        want, got = errors_of(code, ValueError)
        assert got == want, code


def test_bad_random_arguments_raise_numpys_errors():
    # The Generator's messages, and the legacy functions' own (RandomState's).
    for code in [
        "g.integers(5, 3, endpoint=True)", "g.integers(0)", "g.integers([0, -1])", "g.integers(5, 5)",
        "g.integers(-200, 0, dtype=np.int8)", "g.integers(0, 256, dtype=np.uint8, endpoint=True)",
        "g.integers(0, 10, dtype=bool)", "g.integers(0, 10, dtype=np.float64)", "g.uniform(0, np.inf)",
        "g.uniform([0, 1], [1, 0])", "g.choice(3, p=[0.5, 0.5, 0.5])", "g.choice(3, p=[-0.5, 1, 0.5])",
        "g.choice(3, p=[[0.5, 0.5, 0]])", "g.choice(np.zeros((0, 3)), 2)", "g.choice(-3)", "g.choice(0)",
        "g.choice(3, 5, replace=False)", "g.choice([], 2)", "g.standard_normal(dtype=np.int32)",
        "g.random(dtype=np.int32)", "g.standard_exponential(dtype=np.int32)", "R.randint(5, 5)", "R.randint(-1)",
        "R.randint(0, 300, dtype=np.uint8)", "R.randint(0, 10, dtype=float)", "R.choice(3, p=[0.5, 0.6, 0.1])",
        "R.choice([], 2)", "R.choice(0)", "R.choice(3, 5, replace=False)", "R.choice(3, p=[-0.5, 1, 0.5])",
    ]:  # fmt: skip
        want, got = errors_of(
            code,
            (TypeError, ValueError, OverflowError),
            lambda m: {"np": m, "g": m.random.default_rng(0), "R": m.random},
        )
        assert got == want, code
    for module in (numpy, vmnp):
        g = module.random.default_rng(0)
        got = [type(g.integers(0, 2, dtype=d)) for d in (int, bool, numpy.bool_, numpy.int8)]
        got += [type(g.choice(numpy.int64(4))), g.choice(module.asarray(5), 3).shape, g.uniform(1, 1, 2).tolist()]
        got += [g.integers(0, 256, 4, dtype=numpy.uint8).dtype, g.integers(-5, 5, 3, endpoint=True).shape]
        if module is numpy:
            want = got
    assert got == want


def test_the_namespace_reports_numpys_version_and_documentation():
    assert vmnp.__version__ == numpy.__version__
    for name in ("add", "sqrt", "maximum", "isnan"):
        assert getattr(vmnp, name).__doc__ == getattr(numpy, name).__doc__


def test_scalar_results_fail_as_numpys_scalars_where_only_arrays_work():
    for code in [
        "len(x.sum())", "list(x.max())", "[v for v in x.mean()]", "reversed(x.min())", "x.sum()[0]",
        "x.sum()[1:]", "x.argmax()[0, 0]", "len(x[0] + x.sum())", "round(x)", "round(x, 2)",
    ]:  # fmt: skip
        want, got = errors_of(code, (TypeError, IndexError), lambda m: {"x": m.arange(5.0)})
        assert got == want, code


def test_rot90_linspace_clip_and_matmul_check_arguments_as_numpy():
    for code in [
        "np.rot90(np.ones(3))", "np.rot90(np.ones((2, 2)), axes=(0, 2))", "np.rot90(np.ones((2, 2, 2)), axes=(0, -3))",
        "np.rot90(np.ones((2, 2, 2)), axes=(0, 5))", "np.linspace(0, 1, 3, axis=1)",
    ]:  # fmt: skip
        want, got = errors_of(code, (ValueError, TypeError))
        assert got == want, code
    # NumPy's UFuncTypeError is vmnp's TypeError (see the deviations): the messages agree.
    for code in [
        "np.clip(np.arange(5.0), 1, 3, out=np.zeros(5, dtype=int))",
        "np.clip(np.arange(5), 1, 3, out=np.zeros(5, dtype=bool))",
        "np.matmul(np.ones((2, 2)), np.ones((2, 2)), out=np.zeros((2, 2), dtype=int))",
        "np.matmul(np.ones(2), np.ones(2), out=np.zeros((), dtype=int))",
    ]:
        (_, want), (_, got) = errors_of(code, TypeError)
        assert got == want, code
    code = (
        "out = (np.linspace(0, 1, 3, axis=-1), np.rot90(np.arange(8).reshape(2, 2, 2), axes=[2, 0]), "
        "np.clip(np.arange(5.0), 1, 3, out=np.zeros(5, dtype=np.float32)), "
        "np.matmul(np.ones((2, 2), int), np.ones((2, 2), int), out=np.zeros((2, 2))))"
    )
    agree(run(code, vmnp), run(code, numpy))


def test_nditer_writes_back_into_vmnp_arrays():
    def program(np):
        a = np.arange(6).reshape(2, 3)
        with np.nditer(a, op_flags=["readwrite"]) as it:
            for x in it:
                x[...] = 2 * x
        b = np.arange(4.0)
        for x in np.nditer(b, op_flags=["readwrite"]):
            x[...] = x + 1
        c = np.arange(3)
        it = np.nditer([c, None], op_flags=[["readonly"], ["writeonly", "allocate"]])
        while not it.finished:
            it[1] = it[0] * it[0]
            it.iternext()
        order = [int(x) for x in np.nditer(np.arange(6).reshape(2, 3).T)]  # memory order
        multi = []
        it = np.nditer(a, flags=["multi_index"])
        for x in it:
            multi.append((it.multi_index, int(x)))
        return a, b, it.operands[0], order, multi, [(i, int(v)) for i, v in np.ndenumerate(b)]

    agree(program(vmnp), program(numpy))


def test_pickles_copies_and_npy_files_keep_the_layout(tmp_path, monkeypatch):
    import copy
    import pickle

    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    for module in (vmnp, numpy):
        f = module.asfortranarray(module.arange(6.0).reshape(2, 3))
        for r in [pickle.loads(pickle.dumps(f)), copy.deepcopy(f), copy.copy(f)]:
            assert r.flags.f_contiguous and not r.flags.c_contiguous and r.tolist() == f.tolist()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", vmnp.FallbackWarning)
            module.save(tmp_path / "f.npy", f)
            loaded = module.load(tmp_path / "f.npy")
        assert loaded.flags.f_contiguous and loaded.tolist() == f.tolist(), module
    c = pickle.loads(pickle.dumps(vmnp.arange(6).reshape(2, 3)[:, ::2]))
    assert c.flags.c_contiguous and c.tolist() == [[0, 2], [3, 5]]


def test_numpys_blas_threads_sleep_between_calls_unless_the_user_says_otherwise():
    # OpenBLAS reads its setting when NumPy loads it: vmnp sets it before importing NumPy.
    import os
    import subprocess
    import sys

    code = "import os, vmnp, numpy; print(os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert run.stdout.strip() == "4", run.stderr
    env["OPENBLAS_THREAD_TIMEOUT"] = "12"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert run.stdout.strip() == "12", run.stderr


NEW_ARRAYS = [
    "np.zeros(3)", "np.zeros((2, 3))", "np.zeros([2, 0, 3])", "np.zeros(())", "np.empty((2, 2)).shape",
    "np.ones((2, 3), np.float32)", "np.ones(4, dtype=int)", "np.zeros(3, bool)", "np.zeros(2, 'uint16')",
    "np.zeros((2,), numpy.dtype('int8'))", "np.ones(3, None)", "np.zeros((2, 2), order='F')",
    "np.zeros_like(np.arange(6).reshape(2, 3))", "np.ones_like(np.arange(6.0), dtype=np.int32)",
    "np.zeros_like(np.ones((3, 4))[::2, ::-1])", "np.empty_like(np.ones((2, 3)).T).shape",
    "np.ones_like(np.ones((3, 4)).T)", "np.zeros_like(np.arange(4.0), dtype=None)",
    "np.arange(7)", "np.arange(2)", "np.arange(0)", "np.arange(-3)", "np.arange(6)[np.arange(3)]",
    "np.array([1.0, 2.0])", "np.array([1, 2, 3])", "np.array((1, 2.5))", "np.array([[1, 2], [3, 4]])",
    "np.array([[1.0], [2.0]])", "np.array([True, False])", "np.array([1, True])", "np.array([2**63])",
    "np.asarray([1.5, 2])", "np.array([])", "np.array([[]])", "np.array([-0.0, float('nan')])",
    "np.array(np.arange(6.0).reshape(2, 3).T)", "np.array(np.arange(3))",
    "np.full((2, 3), 2.5)", "np.full(3, 7)", "np.full([2], True)", "np.full((2, 2), 2**63 - 1)", "np.full(2, -0.0)",
    "np.concatenate([np.arange(3), np.arange(2.0)])", "np.concatenate((np.ones((2, 2)), np.zeros((1, 2))))",
    "np.concatenate((np.ones((2, 2)), np.zeros((2, 1))), 1)", "np.concatenate([np.ones((2, 1))], axis=-1)",
    "np.squeeze(np.ones((1, 3, 1)))", "np.squeeze(np.ones((1, 1)))",
    "np.stack([np.arange(3), np.arange(3.0)])", "np.stack((np.ones((2, 3)), np.zeros((2, 3))), 2)",
    "np.stack([np.ones((2, 3)).T, np.zeros((3, 2))], axis=-2)", "np.stack([np.arange(2)], 1)",
]  # fmt: skip


def test_asarray_of_an_array_is_the_array_and_array_copies_it():
    a = vmnp.arange(3.0)
    assert vmnp.asarray(a) is a and vmnp.array(a) is not a
    b = vmnp.array(a)
    b[0] = 7.0
    assert a[0] == 0.0


@pytest.mark.parametrize("code", NEW_ARRAYS)
def test_new_arrays_are_numpys_whatever_the_spelling(code):
    want, got = (eval(code, {"np": m, "numpy": numpy}) for m in (numpy, vmnp))  # noqa: S307 (the test's own)
    agree(got, want)
    if hasattr(want, "strides") and want.size:  # the layout too ('K' keeps a column-major one)
        assert got.strides == want.strides, (code, got.strides, want.strides)


LAYOUTS = {
    "row-major": "a = np.arange(12.0).reshape(3, 4)",
    "transposed": "a = np.arange(12.0).reshape(3, 4).T",
    "strided": "a = np.arange(24).reshape(4, 6)[::2, 1::2]",
    "reversed": "a = np.arange(5.0)[::-1]",
    "0-d": "a = np.arange(3.0)[1, ...]",
}
LAYOUT_CALLS = [
    "a.ravel()", "np.ravel(a)", "a.flatten()", "a.transpose()", "np.transpose(a)", "np.copy(a)", "a.copy()",
    "a.astype(np.int32)", "a.astype('float32')", "a.astype(bool)", "a.astype(None)", "a.dot(a.T)", "np.flip(a)",
    "np.reshape(a, -1)", "np.reshape(a, (a.size, 1))", "np.outer(a, a)", "np.swapaxes(a, 0, -1)",
]  # fmt: skip


# (A product of 0-d arrays is NumPy's scalar, which a 0-d vmnp array stands for; a 0-d array
# has no axes to swap.)
@pytest.mark.parametrize(
    ("layout", "call"),
    [(lay, c) for lay in LAYOUTS for c in LAYOUT_CALLS if not (lay == "0-d" and ("dot" in c or "swapaxes" in c))],
)
def test_layout_functions_are_numpys_views_and_copies(layout, call):
    # Values, shape, dtype and strides as NumPy's; a view writes through to `a`, a copy does not.
    code = f"{LAYOUTS[layout]}\nr = {call}\nbefore = a.copy()\nif r.size: r.reshape(-1)[0] = 99\nout = (r, a, before)"
    want, got = (run_with_numpy(code, m) for m in (numpy, vmnp))
    agree(got, want)
    assert got[0].strides == want[0].strides, (layout, call, got[0].strides, want[0].strides)
