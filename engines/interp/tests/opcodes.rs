//! The table-driven oracle test: every opcode of `Opcode::ALL`, on every dtype its type rule
//! allows, against references written here from NumPy's semantics: integer results computed
//! exactly in `i128` and wrapped to the dtype, float results with Rust std, casts with the
//! contract's `Scalar::cast`, random numbers with the contract's `vm_ir::random`. An opcode or
//! (opcode, dtype) pair the engine does not implement makes the test fail, and so does an opcode
//! with no reference here.

mod common;
mod reference;

use common::*;
use reference::*;
use vm_ir::opcode::{DTypeSet, TypeRule};
use vm_ir::random::{FromRandomBits, random_bits};
use vm_ir::{DType, Kind, Opcode, Scalar, with_dtype};

// ---------------------------------------------------------------- checks

type Check = Result<(), String>;

fn tolerant_of_zero_sign(op: Opcode) -> bool {
    use Opcode::*;
    matches!(op, Maximum | Minimum | Fmax | Fmin | MaximumReduce | MinimumReduce)
}

fn compare(what: &str, op: Opcode, inputs: &[String], expected: &[Scalar], got: &[Scalar]) -> Check {
    if expected.len() != got.len() {
        return Err(format!("{what}: {} results, expected {}", got.len(), expected.len()));
    }
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        let ok = if tolerant_of_zero_sign(op) {
            same_ignoring_zero_sign(*e, *g)
        } else if matches!(op, Opcode::Arccosh | Opcode::Arctanh) {
            // The reference is std's formula; the engines compute libm's (NumPy's), which
            // differs from it by up to an ulp at these values (more near the poles, where
            // std's loses accuracy: `vm_ir::semantics`).
            same(*e, *g) || within_one_ulp(*e, *g)
        } else if matches!(op, Opcode::Exp | Opcode::Log) {
            // The engines compute `vm_math`'s, documented within an ulp of std's (libm's).
            same(*e, *g) || within_one_ulp(*e, *g)
        } else {
            same(*e, *g)
        };
        if !ok {
            return Err(format!("{what}: element {i} ({}): got {g}, expected {e}", inputs[i]));
        }
    }
    Ok(())
}

/// True for two finite floats of one dtype and sign at most one unit in the last place apart.
fn within_one_ulp(e: Scalar, g: Scalar) -> bool {
    match (e, g) {
        (Scalar::F64(a), Scalar::F64(b)) => a.is_finite() && b.is_finite() && a.to_bits().abs_diff(b.to_bits()) <= 1,
        (Scalar::F32(a), Scalar::F32(b)) => a.is_finite() && b.is_finite() && a.to_bits().abs_diff(b.to_bits()) <= 1,
        _ => false,
    }
}

fn run(env: &mut Env, what: &str, op: Opcode, operands: Vec<vm_ir::Operand>) -> Check {
    env.run1(op, operands).map_err(|e| format!("{what}: {e}"))
}

fn out_dtype(op: Opcode, dt: DType) -> DType {
    match op.type_rule() {
        TypeRule::ToBool(_) => DType::Bool,
        TypeRule::ToPosition(_) => DType::I64,
        _ => dt,
    }
}

fn check_unary(env: &mut Env, op: Opcode, dt: DType) -> Check {
    let what = format!("{op} on {dt}");
    let xs = values(dt);
    let a = env.scalars(dt, &xs);
    let out = env.empty(out_dtype(op, dt), &[xs.len()]);
    run(env, &what, op, vec![v(&out), v(&a)])?;
    let expected: Vec<Scalar> = xs.iter().map(|&x| ref_unary(op, x)).collect();
    let inputs: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    compare(&what, op, &inputs, &expected, &env.read_scalars(&out))
}

/// The operand pairs a binary opcode is checked on: all pairs of test values, except where a
/// narrower domain keeps the reference simple (documented at each case).
fn binary_inputs(op: Opcode, dt: DType) -> Vec<(Scalar, Scalar)> {
    use Opcode::*;
    let (xs, ys) = match op {
        // Quotients exact or at least 1/6 away from an integer, and division by zeros.
        FloorDivide | Remainder if dt.is_float() => (
            floats(&[-7.0, -3.5, -2.0, -0.5, -0.0, 0.0, 0.5, 2.0, 3.0, 7.0, 9.5], dt),
            floats(&[-2.0, -0.5, 0.5, 2.0, 3.0, 4.0, 0.0, -0.0], dt),
        ),
        // Exponents the naive reference can loop over.
        Power if dt.is_integer() => {
            let ys: &[i128] = if dt.is_signed() {
                &[-3, -2, -1, 0, 1, 2, 3, 5, 7, 13, 31, 32, 63, 64, 65]
            } else {
                &[0, 1, 2, 3, 5, 7, 13, 31, 32, 63, 64, 65]
            };
            (values(dt), ints(ys, dt))
        }
        LeftShift | RightShift => {
            let (lo, hi) = int_range(dt);
            (values(dt), ints(&[-1, 0, 1, 3, 7, 8, 15, 16, 31, 32, 63, 64, 65, 100, lo, hi], dt))
        }
        _ => (values(dt), values(dt)),
    };
    xs.iter().flat_map(|&x| ys.iter().map(move |&y| (x, y))).collect()
}

fn check_binary(env: &mut Env, op: Opcode, dt: DType) -> Check {
    let what = format!("{op} on {dt}");
    let pairs = binary_inputs(op, dt);
    let (xs, ys): (Vec<Scalar>, Vec<Scalar>) = pairs.iter().copied().unzip();
    let (a, b) = (env.scalars(dt, &xs), env.scalars(dt, &ys));
    let out = env.empty(out_dtype(op, dt), &[pairs.len()]);
    run(env, &what, op, vec![v(&out), v(&a), v(&b)])?;
    let expected: Vec<Scalar> = pairs.iter().map(|&(x, y)| ref_binary(op, x, y)).collect();
    let inputs: Vec<String> = pairs.iter().map(|(x, y)| format!("{x}, {y}")).collect();
    compare(&what, op, &inputs, &expected, &env.read_scalars(&out))
}

fn check_cast(env: &mut Env, from: DType, to: DType) -> Check {
    let what = format!("identity {from} -> {to}");
    let xs = values(from);
    let a = env.scalars(from, &xs);
    let out = env.empty(to, &[xs.len()]);
    run(env, &what, Opcode::Identity, vec![v(&out), v(&a)])?;
    let expected: Vec<Scalar> = xs.iter().map(|x| x.cast(to)).collect();
    let inputs: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    compare(&what, Opcode::Identity, &inputs, &expected, &env.read_scalars(&out))
}

fn check_select(env: &mut Env, dt: DType) -> Check {
    let what = format!("select on {dt}");
    let xs = values(dt);
    let ys: Vec<Scalar> = xs.iter().rev().copied().collect();
    let conds: Vec<bool> = (0..xs.len()).map(|i| i % 3 != 1).collect();
    let cond = env.array(&conds);
    let (a, b) = (env.scalars(dt, &xs), env.scalars(dt, &ys));
    let out = env.empty(dt, &[xs.len()]);
    run(env, &what, Opcode::Select, vec![v(&out), v(&cond), v(&a), v(&b)])?;
    let expected: Vec<Scalar> = (0..xs.len()).map(|i| if conds[i] { xs[i] } else { ys[i] }).collect();
    let inputs: Vec<String> = (0..xs.len()).map(|i| format!("{}, {}, {}", conds[i], xs[i], ys[i])).collect();
    compare(&what, Opcode::Select, &inputs, &expected, &env.read_scalars(&out))
}

/// `n` test values of `dt`, repeating the list as needed.
fn cycled(dt: DType, n: usize) -> Vec<Scalar> {
    values(dt).into_iter().cycle().take(n).collect()
}

fn check_reduce(env: &mut Env, op: Opcode, dt: DType) -> Check {
    let (rows, cols) = (4, 5);
    let xs = cycled(dt, rows * cols);
    let input = env.scalars(dt, &xs);
    let input = vm_ir::View::contiguous(input.base, 0, &[rows, cols]).unwrap();
    let out_dt = out_dtype(op, dt);
    let at = |r: usize, c: usize| xs[r * cols + c];
    for ax in 0..2 {
        let what = format!("{op} on {dt} along axis {ax} of 4x5");
        let (n_out, n_along) = if ax == 0 { (cols, rows) } else { (rows, cols) };
        let out = env.empty(out_dt, &[n_out]);
        run(env, &what, op, vec![v(&out), v(&input), axis(ax as i64)])?;
        let mut expected = Vec::new();
        let mut inputs = Vec::new();
        for j in 0..n_out {
            let elem = |k: usize| if ax == 0 { at(k, j) } else { at(j, k) };
            let mut acc = elem(0);
            for k in 1..n_along {
                acc = ref_combine(op, acc, elem(k));
            }
            if out_dt == DType::Bool {
                acc = Scalar::Bool(truthy(acc));
            }
            expected.push(acc);
            inputs.push(format!("{:?}", (0..n_along).map(|k| elem(k).to_string()).collect::<Vec<_>>()));
        }
        compare(&what, op, &inputs, &expected, &env.read_scalars(&out))?;
    }
    // Empty axes give the identity; a 1-d input gives a 0-d output.
    for (shape, ax) in [([0usize, 3usize], 0i64), ([3, 0], 1)] {
        let what = format!("{op} on {dt} along axis {ax} of {shape:?}");
        let input = env.empty(dt, &shape);
        let out = env.empty(out_dt, &[3]);
        run(env, &what, op, vec![v(&out), v(&input), axis(ax)])?;
        let expected = vec![ref_identity(op, dt); 3];
        compare(&what, op, &["empty".into(), "empty".into(), "empty".into()], &expected, &env.read_scalars(&out))?;
    }
    let what = format!("{op} on {dt} to 0-d");
    let line = env.scalars(dt, &xs[..3]);
    let out = env.empty(out_dt, &[]);
    run(env, &what, op, vec![v(&out), v(&line), axis(0)])?;
    let mut acc = ref_combine(op, xs[0], xs[1]);
    acc = ref_combine(op, acc, xs[2]);
    if out_dt == DType::Bool {
        acc = Scalar::Bool(truthy(acc));
    }
    compare(&what, op, &["3 values".into()], &[acc], &env.read_scalars(&out))
}

/// `argmin_reduce` and `argmax_reduce`: along both axes of two 2-d arrangements of the test
/// values (ties, and for floats both zeros, infinities and NaN, in every line), along a whole
/// line of them forwards and backwards, and an empty axis, which is invalid.
fn check_arg_reduce(env: &mut Env, op: Opcode, dt: DType) -> Check {
    let xs = values(dt);
    for (rows, cols) in [(4, 5), (5, 4)] {
        let data = cycled(dt, rows * cols + 3)[3..].to_vec();
        let input = env.scalars(dt, &data);
        let input = vm_ir::View::contiguous(input.base, 0, &[rows, cols]).unwrap();
        for ax in 0..2 {
            let what = format!("{op} on {dt} along axis {ax} of {rows}x{cols}");
            let (n_out, n_along) = if ax == 0 { (cols, rows) } else { (rows, cols) };
            let out = env.empty(DType::I64, &[n_out]);
            run(env, &what, op, vec![v(&out), v(&input), axis(ax as i64)])?;
            let mut expected = Vec::new();
            let mut inputs = Vec::new();
            for j in 0..n_out {
                let line: Vec<Scalar> =
                    (0..n_along).map(|k| if ax == 0 { data[k * cols + j] } else { data[j * cols + k] }).collect();
                expected.push(ref_position(op, &line));
                inputs.push(format!("{:?}", line.iter().map(|x| x.to_string()).collect::<Vec<_>>()));
            }
            compare(&what, op, &inputs, &expected, &env.read_scalars(&out))?;
        }
    }
    for line in [xs.clone(), xs.iter().rev().copied().collect()] {
        let what = format!("{op} on {dt} to 0-d");
        let input = env.scalars(dt, &line);
        let out = env.empty(DType::I64, &[]);
        run(env, &what, op, vec![v(&out), v(&input), axis(0)])?;
        compare(&what, op, &["the test values".into()], &[ref_position(op, &line)], &env.read_scalars(&out))?;
    }
    let what = format!("{op} on {dt} along an empty axis");
    let input = env.empty(dt, &[3, 0]);
    let out = env.empty(DType::I64, &[3]);
    match env.run1(op, vec![v(&out), v(&input), axis(1)]) {
        Err(vm_ir::Error::InvalidInstruction { .. }) => Ok(()),
        r => Err(format!("{what}: {r:?}, expected an invalid instruction")),
    }
}

fn check_accumulate(env: &mut Env, op: Opcode, dt: DType) -> Check {
    let (rows, cols) = (4, 5);
    let xs = cycled(dt, rows * cols);
    let input = env.scalars(dt, &xs);
    let input = vm_ir::View::contiguous(input.base, 0, &[rows, cols]).unwrap();
    for ax in 0..2 {
        let what = format!("{op} on {dt} along axis {ax} of 4x5");
        let out = env.empty(dt, &[rows, cols]);
        run(env, &what, op, vec![v(&out), v(&input), axis(ax)])?;
        let mut expected = xs.clone();
        for r in 0..rows {
            for c in 0..cols {
                let prev = if ax == 0 {
                    r.checked_sub(1).map(|p| p * cols + c)
                } else {
                    c.checked_sub(1).map(|p| r * cols + p)
                };
                if let Some(p) = prev {
                    expected[r * cols + c] = ref_combine(op, expected[p], xs[r * cols + c]);
                }
            }
        }
        let inputs: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
        compare(&what, op, &inputs, &expected, &env.read_scalars(&out))?;
    }
    Ok(())
}

fn check_sort(env: &mut Env, op: Opcode, dt: DType) -> Check {
    for (rows, cols) in [(4, 5), (5, 4), (1, 23)] {
        // Shifted so that lines mix zeros of both signs, NaNs, infinities and repeats.
        let data = cycled(dt, rows * cols + 3)[3..].to_vec();
        let input = env.scalars(dt, &data);
        let input = vm_ir::View::contiguous(input.base, 0, &[rows, cols]).unwrap();
        for ax in 0..2 {
            let what = format!("{op} on {dt} along axis {ax} of {rows}x{cols}");
            let out = env.empty(if op == Opcode::Argsort { DType::I64 } else { dt }, &[rows, cols]);
            run(env, &what, op, vec![v(&out), v(&input), axis(ax as i64)])?;
            let (n_lines, len) = if ax == 0 { (cols, rows) } else { (rows, cols) };
            let at = |line: usize, k: usize| if ax == 0 { k * cols + line } else { line * cols + k };
            let mut expected = data.clone();
            for line in 0..n_lines {
                let xs: Vec<Scalar> = (0..len).map(|k| data[at(line, k)]).collect();
                for (k, p) in ref_sort_positions(&xs, op == Opcode::Sort).into_iter().enumerate() {
                    expected[at(line, k)] = if op == Opcode::Argsort { Scalar::I64(p as i64) } else { xs[p] };
                }
            }
            let inputs: Vec<String> = data.iter().map(|x| x.to_string()).collect();
            compare(&what, op, &inputs, &expected, &env.read_scalars(&out))?;
        }
    }
    Ok(())
}

fn check_search(env: &mut Env, op: Opcode, dt: DType) -> Check {
    // Values mixing zeros of both signs, NaNs, infinities and repeats, sorted; every one of them
    // and more searched for.
    let data = cycled(dt, 26);
    let sorted: Vec<Scalar> = ref_sort_positions(&data, false).into_iter().map(|p| data[p]).collect();
    let keys = cycled(dt, 31)[5..].to_vec();
    let (line, wanted) = (env.scalars(dt, &sorted), env.scalars(dt, &keys));
    let wanted = vm_ir::View::contiguous(wanted.base, 0, &[2, 13]).unwrap();
    let what = format!("{op} on {dt}");
    let out = env.empty(DType::I64, &[2, 13]);
    run(env, &what, op, vec![v(&out), v(&line), v(&wanted)])?;
    let right = op == Opcode::SearchsortedRight;
    let expected: Vec<Scalar> = keys.iter().map(|&k| Scalar::I64(ref_search(&sorted, k, right) as i64)).collect();
    let inputs: Vec<String> = keys.iter().map(|x| x.to_string()).collect();
    compare(&what, op, &inputs, &expected, &env.read_scalars(&out))
}

fn check_range(env: &mut Env, dt: DType) -> Check {
    let what = format!("range on {dt}");
    let out = env.empty(dt, &[3, 100]);
    run(env, &what, Opcode::Range, vec![v(&out)])?;
    let expected: Vec<Scalar> = (0..300u64).map(|i| Scalar::U64(i).cast(dt)).collect();
    let inputs: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    compare(&what, Opcode::Range, &inputs, &expected, &env.read_scalars(&out))
}

fn check_random(env: &mut Env, dt: DType) -> Check {
    let what = format!("random on {dt}");
    let (seed, offset) = (0xdead_beef_u64, 7u64);
    let out = env.empty(dt, &[4, 8]);
    run(env, &what, Opcode::Random, vec![v(&out), c(seed), c(offset)])?;
    let expected: Vec<Scalar> = (0..32u64)
        .map(|i| with_dtype!(dt, T => Scalar::from(T::from_random_bits(random_bits(seed, offset + i)))))
        .collect();
    let inputs: Vec<String> = (0..32).map(|i| format!("counter {}", offset + i)).collect();
    let got = env.read_scalars(&out);
    if dt.is_float() && !got.iter().all(|x| (0.0..1.0).contains(&x.as_f64())) {
        return Err(format!("{what}: values outside [0, 1): {got:?}"));
    }
    compare(&what, Opcode::Random, &inputs, &expected, &got)
}

fn check_gather(env: &mut Env, dt: DType, index_dt: DType) -> Check {
    let what = format!("gather {dt} by {index_dt}");
    let xs = values(dt);
    let src = env.scalars(dt, &xs);
    let picks: Vec<usize> = vec![xs.len() - 1, 0, 1, 1, xs.len() / 2];
    let index = env.scalars(index_dt, &picks.iter().map(|&i| Scalar::U64(i as u64)).collect::<Vec<_>>());
    let out = env.empty(dt, &[picks.len()]);
    run(env, &what, Opcode::Gather, vec![v(&out), v(&src), v(&index)])?;
    let expected: Vec<Scalar> = picks.iter().map(|&i| xs[i]).collect();
    let inputs: Vec<String> = picks.iter().map(|i| format!("index {i}")).collect();
    compare(&what, Opcode::Gather, &inputs, &expected, &env.read_scalars(&out))
}

fn check_scatter(env: &mut Env, op: Opcode, dt: DType, index_dt: DType) -> Check {
    let what = format!("{op} {dt} by {index_dt}");
    let xs = values(dt);
    let initial: Vec<Scalar> = xs.iter().rev().copied().collect();
    let dst = env.scalars(dt, &initial);
    let ys = cycled(dt, 3);
    let src = env.scalars(dt, &ys);
    let index = env.scalars(index_dt, &[Scalar::U64(1), Scalar::U64(0), Scalar::U64(1)]);
    run(env, &what, op, vec![v(&dst), v(&src), v(&index)])?;
    let mut expected = initial.clone();
    if op == Opcode::ScatterAdd {
        // Repeated positions accumulate, in index order (bools or, as NumPy's bool `add`).
        let add = if dt == DType::Bool { Opcode::BitwiseOr } else { Opcode::Add };
        expected[0] = ref_binary(add, initial[0], ys[1]);
        expected[1] = ref_binary(add, ref_binary(add, initial[1], ys[0]), ys[2]);
    } else {
        expected[0] = ys[1];
        expected[1] = ys[2]; // index 1 repeats: the later element wins
    }
    let inputs: Vec<String> = (0..xs.len()).map(|i| format!("dst[{i}]")).collect();
    compare(&what, op, &inputs, &expected, &env.read_scalars(&dst))
}

fn check_system(env: &mut Env, op: Opcode, dt: DType) -> Check {
    let what = format!("{op} on {dt}");
    let xs = values(dt);
    let a = env.scalars(dt, &xs);
    let unwritten = env.empty(dt, &[4]);
    let operands = if op == Opcode::None { vec![] } else { vec![v(&a)] };
    run(env, &what, op, operands)?;
    match op {
        Opcode::Free => {
            if env.mem.is_allocated(a.base.id) {
                return Err(format!("{what}: the base is still allocated"));
            }
            Ok(())
        }
        Opcode::Sync => {
            run(env, &what, op, vec![v(&unwritten)])?;
            let zeros = vec![Scalar::U64(0).cast(dt); 4];
            compare(&what, op, &vec!["unwritten".to_string(); 4], &zeros, &env.read_scalars(&unwritten))?;
            let inputs: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
            compare(&what, op, &inputs, &xs, &env.read_scalars(&a))
        }
        _ => {
            let inputs: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
            compare(&what, op, &inputs, &xs, &env.read_scalars(&a))
        }
    }
}

/// The dtypes of operand 0 (or of the input, for casts) that an opcode's type rule allows.
fn allowed(op: Opcode) -> Vec<DType> {
    match op.type_rule() {
        TypeRule::Same(s) | TypeRule::ToBool(s) | TypeRule::ToPosition(s) | TypeRule::Generate(s) => {
            s.dtypes().collect()
        }
        TypeRule::Cast | TypeRule::Select | TypeRule::Indexed | TypeRule::Any => DType::ALL.to_vec(),
    }
}

#[test]
fn every_opcode_on_every_allowed_dtype() {
    let mut env = Env::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for &op in Opcode::ALL {
        for dt in allowed(op) {
            let mut results = Vec::new();
            match op.kind() {
                Kind::Unary if op == Opcode::Identity => {
                    results.extend(DType::ALL.iter().map(|&to| check_cast(&mut env, dt, to)))
                }
                Kind::Unary => results.push(check_unary(&mut env, op, dt)),
                Kind::Binary => results.push(check_binary(&mut env, op, dt)),
                Kind::Select => results.push(check_select(&mut env, dt)),
                Kind::Reduce if op.is_arg_reduce() => results.push(check_arg_reduce(&mut env, op, dt)),
                Kind::Reduce => results.push(check_reduce(&mut env, op, dt)),
                Kind::Accumulate => results.push(check_accumulate(&mut env, op, dt)),
                Kind::Sort => results.push(check_sort(&mut env, op, dt)),
                Kind::Search => results.push(check_search(&mut env, op, dt)),
                Kind::Range => results.push(check_range(&mut env, dt)),
                Kind::Random => results.push(check_random(&mut env, dt)),
                Kind::Gather => {
                    results.extend(DTypeSet::INTEGER.dtypes().map(|i| check_gather(&mut env, dt, i)));
                }
                Kind::Scatter => {
                    results.extend(DTypeSet::INTEGER.dtypes().map(|i| check_scatter(&mut env, op, dt, i)));
                }
                Kind::System | Kind::Nothing => results.push(check_system(&mut env, op, dt)),
                Kind::Extension => results.push(Err(format!("{op}: an extension in the built-in table"))),
            }
            checked += results.len();
            failures.extend(results.into_iter().filter_map(Result::err));
        }
    }
    assert!(failures.is_empty(), "{} of {checked} checks failed:\n{}", failures.len(), failures.join("\n"));
    assert!(checked > 500, "only {checked} checks ran");
}
