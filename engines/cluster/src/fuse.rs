//! Planning runs of fusable instructions together, so that owner computes keeps the child's
//! kernel fusion and array contraction.
//!
//! Planned one at a time ([`crate::plan::plan`]), each instruction of a stencil is cut at the
//! block boundaries of its own operands: a view shifted by a row cuts one row earlier or later
//! than its neighbour, so consecutive instructions reach a rank's child as boxes of different
//! shapes, which never fuse, and a temporary written box by box is never contracted.
//!
//! A *group* is a run of element-wise instructions that the kernel rule
//! ([`vm_fusion::partition`]) fuses: one iteration space, and every base an instruction
//! reads or writes that an earlier one wrote is accessed through exactly the written view, so
//! each position of the space depends only on the same position of earlier instructions.
//! [`plan_group`] splits that space once, at the block boundaries of every operand of every
//! instruction, and each box (a *piece*) runs the whole run in order, each instruction on the
//! owner of its output. A rank's pieces that need no message reach its child first, as
//! consecutive runs of one shape: one kernel per piece instead of one per instruction and box.
//! A base the kernel rule contracts (written, then read, only inside the group, and freed in
//! the batch) lives in a fresh local temporary per piece instead of its blocks, so the child
//! contracts it again.
//!
//! A group needs a value written by one instruction and read by a later one to be computed on
//! the rank that reads it; [`units`] ends a group before an instruction for which that does not
//! hold (bases of other sizes are distributed differently), and before an instruction touching
//! a base a system instruction met inside the run acts on (system instructions that touch
//! nothing later in the group run after it).

use crate::dist::Blocks;
use crate::plan::{Loc, LocalOperand, Part, Plan, Stage, Task, Work};
use crate::split::{Region, restrict, split};
use std::collections::{HashMap, HashSet};
use vm_fusion::{Options, Step, needs_isolation, partition};
use vm_ir::{BaseId, Instruction, Operand, Overlap, View};
use vm_runtime::ReductionOrder;

/// A unit of planning: a group of fusable instructions, or one instruction alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// Element-wise instructions planned together.
    Group(Group),
    /// One instruction, planned by [`crate::plan::plan`].
    Single(usize),
}

/// A run of element-wise instructions with one iteration space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Positions in the batch, in order.
    pub instrs: Vec<usize>,
    /// Bases written and read only by the group (and its reduction) and freed in the batch: per
    /// piece, they live in a local temporary instead of their blocks (whose memory they never
    /// touch).
    pub temps: Vec<BaseId>,
    /// Position of a reduction of all elements of one of `temps` that follows the group: each
    /// piece reduces its part right after computing it, and the partial results are combined
    /// (in another order than the reference's: only where that is allowed).
    pub reduce: Option<usize>,
}

/// Cuts a validated batch into units, in an order that gives the batch's results: groups
/// follow the kernels of [`partition`]; everything else is a single instruction in place. Over
/// children that reassociate reductions (`reduction`), a group takes in the reduction of all
/// elements of a value it computes for nothing else.
pub fn units(batch: &[Instruction], p: usize, reduction: ReductionOrder) -> Vec<Unit> {
    let mut out = Vec::new();
    let steps = partition(batch, &Options { max_instructions: 0, ..Options::default() });
    let mut access: HashMap<BaseId, Vec<usize>> = HashMap::new();
    for (i, instr) in batch.iter().enumerate().filter(|(_, i)| !i.opcode.is_system()) {
        for v in instr.views() {
            let list = access.entry(v.base.id).or_default();
            if list.last() != Some(&i) {
                list.push(i);
            }
        }
    }
    for step in steps {
        match step {
            Step::Single(i) | Step::System(i) => out.push(Unit::Single(i)),
            Step::Kernel(k) => {
                let mut positions: Vec<usize> = k.instrs.iter().chain(&k.after).copied().collect();
                positions.sort_unstable();
                let mut run = Run::default();
                for i in positions {
                    let instr = &batch[i];
                    if instr.opcode.is_system() {
                        if run.instrs.is_empty() {
                            out.push(Unit::Single(i));
                        } else {
                            run.defer(batch, i);
                        }
                    } else if !instr.opcode.kind().is_elementwise() || needs_isolation(instr) {
                        run.close(&k.temps, &access, &mut out);
                        out.push(Unit::Single(i));
                    } else {
                        if !run.admits(batch, i, p) {
                            run.close(&k.temps, &access, &mut out);
                        }
                        run.push(batch, i);
                    }
                }
                run.close(&k.temps, &access, &mut out);
            }
        }
    }
    attach_reductions(batch, &access, reduction, &mut out);
    out
}

/// Moves into each group the reduction of all elements that follows it (past system
/// instructions that touch neither of its bases) when it may be reassociated and reads,
/// through a flat view, exactly the memory of a value the group writes, reads back through the
/// written view only, and that nothing else in the batch uses (freed in it, never synced).
fn attach_reductions(
    batch: &[Instruction],
    access: &HashMap<BaseId, Vec<usize>>,
    reduction: ReductionOrder,
    units: &mut Vec<Unit>,
) {
    let (mut freed, mut synced) = (HashSet::new(), HashSet::new());
    for instr in batch {
        let set = match instr.opcode {
            vm_ir::Opcode::Free => &mut freed,
            vm_ir::Opcode::Sync => &mut synced,
            _ => continue,
        };
        set.extend(instr.views().map(|v| v.base.id));
    }
    let mut u = 0;
    while u < units.len() {
        let Unit::Group(group) = &units[u] else {
            u += 1;
            continue;
        };
        let next = (u + 1..units.len()).find(|&j| matches!(units[j], Unit::Single(s) if !batch[s].opcode.is_system()));
        let Some(j) = next else { break };
        let Unit::Single(r) = units[j] else { unreachable!("found above") };
        let touched: HashSet<BaseId> = batch[r].views().map(|v| v.base.id).collect();
        let between_clear = units[u + 1..j].iter().all(|unit| match unit {
            Unit::Single(s) => batch[*s].views().all(|v| !touched.contains(&v.base.id)),
            Unit::Group(_) => false,
        });
        let temp = between_clear.then(|| reducible_temp(batch, group, r, access, reduction, &freed, &synced)).flatten();
        if let Some(x) = temp {
            units.remove(j);
            let Unit::Group(group) = &mut units[u] else { unreachable!("a group") };
            if !group.temps.contains(&x) {
                group.temps.push(x);
            }
            group.reduce = Some(r);
        }
        u += 1;
    }
}

/// The base instruction `r` reduces when it may join `group` (see [`attach_reductions`]).
fn reducible_temp(
    batch: &[Instruction],
    group: &Group,
    r: usize,
    access: &HashMap<BaseId, Vec<usize>>,
    reduction: ReductionOrder,
    freed: &HashSet<BaseId>,
    synced: &HashSet<BaseId>,
) -> Option<BaseId> {
    let instr = &batch[r];
    let (out, input) = (instr.output()?, instr.operands.get(1)?.as_view()?);
    // A reduction to a position is no fold of values: partial positions of the pieces would be
    // positions within each piece.
    let full = instr.opcode.kind() == vm_ir::Kind::Reduce
        && !instr.opcode.is_arg_reduce()
        && instr.axis() == Some(0)
        && out.ndim() == 0
        && input.ndim() == 1
        && input.stride[0] == 1
        && input.shape[0] > 0
        && out.dtype() == input.dtype()
        && (reduction == ReductionOrder::Reassociated || !input.dtype().is_float());
    let x = input.base.id;
    if !full || !freed.contains(&x) || synced.contains(&x) {
        return None;
    }
    let uses = &access[&x];
    let in_group = |j: &usize| group.instrs.binary_search(j).is_ok();
    if uses.last() != Some(&r) || !uses[..uses.len() - 1].iter().all(in_group) {
        return None;
    }
    // The value's first access writes it; every access in the group is that view.
    let first = &batch[uses[0]];
    let written = first.output().filter(|w| w.base.id == x)?;
    let reads_first = first.inputs().iter().filter_map(Operand::as_view).any(|v| v.base.id == x);
    let same = uses[..uses.len() - 1]
        .iter()
        .all(|&j| batch[j].views().filter(|v| v.base.id == x).all(|v| v.is_identical(written)));
    let flat_alias = written.is_contiguous() && written.start == input.start && written.nelem() == input.nelem();
    (!reads_first
        && same
        && flat_alias
        && !group.instrs.iter().any(|&j| batch[j].views().any(|v| v.base.id == out.base.id)))
    .then_some(x)
}

/// The group being formed.
#[derive(Default)]
struct Run<'a> {
    instrs: Vec<usize>,
    /// System instructions met inside the run, to plan after it.
    deferred: Vec<usize>,
    /// Bases the deferred instructions act on.
    deferred_bases: HashSet<BaseId>,
    /// Per base written by the run, the views written.
    written: HashMap<BaseId, Vec<&'a View>>,
}

impl<'a> Run<'a> {
    /// Whether instruction `i` may join: it touches no base a deferred system instruction acts
    /// on, and reads every value the run wrote on the rank that computes it.
    fn admits(&self, batch: &[Instruction], i: usize, p: usize) -> bool {
        let instr = &batch[i];
        if instr.views().any(|v| self.deferred_bases.contains(&v.base.id)) {
            return false;
        }
        let out = instr.output().expect("element-wise");
        let splittable = vec![true; out.ndim()];
        instr.inputs().iter().filter_map(Operand::as_view).all(|v| {
            let written_here =
                self.written.get(&v.base.id).is_some_and(|ws| ws.iter().any(|w| w.overlap(v) != Overlap::Disjoint));
            !written_here
                || split(&out.shape, &[out, v], &splittable, p).iter().all(|piece| piece.owners[0] == piece.owners[1])
        })
    }

    /// Plans system instruction `i` after the group.
    fn defer(&mut self, batch: &[Instruction], i: usize) {
        self.deferred_bases.extend(batch[i].views().map(|v| v.base.id));
        self.deferred.push(i);
    }

    fn push(&mut self, batch: &'a [Instruction], i: usize) {
        let out = batch[i].output().expect("element-wise");
        let ws = self.written.entry(out.base.id).or_default();
        if !ws.contains(&out) {
            ws.push(out);
        }
        self.instrs.push(i);
    }

    /// Emits the run as a group (with the kernel's contracted bases that the run alone
    /// accesses) and then the system instructions deferred past it.
    fn close(&mut self, kernel_temps: &[BaseId], access: &HashMap<BaseId, Vec<usize>>, out: &mut Vec<Unit>) {
        let run = std::mem::take(self);
        if !run.instrs.is_empty() {
            let temps = kernel_temps
                .iter()
                .copied()
                .filter(|b| access[b].iter().all(|j| run.instrs.binary_search(j).is_ok()))
                .collect();
            out.push(Unit::Group(Group { instrs: run.instrs, temps, reduce: None }));
        }
        out.extend(run.deferred.into_iter().map(Unit::Single));
    }
}

/// The plan of `group` of a validated batch over `p` ranks: one stage, whose early work is
/// every piece a rank computes from its own blocks, piece after piece, and whose late work is
/// the pieces that need elements from other ranks.
pub fn plan_group(batch: &[Instruction], group: &Group, p: usize) -> Plan {
    let mut plan = Plan::default();
    let instrs: Vec<&Instruction> = group.instrs.iter().map(|&i| &batch[i]).collect();
    let shape = instrs[0].output().expect("element-wise").shape.to_vec();
    // Every distinct view of the group, split together.
    let mut views: Vec<&View> = Vec::new();
    for v in instrs.iter().flat_map(|i| i.views()) {
        if !views.contains(&v) {
            views.push(v);
        }
    }
    let owner_slot = |v: &View| views.iter().position(|w| *w == v).expect("collected above");
    let reduce = group.reduce.map(|r| &batch[r]);
    // Per piece, the rank holding its partial result of the reduction, and where.
    let mut partials: Vec<(usize, View)> = Vec::new();
    let mut stage = Stage::default();
    for piece in split(&shape, &views, &vec![true; shape.len()], p) {
        let region = &piece.region;
        // Per base contracted to the piece, its local temporary (on the rank that writes it).
        let mut local: HashMap<BaseId, View> = HashMap::new();
        // Per rank, its tasks for this piece and whether any waits for a message.
        let mut tasks: Vec<(usize, Vec<Task>, bool)> = Vec::new();
        for instr in &instrs {
            let out = instr.output().expect("element-wise");
            let rank = piece.owners[owner_slot(out)].expect("every dimension may be split");
            let (mut ops, mut fetched) = (Vec::with_capacity(instr.operands.len()), false);
            for (k, op) in instr.operands.iter().enumerate() {
                let v = match op {
                    Operand::Const(c) => {
                        ops.push(LocalOperand::Const(*c));
                        continue;
                    }
                    Operand::View(v) => v,
                };
                let loc = if group.temps.contains(&v.base.id) {
                    let t = local.entry(v.base.id).or_insert_with(|| plan.temp(rank, v.dtype(), &region.shape));
                    debug_assert_eq!(
                        plan.temps[t.base.id.0 as usize].rank, rank,
                        "a contracted value stays on its rank"
                    );
                    Loc::Temp(t.clone())
                } else {
                    let sub = restrict(v, region);
                    if k == 0 || piece.owners[owner_slot(v)] == Some(rank) {
                        Loc::Block(sub)
                    } else {
                        let t = plan.temp(rank, v.dtype(), &sub.shape);
                        plan.fetch(&sub, &t, rank, p, &mut stage.parts);
                        fetched = true;
                        Loc::Temp(t)
                    }
                };
                ops.push(LocalOperand::View(loc));
            }
            let task = Task { rank, work: Work::Child(instr.opcode, ops) };
            match tasks.iter_mut().find(|(r, _, _)| *r == rank) {
                Some((_, list, late)) => {
                    list.push(task);
                    *late |= fetched;
                }
                None => tasks.push((rank, vec![task], fetched)),
            }
        }
        if let Some(r) = reduce {
            // The piece's part of the reduced value, reduced where it was computed.
            let x = r.operands[1].as_view().expect("a view").base.id;
            let t = local.get(&x).expect("the group writes the reduced value");
            let rank = plan.temps[t.base.id.0 as usize].rank;
            let partial = plan.temp(rank, t.dtype(), &[1]);
            let scalar = View { shape: Default::default(), stride: Default::default(), ..partial.clone() };
            let flat =
                View { shape: [t.nelem()].into_iter().collect(), stride: [1].into_iter().collect(), ..t.clone() };
            let ops = vec![
                LocalOperand::View(Loc::Temp(scalar)),
                LocalOperand::View(Loc::Temp(flat)),
                LocalOperand::Const(r.operands[2].as_const().expect("an axis")),
            ];
            let task = Task { rank, work: Work::Child(r.opcode, ops) };
            tasks.iter_mut().find(|(q, _, _)| *q == rank).expect("the rank computed the value").1.push(task);
            partials.push((rank, partial));
        }
        for (_, list, late) in tasks {
            if late { stage.late.extend(list) } else { stage.early.extend(list) }
        }
    }
    plan.stages.push(stage);
    if let Some(r) = reduce {
        // The partial results travel to the output's owner, which reduces them.
        let out = r.output().expect("a reduction");
        let owner = Blocks::new(out.base.nelem, p).owner(out.start as u64);
        let landing = plan.temp(owner, out.dtype(), &[partials.len()]);
        let mut combine = Stage::default();
        for (k, (rank, partial)) in partials.into_iter().enumerate() {
            let slot = Region { lo: vec![k], shape: vec![1] };
            combine.parts.push(Part {
                src: rank,
                dst: owner,
                from: Loc::Temp(partial),
                to: Loc::Temp(restrict(&landing, &slot)),
            });
        }
        let ops = vec![
            LocalOperand::View(Loc::Block(out.clone())),
            LocalOperand::View(Loc::Temp(landing)),
            LocalOperand::Const(r.operands[2].as_const().expect("an axis")),
        ];
        combine.late.push(Task { rank: owner, work: Work::Child(r.opcode, ops) });
        plan.stages.push(combine);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::{Base, DType, Opcode, Scalar};
    use vm_testkit::runs::random_fusable_program;

    fn base(id: u64, n: usize) -> Base {
        Base { id: BaseId(id), dtype: DType::F64, nelem: n as u64 }
    }

    fn ins(op: Opcode, ops: Vec<Operand>) -> Instruction {
        Instruction::new(op, ops)
    }

    fn free(b: Base) -> Instruction {
        ins(Opcode::Free, vec![View::of_base(b).into()])
    }

    /// One Jacobi step on an `n x n` grid as a runtime records it: positions 0..=8.
    fn heat_step(n: usize) -> (Vec<Instruction>, [Base; 4]) {
        let m = n - 2;
        let grid = base(1, n * n);
        let at = |r: i64, c: i64| View::new(grid, r * n as i64 + c, &[m, m], &[n as i64, 1]).unwrap();
        let t = [base(2, m * m), base(3, m * m), base(4, m * m)];
        let v = |b: Base| View::contiguous(b, 0, &[m, m]).unwrap();
        let batch = vec![
            ins(Opcode::Add, vec![v(t[0]).into(), at(0, 1).into(), at(2, 1).into()]),
            ins(Opcode::Add, vec![v(t[1]).into(), v(t[0]).into(), at(1, 0).into()]),
            free(t[0]),
            ins(Opcode::Multiply, vec![v(t[2]).into(), v(t[1]).into(), Scalar::F64(0.25).into()]),
            free(t[1]),
            ins(Opcode::Identity, vec![at(1, 1).into(), v(t[2]).into()]),
            free(t[2]),
        ];
        (batch, [grid, t[0], t[1], t[2]])
    }

    #[test]
    fn a_stencil_step_is_one_group_whose_dead_temporaries_are_per_piece() {
        let (batch, [_, t0, t1, _]) = heat_step(10);
        let units = units(&batch, 2, ReductionOrder::Sequential);
        // The write back into the grid reads nothing of the run, but writes what it read
        // through other views: it starts a kernel (and a group) of its own.
        let group = Group { instrs: vec![0, 1, 3], temps: vec![t0.id, t1.id], reduce: None };
        assert_eq!(
            units,
            [
                Unit::Group(group),
                Unit::Single(2),
                Unit::Single(4),
                Unit::Group(Group { instrs: vec![5], temps: vec![], reduce: None }),
                Unit::Single(6)
            ]
        );
    }

    #[test]
    fn a_use_of_a_base_a_deferred_instruction_acts_on_ends_the_group() {
        let b = base(1, 16);
        let (x, y) = (base(2, 16), base(3, 16));
        let v = |b: Base| View::contiguous(b, 0, &[16]).unwrap();
        let batch = vec![
            ins(Opcode::Negative, vec![v(x).into(), v(b).into()]),
            ins(Opcode::Sync, vec![v(x).into()]),
            ins(Opcode::Add, vec![v(y).into(), v(b).into(), v(b).into()]),
            ins(Opcode::Add, vec![v(x).into(), v(x).into(), v(y).into()]),
        ];
        let got = units(&batch, 2, ReductionOrder::Sequential);
        let g = |instrs: Vec<usize>| Unit::Group(Group { instrs, temps: vec![], reduce: None });
        assert_eq!(got, [g(vec![0, 2]), Unit::Single(1), g(vec![3])]);
    }

    #[test]
    fn a_value_read_on_another_rank_than_it_was_computed_on_ends_the_group() {
        // `y` has more elements than `x`, so their blocks over 2 ranks do not line up: `y`
        // computed from `x` would need `x`'s values from the other rank within the group.
        let (a, x, y) = (base(1, 12), base(2, 12), base(3, 20));
        let batch = vec![
            ins(Opcode::Negative, vec![View::contiguous(x, 0, &[12]).unwrap().into(), View::of_base(a).into()]),
            ins(
                Opcode::Sin,
                vec![View::contiguous(y, 0, &[12]).unwrap().into(), View::contiguous(x, 0, &[12]).unwrap().into()],
            ),
        ];
        let g = |instrs: Vec<usize>| Unit::Group(Group { instrs, temps: vec![], reduce: None });
        assert_eq!(units(&batch, 2, ReductionOrder::Sequential), [g(vec![0]), g(vec![1])]);
        assert_eq!(units(&batch, 1, ReductionOrder::Sequential), [g(vec![0, 1])]);
    }

    #[test]
    fn each_rank_gets_its_local_pieces_first_as_runs_of_one_shape() {
        let n = 18;
        let (batch, [_, t0, t1, t2]) = heat_step(n);
        let group = Group { instrs: vec![0, 1, 3], temps: vec![t0.id, t1.id], reduce: None };
        let plan = plan_group(&batch, &group, 2);
        assert_eq!(plan.stages.len(), 1);
        let stage = &plan.stages[0];
        for rank in 0..2 {
            let early: Vec<&Task> = stage.early.iter().filter(|t| t.rank == rank).collect();
            // Whole pieces, one after the other: the run's three instructions on one box.
            assert!(!early.is_empty() && early.len().is_multiple_of(3), "rank {rank}: {} early tasks", early.len());
            for piece in early.chunks(3) {
                let shapes: Vec<Vec<usize>> = piece
                    .iter()
                    .map(|t| match &t.work {
                        Work::Child(_, ops) => match &ops[0] {
                            LocalOperand::View(loc) => loc.view().shape.to_vec(),
                            LocalOperand::Const(_) => unreachable!(),
                        },
                        Work::Generate { .. } => unreachable!(),
                    })
                    .collect();
                assert!(shapes.iter().all(|s| *s == shapes[0]), "{shapes:?}");
                // The dead temporaries live in the piece's own temporaries, the result in
                // its blocks.
                let Work::Child(_, last) = &piece[2].work else { unreachable!() };
                assert!(matches!(&last[0], LocalOperand::View(Loc::Block(v)) if v.base.id == t2.id));
                let Work::Child(_, first) = &piece[0].work else { unreachable!() };
                assert!(matches!(&first[0], LocalOperand::View(Loc::Temp(_))));
            }
            // The bulk piece holds most rows.
            let Work::Child(_, ops) = &early[0].work else { unreachable!() };
            let LocalOperand::View(loc) = &ops[0] else { unreachable!() };
            assert!(loc.view().shape[0] >= (n - 2) / 2 - 3, "{:?}", loc.view().shape);
        }
        // Only the rows next to a block boundary wait for messages.
        assert!(!stage.late.is_empty() && stage.late.len() <= 3 * 8, "{} late tasks", stage.late.len());
    }

    /// `heat_step` whose last value is reduced (flat) before it is copied back:
    /// `t3 = |t2|; sum = add_reduce(flat(t3))`, then the copy reads `t2`.
    fn heat_step_with_sum(n: usize, dtype_of_sum: DType) -> (Vec<Instruction>, Base, Base) {
        let (mut batch, [_, _, _, t2]) = heat_step(n);
        let m = n - 2;
        let t3 = base(5, m * m);
        let total = Base { id: BaseId(6), dtype: dtype_of_sum, nelem: 1 };
        let shaped = View::contiguous(t3, 0, &[m, m]).unwrap();
        let flat = View::contiguous(t3, 0, &[m * m]).unwrap();
        let abs = ins(Opcode::Absolute, vec![shaped.into(), View::contiguous(t2, 0, &[m, m]).unwrap().into()]);
        let sum = ins(
            Opcode::AddReduce,
            vec![View::new(total, 0, &[], &[]).unwrap().into(), flat.into(), Scalar::I64(0).into()],
        );
        batch.splice(5..5, [abs, sum, free(t3)]);
        (batch, t3, total)
    }

    #[test]
    fn a_reassociable_sum_of_a_dead_value_joins_its_group() {
        let (batch, t3, _) = heat_step_with_sum(12, DType::F64);
        let reduce_of = |order| {
            units(&batch, 2, order).into_iter().find_map(|u| match u {
                Unit::Group(g) if g.instrs.contains(&5) => Some(g),
                _ => None,
            })
        };
        let joined = reduce_of(ReductionOrder::Reassociated).unwrap();
        assert_eq!((joined.instrs.clone(), joined.reduce), (vec![0, 1, 3, 5], Some(6)));
        assert!(joined.temps.contains(&t3.id));
        // Over a child keeping the reference order, a floating-point sum stays apart.
        let apart = reduce_of(ReductionOrder::Sequential).unwrap();
        assert_eq!(apart.reduce, None);
        // Every piece reduces its part on its rank; the output's owner combines them.
        let plan = plan_group(&batch, &joined, 2);
        assert_eq!(plan.stages.len(), 2);
        let reduces = plan.stages[0].early.iter().chain(&plan.stages[0].late);
        let pieces = reduces.filter(|t| matches!(t.work, Work::Child(Opcode::AddReduce, _))).count();
        assert_eq!(plan.stages[1].parts.len(), pieces);
        assert!(pieces >= 2);
        assert!(matches!(plan.stages[1].late[..], [Task { rank: 1, work: Work::Child(Opcode::AddReduce, _) }]));
    }

    #[test]
    fn a_sum_of_a_value_used_elsewhere_stays_apart() {
        let (mut batch, t3, _) = heat_step_with_sum(12, DType::F64);
        // The reduced value is also synced: it must reach its blocks.
        batch.insert(7, ins(Opcode::Sync, vec![View::of_base(t3).into()]));
        let units = units(&batch, 2, ReductionOrder::Reassociated);
        assert!(units.iter().all(|u| !matches!(u, Unit::Group(Group { reduce: Some(_), .. }))), "{units:?}");
    }

    #[test]
    fn random_fusable_programs_form_groups_with_temporaries() {
        let (mut groups, mut with_temps, mut with_reduce) = (0, 0, 0);
        for seed in 0..60 {
            for batch in random_fusable_program(seed, 8).batches() {
                for unit in units(batch, 3, ReductionOrder::Sequential) {
                    if let Unit::Group(g) = unit {
                        groups += usize::from(g.instrs.len() > 1);
                        with_temps += usize::from(!g.temps.is_empty());
                        assert_eq!(g.reduce, None, "floating-point sums keep their order");
                    }
                }
                for unit in units(batch, 3, ReductionOrder::Reassociated) {
                    with_reduce += usize::from(matches!(unit, Unit::Group(Group { reduce: Some(_), .. })));
                }
            }
        }
        assert!(groups > 100 && with_temps > 50, "{groups} groups, {with_temps} with temporaries");
        assert!(with_reduce > 10, "{with_reduce} groups with a reduction");
    }
}
