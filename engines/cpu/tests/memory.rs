//! Memory: broadcast views are read in place, whatever their extent, and a program that needs
//! more memory than the machine has gets `Error::OutOfMemory` naming the base and the size; the
//! engine and the other bases are unharmed. The sizes here (2^40 f64 elements, 8 TiB; 2^61 i16
//! elements, 4 EiB) cannot be granted even lazily, so each allocation truly fails.

mod common;

use common::*;
use vm_cpu::CpuEngine;
use vm_ir::{Base, DType, Error, Instruction, Opcode, Operand, Scalar};
use vm_runtime::{Component, HostMemory};

const HUGE: usize = 1 << 40;

fn ins(op: Opcode, ops: Vec<Operand>) -> Instruction {
    Instruction::new(op, ops)
}

/// `shape` repeating element 0 of `b`.
fn broadcast(b: Base, shape: &[usize]) -> Operand {
    view(b, 0, shape, &vec![0; shape.len()])
}

fn axis(a: i64) -> Operand {
    Scalar::I64(a).into()
}

/// An engine (two threads) and memory holding `keep` = [1.5, 2.5, 3.5] (base 1) and `one` =
/// [7.25] (base 2).
fn setup() -> (CpuEngine, HostMemory, Base, Base) {
    let (keep, one) = (base(1, DType::F64, 3), base(2, DType::F64, 1));
    let mut mem = HostMemory::new();
    mem.ensure(&keep).unwrap().as_mut_slice::<f64>().copy_from_slice(&[1.5, 2.5, 3.5]);
    mem.ensure(&one).unwrap().as_mut_slice::<f64>()[0] = 7.25;
    (engine(2), mem, keep, one)
}

/// Asserts `e` is out of memory for `nbytes` bytes for `what` base `b`.
fn assert_oom(e: &Error, what: &str, nbytes: u128, b: Base) {
    assert!(matches!(e, Error::OutOfMemory(_)), "{e}");
    let want = format!("allocating {nbytes} bytes for {what}base {}", b.id);
    assert!(e.to_string().contains(&want), "`{want}` missing from: {e}");
}

/// The engine still computes, and `keep` is intact.
fn still_works(cpu: &mut CpuEngine, mem: &mut HostMemory, keep: Base) {
    assert_eq!(mem.get(keep.id).unwrap().as_slice::<f64>(), &[1.5, 2.5, 3.5]);
    let out = base(99, DType::F64, 3);
    let batch =
        [ins(Opcode::Add, vec![whole(out), whole(keep), Scalar::F64(1.0).into()]), ins(Opcode::Sync, vec![whole(out)])];
    cpu.execute(&batch, mem).unwrap();
    assert_eq!(mem.get(out.id).unwrap().as_slice::<f64>(), &[2.5, 3.5, 4.5]);
    mem.free(out.id);
}

#[test]
fn gather_reads_a_broadcast_source_in_place_whatever_its_extent() {
    let (mut cpu, mut mem, keep, one) = setup();
    for extent in [HUGE, usize::MAX] {
        let (index, out) = (base(3, DType::U64, 3), base(4, DType::F64, 3));
        mem.ensure(&index).unwrap().as_mut_slice::<u64>().copy_from_slice(&[0, extent as u64 - 1, 12345]);
        let batch = [ins(Opcode::Gather, vec![whole(out), broadcast(one, &[extent]), whole(index)])];
        cpu.execute(&batch, &mut mem).unwrap();
        assert_eq!(mem.get(out.id).unwrap().as_slice::<f64>(), &[7.25; 3]);
    }
    still_works(&mut cpu, &mut mem, keep);
}

#[test]
fn gather_of_nothing_from_an_empty_view_past_its_base_is_nothing() {
    // `np.zeros((6, 0))[2][mask]` with an empty mask: the source starts at element 2 of a base
    // of none.
    let (mut cpu, mut mem, keep, _) = setup();
    let (src, index, out) = (base(3, DType::F64, 0), base(4, DType::I64, 0), base(5, DType::F64, 0));
    let batch = [ins(Opcode::Gather, vec![whole(out), view(src, 2, &[0], &[1]), whole(index)])];
    cpu.execute(&batch, &mut mem).unwrap();
    still_works(&mut cpu, &mut mem, keep);
}

#[test]
fn scatter_into_a_base_too_large_to_allocate_is_out_of_memory() {
    let (mut cpu, mut mem, keep, _) = setup();
    let (dst, values, index) = (base(3, DType::F64, HUGE), base(4, DType::F64, 6), base(5, DType::I64, 6));
    let last = HUGE as i64 - 1;
    mem.ensure(&index).unwrap().as_mut_slice::<i64>().copy_from_slice(&[0, 1, 2, 3, last - 1, last]);
    let batch = [ins(Opcode::Scatter, vec![whole(dst), whole(values), whole(index)])];
    let e = cpu.execute(&batch, &mut mem).unwrap_err();
    assert_oom(&e, "", 8 << 40, dst);
    still_works(&mut cpu, &mut mem, keep);
}

#[test]
fn range_over_a_base_too_large_to_allocate_is_out_of_memory() {
    let (mut cpu, mut mem, keep, _) = setup();
    let acc = base(3, DType::I16, 1 << 61);
    let batch = [ins(Opcode::Range, vec![whole(acc)]), ins(Opcode::Sync, vec![whole(acc)])];
    let e = cpu.execute(&batch, &mut mem).unwrap_err();
    assert_oom(&e, "", 1 << 62, acc);
    still_works(&mut cpu, &mut mem, keep);
}

#[test]
fn reductions_and_scans_into_a_base_too_large_are_out_of_memory() {
    let (mut cpu, mut mem, keep, one) = setup();
    let out = base(3, DType::F64, HUGE);
    let reduce = [ins(Opcode::AddReduce, vec![whole(out), broadcast(one, &[HUGE, 2]), axis(1)])];
    assert_oom(&cpu.execute(&reduce, &mut mem).unwrap_err(), "", 8 << 40, out);
    let scan = [ins(Opcode::AddAccumulate, vec![whole(out), broadcast(one, &[HUGE]), axis(0)])];
    assert_oom(&cpu.execute(&scan, &mut mem).unwrap_err(), "", 8 << 40, out);
    // The output fits, but per-block partial sums of rows of 2^20 elements would take 8 TiB.
    let rows = base(4, DType::F64, 1 << 20);
    let reduce = [ins(Opcode::AddReduce, vec![whole(rows), broadcast(one, &[1 << 20, 1 << 20]), axis(0)])];
    let e = cpu.execute(&reduce, &mut mem).unwrap_err();
    assert_oom(&e, "the per-block partial results of a reduction into ", 8 << 40, rows);
    still_works(&mut cpu, &mut mem, keep);
}

#[test]
fn kernels_past_i64_positions_are_refused() {
    let (mut cpu, mut mem, keep, one) = setup();
    let sum = base(3, DType::F64, 1);
    let reduce = [ins(Opcode::AddReduce, vec![view(sum, 0, &[], &[]), broadcast(one, &[usize::MAX]), axis(0)])];
    let e = cpu.execute(&reduce, &mut mem).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)) && e.to_string().contains(&usize::MAX.to_string()), "{e}");
    still_works(&mut cpu, &mut mem, keep);
}

#[test]
fn a_reduction_of_more_blocks_than_the_cap_is_exact() {
    // 2^27 positions in blocks of 64 would be 2^21 blocks; the engine cuts at most 2^20.
    let (mut cpu, mut mem, _, _) = setup();
    let (three, sum) = (base(3, DType::I64, 1), base(4, DType::I64, 1));
    mem.ensure(&three).unwrap().as_mut_slice::<i64>()[0] = 3;
    let reduce = [
        ins(Opcode::AddReduce, vec![view(sum, 0, &[], &[]), broadcast(three, &[1 << 27]), axis(0)]),
        ins(Opcode::Sync, vec![whole(sum)]),
    ];
    cpu.execute(&reduce, &mut mem).unwrap();
    assert_eq!(mem.get(sum.id).unwrap().as_slice::<i64>(), &[3 << 27]);
}
