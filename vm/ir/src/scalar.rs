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
    /// The value as an element of its dtype in memory: its native-endian bytes at the start of
    /// the array, `dtype().size()` of them (`bool` as 0 or 1).
    pub fn to_ne_bytes(self) -> [u8; 8] {
        let mut bytes = [0u8; 8];
        macro_rules! put {
            ($($v:ident),*) => {
                match self {
                    Scalar::Bool(b) => bytes[0] = u8::from(b),
                    $(Scalar::$v(x) => bytes[..std::mem::size_of_val(&x)].copy_from_slice(&x.to_ne_bytes()),)*
                }
            };
        }
        put!(I8, I16, I32, I64, U8, U16, U32, U64, F32, F64);
        bytes
    }

    /// The inverse of [`Scalar::to_ne_bytes`]: the element of `dtype` whose native-endian bytes
    /// start `bytes` (any byte but 0 is `true`). Panics when `bytes` is shorter than the dtype.
    pub fn from_ne_bytes(dtype: DType, bytes: &[u8]) -> Scalar {
        macro_rules! get {
            ($($d:ident => $t:ty),*) => {
                match dtype {
                    DType::Bool => Scalar::Bool(bytes[0] != 0),
                    $(DType::$d => Scalar::$d(<$t>::from_ne_bytes(
                        bytes[..std::mem::size_of::<$t>()].try_into().expect("the dtype's size"),
                    )),)*
                }
            };
        }
        get!(I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64,
             F32 => f32, F64 => f64)
    }

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

    /// The values a constant of `dtype` may be written as, in words, for errors: `-128 to 127`,
    /// `0 (false) or 1 (true)`, f32's largest magnitude.
    pub fn accepted(dtype: DType) -> String {
        macro_rules! int_range {
            ($t:ty) => {
                format!("{} to {}", <$t>::MIN, <$t>::MAX)
            };
        }
        match dtype {
            DType::Bool => "0 (false) or 1 (true)".to_string(),
            DType::I8 => int_range!(i8),
            DType::I16 => int_range!(i16),
            DType::I32 => int_range!(i32),
            DType::I64 => int_range!(i64),
            DType::U8 => int_range!(u8),
            DType::U16 => int_range!(u16),
            DType::U32 => int_range!(u32),
            DType::U64 => int_range!(u64),
            DType::F32 => format!("finite values of magnitude up to {:e}, inf or NaN", f32::MAX),
            DType::F64 => format!("finite values of magnitude up to {:e}, inf or NaN", f64::MAX),
        }
    }

    /// The constant `value` of dtype `dtype`, when `dtype` holds it exactly: the one range check
    /// of integer constants written in a wider type than their dtype (the text form's `300i8`,
    /// the C ABI's 64-bit `vm_constant` payload). `bool` takes 0 and 1; a float dtype takes the
    /// value rounded as by [`Scalar::from_float`]. The error is `out of range for DTYPE
    /// (RANGE)`, for the caller to prefix with the constant as it was written.
    pub fn from_int(dtype: DType, value: i128) -> Result<Scalar, String> {
        let out = || format!("out of range for {dtype} ({})", Scalar::accepted(dtype));
        let fit = |lo: i128, hi: i128| if (lo..=hi).contains(&value) { Ok(()) } else { Err(out()) };
        macro_rules! int {
            ($t:ty, $v:ident) => {{
                fit(i128::from(<$t>::MIN), i128::from(<$t>::MAX))?;
                Scalar::$v(value as $t)
            }};
        }
        Ok(match dtype {
            DType::Bool => {
                fit(0, 1)?;
                Scalar::Bool(value == 1)
            }
            DType::I8 => int!(i8, I8),
            DType::I16 => int!(i16, I16),
            DType::I32 => int!(i32, I32),
            DType::I64 => int!(i64, I64),
            DType::U8 => int!(u8, U8),
            DType::U16 => int!(u16, U16),
            DType::U32 => int!(u32, U32),
            DType::U64 => int!(u64, U64),
            DType::F32 | DType::F64 => Scalar::from_float(dtype, value as f64)?,
        })
    }

    /// The constant `value` of float dtype `dtype`: f64 holds every value; f32 holds the value
    /// rounded to the nearest f32, except that a finite value beyond f32's finite range (which
    /// would round to infinity) is an error: a program that writes `1e300` as an f32 means a
    /// number, not infinity. Infinities and NaN pass through. An integer dtype takes a value
    /// with no fractional part through [`Scalar::from_int`]. Errors as for
    /// [`Scalar::from_int`].
    pub fn from_float(dtype: DType, value: f64) -> Result<Scalar, String> {
        match dtype {
            DType::F64 => Ok(Scalar::F64(value)),
            DType::F32 => {
                let x = value as f32;
                if value.is_finite() && x.is_infinite() {
                    return Err(format!("out of range for f32 ({})", Scalar::accepted(DType::F32)));
                }
                Ok(Scalar::F32(x))
            }
            d if value.is_finite() && value.fract() == 0.0 && value.abs() < 2f64.powi(64) => {
                Scalar::from_int(d, value as i128)
            }
            d => Err(format!("out of range for {d} ({})", Scalar::accepted(d))),
        }
    }

    /// The constant whose C ABI payload (see [`Scalar::to_payload`]) is `payload`, checked:
    /// the signed value of a signed dtype, the unsigned value of an unsigned dtype or `bool`,
    /// and the `f64` of a float dtype must fit `dtype` ([`Scalar::from_int`],
    /// [`Scalar::from_float`]). The error names the value as the payload holds it.
    pub fn try_from_payload(dtype: DType, payload: u64) -> Result<Scalar, String> {
        // The value is written out only for the error (this runs for every constant submitted).
        match dtype {
            DType::F32 | DType::F64 => {
                let x = f64::from_bits(payload);
                Scalar::from_float(dtype, x).map_err(|why| format!("constant {x:?} is {why}"))
            }
            d if d.is_signed() => {
                let x = payload as i64;
                Scalar::from_int(d, i128::from(x)).map_err(|why| format!("constant {x} is {why}"))
            }
            d => Scalar::from_int(d, i128::from(payload)).map_err(|why| format!("constant {payload} is {why}")),
        }
    }

    /// The inverse of [`Scalar::to_payload`], for payloads known to fit `dtype` (others are
    /// truncated as by [`Cast`]; [`Scalar::try_from_payload`] checks).
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

    /// Every dtype's bytes are the element's bytes in memory and read back to the same value.
    #[test]
    fn native_bytes_are_the_elements_and_read_back() {
        let values = [
            Scalar::Bool(true),
            Scalar::I8(-2),
            Scalar::I16(-300),
            Scalar::I32(-70_000),
            Scalar::I64(-5_000_000_000),
            Scalar::U8(250),
            Scalar::U16(65_000),
            Scalar::U32(4_000_000_000),
            Scalar::U64(u64::MAX - 1),
            Scalar::F32(-1.5e-3),
            Scalar::F64(f64::MIN_POSITIVE),
        ];
        assert_eq!(values.len(), DType::ALL.len());
        for x in values {
            let bytes = x.to_ne_bytes();
            let size = x.dtype().size();
            let expected: Vec<u8> = match x {
                Scalar::Bool(b) => vec![u8::from(b)],
                Scalar::I8(v) => v.to_ne_bytes().to_vec(),
                Scalar::I16(v) => v.to_ne_bytes().to_vec(),
                Scalar::I32(v) => v.to_ne_bytes().to_vec(),
                Scalar::I64(v) => v.to_ne_bytes().to_vec(),
                Scalar::U8(v) => v.to_ne_bytes().to_vec(),
                Scalar::U16(v) => v.to_ne_bytes().to_vec(),
                Scalar::U32(v) => v.to_ne_bytes().to_vec(),
                Scalar::U64(v) => v.to_ne_bytes().to_vec(),
                Scalar::F32(v) => v.to_ne_bytes().to_vec(),
                Scalar::F64(v) => v.to_ne_bytes().to_vec(),
            };
            assert_eq!(&bytes[..size], &expected[..], "{x:?}");
            assert!(bytes[size..].iter().all(|&b| b == 0), "{x:?}");
            assert_eq!(Scalar::from_ne_bytes(x.dtype(), &bytes), x);
        }
        assert_eq!(Scalar::from_ne_bytes(DType::Bool, &[0]), Scalar::Bool(false));
    }

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
    fn from_int_checks_the_range_of_every_integer_dtype() {
        assert_eq!(Scalar::from_int(DType::I8, -128), Ok(Scalar::I8(-128)));
        assert_eq!(Scalar::from_int(DType::I8, 127), Ok(Scalar::I8(127)));
        assert_eq!(Scalar::from_int(DType::I8, 300), Err("out of range for i8 (-128 to 127)".into()));
        assert_eq!(Scalar::from_int(DType::U8, -1), Err("out of range for u8 (0 to 255)".into()));
        assert_eq!(Scalar::from_int(DType::U64, u64::MAX.into()), Ok(Scalar::U64(u64::MAX)));
        assert!(Scalar::from_int(DType::U64, i128::from(u64::MAX) + 1).is_err());
        assert!(Scalar::from_int(DType::I64, i128::from(i64::MIN) - 1).is_err());
        assert_eq!(Scalar::from_int(DType::Bool, 1), Ok(Scalar::Bool(true)));
        assert_eq!(Scalar::from_int(DType::Bool, 0), Ok(Scalar::Bool(false)));
        assert_eq!(Scalar::from_int(DType::Bool, 2), Err("out of range for bool (0 (false) or 1 (true))".into()));
        assert_eq!(Scalar::from_int(DType::F64, 3), Ok(Scalar::F64(3.0)));
    }

    #[test]
    fn from_float_rejects_finite_values_beyond_f32_only() {
        assert_eq!(Scalar::from_float(DType::F32, 0.1), Ok(Scalar::F32(0.1)), "rounding is fine");
        assert_eq!(Scalar::from_float(DType::F32, f64::from(f32::MAX)), Ok(Scalar::F32(f32::MAX)));
        assert_eq!(Scalar::from_float(DType::F32, 1e-300), Ok(Scalar::F32(0.0)), "underflow rounds");
        assert_eq!(Scalar::from_float(DType::F32, f64::INFINITY), Ok(Scalar::F32(f32::INFINITY)));
        assert!(matches!(Scalar::from_float(DType::F32, f64::NAN), Ok(Scalar::F32(x)) if x.is_nan()));
        let e = Scalar::from_float(DType::F32, 1e300).unwrap_err();
        assert!(e.starts_with("out of range for f32 (") && e.contains("3.4028235e38"), "{e}");
        assert!(Scalar::from_float(DType::F32, -1e39).is_err());
        assert_eq!(Scalar::from_float(DType::F64, 1e300), Ok(Scalar::F64(1e300)));
        assert_eq!(Scalar::from_float(DType::I8, 5.0), Ok(Scalar::I8(5)));
        assert!(Scalar::from_float(DType::I8, 0.5).is_err());
    }

    #[test]
    fn try_from_payload_checks_what_from_payload_truncates() {
        let i = |x: i64| x as u64;
        assert_eq!(Scalar::try_from_payload(DType::I8, i(-7)), Ok(Scalar::I8(-7)));
        assert_eq!(
            Scalar::try_from_payload(DType::I8, 300),
            Err("constant 300 is out of range for i8 (-128 to 127)".into())
        );
        assert_eq!(Scalar::from_payload(DType::I8, 300), Scalar::I8(44), "the unchecked form truncates");
        let e = Scalar::try_from_payload(DType::U8, (1 << 40) + 7).unwrap_err();
        assert_eq!(e, "constant 1099511627783 is out of range for u8 (0 to 255)");
        assert!(Scalar::try_from_payload(DType::U8, i(-1)).is_err(), "a negative u8 is 2^64-1");
        assert_eq!(Scalar::try_from_payload(DType::Bool, 1), Ok(Scalar::Bool(true)));
        assert!(Scalar::try_from_payload(DType::Bool, 2).unwrap_err().contains("constant 2 is out of range for bool"));
        let e = Scalar::try_from_payload(DType::F32, 1e300f64.to_bits()).unwrap_err();
        assert!(e.starts_with("constant 1e300 is out of range for f32"), "{e}");
        assert_eq!(
            Scalar::try_from_payload(DType::F32, f64::NEG_INFINITY.to_bits()),
            Ok(Scalar::F32(f32::NEG_INFINITY))
        );
        for d in DType::ALL {
            for v in [-3.0f64, 0.0, 1.0, 200.0] {
                let s = Scalar::F64(v).cast(d);
                assert_eq!(Scalar::try_from_payload(d, s.to_payload()), Ok(s), "{d} {v}");
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
