"""One tool running one NPBench kernel, in a process of its own: ``_child.py SPEC.json``.

The runner starts it as ``python _child.py`` for NumPy, numba and JAX, and as ``python -m vmnp
_child.py`` for vmnp, so that the kernel's ``import numpy`` is vmnp's exactly as in any program
run under ``python -m vmnp``. This file therefore reaches real NumPy through ``importlib`` (which
the import hook leaves alone) and imports nothing of the runner's.

The spec names the kernel's module and function, its arguments, the pickled inputs, the number of
timed repetitions and where to write. Each call gets fresh copies of the array arguments (made
and synced before the clock starts, as NPBench's setup does); a call ends when its results are
computed (JAX: ``block_until_ready``; vmnp: ``vmnp.flush()``). The first call's returned values
and array arguments, as NumPy arrays, go to ``outputs`` (a pickle); times, fallbacks and errors to
``result`` (JSON).
"""

import importlib
import json
import pickle
import sys
import time
import traceback
import warnings

np = importlib.import_module("numpy")  # NumPy's, also under `python -m vmnp`


def _tool(name):
    """``(copy, sync, to_numpy, fallback_class)`` of a tool."""
    if name == "jax":
        jax = importlib.import_module("jax")
        jax.config.update("jax_enable_x64", True)
        jnp = importlib.import_module("jax.numpy")
        return jnp.array, jax.block_until_ready, np.asarray, None
    if name == "vmnp":
        vmnp = importlib.import_module("vmnp")

        def to_numpy(x):
            return vmnp.asnumpy(x) if isinstance(x, vmnp.ndarray) else x

        return vmnp.array, lambda _: vmnp.flush(), to_numpy, vmnp.FallbackWarning
    # NumPy and numba: NPBench's own copy (np.copy), nothing to wait for.
    return np.copy, lambda _: None, lambda x: x, None


def _back(x, to_numpy):
    x = to_numpy(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_back(y, to_numpy) for y in x)
    if hasattr(x, "__array__") and not isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    return x


def run(spec):
    sys.path.insert(0, spec["npbench"])
    with open(spec["inputs"], "rb") as f:
        inputs = pickle.load(f)
    copy, sync, to_numpy, fallback = _tool(spec["tool"])
    input_args, array_args = spec["input_args"], set(spec["array_args"])

    def call():
        args = {a: copy(inputs[a]) if a in array_args else inputs[a] for a in input_args}
        sync([args[a] for a in array_args])
        t0 = time.perf_counter()
        out = impl(*[args[a] for a in input_args])
        sync(out)
        return out, args, time.perf_counter() - t0

    result = {"first": None, "times": [], "fallbacks": [], "error": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            impl = getattr(importlib.import_module(spec["module"]), spec["func"])
            out, args, result["first"] = call()
            returned = out if isinstance(out, (tuple, list)) else ([] if out is None else [out])
            outputs = {
                "returned": [_back(v, to_numpy) for v in returned],
                "args": {a: _back(args[a], to_numpy) for a in input_args if a in array_args},
            }
            with open(spec["outputs"], "wb") as f:
                pickle.dump(outputs, f, protocol=pickle.HIGHEST_PROTOCOL)
            del out, args, returned, outputs
            for _ in range(spec["repeat"]):
                result["times"].append(call()[2])
        except Exception as e:  # a FallbackError, a numba TypingError, anything: reported
            result["error"] = f"{type(e).__name__}: {e}".strip()[:2000]
            result["traceback"] = traceback.format_exc()[-4000:]
        if fallback is not None:
            result["fallbacks"] = sorted(
                {
                    str(w.message).removeprefix("vmnp: ").removesuffix(" falls back to NumPy")
                    for w in caught
                    if issubclass(w.category, fallback)
                }
            )
    with open(spec["result"], "w") as f:
        json.dump(result, f)
    return 1 if result["error"] else 0


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.exit(run(json.load(f)))
