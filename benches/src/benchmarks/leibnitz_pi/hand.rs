//! leibnitz_pi by hand: one fused pass per iteration, threads over ranges of k.

use crate::Measured;
use crate::benchmarks::hand_kit::{lane_sum, native_copies, par_ranges};
use crate::benchmarks::real::Real;
use std::time::Instant;

native_copies! {
    /// Runs `n*iterations`; the checksum is the mean estimate.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (n, iterations) = (dims[0], dims[1]);
        let (one, three, four) = (T::ONE, T::of(3.0), T::of(4.0));
        let start = Instant::now();
        let mut total = 0.0;
        for _ in 0..iterations {
            let parts = par_ranges(n, threads, 1 << 16, |r| {
                lane_sum(r, |k| {
                    let k = T::of(k as f64);
                    one / (four * k + one) - one / (four * k + three)
                })
                .to_f64()
            });
            total += 4.0 * parts.iter().sum::<f64>();
        }
        Measured { seconds: start.elapsed().as_secs_f64(), checksum: total / iterations as f64 }
    }
}
