//! Block routines: the operations the generated code does not compute inline (transcendental
//! functions, powers, NumPy's division family, random numbers). The generated code stages up to
//! [`crate::compile::codegen::CHUNK`] inputs in scratch memory and makes one call per block, never one per
//! element.
//!
//! Every routine has the signature [`BlockFn`]: `(n, dst, a, b)` computes `n` elements into `dst`
//! from the `n` elements at `a` (and `b` for binary routines). For `random`, `a` is the seed and
//! `b` the counter of element 0, passed as integers.
//!
//! The element functions are `std`'s float math and [`vm_ir::semantics`] (NumPy's division
//! family, integer powers, `asinh` and `acosh`), the same functions the reference interpreter
//! applies.

use vm_ir::semantics;
use vm_ir::{DType, Opcode};

/// The signature of every block routine.
pub type BlockFn = unsafe extern "C" fn(n: i64, dst: *mut u8, a: *const u8, b: *const u8);

/// An element function applied by a block routine.
trait Unary<T> {
    fn f(x: T) -> T;
}

/// A binary element function applied by a block routine.
trait Binary<T> {
    fn f(x: T, y: T) -> T;
}

/// # Safety
/// `dst` and `a` must be valid for `n` elements of `T` (`dst` writable, aligned for `T`).
unsafe extern "C" fn unary_block<T: Copy, F: Unary<T>>(n: i64, dst: *mut u8, a: *const u8, _b: *const u8) {
    // SAFETY: the generated code passes scratch or view memory valid for n elements of T.
    let (d, a) = unsafe {
        (
            std::slice::from_raw_parts_mut(dst.cast::<T>(), n as usize),
            std::slice::from_raw_parts(a.cast::<T>(), n as usize),
        )
    };
    for (d, &a) in d.iter_mut().zip(a) {
        *d = F::f(a);
    }
}

/// # Safety
/// `dst`, `a` and `b` must be valid for `n` elements of `T` (`dst` writable, all aligned).
unsafe extern "C" fn binary_block<T: Copy, F: Binary<T>>(n: i64, dst: *mut u8, a: *const u8, b: *const u8) {
    let n = n as usize;
    // SAFETY: the generated code passes scratch memory valid for n elements of T.
    let (d, a, b) = unsafe {
        (
            std::slice::from_raw_parts_mut(dst.cast::<T>(), n),
            std::slice::from_raw_parts(a.cast::<T>(), n),
            std::slice::from_raw_parts(b.cast::<T>(), n),
        )
    };
    for ((d, &a), &b) in d.iter_mut().zip(a).zip(b) {
        *d = F::f(a, b);
    }
}

macro_rules! float_unary {
    ($($name:ident => $f:expr),* $(,)?) => {
        $(
            struct $name;
            impl Unary<f32> for $name {
                #[inline(always)]
                fn f(x: f32) -> f32 {
                    let f: fn(f32) -> f32 = $f;
                    f(x)
                }
            }
            impl Unary<f64> for $name {
                #[inline(always)]
                fn f(x: f64) -> f64 {
                    let f: fn(f64) -> f64 = $f;
                    f(x)
                }
            }
        )*
        fn float_unary<T: Copy>(op: Opcode) -> Option<BlockFn>
        where $($name: Unary<T>),*
        {
            Some(match op {
                $( Opcode::$name => unary_block::<T, $name> as BlockFn, )*
                _ => return None,
            })
        }
    };
}

float_unary! {
    Cbrt => |x| x.cbrt(),
    Exp => |x| x.exp(),
    Exp2 => |x| x.exp2(),
    Expm1 => |x| x.exp_m1(),
    Log => |x| x.ln(),
    Log2 => |x| x.log2(),
    Log10 => |x| x.log10(),
    Log1p => |x| x.ln_1p(),
    Sin => |x| x.sin(),
    Cos => |x| x.cos(),
    Tan => |x| x.tan(),
    Arcsin => |x| x.asin(),
    Arccos => |x| x.acos(),
    Arctan => |x| x.atan(),
    Sinh => |x| x.sinh(),
    Cosh => |x| x.cosh(),
    Tanh => |x| x.tanh(),
    Arcsinh => semantics::float_asinh,
    Arccosh => semantics::float_acosh,
    Arctanh => semantics::float_atanh,
}

macro_rules! float_binary {
    ($($name:ident => $f:expr),* $(,)?) => {
        $(
            struct $name;
            impl Binary<f32> for $name {
                #[inline(always)]
                fn f(x: f32, y: f32) -> f32 {
                    let f: fn(f32, f32) -> f32 = $f;
                    f(x, y)
                }
            }
            impl Binary<f64> for $name {
                #[inline(always)]
                fn f(x: f64, y: f64) -> f64 {
                    let f: fn(f64, f64) -> f64 = $f;
                    f(x, y)
                }
            }
        )*
        fn float_binary<T: Copy>(op: Opcode) -> Option<BlockFn>
        where $($name: Binary<T>),*
        {
            Some(match op {
                $( Opcode::$name => binary_block::<T, $name> as BlockFn, )*
                _ => return None,
            })
        }
    };
}

float_binary! {
    Power => |x, y| x.powf(y),
    Arctan2 => |x, y| x.atan2(y),
    Hypot => |x, y| x.hypot(y),
    Logaddexp => semantics::float_logaddexp,
    Logaddexp2 => semantics::float_logaddexp2,
    FloorDivide => semantics::float_floor_divide,
    Remainder => semantics::float_remainder,
    Fmod => |x, y| x % y, // Rust's float `%` is C `fmod`
}

macro_rules! int_binary {
    ($($name:ident => $f:ident),* $(,)?) => {
        $(
            struct $name;
            impl<T: semantics::Int> Binary<T> for $name {
                #[inline(always)]
                fn f(x: T, y: T) -> T { semantics::$f(x, y) }
            }
        )*
        fn int_binary<T: semantics::Int>(op: Opcode) -> Option<BlockFn> {
            Some(match op {
                $( Opcode::$name => binary_block::<T, $name> as BlockFn, )*
                _ => return None,
            })
        }
    };
}

/// Names distinct from the float markers (they live in one namespace).
mod int_ops {
    use super::*;
    int_binary! {
        FloorDivide => floor_divide,
        Remainder => remainder,
        Fmod => fmod,
        Power => power,
    }
    pub(super) fn table<T: semantics::Int>(op: Opcode) -> Option<BlockFn> {
        int_binary::<T>(op)
    }
}

/// The block routine computing `op` with result dtype `dtype`, or `None` when the code generator
/// computes it inline.
pub fn block_fn(op: Opcode, dtype: DType) -> Option<BlockFn> {
    if let Some(f) =
        crate::routines::fastmath::block_fn(op, dtype).or_else(|| crate::routines::wide::block_fn(op, dtype))
    {
        return Some(f);
    }
    if op == Opcode::Random {
        return Some(crate::routines::philox::block_fn(dtype));
    }
    match dtype {
        DType::F32 => float_unary::<f32>(op).or_else(|| float_binary::<f32>(op)),
        DType::F64 => float_unary::<f64>(op).or_else(|| float_binary::<f64>(op)),
        DType::I8 => int_ops::table::<i8>(op),
        DType::I16 => int_ops::table::<i16>(op),
        DType::I32 => int_ops::table::<i32>(op),
        DType::I64 => int_ops::table::<i64>(op),
        DType::U8 => int_ops::table::<u8>(op),
        DType::U16 => int_ops::table::<u16>(op),
        DType::U32 => int_ops::table::<u32>(op),
        DType::U64 => int_ops::table::<u64>(op),
        DType::Bool => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run2<T: Copy + Default>(f: BlockFn, a: &[T], b: &[T]) -> Vec<T> {
        let mut d = vec![T::default(); a.len()];
        // SAFETY: all three slices hold a.len() elements of T.
        unsafe { f(a.len() as i64, d.as_mut_ptr().cast(), a.as_ptr().cast(), b.as_ptr().cast()) };
        d
    }

    #[test]
    fn routines_compute_blocks() {
        let f = block_fn(Opcode::FloorDivide, DType::I32).unwrap();
        assert_eq!(run2(f, &[7i32, -7, 7, 5, i32::MIN], &[2, 2, 0, -2, -1]), vec![3, -4, 0, -3, i32::MIN]);
        let f = block_fn(Opcode::Power, DType::U8).unwrap();
        assert_eq!(run2(f, &[2u8, 3, 0], &[3, 2, 0]), vec![8, 9, 1]);
        let f = block_fn(Opcode::Exp, DType::F64).unwrap();
        assert_eq!(run2(f, &[0.0f64, 1.0], &[0.0, 0.0]), vec![1.0, 1.0f64.exp()]);
        assert!(block_fn(Opcode::Add, DType::F64).is_none());
        let f = block_fn(Opcode::Random, DType::U64).unwrap();
        let mut d = [0u64; 3];
        // SAFETY: d holds 3 u64; seed and counter are integers.
        unsafe { f(3, d.as_mut_ptr().cast(), 7 as *const u8, 10 as *const u8) };
        assert_eq!(d[2], vm_ir::random::random_bits(7, 12));
    }
}
