"""The import hook of ``python -m vmnp``: ``numpy`` and its submodules resolve to vmnp.

Real NumPy is imported first and stays reachable as ``vmnp._np`` (the fallback uses it). After
:func:`install`, ``import numpy``, ``import numpy as np``, ``from numpy import ...`` and
``numpy.random`` give vmnp's modules; other ``numpy.*`` submodules (``numpy.linalg``,
``numpy.fft``, ``numpy.ma``, ...) stay NumPy's: they are imported against real NumPy, whether
the program imports them or NumPy does inside a fallback.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys

import numpy as _real
import numpy.random as _real_random

import vmnp

_MAPPED = ("numpy", "numpy.random")


class _Swapped:
    """Real NumPy under its own names while a NumPy submodule is imported."""

    def __enter__(self):
        self.saved = {name: sys.modules.get(name) for name in _MAPPED}
        sys.modules["numpy"], sys.modules["numpy.random"] = _real, _real_random

    def __exit__(self, *exc):
        for name, module in self.saved.items():
            sys.modules[name] = module
        return False


class _Loaded(importlib.abc.Loader):
    """Hands the import system a module that is already loaded."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _RealSubmodules(importlib.abc.MetaPathFinder):
    """Imports ``numpy.X`` (other than ``numpy.random``) as NumPy's own submodule."""

    def find_spec(self, name, path, target=None):
        if not name.startswith("numpy.") or name in _MAPPED or sys.modules.get("numpy") is not vmnp:
            return None
        with _Swapped():
            module = importlib.import_module(name)
        # The import system loads the module from the spec returned: it must not find it loaded
        # already, or it would run the module's code a second time.
        del sys.modules[name]
        found = module.__spec__
        spec = importlib.machinery.ModuleSpec(name, _Loaded(module), origin=found.origin)
        spec.submodule_search_locations = found.submodule_search_locations
        spec.has_location = found.has_location
        return spec


_finder = _RealSubmodules()


def install():
    """Makes ``numpy`` and ``numpy.random`` resolve to vmnp in code imported from now on."""
    vmnp._np = _real
    sys.modules["numpy"] = vmnp
    sys.modules["numpy.random"] = vmnp.random
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall():
    """Restores the real NumPy modules."""
    sys.modules["numpy"] = _real
    sys.modules["numpy.random"] = _real_random
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
