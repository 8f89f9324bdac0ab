//! The opcode tables: for each element type, the function that computes each element-wise
//! opcode on one element (or pair of elements). An opcode absent from a type's table is not
//! defined for that dtype; the engine then reports [`vm_ir::Error::Unsupported`], which the
//! table-driven tests turn into a failure for every (opcode, dtype) the opcode table allows.

use vm_ir::random::FromRandomBits;
use vm_ir::scalar::{Cast, ScalarElement};
use vm_ir::semantics as ops;
use vm_ir::{Opcode, Scalar};

/// An element type with its opcode tables.
pub trait Elem: ScalarElement + FromRandomBits + PartialOrd {
    /// The value of the constant `s` (a constant of this type's dtype; other dtypes are cast).
    fn from_scalar(s: Scalar) -> Self;

    /// The value as an array index (integer types only).
    fn to_index(self) -> Option<i128>;

    /// The function of a binary opcode whose inputs and output have this type.
    fn binary(op: Opcode) -> Option<fn(Self, Self) -> Self>;

    /// The function of a unary opcode whose input and output have this type.
    fn unary(op: Opcode) -> Option<fn(Self) -> Self>;

    /// The function of a unary opcode from this type to `bool` (`isnan`, ...), beyond
    /// `logical_not` (see [`to_bool_unary`]).
    fn predicate(op: Opcode) -> Option<fn(Self) -> bool>;

    /// The result of the reduction `op` over no elements.
    fn reduce_identity(op: Opcode) -> Option<Self>;
}

/// The truth value of an element: nonzero is true (NaN included).
pub fn truth<T: Elem>(x: T) -> bool {
    Cast::<bool>::cast(x)
}

/// The function of a binary opcode from two elements of type `T` to `bool`: comparisons and
/// logical operations, defined for every dtype.
pub fn to_bool_binary<T: Elem>(op: Opcode) -> Option<fn(T, T) -> bool> {
    let f: fn(T, T) -> bool = match op {
        Opcode::Equal => |a, b| a == b,
        Opcode::NotEqual => |a, b| a != b,
        Opcode::Less => |a, b| a < b,
        Opcode::LessEqual => |a, b| a <= b,
        Opcode::Greater => |a, b| a > b,
        Opcode::GreaterEqual => |a, b| a >= b,
        Opcode::LogicalAnd => |a, b| truth(a) && truth(b),
        Opcode::LogicalOr => |a, b| truth(a) || truth(b),
        Opcode::LogicalXor => |a, b| truth(a) != truth(b),
        _ => return None,
    };
    Some(f)
}

/// The function of a unary opcode from an element of type `T` to `bool`.
pub fn to_bool_unary<T: Elem>(op: Opcode) -> Option<fn(T) -> bool> {
    match op {
        Opcode::LogicalNot => Some(|a| !truth(a)),
        _ => T::predicate(op),
    }
}

macro_rules! int_elem {
    ($($t:ty),*) => { $(
        impl Elem for $t {
            fn from_scalar(s: Scalar) -> $t {
                s.get::<$t>()
            }

            fn to_index(self) -> Option<i128> {
                Some(self as i128)
            }

            fn binary(op: Opcode) -> Option<fn($t, $t) -> $t> {
                let f: fn($t, $t) -> $t = match op {
                    Opcode::Add => <$t>::wrapping_add,
                    Opcode::Subtract => <$t>::wrapping_sub,
                    Opcode::Multiply => <$t>::wrapping_mul,
                    Opcode::FloorDivide => ops::floor_divide,
                    Opcode::Remainder => ops::remainder,
                    Opcode::Fmod => ops::fmod,
                    Opcode::Power => ops::power,
                    Opcode::Maximum => Ord::max,
                    Opcode::Minimum => Ord::min,
                    Opcode::BitwiseAnd => |a, b| a & b,
                    Opcode::BitwiseOr => |a, b| a | b,
                    Opcode::BitwiseXor => |a, b| a ^ b,
                    Opcode::LeftShift => ops::left_shift,
                    Opcode::RightShift => ops::right_shift,
                    _ => return None,
                };
                Some(f)
            }

            fn unary(op: Opcode) -> Option<fn($t) -> $t> {
                let f: fn($t) -> $t = match op {
                    Opcode::Negative => <$t>::wrapping_neg,
                    Opcode::Absolute => ops::absolute,
                    Opcode::Sign => ops::sign,
                    Opcode::Square => |a| a.wrapping_mul(a),
                    Opcode::Invert => |a| !a,
                    _ => return None,
                };
                Some(f)
            }

            fn predicate(_op: Opcode) -> Option<fn($t) -> bool> {
                None
            }

            fn reduce_identity(op: Opcode) -> Option<$t> {
                Some(match op {
                    Opcode::AddReduce => 0,
                    Opcode::MultiplyReduce => 1,
                    Opcode::MinimumReduce => <$t>::MAX,
                    Opcode::MaximumReduce => <$t>::MIN,
                    Opcode::BitwiseAndReduce => !0,
                    Opcode::BitwiseOrReduce | Opcode::BitwiseXorReduce => 0,
                    _ => return None,
                })
            }
        }
    )* };
}
int_elem!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_elem {
    ($($t:ty),*) => { $(
        impl Elem for $t {
            fn from_scalar(s: Scalar) -> $t {
                s.get::<$t>()
            }

            fn to_index(self) -> Option<i128> {
                None
            }

            fn binary(op: Opcode) -> Option<fn($t, $t) -> $t> {
                let f: fn($t, $t) -> $t = match op {
                    Opcode::Add => |a, b| a + b,
                    Opcode::Subtract => |a, b| a - b,
                    Opcode::Multiply => |a, b| a * b,
                    Opcode::Divide => |a, b| a / b,
                    Opcode::FloorDivide => ops::float_floor_divide,
                    Opcode::Remainder => ops::float_remainder,
                    Opcode::Fmod => |a, b| a % b, // Rust's float % is C fmod
                    Opcode::Power => <$t>::powf,
                    Opcode::Maximum => ops::float_maximum,
                    Opcode::Minimum => ops::float_minimum,
                    Opcode::Fmax => ops::float_fmax,
                    Opcode::Fmin => ops::float_fmin,
                    Opcode::Arctan2 => <$t>::atan2,
                    Opcode::Hypot => <$t>::hypot,
                    Opcode::Copysign => <$t>::copysign,
                    _ => return None,
                };
                Some(f)
            }

            fn unary(op: Opcode) -> Option<fn($t) -> $t> {
                let f: fn($t) -> $t = match op {
                    Opcode::Negative => |a| -a,
                    Opcode::Absolute => <$t>::abs,
                    Opcode::Sign => ops::float_sign,
                    Opcode::Square => |a| a * a,
                    Opcode::Reciprocal => |a| 1.0 / a,
                    Opcode::Sqrt => <$t>::sqrt,
                    Opcode::Cbrt => <$t>::cbrt,
                    Opcode::Exp => <$t>::exp,
                    Opcode::Exp2 => <$t>::exp2,
                    Opcode::Expm1 => <$t>::exp_m1,
                    Opcode::Log => <$t>::ln,
                    Opcode::Log2 => <$t>::log2,
                    Opcode::Log10 => <$t>::log10,
                    Opcode::Log1p => <$t>::ln_1p,
                    Opcode::Sin => <$t>::sin,
                    Opcode::Cos => <$t>::cos,
                    Opcode::Tan => <$t>::tan,
                    Opcode::Arcsin => <$t>::asin,
                    Opcode::Arccos => <$t>::acos,
                    Opcode::Arctan => <$t>::atan,
                    Opcode::Sinh => <$t>::sinh,
                    Opcode::Cosh => <$t>::cosh,
                    Opcode::Tanh => <$t>::tanh,
                    Opcode::Arcsinh => ops::float_asinh,
                    Opcode::Arccosh => ops::float_acosh,
                    Opcode::Arctanh => <$t>::atanh,
                    Opcode::Deg2rad => <$t>::to_radians,
                    Opcode::Rad2deg => <$t>::to_degrees,
                    Opcode::Floor => <$t>::floor,
                    Opcode::Ceil => <$t>::ceil,
                    Opcode::Trunc => <$t>::trunc,
                    Opcode::Rint => <$t>::round_ties_even,
                    _ => return None,
                };
                Some(f)
            }

            fn predicate(op: Opcode) -> Option<fn($t) -> bool> {
                let f: fn($t) -> bool = match op {
                    Opcode::Isnan => <$t>::is_nan,
                    Opcode::Isinf => <$t>::is_infinite,
                    Opcode::Isfinite => <$t>::is_finite,
                    Opcode::Signbit => <$t>::is_sign_negative,
                    _ => return None,
                };
                Some(f)
            }

            fn reduce_identity(op: Opcode) -> Option<$t> {
                Some(match op {
                    Opcode::AddReduce => 0.0,
                    Opcode::MultiplyReduce => 1.0,
                    Opcode::MinimumReduce => <$t>::INFINITY,
                    Opcode::MaximumReduce => <$t>::NEG_INFINITY,
                    _ => return None,
                })
            }
        }
    )* };
}
float_elem!(f32, f64);

impl Elem for bool {
    fn from_scalar(s: Scalar) -> bool {
        s.get::<bool>()
    }

    fn to_index(self) -> Option<i128> {
        None
    }

    fn binary(op: Opcode) -> Option<fn(bool, bool) -> bool> {
        let f: fn(bool, bool) -> bool = match op {
            Opcode::BitwiseAnd => |a, b| a & b,
            Opcode::BitwiseOr => |a, b| a | b,
            Opcode::BitwiseXor => |a, b| a ^ b,
            _ => return None,
        };
        Some(f)
    }

    fn unary(op: Opcode) -> Option<fn(bool) -> bool> {
        let f: fn(bool) -> bool = match op {
            Opcode::Invert => |a| !a,
            _ => return None,
        };
        Some(f)
    }

    fn predicate(_op: Opcode) -> Option<fn(bool) -> bool> {
        None
    }

    fn reduce_identity(op: Opcode) -> Option<bool> {
        Some(match op {
            Opcode::BitwiseAndReduce => true,
            Opcode::BitwiseOrReduce | Opcode::BitwiseXorReduce => false,
            _ => return None,
        })
    }
}
