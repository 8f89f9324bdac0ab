//! Layouts: strided, negative-stride and broadcast inputs and outputs, 0-d views, constants,
//! reductions and scans along every axis of 3-d strided views, and overlap semantics.

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar, View};

fn iota_f64(n: usize) -> Vec<f64> {
    (0..n).map(|i| i as f64).collect()
}

#[test]
fn strided_input_and_output() {
    let mut env = Env::new();
    let a = env.array(&iota_f64(20));
    let every_third = View::new(a.base, 1, &[5], &[3]).unwrap();
    let out = env.array(&[-1.0; 10]);
    let odd_slots = View::new(out.base, 1, &[5], &[2]).unwrap();
    env.run1(Opcode::Add, vec![v(&odd_slots), v(&every_third), c(100.0f64)]).unwrap();
    assert_eq!(env.base_data::<f64>(&out.base), vec![-1.0, 101.0, -1.0, 104.0, -1.0, 107.0, -1.0, 110.0, -1.0, 113.0]);
}

/// Views whose elements lie on one line of their base (columns, reversed blocks, extents of 1)
/// next to views that do not (a broadcast row, rows with gaps), in every combination of the
/// two inputs, against the values computed by position.
#[test]
fn columns_blocks_and_broadcasts_combined() {
    let mut env = Env::new();
    let a = env.array(&iota_f64(60)); // 6 x 10, row-major
    let column = View::new(a.base, 3, &[4, 1], &[10, 1]).unwrap(); // a[0:4, 3:4]
    let reversed = View::new(a.base, 59, &[4, 1], &[-1, 1]).unwrap(); // 59, 58, 57, 56
    let broadcast = View::new(a.base, 20, &[4, 1], &[0, 0]).unwrap(); // 20 four times
    let gaps = View::new(a.base, 0, &[2, 2], &[10, 1]).unwrap(); // 0, 1, 10, 11
    let inputs: [(&View, Vec<f64>); 3] = [
        (&column, vec![3.0, 13.0, 23.0, 33.0]),
        (&reversed, vec![59.0, 58.0, 57.0, 56.0]),
        (&broadcast, vec![20.0; 4]),
    ];
    for (x, xs) in &inputs {
        for (y, ys) in &inputs {
            let out = env.empty(DType::F64, &[4, 1]);
            env.run1(Opcode::Subtract, vec![v(&out), v(x), v(y)]).unwrap();
            let want: Vec<f64> = xs.iter().zip(ys).map(|(p, q)| p - q).collect();
            assert_eq!(env.read::<f64>(&out), want, "{x} - {y}");
        }
        let scaled = env.empty(DType::F64, &[4, 1]);
        env.run1(Opcode::Multiply, vec![v(&scaled), c(2.0f64), v(x)]).unwrap();
        assert_eq!(env.read::<f64>(&scaled), xs.iter().map(|p| 2.0 * p).collect::<Vec<_>>(), "2 * {x}");
    }
    // Rows with gaps (not one line) against a column, as 2 x 2.
    let col2 = View::new(a.base, 5, &[2, 2], &[20, 10]).unwrap(); // 5, 15, 25, 35
    let out = env.empty(DType::F64, &[2, 2]);
    env.run1(Opcode::Add, vec![v(&out), v(&gaps), v(&col2)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![5.0, 16.0, 35.0, 46.0]);
    // A strided output written through a column.
    let target = env.array(&[0.0; 12]);
    let every_third = View::new(target.base, 2, &[4, 1], &[3, 1]).unwrap();
    env.run1(Opcode::Negative, vec![v(&every_third), v(&column)]).unwrap();
    assert_eq!(env.base_data::<f64>(&target.base), vec![0., 0., -3., 0., 0., -13., 0., 0., -23., 0., 0., -33.]);
}

#[test]
fn negative_strides_reverse() {
    let mut env = Env::new();
    let a = env.array(&iota_f64(20));
    let reversed = View::new(a.base, 19, &[4, 5], &[-5, -1]).unwrap();
    let out = env.empty(DType::F64, &[4, 5]);
    env.run1(Opcode::Identity, vec![v(&out), v(&reversed)]).unwrap();
    let want: Vec<f64> = (0..20).rev().map(|i| i as f64).collect();
    assert_eq!(env.read::<f64>(&out), want);
    // A negative-stride output.
    let out2 = env.empty(DType::F64, &[20]);
    let backwards = View::new(out2.base, 19, &[20], &[-1]).unwrap();
    env.run1(Opcode::Identity, vec![v(&backwards), v(&a)]).unwrap();
    assert_eq!(env.base_data::<f64>(&out2.base), want);
}

#[test]
fn broadcast_rows_and_columns() {
    let mut env = Env::new();
    let m = env.array_nd(&iota_f64(12), &[4, 3]);
    let row = env.array(&[10.0, 20.0, 30.0]);
    let col = env.array(&[100.0, 200.0, 300.0, 400.0]);
    let row_b = View::new(row.base, 0, &[4, 3], &[0, 1]).unwrap();
    let col_b = View::new(col.base, 0, &[4, 3], &[1, 0]).unwrap();
    let t = env.empty(DType::F64, &[4, 3]);
    let out = env.empty(DType::F64, &[4, 3]);
    env.run(vec![
        Instruction::new(Opcode::Add, [v(&t), v(&m), v(&row_b)]),
        Instruction::new(Opcode::Add, [v(&out), v(&t), v(&col_b)]),
    ])
    .unwrap();
    let want: Vec<f64> = (0..12).map(|i| i as f64 + [10.0, 20.0, 30.0][i % 3] + 100.0 * (i / 3 + 1) as f64).collect();
    assert_eq!(env.read::<f64>(&out), want);
    // One element broadcast to everything.
    let one = View::new(row.base, 2, &[2, 2], &[0, 0]).unwrap();
    let out = env.empty(DType::F64, &[2, 2]);
    env.run1(Opcode::Sqrt, vec![v(&out), v(&one)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![30f64.sqrt(); 4]);
}

#[test]
fn zero_d_views_and_constants() {
    let mut env = Env::new();
    let a = env.array(&[3i32, 4, 5]);
    let a1 = View::new(a.base, 1, &[], &[]).unwrap();
    let out = env.empty(DType::I32, &[]);
    env.run1(Opcode::Multiply, vec![v(&out), v(&a1), c(10i32)]).unwrap();
    assert_eq!(env.read::<i32>(&out), vec![40]);
    // Constants on both sides, broadcast over the output's shape.
    let out = env.empty(DType::F32, &[2, 3]);
    env.run1(Opcode::Power, vec![v(&out), c(2.0f32), c(3.0f32)]).unwrap();
    assert_eq!(env.read::<f32>(&out), vec![8.0; 6]);
    // Select with constant branches; identity (cast) from a constant.
    let cond = env.array(&[true, false, true]);
    let out = env.empty(DType::I16, &[3]);
    env.run1(Opcode::Select, vec![v(&out), v(&cond), c(7i16), c(-7i16)]).unwrap();
    assert_eq!(env.read::<i16>(&out), vec![7, -7, 7]);
    let out = env.empty(DType::U8, &[4]);
    env.run1(Opcode::Identity, vec![v(&out), c(-1.5f64)]).unwrap();
    assert_eq!(env.read::<u8>(&out), vec![0; 4]);
    let out = env.empty(DType::Bool, &[2]);
    env.run1(Opcode::Less, vec![v(&out), c(1u64), c(2u64)]).unwrap();
    assert_eq!(env.read::<bool>(&out), vec![true, true]);
}

#[test]
fn unallocated_inputs_read_as_zeros_and_outputs_are_allocated_lazily() {
    let mut env = Env::new();
    let fresh = env.empty(DType::I64, &[5]);
    let out = env.empty(DType::I64, &[5]);
    assert!(!env.mem.is_allocated(out.base.id));
    env.run1(Opcode::Add, vec![v(&out), v(&fresh), c(1i64)]).unwrap();
    assert_eq!(env.read::<i64>(&out), vec![1; 5]);
    assert!(env.mem.is_allocated(fresh.base.id));
    assert_eq!(env.read::<i64>(&fresh), vec![0; 5]);
}

#[test]
fn empty_views_are_fine() {
    let mut env = Env::new();
    let a = env.empty(DType::F64, &[0]);
    let out = env.empty(DType::F64, &[0]);
    env.run1(Opcode::Exp, vec![v(&out), v(&a)]).unwrap();
    let out = env.empty(DType::F64, &[3, 0, 2]);
    env.run1(Opcode::Add, vec![v(&out), c(1.0f64), c(2.0f64)]).unwrap();
    let out = env.empty(DType::F64, &[0, 4]);
    env.run1(Opcode::AddAccumulate, vec![v(&out), v(&out), axis(1)]).unwrap();
}

/// A 3-d strided view with negative strides over a base of small pseudo-random integers.
fn strided_3d(env: &mut Env) -> (View, Vec<i64>) {
    let data: Vec<i64> = (0..960).map(|i| (i * 7 % 101) - 50).collect();
    let a = env.array(&data);
    let view = View::new(a.base, 900, &[3, 4, 5], &[-240, -20, 2]).unwrap();
    (view, data)
}

fn at(view: &View, data: &[i64], i: usize, j: usize, k: usize) -> i64 {
    data[view.offset_of(&[i, j, k]) as usize]
}

#[test]
fn reductions_along_each_axis_of_a_3d_strided_view() {
    let mut env = Env::new();
    let (view, data) = strided_3d(&mut env);
    let ops = [Opcode::AddReduce, Opcode::MultiplyReduce, Opcode::MaximumReduce, Opcode::MinimumReduce];
    for op in ops {
        for ax in 0..3usize {
            let mut shape = vec![3, 4, 5];
            shape.remove(ax);
            // Write through a transposed (strided) output view.
            let out_base = env.base(DType::I64, shape[0] * shape[1]);
            let out = View::new(out_base, 0, &shape, &[1, shape[0] as i64]).unwrap();
            env.run1(op, vec![v(&out), v(&view), axis(ax as i64)]).unwrap();
            let got = env.read::<i64>(&out);
            let mut want = Vec::new();
            for p in 0..shape[0] {
                for q in 0..shape[1] {
                    let elem = |r: usize| match ax {
                        0 => at(&view, &data, r, p, q),
                        1 => at(&view, &data, p, r, q),
                        _ => at(&view, &data, p, q, r),
                    };
                    let n = [3, 4, 5][ax];
                    let mut acc = elem(0);
                    for r in 1..n {
                        acc = match op {
                            Opcode::AddReduce => acc.wrapping_add(elem(r)),
                            Opcode::MultiplyReduce => acc.wrapping_mul(elem(r)),
                            Opcode::MaximumReduce => acc.max(elem(r)),
                            _ => acc.min(elem(r)),
                        };
                    }
                    want.push(acc);
                }
            }
            assert_eq!(got, want, "{op} along axis {ax}");
        }
    }
}

#[test]
fn accumulates_along_each_axis_of_a_3d_strided_view() {
    let mut env = Env::new();
    let (view, data) = strided_3d(&mut env);
    for op in [Opcode::AddAccumulate, Opcode::MultiplyAccumulate] {
        for ax in 0..3usize {
            let out = env.empty(DType::I64, &[3, 4, 5]);
            env.run1(op, vec![v(&out), v(&view), axis(ax as i64)]).unwrap();
            let got = env.read::<i64>(&out);
            for i in 0..3 {
                for j in 0..4 {
                    for k in 0..5 {
                        let idx = [i, j, k];
                        let mut acc = if op == Opcode::AddAccumulate { 0i64 } else { 1 };
                        for r in 0..=idx[ax] {
                            let mut m = idx;
                            m[ax] = r;
                            let x = at(&view, &data, m[0], m[1], m[2]);
                            acc = if op == Opcode::AddAccumulate { acc.wrapping_add(x) } else { acc.wrapping_mul(x) };
                        }
                        assert_eq!(got[(i * 4 + j) * 5 + k], acc, "{op} axis {ax} at {idx:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn reduction_over_a_broadcast_axis() {
    let mut env = Env::new();
    let a = env.array(&[1.5f64, 2.5]);
    let b = View::new(a.base, 0, &[2, 1000], &[1, 0]).unwrap();
    let out = env.empty(DType::F64, &[2]);
    env.run1(Opcode::AddReduce, vec![v(&out), v(&b), axis(1)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![1500.0, 2500.0]);
}

#[test]
fn overlapping_output_reads_inputs_first() {
    let mut env = Env::new();
    // a[1:] = a[:-1] * 2 with a = 1s: NumPy gives [1, 2, 2, 2, ...], not powers of two.
    let a = env.array(&[1i32; 6]);
    let head = View::new(a.base, 0, &[5], &[1]).unwrap();
    let tail = View::new(a.base, 1, &[5], &[1]).unwrap();
    env.run1(Opcode::Multiply, vec![v(&tail), v(&head), c(2i32)]).unwrap();
    assert_eq!(env.base_data::<i32>(&a.base), vec![1, 2, 2, 2, 2, 2]);
    // a[:-1] = a[1:] + 1 with a = [0, 10, 20, 30, 40, 50].
    let a = env.array(&[0i32, 10, 20, 30, 40, 50]);
    let head = View::new(a.base, 0, &[5], &[1]).unwrap();
    let tail = View::new(a.base, 1, &[5], &[1]).unwrap();
    env.run1(Opcode::Add, vec![v(&head), v(&tail), c(1i32)]).unwrap();
    assert_eq!(env.base_data::<i32>(&a.base), vec![11, 21, 31, 41, 51, 50]);
    // a = a[::-1]: a reversal, not a palindrome.
    let a = env.array(&[1u8, 2, 3, 4, 5]);
    let rev = View::new(a.base, 4, &[5], &[-1]).unwrap();
    env.run1(Opcode::Identity, vec![v(&a), v(&rev)]).unwrap();
    assert_eq!(env.base_data::<u8>(&a.base), vec![5, 4, 3, 2, 1]);
    // In place, identical views.
    let a = env.array(&[1.0f64, 4.0, 9.0]);
    env.run1(Opcode::Sqrt, vec![v(&a), v(&a)]).unwrap();
    assert_eq!(env.base_data::<f64>(&a.base), vec![1.0, 2.0, 3.0]);
    // A scan in place.
    let a = env.array(&[1i64, 2, 3, 4]);
    env.run1(Opcode::AddAccumulate, vec![v(&a), v(&a), axis(0)]).unwrap();
    assert_eq!(env.base_data::<i64>(&a.base), vec![1, 3, 6, 10]);
    // A reduction into part of its own input: a[0] = sum(a).
    let a = env.array(&[1i64, 2, 3, 4]);
    let first = View::new(a.base, 0, &[], &[]).unwrap();
    env.run1(Opcode::AddReduce, vec![v(&first), v(&a), axis(0)]).unwrap();
    assert_eq!(env.base_data::<i64>(&a.base), vec![10, 2, 3, 4]);
    // Transpose in place of a square matrix.
    let a = env.array_nd(&[1i32, 2, 3, 4], &[2, 2]);
    let t = View::new(a.base, 0, &[2, 2], &[1, 2]).unwrap();
    env.run1(Opcode::Identity, vec![v(&a), v(&t)]).unwrap();
    assert_eq!(env.base_data::<i32>(&a.base), vec![1, 3, 2, 4]);
}

/// Outputs whose rows are contiguous but not the whole (an interior block, rows in reverse
/// order, a 3-d block) are written row by row where they lie; elements outside stay.
#[test]
fn outputs_of_contiguous_rows_are_written_where_they_lie() {
    let mut env = Env::new();
    let a = env.array(&iota_f64(30)); // 5 x 6
    let b = env.array(&iota_f64(30).iter().map(|x| 100.0 * x).collect::<Vec<_>>());
    // out[1:4, 1:5] = a[0:3, 2:6] + b[2:5, 0:4]
    let out = env.array(&[-1.0; 30]);
    let block = View::new(out.base, 7, &[3, 4], &[6, 1]).unwrap();
    let x = View::new(a.base, 2, &[3, 4], &[6, 1]).unwrap();
    let y = View::new(b.base, 12, &[3, 4], &[6, 1]).unwrap();
    env.run1(Opcode::Add, vec![v(&block), v(&x), v(&y)]).unwrap();
    let got = env.base_data::<f64>(&out.base);
    for (k, g) in got.iter().enumerate() {
        let (i, j) = (k / 6, k % 6);
        let want = if (1..4).contains(&i) && (1..5).contains(&j) {
            (6 * (i - 1) + j + 1) as f64 + 100.0 * (6 * (i + 1) + j - 1) as f64
        } else {
            -1.0
        };
        assert_eq!(*g, want, "element ({i}, {j})");
    }
    // Rows in reverse order, a broadcast row as the input: out[3::-1, :2] = -a[0, 4:6].
    let out = env.array(&[0.0; 12]); // 4 x 3
    let reversed = View::new(out.base, 9, &[4, 2], &[-3, 1]).unwrap();
    let row = View::new(a.base, 4, &[4, 2], &[0, 1]).unwrap();
    env.run1(Opcode::Negative, vec![v(&reversed), v(&row)]).unwrap();
    assert_eq!(env.base_data::<f64>(&out.base), vec![-4., -5., 0., -4., -5., 0., -4., -5., 0., -4., -5., 0.]);
    // A 2 x 2 x 2 block of a 3 x 3 x 3 array set from a constant.
    let cube = env.array(&[0i32; 27]);
    let inner = View::new(cube.base, 13, &[2, 2, 2], &[9, 3, 1]).unwrap();
    env.run1(Opcode::Identity, vec![v(&inner), c(5i32)]).unwrap();
    let got = env.base_data::<i32>(&cube.base);
    let set: Vec<usize> = (0..27).filter(|&k| got[k] == 5).collect();
    assert_eq!(set, vec![13, 14, 16, 17, 22, 23, 25, 26]);
}

/// An output that is also an input (`x += y`, `x = y - x`, `x = x * x`), with the other input
/// a run, a constant, a strided line, a broadcast row or a view of the output's own base that
/// is not the output (computed aside then), against values computed by position.
#[test]
fn outputs_updated_in_place_read_each_element_before_writing_it() {
    let mut env = Env::new();
    let xs = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
    let ys = iota_f64(12); // 0..12
    let y = env.array(&ys);
    let run = View::new(y.base, 6, &[6], &[1]).unwrap(); // 6..12
    let line = View::new(y.base, 11, &[6], &[-2]).unwrap(); // 11, 9, 7, 5, 3, 1
    let cases: [(Opcode, Option<&View>, bool, Vec<f64>); 6] = [
        (Opcode::Add, Some(&run), true, xs.iter().zip(6..).map(|(x, k)| x + k as f64).collect()),
        (Opcode::Subtract, Some(&run), false, xs.iter().zip(6..).map(|(x, k)| k as f64 - x).collect()),
        (Opcode::Subtract, Some(&line), true, xs.iter().zip([11., 9., 7., 5., 3., 1.]).map(|(x, l)| x - l).collect()),
        (Opcode::Divide, Some(&line), false, xs.iter().zip([11., 9., 7., 5., 3., 1.]).map(|(x, l)| l / x).collect()),
        (Opcode::Multiply, None, true, xs.iter().map(|x| x * x).collect()),
        (Opcode::Power, None, false, xs.iter().map(|x| x.powf(*x)).collect()),
    ];
    for (op, other, out_first, want) in cases {
        let x = env.array(&xs);
        let other = other.map_or(v(&x), v);
        let (a, b) = if out_first { (v(&x), other) } else { (other, v(&x)) };
        env.run1(op, vec![v(&x), a, b]).unwrap();
        assert_eq!(env.base_data::<f64>(&x.base), want, "{op} out_first={out_first}");
    }
    // Constants, and a unary instruction in place.
    let x = env.array(&xs);
    env.run1(Opcode::Subtract, vec![v(&x), c(10.0f64), v(&x)]).unwrap();
    assert_eq!(env.base_data::<f64>(&x.base), xs.iter().map(|x| 10.0 - x).collect::<Vec<_>>());
    env.run1(Opcode::Negative, vec![v(&x), v(&x)]).unwrap();
    assert_eq!(env.base_data::<f64>(&x.base), xs.iter().map(|x| x - 10.0).collect::<Vec<_>>());
    // A 2 x 3 matrix minus a broadcast row, in place: rows of the output against one row.
    let m = env.array_nd(&xs, &[2, 3]);
    let row = View::new(y.base, 1, &[2, 3], &[0, 1]).unwrap(); // 1, 2, 3 twice
    env.run1(Opcode::Subtract, vec![v(&m), v(&m), v(&row)]).unwrap();
    assert_eq!(env.base_data::<f64>(&m.base), vec![0.0, 0.0, 0.0, 3.0, 3.0, 3.0]);
    // The output, and another view of its base: x[1:] = x[1:] + x[:-1] reads x[:-1] first.
    let x = env.array(&xs);
    let (head, tail) = (View::new(x.base, 0, &[5], &[1]).unwrap(), View::new(x.base, 1, &[5], &[1]).unwrap());
    env.run1(Opcode::Add, vec![v(&tail), v(&tail), v(&head)]).unwrap();
    assert_eq!(env.base_data::<f64>(&x.base), vec![1.0, 3.0, 5.0, 7.0, 9.0, 11.0]);
    // A comparison in place over booleans.
    let p = env.array(&[true, false, true, false]);
    let q = env.array(&[true, true, false, false]);
    env.run1(Opcode::NotEqual, vec![v(&p), v(&p), v(&q)]).unwrap();
    assert_eq!(env.base_data::<bool>(&p.base), vec![false, true, true, false]);
}

/// A strided line of a base as the output (a column: `A[:, j] -= t`, `A[::-1, 0] = x * y`),
/// the output itself among the inputs or not, computed where it lies: only the line changes.
#[test]
fn strided_lines_are_computed_where_they_lie() {
    let mut env = Env::new();
    let ys = iota_f64(12); // 0..12
    let y = env.array(&ys);
    let run = View::new(y.base, 8, &[4], &[1]).unwrap(); // 8, 9, 10, 11
    let line = View::new(y.base, 11, &[4], &[-2]).unwrap(); // 11, 9, 7, 5
    let m0: Vec<f64> = (0..12).map(|k| 100.0 + k as f64).collect(); // a 4 x 3 matrix
    // (output column, other input, output first, expected column values)
    type Case = (i64, i64, vm_ir::Operand, Option<bool>, Opcode, Vec<f64>);
    let col1 = [101.0, 104.0, 107.0, 110.0];
    let cases: Vec<Case> = vec![
        (1, 3, v(&run), Some(true), Opcode::Subtract, col1.iter().zip(8..).map(|(a, k)| a - k as f64).collect()),
        (1, 3, v(&line), Some(false), Opcode::Divide, col1.iter().zip([11., 9., 7., 5.]).map(|(a, l)| l / a).collect()),
        (1, 3, c(2.0f64), Some(true), Opcode::Multiply, col1.iter().map(|a| a * 2.0).collect()),
        (1, 3, v(&run), None, Opcode::Add, [8., 9., 10., 11.].iter().map(|r| r + 2.5).collect()),
        // The column read bottom up.
        (
            10,
            -3,
            v(&run),
            Some(true),
            Opcode::Subtract,
            col1.iter().rev().zip(8..).map(|(a, k)| a - k as f64).collect(),
        ),
    ];
    for (start, stride, other, out_first, op, want) in cases {
        let m = env.array(&m0);
        let out = View::new(m.base, start, &[4], &[stride]).unwrap();
        let (a, b) = match out_first {
            Some(true) => (v(&out), other),
            Some(false) => (other, v(&out)),
            None => (other, c(2.5f64)),
        };
        env.run1(op, vec![v(&out), a, b]).unwrap();
        let got = env.base_data::<f64>(&m.base);
        for (k, w) in want.iter().enumerate() {
            assert_eq!(got[(start + k as i64 * stride) as usize], *w, "{op} start {start} stride {stride} k {k}");
        }
        let written: Vec<usize> = (0..4).map(|k| (start + k * stride) as usize).collect();
        for (i, (&g, &m)) in got.iter().zip(&m0).enumerate().filter(|(i, _)| !written.contains(i)) {
            assert_eq!(g, m, "{op}: element {i} is not the output's and kept its value");
        }
    }
    // The column, and another column of its base: computed aside, the same values.
    let m = env.array(&m0);
    let (c1, c2) = (View::new(m.base, 1, &[4], &[3]).unwrap(), View::new(m.base, 2, &[4], &[3]).unwrap());
    env.run1(Opcode::Add, vec![v(&c1), v(&c1), v(&c2)]).unwrap();
    let got = env.base_data::<f64>(&m.base);
    assert_eq!([got[1], got[4], got[7], got[10]], [203.0, 209.0, 215.0, 221.0]);
}

/// Unary instructions along strided lines: a column written from another array's column, run
/// or constant, from itself (`A[:, j] = -A[:, j]`), cast into another dtype's column; and a new
/// array computed from a column read bottom up. Only the line changes.
#[test]
fn unary_instructions_along_strided_lines() {
    let mut env = Env::new();
    let m0: Vec<f64> = (0..12).map(|k| 100.0 + k as f64).collect(); // a 4 x 3 matrix
    let y = env.array(&iota_f64(12));
    let y_col = View::new(y.base, 2, &[4], &[3]).unwrap(); // 2, 5, 8, 11
    let y_run = View::new(y.base, 4, &[4], &[1]).unwrap(); // 4, 5, 6, 7
    let col1 = [101.0, 104.0, 107.0, 110.0];
    // (input: `None` for the output itself, opcode, expected column values)
    type Case = (Option<vm_ir::Operand>, Opcode, [f64; 4]);
    let cases: Vec<Case> = vec![
        (Some(v(&y_col)), Opcode::Negative, [-2.0, -5.0, -8.0, -11.0]),
        (Some(v(&y_run)), Opcode::Sqrt, [4f64.sqrt(), 5f64.sqrt(), 6f64.sqrt(), 7f64.sqrt()]),
        (Some(c(-1.5f64)), Opcode::Absolute, [1.5; 4]),
        (None, Opcode::Negative, col1.map(|x| -x)),
        (None, Opcode::Square, col1.map(|x| x * x)),
    ];
    for (input, op, want) in cases {
        let m = env.array(&m0);
        let out = View::new(m.base, 1, &[4], &[3]).unwrap();
        let input = input.unwrap_or_else(|| v(&out));
        env.run1(op, vec![v(&out), input]).unwrap();
        let got = env.base_data::<f64>(&m.base);
        assert_eq!([got[1], got[4], got[7], got[10]], want, "{op}");
        for (i, (&g, &m)) in got.iter().zip(&m0).enumerate().filter(|(i, _)| i % 3 != 1) {
            assert_eq!(g, m, "{op}: element {i} is not the output's and kept its value");
        }
    }
    // A cast into a column of float32s.
    let f = env.array(&[0.0f32; 8]); // 4 x 2
    let f_col = View::new(f.base, 1, &[4], &[2]).unwrap();
    env.run1(Opcode::Identity, vec![v(&f_col), v(&y_col)]).unwrap();
    assert_eq!(env.base_data::<f32>(&f.base), vec![0.0, 2.0, 0.0, 5.0, 0.0, 8.0, 0.0, 11.0]);
    // A new array from a column read bottom up.
    let fresh = env.empty(DType::F64, &[4]);
    let up = View::new(y.base, 11, &[4], &[-3]).unwrap(); // 11, 8, 5, 2
    env.run1(Opcode::Negative, vec![v(&fresh), v(&up)]).unwrap();
    assert_eq!(env.read::<f64>(&fresh), vec![-11.0, -8.0, -5.0, -2.0]);
}

#[test]
fn instructions_run_in_order_within_a_batch() {
    let mut env = Env::new();
    let a = env.empty(DType::F64, &[4]);
    let b = env.empty(DType::F64, &[4]);
    env.run(vec![
        Instruction::new(Opcode::Range, [v(&a)]),
        Instruction::new(Opcode::Multiply, [v(&b), v(&a), v(&a)]),
        Instruction::new(Opcode::Add, [v(&a), v(&b), c(1.0f64)]),
        Instruction::new(Opcode::Free, [v(&b)]),
    ])
    .unwrap();
    assert_eq!(env.read::<f64>(&a), vec![1.0, 2.0, 5.0, 10.0]);
    assert!(!env.mem.is_allocated(b.base.id));
}

#[test]
fn invalid_instructions_are_rejected_with_their_position() {
    let mut env = Env::new();
    let a = env.empty(DType::F64, &[4]);
    let b = env.empty(DType::F32, &[4]);
    let e = env
        .run(vec![Instruction::new(Opcode::Range, [v(&a)]), Instruction::new(Opcode::Add, [v(&a), v(&a), v(&b)])])
        .unwrap_err();
    assert!(matches!(e, vm_ir::Error::InvalidInstruction { index: Some(1), operand: Some(2), .. }), "{e}");
    // Nothing ran: the batch is validated before execution.
    assert!(!env.mem.is_allocated(a.base.id));
    // A constant of the wrong dtype.
    let e = env.run1(Opcode::Add, vec![v(&a), v(&a), c(Scalar::I32(1))]).unwrap_err();
    assert!(e.to_string().contains("dtype mismatch"), "{e}");
}

#[test]
fn a_million_elements_is_quick() {
    let mut env = Env::new();
    let n = 1 << 20;
    let a = env.empty(DType::F64, &[n]);
    let b = env.empty(DType::F64, &[n]);
    let s = env.empty(DType::F64, &[]);
    let start = std::time::Instant::now();
    env.run(vec![
        Instruction::new(Opcode::Range, [v(&a)]),
        Instruction::new(Opcode::Multiply, [v(&b), v(&a), c(2.0f64)]),
        Instruction::new(Opcode::AddReduce, [v(&s), v(&b), axis(0)]),
    ])
    .unwrap();
    let n = n as f64;
    assert_eq!(env.read::<f64>(&s), vec![n * (n - 1.0)]);
    // Not a benchmark: a generous bound that only catches accidental quadratic behaviour.
    assert!(start.elapsed().as_secs_f64() < 5.0, "{:?}", start.elapsed());
}

/// An output of no elements computes nothing, wherever its start lies (the tail of an empty
/// array past its first column starts past the base's end, as NumPy's `a[:, 1:]` of a (0, 4)
/// array does).
#[test]
fn outputs_of_no_elements_start_anywhere() {
    let mut env = Env::new();
    let empty = env.empty(DType::F64, &[0, 4]);
    let tail = View::new(empty.base, 1, &[0, 3], &[4, 1]).unwrap();
    let source = env.array(&iota_f64(6));
    let none = View::new(source.base, 0, &[0, 3], &[3, 1]).unwrap();
    env.run1(Opcode::Identity, vec![v(&tail), v(&none)]).unwrap();
    env.run1(Opcode::Add, vec![v(&tail), v(&none), c(1.0f64)]).unwrap();
    let column = View::new(empty.base, 1, &[0], &[4]).unwrap();
    env.run1(Opcode::AddReduce, vec![v(&column), v(&tail), c(1i64)]).unwrap();
    assert_eq!(env.read::<f64>(&source), iota_f64(6));
}
