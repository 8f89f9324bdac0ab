//! knn on the VM: its program, written once against the Rust frontend, so that the same program
//! runs on every stack.

use super::SEED;
use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::{Array, Vm};
use vm_ir::Result;

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
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
