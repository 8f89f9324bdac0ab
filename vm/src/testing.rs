//! # Differential testing against the reference engine
//!
//! Every engine is checked against `interp` on the same bytecode. This module is that bytecode's
//! one source and the one definition of "agrees": a small deterministic generator ([`Rng`]),
//! input data ([`fill`]), random programs drawn from the opcode table ([`random_program`]), and
//! the comparison of two engines' memories under a stated tolerance ([`compare`],
//! [`differential`]).
//!
//! Random programs cover, per seed: shapes up to [`ProgramSpec::max_dims`] dimensions, slices
//! with negative and zero (broadcast) strides, views that alias each other, every element-wise
//! opcode the table defines on the program's dtype, comparisons and predicates into bool bases,
//! `select`, reductions (to a value and to a position) and scans along each axis, `range` and
//! `random`, temporaries written, read and freed within the batch, and `sync` (of every live
//! base at the end). Gather and scatter are left to the per-opcode tests, whose index data must
//! be in bounds.

use crate::instr::visits_each_element_once;
use crate::opcode::{Kind, TypeRule};
use crate::{Base, BaseId, Component, DType, HostMemory, Instruction, Opcode, Operand, Scalar, View, with_dtype};

/// A xorshift64 generator: deterministic, seedable, good enough to draw test programs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One element of the non-empty `xs`.
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// A pseudo-random value of `d` from 64 random bits: floats in [-8, 8) with zeros, ones and (unless
/// `small`) NaN and infinity now and then; integers over their whole range, or in [-5, 5] when
/// `small`; bools.
pub fn value(d: DType, bits: u64, small: bool) -> Scalar {
    let s = if d.is_float() {
        let x = (bits >> 11) as f64 / (1u64 << 53) as f64 * 16.0 - 8.0;
        let x = match bits % 97 {
            0 => 0.0,
            1 => -0.0,
            2 if !small => f64::NAN,
            3 if !small => f64::INFINITY,
            4 => 1.0,
            _ => x,
        };
        Scalar::F64(x)
    } else if small || d == DType::Bool {
        Scalar::I64((bits % 11) as i64 - 5)
    } else {
        Scalar::U64(bits)
    };
    s.cast(d)
}

/// Allocates `base` in `mem` and fills it with [`value`]s drawn from `seed`.
pub fn fill(mem: &mut HostMemory, base: &Base, seed: u64, small: bool) -> crate::Result<()> {
    let buf = mem.ensure(base)?;
    let mut r = Rng::new(seed);
    with_dtype!(base.dtype, T => {
        for x in buf.as_mut_slice::<T>() {
            *x = value(base.dtype, r.next_u64(), small).get::<T>();
        }
    });
    Ok(())
}

/// How far two engines' float results may be apart: relative to `max(1, |a|, |b|)`, per dtype.
/// Integers and bools are always compared exactly; NaN equals NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// For f64 elements.
    pub f64: f64,
    /// For f32 elements.
    pub f32: f64,
}

impl Tolerance {
    /// Bit-for-bit equality (but NaN equals NaN and 0.0 equals -0.0).
    pub const EXACT: Tolerance = Tolerance { f64: 0.0, f32: 0.0 };
    /// For engines that add in another order (per-block partial sums, tree reductions) or use
    /// other correctly-rounded-within-a-few-ulp math routines: 1e-9 for f64, 1e-4 for f32.
    pub const REORDERED: Tolerance = Tolerance { f64: 1e-9, f32: 1e-4 };

    /// True when `a` and `b`, elements of `dtype`, agree.
    pub fn agrees(self, dtype: DType, a: Scalar, b: Scalar) -> bool {
        let tol = match dtype {
            DType::F64 => self.f64,
            DType::F32 => self.f32,
            _ => return a == b,
        };
        let (a, b) = (a.as_f64(), b.as_f64());
        a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol * 1f64.max(a.abs()).max(b.abs())
    }
}

/// Compares every base of `bases` in `got` with `reference`. A base the reference holds must be
/// in `got` too; one only `got` holds is fine (the reference freed it), as is one neither holds
/// (freed, or a temporary the engine never allocated). The error names the first element that
/// differs.
pub fn compare(got: &HostMemory, reference: &HostMemory, bases: &[Base], tol: Tolerance) -> Result<(), String> {
    for b in bases {
        let Some(want) = reference.get(b.id) else { continue };
        let Some(have) = got.get(b.id) else {
            return Err(format!("base {} is missing from the engine's memory", b.id));
        };
        with_dtype!(b.dtype, T => {
            let (xs, ys) = (have.as_slice::<T>(), want.as_slice::<T>());
            for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
                if !tol.agrees(b.dtype, Scalar::from(*x), Scalar::from(*y)) {
                    return Err(format!("base {} element {i}: engine {x:?}, reference {y:?}", b.id));
                }
            }
        });
    }
    Ok(())
}

/// Runs `program` on `subject` and on `reference`, each from the same [`fill`]ed inputs, and
/// compares the results under `tol`. Both failing with the same error code counts as agreeing.
pub fn differential(
    subject: &mut dyn Component,
    reference: &mut dyn Component,
    program: &RandomProgram,
    small: bool,
    tol: Tolerance,
) -> Result<(), String> {
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    for (i, b) in program.inputs.iter().enumerate() {
        fill(&mut m1, b, i as u64 + 1, small).map_err(|e| e.to_string())?;
        fill(&mut m2, b, i as u64 + 1, small).map_err(|e| e.to_string())?;
    }
    let r1 = subject.execute(&program.batch, &mut m1);
    let r2 = reference.execute(&program.batch, &mut m2);
    match (r1, r2) {
        (Ok(()), Ok(())) => compare(&m1, &m2, &program.bases, tol),
        (Err(a), Err(b)) if a.code() == b.code() => Ok(()),
        (a, b) => Err(format!("engine {a:?}, reference {b:?}")),
    }
}

/// Float values where math routines most often go wrong: signed zeros, infinities, NaN of both
/// signs, the smallest and largest subnormals, the smallest normal and the largest finite values
/// (each with both signs), and ordinary values that binary opcodes meet them with (some of them
/// overflow or underflow `exp` in one float dtype and not the other). Empty for other dtypes.
pub fn special_values(d: DType) -> Vec<Scalar> {
    let ordinary = [1.0, -1.0, 0.5, 0.1, 2.5, -2.5, 7.0, -7.0, -3.0, 100.0, -100.0, 1000.0, 1e30, -1e-30];
    macro_rules! values {
        ($t:ident, $s:ident) => {{
            let tiny = $t::from_bits(1);
            let subnormal_max = $t::from_bits(($t::MIN_POSITIVE.to_bits()) - 1);
            let mut v = vec![0.0, -0.0, $t::INFINITY, $t::NEG_INFINITY, $t::NAN, -$t::NAN];
            v.extend([tiny, -tiny, subnormal_max, -subnormal_max, $t::MIN_POSITIVE, -$t::MIN_POSITIVE]);
            v.extend([$t::MAX, $t::MIN]);
            v.extend(ordinary.map(|x| x as $t));
            v.into_iter().map(Scalar::$s).collect()
        }};
    }
    match d {
        DType::F32 => values!(f32, F32),
        DType::F64 => values!(f64, F64),
        _ => Vec::new(),
    }
}

/// Units in the last place between two floats of one dtype (0 for two NaNs, `u64::MAX` for a
/// NaN and a number; -0.0 and +0.0 are one apart, so a wrong sign of zero counts). Integers and
/// bools: 0 when equal, else `u64::MAX`.
pub fn ulps_apart(a: Scalar, b: Scalar) -> u64 {
    // Sign-magnitude bits mapped onto a line where neighbouring floats are neighbouring integers.
    let line = |bits: u64, sign: u64| -> i128 {
        let magnitude = (bits & (sign - 1)) as i128;
        if bits & sign != 0 { -magnitude - 1 } else { magnitude }
    };
    let nans = |x: bool, y: bool| if x && y { 0 } else { u64::MAX };
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) if x.is_nan() || y.is_nan() => nans(x.is_nan(), y.is_nan()),
        (Scalar::F64(x), Scalar::F64(y)) if x.is_nan() || y.is_nan() => nans(x.is_nan(), y.is_nan()),
        (Scalar::F32(x), Scalar::F32(y)) => {
            let s = 1 << 31;
            (line(u64::from(x.to_bits()), s) - line(u64::from(y.to_bits()), s)).unsigned_abs() as u64
        }
        (Scalar::F64(x), Scalar::F64(y)) => {
            let s = 1 << 63;
            (line(x.to_bits(), s) - line(y.to_bits(), s)).unsigned_abs().min(u128::from(u64::MAX)) as u64
        }
        (a, b) if a == b => 0,
        _ => u64::MAX,
    }
}

/// One batch applying every element-wise opcode of the table that takes float operands
/// (every [`Kind::Unary`] and [`Kind::Binary`] opcode whose type rule admits the dtype, and
/// `identity` to every dtype) to every [`special_values`] of one float dtype, unary opcodes to
/// each value and binary ones to each pair. New opcodes of those kinds join by themselves.
///
/// Inputs `x` and `y` hold the pairs (row-major over the value list); each instruction writes its
/// own slice of one output base per output dtype, so the whole batch is one kernel for the fusing
/// engines. The batch ends by syncing the outputs.
#[derive(Debug, Clone)]
pub struct SpecialValues {
    /// The float dtype of the inputs.
    pub dtype: DType,
    /// The instructions, then a `sync` of every output base.
    pub batch: Vec<Instruction>,
    /// The two inputs (to [`SpecialValues::fill`]) and the output bases.
    pub bases: Vec<Base>,
    values: Vec<Scalar>,
    /// Each instruction's opcode and output slice.
    cases: Vec<(Opcode, View)>,
}

impl SpecialValues {
    /// The batch for float dtype `d`.
    pub fn new(d: DType) -> SpecialValues {
        let values = special_values(d);
        let n = values.len() * values.len();
        let (x, y) =
            (Base { id: BaseId(1), dtype: d, nelem: n as u64 }, Base { id: BaseId(2), dtype: d, nelem: n as u64 });
        let whole = |b: Base| Operand::View(View::of_base(b));
        // (opcode, output dtype, binary)
        let mut wanted: Vec<(Opcode, DType, bool)> = Vec::new();
        for &op in Opcode::ALL {
            let binary = match op.kind() {
                Kind::Unary => false,
                Kind::Binary => true,
                _ => continue,
            };
            match op.type_rule() {
                TypeRule::Same(set) if set.contains(d) => wanted.push((op, d, binary)),
                TypeRule::ToBool(set) if set.contains(d) => wanted.push((op, DType::Bool, binary)),
                TypeRule::Cast => wanted.extend(DType::ALL.iter().map(|&to| (op, to, binary))),
                _ => {}
            }
        }
        let mut outputs: Vec<Base> = Vec::new();
        for to in DType::ALL {
            let count = wanted.iter().filter(|w| w.1 == to).count();
            if count > 0 {
                outputs.push(Base { id: BaseId(10 + u64::from(to.id())), dtype: to, nelem: (count * n) as u64 });
            }
        }
        let mut used = vec![0usize; outputs.len()];
        let mut batch = Vec::new();
        let mut cases = Vec::new();
        for (op, to, binary) in wanted {
            let k = outputs.iter().position(|b| b.dtype == to).expect("an output base of every output dtype");
            let out = View::contiguous(outputs[k], (used[k] * n) as i64, &[n]).expect("a slice inside the base");
            used[k] += 1;
            let mut operands = vec![Operand::View(out.clone()), whole(x)];
            if binary {
                operands.push(whole(y));
            }
            batch.push(Instruction::new(op, operands));
            cases.push((op, out));
        }
        batch.extend(outputs.iter().map(|&b| Instruction::new(Opcode::Sync, [whole(b)])));
        let mut bases = vec![x, y];
        bases.extend(outputs);
        SpecialValues { dtype: d, batch, bases, values, cases }
    }

    /// The opcodes the batch applies, in order (`identity` once per output dtype).
    pub fn opcodes(&self) -> impl Iterator<Item = Opcode> + '_ {
        self.cases.iter().map(|c| c.0)
    }

    /// Writes the inputs into `mem`.
    pub fn fill(&self, mem: &mut HostMemory) -> crate::Result<()> {
        let k = self.values.len();
        for (b, pick) in [(self.bases[0], 0), (self.bases[1], 1)] {
            let buf = mem.ensure(&b)?;
            with_dtype!(b.dtype, T => {
                for (i, e) in buf.as_mut_slice::<T>().iter_mut().enumerate() {
                    let v = if pick == 0 { self.values[i / k] } else { self.values[i % k] };
                    *e = v.get::<T>();
                }
            });
        }
        Ok(())
    }

    /// Compares an engine's results (`got`) with the reference engine's, element by element:
    /// the same bits (NaN equals NaN, but -0.0 is not +0.0), except that where `approximate`
    /// says an opcode's float results may be a few ulp off, they may be up to `ulps` apart,
    /// unless an input is infinite, NaN or zero, or the reference result is, or the reference
    /// result is an input (`log1p`, `sin`, `tanh` ... of a subnormal): those must be exact. The
    /// error lists the first differences, each with its opcode and inputs.
    pub fn check(
        &self,
        got: &HostMemory,
        reference: &HostMemory,
        approximate: &dyn Fn(Opcode) -> bool,
        ulps: u64,
    ) -> Result<(), String> {
        let k = self.values.len();
        let special = |s: Scalar| s.dtype().is_float() && (!s.as_f64().is_finite() || s.as_f64() == 0.0);
        let mut wrong = Vec::new();
        let mut count = 0;
        for (op, out) in &self.cases {
            let (Some(have), Some(want)) = (got.get(out.base.id), reference.get(out.base.id)) else {
                return Err(format!("base {} of {op} is missing", out.base.id));
            };
            let binary = op.kind() == Kind::Binary;
            for i in 0..k * k {
                if !binary && i % k != 0 {
                    // A unary opcode sees each value k times; one is enough to look at.
                    continue;
                }
                let at = out.start as usize + i;
                let (e, r) = with_dtype!(out.base.dtype, T => (
                    Scalar::from(have.as_slice::<T>()[at]),
                    Scalar::from(want.as_slice::<T>()[at]),
                ));
                let inputs: Vec<Scalar> =
                    if binary { vec![self.values[i / k], self.values[i % k]] } else { vec![self.values[i / k]] };
                let bits = |s: Scalar| s.to_payload();
                let exact = !approximate(*op)
                    || !out.base.dtype.is_float()
                    || inputs.iter().any(|&v| special(v))
                    || special(r)
                    || inputs.iter().any(|&v| bits(v) == bits(r));
                let apart = ulps_apart(e, r);
                if apart == 0 || (!exact && apart <= ulps) {
                    continue;
                }
                count += 1;
                if wrong.len() < 24 {
                    let args: Vec<String> = inputs.iter().map(|v| v.to_string()).collect();
                    wrong.push(format!("{op}({}) -> {}: engine {e}, reference {r}", args.join(", "), out.base.dtype));
                }
            }
        }
        if count == 0 {
            return Ok(());
        }
        Err(format!("{count} results differ on {}, among them:\n  {}", self.dtype, wrong.join("\n  ")))
    }
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
}

impl Default for ProgramSpec {
    /// Every opcode, dtypes f64, f32, i32, i64, u8, i16 and u64, up to 4-d, up to 14 instructions.
    fn default() -> ProgramSpec {
        ProgramSpec {
            dtypes: vec![DType::F64, DType::F32, DType::I32, DType::I64, DType::U8, DType::I16, DType::U64],
            max_dims: 4,
            max_len: 14,
            allow: |_, _| true,
        }
    }
}

/// A random program with the bases it uses.
#[derive(Debug, Clone)]
pub struct RandomProgram {
    /// The instructions.
    pub batch: Vec<Instruction>,
    /// The bases that hold data before the program runs (to be [`fill`]ed).
    pub inputs: Vec<Base>,
    /// Every base the program may write: the inputs and the ones it creates. The program ends by
    /// syncing those it has not freed.
    pub bases: Vec<Base>,
}

impl RandomProgram {
    /// The program in the text form, for failure messages.
    pub fn listing(&self) -> String {
        crate::asm::print_batch(&self.batch)
    }
}

/// A random view of `shape` into `b`; an output view visits each element once.
pub fn random_view(r: &mut Rng, b: Base, shape: &[usize], output: bool) -> View {
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
            return v;
        }
    }
    View::contiguous(b, 0, shape).expect("a contiguous view of a large enough base")
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
        Base { id: BaseId(self.next_id), dtype, nelem: n as u64 }
    }

    fn view_of(&mut self, b: Base, output: bool) -> View {
        let shape = self.shape.clone();
        random_view(&mut self.r, b, &shape, output)
    }

    /// A view input (a temporary now and then).
    fn input_view(&mut self) -> View {
        if !self.temps.is_empty() && self.r.chance(40) {
            return self.temps[self.r.below(self.temps.len())].clone();
        }
        let b = self.r.pick(&self.data);
        self.view_of(b, false)
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
        let b = self.r.pick(&self.data);
        Operand::View(self.view_of(b, true))
    }

    fn bool_output(&mut self) -> Operand {
        let b = self.r.pick(&self.bools);
        Operand::View(self.view_of(b, true))
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
                let mut operands = vec![self.bool_output()];
                operands.extend((1..arity).map(|_| self.input()));
                Instruction::new(op, operands)
            }
            53..=57 => {
                let b = self.r.pick(&self.bools);
                let c = Operand::View(self.view_of(b, false));
                Instruction::new(Opcode::Select, [self.output(), c, self.input(), self.input()])
            }
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
                let out = self.fresh(out_dtype, oshape.iter().product::<usize>().max(1));
                self.created.push(out);
                let o = random_view(&mut self.r, out, &oshape, true);
                let a = if op.is_arg_reduce() && self.r.chance(20) {
                    // A position of bools now and then: the first true (argmax) or false (argmin).
                    let b = self.r.pick(&self.bools);
                    self.view_of(b, false)
                } else {
                    self.input_view()
                };
                Instruction::new(op, [Operand::View(o), Operand::View(a), Scalar::I64(axis as i64).into()])
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
                let n = self.shape.iter().product();
                let t = self.fresh(d, n);
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
}

/// The random program of `seed` under `spec`. Only instructions that validate are kept, so
/// every program is valid bytecode; the same seed and spec always give the same program.
pub fn random_program(seed: u64, spec: &ProgramSpec) -> RandomProgram {
    let mut r = Rng::new(seed);
    let dtype = r.pick(&spec.dtypes);
    let max_dims = spec.max_dims.max(1);
    let nd = 1 + r.below(max_dims);
    let shape: Vec<usize> = (0..nd).map(|_| 1 + r.below(if nd > 2 { 6 } else { 40 })).collect();
    let n: usize = shape.iter().product();
    let size = (2 * n.max(512) + 7) as u64;
    let data: Vec<Base> = (1..=3).map(|i| Base { id: BaseId(i), dtype, nelem: size }).collect();
    let bools: Vec<Base> = (4..=5).map(|i| Base { id: BaseId(i), dtype: DType::Bool, nelem: size }).collect();
    let mut g = Generator {
        r,
        spec,
        dtype,
        shape,
        data,
        bools,
        temps: Vec::new(),
        next_id: 10,
        created: Vec::new(),
        batch: Vec::new(),
    };
    let len = 1 + g.r.below(spec.max_len.max(1));
    for _ in 0..len {
        if let Some(ins) = g.draw()
            && ins.validate().is_ok()
        {
            g.batch.push(ins);
        }
        if g.r.chance(10) {
            // Another iteration shape now and then (small, so that it fits the bases).
            let nd = 1 + g.r.below(max_dims.min(3));
            g.shape = (0..nd).map(|_| 1 + g.r.below(8)).collect();
            g.temps.clear();
        }
    }
    let inputs: Vec<Base> = g.data.iter().chain(&g.bools).copied().collect();
    let mut bases = inputs.clone();
    bases.extend(g.created);
    // The frontend's last word: sync whatever is still alive, so that engines that keep data
    // elsewhere (a device, other ranks) bring it to host memory.
    let freed: Vec<BaseId> = g
        .batch
        .iter()
        .filter(|i| i.opcode == Opcode::Free)
        .filter_map(|i| i.operands[0].as_view())
        .map(|v| v.base.id)
        .collect();
    for b in bases.iter().filter(|b| !freed.contains(&b.id)) {
        g.batch.push(Instruction::new(Opcode::Sync, [Operand::View(View::of_base(*b))]));
    }
    RandomProgram { batch: g.batch, inputs, bases }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn programs_are_valid_deterministic_and_cover_the_table() {
        let spec = ProgramSpec::default();
        let mut seen = HashSet::new();
        for seed in 0..3000 {
            let p = random_program(seed, &spec);
            assert_eq!(p.batch, random_program(seed, &spec).batch, "seed {seed} repeats itself");
            crate::instr::validate_batch(&p.batch).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", p.listing()));
            seen.extend(p.batch.iter().map(|i| i.opcode));
        }
        let missing: Vec<&str> = Opcode::ALL
            .iter()
            .filter(|op| !matches!(op.kind(), Kind::Gather | Kind::Scatter | Kind::Extension))
            .filter(|op| !matches!(op, Opcode::Discard))
            .filter(|op| !seen.contains(op))
            .map(|op| op.name())
            .collect();
        assert!(missing.is_empty(), "opcodes no random program uses: {missing:?}");
    }

    #[test]
    fn the_allow_filter_is_respected() {
        let spec = ProgramSpec { allow: |op, _| !matches!(op, Opcode::Exp | Opcode::AddReduce), ..Default::default() };
        for seed in 0..500 {
            let p = random_program(seed, &spec);
            assert!(p.batch.iter().all(|i| !matches!(i.opcode, Opcode::Exp | Opcode::AddReduce)), "seed {seed}");
        }
    }

    #[test]
    fn tolerance_is_relative_exact_for_integers_and_nan_equals_nan() {
        let t = Tolerance::REORDERED;
        assert!(t.agrees(DType::F64, Scalar::F64(1e6), Scalar::F64(1e6 + 1e-4)));
        assert!(!t.agrees(DType::F64, Scalar::F64(1.0), Scalar::F64(1.0 + 1e-8)));
        assert!(t.agrees(DType::F32, Scalar::F32(f32::NAN), Scalar::F32(f32::NAN)));
        assert!(!t.agrees(DType::I64, Scalar::I64(5), Scalar::I64(6)));
        assert!(!Tolerance::EXACT.agrees(DType::F64, Scalar::F64(1.0), Scalar::F64(1.0 + f64::EPSILON)));
    }

    #[test]
    fn special_values_cover_every_float_elementwise_opcode_in_one_kernel() {
        for d in [DType::F32, DType::F64] {
            let p = SpecialValues::new(d);
            crate::instr::validate_batch(&p.batch).unwrap();
            let ops: HashSet<Opcode> = p.opcodes().collect();
            for &op in Opcode::ALL {
                let takes_floats = match op.type_rule() {
                    TypeRule::Same(s) | TypeRule::ToBool(s) => s.contains(d),
                    TypeRule::Cast => true,
                    _ => false,
                };
                let elementwise = matches!(op.kind(), Kind::Unary | Kind::Binary);
                assert_eq!(ops.contains(&op), elementwise && takes_floats, "{op} on {d}");
            }
            assert_eq!(p.opcodes().filter(|&o| o == Opcode::Identity).count(), DType::ALL.len());
            let steps = crate::kernel::partition(&p.batch, &crate::kernel::Options::default());
            let kernels = steps.iter().filter(|s| matches!(s, crate::kernel::Step::Kernel(_))).count();
            assert_eq!(kernels, 1, "{steps:?}");
            let v = special_values(d);
            assert!(v.iter().any(|s| s.as_f64() == 0.0 && s.as_f64().is_sign_negative()));
            assert!(v.iter().any(|s| s.as_f64().is_nan()) && v.iter().any(|s| s.as_f64() == f64::NEG_INFINITY));
            let subnormal = |s: &Scalar| match *s {
                Scalar::F32(x) => x.is_subnormal(),
                Scalar::F64(x) => x.is_subnormal(),
                _ => false,
            };
            assert_eq!(v.iter().filter(|s| subnormal(s)).count(), 4, "{v:?}");
        }
        assert!(special_values(DType::I32).is_empty());
    }

    #[test]
    fn ulps_apart_counts_signed_zeros_and_nans() {
        let f = Scalar::F32;
        assert_eq!(ulps_apart(f(1.0), f(1.0)), 0);
        assert_eq!(ulps_apart(f(1.0), f(f32::from_bits(1.0f32.to_bits() - 1))), 1);
        assert_eq!(ulps_apart(f(0.0), f(-0.0)), 1);
        assert_eq!(ulps_apart(f(f32::from_bits(1)), f(-f32::from_bits(1))), 3);
        assert_eq!(ulps_apart(f(f32::NAN), f(-f32::NAN)), 0);
        assert_eq!(ulps_apart(f(f32::NAN), f(1.0)), u64::MAX);
        assert_eq!(ulps_apart(Scalar::F64(-1.0), Scalar::F64(f64::from_bits((-1.0f64).to_bits() + 2))), 2);
        assert_eq!(ulps_apart(Scalar::I32(3), Scalar::I32(4)), u64::MAX);
    }

    /// The slot of `op` (its first with `to` output) at inputs `x` (and `y`) in `p`'s outputs.
    fn slot(p: &SpecialValues, op: Opcode, x: Scalar, y: Option<Scalar>) -> (BaseId, usize) {
        let v = &p.values;
        let k = v.len();
        let find = |s: Scalar| v.iter().position(|&w| w.to_payload() == s.to_payload()).unwrap();
        let (_, out) = p.cases.iter().find(|c| c.0 == op).unwrap();
        (out.base.id, out.start as usize + find(x) * k + y.map_or(0, find))
    }

    #[test]
    fn special_value_checks_are_exact_where_the_answer_is_special() {
        let p = SpecialValues::new(DType::F32);
        let mut reference = HostMemory::new();
        p.fill(&mut reference).unwrap();
        for b in &p.bases[2..] {
            fill(&mut reference, b, 3, false).unwrap();
        }
        let set = |mem: &mut HostMemory, (id, at): (BaseId, usize), x: f32| {
            mem.get_mut(id).unwrap().as_mut_slice::<f32>()[at] = x;
        };
        let below_one = f32::from_bits(1.0f32.to_bits() - 1);
        let approximate = |op: Opcode| matches!(op, Opcode::Tanh | Opcode::Log1p | Opcode::Power);
        let tanh_inf = slot(&p, Opcode::Tanh, Scalar::F32(f32::INFINITY), None);
        let tanh_seven = slot(&p, Opcode::Tanh, Scalar::F32(7.0), None);
        let tiny = Scalar::F32(f32::from_bits(1));
        let log1p_tiny = slot(&p, Opcode::Log1p, tiny, None);
        let pow = slot(&p, Opcode::Power, Scalar::F32(2.5), Some(Scalar::F32(-3.0)));
        set(&mut reference, tanh_inf, 1.0);
        set(&mut reference, tanh_seven, 7f32.tanh());
        set(&mut reference, log1p_tiny, f32::from_bits(1));
        set(&mut reference, pow, 2.5f32.powf(-3.0));
        let same = |mem: &HostMemory| p.check(mem, &reference, &approximate, 4);
        assert_eq!(same(&reference), Ok(()));
        let off = |slot, x: f32| {
            let mut got = HostMemory::new();
            for b in &p.bases {
                got.ensure(b).unwrap().write_bytes(0, reference.get(b.id).unwrap().bytes()).unwrap();
            }
            set(&mut got, slot, x);
            same(&got)
        };
        // A few ulp off is fine for approximate functions at ordinary values.
        assert_eq!(off(tanh_seven, f32::from_bits(7f32.tanh().to_bits() - 2)), Ok(()));
        assert_eq!(off(pow, f32::from_bits(2.5f32.powf(-3.0).to_bits() + 3)), Ok(()));
        assert!(off(pow, f32::from_bits(2.5f32.powf(-3.0).to_bits() + 5)).is_err());
        // One ulp off is wrong at an infinite input, and for a result that is the input.
        let e = off(tanh_inf, below_one).unwrap_err();
        assert!(e.contains("tanh(inff32)") && e.starts_with("1 results differ"), "{e}");
        assert!(off(log1p_tiny, 0.0).unwrap_err().contains("log1p(1e-45f32)"));
        assert!(off(slot(&p, Opcode::Sqrt, Scalar::F32(7.0), None), 2.0).is_err());
    }

    #[test]
    fn compare_names_the_first_difference() {
        let b = Base { id: BaseId(1), dtype: DType::I32, nelem: 4 };
        let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
        fill(&mut m1, &b, 7, true).unwrap();
        fill(&mut m2, &b, 7, true).unwrap();
        assert_eq!(compare(&m1, &m2, &[b], Tolerance::EXACT), Ok(()));
        m1.ensure(&b).unwrap().as_mut_slice::<i32>()[2] += 1;
        let e = compare(&m1, &m2, &[b], Tolerance::EXACT).unwrap_err();
        assert!(e.contains("element 2"), "{e}");
        assert!(compare(&HostMemory::new(), &m2, &[b], Tolerance::EXACT).unwrap_err().contains("missing"));
    }
}
