//! Bases (flat arrays) and views (strided windows onto them), and exact overlap analysis.

use crate::dtype::DType;
use crate::{Error, Result, ensure_valid};
use smallvec::SmallVec;
use std::fmt;

/// The most dimensions a view may have.
pub const MAX_NDIM: usize = 16;

/// Shape of a view: extents per dimension, outermost first.
pub type Shape = SmallVec<[usize; 4]>;
/// Strides of a view, in elements (not bytes); 0 broadcasts, negative walks backwards.
pub type Strides = SmallVec<[i64; 4]>;

/// Identifies a base for its whole life. Ids are never reused within one runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BaseId(pub u64);

impl fmt::Display for BaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A flat, typed array: the unit of allocation and ownership. Views point into bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Base {
    /// The base's identity.
    pub id: BaseId,
    /// Element type.
    pub dtype: DType,
    /// Number of elements.
    pub nelem: u64,
}

impl Base {
    /// Size of the base's data in bytes.
    pub fn nbytes(&self) -> usize {
        self.nelem as usize * self.dtype.size()
    }
}

/// How two views share elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// No element is in both.
    Disjoint,
    /// Both visit the same elements in the same order (same start, shape and strides once
    /// dimensions of extent 1 are dropped).
    Identical,
    /// Some element is in both, or the analysis could not rule it out within its work bound.
    Partial,
}

/// A multidimensional strided window onto a base. Element `idx` of the view is element
/// `start + sum(idx[d] * stride[d])` of the base. A view with `ndim() == 0` has one element.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct View {
    /// The base viewed.
    pub base: Base,
    /// Offset of element (0, ..., 0) in the base, in elements.
    pub start: i64,
    /// Extent of each dimension.
    pub shape: Shape,
    /// Stride of each dimension, in elements.
    pub stride: Strides,
}

// Views are cloned on every instruction's path; `from_slice` copies the extents and strides in
// one move where the derived clone would push them one by one.
impl Clone for View {
    #[inline]
    fn clone(&self) -> View {
        View {
            base: self.base,
            start: self.start,
            shape: Shape::from_slice(&self.shape),
            stride: Strides::from_slice(&self.stride),
        }
    }
}

impl View {
    /// The whole base as a contiguous 1-D view.
    pub fn of_base(base: Base) -> View {
        View { base, start: 0, shape: Shape::from_slice(&[base.nelem as usize]), stride: Strides::from_slice(&[1]) }
    }

    /// A view with the given layout, checked with [`View::validate`].
    pub fn new(base: Base, start: i64, shape: &[usize], stride: &[i64]) -> Result<View> {
        let v = View { base, start, shape: Shape::from_slice(shape), stride: Strides::from_slice(stride) };
        v.validate()?;
        Ok(v)
    }

    /// A contiguous row-major view of `shape` starting at element `start`.
    pub fn contiguous(base: Base, start: i64, shape: &[usize]) -> Result<View> {
        View::new(base, start, shape, &row_major_strides(shape))
    }

    /// The row-major view of `shape` over all of `base`, whose `nelem` is the product of `shape`
    /// (a new array's view: valid by construction, so not validated again).
    pub fn row_major(base: Base, shape: &[usize]) -> View {
        debug_assert_eq!(shape.iter().product::<usize>() as u64, base.nelem);
        View { base, start: 0, shape: Shape::from_slice(shape), stride: row_major_strides(shape) }
    }

    /// Element type (the base's).
    #[inline]
    pub fn dtype(&self) -> DType {
        self.base.dtype
    }

    /// Number of dimensions.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements visited (1 for a 0-dimensional view).
    #[inline]
    pub fn nelem(&self) -> usize {
        self.shape.iter().product()
    }

    /// Offset in the base of the element at multi-index `idx`.
    pub fn offset_of(&self, idx: &[usize]) -> i64 {
        self.start + idx.iter().zip(&self.stride).map(|(&i, &s)| i as i64 * s).sum::<i64>()
    }

    /// The base offsets of the view's elements, in row-major order (the last dimension varying
    /// fastest): one odometer step per element, cheaper than [`View::offset_at`] for a walk.
    pub fn offsets(&self) -> Offsets<'_> {
        Offsets { view: self, idx: smallvec::smallvec![0; self.ndim()], offset: self.start, remaining: self.nelem() }
    }

    /// Offset in the base of the element at row-major position `k` (`k < nelem()`): the
    /// multi-index of `k` with the last dimension varying fastest, through
    /// [`View::offset_of`]. For random access (gather, scatter); walking a view in order is
    /// cheaper with [`View::offsets`].
    pub fn offset_at(&self, mut k: usize) -> i64 {
        let mut offset = self.start;
        for (&n, &s) in self.shape.iter().zip(&self.stride).rev() {
            offset += (k % n) as i64 * s;
            k /= n;
        }
        offset
    }

    /// Smallest and largest base offsets the view touches, or `None` when it is empty or the
    /// arithmetic overflows `i64` (which [`View::validate`] rejects).
    pub fn extent(&self) -> Option<(i64, i64)> {
        if self.nelem() == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.start, self.start);
        for (&n, &s) in self.shape.iter().zip(&self.stride) {
            let reach = (n as i64 - 1).checked_mul(s)?;
            if reach < 0 {
                lo = lo.checked_add(reach)?;
            } else {
                hi = hi.checked_add(reach)?;
            }
        }
        Some((lo, hi))
    }

    /// Checks the layout: at most [`MAX_NDIM`] dims, as many strides as dims, and every element
    /// inside the base. Errors name the first problem.
    pub fn validate(&self) -> Result<()> {
        ensure_valid!(self.ndim() <= MAX_NDIM, None, "view has {} dimensions; at most {MAX_NDIM} allowed", self.ndim());
        ensure_valid!(
            self.stride.len() == self.shape.len(),
            None,
            "view has {} dimensions but {} strides",
            self.shape.len(),
            self.stride.len()
        );
        // One pass (every instruction's every view comes here): the element count and the
        // extent ([`View::extent`]), whose overflow matters only for a view that has elements.
        let (mut n, mut lo, mut hi, mut fits) = (1usize, self.start, self.start, true);
        for (&e, &s) in self.shape.iter().zip(&self.stride) {
            n = n.checked_mul(e).ok_or_else(|| Error::invalid(None, "view shape overflows"))?;
            let moved = match (e as i64).wrapping_sub(1).checked_mul(s) {
                Some(reach) if reach < 0 => lo.checked_add(reach).map(|v| lo = v),
                Some(reach) => hi.checked_add(reach).map(|v| hi = v),
                None => None,
            };
            fits &= moved.is_some();
        }
        if n == 0 {
            return Ok(());
        }
        ensure_valid!(fits, None, "view {self} overflows 64-bit offsets");
        ensure_valid!(
            lo >= 0 && (hi as u64) < self.base.nelem,
            None,
            "view {self} reaches elements {lo}..={hi}, outside its base of {} elements",
            self.base.nelem
        );
        Ok(())
    }

    /// True when the view is all of its base, from element 0, in row-major order.
    pub fn is_whole_base(&self) -> bool {
        self.start == 0 && self.nelem() as u64 == self.base.nelem && self.is_contiguous()
    }

    /// True when the view visits a contiguous run of the base in row-major order.
    pub fn is_contiguous(&self) -> bool {
        let mut expect = 1i64;
        for (&n, &s) in self.shape.iter().zip(&self.stride).rev() {
            if n != 1 && s != expect {
                return false;
            }
            expect *= n as i64;
        }
        true
    }

    /// The stride `s` when the view visits its elements, in row-major order, at base offsets
    /// `start + k * s` (one axis once dimensions of extent 1 are dropped and axes that continue
    /// one another are merged: a column, a row, a contiguous block); `None` for any other view.
    /// A view of at most one element has stride 1.
    pub fn line_stride(&self) -> Option<i64> {
        let mut line: Option<(usize, i64)> = None; // (elements, stride) of the axes merged so far
        for (&n, &s) in self.shape.iter().zip(&self.stride).rev() {
            line = match line {
                _ if n == 0 => return Some(1),
                _ if n == 1 => line,
                None => Some((n, s)),
                Some((m, t)) if s == t * m as i64 => Some((m * n, t)),
                Some(_) => {
                    // Only extents 0 or 1 may follow; an extent 0 anywhere makes the view empty.
                    return self.shape.contains(&0).then_some(1);
                }
            };
        }
        Some(line.map_or(1, |(_, s)| s))
    }

    /// The dimensions of extent other than 1, as (extent, stride): extents of 1 do not affect
    /// which elements are visited, or in which order.
    fn squeezed(&self) -> impl Iterator<Item = (usize, i64)> + '_ {
        self.shape.iter().zip(&self.stride).filter(|(n, _)| **n != 1).map(|(&n, &s)| (n, s))
    }

    /// True when `other` visits the same elements of the same base in the same order
    /// (`overlap` would answer [`Overlap::Identical`]), without solving for a partial overlap.
    pub fn is_identical(&self, other: &View) -> bool {
        self.base.id == other.base.id
            && self.start == other.start
            && self.nelem() > 0
            && other.nelem() > 0
            && self.squeezed().eq(other.squeezed())
    }

    /// How this view shares elements with `other` (exact, up to a bound on search work beyond
    /// which it answers [`Overlap::Partial`], the safe answer).
    pub fn overlap(&self, other: &View) -> Overlap {
        if self.base.id != other.base.id {
            return Overlap::Disjoint;
        }
        let (Some((alo, ahi)), Some((blo, bhi))) = (self.extent(), other.extent()) else {
            return Overlap::Disjoint;
        };
        if self.start == other.start && self.squeezed().eq(other.squeezed()) {
            return Overlap::Identical;
        }
        if ahi < blo || bhi < alo {
            return Overlap::Disjoint;
        }
        // Does sum(a_i * x_i) - sum(b_j * y_j) = other.start - self.start have a solution with
        // every index in its range? Solved as one bounded linear Diophantine equation, its terms
        // first made positive (`c * x` with `c < 0` is `c * m + |c| * (m - x)`) and those of
        // equal coefficient joined (`c * x + c * y` reaches exactly `c * z`, `z <= m_x + m_y`):
        // two views of one layout at different starts, the common case, leave half the terms.
        // (coefficient > 0, max index); index >= 0. On the stack: this runs for every pair of
        // views of one base that a batch's dependence analysis meets.
        let mut terms: SmallVec<[(i64, i64); 8]> = SmallVec::new();
        let mut target = i128::from(other.start) - i128::from(self.start);
        let signed = self.shape.iter().zip(&self.stride).map(|(&n, &s)| (n, s));
        let signed = signed.chain(other.shape.iter().zip(&other.stride).map(|(&n, &s)| (n, -s)));
        for (n, c) in signed {
            if n <= 1 || c == 0 {
                continue;
            }
            let m = n as i64 - 1;
            if c < 0 {
                target -= i128::from(c) * i128::from(m);
            }
            let c = c.unsigned_abs() as i64;
            match terms.iter_mut().find(|t| t.0 == c) {
                Some(t) => match t.1.checked_add(m) {
                    Some(joined) => t.1 = joined,
                    None => return Overlap::Partial,
                },
                None => terms.push((c, m)),
            }
        }
        match bounded_solution_exists(&mut terms, target) {
            Some(false) => Overlap::Disjoint,
            _ => Overlap::Partial,
        }
    }
}

/// `a == b` for shapes, compared in place: slice equality calls `memcmp`, which costs more than
/// the few dimensions of a shape (every element-wise operation compares its operands' shapes).
#[inline]
pub fn same_shape(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Strides of a contiguous row-major array of `shape`.
pub fn row_major_strides(shape: &[usize]) -> Strides {
    let mut stride = Strides::from_elem(0, shape.len());
    let mut acc = 1i64;
    for d in (0..shape.len()).rev() {
        stride[d] = acc;
        acc *= shape[d].max(1) as i64;
    }
    stride
}

/// Whether `sum(c_k * x_k) == target` has a solution with `0 <= x_k <= m_k` for `(c_k, m_k)` in
/// `terms`. `None` when the search exceeded its work bound. Depth-first over the terms in order of
/// decreasing |c|, pruning by the interval the remaining terms can reach and by their gcd.
fn bounded_solution_exists(terms: &mut [(i64, i64)], target: i128) -> Option<bool> {
    // One or two terms (two 1-d views, two of one layout) need no search.
    match *terms {
        [] => return Some(target == 0),
        [(c, m)] => {
            let c = i128::from(c);
            return Some(target % c == 0 && (0..=i128::from(m)).contains(&(target / c)));
        }
        [(c1, m1), (c2, m2)] => {
            if let Some(found) = two_terms(c1.into(), m1.into(), c2.into(), m2.into(), target) {
                return Some(found);
            }
        }
        _ => {}
    }
    terms.sort_by_key(|&(c, _)| std::cmp::Reverse(c.unsigned_abs()));
    let n = terms.len();
    // Suffix data: the reachable interval and gcd of terms[k..].
    let mut lo: SmallVec<[i128; 9]> = smallvec::smallvec![0; n + 1];
    let mut hi: SmallVec<[i128; 9]> = smallvec::smallvec![0; n + 1];
    let mut g: SmallVec<[u64; 9]> = smallvec::smallvec![0; n + 1];
    for k in (0..n).rev() {
        let (c, m) = (terms[k].0 as i128, terms[k].1 as i128);
        let (a, b) = if c < 0 { (c * m, 0) } else { (0, c * m) };
        lo[k] = lo[k + 1] + a;
        hi[k] = hi[k + 1] + b;
        g[k] = gcd(g[k + 1], terms[k].0.unsigned_abs());
    }
    let mut work = 0u32;
    fn search(
        k: usize,
        target: i128,
        terms: &[(i64, i64)],
        lo: &[i128],
        hi: &[i128],
        g: &[u64],
        work: &mut u32,
    ) -> Option<bool> {
        *work += 1;
        if *work > 100_000 {
            return None;
        }
        if target < lo[k] || target > hi[k] {
            return Some(false);
        }
        if k == terms.len() {
            return Some(target == 0);
        }
        if g[k] != 0 && target % g[k] as i128 != 0 {
            return Some(false);
        }
        if let [(c1, m1), (c2, m2)] = terms[k..] {
            // Two terms left (two 1-d views): solved in closed form rather than by trying every
            // index of the first (a strided slice against another visits up to millions).
            if let Some(found) = two_terms(c1.into(), m1.into(), c2.into(), m2.into(), target) {
                return Some(found);
            }
        }
        let (c, m) = (terms[k].0 as i128, terms[k].1 as i128);
        // x must leave a remainder the later terms can reach: lo[k+1] <= target - c*x <= hi[k+1].
        let (a, b) = (target - hi[k + 1], target - lo[k + 1]);
        let (xmin, xmax) = if c > 0 { (div_ceil(a, c), div_floor(b, c)) } else { (div_ceil(b, c), div_floor(a, c)) };
        for x in xmin.max(0)..=xmax.min(m) {
            if search(k + 1, target - c * x, terms, lo, hi, g, work)? {
                return Some(true);
            }
        }
        Some(false)
    }
    search(0, target, terms, &lo, &hi, &g, &mut work)
}

/// Whether `c1 * x + c2 * y == t` has a solution with `0 <= x <= m1` and `0 <= y <= m2`
/// (`c1`, `c2` nonzero): the solutions are `x0 + k * c2 / g, y0 - k * c1 / g` for one found by
/// the extended Euclidean algorithm, so the answer is whether the bounds leave some `k`. `None`
/// when a product would overflow.
fn two_terms(c1: i128, m1: i128, c2: i128, m2: i128, t: i128) -> Option<bool> {
    // In machine words when every value is small (always, for real arrays): i128 division is a
    // library call, and a batch's dependence analysis solves this for many pairs of views.
    const SMALL: i128 = 1 << 30;
    if [c1, m1, c2, m2].iter().all(|x| x.abs() < SMALL)
        && t.abs() < SMALL * SMALL
        && let Some(found) = two_terms_i64(c1 as i64, m1 as i64, c2 as i64, m2 as i64, t as i64)
    {
        return Some(found);
    }
    two_terms_wide(c1, m1, c2, m2, t)
}

/// Defines `$name`, [`two_terms`] computed in `$int`: the solutions are `x0 + k * c2 / g,
/// y0 - k * c1 / g` for one found by the extended Euclidean algorithm, so the answer is whether
/// the bounds leave some `k`; `None` when a product overflows `$int`.
macro_rules! two_terms_in {
    ($name:ident, $int:ty) => {
        fn $name(c1: $int, m1: $int, c2: $int, m2: $int, t: $int) -> Option<bool> {
            let floor_div = |a: $int, b: $int| {
                let q = a / b;
                if (a % b != 0) && ((a < 0) != (b < 0)) { q - 1 } else { q }
            };
            let ceil_div = |a: $int, b: $int| -floor_div(-a, b);
            // (g, u, v) with c1 * u + c2 * v == g.
            let (mut r0, mut r1, mut u0, mut u1, mut v0, mut v1) = (c1, c2, 1, 0, 0, 1);
            while r1 != 0 {
                let q = r0 / r1;
                (r0, r1) = (r1, r0 - q * r1);
                (u0, u1) = (u1, u0 - q * u1);
                (v0, v1) = (v1, v0 - q * v1);
            }
            let (mut g, mut u, mut v) = (r0, u0, v0);
            if g < 0 {
                (g, u, v) = (-g, -u, -v);
            }
            if g == 0 || t % g != 0 {
                return Some(false);
            }
            let q = t / g;
            let (x0, y0) = (u.checked_mul(q)?, v.checked_mul(q)?);
            // The k with 0 <= base + k * step <= max, as an interval.
            let k_range = |base: $int, step: $int, max: $int| -> Option<($int, $int)> {
                let (low, high) = (base.checked_neg()?, max.checked_sub(base)?);
                Some(if step > 0 {
                    (ceil_div(low, step), floor_div(high, step))
                } else {
                    (ceil_div(high, step), floor_div(low, step))
                })
            };
            // 0 <= x0 + k * (c2 / g) <= m1 and 0 <= y0 - k * (c1 / g) <= m2.
            let (kx_lo, kx_hi) = k_range(x0, c2 / g, m1)?;
            let (ky_lo, ky_hi) = k_range(y0, -(c1 / g), m2)?;
            Some(kx_lo.max(ky_lo) <= kx_hi.min(ky_hi))
        }
    };
}

// In machine words for `|c|, m < 2^30` and `|t| < 2^60` (what [`two_terms`] tries first), and
// in `i128` otherwise.
two_terms_in!(two_terms_i64, i64);
two_terms_in!(two_terms_wide, i128);

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) { q - 1 } else { q }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

impl fmt::Display for View {
    /// `#id{start=S shape=[..] stride=[..]}`; the text form in `asm` prints views by base name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{{start={} shape={:?} stride={:?}}}", self.base.id, self.start, &self.shape[..], &self.stride[..])
    }
}

/// The base offsets of a view's elements in row-major order ([`View::offsets`]).
#[derive(Debug, Clone)]
pub struct Offsets<'v> {
    view: &'v View,
    /// The multi-index of the next element.
    idx: SmallVec<[usize; 4]>,
    /// Its offset.
    offset: i64,
    remaining: usize,
}

impl Iterator for Offsets<'_> {
    type Item = i64;

    #[inline]
    fn next(&mut self) -> Option<i64> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let here = self.offset;
        if self.remaining > 0 {
            // Odometer step: bump the last dimension, carrying into earlier ones.
            for d in (0..self.idx.len()).rev() {
                self.idx[d] += 1;
                self.offset += self.view.stride[d];
                if self.idx[d] < self.view.shape[d] {
                    break;
                }
                self.offset -= self.view.stride[d] * self.view.shape[d] as i64;
                self.idx[d] = 0;
            }
        }
        Some(here)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_walk_row_major_as_random_access_does() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 12 };
        let v = View::new(b, 11, &[2, 3], &[-6, -2]).unwrap();
        assert_eq!(v.offsets().collect::<Vec<_>>(), vec![11, 9, 7, 5, 3, 1]);
        assert_eq!(v.offsets().len(), 6);
        let s = View::new(b, 4, &[], &[]).unwrap();
        assert_eq!(s.offsets().collect::<Vec<_>>(), vec![4]);
        let empty = View::new(b, 0, &[2, 0, 3], &[6, 3, 1]).unwrap();
        assert_eq!(empty.offsets().count(), 0);
        for v in [
            v,
            s,
            View::new(b, 3, &[2, 1, 3], &[0, 5, 4]).unwrap(),
            View::new(b, 0, &[2, 2, 1, 3], &[6, 3, 0, 1]).unwrap(),
        ] {
            let random_access: Vec<i64> = (0..v.nelem()).map(|k| v.offset_at(k)).collect();
            assert_eq!(random_access, v.offsets().collect::<Vec<_>>(), "{v}");
        }
    }
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn base(n: u64) -> Base {
        Base { id: BaseId(1), dtype: DType::F64, nelem: n }
    }

    #[test]
    fn bounds_are_checked() {
        let b = base(100);
        assert!(View::new(b, 0, &[10, 10], &[10, 1]).is_ok());
        assert!(View::new(b, 1, &[10, 10], &[10, 1]).is_err());
        assert!(View::new(b, 99, &[10], &[-10]).is_ok());
        assert!(View::new(b, 5, &[10], &[-1]).is_err());
        assert!(View::new(b, 0, &[1000], &[0]).is_ok(), "broadcast stays in bounds");
        assert!(View::new(b, 0, &[0, 5], &[7777, 1]).is_ok(), "an empty view touches nothing");
        assert!(View::new(b, 0, &[2, i64::MAX as usize], &[i64::MAX, 1]).is_err());
        assert!(View::new(b, 0, &[1; 17], &[0; 17]).is_err());
        assert!(View::new(b, 0, &[0, 3], &[i64::MAX, i64::MAX]).is_ok(), "empty: its extent may overflow");
        let err = |v: View| v.validate().unwrap_err().to_string();
        let raw = |start, shape: &[usize], stride: &[i64]| View {
            base: b,
            start,
            shape: Shape::from_slice(shape),
            stride: Strides::from_slice(stride),
        };
        assert!(err(raw(0, &[usize::MAX, 3], &[0, 0])).contains("shape overflows"));
        assert!(err(raw(0, &[3, 3], &[i64::MAX, 1])).contains("overflows 64-bit offsets"));
        assert!(err(raw(i64::MIN + 1, &[3], &[-1])).contains("overflows 64-bit offsets"));
        assert!(err(raw(0, &[3], &[1, 1])).contains("strides"));
    }

    proptest! {
        /// A view is valid exactly when every element it visits lies in its base.
        #[test]
        fn validate_accepts_exactly_the_views_inside_their_base(
            start in -20i64..40,
            shape in proptest::collection::vec(0usize..4, 0..4),
            stride in proptest::collection::vec(-9i64..10, 4),
        ) {
            let v = View { base: base(30), start, shape: Shape::from_slice(&shape), stride: Strides::from_slice(&stride[..shape.len()]) };
            let inside = (0..v.nelem()).all(|k| (0..30).contains(&v.offset_at(k)));
            prop_assert_eq!(v.validate().is_ok(), inside);
        }
    }

    #[test]
    fn line_strides_of_rows_columns_and_blocks() {
        let b = base(1000);
        let line = |start, shape: &[usize], stride: &[i64]| View::new(b, start, shape, stride).unwrap().line_stride();
        assert_eq!(line(3, &[10, 10], &[10, 1]), Some(1), "a contiguous block");
        assert_eq!(line(3, &[10, 1], &[10, 1]), Some(10), "a column");
        assert_eq!(line(3, &[1, 10, 1], &[0, 10, 7]), Some(10), "a column between extents 1");
        assert_eq!(line(300, &[4, 5], &[-20, -4]), Some(-4), "reversed rows of a strided block");
        assert_eq!(line(3, &[4, 5], &[10, 1]), None, "rows with gaps between them");
        assert_eq!(line(3, &[4, 5], &[0, 1]), None, "a broadcast row");
        assert_eq!(line(3, &[5], &[0]), Some(0), "one element broadcast");
        assert_eq!(line(3, &[4, 0], &[10, 1]), Some(1), "empty");
        assert_eq!(line(3, &[0, 4, 5], &[7, 10, 1]), Some(1), "empty, the extent 0 leading");
        assert_eq!(line(3, &[], &[]), Some(1), "0-d");
    }

    proptest! {
        /// Whenever a view has a line stride, its elements are at `start + k * stride`.
        #[test]
        fn line_stride_matches_the_offsets(
            shape in proptest::collection::vec(0usize..4, 0..5),
            stride in proptest::collection::vec(-6i64..7, 5),
        ) {
            let stride = &stride[..shape.len()];
            let v = View::new(base(10_000), 5_000, &shape, stride).unwrap();
            if let Some(s) = v.line_stride() {
                for k in 0..v.nelem() {
                    prop_assert_eq!(v.offset_at(k), v.start + k as i64 * s, "{} element {}", v, k);
                }
            } else {
                prop_assert!(v.nelem() > 1);
            }
        }
    }

    #[test]
    fn stencil_neighbours_overlap_partially() {
        let b = base(12 * 12);
        let center = View::new(b, 13, &[10, 10], &[12, 1]).unwrap();
        let north = View::new(b, 1, &[10, 10], &[12, 1]).unwrap();
        assert_eq!(center.overlap(&north), Overlap::Partial);
        assert_eq!(center.overlap(&center.clone()), Overlap::Identical);
        let even = View::new(b, 0, &[72], &[2]).unwrap();
        let odd = View::new(b, 1, &[72], &[2]).unwrap();
        assert_eq!(even.overlap(&odd), Overlap::Disjoint);
    }

    fn offsets(v: &View) -> HashSet<i64> {
        let mut out = HashSet::new();
        let n = v.nelem();
        for flat in 0..n {
            let mut rem = flat;
            let mut idx = vec![0; v.ndim()];
            for d in (0..v.ndim()).rev() {
                idx[d] = rem % v.shape[d];
                rem /= v.shape[d];
            }
            out.insert(v.offset_of(&idx));
        }
        out
    }

    #[test]
    fn long_strided_slices_overlap_where_they_share_a_multiple() {
        // `x[p::p]` and `x[q::q]` of 200,001 elements share element k*lcm(p, q) when it fits.
        let n = 200_001u64;
        let slice = |p: i64| View::new(base(n), p, &[((n as i64 - 1 - p) / p + 1) as usize], &[p]).unwrap();
        let gcd = |a: i64, b: i64| (1..=a.min(b)).rev().find(|d| a % d == 0 && b % d == 0).unwrap();
        for (p, q) in [(2, 3), (3, 5), (449, 443), (449, 457), (1999, 2003), (6, 4), (997, 1994), (50_000, 70_000)] {
            let shared = p / gcd(p, q) * q < n as i64;
            let expected = if shared { Overlap::Partial } else { Overlap::Disjoint };
            assert_eq!(slice(p).overlap(&slice(q)), expected, "{p} {q}");
        }
    }

    fn arb_view(nelem: u64) -> impl Strategy<Value = View> {
        (1usize..=3)
            .prop_flat_map(|nd| {
                (proptest::collection::vec(0usize..5, nd), proptest::collection::vec(-7i64..8, nd), 0i64..64)
            })
            .prop_filter_map("in bounds", move |(shape, stride, start)| {
                View::new(base(nelem), start, &shape, &stride).ok()
            })
    }

    proptest! {
        #[test]
        fn overlap_is_exact(a in arb_view(64), b in arb_view(64)) {
            let (sa, sb) = (offsets(&a), offsets(&b));
            let shared = !sa.is_disjoint(&sb);
            match a.overlap(&b) {
                Overlap::Disjoint => prop_assert!(!shared),
                Overlap::Partial => prop_assert!(shared),
                Overlap::Identical => prop_assert_eq!(sa, sb),
            }
            prop_assert_eq!(a.overlap(&b), b.overlap(&a));
            prop_assert_eq!(a.is_identical(&b), a.overlap(&b) == Overlap::Identical);
        }

        #[test]
        fn one_layout_at_two_starts_overlaps_exactly(a in arb_view(64), start in 0i64..64) {
            // Slices of one array laid out alike (`out[:, i, j, :]` for each `i, j`).
            if let Ok(b) = View::new(a.base, start, &a.shape, &a.stride) {
                let shared = !offsets(&a).is_disjoint(&offsets(&b));
                match a.overlap(&b) {
                    Overlap::Disjoint => prop_assert!(!shared),
                    Overlap::Partial => prop_assert!(shared),
                    Overlap::Identical => prop_assert_eq!(offsets(&a), offsets(&b)),
                }
            }
        }

        #[test]
        fn two_terms_in_machine_words_agree_with_i128(
            c1 in prop_oneof![-(1i64 << 29)..-1, 1i64..(1 << 29), -40i64..41],
            c2 in prop_oneof![-(1i64 << 29)..-1, 1i64..(1 << 29), -40i64..41],
            m1 in 0i64..(1 << 29),
            m2 in 0i64..(1 << 29),
            t in prop_oneof![-(1i64 << 59)..(1 << 59), -5000i64..5000],
        ) {
            prop_assume!(c1 != 0 && c2 != 0);
            let wide = two_terms_wide(c1.into(), m1.into(), c2.into(), m2.into(), t.into());
            if let Some(found) = two_terms_i64(c1, m1, c2, m2, t) {
                prop_assert_eq!(Some(found), wide);
            }
        }

        #[test]
        fn bounded_solutions_are_found_exactly(
            terms in proptest::collection::vec((prop_oneof![-60i64..0, 1i64..61], 0i64..25), 1..=4),
            target in -900i64..900,
        ) {
            // Every combination of indices, against the search (which solves two terms in closed form).
            let mut sums = HashSet::from([0i64]);
            for &(c, m) in &terms {
                sums = sums.iter().flat_map(|&s| (0..=m).map(move |x| s + c * x)).collect();
            }
            let mut sorted = terms.clone();
            prop_assert_eq!(bounded_solution_exists(&mut sorted, target.into()), Some(sums.contains(&target)));
        }

        #[test]
        fn offset_at_follows_the_row_major_multi_index(a in arb_view(64)) {
            let mut idx = vec![0usize; a.ndim()];
            for k in 0..a.nelem() {
                prop_assert_eq!(a.offset_at(k), a.offset_of(&idx));
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < a.shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }

        #[test]
        fn extent_bounds_every_offset(a in arb_view(64)) {
            if let Some((lo, hi)) = a.extent() {
                for o in offsets(&a) {
                    prop_assert!(lo <= o && o <= hi);
                }
            }
        }
    }
}
