//! black_scholes: European call prices with the 5-term polynomial CND, `S` uniform in
//! `[58, 62)` from the VM's RANDOM, `T` advancing by 1/365 per iteration. Checksum: the sum over
//! iterations of the mean price.

use super::{BenchDef, Elem, read, timed};
use crate::Measured;
use vm_frontend::{Array, Vm};
use vm_ir::Result;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "black_scholes",
    summary: "European call prices, 5-term polynomial CND, T += 1/365 per iteration",
    dims: &["n", "iterations"],
    default: &[&[2_000_000, 20]],
    paper: None,
    quick: &[&[200_000, 10]],
    tiny: &[&[1000, 3]],
    min_dims: &[1, 1],
    deterministic: false,
    exact: false,
    numpy_script: "black_scholes.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The seed of the VM's random stream for `S` (counters `0..n`).
pub const SEED: u64 = 0xB5;
/// Strike price.
pub const X: f64 = 65.0;
/// Risk-free rate.
pub const R: f64 = 0.08;
/// Volatility.
pub const V: f64 = 0.3;
/// The CND polynomial's coefficients a1..a5.
pub const A: [f64; 5] = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];

/// The host-side constants of iteration `i` (`T = (i+1)/365`): `a = (r + v^2/2) T`,
/// `b = v sqrt(T)` and `X e^(-r T)`, in `f64`.
pub fn iteration_constants(i: usize) -> (f64, f64, f64) {
    let t = (i + 1) as f64 / 365.0;
    ((R + V * V / 2.0) * t, V * t.sqrt(), X * (-R * t).exp())
}

/// The cumulative normal distribution, in the order [`crate::hand::black_scholes::cnd`] uses.
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

fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
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

entry_points!(black_scholes);
