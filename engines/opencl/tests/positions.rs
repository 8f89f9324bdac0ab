//! `argmin_reduce` and `argmax_reduce` on the device against interp, exactly: every dtype, on
//! values with many ties (and for floats NaN, both zeros and infinities), in each form the code
//! generator has: one work item per output (short axes), a tree per output (long axes, many
//! outputs) and a two-stage tree (long axes, few outputs), on strided, reversed and broadcast
//! layouts. All of them run on the device.

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar, View};

#[test]
fn every_form_of_every_dtype_matches_interp_exactly() {
    let Some(mut cl) = engine() else { return };
    // (input shape, strides, start, axis)
    let layouts: [(&[usize], &[i64], i64, usize); 6] = [
        (&[4, 9], &[9, 1], 0, 1),          // short lines: one work item per output
        (&[9, 4], &[-4, -1], 35, 0),       // short, reversed, along the outer axis
        (&[6000], &[2], 1, 0),             // one long line: a two-stage tree
        (&[2, 3000], &[1, 2], 0, 1),       // two long strided lines: two-stage
        (&[12, 900], &[900, 1], 0, 1),     // many long lines: a tree each
        (&[3, 2000, 2], &[0, 2, 1], 0, 1), // broadcast along another axis
    ];
    let mut cases = 0;
    for (li, &(shape, stride, start, axis)) in layouts.iter().enumerate() {
        let mut rshape = shape.to_vec();
        rshape.remove(axis);
        let m = rshape.iter().product::<usize>();
        let inputs: Vec<_> = DType::ALL.iter().map(|&d| base(1 + u64::from(d.id()), d, 12001)).collect();
        let (mut a, mut b) = twin(&[], 0);
        for x in &inputs {
            let seed = 11 + li as u64 * 31 + u64::from(x.dtype.id());
            fill(&mut a, x, seed, Data::Ties).unwrap();
            fill(&mut b, x, seed, Data::Ties).unwrap();
        }
        let mut batch = Vec::new();
        let mut checks = Vec::new();
        let mut outputs = Vec::new();
        for (k, x) in inputs.iter().enumerate() {
            for (j, op) in [Opcode::ArgminReduce, Opcode::ArgmaxReduce].into_iter().enumerate() {
                let out = base(100 + 2 * k as u64 + j as u64, DType::I64, m);
                let xv = View::new(*x, start, shape, stride).unwrap();
                let ov = View::contiguous(out, 0, &rshape).unwrap();
                batch.push(Instruction::new(op, [ov.clone().into(), xv.into(), Scalar::I64(axis as i64).into()]));
                checks.push(Check::of(&ov, format!("{op} {} layout {li}", x.dtype), Agree::Exact));
                outputs.push(out);
                cases += 1;
            }
        }
        compare_checks(&mut cl, &batch, &mut a, &mut b, &checks);
        release(&mut cl, &mut a, &[inputs, outputs].concat());
    }
    assert_eq!(cases, 6 * 2 * DType::ALL.len());
    let s = cl.stats();
    assert_eq!(s.fallback_instructions, 0, "{s:?}");
}

#[test]
fn a_position_of_a_fused_temporary_reads_it_from_the_device() {
    let Some(mut cl) = engine() else { return };
    let (x, t, s, y) =
        (base(1, DType::F32, 5000), base(2, DType::F32, 5000), base(3, DType::I64, 1), base(4, DType::F32, 5000));
    let (mut a, mut b) = twin(&[x], 9);
    let scalar = View::contiguous(s, 0, &[]).unwrap();
    let batch = [
        Instruction::new(Opcode::Multiply, [whole(t), whole(x), whole(x)]),
        Instruction::new(Opcode::Negative, [whole(y), whole(x)]),
        Instruction::new(Opcode::ArgminReduce, [scalar.clone().into(), whole(t), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Free, [whole(t)]),
    ];
    compare_checks(&mut cl, &batch, &mut a, &mut b, &[Check::of(&scalar, "argmin of x * x".into(), Agree::Exact)]);
    release(&mut cl, &mut a, &[x, s, y]);
    assert_eq!(cl.stats().fallback_instructions, 0, "{:?}", cl.stats());
}
