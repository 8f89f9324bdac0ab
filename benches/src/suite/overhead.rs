//! overhead: many dependent element-wise operations on a small array, each one instruction
//! (alternately `x * 0.9999` and `x + 0.0001`, a new array each, as a user writes them), and a
//! read of `sum(x)` after each loop: the per-instruction cost, the weak spot of lazy array
//! systems. Checksum: the last sum.

use super::{BenchDef, Elem, read, timed};
use crate::Measured;
use vm_frontend::Vm;
use vm_ir::Result;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "overhead",
    summary: "1000 dependent element-wise ops on 1, 1K and 64K elements, 100 loops, sum per loop",
    dims: &["elements", "ops", "loops"],
    default: &[&[1, 1000, 100], &[1024, 1000, 100], &[65536, 1000, 100]],
    paper: None,
    quick: &[&[1, 1000, 10], &[1024, 1000, 10], &[65536, 1000, 10]],
    tiny: &[&[1, 20, 3], &[100, 20, 3]],
    min_dims: &[1, 1, 1],
    deterministic: true,
    exact: false,
    numpy_script: "overhead.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The multiplier of the even operations.
pub const MUL: f64 = 0.9999;
/// The addend of the odd operations.
pub const ADD: f64 = 0.0001;

fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
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

entry_points!(overhead);
