//! Constant writes into rows, columns, diagonals and elements of an array just computed are
//! folded into its kernel as selects on position masks: compared with interp, folded or not,
//! and the fused shape checked through the profile.

mod common;

use common::*;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar, View};

fn v(b: Base, start: i64, shape: &[usize], stride: &[i64]) -> Operand {
    Operand::View(View::new(b, start, shape, stride).unwrap())
}

fn whole_view(b: Base, shape: &[usize]) -> Operand {
    Operand::View(View::contiguous(b, 0, shape).unwrap())
}

fn fill(dst: Operand, value: f64) -> Instruction {
    Instruction::new(Opcode::Identity, [dst, Operand::Const(Scalar::F64(value))])
}

/// `x = a + b` (6 x 7), the fills `writes`, then `y = x * 2` and `x` freed.
fn program(writes: Vec<Instruction>) -> (Vec<Instruction>, [Base; 4]) {
    let shape = [6, 7];
    let (a, b, x, y) =
        (base(1, DType::F64, 42), base(2, DType::F64, 42), base(3, DType::F64, 42), base(4, DType::F64, 42));
    let mut batch =
        vec![Instruction::new(Opcode::Add, [whole_view(x, &shape), whole_view(a, &shape), whole_view(b, &shape)])];
    batch.extend(writes);
    batch.push(Instruction::new(
        Opcode::Multiply,
        [whole_view(y, &shape), whole_view(x, &shape), Operand::Const(Scalar::F64(2.0))],
    ));
    batch.push(Instruction::new(Opcode::Free, [whole_view(x, &shape)]));
    (batch, [a, b, x, y])
}

#[test]
fn rows_columns_diagonals_and_elements_fold_into_the_producer() {
    let x = base(3, DType::F64, 42);
    let cases: Vec<(&str, Vec<Instruction>)> = vec![
        ("main diagonal", vec![fill(v(x, 0, &[6], &[8]), 1.0)]),
        ("diagonal above", vec![fill(v(x, 1, &[5], &[8]), -1.0)]),
        ("diagonal part", vec![fill(v(x, 8, &[3], &[8]), 5.0)]),
        ("row", vec![fill(v(x, 14, &[7], &[1]), 3.0)]),
        ("row part", vec![fill(v(x, 16, &[3], &[1]), 3.0)]),
        ("column", vec![fill(v(x, 3, &[6], &[7]), 4.0)]),
        ("element", vec![fill(v(x, 40, &[], &[]), 9.0)]),
        (
            "border, like a stencil's boundary",
            vec![
                fill(v(x, 0, &[6], &[7]), -2.0),
                fill(v(x, 6, &[6], &[7]), -2.0),
                fill(v(x, 35, &[7], &[1]), -2.0),
                fill(v(x, 0, &[7], &[1]), 40.0),
            ],
        ),
    ];
    for (what, writes) in cases {
        let (batch, [a, b, x, y]) = program(writes);
        let p = differential(&batch, &[a, b], &[a, b, y], 2, false, what);
        // A range per axis the write names, then one kernel, where x is contracted (never
        // written to memory) with the masks.
        assert!(p.kernels <= 3, "{what}: {} kernels", p.kernels);
        assert!(p.contracted >= 2, "{what}: {} contracted", p.contracted);
        let _ = x;
    }
}

#[test]
fn walks_that_wrap_rows_or_leave_the_array_are_left_alone_and_still_right() {
    let x = base(3, DType::F64, 42);
    let cases: Vec<(&str, Vec<Instruction>)> = vec![
        // (0,5), (1,6), then (2,0): not a diagonal of the 6 x 7 array.
        ("wrapping walk", vec![fill(v(x, 5, &[3], &[8]), 1.0)]),
        ("stride of two", vec![fill(v(x, 0, &[4], &[2]), 1.0)]),
        ("2-d block", vec![fill(v(x, 8, &[2, 2], &[7, 1]), 1.0)]),
    ];
    for (what, writes) in cases {
        let (batch, [a, b, _, y]) = program(writes);
        let p = differential(&batch, &[a, b], &[a, b, y], 2, false, what);
        assert!(p.kernels >= 3, "{what}: the write runs alone ({} kernels)", p.kernels);
    }
}

#[test]
fn the_diagonal_of_a_cube_folds() {
    let shape = [4, 4, 4];
    let (a, x, y) = (base(1, DType::F64, 64), base(3, DType::F64, 64), base(4, DType::F64, 64));
    let batch = vec![
        Instruction::new(Opcode::Sqrt, [whole_view(x, &shape), whole_view(a, &shape)]),
        fill(v(x, 0, &[4], &[21]), 0.5),
        Instruction::new(Opcode::Add, [whole_view(y, &shape), whole_view(x, &shape), whole_view(x, &shape)]),
        Instruction::new(Opcode::Free, [whole_view(x, &shape)]),
    ];
    let p = differential(&batch, &[a], &[a, y], 1, false, "cube diagonal");
    assert_eq!(p.kernels, 2, "one range, one kernel");
}

#[test]
fn positions_fill_vectors_lane_by_lane() {
    // A leibnitz-like kernel over odd lengths (vector loop, then the scalar tail) in many
    // blocks, f64 and f32, with positions past f32's exact integers (2^24) for f32.
    use vm_ir::Kind;
    for (dtype, n) in [(DType::F64, 1001usize), (DType::F32, 999), (DType::F32, (1 << 24) + 37)] {
        let (k, t, s) = (base(1, dtype, n), base(2, dtype, n), base(3, dtype, 1));
        let c = |x: f64| Operand::Const(Scalar::F64(x).cast(dtype));
        let batch = vec![
            Instruction::new(Opcode::Range, [whole_view(k, &[n])]),
            Instruction::new(Opcode::Multiply, [whole_view(t, &[n]), whole_view(k, &[n]), c(4.0)]),
            Instruction::new(Opcode::Add, [whole_view(t, &[n]), whole_view(t, &[n]), c(1.0)]),
            Instruction::new(Opcode::Divide, [whole_view(t, &[n]), c(1.0), whole_view(t, &[n])]),
            Instruction::new(
                Opcode::AddReduce,
                [
                    Operand::View(View::new(s, 0, &[], &[]).unwrap()),
                    whole_view(t, &[n]),
                    Operand::Const(Scalar::I64(0)),
                ],
            ),
            Instruction::new(Opcode::Free, [whole_view(t, &[n])]),
        ];
        assert_eq!(Opcode::Range.kind(), Kind::Range);
        // An f32 sum of 2^24 terms depends on its order far beyond any tolerance: there only
        // the positions are compared.
        let compared: &[Base] = if n > 1 << 24 { &[k] } else { &[k, s] };
        differential(&batch, &[], compared, 2, false, &format!("range of {n} {dtype}"));
        // The positions exactly, as the element type rounds them.
        let mut mem = vm_runtime::HostMemory::new();
        let mut synced = batch.clone();
        synced.push(Instruction::new(Opcode::Sync, [whole_view(k, &[n])]));
        vm_runtime::Component::execute(&mut engine(2), &synced, &mut mem).unwrap();
        let buf = mem.get(k.id).unwrap();
        let wrong = match dtype {
            DType::F32 => buf.as_slice::<f32>().iter().enumerate().position(|(i, &x)| x != i as f32),
            _ => buf.as_slice::<f64>().iter().enumerate().position(|(i, &x)| x != i as f64),
        };
        assert_eq!(wrong, None, "range of {n} {dtype}");
    }
}
