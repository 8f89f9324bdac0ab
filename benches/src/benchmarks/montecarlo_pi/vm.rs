//! montecarlo_pi on the VM: its program, written once against the Rust frontend, so that the same
//! program runs on every stack.

use super::{SEED, counters};
use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, timed};
use vm_frontend::Vm;
use vm_ir::Result;

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (n, iterations) = (dims[0], dims[1]);
    timed(vm, || {
        let mut total = 0.0;
        for i in 0..iterations {
            let (cx, cy) = counters(i, n);
            let x = vm.random_at::<T>(&[n], SEED, cx)?;
            let y = vm.random_at::<T>(&[n], SEED, cy)?;
            let inside = (&x * &x + &y * &y).sqrt().le(T::ONE)?;
            let count = inside.cast::<i64>().sum_all().to_scalar()?;
            total += 4.0 * count as f64 / n as f64;
        }
        Ok(total / iterations as f64)
    })
}
