"""Ctrl-C, arrays larger than the machine, matrix products that fit in memory, and a forked
process, on the stack the suite runs on (``VM_STACK``). Each case runs in a child process: it
sends itself signals, measures its own peak memory or forks."""

import os
import subprocess
import sys
import textwrap

import pytest


def run_child(code):
    """Runs ``code`` in a fresh Python with vmnp, on this suite's stack; returns its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_ctrl_c_stops_a_long_flush_within_two_seconds_and_the_vm_goes_on():
    # 2^36 additions: minutes on either engine, so only the interrupt can end the sum early.
    out = run_child(
        """
        import os, signal, threading, time
        import vmnp as np

        sent = []
        def interrupt():
            time.sleep(1.0)
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        total = np.broadcast_to(np.ones(2**20), (2**16, 2**20)).sum()
        try:
            float(total)
            print("finished")
        except KeyboardInterrupt:
            print("interrupted after", time.monotonic() - sent[0])
        print("then", float((np.arange(10.0) * 2).sum()))
        try:
            float(total)  # its computation was stopped: no value to read
        except np.VMError as e:
            print("VMError", e)
        """
    )
    lines = out.splitlines()
    assert lines[0].startswith("interrupted after"), out
    assert float(lines[0].split()[-1]) < 2.0, out
    assert lines[1] == "then 90.0", out
    assert lines[2].startswith("VMError interrupted"), out


def test_ctrl_c_outside_a_flush_is_pythons_keyboard_interrupt():
    out = run_child(
        """
        import os, signal, time
        import vmnp as np

        a = np.arange(5.0)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        print(float(a.sum()))
        """
    )
    assert out.split() == ["interrupted", "10.0"], out


@pytest.mark.parametrize(
    "make",
    ["np.zeros(2**40)", "np.ones((2**20, 2**20)) * 2 + 1", "np.empty((2**30, 2**12), dtype='int8')"],
)
def test_arrays_larger_than_memory_and_swap_are_a_memory_error_when_made(make):
    import vmnp as np

    with pytest.raises(MemoryError, match="Unable to allocate .* for an array with shape"):
        eval(make, {"np": np})
    assert float(np.arange(4.0).sum()) == 6.0


@pytest.mark.parametrize("n", [2**40, 13 * 2**40 // 10, 123 * 2**40 // 8])
def test_the_memory_error_says_what_numpys_says(n):
    import numpy

    import vmnp as np

    with pytest.raises(MemoryError) as want:
        numpy.zeros(n)
    with pytest.raises(MemoryError) as got:
        np.zeros(n)
    assert str(got.value) == str(want.value)


def test_a_float_matrix_product_takes_memory_for_its_result_only():
    # The broadcast product of two 400 x 400 matrices would hold 512 MB.
    out = run_child(
        """
        import resource
        import numpy
        import vmnp as np

        rng = numpy.random.default_rng(0)
        a0, b0 = rng.random((400, 400)), rng.random((400, 400))
        a, b = np.asarray(a0), np.asarray(b0)
        float(a.sum() + b.sum())
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r = numpy.asarray(a @ b)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(grown // 1024, numpy.allclose(r, a0 @ b0, rtol=1e-13, atol=0))
        """
    )
    grown_mb, close = out.split()
    assert close == "True", out
    assert int(grown_mb) < 64, out


def test_a_process_forked_after_work_on_the_vm_computes_in_the_child():
    # multiprocessing's default start method on Linux: the child has the parent's VM but none of
    # its worker threads, so its work must not wait for them (a matrix product once did).
    out = run_child(
        """
        import os, signal
        import vmnp as np

        a = np.ones((800, 800))
        print(float((a @ a)[0, 0]), float((a * 2.0).sum()))
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)  # a hang ends the child with SIGALRM
            b = np.ones((800, 800)) * 3.0
            print(float((b @ b)[0, 0]), float((b + 1.0).sum()), flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("child", status)
        """
    )
    assert out.split("\n")[:3] == ["800.0 1280000.0", "7200.0 2560000.0", "child 0"]
