//! Runs a plan: every benchmark at every size on every implementation (eager first, then the
//! stacks, hand, hand-native, NumPy and the C program), each with its warm-up and timed
//! repetitions, with a live progress line on stderr; then analyses the groups into a [`Report`].

use crate::baseline::peers::{self, Peer};
use crate::baseline::{c, numpy, python};
use crate::benchmarks::BenchDef;
use crate::benchmarks::hand_kit;
use crate::check::Tolerance;
use crate::report::{Group, Kind, Meta, Report, Row, table::format_seconds};
use crate::size::Size;
use crate::split::TimeSplit;
use crate::stacks::{StackSpec, engine_stats};
use crate::{Measured, Precision};
use std::io::{IsTerminal, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The benchmarks, each with its sizes.
    pub benches: Vec<(BenchDef, Vec<Size>)>,
    /// The stacks under test (not including eager).
    pub stacks: Vec<StackSpec>,
    /// The element type.
    pub precision: Precision,
    /// Untimed repetitions first.
    pub warmup: usize,
    /// Timed repetitions.
    pub reps: usize,
    /// `--threads`: for the stacks (their `threads` setting) and hand; `None`: the stacks'
    /// config, and one hand thread per core.
    pub threads: Option<usize>,
    /// Run the eager baseline (`interp`).
    pub eager: bool,
    /// Run the hand baseline.
    pub hand: bool,
    /// Run the hand baseline compiled for the machine's widest vectors (`hand-native`).
    pub hand_native: bool,
    /// Run the NumPy baseline (when NumPy is installed).
    pub numpy: bool,
    /// Run the NumPy scripts under the Python frontend (`python -m vmnp`) on each stack of
    /// [`Plan::frontend_stacks`], when vmnp is installed.
    pub python: bool,
    /// Run the peers (numba, JAX, numexpr) that are installed.
    pub peers: bool,
    /// Run the C and C++ programs of the benchmarks that have them (`benches/c`), when the
    /// compilers and libvm.so are found.
    pub c: bool,
    /// The float tolerance of checksums.
    pub tolerance: Tolerance,
}

impl Plan {
    /// Names the stacks chosen by the config (no stack name given) after the stack the config
    /// picks, e.g. `cpu` or `fast:cpu`; then drops `interp` of the config in effect when the
    /// eager baseline runs, since that is the same stack.
    pub fn resolve_default_stacks(&mut self) {
        for spec in self.stacks.iter_mut().filter(|s| s.stack.is_none() && !s.eager) {
            if let Ok((p, _)) = spec.plan(None) {
                spec.label = match &spec.config {
                    None => p.stack.clone(),
                    Some(_) => format!("{}:{}", spec.label, p.stack),
                };
            }
        }
        if self.eager {
            self.stacks.retain(|s| !(s.config.is_none() && s.label == "interp"));
        }
    }

    /// The stacks the frontends run on (the C program, the Python scripts): every stack
    /// measured, or `interp` when only the eager baseline is.
    pub fn frontend_stacks(&self) -> Vec<StackSpec> {
        if self.stacks.is_empty() && self.eager {
            vec![StackSpec::new(None, Some("interp"))]
        } else {
            self.stacks.clone()
        }
    }
}

/// The live progress line (on a terminal) or one line per finished measurement (otherwise).
pub struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
    quiet: bool,
}

impl Progress {
    /// Progress over `total` measurements; `quiet` prints nothing.
    pub fn new(total: usize, quiet: bool) -> Progress {
        Progress { total, done: 0, start: Instant::now(), tty: std::io::stderr().is_terminal(), quiet }
    }

    fn prefix(&self) -> String {
        let s = self.start.elapsed().as_secs();
        format!("[{}/{} {}:{:02}]", self.done + 1, self.total, s / 60, s % 60)
    }

    /// Says what runs now (terminal only: rewritten in place).
    pub fn at(&self, what: &str) {
        if self.tty && !self.quiet {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{} {what}", self.prefix());
            let _ = err.flush();
        }
    }

    /// One planned measurement will not be made.
    pub fn skip(&mut self) {
        self.done += 1;
    }

    /// One measurement finished.
    pub fn finished(&mut self, what: &str, row: &Row) {
        if !self.quiet {
            let result = match (&row.error, row.median) {
                (Some(e), _) => format!("ERROR: {}", e.lines().next().unwrap_or("")),
                (None, Some(m)) => format!("median {}", format_seconds(m)),
                (None, None) => "no result".into(),
            };
            let mut err = std::io::stderr().lock();
            if self.tty {
                let _ = write!(err, "\r\x1b[2K");
            }
            let _ = writeln!(err, "{} {what}: {result}", self.prefix());
        }
        self.done += 1;
    }
}

/// Runs `f`, turning a panic into an error message.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(format!("panicked: {msg}"))
        }
    }
}

/// Warm-up then timed repetitions of `one`, reporting each on the progress line.
fn repeat(
    plan: &Plan,
    progress: &Progress,
    what: &str,
    mut one: impl FnMut() -> Result<Measured, String>,
) -> Result<Vec<Measured>, String> {
    let mut timed = Vec::with_capacity(plan.reps);
    for i in 0..plan.warmup + plan.reps {
        let phase = if i < plan.warmup {
            format!("warm-up {}/{}", i + 1, plan.warmup)
        } else {
            format!("rep {}/{}", i + 1 - plan.warmup, plan.reps)
        };
        progress.at(&format!("{what} {phase}"));
        let m = one()?;
        if i >= plan.warmup {
            timed.push(m);
        }
    }
    Ok(timed)
}

/// One VM stack on one benchmark at one size: a fresh VM, its repetitions, its statistics.
fn run_stack(plan: &Plan, progress: &Progress, def: &BenchDef, size: &Size, spec: &StackSpec, what: &str) -> Row {
    let kind = if spec.eager { Kind::Eager } else { Kind::Stack };
    let result = guarded(|| {
        let (vm, _plan) = spec.build(plan.threads).map_err(|e| format!("cannot build the stack: {e}"))?;
        let runs =
            repeat(plan, progress, what, || (def.vm)(&vm, size.dims(), plan.precision).map_err(|e| e.to_string()))?;
        let stats = engine_stats(&vm.runtime().describe());
        let instructions = vm.stats().instructions;
        // (The interpreter, eager's engine, records no spans of its own.)
        let split = (!spec.eager).then(|| {
            progress.at(&format!("{what} traced rep"));
            traced_split(|| (def.vm)(&vm, size.dims(), plan.precision).map_err(|e| e.to_string()))
        });
        vm.shutdown().map_err(|e| format!("shutdown: {e}"))?;
        Ok((runs, stats, instructions, split))
    });
    match result {
        Ok((runs, stats, instructions, split)) => {
            let mut row = Row::measured(&spec.label, kind, &runs);
            row.engine = stats;
            row.instructions = Some(instructions);
            row.split = split.flatten();
            row
        }
        Err(e) => Row::failed(&spec.label, kind, e),
    }
}

/// One more repetition with the trace recording, cut into a [`TimeSplit`]; `None` when it fails.
/// (A recording on already, `VM_PROFILE=trace.json`, goes on undisturbed.)
fn traced_split(one: impl FnOnce() -> Result<Measured, String>) -> Option<TimeSplit> {
    let ours = !vm_runtime::trace::enabled();
    if ours {
        vm_runtime::trace::start();
    }
    let ran = one();
    let spans = if ours { vm_runtime::trace::stop().0 } else { vm_runtime::trace::snapshot() };
    ran.ok()?;
    TimeSplit::of(&spans)
}

/// Counts the measurements `plan` will make (for the progress line), with `peers` installed.
pub fn count(plan: &Plan, c_programs: &[c::CProgram], python_ready: bool, peers: usize) -> usize {
    plan.benches
        .iter()
        .map(|(def, sizes)| {
            let c_rows = c_programs.iter().filter(|p| p.benchmark == def.name).count() * plan.frontend_stacks().len();
            sizes.len()
                * (plan.stacks.len()
                    + usize::from(plan.eager)
                    + usize::from(plan.hand)
                    + usize::from(plan.hand_native)
                    + usize::from(plan.numpy)
                    + peers
                    + if python_ready { plan.frontend_stacks().len() } else { 0 }
                    + c_rows)
        })
        .sum()
}

/// Runs the whole plan.
pub fn run(plan: &Plan, quiet: bool) -> Report {
    let started_unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut notes = Vec::new();
    let mut probe = |wanted: bool, available: fn() -> Result<String, String>| {
        wanted.then(available).and_then(|r| r.map_err(|e| notes.push(e)).ok())
    };
    let numpy_version = probe(plan.numpy, numpy::available);
    let vmnp_version = probe(plan.python, python::available);
    let peer_versions: Vec<(Peer, String)> = Peer::ALL
        .into_iter()
        .filter(|_| plan.peers)
        .filter_map(|p| match p.available() {
            Ok(v) => Some((p, v)),
            Err(e) => {
                notes.push(e);
                None
            }
        })
        .collect();
    let wants_c = plan.c && !plan.frontend_stacks().is_empty();
    let mut c_programs = Vec::new();
    for (def, _) in plan.benches.iter().filter(|_| wants_c) {
        for lang in [c::Lang::C, c::Lang::Cpp].into_iter().filter(|l| l.source(def.name).is_some()) {
            match c::build(def.name, lang) {
                Ok(p) => c_programs.push(p),
                Err(e) => notes.push(e),
            }
        }
    }
    let mut progress = Progress::new(count(plan, &c_programs, vmnp_version.is_some(), peer_versions.len()), quiet);
    let hand_threads = hand_kit::thread_count(plan.threads.unwrap_or(0));
    let mut groups = Vec::new();
    for (def, sizes) in &plan.benches {
        for size in sizes {
            let mut rows = Vec::new();
            let label = |imp: &str| format!("{} {size} {imp}", def.name);
            let eager = plan.eager.then(StackSpec::eager);
            for spec in eager.iter().chain(&plan.stacks) {
                let what = label(&spec.label);
                let row = run_stack(plan, &progress, def, size, spec, &what);
                progress.finished(&what, &row);
                rows.push(row);
            }
            let native = hand_kit::native();
            let hand_rows: [(bool, &str, Kind, &dyn Fn() -> Measured); 2] = [
                (plan.hand, "hand", Kind::Hand, &|| (def.hand)(size.dims(), plan.precision, hand_threads)),
                (plan.hand_native, "hand-native", Kind::HandNative, &|| {
                    (def.hand_native)(size.dims(), plan.precision, hand_threads, native)
                }),
            ];
            for (wanted, name, kind, one) in hand_rows {
                if !wanted {
                    continue;
                }
                let what = label(name);
                let runs = guarded(|| repeat(plan, &progress, &what, || Ok(one())));
                let row = match runs {
                    Ok(r) => Row::measured(name, kind, &r),
                    Err(e) => Row::failed(name, kind, e),
                };
                progress.finished(&what, &row);
                rows.push(row);
            }
            if plan.numpy && numpy_version.is_some() {
                let what = label("numpy");
                progress.at(&format!("{what} ({} + {} repetitions in Python)", plan.warmup, plan.reps));
                let row = match numpy::run(def.numpy_script, size, plan.precision, plan.warmup, plan.reps) {
                    Ok(r) => Row::measured("numpy", Kind::Numpy, &r),
                    Err(e) => Row::failed("numpy", Kind::Numpy, e),
                };
                progress.finished(&what, &row);
                rows.push(row);
            }
            for (peer, _) in &peer_versions {
                let what = label(peer.name());
                progress.at(&format!("{what} ({} + {} repetitions in Python)", plan.warmup, plan.reps));
                let row = match peers::run(*peer, def.name, size, plan.precision, plan.warmup, plan.reps) {
                    Ok(Some(r)) => {
                        Row { numpy_inputs: r.numpy_inputs, ..Row::measured(peer.name(), Kind::Peer, &r.runs) }
                    }
                    Ok(None) => {
                        // Not a science benchmark the peer is written for (overhead): no row.
                        progress.skip();
                        continue;
                    }
                    Err(e) => Row::failed(peer.name(), Kind::Peer, e),
                };
                progress.finished(&what, &row);
                rows.push(row);
            }
            if vmnp_version.is_some() {
                for spec in &plan.frontend_stacks() {
                    let name = format!("python:{}", spec.label);
                    let what = label(&name);
                    progress.at(&format!("{what} ({} + {} repetitions under python -m vmnp)", plan.warmup, plan.reps));
                    let row = match python::run(
                        def.numpy_script,
                        size,
                        plan.precision,
                        plan.warmup,
                        plan.reps,
                        spec,
                        plan.threads,
                    ) {
                        Ok(r) => Row::measured(&name, Kind::Python, &r),
                        Err(e) => Row::failed(&name, Kind::Python, e),
                    };
                    progress.finished(&what, &row);
                    rows.push(row);
                }
            }
            for prog in c_programs.iter().filter(|p| p.benchmark == def.name) {
                for spec in &plan.frontend_stacks() {
                    let name = format!("{}:{}", prog.lang.name(), spec.label);
                    let what = label(&name);
                    progress.at(&format!("{what} ({} + {} repetitions)", plan.warmup, plan.reps));
                    let row = match c::run(prog, size, plan.precision, plan.warmup, plan.reps, spec, plan.threads) {
                        Ok(r) => Row::measured(&name, Kind::C, &r),
                        Err(e) => Row::failed(&name, Kind::C, e),
                    };
                    progress.finished(&what, &row);
                    rows.push(row);
                }
            }
            let mut group = Group {
                benchmark: def.name.to_string(),
                size: size.to_string(),
                deterministic: def.deterministic,
                exact: def.exact,
                rows,
            };
            group.analyze(plan.tolerance, true);
            groups.push(group);
        }
    }
    if let Some(v) = &numpy_version {
        notes.push(format!(
            "NumPy {v}: checksums compared for deterministic benchmarks only (NumPy draws its own random numbers)"
        ));
    }
    if let Some(v) = &vmnp_version {
        notes.push(format!(
            "python:<stack>: the NumPy scripts unchanged under python -m vmnp {v} (checksums compared for deterministic benchmarks only)"
        ));
    }
    for (peer, v) in &peer_versions {
        notes.push(format!(
            "{} {v}: benches/peers/peer_{}.py, on the NumPy baseline's inputs (checksums compared with NumPy's where NumPy's inputs are random); compile time excluded",
            peer.name(),
            peer.name()
        ));
    }
    if plan.hand {
        notes.push(format!(
            "hand: fused Rust loops on {hand_threads} thread(s), compiled for this binary's target features (SSE2 unless built with -C target-cpu=native)"
        ));
    }
    if plan.hand_native {
        notes.push(format!(
            "hand-native: the same loops compiled for this machine's widest vectors, chosen at run time: {} (x hand: its median over hand's)",
            hand_kit::native_target()
        ));
    }
    let meta = Meta {
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix,
        precision: plan.precision,
        warmup: plan.warmup,
        reps: plan.reps,
        threads: plan.threads,
        cores: hand_kit::thread_count(0),
        tolerance: plan.tolerance,
        numpy: numpy_version,
        libvm: c_programs.first().map(|p| p.libvm.display().to_string()),
    };
    Report { meta, groups, notes }
}
