"""``numpy.random`` on the VM's counter-based generator (Philox-4x32-10).

Streams are reproducible for a seed and identical on every stack, but they are not NumPy's: a
program seeded the same way draws different numbers than under NumPy.
"""

import math as _math
import operator as _operator
import os as _os

import numpy as _np

from . import _vmnp
from ._src.convert import asnumpy
from ._src.creation import _shape as _dims
from ._src.dtypes import _dt  # noqa: F401
from ._src.fallback import _fallback, _through_fallback  # noqa: F401
from ._src.public import _foreign
from ._src.ufunc import cos, floor, log, sin, sqrt  # noqa: F401

_BLOCK = 256  # scalar draws made at once (see ``Generator._scalar``)


def _shape(size):
    return None if size is None else _dims(size)


def _param(x):
    """A distribution parameter: a list or tuple as an array (``normal([0, 10], 1)``)."""
    from ._src.convert import asarray

    return asarray(x) if isinstance(x, (list, tuple)) else x


def _param_size(size, *params):
    """``size``; without one, the broadcast shape of the parameters that are arrays (NumPy's:
    one draw per parameter element), None when all are scalars."""
    if size is not None or all(_np.ndim(p) == 0 for p in params):
        return size
    return _np.broadcast_shapes(*(_np.shape(p) for p in params))


def _seed_value(seed):
    """A non-negative integer seed (NumPy refuses negative ones)."""
    seed = _operator.index(seed)
    if seed < 0:
        raise ValueError("expected non-negative integer")
    return seed


def _entropy_seed(seed):
    """A 64-bit seed from what else NumPy takes as one: a ``SeedSequence``, a bit generator or
    NumPy ``Generator`` (their seed sequence), or a sequence of non-negative integers (mixed by a
    ``SeedSequence``, as NumPy does)."""
    if isinstance(seed, _np.random.Generator):
        seed = seed.bit_generator
    if isinstance(seed, _np.random.BitGenerator):
        seed = seed.seed_seq
    if not isinstance(seed, _np.random.SeedSequence):
        if isinstance(seed, str) or _np.ndim(seed) == 0:
            raise TypeError(f"SeedSequence expects int or sequence of ints for entropy not {seed!r}")
        seed = _np.random.SeedSequence(seed)
    low, high = (int(w) for w in seed.generate_state(2, _np.uint32))
    return low | high << 32


class Generator:
    """A seeded stream: each draw continues where the previous one stopped."""

    _legacy = False  # the stream behind ``numpy.random``'s functions: RandomState's messages

    def __init__(self, seed=None):
        if seed is None:
            seed = int.from_bytes(_os.urandom(8), "little")
        if hasattr(seed, "_seed"):
            seed = seed._seed
        elif not isinstance(seed, (int, _np.integer)):
            seed = _entropy_seed(seed)
        self._seed = _seed_value(seed) & (2**64 - 1)
        self._offset = 0
        self._spawned = 0

    def __getattr__(self, name):
        """Distributions the VM does not draw: NumPy's, from a NumPy generator seeded by this
        stream's seed and position (reproducible for a seed, through the fallback)."""
        method = getattr(_np.random.Generator, name, None)
        if method is None or name.startswith("_"):
            raise AttributeError(f"'Generator' object has no attribute '{name}'")
        if not callable(method):  # a property (``bit_generator``): a NumPy generator's at this position
            return getattr(_np.random.default_rng([self._seed, self._offset]), name)

        def draw(*args, **kwargs):
            rng = _np.random.default_rng([self._seed, self._offset])
            self._offset += 1 << 32
            return _fallback(f"Generator.{name}", getattr(rng, name), args, kwargs)

        draw.__name__ = name
        return draw

    def spawn(self, n_children):
        """``n_children`` independent generators, different at every call (as NumPy's, whose
        children come from the seed sequence's ``spawn``)."""
        first, self._spawned = self._spawned, self._spawned + _operator.index(n_children)
        entropy = [self._seed, 1 << 64]  # apart from every seed a generator is made from
        return [Generator(_np.random.SeedSequence(entropy, spawn_key=(k,))) for k in range(first, self._spawned)]

    def _draw(self, size, dtype="float64"):
        shape = _shape(size)
        if shape is None:
            return self._scalar(_dt(dtype))
        r = _vmnp._random(shape, _dt(dtype), self._seed, self._offset)
        self._offset += r.size
        return r

    _block = None  # (dtype name, seed, first position, values): scalar draws read ahead

    def _scalar(self, name):
        """One draw as a Python number. Element ``k`` of the stream depends only on the seed,
        ``k`` and the dtype, so a scalar is read from a block of ``_BLOCK`` draws made at once:
        a loop drawing one number per step runs the VM once per block, not per number."""
        block = self._block
        same = block is not None and block[0] == name and block[1] == self._seed
        k = self._offset - block[2] if same else -1
        if not 0 <= k < _BLOCK:
            values = asnumpy(_vmnp._random([_BLOCK], name, self._seed, self._offset)).tolist()
            block = self._block = (name, self._seed, self._offset, values)
            k = 0
        self._offset += 1
        return block[3][k]

    def random(self, size=None, dtype="float64", out=None):
        """Uniform floats in [0, 1) (``out``: as many as it holds, into it)."""
        _float_dtype(dtype, "random")
        return _into(out, lambda size: self._draw(size, dtype), size)

    def uniform(self, low=0.0, high=1.0, size=None):
        """Uniform floats in [low, high) (array bounds broadcast)."""
        low, high = _param(low), _param(high)
        if not self._legacy:
            span = _np.subtract(asnumpy(high), asnumpy(low), dtype=float)
            if _np.any(span < 0):
                raise ValueError("high - low < 0")
            if not _np.all(_np.isfinite(span)):
                raise OverflowError("high - low range exceeds valid bounds")
        u = self._draw(_param_size(size, low, high))
        return low + (high - low) * u

    def standard_normal(self, size=None, dtype="float64", out=None):
        """Standard normal floats (Box-Muller over two uniform draws)."""
        _float_dtype(dtype, "standard_normal")

        def draw(size):
            u1 = self._draw(size)
            u2 = self._draw(size)
            if size is None:
                return _math.sqrt(-2.0 * _math.log1p(-u1)) * _math.cos(2.0 * _math.pi * u2)
            r = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * _math.pi * u2)
            return r if _dt(dtype) == "float64" else r.astype(dtype)

        return _into(out, draw, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Normal floats with mean ``loc`` and standard deviation ``scale`` (arrays broadcast)."""
        _check_scale(scale)
        loc, scale = _param(loc), _param(scale)
        return loc + scale * self.standard_normal(_param_size(size, loc, scale))

    def standard_exponential(self, size=None, dtype="float64"):
        """Exponential floats of mean 1 (inversion of a uniform draw)."""
        _float_dtype(dtype, "standard_exponential")
        u = self._draw(size)
        if size is None:
            return -_math.log1p(-u)
        r = -log(1.0 - u)
        return r if _dt(dtype) == "float64" else r.astype(dtype)

    def exponential(self, scale=1.0, size=None):
        """Exponential floats of mean ``scale`` (an array of scales broadcasts)."""
        _check_scale(scale)
        scale = _param(scale)
        return scale * self.standard_exponential(_param_size(size, scale))

    def _order(self, n):
        """A random order of ``range(n)`` (NumPy int64): the ranks of ``n`` uniform draws, so it
        is the same on every stack for a seed."""
        keys = self._draw([n])
        return _np.argsort(_np.asarray(keys), kind="stable")

    def permutation(self, x, axis=0):
        """A shuffled copy of ``x`` along ``axis`` (``arange(x)`` for an integer)."""
        from ._src.convert import asarray
        from ._src.creation import arange
        from ._src.manip import take

        a = arange(x) if isinstance(x, int) else asarray(x)
        if a.ndim == 0:
            raise _np.exceptions.AxisError("x must be an integer or at least 1-dimensional")
        order = _positions(self._order(a.shape[axis]), a.shape[axis])
        return order if isinstance(x, int) else take(a, order, axis=axis)

    def shuffle(self, x, axis=0):
        """Shuffles ``x`` (an array along ``axis``, or a list) in place."""
        if isinstance(x, list):
            x[:] = [x[i] for i in self._order(len(x))]
            return
        x[...] = self.permutation(x, axis)

    def integers(self, low, high=None, size=None, dtype="int64", endpoint=False):
        """Uniform integers in [low, high) (``endpoint``: [low, high])."""
        if _np.dtype(dtype).kind not in "biu":
            raise TypeError(f"Unsupported dtype {_np.dtype(dtype)!r} for {'randint' if self._legacy else 'integers'}")
        one_bound = high is None
        if one_bound:
            low, high = 0, low
        low, high = _param(low), _param(high)
        lo, hi = asnumpy(low), asnumpy(high)
        if one_bound and _np.any(hi <= 0):
            raise ValueError("high <= 0")
        if endpoint and _np.any(hi < lo):
            raise ValueError("low > high")
        if not endpoint and _np.any(hi <= lo):
            raise ValueError("low >= high")
        info = _np.iinfo(dtype) if _np.dtype(dtype).kind != "b" else _np.iinfo(_np.uint8)
        top = 1 if _np.dtype(dtype).kind == "b" else info.max
        if _np.any(_np.less(lo, info.min)):
            raise ValueError(f"low is out of bounds for {_np.dtype(dtype).name}")
        if _np.any(_np.greater(hi, top if endpoint else top + 1)):
            raise ValueError(f"high is out of bounds for {_np.dtype(dtype).name}")
        if endpoint:
            high = high + 1
        size = _param_size(size, low, high)
        u = self._draw(size)
        if size is None:
            value = int(low + _math.floor(u * (high - low)))
            # ``int`` and ``bool`` ask for a Python number, as NumPy's.
            return dtype(value) if dtype in (int, bool) else _np.dtype(dtype).type(value)
        r = (floor(u * (high - low)) + low).astype(dtype)
        if _np.ndim(low) == 0 and _np.ndim(high) == 0:
            _vmnp._set_bounds(r, int(low), int(high) - 1)  # for indexing with it
        return r

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        """Elements of ``a`` (``arange(a)`` for an integer) drawn with replacement, uniformly or
        with probabilities ``p``; without replacement, distinct ones."""
        from ._src.convert import asarray
        from ._src.creation import arange
        from ._src.manip import take

        if not isinstance(a, int) and _foreign(a):
            # Text or objects: NumPy's elements at positions drawn from this stream.
            host = _np.asarray(a)
            if host.ndim == 0:
                raise ValueError("a must be 1-dimensional or an integer")
            at = self.choice(host.shape[axis], size, replace, p)
            return _np.take(host, asnumpy(at), axis=axis)
        if not isinstance(a, int) and _np.ndim(a) == 0 and _np.issubdtype(_np.asarray(a).dtype, _np.integer):
            a = int(a)  # a 0-d integer array counts as the integer
        pop = arange(max(a, 0)) if isinstance(a, int) else asarray(a)
        legacy = self._legacy
        if pop.ndim == 0:
            raise ValueError(f"a must be a sequence or an integer, not {type(a)}")
        n = pop.shape[axis]
        shape = _shape(size)
        count = 1 if shape is None else _math.prod(shape)
        if n == 0 and count > 0:
            if isinstance(a, int):
                raise ValueError(
                    f"a must be {'greater than 0' if legacy else 'a positive integer'} unless no samples are taken"
                )
            raise ValueError(f"{repr('a') if legacy else 'a'} cannot be empty unless no samples are taken")
        if p is not None:
            p = asnumpy(p).astype(float)
            if p.ndim != 1:
                raise ValueError("p must be 1-dimensional")
            if p.size != n:
                raise ValueError("a and p must have same size")
            if (p < 0).any() or not _np.isfinite(p).all():
                raise ValueError(f"{'p' if legacy else 'P'}robabilities are not non-negative")
            if abs(p.sum() - 1.0) > 1e-8:
                raise ValueError(
                    "probabilities do not sum to 1"
                    if legacy
                    else "Probabilities do not sum to 1. See Notes section of docstring for more information."
                )
        if replace:
            u = self._draw(shape if shape is not None else [])
            if p is None:
                idx = floor(asarray(u) * n).astype("int64")
                _vmnp._set_bounds(idx, 0, n - 1)
            else:
                cdf = _np.cumsum(p)
                cdf /= cdf[-1]
                below = asarray(u)[..., None] >= asarray(cdf[:-1])
                idx = below.sum(axis=-1)
        else:
            if count > n:
                when = "'replace=False'" if legacy else "replace is False"
                raise ValueError(f"Cannot take a larger sample than population when {when}")
            if p is None:
                order = self._order(n)
            else:
                if _np.count_nonzero(p) < count:
                    raise ValueError("Fewer non-zero entries in p than size")
                u = _np.asarray(self._draw([n]))
                with _np.errstate(divide="ignore"):
                    keys = _np.log1p(-u) / p
                order = _np.argsort(-keys, kind="stable")
            idx = _positions(order[:count].reshape(shape if shape is not None else ()), n)
        r = take(pop, idx, axis=axis)
        if shape is not None or r.ndim:
            return r
        # One element: a Python int drawn from ``range(a)``, else NumPy's scalar of the elements.
        return r.item() if isinstance(a, int) else r.dtype.type(r.item())


_FLOAT_DTYPES = frozenset(["float64", "float32", "f8", "f4", "d", "f", float, _np.float64, _np.float32])


def _float_dtype(dtype, method):
    """NumPy's error for a floating-point draw asked for in another dtype."""
    try:
        if dtype in _FLOAT_DTYPES:  # the common spellings, without NumPy's dtype lookup (~2 us)
            return
    except TypeError:  # an unhashable dtype-like: NumPy's lookup says what it is
        pass
    if _np.dtype(dtype).name not in ("float32", "float64"):
        raise TypeError(f"Unsupported dtype {_np.dtype(dtype)!r} for {method}")


def _positions(order, n):
    """The host positions ``order`` (each in ``range(n)``) as a vmnp array known to hold them."""
    from ._src.convert import asarray

    r = asarray(order)
    _vmnp._set_bounds(r, 0, n - 1)
    return r


def _into(out, draw, size):
    """``draw(size)``, or with ``out``, ``draw(out.shape)`` stored into ``out`` and ``out``."""
    if out is None:
        return draw(size)
    if size is not None and tuple(_dims(size)) != tuple(out.shape):
        raise ValueError(f"size must match out.shape when used together ({size} != {out.shape})")
    out[...] = draw(out.shape)
    return out


def _check_scale(scale):
    if _np.any(asnumpy(scale) < 0):
        raise ValueError("scale < 0")


def default_rng(seed=None):
    """A new :class:`Generator` for ``seed`` (None: a random seed)."""
    return Generator(seed)


class _LegacyStream(Generator):
    """The global stream of ``numpy.random``'s functions (``seed``, ``rand``, ``randint``)."""

    _legacy = True


_global = _LegacyStream(0)


def seed(seed=None):
    """Restarts the global stream at ``seed`` (an integer in ``[0, 2**32)``, as NumPy's)."""
    global _global
    if seed is not None and not 0 <= _operator.index(seed) < 2**32:
        raise ValueError("Seed must be between 0 and 2**32 - 1")
    _global = _LegacyStream(seed)


def random(size=None):
    """Uniform floats in [0, 1) from the global stream."""
    return _global.random(size)


random_sample = ranf = sample = random


def rand(*shape):
    """Uniform floats in [0, 1) of the given shape."""
    return _global.random(shape if shape else None)


def randn(*shape):
    """Standard normal floats of the given shape."""
    return _global.standard_normal(shape if shape else None)


def standard_normal(size=None):
    """Standard normal floats."""
    return _global.standard_normal(size)


def uniform(low=0.0, high=1.0, size=None):
    """Uniform floats in [low, high)."""
    return _global.uniform(low, high, size)


def normal(loc=0.0, scale=1.0, size=None):
    """Normal floats."""
    return _global.normal(loc, scale, size)


def randint(low, high=None, size=None, dtype=int):
    """Uniform integers in [low, high); one draw of dtype ``int`` or ``bool`` is a Python
    number, as NumPy's."""
    r = _global.integers(low, high, size, dtype)
    if size is None and dtype in (int, bool) and _np.ndim(r) == 0:
        return dtype(r)
    return r


def choice(a, size=None, replace=True, p=None):
    """Elements of ``a`` drawn uniformly."""
    return _global.choice(a, size, replace, p)


def exponential(scale=1.0, size=None):
    """Exponential floats of mean ``scale``."""
    return _global.exponential(scale, size)


def standard_exponential(size=None):
    """Exponential floats of mean 1."""
    return _global.standard_exponential(size)


def permutation(x):
    """A shuffled copy of ``x`` (``arange(x)`` for an integer)."""
    return _global.permutation(x)


def shuffle(x):
    """Shuffles ``x`` in place along its first axis."""
    _global.shuffle(x)


def __getattr__(name):
    """The rest of ``numpy.random`` (other distributions, ``RandomState``, ``SeedSequence``):
    NumPy's, through the fallback."""
    obj = getattr(_np.random, name, None)
    if obj is None:
        raise AttributeError(f"module 'vmnp.random' has no attribute {name!r}")
    if callable(obj) and not isinstance(obj, type):
        return _through_fallback(f"random.{name}", obj)
    return obj
