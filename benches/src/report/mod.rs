//! What a run found: per benchmark and size, one [`Row`] per implementation (the stacks and the
//! baselines) with its times, ratios, JIT statistics and checksum verdict; rendered as a
//! terminal table ([`table`]) and as JSON ([`Report::to_json`]).

pub mod table;

use crate::check::{self, Comparison, Tolerance, Verdict};
use crate::split::TimeSplit;
use crate::stacks::EngineStats;
use crate::{Measured, Precision};
use serde::Serialize;

/// What kind of implementation a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The `eager` baseline: the `interp` stack, the checksum reference.
    Eager,
    /// A VM stack under test.
    Stack,
    /// The hand-written Rust baseline, compiled for the binary's target features: the row
    /// every `ratio_to_hand` refers to.
    Hand,
    /// The same hand-written loops compiled for the widest vector extension the machine has,
    /// chosen at run time (`hand-native`).
    HandNative,
    /// The NumPy baseline.
    Numpy,
    /// The C or C++ program against `libvm.so`, on a stack (`c:<stack>`, `cpp:<stack>`).
    C,
    /// The NumPy script under the Python frontend (`python -m vmnp`), on a stack.
    Python,
    /// A peer tool (numba, JAX, numexpr) on the NumPy baseline's inputs.
    Peer,
}

/// One implementation's measurements of one benchmark at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The implementation's label: `eager`, a stack label, `hand`, `hand-native`, `numpy`,
    /// `c:<stack>`, `python:<stack>`, a peer (`numba`, `jax`, `numexpr`).
    pub implementation: String,
    /// What it is.
    pub kind: Kind,
    /// Seconds of each timed repetition, in order.
    pub times: Vec<f64>,
    /// Median of `times`.
    pub median: Option<f64>,
    /// Minimum of `times`.
    pub min: Option<f64>,
    /// Checksum of the first timed repetition.
    pub checksum: Option<f64>,
    /// Checksums of every timed repetition (they must agree with each other).
    pub checksums: Vec<f64>,
    /// The checksum's comparison with the reference.
    pub check: Comparison,
    /// NumPy's median over this median (> 1: faster than NumPy).
    pub speedup_vs_numpy: Option<f64>,
    /// Eager's median over this median (> 1: faster than eager).
    pub speedup_vs_eager: Option<f64>,
    /// This median over hand's (> 1: slower than hand); `hand-native`'s is native over hand.
    pub ratio_to_hand: Option<f64>,
    /// JIT statistics the engines reported (totals over warm-up and repetitions).
    pub engine: EngineStats,
    /// Instructions the runtime accepted (VM stacks; warm-up and repetitions).
    pub instructions: Option<u64>,
    /// Why it did not run or failed.
    pub error: Option<String>,
    /// It computed from NumPy's inputs (a peer drawing no random numbers of its own), so its
    /// checksum is compared with NumPy's where the VM's is not comparable.
    pub numpy_inputs: bool,
    /// Where one more repetition's time went, from the trace (VM stacks through the Rust
    /// frontend).
    pub split: Option<TimeSplit>,
}

impl Row {
    /// A row of measurements.
    pub fn measured(implementation: &str, kind: Kind, runs: &[Measured]) -> Row {
        let times: Vec<f64> = runs.iter().map(|m| m.seconds).collect();
        Row {
            implementation: implementation.to_string(),
            kind,
            median: median(&times),
            min: times.iter().copied().reduce(f64::min),
            checksum: runs.first().map(|m| m.checksum),
            checksums: runs.iter().map(|m| m.checksum).collect(),
            times,
            check: Comparison::skipped("not compared yet"),
            speedup_vs_numpy: None,
            speedup_vs_eager: None,
            ratio_to_hand: None,
            engine: EngineStats::default(),
            instructions: None,
            error: None,
            numpy_inputs: false,
            split: None,
        }
    }

    /// A row for an implementation that failed with `error`.
    pub fn failed(implementation: &str, kind: Kind, error: impl Into<String>) -> Row {
        let mut row = Row::measured(implementation, kind, &[]);
        row.error = Some(error.into());
        row.check = Comparison::skipped("did not run");
        row
    }
}

/// The median of `xs` (the mean of the middle two for an even count); `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// One benchmark at one size, every implementation measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The benchmark.
    pub benchmark: String,
    /// The size, e.g. `2000*2000*100`.
    pub size: String,
    /// Whether NumPy's checksum is comparable (deterministic inputs).
    pub deterministic: bool,
    /// Whether checksums must agree exactly.
    pub exact: bool,
    /// The implementations, eager first.
    pub rows: Vec<Row>,
}

impl Group {
    fn find(&self, kind: Kind) -> Option<&Row> {
        self.rows.iter().find(|r| r.kind == kind && r.error.is_none() && r.median.is_some())
    }

    /// Fills in the speedups, the ratios to hand, and the checksum verdicts. The reference is
    /// the eager row; without one, the first VM stack that ran (with a note saying so).
    /// With `repetitions_checked`, the repetitions of each implementation must also agree with
    /// each other.
    pub fn analyze(&mut self, tol: Tolerance, repetitions_checked: bool) {
        let numpy = self.find(Kind::Numpy).and_then(|r| r.median);
        let eager = self.find(Kind::Eager).and_then(|r| r.median);
        let hand = self.find(Kind::Hand).and_then(|r| r.median);
        let numpy_checksum = self.find(Kind::Numpy).and_then(|r| r.checksum);
        let reference = self
            .find(Kind::Eager)
            .or_else(|| self.find(Kind::Stack))
            .map(|r| (r.implementation.clone(), r.kind, r.checksum));
        let tol = if self.exact { Tolerance::EXACT } else { tol };
        let deterministic = self.deterministic;
        for row in &mut self.rows {
            if row.error.is_some() {
                continue;
            }
            let Some(m) = row.median else { continue };
            let ratio = |base: Option<f64>| base.filter(|b| *b > 0.0 && m > 0.0).map(|b| b / m);
            row.speedup_vs_numpy = ratio(numpy).filter(|_| row.kind != Kind::Numpy);
            row.speedup_vs_eager = ratio(eager).filter(|_| row.kind != Kind::Eager);
            row.ratio_to_hand = hand.filter(|h| *h > 0.0 && row.kind != Kind::Hand).map(|h| m / h);
            row.check = match (&reference, row.checksum) {
                (_, None) => Comparison::skipped("no checksum"),
                (None, _) => Comparison::skipped("no reference: neither eager nor any stack ran"),
                (Some((name, _, _)), _) if *name == row.implementation => match row.kind {
                    Kind::Eager => Comparison::reference(),
                    _ => Comparison { note: Some("reference (eager did not run)".into()), ..Comparison::reference() },
                },
                (Some((_, _, None)), _) => Comparison::skipped("the reference has no checksum"),
                (Some(_), _) if row.kind == Kind::Numpy && !deterministic => {
                    Comparison::skipped("NumPy draws its own random numbers")
                }
                (Some(_), _) if row.kind == Kind::Python && !deterministic => {
                    Comparison::skipped("the NumPy script draws its own random numbers")
                }
                (Some(_), Some(c)) if row.kind == Kind::Peer && !deterministic => match numpy_checksum {
                    Some(n) if row.numpy_inputs => {
                        Comparison { note: Some("vs NumPy's".into()), ..check::compare(n, c, tol) }
                    }
                    Some(_) => Comparison::skipped("the peer draws its own random numbers"),
                    None => Comparison::skipped("NumPy's random inputs, and NumPy did not run"),
                },
                (Some((_, _, Some(r))), Some(c)) => check::compare(*r, c, tol),
            };
            if repetitions_checked
                && row.check.verdict != Verdict::Differs
                && let Err(e) = check::repetitions_agree(&row.checksums, tol)
            {
                row.check = Comparison { verdict: Verdict::Differs, relative_error: None, note: Some(e) };
            }
        }
    }
}

/// Facts about the run, for the JSON and the table's header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Meta {
    /// `vm-bench`'s version.
    pub version: String,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    /// The element type.
    pub precision: Precision,
    /// Untimed warm-up repetitions per implementation.
    pub warmup: usize,
    /// Timed repetitions per implementation.
    pub reps: usize,
    /// `--threads`, when given.
    pub threads: Option<usize>,
    /// Cores the machine reports.
    pub cores: usize,
    /// The checksum tolerance of inexact benchmarks.
    pub tolerance: Tolerance,
    /// NumPy's version, when the baseline ran.
    pub numpy: Option<String>,
    /// The `libvm.so` the C program used.
    pub libvm: Option<String>,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Facts about the run.
    pub meta: Meta,
    /// The measurements.
    pub groups: Vec<Group>,
    /// Things worth knowing (a baseline that could not run, and why).
    pub notes: Vec<String>,
}

impl Report {
    /// Every failure: checksums that differ and implementations that failed to run.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for g in &self.groups {
            for r in &g.rows {
                let at = format!("{} {} on {}", g.benchmark, g.size, r.implementation);
                if let Some(e) = &r.error {
                    out.push(format!("{at}: {e}"));
                } else if r.check.failed() {
                    out.push(format!("{at}: {}", r.check.note.clone().unwrap_or_else(|| "checksum differs".into())));
                }
            }
        }
        out
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn m(seconds: f64, checksum: f64) -> Measured {
        Measured { seconds, checksum }
    }

    pub(crate) fn sample_group() -> Group {
        Group {
            benchmark: "heat_equation".into(),
            size: "20*30*5".into(),
            deterministic: true,
            exact: false,
            rows: vec![
                Row::measured("eager", Kind::Eager, &[m(4.0, 10.0), m(4.0, 10.0), m(6.0, 10.0)]),
                Row::measured("cpu", Kind::Stack, &[m(1.0, 10.0 + 1e-12), m(0.5, 10.0)]),
                Row::measured("hand", Kind::Hand, &[m(0.5, 10.0)]),
                Row::measured("numpy", Kind::Numpy, &[m(2.0, 10.0)]),
                Row::measured("broken", Kind::Stack, &[m(1.0, 11.0)]),
                Row::failed("c:cpu", Kind::C, "no C baseline: cc missing"),
                Row::measured("hand-native", Kind::HandNative, &[m(0.25, 10.0 + 2e-12)]),
            ],
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn analysis_fills_ratios_and_verdicts() {
        let mut g = sample_group();
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        let row = |name: &str| g.rows.iter().find(|r| r.implementation == name).unwrap().clone();
        let eager = row("eager");
        assert_eq!(eager.median, Some(4.0));
        assert_eq!(eager.check.verdict, Verdict::Reference);
        assert_eq!(eager.speedup_vs_eager, None);
        assert_eq!(eager.speedup_vs_numpy, Some(0.5));
        let cpu = row("cpu");
        assert_eq!(cpu.median, Some(0.75));
        assert_eq!(cpu.min, Some(0.5));
        assert_eq!(cpu.speedup_vs_eager, Some(4.0 / 0.75));
        assert_eq!(cpu.ratio_to_hand, Some(1.5));
        assert_eq!(cpu.check.verdict, Verdict::Agrees);
        assert_eq!(row("numpy").check.verdict, Verdict::Agrees, "deterministic: numpy is compared");
        assert_eq!(row("broken").check.verdict, Verdict::Differs);
        let hand = row("hand");
        assert_eq!(hand.ratio_to_hand, None);
        assert_eq!(hand.check.verdict, Verdict::Agrees);
        // hand-native is compared with the reference like hand, and its ratio is over hand's
        // (the other rows' ratios stay over hand's, not hand-native's).
        let native = row("hand-native");
        assert_eq!(native.check.verdict, Verdict::Agrees);
        assert_eq!(native.ratio_to_hand, Some(0.5));
        assert_eq!(native.speedup_vs_eager, Some(16.0));
        let report = Report { meta: sample_meta(), groups: vec![g], notes: vec![] };
        let failures = report.failures();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].contains("broken") && failures[0].contains("differs"));
        assert!(failures[1].contains("c:cpu") && failures[1].contains("cc missing"));
    }

    #[test]
    fn without_hand_no_row_has_a_ratio_to_hand() {
        let mut g = sample_group();
        g.rows.retain(|r| r.kind != Kind::Hand);
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        assert!(g.rows.iter().all(|r| r.ratio_to_hand.is_none()), "hand-native is not hand");
    }

    #[test]
    fn numpy_is_not_compared_on_random_inputs_and_counts_are_exact() {
        let mut g = sample_group();
        g.deterministic = false;
        g.exact = true;
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        assert_eq!(g.rows[3].check.verdict, Verdict::NotCompared);
        assert_eq!(g.rows[1].check.verdict, Verdict::Differs, "exact: 1e-12 off is a mismatch");
    }

    #[test]
    fn peers_are_compared_with_numpy_on_numpys_random_inputs() {
        let mut g = sample_group();
        g.deterministic = false;
        g.rows[3] = Row::measured("numpy", Kind::Numpy, &[m(2.0, 7.0)]);
        let peer = |name: &str, checksum: f64, numpy_inputs: bool| Row {
            numpy_inputs,
            ..Row::measured(name, Kind::Peer, &[m(0.4, checksum)])
        };
        g.rows.extend([peer("numba", 7.0, true), peer("numexpr", 7.5, true), peer("jax", 3.0, false)]);
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        let verdict = |name: &str| g.rows.iter().find(|r| r.implementation == name).unwrap().check.verdict;
        assert_eq!(verdict("numba"), Verdict::Agrees);
        assert_eq!(verdict("numexpr"), Verdict::Differs);
        assert_eq!(verdict("jax"), Verdict::NotCompared, "its own random numbers");
        // On deterministic inputs a peer is compared with the VM's reference like any row.
        let mut g = sample_group();
        g.rows.push(peer("numba", 11.0, true));
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        assert_eq!(g.rows.last().unwrap().check.verdict, Verdict::Differs);
    }

    #[test]
    fn repetitions_that_disagree_are_a_failure() {
        let mut g = sample_group();
        g.rows[1] = Row::measured("cpu", Kind::Stack, &[m(1.0, 10.0), m(1.0, 12.0)]);
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        assert_eq!(g.rows[1].check.verdict, Verdict::Differs);
        assert!(g.rows[1].check.note.as_ref().unwrap().contains("repetition 2"));
    }

    #[test]
    fn without_eager_the_first_stack_is_the_reference() {
        let mut g = sample_group();
        g.rows.remove(0);
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        assert_eq!(g.rows[0].check.verdict, Verdict::Reference);
        assert!(g.rows[0].check.note.as_ref().unwrap().contains("eager did not run"));
        assert_eq!(g.rows[0].speedup_vs_eager, None);
    }

    pub(crate) fn sample_meta() -> Meta {
        Meta {
            version: "0.1.0".into(),
            started_unix: 0,
            precision: Precision::F64,
            warmup: 1,
            reps: 3,
            threads: None,
            cores: 2,
            tolerance: Tolerance::for_precision(Precision::F64),
            numpy: Some("2.4.6".into()),
            libvm: None,
        }
    }

    #[test]
    fn json_has_every_field_and_parses_back() {
        let mut g = sample_group();
        g.analyze(Tolerance::for_precision(Precision::F64), true);
        let report = Report { meta: sample_meta(), groups: vec![g], notes: vec!["a note".into()] };
        let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(v["meta"]["precision"], "f64");
        assert_eq!(v["groups"][0]["benchmark"], "heat_equation");
        let cpu = &v["groups"][0]["rows"][1];
        assert_eq!(cpu["implementation"], "cpu");
        assert_eq!(cpu["kind"], "stack");
        assert_eq!(cpu["median"], 0.75);
        assert_eq!(cpu["check"]["verdict"], "agrees");
        assert_eq!(cpu["ratio_to_hand"], 1.5);
        assert!(cpu["engine"]["compile_ms"].is_null());
        assert_eq!(v["groups"][0]["rows"][5]["error"], "no C baseline: cc missing");
        let native = &v["groups"][0]["rows"][6];
        assert_eq!(native["implementation"], "hand-native");
        assert_eq!(native["kind"], "hand_native");
        assert_eq!(native["ratio_to_hand"], 0.5);
        assert_eq!(native["check"]["verdict"], "agrees");
        assert_eq!(v["notes"][0], "a note");
    }
}
