//! heat_equation on the VM: its program, written once against the Rust frontend, so that the same
//! program runs on every stack.

use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::Vm;
use vm_frontend::s;
use vm_ir::Result;

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (h, w, iterations) = (dims[0], dims[1], dims[2]);
    let grid = vm.zeros::<T>(&[h + 2, w + 2])?;
    let cold = T::of(-273.15);
    grid.slice(s![.., 0])?.fill(cold)?;
    grid.slice(s![.., -1])?.fill(cold)?;
    grid.slice(s![-1, ..])?.fill(cold)?;
    grid.slice(s![0, ..])?.fill(T::of(40.0))?;
    let center = grid.slice(s![1..-1, 1..-1])?;
    let north = grid.slice(s![..-2, 1..-1])?;
    let south = grid.slice(s![2.., 1..-1])?;
    let east = grid.slice(s![1..-1, 2..])?;
    let west = grid.slice(s![1..-1, ..-2])?;
    let fifth = T::of(0.2);
    timed(vm, || {
        let mut delta = None;
        for _ in 0..iterations {
            let work = (&center + &north + &south + &east + &west) * fifth;
            delta = Some((&work - &center).abs().sum_all());
            center.assign(&work)?;
        }
        delta.map_or(Ok(0.0), |d| read(&d))
    })
}
