"""Where a program makes the VM run: ``vmnp.profile`` and ``python -m vmnp --profile``.

While a profile is open, every piece of work the program starts in the VM with a value it needs
now (a flush, a sync before reading an array or one element, ``bool(x)``, a host write) and every
fallback to NumPy is recorded with the file and line of the program that caused it. Operations
small enough to run at once, as they are queued, are not counted as such work.
"""

import collections
import json
import os
import time

from . import _vmnp

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

# The open profile's fallbacks, or None when no profile is open.
_fallbacks = None


def fallback(name, call):
    """``call()``, recorded as a fallback of ``name`` when a profile is open."""
    if _fallbacks is None:
        return call()
    file, line = _vmnp._profile_caller()
    start = _vmnp._profile_clock()
    t0 = time.perf_counter()
    try:
        return call()
    finally:
        _fallbacks.append((f"fallback {name}", file, line, start, time.perf_counter() - t0))


class profile:
    """Records where the program makes the VM run, as a context manager::

        with vmnp.profile("trace.json") as p:
            run()
        print(p.report())

    ``trace``, when given, is a file to write a Chrome trace-event file to on exit (it opens in
    Perfetto and chrome://tracing): one span per piece of work, named by its cause, with the
    program's file and line, and the engines' work inside (compiling and running kernels, with
    their positions, operations and bytes). ``events`` holds the program's ``(cause, file, line,
    start, seconds)`` tuples, ``spans`` the engines' ``(name, category, start, seconds, args)``.
    """

    def __init__(self, trace=None):
        self.trace = trace
        self.events = []
        self.spans = []
        self.dropped = 0

    def __enter__(self):
        global _fallbacks
        if _fallbacks is not None:
            raise RuntimeError("vmnp.profile: a profile is open already")
        _fallbacks = []
        _vmnp._profile_start(_PACKAGE)
        return self

    def __exit__(self, *exc):
        global _fallbacks
        events, self.spans, self.dropped = _vmnp._profile_stop()
        self.events = sorted(events + _fallbacks, key=lambda e: e[3])
        _fallbacks = None
        if self.trace is not None:
            self.write_trace(self.trace)
        return False

    def write_trace(self, path):
        """Writes the events as a Chrome trace-event file (JSON)."""
        pid = os.getpid()

        def span(name, cat, start, seconds, args):
            return {
                "name": name,
                "cat": cat,
                "ph": "X",
                "ts": start * 1e6,
                "dur": seconds * 1e6,
                "pid": pid,
                "tid": 1,
                "args": args,
            }

        spans = [
            span(
                cause,
                "fallback" if cause.startswith("fallback ") else "vm",
                start,
                seconds,
                {"file": file, "line": line},
            )
            for cause, file, line, start, seconds in self.events
        ]
        spans += [span(*s) for s in self.spans]
        spans.sort(key=lambda s: s["ts"])
        with open(path, "w") as f:
            json.dump({"traceEvents": spans, "displayTimeUnit": "ms"}, f)

    def lines(self):
        """Per program line: ``(file, line, count, seconds, causes)`` with ``causes`` a
        ``Counter`` of the causes, in the order the lines first made the VM run."""
        by_line = {}
        for cause, file, line, _start, seconds in self.events:
            if cause.startswith("fallback "):
                continue
            entry = by_line.setdefault((file, line), [0, 0.0, collections.Counter()])
            entry[0] += 1
            entry[1] += seconds
            entry[2][cause] += 1
        return [(f, ln, n, s, c) for (f, ln), (n, s, c) in by_line.items()]

    def report(self, top=10):
        """A short table: the lines that made the VM run most often and longest, and the
        fallbacks by function."""
        lines = self.lines()
        runs = sum(n for _f, _l, n, _s, _c in lines)
        seconds = sum(s for _f, _l, _n, s, _c in lines)
        out = [f"vmnp profile: the program made the VM run {runs} times, {seconds:.3f} s in all"]
        if self.dropped:
            out.append(f"  ({self.dropped} more runs past the first {len(self.events)} are not itemised)")

        def where(file, line):
            name = os.path.relpath(file) if os.path.isabs(file) else file
            return f"{name}:{line}"

        for title, key in (("most runs", lambda e: (-e[2], -e[3])), ("most time", lambda e: (-e[3], -e[2]))):
            if not lines:
                break
            out.append(f"  lines with the {title}:")
            out.append(f"    {'line':<40} {'runs':>8} {'seconds':>9}  causes")
            for file, line, n, s, causes in sorted(lines, key=key)[:top]:
                why = ", ".join(f"{c} {k}" for c, k in causes.most_common(3))
                out.append(f"    {where(file, line):<40} {n:>8} {s:>9.3f}  {why}")
        fallbacks = collections.defaultdict(lambda: [0, 0.0, set()])
        for cause, file, line, _start, s in self.events:
            if cause.startswith("fallback "):
                entry = fallbacks[cause[len("fallback ") :]]
                entry[0] += 1
                entry[1] += s
                entry[2].add(where(file, line))
        if fallbacks:
            out.append("  fallbacks to NumPy:")
            out.append(f"    {'function':<40} {'calls':>8} {'seconds':>9}  from")
            for name, (n, s, at) in sorted(fallbacks.items(), key=lambda kv: -kv[1][1]):
                out.append(f"    {name:<40} {n:>8} {s:>9.3f}  {', '.join(sorted(at)[:3])}")
        return "\n".join(out)
