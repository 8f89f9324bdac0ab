//! heat_equation by hand: one fused pass per iteration computes the new interior into a second
//! grid and the delta at once; the grids are swapped (the boundary is in both).

use crate::Measured;
use crate::benchmarks::hand_kit::{LANES, native_copies, par_rows_mut};
use crate::benchmarks::real::Real;
use std::time::Instant;

/// The initial `(h+2) x (w+2)` grid: left, right and bottom -273.15, top 40, interior 0.
pub fn initial_grid<T: Real>(h: usize, w: usize) -> Vec<T> {
    let cols = w + 2;
    let mut g = vec![T::ZERO; (h + 2) * cols];
    let cold = T::of(-273.15);
    for row in g.chunks_mut(cols) {
        row[0] = cold;
        row[cols - 1] = cold;
    }
    g[(h + 1) * cols..].fill(cold);
    g[..cols].fill(T::of(40.0));
    g
}

/// One row of the stencil: writes `out[1..=w]` from rows `up`, `mid`, `down` and returns
/// `sum(|new - old|)` of the row.
#[inline(always)]
fn stencil_row<T: Real>(up: &[T], mid: &[T], down: &[T], out: &mut [T]) -> T {
    let w = out.len() - 2;
    let fifth = T::of(0.2);
    let (c, n, s) = (&mid[1..=w], &up[1..=w], &down[1..=w]);
    let (e, west) = (&mid[2..w + 2], &mid[..w]);
    let o = &mut out[1..=w];
    let mut acc = [T::ZERO; LANES];
    let full = w / LANES * LANES;
    for k in (0..full).step_by(LANES) {
        for (l, a) in acc.iter_mut().enumerate() {
            let i = k + l;
            let v = fifth * ((((c[i] + n[i]) + s[i]) + e[i]) + west[i]);
            o[i] = v;
            *a += (v - c[i]).abs();
        }
    }
    let mut tail = T::ZERO;
    for i in full..w {
        let v = fifth * ((((c[i] + n[i]) + s[i]) + e[i]) + west[i]);
        o[i] = v;
        tail += (v - c[i]).abs();
    }
    acc.iter().fold(tail, |a, &b| a + b)
}

native_copies! {
    /// Runs `h*w*iterations`; the checksum is the last delta.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (h, w, iterations) = (dims[0], dims[1], dims[2]);
        let cols = w + 2;
        let mut a = initial_grid::<T>(h, w);
        let mut b = a.clone();
        let start = Instant::now();
        let mut delta = 0.0;
        for _ in 0..iterations {
            let src = &a;
            let interior = &mut b[cols..(h + 1) * cols];
            let partials = par_rows_mut(interior, cols, threads, 16, |first, block| {
                let mut d = 0.0;
                for (r, out) in block.chunks_mut(cols).enumerate() {
                    let i = first + r + 1;
                    let up = &src[(i - 1) * cols..i * cols];
                    let mid = &src[i * cols..(i + 1) * cols];
                    let down = &src[(i + 1) * cols..(i + 2) * cols];
                    d += stencil_row(up, mid, down, out).to_f64();
                }
                d
            });
            delta = partials.iter().sum();
            std::mem::swap(&mut a, &mut b);
        }
        Measured { seconds: start.elapsed().as_secs_f64(), checksum: delta }
    }
}
