//! The synthetic bases passes and engines make, one range of ids each.
//!
//! Frontends number their bases from 1 up; the bases a pass or an engine makes for itself (the
//! partial arrays of a split reduction, partner buffers, spares, the versions of pure arrays)
//! take ids from the top of the id space down, each kind in a range of its own, so that no two
//! kinds and no frontend base ever share an id. Each constant is the first id of its range; ids
//! count down from it, at most the range's capacity (the distance to the next constant).

use vm_ir::BaseId;

/// Snapshots of inputs an instruction's output partially overlaps (the `cpu` engine).
pub const SNAPSHOT: u64 = u64::MAX - (1 << 20);

/// Partial arrays of split flat reductions ([`crate::rewrite::split_flat_reductions`]).
pub const PARTIAL: u64 = u64::MAX - (1 << 21);

/// Masks and position arrays of folded subview fills ([`crate::rewrite::fold_subview_fills`]).
pub const FILL: u64 = u64::MAX - 3 * (1 << 20);

/// Partner buffers of double-buffered arrays ([`crate::copyback`]).
pub const PARTNER: u64 = FILL - (1 << 19);

/// Spare buffers of recycled temporaries ([`crate::recycle`]).
pub const SPARE: u64 = u64::MAX - (1 << 22);

/// Widened float32 reduction inputs ([`crate::rewrite::widen_float32_reductions`]).
pub const WIDE: u64 = u64::MAX - 5 * (1 << 20);

/// Versions of pure arrays and kept loop invariants ([`crate::lazy`], [`crate::hoist`]).
pub const VERSION: u64 = u64::MAX - (1 << 23);

/// The lowest synthetic id: bases at or above it are synthetic.
pub const FIRST_SYNTHETIC: u64 = VERSION - (1 << 40);

/// True when `id` is a synthetic base (one no frontend knows).
pub fn is_synthetic(id: BaseId) -> bool {
    id.0 >= FIRST_SYNTHETIC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranges_follow_one_another_without_overlap() {
        // (first id, capacity) from the top down.
        let ranges = [
            (SNAPSHOT, 1 << 20),
            (PARTIAL, 1 << 20),
            (FILL, 1 << 19),
            (PARTNER, 1 << 19),
            (SPARE, 1 << 20),
            (WIDE, 3 << 20),
            (VERSION, 1 << 40),
        ];
        for w in ranges.windows(2) {
            let ((top, capacity), (next, _)) = (w[0], w[1]);
            assert_eq!(top - capacity, next, "the range from {top} ends where the next begins");
        }
        assert_eq!(VERSION - (1 << 40), FIRST_SYNTHETIC);
        assert!(is_synthetic(BaseId(SNAPSHOT)) && is_synthetic(BaseId(FIRST_SYNTHETIC)));
        assert!(!is_synthetic(BaseId(FIRST_SYNTHETIC - 1)) && !is_synthetic(BaseId(1)));
    }
}
