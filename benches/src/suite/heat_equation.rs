//! heat_equation: Jacobi iteration of the 5-point stencil on an `(h+2) x (w+2)` grid (thesis
//! fig. 2). Checksum: the last delta.

use super::{BenchDef, Elem, read, timed};
use crate::Measured;
use vm_frontend::Vm;
use vm_frontend::s;
use vm_ir::Result;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "heat_equation",
    summary: "5-point Jacobi stencil: work = 0.2*(c+n+s+e+w), delta = sum|work-c|, c = work",
    dims: &["h", "w", "iterations"],
    default: &[&[2000, 2000, 100]],
    paper: None,
    quick: &[&[500, 500, 20]],
    tiny: &[&[20, 30, 5]],
    min_dims: &[1, 1, 1],
    deterministic: true,
    exact: false,
    numpy_script: "heat_equation.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
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

entry_points!(heat_equation);
