//! Running a compiled kernel: binding its arguments to host memory, cutting the iteration space
//! into blocks, running them on the pool, and combining reduction partials in block order.
//!
//! The blocks depend only on the kernel's size and the configured block size, never on the number
//! of threads, so a reduction gives bit-identical results with any number of threads.

use crate::compile::cache::KernelFn;
use crate::compile::codegen::ArgLayout;
use crate::compile::program::{Binding, Program, Src};
use crate::run::pool::Pool;
use crate::{routines::reduce, routines::views};
use vm_ir::{BaseId, DType, Error, Opcode, Overlap, Result, with_dtype};
use vm_runtime::HostMemory;
use vm_runtime::memory::try_vec;

/// How kernels are cut into blocks.
#[derive(Debug, Clone, Copy)]
pub struct ExecConfig {
    /// Positions of the iteration space per block.
    pub block: usize,
    /// Kernels with at most this much work (positions times operations) run as one block on
    /// the calling thread.
    pub min_parallel: usize,
}

/// Blocks a kernel run in parallel is cut into at least, so that the threads share it evenly:
/// 3 blocks of a 90,000-position kernel kept one of 2 threads idle a third of the time. The cut
/// depends on the kernel alone, never on the thread count, and so do reductions' results.
const MIN_BLOCKS: usize = 8;

/// The number of blocks of a kernel of `n` positions computing `ops` operations at each.
fn block_count(n: usize, ops: usize, cfg: &ExecConfig) -> usize {
    if n.saturating_mul(ops.max(1)) <= cfg.min_parallel {
        return 1;
    }
    n.div_ceil(cfg.block.max(1)).max(MIN_BLOCKS.min(n)).min(MAX_BLOCKS)
}

/// The row-major multi-index of position `f` in `shape`.
fn unravel(shape: &[usize], mut f: usize) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = f % shape[d];
        f /= shape[d];
    }
    idx
}

/// Bounds (inclusive) of the partial-buffer positions that positions `lo..hi` touch, given the
/// partial's strides (non-negative, in elements) over `shape`.
fn partial_span(shape: &[usize], strides: &[i64], lo: usize, hi: usize) -> (usize, usize) {
    let (a, b) = (unravel(shape, lo), unravel(shape, hi - 1));
    let dot = |idx: &[usize]| idx.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum::<i64>() as usize;
    match (0..shape.len()).find(|&d| a[d] != b[d]) {
        None => {
            let x = dot(&a);
            (x, x)
        }
        Some(ds) => {
            let fixed: i64 = (0..ds).map(|d| a[d] as i64 * strides[d]).sum();
            let min = fixed + a[ds] as i64 * strides[ds];
            let rest: i64 = (ds + 1..shape.len()).map(|d| (shape[d] as i64 - 1) * strides[d]).sum();
            let max = fixed + b[ds] as i64 * strides[ds] + rest;
            (min as usize, max as usize)
        }
    }
}

/// The most blocks a kernel is cut into. Past it blocks grow beyond the configured size, so
/// that the per-block bookkeeping (partial spans, the partials' pointers, the pool's queue) stays
/// a few MiB however large the iteration space: a reduction of a broadcast view can have more
/// positions than the machine has bytes. With the default block size only kernels of more than
/// 2^35 positions are affected.
const MAX_BLOCKS: usize = 1 << 20;

/// 8-byte aligned zeroed storage for `nelem` elements of `size` bytes, for `what` on behalf of
/// base `base`; [`Error::OutOfMemory`] when the allocation fails.
fn storage(nelem: usize, size: usize, base: BaseId, what: &str) -> Result<Vec<u64>> {
    // Element sizes are at most 8 bytes, so the word count fits whatever `nelem`.
    let words = (nelem as u128 * size as u128).div_ceil(8) as usize;
    let mut v = try_vec(words, base, what)?;
    v.resize(words, 0);
    Ok(v)
}

fn bytes_mut(v: &mut [u64]) -> &mut [u8] {
    // SAFETY: any u64 storage is valid as bytes; the length is the same memory.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 8) }
}

/// The positions of the iteration space that the trailing axes reduced by every reduction of
/// `bind` span (the dimensions where every partial's stride is 0, from the last one inwards):
/// blocks that are multiples of it never share an output position. 1 without reductions.
fn reduced_row(bind: &Binding) -> usize {
    if bind.partials.is_empty() {
        return 1;
    }
    let mut row = 1usize;
    for d in (0..bind.shape.len()).rev() {
        if bind.partials.iter().any(|r| r.strides[d] != 0) {
            break;
        }
        row = row.saturating_mul(bind.shape[d]);
    }
    row
}

/// True when the partial index of position `p` is `p / row` (the partial's zero strides are the
/// trailing `row` positions, its other strides row-major and dense) and `block` is a multiple of
/// `row`: then blocks of `block` positions touch disjoint output positions.
fn one_block_per_output(shape: &[usize], strides: &[i64], block: usize) -> bool {
    let lead = strides.iter().rposition(|&s| s != 0).map_or(0, |d| d + 1);
    let row: usize = shape[lead..].iter().product();
    let mut dense = 1i64;
    for d in (0..lead).rev() {
        if shape[d] != 1 && strides[d] != dense {
            return false;
        }
        dense *= shape[d] as i64;
    }
    row > 0 && block.is_multiple_of(row)
}

/// The bytes a kernel bound by `bind` reads and writes in its memory operands: the elements each
/// view touches, once (a broadcast operand is read from cache after the first time).
pub fn bytes_moved(bind: &Binding) -> u64 {
    bytes_moved_of(bind, |_| true)
}

/// [`bytes_moved`] counting the memory operands of the bases `counted` accepts only.
fn bytes_moved_of(bind: &Binding, counted: impl Fn(BaseId) -> bool) -> u64 {
    let nd = bind.shape.len();
    bind.slots.iter().filter(|s| counted(s.view.base.id)).fold(0u64, |moved, s| {
        let touched = (0..nd).filter(|&d| s.strides[d] != 0).map(|d| bind.shape[d] as u64).product::<u64>();
        moved.saturating_add(touched.saturating_mul(s.view.dtype().size() as u64))
    })
}

/// True when the kernel writes every element of slot `k`'s base before anything reads it: the
/// slot is stored and never loaded, it is the only slot of its base, and its view is the whole
/// base, row-major.
fn overwritten(p: &Program, bind: &Binding, k: usize) -> bool {
    let s = &bind.slots[k];
    s.written
        && s.view.is_whole_base()
        && !bind.slots.iter().enumerate().any(|(j, o)| j != k && o.view.base.id == s.view.base.id)
        && !p.ops.iter().any(|op| op.srcs.contains(&Src::Mem(k as u16)))
}

/// A kernel bound to host memory and cut into blocks, ready to run block by block (see
/// [`run`]; [`crate::run::rows`] runs the blocks of several kernels together).
pub struct Launch {
    f: KernelFn,
    /// The kernel's argument words ([`ArgLayout`]).
    args: Vec<i64>,
    /// Per block, the pointers of its partial results (`np` words each).
    words: Vec<i64>,
    /// Reductions of the kernel.
    np: usize,
    /// Positions per block, and positions in all.
    block: usize,
    n: usize,
    /// Blocks (the last one may be shorter).
    pub nblocks: usize,
    /// Per reduction: each block's (min, max, offset) span of its partial buffer (empty when
    /// the blocks accumulate straight into the output).
    spans: Vec<Vec<(usize, usize, usize)>>,
    /// Per reduction: its partial buffer (empty when direct).
    parts: Vec<Vec<u64>>,
    /// Per reduction: the blocks accumulate straight into its output.
    direct: Vec<bool>,
    /// Bytes the slots move (the outputs of reductions are added by [`Launch::finish`]).
    moved: u64,
    /// The argument words naming bases kept in scratch memory, set per block by the caller.
    pub patches: Vec<Patch>,
}

/// An argument word of a [`Launch`] naming a base that a row-blocked group keeps in scratch
/// memory ([`crate::run::rows`]): the address of element `start` of `base` goes there.
#[derive(Debug, Clone, Copy)]
pub enum Patch {
    /// The pointer of a memory operand.
    Slot {
        /// Its index in the argument words.
        arg: usize,
        /// The base viewed.
        base: BaseId,
        /// The view's first element.
        start: i64,
    },
    /// The output of a reduction accumulated in place, from the reduction's identity.
    Partial {
        /// The reduction's number in the kernel.
        q: usize,
        /// The output's base.
        base: BaseId,
        /// The output view's first element.
        start: i64,
        /// The reduction.
        opcode: Opcode,
        /// The output's dtype.
        dtype: DType,
    },
}

/// Runs compiled kernel `f` of `p` bound by `bind` on the pool; returns the bytes it moved.
pub fn run(
    f: KernelFn,
    p: &Program,
    bind: &Binding,
    mem: &mut HostMemory,
    pool: &Pool,
    cfg: &ExecConfig,
) -> Result<u64> {
    let Some(launch) = Launch::new(f, p, bind, mem, cfg, None, &|_| false)? else {
        return Ok(0);
    };
    // SAFETY: see `Launch::call`; the pool returns only when no block runs any more.
    pool.run(launch.nblocks, &|b| unsafe { launch.call(b) }, mem.interrupt())?;
    launch.finish(bind, mem)
}

impl Launch {
    /// Binds `p` to `bind`'s views in `mem` (allocating their bases) and cuts it into blocks of
    /// `block` positions when given (a multiple of every reduced row: blocks own their outputs),
    /// else as [`ExecConfig`] says. `None` for a kernel of no positions. The bases `local`
    /// names are not bound (nor allocated): their words are [`Launch::patches`].
    pub fn new(
        f: KernelFn,
        p: &Program,
        bind: &Binding,
        mem: &mut HostMemory,
        cfg: &ExecConfig,
        block: Option<usize>,
        local: &dyn Fn(BaseId) -> bool,
    ) -> Result<Option<Launch>> {
        let n = bind.nelem();
        if n == 0 {
            return Ok(None);
        }
        if i64::try_from(n).is_err() {
            // Generated code counts positions in i64.
            return Err(Error::Unsupported(format!("a kernel of {n} positions: the cpu engine runs at most 2^63 - 1")));
        }
        // Every base first, the reductions' outputs included: one too large for the machine
        // fails here, named, before any scratch memory is sized after it.
        for r in bind.partials.iter().filter(|r| !local(r.out.base.id)) {
            views::buffer(mem, &r.out)?;
        }
        let lay = ArgLayout::of(p);
        let nd = p.ndim;
        let mut args = vec![0i64; lay.words(p.consts.len())];
        let mut patches = Vec::new();
        for (k, s) in bind.slots.iter().enumerate() {
            let size = s.view.dtype().size();
            for d in 0..nd {
                args[lay.slot_stride(k, d)] = s.strides[d] * size as i64;
            }
            if local(s.view.base.id) {
                patches.push(Patch::Slot { arg: lay.slot_ptr(k), base: s.view.base.id, start: s.view.start });
                continue;
            }
            if mem.get(s.view.base.id).is_none() && overwritten(p, bind, k) {
                mem.ensure_overwritten(&s.view.base)?; // no zeros that the kernel would overwrite
            }
            let buf = views::buffer(mem, &s.view)?; // allocates and checks the extent, once
            let ptr = buf.as_mut_ptr() as i64 + s.view.start * size as i64;
            args[lay.slot_ptr(k)] = ptr;
        }
        let moved = bytes_moved_of(bind, |id| !local(id));
        for (q, r) in bind.partials.iter().enumerate() {
            for d in 0..nd {
                args[lay.partial_stride(q, d)] = r.strides[d] * r.out.dtype().size() as i64;
            }
        }
        for d in 0..nd {
            args[lay.shape(d)] = bind.shape[d] as i64;
        }
        for (c, s) in bind.consts.iter().enumerate() {
            args[lay.konst(c)] = match s {
                vm_ir::Scalar::F32(x) => i64::from(x.to_bits()),
                vm_ir::Scalar::F64(x) => x.to_bits() as i64,
                s => s.to_payload() as i64,
            };
        }

        let block = match block {
            Some(block) => block.clamp(1, n),
            None => {
                let nblocks = block_count(n, p.ops.len(), cfg);
                // Blocks hold whole rows of a reduction along trailing axes, so that each output
                // position is one block's (see `direct` below), when a row is shorter than a block.
                let row = reduced_row(bind);
                let block = n.div_ceil(nblocks);
                if row > 1 && row <= block { block.div_ceil(row) * row } else { block }
            }
        };
        let nblocks = n.div_ceil(block); // no empty block at the end
        let range = |b: usize| (b * block, b.saturating_add(1).saturating_mul(block).min(n));

        // Partial buffers: per reduction, one region per block covering the positions it
        // touches. When no two blocks touch one output position and the output is row-major and
        // dense (a reduction along trailing axes, rows not cut by blocks), the blocks accumulate
        // straight into the output: the same values, combined in the same order, without the
        // partials' passes.
        let np = bind.partials.len();
        let mut spans: Vec<Vec<(usize, usize, usize)>> = Vec::with_capacity(np); // (min, max, offset)
        let mut parts: Vec<Vec<u64>> = Vec::with_capacity(np);
        let mut direct = vec![false; np];
        let first = bind.partials.first().map_or(BaseId(0), |r| r.out.base.id);
        let mut words: Vec<i64> = try_vec(nblocks * np.max(1), first, "the partials' pointers of a reduction into")?;
        words.resize(nblocks * np.max(1), 0);
        for (q, r) in bind.partials.iter().enumerate() {
            let size = r.out.dtype().size();
            let id = r.out.base.id;
            if local(id) {
                // Kept in scratch: its rows start from the identity there, block by block.
                if !accumulates_in_place(bind, q, block, nblocks) {
                    return Err(Error::Internal("a reduction into scratch memory whose blocks share outputs".into()));
                }
                patches.push(Patch::Partial {
                    q,
                    base: id,
                    start: r.out.start,
                    opcode: r.opcode,
                    dtype: r.out.dtype(),
                });
                direct[q] = true;
                spans.push(Vec::new());
                parts.push(Vec::new());
                continue;
            }
            // An output that the kernel also reads (`sum(a) -> a[0]`) must not start from the
            // identity before its blocks have read it: it takes partial buffers.
            let read_too =
                bind.slots.iter().any(|s| s.view.base.id == id && s.view.overlap(&r.out) != Overlap::Disjoint);
            if !read_too && accumulates_in_place(bind, q, block, nblocks) {
                let out = views::buffer(mem, &r.out)?;
                // SAFETY: `buffer` checked that the view, dense from `start`, lies inside the
                // buffer; identities are valid values of every dtype (bools 0 or 1).
                let bytes = unsafe {
                    let start = out.as_mut_ptr().add(r.out.start as usize * size);
                    std::slice::from_raw_parts_mut(start, r.out.nelem() * size)
                };
                reduce::fill_identity(r.opcode, r.out.dtype(), bytes);
                let base = bytes.as_mut_ptr() as i64;
                for b in 0..nblocks {
                    words[b * np + q] = base;
                }
                direct[q] = true;
                spans.push(Vec::new());
                parts.push(Vec::new());
                continue;
            }
            let mut s = try_vec(nblocks, id, "the per-block spans of a reduction into")?;
            let mut total = 0usize;
            for b in 0..nblocks {
                let (lo, hi) = range(b);
                let (mn, mx) = partial_span(&bind.shape, &r.strides, lo, hi);
                s.push((mn, mx, total));
                // An overflow here can only mean more than memory can hold: storage fails on it.
                total = total.saturating_add(mx - mn + 1);
            }
            let mut buf = storage(total, size, id, "the per-block partial results of a reduction into")?;
            reduce::fill_identity(r.opcode, r.out.dtype(), &mut bytes_mut(&mut buf)[..total * size]);
            let base = buf.as_mut_ptr() as i64;
            for (b, &(mn, _, off)) in s.iter().enumerate() {
                words[b * np + q] = base.wrapping_add((off as i64 - mn as i64) * size as i64);
            }
            spans.push(s);
            parts.push(buf);
        }
        Ok(Some(Launch { f, args, words, np, block, n, nblocks, spans, parts, direct, moved, patches }))
    }

    /// Runs block `b`.
    ///
    /// # Safety
    /// The host buffers the launch was bound to must still be allocated (no FREE in between),
    /// and no other thread may run block `b` or touch the positions it writes meanwhile:
    /// blocks write disjoint positions (an output view visits each element once, partials are
    /// per block or per output row).
    pub unsafe fn call(&self, b: usize) {
        // SAFETY: the caller's contract.
        unsafe { self.call_with(&self.args, self.block_words(b), b) };
    }

    /// The argument words of the kernel (those of [`Launch::patches`] are 0).
    pub fn args(&self) -> &[i64] {
        &self.args
    }

    /// The partial-result pointers of block `b` (one per reduction).
    pub fn block_words(&self, b: usize) -> &[i64] {
        let at = (b * self.np).min(self.words.len());
        &self.words[at..(at + self.np).min(self.words.len())]
    }

    /// Runs block `b` with argument words `args` and partial pointers `words` (the launch's
    /// own, with [`Launch::patches`] set).
    ///
    /// # Safety
    /// As [`Launch::call`], and the patched words must address memory covering every element
    /// the block touches of their bases.
    pub unsafe fn call_with(&self, args: &[i64], words: &[i64], b: usize) {
        if b >= self.nblocks {
            return;
        }
        let lo = b * self.block;
        let hi = b.saturating_add(1).saturating_mul(self.block).min(self.n);
        // SAFETY: `args` describes views checked to lie inside their allocated buffers (or the
        // caller's scratch) and partial buffers covering every position of the block.
        unsafe { (self.f)(args.as_ptr(), words.as_ptr(), lo as i64, hi as i64) };
    }

    /// After every block has run: combines the partial results of reductions in block order
    /// into their outputs. Returns the bytes the kernel moved.
    pub fn finish(mut self, bind: &Binding, mem: &mut HostMemory) -> Result<u64> {
        let mut moved = self.moved;
        for (q, r) in bind.partials.iter().enumerate() {
            let dt = r.out.dtype();
            let size = dt.size();
            let m = r.out.nelem();
            if self.direct[q] {
                if !self.patches.iter().any(|p| matches!(p, Patch::Partial { q: pq, .. } if *pq == q)) {
                    moved = moved.saturating_add((m * size) as u64);
                }
                continue;
            }
            moved = moved.saturating_add((m * size) as u64);
            let mut acc = storage(m, size, r.out.base.id, "the combined partial results of a reduction into")?;
            let acc_bytes = &mut bytes_mut(&mut acc)[..m * size];
            reduce::fill_identity(r.opcode, dt, acc_bytes);
            let part = bytes_mut(&mut self.parts[q]);
            for &(mn, mx, off) in &self.spans[q] {
                let len = mx - mn + 1;
                reduce::fold(
                    r.opcode,
                    dt,
                    &mut acc_bytes[mn * size..(mx + 1) * size],
                    &part[off * size..(off + len) * size],
                );
            }
            with_dtype!(dt, T => {
                // SAFETY: acc is 8-byte aligned storage holding m initialised elements of T
                // (bools are 0 or 1: identities and combinations of bools).
                let values = unsafe { std::slice::from_raw_parts(acc.as_ptr().cast::<T>(), m) };
                views::write::<T>(mem, &r.out, values)?;
            });
        }
        Ok(moved)
    }
}

/// True when the blocks of reduction `q` of `bind` accumulate straight into its output (the
/// output is dense and no two blocks of `block` positions share an output position).
pub fn accumulates_in_place(bind: &Binding, q: usize, block: usize, nblocks: usize) -> bool {
    let r = &bind.partials[q];
    r.out.is_contiguous() && (nblocks == 1 || one_block_per_output(&bind.shape, &r.strides, block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costly_kernels_of_few_positions_run_in_parallel_blocks() {
        let cfg = ExecConfig { block: 32768, min_parallel: 131072 };
        // One operation: parallel from min_parallel positions on.
        assert_eq!(block_count(131072, 1, &cfg), 1);
        assert_eq!(block_count(131073, 1, &cfg), MIN_BLOCKS);
        // Thirty operations at each of 90,000 positions: parallel, in enough blocks to share.
        assert_eq!(block_count(90_000, 30, &cfg), MIN_BLOCKS);
        assert_eq!(block_count(4000, 30, &cfg), 1);
        // Large kernels: blocks of `block` positions; never more blocks than positions.
        assert_eq!(block_count(1 << 22, 2, &cfg), 128);
        assert_eq!(block_count(5, 1 << 20, &cfg), 5);
    }

    #[test]
    fn blocks_of_whole_rows_own_their_outputs() {
        let shape = [4, 5, 6];
        // Reducing the last axis: rows of 6 positions; reducing the last two: rows of 30.
        assert!(one_block_per_output(&shape, &[5, 1, 0], 12));
        assert!(!one_block_per_output(&shape, &[5, 1, 0], 8));
        assert!(one_block_per_output(&shape, &[1, 0, 0], 60));
        assert!(!one_block_per_output(&shape, &[1, 0, 0], 12));
        // A middle or leading axis reduced: blocks share outputs whatever their size.
        assert!(!one_block_per_output(&shape, &[6, 0, 1], 30));
        assert!(!one_block_per_output(&shape, &[0, 6, 1], 30));
        // Not the row-major layout of the output.
        assert!(!one_block_per_output(&shape, &[1, 4, 0], 6));
        // Everything reduced: only a block of the whole space.
        assert!(one_block_per_output(&shape, &[0, 0, 0], 120));
        assert!(!one_block_per_output(&shape, &[0, 0, 0], 60));
        // The claim itself, position by position, for blocks of 12.
        let (strides, block) = ([5i64, 1, 0], 12);
        let mut owner = vec![None; 20];
        for f in 0..120 {
            let i = unravel(&shape, f);
            let x = (0..3).map(|d| i[d] as i64 * strides[d]).sum::<i64>() as usize;
            assert!(*owner[x].get_or_insert(f / block) == f / block, "output {x} in two blocks");
        }
    }

    #[test]
    fn partial_spans_cover_the_touched_positions() {
        let shape = [4, 5, 6];
        for strides in [[0i64, 6, 1], [5, 1, 0], [6, 0, 1], [0, 0, 0], [30, 6, 1]] {
            for lo in 0..120 {
                for hi in lo + 1..=120 {
                    let (mn, mx) = partial_span(&shape, &strides, lo, hi);
                    for f in lo..hi {
                        let i = unravel(&shape, f);
                        let x = (0..3).map(|d| i[d] as i64 * strides[d]).sum::<i64>() as usize;
                        assert!(mn <= x && x <= mx, "{strides:?} {lo}..{hi}: {x} not in {mn}..={mx}");
                    }
                }
            }
        }
    }
}
