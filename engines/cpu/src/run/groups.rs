//! Planning row-blocked groups ([`super::rows`]): which consecutive kernels of a batch run
//! together a block of rows at a time, and which bases they write live in scratch memory.

use super::rows;
use crate::compile::program::{Binding, Program};
use crate::routines::gemm;
use crate::run::exec;
use vm_fusion::{Kernel, Step};
use vm_ir::{BaseId, Instruction, Opcode};

/// Steps looked at past the first kernel of a row-blocked group.
pub const LOOKAHEAD: usize = 64;

/// Work (positions times operations) of a small kernel, which waits after a row-blocked group
/// instead of ending it.
const SMALL_KERNEL_WORK: u64 = 1 << 14;

/// A kernel bound to its batch: what planning a group reads of it.
pub trait Bound {
    /// The kernel's program.
    fn program(&self) -> &Program;
    /// Its binding to the batch's memory.
    fn binding(&self) -> &Binding;
}

/// The kernel of step `step` when a row-blocked group may take it: neither a matrix product
/// nor an instruction needing isolation.
pub fn member<'s>(step: &'s Step, batch: &[Instruction]) -> Option<&'s Kernel> {
    let Step::Kernel(k) = step else { return None };
    let isolated = k.instrs.len() == 1 && vm_fusion::needs_isolation(&batch[k.instrs[0]]);
    (!isolated && gemm::recognise(k, batch).is_none()).then_some(k)
}

/// What the instructions of step `step` read and write.
pub fn touches(step: &Step, batch: &[Instruction]) -> rows::Touches {
    let positions: Vec<usize> = match step {
        Step::Kernel(k) => k.instrs.iter().chain(&k.after).copied().collect(),
        Step::Single(i) | Step::System(i) => vec![*i],
    };
    let mut t = rows::Touches::default();
    for i in positions {
        let instr = &batch[i];
        for (o, v) in instr.operands.iter().enumerate().filter_map(|(o, op)| op.as_view().map(|v| (o, v))) {
            if o == 0 && (instr.output().is_some() || instr.opcode.is_system()) {
                t.writes.push(v.base.id);
            } else {
                t.reads.push(v.base.id);
            }
        }
    }
    t
}

/// The bases of `group` (spanning `steps`, of which `members` are its members, bound in
/// `bound`) that can live in scratch memory instead of their buffers, with their element
/// sizes: [`rows::Group::locals`] that are freed among the steps (their content is needed
/// after the group by nobody), touched by none of the steps set aside but their FREE or
/// DISCARD, and whose rows are small enough.
pub fn scratch_bases<B: Bound>(
    group: &rows::Group,
    steps: &[Step],
    members: &[usize],
    bound: &[Option<B>],
    batch: &[Instruction],
    rows_per_block: usize,
) -> Vec<(rows::Local, usize)> {
    let mut freed = Vec::new();
    let mut needed = Vec::new();
    for (s, step) in steps.iter().enumerate() {
        let system: Vec<usize> = match step {
            Step::Kernel(k) if members.contains(&s) => k.after.clone(),
            Step::System(i) => vec![*i],
            step => {
                let t = touches(step, batch);
                needed.extend(t.reads);
                needed.extend(t.writes);
                continue;
            }
        };
        for i in system {
            let instr = &batch[i];
            let ids = instr.views().map(|v| v.base.id);
            match instr.opcode {
                Opcode::Free => freed.extend(ids),
                Opcode::Discard => {}
                _ => needed.extend(ids),
            }
        }
    }
    let size_of = |id: BaseId| {
        members.iter().filter_map(|&s| bound[s].as_ref()).find_map(|b| {
            let slots = b.binding().slots.iter().map(|s| &s.view.base);
            slots
                .chain(b.binding().partials.iter().map(|r| &r.out.base))
                .find(|base| base.id == id)
                .map(|base| base.dtype.size())
        })
    };
    group
        .locals()
        .into_iter()
        .filter(|l| freed.contains(&l.base) && !needed.contains(&l.base))
        .filter_map(|l| {
            let size = size_of(l.base)?;
            let row_bytes = (l.stride as usize).saturating_mul(size);
            (row_bytes <= rows::MAX_LOCAL_ROW_BYTES
                && row_bytes.saturating_mul(rows_per_block) <= rows::MAX_LOCAL_ROW_BYTES)
                .then_some((l, size))
        })
        .collect()
}

/// The group of `rows` rows that `steps` make from their first, and its members by their
/// position in `steps` (the steps between them are set aside). `bound` holds the kernels
/// of `steps` bound.
fn plan<B: Bound>(
    steps: &[Step],
    bound: &[Option<B>],
    batch: &[Instruction],
    rows: usize,
) -> (rows::Group, Vec<usize>) {
    let mut group = rows::Group::new(rows);
    let mut members = Vec::new();
    for (s, step) in steps.iter().enumerate() {
        match (&bound[s], step) {
            (Some(b), _) if group.admit(b.program(), b.binding(), exec::bytes_moved(b.binding())) => members.push(s),
            // A large kernel that does not fit ends the group; a small one waits after it.
            (Some(b), _) if b.binding().nelem() as u64 * b.program().ops.len() as u64 > SMALL_KERNEL_WORK => break,
            (None, Step::Single(_)) => break,
            (_, step) => group.set_aside(&touches(step, batch)),
        }
    }
    (group, members)
}

/// Of the row counts the first two bound kernels' leading dimensions make, the largest that
/// gives a group the most members: the count, the group and its members by their position in
/// `steps` (`bound` holds the kernels of `steps` bound).
pub fn best<B: Bound>(
    steps: &[Step],
    bound: &[Option<B>],
    batch: &[Instruction],
) -> Option<(usize, rows::Group, Vec<usize>)> {
    let first = bound.first()?.as_ref()?;
    // The rows: of the counts that the first two kernels' leading dimensions make, the
    // largest that gives the most members.
    let mut counts = rows::row_counts(&first.binding().shape);
    if let Some(second) = bound[1..].iter().flatten().next() {
        counts.extend(rows::row_counts(&second.binding().shape));
        counts.sort_unstable_by(|a, b| b.cmp(a));
        counts.dedup();
    }
    let mut best: Option<(usize, rows::Group, Vec<usize>)> = None; // (rows, group, members)
    for r in counts {
        let (group, members) = plan(steps, bound, batch, r);
        if group.shares() && best.as_ref().is_none_or(|b| b.2.len() < members.len()) {
            best = Some((r, group, members));
        }
    }
    best
}
