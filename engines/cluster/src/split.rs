//! Splitting an iteration space by owner: the heart of owner-computes.
//!
//! An instruction iterates over a shape; each of its operands is a view with that many
//! dimensions (an input that is reduced along an axis has the axis as a dimension that is not
//! split). [`split`] cuts the iteration space into boxes ([`Region`]s) such that, in every box,
//! each operand restricted to the box lies inside one rank's block of its base. A box is then
//! computed by the owner of its output; inputs whose block belongs to another rank are the only
//! elements that travel.
//!
//! Cuts are placed exactly where a block boundary of some operand falls (not by bisection), so
//! a contiguous 2-D array split by rows gives one box per rank plus one or two boxes per
//! boundary row that straddles two blocks.

use crate::dist::Blocks;
use vm_ir::View;

/// A box of an iteration space: its origin and its extents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Index of the box's first element, per dimension.
    pub lo: Vec<usize>,
    /// Extent per dimension.
    pub shape: Vec<usize>,
}

impl Region {
    /// The whole of `shape`.
    pub fn whole(shape: &[usize]) -> Region {
        Region { lo: vec![0; shape.len()], shape: shape.to_vec() }
    }

    /// Number of elements in the box.
    pub fn nelem(&self) -> usize {
        self.shape.iter().product()
    }
}

/// `v` restricted to the box `r` of its index space (same strides, shifted start).
pub fn restrict(v: &View, r: &Region) -> View {
    let start = v.start + r.lo.iter().zip(&v.stride).map(|(&l, &s)| l as i64 * s).sum::<i64>();
    View { base: v.base, start, shape: r.shape.iter().copied().collect(), stride: v.stride.clone() }
}

/// One box of a split and the owner of each operand's part of it: `None` when that part still
/// spans several blocks because the dimensions it spans along may not be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The box.
    pub region: Region,
    /// Per operand, the rank owning all of its elements in the box.
    pub owners: Vec<Option<usize>>,
}

/// Splits the iteration space `shape` so that each operand (a view with `shape.len()`
/// dimensions) lies within one block per piece, cutting only dimensions marked `splittable`.
/// Pieces are disjoint, cover the space, come in row-major order of their origins within each
/// cut, and are never empty. `p` is the number of ranks.
pub fn split(shape: &[usize], operands: &[&View], splittable: &[bool], p: usize) -> Vec<Piece> {
    debug_assert!(operands.iter().all(|v| v.ndim() == shape.len()) && splittable.len() == shape.len());
    let blocks: Vec<Blocks> = operands.iter().map(|v| Blocks::new(v.base.nelem, p)).collect();
    let mut out = Vec::new();
    split_rec(Region::whole(shape), operands, &blocks, splittable, &mut out);
    out
}

fn split_rec(region: Region, ops: &[&View], blocks: &[Blocks], splittable: &[bool], out: &mut Vec<Piece>) {
    if region.shape.contains(&0) {
        return;
    }
    let subs: Vec<View> = ops.iter().map(|v| restrict(v, &region)).collect();
    let owners: Vec<Option<usize>> = subs.iter().zip(blocks).map(|(s, b)| b.single_owner(s)).collect();
    for k in 0..ops.len() {
        if owners[k].is_some() {
            continue;
        }
        let sub = &subs[k];
        let dim = (0..region.shape.len())
            .filter(|&d| splittable[d] && region.shape[d] > 1 && sub.stride[d] != 0)
            .max_by_key(|&d| (sub.stride[d].unsigned_abs(), d));
        let Some(d) = dim else { continue };
        let n = region.shape[d];
        let mut bounds = vec![0];
        bounds.extend(cuts_along(sub, d, &blocks[k]));
        bounds.push(n);
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mut run = region.clone();
            run.lo[d] += a;
            run.shape[d] = b - a;
            if b - a > 1 && blocks[k].single_owner(&restrict(ops[k], &run)).is_none() {
                // Every slab of the run straddles a boundary: cut it into single slabs.
                for i in a..b {
                    let mut slab = region.clone();
                    slab.lo[d] += i;
                    slab.shape[d] = 1;
                    split_rec(slab, ops, blocks, splittable, out);
                }
            } else {
                split_rec(run, ops, blocks, splittable, out);
            }
        }
        return;
    }
    out.push(Piece { region, owners });
}

/// Indices `0 < i < n` along dimension `d` of `v` where, for some block boundary, the slab at
/// `i` lies on another side of it than the slab at `i - 1` (by its first or its last element).
/// Between consecutive cuts, every slab either straddles the same boundaries or none.
fn cuts_along(v: &View, d: usize, blocks: &Blocks) -> Vec<usize> {
    let Some((lo, hi)) = v.extent() else { return Vec::new() };
    let (s, n) = (v.stride[d], v.shape[d] as i64);
    let (mut rlo, mut rhi) = (0i64, 0i64);
    for (e, (&ext, &st)) in v.shape.iter().zip(&v.stride).enumerate() {
        if e != d {
            let reach = (ext as i64 - 1) * st;
            if reach < 0 {
                rlo += reach;
            } else {
                rhi += reach;
            }
        }
    }
    let mut cuts = Vec::new();
    for b in blocks.boundaries_in(lo as u64, hi as u64) {
        for x in [b as i64 - v.start - rlo, b as i64 - v.start - rhi] {
            let i = if s > 0 { div_ceil(x, s) } else { div_floor(x, s) + 1 };
            if 0 < i && i < n {
                cuts.push(i as usize);
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

fn div_floor(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) { q - 1 } else { q }
}

fn div_ceil(a: i64, b: i64) -> i64 {
    -div_floor(-a, b)
}

/// Visits every multi-index of `shape` in row-major order.
pub fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        f(&idx);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use vm_ir::{Base, BaseId, DType};

    fn base(id: u64, n: u64) -> Base {
        Base { id: BaseId(id), dtype: DType::F64, nelem: n }
    }

    /// Checks that pieces partition the space and that claimed owners own every element.
    fn check(shape: &[usize], ops: &[&View], splittable: &[bool], p: usize) -> Vec<Piece> {
        let pieces = split(shape, ops, splittable, p);
        let total: usize = shape.iter().product();
        let mut seen = std::collections::HashMap::new();
        for piece in &pieces {
            assert!(piece.region.nelem() > 0);
            for (k, v) in ops.iter().enumerate() {
                let sub = restrict(v, &piece.region);
                let blocks = Blocks::new(v.base.nelem, p);
                match piece.owners[k] {
                    Some(r) => for_each_index(&sub.shape, |i| assert_eq!(blocks.owner(sub.offset_of(i) as u64), r)),
                    None => assert!(blocks.single_owner(&sub).is_none()),
                }
            }
            for_each_index(&piece.region.shape, |i| {
                let g: Vec<usize> = i.iter().zip(&piece.region.lo).map(|(a, b)| a + b).collect();
                *seen.entry(g).or_insert(0) += 1;
            });
        }
        assert_eq!(seen.len(), total, "pieces cover the space");
        assert!(seen.values().all(|&c| c == 1), "pieces are disjoint");
        pieces
    }

    #[test]
    fn contiguous_rows_split_at_block_boundaries() {
        let b = base(1, 100);
        let v = View::contiguous(b, 0, &[10, 10]).unwrap();
        // 4 ranks: blocks [0,25) [25,50) [50,75) [75,100): rows 2 and 7 straddle.
        let pieces = check(&[10, 10], &[&v], &[true, true], 4);
        let owners: Vec<usize> = pieces.iter().map(|p| p.owners[0].unwrap()).collect();
        assert_eq!(owners, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(pieces[0].region, Region { lo: vec![0, 0], shape: vec![2, 10] });
        assert_eq!(pieces[1].region, Region { lo: vec![2, 0], shape: vec![1, 5] });
    }

    #[test]
    fn stencil_pieces_are_few_and_only_boundary_rows_are_remote() {
        let n = 66usize;
        let grid = base(1, (n * n) as u64);
        let out = View::contiguous(base(2, ((n - 2) * (n - 2)) as u64), 0, &[n - 2, n - 2]).unwrap();
        let center = View::new(grid, n as i64 + 1, &[n - 2, n - 2], &[n as i64, 1]).unwrap();
        let north = View::new(grid, 1, &[n - 2, n - 2], &[n as i64, 1]).unwrap();
        let pieces = check(&[n - 2, n - 2], &[&out, &center, &north], &[true; 2], 4);
        assert!(pieces.len() < 40, "{} pieces", pieces.len());
        let remote: usize = pieces
            .iter()
            .filter(|p| p.owners[1] != p.owners[0] || p.owners[2] != p.owners[0])
            .map(|p| p.region.nelem())
            .sum();
        assert!(remote < 12 * n, "{remote} elements need remote data");
    }

    #[test]
    fn unsplittable_axis_reports_spanning_operands() {
        let b = base(1, 12);
        let v = View::contiguous(b, 0, &[12]).unwrap();
        let pieces = check(&[12], &[&v], &[false], 3);
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].owners, [None]);
    }

    fn arb_view(id: u64, shape: Vec<usize>) -> impl Strategy<Value = View> {
        let nd = shape.len();
        (1u64..80, proptest::collection::vec(-9i64..10, nd), 0i64..80)
            .prop_filter_map("in bounds", move |(n, stride, start)| View::new(base(id, n), start, &shape, &stride).ok())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn pieces_partition_and_owners_are_exact(
            (shape, a, b, split_mask) in proptest::collection::vec(1usize..5, 0..4).prop_flat_map(|shape| {
                let nd = shape.len();
                (Just(shape.clone()), arb_view(1, shape.clone()), arb_view(2, shape), proptest::collection::vec(any::<bool>(), nd))
            }),
            p in 1usize..6,
        ) {
            let pieces = check(&shape, &[&a, &b], &split_mask, p);
            if split_mask.iter().all(|&s| s) {
                prop_assert!(pieces.iter().all(|p| p.owners.iter().all(Option::is_some)));
            }
        }
    }
}
