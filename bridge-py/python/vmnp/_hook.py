"""The import hook of ``python -m vmnp``: ``numpy`` and its submodules resolve to vmnp.

Real NumPy is imported first and stays reachable as ``vmnp._np`` (the fallback uses it). After
:func:`install`, ``import numpy``, ``import numpy as np``, ``from numpy import ...`` and
``numpy.random`` give vmnp's modules; other ``numpy.*`` submodules stay NumPy's.
"""

import sys

import numpy as _real

import vmnp


def install():
    """Makes ``numpy`` and ``numpy.random`` resolve to vmnp in code imported from now on."""
    vmnp._np = _real
    sys.modules["numpy"] = vmnp
    sys.modules["numpy.random"] = vmnp.random


def uninstall():
    """Restores the real NumPy modules."""
    sys.modules["numpy"] = _real
    sys.modules["numpy.random"] = _real.random
