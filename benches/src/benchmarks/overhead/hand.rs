//! overhead by hand: all `ops` dependent operations of a loop applied to each element in one
//! pass (what a fusing JIT could do at best), then the sum.

use super::{ADD, MUL};
use crate::Measured;
use crate::benchmarks::hand_kit::{lane_sum, native_copies};
use crate::benchmarks::real::Real;
use std::time::Instant;

/// The initial array `arange(n) / n`.
pub fn initial<T: Real>(n: usize) -> Vec<T> {
    let nn = T::of(n as f64);
    (0..n).map(|i| T::of(i as f64) / nn).collect()
}

native_copies! {
    /// Runs `elements*ops*loops` on one thread (the arrays are small); the checksum is the last sum.
    pub fn run<T: Real>(dims: &[usize], _threads: usize) -> Measured {
        let (n, ops, loops) = (dims[0], dims[1], dims[2]);
        let (mul, add) = (T::of(MUL), T::of(ADD));
        let mut x = initial::<T>(n);
        let start = Instant::now();
        let mut total = 0.0;
        for _ in 0..loops {
            // Blocks of 64 elements stay in registers while all the operations run over them.
            for block in x.chunks_mut(64) {
                for op in 0..ops {
                    if op % 2 == 0 {
                        block.iter_mut().for_each(|v| *v = *v * mul);
                    } else {
                        block.iter_mut().for_each(|v| *v += add);
                    }
                }
            }
            total = lane_sum(0..n, |i| x[i]).to_f64();
        }
        Measured { seconds: start.elapsed().as_secs_f64(), checksum: total }
    }
}
