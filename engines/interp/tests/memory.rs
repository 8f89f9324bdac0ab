//! Memory: broadcast views are read in place, whatever their extent, and a program that needs
//! more memory than the machine has gets `Error::OutOfMemory` naming the base and the size; the
//! engine and the other bases are unharmed. The sizes here (2^40 f64 elements, 8 TiB; 2^61 i16
//! elements, 4 EiB) cannot be granted even lazily, so each allocation truly fails.

mod common;

use common::*;
use vm_ir::{DType, Error, Opcode, View};

const HUGE: usize = 1 << 40;

/// A view of `shape` repeating element 0 of `of`.
fn broadcast(of: &View, shape: &[usize]) -> View {
    View::new(of.base, 0, shape, &vec![0; shape.len()]).unwrap()
}

/// Asserts `e` is out of memory for `nbytes` bytes of base `base`.
fn assert_oom(e: &Error, nbytes: u128, base: &View) {
    assert!(matches!(e, Error::OutOfMemory(_)), "{e}");
    let want = format!("allocating {nbytes} bytes for base {}", base.base.id);
    assert!(e.to_string().contains(&want), "`{want}` missing from: {e}");
}

/// The engine still computes, and `keep` still holds `[1.5, 2.5, 3.5]`.
fn still_works(env: &mut Env, keep: &View) {
    assert_eq!(env.base_data::<f64>(&keep.base), vec![1.5, 2.5, 3.5]);
    let out = env.empty(DType::F64, &[3]);
    env.run1(Opcode::Add, vec![v(&out), v(keep), c(1.0f64)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![2.5, 3.5, 4.5]);
}

#[test]
fn gather_reads_a_broadcast_source_in_place_whatever_its_extent() {
    let mut env = Env::new();
    let one = env.array(&[7.25f64]);
    for extent in [HUGE, usize::MAX] {
        let src = broadcast(&one, &[extent]);
        let index = env.array(&[0u64, (extent - 1) as u64, 12345]);
        let out = env.empty(DType::F64, &[3]);
        env.run1(Opcode::Gather, vec![v(&out), v(&src), v(&index)]).unwrap();
        assert_eq!(env.read::<f64>(&out), vec![7.25; 3]);
    }
    // Out of range is still an error, named.
    let src = broadcast(&one, &[HUGE]);
    let index = env.array(&[HUGE as u64]);
    let out = env.empty(DType::F64, &[1]);
    let e = env.run1(Opcode::Gather, vec![v(&out), v(&src), v(&index)]).unwrap_err();
    assert!(e.to_string().contains(&format!("index {HUGE} ")), "{e}");
}

#[test]
fn gather_from_a_base_too_large_to_allocate_is_out_of_memory() {
    let mut env = Env::new();
    let keep = env.array(&[1.5f64, 2.5, 3.5]);
    let src = env.empty(DType::F64, &[HUGE]);
    let index = env.array(&[0u32, 1]);
    let out = env.empty(DType::F64, &[2]);
    let e = env.run1(Opcode::Gather, vec![v(&out), v(&src), v(&index)]).unwrap_err();
    assert_oom(&e, 8 << 40, &src);
    still_works(&mut env, &keep);
}

#[test]
fn scatter_into_a_base_too_large_to_allocate_is_out_of_memory() {
    let mut env = Env::new();
    let keep = env.array(&[1.5f64, 2.5, 3.5]);
    let dst = env.empty(DType::F64, &[HUGE]);
    let values = env.array(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let index = env.array(&[0i64, 1, 2, 3, HUGE as i64 - 2, HUGE as i64 - 1]);
    let e = env.run1(Opcode::Scatter, vec![v(&dst), v(&values), v(&index)]).unwrap_err();
    assert_oom(&e, 8 << 40, &dst);
    still_works(&mut env, &keep);
}

#[test]
fn range_over_a_base_too_large_to_allocate_is_out_of_memory() {
    let mut env = Env::new();
    let keep = env.array(&[1.5f64, 2.5, 3.5]);
    let acc = View::of_base(env.base(DType::I16, 1 << 61));
    let e = env.run1(Opcode::Range, vec![v(&acc)]).unwrap_err();
    assert_oom(&e, 1 << 62, &acc);
    still_works(&mut env, &keep);
}

#[test]
fn reducing_a_broadcast_into_a_base_too_large_is_out_of_memory() {
    let mut env = Env::new();
    let keep = env.array(&[1.5f64, 2.5, 3.5]);
    let one = env.array(&[1.0f64]);
    let out = env.empty(DType::F64, &[HUGE]);
    let e = env.run1(Opcode::AddReduce, vec![v(&out), v(&broadcast(&one, &[HUGE, 2])), axis(1)]).unwrap_err();
    assert_oom(&e, 8 << 40, &out);
    let e = env.run1(Opcode::AddAccumulate, vec![v(&out), v(&broadcast(&one, &[HUGE])), axis(0)]).unwrap_err();
    assert_oom(&e, 8 << 40, &out);
    still_works(&mut env, &keep);
}

#[test]
fn broadcast_inputs_give_their_repeated_element() {
    // Reductions, scans and element-wise instructions read broadcast views in place, as gather
    // does above; their results are those of the materialised array.
    let mut env = Env::new();
    let x = env.array(&[3i64]);
    let sums = env.empty(DType::I64, &[3]);
    env.run1(Opcode::AddReduce, vec![v(&sums), v(&broadcast(&x, &[1000, 3])), axis(0)]).unwrap();
    assert_eq!(env.read::<i64>(&sums), vec![3000; 3]);
    let scan = env.empty(DType::I64, &[2, 3]);
    env.run1(Opcode::AddAccumulate, vec![v(&scan), v(&broadcast(&x, &[2, 3])), axis(1)]).unwrap();
    assert_eq!(env.read::<i64>(&scan), vec![3, 6, 9, 3, 6, 9]);
    let y = env.empty(DType::I64, &[4]);
    env.run1(Opcode::Multiply, vec![v(&y), v(&broadcast(&x, &[4])), c(2i64)]).unwrap();
    assert_eq!(env.read::<i64>(&y), vec![6; 4]);
}
