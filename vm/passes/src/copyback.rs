//! Copy-backs become buffer swaps (double buffering).
//!
//! A time step that computes the new values of an array from its neighbours cannot write them in
//! place (other positions still need the old values), so a program computes a temporary and
//! copies it back: `work = f(grid); grid[1:-1, 1:-1] = work; del work`. That is two more passes
//! over memory per step than a loop that keeps two grids and swaps them. This rewrite does the
//! swapping: for such a copy-back into a view `V` of a base `B`, the temporary is written
//! straight into `V`'s place in a *partner* buffer of `B` (an engine-owned base of `B`'s dtype
//! and size), the rest of `B` (outside `V`) is copied into the partner, and the rest of the batch
//! uses the partner as `B`. A second copy-back in the batch turns back to `B`'s own buffer, and
//! so on; at the end of the batch, when the partner holds the last values, the engine swaps the
//! two buffers, so that `B` holds its values and the partner the old ones, ready for the next
//! batch.
//!
//! A copy-back qualifies when the temporary `T` is written first, element-wise, in full
//! (contiguous from element 0), is accessed only through that view, only between that write and
//! the copy, and is freed in the batch (never synced); the instructions computing it read `B`
//! through views that partially overlap `V` (a stencil: otherwise the copy fuses with them and
//! costs nothing); `V` is a box of `B` in some row-major shape
//! of `B` (so that the rest of `B` is a few boxes to copy); `B` is large (1 MiB or more), is not
//! pinned by a frontend, and is not synced, freed or discarded in the batch; and the buffer
//! written is not used between the temporary's write and the copy.

use crate::{Context, Pass, Rewritten, bases};
use rustc_hash::FxHashMap as HashMap;
use vm_ir::{Base, BaseId, Instruction, Opcode, Operand, Overlap, View};
use vm_runtime::HostMemory;

/// Arrays smaller than this are left alone (their passes cost little).
const MIN_BYTES: usize = 1 << 20;

/// The partner buffers of the arrays whose copy-backs became swaps.
#[derive(Default)]
pub struct CopyBacks {
    /// Partner of each array, kept while batches use it.
    partners: HashMap<BaseId, Base>,
    /// Partners the current batch uses.
    used: Vec<BaseId>,
    /// Arrays whose values end the current batch in their partner.
    swaps: Vec<(Base, Base)>,
    next: u64,
    /// Copy-backs turned into swaps so far.
    pub swapped: u64,
}

/// A copy-back found in a batch.
struct Candidate {
    /// The temporary's first write, the copy, the temporary's FREE.
    write: usize,
    copy: usize,
    free: usize,
    /// The destination (a view of the array) and the temporary's view.
    dst: View,
    tmp: View,
}

/// `v`'s place in a row-major shape of its base: the shape and `v`'s offset in each dimension,
/// when `v` is a box of it (positive strides, each the product of the extents after it).
fn box_of(v: &View) -> Option<(Vec<usize>, Vec<usize>)> {
    let n = v.ndim();
    if n == 0 || v.stride.last() != Some(&1) || v.shape.contains(&0) {
        return None;
    }
    // Each extent after the first is the ratio of the strides around it.
    let mut shape = vec![0usize; n];
    for (d, pair) in v.stride.windows(2).enumerate() {
        let (outer, inner) = (pair[0], pair[1]);
        if inner <= 0 || outer <= 0 || outer % inner != 0 {
            return None;
        }
        shape[d + 1] = (outer / inner) as usize;
    }
    let total = v.base.nelem as usize;
    let row = v.stride[0] as usize;
    if row == 0 || !total.is_multiple_of(row) {
        return None;
    }
    shape[0] = total / row;
    let mut at = vec![0usize; n];
    let mut rest = usize::try_from(v.start).ok()?;
    for d in (0..n).rev() {
        at[d] = rest % shape[d];
        rest /= shape[d];
    }
    (rest == 0 && (0..n).all(|d| at[d] + v.shape[d] <= shape[d])).then_some((shape, at))
}

/// The boxes of `base` (in the row-major `shape`) outside the box at `at` of extents `len`.
fn complement(base: Base, shape: &[usize], at: &[usize], len: &[usize]) -> Vec<View> {
    let n = shape.len();
    let strides = vm_ir::view::row_major_strides(shape);
    let mut out = Vec::new();
    for d in 0..n {
        for (lo, hi) in [(0, at[d]), (at[d] + len[d], shape[d])] {
            if lo >= hi {
                continue;
            }
            // Inside the box before `d`, outside it along `d`, anything after.
            let mut start = 0i64;
            let mut ext = Vec::with_capacity(n);
            for e in 0..n {
                let (s, l) = match e.cmp(&d) {
                    std::cmp::Ordering::Less => (at[e], len[e]),
                    std::cmp::Ordering::Equal => (lo, hi - lo),
                    std::cmp::Ordering::Greater => (0, shape[e]),
                };
                start += s as i64 * strides[e];
                ext.push(l);
            }
            out.push(View::new(base, start, &ext, &strides).expect("a box of the base"));
        }
    }
    out
}

/// Positions of the element-wise instructions of `batch`, by the base they write.
fn elementwise_writers(batch: &[Instruction]) -> HashMap<BaseId, Vec<usize>> {
    let mut writers: HashMap<BaseId, Vec<usize>> = HashMap::default();
    for (i, instr) in batch.iter().enumerate() {
        if let Some(out) = instr.output()
            && instr.opcode.kind().is_elementwise()
        {
            writers.entry(out.base.id).or_default().push(i);
        }
    }
    writers
}

/// True when the element-wise instructions computing base `t` (the write at `write` and, before
/// it, the writes of the bases it reads, transitively: each base's writers before the position
/// that reads it) read `dst`'s base through a view that partially overlaps `dst`. `writers`
/// is [`elementwise_writers`] of `batch`: the walk visits the instructions `t` depends on,
/// not the batch before it (a loop storing rows into one array has a copy per row).
fn reads_around(
    batch: &[Instruction],
    writers: &HashMap<BaseId, Vec<usize>>,
    write: usize,
    t: BaseId,
    dst: &View,
) -> bool {
    // (base, positions below which its writers count); per base, the bound explored so far.
    let mut todo = vec![(t, write + 1)];
    let mut explored: HashMap<BaseId, usize> = HashMap::default();
    while let Some((base, below)) = todo.pop() {
        let from = explored.get(&base).copied().unwrap_or(0);
        if from >= below {
            continue;
        }
        explored.insert(base, below);
        let Some(positions) = writers.get(&base) else { continue };
        for &p in positions.iter().filter(|&&p| (from..below).contains(&p)) {
            for v in batch[p].inputs().iter().filter_map(Operand::as_view) {
                if v.base.id == dst.base.id {
                    if v.overlap(dst) == Overlap::Partial {
                        return true;
                    }
                } else {
                    todo.push((v.base.id, p));
                }
            }
        }
    }
    false
}

/// The copy-backs of `batch` that qualify on their own (see the module doc), by array.
fn candidates(batch: &[Instruction], mem: &HostMemory) -> HashMap<BaseId, Vec<Candidate>> {
    // Per base: every (position, view) that touches it, and whether it is synced, freed or
    // discarded.
    #[derive(Default)]
    struct Uses<'a> {
        at: Vec<(usize, &'a View)>,
        free: Option<usize>,
        synced: bool,
    }
    let mut uses: HashMap<BaseId, Uses> = HashMap::default();
    for (i, instr) in batch.iter().enumerate() {
        for v in instr.views() {
            let u = uses.entry(v.base.id).or_default();
            match instr.opcode {
                Opcode::Free => u.free = Some(i),
                Opcode::Sync | Opcode::Discard => u.synced = true,
                _ => u.at.push((i, v)),
            }
        }
    }
    let writers = elementwise_writers(batch);
    let mut found: HashMap<BaseId, Vec<Candidate>> = HashMap::default();
    for (copy, instr) in batch.iter().enumerate() {
        let (Opcode::Identity, Some(Operand::View(dst)), Some(Operand::View(tmp))) =
            (instr.opcode, instr.operands.first(), instr.operands.get(1))
        else {
            continue;
        };
        let (b, t) = (dst.base, tmp.base);
        let array_ok = b.id != t.id
            && b.id.0 < bases::PARTNER - (1 << 19)
            && (b.nelem as usize).saturating_mul(b.dtype.size()) >= MIN_BYTES
            && !mem.is_pinned(b.id)
            && uses.get(&b.id).is_some_and(|u| u.free.is_none() && !u.synced)
            && box_of(dst).is_some();
        let tmp_ok = tmp.dtype() == dst.dtype() && tmp.shape == dst.shape && tmp.is_whole_base();
        if !(array_ok && tmp_ok) {
            continue;
        }
        let Some(u) = uses.get(&t.id) else { continue };
        let (Some(&(write, first)), Some(free)) = (u.at.first(), u.free) else { continue };
        let written_first = batch[write].opcode.kind().is_elementwise()
            && batch[write].output().is_some_and(|o| o == first)
            && batch[write].inputs().iter().filter_map(Operand::as_view).all(|v| v.base.id != t.id);
        let only_this_view = u.at.iter().all(|&(i, v)| v == tmp && (write..=copy).contains(&i));
        // Worth it only when the copy cannot join the kernel that computes the temporary: that
        // kernel reads the array where the copy writes, but shifted (a stencil). An update in
        // place (`a[1:-1] = a[1:-1] - f(b)`) fuses with its copy already.
        if written_first
            && only_this_view
            && !u.synced
            && free > copy
            && !mem.is_allocated(t.id)
            && reads_around(batch, &writers, write, t.id, dst)
        {
            found.entry(b.id).or_default().push(Candidate { write, copy, free, dst: dst.clone(), tmp: tmp.clone() });
        }
    }
    found
}

impl Pass for CopyBacks {
    fn name(&self) -> &'static str {
        "copyback"
    }

    fn run(&mut self, work: &mut Rewritten<'_>, cx: &mut Context<'_>) {
        let before = self.swapped;
        work.apply(|b| self.rewrite(b, cx.mem));
        cx.counters.swapped += self.swapped - before;
    }

    fn finish(&mut self, _succeeded: bool, cx: &mut Context<'_>) {
        for id in self.end_batch(cx.mem) {
            cx.lazy.forget(id);
        }
    }
}

impl CopyBacks {
    /// The batch with qualifying copy-backs turned into writes into the other buffer, and for
    /// each of its instructions the position in `batch` it comes from; `None` when there are
    /// none. Call [`CopyBacks::end_batch`] after the batch ran.
    pub fn rewrite(&mut self, batch: &[Instruction], mem: &HostMemory) -> Option<(Vec<Instruction>, Vec<usize>)> {
        // Most batches have no copy of a large array from another view: decided in one pass.
        let large_copy = |i: &Instruction| {
            i.opcode == Opcode::Identity
                && matches!(i.operands.get(1), Some(Operand::View(_)))
                && i.output().is_some_and(|o| (o.base.nelem as usize).saturating_mul(o.dtype().size()) >= MIN_BYTES)
        };
        if !batch.iter().any(large_copy) {
            return None;
        }
        let found = candidates(batch, mem);
        if found.is_empty() {
            return None;
        }
        // Decide, per array, in batch order: a copy-back is taken when the buffer it would
        // write (the one not holding the array's current values) is not used after the
        // temporary's write begins.
        struct Taken {
            array: Base,
            /// The buffer the temporary is written into.
            into: Base,
            /// The buffer holding the array's values before the copy.
            from: Base,
            c: Candidate,
        }
        let mut taken: Vec<Taken> = Vec::new();
        for (id, list) in found {
            let array = list[0].dst.base;
            let partner = *self.partners.entry(id).or_insert_with(|| {
                self.next = (self.next + 1) % (1 << 19);
                Base { id: BaseId(bases::PARTNER - self.next), ..array }
            });
            let (mut cur, mut other) = (array, partner);
            // The partner is unused before the first copy; the array's own buffer is free
            // after the last access of it under its own name.
            let mut other_free_after: Option<usize> = None;
            for c in list {
                if other_free_after.is_some_and(|p| p >= c.write) {
                    continue;
                }
                other_free_after = Some(c.copy);
                taken.push(Taken { array, into: other, from: cur, c });
                std::mem::swap(&mut cur, &mut other);
            }
            if cur.id != array.id {
                self.swaps.push((array, partner));
            }
            self.used.push(id);
        }
        if taken.is_empty() {
            return None;
        }
        self.swapped += taken.len() as u64;
        taken.sort_by_key(|t| t.c.copy);
        // Rewrite in one pass: the array's name maps to the buffer holding its values.
        let mut current: HashMap<BaseId, Base> = HashMap::default();
        let mut out = Vec::with_capacity(batch.len() + 4 * taken.len());
        let mut origin = Vec::with_capacity(out.capacity());
        let tmp_of: HashMap<BaseId, &Taken> = taken.iter().map(|t| (t.c.tmp.base.id, t)).collect();
        let copy_at: HashMap<usize, &Taken> = taken.iter().map(|t| (t.c.copy, t)).collect();
        for (i, instr) in batch.iter().enumerate() {
            if let Some(t) = copy_at.get(&i) {
                let (shape, at) = box_of(&t.c.dst).expect("checked");
                for rest in complement(t.from, &shape, &at, &t.c.dst.shape) {
                    let mut to = rest.clone();
                    to.base = t.into;
                    out.push(Instruction::new(Opcode::Identity, [Operand::View(to), Operand::View(rest)]));
                    origin.push(i);
                }
                current.insert(t.array.id, t.into);
                continue;
            }
            let mut instr = instr.clone();
            if instr.opcode == Opcode::Free
                && instr.views().next().is_some_and(|v| tmp_of.get(&v.base.id).is_some_and(|t| t.c.free == i))
            {
                instr = Instruction::empty(Opcode::None);
            }
            for o in instr.operands.iter_mut() {
                let Operand::View(v) = o else { continue };
                if let Some(t) = tmp_of.get(&v.base.id).filter(|t| (t.c.write..t.c.copy).contains(&i)) {
                    let mut place = t.c.dst.clone();
                    place.base = t.into;
                    *v = place;
                } else if let Some(b) = current.get(&v.base.id) {
                    v.base = *b;
                }
            }
            out.push(instr);
            origin.push(i);
        }
        debug_assert!(out.iter().all(|i| i.validate().is_ok()), "a rewritten batch is valid");
        Some((out, origin))
    }

    /// After a batch: swaps the buffers of the arrays whose values ended in their partner, and
    /// frees the partners the batch did not use. Returns the arrays the batch double-buffered:
    /// their values are in their buffers now, whatever an analysis of the batch concluded.
    pub fn end_batch(&mut self, mem: &mut HostMemory) -> Vec<BaseId> {
        for (array, partner) in self.swaps.drain(..) {
            mem.swap(&array, &partner);
        }
        let used = std::mem::take(&mut self.used);
        self.partners.retain(|id, partner| {
            let keep = used.contains(id);
            if !keep {
                mem.free(partner.id);
            }
            keep
        });
        used
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::DType;

    #[test]
    fn boxes_and_their_complements_tile_the_base() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 6 * 7 };
        let interior = View::new(b, 8, &[4, 5], &[7, 1]).unwrap();
        let (shape, at) = box_of(&interior).unwrap();
        assert_eq!((shape.as_slice(), at.as_slice()), (&[6, 7][..], &[1, 1][..]));
        let mut seen = vec![0u8; 42];
        for v in complement(b, &shape, &at, &interior.shape).iter().chain([&interior]) {
            for i in 0..v.shape[0] {
                for j in 0..v.shape[1] {
                    seen[(v.start + i as i64 * v.stride[0] + j as i64 * v.stride[1]) as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        // Not boxes: a column stride that is not a multiple, a transposed view.
        assert!(box_of(&View::new(b, 0, &[3, 2], &[5, 1]).unwrap()).is_none());
        assert!(box_of(&View::new(b, 0, &[7, 6], &[1, 7]).unwrap()).is_none());
    }
}
