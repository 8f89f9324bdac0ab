"""NPBench's NumPy programs, unchanged, on the VM (vmnp) beside NumPy, numba and JAX.

    .venv/bin/python benches/npbench/run.py [--npbench DIR] [--preset S|M|L|paper] [--bench NAME ...]
        [--tools numpy,vmnp,numba,jax] [--repeat N] [--json FILE] [--plot FILE.svg] [--validate-only]
        [--stack cpu] [--timeout SECONDS] [--jobs N]

For each benchmark: its inputs come from NPBench's own init with NumPy; every tool runs in a
process of its own (``_child.py``; vmnp's under ``python -m vmnp``), one per variant (numba's
and JAX's variants of NPBench; the fastest one that validates is reported), with a timeout;
outputs are validated against NumPy's with NPBench's ``validate`` and its tolerances, the outputs
chosen as ``_outputs.py`` says. The table goes to stdout, progress to stderr.
"""

import argparse
import datetime
import json
import os
import pickle
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import _npbench  # noqa: E402
import _outputs  # noqa: E402
import _report  # noqa: E402

TOOLS = ("numpy", "vmnp", "numba", "jax")
# The framework of NPBench whose implementation files each tool runs (vmnp runs NumPy's).
FRAMEWORK = {"numpy": "numpy", "vmnp": "numpy", "numba": "numba", "jax": "jax"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--npbench", help="an NPBench checkout (default: ../shared/npbench next to this repository)")
    p.add_argument("--preset", default="S", help="NPBench's input preset: S, M, L or paper (default S)")
    p.add_argument("--bench", nargs="+", metavar="NAME", help="benchmarks to run (default: all); commas separate too")
    p.add_argument("--tools", default=",".join(TOOLS), help="tools, comma-separated (NumPy always runs: the reference)")
    p.add_argument("--repeat", type=int, default=3, help="timed calls after the first (default 3)")
    p.add_argument("--json", metavar="FILE", help="write everything measured as JSON")
    p.add_argument("--plot", metavar="FILE", help="write an SVG bar chart of the speedups over NumPy")
    p.add_argument("--validate-only", action="store_true", help="first calls only, no timed repetitions")
    p.add_argument("--stack", default="cpu", help="vmnp's stack (VM_STACK of its process; default cpu)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per benchmark, tool and variant (600)")
    p.add_argument("--jobs", type=int, default=1, help="benchmarks run at once (only for --validate-only; 1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)
    args.tools = ["numpy"] + [t for t in dict.fromkeys(args.tools.split(",")) if t and t != "numpy"]
    for t in args.tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r} (known: {', '.join(TOOLS)})")
    if args.validate_only:
        args.repeat = 0
    elif args.jobs != 1:
        p.error("--jobs runs benchmarks side by side, which spoils timings: only with --validate-only")
    if args.repeat < 0:
        p.error("--repeat must be >= 0")
    return args


class Runner:
    """Runs the benchmarks of one invocation; ``records`` gathers the results."""

    def __init__(self, checkout, args, workdir):
        self.checkout = checkout
        self.args = args
        self.workdir = Path(workdir)
        self.lock = threading.Lock()

    def progress(self, line):
        if not self.args.quiet:
            with self.lock:
                print(line, file=sys.stderr, flush=True)

    def benchmark(self, name, position):
        args = self.args
        bench = self.checkout.benchmark(name)
        info = bench.info
        tol = {
            "rtol": info.get("rtol", 1e-5),
            "atol": info.get("atol", 1e-8),
            "norm_error": info.get("norm_error", 1e-5),
        }
        rec = {"benchmark": name, "short_name": info.get("short_name", name), "notes": [], "tools": {}}
        folder = self.workdir / name
        folder.mkdir()
        try:
            data = bench.get_data(args.preset)
            inputs = {a: data[a] for a in info["input_args"]}
        except Exception as e:
            rec["error"] = f"inputs: {type(e).__name__}: {e}"
            self.progress(f"[{position}] {name}: no inputs ({rec['error']})")
            return rec
        with open(folder / "inputs.pkl", "wb") as f:
            pickle.dump(inputs, f, protocol=pickle.HIGHEST_PROTOCOL)

        reference = None
        check = _outputs.quiet_check(self.checkout.validate, **tol)
        for tool in args.tools:
            runs = []
            for variant, module in self.checkout.variants(FRAMEWORK[tool], info):
                run, outputs = self.child(folder, tool, variant, module, info)
                if tool == "numpy" and outputs is not None:
                    reference, notes = _outputs.detect_outputs(
                        info, inputs, outputs["returned"], outputs["args"], tol["rtol"], tol["atol"]
                    )
                    notes += self.mark_unstable_side_effects(folder, variant, module, info, inputs, reference, check)
                    rec["notes"] += notes
                    rec["outputs"] = [o.name for o in reference]
                    run["status"] = "reference"
                elif outputs is not None and reference is None:
                    run["status"] = "unchecked"  # NumPy did not run
                elif outputs is not None:
                    matched = _outputs.match_outputs(
                        reference, outputs["returned"], outputs["args"], check, same_program=tool == "vmnp"
                    )
                    run["outputs"] = [{"name": n, "source": s, "valid": v} for n, s, v in matched]
                    run["status"] = "valid" if all(v is not False for _, _, v in matched) else "invalid"
                runs.append(run)
                self.progress(f"[{position}] {name} {tool} {variant}: {_report.progress_line(run)}")
                if args.validate_only and run["status"] in ("valid", "reference"):
                    break
            if not runs:
                rec["tools"][tool] = {"status": "missing", "error": f"NPBench has no {tool} implementation"}
                continue
            best = _best(runs)
            rec["tools"][tool] = {**best, "variants": runs if len(runs) > 1 else None}
        numpy_run = rec["tools"].get("numpy", {})
        for tool, run in rec["tools"].items():
            for key, base in (("speedup", "median"), ("speedup_first", "first")):
                ref, own = numpy_run.get(base), run.get(base)
                run[key] = ref / own if ref and own and run.get("status") in ("valid", "reference") else None
            for position, o in enumerate(run.get("outputs") or []):
                source = o["source"] or ""
                if o["valid"] and source.startswith("return[") and source not in (o["name"], f"return[{position}]"):
                    rec["notes"].append(
                        f"{tool} returns {o['name']} as its {o['source']} (NPBench's positional comparison "
                        "pairs another value with it)"
                    )
        return rec

    def mark_unstable_side_effects(self, folder, variant, module, info, inputs, reference, check):
        """Runs NumPy's program once more on its inputs changed in their last bit and marks the
        side effects (see ``_outputs``) that this moves beyond the tolerance as ``unstable``: a
        chaotic simulation's state (``nbody``'s velocities at preset M) differs as much between
        NumPy on two machines (its vectorised ``pow`` is not libm's), so vmnp cannot be held to
        it. Returns the notes."""
        side = [o for o in reference if o.side]
        if not side:
            return []
        with open(folder / "nudged.pkl", "wb") as f:
            pickle.dump(_outputs.nudged(inputs), f, protocol=pickle.HIGHEST_PROTOCOL)
        _, nudged = self.child(folder, "numpy", f"{variant}-nudged", module, info, "nudged.pkl", repeat=0)
        notes = []
        for o in side:
            value = (nudged or {}).get("args", {}).get(o.name)
            if value is not None and not check(o.value, value):
                o.unstable = True
                notes.append(
                    f"{o.name}: NumPy's own run on inputs changed in their last bit gives another {o.name} "
                    "beyond the tolerance (a chaotic result): not validated as a side effect"
                )
        return notes

    def child(self, folder, tool, variant, module, info, inputs="inputs.pkl", repeat=None):
        """Runs one variant of one tool on the arguments pickled in ``folder / inputs``, with
        ``repeat`` timed calls after the first (default ``--repeat``); ``(run record, outputs or
        None)``."""
        stem = folder / f"{tool}-{variant}"
        spec = {
            "npbench": str(self.checkout.root),
            "tool": tool,
            "module": module,
            "func": info["func_name"],
            "input_args": info["input_args"],
            "array_args": info["array_args"],
            "inputs": str(folder / inputs),
            "outputs": f"{stem}.out.pkl",
            "result": f"{stem}.json",
            "repeat": self.args.repeat if repeat is None else repeat,
        }
        with open(f"{stem}.spec.json", "w") as f:
            json.dump(spec, f)
        cmd = [sys.executable]
        env = dict(os.environ)
        if tool == "vmnp":
            cmd += ["-m", "vmnp"]
            env["VM_STACK"] = self.args.stack
        cmd += [str(HERE / "_child.py"), f"{stem}.spec.json"]
        run = {"variant": variant, "module": module, "status": "error", "first": None, "median": None, "times": []}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            run["status"] = "timeout"
            run["error"] = f"no result within {self.args.timeout:g} s"
            return run, None
        try:
            with open(spec["result"]) as f:
                result = json.load(f)
        except (OSError, ValueError):
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            run["error"] = f"exit status {proc.returncode}: " + " / ".join(tail)
            return run, None
        run.update(first=result["first"], times=result["times"], error=result["error"])
        run["median"] = statistics.median(result["times"]) if result["times"] else None
        if tool == "vmnp":
            run["fallbacks"] = result["fallbacks"]
        if result.get("traceback"):
            run["traceback"] = result["traceback"]
        outputs = None
        if os.path.exists(spec["outputs"]):
            with open(spec["outputs"], "rb") as f:
                outputs = pickle.load(f)
            os.remove(spec["outputs"])
        if result["error"]:
            return run, None
        return run, outputs


def _best(runs):
    """The fastest run that validates (by median, else first call), else the first that ran."""
    good = [r for r in runs if r["status"] in ("valid", "reference", "unchecked")]
    if good:
        return min(good, key=lambda r: (r["median"] is None, r["median"] or 0, r["first"] or 0))
    ran = [r for r in runs if r["status"] == "invalid"]
    return (ran or runs)[0]


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}


def versions(tools):
    found = {"numpy": np.__version__}
    for name in tools:
        if name in ("vmnp", "numba", "jax"):
            try:
                from importlib.metadata import version

                found[name] = version(name)
            except Exception:
                found[name] = None
    return found


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    root = args.npbench or _npbench.default_checkout(REPO)
    if root is None:
        print(
            f"error: no NPBench checkout at {(REPO / '..' / 'shared' / 'npbench').resolve()}: get one with "
            f"`{_npbench.CLONE_HINT}` (next to this repository, or anywhere and pass --npbench DIR)",
            file=sys.stderr,
        )
        return 2
    try:
        checkout = _npbench.Checkout(root)
    except _npbench.CheckoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    names = checkout.names()
    if args.bench:
        wanted = [b for item in args.bench for b in item.split(",") if b]
        unknown = [b for b in wanted if b not in names]
        if unknown:
            print(f"error: unknown benchmarks {', '.join(unknown)} (known: {', '.join(names)})", file=sys.stderr)
            return 2
        names = wanted
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="npbench-") as tmp:
        runner = Runner(checkout, args, tmp)
        jobs = [(n, f"{i + 1}/{len(names)}") for i, n in enumerate(names)]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            records = list(pool.map(lambda job: runner.benchmark(*job), jobs))
    meta = {
        "preset": args.preset,
        "repeat": args.repeat,
        "validate_only": args.validate_only,
        "stack": args.stack,
        "tools": args.tools,
        "npbench": str(checkout.root),
        "started": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(), 1),
        "machine": machine(),
        "versions": versions(args.tools),
        "vmnp_fallback": os.environ.get("VMNP_FALLBACK", ""),
    }
    print(_report.table(records, meta))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "benchmarks": records}, f, indent=1)
    if args.plot:
        with open(args.plot, "w") as f:
            f.write(_report.svg(records, meta))
    failed = [
        (r["benchmark"], t) for r in records for t, run in r["tools"].items() if run["status"] not in _report.GOOD
    ] + [(r["benchmark"], "inputs") for r in records if r.get("error")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
