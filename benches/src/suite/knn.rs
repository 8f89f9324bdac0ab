//! knn: brute-force k nearest neighbours of `q` queries among `n` reference points in `d`
//! dimensions, uniform in `[0, 1)` from the VM's RANDOM. The distance matrix is
//! `sum((Q[:, None, :] - E[None, :, :])**2, axis=2)`; then k times the row minimum is recorded
//! and every entry equal to it is replaced by +inf. Checksum: the sum of the k*q minima.

use super::{BenchDef, Elem, read, timed};
use crate::Measured;
use crate::hand::Real;
use vm_frontend::{Array, Vm};
use vm_ir::Result;

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

fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (n, q, d, k) = (dims[0], dims[1], dims[2], dims[3]);
    let e = vm.random_at::<T>(&[n, d], SEED, 0)?;
    let qs = vm.random_at::<T>(&[q, d], SEED, (n * d) as u64)?;
    timed(vm, || {
        let diff = &qs.new_axis(1)? - &e.new_axis(0)?;
        let mut dist = (&diff * &diff).sum(2)?;
        drop(diff);
        // The sum of the minima stays on the VM until the end: the k rounds are one batch.
        let mut total: Option<Array<T>> = None;
        for _ in 0..k {
            let m = dist.min(1)?;
            let s = m.sum_all();
            total = Some(match total {
                Some(t) => &t + &s,
                None => s,
            });
            dist = Array::select(&dist.eq(&m.new_axis(1)?)?, T::INFINITY, &dist)?;
        }
        drop(dist); // the last mask is never read (nor computed)
        total.map_or(Ok(0.0), |t| read(&t))
    })
}

entry_points!(knn);
