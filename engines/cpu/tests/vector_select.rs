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
