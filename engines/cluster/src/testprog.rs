//! Test programs for differential testing against the reference engine: one per built-in
//! opcode, and random programs over bases of uneven sizes (some smaller than the number of
//! ranks, so some ranks own nothing) with random strided, reversed, shifted, transposed and
//! broadcast views. Used by the crate's tests (ranks as threads) and by the `differential`
//! example under `mpirun`.

use vm_core::opcode::{DTypeSet, TypeRule};
use vm_core::{
    Base, BaseId, Component, DType, HostMemory, Instruction, Kind, Opcode, Operand, Result, Scalar, View, with_dtype,
};

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// One step of a program.
#[derive(Debug, Clone)]
pub enum Step {
    /// Execute a batch.
    Batch(Vec<Instruction>),
    /// The host overwrites element `index` of a (synced) base with `value` bytes, then announces
    /// it with a DISCARD.
    HostWrite(Base, usize, Vec<u8>),
}

/// A program: the bases it uses and its steps; it ends by syncing every live base.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// The bases, live at the end unless freed.
    pub bases: Vec<Base>,
    /// The steps.
    pub steps: Vec<Step>,
}

/// Runs `prog` on `stack` and returns the host memory it leaves.
pub fn run(stack: &mut dyn Component, prog: &Program) -> Result<HostMemory> {
    let mut mem = HostMemory::new();
    for step in &prog.steps {
        match step {
            Step::Batch(b) => stack.execute(b, &mut mem)?,
            Step::HostWrite(base, index, bytes) => {
                stack.execute(&[Instruction::new(Opcode::Sync, [View::of_base(*base).into()])], &mut mem)?;
                mem.ensure(base)?.write_bytes(index * base.dtype.size(), bytes)?;
                stack.execute(&[Instruction::new(Opcode::Discard, [View::of_base(*base).into()])], &mut mem)?;
            }
        }
    }
    Ok(mem)
}

/// Compares the synced bases of two runs byte for byte (a missing buffer reads as zeros).
pub fn compare(prog: &Program, want: &HostMemory, got: &HostMemory) -> std::result::Result<(), String> {
    let zeros = |b: &Base| vec![0u8; b.nbytes()];
    for b in &prog.bases {
        let w = want.get(b.id).map_or_else(|| zeros(b), |x| x.bytes().to_vec());
        let g = got.get(b.id).map_or_else(|| zeros(b), |x| x.bytes().to_vec());
        if w != g {
            let size = b.dtype.size();
            let differ: Vec<usize> =
                (0..b.nelem as usize).filter(|&i| w[i * size..(i + 1) * size] != g[i * size..(i + 1) * size]).collect();
            let at = |m: &HostMemory, i: usize| {
                m.get(b.id).map_or(
                    "unallocated".to_string(),
                    |x| with_dtype!(b.dtype, T => format!("{:?}", x.as_slice::<T>()[i])),
                )
            };
            let i = differ[0];
            return Err(format!(
                "base {} differs at {} of its {} elements, first at {i}: want {}, got {}",
                b.id,
                differ.len(),
                b.nelem,
                at(want, i),
                at(got, i)
            ));
        }
    }
    Ok(())
}

fn sync_all(bases: &[Base]) -> Step {
    Step::Batch(bases.iter().map(|b| Instruction::new(Opcode::Sync, [View::of_base(*b).into()])).collect())
}

fn fill(b: Base, seed: u64) -> Instruction {
    Instruction::new(Opcode::Random, [View::of_base(b).into(), Scalar::U64(seed).into(), Scalar::U64(0).into()])
}

fn pick(set: DTypeSet) -> DType {
    [DType::F64, DType::I32, DType::U8, DType::Bool].into_iter().find(|&d| set.contains(d)).expect("nonempty set")
}

/// One program per built-in opcode (system opcodes included), on 5 x 7 views that force
/// communication: a transposed and a shifted input, reductions and scans along both axes.
pub fn opcode_programs() -> Vec<(Opcode, Program)> {
    let mut out = Vec::new();
    for &op in Opcode::ALL {
        let mut next = 1u64;
        let mut base = |dtype: DType, n: u64| {
            next += 1;
            Base { id: BaseId(next), dtype, nelem: n }
        };
        let (in_t, out_t) = match op.type_rule() {
            TypeRule::Same(s) => (pick(s), pick(s)),
            TypeRule::ToBool(s) => (pick(s), DType::Bool),
            TypeRule::ToPosition(s) => (pick(s), DType::I64),
            TypeRule::Cast => (DType::F64, DType::I16),
            TypeRule::Generate(_) => (DType::F32, DType::F32),
            _ => (DType::F64, DType::F64),
        };
        let (a, b, c) = (base(in_t, 35), base(in_t, 40), base(DType::Bool, 35));
        let o = base(out_t, 37);
        let transposed = View::new(a, 0, &[5, 7], &[1, 5]).unwrap();
        let shifted = View::new(b, 3, &[5, 7], &[7, 1]).unwrap();
        let out_view = View::new(o, 2, &[5, 7], &[7, 1]).unwrap();
        let mut batch = vec![fill(a, 1), fill(b, 2), fill(c, 3), fill(o, 4)];
        let v = |x: &View| Operand::View(x.clone());
        match op.kind() {
            Kind::Unary => batch.push(Instruction::new(op, [v(&out_view), v(&transposed)])),
            Kind::Binary => batch.push(Instruction::new(op, [v(&out_view), v(&transposed), v(&shifted)])),
            Kind::Select => {
                let cond = View::contiguous(c, 0, &[5, 7]).unwrap();
                batch.push(Instruction::new(op, [v(&out_view), v(&cond), v(&transposed), v(&shifted)]));
            }
            Kind::Reduce => {
                let r0 = View::new(o, 0, &[7], &[1]).unwrap();
                let r1 = View::new(o, 30, &[5], &[-2]).unwrap();
                batch.push(Instruction::new(op, [v(&r0), v(&transposed), Scalar::I64(0).into()]));
                batch.push(Instruction::new(op, [v(&r1), v(&shifted), Scalar::I64(1).into()]));
            }
            Kind::Accumulate => {
                batch.push(Instruction::new(op, [v(&out_view), v(&transposed), Scalar::I64(1).into()]));
                let o2 = base(out_t, 35);
                let ov = View::contiguous(o2, 0, &[5, 7]).unwrap();
                batch.push(Instruction::new(op, [v(&ov), v(&shifted), Scalar::I64(0).into()]));
            }
            Kind::Range => batch.push(Instruction::new(op, [v(&out_view)])),
            Kind::Random => {
                batch.push(Instruction::new(op, [v(&out_view), Scalar::U64(9).into(), Scalar::U64(5).into()]))
            }
            Kind::Gather | Kind::Scatter => {
                let idx = base(DType::U64, 12);
                let iv = View::contiguous(idx, 0, &[4, 3]).unwrap();
                batch.push(fill(idx, 5));
                batch.push(Instruction::new(Opcode::Remainder, [v(&iv), v(&iv), Scalar::U64(35).into()]));
                if op == Opcode::Gather {
                    let g = View::contiguous(o, 1, &[4, 3]).unwrap();
                    batch.push(Instruction::new(op, [v(&g), v(&transposed), v(&iv)]));
                } else {
                    let src = View::new(b, 39, &[4, 3], &[-3, -1]).unwrap();
                    let dst = View::new(o, 1, &[5, 7], &[7, 1]).unwrap();
                    batch.push(Instruction::new(op, [v(&dst), v(&src), v(&iv)]));
                }
            }
            Kind::System => {
                // The host copy must be current before a discard declares it authoritative.
                batch.push(Instruction::new(Opcode::Sync, [View::of_base(a).into()]));
                batch.push(Instruction::new(op, [v(&transposed)]));
            }
            Kind::Nothing => batch.push(Instruction::new(op, [])),
            Kind::Extension => continue,
        }
        let bases: Vec<Base> = {
            let mut seen: Vec<Base> = Vec::new();
            for i in &batch {
                for w in i.views() {
                    if !seen.contains(&w.base) {
                        seen.push(w.base);
                    }
                }
            }
            if op == Opcode::Free {
                seen.retain(|x| x.id != a.id);
            }
            seen
        };
        let steps = vec![Step::Batch(batch), sync_all(&bases)];
        out.push((op, Program { bases, steps }));
    }
    out
}

/// A random view of `shape` into one of `bases` (retrying layouts until one fits); outputs
/// visit each element once and never broadcast.
pub fn random_view(rng: &mut Rng, bases: &[Base], shape: &[usize], output: bool) -> View {
    for attempt in 0..1000 {
        let b =
            if attempt > 40 { *bases.iter().max_by_key(|b| b.nelem).unwrap() } else { bases[rng.below(bases.len())] };
        let mut stride: Vec<i64> = Vec::new();
        let mut acc = 1i64;
        for &n in shape.iter().rev() {
            let s = match rng.below(6) {
                0 if !output => 0,
                1 => -acc,
                2 => acc * 2,
                _ => acc,
            };
            stride.insert(0, if attempt > 40 { acc } else { s });
            acc *= n.max(1) as i64 * if attempt > 40 { 1 } else { 2 };
        }
        if rng.below(4) == 0 && shape.len() >= 2 && attempt <= 40 {
            stride.swap(0, 1); // a transposed layout
        }
        let (mut lo, mut hi) = (0i64, 0i64);
        for (&n, &s) in shape.iter().zip(&stride) {
            let reach = (n as i64 - 1).max(0) * s;
            if reach < 0 { lo += reach } else { hi += reach }
        }
        let room = b.nelem as i64 - 1 - hi + lo;
        if room < 0 {
            continue;
        }
        let start = -lo + rng.below(room as usize + 1) as i64;
        if let Ok(v) = View::new(b, start, shape, &stride)
            && (!output || vm_core::instr::visits_each_element_once(&v))
        {
            return v;
        }
    }
    panic!("no view of shape {shape:?} fits the bases")
}

/// A random program of about `len` instructions over f64 bases of uneven sizes (and i64 ones
/// that reductions to a position write).
pub fn random_program(seed: u64, len: usize) -> Program {
    let mut rng = Rng(seed);
    let sizes = [1u64, 2, 3, 5, 17, 36, 60, 100, 400, 1500];
    let bases: Vec<Base> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| Base { id: BaseId(i as u64 + 1), dtype: DType::F64, nelem: n })
        .collect();
    let positions: Vec<Base> = [1u64, 3, 17, 60, 400]
        .iter()
        .enumerate()
        .map(|(i, &n)| Base { id: BaseId(i as u64 + 21), dtype: DType::I64, nelem: n })
        .collect();
    let mut steps = vec![Step::Batch(bases.iter().chain(&positions).map(|&b| fill(b, seed ^ b.id.0)).collect())];
    let mut batch = Vec::new();
    for _ in 0..len {
        let nd = rng.below(4);
        let shape: Vec<usize> = (0..nd).map(|_| rng.below(6) + usize::from(rng.below(8) != 0)).collect();
        let out = random_view(&mut rng, &bases, &shape, true);
        let input = |rng: &mut Rng| Operand::View(random_view(rng, &bases, &shape, false));
        let instr = match rng.below(10) {
            0..=3 => {
                let op = [Opcode::Add, Opcode::Subtract, Opcode::Multiply, Opcode::Maximum][rng.below(4)];
                let b = if rng.below(4) == 0 { Scalar::F64(0.5).into() } else { input(&mut rng) };
                Instruction::new(op, [out.into(), input(&mut rng), b])
            }
            4 => Instruction::new(
                [Opcode::Negative, Opcode::Sin, Opcode::Identity][rng.below(3)],
                [out.into(), input(&mut rng)],
            ),
            5 | 6 if nd > 0 => {
                let axis = rng.below(nd);
                let mut in_shape = shape.clone();
                in_shape.insert(axis, rng.below(7));
                let src = random_view(&mut rng, &bases, &in_shape, false);
                let op = [Opcode::AddReduce, Opcode::MaximumReduce][rng.below(2)];
                Instruction::new(op, [out.into(), src.into(), Scalar::I64(axis as i64).into()])
            }
            // A position along an axis of at least one element (an empty one is invalid).
            9 if nd > 0 && rng.below(2) == 0 => {
                let axis = rng.below(nd);
                let mut in_shape = shape.clone();
                in_shape.insert(axis, 1 + rng.below(7));
                let src = random_view(&mut rng, &bases, &in_shape, false);
                let out = random_view(&mut rng, &positions, &shape, true);
                let op = [Opcode::ArgminReduce, Opcode::ArgmaxReduce][rng.below(2)];
                Instruction::new(op, [out.into(), src.into(), Scalar::I64(axis as i64).into()])
            }
            7 if nd > 0 => {
                let axis = rng.below(nd);
                Instruction::new(Opcode::AddAccumulate, [out.into(), input(&mut rng), Scalar::I64(axis as i64).into()])
            }
            8 => {
                let b = bases[rng.below(bases.len())];
                steps.push(Step::Batch(std::mem::take(&mut batch)));
                let at = rng.below(b.nelem as usize);
                steps.push(Step::HostWrite(b, at, (rng.below(100) as f64).to_ne_bytes().to_vec()));
                continue;
            }
            _ => Instruction::new(
                Opcode::Random,
                [out.into(), Scalar::U64(rng.next_u64()).into(), Scalar::U64(7).into()],
            ),
        };
        batch.push(instr);
        if rng.below(5) == 0 {
            steps.push(Step::Batch(std::mem::take(&mut batch)));
        }
    }
    steps.push(Step::Batch(batch));
    let bases: Vec<Base> = bases.into_iter().chain(positions).collect();
    steps.push(sync_all(&bases));
    Program { bases, steps }
}

/// A random program shaped like a frontend's: runs of element-wise instructions over one shape
/// each, writing fresh temporaries (of the run's size or larger, so distributed differently)
/// that later instructions of the run read through the written view, and persistent bases
/// through random views; temporaries are freed as soon as they are dead (inside the run, as
/// a runtime does), some are reduced or synced first, and system instructions are mixed in.
pub fn random_fusable_program(seed: u64, runs: usize) -> Program {
    let mut rng = Rng(seed);
    let sizes = [1u64, 3, 17, 60, 100, 400, 1500];
    let mut bases: Vec<Base> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| Base { id: BaseId(i as u64 + 1), dtype: DType::F64, nelem: n })
        .collect();
    let persistent = bases.clone();
    let mut steps = vec![Step::Batch(persistent.iter().map(|&b| fill(b, seed ^ b.id.0)).collect())];
    let mut batch = Vec::new();
    let mut next_id = 100;
    let ops = [Opcode::Add, Opcode::Subtract, Opcode::Multiply, Opcode::Maximum];
    for _ in 0..runs {
        let nd = 1 + rng.below(3);
        let shape: Vec<usize> = (0..nd).map(|_| 1 + rng.below(9)).collect();
        let n: usize = shape.iter().product();
        // Temporaries written in this run: (base, the view written, reads left before its free).
        let mut temps: Vec<(Base, View, usize)> = Vec::new();
        for _ in 0..2 + rng.below(7) {
            let input = |rng: &mut Rng, temps: &mut Vec<(Base, View, usize)>| -> Operand {
                if !temps.is_empty() && rng.below(3) != 0 {
                    let k = rng.below(temps.len());
                    temps[k].2 = temps[k].2.saturating_sub(1);
                    temps[k].1.clone().into()
                } else {
                    random_view(rng, &persistent, &shape, false).into()
                }
            };
            let a = input(&mut rng, &mut temps);
            let instr_inputs: Vec<Operand> = match rng.below(4) {
                0 => vec![a],
                1 => vec![a, Scalar::F64(0.25).into()],
                _ => vec![a, input(&mut rng, &mut temps)],
            };
            let out = if rng.below(3) == 0 {
                random_view(&mut rng, &persistent, &shape, true)
            } else {
                next_id += 1;
                let extra = [0, 0, 1, 7][rng.below(4)];
                let base = Base { id: BaseId(next_id), dtype: DType::F64, nelem: (n + extra) as u64 };
                let view = View::contiguous(base, rng.below(extra + 1) as i64, &shape).expect("fits");
                temps.push((base, view.clone(), 1 + rng.below(3)));
                view
            };
            let opcode = match instr_inputs.len() {
                1 => [Opcode::Negative, Opcode::Sin, Opcode::Identity][rng.below(3)],
                _ => ops[rng.below(ops.len())],
            };
            batch.push(Instruction::new(opcode, std::iter::once(out.into()).chain(instr_inputs)));
            // Free what is dead, as a runtime would (its reads are used up).
            while let Some(k) = temps.iter().position(|t| t.2 == 0) {
                let (b, _, _) = temps.remove(k);
                batch.push(Instruction::new(Opcode::Free, [View::of_base(b).into()]));
            }
            if rng.below(8) == 0 {
                let b = persistent[rng.below(persistent.len())];
                batch.push(Instruction::new(Opcode::Sync, [View::of_base(b).into()]));
            }
        }
        // What is left of the run: reduced into a persistent base, kept, or freed.
        for (b, v, _) in temps {
            match rng.below(4) {
                0 => {
                    let sum = persistent[0];
                    let flat = View::contiguous(b, v.start, &[n]).expect("fits");
                    let out = View::contiguous(sum, 0, &[]).expect("one element");
                    batch.push(Instruction::new(Opcode::AddReduce, [out.into(), flat.into(), Scalar::I64(0).into()]));
                    batch.push(Instruction::new(Opcode::Free, [View::of_base(b).into()]));
                }
                1 => bases.push(b),
                _ => batch.push(Instruction::new(Opcode::Free, [View::of_base(b).into()])),
            }
        }
        if rng.below(3) == 0 {
            steps.push(Step::Batch(std::mem::take(&mut batch)));
        }
    }
    steps.push(Step::Batch(batch));
    steps.push(sync_all(&bases));
    Program { bases, steps }
}
