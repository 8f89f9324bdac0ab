//! Batches of one structure run again and again, as a frontend's loop submits them: the engine
//! binds the kernels it built for the first to the later ones (other bases, other constants,
//! other history of deferred bases). Every batch is compared with interp.

mod common;

use common::*;
use vm_interp::Interp;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

fn sync(b: Base) -> Instruction {
    Instruction::new(Opcode::Sync, [whole(b)])
}

/// `o = a * c1 + c2` over a 2-d view of `a`, `s = sum(o)`, with the temporary freed.
fn scaled(a: Base, t: Base, o: Base, s: Base, c1: f64, c2: f64, dtype: DType) -> Vec<Instruction> {
    let grid = |b: Base| Operand::View(View::contiguous(b, 0, &[6, 10]).unwrap());
    let c = |x: f64| Operand::Const(Scalar::F64(x).cast(dtype));
    vec![
        Instruction::new(Opcode::Multiply, [grid(t), grid(a), c(c1)]),
        Instruction::new(Opcode::Add, [grid(o), grid(t), c(c2)]),
        Instruction::new(Opcode::AddReduce, [view(s, 0, &[], &[]), whole(o), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Free, [whole(t)]),
        sync(o),
        sync(s),
    ]
}

#[test]
fn repeated_structures_rebind_bases_and_constants() {
    for threads in [1, 2] {
        let mut cpu = engine(threads);
        let mut interp = Interp::new(None);
        let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
        for i in 0..8u64 {
            // Fresh bases on most iterations, the same ones on some; f32 every third time.
            let dtype = if i % 3 == 2 { DType::F32 } else { DType::F64 };
            let shift = if i % 4 == 3 { 0 } else { 10 * i };
            let b = |id: u64, n: usize| base(id + shift, dtype, n);
            let (a, t, o, s) = (b(1, 60), b(2, 60), b(3, 60), b(4, 1));
            for m in [&mut m1, &mut m2] {
                fill(m, &a, i + 1, true);
            }
            let batch = scaled(a, t, o, s, 0.5 + i as f64, -(i as f64), dtype);
            cpu.execute(&batch, &mut m1).unwrap();
            interp.execute(&batch, &mut m2).unwrap();
            compare(&m1, &m2, &[a, o, s], &format!("iteration {i}, {threads} threads"));
            let free: Vec<Instruction> = [a, o, s].map(|x| Instruction::new(Opcode::Free, [whole(x)])).into();
            cpu.execute(&free, &mut m1).unwrap();
            interp.execute(&free, &mut m2).unwrap();
        }
    }
}

/// One term batch of the Leibniz series: `k = range`, `terms = 1 / (4k + 1)`, `total += sum`;
/// `k` and `terms` stay alive (pure, so the engine may defer them) unless `free`.
fn leibniz(k: Base, terms: Base, total: Base, free: bool) -> Vec<Instruction> {
    let c = |x: f64| Operand::Const(Scalar::F64(x));
    let mut batch = vec![
        Instruction::new(Opcode::Range, [whole(k)]),
        Instruction::new(Opcode::Multiply, [whole(terms), whole(k), c(4.0)]),
        Instruction::new(Opcode::Add, [whole(terms), whole(terms), c(1.0)]),
        Instruction::new(Opcode::Divide, [whole(terms), c(1.0), whole(terms)]),
        Instruction::new(Opcode::AddReduce, [view(total, 0, &[], &[]), whole(terms), Scalar::I64(0).into()]),
        sync(total),
    ];
    if free {
        batch.push(Instruction::new(Opcode::Free, [whole(k)]));
        batch.push(Instruction::new(Opcode::Free, [whole(terms)]));
    }
    batch
}

#[test]
fn deferred_bases_change_the_kernel_of_a_repeated_structure() {
    let mut cpu = engine(2);
    let mut interp = Interp::new(None);
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    let total = base(9, DType::F64, 1);
    for i in 0..6u64 {
        // Kept alive: deferred from the second batch on (the engine's history decides), then
        // read, which replays them; freed on odd iterations.
        let (k, terms) = (base(100 + i, DType::F64, 1000), base(200 + i, DType::F64, 1000));
        let batch = leibniz(k, terms, total, i % 2 == 1);
        cpu.execute(&batch, &mut m1).unwrap();
        interp.execute(&batch, &mut m2).unwrap();
        compare(&m1, &m2, &[total], &format!("iteration {i}"));
        if i % 2 == 0 {
            let read = vec![sync(terms), Instruction::new(Opcode::Free, [whole(k)])];
            cpu.execute(&read, &mut m1).unwrap();
            interp.execute(&read, &mut m2).unwrap();
            compare(&m1, &m2, &[terms, total], &format!("iteration {i}, the deferred terms"));
            let free = vec![Instruction::new(Opcode::Free, [whole(terms)])];
            cpu.execute(&free, &mut m1).unwrap();
            interp.execute(&free, &mut m2).unwrap();
        }
    }
}

#[test]
fn reductions_of_a_cube_along_each_axis_are_different_structures() {
    // The operands of a reduction along axis 0, 1 or 2 of a cube have the same layouts; only
    // the axis constant tells the batches apart.
    let mut cpu = engine(2);
    let mut interp = Interp::new(None);
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    for (i, axis) in [0i64, 1, 2, 1, 0, 2, 2].into_iter().enumerate() {
        let shift = 10 * i as u64;
        let (a, t, s) =
            (base(1 + shift, DType::F32, 64), base(2 + shift, DType::F32, 64), base(3 + shift, DType::F32, 16));
        for m in [&mut m1, &mut m2] {
            fill(m, &a, i as u64 + 1, true);
        }
        let cube = |b: Base| Operand::View(View::contiguous(b, 0, &[4, 4, 4]).unwrap());
        let batch = vec![
            Instruction::new(Opcode::Multiply, [cube(t), cube(a), Scalar::F32(2.0).into()]),
            Instruction::new(
                Opcode::AddReduce,
                [Operand::View(View::contiguous(s, 0, &[4, 4]).unwrap()), cube(t), Scalar::I64(axis).into()],
            ),
            Instruction::new(Opcode::Free, [whole(t)]),
            sync(s),
        ];
        cpu.execute(&batch, &mut m1).unwrap();
        interp.execute(&batch, &mut m2).unwrap();
        compare(&m1, &m2, &[s], &format!("reduction {i} along axis {axis}"));
    }
}
