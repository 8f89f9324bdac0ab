"""NumPy semantics that a program can observe beyond values: copies versus views, in-place
updates, ``where=`` and ``initial=``, memory order, flags. Each case is a small program run
with ``np`` bound to NumPy and to vmnp; what it leaves in ``out`` must agree."""

import numpy
import pytest

import vmnp


def run(code, module):
    scope = {"np": module}
    exec(code, scope)  # noqa: S102 (the test's own programs)
    return scope["out"]


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
    "elements as dict keys": "a = np.arange(3); d = {a[1]: 'x'}; out = (d[1], a[2] in {2, 3}, hash(a[0]) == hash(0))",
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
}


@pytest.mark.parametrize("name", list(CASES))
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
    "subtract reduce": "out = np.subtract.reduce(np.arange(6).reshape(2, 3), axis=1)",
    "out and where": "x = np.arange(6.0) - 3; o = np.ones(6); np.heaviside(x, 0.5, out=o, where=x > -2); out = o",
}


@pytest.mark.parametrize("name", list(IN_PLACE_FALLBACKS))
def test_fallbacks_write_back_what_numpy_changes(name, monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "warn")
    monkeypatch.setattr(vmnp, "_warned", set())
    with pytest.warns(vmnp.FallbackWarning):
        got = run(IN_PLACE_FALLBACKS[name], vmnp)
    agree(got, run(IN_PLACE_FALLBACKS[name], numpy))


def test_arrays_larger_than_memory_are_memory_errors_not_aborts():
    r = vmnp.zeros(2**40)
    for read in [repr, str, lambda r: r.tolist(), lambda r: r.item(3), lambda r: r[r > 0.5], lambda r: r[5] + 1]:
        with pytest.raises(MemoryError):
            x = read(r)
            float(x) if isinstance(x, vmnp.ndarray) else None
    with pytest.raises(ValueError, match="too big"):
        vmnp.ones((2**62, 4))
    # The session goes on.
    assert float(vmnp.arange(5).sum()) == 10
