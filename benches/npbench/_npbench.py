"""Reading an NPBench checkout: its benchmarks, their inputs, its validation, its frameworks' variants.

Everything comes from the checkout at run time (nothing of NPBench is copied here). NPBench's
package ``npbench.infrastructure`` imports every framework it supports (and ``pygount``) when
imported as a package, so the two files used here, ``benchmark.py`` (inputs from each
benchmark's ``bench_info/<name>.json`` and its init function) and ``utilities.py`` (``validate``),
are loaded by path; the variants of each framework are read from the framework's own table
(``_impl`` in ``<framework>_framework.py``) without importing it.
"""

import ast
import importlib.util
import json
import os
import sys
from pathlib import Path

CLONE_HINT = "git clone https://github.com/spcl/npbench"


class CheckoutError(Exception):
    """The NPBench checkout is missing or is not one."""


def default_checkout(repo_root):
    """``../shared/npbench`` relative to the repository root, or None when it is absent."""
    path = (Path(repo_root) / ".." / "shared" / "npbench").resolve()
    return path if path.is_dir() else None


class Checkout:
    """One NPBench checkout: ``root`` holds ``bench_info/``, ``framework_info/`` and ``npbench/``."""

    def __init__(self, root):
        self.root = Path(root).resolve()
        infra = self.root / "npbench" / "infrastructure"
        if not (self.root / "bench_info").is_dir() or not (infra / "benchmark.py").is_file():
            raise CheckoutError(
                f"{self.root} is not an NPBench checkout (no bench_info/ or npbench/infrastructure/); "
                f"get one with `{CLONE_HINT}` next to this repository or pass --npbench DIR"
            )
        if str(self.root) not in sys.path:
            sys.path.insert(0, str(self.root))
        self._benchmark = _load(infra / "benchmark.py", "_npbench_benchmark")
        self._utilities = _load(infra / "utilities.py", "_npbench_utilities")

    def names(self):
        """Every benchmark's name (the stems of ``bench_info/*.json``), sorted."""
        return sorted(p.stem for p in (self.root / "bench_info").glob("*.json"))

    def benchmark(self, name):
        """NPBench's ``Benchmark`` object of ``name`` (its ``info`` and ``get_data(preset)``)."""
        return self._benchmark.Benchmark(name)

    @property
    def validate(self):
        """NPBench's ``validate(ref, val, framework, rtol, atol, norm_error)``."""
        return self._utilities.validate

    def framework_info(self, fname):
        with open(self.root / "framework_info" / f"{fname}.json") as f:
            return json.load(f)["framework"]

    def variants(self, fname, info):
        """The implementations NPBench runs for framework ``fname`` on the benchmark ``info``:
        ``[(variant name, module name)]`` for the files that exist, in NPBench's order."""
        postfix = self.framework_info(fname).get("postfix", fname)
        base = f"npbench.benchmarks.{info['relative_path'].replace('/', '.')}.{info['module_name']}_{postfix}"
        folder = self.root / "npbench" / "benchmarks" / info["relative_path"]
        stem = f"{info['module_name']}_{postfix}"
        found = []
        if fname != "numba":  # NPBench runs only numba's variant files
            if (folder / f"{stem}.py").is_file():
                found.append(("default", base))
        for variant, suffix in self._variant_table(fname).items():
            if (folder / f"{stem}_{suffix}.py").is_file():
                found.append((variant, f"{base}_{suffix}"))
        return found

    def _variant_table(self, fname):
        """The ``_impl`` table of ``<fname>_framework.py`` (variant name -> file suffix); empty
        when the framework has none."""
        path = self.root / "npbench" / "infrastructure" / f"{fname}_framework.py"
        if not path.is_file():
            return {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_impl" for t in node.targets):
                return ast.literal_eval(node.value)
        return {}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.fspath(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
