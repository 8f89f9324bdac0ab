//! Reuse of large temporary buffers between batches.
//!
//! A time-stepping loop creates and frees the same large temporaries every iteration (the heat
//! equation's `work`). Host memory allocates every base zero-filled, so each iteration would pay
//! a fresh allocation: page faults and zeroing, about one more pass over memory. Instead, a large
//! base that a batch frees, whose first access in the batch is an element-wise write of all of
//! it (so its previous contents are never read), is renamed in that batch to a *spare* base of
//! the engine: a synthetic base of the same dtype and size whose buffer stays allocated. Its
//! FREE keeps the buffer, and the next batch reuses it. Spares a batch does not use are freed.
//!
//! Within one batch, temporaries whose lives do not overlap share one spare: a batch holding a
//! hundred iterations of a time-stepping loop allocates one buffer for its hundred `work` arrays,
//! not a hundred. Lives are compared in *steps* of the batch's partition, not in positions: every
//! step touching the first temporary runs before any step touching the next, so the renamed
//! batch runs under the partition of the original one (kernel formation may have moved a later
//! write into an earlier kernel; sharing by positions would then need a new partition). Bases
//! that kernel formation contracts (they never get memory) are left alone, so that renaming never
//! costs a contraction.

use crate::{Context, Pass, Rewritten, Stage, bases};
use std::collections::HashMap;
use vm_fusion::Step;
use vm_ir::{Base, BaseId, Instruction, Opcode, Operand};
use vm_runtime::HostMemory;

/// Bases smaller than this are not worth recycling.
const MIN_BYTES: usize = 1 << 20;

/// The engine's spare buffers.
#[derive(Default)]
pub struct Spares {
    /// Allocated spare bases not used by the current batch.
    idle: Vec<Base>,
    /// Spare bases the current batch uses: their FREE keeps the buffer.
    in_use: Vec<BaseId>,
    /// Next synthetic id (counting down from `bases::SPARE`).
    next: u64,
}

/// What a candidate base looks like in one batch.
struct Life {
    first: usize,
    free: Option<usize>,
    ok: bool,
    /// The first and the last step of the partition that touch the base.
    steps: (usize, usize),
}

/// For each position of a batch, the index of the step of `steps` that carries it out
/// (`usize::MAX` for a position no step names).
fn step_of_positions(len: usize, steps: &[Step]) -> Vec<usize> {
    let mut of = vec![usize::MAX; len];
    for (s, step) in steps.iter().enumerate() {
        let positions: Box<dyn Iterator<Item = &usize>> = match step {
            Step::Kernel(k) => Box::new(k.instrs.iter().chain(&k.after)),
            Step::Single(i) | Step::System(i) => Box::new(std::iter::once(i)),
        };
        for &i in positions {
            if let Some(slot) = of.get_mut(i) {
                *slot = s;
            }
        }
    }
    of
}

impl Pass for Spares {
    fn name(&self) -> &'static str {
        "recycle"
    }

    fn stage(&self) -> Stage {
        Stage::Kernels
    }

    fn run(&mut self, work: &mut Rewritten<'_>, cx: &mut Context<'_>) {
        let lazy = &*cx.lazy;
        work.replace(|b| self.rename(b, cx.mem, cx.steps, |id| lazy.replayed_now(id)));
    }

    /// True when `id` is a spare the current batch uses.
    fn keeps(&self, id: BaseId) -> bool {
        self.in_use.contains(&id)
    }

    fn finish(&mut self, _succeeded: bool, cx: &mut Context<'_>) {
        self.end_batch(cx.mem);
    }
}

impl Spares {
    /// The batch with recyclable temporaries renamed to spares, or `None` when there are none;
    /// `steps`, the partition of `batch`, stays valid for the renamed batch. Bases that `steps`
    /// contracts are not renamed. Call [`Spares::end_batch`] after the batch ran (whatever the
    /// outcome). Bases for which `keep` is true keep their names (the lazy engine follows bases
    /// it replayed into the batch by name).
    pub fn rename(
        &mut self,
        batch: &[Instruction],
        mem: &HostMemory,
        steps: &[Step],
        keep: impl Fn(BaseId) -> bool,
    ) -> Option<Vec<Instruction>> {
        let large = |b: &Base| (b.nelem as usize).saturating_mul(b.dtype.size()) >= MIN_BYTES;
        if !batch.iter().any(|i| {
            i.opcode == Opcode::Free && i.operands.first().and_then(Operand::as_view).is_some_and(|v| large(&v.base))
        }) {
            return None;
        }
        let contracted = |id| steps.iter().any(|s| matches!(s, Step::Kernel(k) if k.temps.contains(&id)));
        let step_of = step_of_positions(batch.len(), steps);
        let mut lives: HashMap<BaseId, (Base, Life)> = HashMap::new();
        for (i, instr) in batch.iter().enumerate() {
            for (k, v) in instr.operands.iter().enumerate().filter_map(|(k, o)| o.as_view().map(|v| (k, v))) {
                let b = v.base;
                if !large(&b) || b.id.0 >= bases::SPARE - (1 << 20) || keep(b.id) {
                    continue;
                }
                let e = lives.entry(b.id).or_insert_with(|| {
                    // The first access must write all of the base, element-wise, contiguously,
                    // without reading it.
                    let writes_all = k == 0
                        && instr.opcode.kind().is_elementwise()
                        && v.is_whole_base()
                        && instr.inputs().iter().filter_map(Operand::as_view).all(|x| x.base.id != b.id)
                        && !mem.is_allocated(b.id);
                    (b, Life { first: i, free: None, ok: writes_all, steps: (step_of[i], step_of[i]) })
                });
                let life = &mut e.1;
                life.steps = (life.steps.0.min(step_of[i]), life.steps.1.max(step_of[i]));
                if step_of[i] == usize::MAX {
                    life.ok = false;
                }
                match instr.opcode {
                    _ if e.0 != b || life.free.is_some() => life.ok = false,
                    Opcode::Free => life.free = Some(i),
                    Opcode::Sync | Opcode::Discard => life.ok = false,
                    _ => {}
                }
            }
        }
        // (base, its base record, first position, FREE position, first step, last step)
        let mut lives: Vec<(BaseId, Base, usize, usize, usize, usize)> = lives
            .into_iter()
            .filter_map(|(id, (b, life))| match (life.ok, life.free) {
                (true, Some(free)) if !contracted(id) => Some((id, b, life.first, free, life.steps.0, life.steps.1)),
                _ => None,
            })
            .collect();
        lives.sort_by_key(|&(_, _, first, _, first_step, _)| (first_step, first));
        // Spares taken by this batch, with the last step of their last life.
        let mut taken: Vec<(Base, usize)> = Vec::new();
        let mut renames: Vec<(BaseId, Base, usize, usize)> = Vec::new(); // (from, to, first, free)
        for (id, b, first, free, first_step, last_step) in lives {
            let fits = |s: &Base| s.dtype == b.dtype && s.nelem == b.nelem;
            let to = if let Some(t) = taken.iter_mut().find(|(s, end)| fits(s) && *end < first_step) {
                t.1 = last_step;
                t.0
            } else {
                let to = match self.idle.iter().position(fits) {
                    Some(p) => self.idle.swap_remove(p),
                    None => {
                        // Every spare taken by this batch is in `in_use` already.
                        let in_use = |id: BaseId| self.in_use.contains(&id) || self.idle.iter().any(|s| s.id == id);
                        let mut id = BaseId(bases::SPARE);
                        while id.0 == bases::SPARE || in_use(id) {
                            self.next = (self.next + 1) % (1 << 20);
                            id = BaseId(bases::SPARE - self.next);
                        }
                        Base { id, dtype: b.dtype, nelem: b.nelem }
                    }
                };
                taken.push((to, last_step));
                self.in_use.push(to.id);
                to
            };
            renames.push((id, to, first, free));
        }
        if renames.is_empty() {
            return None;
        }
        let mut out = batch.to_vec();
        for (from, to, first, free) in renames {
            for instr in &mut out[first..=free] {
                for o in instr.operands.iter_mut() {
                    if let Operand::View(v) = o
                        && v.base.id == from
                    {
                        v.base = to;
                    }
                }
            }
        }
        Some(out)
    }

    /// After a batch: the spares it used become idle (if still allocated); the idle ones it did
    /// not use are freed.
    pub fn end_batch(&mut self, mem: &mut HostMemory) {
        if self.in_use.is_empty() && self.idle.is_empty() {
            return;
        }
        for b in self.idle.drain(..) {
            mem.free(b.id);
        }
        for id in self.in_use.drain(..) {
            if let Some(buf) = mem.get(id) {
                let nelem = buf.nelem() as u64;
                self.idle.push(Base { id, dtype: buf.dtype(), nelem });
            }
        }
    }
}
