//! shallow_water by hand: per step, the reflecting boundary in place, then one pass over the
//! rows (threads over blocks of rows) computes each row's half-step fluxes into small buffers
//! that stay in cache and the full step into a second set of grids; the grids are swapped.

use super::{Constants, initial_height};
use crate::Measured;
use crate::benchmarks::hand_kit::{self, lane_sum, native_copies};
use crate::benchmarks::real::Real;
use std::time::Instant;

/// The three fields of one grid, `h x w` each, row-major.
struct Fields<T> {
    h: Vec<T>,
    u: Vec<T>,
    v: Vec<T>,
}

/// Half-step fluxes of one row: height, x momentum, y momentum.
struct Flux<T> {
    h: Vec<T>,
    u: Vec<T>,
    v: Vec<T>,
}

impl<T: Real> Flux<T> {
    fn new(len: usize) -> Flux<T> {
        Flux { h: vec![T::ZERO; len], u: vec![T::ZERO; len], v: vec![T::ZERO; len] }
    }
}

/// The reflecting boundary, in NumPy's order: columns first, then rows.
#[inline(always)]
fn reflect<T: Real>(f: &mut Fields<T>, rows: usize, cols: usize) {
    for r in 0..rows {
        let (a, b, y, z) = (r * cols, r * cols + 1, r * cols + cols - 1, r * cols + cols - 2);
        f.h[a] = f.h[b];
        f.u[a] = f.u[b];
        f.v[a] = -f.v[b];
        f.h[y] = f.h[z];
        f.u[y] = f.u[z];
        f.v[y] = -f.v[z];
    }
    let last = (rows - 1) * cols;
    let below = (rows - 2) * cols;
    for c in 0..cols {
        f.h[c] = f.h[cols + c];
        f.u[c] = -f.u[cols + c];
        f.v[c] = f.v[cols + c];
        f.h[last + c] = f.h[below + c];
        f.u[last + c] = -f.u[below + c];
        f.v[last + c] = f.v[below + c];
    }
}

/// The x-direction fluxes between rows `k` and `k + 1`, for columns `1..cols-1`.
#[inline(always)]
fn x_flux<T: Real>(f: &Fields<T>, k: usize, cols: usize, c: &Constants<T>, out: &mut Flux<T>) {
    let (r0, r1) = (k * cols + 1, (k + 1) * cols + 1);
    let n = cols - 2;
    let two = T::of(2.0);
    let (h0, h1, u0, u1, v0, v1) =
        (&f.h[r0..r0 + n], &f.h[r1..r1 + n], &f.u[r0..r0 + n], &f.u[r1..r1 + n], &f.v[r0..r0 + n], &f.v[r1..r1 + n]);
    for j in 0..n {
        let (h0, h1, u0, u1, v0, v1) = (h0[j], h1[j], u0[j], u1[j], v0[j], v1[j]);
        out.h[j] = (h1 + h0) / two - c.c1 * (u1 - u0);
        out.u[j] = (u1 + u0) / two - c.c1 * (((u1 * u1) / h1 + c.g2 * (h1 * h1)) - ((u0 * u0) / h0 + c.g2 * (h0 * h0)));
        out.v[j] = (v1 + v0) / two - c.c1 * (((u1 * v1) / h1) - ((u0 * v0) / h0));
    }
}

/// The y-direction fluxes of row `i` between columns `j` and `j + 1`, for `j` in `0..cols-1`.
#[inline(always)]
fn y_flux<T: Real>(f: &Fields<T>, i: usize, cols: usize, c: &Constants<T>, out: &mut Flux<T>) {
    let r = i * cols;
    let n = cols - 1;
    let two = T::of(2.0);
    let (h0, h1, u0, u1, v0, v1) = (
        &f.h[r..r + n],
        &f.h[r + 1..r + 1 + n],
        &f.u[r..r + n],
        &f.u[r + 1..r + 1 + n],
        &f.v[r..r + n],
        &f.v[r + 1..r + 1 + n],
    );
    for j in 0..n {
        let (h0, h1, u0, u1, v0, v1) = (h0[j], h1[j], u0[j], u1[j], v0[j], v1[j]);
        out.h[j] = (h1 + h0) / two - c.c1y * (v1 - v0);
        out.u[j] = (u1 + u0) / two - c.c1y * (((v1 * u1) / h1) - ((v0 * u0) / h0));
        out.v[j] =
            (v1 + v0) / two - c.c1y * (((v1 * v1) / h1 + c.g2 * (h1 * h1)) - ((v0 * v0) / h0 + c.g2 * (h0 * h0)));
    }
}

/// The full step of interior row `i` into `(oh, ou, ov)` (whole rows; the boundary columns are
/// left alone), from the x fluxes below (`x0`) and above (`x1`) and the row's y fluxes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn full_step<T: Real>(
    f: &Fields<T>,
    i: usize,
    cols: usize,
    c: &Constants<T>,
    x0: &Flux<T>,
    x1: &Flux<T>,
    y: &Flux<T>,
    (oh, ou, ov): (&mut [T], &mut [T], &mut [T]),
) {
    let r = i * cols;
    let g2 = c.g2;
    for j in 1..cols - 1 {
        let (hx0, hx1, ux0, ux1, vx0, vx1) =
            (x0.h[j - 1], x1.h[j - 1], x0.u[j - 1], x1.u[j - 1], x0.v[j - 1], x1.v[j - 1]);
        let (hy0, hy1, uy0, uy1, vy0, vy1) = (y.h[j - 1], y.h[j], y.u[j - 1], y.u[j], y.v[j - 1], y.v[j]);
        oh[j] = f.h[r + j] - (c.c2 * (ux1 - ux0) + c.c2y * (vy1 - vy0));
        ou[j] = f.u[r + j]
            - (c.c2 * (((ux1 * ux1) / hx1 + g2 * (hx1 * hx1)) - ((ux0 * ux0) / hx0 + g2 * (hx0 * hx0)))
                + c.c2y * (((vy1 * uy1) / hy1) - ((vy0 * uy0) / hy0)));
        ov[j] = f.v[r + j]
            - (c.c2 * (((ux1 * vx1) / hx1) - ((ux0 * vx0) / hx0))
                + c.c2y * (((vy1 * vy1) / hy1 + g2 * (hy1 * hy1)) - ((vy0 * vy0) / hy0 + g2 * (hy0 * hy0))));
    }
}

/// Computes interior rows `first..first + rows` into the row blocks `(oh, ou, ov)`.
#[inline(always)]
fn block<T: Real>(f: &Fields<T>, first: usize, cols: usize, c: &Constants<T>, out: (&mut [T], &mut [T], &mut [T])) {
    let (mut x0, mut x1, mut y) = (Flux::new(cols - 2), Flux::new(cols - 2), Flux::new(cols - 1));
    x_flux(f, first - 1, cols, c, &mut x0);
    let rows = out.0.len() / cols;
    let (oh, ou, ov) = out;
    for r in 0..rows {
        let i = first + r;
        x_flux(f, i, cols, c, &mut x1);
        y_flux(f, i, cols, c, &mut y);
        let row = r * cols..(r + 1) * cols;
        full_step(f, i, cols, c, &x0, &x1, &y, (&mut oh[row.clone()], &mut ou[row.clone()], &mut ov[row]));
        std::mem::swap(&mut x0, &mut x1);
    }
}

/// One time step from `cur` into `next` (whose boundary is copied from `cur` afterwards):
/// `compute(cur, first, (oh, ou, ov))` computes interior rows `first..` into each block of rows
/// (it is [`block`], passed in as a closure so that the threads run the caller's code, compiled
/// with the caller's target features).
#[inline(always)]
fn step<T: Real>(
    cur: &mut Fields<T>,
    next: &mut Fields<T>,
    rows: usize,
    cols: usize,
    threads: usize,
    compute: impl Fn(&Fields<T>, usize, (&mut [T], &mut [T], &mut [T])) + Sync,
) {
    reflect(cur, rows, cols);
    let inner = cols..(rows - 1) * cols;
    let interior = rows - 2;
    let t = hand_kit::threads_for(interior, threads, 16);
    let per = interior.div_ceil(t) * cols;
    let cur_ref: &Fields<T> = cur;
    let hs = next.h[inner.clone()].chunks_mut(per);
    let us = next.u[inner.clone()].chunks_mut(per);
    let vs = next.v[inner].chunks_mut(per);
    let compute = &compute;
    std::thread::scope(|s| {
        let mut jobs = hs.zip(us).zip(vs).enumerate();
        let first = jobs.next();
        for (k, ((oh, ou), ov)) in jobs {
            s.spawn(move || compute(cur_ref, 1 + k * per / cols, (oh, ou, ov)));
        }
        if let Some((_, ((oh, ou), ov))) = first {
            compute(cur_ref, 1, (oh, ou, ov));
        }
    });
    for (src, dst) in [(&cur.h, &mut next.h), (&cur.u, &mut next.u), (&cur.v, &mut next.v)] {
        dst[..cols].copy_from_slice(&src[..cols]);
        let last = (rows - 1) * cols;
        dst[last..].copy_from_slice(&src[last..]);
        for r in 1..rows - 1 {
            dst[r * cols] = src[r * cols];
            dst[r * cols + cols - 1] = src[r * cols + cols - 1];
        }
    }
}

native_copies! {
    /// Runs `h*w*iterations`; the checksum is `sum(H)`.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (rows, cols, iterations) = (dims[0], dims[1], dims[2]);
        let c = Constants::<T>::new();
        let zeros = vec![T::ZERO; rows * cols];
        let mut cur = Fields { h: initial_height::<T>(rows, cols), u: zeros.clone(), v: zeros.clone() };
        let mut next = Fields { h: cur.h.clone(), u: zeros.clone(), v: zeros };
        let start = Instant::now();
        for _ in 0..iterations {
            step(&mut cur, &mut next, rows, cols, threads, |f, first, out| block(f, first, cols, &c, out));
            std::mem::swap(&mut cur, &mut next);
        }
        let checksum = lane_sum(0..rows * cols, |i| cur.h[i]).to_f64();
        Measured { seconds: start.elapsed().as_secs_f64(), checksum }
    }
}
