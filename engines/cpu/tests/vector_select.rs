//! Comparisons consumed only by selects run in the vector loop as lane masks: they must match
//! interp, with the scalar tail, for every comparison and both float dtypes.

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar};

#[test]
fn masked_selects_match_interp() {
    for dtype in [DType::F64, DType::F32] {
        for cmp in
            [Opcode::Less, Opcode::LessEqual, Opcode::Greater, Opcode::GreaterEqual, Opcode::Equal, Opcode::NotEqual]
        {
            let n = 1003;
            let (a, b, m, t, out) =
                (base(1, dtype, n), base(2, dtype, n), base(3, DType::Bool, n), base(4, dtype, n), base(5, dtype, n));
            let half = if dtype == DType::F64 { Scalar::F64(0.5) } else { Scalar::F32(0.5) };
            let batch = vec![
                Instruction::new(cmp, [whole(m), whole(a), whole(b)]),
                Instruction::new(Opcode::Multiply, [whole(t), whole(a), half.into()]),
                Instruction::new(Opcode::Select, [whole(out), whole(m), whole(t), whole(b)]),
                Instruction::new(Opcode::Free, [whole(m)]),
                Instruction::new(Opcode::Free, [whole(t)]),
            ];
            for threads in [1, 2] {
                let p = differential(&batch, &[a, b], &[out], threads, true, &format!("{cmp} {dtype}"));
                assert_eq!(p.contracted, 2, "the mask and the product stay in registers");
            }
        }
    }
}

/// Comparisons and logic on their masks stored as bools (`(a > x) & (b <= y)`, a mask kept and
/// also selecting) run in the vector loop and narrow the masks to bytes: every length around
/// the vectors' and the unrolled copies' sizes, both float dtypes, values with ties, NaN and
/// infinities.
#[test]
fn masks_stored_as_bools_match_interp() {
    use vm_interp::Interp;
    use vm_testkit::{Data, Program, Step};
    for dtype in [DType::F64, DType::F32] {
        for n in (1..=40).chain([63, 64, 65, 1003]) {
            let (a, b, m1, m2, m3, out, t) = (
                base(1, dtype, n),
                base(2, dtype, n),
                base(3, DType::Bool, n),
                base(4, DType::Bool, n),
                base(5, DType::Bool, n),
                base(6, DType::Bool, n),
                base(7, dtype, n),
            );
            let zero = if dtype == DType::F64 { Scalar::F64(0.0) } else { Scalar::F32(0.0) };
            let batch = vec![
                // One comparison stored.
                Instruction::new(Opcode::LessEqual, [whole(m1), whole(a), zero.into()]),
                // Logic over comparisons, only the result stored.
                Instruction::new(Opcode::Greater, [whole(m2), whole(a), whole(b)]),
                Instruction::new(Opcode::NotEqual, [whole(m3), whole(b), whole(b)]),
                Instruction::new(Opcode::LogicalOr, [whole(m3), whole(m2), whole(m3)]),
                Instruction::new(Opcode::Invert, [whole(m3), whole(m3)]),
                Instruction::new(Opcode::Equal, [whole(out), whole(a), whole(b)]),
                Instruction::new(Opcode::BitwiseXor, [whole(out), whole(out), whole(m3)]),
                // A stored mask that also selects.
                Instruction::new(Opcode::Select, [whole(t), whole(m1), whole(a), whole(b)]),
                Instruction::new(Opcode::Free, [whole(m2)]),
            ];
            let program = Program { inputs: vec![a, b], bases: vec![m1, m3, out, t], steps: vec![Step::Batch(batch)] };
            for threads in [1, 2] {
                let what = format!("{dtype} n={n} threads={threads}");
                if let Err(e) =
                    vm_testkit::differential(&mut engine(threads), &mut Interp::new(None), &program, Data::Ties, AGREE)
                {
                    panic!("{what}: {e}\n{}", program.listing());
                }
            }
        }
    }
}
