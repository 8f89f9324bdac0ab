//! Element types. The numeric ids are ABI (`VM_DTYPE_*` in `vm.h`) and never change.

use crate::{Error, Result};
use std::fmt;

/// The element type of a base. Ids are stable: they are part of the C ABI and the text form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DType {
    /// `bool`, stored as one byte holding 0 or 1.
    Bool = 0,
    /// Signed 8-bit integer.
    I8 = 1,
    /// Signed 16-bit integer.
    I16 = 2,
    /// Signed 32-bit integer.
    I32 = 3,
    /// Signed 64-bit integer.
    I64 = 4,
    /// Unsigned 8-bit integer.
    U8 = 5,
    /// Unsigned 16-bit integer.
    U16 = 6,
    /// Unsigned 32-bit integer.
    U32 = 7,
    /// Unsigned 64-bit integer.
    U64 = 8,
    /// IEEE 754 binary32.
    F32 = 9,
    /// IEEE 754 binary64.
    F64 = 10,
}

/// Broad classes of dtypes, used by the opcode table's type rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DTypeClass {
    /// `bool`.
    Bool,
    /// Signed integers.
    Signed,
    /// Unsigned integers.
    Unsigned,
    /// Floating point.
    Float,
}

impl DType {
    /// Every dtype, in id order.
    pub const ALL: [DType; 11] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F32,
        DType::F64,
    ];

    /// The dtype with ABI id `id`.
    pub fn from_id(id: u32) -> Result<DType> {
        DType::ALL.get(id as usize).copied().ok_or_else(|| Error::UnknownDType(format!("id {id}")))
    }

    /// The ABI id.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The dtype named `name` (`bool`, `i8`, ..., `f64`, as [`DType::name`] prints).
    pub fn from_name(name: &str) -> Result<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == name).ok_or_else(|| Error::UnknownDType(format!("`{name}`")))
    }

    /// The short name used in the text form and the C header.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// The dtype's class.
    pub fn class(self) -> DTypeClass {
        match self {
            DType::Bool => DTypeClass::Bool,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => DTypeClass::Signed,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => DTypeClass::Unsigned,
            DType::F32 | DType::F64 => DTypeClass::Float,
        }
    }

    /// True for `f32` and `f64`.
    pub fn is_float(self) -> bool {
        self.class() == DTypeClass::Float
    }

    /// True for the signed and unsigned integers (not `bool`).
    pub fn is_integer(self) -> bool {
        matches!(self.class(), DTypeClass::Signed | DTypeClass::Unsigned)
    }

    /// True for signed integers and floats.
    pub fn is_signed(self) -> bool {
        matches!(self.class(), DTypeClass::Signed | DTypeClass::Float)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rust types that are the element type of some [`DType`].
pub trait Element: Copy + Default + Send + Sync + PartialEq + fmt::Debug + 'static {
    /// The dtype whose elements are this type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => { $(impl Element for $t { const DTYPE: DType = DType::$d; })* };
}
element!(bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16,
         u32 => U32, u64 => U64, f32 => F32, f64 => F64);

/// Runs `$body` with the type alias `$T` bound to the Rust type of `$dtype`.
///
/// ```
/// use vm_ir::{DType, with_dtype};
/// let size = with_dtype!(DType::I16, T => std::mem::size_of::<T>());
/// assert_eq!(size, 2);
/// ```
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_round_trip() {
        for (i, d) in DType::ALL.iter().enumerate() {
            assert_eq!(d.id() as usize, i);
            assert_eq!(DType::from_id(d.id()).unwrap(), *d);
            assert_eq!(DType::from_name(d.name()).unwrap(), *d);
            assert_eq!(with_dtype!(*d, T => std::mem::size_of::<T>()), d.size());
        }
        assert!(DType::from_id(11).is_err());
        assert!(DType::from_name("f16").is_err());
    }
}
