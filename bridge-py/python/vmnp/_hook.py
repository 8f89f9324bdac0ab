"""The import hook of ``python -m vmnp``: in the program's own code, ``numpy`` is vmnp.

After :func:`install`, ``import numpy``, ``import numpy as np``, ``from numpy import ...``,
``numpy.random`` and ``from numpy.random import ...`` give vmnp's modules in the program's
code: the script and the modules it imports from outside the Python installation. Every
installed library (NumPy itself, SciPy, numba, ...) keeps real NumPy, so compiled extensions
that check NumPy's structures load as usual, and their NumPy results are accepted by vmnp.
Other submodules (``numpy.linalg``, ``numpy.fft``, ``numpy.typing``, ...) are NumPy's in
both. ``sys.modules`` is left alone: pickle and NumPy's own lazy imports see real NumPy.
"""

import builtins
import os
import site
import sys
import sysconfig

import vmnp
import vmnp.random

_real_import = builtins.__import__


def _library_roots():
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(getattr(site, "getsitepackages", list)())
    paths.add(site.getusersitepackages())
    paths.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return tuple(os.path.join(os.path.realpath(p), "") for p in paths if p)


_LIBRARIES = _library_roots()
_IS_LIBRARY = {}  # a module file's path -> whether it is a library's (realpath costs ~50 us)


def _from_library(globals):
    """True when the code whose module globals are ``globals`` belongs to an installed library
    (or to no file at all, as ``importlib.import_module`` calls)."""
    if globals is None:
        return True
    path = globals.get("__file__")
    if path is None:
        return globals.get("__name__") != "__main__"
    try:
        return _IS_LIBRARY[path]
    except KeyError:
        found = _IS_LIBRARY[path] = os.path.realpath(path).startswith(_LIBRARIES)
        return found
    except TypeError:  # an unhashable `__file__`
        return os.path.realpath(path).startswith(_LIBRARIES)


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level != 0 or not (name == "numpy" or name.startswith("numpy.")) or _from_library(globals):
        return _real_import(name, globals, locals, fromlist, level)
    if name == "numpy":
        return vmnp
    if name == "numpy.random" or name.startswith("numpy.random."):
        return vmnp.random if fromlist else vmnp
    # Another submodule: NumPy's, loaded as usual; `import numpy.linalg` binds `numpy` to vmnp,
    # whose `linalg` is NumPy's.
    module = _real_import(name, globals, locals, fromlist, level)
    return module if fromlist else vmnp


def install():
    """Makes ``numpy`` resolve to vmnp in the program's code imported from now on."""
    builtins.__import__ = _import


def uninstall():
    """Restores the plain import."""
    builtins.__import__ = _real_import
