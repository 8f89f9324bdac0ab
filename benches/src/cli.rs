//! The command line: which benchmarks, sizes, stacks and baselines, how many repetitions; what
//! to write. `vm-bench --help` says it all; `vm-bench --list` shows benchmarks, sizes and stacks.

use crate::check::Tolerance;
use crate::report::table;
use crate::runner::{self, Plan};
use crate::size::{SizeChoice, SizeName};
use crate::stacks::{self, StackSpec};
use crate::{Precision, benchmarks, plot};
use clap::Parser;
use std::path::PathBuf;

/// Runs the benchmark suite of benches/BENCHMARKS.md on VM stacks and compares them with NumPy, with
/// hand-written fused Rust loops ("hand"; "hand-native": the same compiled for this machine's
/// widest vectors) and with the eager interpreter ("eager" = the interp stack), all measured in
/// the same run. Exits 1 when a checksum disagrees with interp's or an
/// implementation fails.
#[derive(Debug, Clone, Parser)]
#[command(name = "vm-bench", version)]
pub struct Args {
    /// Benchmarks to run (comma-separated or repeated); default: all. See --list.
    #[arg(short, long = "bench", value_delimiter = ',', value_name = "NAME")]
    pub benches: Vec<String>,

    /// Stacks to measure, by name in the config in effect (or in each --config file); default:
    /// the config's own choice (VM_STACK, its `stack` key).
    #[arg(short, long = "stack", value_delimiter = ',', value_name = "NAME")]
    pub stacks: Vec<String>,

    /// A config file whose stacks to measure; give it several times to compare config files.
    #[arg(short, long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,

    /// Size: default, paper (the seed's), quick, tiny, or explicit like 2000*2000*100 (several
    /// separated by commas; the form is per benchmark, see --list).
    #[arg(long, default_value = "default", value_name = "SIZE")]
    pub size: SizeChoice,

    /// Timed repetitions per implementation.
    #[arg(short, long, default_value_t = 3)]
    pub reps: usize,

    /// Untimed warm-up repetitions per implementation (the JIT compiles during these).
    #[arg(short, long, default_value_t = 1)]
    pub warmup: usize,

    /// Threads for the stacks (their `threads` setting) and for hand; default: the config's,
    /// and one hand thread per core.
    #[arg(short, long)]
    pub threads: Option<usize>,

    /// Element type.
    #[arg(long, value_enum, default_value = "f64")]
    pub dtype: Precision,

    /// Quick mode: --size quick, 1 warm-up, 3 repetitions (what the README's main job runs).
    #[arg(long)]
    pub quick: bool,

    /// Skip the eager baseline (interp). The first stack becomes the checksum reference.
    #[arg(long)]
    pub no_eager: bool,

    /// Skip the hand-written Rust baselines (hand and hand-native).
    #[arg(long)]
    pub no_hand: bool,

    /// Skip hand-native (the hand loops compiled for this machine's widest vectors) only.
    #[arg(long)]
    pub no_hand_native: bool,

    /// Skip the NumPy baseline.
    #[arg(long)]
    pub no_numpy: bool,

    /// Skip the NumPy scripts under the Python frontend (`python -m vmnp`).
    #[arg(long)]
    pub no_python: bool,

    /// Skip the peers (numba, JAX, numexpr: benches/peers).
    #[arg(long)]
    pub no_peers: bool,

    /// Skip the C and C++ programs (benches/c, against libvm.so).
    #[arg(long)]
    pub no_c: bool,

    /// Relative checksum tolerance for float results (default 1e-9 for f64, 1e-4 for f32).
    #[arg(long, value_name = "X")]
    pub rtol: Option<f64>,

    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Draw the speedups as an SVG bar chart to FILE, and below it where one more traced
    /// repetition's time went on each stack (recording, flush, compile, kernels; also in the
    /// JSON as each row's `split`).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// List the benchmarks with their sizes, and the stacks that can be built; run nothing.
    #[arg(long)]
    pub list: bool,

    /// No progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

impl Args {
    /// The plan these arguments describe, or a usage error.
    pub fn plan(&self) -> Result<Plan, String> {
        let size = if self.quick { SizeChoice::Named(SizeName::Quick) } else { self.size.clone() };
        let (warmup, reps) = if self.quick { (1, 3) } else { (self.warmup, self.reps) };
        if reps == 0 {
            return Err("--reps must be at least 1".into());
        }
        let defs = if self.benches.is_empty() {
            benchmarks::all()
        } else {
            self.benches
                .iter()
                .map(|n| {
                    benchmarks::find(n).ok_or_else(|| {
                        let known: Vec<&str> = benchmarks::all().iter().map(|b| b.name).collect();
                        format!("no benchmark `{n}`; known: {}", known.join(", "))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let mut benches = Vec::new();
        for def in defs {
            let sizes = match &size {
                SizeChoice::Named(n) => def.sizes(*n),
                SizeChoice::Explicit(list) => list.clone(),
            };
            for s in &sizes {
                def.check_size(s)?;
            }
            benches.push((def, sizes));
        }
        Ok(Plan {
            benches,
            stacks: self.stack_specs(),
            precision: self.dtype,
            warmup,
            reps,
            threads: self.threads,
            eager: !self.no_eager,
            hand: !self.no_hand,
            hand_native: !self.no_hand && !self.no_hand_native,
            numpy: !self.no_numpy,
            python: !self.no_python,
            peers: !self.no_peers,
            c: !self.no_c,
            tolerance: self.rtol.map_or(Tolerance::for_precision(self.dtype), |r| Tolerance { relative: r }),
        })
    }

    /// The stacks to measure. `interp` of the config in effect is the eager baseline already,
    /// so it is not measured twice (unless eager is off).
    pub fn stack_specs(&self) -> Vec<StackSpec> {
        let names: Vec<Option<&str>> =
            if self.stacks.is_empty() { vec![None] } else { self.stacks.iter().map(|s| Some(s.as_str())).collect() };
        let mut specs = Vec::new();
        if self.configs.is_empty() {
            for n in &names {
                if *n == Some("interp") && !self.no_eager {
                    continue;
                }
                specs.push(StackSpec::new(None, *n));
            }
        } else {
            for c in &self.configs {
                for n in &names {
                    specs.push(StackSpec::new(Some(c), *n));
                }
            }
        }
        specs
    }
}

/// What `--list` prints.
pub fn list(args: &Args) -> String {
    let mut out = String::from("benchmarks (size form: default | paper | quick | tiny):\n");
    for b in benchmarks::all() {
        let fmt = |n: SizeName| b.sizes(n).iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",");
        out.push_str(&format!(
            "  {:14} {}\n  {:14} {}: {} | {} | {} | {}\n",
            b.name,
            b.summary,
            "",
            b.size_form(),
            fmt(SizeName::Default),
            fmt(SizeName::Paper),
            fmt(SizeName::Quick),
            fmt(SizeName::Tiny)
        ));
    }
    let configs: Vec<Option<PathBuf>> =
        if args.configs.is_empty() { vec![None] } else { args.configs.iter().cloned().map(Some).collect() };
    for c in configs {
        let which = c.as_ref().map_or("the config in effect".to_string(), |p| p.display().to_string());
        match stacks::stack_names(c.as_deref()) {
            Ok(names) => {
                out.push_str(&format!("stacks of {which}:\n"));
                for n in names {
                    match stacks::unavailable(c.as_deref(), &n) {
                        None => out.push_str(&format!("  {n:14} available\n")),
                        Some(why) => out.push_str(&format!("  {n:14} unavailable: {why}\n")),
                    }
                }
            }
            Err(e) => out.push_str(&format!("stacks of {which}: {e}\n")),
        }
    }
    out
}

/// Runs the command line; returns the process exit status.
pub fn main(args: Args) -> i32 {
    if args.list {
        print!("{}", list(&args));
        return 0;
    }
    let mut plan = match args.plan() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("vm-bench: {e}");
            return 2;
        }
    };
    plan.resolve_default_stacks();
    let report = runner::run(&plan, args.quiet);
    print!("{}", table::render(&report));
    let mut status = if report.failures().is_empty() { 0 } else { 1 };
    if let Some(path) = &args.json
        && let Err(e) = std::fs::write(path, report.to_json())
    {
        eprintln!("vm-bench: cannot write {}: {e}", path.display());
        status = status.max(1);
    }
    if let Some(path) = &args.plot
        && let Err(e) = std::fs::write(path, plot::render(&report))
    {
        eprintln!("vm-bench: cannot write {}: {e}", path.display());
        status = status.max(1);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Args {
        Args::parse_from(std::iter::once("vm-bench").chain(list.iter().copied()))
    }

    #[test]
    fn defaults_run_everything_on_the_default_stack() {
        let p = args(&[]).plan().unwrap();
        assert_eq!(p.benches.len(), benchmarks::all().len());
        assert_eq!(p.stacks, vec![StackSpec::new(None, None)]);
        assert_eq!((p.warmup, p.reps), (1, 3));
        assert!(p.eager && p.hand && p.hand_native && p.numpy && p.python && p.c);
        assert_eq!(p.tolerance, Tolerance::for_precision(Precision::F64));
    }

    #[test]
    fn no_hand_skips_both_hand_rows_and_the_count_follows() {
        let count = |list: &[&str]| {
            let mut all = vec!["-b", "knn", "-s", "cpu", "--no-numpy", "--no-python", "--no-peers", "--no-c"];
            all.extend_from_slice(list);
            let p = args(&all).plan().unwrap();
            (p.hand, p.hand_native, runner::count(&p, &[], false, 0))
        };
        // One size: eager, cpu, hand, hand-native.
        assert_eq!(count(&[]), (true, true, 4));
        assert_eq!(count(&["--no-hand-native"]), (true, false, 3));
        assert_eq!(count(&["--no-hand"]), (false, false, 2));
        assert_eq!(count(&["--no-hand", "--no-hand-native", "--no-eager"]), (false, false, 1));
    }

    #[test]
    fn quick_mode_and_explicit_choices() {
        let p = args(&["--quick", "-b", "heat_equation,knn", "-s", "cpu", "-s", "interp", "--dtype", "f32"])
            .plan()
            .unwrap();
        assert_eq!((p.warmup, p.reps), (1, 3));
        assert_eq!(p.benches.iter().map(|(d, _)| d.name).collect::<Vec<_>>(), ["heat_equation", "knn"]);
        assert_eq!(p.benches[0].1, benchmarks::find("heat_equation").unwrap().sizes(SizeName::Quick));
        assert_eq!(p.stacks.len(), 1, "interp is the eager baseline already");
        assert_eq!(p.stacks[0].label, "cpu");
        assert_eq!(p.precision, Precision::F32);
        assert_eq!(p.tolerance.relative, 1e-4);
    }

    #[test]
    fn configs_multiply_with_stacks() {
        let p = args(&["-c", "a.toml", "-c", "b.toml", "-s", "cpu,interp", "--no-eager"]).plan().unwrap();
        let labels: Vec<&str> = p.stacks.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["a:cpu", "a:interp", "b:cpu", "b:interp"]);
        assert!(!p.eager);
    }

    #[test]
    fn usage_errors() {
        assert!(args(&["-b", "nope"]).plan().unwrap_err().contains("known: heat_equation"));
        assert!(args(&["-b", "knn", "--size", "10*10"]).plan().unwrap_err().contains("n*q*d*k"));
        assert!(args(&["--reps", "0"]).plan().is_err());
        assert!(Args::try_parse_from(["vm-bench", "--size", "big"]).is_err());
        assert!(Args::try_parse_from(["vm-bench", "--dtype", "f16"]).is_err());
        let p = args(&["-b", "leibnitz_pi", "--size", "100*2,200*3", "--rtol", "1e-6"]).plan().unwrap();
        assert_eq!(p.benches[0].1.len(), 2);
        assert_eq!(p.tolerance.relative, 1e-6);
    }

    #[test]
    fn list_names_every_benchmark() {
        let text = list(&args(&[]));
        for b in benchmarks::all() {
            assert!(text.contains(b.name));
        }
        assert!(text.contains("stacks of the config in effect"));
    }
}
