//! montecarlo_pi: `4 * count(sqrt(x*x + y*y) <= 1) / n` with `x`, `y` uniform in `[0, 1)`
//! from the VM's RANDOM, new numbers every iteration. Checksum: the mean estimate (counts are
//! exact, so the checksums of all stacks must be equal).
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its NumPy twin is
//! `benches/numpy/montecarlo_pi.py`.

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "montecarlo_pi",
    summary: "pi by Monte Carlo: 4*count(sqrt(x*x+y*y) <= 1)/n, x, y from the VM's RANDOM",
    dims: &["n", "iterations"],
    default: &[&[10_000_000, 10]],
    paper: Some(&[&[100_000_000, 10]]),
    quick: &[&[1_000_000, 5]],
    tiny: &[&[1000, 3]],
    min_dims: &[1, 1],
    deterministic: false,
    exact: true,
    numpy_script: "montecarlo_pi.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The seed of the VM's random stream.
pub const SEED: u64 = 0x314;

/// The first counters of `x` and `y` in iteration `i` of `n` samples.
pub fn counters(i: usize, n: usize) -> (u64, u64) {
    let n = n as u64;
    (2 * i as u64 * n, (2 * i as u64 + 1) * n)
}

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
