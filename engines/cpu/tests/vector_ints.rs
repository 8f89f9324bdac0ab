//! Integer arithmetic runs in the vector loop on lanes of its dtype (i8x16 to i64x2): wrapping
//! sums, differences and products, minimum and maximum (signed and unsigned), bitwise logic and
//! copies, with broadcast rows and constants, must match interp bit for bit for every integer
//! dtype and every length around the vectors' and the unrolled copies' sizes, values over the
//! whole range (so that sums and products wrap).

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar};

#[test]
fn integer_lanes_match_interp() {
    let dtypes = [DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::U32, DType::I64, DType::U64];
    for dtype in dtypes {
        for n in (1..=40).chain([63, 64, 65, 127, 1003]) {
            let (a, b, row, t, min, max, logic, copy) = (
                base(1, dtype, 2 * n),
                base(2, dtype, 2 * n),
                base(3, dtype, n + 1),
                base(4, dtype, 2 * n),
                base(5, dtype, 2 * n),
                base(6, dtype, 2 * n),
                base(7, dtype, 2 * n),
                base(8, dtype, 2 * n),
            );
            let two_rows = |x| view(x, 0, &[2, n], &[n as i64, 1]);
            // The same row for both rows: a broadcast along the outer axis, contiguous in the row.
            let broadcast_row = view(row, 0, &[2, n], &[0, 1]);
            // One element per row, broadcast along the row.
            let broadcast_in_row = view(row, 0, &[2, n], &[1, 0]);
            let three = Scalar::I64(3).cast(dtype);
            let batch = vec![
                Instruction::new(Opcode::Add, [two_rows(t), two_rows(a), broadcast_row.clone()]),
                Instruction::new(Opcode::Multiply, [two_rows(t), two_rows(t), two_rows(b)]),
                Instruction::new(Opcode::Subtract, [two_rows(t), two_rows(t), three.into()]),
                Instruction::new(Opcode::Minimum, [two_rows(min), two_rows(t), broadcast_in_row]),
                Instruction::new(Opcode::Negative, [two_rows(max), two_rows(b)]),
                Instruction::new(Opcode::Maximum, [two_rows(max), two_rows(max), two_rows(a)]),
                Instruction::new(Opcode::BitwiseXor, [two_rows(logic), two_rows(a), two_rows(b)]),
                Instruction::new(Opcode::Invert, [two_rows(copy), two_rows(b)]),
                Instruction::new(Opcode::BitwiseAnd, [two_rows(logic), two_rows(logic), two_rows(copy)]),
                Instruction::new(Opcode::BitwiseOr, [two_rows(logic), two_rows(logic), broadcast_row]),
                Instruction::new(Opcode::Square, [two_rows(copy), two_rows(a)]),
                Instruction::new(Opcode::Identity, [two_rows(copy), two_rows(copy)]),
            ];
            for threads in [1, 2] {
                differential(
                    &batch,
                    &[a, b, row],
                    &[t, min, max, logic, copy],
                    threads,
                    false,
                    &format!("{dtype} n={n}"),
                );
            }
            // Each operation alone (a kernel vectorises only when all its operations do: the
            // batch above runs scalar where one of them has no lanes of the dtype).
            if !matches!(n, 1 | 2 | 15 | 16 | 17 | 33 | 65 | 1003) {
                continue;
            }
            let all = [a, b, row, t, min, max, logic, copy];
            for instr in batch {
                let what = format!("{} {dtype} n={n}", instr.opcode);
                differential(&[instr], &all, &[t, min, max, logic, copy], 1, false, &what);
            }
        }
    }
}
