//! Every element-wise opcode and dtype (and every cast, range and random) on opencl against
//! interp: what the device code implements runs on the device, the rest on the fallback, and
//! both must give interp's bits.

mod common;

use common::*;
use vm_core::opcode::{DTypeSet, TypeRule};
use vm_core::{DType, Instruction, Kind, Opcode, Operand, Scalar};

const N: u64 = 97;

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
            compare(&mut cl, &[Instruction::new(op, ops.clone())], &mut a, &mut b, &[out], &format!("{op} {d}"));
            // With a constant second operand.
            if kind == Kind::Binary {
                let mut r = Rng(99 + cases);
                let k = Operand::Const(value(&mut r, d));
                let batch = [Instruction::new(op, [whole(out), whole(x), k])];
                compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("{op} {d} with constant"));
            }
            release(&mut cl, &mut a, &[x, y, c, out]);
            cases += 1;
        }
    }
    assert!(cases > 100);
    assert!(cl.stats().launches > 50, "{:?}", cl.stats());
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

#[test]
fn reductions_and_scans_go_to_the_fallback_and_match() {
    let Some(mut cl) = engine() else { return };
    for (i, op) in [Opcode::AddReduce, Opcode::MaximumReduce, Opcode::AddAccumulate].into_iter().enumerate() {
        let (x, t, out) = (base(1, DType::I32, N), base(2, DType::I32, N), base(3, DType::I32, N));
        let n = if op.kind() == Kind::Reduce { 1 } else { N };
        let out = vm_core::Base { nelem: n, ..out };
        let out_view = if n == 1 { Operand::View(vm_core::View::contiguous(out, 0, &[]).unwrap()) } else { whole(out) };
        let (mut a, mut b) = twin(&[x], 11 + i as u64);
        let batch = [
            Instruction::new(Opcode::Multiply, [whole(t), whole(x), Scalar::I32(3).into()]),
            Instruction::new(op, [out_view, whole(t), Scalar::I64(0).into()]),
        ];
        compare(&mut cl, &batch, &mut a, &mut b, &[out, t], &format!("{op}"));
        release(&mut cl, &mut a, &[x, t, out]);
    }
    assert!(cl.stats().fallback_instructions >= 3);
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
