//! `argmin_reduce` and `argmax_reduce`: NumPy's `argmin`/`argmax` on every dtype, with ties,
//! NaN and signed zeros, along every axis of 1-d to 4-d views that are contiguous, strided,
//! reversed, transposed or broadcast (stride 0, the reduced axis included; the layouts of
//! `vm_testkit::fixtures::layouts`), against the reference written from NumPy's rule in
//! `reference::ref_position` and read with the index formula.

mod common;
mod reference;

use common::*;
use reference::ref_position;
use vm_ir::{DType, Error, Opcode, Scalar, View};
use vm_testkit::fixtures::layouts;

const OPS: [Opcode; 2] = [Opcode::ArgminReduce, Opcode::ArgmaxReduce];

/// Runs `op` along `ax` of `input` into a fresh i64 output and returns the positions.
fn positions_of(env: &mut Env, op: Opcode, input: &View, ax: usize) -> Vec<i64> {
    let mut shape = input.shape.to_vec();
    shape.remove(ax);
    let out = env.empty(DType::I64, &shape);
    env.run1(op, vec![v(&out), v(input), axis(ax as i64)]).unwrap_or_else(|e| panic!("{op} axis {ax}: {e}"));
    env.read::<i64>(&out)
}

#[test]
fn ties_nan_and_signed_zeros_follow_numpy() {
    let mut env = Env::new();
    let nan = f64::NAN;
    let cases: [(&[f64], i64, i64); 8] = [
        // (line, argmin, argmax)
        (&[1.0, 3.0, 3.0, 2.0], 0, 1),
        (&[2.0, 1.0, 1.0, 3.0, 3.0], 1, 3),
        (&[1.0, nan, 5.0, nan, -9.0], 1, 1),
        (&[nan, nan], 0, 0),
        (&[4.0, -2.0, 4.0, nan], 3, 3),
        (&[-0.0, 0.0, -0.0], 0, 0),
        (&[0.0, -0.0, 1.0, -1.0], 3, 2),
        (&[f64::NEG_INFINITY, f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY], 0, 1),
    ];
    for (line, argmin, argmax) in cases {
        for dt in [DType::F64, DType::F32] {
            let xs: Vec<Scalar> = line.iter().map(|&x| Scalar::F64(x).cast(dt)).collect();
            let input = env.scalars(dt, &xs);
            assert_eq!(positions_of(&mut env, Opcode::ArgminReduce, &input, 0), vec![argmin], "argmin {line:?} {dt}");
            assert_eq!(positions_of(&mut env, Opcode::ArgmaxReduce, &input, 0), vec![argmax], "argmax {line:?} {dt}");
        }
    }
    let bools = env.array(&[false, true, false, true]);
    assert_eq!(positions_of(&mut env, Opcode::ArgmaxReduce, &bools, 0), vec![1]);
    assert_eq!(positions_of(&mut env, Opcode::ArgminReduce, &bools, 0), vec![0]);
    let all_true = env.array(&[true, true]);
    assert_eq!(positions_of(&mut env, Opcode::ArgminReduce, &all_true, 0), vec![0]);
    let ints = env.array(&[i64::MIN, i64::MAX, i64::MIN, i64::MAX]);
    assert_eq!(positions_of(&mut env, Opcode::ArgminReduce, &ints, 0), vec![0]);
    assert_eq!(positions_of(&mut env, Opcode::ArgmaxReduce, &ints, 0), vec![1]);
    let unsigned = env.array(&[7u8, 255, 0, 255, 0]);
    assert_eq!(positions_of(&mut env, Opcode::ArgminReduce, &unsigned, 0), vec![2]);
    assert_eq!(positions_of(&mut env, Opcode::ArgmaxReduce, &unsigned, 0), vec![1]);
    let one = env.array(&[5i16]);
    assert_eq!(positions_of(&mut env, Opcode::ArgmaxReduce, &one, 0), vec![0]);
}

/// Values of `dt` from a small range, so that lines have ties; floats with NaN and both zeros.
fn tie_rich(dt: DType, n: usize) -> Vec<Scalar> {
    let floats = [0.0, -0.0, 1.0, -1.0, 2.0, f64::NAN, 1.0, -3.0, f64::INFINITY, 0.5, -1.0, 2.0];
    (0..n)
        .map(|i| {
            let k = (i * 7 + i / 5) % 23;
            if dt.is_float() {
                // NaN rarely, so most lines have none.
                let x = floats[k % floats.len()];
                Scalar::F64(if x.is_nan() && k % 2 == 0 { 3.0 } else { x }).cast(dt)
            } else {
                Scalar::I64((k % 5) as i64 - 2).cast(dt)
            }
        })
        .collect()
}

#[test]
fn every_axis_of_strided_reversed_and_broadcast_views_of_every_dtype() {
    let mut env = Env::new();
    let shapes: [&[usize]; 6] = [&[7], &[3, 5], &[4, 1], &[2, 3, 4], &[1, 3, 2], &[2, 3, 1, 4]];
    let mut checked = 0;
    for dt in DType::ALL {
        for shape in shapes {
            let n = 2 * shape.iter().product::<usize>() + 4;
            let data = tie_rich(dt, n);
            let base = env.scalars(dt, &data).base;
            for (name, start, strides) in layouts(shape, n) {
                let input = View::new(base, start, shape, &strides).unwrap();
                for ax in 0..shape.len() {
                    for op in OPS {
                        let got = positions_of(&mut env, op, &input, ax);
                        let mut rest = shape.to_vec();
                        rest.remove(ax);
                        let m: usize = rest.iter().product();
                        let want: Vec<i64> = (0..m)
                            .map(|flat| {
                                // The multi-index of output position `flat`, row-major in `rest`.
                                let mut idx = vec![0; rest.len()];
                                let mut r = flat;
                                for d in (0..rest.len()).rev() {
                                    idx[d] = r % rest[d];
                                    r /= rest[d];
                                }
                                let line: Vec<Scalar> = (0..shape[ax])
                                    .map(|k| {
                                        let mut full = idx.clone();
                                        full.insert(ax, k);
                                        data[input.offset_of(&full) as usize]
                                    })
                                    .collect();
                                ref_position(op, &line).as_i64()
                            })
                            .collect();
                        assert_eq!(got, want, "{op} on {dt}, {name} {shape:?}, axis {ax}");
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn a_strided_output_gets_the_positions_and_nothing_else() {
    let mut env = Env::new();
    let input = env.array_nd(&[3i32, 9, 9, 1, 1, 4], &[2, 3]);
    let out = env.array(&[-5i64; 4]);
    let every_other = View::new(out.base, 3, &[2], &[-2]).unwrap();
    env.run1(Opcode::ArgmaxReduce, vec![v(&every_other), v(&input), axis(1)]).unwrap();
    assert_eq!(env.base_data::<i64>(&out.base), vec![-5, 2, -5, 1], "rows [3, 9, 9] and [1, 1, 4], backwards");
}

#[test]
fn an_empty_axis_is_an_invalid_instruction_naming_it() {
    let mut env = Env::new();
    for op in OPS {
        let input = env.empty(DType::F32, &[2, 0, 3]);
        let out = env.empty(DType::I64, &[2, 3]);
        let e = env.run1(op, vec![v(&out), v(&input), axis(1)]).unwrap_err();
        assert!(matches!(e, Error::InvalidInstruction { index: Some(0), .. }), "{e}");
        let what = if op == Opcode::ArgmaxReduce { "argmax" } else { "argmin" };
        assert!(e.to_string().contains(&format!("the {what} of an empty sequence")), "{e}");
        // Other axes of the same array may be empty on the output side only.
        let out = env.empty(DType::I64, &[0, 3]);
        let input = env.empty(DType::F32, &[0, 2, 3]);
        env.run1(op, vec![v(&out), v(&input), axis(1)]).unwrap();
    }
    // The output must be i64.
    let input = env.empty(DType::F32, &[4]);
    let out = env.empty(DType::I32, &[]);
    let e = env.run1(Opcode::ArgmaxReduce, vec![v(&out), v(&input), axis(0)]).unwrap_err();
    assert!(e.to_string().contains("writes i64 positions"), "{e}");
}
