//! `--plot FILE.svg`: the speedups of a run as a grouped bar chart on a log scale, one group per
//! benchmark and size, one bar per implementation, the baseline's line at 1x. Speedups are over
//! NumPy when NumPy ran, else over eager. Below it, for the rows that have one, where a traced
//! repetition's time went ([`crate::split`]): a bar per stack cut into recording, flush, compile
//! and kernels. A small hand-written SVG writer: no dependencies.

use crate::report::{Kind, Report, Row};
use crate::split::TimeSplit;
use std::fmt::Write;

/// Which speedup the chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// Speedup over NumPy.
    Numpy,
    /// Speedup over eager (`interp`).
    Eager,
}

impl Baseline {
    /// NumPy when any row has a speedup over it, else eager.
    pub fn choose(report: &Report) -> Baseline {
        let any_numpy = report.groups.iter().flat_map(|g| &g.rows).any(|r| r.speedup_vs_numpy.is_some());
        if any_numpy { Baseline::Numpy } else { Baseline::Eager }
    }

    fn value(self, row: &Row) -> Option<f64> {
        match self {
            Baseline::Numpy if row.kind != Kind::Numpy => row.speedup_vs_numpy,
            Baseline::Eager if row.kind != Kind::Eager => row.speedup_vs_eager,
            _ => None,
        }
        .filter(|v| v.is_finite() && *v > 0.0)
    }

    fn name(self) -> &'static str {
        match self {
            Baseline::Numpy => "NumPy",
            Baseline::Eager => "eager (interp)",
        }
    }
}

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

/// The chart as an SVG document.
pub fn render(report: &Report) -> String {
    let base = Baseline::choose(report);
    // Implementations in order of first appearance, each with its colour.
    let mut names: Vec<String> = Vec::new();
    for r in report.groups.iter().flat_map(|g| &g.rows) {
        if base.value(r).is_some() && !names.contains(&r.implementation) {
            names.push(r.implementation.clone());
        }
    }
    let values: Vec<f64> = report.groups.iter().flat_map(|g| &g.rows).filter_map(|r| base.value(r)).collect();
    let lo = values.iter().copied().fold(0.5f64, f64::min) / 1.5;
    let hi = values.iter().copied().fold(2.0f64, f64::max) * 1.5;
    let (llo, lhi) = (lo.log10().floor(), hi.log10().ceil());

    let bar_w = 18.0;
    let group_gap = 28.0;
    let (left, right, top, bottom) = (70.0, 70.0, 60.0, 110.0);
    let plot_h = 320.0;
    let group_w = |n: usize| n.max(1) as f64 * bar_w + group_gap;
    let widths: Vec<f64> =
        report.groups.iter().map(|g| group_w(g.rows.iter().filter(|r| base.value(r).is_some()).count())).collect();
    let splits: Vec<(String, &TimeSplit)> = report
        .groups
        .iter()
        .flat_map(|g| {
            g.rows.iter().filter_map(move |r| {
                Some((format!("{} {} {}", g.benchmark, g.size, r.implementation), r.split.as_ref()?))
            })
        })
        .filter(|(_, t)| t.total > 0.0)
        .collect();
    let split_h = if splits.is_empty() { 0.0 } else { SPLIT_TOP + SPLIT_ROW * splits.len() as f64 + 20.0 };
    let min_width = if splits.is_empty() { 480.0 } else { 720.0 };
    let width = (left + widths.iter().sum::<f64>() + right).max(min_width);
    let height = top + plot_h + bottom + split_h;
    let y = |v: f64| top + plot_h * (lhi - v.log10()) / (lhi - llo);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#);
    let title = format!(
        "vm-bench: speedup over {} ({}, median of {} repetitions; log scale)",
        base.name(),
        report.meta.precision.as_str(),
        report.meta.reps
    );
    let _ = writeln!(s, r#"<text x="{left}" y="20" font-size="14" font-weight="bold">{}</text>"#, esc(&title));
    // Legend.
    let mut lx = left;
    for (i, n) in names.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="32" width="12" height="12" fill="{}"/><text x="{:.1}" y="42">{}</text>"#,
            PALETTE[i % PALETTE.len()],
            lx + 16.0,
            esc(n)
        );
        lx += 28.0 + 7.0 * n.chars().count() as f64;
    }
    // Grid lines at 1, 2, 5 x powers of ten.
    let mut e = llo;
    while e <= lhi {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powf(e);
            if v < 10f64.powf(llo) || v > 10f64.powf(lhi) {
                continue;
            }
            let yy = y(v);
            let (stroke, dash) = if m == 1.0 { ("#999", "") } else { ("#ddd", r#" stroke-dasharray="3,3""#) };
            let _ = writeln!(
                s,
                r#"<line x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="{stroke}"{dash}/><text x="{:.1}" y="{:.1}" text-anchor="end">{}x</text>"#,
                width - right,
                left - 6.0,
                yy + 4.0,
                trim_number(v)
            );
        }
        e += 1.0;
    }
    let one = y(1.0);
    let _ = writeln!(
        s,
        r#"<line x1="{left}" x2="{:.1}" y1="{one:.1}" y2="{one:.1}" stroke="black" stroke-width="1.5"/>"#,
        width - right
    );
    // Bars.
    let mut gx = left + group_gap / 2.0;
    for (g, gw) in report.groups.iter().zip(&widths) {
        let mut bx = gx;
        for r in &g.rows {
            let Some(v) = base.value(r) else { continue };
            let color = PALETTE[names.iter().position(|n| *n == r.implementation).unwrap_or(0) % PALETTE.len()];
            let (y0, y1) = if v >= 1.0 { (y(v), one) } else { (one, y(v)) };
            let _ = writeln!(
                s,
                r#"<rect x="{bx:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}: {}x</title></rect>"#,
                bar_w - 2.0,
                (y1 - y0).max(0.5),
                esc(&format!("{} {} {}", g.benchmark, g.size, r.implementation)),
                trim_number(v)
            );
            let ty = if v >= 1.0 { y0 - 3.0 } else { y1 + 10.0 };
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{ty:.1}" font-size="8" text-anchor="middle">{}</text>"#,
                bx + bar_w / 2.0 - 1.0,
                trim_number(v)
            );
            bx += bar_w;
        }
        // Two label lines along a 30-degree slope: the second one offset perpendicular to it.
        let cx = gx + (gw - group_gap) / 2.0;
        let ly = top + plot_h + 14.0;
        let _ = writeln!(
            s,
            r##"<text transform="translate({cx:.1},{ly:.1}) rotate(30)" font-size="10">{}</text><text transform="translate({:.1},{:.1}) rotate(30)" font-size="8" fill="#555">{}</text>"##,
            esc(&g.benchmark),
            cx - 6.0,
            ly + 10.4,
            esc(&g.size)
        );
        gx += gw;
    }
    draw_splits(&mut s, &splits, top + plot_h + bottom, width);
    s.push_str("</svg>\n");
    s
}

/// Height of the time split's title and legend, and of each of its bars.
const SPLIT_TOP: f64 = 56.0;
const SPLIT_ROW: f64 = 16.0;

/// The time split section from height `y0` on: one bar per row, its parts as shares of the timed
/// region, the region's length at the right.
fn draw_splits(s: &mut String, splits: &[(String, &TimeSplit)], y0: f64, width: f64) {
    let Some((_, first)) = splits.first() else { return };
    let (label_w, right) = (230.0, 70.0);
    let (x0, bar_len) = (label_w, width - label_w - right);
    let _ = writeln!(
        s,
        r#"<text x="10" y="{:.1}" font-size="14" font-weight="bold">Where one traced repetition's time goes</text>"#,
        y0 + 20.0
    );
    let mut lx = x0;
    for (i, (name, _)) in first.parts().iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            y0 + 30.0,
            PALETTE[i],
            lx + 16.0,
            y0 + 40.0
        );
        lx += 90.0;
    }
    for (k, (label, t)) in splits.iter().enumerate() {
        let y = y0 + SPLIT_TOP + SPLIT_ROW * k as f64;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{}</text>"#,
            x0 - 6.0,
            y + 11.0,
            esc(label)
        );
        let mut x = x0;
        for (i, (name, secs)) in t.parts().iter().enumerate() {
            let w = bar_len * secs / t.total;
            if w <= 0.0 {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{}"><title>{}: {name} {} ms ({:.0}%)</title></rect>"#,
                SPLIT_ROW - 3.0,
                PALETTE[i],
                esc(label),
                trim_number(secs * 1e3),
                100.0 * secs / t.total
            );
            x += w;
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10">{} ms</text>"#,
            x0 + bar_len + 6.0,
            y + 11.0,
            trim_number(t.total * 1e3)
        );
    }
}

/// A number with 2-3 significant digits and no trailing zeros (`0.5`, `12`, `1.25`).
fn trim_number(v: f64) -> String {
    let t = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').to_string() } else { t }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Tolerance;
    use crate::report::tests::{sample_group, sample_meta};

    #[test]
    fn the_chart_has_a_bar_per_speedup_and_escapes_text() {
        let mut g = sample_group();
        g.benchmark = "a<b&c".into();
        g.analyze(Tolerance::for_precision(crate::Precision::F64), true);
        let report = Report { meta: sample_meta(), groups: vec![g], notes: vec![] };
        assert_eq!(Baseline::choose(&report), Baseline::Numpy);
        let svg = render(&report);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("a&lt;b&amp;c"));
        assert!(!svg.contains("a<b"));
        // eager, cpu, hand, hand-native and broken have speedups over numpy; numpy itself and the
        // failed C row do not.
        assert_eq!(svg.matches("<title>").count(), 5, "{svg}");
        assert!(svg.contains(">hand-native</text>"), "hand-native in the legend");
        assert!(svg.contains("speedup over NumPy"));
        assert!(svg.contains(">1x</text>"));
    }

    #[test]
    fn without_numpy_the_chart_is_over_eager() {
        let mut g = sample_group();
        g.rows.retain(|r| r.kind != Kind::Numpy);
        g.analyze(Tolerance::for_precision(crate::Precision::F64), true);
        let report = Report { meta: sample_meta(), groups: vec![g], notes: vec![] };
        assert_eq!(Baseline::choose(&report), Baseline::Eager);
        let svg = render(&report);
        assert!(svg.contains("speedup over eager"));
        assert_eq!(svg.matches("<title>").count(), 4);
    }

    /// A row with a time split gets a bar cut into its four parts, each with its share.
    #[test]
    fn rows_with_a_time_split_get_a_bar_of_their_parts() {
        let mut g = sample_group();
        g.analyze(Tolerance::for_precision(crate::Precision::F64), true);
        let plain = render(&Report { meta: sample_meta(), groups: vec![g.clone()], notes: vec![] });
        assert!(!plain.contains("traced repetition"));
        let split = TimeSplit { total: 0.010, recording: 0.001, flush: 0.002, compile: 0.003, kernels: 0.004 };
        g.rows.iter_mut().find(|r| r.kind == Kind::Stack).unwrap().split = Some(split);
        let svg = render(&Report { meta: sample_meta(), groups: vec![g], notes: vec![] });
        assert!(svg.contains("Where one traced repetition"), "{svg}");
        for part in ["recording 1 ms (10%)", "flush 2 ms (20%)", "compile 3 ms (30%)", "kernels 4 ms (40%)"] {
            assert!(svg.contains(part), "{part} missing from {svg}");
        }
        assert!(svg.contains(">10 ms</text>"), "the total");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(trim_number(0.5), "0.5");
        assert_eq!(trim_number(12.0), "12");
        assert_eq!(trim_number(1.256), "1.26");
        assert_eq!(trim_number(150.4), "150");
    }
}
