//! black_scholes on the VM: its program, written once against the Rust frontend, so that the same
//! program runs on every stack.

use super::{A, SEED, X, iteration_constants};
use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::{Array, Vm};
use vm_ir::Result;

/// The cumulative normal distribution, in the order the hand baseline's `cnd` uses.
fn cnd<T: Elem>(x: &Array<T>) -> Result<Array<T>> {
    let one = T::ONE;
    let a = A.map(T::of);
    let l = x.abs();
    let k = one.over(&(&l * T::of(0.2316419) + one));
    let poly = ((((&k * a[4] + a[3]) * &k + a[2]) * &k + a[1]) * &k + a[0]) * &k;
    let c = T::of(1.0 / (2.0 * std::f64::consts::PI).sqrt());
    let e = ((-&l * &l) / T::of(2.0)).exp();
    let w = one.minus(&((e * c) * &poly));
    Array::select(&x.lt(T::ZERO)?, one.minus(&w), &w)
}

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (n, iterations) = (dims[0], dims[1]);
    let s = vm.random_at::<T>(&[n], SEED, 0)? * T::of(4.0) + T::of(58.0);
    timed(vm, || {
        let mut total = 0.0;
        for i in 0..iterations {
            let (a, b, xe) = iteration_constants(i);
            let (a, b, xe) = (T::of(a), T::of(b), T::of(xe));
            let d1 = ((&s / T::of(X)).log() + a) / b;
            let d2 = &d1 - b;
            let price = &s * cnd(&d1)? - cnd(&d2)? * xe;
            total += read(&price.sum_all())? / n as f64;
        }
        Ok(total)
    })
}
