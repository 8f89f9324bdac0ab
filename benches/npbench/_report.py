"""The runner's output: progress lines, the text table, the SVG chart."""

import html
import math

# Statuses that are not failures (a tool NPBench has no implementation of is a gap, not a failure).
GOOD = ("valid", "reference", "unchecked", "missing")
MARK = {
    "valid": "ok",
    "reference": "ref",
    "invalid": "WRONG",
    "error": "error",
    "timeout": "timeout",
    "missing": "-",
    "unchecked": "?",
}


def fmt_time(seconds):
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def fmt_speedup(x):
    if x is None:
        return ""
    if x < 0.01:
        return f"{x:.2g}x"
    return f"{x:.2f}x" if x < 10 else f"{x:.3g}x"


def progress_line(run):
    parts = [MARK.get(run["status"], run["status"]), f"first {fmt_time(run['first'])}"]
    if run.get("median") is not None:
        parts.append(f"median {fmt_time(run['median'])}")
    if run.get("fallbacks"):
        parts.append("fallbacks: " + ", ".join(run["fallbacks"]))
    if run.get("error"):
        parts.append(run["error"].splitlines()[0][:200])
    return "; ".join(parts)


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _cell(run, key, speed):
    if run is None or run["status"] == "missing":
        return "-"
    if run["status"] not in ("valid", "reference", "unchecked") or run.get(key) is None:
        return MARK.get(run["status"], run["status"]) if run.get(key) is None else fmt_time(run.get(key))
    text = fmt_time(run[key])
    return text if run["status"] == "reference" else f"{text} ({fmt_speedup(run.get(speed))})"


def table(records, meta):
    """A Markdown table: per program and tool the median and the first call with their speedups
    over NumPy's, the validation, vmnp's fallbacks; geometric means at the bottom; notes after."""
    tools = meta["tools"]
    head = ["program"]
    for t in tools:
        head += [f"{t} median", f"{t} first"] if not meta["validate_only"] else [f"{t} first"]
        if t != "numpy":
            head.append(f"{t} valid")
        if t == "vmnp":
            head.append("fallbacks")
    rows = []
    for rec in records:
        row = [rec["benchmark"]]
        for t in tools:
            run = rec["tools"].get(t)
            if not meta["validate_only"]:
                row.append(_cell(run, "median", "speedup"))
            row.append(_cell(run, "first", "speedup_first"))
            if t != "numpy":
                row.append(MARK.get(run["status"], run["status"]) if run else "-")
            if t == "vmnp":
                row.append(str(len(run.get("fallbacks") or [])) if run else "-")
        rows.append(row)
    foot = ["geomean"]
    for t in tools:
        runs = [r["tools"][t] for r in records if t in r["tools"]]
        ok = [r for r in runs if r["status"] in ("valid", "reference")]
        for key in ("speedup",) * (not meta["validate_only"]) + ("speedup_first",):
            g = geomean([r.get(key) for r in ok])
            foot.append("" if t == "numpy" else f"{fmt_speedup(g)} ({len(ok)})" if g else "-")
        if t != "numpy":
            foot.append(f"{sum(r['status'] == 'valid' for r in runs)}/{len(records)}")
        if t == "vmnp":
            foot.append(str(sum(bool(r.get("fallbacks")) for r in runs)))
    lines = [
        f"NPBench, preset {meta['preset']}, {len(records)} programs; "
        + ("first calls only" if meta["validate_only"] else f"median of {meta['repeat']} calls after the first")
        + f"; vmnp on the {meta['stack']} stack; speedups over NumPy in parentheses",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows + [foot]]
    notes = []
    for rec in records:
        for n in rec["notes"]:
            notes.append(f"- {rec['benchmark']}: {n}")
        if rec.get("error"):
            notes.append(f"- {rec['benchmark']}: {rec['error']}")
        for t, run in rec["tools"].items():
            if run.get("error") and run["status"] != "missing":
                notes.append(f"- {rec['benchmark']}: {t} {run['variant']}: {run['error'].splitlines()[0][:300]}")
            elif run["status"] == "invalid":
                wrong = [o["name"] for o in run.get("outputs", []) if o["valid"] is False]
                notes.append(f"- {rec['benchmark']}: {t} {run['variant']}: wrong {', '.join(wrong)}")
            if t == "vmnp" and run.get("fallbacks"):
                notes.append(f"- {rec['benchmark']}: vmnp falls back to NumPy for {', '.join(run['fallbacks'])}")
    if notes:
        lines += ["", "Notes:", *notes]
    lines.append("")
    lines.append(
        "The geomean row: over the programs a tool validates (how many in parentheses), then how many validate"
        + ("; the fallbacks column counts the programs with any." if "vmnp" in tools else ".")
    )
    return "\n".join(lines)


COLORS = {"vmnp": "#d62728", "numba": "#1f77b4", "jax": "#2ca02c"}


def svg(records, meta):
    """Speedup over NumPy (median, else first call) per program, one bar per tool, log scale."""
    tools = [t for t in meta["tools"] if t != "numpy"]
    key = "speedup_first" if meta["validate_only"] else "speedup"
    values = [r["tools"].get(t, {}).get(key) for r in records for t in tools]
    present = [v for v in values if v]
    lo = 10 ** math.floor(math.log10(min(present + [0.5])))
    hi = 10 ** math.ceil(math.log10(max(present + [2.0])))
    group = max(12, 6 * len(tools) + 6)
    left, top, height, bottom = 60, 40, 360, 130
    width = left + group * len(records) + 150

    def y(v):
        return top + height * (math.log10(hi) - math.log10(v)) / (math.log10(hi) - math.log10(lo))

    what = "first call" if meta["validate_only"] else f"median of {meta['repeat']}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + bottom}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{top + height + bottom}" fill="white"/>',
        f'<text x="{left}" y="20" font-size="14">NPBench preset {html.escape(meta["preset"])}: speedup over NumPy '
        f"({what}, log scale; vmnp on {html.escape(meta['stack'])})</text>",
    ]
    decade = lo
    while decade <= hi * 1.0001:
        yy = y(decade)
        out.append(f'<line x1="{left}" x2="{width - 150}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{decade:g}x</text>')
        decade *= 10
    one = y(1.0)
    out.append(f'<line x1="{left}" x2="{width - 150}" y1="{one:.1f}" y2="{one:.1f}" stroke="black"/>')
    for i, rec in enumerate(records):
        x0 = left + i * group + 3
        for j, t in enumerate(tools):
            v = rec["tools"].get(t, {}).get(key)
            if not v:
                continue
            yy = y(v)
            top_y, h = min(yy, one), abs(one - yy)
            out.append(
                f'<rect x="{x0 + 6 * j}" y="{top_y:.1f}" width="5" height="{max(h, 0.5):.1f}" fill="{COLORS[t]}">'
                f"<title>{html.escape(rec['benchmark'])} {t}: {v:.3g}x</title></rect>"
            )
        cx = x0 + 3 * len(tools)
        out.append(
            f'<text x="{cx}" y="{top + height + 8}" transform="rotate(60 {cx} {top + height + 8})">'
            f"{html.escape(rec['benchmark'])}</text>"
        )
    for j, t in enumerate(tools):
        ly = top + 14 * j
        g = geomean([r["tools"].get(t, {}).get(key) for r in records])
        label = f"{t} (geomean {g:.2f}x)" if g else t
        out.append(f'<rect x="{width - 140}" y="{ly}" width="10" height="10" fill="{COLORS[t]}"/>')
        out.append(f'<text x="{width - 125}" y="{ly + 9}">{html.escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
