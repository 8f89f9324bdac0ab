//! montecarlo_pi by hand: one fused pass per iteration draws x and y from the VM's random stream
//! (the same counters as the VM program) and counts the points inside the circle.

use super::{SEED, counters};
use crate::Measured;
use crate::benchmarks::hand_kit::{native_copies, par_ranges};
use crate::benchmarks::real::Real;
use std::time::Instant;

native_copies! {
    /// Runs `n*iterations`; the checksum is the mean estimate.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (n, iterations) = (dims[0], dims[1]);
        let start = Instant::now();
        let mut total = 0.0;
        for i in 0..iterations {
            let (cx, cy) = counters(i, n);
            let parts = par_ranges(n, threads, 1 << 15, |r| {
                let mut count = 0u64;
                for j in r {
                    let x = T::random(SEED, cx + j as u64);
                    let y = T::random(SEED, cy + j as u64);
                    count += u64::from((x * x + y * y).sqrt() <= T::ONE);
                }
                count
            });
            let count: u64 = parts.iter().sum();
            total += 4.0 * count as f64 / n as f64;
        }
        Measured { seconds: start.elapsed().as_secs_f64(), checksum: total / iterations as f64 }
    }
}
