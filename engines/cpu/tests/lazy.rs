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
    let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
    let mut cpu = engine(2);
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
