//! Batches over arrays large enough (over 1 MiB) for the engine's batch rewrites: the split of
//! full reductions of flattened temporaries and the reuse of large temporary buffers between
//! batches. Every batch is compared with interp.

mod common;

use common::*;
use vm_interp::Interp;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

fn tv(b: Base, shape: &[usize]) -> Operand {
    Operand::View(View::contiguous(b, 0, shape).unwrap())
}

/// One heat step as the frontend emits it: temporaries created and freed, the delta reduced
/// through a flat view of `|work - center|`.
fn heat_step(grid: Base, delta: Base, n: usize) -> Vec<Instruction> {
    heat_step_with_ids(grid, delta, n, 0)
}

/// [`heat_step`] with the temporaries' base ids shifted by `shift` (fresh bases per step, as a
/// frontend creates them when it records several steps in one batch).
fn heat_step_with_ids(grid: Base, delta: Base, n: usize, shift: u64) -> Vec<Instruction> {
    let w = n + 2;
    let at = |r: i64, c: i64| view(grid, r * w as i64 + c, &[n, n], &[w as i64, 1]);
    let t = |id: u64| base(id + shift, DType::F64, n * n);
    let free = |id: u64| Instruction::new(Opcode::Free, [tv(t(id), &[n, n])]);
    vec![
        Instruction::new(Opcode::Add, [tv(t(10), &[n, n]), at(1, 1), at(0, 1)]),
        Instruction::new(Opcode::Add, [tv(t(11), &[n, n]), tv(t(10), &[n, n]), at(2, 1)]),
        Instruction::new(Opcode::Add, [tv(t(12), &[n, n]), tv(t(11), &[n, n]), at(1, 0)]),
        Instruction::new(Opcode::Add, [tv(t(13), &[n, n]), tv(t(12), &[n, n]), at(1, 2)]),
        Instruction::new(Opcode::Multiply, [tv(t(2), &[n, n]), tv(t(13), &[n, n]), Scalar::F64(0.2).into()]),
        Instruction::new(Opcode::Subtract, [tv(t(14), &[n, n]), tv(t(2), &[n, n]), at(1, 1)]),
        Instruction::new(Opcode::Absolute, [tv(t(15), &[n, n]), tv(t(14), &[n, n])]),
        Instruction::new(Opcode::AddReduce, [view(delta, 0, &[], &[]), tv(t(15), &[n * n]), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Identity, [at(1, 1), tv(t(2), &[n, n])]),
        free(10),
        free(11),
        free(12),
        free(13),
        free(14),
        free(15),
        free(2),
    ]
}

#[test]
fn frontend_heat_steps_match_interp_and_fuse_into_two_passes() {
    let n = 400; // 1.28 MB per temporary
    let (grid, delta) = (base(1, DType::F64, (n + 2) * (n + 2)), base(99, DType::F64, 1));
    for threads in [1, 2] {
        let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
        fill(&mut m1, &grid, 1, false);
        fill(&mut m2, &grid, 1, false);
        let mut cpu = engine(threads);
        let mut interp = Interp::new(None);
        for i in 0..4 {
            let step = heat_step(grid, delta, n);
            cpu.execute(&step, &mut m1).unwrap();
            interp.execute(&step, &mut m2).unwrap();
            compare(&m1, &m2, &[grid, delta], &format!("heat step {i}, {threads} threads"));
            assert!(!m1.is_allocated(base(2, DType::F64, n * n).id), "work is renamed to a spare");
        }
        // Per step: the stencil with the row sums of the delta, the sum of the row sums, the
        // copy; every temporary but `work` is contracted.
        let p = cpu.profile();
        assert_eq!(p.kernels, 12);
        assert_eq!(p.contracted, 4 * 6);
    }
}

#[test]
fn many_heat_steps_in_one_batch_share_one_spare_buffer() {
    let n = 400; // 1.28 MB per temporary
    let steps = 6;
    let (grid, delta) = (base(1, DType::F64, (n + 2) * (n + 2)), base(99, DType::F64, 1));
    let batch: Vec<Instruction> = (0..steps).flat_map(|s| heat_step_with_ids(grid, delta, n, 1000 * s)).collect();
    for threads in [1, 2] {
        let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
        fill(&mut m1, &grid, 1, false);
        fill(&mut m2, &grid, 1, false);
        let mut cpu = engine(threads);
        cpu.execute(&batch, &mut m1).unwrap();
        Interp::new(None).execute(&batch, &mut m2).unwrap();
        compare(&m1, &m2, &[grid, delta], &format!("{steps} heat steps in one batch, {threads} threads"));
        // The six `work` arrays live one after the other: one spare buffer holds them all.
        let temporary = n * n * 8;
        let held = m1.allocated_bytes() - (n + 2) * (n + 2) * 8 - 8;
        assert!(held <= temporary, "{held} bytes of temporaries held, one is {temporary}");
        // Renaming costs no contraction: three kernels and six contracted temporaries per step.
        let p = cpu.profile();
        assert_eq!(p.kernels, 3 * steps);
        assert_eq!(p.contracted, 6 * steps);
    }
}

#[test]
fn a_large_temporary_read_before_written_reads_zeros() {
    let n = 1 << 18; // 2 MiB
    let (a, t, b) = (base(1, DType::F64, n), base(2, DType::F64, n), base(3, DType::F64, n));
    let first = vec![
        Instruction::new(Opcode::Add, [whole(t), whole(a), Scalar::F64(1.0).into()]),
        Instruction::new(Opcode::Multiply, [whole(b), whole(t), whole(a)]),
        Instruction::new(Opcode::Free, [whole(t)]),
    ];
    // `t` is a fresh base here: never written, so it reads as zeros, whatever buffer the
    // previous batch's `t` left behind.
    let second = vec![
        Instruction::new(Opcode::Add, [whole(b), whole(t), whole(b)]),
        Instruction::new(Opcode::Add, [whole(t), whole(a), whole(b)]),
        Instruction::new(Opcode::Free, [whole(t)]),
    ];
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    fill(&mut m1, &a, 1, false);
    fill(&mut m2, &a, 1, false);
    let mut cpu = engine(2);
    let mut interp = Interp::new(None);
    for batch in [&first, &second, &first, &second] {
        cpu.execute(batch, &mut m1).unwrap();
        interp.execute(batch, &mut m2).unwrap();
        compare(&m1, &m2, &[a, b], "recycled temporaries");
    }
}
