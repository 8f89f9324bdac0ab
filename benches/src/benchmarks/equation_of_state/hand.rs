//! equation_of_state by hand: one fused pass computes every round of each grid point in
//! registers and writes the final temperature once; what depends only on the depth and the
//! round (the profile's terms, its exponential) is computed once per depth and round, as NumPy
//! computes it on the `(1, 1, nz)` profile.

use super::{constants, fields};
use crate::Measured;
use crate::benchmarks::hand_kit::{lane_sum, native_copies, par_rows_mut};
use crate::benchmarks::real::Real;
use std::time::Instant;

native_copies! {
    /// Runs `nx*ny*nz*rounds`; the checksum is the mean of the final temperature.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (nx, ny, nz, rounds) = (dims[0], dims[1], dims[2], dims[3]);
        let (t0, s, p) = fields::<T>(nx, ny, nz);
        let cs: Vec<[T; 8]> = (0..rounds).map(|r| constants(r).map(T::of)).collect();
        let mut out = vec![T::ZERO; t0.len()];
        let start = Instant::now();
        // Per round and depth: `p c3 + c4` and `exp(-(p c5)) c7`.
        let profile: Vec<(T, T)> =
            cs.iter().flat_map(|c| p.iter().map(move |&pk| (pk * c[3] + c[4], (-(pk * c[5])).exp() * c[7]))).collect();
        let sums = par_rows_mut(&mut out, nz.max(1), threads, 64, |first, block| {
            for (e, o) in block.iter_mut().enumerate() {
                let (at, k) = (first * nz + e, e % nz);
                let (mut t, root) = (t0[at], s[at].sqrt());
                for (r, c) in cs.iter().enumerate() {
                    let (pc, ec) = profile[r * nz + k];
                    let a = t * t * c[0] + t * c[1] + c[2];
                    let b = root * pc;
                    let q = (a * a + T::ONE).ln() / (b * b + T::ONE);
                    t = t + q * c[6] - ec;
                }
                *o = t;
            }
            lane_sum(0..block.len(), |e| block[e]).to_f64()
        });
        let checksum = sums.iter().sum::<f64>() / t0.len() as f64;
        Measured { seconds: start.elapsed().as_secs_f64(), checksum }
    }
}
