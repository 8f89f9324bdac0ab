//! leibnitz_pi on the VM: its program, written once against the Rust frontend, so that the same
//! program runs on every stack.

use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::Vm;
use vm_ir::Result;

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (n, iterations) = (dims[0], dims[1]);
    let (one, three, four) = (T::ONE, T::of(3.0), T::of(4.0));
    timed(vm, || {
        let mut total = 0.0;
        for _ in 0..iterations {
            let k = vm.arange::<T>(n)?;
            let k4 = &k * four;
            let terms = one.over(&(&k4 + one)) - one.over(&(&k4 + three));
            total += 4.0 * read(&terms.sum_all())?;
        }
        Ok(total / iterations as f64)
    })
}
