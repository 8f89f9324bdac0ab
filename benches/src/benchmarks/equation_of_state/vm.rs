//! equation_of_state on the VM: its program, written once against the Rust frontend, so that the
//! same program runs on every stack.

use super::{constants, fields};
use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::Vm;
use vm_ir::Result;

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (nx, ny, nz, rounds) = (dims[0], dims[1], dims[2], dims[3]);
    let (t0, s0, p0) = fields::<T>(nx, ny, nz);
    let mut t = vm.from_slice(&[nx, ny, nz], &t0)?;
    let s = vm.from_slice(&[nx, ny, nz], &s0)?;
    let p = vm.from_slice(&[1, 1, nz], &p0)?;
    timed(vm, || {
        for r in 0..rounds {
            let c = constants(r).map(T::of);
            let a = &t * &t * c[0] + &t * c[1] + c[2];
            let b = s.sqrt() * (&p * c[3] + c[4]);
            let q = (&a * &a + T::ONE).log() / (&b * &b + T::ONE);
            let e = (-(&p * c[5])).exp();
            t = &t + q * c[6] - e * c[7];
        }
        Ok(read(&t.sum_all())? / (nx * ny * nz) as f64)
    })
}
