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
