//! Reference semantics for the table-driven test, written from NumPy's rules: integer results
//! computed exactly in `i128` and wrapped to the dtype, float results with Rust std, and the
//! test values of each dtype.
#![allow(dead_code)] // each test binary uses part of the references

use std::cmp::Ordering;
use vm_ir::{DType, Opcode, Scalar};

/// The range of an integer dtype.
pub fn int_range(dt: DType) -> (i128, i128) {
    match dt {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::I64 => (i64::MIN.into(), i64::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        DType::U64 => (0, u64::MAX.into()),
        d => panic!("{d} is not an integer dtype"),
    }
}

/// An integer or bool scalar's exact value.
pub fn int_of(s: Scalar) -> i128 {
    match s {
        Scalar::Bool(b) => b.into(),
        Scalar::I8(x) => x.into(),
        Scalar::I16(x) => x.into(),
        Scalar::I32(x) => x.into(),
        Scalar::I64(x) => x.into(),
        Scalar::U8(x) => x.into(),
        Scalar::U16(x) => x.into(),
        Scalar::U32(x) => x.into(),
        Scalar::U64(x) => x.into(),
        s => panic!("{s:?} is not an integer"),
    }
}

/// `x` reduced modulo 2^width into the integer dtype `dt` (two's complement).
pub fn wrap(x: i128, dt: DType) -> Scalar {
    let (lo, hi) = int_range(dt);
    let m = hi - lo + 1;
    let r = (x - lo).rem_euclid(m) + lo;
    match dt {
        DType::I8 => Scalar::I8(r as i8),
        DType::I16 => Scalar::I16(r as i16),
        DType::I32 => Scalar::I32(r as i32),
        DType::I64 => Scalar::I64(r as i64),
        DType::U8 => Scalar::U8(r as u8),
        DType::U16 => Scalar::U16(r as u16),
        DType::U32 => Scalar::U32(r as u32),
        _ => Scalar::U64(r as u64),
    }
}

/// Test values of a dtype: small numbers of both signs, the extremes, and for floats the
/// specials (signed zeros, infinities, NaN).
pub fn values(dt: DType) -> Vec<Scalar> {
    if dt == DType::Bool {
        return vec![Scalar::Bool(false), Scalar::Bool(true)];
    }
    if dt.is_float() {
        let xs = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            -2.0,
            3.0,
            -7.0,
            7.0,
            2.5,
            -2.5,
            0.1,
            100.0,
            1e30,
            -1e30,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        return xs.iter().map(|&x| Scalar::F64(x).cast(dt)).collect();
    }
    let (lo, hi) = int_range(dt);
    let xs = [0, 1, -1, 2, -2, 3, -3, 5, 7, -7, 100, -100, 127, -128, 255, lo, lo + 1, hi - 1, hi];
    let mut out: Vec<Scalar> = Vec::new();
    for x in xs {
        let s = wrap(x, dt);
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

pub fn ints(xs: &[i128], dt: DType) -> Vec<Scalar> {
    xs.iter().map(|&x| wrap(x, dt)).collect()
}

pub fn floats(xs: &[f64], dt: DType) -> Vec<Scalar> {
    xs.iter().map(|&x| Scalar::F64(x).cast(dt)).collect()
}

// ---------------------------------------------------------------- references

macro_rules! fl1 {
    ($x:expr, |$v:ident| $e:expr) => {
        match $x {
            Scalar::F32($v) => Scalar::F32($e),
            Scalar::F64($v) => Scalar::F64($e),
            s => panic!("{s:?} is not a float"),
        }
    };
}

macro_rules! fl2 {
    ($x:expr, $y:expr, |$a:ident, $b:ident| $e:expr) => {
        match ($x, $y) {
            (Scalar::F32($a), Scalar::F32($b)) => Scalar::F32($e),
            (Scalar::F64($a), Scalar::F64($b)) => Scalar::F64($e),
            s => panic!("{s:?} are not floats of one dtype"),
        }
    };
}

macro_rules! flb {
    ($x:expr, |$v:ident| $e:expr) => {
        match $x {
            Scalar::F32($v) => Scalar::Bool($e),
            Scalar::F64($v) => Scalar::Bool($e),
            s => panic!("{s:?} is not a float"),
        }
    };
}

/// Nonzero is true; NaN is true.
pub fn truthy(s: Scalar) -> bool {
    match s {
        Scalar::F32(x) => x != 0.0,
        Scalar::F64(x) => x != 0.0,
        s => int_of(s) != 0,
    }
}

/// Ordering of two scalars of one dtype (exact: f32 -> f64 loses nothing).
pub fn order(a: Scalar, b: Scalar) -> Option<Ordering> {
    if a.dtype().is_float() { a.as_f64().partial_cmp(&b.as_f64()) } else { Some(int_of(a).cmp(&int_of(b))) }
}

/// Floor division of exact integers.
pub fn floor_div(x: i128, y: i128) -> i128 {
    if y > 0 { x.div_euclid(y) } else { (-x).div_euclid(-y) }
}

pub fn int_power(x: i128, y: i128, dt: DType) -> i128 {
    if y < 0 {
        return match x {
            1 => 1,
            -1 if y % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let mut r: i128 = 1;
    for _ in 0..y {
        r = int_of(wrap(r.wrapping_mul(x), dt));
    }
    r
}

pub fn ref_unary(op: Opcode, x: Scalar) -> Scalar {
    use Opcode::*;
    let dt = x.dtype();
    match op {
        LogicalNot => Scalar::Bool(!truthy(x)),
        Isnan => flb!(x, |v| v.is_nan()),
        Isinf => flb!(x, |v| v.is_infinite()),
        Isfinite => flb!(x, |v| !v.is_nan() && !v.is_infinite()),
        // The top bit of the representation.
        Signbit => flb!(x, |v| v.to_bits().leading_zeros() == 0),
        Invert if dt == DType::Bool => Scalar::Bool(!truthy(x)),
        _ if dt.is_float() => ref_float_unary(op, x),
        _ => {
            let a = int_of(x);
            let r = match op {
                Negative => -a,
                Absolute => a.abs(),
                Sign => a.signum(),
                Square => a.wrapping_mul(a), // the low 64 bits are exact
                Invert => !a,
                _ => panic!("no integer reference for {op}"),
            };
            wrap(r, dt)
        }
    }
}

pub fn ref_float_unary(op: Opcode, x: Scalar) -> Scalar {
    use Opcode::*;
    match op {
        Negative => fl1!(x, |v| -v),
        Absolute => fl1!(x, |v| if v.is_sign_negative() { -v } else { v }),
        Sign => fl1!(x, |v| if v.is_nan() {
            v
        } else if v > 0.0 {
            1.0
        } else if v < 0.0 {
            -1.0
        } else {
            0.0
        }),
        Square => fl1!(x, |v| v * v),
        Reciprocal => fl1!(x, |v| 1.0 / v),
        Sqrt => fl1!(x, |v| v.sqrt()),
        Cbrt => fl1!(x, |v| v.cbrt()),
        Exp => fl1!(x, |v| v.exp()),
        Exp2 => fl1!(x, |v| v.exp2()),
        Expm1 => fl1!(x, |v| v.exp_m1()),
        Log => fl1!(x, |v| v.ln()),
        Log2 => fl1!(x, |v| v.log2()),
        Log10 => fl1!(x, |v| v.log10()),
        Log1p => fl1!(x, |v| v.ln_1p()),
        Sin => fl1!(x, |v| v.sin()),
        Cos => fl1!(x, |v| v.cos()),
        Tan => fl1!(x, |v| v.tan()),
        Arcsin => fl1!(x, |v| v.asin()),
        Arccos => fl1!(x, |v| v.acos()),
        Arctan => fl1!(x, |v| v.atan()),
        Sinh => fl1!(x, |v| v.sinh()),
        Cosh => fl1!(x, |v| v.cosh()),
        Tanh => fl1!(x, |v| v.tanh()),
        Arcsinh => fl1!(x, |v| v.asinh()),
        Arccosh => fl1!(x, |v| v.acosh()),
        Arctanh => fl1!(x, |v| v.atanh()),
        // NumPy's factors: divided in the dtype from its rounded pi (npy_math's NPY_PIf for f32).
        Deg2rad => match x {
            Scalar::F32(v) => Scalar::F32(v * (std::f32::consts::PI / 180.0)),
            Scalar::F64(v) => Scalar::F64(v * (std::f64::consts::PI / 180.0)),
            s => panic!("{s:?} is not a float"),
        },
        Rad2deg => match x {
            Scalar::F32(v) => Scalar::F32(v * (180.0 / std::f32::consts::PI)),
            Scalar::F64(v) => Scalar::F64(v * (180.0 / std::f64::consts::PI)),
            s => panic!("{s:?} is not a float"),
        },
        Floor => fl1!(x, |v| v.floor()),
        Ceil => fl1!(x, |v| v.ceil()),
        Trunc => fl1!(x, |v| v.trunc()),
        Rint => fl1!(x, |v| v.round_ties_even()),
        _ => panic!("no float reference for {op}"),
    }
}

pub fn ref_binary(op: Opcode, a: Scalar, b: Scalar) -> Scalar {
    use Opcode::*;
    let dt = a.dtype();
    let ord = order(a, b);
    match op {
        Equal => Scalar::Bool(ord == Some(Ordering::Equal)),
        NotEqual => Scalar::Bool(ord != Some(Ordering::Equal)),
        Less => Scalar::Bool(ord == Some(Ordering::Less)),
        LessEqual => Scalar::Bool(matches!(ord, Some(Ordering::Less | Ordering::Equal))),
        Greater => Scalar::Bool(ord == Some(Ordering::Greater)),
        GreaterEqual => Scalar::Bool(matches!(ord, Some(Ordering::Greater | Ordering::Equal))),
        LogicalAnd => Scalar::Bool(truthy(a) && truthy(b)),
        LogicalOr => Scalar::Bool(truthy(a) || truthy(b)),
        LogicalXor => Scalar::Bool(truthy(a) != truthy(b)),
        _ if dt == DType::Bool => {
            let (x, y) = (truthy(a), truthy(b));
            Scalar::Bool(match op {
                BitwiseAnd => x && y,
                BitwiseOr => x || y,
                BitwiseXor => x != y,
                _ => panic!("no bool reference for {op}"),
            })
        }
        _ if dt.is_float() => ref_float_binary(op, a, b),
        _ => ref_int_binary(op, a, b),
    }
}

pub fn ref_int_binary(op: Opcode, a: Scalar, b: Scalar) -> Scalar {
    use Opcode::*;
    let dt = a.dtype();
    let (x, y) = (int_of(a), int_of(b));
    let bits = dt.size() as i128 * 8;
    let r = match op {
        Add => x + y,
        Subtract => x - y,
        Multiply => x.wrapping_mul(y), // the low 64 bits are exact
        FloorDivide if y == 0 => 0,
        FloorDivide => floor_div(x, y),
        Remainder if y == 0 => 0,
        Remainder => x - y * floor_div(x, y),
        Fmod if y == 0 => 0,
        Fmod => x % y,
        Power => int_power(x, y, dt),
        Maximum => x.max(y),
        Minimum => x.min(y),
        BitwiseAnd => x & y,
        BitwiseOr => x | y,
        BitwiseXor => x ^ y,
        LeftShift if y < 0 || y >= bits => 0,
        LeftShift => x << y,
        RightShift if y < 0 || y >= bits => {
            if x < 0 {
                -1
            } else {
                0
            }
        }
        RightShift => x >> y,
        _ => panic!("no integer reference for {op}"),
    };
    wrap(r, dt)
}

pub fn ref_float_binary(op: Opcode, a: Scalar, b: Scalar) -> Scalar {
    use Opcode::*;
    match op {
        Add => fl2!(a, b, |x, y| x + y),
        Subtract => fl2!(a, b, |x, y| x - y),
        Multiply => fl2!(a, b, |x, y| x * y),
        Divide => fl2!(a, b, |x, y| x / y),
        // Valid for the inputs used (see `binary_inputs`): exact quotients or ones far from
        // an integer, so floor(x / y) is the true floor.
        FloorDivide => fl2!(a, b, |x, y| (x / y).floor()),
        Remainder if b.as_f64() == 0.0 => Scalar::F64(f64::NAN).cast(a.dtype()),
        // A zero remainder takes the sign of the divisor.
        Remainder => fl2!(a, b, |x, y| {
            let r = x - y * (x / y).floor();
            match (r == 0.0, y.is_sign_negative()) {
                (true, true) => -0.0,
                (true, false) => 0.0,
                (false, _) => r,
            }
        }),
        Fmod => fl2!(a, b, |x, y| x % y),
        Power => fl2!(a, b, |x, y| x.powf(y)),
        Maximum => fl2!(a, b, |x, y| if x.is_nan() || y.is_nan() {
            x + y
        } else if x > y {
            x
        } else {
            y
        }),
        Minimum => fl2!(a, b, |x, y| if x.is_nan() || y.is_nan() {
            x + y
        } else if x < y {
            x
        } else {
            y
        }),
        Fmax => fl2!(a, b, |x, y| if x.is_nan() {
            y
        } else if y.is_nan() || x > y {
            x
        } else {
            y
        }),
        Fmin => fl2!(a, b, |x, y| if x.is_nan() {
            y
        } else if y.is_nan() || x < y {
            x
        } else {
            y
        }),
        Arctan2 => fl2!(a, b, |x, y| x.atan2(y)),
        Hypot => fl2!(a, b, |x, y| x.hypot(y)),
        // The larger plus the log of one plus the exponential of minus the distance.
        Logaddexp | Logaddexp2 => {
            let base2 = op == Logaddexp2;
            macro_rules! log_add {
                ($x:expr, $y:expr, $t:ident) => {{
                    let (x, y) = ($x, $y);
                    if x.is_nan() || y.is_nan() {
                        $t::NAN
                    } else if x == y {
                        x + if base2 { 1.0 } else { std::$t::consts::LN_2 }
                    } else {
                        let far = -(x - y).abs();
                        let term = if base2 { std::$t::consts::LOG2_E * far.exp2().ln_1p() } else { far.exp().ln_1p() };
                        x.max(y) + term
                    }
                }};
            }
            match (a, b) {
                (Scalar::F32(x), Scalar::F32(y)) => Scalar::F32(log_add!(x, y, f32)),
                (Scalar::F64(x), Scalar::F64(y)) => Scalar::F64(log_add!(x, y, f64)),
                s => panic!("{s:?} are not floats of one dtype"),
            }
        }
        Copysign => fl2!(a, b, |x, y| if y.is_sign_negative() == x.is_sign_negative() { x } else { -x }),
        _ => panic!("no float reference for {op}"),
    }
}

/// The result of a reduction over nothing.
pub fn ref_identity(op: Opcode, dt: DType) -> Scalar {
    use Opcode::*;
    match op {
        AddReduce => Scalar::I64(0).cast(dt),
        MultiplyReduce => Scalar::I64(1).cast(dt),
        MinimumReduce if dt.is_float() => Scalar::F64(f64::INFINITY).cast(dt),
        MinimumReduce => wrap(int_range(dt).1, dt),
        MaximumReduce if dt.is_float() => Scalar::F64(f64::NEG_INFINITY).cast(dt),
        MaximumReduce => wrap(int_range(dt).0, dt),
        LogicalAndReduce => Scalar::Bool(true),
        LogicalOrReduce | LogicalXorReduce => Scalar::Bool(false),
        BitwiseAndReduce if dt == DType::Bool => Scalar::Bool(true),
        BitwiseAndReduce => wrap(-1, dt),
        BitwiseOrReduce | BitwiseXorReduce if dt == DType::Bool => Scalar::Bool(false),
        BitwiseOrReduce | BitwiseXorReduce => wrap(0, dt),
        _ => panic!("no identity for {op}"),
    }
}

/// The element-wise combiner of a reduction or scan, as the reference applies it.
pub fn ref_combine(op: Opcode, acc: Scalar, x: Scalar) -> Scalar {
    match op {
        Opcode::LogicalAndReduce | Opcode::LogicalOrReduce | Opcode::LogicalXorReduce => {
            ref_binary(op.combiner().unwrap(), Scalar::Bool(truthy(acc)), Scalar::Bool(truthy(x)))
        }
        _ => ref_binary(op.combiner().unwrap(), acc, x),
    }
}

/// The position NumPy's `argmax` (`argmax_reduce`) or `argmin` reports for the nonempty line
/// `xs`: the first NaN if there is one, else the first element equal to the extreme.
pub fn ref_position(op: Opcode, xs: &[Scalar]) -> Scalar {
    let nan = |s: &Scalar| s.dtype().is_float() && s.as_f64().is_nan();
    if let Some(k) = xs.iter().position(nan) {
        return Scalar::I64(k as i64);
    }
    let want = if op == Opcode::ArgmaxReduce { Ordering::Greater } else { Ordering::Less };
    let extreme = xs.iter().copied().reduce(|a, b| if order(b, a) == Some(want) { b } else { a }).expect("nonempty");
    let k = xs.iter().position(|&x| order(x, extreme) == Some(Ordering::Equal)).expect("the extreme is there");
    Scalar::I64(k as i64)
}

/// The position of `key` among the ascending `sorted` (NaNs last, zeros of both signs equal):
/// past the values before it, and with `right` past the values equal to it too.
pub fn ref_search(sorted: &[Scalar], key: Scalar, right: bool) -> usize {
    let nan = |s: &Scalar| s.dtype().is_float() && s.as_f64().is_nan();
    let before = |a: &Scalar, b: &Scalar| !nan(a) && (nan(b) || order(*a, *b) == Some(Ordering::Less));
    sorted.iter().filter(|v| if right { !before(&key, v) } else { before(v, &key) }).count()
}

/// The positions that sort `xs` as `argsort` does (`zeros_apart`: as `sort` orders them, `-0.0`
/// before `0.0`), by insertion (stable): numbers in ascending [`order`], NaNs after them, equal
/// values in their order.
pub fn ref_sort_positions(xs: &[Scalar], zeros_apart: bool) -> Vec<usize> {
    let nan = |s: &Scalar| s.dtype().is_float() && s.as_f64().is_nan();
    let negative_zero = |s: &Scalar| s.dtype().is_float() && s.as_f64() == 0.0 && s.as_f64().is_sign_negative();
    let before = |a: &Scalar, b: &Scalar| {
        let zeros = zeros_apart && negative_zero(a) && !negative_zero(b) && b.as_f64() == 0.0;
        !nan(a) && (nan(b) || order(*a, *b) == Some(Ordering::Less) || zeros)
    };
    let mut positions: Vec<usize> = Vec::with_capacity(xs.len());
    for k in 0..xs.len() {
        // After every element that is not behind it: the first slot whose element it precedes.
        let at = positions.iter().position(|&p| before(&xs[k], &xs[p])).unwrap_or(positions.len());
        positions.insert(at, k);
    }
    positions
}
