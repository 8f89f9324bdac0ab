//! equation_of_state: a long element-wise expression over a 3-d grid, shaped like an ocean
//! model's equation of state: `rounds` rounds of 22 operations (a square root, a logarithm, an
//! exponential, products, sums, a quotient) update a temperature field `t` from itself, a
//! salinity field `s` and a pressure profile `p` of shape `(1, 1, nz)` broadcast over the grid;
//! nothing is read in between, so the whole expression is one batch (about 300 instructions at
//! the default 14 rounds). Checksum: the mean of the final `t`.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its NumPy twin is
//! `benches/numpy/equation_of_state.py`.

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;
use crate::benchmarks::real::Real;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "equation_of_state",
    summary: "22 element-wise operations per round over a 3-d grid and a (1, 1, nz) profile",
    dims: &["nx", "ny", "nz", "rounds"],
    default: &[&[128, 128, 64, 14]],
    paper: None,
    quick: &[&[64, 64, 32, 14]],
    tiny: &[&[4, 5, 6, 3]],
    min_dims: &[1, 1, 1, 1],
    deterministic: true,
    exact: false,
    numpy_script: "equation_of_state.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// Operations per round (what `round` records).
pub const OPS_PER_ROUND: usize = 22;

/// The constants of round `r`, `c0..c7`.
pub fn constants(r: usize) -> [f64; 8] {
    let x = r as f64;
    [
        1.0 + 0.01 * x,
        0.5 - 0.02 * x,
        2.0 + 0.1 * x,
        0.6 + 0.05 * x,
        0.3 + 0.01 * x,
        0.02 + 0.001 * x,
        0.1 / (1.0 + x),
        0.05 + 0.002 * x,
    ]
}

/// The initial temperature at grid point `(i, j, k)`.
fn temperature(i: usize, j: usize, k: usize) -> f64 {
    10.0 + ((i * 7 + j * 13 + k * 3) % 17) as f64 * 0.5
}

/// The salinity at grid point `(i, j, k)`.
fn salinity(i: usize, j: usize, k: usize) -> f64 {
    34.0 + ((i * 5 + j * 11 + k * 7) % 13) as f64 * 0.25
}

/// The pressure at depth `k`.
fn pressure(k: usize) -> f64 {
    k as f64 * 0.01
}

/// `(t, s, p)`: the fields row-major over `nx x ny x nz` and the profile over `nz`.
pub fn fields<T: Real>(nx: usize, ny: usize, nz: usize) -> (Vec<T>, Vec<T>, Vec<T>) {
    let points = (0..nx).flat_map(|i| (0..ny).flat_map(move |j| (0..nz).map(move |k| (i, j, k))));
    let t = points.clone().map(|(i, j, k)| T::of(temperature(i, j, k))).collect();
    let s = points.map(|(i, j, k)| T::of(salinity(i, j, k))).collect();
    (t, s, (0..nz).map(|k| T::of(pressure(k))).collect())
}

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
