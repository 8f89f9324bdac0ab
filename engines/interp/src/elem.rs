//! The opcode tables: for each element type, the function that computes each element-wise
//! opcode on one element (or pair of elements). Every table matches its kind's opcodes without
//! a wildcard, so an opcode added to the table must be placed in each; one a type does not
//! define (a float function on integers) is `None`, which the engine reports as
//! [`vm_ir::Error::Unsupported`] and the table-driven tests turn into a failure for every
//! (opcode, dtype) the opcode table allows.

use vm_ir::random::FromRandomBits;
use vm_ir::scalar::{Cast, ScalarElement};
use vm_ir::semantics as ops;
use vm_ir::{BinaryOp, ReduceOp, Scalar, UnaryOp};

/// An element type with its opcode tables.
pub trait Elem: ScalarElement + FromRandomBits + PartialOrd {
    /// The value of the constant `s` (a constant of this type's dtype; other dtypes are cast).
    fn from_scalar(s: Scalar) -> Self;

    /// The value as an array index (integer types only).
    fn to_index(self) -> Option<i128>;

    /// The function of a binary opcode whose inputs and output have this type.
    fn binary(op: BinaryOp) -> Option<fn(Self, Self) -> Self>;

    /// The function of a unary opcode whose input and output have this type.
    fn unary(op: UnaryOp) -> Option<fn(Self) -> Self>;

    /// The function of a unary opcode from this type to `bool` (`isnan`, ...), beyond
    /// `logical_not` (see [`to_bool_unary`]).
    fn predicate(op: UnaryOp) -> Option<fn(Self) -> bool>;

    /// The result of the reduction `op` over no elements.
    fn reduce_identity(op: ReduceOp) -> Option<Self>;
}

/// The truth value of an element: nonzero is true (NaN included).
pub fn truth<T: Elem>(x: T) -> bool {
    Cast::<bool>::cast(x)
}

/// The function of a binary opcode from two elements of type `T` to `bool`: comparisons and
/// logical operations, defined for every dtype.
pub fn to_bool_binary<T: Elem>(op: BinaryOp) -> Option<fn(T, T) -> bool> {
    use BinaryOp as O;
    let f: fn(T, T) -> bool = match op {
        O::Equal => |a, b| a == b,
        O::NotEqual => |a, b| a != b,
        O::Less => |a, b| a < b,
        O::LessEqual => |a, b| a <= b,
        O::Greater => |a, b| a > b,
        O::GreaterEqual => |a, b| a >= b,
        O::LogicalAnd => |a, b| truth(a) && truth(b),
        O::LogicalOr => |a, b| truth(a) || truth(b),
        O::LogicalXor => |a, b| truth(a) != truth(b),
        O::Add | O::Subtract | O::Multiply | O::Divide | O::FloorDivide | O::Remainder | O::Fmod | O::Power => {
            return None;
        }
        O::Maximum | O::Minimum | O::Fmax | O::Fmin | O::Arctan2 | O::Hypot | O::Copysign => return None,
        O::Logaddexp | O::Logaddexp2 => return None,
        O::BitwiseAnd | O::BitwiseOr | O::BitwiseXor | O::LeftShift | O::RightShift => return None,
    };
    Some(f)
}

/// The function of a unary opcode from an element of type `T` to `bool`.
pub fn to_bool_unary<T: Elem>(op: UnaryOp) -> Option<fn(T) -> bool> {
    match op {
        UnaryOp::LogicalNot => Some(|a| !truth(a)),
        op => T::predicate(op),
    }
}

/// The opcodes that are a function of a float alone: `None` in the integer and bool tables.
macro_rules! float_only_unary {
    () => {
        UnaryOp::Reciprocal
            | UnaryOp::Sqrt
            | UnaryOp::Cbrt
            | UnaryOp::Exp
            | UnaryOp::Exp2
            | UnaryOp::Expm1
            | UnaryOp::Log
            | UnaryOp::Log2
            | UnaryOp::Log10
            | UnaryOp::Log1p
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Arcsin
            | UnaryOp::Arccos
            | UnaryOp::Arctan
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Tanh
            | UnaryOp::Arcsinh
            | UnaryOp::Arccosh
            | UnaryOp::Arctanh
            | UnaryOp::Deg2rad
            | UnaryOp::Rad2deg
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Trunc
            | UnaryOp::Rint
    };
}

/// The float predicates (`isnan`, ...).
macro_rules! predicates {
    () => {
        UnaryOp::Isnan | UnaryOp::Isinf | UnaryOp::Isfinite | UnaryOp::Signbit
    };
}

/// The binary opcodes whose output is `bool`: [`to_bool_binary`]'s, in no type's own table.
macro_rules! to_bool_binaries {
    () => {
        BinaryOp::Equal
            | BinaryOp::NotEqual
            | BinaryOp::Less
            | BinaryOp::LessEqual
            | BinaryOp::Greater
            | BinaryOp::GreaterEqual
            | BinaryOp::LogicalAnd
            | BinaryOp::LogicalOr
            | BinaryOp::LogicalXor
    };
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

            fn binary(op: BinaryOp) -> Option<fn($t, $t) -> $t> {
                use BinaryOp as O;
                let f: fn($t, $t) -> $t = match op {
                    O::Add => <$t>::wrapping_add,
                    O::Subtract => <$t>::wrapping_sub,
                    O::Multiply => <$t>::wrapping_mul,
                    O::FloorDivide => ops::floor_divide,
                    O::Remainder => ops::remainder,
                    O::Fmod => ops::fmod,
                    O::Power => ops::power,
                    O::Maximum => Ord::max,
                    O::Minimum => Ord::min,
                    O::BitwiseAnd => |a, b| a & b,
                    O::BitwiseOr => |a, b| a | b,
                    O::BitwiseXor => |a, b| a ^ b,
                    O::LeftShift => ops::left_shift,
                    O::RightShift => ops::right_shift,
                    O::Divide | O::Fmax | O::Fmin | O::Arctan2 | O::Hypot | O::Copysign => return None,
                    O::Logaddexp | O::Logaddexp2 => return None,
                    to_bool_binaries!() => return None,
                };
                Some(f)
            }

            fn unary(op: UnaryOp) -> Option<fn($t) -> $t> {
                let f: fn($t) -> $t = match op {
                    UnaryOp::Negative => <$t>::wrapping_neg,
                    UnaryOp::Absolute => ops::absolute,
                    UnaryOp::Sign => ops::sign,
                    UnaryOp::Square => |a| a.wrapping_mul(a),
                    UnaryOp::Invert => |a| !a,
                    // a cast (identity) and the predicates have tables of their own
                    UnaryOp::Identity | UnaryOp::LogicalNot | predicates!() => return None,
                    float_only_unary!() => return None,
                };
                Some(f)
            }

            fn predicate(_op: UnaryOp) -> Option<fn($t) -> bool> {
                None
            }

            fn reduce_identity(op: ReduceOp) -> Option<$t> {
                use ReduceOp as R;
                Some(match op {
                    R::AddReduce => 0,
                    R::MultiplyReduce => 1,
                    R::MinimumReduce => <$t>::MAX,
                    R::MaximumReduce => <$t>::MIN,
                    R::BitwiseAndReduce => !0,
                    R::BitwiseOrReduce | R::BitwiseXorReduce => 0,
                    // logical reductions work on truth values; positions have no identity
                    R::LogicalAndReduce | R::LogicalOrReduce | R::LogicalXorReduce => return None,
                    R::ArgminReduce | R::ArgmaxReduce => return None,
                })
            }
        }
    )* };
}
int_elem!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_elem {
    ($($t:ty => $exp:path, $ln:path);*) => { $(
        impl Elem for $t {
            fn from_scalar(s: Scalar) -> $t {
                s.get::<$t>()
            }

            fn to_index(self) -> Option<i128> {
                None
            }

            fn binary(op: BinaryOp) -> Option<fn($t, $t) -> $t> {
                use BinaryOp as O;
                let f: fn($t, $t) -> $t = match op {
                    O::Add => |a, b| a + b,
                    O::Subtract => |a, b| a - b,
                    O::Multiply => |a, b| a * b,
                    O::Divide => |a, b| a / b,
                    O::FloorDivide => ops::float_floor_divide,
                    O::Remainder => ops::float_remainder,
                    O::Fmod => |a, b| a % b, // Rust's float % is C fmod
                    O::Power => <$t>::powf,
                    O::Maximum => ops::float_maximum,
                    O::Minimum => ops::float_minimum,
                    O::Fmax => ops::float_fmax,
                    O::Fmin => ops::float_fmin,
                    O::Arctan2 => <$t>::atan2,
                    O::Hypot => <$t>::hypot,
                    O::Copysign => <$t>::copysign,
                    O::Logaddexp => ops::float_logaddexp,
                    O::Logaddexp2 => ops::float_logaddexp2,
                    O::BitwiseAnd | O::BitwiseOr | O::BitwiseXor | O::LeftShift | O::RightShift => return None,
                    to_bool_binaries!() => return None,
                };
                Some(f)
            }

            fn unary(op: UnaryOp) -> Option<fn($t) -> $t> {
                let f: fn($t) -> $t = match op {
                    UnaryOp::Negative => |a| -a,
                    UnaryOp::Absolute => <$t>::abs,
                    UnaryOp::Sign => ops::float_sign,
                    UnaryOp::Square => |a| a * a,
                    UnaryOp::Reciprocal => |a| 1.0 / a,
                    UnaryOp::Sqrt => <$t>::sqrt,
                    UnaryOp::Cbrt => <$t>::cbrt,
                    UnaryOp::Exp => $exp,
                    UnaryOp::Exp2 => <$t>::exp2,
                    UnaryOp::Expm1 => <$t>::exp_m1,
                    UnaryOp::Log => $ln,
                    UnaryOp::Log2 => <$t>::log2,
                    UnaryOp::Log10 => <$t>::log10,
                    UnaryOp::Log1p => <$t>::ln_1p,
                    UnaryOp::Sin => <$t>::sin,
                    UnaryOp::Cos => <$t>::cos,
                    UnaryOp::Tan => <$t>::tan,
                    UnaryOp::Arcsin => <$t>::asin,
                    UnaryOp::Arccos => <$t>::acos,
                    UnaryOp::Arctan => <$t>::atan,
                    UnaryOp::Sinh => <$t>::sinh,
                    UnaryOp::Cosh => <$t>::cosh,
                    UnaryOp::Tanh => <$t>::tanh,
                    UnaryOp::Arcsinh => ops::float_asinh,
                    UnaryOp::Arccosh => ops::float_acosh,
                    UnaryOp::Arctanh => ops::float_atanh,
                    UnaryOp::Deg2rad => ops::deg2rad,
                    UnaryOp::Rad2deg => ops::rad2deg,
                    UnaryOp::Floor => <$t>::floor,
                    UnaryOp::Ceil => <$t>::ceil,
                    UnaryOp::Trunc => <$t>::trunc,
                    UnaryOp::Rint => <$t>::round_ties_even,
                    UnaryOp::Invert | UnaryOp::Identity | UnaryOp::LogicalNot | predicates!() => return None,
                };
                Some(f)
            }

            fn predicate(op: UnaryOp) -> Option<fn($t) -> bool> {
                let f: fn($t) -> bool = match op {
                    UnaryOp::Isnan => <$t>::is_nan,
                    UnaryOp::Isinf => <$t>::is_infinite,
                    UnaryOp::Isfinite => <$t>::is_finite,
                    UnaryOp::Signbit => <$t>::is_sign_negative,
                    UnaryOp::Negative | UnaryOp::Absolute | UnaryOp::Sign | UnaryOp::Square => return None,
                    UnaryOp::Invert | UnaryOp::Identity | UnaryOp::LogicalNot => return None,
                    float_only_unary!() => return None,
                };
                Some(f)
            }

            fn reduce_identity(op: ReduceOp) -> Option<$t> {
                use ReduceOp as R;
                Some(match op {
                    R::AddReduce => 0.0,
                    R::MultiplyReduce => 1.0,
                    R::MinimumReduce => <$t>::INFINITY,
                    R::MaximumReduce => <$t>::NEG_INFINITY,
                    R::BitwiseAndReduce | R::BitwiseOrReduce | R::BitwiseXorReduce => return None,
                    R::LogicalAndReduce | R::LogicalOrReduce | R::LogicalXorReduce => return None,
                    R::ArgminReduce | R::ArgmaxReduce => return None,
                })
            }
        }
    )* };
}
// `exp` and `log` are `vm_math`'s, the cpu engine's too (within an ulp of libm's).
float_elem!(f32 => vm_math::exp_f32, vm_math::ln_f32; f64 => vm_math::exp_f64, vm_math::ln_f64);

impl Elem for bool {
    fn from_scalar(s: Scalar) -> bool {
        s.get::<bool>()
    }

    fn to_index(self) -> Option<i128> {
        None
    }

    fn binary(op: BinaryOp) -> Option<fn(bool, bool) -> bool> {
        use BinaryOp as O;
        let f: fn(bool, bool) -> bool = match op {
            O::BitwiseAnd => |a, b| a & b,
            O::BitwiseOr => |a, b| a | b,
            O::BitwiseXor => |a, b| a ^ b,
            // bool arithmetic is not in the opcode table (frontends use logical opcodes)
            O::Add | O::Subtract | O::Multiply | O::Divide | O::FloorDivide | O::Remainder | O::Fmod | O::Power => {
                return None;
            }
            O::Maximum | O::Minimum | O::Fmax | O::Fmin | O::Arctan2 | O::Hypot | O::Copysign => return None,
            O::Logaddexp | O::Logaddexp2 => return None,
            O::LeftShift | O::RightShift => return None,
            to_bool_binaries!() => return None,
        };
        Some(f)
    }

    fn unary(op: UnaryOp) -> Option<fn(bool) -> bool> {
        let f: fn(bool) -> bool = match op {
            UnaryOp::Invert => |a| !a,
            UnaryOp::Negative | UnaryOp::Absolute | UnaryOp::Sign | UnaryOp::Square => return None,
            UnaryOp::Identity | UnaryOp::LogicalNot | predicates!() => return None,
            float_only_unary!() => return None,
        };
        Some(f)
    }

    fn predicate(_op: UnaryOp) -> Option<fn(bool) -> bool> {
        None
    }

    fn reduce_identity(op: ReduceOp) -> Option<bool> {
        use ReduceOp as R;
        Some(match op {
            R::BitwiseAndReduce => true,
            R::BitwiseOrReduce | R::BitwiseXorReduce => false,
            R::AddReduce | R::MultiplyReduce | R::MinimumReduce | R::MaximumReduce => return None,
            R::LogicalAndReduce | R::LogicalOrReduce | R::LogicalXorReduce => return None,
            R::ArgminReduce | R::ArgmaxReduce => return None,
        })
    }
}
