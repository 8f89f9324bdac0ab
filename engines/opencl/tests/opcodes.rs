//! Every opcode and dtype on opencl against interp: element-wise opcodes (with the integer
//! division family's edge cases), casts, range and random, reductions along every axis (short
//! axes one work item per output, long ones as tree reductions), scans, gather and scatter. All
//! of them run on the device.
//!
//! The cases are grouped into a few batches, each instruction writing an output of its own: the
//! engine fuses a batch's element-wise instructions into one program and compiles the programs
//! of its reductions and scans together, so a run with an empty device-compiler cache builds
//! tens of programs rather than the eighteen hundred of one batch per case (minutes on PoCL).
//!
//! Agreement: exact bits for integers, bools and the exactly rounded float operations; the
//! transcendental functions and `pow` (see `vm_opencl::codegen::is_approximate`) within
//! [`APPROX_ULPS`] ulps; float sums and products of tree reductions, which add in another order,
//! within `Agree::REORDERED` (relative 1e-9 for f64, 1e-4 for f32).

mod common;

use common::*;
use vm_ir::opcode::{DTypeSet, TypeRule};
use vm_ir::{Base, DType, Instruction, Kind, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

const N: usize = 97;

/// How far the OpenCL built-ins may be from the host's libm: the OpenCL specification bounds
/// them to at most 16 ulps (`pow`; 2 to 8 for the others), the host's are within about 1.
const APPROX_ULPS: u64 = 16;

fn agree(op: Opcode, d: DType) -> Agree {
    Agree::for_elementwise(op, d, vm_opencl::codegen::is_approximate, APPROX_ULPS)
}

fn input_dtypes(op: Opcode) -> Vec<(DType, DType)> {
    match op.type_rule() {
        TypeRule::Same(s) => s.dtypes().map(|d| (d, d)).collect(),
        TypeRule::ToBool(s) => s.dtypes().map(|d| (d, DType::Bool)).collect(),
        TypeRule::ToPosition(s) => s.dtypes().map(|d| (d, DType::I64)).collect(),
        TypeRule::Select => DTypeSet::ALL.dtypes().map(|d| (d, d)).collect(),
        _ => Vec::new(),
    }
}

/// One batch per dtype holds an instruction of every element-wise opcode defined on it (binary
/// ones twice: on two views, and with a constant second operand), each writing its own output
/// slice: the engine fuses the batch into one program per dtype.
#[test]
fn every_elementwise_opcode_and_dtype_matches_interp() {
    let Some(mut cl) = engine() else { return };
    let mut cases = 0;
    for (k, d) in DType::ALL.into_iter().enumerate() {
        let mut r = Rng::new(99 + k as u64);
        // (opcode, output dtype, constant second operand)
        let mut wanted: Vec<(Opcode, DType, Option<Scalar>)> = Vec::new();
        for &op in Opcode::ALL {
            let kind = op.kind();
            if !kind.is_elementwise() || op == Opcode::Identity {
                continue;
            }
            if let Some(&(_, to)) = input_dtypes(op).iter().find(|(i, _)| *i == d) {
                wanted.push((op, to, None));
                if kind == Kind::Binary {
                    wanted.push((op, to, Some(Data::Wild.value(&mut r, d))));
                }
            }
        }
        let (x, y, c) = (base(1, d, N), base(2, d, N), base(3, DType::Bool, N));
        let to: Vec<DType> = wanted.iter().map(|w| w.1).collect();
        let (outputs, views) = slices(&to, N, 10);
        let mut batch = Vec::new();
        let mut checks = Vec::new();
        for (&(op, _, k), out) in wanted.iter().zip(&views) {
            let o = Operand::View(out.clone());
            let ops: Vec<Operand> = match (op.kind(), k) {
                (Kind::Unary, _) => vec![o, whole(x)],
                (Kind::Binary, None) => vec![o, whole(x), whole(y)],
                (Kind::Binary, Some(k)) => vec![o, whole(x), Operand::Const(k)],
                _ => vec![o, whole(c), whole(x), whole(y)],
            };
            batch.push(Instruction::new(op, ops));
            let what = format!("{op} {d}{}", if k.is_some() { " with constant" } else { "" });
            checks.push(Check::of(out, what, agree(op, d)));
            cases += 1;
        }
        let (mut a, mut b) = twin(&[x, y, c], 7 + k as u64);
        compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
        let mut all = vec![x, y, c];
        all.extend(outputs);
        release(&mut cl, &mut a, &all);
    }
    assert!(cases > 400, "{cases}");
    let s = cl.stats();
    assert_eq!(s.fallback_instructions, 0, "{s:?}");
    assert!(s.builds <= 2 * DType::ALL.len() as u64, "one program per dtype: {s:?}");
}

/// Every pair of `values` as two bases `x`, `y` of dtype `d` (row-major over the pairs).
fn pairs(d: DType, values: &[Scalar]) -> (Base, Base, HostMemory, HostMemory) {
    let n = values.len() * values.len();
    let (x, y) = (base(1, d, n), base(2, d, n));
    let (mut a, mut b) = twin(&[], 0);
    for m in [&mut a, &mut b] {
        let xs: Vec<u8> = values.iter().flat_map(|&v| values.iter().flat_map(move |_| bytes(v.cast(d)))).collect();
        let ys: Vec<u8> = values.iter().flat_map(|_| values.iter().flat_map(|&w| bytes(w.cast(d)))).collect();
        m.ensure(&x).unwrap().write_bytes(0, &xs).unwrap();
        m.ensure(&y).unwrap().write_bytes(0, &ys).unwrap();
    }
    (x, y, a, b)
}

/// Runs `binaries` on every pair of `values` and `unaries` on each value, in one batch of dtype
/// `d` (one program), against interp.
fn edge_cases(cl: &mut vm_opencl::OpenClEngine, d: DType, values: &[Scalar], binaries: &[Opcode], unaries: &[Opcode]) {
    let (x, y, mut a, mut b) = pairs(d, values);
    let n = x.nelem as usize;
    let ops: Vec<Opcode> = binaries.iter().chain(unaries).copied().collect();
    let (outputs, views) = slices(&vec![d; ops.len()], n, 10);
    let mut batch = Vec::new();
    let mut checks = Vec::new();
    for (&op, out) in ops.iter().zip(&views) {
        let o = Operand::View(out.clone());
        let operands = if op.kind() == Kind::Binary { vec![o, whole(x), whole(y)] } else { vec![o, whole(x)] };
        batch.push(Instruction::new(op, operands));
        checks.push(Check::of(out, format!("{op} {d} edge cases"), agree(op, d)));
    }
    compare_checks(cl, &batch, &mut a, &mut b, &checks);
    let mut all = vec![x, y];
    all.extend(outputs);
    release(cl, &mut a, &all);
}

#[test]
fn integer_division_powers_and_shifts_have_numpy_semantics_at_the_edges() {
    let Some(mut cl) = engine() else { return };
    let binaries =
        [Opcode::FloorDivide, Opcode::Remainder, Opcode::Fmod, Opcode::Power, Opcode::LeftShift, Opcode::RightShift];
    let unaries = [Opcode::Negative, Opcode::Absolute, Opcode::Sign, Opcode::Square];
    for d in DTypeSet::INTEGER.dtypes() {
        let bits = 8 * d.size() as i64;
        let mut values: Vec<Scalar> =
            [0, 1, -1, 2, -2, 3, -3, 7, -7, bits - 1, bits, bits + 1, 63, 64].iter().map(|&v| Scalar::I64(v)).collect();
        let shift = 64 - bits as u32;
        values.extend(if d.is_signed() {
            [i64::MIN >> shift, (i64::MIN >> shift) + 1, i64::MAX >> shift].map(Scalar::I64)
        } else {
            [u64::MAX >> shift, (u64::MAX >> shift) - 1, 1 << (bits - 1)].map(Scalar::U64)
        });
        edge_cases(&mut cl, d, &values, &binaries, &unaries);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

/// Every element-wise opcode taking floats, on every special value (`vm_testkit::
/// SpecialValues`): signed zeros, infinities, NaNs, subnormals, the largest finite values.
#[test]
fn every_float_opcode_matches_interp_at_special_values() {
    let Some(mut cl) = engine() else { return };
    for d in [DType::F64, DType::F32] {
        let p = vm_testkit::SpecialValues::new(d);
        let (mut a, mut b) = (HostMemory::new(), HostMemory::new());
        p.fill(&mut a).unwrap();
        p.fill(&mut b).unwrap();
        cl.execute(&p.batch, &mut a).unwrap();
        vm_interp::Interp::new(None).execute(&p.batch, &mut b).unwrap();
        if let Err(e) = p.check(&a, &b, &vm_opencl::codegen::is_approximate, APPROX_ULPS) {
            panic!("{e}");
        }
        release(&mut cl, &mut a, &p.bases);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

#[test]
fn float_division_family_is_exact_at_the_edges() {
    let Some(mut cl) = engine() else { return };
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.5,
        -2.5,
        7.0,
        -7.0,
        0.1,
        -3.0,
        1e300,
        -1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5e-324,
    ];
    let values: Vec<Scalar> = specials.iter().map(|&v| Scalar::F64(v)).collect();
    let binaries = [
        Opcode::FloorDivide,
        Opcode::Remainder,
        Opcode::Fmod,
        Opcode::Divide,
        Opcode::Fmax,
        Opcode::Fmin,
        Opcode::Maximum,
        Opcode::Minimum,
        Opcode::Copysign,
        Opcode::Power,
        Opcode::Arctan2,
        Opcode::Hypot,
    ];
    for d in [DType::F32, DType::F64] {
        edge_cases(&mut cl, d, &values, &binaries, &[]);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

/// One batch holds every cast (one program).
#[test]
fn every_cast_matches_interp() {
    let Some(mut cl) = engine() else { return };
    let inputs: Vec<Base> = DType::ALL.iter().map(|&d| base(1 + u64::from(d.id()), d, N)).collect();
    let to: Vec<DType> = DType::ALL.iter().flat_map(|_| DType::ALL).collect();
    let (outputs, views) = slices(&to, N, 100);
    let mut batch = Vec::new();
    let mut checks = Vec::new();
    for (k, out) in views.iter().enumerate() {
        let (from, to) = (inputs[k / DType::ALL.len()], out.dtype());
        batch.push(Instruction::new(Opcode::Identity, [Operand::View(out.clone()), whole(from)]));
        checks.push(Check::of(out, format!("identity {} -> {to}", from.dtype), Agree::Exact));
    }
    let (mut a, mut b) = twin(&inputs, 3);
    compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
    let s = cl.stats();
    assert_eq!(s.fallback_instructions, 0, "{s:?}");
    assert_eq!(s.builds, 1, "{s:?}");
    release(&mut cl, &mut a, &[inputs, outputs].concat());
}

/// One batch holds `range` and `random` on every dtype (one program).
#[test]
fn range_and_random_are_bit_identical() {
    let Some(mut cl) = engine() else { return };
    let keys = [(0u64, 0u64), (42, 7), (u64::MAX, u64::MAX - 10)];
    let to: Vec<DType> = DType::ALL.iter().flat_map(|&d| [d; 4]).collect();
    let (outputs, views) = slices(&to, 1000, 10);
    let mut batch = Vec::new();
    let mut checks = Vec::new();
    for (k, out) in views.iter().enumerate() {
        let (o, d) = (Operand::View(out.clone()), out.dtype());
        let (instr, what) = match k % 4 {
            0 => (Instruction::new(Opcode::Range, [o]), format!("range {d}")),
            r => {
                let (seed, offset) = keys[r - 1];
                let key: [Operand; 2] = [Scalar::U64(seed).into(), Scalar::U64(offset).into()];
                (
                    Instruction::new(Opcode::Random, [o, key[0].clone(), key[1].clone()]),
                    format!("random {d} seed {seed} offset {offset}"),
                )
            }
        };
        batch.push(instr);
        checks.push(Check::of(out, what, Agree::Exact));
    }
    let (mut a, mut b) = twin(&[], 1);
    compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
    let s = cl.stats();
    assert_eq!((s.fallback_instructions, s.builds), (0, 1), "{s:?}");
    release(&mut cl, &mut a, &outputs);
}

/// The reductions with their (input, output) dtypes to run on one layout, `turn` choosing among
/// them: every reduction once, on a dtype that changes with `turn`, and every dtype that no
/// reduction drew with the first reduction defined on it. Over the turns, every reduction meets
/// many dtypes and every dtype many reductions, at a program each rather than the hundred-odd
/// programs of all pairs on every turn.
fn reductions_for(turn: usize) -> Vec<(Opcode, DType, DType)> {
    let ops: Vec<Opcode> = Opcode::ALL.iter().copied().filter(|o| o.kind() == Kind::Reduce).collect();
    let mut picks: Vec<(Opcode, DType, DType)> = Vec::new();
    for (k, &op) in ops.iter().enumerate() {
        let ds = input_dtypes(op);
        let (d, to) = ds[(k * 5 + turn * 3) % ds.len()];
        picks.push((op, d, to));
    }
    for d in DType::ALL {
        if !picks.iter().any(|p| p.1 == d) {
            let (op, to) =
                ops.iter().find_map(|&op| input_dtypes(op).into_iter().find(|p| p.0 == d).map(|p| (op, p.1))).unwrap();
            picks.push((op, d, to));
        }
    }
    picks
}

/// Tree reductions on four layouts, each layout one batch of [`reductions_for`] (built as one
/// program).
#[test]
fn long_reductions_run_as_tree_reductions_and_match_interp() {
    let Some(mut cl) = engine() else { return };
    // (input shape, strides, start, axis): long axes with few outputs (two-stage trees), long axes
    // with many outputs (one work group per output), reversed and strided layouts.
    let layouts: [(&[usize], &[i64], i64, usize); 4] = [
        (&[5000], &[-2], 9999, 0),
        (&[3, 700], &[1, 3], 0, 1),
        (&[700, 3], &[-3, 1], 2097, 0),
        (&[2, 3000, 2], &[6000, 2, 1], 0, 1),
    ];
    let mut seen = std::collections::HashSet::new();
    let mut cases = 0u64;
    for (li, &(shape, stride, start, axis)) in layouts.iter().enumerate() {
        let picks = reductions_for(li);
        let mut rshape = shape.to_vec();
        rshape.remove(axis);
        let m = rshape.iter().product::<usize>();
        let inputs: Vec<Base> = DType::ALL.iter().map(|&d| base(1 + u64::from(d.id()), d, 12000)).collect();
        let (mut a, mut b) = twin(&[], 0);
        for x in &inputs {
            let seed = 3 + li as u64 + u64::from(x.dtype.id());
            fill(&mut a, x, seed, Data::Moderate).unwrap();
            fill(&mut b, x, seed, Data::Moderate).unwrap();
        }
        let mut batch = Vec::new();
        let mut checks = Vec::new();
        let mut outputs = Vec::new();
        for (k, &(op, d, to)) in picks.iter().enumerate() {
            let out = base(100 + k as u64, to, m);
            let xv = View::new(inputs[d.id() as usize], start, shape, stride).unwrap();
            let ov = View::contiguous(out, 0, &rshape).unwrap();
            batch.push(Instruction::new(op, [ov.clone().into(), xv.into(), Scalar::I64(axis as i64).into()]));
            checks.push(Check::of(&ov, format!("{op} {d} layout {li}"), Agree::for_reduction(op)));
            outputs.push(out);
            seen.insert((op, d));
            cases += 1;
        }
        compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
        release(&mut cl, &mut a, &[inputs, outputs].concat());
    }
    let s = cl.stats();
    assert_eq!(s.fallback_instructions, 0, "{s:?}");
    assert!(s.launches > cases, "two-stage trees launch twice: {s:?}");
    assert!(seen.len() > 40, "{} pairs of reduction and dtype", seen.len());
}

#[test]
fn a_float_sum_of_a_tree_reduction_is_deterministic() {
    let Some(mut cl) = engine() else { return };
    let (x, out) = (base(1, DType::F32, 100_000), base(2, DType::F32, 1));
    let mut sums = Vec::new();
    for _ in 0..3 {
        let mut mem = HostMemory::new();
        fill(&mut mem, &x, 5, Data::Moderate).unwrap();
        let ov = View::contiguous(out, 0, &[]).unwrap();
        let batch = [
            Instruction::new(Opcode::AddReduce, [ov.into(), whole(x), Scalar::I64(0).into()]),
            Instruction::new(Opcode::Sync, [whole(out)]),
        ];
        cl.execute(&batch, &mut mem).unwrap();
        sums.push(mem.get(out.id).unwrap().as_slice::<f32>()[0].to_bits());
        release(&mut cl, &mut mem, &[x, out]);
    }
    assert!(sums.iter().all(|&s| s == sums[0]), "{sums:?}");
}

/// Every scan on every dtype, out of place and in place, along an axis that turns from case to
/// case (so every axis sees many of them); one batch per dtype, built as one program.
#[test]
fn every_scan_and_dtype_along_every_axis_matches_interp() {
    let Some(mut cl) = engine() else { return };
    let shape = [3usize, 5, 4];
    let mut cases = 0usize;
    let mut axes = [0usize; 3];
    for d in DType::ALL {
        let mut batch = Vec::new();
        let mut checks = Vec::new();
        let mut bases = Vec::new();
        for &op in Opcode::ALL.iter().filter(|o| o.kind() == Kind::Accumulate) {
            if !input_dtypes(op).iter().any(|p| p.0 == d) {
                continue;
            }
            for in_place in [false, true] {
                let axis = cases % 3;
                axes[axis] += 1;
                let k = bases.len() as u64;
                let (x, out) = (base(1 + k, d, 60), base(2 + k, d, 60));
                let xv = View::new(x, 59, &shape, &[-20, -4, -1]).unwrap();
                let ov = if in_place { xv.clone() } else { View::new(out, 0, &shape, &[1, 3, 15]).unwrap() };
                let ax: Operand = Scalar::I64(axis as i64).into();
                batch.push(Instruction::new(op, [ov.clone().into(), xv.into(), ax]));
                let what = format!("{op} {d} axis {axis}{}", if in_place { " in place" } else { "" });
                checks.push(Check { base: ov.base, start: 0, len: 60, what, agree: Agree::Exact });
                bases.extend([x, out]);
                cases += 1;
            }
        }
        if batch.is_empty() {
            continue;
        }
        let inputs: Vec<Base> = bases.iter().step_by(2).copied().collect();
        let (mut a, mut b) = twin(&inputs, 21 + u64::from(d.id()));
        compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
        release(&mut cl, &mut a, &bases);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
    assert!(cases >= 40 && axes.iter().all(|&n| n > 10), "{cases} cases, per axis {axes:?}");
}

#[test]
fn gather_and_scatter_match_interp_and_bad_indices_are_the_fallbacks_error() {
    let Some(mut cl) = engine() else { return };
    for (i, (d, id)) in
        [(DType::F64, DType::I64), (DType::F32, DType::U8), (DType::I16, DType::I32), (DType::Bool, DType::U64)]
            .into_iter()
            .enumerate()
    {
        let (src, index, out) = (base(1, d, 60), base(2, id, 21), base(3, d, 40));
        let (mut a, mut b) = twin(&[src], 40 + i as u64);
        for m in [&mut a, &mut b] {
            // Indices in 0..10 repeat, so scatter must keep the last write of each.
            let data: Vec<u8> = (0..21u64).flat_map(|k| bytes(Scalar::U64((k * 7) % 10).cast(id))).collect();
            m.ensure(&index).unwrap().write_bytes(0, &data).unwrap();
        }
        let srcv = View::new(src, 59, &[2, 5], &[-20, -3]).unwrap();
        let idxv = View::new(index, 0, &[7, 3], &[3, 1]).unwrap();
        let outv = View::new(out, 1, &[7, 3], &[1, 10]).unwrap();
        // One batch (one program): the gather, then a scatter of what it gathered.
        let batch = [
            Instruction::new(Opcode::Gather, [outv.clone().into(), srcv.clone().into(), idxv.clone().into()]),
            Instruction::new(Opcode::Scatter, [srcv.clone().into(), outv.clone().into(), idxv.clone().into()]),
        ];
        let checks = [
            Check { base: out, start: 0, len: 40, what: format!("gather {d} by {id}"), agree: Agree::Exact },
            Check { base: src, start: 0, len: 60, what: format!("scatter {d} by {id}"), agree: Agree::Exact },
        ];
        compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
        let k: Operand = Scalar::I64(1).cast(d).into();
        let batch = [Instruction::new(Opcode::Scatter, [srcv.clone().into(), k, idxv.clone().into()])];
        compare(&mut cl, &batch, &mut a, &mut b, &[src], &format!("scatter of a constant {d} by {id}"));
        let before = cl.stats().fallback_instructions;
        // An index out of range: the same error as interp's, nothing written.
        for m in [&mut a, &mut b] {
            m.get_mut(index.id).unwrap().write_bytes(5 * id.size(), &bytes(Scalar::U64(10).cast(id))).unwrap();
        }
        let batch = [Instruction::new(Opcode::Gather, [outv.clone().into(), srcv.clone().into(), idxv.clone().into()])];
        cl.execute(&[Instruction::new(Opcode::Discard, [whole(index)])], &mut a).unwrap();
        compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("gather {d} out of range"));
        let e = cl.execute(&batch, &mut a).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        assert!(cl.stats().fallback_instructions > before);
        release(&mut cl, &mut a, &[src, index, out]);
    }
}

#[test]
fn fused_kernels_with_reductions_and_temporaries_run_on_the_device() {
    let Some(mut cl) = engine() else { return };
    for n in [100usize, 5000] {
        let (x, t, s, u, v) = (
            base(1, DType::F64, n),
            base(2, DType::F64, n),
            base(3, DType::F64, 1),
            base(4, DType::F64, 1),
            base(5, DType::F64, n),
        );
        let scalar = |b: Base| Operand::View(View::contiguous(b, 0, &[]).unwrap());
        let (mut a, mut b) = twin(&[], 0);
        fill(&mut a, &x, 8, Data::Moderate).unwrap();
        fill(&mut b, &x, 8, Data::Moderate).unwrap();
        let zero: Operand = Scalar::I64(0).into();
        let batch = [
            Instruction::new(Opcode::Multiply, [whole(t), whole(x), whole(x)]),
            Instruction::new(Opcode::AddReduce, [scalar(s), whole(t), zero.clone()]),
            Instruction::new(Opcode::Free, [whole(t)]),
            Instruction::new(Opcode::MaximumReduce, [scalar(u), whole(x), zero]),
            Instruction::new(Opcode::Exp, [whole(v), whole(x)]),
            Instruction::new(Opcode::Add, [whole(x), whole(x), Scalar::F64(1.0).into()]),
        ];
        let how = Agree::REORDERED;
        compare_within(&mut cl, &batch, &mut a, &mut b, &[s, u, v, x], &format!("fused with reductions, n = {n}"), how);
        release(&mut cl, &mut a, &[x, s, u, v]);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

#[test]
fn a_bad_device_name_is_a_clear_error() {
    if engine().is_none() {
        return;
    }
    let settings =
        vm_runtime::Settings::from_pairs("opencl", &[("device", toml::Value::String("no-such-device".into()))]);
    let e = match (vm_opencl::IMPLEMENTATION.construct)(&settings, None) {
        Err(e) => e,
        Ok(_) => panic!("a device named no-such-device was found"),
    };
    assert!(e.to_string().contains("no OpenCL device matches"), "{e}");
}

/// Every reduction on every dtype, along an axis that turns from case to case (so every axis
/// sees many of them); one batch per dtype, built as one program.
#[test]
fn every_reduction_and_dtype_along_every_axis_matches_interp() {
    let Some(mut cl) = engine() else { return };
    let shape = [3usize, 5, 4];
    let mut cases = 0usize;
    let mut axes = [0usize; 3];
    for d in DType::ALL {
        let x = base(1, d, 60);
        let xv = View::new(x, 59, &shape, &[-20, -4, -1]).unwrap();
        let mut batch = Vec::new();
        let mut checks = Vec::new();
        let mut bases = vec![x];
        for &op in Opcode::ALL.iter().filter(|o| o.kind() == Kind::Reduce) {
            let Some(&(_, to)) = input_dtypes(op).iter().find(|p| p.0 == d) else { continue };
            let axis = cases % 3;
            axes[axis] += 1;
            let mut rshape = shape.to_vec();
            rshape.remove(axis);
            let out = base(10 + bases.len() as u64, to, rshape.iter().product::<usize>());
            let ov = View::contiguous(out, 0, &rshape).unwrap();
            batch.push(Instruction::new(op, [ov.clone().into(), xv.clone().into(), Scalar::I64(axis as i64).into()]));
            checks.push(Check::of(&ov, format!("{op} {d} axis {axis}"), Agree::Exact));
            bases.push(out);
            cases += 1;
        }
        let (mut a, mut b) = twin(&[x], 5 + u64::from(d.id()));
        compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
        release(&mut cl, &mut a, &bases);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
    assert!(cases > 90 && axes.iter().all(|&n| n > 25), "{cases} cases, per axis {axes:?}");
}

/// The number after "instruction " in an error's text.
fn instruction_index(e: &vm_ir::Error) -> Option<usize> {
    let text = e.to_string();
    let rest = &text[text.find("instruction ")? + "instruction ".len()..];
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[test]
fn a_failing_instruction_is_named_by_its_position_in_the_batch_on_every_engine() {
    let Some(mut cl) = engine() else { return };
    let (src, index, out, x) =
        (base(1, DType::F64, 10), base(2, DType::I64, 8), base(3, DType::F64, 8), base(4, DType::F64, 8));
    let bad = |position: usize, scatter: bool| {
        // Element-wise instructions before the failing one (fused into one kernel), the failing
        // gather or scatter (index 10 of 10 elements) at `position`, and one after it.
        let mut batch: Vec<Instruction> = (0..position)
            .map(|k| Instruction::new(Opcode::Add, [whole(x), whole(x), Scalar::F64(k as f64).into()]))
            .collect();
        batch.push(if scatter {
            Instruction::new(Opcode::Scatter, [whole(src), whole(out), whole(index)])
        } else {
            Instruction::new(Opcode::Gather, [whole(out), whole(src), whole(index)])
        });
        batch.push(Instruction::new(Opcode::Sync, [whole(out)]));
        batch
    };
    let memory = || {
        let mut m = HostMemory::new();
        let idx: Vec<u8> = [0i64, 3, 9, 10, 1, 2, 3, 4].iter().flat_map(|k| k.to_le_bytes()).collect();
        m.ensure(&index).unwrap().write_bytes(0, &idx).unwrap();
        m
    };
    for scatter in [false, true] {
        for position in [0, 2, 5] {
            let batch = bad(position, scatter);
            let mut cpu = vm_cpu::CpuEngine::new(vm_cpu::Config::default(), None).unwrap();
            let engines: [(&str, &mut dyn Component); 3] =
                [("interp", &mut vm_interp::Interp::new(None)), ("cpu", &mut cpu), ("opencl", &mut cl)];
            for (name, e) in engines {
                let err = e.execute(&batch, &mut memory()).unwrap_err();
                assert!(matches!(err, vm_ir::Error::Execution(_)), "{name}: {err}");
                assert_eq!(instruction_index(&err), Some(position), "{name}, scatter {scatter}: {err}");
            }
            release(&mut cl, &mut memory(), &[src, index, out, x]);
        }
    }
}
