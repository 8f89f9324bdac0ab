"""Which values of a kernel are its outputs, and which value of another tool's run is which.

NPBench validates the values a kernel returns followed by the arguments its ``bench_info``
declares as outputs (``output_args``), zipped position by position with NumPy's. That misses
outputs and pairs the wrong values in a few programs:

- a kernel that writes its result into an argument the JSON does not declare (``doitgen`` and
  ``scattering_self_energies`` declare none; ``trisolv`` declares ``b`` but writes ``x``) has
  that result validated by nobody: here every array argument NumPy's run changed in place is an
  output too, beside the declared ones;
- JAX cannot change an argument in place, so its kernels return the arrays NumPy's change, in an
  order of their own (``gemver`` returns ``A, x, w`` for the declared ``A, w, x``; ``vadv``
  returns three intermediates before ``utens_stage``), and NPBench's positional zip compares
  ``w`` with ``x``: here a reference output is paired with the tool's value of the same name or
  return position when that one validates, else with another returned value of the same shape
  that does;
- a kernel may both change an argument and return it (``adi``'s ``return u``), where another
  implementation does only one of the two (numba's ``adi`` returns nothing): such an argument
  is validated once, as the returned value, which may be found in the argument of that name;
- an output that NumPy's run leaves (within the tolerance) as it came in (``heat_3d``'s
  inputs are linear in each index, so its stencil adds zero) validates any kernel that does
  nothing: such outputs get a note, and are validated anyway;
- a side effect may be chaotic (``nbody``'s velocities after 250 steps at preset M): NumPy's own
  run on inputs changed in their last bit moves it beyond the tolerance, as do the last-bit
  differences of NumPy's vectorised ``pow`` from libm's, so it is noted and not validated (the
  declared outputs still are).
"""

import contextlib
import io

import numpy as np


class Output:
    """One reference output: ``name`` is an argument's name or ``return[i]``; ``value`` is
    NumPy's; ``arg`` tells an argument from a returned value; ``index`` is the return position."""

    def __init__(self, name, value, arg, index=None, side=False):
        self.name = name
        self.value = value
        self.arg = arg
        self.index = index
        self.side = side
        self.unstable = False  # a side effect that inputs changed in their last bit move too far

    def __repr__(self):
        return f"Output({self.name!r})"


def as_list(returned):
    """A kernel's return value as NPBench reads it: nothing, each item of a tuple or list, or itself."""
    if returned is None:
        return []
    if isinstance(returned, (tuple, list)):
        return list(returned)
    return [returned]


def _same(a, b):
    try:
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b, equal_nan=True))
    except TypeError:
        return bool(np.array_equal(a, b))


def _close(a, b, rtol, atol):
    try:
        return np.shape(a) == np.shape(b) and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
    except TypeError:
        return False


def detect_outputs(info, inputs, returned, args_after, rtol=1e-5, atol=1e-8):
    """The outputs of NumPy's run of the benchmark ``info`` (its ``bench_info`` entry):
    ``(outputs, notes)``. ``inputs`` are the arguments as they went in, ``returned`` the list of
    returned values, ``args_after`` the array arguments after the call."""
    outputs = [Output(f"return[{i}]", v, arg=False, index=i) for i, v in enumerate(returned)]
    notes = []
    declared = list(info.get("output_args", []))
    undeclared = []
    returned_ids = {id(v) for v in returned}
    for name in info["input_args"]:
        if name not in args_after:
            continue
        before, after = inputs[name], args_after[name]
        if id(after) in returned_ids:
            notes.append(f"{name} is changed in place and returned: validated once, as the returned value")
            continue
        changed = not _same(before, after)
        if name in declared:
            outputs.append(Output(name, after, arg=True))
            if not changed:
                notes.append(
                    f"{name} is declared an output but these inputs leave it unchanged: validation cannot tell "
                    "the kernel from one that does nothing"
                )
            elif _close(before, after, rtol, atol):
                notes.append(
                    f"{name} leaves the kernel equal to its input within the tolerance: "
                    "validation cannot tell the kernel from one that does nothing"
                )
        elif changed:
            undeclared.append(Output(name, after, arg=True))
    # The arguments changed in place that the JSON does not declare are the results when nothing
    # declared changes (doitgen, trisolv); else they are side effects (covariance centres `data`),
    # which NumPy's own program must reproduce but another implementation need not.
    side = any(not o.arg for o in outputs) or any(not _same(inputs[o.name], o.value) for o in outputs if o.arg)
    for o in undeclared:
        o.side = side
        notes.append(
            f"{o.name} is changed in place but not declared an output: "
            + (
                "validated for vmnp (NumPy's program), and for the others where they produce it"
                if side
                else "validated as the result"
            )
        )
    outputs += undeclared
    if not outputs:
        notes.append("the kernel returns nothing and changes no argument: nothing to validate")
    return outputs, notes


def nudged(inputs):
    """``inputs`` with every float array's elements moved to the next float up (the arguments of
    a run that tells whether a result is stable under a change in the last bit)."""
    return {
        k: np.nextafter(v, np.inf) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
        for k, v in inputs.items()
    }


def quiet_check(validate, rtol, atol, norm_error):
    """``check(ref, val) -> bool`` from NPBench's ``validate`` (which prints its verdicts; they
    are kept off this process's stdout, where the table goes)."""

    def check(ref, val):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                return bool(validate([ref], [val], "", rtol=rtol, atol=atol, norm_error=norm_error))
            except Exception:
                return False

    return check


def match_outputs(outputs, returned, args_after, check, same_program=True):
    """Pairs each reference output with a value of another tool's run and validates it.

    ``returned`` and ``args_after`` are that run's returned values and array arguments after
    the call; ``same_program`` says it ran NumPy's program (vmnp), which must reproduce the side
    effects too. Returns ``[(name, source, valid)]``: ``source`` says where the value came from
    (``name`` or ``return[i]``), None when the run has nothing for it; ``valid`` is None for a
    side effect another implementation does not reproduce, or an unstable one (not checked)."""
    used = set()
    result = []
    for out in outputs:
        natural = None
        if out.arg and out.name in args_after:
            natural = ("arg", out.name)
        elif not out.arg and out.index < len(returned):
            natural = ("return", out.index)
        candidates = [natural] if natural is not None and natural not in used else []
        candidates += [
            ("return", j)
            for j, v in enumerate(returned)
            if ("return", j) not in used and ("return", j) != natural and np.shape(v) == np.shape(out.value)
        ]
        if not out.arg:
            # A value NumPy's kernel returns and also changes in place (adi's `return u`) may be
            # left in the argument only (numba's adi returns nothing).
            candidates += [("arg", a) for a, v in args_after.items() if np.shape(v) == np.shape(out.value)]
        found = None
        for cand in candidates:
            value = args_after[cand[1]] if cand[0] == "arg" else returned[cand[1]]
            if check(out.value, value):
                found = cand
                break
        if found is not None:
            used.add(found)
            result.append((out.name, _source(found), True))
        elif out.side and (out.unstable or not same_program):
            result.append((out.name, None, None))
        else:
            result.append((out.name, _source(natural) if natural else None, False))
    return result


def _source(cand):
    return cand[1] if cand[0] == "arg" else f"return[{cand[1]}]"
