//! black_scholes by hand: one fused pass per iteration prices every option and sums the prices.

use super::{A, SEED, X, iteration_constants};
use crate::Measured;
use crate::benchmarks::hand_kit::{lane_sum, native_copies, par_ranges};
use crate::benchmarks::real::Real;
use std::time::Instant;

/// The cumulative normal distribution by the 5-term polynomial, in the order the VM program
/// evaluates it.
#[inline(always)]
pub fn cnd<T: Real>(x: T) -> T {
    let one = T::ONE;
    let l = x.abs();
    let k = one / (one + T::of(0.2316419) * l);
    let a = A.map(T::of);
    let poly = k * (a[0] + k * (a[1] + k * (a[2] + k * (a[3] + k * a[4]))));
    let c = T::of(1.0 / (2.0 * std::f64::consts::PI).sqrt());
    let w = one - c * ((-l * l) / T::of(2.0)).exp() * poly;
    if x < T::ZERO { one - w } else { w }
}

/// The stock prices: `58 + 4 * U` with `U` from the VM's stream of [`SEED`] at counters `0..n`.
pub fn prices<T: Real>(n: usize) -> Vec<T> {
    (0..n).map(|i| T::random(SEED, i as u64) * T::of(4.0) + T::of(58.0)).collect()
}

native_copies! {
    /// Runs `n*iterations`; the checksum is the sum over iterations of the mean price.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (n, iterations) = (dims[0], dims[1]);
        let s = prices::<T>(n);
        let start = Instant::now();
        let mut total = 0.0;
        for i in 0..iterations {
            let (a, b, xe) = iteration_constants(i);
            let (a, b, xe, x) = (T::of(a), T::of(b), T::of(xe), T::of(X));
            let parts = par_ranges(n, threads, 1 << 14, |r| {
                lane_sum(r, |j| {
                    let sj = s[j];
                    let d1 = ((sj / x).ln() + a) / b;
                    let d2 = d1 - b;
                    sj * cnd(d1) - xe * cnd(d2)
                })
                .to_f64()
            });
            total += parts.iter().sum::<f64>() / n as f64;
        }
        Measured { seconds: start.elapsed().as_secs_f64(), checksum: total }
    }
}
