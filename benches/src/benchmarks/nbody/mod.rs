//! nbody: O(n^2) Newtonian gravity. Positions uniform in +-lightyear/200, masses
//! `(U + 10) M_sun / 10`, from the VM's RANDOM. Checksum: `sum|x| + sum|y| + sum|z|`.
//!
//! The force is `G m d (1/r)(1/r)(1/r)`, evaluated left to right: `G m d / r^3` without the
//! float32 overflow of `r^3` (about 1e41). The diagonals are set as the seed's program does
//! (`r = 1`, `F = 0`); they hold those values anyway, since `d = 0` there.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its NumPy twin is
//! `benches/numpy/nbody.py`.

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "nbody",
    summary: "O(n^2) Newtonian n-body: broadcast differences, F = G m d / r^3, v += dt sum(F, 0)",
    dims: &["bodies", "steps"],
    default: &[&[2000, 10]],
    paper: Some(&[&[8000, 10]]),
    quick: &[&[500, 5]],
    tiny: &[&[40, 3]],
    min_dims: &[2, 1],
    deterministic: false,
    exact: false,
    numpy_script: "nbody.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The gravitational constant.
pub const G: f64 = 6.67384e-11;
/// The time step: one year in seconds.
pub const DT: f64 = 60.0 * 60.0 * 24.0 * 365.25;
/// The sun's mass in kg.
pub const M_SUN: f64 = 1.98892e30;
/// A lightyear in metres.
pub const LIGHTYEAR: f64 = 9.4605284e15;
/// The seed of the VM's random stream (masses at counters `0..n`, then x, y, z).
pub const SEED: u64 = 0x9B0D;

/// `(seed, mass scale, position scale)` of the initial galaxy.
pub fn galaxy_constants() -> (u64, f64, f64) {
    (SEED, M_SUN, LIGHTYEAR)
}

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
