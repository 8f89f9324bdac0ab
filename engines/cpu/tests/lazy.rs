//! Pure bases (computed from constants alone) left alive but unread are deferred; a later batch
//! that reads them replays their recipe, one that frees or discards them does not. Every case is
//! compared with the reference `interp` after syncing.

mod common;

use common::*;
use vm_interp::Interp;
use vm_ir::{Base, DType, Instruction, Opcode, Scalar};
use vm_runtime::{Component, HostMemory};

fn ins<const N: usize>(op: Opcode, operands: [vm_ir::Operand; N]) -> Instruction {
    Instruction::new(op, operands)
}

/// The leibnitz pattern: k = range; k4 = k * 4; t = 1 / (k4 + 1); s = sum(t); sync s.
fn first_batch(k: Base, k4: Base, t: Base, s: Base) -> Vec<Instruction> {
    let tmp = base(90, k.dtype, k.nelem as usize);
    vec![
        ins(Opcode::Range, [whole(k)]),
        ins(Opcode::Multiply, [whole(k4), whole(k), Scalar::F64(4.0).into()]),
        ins(Opcode::Add, [whole(tmp), whole(k4), Scalar::F64(1.0).into()]),
        ins(Opcode::Divide, [whole(t), Scalar::F64(1.0).into(), whole(tmp)]),
        ins(Opcode::Free, [whole(tmp)]),
        ins(Opcode::AddReduce, [view(s, 0, &[], &[]), whole(t), Scalar::I64(0).into()]),
        ins(Opcode::Sync, [whole(s)]),
    ]
}

/// Runs the batches on cpu (2 threads) and interp, syncs `check` on both, compares them.
fn run(batches: &[Vec<Instruction>], check: &[Base]) -> vm_cpu::profile::Profile {
    run_on(2, batches, check)
}

/// [`run`] on a cpu engine of `threads` threads with the default configuration.
fn run_on(threads: usize, batches: &[Vec<Instruction>], check: &[Base]) -> vm_cpu::profile::Profile {
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    let mut cpu = vm_cpu::CpuEngine::with_threads(threads).unwrap();
    let mut interp = Interp::new(None);
    let sync: Vec<Instruction> = check.iter().map(|b| ins(Opcode::Sync, [whole(*b)])).collect();
    for b in batches.iter().chain([&sync]) {
        cpu.execute(b, &mut m1).unwrap();
        interp.execute(b, &mut m2).unwrap();
    }
    compare(&m1, &m2, check, "lazy");
    cpu.profile()
}

#[test]
fn unread_pure_arrays_are_deferred_and_freed_without_memory() {
    let n = 1000;
    let (k, k4, t, s) =
        (base(1, DType::F64, n), base(2, DType::F64, n), base(3, DType::F64, n), base(4, DType::F64, 1));
    let mut cpu = engine(2);
    let mut mem = HostMemory::new();
    cpu.execute(&first_batch(k, k4, t, s), &mut mem).unwrap();
    assert!(!mem.is_allocated(k.id) && !mem.is_allocated(k4.id) && !mem.is_allocated(t.id));
    let want: f64 = (0..n).map(|i| 1.0 / (4.0 * i as f64 + 1.0)).sum();
    let got = mem.get(s.id).unwrap().as_slice::<f64>()[0];
    assert!((got - want).abs() < 1e-12 * want, "{got} {want}");
    let frees = vec![ins(Opcode::Free, [whole(t)]), ins(Opcode::Free, [whole(k4)]), ins(Opcode::Free, [whole(k)])];
    cpu.execute(&frees, &mut mem).unwrap();
    let p = cpu.profile();
    assert_eq!((p.deferred, p.replayed), (3, 0));
    assert_eq!(mem.allocated_bytes(), 8, "only the sum was ever allocated");
}

#[test]
fn a_later_read_replays_the_recipe() {
    let n = 777;
    let (k, k4, t, s) =
        (base(1, DType::F64, n), base(2, DType::F64, n), base(3, DType::F64, n), base(4, DType::F64, 1));
    let y = base(5, DType::F64, n);
    let second = vec![
        ins(Opcode::Add, [whole(y), whole(t), whole(k)]),
        ins(Opcode::Sync, [whole(y)]),
        // k4 is written over in part: its old contents must be there first.
        ins(Opcode::Negative, [view(k4, 3, &[10], &[2]), view(k, 0, &[10], &[1])]),
    ];
    let p = run(&[first_batch(k, k4, t, s), second], &[k, k4, t, s, y]);
    assert_eq!((p.deferred, p.replayed), (3, 3));
}

#[test]
fn replayed_bases_are_materialised_from_then_on() {
    let n = 500;
    let (x, y, s) = (base(1, DType::F32, n), base(2, DType::F32, n), base(3, DType::F32, 1));
    let draw = vec![
        ins(Opcode::Random, [whole(x), Scalar::U64(0x314).into(), Scalar::U64(10).into()]),
        ins(Opcode::Sqrt, [whole(y), whole(x)]),
        ins(Opcode::AddReduce, [view(s, 0, &[], &[]), whole(y), Scalar::I64(0).into()]),
        ins(Opcode::Sync, [whole(s)]),
    ];
    // Reading x again each time: replayed once, then kept in memory.
    let again = |c: f32| {
        vec![
            ins(Opcode::Multiply, [whole(y), whole(x), Scalar::F32(c).into()]),
            ins(Opcode::AddReduce, [view(s, 0, &[], &[]), whole(y), Scalar::I64(0).into()]),
            ins(Opcode::Sync, [whole(s)]),
        ]
    };
    let p = run(&[draw, again(2.0), again(3.0), again(4.0)], &[x, y, s]);
    assert_eq!(p.replayed, 2, "x once (then kept), y (pure again each time) at the final sync");
}

#[test]
fn a_discarded_deferred_base_keeps_the_host_data() {
    let n = 64;
    let (k, k4, t, s) =
        (base(1, DType::F64, n), base(2, DType::F64, n), base(3, DType::F64, n), base(4, DType::F64, 1));
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    let mut cpu = engine(1);
    let mut interp = Interp::new(None);
    let first = first_batch(k, k4, t, s);
    cpu.execute(&first, &mut m1).unwrap();
    interp.execute(&first, &mut m2).unwrap();
    // The host writes all of k, as the runtime does: straight into memory, then a DISCARD.
    for m in [&mut m1, &mut m2] {
        m.ensure(&k).unwrap().as_mut_slice::<f64>().fill(2.5);
    }
    let second = vec![
        ins(Opcode::Discard, [whole(k)]),
        ins(Opcode::Add, [whole(k4), whole(k), whole(t)]),
        ins(Opcode::Sync, [whole(k4)]),
        ins(Opcode::Sync, [whole(k)]),
    ];
    cpu.execute(&second, &mut m1).unwrap();
    interp.execute(&second, &mut m2).unwrap();
    compare(&m1, &m2, &[k, k4], "discard");
    assert_eq!(m1.get(k.id).unwrap().as_slice::<f64>()[7], 2.5);
    assert_eq!(cpu.profile().replayed, 2, "t and k4 (its first reference is a write), never k");
}

#[test]
fn deferred_bases_sharing_a_recipe_replay_together() {
    // c = arange(6.0).reshape(2, 3); m = ones((2, 3), bool); x = zeros; y = zeros;
    // b = where(m, x * y + c, y); a = where(m, x - b + 0.5, x); sum(b * 10), as vmnp records
    // it: b and a are pure and deferred, and b's recipe is part of a's. A later batch reading
    // both replays them at once.
    let f = |id| base(id, DType::F64, 6);
    let g = |b: Base| view(b, 0, &[2, 3], &[3, 1]);
    let (c, m, x, y, t1, t2, b, t3, t4, a) =
        (f(1), base(2, DType::Bool, 6), f(3), f(4), f(5), f(6), f(7), f(8), f(9), f(10));
    let (t5, rows, s, out) = (f(11), base(12, DType::F64, 2), base(13, DType::F64, 1), f(14));
    let first = vec![
        ins(Opcode::Range, [whole(c)]),
        ins(Opcode::Identity, [g(m), Scalar::Bool(true).into()]),
        ins(Opcode::Identity, [g(x), Scalar::F64(0.0).into()]),
        ins(Opcode::Identity, [g(y), Scalar::F64(0.0).into()]),
        ins(Opcode::Multiply, [g(t1), g(x), g(y)]),
        ins(Opcode::Add, [g(t2), g(t1), g(c)]),
        ins(Opcode::Free, [whole(t1)]),
        ins(Opcode::Select, [g(b), g(m), g(t2), g(y)]),
        ins(Opcode::Free, [whole(t2)]),
        ins(Opcode::Free, [whole(y)]),
        ins(Opcode::Subtract, [g(t3), g(x), g(b)]),
        ins(Opcode::Add, [g(t4), g(t3), Scalar::F64(0.5).into()]),
        ins(Opcode::Free, [whole(t3)]),
        ins(Opcode::Select, [g(a), g(m), g(t4), g(x)]),
        ins(Opcode::Free, [whole(t4)]),
        ins(Opcode::Free, [whole(x)]),
        ins(Opcode::Multiply, [g(t5), g(b), Scalar::F64(10.0).into()]),
        ins(Opcode::AddReduce, [whole(rows), g(t5), Scalar::I64(1).into()]),
        ins(Opcode::AddReduce, [view(s, 0, &[], &[]), whole(rows), Scalar::I64(0).into()]),
        ins(Opcode::Free, [whole(rows)]),
        ins(Opcode::Free, [whole(t5)]),
        ins(Opcode::Sync, [whole(s)]),
    ];
    let second = vec![
        ins(Opcode::Free, [whole(s)]),
        ins(Opcode::Multiply, [g(out), g(a), g(b)]),
        ins(Opcode::Sync, [whole(out)]),
    ];
    for threads in [1, 2] {
        let p = run_on(threads, &[first.clone(), second.clone()], &[out]);
        assert!(p.deferred >= 2 && p.replayed >= 2, "{p:?}");
    }
}

#[test]
fn a_pure_array_updated_in_a_loop_is_replayed_once() {
    // v = random; then, batch after batch, v = v * c and a synced sum of it. The first batch
    // defers the product; the second replays it and materialises what it computes from it, so
    // no batch replays a recipe that grew by one step per batch.
    let n = 1000;
    let f = |id| base(id, DType::F64, n);
    let mut batches = vec![vec![ins(Opcode::Random, [whole(f(1)), Scalar::U64(3).into(), Scalar::U64(0).into()])]];
    for k in 1..20u64 {
        let (prev, next, s) = (f(k), f(k + 1), base(1000 + k, DType::F64, 1));
        batches.push(vec![
            ins(Opcode::Multiply, [whole(next), whole(prev), Scalar::F64(1.00001).into()]),
            ins(Opcode::Free, [whole(prev)]),
            ins(Opcode::AddReduce, [view(s, 0, &[], &[]), whole(next), Scalar::I64(0).into()]),
            ins(Opcode::Sync, [whole(s)]),
            ins(Opcode::Free, [whole(s)]),
        ]);
    }
    let p = run(&batches, &[f(20)]);
    assert!(p.replayed <= 1, "{p:?}");
}
