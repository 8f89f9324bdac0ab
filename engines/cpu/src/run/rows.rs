//! Row-blocked groups: consecutive kernels that share a leading axis of rows, and that touch
//! every base one of them writes row by row, run together one block of rows at a time.
//!
//! A chain of kernels over large arrays (`D = sum((Q[:, None] - E)**2, 2)`, then `m = min(D, 1)`,
//! then `where(D == m[:, None], inf, D)`, or a softmax: `exp(x - max(x, 1)[:, None])` and its row
//! sums) otherwise runs kernel after kernel over the whole arrays: every intermediate is written
//! to memory by one kernel and read back by the next. Run by blocks of rows, kernel 1 on rows
//! `r0..r1`, then kernel 2 on the same rows, and so on, the intermediate rows are still in the
//! cache when the next kernel reads them.
//!
//! Rows are what the kernels of a group have in common: `R` such that every kernel's iteration
//! space is `R` rows of its own number of positions (a prefix of its collapsed dimensions, one of
//! them split if needed). A block of rows is then a range of positions in every kernel, which is
//! how kernels are run anyway ([`crate::run::exec::Launch`]). Running the blocks in any order on any
//! thread gives the kernels' sequential results when, for every base a kernel of the group
//! writes, every access to it in the group touches, for row `r`, only elements in
//! `[origin + r * S, origin + (r + 1) * S)` for one row stride `S > 0` ([`row_footprint`]):
//! then blocks of rows never share an element such a base holds. The output of a reduction
//! across rows (a full sum) is combined after the group, so no other kernel of the group may
//! touch it. Bases that the group only reads are free of rules.
//!
//! A temporary that the group writes and frees (its content is needed by nobody after the
//! group) lives in scratch memory instead of its buffer: each thread keeps a few hundred KiB,
//! and a block's rows of the temporary are there while its members run ([`run_blocks`]). Its
//! first writer must write every element of its rows without reading them (or be a reduction,
//! whose rows then start from its identity), and the other members touch nothing else of it:
//! then its rows never reach memory at all. knn's masked distance matrices and shallow_water's
//! y fluxes are such temporaries.
//!
//! Kernels between the members that do not fit (a scalar update between two row kernels) wait
//! until after the group; a later kernel joins the group only when it does not touch what they
//! write nor write what they read (they would see its result, or it theirs).
//!
//! The blocks depend on the kernels' shapes only, never on the thread count: reductions keep
//! giving the same bits whatever the number of threads.

use crate::compile::program::{Binding, Program, Src};
use crate::routines::reduce;
use crate::run::exec::{Launch, Patch, accumulates_in_place};
use crate::run::pool::Pool;
use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use vm_ir::{BaseId, Result};
use vm_runtime::Interrupt;

/// Bytes of all the members' operands per block of rows that a group aims at: its rows stay in
/// a core's L2 cache between one kernel and the next.
pub const BLOCK_BYTES: usize = 256 << 10;

/// Blocks a group is cut into at least (when it has that many rows), so that every thread has
/// its share (as [`crate::run::exec`] does for one kernel).
const MIN_BLOCKS: usize = 8;

/// Rows a group has at least: fewer would leave threads idle that its kernels run one after
/// the other would keep busy (a rule on the kernels alone, never on the thread count).
pub const MIN_ROWS: usize = 2 * MIN_BLOCKS;

/// Where an access touches row `r` of a base: elements `start + r * stride + [lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowFootprint {
    /// The view's first element.
    pub start: i64,
    /// Elements from one row to the next.
    pub stride: i64,
    /// The lowest element of row 0 relative to `start`.
    pub lo: i64,
    /// The highest element of row 0 relative to `start`.
    pub hi: i64,
    /// Every element of `[lo, hi]` is touched (and `lo` is 0).
    pub dense: bool,
}

/// The footprint per row of a view with `strides` (elements) over the collapsed iteration space
/// `shape` seen as `rows` rows, from element `start`; `None` when `shape` is not `rows` rows
/// (no prefix of its dimensions, one of them split, has `rows` positions) or when the view does
/// not step by one row stride from row to row.
pub fn row_footprint(shape: &[usize], strides: &[i64], start: i64, rows: usize) -> Option<RowFootprint> {
    // The leading dimensions (extent, stride) making the rows, and the inner ones.
    let mut lead: Vec<(usize, i64)> = Vec::new();
    let mut inner: Vec<(usize, i64)> = Vec::new();
    let mut made = 1usize;
    for (d, (&e, &s)) in shape.iter().zip(strides).enumerate() {
        if made == rows {
            inner.extend(shape[d..].iter().copied().zip(strides[d..].iter().copied()));
            break;
        }
        match made.checked_mul(e) {
            Some(m) if m <= rows => {
                lead.push((e, s));
                made = m;
            }
            _ => {
                // Split this dimension into (a, b) with made * a == rows.
                if !rows.is_multiple_of(made) {
                    return None;
                }
                let a = rows / made;
                if a == 0 || !e.is_multiple_of(a) {
                    return None;
                }
                let b = e / a;
                lead.push((a, s.checked_mul(b as i64)?));
                inner.push((b, s));
                inner.extend(shape[d + 1..].iter().copied().zip(strides[d + 1..].iter().copied()));
                made = rows;
                break;
            }
        }
    }
    if made != rows {
        return None;
    }
    // The leading dimensions must walk the rows in order, `stride` apart.
    let mut stride = None;
    let mut next = 0i64;
    for &(e, s) in lead.iter().rev() {
        if e == 1 {
            continue;
        }
        match stride {
            None => stride = Some(s),
            Some(_) if s != next => return None,
            Some(_) => {}
        }
        next = s.checked_mul(e as i64)?;
    }
    let (mut lo, mut hi) = (0i64, 0i64);
    for &(e, s) in &inner {
        let span = s.checked_mul(e as i64 - 1)?;
        if span < 0 {
            lo = lo.checked_add(span)?;
        } else {
            hi = hi.checked_add(span)?;
        }
    }
    // Dense: the inner dimensions that move, by increasing stride, are row-major from 0.
    let mut moving: Vec<(usize, i64)> = inner.iter().copied().filter(|&(e, s)| e > 1 && s != 0).collect();
    moving.sort_by_key(|&(_, s)| s);
    let mut next = 1i64;
    let mut dense = lo == 0;
    for &(e, s) in &moving {
        dense &= s == next;
        next = next.saturating_mul(e as i64);
    }
    Some(RowFootprint { start, stride: stride.unwrap_or(0), lo, hi, dense })
}

/// How one member touches one base.
#[derive(Debug, Clone, Copy)]
enum Access {
    /// Row by row (a memory operand, or the output of a reduction whose blocks own its rows:
    /// `partial`), written and/or read.
    Rows { footprint: RowFootprint, written: bool, read: bool, partial: bool },
    /// Read in any other way.
    Read,
    /// Written in any other way, or by a reduction across rows (combined after the group).
    Other,
}

/// The accesses of one kernel (`prog` bound by `bind`) to each base, as rows of `rows`.
fn accesses(prog: &Program, bind: &Binding, rows: usize) -> Option<Vec<(BaseId, Access)>> {
    let n = bind.nelem();
    if rows < 2 || !n.is_multiple_of(rows) {
        return None;
    }
    let per_row = n / rows;
    let mut out = Vec::with_capacity(bind.slots.len() + bind.partials.len());
    for (k, s) in bind.slots.iter().enumerate() {
        let read = prog.ops.iter().any(|op| op.srcs.contains(&Src::Mem(k as u16)));
        let access = match row_footprint(&bind.shape, &s.strides, s.view.start, rows) {
            Some(footprint) => Access::Rows { footprint, written: s.written, read, partial: false },
            None if s.written => Access::Other,
            None => Access::Read,
        };
        out.push((s.view.base.id, access));
    }
    for (q, r) in bind.partials.iter().enumerate() {
        // Blocks of whole rows own the output positions they reduce into when one row does.
        let access = if accumulates_in_place(bind, q, per_row, rows) {
            match row_footprint(&bind.shape, &r.strides, r.out.start, rows) {
                Some(footprint) => Access::Rows { footprint, written: true, read: false, partial: true },
                None => Access::Other,
            }
        } else {
            Access::Other
        };
        out.push((r.out.base.id, access));
    }
    Some(out)
}

/// The most bytes a row of a base kept in scratch memory may take.
pub const MAX_LOCAL_ROW_BYTES: usize = 1 << 20;

/// A base a group keeps in per-block scratch memory: row `r` of it is elements
/// `origin + r * stride + [0, row_elems)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Local {
    /// The base.
    pub base: BaseId,
    /// Its first element that the group touches.
    pub origin: i64,
    /// Elements from one row to the next.
    pub stride: i64,
    /// Elements of a row the group touches (from `origin + r * stride`).
    pub row_elems: usize,
    /// Its first writer is a reduction (its rows start from the reduction's identity).
    pub partial: bool,
}

thread_local! {
    /// Each thread's scratch memory for the bases a group keeps there ([`run_blocks`]).
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `launches` (a group's members, in batch order, cut into blocks of `rows_per_block` of
/// its `rows` rows) block by block on `pool`: each block runs every member on its rows, on one
/// thread. The bases of `locals` (with their element sizes) live in that thread's scratch
/// memory for the block: the members' words naming them ([`Launch::patches`]) are set to it,
/// and the rows of one a reduction writes first start from the reduction's identity.
///
/// # Safety
/// The launches must make a group by the rules of this module (blocks of rows touch disjoint
/// elements of what they write), their buffers must stay allocated until this returns, and the
/// locals must be [`Group::locals`] of that group, needed by nothing outside it.
pub unsafe fn run_blocks(
    pool: &Pool,
    launches: &[Launch],
    locals: &[(Local, usize)],
    rows: usize,
    rows_per_block: usize,
    interrupt: &Interrupt,
) -> Result<()> {
    // Each local's region of a block's scratch: rows_per_block rows, 64-byte aligned.
    let mut offsets = Vec::with_capacity(locals.len());
    let mut total = 0usize;
    for (l, size) in locals {
        offsets.push(total);
        total += (rows_per_block * l.stride as usize * size).next_multiple_of(64);
    }
    let nblocks = rows.div_ceil(rows_per_block);
    let block = |b: usize| {
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            let words = total / 8 + 8;
            if scratch.len() < words {
                scratch.resize(words, 0);
            }
            let base = (scratch.as_mut_ptr() as usize).next_multiple_of(64);
            let first_row = (b * rows_per_block) as i64;
            let rows_here = rows_per_block.min(rows - b * rows_per_block);
            let mut args = Vec::new();
            let mut block_words = Vec::new();
            for launch in launches {
                if launch.patches.is_empty() {
                    // SAFETY: the caller's contract.
                    unsafe { launch.call(b) };
                    continue;
                }
                args.clear();
                args.extend_from_slice(launch.args());
                block_words.clear();
                block_words.extend_from_slice(launch.block_words(b));
                for patch in &launch.patches {
                    let (Patch::Slot { base: id, start, .. } | Patch::Partial { base: id, start, .. }) = *patch;
                    let j = locals.iter().position(|(l, _)| l.base == id).expect("patched bases are locals");
                    let (l, size) = locals[j];
                    let region = base + offsets[j];
                    let at = region as i64 + (start - l.origin - first_row * l.stride) * size as i64;
                    match *patch {
                        Patch::Slot { arg, .. } => args[arg] = at,
                        Patch::Partial { q, opcode, dtype, .. } => {
                            block_words[q] = at;
                            // SAFETY: the region lies inside the scratch (sized for
                            // rows_per_block rows of every local above).
                            let bytes = unsafe {
                                std::slice::from_raw_parts_mut(region as *mut u8, rows_here * l.stride as usize * size)
                            };
                            reduce::fill_identity(opcode, dtype, bytes);
                        }
                    }
                }
                // SAFETY: the caller's contract; the patched words address the block's rows
                // of each local in this thread's scratch, which holds all of them.
                unsafe { launch.call_with(&args, &block_words, b) };
            }
        });
    };
    pool.run(nblocks, &block, interrupt)
}

/// The bases a kernel reads and writes (for kernels waiting until after a group).
#[derive(Debug, Default, Clone)]
pub struct Touches {
    /// Bases read.
    pub reads: Vec<BaseId>,
    /// Bases written (freed, discarded or synced, for system instructions).
    pub writes: Vec<BaseId>,
}

/// A group being formed: its members' accesses by base, and the kernels set aside to run after.
#[derive(Debug)]
pub struct Group {
    rows: usize,
    /// Per base: the accesses of the members so far, with the member's number.
    bases: HashMap<BaseId, Vec<(usize, Access)>>,
    /// Bytes the members move per row.
    row_bytes: u64,
    members: usize,
    /// A member reads or writes what an earlier one wrote: the group keeps something in the
    /// cache (else running its members one after the other is as good).
    shares: bool,
    /// What the kernels set aside touch.
    after: Touches,
}

impl Group {
    /// A group of `rows` rows, empty.
    pub fn new(rows: usize) -> Group {
        Group { rows, bases: HashMap::default(), row_bytes: 0, members: 0, shares: false, after: Touches::default() }
    }

    /// Members so far.
    pub fn members(&self) -> usize {
        self.members
    }

    /// True when a member touches what an earlier member wrote.
    pub fn shares(&self) -> bool {
        self.shares
    }

    /// Adds the kernel bound by `bind`, moving `bytes`, when the group stays valid with it;
    /// false (and the group unchanged) otherwise.
    pub fn admit(&mut self, prog: &Program, bind: &Binding, bytes: u64) -> bool {
        let Some(acc) = accesses(prog, bind, self.rows) else { return false };
        // Nothing set aside may depend on it the other way round.
        let writes = |a: &Access| matches!(a, Access::Rows { written: true, .. } | Access::Other);
        for (id, a) in &acc {
            if self.after.writes.contains(id) || (writes(a) && self.after.reads.contains(id)) {
                return false;
            }
        }
        let mut trial: HashMap<BaseId, Vec<(usize, Access)>> = HashMap::default();
        for (id, a) in &acc {
            trial
                .entry(*id)
                .or_insert_with(|| self.bases.get(id).cloned().unwrap_or_default())
                .push((self.members, *a));
        }
        if !trial.values().all(|list| rows_apart(list.iter().map(|(_, a)| a))) {
            return false;
        }
        let written_before = |id: &BaseId| {
            self.bases
                .get(id)
                .is_some_and(|l| l.iter().any(|(_, a)| matches!(a, Access::Rows { written: true, .. } | Access::Other)))
        };
        self.shares |= acc.iter().any(|(id, _)| written_before(id));
        self.bases.extend(trial);
        self.row_bytes = self.row_bytes.saturating_add(bytes / self.rows as u64);
        self.members += 1;
        true
    }

    /// Sets aside a kernel touching `t` to run after the group. It comes after the members so
    /// far in the batch too, so only later members can conflict with it: [`Group::admit`]
    /// refuses those that touch what it writes or write what it reads.
    pub fn set_aside(&mut self, t: &Touches) {
        self.after.reads.extend(&t.reads);
        self.after.writes.extend(&t.writes);
    }

    /// The bases that the group may keep in per-block scratch memory instead of their buffers
    /// (when nothing else in the batch needs them: the caller's part), with their layout: the
    /// first member to touch one writes every element of its rows without reading them first
    /// (a dense memory operand, or the output of a reduction), later ones touch no element
    /// outside those, and a row of it takes at most [`MAX_LOCAL_ROW_BYTES`].
    pub fn locals(&self) -> Vec<Local> {
        let mut out: Vec<Local> = self
            .bases
            .iter()
            .filter_map(|(&base, list)| {
                let &(writer, Access::Rows { footprint: first, written: true, read: false, partial }) = list.first()?
                else {
                    return None;
                };
                if !first.dense {
                    return None;
                }
                let (lo, hi) = (first.start, first.start + first.hi);
                let inside = list[1..].iter().all(|(m, a)| {
                    *m != writer
                        && matches!(a, Access::Rows { footprint: f, partial: false, .. }
                            if f.start + f.lo >= lo && f.start + f.hi <= hi)
                });
                let row_elems = usize::try_from(first.hi + 1).ok()?;
                (inside && first.stride > 0).then_some(Local {
                    base,
                    origin: lo,
                    stride: first.stride,
                    row_elems,
                    partial,
                })
            })
            .collect();
        out.sort_by_key(|l| l.base);
        out
    }

    /// Rows per block: about [`BLOCK_BYTES`] of operands, in at least [`MIN_BLOCKS`] blocks.
    pub fn rows_per_block(&self) -> usize {
        let by_bytes = (BLOCK_BYTES as u64 / self.row_bytes.max(1)).max(1) as usize;
        by_bytes.min(self.rows.div_ceil(MIN_BLOCKS)).max(1)
    }
}

/// True when the accesses of one base by the members never let two rows share an element the
/// group writes: only reads, or every access row by row with one row stride and every row's
/// elements within one stride of a common origin.
fn rows_apart<'a>(list: impl Iterator<Item = &'a Access> + Clone) -> bool {
    let written = list.clone().any(|a| matches!(a, Access::Rows { written: true, .. } | Access::Other));
    if !written {
        return true;
    }
    let mut stride = None;
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for a in list {
        let Access::Rows { footprint: f, .. } = a else { return false };
        if f.stride <= 0 || stride.is_some_and(|s| s != f.stride) {
            return false;
        }
        stride = Some(f.stride);
        first = first.min(f.start + f.lo);
        last = last.max(f.start + f.hi);
    }
    stride.is_some_and(|s| last - first < s)
}

/// The candidate row counts of a kernel's collapsed shape: the products of its leading
/// dimensions of at least [`MIN_ROWS`], largest first (a group takes the largest its first two
/// members agree on).
pub fn row_counts(shape: &[usize]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut p = 1usize;
    for &e in shape {
        p = p.saturating_mul(e);
        if p >= MIN_ROWS {
            out.push(p);
        }
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(start: i64, stride: i64, lo: i64, hi: i64) -> Option<RowFootprint> {
        Some(RowFootprint { start, stride, lo, hi, dense: lo == 0 })
    }

    #[test]
    fn footprints_split_the_leading_dimensions_into_rows() {
        // (q, n) row-major: row r is n elements from r * n.
        assert_eq!(row_footprint(&[4, 6], &[6, 1], 0, 4), fp(0, 6, 0, 5));
        // Collapsed to (q * n, d) with d reduced (stride 0): rows of n positions split off.
        assert_eq!(row_footprint(&[24, 5], &[1, 0], 0, 4), fp(0, 6, 0, 5));
        // A broadcast column m[:, None]: one element per row.
        assert_eq!(row_footprint(&[4, 6], &[1, 0], 3, 4), fp(3, 1, 0, 0));
        // A 1-d array of 24 as 4 rows of 6; reversed.
        assert_eq!(row_footprint(&[24], &[1], 0, 4), fp(0, 6, 0, 5));
        assert_eq!(row_footprint(&[24], &[-1], 23, 4), fp(23, -6, -5, 0));
        // Two leading dimensions make the rows when they step row-major.
        assert_eq!(row_footprint(&[2, 3, 4], &[12, 4, 1], 0, 6), fp(0, 4, 0, 3));
        assert_eq!(row_footprint(&[2, 3, 4], &[4, 8, 1], 0, 6), None, "a transposed pair of axes");
        // Rows that no prefix makes.
        assert_eq!(row_footprint(&[4, 6], &[6, 1], 0, 5), None);
        assert_eq!(row_footprint(&[6, 4], &[4, 1], 0, 4), None, "6 rows are not 4 rows");
        // A column-major walk: row r touches every column.
        let column = row_footprint(&[4, 6], &[1, 4], 0, 4);
        assert_eq!(column, Some(RowFootprint { start: 0, stride: 1, lo: 0, hi: 20, dense: false }));
    }

    #[test]
    fn bases_written_by_a_group_must_keep_rows_apart() {
        let rows = |start, stride, lo, hi, written| Access::Rows {
            footprint: RowFootprint { start, stride, lo, hi, dense: true },
            written,
            read: !written,
            partial: false,
        };
        let apart = |list: &[Access]| rows_apart(list.iter());
        // Written and read row by row, same stride: fine; a read of the next row is not.
        assert!(apart(&[rows(0, 6, 0, 5, true), rows(0, 6, 0, 5, false)]));
        assert!(!apart(&[rows(0, 6, 0, 5, true), rows(6, 6, 0, 5, false)]));
        assert!(!apart(&[rows(0, 6, 0, 5, true), rows(0, 6, 0, 6, false)]));
        // A row stride of 0 (every row the same elements) or a column walk of a written base.
        assert!(!apart(&[rows(0, 0, 0, 5, true)]));
        assert!(!apart(&[rows(0, 1, 0, 20, true)]));
        // Different strides, or an access not by rows.
        assert!(!apart(&[rows(0, 6, 0, 5, true), rows(0, 3, 0, 2, false)]));
        assert!(!apart(&[rows(0, 6, 0, 5, true), Access::Read]));
        // Reads only: anything goes.
        assert!(apart(&[Access::Read, rows(0, 0, 0, 5, false)]));
    }

    #[test]
    fn row_counts_are_leading_products_largest_first() {
        assert_eq!(row_counts(&[1000, 4000, 32]), vec![128_000_000, 4_000_000, 1000]);
        assert_eq!(row_counts(&[1, 5, 4]), vec![20]);
        assert!(row_counts(&[2, 5_000_000]) == vec![10_000_000], "2 rows are too few");
    }
}
