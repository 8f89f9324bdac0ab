//! Random programs (shapes up to 3-d, slices, negative strides, broadcasts, fused chains,
//! contracted temporaries, reductions to a value and to a position) on opencl against interp,
//! and the shared random programs of `vm_core::testing`. A failure names the seed.

mod common;

use common::*;
use vm_core::instr::visits_each_element_once;
use vm_core::{Base, DType, Instruction, Opcode, Operand, Scalar, View};

fn view(r: &mut Rng, b: Base, shape: &[usize], output: bool) -> View {
    for _ in 0..20 {
        let stride: Vec<i64> = shape
            .iter()
            .map(|_| {
                let s = r.below(7) as i64 - 3;
                if s == 0 && (output || r.below(3) != 0) { 1 } else { s }
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
        let v = View::new(b, lo + r.below((hi - lo + 1) as usize) as i64, shape, &stride).unwrap();
        if !output || visits_each_element_once(&v) {
            return v;
        }
    }
    View::contiguous(b, 0, shape).unwrap()
}

const OPS: &[Opcode] = &[
    Opcode::Add,
    Opcode::Subtract,
    Opcode::Multiply,
    Opcode::Maximum,
    Opcode::Minimum,
    Opcode::Negative,
    Opcode::Square,
    Opcode::Absolute,
    Opcode::Exp,
    Opcode::Less,
    Opcode::Select,
    Opcode::Identity,
    Opcode::Random,
    Opcode::Range,
];

fn program(seed: u64) -> (Vec<Instruction>, Vec<Base>, Vec<Base>) {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let ndim = 1 + r.below(3);
    let shape: Vec<usize> = (0..ndim).map(|_| 1 + r.below(9)).collect();
    let n: usize = shape.iter().product();
    let d = [DType::F64, DType::F32, DType::I32, DType::I64][r.below(4)];
    let mut next = 1u64;
    let mut new_base = |r: &mut Rng| {
        let b = base(next, d, (n * (1 + r.below(3)) + r.below(5)) as u64);
        next += 1;
        b
    };
    let inputs: Vec<Base> = (0..3).map(|_| new_base(&mut r)).collect();
    let mut live = inputs.clone();
    let mut batch = Vec::new();
    for _ in 0..1 + r.below(16) {
        let op = OPS[r.below(OPS.len())];
        let out = if r.below(3) == 0 { live[r.below(live.len())] } else { new_base(&mut r) };
        let o = view(&mut r, out, &shape, true);
        let arg = |r: &mut Rng| {
            if r.below(6) == 0 {
                Operand::Const(Scalar::I64(r.below(7) as i64 - 3).cast(d))
            } else {
                let b = live[r.below(live.len())];
                Operand::View(view(r, b, &shape, false))
            }
        };
        let instr = match op {
            Opcode::Less | Opcode::Exp => continue,
            Opcode::Select => {
                let c = new_base(&mut r);
                let c = Base { dtype: DType::Bool, ..c };
                let cv = Operand::View(View::contiguous(c, 0, &shape).unwrap());
                let x = arg(&mut r);
                batch.push(Instruction::new(Opcode::Less, [cv.clone(), x, arg(&mut r)]));
                Instruction::new(op, [o.into(), cv, arg(&mut r), arg(&mut r)])
            }
            Opcode::Random => Instruction::new(op, [o.into(), Scalar::U64(seed).into(), Scalar::U64(3).into()]),
            Opcode::Range => Instruction::new(op, [o.into()]),
            Opcode::Negative | Opcode::Square | Opcode::Absolute | Opcode::Identity => {
                Instruction::new(op, [o.into(), arg(&mut r)])
            }
            _ => Instruction::new(op, [o.into(), arg(&mut r), arg(&mut r)]),
        };
        if instr.validate().is_err() || vm_core::instr::validate_batch(std::slice::from_ref(&instr)).is_err() {
            continue;
        }
        batch.push(instr);
        if !live.contains(&out) {
            live.push(out);
        }
        if r.below(5) == 0 && d.is_float() {
            let e = new_base(&mut r);
            let ev = View::contiguous(e, 0, &shape).unwrap();
            batch.push(Instruction::new(Opcode::Exp, [ev.into(), o_view(&batch)]));
            live.push(e);
        }
    }
    if r.below(3) == 0 {
        // A contracted temporary: written, read, freed inside the batch.
        let t = new_base(&mut r);
        let tv = View::contiguous(t, 0, &shape).unwrap();
        let x = Operand::View(view(&mut r, live[0], &shape, false));
        batch.push(Instruction::new(Opcode::Multiply, [tv.clone().into(), x, Scalar::I64(2).cast(d).into()]));
        let out = new_base(&mut r);
        batch.push(Instruction::new(
            Opcode::Add,
            [View::contiguous(out, 0, &shape).unwrap().into(), tv.clone().into(), tv.clone().into()],
        ));
        batch.push(Instruction::new(Opcode::Free, [tv.into()]));
        live.push(out);
    }
    if r.below(3) == 0 {
        let out = new_base(&mut r);
        let axis = r.below(ndim);
        let mut rshape = shape.clone();
        rshape.remove(axis);
        let x = Operand::View(view(&mut r, live[live.len() - 1], &shape, false));
        let op = [Opcode::AddReduce, Opcode::MaximumReduce, Opcode::ArgmaxReduce, Opcode::ArgminReduce][r.below(4)];
        let dtype = if op.is_arg_reduce() { DType::I64 } else { d };
        let ov = View::contiguous(Base { nelem: rshape.iter().product::<usize>() as u64, dtype, ..out }, 0, &rshape)
            .unwrap();
        batch.push(Instruction::new(op, [ov.clone().into(), x, Scalar::I64(axis as i64).into()]));
        live.push(ov.base);
    }
    let outputs = live.into_iter().filter(|b| batch.iter().any(|i| i.output().is_some_and(|v| v.base == *b))).collect();
    (batch, inputs, outputs)
}

fn o_view(batch: &[Instruction]) -> Operand {
    Operand::View(batch.last().unwrap().output().unwrap().clone())
}

/// Sixty programs of up to about twenty instructions: a program's instructions share one shape,
/// so its element-wise ones mostly fuse into one kernel, and a long program tests more per
/// program the device compiler builds (the cost of a cold run) than several short ones.
#[test]
fn random_programs_match_interp() {
    let Some(mut cl) = engine() else { return };
    let mut ran = 0;
    for seed in 0..60 {
        let (batch, inputs, outputs) = program(seed);
        if vm_core::instr::validate_batch(&batch).is_err() {
            continue;
        }
        let (mut a, mut b) = twin(&inputs, seed);
        // `exp` runs on the device within a few ulp of the host's libm.
        compare_within(&mut cl, &batch, &mut a, &mut b, &outputs, &format!("seed {seed}: {batch:?}"), Agree::Ulps(16));
        let mut all: Vec<Base> = batch.iter().flat_map(|i| i.views()).map(|v| v.base).collect();
        all.sort_by_key(|b| b.id);
        all.dedup();
        release(&mut cl, &mut a, &all);
        ran += 1;
    }
    assert!(ran > 50, "only {ran} valid programs");
    let s = cl.stats();
    assert!(s.launches > 120, "{s:?}");
}

/// The shared random programs of `vm_core::testing` (every opcode of the table but gather and
/// scatter, dtypes f64 to u8, up to 4-d), against interp within `Tolerance::REORDERED` (tree
/// reductions add in another order; the math built-ins are within a few ulp).
#[test]
fn shared_random_programs_match_interp() {
    use vm_core::testing::{ProgramSpec, Tolerance, differential, random_program};
    let Some(mut cl) = engine() else { return };
    let spec = ProgramSpec::default();
    let mut instructions = 0;
    let count = std::env::var("VM_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(120u64);
    for seed in 0..count {
        let program = random_program(seed, &spec);
        instructions += program.batch.len() as u64;
        let mut reference = vm_interp::Interp::new(None);
        let small = seed % 2 == 0;
        if let Err(e) = differential(&mut cl, &mut reference, &program, small, Tolerance::REORDERED) {
            panic!("seed {seed}: {e}\n{}", program.listing());
        }
        let all: Vec<Base> = program.bases.clone();
        let mut scratch = vm_core::HostMemory::new();
        release(&mut cl, &mut scratch, &all);
    }
    let s = cl.stats();
    // Only instructions whose output partially overlaps an input go to the fallback.
    assert!(s.fallback_instructions * 20 < instructions, "{s:?} of {instructions} instructions");
}
