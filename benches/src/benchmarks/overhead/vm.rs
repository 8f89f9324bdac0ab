//! overhead on the VM: its program, written once against the Rust frontend, so that the same
//! program runs on every stack.

use super::{ADD, MUL};
use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::Vm;
use vm_ir::Result;

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (n, ops, loops) = (dims[0], dims[1], dims[2]);
    let (mul, add) = (T::of(MUL), T::of(ADD));
    let mut x = vm.arange::<T>(n)? / T::of(n as f64);
    timed(vm, || {
        let mut total = 0.0;
        for _ in 0..loops {
            for op in 0..ops {
                x = if op % 2 == 0 { &x * mul } else { &x + add };
            }
            total = read(&x.sum_all())?;
        }
        Ok(total)
    })
}
