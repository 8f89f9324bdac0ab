//! The terminal table: a header line about the run, then per benchmark and size one line per
//! implementation, then the failures (loudly) and the notes.

use super::{Kind, Report, Row};
use crate::check::Verdict;
use std::fmt::Write;

/// `seconds` with a unit that keeps 3-4 significant digits (`812 us`, `12.3 ms`, `1.25 s`).
pub fn format_seconds(seconds: f64) -> String {
    let (v, unit) = match seconds {
        s if s < 1e-6 => (s * 1e9, "ns"),
        s if s < 1e-3 => (s * 1e6, "us"),
        s if s < 1.0 => (s * 1e3, "ms"),
        s => (s, "s"),
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// A ratio as `12.3x` (3 significant digits).
pub fn format_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}x")
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    }
}

/// Aligns `rows` (the first is the heading) into columns: `right[i]` right-aligns column `i`.
/// The last cell of a row shorter than the others (an error message) runs on past the columns
/// instead of widening one.
pub fn columns(rows: &[Vec<String>], right: &[bool], indent: &str) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let spills = |r: &Vec<String>, c: usize| r.len() < n && c + 1 == r.len();
    let width: Vec<usize> = (0..n)
        .map(|c| rows.iter().filter(|r| c < r.len() && !spills(r, c)).map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::from(indent);
        for (c, cell) in r.iter().enumerate() {
            let pad = if spills(r, c) { 0 } else { width[c] - cell.chars().count() };
            if c > 0 {
                line.push_str("  ");
            }
            if right.get(c).copied().unwrap_or(false) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_string() } else { format!("{}...", s.chars().take(max - 3).collect::<String>()) }
}

fn verdict(row: &Row) -> String {
    if row.error.is_some() {
        return "-".into();
    }
    match row.check.verdict {
        Verdict::Reference => "reference".into(),
        Verdict::Agrees => match row.check.relative_error {
            Some(e) if e > 0.0 => format!("ok ({e:.0e})"),
            _ => "ok (equal)".into(),
        },
        Verdict::Differs => "DIFFERS".into(),
        Verdict::NotCompared => format!("n/a: {}", row.check.note.as_deref().unwrap_or("")),
    }
}

fn cells(row: &Row) -> Vec<String> {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    if let Some(e) = &row.error {
        return vec![row.implementation.clone(), format!("ERROR: {}", shorten(e, 100))];
    }
    let compile = row.engine.compile_ms.map(|ms| format_seconds(ms / 1e3));
    let cache = match (row.engine.cache_hits, row.engine.cache_misses) {
        (None, None) => None,
        (h, m) => {
            Some(format!("{}/{}", h.map_or("?".into(), |h| h.to_string()), m.map_or("?".into(), |m| m.to_string())))
        }
    };
    vec![
        row.implementation.clone(),
        opt(row.median.map(format_seconds)),
        opt(row.min.map(format_seconds)),
        opt(row.speedup_vs_numpy.map(format_ratio)),
        opt(row.speedup_vs_eager.map(format_ratio)),
        opt(row.ratio_to_hand.map(format_ratio)),
        opt(compile),
        opt(cache),
        opt(row.checksum.map(|c| format!("{c:.12e}"))),
        verdict(row),
    ]
}

/// The whole report as text for the terminal.
pub fn render(report: &Report) -> String {
    let m = &report.meta;
    let mut out = String::new();
    let threads = m.threads.map_or("as configured".to_string(), |t| t.to_string());
    let _ = writeln!(
        out,
        "vm-bench {}: {}, {} warm-up + {} timed repetitions, {} cores, threads {threads}, checksum tolerance {:.0e} relative",
        m.version,
        m.precision.as_str(),
        m.warmup,
        m.reps,
        m.cores,
        m.tolerance.relative
    );
    let _ = writeln!(
        out,
        "speedups are medians of this run: vs numpy and vs eager > 1 means faster; x hand > 1 means slower than hand. \
         JIT: compile time and cache hits/misses (totals incl. warm-up)."
    );
    let heading: Vec<String> =
        ["impl", "median", "min", "vs numpy", "vs eager", "x hand", "compile", "cache h/m", "checksum", "check"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let right = [false, true, true, true, true, true, true, true, true, false];
    for g in &report.groups {
        let _ = writeln!(out, "\n{} {}", g.benchmark, g.size);
        let mut rows = vec![heading.clone()];
        rows.extend(g.rows.iter().map(cells));
        out.push_str(&columns(&rows, &right, "  "));
    }
    let failures = report.failures();
    if !failures.is_empty() {
        let _ = writeln!(out, "\n!!! {} FAILURE(S) !!!", failures.len());
        for f in &failures {
            let _ = writeln!(out, "!!! {f}");
        }
    }
    if !report.notes.is_empty() {
        let _ = writeln!(out, "\nnotes:");
        for n in &report.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    let stacks: Vec<&str> = report
        .groups
        .iter()
        .flat_map(|g| g.rows.iter())
        .filter(|r| matches!(r.kind, Kind::Stack | Kind::Eager))
        .map(|r| r.implementation.as_str())
        .collect();
    if failures.is_empty() && !stacks.is_empty() {
        let _ = writeln!(out, "\nall checksums agree.");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Tolerance;
    use crate::report::tests::{sample_group, sample_meta};

    #[test]
    fn units_and_ratios() {
        assert_eq!(format_seconds(1.2345), "1.23 s");
        assert_eq!(format_seconds(123.4), "123 s");
        assert_eq!(format_seconds(0.0123), "12.3 ms");
        assert_eq!(format_seconds(812e-6), "812 us");
        assert_eq!(format_seconds(5e-9), "5.00 ns");
        assert_eq!(format_ratio(1.5), "1.50x");
        assert_eq!(format_ratio(12.34), "12.3x");
        assert_eq!(format_ratio(1234.0), "1234x");
    }

    #[test]
    fn columns_align() {
        let rows = vec![vec!["a".to_string(), "bb".to_string()], vec!["ccc".to_string(), "d".to_string()]];
        assert_eq!(columns(&rows, &[false, true], ""), "a    bb\nccc   d\n");
    }

    #[test]
    fn an_error_message_does_not_widen_the_first_column() {
        let rows = vec![
            vec!["impl".to_string(), "median".to_string(), "min".to_string()],
            vec!["cpu".to_string(), "1 ms".to_string(), "1 ms".to_string()],
            vec!["broken".to_string(), "ERROR: a long message that must not pad the others".to_string()],
        ];
        let text = columns(&rows, &[false, true, true], "");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "impl    median   min");
        assert_eq!(lines[1], "cpu       1 ms  1 ms");
        assert_eq!(lines[2], "broken  ERROR: a long message that must not pad the others");
    }

    #[test]
    fn the_table_shows_every_implementation_and_shouts_failures() {
        let mut g = sample_group();
        g.analyze(Tolerance::for_precision(crate::Precision::F64), true);
        let report = Report { meta: sample_meta(), groups: vec![g], notes: vec!["numpy 2.4.6".into()] };
        let text = render(&report);
        assert!(text.contains("heat_equation 20*30*5"), "{text}");
        for name in ["eager", "cpu", "hand", "hand-native", "numpy", "broken", "c:cpu"] {
            assert!(text.lines().any(|l| l.trim_start().starts_with(name)), "{name} missing:\n{text}");
        }
        let cpu = text.lines().find(|l| l.trim_start().starts_with("cpu")).unwrap();
        assert!(cpu.contains("750.0 ms") || cpu.contains("750 ms"), "{cpu}");
        assert!(cpu.contains("5.33x") && cpu.contains("1.50x") && cpu.contains("ok ("), "{cpu}");
        let native = text.lines().find(|l| l.trim_start().starts_with("hand-native")).unwrap();
        assert!(native.contains("250 ms") && native.contains("0.50x") && native.contains("ok ("), "{native}");
        assert!(text.contains("DIFFERS"));
        assert!(text.contains("!!! 2 FAILURE(S) !!!"));
        assert!(text.contains("ERROR: no C baseline"));
        assert!(text.contains("notes:\n  - numpy 2.4.6"));
        assert!(!text.contains("all checksums agree"));
    }
}
