//! Every built-in opcode on every dtype its type rule allows, against the reference `interp`,
//! with one and with three threads, on full-range and on small values.

mod common;

use common::*;
use vm_ir::opcode::TypeRule;
use vm_ir::{Base, DType, Instruction, Kind, Opcode, Operand, Scalar};
use vm_runtime::HostMemory;

const SHAPE: [usize; 2] = [13, 17];

fn m(b: Base) -> Operand {
    view(b, 0, &SHAPE, &[17, 1])
}

fn input_dtypes(op: Opcode) -> Vec<(DType, DType)> {
    // (output dtype, input dtype)
    match op.type_rule() {
        TypeRule::Same(set) => set.dtypes().map(|d| (d, d)).collect(),
        TypeRule::ToBool(set) => set.dtypes().map(|d| (DType::Bool, d)).collect(),
        TypeRule::ToPosition(set) => set.dtypes().map(|d| (DType::I64, d)).collect(),
        TypeRule::Cast => DType::ALL.iter().flat_map(|&o| DType::ALL.iter().map(move |&i| (o, i))).collect(),
        TypeRule::Generate(set) => set.dtypes().map(|d| (d, d)).collect(),
        TypeRule::Select | TypeRule::Indexed => DType::ALL.iter().map(|&d| (d, d)).collect(),
        TypeRule::Any => vec![(DType::F64, DType::F64)],
    }
}

/// Batches exercising `op` with output dtype `o` and input dtype `i`; bases 1.. are inputs
/// (filled), 100.. outputs.
fn cases(op: Opcode, o: DType, i: DType) -> Vec<(Vec<Instruction>, Vec<Base>, Vec<Base>)> {
    let n = SHAPE[0] * SHAPE[1];
    let (a, b, c) = (base(1, i, n), base(2, i, n), base(3, DType::Bool, n));
    let out = base(100, o, n);
    let one = |ins: Instruction, init: Vec<Base>| vec![(vec![ins], init, vec![out])];
    match op.kind() {
        Kind::Unary => one(Instruction::new(op, [m(out), m(a)]), vec![a]),
        Kind::Binary => {
            let k = Scalar::I64(3).cast(i);
            vec![
                (vec![Instruction::new(op, [m(out), m(a), m(b)])], vec![a, b], vec![out]),
                (vec![Instruction::new(op, [m(out), m(a), k.into()])], vec![a], vec![out]),
                (vec![Instruction::new(op, [m(out), k.into(), m(b)])], vec![b], vec![out]),
                // Broadcast a row and a column.
                (
                    vec![Instruction::new(op, [m(out), view(a, 0, &SHAPE, &[0, 1]), view(b, 5, &SHAPE, &[1, 0])])],
                    vec![a, b],
                    vec![out],
                ),
            ]
        }
        Kind::Select => one(Instruction::new(op, [m(out), m(c), m(a), m(b)]), vec![a, b, c]),
        Kind::Reduce | Kind::Accumulate => (0..2)
            .map(|axis| {
                let r = if op.kind() == Kind::Reduce {
                    let len = SHAPE[1 - axis];
                    (base(101, o, len), view(base(101, o, len), 0, &[len], &[1]))
                } else {
                    (out, m(out))
                };
                (vec![Instruction::new(op, [r.1, m(a), Scalar::I64(axis as i64).into()])], vec![a], vec![r.0])
            })
            .chain(std::iter::once({
                // A full reduction of a reversed 1-d view.
                let s = base(102, o, 1);
                let ins = Instruction::new(
                    op,
                    [view(s, 0, &[], &[]), view(a, n as i64 - 1, &[n], &[-1]), Scalar::I64(0).into()],
                );
                if op.kind() == Kind::Reduce { (vec![ins], vec![a], vec![s]) } else { (vec![], vec![], vec![]) }
            }))
            .filter(|c| !c.0.is_empty())
            .collect(),
        Kind::Sort => {
            let mut cases: Vec<_> = (0..2)
                .map(|axis| (vec![Instruction::new(op, [m(out), m(a), Scalar::I64(axis).into()])], vec![a], vec![out]))
                .collect();
            if op == Opcode::Sort {
                // In place.
                cases.push((vec![Instruction::new(op, [m(a), m(a), Scalar::I64(1).into()])], vec![a], vec![a]));
            }
            cases
        }
        Kind::Search => {
            // The keys of `b` in the first row of `a` sorted, and in `a`'s column as it is.
            let row = view(a, 0, &[SHAPE[1]], &[1]);
            let sorted = Instruction::new(Opcode::Sort, [row.clone(), row.clone(), Scalar::I64(0).into()]);
            vec![
                (vec![sorted, Instruction::new(op, [m(out), row, m(b)])], vec![a, b], vec![out]),
                (
                    vec![Instruction::new(op, [m(out), view(a, 2, &[SHAPE[0]], &[SHAPE[1] as i64]), m(b)])],
                    vec![a, b],
                    vec![out],
                ),
            ]
        }
        Kind::Range => one(Instruction::new(op, [m(out)]), vec![]),
        Kind::Random => one(Instruction::new(op, [m(out), Scalar::U64(42).into(), Scalar::U64(1000).into()]), vec![]),
        Kind::Gather | Kind::Scatter => {
            let idx = base(4, DType::I32, n);
            let batch = vec![
                // idx = (range * 7) % n, computed by the engines themselves.
                Instruction::new(Opcode::Range, [whole(idx)]),
                Instruction::new(Opcode::Multiply, [whole(idx), whole(idx), Scalar::I32(7).into()]),
                Instruction::new(Opcode::Remainder, [whole(idx), whole(idx), Scalar::I32(n as i32 - 3).into()]),
                Instruction::new(op, [m(out), m(a), view(idx, 0, &SHAPE, &[17, 1])]),
            ];
            // The same with a dense i64 index over dense views (gather's fast path), and an
            // output that is its own source.
            let idx64 = base(5, DType::I64, SHAPE.iter().product());
            let dense = vec![
                Instruction::new(Opcode::Range, [whole(idx64)]),
                Instruction::new(Opcode::Multiply, [whole(idx64), whole(idx64), Scalar::I64(5).into()]),
                Instruction::new(Opcode::Remainder, [whole(idx64), whole(idx64), Scalar::I64(n as i64 - 1).into()]),
                Instruction::new(op, [m(out), m(a), m(idx64)]),
                Instruction::new(op, [m(a), m(a), m(idx64)]),
            ];
            vec![(batch, vec![a], vec![out, idx]), (dense, vec![a], vec![out, a, idx64])]
        }
        Kind::System | Kind::Nothing => {
            let ops: Vec<Operand> = if op == Opcode::None { vec![] } else { vec![whole(a)] };
            vec![(
                vec![Instruction::new(Opcode::Sqrt, [whole(b), whole(a)]), Instruction::new(op, ops)],
                vec![a],
                vec![a, b],
            )]
        }
        Kind::Extension => vec![],
    }
}

#[test]
fn every_opcode_and_dtype_matches_interp() {
    let mut count = 0;
    for &op in Opcode::ALL {
        for (o, i) in input_dtypes(op) {
            for (batch, init, outs) in cases(op, o, i) {
                let mut bases = init.clone();
                bases.extend(outs);
                for threads in [1, 3] {
                    for small in [false, true] {
                        let what = format!("{op} {o} <- {i} ({threads} threads, small {small}): {batch:?}");
                        differential(&batch, &init, &bases, threads, small, &what);
                        count += 1;
                    }
                }
            }
        }
    }
    assert!(count > 1000, "{count} cases");
}

#[test]
fn gather_out_of_range_is_an_execution_error() {
    let (out, src, idx) = (base(1, DType::F64, 4), base(2, DType::F64, 4), base(3, DType::I64, 4));
    let mut mem = HostMemory::new();
    mem.ensure(&idx).unwrap().as_mut_slice::<i64>().copy_from_slice(&[0, 1, 4, 2]);
    let batch = vec![Instruction::new(Opcode::Gather, [whole(out), whole(src), whole(idx)])];
    let e = vm_runtime::Component::execute(&mut engine(2), &batch, &mut mem).unwrap_err();
    assert!(matches!(e, vm_ir::Error::Execution(_)), "{e}");
}
