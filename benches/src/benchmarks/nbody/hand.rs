//! nbody by hand: per step, one pass over all pairs (threads over the bodies acted on) sums the
//! three force components at once; then velocities and positions are updated.

use super::{DT, G, galaxy_constants};
use crate::Measured;
use crate::benchmarks::hand_kit::{LANES, native_copies, par_ranges};
use crate::benchmarks::real::Real;
use std::time::Instant;

/// The initial galaxy: masses and the three position arrays, from the VM's random stream with
/// the VM program's counters.
pub fn galaxy<T: Real>(n: usize) -> (Vec<T>, [Vec<T>; 3]) {
    let (seed, m_scale, p_scale) = galaxy_constants();
    let draw = |k: u64| (0..n).map(move |i| T::random(seed, k * n as u64 + i as u64));
    let m = draw(0).map(|u| ((u + T::of(10.0)) * T::of(m_scale)) / T::of(10.0)).collect();
    let pos = [1, 2, 3].map(|k| draw(k).map(|u| ((u - T::of(0.5)) * T::of(p_scale)) / T::of(100.0)).collect());
    (m, pos)
}

/// The acceleration sums `sum_i G m_i (p_i - p_j) / r_ij^3` of the bodies `js`, as the VM
/// program computes them (r < 1 replaced by 1, so the diagonal adds 0).
#[inline(always)]
fn accelerations<T: Real>(gm: &[T], pos: &[Vec<T>; 3], js: std::ops::Range<usize>) -> Vec<[T; 3]> {
    let n = gm.len();
    let one = T::ONE;
    let full = n / LANES * LANES;
    let mut sums = Vec::with_capacity(js.len());
    for j in js {
        let (xj, yj, zj) = (pos[0][j], pos[1][j], pos[2][j]);
        let force = |i: usize| {
            let (dx, dy, dz) = (pos[0][i] - xj, pos[1][i] - yj, pos[2][i] - zj);
            let r = ((dx * dx + dy * dy) + dz * dz).sqrt();
            let r = if r < one { one } else { r };
            let rinv = one / r;
            let f = |d: T| (((gm[i] * d) * rinv) * rinv) * rinv;
            [f(dx), f(dy), f(dz)]
        };
        let mut acc = [[T::ZERO; LANES]; 3];
        for k in (0..full).step_by(LANES) {
            for l in 0..LANES {
                let f = force(k + l);
                for (a, fc) in acc.iter_mut().zip(f) {
                    a[l] += fc;
                }
            }
        }
        let mut out = [T::ZERO; 3];
        for i in full..n {
            for (o, fc) in out.iter_mut().zip(force(i)) {
                *o += fc;
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            *o = a.iter().fold(*o, |s, &x| s + x);
        }
        sums.push(out);
    }
    sums
}

native_copies! {
    /// Runs `bodies*steps`; the checksum is `sum(|x|) + sum(|y|) + sum(|z|)`.
    pub fn run<T: Real>(dims: &[usize], threads: usize) -> Measured {
        let (n, steps) = (dims[0], dims[1]);
        let (m, mut pos) = galaxy::<T>(n);
        let mut vel = [vec![T::ZERO; n], vec![T::ZERO; n], vec![T::ZERO; n]];
        let gm: Vec<T> = m.iter().map(|&mi| T::of(G) * mi).collect();
        let dt = T::of(DT);
        let start = Instant::now();
        for _ in 0..steps {
            let parts = par_ranges(n, threads, 64, |js| accelerations(&gm, &pos, js));
            for (j, a) in parts.into_iter().flatten().enumerate() {
                for c in 0..3 {
                    vel[c][j] += dt * a[c];
                }
            }
            for c in 0..3 {
                for (p, &v) in pos[c].iter_mut().zip(&vel[c]) {
                    *p += dt * v;
                }
            }
        }
        let checksum = pos.iter().flatten().map(|p| p.abs().to_f64()).sum();
        Measured { seconds: start.elapsed().as_secs_f64(), checksum }
    }
}
