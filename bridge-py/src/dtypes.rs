//! NumPy 2's type promotion over the VM's dtypes, with NEP 50's weak Python scalars, and the
//! per-operation choice of the dtype an opcode computes in.

use vm_ir::{DType, Scalar};

/// A Python scalar operand (`bool`, `int`, `float`): NEP 50 calls it weak, because it takes the
/// dtype of the array it meets instead of taking part in promotion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Weak {
    /// A Python `bool`.
    Bool(bool),
    /// A Python `int` that fits an `i64`.
    Int(i64),
    /// A Python `float`.
    Float(f64),
    /// A Python `int` past `i64` that fits a `u64` (`2**63`): only uint64 and the floats hold it.
    BigUint(u64),
    /// A Python `int` past both `i64` and `u64` (`10**20`), as the nearest float: it meets
    /// float arrays as that value and overflows every integer dtype.
    HugeInt(f64),
}

impl Weak {
    /// The dtype NumPy gives the scalar on its own (`np.asarray(x).dtype`).
    pub fn default_dtype(self) -> DType {
        match self {
            Weak::Bool(_) => DType::Bool,
            Weak::Int(_) | Weak::HugeInt(_) => DType::I64,
            Weak::BigUint(_) => DType::U64,
            Weak::Float(_) => DType::F64,
        }
    }

    /// The scalar as a constant of `dtype`; `None` when an int does not fit an integer dtype
    /// (NumPy raises `OverflowError` there).
    pub fn to_scalar(self, dtype: DType) -> Option<Scalar> {
        match self {
            Weak::Bool(b) => Some(Scalar::Bool(b).cast(dtype)),
            Weak::Float(f) => Some(Scalar::F64(f).cast(dtype)),
            Weak::Int(i) => {
                if dtype.is_integer() && !fits(i, dtype) {
                    return None;
                }
                Some(Scalar::I64(i).cast(dtype))
            }
            Weak::BigUint(u) if dtype == DType::U64 => Some(Scalar::U64(u)),
            Weak::BigUint(u) if dtype.is_float() => Some(Scalar::F64(u as f64).cast(dtype)),
            Weak::BigUint(_) => None,
            Weak::HugeInt(_) if !dtype.is_float() => None,
            Weak::HugeInt(f) => Some(Scalar::F64(f).cast(dtype)),
        }
    }
}

fn fits(i: i64, d: DType) -> bool {
    let (lo, hi): (i128, i128) = match d {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        DType::U64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    (lo..=hi).contains(&i128::from(i))
}

fn rank(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        DType::I8 | DType::U8 => 1,
        DType::I16 | DType::U16 => 2,
        DType::I32 | DType::U32 => 3,
        DType::I64 | DType::U64 => 4,
        DType::F32 => 5,
        DType::F64 => 6,
    }
}

fn signed_of_size(bytes: usize) -> DType {
    match bytes {
        1 => DType::I8,
        2 => DType::I16,
        4 => DType::I32,
        _ => DType::I64,
    }
}

/// `numpy.promote_types(a, b)` restricted to the VM's dtypes (no float16: where NumPy would
/// pick it, float32 is the smallest float that holds the values).
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    if a == Bool {
        return b;
    }
    if b == Bool {
        return a;
    }
    match (a.is_float(), b.is_float()) {
        (true, true) => return if rank(a) >= rank(b) { a } else { b },
        (true, false) | (false, true) => {
            let (f, i) = if a.is_float() { (a, b) } else { (b, a) };
            // float32 holds int8/int16 and their unsigned twins exactly; wider ints need float64.
            return if f == F64 || i.size() >= 4 { F64 } else { F32 };
        }
        _ => {}
    }
    match (a.is_signed(), b.is_signed()) {
        (true, true) | (false, false) => {
            if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
        _ => {
            let (s, u) = if a.is_signed() { (a, b) } else { (b, a) };
            if s.size() > u.size() {
                s
            } else if u.size() >= 8 {
                F64
            } else {
                signed_of_size(u.size() * 2)
            }
        }
    }
}

/// NEP 50: the result dtype of an array (or NumPy scalar) of dtype `d` meeting a weak scalar.
pub fn promote_weak(d: DType, w: Weak) -> DType {
    match w {
        Weak::Bool(_) => d,
        Weak::Int(_) | Weak::HugeInt(_) | Weak::BigUint(_) if d == DType::Bool => DType::I64,
        Weak::Int(_) | Weak::HugeInt(_) | Weak::BigUint(_) => d,
        Weak::Float(_) if d.is_float() => d,
        Weak::Float(_) => DType::F64,
    }
}

/// The float dtype NumPy computes a float-only function of `d` in (`sqrt`, `exp`, `/`, ...).
pub fn float_of(d: DType) -> DType {
    match d {
        DType::F32 | DType::F64 => d,
        // NumPy picks float16 for 1-byte ints and bool, which the VM lacks.
        DType::Bool | DType::I8 | DType::U8 | DType::I16 | DType::U16 => DType::F32,
        _ => DType::F64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn promotion_matches_numpys_table() {
        assert_eq!(promote(I8, U8), I16);
        assert_eq!(promote(I64, U64), F64);
        assert_eq!(promote(U32, I32), I64);
        assert_eq!(promote(I16, F32), F32);
        assert_eq!(promote(I32, F32), F64);
        assert_eq!(promote(Bool, U16), U16);
        assert_eq!(promote(F32, F64), F64);
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(promote(a, b), promote(b, a), "{a} {b}");
            }
        }
    }

    #[test]
    fn weak_scalars_follow_nep50() {
        assert_eq!(promote_weak(F32, Weak::Float(1.0)), F32);
        assert_eq!(promote_weak(I8, Weak::Int(3)), I8);
        assert_eq!(promote_weak(I8, Weak::Float(3.0)), F64);
        assert_eq!(promote_weak(Bool, Weak::Int(3)), I64);
        assert!(Weak::Int(300).to_scalar(U8).is_none());
        assert_eq!(Weak::Int(-1).to_scalar(I8), Some(Scalar::I8(-1)));
        assert!(Weak::HugeInt(1e20).to_scalar(U64).is_none());
        assert_eq!(Weak::BigUint(1 << 63).to_scalar(U64), Some(Scalar::U64(1 << 63)));
        assert!(Weak::BigUint(1 << 63).to_scalar(I64).is_none());
        assert_eq!(promote_weak(U8, Weak::BigUint(1 << 63)), U8);
        assert_eq!(Weak::HugeInt(1e20).to_scalar(F32), Some(Scalar::F32(1e20)));
        assert_eq!(promote_weak(F32, Weak::HugeInt(1e20)), F32);
    }
}
