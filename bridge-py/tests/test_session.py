"""Choosing the stack of a session: ``vmnp.set_stack(name)`` before the first operation. Each case
runs in a child process, since a process has one VM."""

import os
import subprocess
import sys
import textwrap


def run_child(code, **env):
    """Runs ``code`` in a fresh Python with vmnp and ``env`` added; returns its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_set_stack_picks_the_stack_over_vm_stack_and_only_before_the_first_operation():
    out = run_child(
        """
        import vmnp as np
        np.set_stack("interp")
        print(float(np.arange(5.0).sum()))
        print(np._vmnp._describe())
        try:
            np.set_stack("interp")
        except np.VMError as e:
            print("again:", e)
        """,
        VM_STACK="cpu",
    )
    assert out.startswith("10.0\n"), out
    assert "stack:  interp (requested by name)" in out, out
    assert 'again: set_stack("interp"): the VM of this process runs the stack `interp` already' in out, out


def test_an_unknown_or_empty_stack_name_is_a_clear_error_and_the_session_goes_on():
    out = run_child(
        """
        import vmnp as np
        for name in ["nope", ""]:
            try:
                np.set_stack(name)
            except np.VMError as e:
                print("error:", e)
        print(float(np.arange(5.0).sum()))
        print(np._vmnp._describe())
        """,
        VM_STACK="interp",
    )
    unknown, empty = [line for line in out.splitlines() if line.startswith("error:")]
    assert "the requested stack `nope` names no stack" in unknown and "interp" in unknown, out
    assert "VM_STACK" not in unknown, out
    assert "the requested stack name is empty" in empty, out
    assert "10.0\n" in out and "stack:  interp (chosen by VM_STACK)" in out, out
