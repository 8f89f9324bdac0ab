//! knn: brute-force k nearest neighbours of `q` queries among `n` reference points in `d`
//! dimensions, uniform in `[0, 1)` from the VM's RANDOM. The distance matrix is
//! `sum((Q[:, None, :] - E[None, :, :])**2, axis=2)`; then k times the row minimum is recorded
//! and every entry equal to it is replaced by +inf. Checksum: the sum of the k*q minima.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its NumPy twin is
//! `benches/numpy/knn.py`.

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;
use crate::benchmarks::real::Real;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "knn",
    summary: "k nearest neighbours: (q, n) squared distances by broadcasting, k x (min, mask)",
    dims: &["n", "q", "d", "k"],
    default: &[&[4000, 1000, 32, 5]],
    paper: Some(&[&[1000, 1000, 32, 5]]),
    quick: &[&[1000, 250, 32, 5]],
    tiny: &[&[50, 12, 4, 3]],
    min_dims: &[1, 1, 1, 1],
    deterministic: false,
    exact: false,
    numpy_script: "knn.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The seed of the VM's random stream (`E` at counters `0..n*d`, then `Q`).
pub const SEED: u64 = 0x4E4E;

/// The reference points `E` (`n x d`) and the queries `Q` (`q x d`), row-major, as the VM
/// program draws them.
pub fn points<T: Real>(n: usize, q: usize, d: usize) -> (Vec<T>, Vec<T>) {
    let e = (0..n * d).map(|i| T::random(SEED, i as u64)).collect();
    let qs = (0..q * d).map(|i| T::random(SEED, (n * d + i) as u64)).collect();
    (e, qs)
}

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
