//! Hand-worked corner cases of NumPy's semantics (values checked against NumPy / CPython rules by
//! hand, not computed by any code under test).

mod common;

use common::*;
use vm_ir::{Element, Opcode, View};

fn un<T: Element, R: Element>(op: Opcode, a: T) -> R {
    let mut env = Env::new();
    let x = env.array(&[a]);
    let out = env.empty(R::DTYPE, &[1]);
    env.run1(op, vec![v(&out), v(&x)]).unwrap_or_else(|e| panic!("{op}({a:?}): {e}"));
    env.read::<R>(&out)[0]
}

fn bin<T: Element, R: Element>(op: Opcode, a: T, b: T) -> R {
    let mut env = Env::new();
    let (x, y) = (env.array(&[a]), env.array(&[b]));
    let out = env.empty(R::DTYPE, &[1]);
    env.run1(op, vec![v(&out), v(&x), v(&y)]).unwrap_or_else(|e| panic!("{op}({a:?}, {b:?}): {e}"));
    env.read::<R>(&out)[0]
}

fn reduce<T: Element, R: Element>(op: Opcode, data: &[T]) -> R {
    let mut env = Env::new();
    let x = env.array(data);
    let out = env.empty(R::DTYPE, &[]);
    env.run1(op, vec![v(&out), v(&x), axis(0)]).unwrap_or_else(|e| panic!("{op}({data:?}): {e}"));
    env.read::<R>(&out)[0]
}

fn b64(x: f64) -> u64 {
    x.to_bits()
}

#[test]
fn integer_division_family() {
    use Opcode::{FloorDivide as Fd, Fmod, Remainder as Rem};
    assert_eq!(bin::<i32, i32>(Fd, -7, 2), -4);
    assert_eq!(bin::<i32, i32>(Fd, 7, -2), -4);
    assert_eq!(bin::<i32, i32>(Fd, -7, -2), 3);
    assert_eq!(bin::<i32, i32>(Fd, 7, 2), 3);
    assert_eq!(bin::<i32, i32>(Fd, 7, 0), 0);
    assert_eq!(bin::<u8, u8>(Fd, 7, 0), 0);
    assert_eq!(bin::<i32, i32>(Fd, i32::MIN, -1), i32::MIN);
    assert_eq!(bin::<i8, i8>(Fd, -128, -1), -128);
    assert_eq!(bin::<i32, i32>(Rem, -7, 2), 1);
    assert_eq!(bin::<i32, i32>(Rem, 7, -2), -1);
    assert_eq!(bin::<i32, i32>(Rem, -7, -2), -1);
    assert_eq!(bin::<i32, i32>(Rem, 7, 0), 0);
    assert_eq!(bin::<i64, i64>(Rem, i64::MIN, -1), 0);
    assert_eq!(bin::<i32, i32>(Fmod, -7, 2), -1);
    assert_eq!(bin::<i32, i32>(Fmod, 7, -2), 1);
    assert_eq!(bin::<i32, i32>(Fmod, 7, 0), 0);
    assert_eq!(bin::<u16, u16>(Fmod, 7, 0), 0);
}

#[test]
fn float_division_family() {
    use Opcode::{FloorDivide as Fd, Fmod, Remainder as Rem};
    let inf = f64::INFINITY;
    assert_eq!(bin::<f64, f64>(Fd, -7.0, 2.0), -4.0);
    assert_eq!(bin::<f64, f64>(Fd, 7.0, -2.0), -4.0);
    assert_eq!(bin::<f64, f64>(Fd, 1.0, 0.0), inf);
    assert_eq!(bin::<f64, f64>(Fd, -1.0, 0.0), -inf);
    assert!(bin::<f64, f64>(Fd, 0.0, 0.0).is_nan());
    assert!(bin::<f64, f64>(Fd, inf, 2.0).is_nan());
    assert_eq!(bin::<f64, f64>(Fd, 7.0, inf), 0.0);
    assert_eq!(bin::<f64, f64>(Fd, -7.0, inf), -1.0);
    assert_eq!(b64(bin::<f64, f64>(Fd, 0.0, -2.0)), b64(-0.0));
    assert_eq!(b64(bin::<f64, f64>(Fd, -0.0, 2.0)), b64(-0.0));
    assert_eq!(bin::<f32, f32>(Fd, -7.0, 2.0), -4.0);
    assert_eq!(bin::<f64, f64>(Rem, -7.0, 2.0), 1.0);
    assert_eq!(bin::<f64, f64>(Rem, 7.0, -2.0), -1.0);
    assert_eq!(bin::<f64, f64>(Rem, 7.0, inf), 7.0);
    assert_eq!(bin::<f64, f64>(Rem, -7.0, inf), inf);
    assert!(bin::<f64, f64>(Rem, 1.0, 0.0).is_nan());
    assert!(bin::<f64, f64>(Rem, inf, 2.0).is_nan());
    assert_eq!(b64(bin::<f64, f64>(Rem, 0.0, -2.0)), b64(-0.0));
    assert_eq!(b64(bin::<f64, f64>(Rem, -4.0, 2.0)), b64(0.0));
    assert_eq!(bin::<f32, f32>(Rem, -7.0, 2.0), 1.0);
    assert_eq!(bin::<f64, f64>(Fmod, -7.0, 2.0), -1.0);
    assert_eq!(bin::<f64, f64>(Fmod, 7.0, -2.0), 1.0);
    assert!(bin::<f64, f64>(Fmod, 7.0, 0.0).is_nan());
    assert_eq!(bin::<f64, f64>(Opcode::Divide, 1.0, 0.0), inf);
}

#[test]
fn integer_powers() {
    use Opcode::Power as P;
    assert_eq!(bin::<i32, i32>(P, 2, -1), 0);
    assert_eq!(bin::<i32, i32>(P, 0, -1), 0);
    assert_eq!(bin::<i32, i32>(P, 1, -5), 1);
    assert_eq!(bin::<i32, i32>(P, -1, -5), -1);
    assert_eq!(bin::<i32, i32>(P, -1, -4), 1);
    assert_eq!(bin::<i32, i32>(P, 0, 0), 1);
    assert_eq!(bin::<i32, i32>(P, 3, 4), 81);
    assert_eq!(bin::<i32, i32>(P, -3, 3), -27);
    assert_eq!(bin::<i32, i32>(P, 2, 31), i32::MIN);
    assert_eq!(bin::<i32, i32>(P, 2, 32), 0);
    assert_eq!(bin::<u8, u8>(P, 2, 7), 128);
    assert_eq!(bin::<u8, u8>(P, 3, 6), 217); // 729 mod 256
    assert_eq!(bin::<i64, i64>(P, -1, i64::MAX), -1);
    assert_eq!(bin::<i64, i64>(P, -1, i64::MIN), 1);
    assert_eq!(bin::<i64, i64>(P, 1, i64::MAX), 1);
    assert_eq!(bin::<i64, i64>(P, 2, i64::MAX), 0);
    assert_eq!(bin::<i64, i64>(P, 0, i64::MAX), 0);
    assert_eq!(bin::<u64, u64>(P, u64::MAX, u64::MAX), u64::MAX); // (-1)^odd mod 2^64
    assert_eq!(bin::<f64, f64>(P, 2.0, -1.0), 0.5);
}

#[test]
fn shifts() {
    use Opcode::{LeftShift as L, RightShift as R};
    assert_eq!(bin::<i8, i8>(L, 1, 7), -128);
    assert_eq!(bin::<i8, i8>(L, 1, 8), 0);
    assert_eq!(bin::<i8, i8>(L, 3, -1), 0);
    assert_eq!(bin::<i8, i8>(L, 0x41, 1), -126);
    assert_eq!(bin::<u64, u64>(L, 1, 64), 0);
    assert_eq!(bin::<u64, u64>(L, 1, 63), 1 << 63);
    assert_eq!(bin::<i8, i8>(R, -128, 7), -1);
    assert_eq!(bin::<i8, i8>(R, -128, 8), -1);
    assert_eq!(bin::<i8, i8>(R, -1, 100), -1);
    assert_eq!(bin::<i8, i8>(R, 64, 8), 0);
    assert_eq!(bin::<i8, i8>(R, 64, -1), 0);
    assert_eq!(bin::<i8, i8>(R, -5, -1), -1);
    assert_eq!(bin::<i32, i32>(R, -5, 1), -3);
    assert_eq!(bin::<u8, u8>(R, 255, 7), 1);
    assert_eq!(bin::<u8, u8>(R, 255, 8), 0);
}

#[test]
fn nan_handling_of_maximum_minimum_fmax_fmin() {
    use Opcode::*;
    let nan = f64::NAN;
    assert!(bin::<f64, f64>(Maximum, nan, 1.0).is_nan());
    assert!(bin::<f64, f64>(Maximum, 1.0, nan).is_nan());
    assert!(bin::<f64, f64>(Minimum, nan, 1.0).is_nan());
    assert!(bin::<f32, f32>(Minimum, 1.0, f32::NAN).is_nan());
    assert_eq!(bin::<f64, f64>(Fmax, nan, 1.0), 1.0);
    assert_eq!(bin::<f64, f64>(Fmax, 1.0, nan), 1.0);
    assert_eq!(bin::<f64, f64>(Fmin, nan, -1.0), -1.0);
    assert_eq!(bin::<f64, f64>(Fmin, -1.0, nan), -1.0);
    assert!(bin::<f64, f64>(Fmax, nan, nan).is_nan());
    assert!(reduce::<f64, f64>(MaximumReduce, &[1.0, nan, 3.0]).is_nan());
    assert!(reduce::<f64, f64>(MinimumReduce, &[1.0, nan, 0.0]).is_nan());
    assert!(reduce::<f32, f32>(MinimumReduce, &[f32::NAN, 0.0]).is_nan());
    assert!(reduce::<f64, f64>(AddReduce, &[1.0, nan]).is_nan());
}

#[test]
fn signs_and_absolutes() {
    use Opcode::*;
    assert!(un::<f64, f64>(Sign, f64::NAN).is_nan());
    assert_eq!(b64(un::<f64, f64>(Sign, -0.0)), b64(0.0));
    assert_eq!(un::<f64, f64>(Sign, -3.5), -1.0);
    assert_eq!(un::<f64, f64>(Sign, f64::INFINITY), 1.0);
    assert_eq!(un::<i8, i8>(Sign, -128), -1);
    assert_eq!(un::<u8, u8>(Sign, 200), 1);
    assert_eq!(un::<i8, i8>(Absolute, -128), -128);
    assert_eq!(un::<i32, i32>(Absolute, i32::MIN), i32::MIN);
    assert_eq!(un::<i32, i32>(Absolute, -5), 5);
    assert_eq!(b64(un::<f64, f64>(Absolute, -0.0)), b64(0.0));
    assert_eq!(un::<u8, u8>(Negative, 1), 255);
    assert_eq!(un::<i8, i8>(Negative, -128), -128);
    assert_eq!(b64(un::<f64, f64>(Negative, 0.0)), b64(-0.0));
    assert!(un::<f64, bool>(Signbit, -0.0));
    assert!(!un::<f64, bool>(Signbit, 0.0));
    assert_eq!(b64(bin::<f64, f64>(Copysign, 3.0, -0.0)), b64(-3.0));
    assert_eq!(un::<f64, f64>(Reciprocal, -0.0), f64::NEG_INFINITY);
}

#[test]
fn rint_rounds_ties_to_even() {
    for (x, r) in [(0.5, 0.0), (1.5, 2.0), (2.5, 2.0), (-1.5, -2.0), (-2.5, -2.0), (2.4, 2.0), (2.6, 3.0)] {
        assert_eq!(un::<f64, f64>(Opcode::Rint, x), r, "rint({x})");
        assert_eq!(un::<f32, f32>(Opcode::Rint, x as f32), r as f32, "rint({x}f32)");
    }
    assert_eq!(b64(un::<f64, f64>(Opcode::Rint, -0.5)), b64(-0.0));
}

#[test]
fn casts_saturate_truncate_and_wrap() {
    use Opcode::Identity as I;
    assert_eq!(un::<f64, i32>(I, 1e10), i32::MAX);
    assert_eq!(un::<f64, i32>(I, -1e10), i32::MIN);
    assert_eq!(un::<f64, i32>(I, f64::NAN), 0);
    assert_eq!(un::<f64, i32>(I, -2.7), -2);
    assert_eq!(un::<f64, i32>(I, 2.7), 2);
    assert_eq!(un::<f64, u8>(I, -1.0), 0);
    assert_eq!(un::<f64, u8>(I, 300.0), 255);
    assert_eq!(un::<f32, i64>(I, f32::INFINITY), i64::MAX);
    assert_eq!(un::<i32, u8>(I, 300), 44);
    assert_eq!(un::<i32, u8>(I, -1), 255);
    assert_eq!(un::<u64, i8>(I, u64::MAX), -1);
    assert_eq!(un::<i8, u64>(I, -1), u64::MAX);
    assert!(un::<f64, bool>(I, f64::NAN));
    assert!(!un::<f64, bool>(I, -0.0));
    assert!(un::<f64, bool>(I, 0.5));
    assert!(un::<i32, bool>(I, 256));
    assert_eq!(un::<bool, f64>(I, true), 1.0);
    assert_eq!(un::<bool, i8>(I, true), 1);
    assert_eq!(un::<i64, f32>(I, 16_777_217), 16_777_216.0);
    assert_eq!(un::<f64, f32>(I, 1e300), f32::INFINITY);
}

#[test]
fn wrapping_arithmetic() {
    use Opcode::*;
    assert_eq!(bin::<i8, i8>(Add, 127, 1), -128);
    assert_eq!(bin::<u8, u8>(Subtract, 0, 1), 255);
    assert_eq!(bin::<i64, i64>(Multiply, i64::MAX, 2), -2);
    assert_eq!(bin::<u32, u32>(Multiply, 1 << 31, 2), 0);
    assert_eq!(un::<i16, i16>(Square, 256), 0);
    assert_eq!(reduce::<u8, u8>(AddReduce, &[200, 100]), 44);
    assert_eq!(reduce::<i8, i8>(MultiplyReduce, &[16, 16]), 0);
}

#[test]
fn logic_and_comparisons() {
    use Opcode::*;
    let nan = f64::NAN;
    assert!(bin::<f64, bool>(LogicalAnd, nan, 1.0));
    assert!(!un::<f64, bool>(LogicalNot, nan));
    assert!(!bin::<f64, bool>(LogicalOr, 0.0, -0.0));
    assert!(bin::<i32, bool>(LogicalXor, 0, -3));
    assert!(!bin::<f64, bool>(Equal, nan, nan));
    assert!(bin::<f64, bool>(NotEqual, nan, nan));
    assert!(!bin::<f64, bool>(LessEqual, nan, 1.0));
    assert!(bin::<f64, bool>(Equal, 0.0, -0.0));
    assert!(bin::<bool, bool>(Less, false, true));
    assert!(bin::<u64, bool>(Greater, u64::MAX, 0));
    assert!(bin::<i64, bool>(Less, i64::MIN, 0));
    assert!(!un::<bool, bool>(Invert, true));
    assert_eq!(un::<i8, i8>(Invert, 0), -1);
    assert_eq!(un::<u8, u8>(Invert, 0), 255);
    assert!(!reduce::<f64, bool>(LogicalXorReduce, &[1.0, 0.0, nan])); // two true values
    assert!(reduce::<i32, bool>(LogicalXorReduce, &[1, 0, 5, 7]));
    assert!(reduce::<f64, bool>(LogicalAndReduce, &[nan, 2.0]));
    assert!(!reduce::<u8, bool>(LogicalOrReduce, &[0, 0]));
    assert_eq!(reduce::<u8, u8>(BitwiseAndReduce, &[0xf3, 0x3f]), 0x33);
    assert_eq!(reduce::<i16, i16>(BitwiseXorReduce, &[0b1100, 0b1010, 1]), 0b0111);
}

#[test]
fn sums_start_from_the_first_element() {
    // NumPy: np.add.reduce([-0.0, -0.0]) is -0.0 (the sum starts from the first element).
    assert_eq!(b64(reduce::<f64, f64>(Opcode::AddReduce, &[-0.0, -0.0])), b64(-0.0));
    assert_eq!(b64(reduce::<f64, f64>(Opcode::AddReduce, &[-0.0])), b64(-0.0));
    // Left to right: (1e30 + 1) - 1e30 is 0 in f64.
    assert_eq!(reduce::<f64, f64>(Opcode::AddReduce, &[1e30, 1.0, -1e30]), 0.0);
}

#[test]
fn empty_reductions_give_identities() {
    use Opcode::*;
    let mut env = Env::new();
    let cases: Vec<(Opcode, vm_ir::DType, f64)> = vec![
        (AddReduce, vm_ir::DType::F64, 0.0),
        (MultiplyReduce, vm_ir::DType::F64, 1.0),
        (MinimumReduce, vm_ir::DType::F64, f64::INFINITY),
        (MaximumReduce, vm_ir::DType::F32, f64::NEG_INFINITY),
        (MinimumReduce, vm_ir::DType::U16, 65535.0),
        (MaximumReduce, vm_ir::DType::I8, -128.0),
        (BitwiseAndReduce, vm_ir::DType::U8, 255.0),
        (BitwiseAndReduce, vm_ir::DType::I32, -1.0),
    ];
    for (op, dt, want) in cases {
        let input = env.empty(dt, &[0]);
        let out = env.empty(dt, &[]);
        env.run1(op, vec![v(&out), v(&input), axis(0)]).unwrap();
        assert_eq!(env.read_scalars(&out)[0].as_f64(), want, "{op} on empty {dt}");
    }
    let input = env.empty(vm_ir::DType::F64, &[0]);
    let out = env.empty(vm_ir::DType::Bool, &[]);
    env.run1(LogicalAndReduce, vec![v(&out), v(&input), axis(0)]).unwrap();
    assert!(env.read::<bool>(&out)[0]);
    // An empty output of a non-empty-axis reduction: nothing to do, no error.
    let input = View::contiguous(env.base(vm_ir::DType::I32, 0), 0, &[3, 0]).unwrap();
    let out = env.empty(vm_ir::DType::I32, &[0]);
    env.run1(AddReduce, vec![v(&out), v(&input), axis(0)]).unwrap();
}
