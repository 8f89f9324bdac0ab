"""``numpy.random`` on the VM's counter-based generator (Philox-4x32-10).

Streams are reproducible for a seed and identical on every stack, but they are not NumPy's: a
program seeded the same way draws different numbers than under NumPy.
"""

import math as _math
import os as _os

from . import _dt, _vmnp, cos, floor, log, sin, sqrt  # noqa: F401


def _shape(size):
    if size is None:
        return None
    if isinstance(size, int):
        return [size]
    return [int(s) for s in size]


class Generator:
    """A seeded stream: each draw continues where the previous one stopped."""

    def __init__(self, seed=None):
        if seed is None:
            seed = int.from_bytes(_os.urandom(8), "little")
        if hasattr(seed, "_seed"):
            seed = seed._seed
        self._seed = int(seed) & (2**64 - 1)
        self._offset = 0

    def _draw(self, size, dtype="float64"):
        shape = _shape(size)
        r = _vmnp._random(shape or [], _dt(dtype), self._seed, self._offset)
        self._offset += r.size
        return r if shape is not None else r.item()

    def random(self, size=None, dtype="float64", out=None):
        """Uniform floats in [0, 1)."""
        r = self._draw(size, dtype)
        if out is not None:
            out[...] = r
            return out
        return r

    def uniform(self, low=0.0, high=1.0, size=None):
        """Uniform floats in [low, high)."""
        u = self._draw(size)
        return low + (high - low) * u

    def standard_normal(self, size=None, dtype="float64"):
        """Standard normal floats (Box-Muller over two uniform draws)."""
        u1 = self._draw(size)
        u2 = self._draw(size)
        if size is None:
            return _math.sqrt(-2.0 * _math.log1p(-u1)) * _math.cos(2.0 * _math.pi * u2)
        r = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * _math.pi * u2)
        return r if _dt(dtype) == "float64" else r.astype(dtype)

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Normal floats with mean ``loc`` and standard deviation ``scale``."""
        return loc + scale * self.standard_normal(size)

    def integers(self, low, high=None, size=None, dtype="int64", endpoint=False):
        """Uniform integers in [low, high) (``endpoint``: [low, high])."""
        if high is None:
            low, high = 0, low
        if endpoint:
            high += 1
        if high <= low:
            raise ValueError("low >= high")
        u = self._draw(size)
        if size is None:
            return int(low + _math.floor(u * (high - low)))
        return (floor(u * (high - low)) + low).astype(dtype)

    def choice(self, a, size=None, replace=True, p=None):
        """Elements of ``a`` drawn uniformly with replacement."""
        from . import arange, asarray

        a = arange(a) if isinstance(a, int) else asarray(a)
        idx = self.integers(0, a.shape[0], size)
        return a[idx]


def default_rng(seed=None):
    """A new :class:`Generator` for ``seed`` (None: a random seed)."""
    return Generator(seed)


_global = Generator(0)


def seed(seed=None):
    """Restarts the global stream at ``seed``."""
    global _global
    _global = Generator(seed)


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


def randint(low, high=None, size=None, dtype="int64"):
    """Uniform integers in [low, high)."""
    return _global.integers(low, high, size, dtype)


def choice(a, size=None, replace=True, p=None):
    """Elements of ``a`` drawn uniformly."""
    return _global.choice(a, size, replace, p)
