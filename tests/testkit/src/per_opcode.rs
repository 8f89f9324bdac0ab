//! One small program per built-in opcode (system opcodes included), on 5 x 7 views that
//! cross the block boundaries of a distributed base: a transposed and a shifted input,
//! reductions and scans along both axes, gather and scatter with in-range indices.

use crate::fixtures::random_fill;
use crate::program::{Program, Step, sync_all};
use vm_ir::opcode::{DTypeSet, TypeRule};
use vm_ir::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Scalar, View};

/// The first of f64, i32, u8 and bool that `set` holds.
fn pick(set: DTypeSet) -> DType {
    [DType::F64, DType::I32, DType::U8, DType::Bool].into_iter().find(|&d| set.contains(d)).expect("nonempty set")
}

/// One program per built-in opcode but the extension methods, with the opcode it tests. Every
/// base is filled by `random` in the program, so the programs have no host inputs.
pub fn opcode_programs() -> Vec<(Opcode, Program)> {
    let mut out = Vec::new();
    for &op in Opcode::ALL {
        let mut next = 1u64;
        let mut base = |dtype: DType, n: u64| {
            next += 1;
            Base { id: BaseId(next), dtype, nelem: n }
        };
        let (in_t, out_t) = match op.type_rule() {
            TypeRule::Same(s) => (pick(s), pick(s)),
            TypeRule::ToBool(s) => (pick(s), DType::Bool),
            TypeRule::ToPosition(s) => (pick(s), DType::I64),
            TypeRule::Cast => (DType::F64, DType::I16),
            TypeRule::Generate(_) => (DType::F32, DType::F32),
            _ => (DType::F64, DType::F64),
        };
        let (a, b, c) = (base(in_t, 35), base(in_t, 40), base(DType::Bool, 35));
        let o = base(out_t, 37);
        let transposed = View::new(a, 0, &[5, 7], &[1, 5]).unwrap();
        let shifted = View::new(b, 3, &[5, 7], &[7, 1]).unwrap();
        let out_view = View::new(o, 2, &[5, 7], &[7, 1]).unwrap();
        let mut batch = vec![random_fill(a, 1), random_fill(b, 2), random_fill(c, 3), random_fill(o, 4)];
        let v = |x: &View| Operand::View(x.clone());
        match op.kind() {
            Kind::Unary => batch.push(Instruction::new(op, [v(&out_view), v(&transposed)])),
            Kind::Binary => batch.push(Instruction::new(op, [v(&out_view), v(&transposed), v(&shifted)])),
            Kind::Select => {
                let cond = View::contiguous(c, 0, &[5, 7]).unwrap();
                batch.push(Instruction::new(op, [v(&out_view), v(&cond), v(&transposed), v(&shifted)]));
            }
            Kind::Reduce => {
                let r0 = View::new(o, 0, &[7], &[1]).unwrap();
                let r1 = View::new(o, 30, &[5], &[-2]).unwrap();
                batch.push(Instruction::new(op, [v(&r0), v(&transposed), Scalar::I64(0).into()]));
                batch.push(Instruction::new(op, [v(&r1), v(&shifted), Scalar::I64(1).into()]));
            }
            Kind::Accumulate => {
                batch.push(Instruction::new(op, [v(&out_view), v(&transposed), Scalar::I64(1).into()]));
                let o2 = base(out_t, 35);
                let ov = View::contiguous(o2, 0, &[5, 7]).unwrap();
                batch.push(Instruction::new(op, [v(&ov), v(&shifted), Scalar::I64(0).into()]));
            }
            Kind::Sort => {
                batch.push(Instruction::new(op, [v(&out_view), v(&transposed), Scalar::I64(1).into()]));
                let o2 = base(out_t, 35);
                let ov = View::contiguous(o2, 0, &[5, 7]).unwrap();
                batch.push(Instruction::new(op, [v(&ov), v(&shifted), Scalar::I64(0).into()]));
                if op == Opcode::Sort {
                    // In place.
                    let whole = View::contiguous(a, 0, &[5, 7]).unwrap();
                    batch.push(Instruction::new(op, [v(&whole), v(&whole), Scalar::I64(1).into()]));
                }
            }
            Kind::Search => {
                // Sorted values, then values in their drawn order (NumPy's positions either way).
                let line = View::contiguous(a, 0, &[35]).unwrap();
                batch.push(Instruction::new(Opcode::Sort, [v(&line), v(&line), Scalar::I64(0).into()]));
                batch.push(Instruction::new(op, [v(&out_view), v(&line), v(&shifted)]));
                let o2 = base(out_t, 35);
                let ov = View::contiguous(o2, 0, &[5, 7]).unwrap();
                let column = View::new(b, 39, &[8], &[-4]).unwrap();
                batch.push(Instruction::new(op, [v(&ov), v(&column), v(&transposed)]));
            }
            Kind::Range => batch.push(Instruction::new(op, [v(&out_view)])),
            Kind::Random => {
                batch.push(Instruction::new(op, [v(&out_view), Scalar::U64(9).into(), Scalar::U64(5).into()]))
            }
            Kind::Gather | Kind::Scatter => {
                let idx = base(DType::U64, 12);
                let iv = View::contiguous(idx, 0, &[4, 3]).unwrap();
                batch.push(random_fill(idx, 5));
                batch.push(Instruction::new(Opcode::Remainder, [v(&iv), v(&iv), Scalar::U64(35).into()]));
                if op == Opcode::Gather {
                    let g = View::contiguous(o, 1, &[4, 3]).unwrap();
                    batch.push(Instruction::new(op, [v(&g), v(&transposed), v(&iv)]));
                } else {
                    let src = View::new(b, 39, &[4, 3], &[-3, -1]).unwrap();
                    let dst = View::new(o, 1, &[5, 7], &[7, 1]).unwrap();
                    batch.push(Instruction::new(op, [v(&dst), v(&src), v(&iv)]));
                }
            }
            Kind::System => {
                // The host copy must be current before a discard declares it authoritative.
                batch.push(Instruction::new(Opcode::Sync, [View::of_base(a).into()]));
                batch.push(Instruction::new(op, [v(&transposed)]));
            }
            Kind::Nothing => batch.push(Instruction::new(op, [])),
            Kind::Extension => continue,
        }
        // Every base the batch uses but the one `free` ends, synced at the end.
        let freed = (op == Opcode::Free).then_some(a.id);
        let mut bases: Vec<Base> = Vec::new();
        for w in batch.iter().flat_map(|i| i.views()) {
            if Some(w.base.id) != freed && !bases.contains(&w.base) {
                bases.push(w.base);
            }
        }
        let steps = vec![Step::Batch(batch), Step::Batch(sync_all(&bases))];
        out.push((op, Program { inputs: Vec::new(), bases, steps }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opcode_but_the_extensions_has_a_valid_program() {
        let programs = opcode_programs();
        let extensions = Opcode::ALL.iter().filter(|o| o.kind() == Kind::Extension).count();
        assert_eq!(programs.len() + extensions, Opcode::ALL.len());
        for (op, p) in &programs {
            assert!(p.instructions().any(|i| i.opcode == *op), "{op}");
            for batch in p.batches() {
                vm_ir::instr::validate_batch(batch).unwrap_or_else(|e| panic!("{op}: {e}"));
            }
        }
    }
}
