//! Batches over arrays large enough (over 1 MiB) for the engine's batch rewrites: the split of
//! full reductions of flattened temporaries, the reuse of large temporary buffers between
//! batches, and copy-backs turned into buffer swaps. Every batch is compared with interp.

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
fn frontend_heat_steps_match_interp_and_swap_two_grids() {
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
            assert!(!m1.is_allocated(base(2, DType::F64, n * n).id), "work is written into the other grid");
        }
        // Per step: the stencil with the row sums of the delta (writing the other grid), the sum
        // of the row sums, the boundary rows and the boundary columns copied to the other grid;
        // every temporary but `work` is contracted, and `work` is the other grid.
        let p = cpu.profile();
        assert_eq!(p.kernels, 4 * 4);
        assert_eq!(p.contracted, 4 * 6);
        let held = m1.allocated_bytes() - (n + 2) * (n + 2) * 8 - 8;
        assert_eq!(held, (n + 2) * (n + 2) * 8, "the other grid, and nothing else");
    }
}

#[test]
fn many_heat_steps_in_one_batch_swap_two_grids() {
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
        // The six `work` arrays are written into the two grids in turn: one more grid held.
        let held = m1.allocated_bytes() - (n + 2) * (n + 2) * 8 - 8;
        assert_eq!(held, (n + 2) * (n + 2) * 8, "the other grid, and nothing else");
        // Double buffering costs no contraction: six contracted temporaries per step, and at
        // most four kernels (boundary copies of consecutive steps may share one).
        let p = cpu.profile();
        assert!(p.kernels <= 4 * steps, "{} kernels", p.kernels);
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

#[test]
fn a_pinned_grid_is_copied_back_in_place() {
    // A frontend holds the grid's memory (pinned): its buffer may not be swapped, so the copy
    // back stays a copy (three kernels per step), with the same values.
    let n = 400;
    let (grid, delta) = (base(1, DType::F64, (n + 2) * (n + 2)), base(99, DType::F64, 1));
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    fill(&mut m1, &grid, 1, false);
    fill(&mut m2, &grid, 1, false);
    m1.pin(grid.id);
    let before = m1.get(grid.id).unwrap().as_ptr();
    let mut cpu = engine(2);
    let mut interp = Interp::new(None);
    for i in 0..3 {
        let step = heat_step(grid, delta, n);
        cpu.execute(&step, &mut m1).unwrap();
        interp.execute(&step, &mut m2).unwrap();
        compare(&m1, &m2, &[grid, delta], &format!("pinned heat step {i}"));
        assert_eq!(m1.get(grid.id).unwrap().as_ptr(), before, "the pinned grid stays where it is");
    }
    assert_eq!(cpu.profile().kernels, 3 * 3);
}

/// `x[inner] = (x[inner shifted down] + x[inner shifted up]) * 0.5` along the last axis, through a
/// temporary, `steps` times in one batch: a copy-back that becomes a swap, in any rank.
fn smoothing(x: Base, shape: &[usize], steps: u64) -> Vec<Instruction> {
    let strides = vm_ir::view::row_major_strides(shape);
    let last = shape.len() - 1;
    let mut inner: Vec<usize> = shape.to_vec();
    inner[last] -= 2;
    let at = |offset: i64| Operand::View(View::new(x, offset, &inner, &strides).unwrap());
    let mut batch = Vec::new();
    for s in 0..steps {
        let t = base(100 + s, DType::F64, inner.iter().product());
        batch.push(Instruction::new(Opcode::Add, [tv(t, &inner), at(0), at(2)]));
        batch.push(Instruction::new(Opcode::Multiply, [tv(t, &inner), tv(t, &inner), Scalar::F64(0.5).into()]));
        batch.push(Instruction::new(Opcode::Identity, [at(1), tv(t, &inner)]));
        batch.push(Instruction::new(Opcode::Free, [tv(t, &inner)]));
    }
    batch
}

#[test]
fn copy_backs_of_any_rank_swap_and_match_interp() {
    for shape in [vec![200_000usize], vec![60, 60, 60]] {
        let x = base(1, DType::F64, shape.iter().product());
        for steps in [1, 2, 3] {
            let batch = smoothing(x, &shape, steps);
            let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
            fill(&mut m1, &x, 7, false);
            fill(&mut m2, &x, 7, false);
            let mut cpu = engine(2);
            for round in 0..2 {
                cpu.execute(&batch, &mut m1).unwrap();
                Interp::new(None).execute(&batch, &mut m2).unwrap();
                compare(&m1, &m2, &[x], &format!("{shape:?}, {steps} steps, round {round}"));
            }
            // The temporaries were written into the two buffers: nothing else is held.
            let held = m1.allocated_bytes() - x.nelem as usize * 8;
            assert_eq!(held, x.nelem as usize * 8, "{shape:?}, {steps} steps: the partner only");
        }
    }
}

#[test]
fn many_lines_sort_and_many_keys_search_in_parallel_as_interp_does() {
    // 300 lines of 700 (past the engine's parallel threshold): whole lines to each task.
    let (lines, len) = (300, 700);
    let n = lines * len;
    for d in [DType::F64, DType::F32, DType::I32, DType::U8] {
        for small in [true, false] {
            let (a, sorted, positions, found) =
                (base(1, d, n), base(100, d, n), base(101, DType::I64, n), base(102, DType::I64, n));
            let batch = vec![
                Instruction::new(
                    Opcode::Sort,
                    [tv(sorted, &[lines, len]), tv(a, &[lines, len]), Scalar::I64(1).into()],
                ),
                Instruction::new(
                    Opcode::Argsort,
                    [tv(positions, &[lines, len]), tv(a, &[lines, len]), Scalar::I64(1).into()],
                ),
                // Every value of `a` searched for in the first sorted line, and in the first
                // line of `a` unsorted (one search in order: NumPy's positions).
                Instruction::new(Opcode::SearchsortedRight, [tv(found, &[n]), tv(sorted, &[len]), tv(a, &[n])]),
            ];
            let what = format!("{d}, small values {small}");
            differential(&batch, &[a], &[sorted, positions, found], 2, small, &what);
            let unsorted =
                vec![Instruction::new(Opcode::SearchsortedLeft, [tv(found, &[n]), tv(a, &[len]), tv(a, &[n])])];
            differential(&unsorted, &[a], &[found], 2, small, &format!("unsorted {what}"));
        }
    }
}

#[test]
fn long_lines_sort_in_parts_and_merge_as_one_sort() {
    // Fewer lines than threads, each of more than 65,536 values: a part per thread sorted
    // apart, then merged (two rounds of merges for three parts), as interp sorts them whole:
    // the kit's values repeat (zeros of both signs, NaNs, small integers), so argsort's
    // positions show whether equal keys kept their order.
    let len = 150_001;
    for dtype in [DType::F64, DType::F32, DType::I16] {
        for (lines, threads) in [(1, 2), (1, 3), (2, 3)] {
            let x = base(1, dtype, lines * len);
            for op in [Opcode::Sort, Opcode::Argsort] {
                let out = base(2, if op == Opcode::Argsort { DType::I64 } else { dtype }, lines * len);
                let batch = [
                    Instruction::new(op, [tv(out, &[lines, len]), tv(x, &[lines, len]), Scalar::I64(1).into()]),
                    Instruction::new(Opcode::Sync, [tv(out, &[lines, len])]),
                ];
                let what = format!("{op} of {lines} x {len} {dtype} on {threads} threads");
                differential(&batch, &[x], &[out], threads, false, &what);
            }
        }
    }
}

#[test]
fn partitions_of_many_lines_and_of_one_long_line_are_interps() {
    // The partial sorts, over many lines in parallel, over one long line, and over a transposed
    // view, against interp bit for bit (the kit's values repeat: zeros of both signs, NaNs and
    // equal integers show whether argpartition orders equal keys by position).
    let (partition, argpartition) = (Opcode::Extension(0), Opcode::Extension(1));
    let cases: [(usize, usize, i64, i64); 4] =
        [(1, 150_001, 75_000, 75_000), (1, 150_001, 10, 140_000), (40, 2_001, 0, 3), (40, 2_001, 2_000, 2_000)];
    for dtype in [DType::F64, DType::F32, DType::I16, DType::U8] {
        for (lines, len, lo, hi) in cases {
            for transposed in [false, true] {
                let x = base(1, dtype, lines * len);
                let input = match transposed {
                    true => view(x, 0, &[lines, len], &[1, lines as i64]),
                    false => tv(x, &[lines, len]),
                };
                for (op, positions) in [(partition, false), (argpartition, true)] {
                    let out = base(2, if positions { DType::I64 } else { dtype }, lines * len);
                    let bounds: [Operand; 2] = [Scalar::I64(lo).into(), Scalar::I64(hi).into()];
                    let batch = vec![
                        Instruction::new(
                            op,
                            [tv(out, &[lines, len]), input.clone(), bounds[0].clone(), bounds[1].clone()],
                        ),
                        Instruction::new(Opcode::Sync, [tv(out, &[lines, len])]),
                    ];
                    let mut cpu = engine(2);
                    let mut interp = Interp::new(None);
                    for engine in [&mut cpu as &mut dyn Component, &mut interp] {
                        assert!(engine.register_extension(vm_interp::PARTITION, partition).unwrap());
                        assert!(engine.register_extension(vm_interp::ARGPARTITION, argpartition).unwrap());
                    }
                    let program = vm_testkit::Program {
                        inputs: vec![x],
                        bases: vec![out],
                        steps: vec![vm_testkit::Step::Batch(batch)],
                    };
                    let data = vm_testkit::Data::small_if(false);
                    if let Err(e) =
                        vm_testkit::differential(&mut cpu, &mut interp, &program, data, vm_testkit::Agree::Bits)
                    {
                        panic!("{op} of {lines} x {len} {dtype} around {lo}..={hi} (transposed {transposed}): {e}");
                    }
                }
            }
        }
    }
}
