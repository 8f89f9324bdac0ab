//! Every element-wise opcode taking floats, on every special value of f32 and f64 (signed zeros,
//! infinities, NaNs, subnormals, the largest finite values: `vm_testkit::SpecialValues`),
//! against interp, bit for bit: the engine calls the interpreter's functions (`exp` and `log`:
//! `vm_math`'s, in both).

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode};
use vm_runtime::{Component, HostMemory};
use vm_testkit::SpecialValues;

#[test]
fn every_float_opcode_matches_interp_at_special_values() {
    for d in [DType::F32, DType::F64] {
        for threads in [1, 2] {
            let p = SpecialValues::new(d);
            let (mut a, mut b) = (HostMemory::new(), HostMemory::new());
            p.fill(&mut a).unwrap();
            p.fill(&mut b).unwrap();
            engine(threads).execute(&p.batch, &mut a).unwrap();
            vm_interp::Interp::new(None).execute(&p.batch, &mut b).unwrap();
            if let Err(e) = p.check(&a, &b, &|_| false, 0) {
                panic!("{threads} threads: {e}");
            }
        }
    }
}

/// Alone in a kernel over contiguous rows, `maximum` and `minimum` run in the vector loop: there
/// too two equal zeros give the first operand and a NaN wins (`fmax`/`fmin` have no vector
/// form and run the scalar code).
#[test]
fn maximum_and_minimum_alone_match_interp_at_special_values() {
    for d in [DType::F32, DType::F64] {
        let p = SpecialValues::new(d);
        for op in [Opcode::Maximum, Opcode::Minimum, Opcode::Fmax, Opcode::Fmin] {
            let batch: Vec<Instruction> =
                p.batch.iter().filter(|i| i.opcode == op || i.opcode == Opcode::Sync).cloned().collect();
            let (mut a, mut b) = (HostMemory::new(), HostMemory::new());
            p.fill(&mut a).unwrap();
            p.fill(&mut b).unwrap();
            engine(1).execute(&batch, &mut a).unwrap();
            vm_interp::Interp::new(None).execute(&batch, &mut b).unwrap();
            let out = p.bases.iter().find(|o| o.dtype == d && o.id.0 >= 10).unwrap();
            let (x, y) = (a.get(out.id).unwrap().bytes(), b.get(out.id).unwrap().bytes());
            let first = x.iter().zip(y).position(|(p, q)| p != q);
            assert_eq!(first, None, "{op} {d}: the first differing byte");
        }
    }
}

/// A float product multiplies in order, as interp (and NumPy) do, bit for bit: a running product
/// that overflows stays infinite (`1e30 * 1e30 * 1e-30` is inf in float32), and infinity times
/// a later zero is NaN; any other grouping (per-block partials, a float64 accumulator) gives a
/// finite number or zero. Whole arrays, along rows and down columns, fused with the producer.
#[test]
fn float_products_multiply_in_order_as_interp_does() {
    use vm_ir::{Base, Operand, Scalar};
    let (r, c) = (40, 130);
    for d in [DType::F32, DType::F64] {
        let big: f64 = if d == DType::F32 { 1e30 } else { 1e300 };
        // Pairs (big, 1/big) keep any order's product finite; two bigs in a row overflow a
        // running product, and a zero after them makes it NaN.
        let values: Vec<f64> = (0..r * c)
            .map(|i| match i % 7 {
                0 | 3 => big,
                1 | 4 => 1.0 / big,
                5 if i % 3 == 0 => big,
                6 if i % 11 == 0 => 0.0,
                _ => 1.5,
            })
            .collect();
        let (x, t) = (base(1, d, r * c), base(2, d, r * c));
        let (flat, down, along) = (base(3, d, 1), base(4, d, c), base(5, d, r));
        let reduce = |out: Operand, input: Operand, axis: i64| {
            Instruction::new(Opcode::MultiplyReduce, [out, input, Scalar::I64(axis).into()])
        };
        let grid = |b: Base| view(b, 0, &[r, c], &[c as i64, 1]);
        let batch = vec![
            Instruction::new(Opcode::Identity, [whole(t), whole(x)]),
            reduce(view(flat, 0, &[], &[]), whole(t), 0),
            reduce(whole(down), grid(t), 0),
            reduce(whole(along), grid(t), 1),
            reduce(view(flat, 0, &[], &[]), view(x, 0, &[r * c / 2], &[2]), 0),
        ];
        let run = |engine: &mut dyn Component| {
            let mut mem = HostMemory::new();
            let buf = mem.ensure(&x).unwrap();
            for (k, &v) in values.iter().enumerate() {
                match d {
                    DType::F32 => buf.as_mut_slice::<f32>()[k] = v as f32,
                    _ => buf.as_mut_slice::<f64>()[k] = v,
                }
            }
            // Each product alone after the copy, then all of them in one batch.
            let mut results = Vec::new();
            let alone = (1..batch.len()).map(|k| vec![batch[0].clone(), batch[k].clone()]);
            for b in alone.chain([batch.clone()]) {
                engine.execute(&b, &mut mem).unwrap();
                let bytes = |b: &Base| mem.get(b.id).map(|m| m.bytes().to_vec()).unwrap_or_default();
                results.push([flat, down, along].map(|b| bytes(&b)));
            }
            results
        };
        let want = run(&mut vm_interp::Interp::new(None));
        let first = |bytes: &[u8]| match d {
            DType::F32 => f64::from(f32::from_ne_bytes(bytes[..4].try_into().unwrap())),
            _ => f64::from_ne_bytes(bytes[..8].try_into().unwrap()),
        };
        assert!(first(&want[0][0]).is_nan(), "{d}: the data makes the whole product NaN");
        for threads in [1, 2] {
            assert_eq!(run(&mut engine(threads)), want, "{d}, {threads} threads");
        }
    }
}
