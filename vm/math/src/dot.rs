//! Float dot products in one summation order, so that a product gives the same bits wherever it
//! is computed (the interpreter's `matmul`, the runtime's in-place dot product of two vectors in
//! host memory): term `p` joins partial sum `p % LANES` while whole groups of [`LANES`] terms
//! remain; the partials are then combined pairwise (`((p0 + p1) + (p2 + p3)) + ((p4 + p5) +
//! (p6 + p7))`) and the terms left added in order. Fewer than [`LANES`] terms are summed in order
//! from 0. The additions of the partial sums do not wait for each other, as a BLAS dot
//! product's; no fused multiply-adds (Rust never contracts), so every layout and every
//! instruction set gives the same bits.

use std::ops::{Add, Mul};

/// How many partial sums a float dot product keeps.
pub const LANES: usize = 8;

/// A float type a dot product sums: `+`, `*` and a zero.
pub trait DotFloat: Copy + Add<Output = Self> + Mul<Output = Self> {
    /// The sum of nothing (`+0.0`).
    const ZERO: Self;
}

impl DotFloat for f32 {
    const ZERO: f32 = 0.0;
}

impl DotFloat for f64 {
    const ZERO: f64 = 0.0;
}

/// The partial sums of [`LANES`] combined pairwise.
#[inline(always)]
fn combined<T: DotFloat>([p0, p1, p2, p3, p4, p5, p6, p7]: [T; LANES]) -> T {
    ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))
}

/// `sum_p term(p)` for `p < k` in the order the module describes.
#[inline]
pub fn lane_sum<T: DotFloat>(k: usize, term: impl Fn(usize) -> T) -> T {
    let full = k / LANES * LANES;
    let mut partial = [T::ZERO; LANES];
    for group in (0..full).step_by(LANES) {
        for (lane, p) in partial.iter_mut().enumerate() {
            *p = *p + term(group + lane);
        }
    }
    (full..k).fold(combined(partial), |sum, p| sum + term(p))
}

/// [`lane_sum`] of `xs[p] * ys[p]` over two slices of one length, walked by whole groups (no
/// index checks in the loop): the same additions in the same order.
#[inline(always)]
fn lane_dot<T: DotFloat>(xs: &[T], ys: &[T]) -> T {
    let (xg, yg) = (xs.chunks_exact(LANES), ys.chunks_exact(LANES));
    let rest = xg.remainder().iter().zip(yg.remainder());
    let mut partial = [T::ZERO; LANES];
    for (x, y) in xg.zip(yg) {
        for lane in 0..LANES {
            partial[lane] = partial[lane] + x[lane] * y[lane];
        }
    }
    rest.fold(combined(partial), |sum, (&x, &y)| sum + x * y)
}

/// `sum_p xs[p] * ys[p]` over the shorter length of the two, compiled for the widest vectors
/// this CPU has (a few terms per instruction; the same bits on every one).
pub fn dot<T: DotFloat>(xs: &[T], ys: &[T]) -> T {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the processor has AVX-512F.
            return unsafe { lane_dot_avx512(xs, ys) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2.
            return unsafe { lane_dot_avx2(xs, ys) };
        }
    }
    lane_dot(xs, ys)
}

/// [`lane_dot`] compiled for AVX-512.
///
/// # Safety
/// The processor must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn lane_dot_avx512<T: DotFloat>(xs: &[T], ys: &[T]) -> T {
    lane_dot(xs, ys)
}

/// [`lane_dot`] compiled for AVX2.
///
/// # Safety
/// The processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lane_dot_avx2<T: DotFloat>(xs: &[T], ys: &[T]) -> T {
    lane_dot(xs, ys)
}

/// `sum_p x[xs + p * dx] * y[ys + p * dy]` for `p < k`, each run given as `(start, stride)` in
/// elements: slices where both strides are 1 ([`dot`]), else walked by the strides in the same
/// order. `None` when a run reaches outside its slice.
pub fn strided_dot<T: DotFloat>(x: &[T], (xs, dx): (i64, i64), y: &[T], (ys, dy): (i64, i64), k: usize) -> Option<T> {
    let inside = |len: usize, start: i64, stride: i64| {
        let last = (k as i64).checked_sub(1)?.checked_mul(stride)?.checked_add(start)?;
        let fits = |at: i64| at >= 0 && (at as u64) < len as u64;
        (fits(start) && fits(last)).then_some(())
    };
    if k == 0 {
        return Some(T::ZERO);
    }
    inside(x.len(), xs, dx)?;
    inside(y.len(), ys, dy)?;
    let (xs, ys) = (xs as usize, ys as usize);
    if dx == 1 && dy == 1 {
        return Some(dot(&x[xs..xs + k], &y[ys..ys + k]));
    }
    let (xs, ys, dx, dy) = (xs as isize, ys as isize, dx as isize, dy as isize);
    Some(lane_sum(k, |p| x[(xs + p as isize * dx) as usize] * y[(ys + p as isize * dy) as usize]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1e16 and -1e16 meet in lane 0 and cancel before the ones join them (15); summed in
    /// order, 1e16 swallows the ones before it. Every path and layout gives the lanes' sum.
    #[test]
    fn the_lane_order_is_kept_by_every_path() {
        let mut x = vec![1.0f64; 17];
        x[0] = 1e16;
        x[8] = -1e16;
        let ones = vec![1.0f64; 17];
        let expected = lane_sum(17, |p| x[p] * ones[p]);
        let in_order: f64 = x.iter().sum();
        assert_ne!(expected.to_bits(), in_order.to_bits(), "the test's input tells the orders apart");
        assert_eq!(dot(&x, &ones).to_bits(), expected.to_bits());
        assert_eq!(lane_dot(&x, &ones).to_bits(), expected.to_bits());
        assert_eq!(strided_dot(&x, (0, 1), &ones, (0, 1), 17).map(f64::to_bits), Some(expected.to_bits()));
        // The same terms reversed in memory, walked backwards.
        let reversed: Vec<f64> = x.iter().rev().copied().collect();
        assert_eq!(strided_dot(&reversed, (16, -1), &ones, (0, 1), 17).map(f64::to_bits), Some(expected.to_bits()));
        // Every other element of an interleaved copy.
        let spread: Vec<f64> = x.iter().flat_map(|&v| [v, f64::NAN]).collect();
        assert_eq!(strided_dot(&spread, (0, 2), &ones, (0, 1), 17).map(f64::to_bits), Some(expected.to_bits()));
    }

    #[test]
    fn short_and_empty_runs_sum_in_order() {
        let x = [1.5f32, -2.0, 4.25];
        assert_eq!(strided_dot(&x, (0, 1), &x, (0, 1), 3), Some(1.5 * 1.5 + 4.0 + 4.25 * 4.25));
        assert_eq!(strided_dot(&x, (0, 1), &x, (0, 1), 0), Some(0.0));
        assert_eq!(dot::<f32>(&[], &[]), 0.0);
    }

    #[test]
    fn runs_outside_their_slices_are_refused() {
        let x = [1.0f64; 10];
        assert_eq!(strided_dot(&x, (0, 1), &x, (0, 1), 11), None);
        assert_eq!(strided_dot(&x, (9, -1), &x, (0, 1), 11), None);
        assert_eq!(strided_dot(&x, (-1, 1), &x, (0, 1), 2), None);
        assert_eq!(strided_dot(&x, (0, i64::MAX), &x, (0, 1), 3), None);
        assert_eq!(strided_dot(&x, (0, 3), &x, (9, -3), 4), Some(4.0));
    }
}
