//! knn by hand: per query (threads over queries), one pass computes its row of squared
//! distances into a buffer that stays in cache, then k passes over that row take the minimum and
//! replace every entry equal to it by +inf, as the VM program does.

use super::points;
use crate::Measured;
use crate::benchmarks::hand_kit::{native_copies, par_ranges};
use crate::benchmarks::real::Real;
use std::time::Instant;

native_copies! {
    /// Runs `n*q*d*k`; the checksum is the sum of the `k*q` minima.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (n, q, d, k) = (dims[0], dims[1], dims[2], dims[3]);
        let (e, qs) = points::<T>(n, q, d);
        let start = Instant::now();
        let parts = par_ranges(q, threads, 4, |rows| {
            let mut dist = vec![T::ZERO; n];
            let mut total = 0.0;
            for qi in rows {
                let query = &qs[qi * d..(qi + 1) * d];
                for (j, out) in dist.iter_mut().enumerate() {
                    let reference = &e[j * d..(j + 1) * d];
                    let mut s = T::ZERO;
                    for (a, b) in query.iter().zip(reference) {
                        let diff = *a - *b;
                        s += diff * diff;
                    }
                    *out = s;
                }
                for _ in 0..k {
                    let m = dist.iter().fold(T::INFINITY, |m, &x| m.min(x));
                    total += m.to_f64();
                    dist.iter_mut().filter(|x| **x == m).for_each(|x| *x = T::INFINITY);
                }
            }
            total
        });
        Measured { seconds: start.elapsed().as_secs_f64(), checksum: parts.iter().sum() }
    }
}
