//! Thousands of random programs (random shapes up to 4-d, slices, negative strides, broadcasts,
//! aliasing views, reductions along each axis, scans, temporaries freed mid-batch) run on `cpu`
//! with 1 and 3 threads and compared with the reference `interp`. A failure names the seed.

mod common;

use common::*;
use vm_core::instr::visits_each_element_once;
use vm_core::{Base, DType, Instruction, Opcode, Operand, Scalar, View};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// A random view of `shape` into `b` (output views visit each element once).
fn random_view(r: &mut Rng, b: Base, shape: &[usize], output: bool) -> View {
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
        let v = View::new(b, start, shape, &stride).unwrap();
        if !output || visits_each_element_once(&v) {
            return v;
        }
    }
    View::contiguous(b, 0, shape).unwrap()
}

struct Gen {
    r: Rng,
    dtype: DType,
    shape: Vec<usize>,
    data: Vec<Base>,
    bools: Vec<Base>,
    temps: Vec<View>,
    next_id: u64,
    outputs: Vec<Base>,
    batch: Vec<Instruction>,
}

impl Gen {
    fn fresh(&mut self, dtype: DType, n: usize) -> Base {
        self.next_id += 1;
        base(self.next_id, dtype, n)
    }

    fn n(&self) -> usize {
        self.shape.iter().product()
    }

    fn input(&mut self) -> Operand {
        if !self.temps.is_empty() && self.r.chance(40) {
            let t = self.temps[self.r.below(self.temps.len())].clone();
            return Operand::View(t);
        }
        if self.r.chance(10) {
            return Scalar::I64(self.r.below(5) as i64 + 1).cast(self.dtype).into();
        }
        let b = self.r.pick(&self.data);
        Operand::View(random_view(&mut self.r, b, &self.shape.clone(), false))
    }

    fn output(&mut self) -> Operand {
        if !self.temps.is_empty() && self.r.chance(15) {
            return Operand::View(self.temps[self.r.below(self.temps.len())].clone());
        }
        let b = self.r.pick(&self.data);
        Operand::View(random_view(&mut self.r, b, &self.shape.clone(), true))
    }

    fn binary_ops(&self) -> &'static [Opcode] {
        if self.dtype.is_float() {
            &[
                Opcode::Add,
                Opcode::Subtract,
                Opcode::Multiply,
                Opcode::Divide,
                Opcode::Maximum,
                Opcode::Minimum,
                Opcode::Hypot,
                Opcode::Arctan2,
                Opcode::FloorDivide,
            ]
        } else {
            &[
                Opcode::Add,
                Opcode::Subtract,
                Opcode::Multiply,
                Opcode::FloorDivide,
                Opcode::Remainder,
                Opcode::Maximum,
                Opcode::Minimum,
                Opcode::BitwiseXor,
                Opcode::BitwiseAnd,
                Opcode::LeftShift,
            ]
        }
    }

    fn unary_ops(&self) -> &'static [Opcode] {
        if self.dtype.is_float() {
            &[
                Opcode::Negative,
                Opcode::Absolute,
                Opcode::Sqrt,
                Opcode::Exp,
                Opcode::Sin,
                Opcode::Tanh,
                Opcode::Floor,
                Opcode::Square,
            ]
        } else {
            &[Opcode::Negative, Opcode::Absolute, Opcode::Square, Opcode::Invert, Opcode::Sign]
        }
    }

    fn step(&mut self) {
        let roll = self.r.below(100);
        let ins = match roll {
            0..=29 => {
                let op = self.r.pick(self.binary_ops());
                let (o, a, b) = (self.output(), self.input(), self.input());
                Instruction::new(op, [o, a, b])
            }
            30..=44 => {
                let op = self.r.pick(self.unary_ops());
                let (o, a) = (self.output(), self.input());
                Instruction::new(op, [o, a])
            }
            45..=52 => {
                let op = self.r.pick(&[Opcode::Less, Opcode::Equal, Opcode::GreaterEqual, Opcode::LogicalOr]);
                let b = self.r.pick(&self.bools);
                let o = Operand::View(random_view(&mut self.r, b, &self.shape.clone(), true));
                let (x, y) = (self.input(), self.input());
                Instruction::new(op, [o, x, y])
            }
            53..=57 => {
                let b = self.r.pick(&self.bools);
                let c = Operand::View(random_view(&mut self.r, b, &self.shape.clone(), false));
                let (o, x, y) = (self.output(), self.input(), self.input());
                Instruction::new(Opcode::Select, [o, c, x, y])
            }
            58..=69 => {
                let axis = self.r.below(self.shape.len());
                let op = if self.dtype.is_float() {
                    self.r.pick(&[
                        Opcode::AddReduce,
                        Opcode::MaximumReduce,
                        Opcode::MinimumReduce,
                        Opcode::LogicalOrReduce,
                        Opcode::ArgmaxReduce,
                        Opcode::ArgminReduce,
                    ])
                } else {
                    self.r.pick(&[
                        Opcode::AddReduce,
                        Opcode::MultiplyReduce,
                        Opcode::BitwiseXorReduce,
                        Opcode::MaximumReduce,
                        Opcode::LogicalAndReduce,
                        Opcode::ArgminReduce,
                    ])
                };
                let mut oshape = self.shape.clone();
                oshape.remove(axis);
                let odt = if op == Opcode::LogicalOrReduce || op == Opcode::LogicalAndReduce {
                    DType::Bool
                } else if op.is_arg_reduce() {
                    DType::I64
                } else {
                    self.dtype
                };
                let ob = self.fresh(odt, oshape.iter().product::<usize>().max(1));
                self.outputs.push(ob);
                let o = Operand::View(random_view(&mut self.r, ob, &oshape, true));
                let a = loop {
                    if let Operand::View(v) = self.input() {
                        break v;
                    }
                };
                Instruction::new(op, [o, Operand::View(a), Scalar::I64(axis as i64).into()])
            }
            70..=73 => {
                let axis = self.r.below(self.shape.len());
                let a = loop {
                    if let Operand::View(v) = self.input() {
                        break v;
                    }
                };
                let o = self.output();
                Instruction::new(Opcode::AddAccumulate, [o, Operand::View(a), Scalar::I64(axis as i64).into()])
            }
            74..=76 => {
                let o = self.output();
                if self.r.chance(50) {
                    Instruction::new(Opcode::Range, [o])
                } else {
                    Instruction::new(Opcode::Random, [o, Scalar::U64(self.r.next()).into(), Scalar::U64(5).into()])
                }
            }
            77..=85 => {
                // A new temporary, read by later instructions through the same view.
                let t = self.fresh(self.dtype, self.n());
                let v = View::contiguous(t, 0, &self.shape).unwrap();
                let op = self.r.pick(self.binary_ops());
                let (a, b) = (self.input(), self.input());
                self.temps.push(v.clone());
                self.outputs.push(t);
                Instruction::new(op, [Operand::View(v), a, b])
            }
            86..=97 if !self.temps.is_empty() => {
                let i = self.r.below(self.temps.len());
                let t = self.temps.remove(i);
                Instruction::new(Opcode::Free, [Operand::View(t)])
            }
            86..=97 => Instruction::new(Opcode::None, []),
            _ => {
                let b = self.r.pick(&self.data);
                Instruction::new(Opcode::Sync, [whole(b)])
            }
        };
        if ins.validate().is_ok() {
            self.batch.push(ins);
        }
    }
}

fn program(seed: u64) -> (Vec<Instruction>, Vec<Base>, Vec<Base>) {
    let mut r = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let dtype = r.pick(&[DType::F64, DType::F32, DType::I32, DType::I64, DType::U8, DType::I16, DType::U64]);
    let nd = 1 + r.below(4);
    let shape: Vec<usize> = (0..nd).map(|_| 1 + r.below(if nd > 2 { 6 } else { 40 })).collect();
    let n: usize = shape.iter().product();
    let size = 2 * n.max(512) + 7;
    let data: Vec<Base> = (1..=3).map(|i| base(i, dtype, size)).collect();
    let bools: Vec<Base> = (4..=5).map(|i| base(i, DType::Bool, size)).collect();
    let mut g =
        Gen { r, dtype, shape, data, bools, temps: Vec::new(), next_id: 10, outputs: Vec::new(), batch: Vec::new() };
    let len = 1 + g.r.below(14);
    for _ in 0..len {
        g.step();
        if g.r.chance(10) {
            // Another iteration shape now and then.
            let nd = 1 + g.r.below(3);
            g.shape = (0..nd).map(|_| 1 + g.r.below(8)).collect();
            g.temps.clear();
        }
    }
    let init: Vec<Base> = g.data.iter().chain(&g.bools).copied().collect();
    let mut all = init.clone();
    all.extend(g.outputs);
    (g.batch, init, all)
}

#[test]
fn random_programs_match_interp() {
    let count = std::env::var("VM_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(1500u64);
    let (mut kernels, mut fused, mut contracted, mut hits) = (0, 0, 0, 0);
    let (mut deferred, mut replayed) = (0, 0);
    for seed in 0..count {
        let (batch, init, all) = program(seed);
        for threads in [1, 3] {
            // Both optimisation levels of Cranelift, on alternate seeds.
            let opt_level = if seed % 2 == 0 { "none" } else { "speed" };
            let text: Vec<String> = batch.iter().map(|i| format!("  {i:?}")).collect();
            let what = format!("seed {seed}, {threads} threads, opt_level {opt_level}:\n{}", text.join("\n"));
            let p = differential_on(engine_at(threads, opt_level), &batch, &init, &all, true, &what);
            kernels += p.kernels;
            fused += p.fused_instructions;
            contracted += p.contracted;
            hits += p.cache.hits;
            deferred += p.deferred;
            replayed += p.replayed;
        }
    }
    eprintln!(
        "{kernels} kernels, {fused} instructions in kernels, {contracted} contracted, {hits} cache hits, \
         {deferred} deferred, {replayed} replayed"
    );
    assert!(fused > kernels * 5 / 4, "fusion happens");
    assert!(contracted > count / 10, "contraction happens");
    assert!(deferred > 0 && replayed > 0, "pure bases are deferred, and replayed when read");
}
