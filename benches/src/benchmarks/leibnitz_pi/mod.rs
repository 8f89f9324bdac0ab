//! leibnitz_pi: `4 * sum(1/(4k+1) - 1/(4k+3))` for `k = range(n)` as floats. Checksum: the mean
//! estimate over the iterations.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its NumPy twin is
//! `benches/numpy/leibnitz_pi.py`.

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "leibnitz_pi",
    summary: "pi by the Leibnitz series: 4*sum(1/(4k+1) - 1/(4k+3))",
    dims: &["n", "iterations"],
    default: &[&[10_000_000, 10]],
    paper: None,
    quick: &[&[1_000_000, 5]],
    tiny: &[&[1000, 3]],
    min_dims: &[1, 1],
    deterministic: true,
    exact: false,
    numpy_script: "leibnitz_pi.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
