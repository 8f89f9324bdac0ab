"""``vmnp.profile`` and ``python -m vmnp --profile``: where a program makes the VM run."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import vmnp


def test_a_read_per_iteration_is_one_run_per_iteration_on_its_line(tmp_path):
    a = vmnp.arange(100_000.0)  # large enough to be queued, not run at once
    trace = tmp_path / "trace.json"
    with vmnp.profile(str(trace)) as p:
        total = 0.0
        for _ in range(30):
            a = a * 0.5 + 1.0
            total += float(a.sum())  # the line that makes the VM run
    line = sys._getframe().f_lineno - 1
    assert total > 0
    lines = p.lines()
    top = max(lines, key=lambda e: e[2])
    assert (os.path.basename(top[0]), top[1]) == ("test_profile.py", line), lines
    assert top[2] >= 30 and top[3] > 0, top
    report = p.report()
    assert f"test_profile.py:{line}" in report.splitlines()[3], report
    spans = json.loads(trace.read_text())["traceEvents"]
    mine = [s for s in spans if s["args"].get("line") == line]
    assert len(mine) == top[2] and all(s["ph"] == "X" and s["dur"] >= 0 for s in mine), spans[:3]
    assert [s["ts"] for s in spans] == sorted(s["ts"] for s in spans)


@pytest.mark.skipif(os.environ.get("VM_STACK", "cpu") != "cpu", reason="the cpu engine's spans")
def test_the_trace_holds_the_engines_kernels_inside_the_programs_runs(tmp_path):
    a = vmnp.arange(200_000.0)
    trace = tmp_path / "trace.json"
    with vmnp.profile(str(trace)) as p:
        for _ in range(3):
            a = vmnp.sqrt(a * 0.5 + 1.0)
            float(a.sum())
    kernels = [s for s in p.spans if s[1] == "kernel"]
    assert kernels and any(args.get("bytes", 0) >= 200_000 * 8 for _n, _c, _s, _d, args in kernels), p.spans
    assert any(cat == "compile" for _n, cat, _s, _d, _a in p.spans) or len(kernels) >= 3
    # Each kernel ran inside one of the program's runs of the VM.
    runs = [(start, start + seconds) for _c, _f, _l, start, seconds in p.events]
    for _name, _cat, start, seconds, _args in kernels:
        assert any(lo <= start and start + seconds <= hi + 1e-6 for lo, hi in runs), (start, runs)
    spans = json.loads(trace.read_text())["traceEvents"]
    assert {s["cat"] for s in spans} >= {"vm", "kernel"}, spans


def test_fallbacks_are_listed_by_function_with_their_line(monkeypatch):
    monkeypatch.setenv("VMNP_FALLBACK", "")
    a = vmnp.arange(10.0)
    with pytest.warns(vmnp.FallbackWarning), vmnp.profile() as p:
        vmnp.histogram(a, bins=[0.0, 2.0, 10.0], weights=a)  # weights with edges: NumPy's
    line = sys._getframe().f_lineno - 1
    falls = [e for e in p.events if e[0] == "fallback histogram"]
    assert len(falls) == 1 and falls[0][2] == line, p.events
    assert "histogram" in p.report().split("fallbacks to NumPy:")[1]


def test_profiles_do_not_nest_and_record_nothing_when_closed():
    with vmnp.profile() as p:
        with pytest.raises(RuntimeError, match="open already"):
            vmnp.profile().__enter__()
    assert p.events == []
    a = vmnp.arange(100_000.0)
    float((a + 1).sum())  # with no profile open: not recorded
    events, spans, dropped = vmnp._vmnp._profile_stop()
    assert (events, spans, dropped) == ([], [], 0)


def test_python_m_vmnp_profile_prints_the_hot_line_first(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """\
            import numpy as np
            x = np.linspace(0.0, 1.0, 200_000)
            s = 0.0
            for i in range(20):
                x = np.sqrt(x + 1.0)
                s += float(x[0])
            print(s > 0)
            """
        )
    )
    env = dict(os.environ, VMNP_FALLBACK="error")
    r = subprocess.run(
        [sys.executable, "-m", "vmnp", "--profile", str(prog)], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
    table = r.stderr.splitlines()
    first = table.index("  lines with the most runs:") + 2
    assert table[first].split()[0] == "prog.py:6", r.stderr
