//! Tagged scalars (constant operands) and the cast rules between element types.

use crate::dtype::{DType, Element};
use std::fmt;

/// Conversion between element types with the VM's cast semantics (those of NumPy's `astype`
/// where NumPy defines them): integer to integer wraps (two's complement truncation), float to
/// integer truncates toward zero and saturates at the target's range (NaN becomes 0), anything to
/// `bool` is `x != 0` (NaN is true), `bool` to numbers is 0 or 1.
pub trait Cast<U> {
    /// Converts `self` to `U`.
    fn cast(self) -> U;
}

macro_rules! cast_numeric {
    ($($from:ty),*) => { $( cast_numeric!(@to $from; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64); )* };
    (@to $from:ty; $($to:ty),*) => { $(
        impl Cast<$to> for $from { #[inline(always)] fn cast(self) -> $to { self as $to } }
    )* };
}
cast_numeric!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

macro_rules! cast_bool {
    ($($t:ty),*) => { $(
        impl Cast<bool> for $t {
            #[inline(always)]
            #[allow(clippy::float_cmp)]
            fn cast(self) -> bool { self != (0 as $t) }
        }
        impl Cast<$t> for bool { #[inline(always)] fn cast(self) -> $t { self as u8 as $t } }
    )* };
}
cast_bool!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl Cast<bool> for bool {
    #[inline(always)]
    fn cast(self) -> bool {
        self
    }
}

/// A constant operand: a value together with its dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(missing_docs)] // one variant per dtype, named after it
pub enum Scalar {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
}

/// Element types that can be wrapped in and taken out of a [`Scalar`].
pub trait ScalarElement:
    Element
    + Cast<bool>
    + Cast<i8>
    + Cast<i16>
    + Cast<i32>
    + Cast<i64>
    + Cast<u8>
    + Cast<u16>
    + Cast<u32>
    + Cast<u64>
    + Cast<f32>
    + Cast<f64>
{
    /// Wraps a value.
    fn into_scalar(self) -> Scalar;
}

macro_rules! scalar_element {
    ($($t:ty => $v:ident),*) => { $(
        impl ScalarElement for $t { fn into_scalar(self) -> Scalar { Scalar::$v(self) } }
        impl From<$t> for Scalar { fn from(x: $t) -> Scalar { Scalar::$v(x) } }
    )* };
}
scalar_element!(bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8,
                u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64);

macro_rules! each_scalar {
    ($s:expr, $x:ident => $body:expr) => {
        match $s {
            Scalar::Bool($x) => $body,
            Scalar::I8($x) => $body,
            Scalar::I16($x) => $body,
            Scalar::I32($x) => $body,
            Scalar::I64($x) => $body,
            Scalar::U8($x) => $body,
            Scalar::U16($x) => $body,
            Scalar::U32($x) => $body,
            Scalar::U64($x) => $body,
            Scalar::F32($x) => $body,
            Scalar::F64($x) => $body,
        }
    };
}

impl Scalar {
    /// The scalar's dtype.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::I8(_) => DType::I8,
            Scalar::I16(_) => DType::I16,
            Scalar::I32(_) => DType::I32,
            Scalar::I64(_) => DType::I64,
            Scalar::U8(_) => DType::U8,
            Scalar::U16(_) => DType::U16,
            Scalar::U32(_) => DType::U32,
            Scalar::U64(_) => DType::U64,
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
        }
    }

    /// The value converted to `T` with the [`Cast`] rules.
    pub fn get<T: Element>(self) -> T
    where
        bool: Cast<T>,
        i8: Cast<T>,
        i16: Cast<T>,
        i32: Cast<T>,
        i64: Cast<T>,
        u8: Cast<T>,
        u16: Cast<T>,
        u32: Cast<T>,
        u64: Cast<T>,
        f32: Cast<T>,
        f64: Cast<T>,
    {
        each_scalar!(self, x => x.cast())
    }

    /// The value converted to `dtype` with the [`Cast`] rules.
    pub fn cast(self, dtype: DType) -> Scalar {
        crate::with_dtype!(dtype, T => Scalar::from(self.get::<T>()))
    }

    /// The value as an `f64` (exact for every dtype but the 64-bit integers above 2^53).
    pub fn as_f64(self) -> f64 {
        self.get::<f64>()
    }

    /// The value as an `i64` (integers wrap, floats truncate and saturate).
    pub fn as_i64(self) -> i64 {
        self.get::<i64>()
    }

    /// The value's bits in the C ABI's 64-bit payload: signed integers sign-extended, unsigned
    /// zero-extended, `bool` as 0/1, `f32` and `f64` as the bits of the `f64` holding them.
    pub fn to_payload(self) -> u64 {
        match self {
            Scalar::F32(x) => (x as f64).to_bits(),
            Scalar::F64(x) => x.to_bits(),
            Scalar::I8(_) | Scalar::I16(_) | Scalar::I32(_) | Scalar::I64(_) => self.as_i64() as u64,
            other => other.get::<u64>(),
        }
    }

    /// The inverse of [`Scalar::to_payload`].
    pub fn from_payload(dtype: DType, payload: u64) -> Scalar {
        match dtype {
            DType::F32 => Scalar::F32(f64::from_bits(payload) as f32),
            DType::F64 => Scalar::F64(f64::from_bits(payload)),
            DType::Bool => Scalar::Bool(payload != 0),
            d if d.is_signed() => Scalar::I64(payload as i64).cast(d),
            d => Scalar::U64(payload).cast(d),
        }
    }
}

impl fmt::Display for Scalar {
    /// Prints the text form: `true`, `-3i32`, `2.5f64`; floats print exactly (`{:?}` of the
    /// float is the shortest representation that reads back to the same bits).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::F32(x) => write!(f, "{x:?}f32"),
            Scalar::F64(x) => write!(f, "{x:?}f64"),
            s => each_scalar!(*s, x => write!(f, "{x}{}", s.dtype().name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_numpy_astype() {
        assert_eq!(Cast::<i32>::cast(-2.7f64), -2);
        assert_eq!(Cast::<u8>::cast(300i32), 44);
        assert_eq!(Cast::<i8>::cast(f64::NAN), 0);
        assert!(Cast::<bool>::cast(f64::NAN));
        assert!(!Cast::<bool>::cast(0.0f32));
        assert_eq!(Cast::<f64>::cast(true), 1.0);
    }

    #[test]
    fn payload_round_trips_every_dtype() {
        for d in DType::ALL {
            for v in [-3.0f64, 0.0, 1.0, 200.0] {
                let s = Scalar::F64(v).cast(d);
                assert_eq!(Scalar::from_payload(d, s.to_payload()), s, "{d} {v}");
            }
        }
    }

    #[test]
    fn display_is_the_text_form() {
        assert_eq!(Scalar::I32(-3).to_string(), "-3i32");
        assert_eq!(Scalar::F64(0.1).to_string(), "0.1f64");
        assert_eq!(Scalar::F32(2.0).to_string(), "2.0f32");
        assert_eq!(Scalar::Bool(true).to_string(), "true");
    }
}
