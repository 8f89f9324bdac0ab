//! Loop-invariant results kept across batches.
//!
//! A loop recomputes, batch after batch, values that do not change: `log(s / X)` in a pricing
//! loop where only the time step moves. The values of a *pure* array (see [`crate::lazy`]) are a
//! function of its recipe alone, so two writes with equal recipes write equal values. When a
//! batch computes, from pure inputs, a value whose recipe an earlier batch computed too, and the
//! work saved is real (a division, a transcendental function, a random draw: not a copy or an
//! addition), the engine keeps that value in a base of its own the next time and reads it from
//! there afterwards: the instruction becomes a copy from the kept base, and the instructions only
//! it read are dropped. Only the *frontier* of the repeated computation is kept: a repeated value
//! read by something that does not repeat (`log(s / X) + a` with `a` new every time keeps
//! `log(s / X)`, not `s / X`).
//!
//! Results are unchanged: the kept values are the ones the same instructions computed, and a
//! copy is exact. Kept bases cost memory: at most `hoist_bytes` (a setting) together, the least
//! recently used released first, and any not used for [`MAX_IDLE`] batches.

use crate::lazy::{Lazy, Node};
use crate::{Context, Costs, Pass, Rewritten, bases};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet, FxHasher};
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use vm_ir::{Base, BaseId, Instruction, Kind, OpClass, Opcode, Operand, UnaryOp, View};
use vm_runtime::HostMemory;

/// Arrays smaller than this many elements are not kept (recomputing them costs little).
pub const MIN_ELEMENTS: u64 = 1 << 14;

/// Batches a kept base may go unused before it is released.
pub const MAX_IDLE: u64 = 16;

/// A recipe seen this many batches ago or fewer repeats (iterations of a loop are batches in a
/// row; a value seen long ago is a coincidence, such as a whole program run again).
const RECENT: u64 = 2;

/// Recipes remembered as seen once (more are forgotten, oldest first).
const MAX_SEEN: usize = 4096;

/// The hash of an instruction's structure, its inputs' recipes standing for their bases:
/// opcode, each operand's dtype, base size and view layout, constants by their bits.
pub fn structure_hash(instr: &Instruction, inputs: impl Iterator<Item = u64>) -> u64 {
    let mut h = FxHasher::default();
    instr.opcode.id().hash(&mut h);
    for o in &instr.operands {
        match o {
            Operand::View(v) => {
                (v.dtype().id(), v.base.nelem, v.start).hash(&mut h);
                v.shape.hash(&mut h);
                v.stride.hash(&mut h);
            }
            Operand::Const(s) => (s.dtype().id(), s.to_payload()).hash(&mut h),
        }
    }
    for i in inputs {
        i.hash(&mut h);
    }
    h.finish()
}

/// True when two instructions have the same structure (what [`structure_hash`] hashes).
fn same_instruction(a: &Instruction, b: &Instruction) -> bool {
    a.opcode == b.opcode
        && a.operands.len() == b.operands.len()
        && a.operands.iter().zip(&b.operands).all(|(x, y)| match (x, y) {
            (Operand::View(v), Operand::View(w)) => {
                v.dtype() == w.dtype()
                    && v.base.nelem == w.base.nelem
                    && v.start == w.start
                    && v.shape == w.shape
                    && v.stride == w.stride
            }
            (Operand::Const(s), Operand::Const(t)) => s.dtype() == t.dtype() && s.to_payload() == t.to_payload(),
            _ => false,
        })
}

/// True when two recipes are equal: they compute equal values.
fn same_recipe(a: &Arc<Node>, b: &Arc<Node>) -> bool {
    Arc::ptr_eq(a, b)
        || (a.hash == b.hash
            && same_instruction(&a.instr, &b.instr)
            && a.inputs.len() == b.inputs.len()
            && a.inputs.iter().zip(&b.inputs).all(|(x, y)| same_recipe(x, y)))
}

/// True when recomputing `instr` costs more than reading its result: a division, a function
/// the engine calls out for, a square root, a random draw.
fn costly(instr: &Instruction, costs: &dyn Costs) -> bool {
    let dtype = instr.output().map(View::dtype);
    match instr.opcode.class() {
        OpClass::Random => true,
        OpClass::Unary(UnaryOp::Sqrt) => true,
        _ if instr.opcode == Opcode::Divide => true,
        _ => dtype.is_some_and(|d| costs.calls_out(instr.opcode, d)),
    }
}

/// A kept base.
struct Kept {
    recipe: Arc<Node>,
    base: Base,
    last_used: u64,
}

/// The engine's kept results.
#[derive(Default)]
pub struct Hoist {
    /// Bytes the kept bases may take together (the setting `hoist_bytes`); 0: nothing is kept.
    budget: u64,
    kept: Vec<Kept>,
    /// Kept bases written by the batch in progress (kept only once it succeeds).
    pending: Vec<Kept>,
    /// Hashes of recipes seen in earlier batches, with the batch that saw each last.
    seen: HashMap<u64, u64>,
    batch: u64,
    /// Bytes of the kept bases.
    bytes: u64,
    /// Instructions read from a kept base instead of computed, so far.
    pub reused: u64,
}

impl Pass for Hoist {
    fn name(&self) -> &'static str {
        "hoist"
    }

    fn run(&mut self, work: &mut Rewritten<'_>, cx: &mut Context<'_>) {
        let before = self.reused;
        work.apply(|b| self.rewrite(b, cx.lazy, cx.costs));
        cx.counters.hoisted += self.reused - before;
    }

    fn finish(&mut self, succeeded: bool, cx: &mut Context<'_>) {
        self.end_batch(succeeded, cx.lazy, cx.mem);
    }
}

impl Hoist {
    /// Nothing kept yet; kept bases may take `budget` bytes together (0: nothing is kept).
    pub fn new(budget: u64) -> Hoist {
        Hoist { budget, ..Hoist::default() }
    }

    /// The batch with repeated costly results read from kept bases (and kept the second time
    /// they are seen), and for each instruction the position in `batch` it stands for; `None`
    /// when nothing changes.
    pub fn rewrite(
        &mut self,
        batch: &[Instruction],
        lazy: &mut Lazy,
        costs: &dyn Costs,
    ) -> Option<(Vec<Instruction>, Vec<usize>)> {
        self.batch += 1;
        let budget = self.budget;
        if budget == 0 || !batch.iter().any(|i| i.output().is_some_and(|o| o.base.nelem >= MIN_ELEMENTS)) {
            return None;
        }
        // The recipe each instruction writes, following the batch (None: not pure).
        let mut current: HashMap<BaseId, Option<Arc<Node>>> = HashMap::default();
        let mut recipes: Vec<Option<Arc<Node>>> = vec![None; batch.len()];
        for (i, instr) in batch.iter().enumerate() {
            if instr.opcode.is_system() || instr.opcode.kind() == Kind::Extension {
                for v in instr.views() {
                    if !matches!(instr.opcode, Opcode::Sync) {
                        current.insert(v.base.id, None);
                    }
                }
                continue;
            }
            let Some(out) = instr.output() else { continue };
            let node = Lazy::candidate(instr, |id| match current.get(&id) {
                Some(n) => n.clone(),
                None => lazy.recipe(id).filter(|_| !lazy.replayed_now(id)).cloned(),
            });
            current.insert(out.base.id, node.clone());
            recipes[i] = node;
        }
        // Repeated: seen in one of the last batches (a loop's iterations), or kept.
        let recent = |at: &u64| self.batch - at <= RECENT;
        let repeated: Vec<bool> = recipes
            .iter()
            .map(|r| r.as_ref().is_some_and(|n| self.seen.get(&n.hash).is_some_and(recent) || self.find(n).is_some()))
            .collect();
        for n in recipes.iter().flatten() {
            self.seen.insert(n.hash, self.batch);
        }
        if self.seen.len() > MAX_SEEN {
            let batch = self.batch;
            self.seen.retain(|_, &mut at| batch - at <= RECENT);
        }
        if !repeated.iter().any(|&r| r) {
            return None;
        }
        // Who reads each write: (reader positions, dead by the batch's end without a sync first).
        let readers = Readers::of(batch);
        // Frontier: repeated, large, read by something that does not repeat (or kept past the
        // batch), and costly to recompute from what the batch has.
        let mut keep: Vec<usize> = Vec::new();
        for i in 0..batch.len() {
            if !repeated[i] {
                continue;
            }
            let out = batch[i].output().expect("pure writes have an output");
            // (Not an array replayed now: its base keeps the value; nothing recomputes it.)
            if out.base.nelem < MIN_ELEMENTS || bases::is_synthetic(out.base.id) || lazy.replayed_now(out.base.id) {
                continue;
            }
            let (reads, temporary) = readers.of_write(i);
            // (A value only copied elsewhere, such as a replayed array, is not worth keeping.)
            let frontier = !temporary || reads.iter().any(|&j| !repeated[j] && batch[j].opcode != Opcode::Identity);
            if frontier && saves_work(i, batch, &readers, &repeated, costs) {
                keep.push(i);
            }
        }
        if keep.is_empty() {
            return None;
        }
        let mut replaced: HashMap<usize, Vec<Instruction>> = HashMap::default();
        // Replaced by a copy of a kept base: they no longer read their inputs.
        let mut copies: HashSet<usize> = HashSet::default();
        for &i in &keep {
            let n = recipes[i].as_ref().expect("kept writes are pure");
            let out = batch[i].output().expect("pure writes have an output").clone();
            if let Some(k) = self.find(n) {
                let kept = &mut self.kept[k];
                kept.last_used = self.batch;
                self.reused += 1;
                replaced.insert(i, vec![copy(&out, kept.base)]);
                copies.insert(i);
            } else if self.bytes + bytes(&out.base) <= budget && !self.pending.iter().any(|p| same_recipe(&p.recipe, n))
            {
                let base = Base { id: lazy.synthetic_id(), ..out.base };
                let mut into = batch[i].clone();
                into.operands[0] = Operand::View(on(&out, base));
                self.bytes += bytes(&base);
                self.pending.push(Kept { recipe: n.clone(), base, last_used: self.batch });
                replaced.insert(i, vec![into, copy(&out, base)]);
            }
        }
        if replaced.is_empty() {
            return None;
        }
        // Writes into temporaries that only copied or dropped instructions read: dropped, last
        // first.
        let mut dropped: HashSet<usize> = HashSet::default();
        for i in (0..batch.len()).rev() {
            if replaced.contains_key(&i) || recipes[i].is_none() {
                continue;
            }
            let (reads, temporary) = readers.of_write(i);
            if temporary && !reads.is_empty() && reads.iter().all(|j| copies.contains(j) || dropped.contains(j)) {
                dropped.insert(i);
            }
        }
        let mut out = Vec::with_capacity(batch.len() + replaced.len());
        let mut origin = Vec::with_capacity(out.capacity());
        for (i, instr) in batch.iter().enumerate() {
            if dropped.contains(&i) {
                continue;
            }
            match replaced.remove(&i) {
                Some(instrs) => {
                    debug_assert!(instrs.iter().all(|x| x.validate().is_ok()), "hoisting made {instrs:?}");
                    origin.extend(std::iter::repeat_n(i, instrs.len()));
                    out.extend(instrs);
                }
                None => {
                    out.push(instr.clone());
                    origin.push(i);
                }
            }
        }
        Some((out, origin))
    }

    /// Ends the batch: keeps what it wrote into new kept bases when it succeeded (else frees
    /// them), and releases the bases idle too long or past the budget, least recently used first.
    pub fn end_batch(&mut self, succeeded: bool, lazy: &mut Lazy, mem: &mut HostMemory) {
        let budget = self.budget;
        for p in std::mem::take(&mut self.pending) {
            if succeeded {
                self.kept.push(p);
            } else {
                self.release(p.base, lazy, mem);
            }
        }
        let batch = self.batch;
        self.kept.sort_by_key(|k| std::cmp::Reverse(k.last_used));
        let mut total = 0;
        let mut released = Vec::new();
        self.kept.retain(|k| {
            total += bytes(&k.base);
            let keep = batch - k.last_used <= MAX_IDLE && total <= budget;
            if !keep {
                released.push(k.base);
            }
            keep
        });
        for base in released {
            self.release(base, lazy, mem);
        }
    }

    fn release(&mut self, base: Base, lazy: &mut Lazy, mem: &mut HostMemory) {
        self.bytes -= bytes(&base);
        mem.free(base.id);
        lazy.forget(base.id);
    }

    /// The kept base whose recipe equals `n`.
    fn find(&self, n: &Arc<Node>) -> Option<usize> {
        self.kept.iter().position(|k| same_recipe(&k.recipe, n))
    }
}

/// True when the repeated writes that the batch would no longer need once `i` is read from a
/// kept base (`i` and the repeated writes of the batch it reads, transitively) include a costly
/// one.
fn saves_work(i: usize, batch: &[Instruction], readers: &Readers, repeated: &[bool], costs: &dyn Costs) -> bool {
    let mut stack = vec![i];
    let mut seen: HashSet<usize> = HashSet::default();
    while let Some(j) = stack.pop() {
        if !seen.insert(j) {
            continue;
        }
        if costly(&batch[j], costs) {
            return true;
        }
        stack.extend(readers.writers[j].iter().copied().filter(|&w| repeated[w]));
    }
    false
}

/// Bytes of a base.
fn bytes(base: &Base) -> u64 {
    base.nelem.saturating_mul(base.dtype.size() as u64)
}

/// The view `v` (all of its base) over `base` instead.
fn on(v: &View, base: Base) -> View {
    View { base, start: v.start, shape: v.shape.clone(), stride: v.stride.clone() }
}

/// `out = identity(kept)`: the kept base, laid out as `out` (all of its base).
fn copy(out: &View, kept: Base) -> Instruction {
    Instruction::new(Opcode::Identity, [Operand::View(out.clone()), Operand::View(on(out, kept))])
}

/// For each write of a batch, who reads what it wrote.
struct Readers {
    /// Per instruction: the positions reading its output before the base is written again.
    reads: Vec<Vec<usize>>,
    /// Per instruction: the value is dead by the batch's end, never synced: the base is freed
    /// or overwritten in full later in the batch.
    temporary: Vec<bool>,
    /// Per instruction: the writes of the batch its inputs read.
    writers: Vec<SmallVec<[usize; 3]>>,
}

impl Readers {
    fn of(batch: &[Instruction]) -> Readers {
        let mut reads = vec![Vec::new(); batch.len()];
        let mut temporary = vec![false; batch.len()];
        let mut writers = vec![SmallVec::new(); batch.len()];
        // The last write of each base so far.
        let mut last: HashMap<BaseId, usize> = HashMap::default();
        let mut synced: HashSet<usize> = HashSet::default();
        for (j, instr) in batch.iter().enumerate() {
            match instr.opcode {
                Opcode::Free | Opcode::Discard => {
                    for v in instr.views() {
                        if let Some(w) = last.remove(&v.base.id)
                            && instr.opcode == Opcode::Free
                            && !synced.contains(&w)
                        {
                            temporary[w] = true;
                        }
                    }
                    continue;
                }
                Opcode::Sync => {
                    for v in instr.views() {
                        if let Some(&w) = last.get(&v.base.id) {
                            synced.insert(w);
                        }
                    }
                    continue;
                }
                _ => {}
            }
            for v in instr.inputs().iter().filter_map(Operand::as_view) {
                if let Some(&w) = last.get(&v.base.id) {
                    reads[w].push(j);
                    writers[j].push(w);
                }
            }
            if let Some(o) = instr.output() {
                if let Some(&w) = last.get(&o.base.id) {
                    if !o.is_whole_base() {
                        // A partial write reads the rest of the base's values.
                        reads[w].push(j);
                    } else if !synced.contains(&w) {
                        // Overwritten in full before anything outside the batch saw it (an
                        // in-place chain, `e = k / 8; e = exp(e)`): as dead as a freed value.
                        temporary[w] = true;
                    }
                }
                last.insert(o.base.id, j);
            }
        }
        Readers { reads, temporary, writers }
    }

    fn of_write(&self, i: usize) -> (&[usize], bool) {
        (&self.reads[i], self.temporary[i])
    }
}
