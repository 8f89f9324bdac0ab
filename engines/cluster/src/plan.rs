//! Planning: how the ranks execute one global instruction together. A pure function of the
//! instruction, the number of ranks and the reduction order of the ranks' children (one
//! config builds them all), so every rank computes the same plan from the broadcast batch and
//! no metadata is ever exchanged.
//!
//! Strategies, by opcode kind:
//! - reductions (same-type, input disjoint from the output): a pipeline along the axis, see
//!   `reduce_pipeline`: each rank reduces the input it owns, continuing from the partial
//!   results before it, so only partials travel; the order is the reference's unless the
//!   child reassociates floating-point reductions anyway (or the type is exact in any order).
//! - element-wise (unary, binary, select) and the other reductions (logical ones, those whose
//!   output overlaps their input, and the reductions to a position, `argmin_reduce` and
//!   `argmax_reduce`): *owner computes*. The iteration space is split ([`crate::split`]) so
//!   that each box's output and inputs each lie in one block; the output's owner runs the box
//!   through its child. An input box owned elsewhere (or partially overlapping the output,
//!   which must be read before it is written) is fetched into a local temporary. A reduction
//!   never splits its axis: the output's owner fetches whole rows, so the result is combined in
//!   exactly the reference order, and a position along a whole row is the global one.
//! - range and random: owner computes; the values of a box are a pure function of the global
//!   row-major positions, generated straight into a temporary and copied in by the child.
//! - accumulate: owner computes by boxes, in levels: a box that does not start the scanned axis
//!   continues from the output slab just before it (its carry), fetched once that is computed.
//!   Exact: every element is combined in the reference order.
//! - gather, scatter, sort, argsort, searches and extension methods: the simple correct strategy. Rank 0
//!   fetches every operand view whole, runs the instruction, and sends each owner its part of
//!   the output.
//! - sync moves only the synced view's elements to rank 0's host memory; discard (the host copy
//!   is authoritative) sends each owner its block from rank 0; free frees every block.

use crate::dist::Blocks;
use crate::split::{Piece, Region, restrict, split};
use vm_ir::view::row_major_strides;
use vm_ir::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Overlap, Scalar, View};
use vm_runtime::ReductionOrder;

/// Where elements live, on the rank that holds them.
#[derive(Debug, Clone, PartialEq)]
pub enum Loc {
    /// A view of a global base, all of whose elements the holding rank owns.
    Block(View),
    /// A view of one of the plan's temporaries; its base's id is the temporary's index.
    Temp(View),
    /// A view of a global base in rank 0's host memory.
    Host(View),
}

impl Loc {
    /// The view (global, or of the temporary).
    pub fn view(&self) -> &View {
        match self {
            Loc::Block(v) | Loc::Temp(v) | Loc::Host(v) => v,
        }
    }
}

/// Elements that travel from rank `src` (read at `from`) to rank `dst` (written at `to`), in
/// the row-major order of both views, which have one shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Sending rank.
    pub src: usize,
    /// Receiving rank.
    pub dst: usize,
    /// Where the sender reads.
    pub from: Loc,
    /// Where the receiver writes (a temporary or rank 0's host memory).
    pub to: Loc,
}

/// An operand of a local instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalOperand {
    /// A view of the rank's blocks or temporaries.
    View(Loc),
    /// A constant.
    Const(Scalar),
}

/// What a rank does locally.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// Run an instruction through the child stack.
    Child(Opcode, Vec<LocalOperand>),
    /// Fill temporary `temp` with the `range` or `random` values of the box `region` of an
    /// output of shape `shape` (positions are row-major in `shape`).
    Generate {
        /// `range` or `random`.
        opcode: Opcode,
        /// For `random`, the seed and the counter offset.
        seed_offset: (u64, u64),
        /// The temporary (contiguous, of the box's shape).
        temp: usize,
        /// The box.
        region: Region,
        /// The whole output's shape.
        shape: Vec<usize>,
    },
}

/// Local work of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The rank doing it.
    pub rank: usize,
    /// The work.
    pub work: Work,
}

/// One round of communication and the work around it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stage {
    /// Elements that travel (parts with `src == dst` are local copies).
    pub parts: Vec<Part>,
    /// Work that needs nothing received: it runs while the messages are in flight.
    pub early: Vec<Task>,
    /// Work that runs once everything has arrived.
    pub late: Vec<Task>,
}

/// A temporary: a contiguous local array of one rank, live for one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Temp {
    /// The rank holding it.
    pub rank: usize,
    /// Element type.
    pub dtype: DType,
    /// Number of elements.
    pub nelem: u64,
}

/// How the ranks execute one instruction.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// Temporaries, by index.
    pub temps: Vec<Temp>,
    /// Stages, in order.
    pub stages: Vec<Stage>,
    /// A base rank 0's host memory must hold before the stages run.
    pub host_ensure: Option<Base>,
    /// A base rank 0's host memory releases after the stages ran.
    pub host_free: Option<BaseId>,
}

impl Plan {
    /// A new temporary of `shape` on `rank`, as a contiguous view.
    pub(crate) fn temp(&mut self, rank: usize, dtype: DType, shape: &[usize]) -> View {
        let nelem = shape.iter().product::<usize>() as u64;
        let base = Base { id: BaseId(self.temps.len() as u64), dtype, nelem };
        self.temps.push(Temp { rank, dtype, nelem });
        View { base, start: 0, shape: shape.iter().copied().collect(), stride: row_major_strides(shape) }
    }

    /// Parts that bring all of global `view` to `dst`, written into `into` (same shape).
    pub(crate) fn fetch(&self, view: &View, into: &View, dst: usize, p: usize, parts: &mut Vec<Part>) {
        for piece in split(&view.shape, &[view], &vec![true; view.ndim()], p) {
            let src = piece.owners[0].expect("every dimension may be split");
            parts.push(Part {
                src,
                dst,
                from: Loc::Block(restrict(view, &piece.region)),
                to: Loc::Temp(restrict(into, &piece.region)),
            });
        }
    }

    /// Total bytes of the parts that cross between different ranks.
    pub fn remote_bytes(&self) -> usize {
        self.stages
            .iter()
            .flat_map(|s| &s.parts)
            .filter(|p| p.src != p.dst)
            .map(|p| p.from.view().nelem() * p.from.view().dtype().size())
            .sum()
    }
}

/// The plan of a validated instruction over `p` ranks whose children combine reductions in
/// `reduction` order.
pub fn plan(instr: &Instruction, p: usize, reduction: ReductionOrder) -> Plan {
    let mut plan = Plan::default();
    let kind = instr.opcode.kind();
    match kind {
        Kind::Unary | Kind::Binary | Kind::Select | Kind::Reduce => owner_computes(instr, p, reduction, &mut plan),
        Kind::Range | Kind::Random => generate(instr, p, &mut plan),
        Kind::Accumulate => accumulate(instr, p, &mut plan),
        Kind::Gather | Kind::Scatter | Kind::Sort | Kind::Search | Kind::Extension => at_root(instr, p, &mut plan),
        Kind::System => system(instr, p, &mut plan),
        Kind::Nothing => {}
    }
    plan
}

fn view_of(op: &Operand) -> &View {
    op.as_view().expect("validated: a view operand")
}

fn owner_computes(instr: &Instruction, p: usize, reduction: ReductionOrder, plan: &mut Plan) {
    let out = view_of(&instr.operands[0]);
    let reduce_axis = (instr.opcode.kind() == Kind::Reduce).then(|| instr.axis().expect("validated axis"));
    let ninputs = instr.inputs().len();
    // The iteration space and every operand as a view of it.
    let (shape, out_it) = match reduce_axis {
        None => (out.shape.to_vec(), out.clone()),
        Some(axis) => {
            let input = view_of(&instr.operands[1]);
            let mut o = out.clone();
            o.shape.insert(axis, input.shape[axis]);
            o.stride.insert(axis, 0);
            (input.shape.to_vec(), o)
        }
    };
    if let Some(axis) = reduce_axis
        && shape[axis] > 0
        && matches!(instr.opcode.type_rule(), vm_ir::TypeRule::Same(_))
        && out.overlap(view_of(&instr.operands[1])) == Overlap::Disjoint
    {
        return reduce_pipeline(instr, axis, p, reduction, plan);
    }
    let mut splittable = vec![true; shape.len()];
    if let Some(axis) = reduce_axis {
        splittable[axis] = false;
        if shape[axis] == 0 {
            // Reducing nothing: the output's owners write the identity from an empty input.
            for piece in split(&out.shape, &[out], &vec![true; out.ndim()], p) {
                let r = piece.owners[0].expect("splittable");
                let mut s = piece.region.shape.clone();
                s.insert(axis, 0);
                let t = plan.temp(r, instr.operands[1].dtype(), &s);
                let ops = vec![
                    LocalOperand::View(Loc::Block(restrict(out, &piece.region))),
                    LocalOperand::View(Loc::Temp(t)),
                    LocalOperand::Const(instr.operands[2].as_const().expect("axis")),
                ];
                push_stage_task(plan, r, Work::Child(instr.opcode, ops), false);
            }
            return;
        }
    }
    let mut views: Vec<&View> = vec![&out_it];
    let mut conflict = vec![false];
    for op in &instr.inputs()[..ninputs] {
        if let Operand::View(v) = op {
            views.push(v);
            conflict.push(out.overlap(v) == Overlap::Partial);
        }
    }
    let mut stage = Stage::default();
    for piece in split(&shape, &views, &splittable, p) {
        let rank = piece.owners[0].expect("the output is always split to one owner");
        let out_region = match reduce_axis {
            Some(axis) => {
                let mut r = piece.region.clone();
                r.lo.remove(axis);
                r.shape.remove(axis);
                r
            }
            None => piece.region.clone(),
        };
        let mut ops = vec![LocalOperand::View(Loc::Block(restrict(out, &out_region)))];
        let mut fetched = false;
        let mut k = 1;
        for op in &instr.operands[1..] {
            match op {
                Operand::Const(c) => ops.push(LocalOperand::Const(*c)),
                Operand::View(v) => {
                    let sub = restrict(v, &piece.region);
                    if piece.owners[k] == Some(rank) && !conflict[k] {
                        ops.push(LocalOperand::View(Loc::Block(sub)));
                    } else {
                        let t = plan.temp(rank, v.dtype(), &sub.shape);
                        plan.fetch(&sub, &t, rank, p, &mut stage.parts);
                        ops.push(LocalOperand::View(Loc::Temp(t)));
                        fetched = true;
                    }
                    k += 1;
                }
            }
        }
        let task = Task { rank, work: Work::Child(instr.opcode, ops) };
        if fetched { stage.late.push(task) } else { stage.early.push(task) }
    }
    plan.stages.push(stage);
}

/// `r` without dimension `axis`.
fn drop_axis(r: &Region, axis: usize) -> Region {
    let mut r = r.clone();
    r.lo.remove(axis);
    r.shape.remove(axis);
    r
}

/// A reduction along an axis without moving the input: each box of the split (input and
/// output each in one block) is reduced by the owner of its input. A box that starts the axis
/// reduces its elements; a later box continues from its *carry*, the partial results of the
/// boxes just before it along the axis (fetched from their ranks at an earlier level). The box
/// that ends the axis writes the output, or sends its result to the output's owner. A reduction
/// along rows of a row-major array is local but for rows cut by a block boundary; a reduction
/// of all elements passes one running value from rank to rank.
///
/// In the reference order (`Sequential`, for floating point when the child keeps it), a later
/// box folds its carry into its first slab and then reduces, which is `((c op x0) op x1) ...`,
/// bit for bit the reference's; that needs a copy of the box, made once the carry is known.
/// Otherwise (integers and booleans, exact in any order, or a child that reassociates itself)
/// every box is reduced at once, while the carries travel, and the carry is folded into the
/// box's result: no copy and no wait before the bulk of the work.
fn reduce_pipeline(instr: &Instruction, axis: usize, p: usize, reduction: ReductionOrder, plan: &mut Plan) {
    let out = view_of(&instr.operands[0]);
    let input = view_of(&instr.operands[1]);
    let combiner = instr.opcode.combiner().expect("a reduction has a combining opcode");
    let axis_op = LocalOperand::Const(instr.operands[2].as_const().expect("validated axis"));
    let reassociate = reduction == ReductionOrder::Reassociated || !input.dtype().is_float();
    let n = input.shape[axis];
    let mut out_it = out.clone();
    out_it.shape.insert(axis, n);
    out_it.stride.insert(axis, 0);
    let pieces = split(&input.shape, &[&out_it, input], &vec![true; input.ndim()], p);
    let (order, level) = carry_levels(&pieces, axis);
    let nstages = level.iter().max().map_or(0, |&l| l + 2);
    let mut stages = vec![Stage::default(); nstages];
    // Per box, where its partial result lives when it is not written to the output directly.
    let mut partials: Vec<Option<View>> = vec![None; pieces.len()];
    for (k, &i) in order.iter().enumerate() {
        let piece = &pieces[i];
        let (out_owner, rank) = (piece.owners[0].expect("split"), piece.owners[1].expect("split"));
        let region = &piece.region;
        let out_region = drop_axis(region, axis);
        let out_sub = restrict(out, &out_region);
        let l = level[i];
        let last = region.lo[axis] + region.shape[axis] == n;
        let dest = if last && out_owner == rank {
            Loc::Block(out_sub.clone())
        } else {
            let t = plan.temp(rank, out.dtype(), &out_region.shape);
            partials[i] = Some(t.clone());
            Loc::Temp(t)
        };
        let in_sub = Loc::Block(restrict(input, region));
        let reduce = |into: Loc, from: Loc| {
            Work::Child(instr.opcode, vec![LocalOperand::View(into), LocalOperand::View(from), axis_op.clone()])
        };
        if region.lo[axis] == 0 {
            stages[l].early.push(Task { rank, work: reduce(dest, in_sub) });
        } else {
            // The carry, gathered from the partials of the boxes just before this one.
            let carry = plan.temp(rank, out.dtype(), &out_region.shape);
            for &j in order[..k].iter().filter(|&&j| holds_carry(&pieces[j].region, region, axis)) {
                let q = drop_axis(&pieces[j].region, axis);
                let lo: Vec<usize> = q.lo.iter().zip(&out_region.lo).map(|(&a, &b)| a.max(b)).collect();
                let shape: Vec<usize> = (0..lo.len())
                    .map(|d| (q.lo[d] + q.shape[d]).min(out_region.lo[d] + out_region.shape[d]) - lo[d])
                    .collect();
                let rel = |origin: &[usize]| Region {
                    lo: lo.iter().zip(origin).map(|(&a, &o)| a - o).collect(),
                    shape: shape.clone(),
                };
                let from = partials[j].as_ref().expect("an earlier box keeps its partial");
                stages[l].parts.push(Part {
                    src: pieces[j].owners[1].expect("split"),
                    dst: rank,
                    from: Loc::Temp(restrict(from, &rel(&q.lo))),
                    to: Loc::Temp(restrict(&carry, &rel(&out_region.lo))),
                });
            }
            let late = if reassociate {
                let partial = plan.temp(rank, out.dtype(), &out_region.shape);
                stages[0].early.push(Task { rank, work: reduce(Loc::Temp(partial.clone()), in_sub) });
                let fold = [dest, Loc::Temp(carry), Loc::Temp(partial)].map(LocalOperand::View);
                vec![Work::Child(combiner, fold.to_vec())]
            } else {
                let x = plan.temp(rank, input.dtype(), &region.shape);
                let copy = vec![LocalOperand::View(Loc::Temp(x.clone())), LocalOperand::View(in_sub)];
                let mut first = Region::whole(&region.shape);
                first.shape[axis] = 1;
                let x0 = LocalOperand::View(Loc::Temp(restrict(&x, &first)));
                let mut c = carry;
                c.shape.insert(axis, 1);
                c.stride.insert(axis, 0);
                vec![
                    Work::Child(Opcode::Identity, copy),
                    Work::Child(combiner, vec![x0.clone(), LocalOperand::View(Loc::Temp(c)), x0]),
                    reduce(dest, Loc::Temp(x)),
                ]
            };
            stages[l].late.extend(late.into_iter().map(|work| Task { rank, work }));
        }
        if last && out_owner != rank {
            // Deliver the result to the output's owner.
            let landing = plan.temp(out_owner, out.dtype(), &out_region.shape);
            let from = partials[i].clone().expect("kept above");
            stages[l + 1].parts.push(Part {
                src: rank,
                dst: out_owner,
                from: Loc::Temp(from),
                to: Loc::Temp(landing.clone()),
            });
            let copy = vec![LocalOperand::View(Loc::Block(out_sub)), LocalOperand::View(Loc::Temp(landing))];
            stages[l + 1].late.push(Task { rank: out_owner, work: Work::Child(Opcode::Identity, copy) });
        }
    }
    plan.stages.extend(stages);
}

fn push_stage_task(plan: &mut Plan, rank: usize, work: Work, late: bool) {
    if plan.stages.is_empty() {
        plan.stages.push(Stage::default());
    }
    let stage = plan.stages.last_mut().expect("pushed");
    let task = Task { rank, work };
    if late { stage.late.push(task) } else { stage.early.push(task) }
}

fn generate(instr: &Instruction, p: usize, plan: &mut Plan) {
    let out = view_of(&instr.operands[0]);
    let seed_offset = match instr.opcode.kind() {
        Kind::Random => {
            let u = |i: usize| instr.operands[i].as_const().map(|s| s.get::<u64>()).unwrap_or(0);
            (u(1), u(2))
        }
        _ => (0, 0),
    };
    for piece in split(&out.shape, &[out], &vec![true; out.ndim()], p) {
        let rank = piece.owners[0].expect("splittable");
        let t = plan.temp(rank, out.dtype(), &piece.region.shape);
        let temp = t.base.id.0 as usize;
        let work = Work::Generate {
            opcode: instr.opcode,
            seed_offset,
            temp,
            region: piece.region.clone(),
            shape: out.shape.to_vec(),
        };
        push_stage_task(plan, rank, work, false);
        let copy = vec![LocalOperand::View(Loc::Block(restrict(out, &piece.region))), LocalOperand::View(Loc::Temp(t))];
        push_stage_task(plan, rank, Work::Child(Opcode::Identity, copy), false);
    }
}

/// The boxes in order along `axis`, and each box's level: 0 for one that starts the axis, else
/// one more than the highest level of the boxes that hold part of its carry ([`holds_carry`]).
fn carry_levels(pieces: &[Piece], axis: usize) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_key(|&i| pieces[i].region.lo[axis]);
    let mut level = vec![0usize; pieces.len()];
    for (k, &i) in order.iter().enumerate() {
        if pieces[i].region.lo[axis] > 0 {
            level[i] = order[..k]
                .iter()
                .filter(|&&j| holds_carry(&pieces[j].region, &pieces[i].region, axis))
                .map(|&j| level[j] + 1)
                .max()
                .unwrap_or(0);
        }
    }
    (order, level)
}

/// True when box `q` holds part of the carry of box `b` along `axis`: the slab of the iteration
/// space just before `b` along the axis, over `b`'s extent in the other dimensions.
fn holds_carry(q: &Region, b: &Region, axis: usize) -> bool {
    let before = b.lo[axis] - 1;
    (0..b.lo.len()).all(|d| {
        let (lo, hi) = if d == axis { (before, before + 1) } else { (b.lo[d], b.lo[d] + b.shape[d]) };
        q.lo[d] < hi && lo < q.lo[d] + q.shape[d]
    })
}

/// A scan along an axis, exactly in the reference order: each box of the split (output and
/// input each in one block) is scanned by the output's owner. A box that does not start the axis
/// continues from its *carry*, the output slab just before it, computed at an earlier level and
/// fetched from its owners: the box's first slab becomes `carry op input` and the box is then
/// scanned locally, which is `((carry op x0) op x1) ...`, the reference's order. Boxes at level
/// `k` (those whose carry comes from level `k - 1`) run in stage `k`: a scan along rows of a
/// row-major array is one local stage (plus a step for a row cut by a block boundary); along the
/// flat axis it is a pipeline from rank to rank carrying the running value.
fn accumulate(instr: &Instruction, p: usize, plan: &mut Plan) {
    let out = view_of(&instr.operands[0]);
    let input = view_of(&instr.operands[1]);
    let axis = instr.axis().expect("validated axis");
    let combiner = instr.opcode.combiner().expect("a scan has a combining opcode");
    // Inputs that partly overlap the output are all read (into temporaries) before any write.
    let conflict = out.overlap(input) == Overlap::Partial;
    let pieces = split(&out.shape, &[out, input], &vec![true; out.ndim()], p);
    let (order, level) = carry_levels(&pieces, axis);
    let nstages = level.iter().max().map_or(0, |&l| l + 1);
    let mut stages = vec![Stage::default(); nstages];
    for &i in &order {
        let piece = &pieces[i];
        let rank = piece.owners[0].expect("the output is always split to one owner");
        let region = &piece.region;
        let out_sub = restrict(out, region);
        let in_sub = restrict(input, region);
        let (input_loc, fetched) = if piece.owners[1] == Some(rank) && !conflict {
            (Loc::Block(in_sub), false)
        } else {
            let t = plan.temp(rank, in_sub.dtype(), &in_sub.shape);
            plan.fetch(&in_sub, &t, rank, p, &mut stages[0].parts);
            (Loc::Temp(t), true)
        };
        let axis_op = LocalOperand::Const(instr.operands[2].as_const().expect("validated axis"));
        let l = level[i];
        let mut tasks = Vec::new();
        let scanned = if region.lo[axis] == 0 {
            input_loc
        } else {
            // The carry: the output slab before the box, fetched from its owners.
            let mut before = region.clone();
            before.lo[axis] -= 1;
            before.shape[axis] = 1;
            let carry_src = restrict(out, &before);
            let carry = plan.temp(rank, out.dtype(), &carry_src.shape);
            plan.fetch(&carry_src, &carry, rank, p, &mut stages[l].parts);
            // The box's input in a temporary of this rank, whose first slab takes the carry.
            let x = match input_loc {
                Loc::Temp(t) => t,
                other => {
                    let t = plan.temp(rank, input.dtype(), &region.shape);
                    let copy = vec![LocalOperand::View(Loc::Temp(t.clone())), LocalOperand::View(other)];
                    tasks.push(Work::Child(Opcode::Identity, copy));
                    t
                }
            };
            let mut first = Region::whole(&region.shape);
            first.shape[axis] = 1;
            let x0 = LocalOperand::View(Loc::Temp(restrict(&x, &first)));
            tasks.push(Work::Child(combiner, vec![x0.clone(), LocalOperand::View(Loc::Temp(carry)), x0]));
            Loc::Temp(x)
        };
        let ops = vec![LocalOperand::View(Loc::Block(out_sub)), LocalOperand::View(scanned), axis_op];
        tasks.push(Work::Child(instr.opcode, ops));
        let late = l > 0 || fetched;
        for work in tasks {
            let task = Task { rank, work };
            if late { stages[l].late.push(task) } else { stages[l].early.push(task) }
        }
    }
    plan.stages.extend(stages);
}

fn at_root(instr: &Instruction, p: usize, plan: &mut Plan) {
    let mut gather = Stage::default();
    let mut ops = Vec::new();
    let reads_output = matches!(instr.opcode.kind(), Kind::Scatter | Kind::Extension);
    let mut out_temp = None;
    for (i, op) in instr.operands.iter().enumerate() {
        match op {
            Operand::Const(c) => ops.push(LocalOperand::Const(*c)),
            Operand::View(v) => {
                let t = plan.temp(0, v.dtype(), &v.shape);
                if i > 0 || reads_output {
                    plan.fetch(v, &t, 0, p, &mut gather.parts);
                }
                if i == 0 {
                    out_temp = Some(t.clone());
                }
                ops.push(LocalOperand::View(Loc::Temp(t)));
            }
        }
    }
    gather.late.push(Task { rank: 0, work: Work::Child(instr.opcode, ops) });
    plan.stages.push(gather);
    let (Some(out), Some(t)) = (instr.operands.first().and_then(Operand::as_view), out_temp) else { return };
    let mut scatter = Stage::default();
    for piece in split(&out.shape, &[out], &vec![true; out.ndim()], p) {
        let rank = piece.owners[0].expect("splittable");
        let landing = plan.temp(rank, out.dtype(), &piece.region.shape);
        scatter.parts.push(Part {
            src: 0,
            dst: rank,
            from: Loc::Temp(restrict(&t, &piece.region)),
            to: Loc::Temp(landing.clone()),
        });
        let copy =
            vec![LocalOperand::View(Loc::Block(restrict(out, &piece.region))), LocalOperand::View(Loc::Temp(landing))];
        scatter.late.push(Task { rank, work: Work::Child(Opcode::Identity, copy) });
    }
    plan.stages.push(scatter);
}

fn system(instr: &Instruction, p: usize, plan: &mut Plan) {
    let v = view_of(&instr.operands[0]);
    let base = v.base;
    let blocks = Blocks::new(base.nelem, p);
    let block_views = (0..p)
        .filter(|&r| blocks.len(r) > 0)
        .map(|r| (r, View::contiguous(base, blocks.start(r) as i64, &[blocks.len(r) as usize]).expect("in bounds")));
    let mut stage = Stage::default();
    match instr.opcode {
        Opcode::Sync => {
            plan.host_ensure = Some(base);
            for piece in split(&v.shape, &[v], &vec![true; v.ndim()], p) {
                let sub = restrict(v, &piece.region);
                let src = piece.owners[0].expect("splittable");
                stage.parts.push(Part { src, dst: 0, from: Loc::Block(sub.clone()), to: Loc::Host(sub) });
            }
        }
        Opcode::Discard => {
            plan.host_ensure = Some(base);
            for (r, bv) in block_views {
                let t = plan.temp(r, base.dtype, &bv.shape);
                stage.parts.push(Part { src: 0, dst: r, from: Loc::Host(bv.clone()), to: Loc::Temp(t.clone()) });
                let copy = vec![LocalOperand::View(Loc::Block(bv)), LocalOperand::View(Loc::Temp(t))];
                stage.late.push(Task { rank: r, work: Work::Child(Opcode::Identity, copy) });
            }
        }
        _ => {
            // free
            plan.host_free = Some(base.id);
            for (r, bv) in block_views {
                let ops = vec![LocalOperand::View(Loc::Block(bv))];
                stage.early.push(Task { rank: r, work: Work::Child(Opcode::Free, ops) });
            }
        }
    }
    plan.stages.push(stage);
}
