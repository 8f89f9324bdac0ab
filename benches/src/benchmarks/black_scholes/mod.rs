//! black_scholes: European call prices with the 5-term polynomial CND, `S` uniform in
//! `[58, 62)` from the VM's RANDOM, `T` advancing by 1/365 per iteration. Checksum: the sum over
//! iterations of the mean price.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its twins are the NumPy
//! script `benches/numpy/black_scholes.py` and `examples/cpp/black_scholes.cpp` (C++ example).

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "black_scholes",
    summary: "European call prices, 5-term polynomial CND, T += 1/365 per iteration",
    dims: &["n", "iterations"],
    default: &[&[2_000_000, 20]],
    paper: None,
    quick: &[&[200_000, 10]],
    tiny: &[&[1000, 3]],
    min_dims: &[1, 1],
    deterministic: false,
    exact: false,
    numpy_script: "black_scholes.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The seed of the VM's random stream for `S` (counters `0..n`).
pub const SEED: u64 = 0xB5;
/// Strike price.
pub const X: f64 = 65.0;
/// Risk-free rate.
pub const R: f64 = 0.08;
/// Volatility.
pub const V: f64 = 0.3;
/// The CND polynomial's coefficients a1..a5.
pub const A: [f64; 5] = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];

/// The host-side constants of iteration `i` (`T = (i+1)/365`): `a = (r + v^2/2) T`,
/// `b = v sqrt(T)` and `X e^(-r T)`, in `f64`.
pub fn iteration_constants(i: usize) -> (f64, f64, f64) {
    let t = (i + 1) as f64 / 365.0;
    ((R + V * V / 2.0) * t, V * t.sqrt(), X * (-R * t).exp())
}

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
