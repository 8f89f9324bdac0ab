//! Property tests over random shapes, strides (negative and zero included), axes and overlaps,
//! against naive references that enumerate multi-indices as a cartesian product and address
//! elements with `View::offset_of`.

mod common;

use common::*;
use proptest::prelude::*;
use vm_ir::instr::visits_each_element_once;
use vm_ir::{DType, Opcode, View};

/// Every multi-index of `shape`, row-major (the nested loops, written as a cartesian product).
fn all_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|p: Vec<usize>| {
                (0..n).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    out
}

/// The smallest start and base size that hold a view of `shape` and `stride`, with `pad`
/// spare elements before and after.
fn extent(shape: &[usize], stride: &[i64], pad: usize) -> (i64, usize) {
    let (mut neg, mut pos) = (0i64, 0i64);
    for (&n, &s) in shape.iter().zip(stride) {
        if n > 0 {
            let reach = (n as i64 - 1) * s;
            if reach < 0 {
                neg -= reach;
            } else {
                pos += reach;
            }
        }
    }
    let start = neg + pad as i64;
    (start, (start + pos) as usize + 1 + pad)
}

fn layout(max_ndim: usize) -> impl Strategy<Value = (Vec<usize>, Vec<i64>, usize)> {
    (1..=max_ndim).prop_flat_map(|nd| {
        (proptest::collection::vec(0usize..5, nd), proptest::collection::vec(-6i64..=6, nd), 0usize..3)
    })
}

/// A base of `len` pseudo-random i64 values from `seed`, viewed with the given layout.
fn strided(env: &mut Env, shape: &[usize], stride: &[i64], pad: usize, seed: u64) -> View {
    let (start, len) = extent(shape, stride, pad);
    let data: Vec<i64> = (0..len as u64).map(|i| ((i * 2654435761 + seed * 97) % 199) as i64 - 99).collect();
    let a = env.array(&data);
    View::new(a.base, start, shape, stride).unwrap()
}

fn value(env: &Env, view: &View, idx: &[usize]) -> i64 {
    env.base_data::<i64>(&view.base)[view.offset_of(idx) as usize]
}

fn combine(op: Opcode, a: i64, b: i64) -> i64 {
    match op {
        Opcode::AddReduce | Opcode::AddAccumulate => a.wrapping_add(b),
        Opcode::MultiplyReduce | Opcode::MultiplyAccumulate => a.wrapping_mul(b),
        Opcode::MaximumReduce => a.max(b),
        Opcode::MinimumReduce => a.min(b),
        Opcode::BitwiseXorReduce => a ^ b,
        op => panic!("{op}"),
    }
}

fn identity(op: Opcode) -> i64 {
    match op {
        Opcode::AddReduce | Opcode::BitwiseXorReduce => 0,
        Opcode::MultiplyReduce => 1,
        Opcode::MaximumReduce => i64::MIN,
        Opcode::MinimumReduce => i64::MAX,
        op => panic!("{op}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reductions_match_nested_loops(
        (shape, stride, pad) in layout(4),
        axis_pick in 0usize..4,
        op in prop::sample::select(vec![
            Opcode::AddReduce, Opcode::MultiplyReduce, Opcode::MaximumReduce,
            Opcode::MinimumReduce, Opcode::BitwiseXorReduce,
        ]),
        seed in 0u64..1000,
    ) {
        let mut env = Env::new();
        let input = strided(&mut env, &shape, &stride, pad, seed);
        let ax = axis_pick % shape.len();
        let mut out_shape = shape.clone();
        out_shape.remove(ax);
        let out = env.empty(DType::I64, &out_shape);
        env.run1(op, vec![v(&out), v(&input), axis(ax as i64)]).unwrap();
        let mut want = Vec::new();
        for idx in all_indices(&out_shape) {
            let mut acc = identity(op);
            for k in 0..shape[ax] {
                let mut full = idx.clone();
                full.insert(ax, k);
                acc = combine(op, acc, value(&env, &input, &full));
            }
            want.push(acc);
        }
        prop_assert_eq!(env.read::<i64>(&out), want);
    }

    #[test]
    fn accumulates_match_nested_loops(
        (shape, stride, pad) in layout(3),
        axis_pick in 0usize..3,
        op in prop::sample::select(vec![Opcode::AddAccumulate, Opcode::MultiplyAccumulate]),
        seed in 0u64..1000,
    ) {
        let mut env = Env::new();
        let input = strided(&mut env, &shape, &stride, pad, seed);
        let ax = axis_pick % shape.len();
        let out = env.empty(DType::I64, &shape);
        env.run1(op, vec![v(&out), v(&input), axis(ax as i64)]).unwrap();
        let mut want = Vec::new();
        for idx in all_indices(&shape) {
            let mut full = idx.clone();
            full[ax] = 0;
            let mut acc = value(&env, &input, &full);
            for k in 1..=idx[ax] {
                full[ax] = k;
                acc = combine(op, acc, value(&env, &input, &full));
            }
            want.push(acc);
        }
        prop_assert_eq!(env.read::<i64>(&out), want);
    }

    #[test]
    fn elementwise_on_any_layouts(
        (shape, s1, pad1) in layout(4),
        s2 in proptest::collection::vec(-6i64..=6, 4),
        s_out in proptest::collection::vec(-3i64..=3, 4),
        seed in 0u64..1000,
    ) {
        let mut env = Env::new();
        let nd = shape.len();
        let a = strided(&mut env, &shape, &s1, pad1, seed);
        let b = strided(&mut env, &shape, &s2[..nd], 1, seed + 1);
        // The output: a permuted-stride view when injective, else contiguous.
        let (start, len) = extent(&shape, &s_out[..nd], 0);
        let base = env.base(DType::I64, len);
        let candidate = View::new(base, start, &shape, &s_out[..nd]).unwrap();
        let out = if visits_each_element_once(&candidate) { candidate } else { env.empty(DType::I64, &shape) };
        env.run1(Opcode::Subtract, vec![v(&out), v(&a), v(&b)]).unwrap();
        let want: Vec<i64> = all_indices(&shape)
            .iter()
            .map(|idx| value(&env, &a, idx).wrapping_sub(value(&env, &b, idx)))
            .collect();
        prop_assert_eq!(env.read::<i64>(&out), want);
    }

    #[test]
    fn overlapping_views_of_one_base_behave_as_if_inputs_were_copied(
        shape in proptest::collection::vec(1usize..5, 1..=3),
        s_in in proptest::collection::vec(-4i64..=4, 3),
        s_out in proptest::collection::vec(-4i64..=4, 3),
        start_in in 0i64..80,
        shift in -8i64..=8,
    ) {
        let start_out = start_in + shift;
        let nd = shape.len();
        let mut env = Env::new();
        let data: Vec<i64> = (0..100).map(|i| i * 3 - 100).collect();
        let a = env.array(&data);
        let (input, out) = match (
            View::new(a.base, start_in, &shape, &s_in[..nd]),
            View::new(a.base, start_out, &shape, &s_out[..nd]),
        ) {
            (Ok(i), Ok(o)) if visits_each_element_once(&o) => (i, o),
            _ => return Ok(()), // outside the base, or an output that repeats elements
        };
        env.run1(Opcode::Multiply, vec![v(&out), v(&input), c(2i64)]).unwrap();
        let mut want = data.clone();
        for idx in all_indices(&shape) {
            want[out.offset_of(&idx) as usize] = 2 * data[input.offset_of(&idx) as usize];
        }
        prop_assert_eq!(env.base_data::<i64>(&a.base), want);
    }
}
