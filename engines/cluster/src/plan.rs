//! Planning: how the ranks execute one global instruction together. A pure function of the
//! instruction and the number of ranks, so every rank computes the same plan from the broadcast
//! batch and no metadata is ever exchanged.
//!
//! Strategies, by opcode kind:
//! - element-wise (unary, binary, select) and reductions: *owner computes*. The iteration space
//!   is split ([`crate::split`]) so that each box's output and inputs each lie in one block; the
//!   output's owner runs the box through its child. An input box owned elsewhere (or partially
//!   overlapping the output, which must be read before it is written) is fetched into a local
//!   temporary. A reduction never splits its axis: the output's owner fetches whole rows, so the
//!   result is combined in exactly the reference order.
//! - range and random: owner computes; the values of a box are a pure function of the global
//!   row-major positions, generated straight into a temporary and copied in by the child.
//! - accumulate, gather, scatter and extension methods: the simple correct strategy. Rank 0
//!   fetches every operand view whole, runs the instruction, and sends each owner its part of
//!   the output.
//! - sync moves only the synced view's elements to rank 0's host memory; discard (the host copy
//!   is authoritative) sends each owner its block from rank 0; free frees every block.

use crate::dist::Blocks;
use crate::split::{Region, restrict, split};
use vm_core::view::row_major_strides;
use vm_core::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Overlap, Scalar, View};

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
    fn temp(&mut self, rank: usize, dtype: DType, shape: &[usize]) -> View {
        let nelem = shape.iter().product::<usize>() as u64;
        let base = Base { id: BaseId(self.temps.len() as u64), dtype, nelem };
        self.temps.push(Temp { rank, dtype, nelem });
        View { base, start: 0, shape: shape.iter().copied().collect(), stride: row_major_strides(shape) }
    }

    /// Parts that bring all of global `view` to `dst`, written into `into` (same shape).
    fn fetch(&self, view: &View, into: &View, dst: usize, p: usize, parts: &mut Vec<Part>) {
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

/// The plan of a validated instruction over `p` ranks.
pub fn plan(instr: &Instruction, p: usize) -> Plan {
    let mut plan = Plan::default();
    let kind = instr.opcode.kind();
    match kind {
        Kind::Unary | Kind::Binary | Kind::Select | Kind::Reduce => owner_computes(instr, p, &mut plan),
        Kind::Range | Kind::Random => generate(instr, p, &mut plan),
        Kind::Accumulate | Kind::Gather | Kind::Scatter | Kind::Extension => at_root(instr, p, &mut plan),
        Kind::System => system(instr, p, &mut plan),
        Kind::Nothing => {}
    }
    plan
}

fn view_of(op: &Operand) -> &View {
    op.as_view().expect("validated: a view operand")
}

fn owner_computes(instr: &Instruction, p: usize, plan: &mut Plan) {
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
