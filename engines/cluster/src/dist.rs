//! The block distribution: every base of `n` elements is cut into `p` contiguous blocks of its
//! flat index space, one per rank, as even as possible (block `r` is `[r*n/p, (r+1)*n/p)`). When
//! `n < p` some ranks own nothing. Every rank knows every block: the distribution is a pure
//! function of `(n, p)`.

use vm_ir::{Base, View};

/// The blocks of one base over `p` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocks {
    /// Elements of the base.
    pub n: u64,
    /// Number of ranks.
    pub p: usize,
}

impl Blocks {
    /// The blocks of a base of `n` elements over `p` ranks (`p >= 1`).
    pub fn new(n: u64, p: usize) -> Blocks {
        assert!(p >= 1, "a distribution needs at least one rank");
        Blocks { n, p }
    }

    /// First element of rank `r`'s block (`r` may be `p`: then `n`).
    pub fn start(&self, r: usize) -> u64 {
        ((r as u128 * self.n as u128) / self.p as u128) as u64
    }

    /// One past the last element of rank `r`'s block.
    pub fn end(&self, r: usize) -> u64 {
        self.start(r + 1)
    }

    /// Number of elements rank `r` owns.
    pub fn len(&self, r: usize) -> u64 {
        self.end(r) - self.start(r)
    }

    /// True when the base has no elements.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The rank owning element `o` (`0 <= o < n`).
    pub fn owner(&self, o: u64) -> usize {
        debug_assert!(o < self.n, "element {o} outside a base of {}", self.n);
        let r = ((o as u128 + 1) * self.p as u128 - 1) / self.n as u128;
        (r as usize).min(self.p - 1)
    }

    /// Starts of the blocks after the first: the boundaries `b` where an element `b - 1` and
    /// `b` may have different owners, restricted to `lo < b <= hi`.
    pub fn boundaries_in(&self, lo: u64, hi: u64) -> Vec<u64> {
        let (first, last) = (self.owner(lo), self.owner(hi));
        let mut out: Vec<u64> = (first + 1..=last).map(|r| self.start(r)).filter(|&b| lo < b && b <= hi).collect();
        out.dedup();
        out
    }

    /// The owner of every element of `v` when they all have one owner, else `None`; `Some(0)`
    /// for an empty view (it touches nothing).
    pub fn single_owner(&self, v: &View) -> Option<usize> {
        match v.extent() {
            None => Some(0),
            Some((lo, hi)) => {
                let r = self.owner(lo as u64);
                (self.owner(hi as u64) == r).then_some(r)
            }
        }
    }

    /// Rank `r`'s block of `base` as a base of its own (same id and dtype).
    pub fn local_base(&self, base: &Base, r: usize) -> Base {
        Base { id: base.id, dtype: base.dtype, nelem: self.len(r) }
    }

    /// `v` (a view of the global base, all of whose elements rank `r` owns) as a view of rank
    /// `r`'s block.
    pub fn localize(&self, v: &View, r: usize) -> View {
        View {
            base: self.local_base(&v.base, r),
            start: v.start - self.start(r) as i64,
            shape: v.shape.clone(),
            stride: v.stride.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn uneven_blocks_cover_everything_and_small_bases_leave_ranks_empty() {
        let b = Blocks::new(10, 4);
        let lens: Vec<u64> = (0..4).map(|r| b.len(r)).collect();
        assert_eq!(lens, [2, 3, 2, 3]);
        let tiny = Blocks::new(2, 4);
        assert_eq!((0..4).map(|r| tiny.len(r)).collect::<Vec<_>>(), [0, 1, 0, 1]);
        assert_eq!(tiny.owner(0), 1);
        assert_eq!(tiny.owner(1), 3);
        assert_eq!(b.boundaries_in(0, 9), [2, 5, 7]);
        assert_eq!(b.boundaries_in(2, 6), [5]);
        assert_eq!(Blocks::new(7, 1).owner(6), 0);
    }

    proptest! {
        #[test]
        fn owner_agrees_with_block_ranges(n in 1u64..200, p in 1usize..9) {
            let b = Blocks::new(n, p);
            prop_assert_eq!(b.start(0), 0);
            prop_assert_eq!(b.end(p - 1), n);
            for o in 0..n {
                let r = b.owner(o);
                prop_assert!(b.start(r) <= o && o < b.end(r), "element {} rank {}", o, r);
            }
            let bs = b.boundaries_in(0, n - 1);
            let want: Vec<u64> = (1..n).filter(|&o| b.owner(o) != b.owner(o - 1)).collect();
            prop_assert_eq!(bs, want);
        }
    }
}
