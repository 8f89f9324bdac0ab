//! Random programs drawn from the opcode table itself, so a new opcode joins them by itself.
//!
//! Per seed: one dtype; iteration shapes up to [`ProgramSpec::max_dims`] dimensions; views with
//! negative and zero (broadcast) strides that alias each other; every element-wise opcode the
//! table defines on the dtype, constants among the operands; comparisons and predicates into
//! bool bases; `select` on bool inputs; reductions (to a value, to bools, to a position, of bool
//! inputs too) and scans along each axis; `range` and `random`; temporaries written, read and
//! freed within the batch; `sync`; and at the end a `sync` of every live base. Gather and
//! scatter are left to the per-opcode tests, whose index data must be in bounds.
//!
//! Two layouts of the data ([`Bases`]) and, optionally, several batches with host writes
//! between them ([`ProgramSpec::steps`]) give the programs a distributed manager must survive:
//! bases smaller than its number of ranks, views across block boundaries, empty and 0-d views,
//! reductions writing into the bases they read.

use crate::data::{Data, bytes};
use crate::program::{Program, Step, sync_all};
use crate::rng::Rng;
use vm_ir::instr::visits_each_element_once;
use vm_ir::opcode::TypeRule;
use vm_ir::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Scalar, View};

/// Where a program's data lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bases {
    /// Three data bases and two bool bases, each large enough for any view of the iteration
    /// shape; the iteration shape (1 to 40 elements along an axis) holds for runs of
    /// instructions, which temporaries live through.
    Roomy,
    /// Data and bool bases of uneven sizes, 1 to 1500 elements (some fewer than a cluster's
    /// ranks, so that some ranks own nothing); a small iteration shape (up to 3-d, 0 to 6
    /// elements along an axis, 0-d included) that changes often; a view goes into any base it
    /// fits, and reductions write into the data bases too.
    Uneven,
}

/// What random programs may contain.
#[derive(Debug, Clone)]
pub struct ProgramSpec {
    /// The dtypes a program's data may have (one per program).
    pub dtypes: Vec<DType>,
    /// The most dimensions of an iteration space.
    pub max_dims: usize,
    /// The most instructions of a program.
    pub max_len: usize,
    /// Which opcodes may appear on which dtype (on top of the table's own rules).
    pub allow: fn(Opcode, DType) -> bool,
    /// Where the data lives.
    pub bases: Bases,
    /// Cut the program into several batches, with host writes (sync, write an element,
    /// discard) between them.
    pub steps: bool,
    /// Sync the bases alive at the end in a batch of their own, not at the end of the last
    /// batch: what an engine deferred is then read by a later batch.
    pub sync_apart: bool,
}

impl Default for ProgramSpec {
    /// Every opcode, dtypes f64, f32, i32, i64, u8, i16 and u64, up to 4-d, up to 14 instructions
    /// in one batch over roomy bases.
    fn default() -> ProgramSpec {
        ProgramSpec {
            dtypes: vec![DType::F64, DType::F32, DType::I32, DType::I64, DType::U8, DType::I16, DType::U64],
            max_dims: 4,
            max_len: 14,
            allow: |_, _| true,
            bases: Bases::Roomy,
            steps: false,
            sync_apart: false,
        }
    }
}

impl ProgramSpec {
    /// The programs a distributed manager meets: every opcode on every dtype of the default,
    /// up to 3-d and 30 instructions over bases of uneven sizes, in several batches with host
    /// writes.
    pub fn uneven() -> ProgramSpec {
        ProgramSpec { max_dims: 3, max_len: 30, bases: Bases::Uneven, steps: true, ..ProgramSpec::default() }
    }
}

/// A random view of `shape` into `b`, or `None` when the layouts drawn do not fit; an output
/// view visits each element once.
fn try_random_view(r: &mut Rng, b: Base, shape: &[usize], output: bool) -> Option<View> {
    for _ in 0..20 {
        let stride: Vec<i64> = shape
            .iter()
            .map(|_| {
                let s = r.below(7) as i64 - 3;
                if s == 0 && (output || !r.chance(30)) { 1 } else { s }
            })
            .collect();
        let (mut neg, mut pos) = (0i64, 0i64);
        for (&n, &s) in shape.iter().zip(&stride) {
            let reach = (n as i64 - 1) * s;
            if reach < 0 { neg += reach } else { pos += reach }
        }
        let (lo, hi) = (-neg, b.nelem as i64 - 1 - pos);
        if lo > hi {
            continue;
        }
        let start = lo + r.below((hi - lo + 1) as usize) as i64;
        if let Ok(v) = View::new(b, start, shape, &stride)
            && (!output || visits_each_element_once(&v))
        {
            return Some(v);
        }
    }
    None
}

/// A random view of `shape` into `b` (strides -3 to 3, zero for inputs now and then); an
/// output view visits each element once. Falls back to the contiguous view, which `b` must hold.
pub fn random_view(r: &mut Rng, b: Base, shape: &[usize], output: bool) -> View {
    try_random_view(r, b, shape, output)
        .unwrap_or_else(|| View::contiguous(b, 0, shape).expect("a contiguous view of a large enough base"))
}

/// A random view of `shape` into one of `bases` that it fits, as [`random_view`] draws them;
/// at worst the contiguous view of the largest.
pub fn random_view_in(r: &mut Rng, bases: &[Base], shape: &[usize], output: bool) -> View {
    for _ in 0..8 {
        let b = r.pick(bases);
        if let Some(v) = try_random_view(r, b, shape, output) {
            return v;
        }
    }
    let largest = *bases.iter().max_by_key(|b| b.nelem).expect("some base");
    View::contiguous(largest, 0, shape).unwrap_or_else(|e| panic!("no base holds a view of shape {shape:?}: {e}"))
}

/// The opcodes of `kind` whose table rule admits `dtype` (producing bools when `to_bool`).
fn table_ops(kind: Kind, dtype: DType, to_bool: bool, spec: &ProgramSpec) -> Vec<Opcode> {
    Opcode::ALL
        .iter()
        .copied()
        .filter(|&op| op.kind() == kind && (spec.allow)(op, dtype))
        .filter(|op| match op.type_rule() {
            TypeRule::Same(set) => !to_bool && set.contains(dtype),
            TypeRule::ToBool(set) => to_bool && set.contains(dtype),
            TypeRule::ToPosition(set) => !to_bool && set.contains(dtype),
            TypeRule::Cast => !to_bool,
            _ => false,
        })
        .collect()
}

/// The generator's state while drawing one program.
struct Generator<'a> {
    r: Rng,
    spec: &'a ProgramSpec,
    dtype: DType,
    shape: Vec<usize>,
    data: Vec<Base>,
    bools: Vec<Base>,
    temps: Vec<View>,
    next_id: u64,
    created: Vec<Base>,
    batch: Vec<Instruction>,
}

impl Generator<'_> {
    fn fresh(&mut self, dtype: DType, n: usize) -> Base {
        self.next_id += 1;
        Base { id: BaseId(self.next_id), dtype, nelem: n.max(1) as u64 }
    }

    /// A view of the iteration shape into one of `bases`.
    fn view_in(&mut self, bases: &[Base], output: bool) -> View {
        let shape = self.shape.clone();
        match self.spec.bases {
            Bases::Roomy => {
                let b = self.r.pick(bases);
                random_view(&mut self.r, b, &shape, output)
            }
            Bases::Uneven => random_view_in(&mut self.r, bases, &shape, output),
        }
    }

    /// A view input (a temporary now and then).
    fn input_view(&mut self) -> View {
        if !self.temps.is_empty() && self.r.chance(40) {
            return self.temps[self.r.below(self.temps.len())].clone();
        }
        let data = self.data.clone();
        self.view_in(&data, false)
    }

    /// A view or, now and then, a constant.
    fn input(&mut self) -> Operand {
        if self.r.chance(10) {
            return Scalar::I64(self.r.below(5) as i64 + 1).cast(self.dtype).into();
        }
        Operand::View(self.input_view())
    }

    fn output(&mut self) -> Operand {
        if !self.temps.is_empty() && self.r.chance(15) {
            return Operand::View(self.temps[self.r.below(self.temps.len())].clone());
        }
        let data = self.data.clone();
        Operand::View(self.view_in(&data, true))
    }

    fn bool_view(&mut self, output: bool) -> View {
        let bools = self.bools.clone();
        self.view_in(&bools, output)
    }

    /// The output of a reduction to `dtype` of shape `oshape`: a fresh base, or with uneven
    /// bases now and then a view of the data (which the reduction may read too).
    fn reduction_output(&mut self, dtype: DType, oshape: &[usize]) -> View {
        if self.spec.bases == Bases::Uneven && dtype == self.dtype && self.r.chance(50) {
            return random_view_in(&mut self.r, &self.data.clone(), oshape, true);
        }
        let out = self.fresh(dtype, oshape.iter().product());
        self.created.push(out);
        random_view(&mut self.r, out, oshape, true)
    }

    /// Draws one instruction; returns `None` where the draw has nothing to offer.
    fn draw(&mut self) -> Option<Instruction> {
        let d = self.dtype;
        let ins = match self.r.below(100) {
            0..=29 => {
                let op = self.pick_op(Kind::Binary, false)?;
                Instruction::new(op, [self.output(), self.input(), self.input()])
            }
            30..=44 => {
                let op = self.pick_op(Kind::Unary, false)?;
                Instruction::new(op, [self.output(), self.input()])
            }
            45..=52 => {
                let op = if self.r.chance(70) {
                    self.pick_op(Kind::Binary, true)?
                } else {
                    self.pick_op(Kind::Unary, true)?
                };
                let arity = op.kind().arity().map_or(0, |a| a.0);
                let mut operands = vec![Operand::View(self.bool_view(true))];
                operands.extend((1..arity).map(|_| self.input()));
                Instruction::new(op, operands)
            }
            53..=57 => {
                let c = Operand::View(self.bool_view(false));
                Instruction::new(Opcode::Select, [self.output(), c, self.input(), self.input()])
            }
            // Reductions and scans need an axis.
            58..=73 if self.shape.is_empty() => return None,
            58..=69 => {
                let axis = self.r.below(self.shape.len());
                let to_bool = self.r.chance(25);
                let op = self.pick_op(Kind::Reduce, to_bool)?;
                let mut oshape = self.shape.clone();
                oshape.remove(axis);
                let out_dtype = match op.type_rule() {
                    TypeRule::ToBool(_) => DType::Bool,
                    TypeRule::ToPosition(_) => DType::I64,
                    _ => d,
                };
                let o = self.reduction_output(out_dtype, &oshape);
                let a = if op.is_arg_reduce() && self.r.chance(20) {
                    // A position of bools now and then: the first true (argmax) or false (argmin).
                    self.bool_view(false)
                } else {
                    self.input_view()
                };
                Instruction::new(op, [Operand::View(o), Operand::View(a), Scalar::I64(axis as i64).into()])
            }
            70..=73 if self.r.chance(25) && self.r.chance(30) => {
                // A search of a line of a base's first elements for keys of the shape.
                let op = self.pick_op(Kind::Search, false)?;
                let base = self.input_view().base;
                let line = View::contiguous(base, 0, &[(base.nelem as usize).min(64)]).ok()?;
                let keys = self.input_view();
                let o = self.reduction_output(DType::I64, &self.shape.clone());
                Instruction::new(op, [Operand::View(o), Operand::View(line), Operand::View(keys)])
            }
            70..=73 if self.r.chance(25) => {
                let axis = self.r.below(self.shape.len());
                let op = self.pick_op(Kind::Sort, false)?;
                let a = self.input_view();
                let o = if op == Opcode::Argsort {
                    Operand::View(self.reduction_output(DType::I64, &self.shape.clone()))
                } else {
                    self.output()
                };
                Instruction::new(op, [o, Operand::View(a), Scalar::I64(axis as i64).into()])
            }
            70..=73 => {
                let axis = self.r.below(self.shape.len());
                let op = self.pick_op(Kind::Accumulate, false)?;
                let a = self.input_view();
                Instruction::new(op, [self.output(), Operand::View(a), Scalar::I64(axis as i64).into()])
            }
            74..=76 if self.r.chance(50) && (self.spec.allow)(Opcode::Range, d) => {
                Instruction::new(Opcode::Range, [self.output()])
            }
            74..=76 if (self.spec.allow)(Opcode::Random, d) => {
                let key: Operand = Scalar::U64(self.r.next_u64()).into();
                Instruction::new(Opcode::Random, [self.output(), key, Scalar::U64(5).into()])
            }
            77..=85 => {
                // A new temporary, read by later instructions through the same view.
                let op = self.pick_op(Kind::Binary, false)?;
                let t = self.fresh(d, self.shape.iter().product());
                let v = View::contiguous(t, 0, &self.shape).ok()?;
                let (a, b) = (self.input(), self.input());
                self.temps.push(v.clone());
                self.created.push(t);
                Instruction::new(op, [Operand::View(v), a, b])
            }
            86..=97 if !self.temps.is_empty() => {
                let i = self.r.below(self.temps.len());
                Instruction::new(Opcode::Free, [Operand::View(self.temps.remove(i))])
            }
            86..=97 => Instruction::new(Opcode::None, []),
            _ => {
                let b = self.r.pick(&self.data);
                Instruction::new(Opcode::Sync, [Operand::View(View::of_base(b))])
            }
        };
        Some(ins)
    }

    fn pick_op(&mut self, kind: Kind, to_bool: bool) -> Option<Opcode> {
        let ops = table_ops(kind, self.dtype, to_bool, self.spec);
        (!ops.is_empty()).then(|| self.r.pick(&ops))
    }

    /// A small iteration shape for uneven bases: up to 3-d, 0 to 6 elements along an axis.
    fn small_shape(&mut self) -> Vec<usize> {
        let nd = self.r.below(self.spec.max_dims.clamp(1, 3) + 1);
        (0..nd).map(|_| self.r.below(6) + usize::from(!self.r.chance(12))).collect()
    }
}

/// The random program of `seed` under `spec`. Only instructions that validate are kept, so
/// every program is valid bytecode; the same seed and spec always give the same program.
pub fn random_program(seed: u64, spec: &ProgramSpec) -> Program {
    let mut r = Rng::new(seed);
    let dtype = r.pick(&spec.dtypes);
    let max_dims = spec.max_dims.max(1);
    let (shape, data, bools) = match spec.bases {
        Bases::Roomy => {
            let nd = 1 + r.below(max_dims);
            let shape: Vec<usize> = (0..nd).map(|_| 1 + r.below(if nd > 2 { 6 } else { 40 })).collect();
            let n: usize = shape.iter().product();
            let size = (2 * n.max(512) + 7) as u64;
            let data: Vec<Base> = (1..=3).map(|i| Base { id: BaseId(i), dtype, nelem: size }).collect();
            let bools: Vec<Base> = (4..=5).map(|i| Base { id: BaseId(i), dtype: DType::Bool, nelem: size }).collect();
            (shape, data, bools)
        }
        Bases::Uneven => {
            let sizes = [1u64, 2, 3, 5, 17, 36, 60, 100, 400, 1500];
            let data: Vec<Base> =
                sizes.iter().zip(1..).map(|(&nelem, i)| Base { id: BaseId(i), dtype, nelem }).collect();
            let bools: Vec<Base> = [1u64, 3, 17, 60, 400, 1500]
                .iter()
                .zip(11..)
                .map(|(&nelem, i)| Base { id: BaseId(i), dtype: DType::Bool, nelem })
                .collect();
            (Vec::new(), data, bools)
        }
    };
    let mut g = Generator {
        r,
        spec,
        dtype,
        shape,
        data,
        bools,
        temps: Vec::new(),
        next_id: if spec.bases == Bases::Roomy { 10 } else { 20 },
        created: Vec::new(),
        batch: Vec::new(),
    };
    if spec.bases == Bases::Uneven {
        g.shape = g.small_shape();
    }
    let mut steps = Vec::new();
    let len = 1 + g.r.below(spec.max_len.max(1));
    for _ in 0..len {
        if let Some(ins) = g.draw()
            && ins.validate().is_ok()
        {
            g.batch.push(ins);
        }
        if spec.steps && g.r.chance(10) {
            // The host writes an element of a data or bool base between two batches.
            let b = if g.r.chance(70) { g.r.pick(&g.data) } else { g.r.pick(&g.bools) };
            let at = g.r.below(b.nelem as usize);
            let v = Data::Full.value(&mut g.r, b.dtype);
            steps.push(Step::Batch(std::mem::take(&mut g.batch)));
            steps.push(Step::HostWrite(b, at, bytes(v)));
        } else if spec.steps && g.r.chance(20) {
            steps.push(Step::Batch(std::mem::take(&mut g.batch)));
        }
        match spec.bases {
            Bases::Roomy if g.r.chance(10) => {
                // Another iteration shape now and then (small, so that it fits the bases).
                let nd = 1 + g.r.below(max_dims.min(3));
                g.shape = (0..nd).map(|_| 1 + g.r.below(8)).collect();
                g.temps.clear();
            }
            Bases::Uneven if g.r.chance(50) => {
                g.shape = g.small_shape();
                g.temps.clear();
            }
            _ => {}
        }
    }
    let inputs: Vec<Base> = g.data.iter().chain(&g.bools).copied().collect();
    let mut bases = inputs.clone();
    bases.extend(g.created);
    // The frontend's last word: sync whatever is still alive, so that engines that keep data
    // elsewhere (a device, other ranks) bring it to host memory.
    let freed: Vec<BaseId> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Batch(b) => Some(b),
            Step::HostWrite(..) => None,
        })
        .chain([&g.batch])
        .flatten()
        .filter(|i| i.opcode == Opcode::Free)
        .filter_map(|i| i.operands[0].as_view())
        .map(|v| v.base.id)
        .collect();
    let live: Vec<Base> = bases.iter().filter(|b| !freed.contains(&b.id)).copied().collect();
    if spec.sync_apart {
        steps.push(Step::Batch(g.batch));
        steps.push(Step::Batch(sync_all(&live)));
    } else {
        g.batch.extend(sync_all(&live));
        steps.push(Step::Batch(g.batch));
    }
    Program { inputs, bases, steps }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn opcodes_missing_from(spec: &ProgramSpec, seeds: u64) -> Vec<&'static str> {
        let mut seen = HashSet::new();
        for seed in 0..seeds {
            let p = random_program(seed, spec);
            assert_eq!(p, random_program(seed, spec), "seed {seed} repeats itself");
            for batch in p.batches() {
                vm_ir::instr::validate_batch(batch).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", p.listing()));
            }
            seen.extend(p.instructions().map(|i| i.opcode));
        }
        Opcode::ALL
            .iter()
            .filter(|op| !matches!(op.kind(), Kind::Gather | Kind::Scatter | Kind::Extension))
            .filter(|op| !matches!(op, Opcode::Discard))
            .filter(|op| !seen.contains(op))
            .map(|op| op.name())
            .collect()
    }

    #[test]
    fn programs_are_valid_deterministic_and_cover_the_table() {
        let missing = opcodes_missing_from(&ProgramSpec::default(), 3000);
        assert!(missing.is_empty(), "opcodes no random program uses: {missing:?}");
    }

    #[test]
    fn uneven_programs_are_valid_cover_the_table_and_have_steps() {
        let spec = ProgramSpec::uneven();
        let missing = opcodes_missing_from(&spec, 3000);
        assert!(missing.is_empty(), "opcodes no uneven program uses: {missing:?}");
        let (mut writes, mut batches, mut empty, mut zero_d, mut in_place) = (0, 0, 0, 0, 0);
        for seed in 0..300 {
            let p = random_program(seed, &spec);
            writes += p.steps.iter().filter(|s| matches!(s, Step::HostWrite(..))).count();
            batches += p.batches().count();
            for i in p.instructions().filter(|i| i.opcode != Opcode::Sync) {
                let views: Vec<&View> = i.views().collect();
                empty += usize::from(views.iter().any(|v| v.nelem() == 0));
                zero_d += usize::from(views.iter().any(|v| v.ndim() == 0));
                let reads_its_output = views.len() > 1 && views[1..].iter().any(|v| v.base == views[0].base);
                in_place += usize::from(i.opcode.kind() == Kind::Reduce && reads_its_output);
            }
        }
        assert!(writes > 300 && batches > 1000, "{writes} host writes, {batches} batches");
        assert!(empty > 20 && zero_d > 100 && in_place > 5, "{empty} empty, {zero_d} 0-d, {in_place} in place");
    }

    #[test]
    fn the_allow_filter_is_respected() {
        let spec = ProgramSpec { allow: |op, _| !matches!(op, Opcode::Exp | Opcode::AddReduce), ..Default::default() };
        for seed in 0..500 {
            let p = random_program(seed, &spec);
            assert!(p.instructions().all(|i| !matches!(i.opcode, Opcode::Exp | Opcode::AddReduce)), "seed {seed}");
        }
    }
}
