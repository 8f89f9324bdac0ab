//! Every opcode and dtype on opencl against interp: element-wise opcodes (with the integer
//! division family's edge cases), casts, range and random, reductions along every axis (short
//! axes one work item per output, long ones as tree reductions), scans, gather and scatter. All
//! of them run on the device.
//!
//! Agreement: exact bits for integers, bools and the exactly rounded float operations; the
//! transcendental functions and `pow` (see `vm_opencl::codegen::is_approximate`) within
//! [`APPROX_ULPS`] ulps; float sums and products of tree reductions, which add in another order,
//! within `Tolerance::REORDERED` (relative 1e-9 for f64, 1e-4 for f32).

mod common;

use common::*;
use vm_core::opcode::{DTypeSet, TypeRule};
use vm_core::{Base, Component, DType, HostMemory, Instruction, Kind, Opcode, Operand, Scalar};

const N: u64 = 97;

/// How far the OpenCL built-ins may be from the host's libm: the OpenCL specification bounds
/// them to at most 16 ulps (`pow`; 2 to 8 for the others), the host's are within about 1.
const APPROX_ULPS: u64 = 16;

fn agree(op: Opcode, d: DType) -> Agree {
    if d.is_float() && vm_opencl::codegen::is_approximate(op) { Agree::Ulps(APPROX_ULPS) } else { Agree::Exact }
}

fn input_dtypes(op: Opcode) -> Vec<(DType, DType)> {
    match op.type_rule() {
        TypeRule::Same(s) => s.dtypes().map(|d| (d, d)).collect(),
        TypeRule::ToBool(s) => s.dtypes().map(|d| (d, DType::Bool)).collect(),
        TypeRule::Select => DTypeSet::ALL.dtypes().map(|d| (d, d)).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn every_elementwise_opcode_and_dtype_matches_interp() {
    let Some(mut cl) = engine() else { return };
    let mut cases = 0;
    for &op in Opcode::ALL {
        let kind = op.kind();
        if !matches!(kind, Kind::Unary | Kind::Binary | Kind::Select) || op == Opcode::Identity {
            continue;
        }
        for (d, to) in input_dtypes(op) {
            let (x, y, c, out) = (base(1, d, N), base(2, d, N), base(3, DType::Bool, N), base(4, to, N));
            let ops: Vec<Operand> = match kind {
                Kind::Unary => vec![whole(out), whole(x)],
                Kind::Binary => vec![whole(out), whole(x), whole(y)],
                _ => vec![whole(out), whole(c), whole(x), whole(y)],
            };
            let (mut a, mut b) = twin(&[x, y, c], 7 + cases);
            let batch = [Instruction::new(op, ops.clone())];
            compare_within(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d}"), agree(op, d));
            // With a constant second operand.
            if kind == Kind::Binary {
                let mut r = Rng(99 + cases);
                let k = Operand::Const(value(&mut r, d));
                let batch = [Instruction::new(op, [whole(out), whole(x), k])];
                compare_within(
                    &mut cl,
                    &batch,
                    &mut a,
                    &mut b,
                    &[out],
                    &format!("{op} {d} with constant"),
                    agree(op, d),
                );
            }
            release(&mut cl, &mut a, &[x, y, c, out]);
            cases += 1;
        }
    }
    assert!(cases > 100);
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

/// Every pair of `values` as two bases `x`, `y` of dtype `d` (row-major over the pairs).
fn pairs(d: DType, values: &[Scalar]) -> (Base, Base, HostMemory, HostMemory) {
    let n = (values.len() * values.len()) as u64;
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

#[test]
fn integer_division_powers_and_shifts_have_numpy_semantics_at_the_edges() {
    let Some(mut cl) = engine() else { return };
    let binaries =
        [Opcode::FloorDivide, Opcode::Remainder, Opcode::Fmod, Opcode::Power, Opcode::LeftShift, Opcode::RightShift];
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
        let (x, y, mut a, mut b) = pairs(d, &values);
        let out = base(3, d, x.nelem);
        for op in binaries {
            let batch = [Instruction::new(op, [whole(out), whole(x), whole(y)])];
            compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d} edge cases"));
        }
        for op in [Opcode::Negative, Opcode::Absolute, Opcode::Sign, Opcode::Square] {
            let batch = [Instruction::new(op, [whole(out), whole(x)])];
            compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d} edge cases"));
        }
        release(&mut cl, &mut a, &[x, y, out]);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

/// Every element-wise opcode taking floats, on every special value (`vm_core::testing::
/// SpecialValues`): signed zeros, infinities, NaNs, subnormals, the largest finite values.
#[test]
fn every_float_opcode_matches_interp_at_special_values() {
    let Some(mut cl) = engine() else { return };
    for d in [DType::F64, DType::F32] {
        let p = vm_core::testing::SpecialValues::new(d);
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
    for d in [DType::F32, DType::F64] {
        let (x, y, mut a, mut b) = pairs(d, &values);
        let out = base(3, d, x.nelem);
        for op in [
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
        ] {
            let batch = [Instruction::new(op, [whole(out), whole(x), whole(y)])];
            compare_within(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d} edge cases"), agree(op, d));
        }
        release(&mut cl, &mut a, &[x, y, out]);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

#[test]
fn every_cast_matches_interp() {
    let Some(mut cl) = engine() else { return };
    for (i, from) in DType::ALL.into_iter().enumerate() {
        for to in DType::ALL {
            let (x, out) = (base(1, from, N), base(2, to, N));
            let (mut a, mut b) = twin(&[x], 3 + i as u64);
            let batch = [Instruction::new(Opcode::Identity, [whole(out), whole(x)])];
            compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("identity {from} -> {to}"));
            release(&mut cl, &mut a, &[x, out]);
        }
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

#[test]
fn range_and_random_are_bit_identical() {
    let Some(mut cl) = engine() else { return };
    for d in DType::ALL {
        let out = base(1, d, 1000);
        let (mut a, mut b) = twin(&[], 1);
        compare(
            &mut cl,
            &[Instruction::new(Opcode::Range, [whole(out)])],
            &mut a,
            &mut b,
            &[out],
            &format!("range {d}"),
        );
        for (seed, offset) in [(0u64, 0u64), (42, 7), (u64::MAX, u64::MAX - 10)] {
            let batch =
                [Instruction::new(Opcode::Random, [whole(out), Scalar::U64(seed).into(), Scalar::U64(offset).into()])];
            compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("random {d} seed {seed} offset {offset}"));
        }
        release(&mut cl, &mut a, &[out]);
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}

/// Fills `b` with values that sum and multiply without overflow: floats in [0.9, 1.1) (now and
/// then negative), integers and bools from their whole range.
fn fill_moderate(mem: &mut HostMemory, r: &mut Rng, b: &Base) {
    let data: Vec<u8> = (0..b.nelem)
        .flat_map(|_| {
            let bits = r.next();
            let s = if b.dtype.is_float() {
                let x = 0.9 + (bits >> 11) as f64 / (1u64 << 53) as f64 * 0.2;
                Scalar::F64(if bits.is_multiple_of(5) { -x } else { x }).cast(b.dtype)
            } else {
                Scalar::from_payload(b.dtype, bits)
            };
            bytes(s)
        })
        .collect();
    mem.ensure(b).unwrap().write_bytes(0, &data).unwrap();
}

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
    let mut cases = 0u64;
    for &op in Opcode::ALL.iter().filter(|o| o.kind() == Kind::Reduce) {
        for (d, to) in input_dtypes(op) {
            for (li, &(shape, stride, start, axis)) in layouts.iter().enumerate() {
                if li > 0 && ![DType::F32, DType::F64, DType::I32, DType::U8, DType::Bool].contains(&d) {
                    continue;
                }
                let mut rshape = shape.to_vec();
                rshape.remove(axis);
                let x = base(1, d, 12000);
                let out = base(2, to, rshape.iter().product::<usize>() as u64);
                let (mut a, mut b) = twin(&[], 0);
                fill_moderate(&mut a, &mut Rng(3 + cases), &x);
                fill_moderate(&mut b, &mut Rng(3 + cases), &x);
                let xv = vm_core::View::new(x, start, shape, stride).unwrap();
                let ov = vm_core::View::contiguous(out, 0, &rshape).unwrap();
                let batch = [Instruction::new(op, [ov.into(), xv.into(), Scalar::I64(axis as i64).into()])];
                let how = if matches!(op, Opcode::AddReduce | Opcode::MultiplyReduce) {
                    Agree::Relative(vm_core::testing::Tolerance::REORDERED)
                } else {
                    Agree::Exact
                };
                compare_within(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d} layout {li}"), how);
                release(&mut cl, &mut a, &[x, out]);
                cases += 1;
            }
        }
    }
    let s = cl.stats();
    assert_eq!(s.fallback_instructions, 0, "{s:?}");
    assert!(s.launches > cases, "two-stage trees launch twice: {s:?}");
}

#[test]
fn a_float_sum_of_a_tree_reduction_is_deterministic() {
    let Some(mut cl) = engine() else { return };
    let (x, out) = (base(1, DType::F32, 100_000), base(2, DType::F32, 1));
    let mut sums = Vec::new();
    for _ in 0..3 {
        let mut mem = HostMemory::new();
        fill_moderate(&mut mem, &mut Rng(5), &x);
        let ov = vm_core::View::contiguous(out, 0, &[]).unwrap();
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

#[test]
fn every_scan_and_dtype_along_every_axis_matches_interp() {
    let Some(mut cl) = engine() else { return };
    let shape = [3usize, 5, 4];
    let mut cases = 0u64;
    for &op in Opcode::ALL.iter().filter(|o| o.kind() == Kind::Accumulate) {
        for (d, _) in input_dtypes(op) {
            for axis in 0..3 {
                let (x, out) = (base(1, d, 60), base(2, d, 60));
                let (mut a, mut b) = twin(&[x], 21 + cases);
                let xv = vm_core::View::new(x, 59, &shape, &[-20, -4, -1]).unwrap();
                let ov = vm_core::View::new(out, 0, &shape, &[1, 3, 15]).unwrap();
                let ax: Operand = Scalar::I64(axis as i64).into();
                let batch = [Instruction::new(op, [ov.into(), xv.clone().into(), ax.clone()])];
                compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d} axis {axis}"));
                // In place, through the same view.
                let batch = [Instruction::new(op, [xv.clone().into(), xv.into(), ax])];
                compare(&mut cl, &batch, &mut a, &mut b, &[x], &format!("{op} {d} axis {axis} in place"));
                release(&mut cl, &mut a, &[x, out]);
                cases += 1;
            }
        }
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
    assert!(cases > 40);
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
        let srcv = vm_core::View::new(src, 59, &[2, 5], &[-20, -3]).unwrap();
        let idxv = vm_core::View::new(index, 0, &[7, 3], &[3, 1]).unwrap();
        let outv = vm_core::View::new(out, 1, &[7, 3], &[1, 10]).unwrap();
        let batch = [Instruction::new(Opcode::Gather, [outv.clone().into(), srcv.clone().into(), idxv.clone().into()])];
        compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("gather {d} by {id}"));
        let batch =
            [Instruction::new(Opcode::Scatter, [srcv.clone().into(), outv.clone().into(), idxv.clone().into()])];
        compare(&mut cl, &batch, &mut a, &mut b, &[src], &format!("scatter {d} by {id}"));
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
            base(1, DType::F64, n as u64),
            base(2, DType::F64, n as u64),
            base(3, DType::F64, 1),
            base(4, DType::F64, 1),
            base(5, DType::F64, n as u64),
        );
        let scalar = |b: Base| Operand::View(vm_core::View::contiguous(b, 0, &[]).unwrap());
        let (mut a, mut b) = twin(&[], 0);
        fill_moderate(&mut a, &mut Rng(8), &x);
        fill_moderate(&mut b, &mut Rng(8), &x);
        let zero: Operand = Scalar::I64(0).into();
        let batch = [
            Instruction::new(Opcode::Multiply, [whole(t), whole(x), whole(x)]),
            Instruction::new(Opcode::AddReduce, [scalar(s), whole(t), zero.clone()]),
            Instruction::new(Opcode::Free, [whole(t)]),
            Instruction::new(Opcode::MaximumReduce, [scalar(u), whole(x), zero]),
            Instruction::new(Opcode::Exp, [whole(v), whole(x)]),
            Instruction::new(Opcode::Add, [whole(x), whole(x), Scalar::F64(1.0).into()]),
        ];
        let how = Agree::Relative(vm_core::testing::Tolerance::REORDERED);
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
    let settings = vm_core::Settings::from_pairs("opencl", &[("device", toml::Value::String("no-such-device".into()))]);
    let e = match (vm_opencl::IMPLEMENTATION.construct)(&settings, None) {
        Err(e) => e,
        Ok(_) => panic!("a device named no-such-device was found"),
    };
    assert!(e.to_string().contains("no OpenCL device matches"), "{e}");
}

#[test]
fn every_reduction_and_dtype_along_every_axis_matches_interp() {
    let Some(mut cl) = engine() else { return };
    let shape = [3usize, 5, 4];
    let mut cases = 0u64;
    for &op in Opcode::ALL.iter().filter(|o| o.kind() == Kind::Reduce) {
        for (d, to) in input_dtypes(op) {
            for axis in 0..3 {
                let mut rshape = shape.to_vec();
                rshape.remove(axis);
                let x = base(1, d, 60);
                let out = base(2, to, rshape.iter().product::<usize>() as u64);
                let (mut a, mut b) = twin(&[x], 5 + cases);
                let xv = vm_core::View::new(x, 59, &shape, &[-20, -4, -1]).unwrap();
                let ov = vm_core::View::contiguous(out, 0, &rshape).unwrap();
                let batch = [Instruction::new(op, [ov.into(), xv.into(), Scalar::I64(axis as i64).into()])];
                compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d} axis {axis}"));
                release(&mut cl, &mut a, &[x, out]);
                cases += 1;
            }
        }
    }
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
    assert!(cases > 60);
}

/// The number after "instruction " in an error's text.
fn instruction_index(e: &vm_core::Error) -> Option<usize> {
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
                assert!(matches!(err, vm_core::Error::Execution(_)), "{name}: {err}");
                assert_eq!(instruction_index(&err), Some(position), "{name}, scatter {scatter}: {err}");
            }
            release(&mut cl, &mut memory(), &[src, index, out, x]);
        }
    }
}
