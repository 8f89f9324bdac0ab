//! # vm-bench: the benchmark harness of the vector VM
//!
//! Runs the suite of `BENCHMARKS.md` ([`benchmarks`], a folder per benchmark) on any number of
//! stacks, named from the config or given as config files, next to three baselines measured in
//! the same run: NumPy (a script per benchmark under `benches/numpy/`, [`baseline::numpy`]),
//! `hand` (fused Rust loops, each benchmark's `hand.rs` on [`benchmarks::hand_kit`];
//! `hand-native`: the same loops compiled for the machine's widest vectors, chosen at run time)
//! and `eager` (the `interp` stack). The C users' path is measured by
//! `benches/c/heat_equation.c` against `libvm.so` ([`baseline::c`]).
//!
//! A run reports, per benchmark, size and implementation, the median and minimum of the timed
//! repetitions, speedups over NumPy and eager, the ratio to hand, JIT statistics when the
//! engine reports them, and whether the checksums agree ([`check`]): as a terminal table, JSON
//! ([`report`]) and an SVG bar chart ([`plot`]), with where a repetition's time goes on each
//! stack ([`split`]). A checksum that disagrees with `interp` makes
//! the exit status nonzero.

pub mod baseline;
pub mod benchmarks;
pub mod check;
pub mod cli;
pub mod plot;
pub mod report;
pub mod runner;
pub mod size;
pub mod split;
pub mod stacks;

use serde::Serialize;

/// One timed repetition: seconds of the timed region, and the checksum it computed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    /// Wall-clock seconds of the timed region.
    pub seconds: f64,
    /// The benchmark's checksum.
    pub checksum: f64,
}

/// The element type a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 64-bit floats (the default).
    F64,
    /// 32-bit floats.
    F32,
}

impl Precision {
    /// The name as on the command line and in NumPy's arguments (`f64`, `f32`).
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }
}
