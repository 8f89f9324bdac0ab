//! leibnitz_pi: `4 * sum(1/(4k+1) - 1/(4k+3))` for `k = range(n)` as floats. Checksum: the mean
//! estimate over the iterations.

use super::{BenchDef, Elem, read, timed};
use crate::Measured;
use vm_frontend::Vm;
use vm_ir::Result;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "leibnitz_pi",
    summary: "pi by the Leibnitz series: 4*sum(1/(4k+1) - 1/(4k+3))",
    dims: &["n", "iterations"],
    default: &[&[10_000_000, 10]],
    paper: None,
    quick: &[&[1_000_000, 5]],
    tiny: &[&[1000, 3]],
    min_dims: &[1, 1],
    deterministic: true,
    exact: false,
    numpy_script: "leibnitz_pi.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
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

entry_points!(leibnitz_pi);
