//! Gather, scatter, range and random on views of any layout, and the errors of bad indices.

mod common;

use common::*;
use vm_ir::random::{FromRandomBits, random_bits};
use vm_ir::{DType, Error, Instruction, Opcode, View};

#[test]
fn gather_uses_row_major_positions_of_the_source_view() {
    let mut env = Env::new();
    // src is the transpose of [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]: a 4x3 view.
    let data: Vec<i32> = (0..12).collect();
    let a = env.array(&data);
    let src = View::new(a.base, 0, &[4, 3], &[1, 4]).unwrap();
    // Row-major in src: [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11].
    let index = env.array_nd(&[0u8, 1, 2, 3, 11, 5], &[2, 3]);
    let out = env.empty(DType::I32, &[2, 3]);
    env.run1(Opcode::Gather, vec![v(&out), v(&src), v(&index)]).unwrap();
    assert_eq!(env.read::<i32>(&out), vec![0, 4, 8, 1, 11, 9]);
}

#[test]
fn gather_out_of_range_is_an_error_and_writes_nothing() {
    let mut env = Env::new();
    let src = env.array(&[10.0f64, 20.0, 30.0]);
    let out = env.array(&[-1.0f64; 4]);
    for (bad, name) in [(vec![0i64, 1, 3, 2], "3"), (vec![2, -1, 0, 0], "-1")] {
        let index = env.array(&bad);
        let e = env.run1(Opcode::Gather, vec![v(&out), v(&src), v(&index)]).unwrap_err();
        assert!(matches!(e, Error::Execution(_)), "{e}");
        assert!(e.to_string().contains(&format!("index {name} ")), "{e}");
        assert_eq!(env.base_data::<f64>(&out.base), vec![-1.0; 4], "nothing written");
    }
    let index = env.array(&[u64::MAX, 0, 0, 0]);
    let e = env.run1(Opcode::Gather, vec![v(&out), v(&src), v(&index)]).unwrap_err();
    assert!(e.to_string().contains(&u64::MAX.to_string()), "{e}");
    // The error names the instruction's position in its batch.
    let ok = Instruction::new(Opcode::Add, [v(&src), v(&src), c(1.0f64)]);
    let bad = Instruction::new(Opcode::Gather, [v(&out), v(&src), v(&index)]);
    let e = env.run(vec![ok, bad]).unwrap_err();
    assert!(e.to_string().contains("instruction 1 (gather)"), "{e}");
    assert_eq!(env.base_data::<f64>(&out.base), vec![-1.0; 4]);
}

#[test]
fn gather_from_an_overlapping_source() {
    let mut env = Env::new();
    let a = env.array(&[1u16, 2, 3, 4, 5]);
    let index = env.array(&[4i32, 3, 2, 1, 0]);
    env.run1(Opcode::Gather, vec![v(&a), v(&a), v(&index)]).unwrap();
    assert_eq!(env.base_data::<u16>(&a.base), vec![5, 4, 3, 2, 1]);
}

#[test]
fn scatter_into_a_strided_view_last_write_wins() {
    let mut env = Env::new();
    let d = env.array(&[0i64; 8]);
    // dst = d[7:0:-2], row-major positions 0..4 are base elements 7, 5, 3, 1.
    let dst = View::new(d.base, 7, &[4], &[-2]).unwrap();
    let src = env.array(&[10i64, 20, 30, 40]);
    let index = env.array(&[0u32, 2, 0, 3]);
    env.run1(Opcode::Scatter, vec![v(&dst), v(&src), v(&index)]).unwrap();
    assert_eq!(env.base_data::<i64>(&d.base), vec![0, 40, 0, 20, 0, 0, 0, 30]);
    // A constant source.
    let index = env.array(&[1i8]);
    env.run1(Opcode::Scatter, vec![v(&dst), c(-5i64), v(&index)]).unwrap();
    assert_eq!(env.base_data::<i64>(&d.base), vec![0, 40, 0, 20, 0, -5, 0, 30]);
}

#[test]
fn scatter_out_of_range_is_an_error_and_writes_nothing() {
    let mut env = Env::new();
    let dst = env.array(&[7u8; 4]);
    let src = env.array(&[1u8, 2, 3]);
    let index = env.array(&[0i16, 1, 4]);
    let e = env.run1(Opcode::Scatter, vec![v(&dst), v(&src), v(&index)]).unwrap_err();
    assert!(matches!(e, Error::Execution(_)), "{e}");
    assert!(e.to_string().contains("index 4 "), "{e}");
    assert_eq!(env.base_data::<u8>(&dst.base), vec![7; 4], "the valid indices before it wrote nothing either");
}

#[test]
fn scatter_source_overlapping_the_destination() {
    let mut env = Env::new();
    let a = env.array(&[1i32, 2, 3, 4]);
    let index = env.array(&[1u64, 2, 3, 0]);
    // a[index] = a: a rotation when the source is read first.
    env.run1(Opcode::Scatter, vec![v(&a), v(&a), v(&index)]).unwrap();
    assert_eq!(env.base_data::<i32>(&a.base), vec![4, 1, 2, 3]);
}

#[test]
fn range_fills_row_major_positions_of_a_strided_view() {
    let mut env = Env::new();
    let a = env.array(&[-1i32; 6]);
    let t = View::new(a.base, 0, &[3, 2], &[1, 3]).unwrap(); // transpose of a 2x3
    env.run1(Opcode::Range, vec![v(&t)]).unwrap();
    assert_eq!(env.base_data::<i32>(&a.base), vec![0, 2, 4, 1, 3, 5]);
    let b = env.empty(DType::I8, &[300]);
    env.run1(Opcode::Range, vec![v(&b)]).unwrap();
    assert_eq!(env.read::<i8>(&b)[200], -56, "the cast wraps");
}

fn random(env: &mut Env, dt: DType, shape: &[usize], seed: u64, offset: u64) -> View {
    let out = env.empty(dt, shape);
    env.run1(Opcode::Random, vec![v(&out), c(seed), c(offset)]).unwrap();
    out
}

#[test]
fn random_is_reproducible_and_offsets_shift_the_stream() {
    let mut env = Env::new();
    let a = random(&mut env, DType::F64, &[100], 42, 0);
    let b = random(&mut env, DType::F64, &[100], 42, 0);
    assert_eq!(env.read::<f64>(&a), env.read::<f64>(&b));
    let shifted = random(&mut env, DType::F64, &[100], 42, 5);
    assert_eq!(env.read::<f64>(&shifted)[0], env.read::<f64>(&a)[5]);
    assert_eq!(env.read::<f64>(&shifted)[..95], env.read::<f64>(&a)[5..]);
    let other = random(&mut env, DType::F64, &[100], 43, 0);
    assert_ne!(env.read::<f64>(&other), env.read::<f64>(&a));
    // Element i comes from counter offset + i of the contract's stream.
    let u = random(&mut env, DType::U64, &[3], 9, 1000);
    assert_eq!(env.read::<u64>(&u), (1000..1003).map(|i| random_bits(9, i)).collect::<Vec<_>>());
    let x = random(&mut env, DType::F32, &[2, 2], 9, 0);
    let want: Vec<f32> = (0..4).map(|i| f32::from_random_bits(random_bits(9, i))).collect();
    assert_eq!(env.read::<f32>(&x), want);
}

#[test]
fn random_follows_row_major_positions_of_the_output_view() {
    let mut env = Env::new();
    let flat = random(&mut env, DType::U32, &[6], 3, 0);
    let a = env.array(&[0u32; 6]);
    let t = View::new(a.base, 5, &[2, 3], &[-1, -2]).unwrap();
    env.run1(Opcode::Random, vec![v(&t), c(3u64), c(0u64)]).unwrap();
    assert_eq!(env.read::<u32>(&t), env.read::<u32>(&flat));
}
