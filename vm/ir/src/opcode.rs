//! THE opcode table: every opcode's stable id, mnemonic, shape of operands and dtype rule,
//! written once. The C header's `VM_OP_*` constants, the text form's mnemonics and the docs'
//! opcode table are generated from (or checked against) [`Opcode::ALL`].
//!
//! Semantics shared by all instructions: operand 0 is the output (for `scatter`, the array
//! scattered into; for the system opcodes, the view acted on). Every input is read as if in full
//! before the output is written, so an output that partially overlaps an input (`a[1:] =
//! a[:-1] + 1`) has NumPy's (>= 1.13) meaning. Element-wise inputs have exactly the output's shape:
//! frontends broadcast with stride-0 views. An output view may not visit an element twice.

use crate::dtype::{DType, DTypeClass};
use std::fmt;

/// Opcode ids at or above this number are extension methods registered at run time.
pub const EXTENSION_BASE: u32 = 1024;

/// A set of dtypes, as a bit mask over dtype ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DTypeSet(pub u16);

impl DTypeSet {
    /// Every dtype.
    pub const ALL: DTypeSet = DTypeSet(0x7ff);
    /// Every dtype but `bool`.
    pub const NUMERIC: DTypeSet = DTypeSet(0x7fe);
    /// Signed and unsigned integers.
    pub const INTEGER: DTypeSet = DTypeSet(0x1fe);
    /// Integers and `bool`.
    pub const INTEGER_BOOL: DTypeSet = DTypeSet(0x1ff);
    /// `f32` and `f64`.
    pub const FLOAT: DTypeSet = DTypeSet(0x600);

    /// True when `d` is in the set.
    pub fn contains(self, d: DType) -> bool {
        self.0 & (1 << d.id()) != 0
    }

    /// The dtypes of the set, in id order.
    pub fn dtypes(self) -> impl Iterator<Item = DType> {
        DType::ALL.into_iter().filter(move |&d| self.contains(d))
    }

    /// A short description for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            DTypeSet::ALL => "any dtype",
            DTypeSet::NUMERIC => "a numeric dtype (not bool)",
            DTypeSet::INTEGER => "an integer dtype",
            DTypeSet::INTEGER_BOOL => "an integer or bool dtype",
            DTypeSet::FLOAT => "a float dtype",
            _ => "one of the allowed dtypes",
        }
    }
}

/// What an opcode does with its operands: fixes the number of operands, which of them may be
/// constants, and the shape rules. See the module doc for the rules shared by all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `op out, in`: element-wise.
    Unary,
    /// `op out, in1, in2`: element-wise.
    Binary,
    /// `select out, cond, a, b`: element-wise, `out = cond ? a : b`; `cond` is bool.
    Select,
    /// `op out, in, axis`: reduces view `in` along `axis` (an `i64` constant, `0 <= axis <
    /// in.ndim`); `out` has `in`'s shape without that axis (0-d for a 1-d input).
    Reduce,
    /// `op out, in, axis`: running reduction along `axis`; `out` has `in`'s shape.
    Accumulate,
    /// `op out, in, axis`: each line of `in` along `axis` in ascending order, NaNs last
    /// (`sort`: the values, `-0.0` before `0.0`, the NaNs in their order; `argsort`: the
    /// positions along the axis, `i64`, equal values in their order, `-0.0` equal to `0.0`);
    /// `out` has `in`'s shape. The whole input is read before `out` is written (`out` may be
    /// `in`: a sort in place).
    Sort,
    /// `op out, sorted, keys`: for each element of `keys` (row-major), the position in the
    /// 1-d view `sorted` (of `keys`' dtype) where it would be inserted to keep the order
    /// (`searchsorted_left`: before equal values, `searchsorted_right`: after them), in the
    /// order of `sort` (NaNs last, `-0.0` equal to `0.0`); `out` is `i64` of `keys`' shape.
    /// NumPy's binary search exactly, starting each key from the last key's bounds, so that
    /// an unsorted `sorted` gives NumPy's positions too. The inputs are read whole before
    /// `out` is written.
    Search,
    /// `range out`: `out[i] = i`, where `i` is the row-major position in `out`, cast to out's dtype.
    Range,
    /// `random out, seed, offset` (two `u64` constants): element at row-major position `i`
    /// is drawn from counter `offset + i` of the Philox-4x32-10 stream keyed by `seed` (see
    /// `random`): floats are uniform in [0, 1), integers the stream's bits, bool its lowest bit.
    Random,
    /// `gather out, src, index`: `out[i] = src.flat[index[i]]`, `flat` being row-major positions
    /// in the view `src`; `index` is an integer view of `out`'s shape. An index out of range is an
    /// execution error.
    Gather,
    /// `scatter dst, src, index`: `dst.flat[index[i]] = src[i]`; `src` and `index` have one shape.
    /// When an index repeats, the element with the largest `i` wins (`scatter`), or every
    /// element adds to it in the order of `i` (`scatter_add`).
    Scatter,
    /// `op view`: a system instruction on the base of `view` (sync, discard, free).
    System,
    /// `none`: does nothing.
    Nothing,
    /// An extension method: operands as the method defines them.
    Extension,
}

/// How the dtypes of an opcode's operands relate. "Inputs" are the non-parameter operands after
/// operand 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeRule {
    /// Output and all inputs share one dtype from the set.
    Same(DTypeSet),
    /// Inputs share one dtype from the set; the output is `bool`.
    ToBool(DTypeSet),
    /// The input's dtype is in the set; the output is `i64`, a position along the reduced or
    /// sorted axis (`argmin_reduce`, `argmax_reduce`, `argsort`).
    ToPosition(DTypeSet),
    /// Output and input may be any dtypes; the input is converted by the cast rules.
    Cast,
    /// The output's dtype is in the set; there are no data inputs.
    Generate(DTypeSet),
    /// `cond` is bool, `a`, `b` and the output share a dtype.
    Select,
    /// `out`/`dst` and `src` share any dtype; `index` is an integer dtype.
    Indexed,
    /// Any dtypes (system instructions, extensions checked by their implementation).
    Any,
}

macro_rules! opcode_table {
    ($( $(#[doc = $doc:literal])* $variant:ident = $id:literal, $name:literal, $kind:ident, $rule:expr; )*) => {
        /// A built-in opcode or an extension method. Built-in ids are ABI and never change.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode {
            $( $(#[doc = $doc])* $variant, )*
            /// An extension method registered at run time; its number is `EXTENSION_BASE + n`.
            Extension(u32),
        }

        impl Opcode {
            /// Every built-in opcode, in table order.
            pub const ALL: &'static [Opcode] = &[ $( Opcode::$variant, )* ];

            /// The opcode's ABI number.
            #[inline]
            pub fn id(self) -> u32 {
                match self {
                    $( Opcode::$variant => $id, )*
                    Opcode::Extension(n) => EXTENSION_BASE + n,
                }
            }

            /// The opcode with ABI number `id`; numbers from `EXTENSION_BASE` on are extensions
            /// (whether one is registered is the runtime's to check).
            pub fn from_id(id: u32) -> crate::Result<Opcode> {
                match id {
                    $( $id => Ok(Opcode::$variant), )*
                    n if n >= EXTENSION_BASE => Ok(Opcode::Extension(n - EXTENSION_BASE)),
                    n => Err(crate::Error::UnknownOpcode(n)),
                }
            }

            /// The mnemonic used by the text form (`add`, `add_reduce`, ...); `extension` for
            /// extension methods, whose text form uses the registered name.
            pub fn name(self) -> &'static str {
                match self {
                    $( Opcode::$variant => $name, )*
                    Opcode::Extension(_) => "extension",
                }
            }

            /// The built-in opcode with mnemonic `name`.
            pub fn from_name(name: &str) -> Option<Opcode> {
                match name {
                    $( $name => Some(Opcode::$variant), )*
                    _ => None,
                }
            }

            /// The opcode's operand kind.
            #[inline]
            pub fn kind(self) -> Kind {
                match self {
                    $( Opcode::$variant => Kind::$kind, )*
                    Opcode::Extension(_) => Kind::Extension,
                }
            }

            /// The opcode's dtype rule.
            pub fn type_rule(self) -> TypeRule {
                match self {
                    $( Opcode::$variant => $rule, )*
                    Opcode::Extension(_) => TypeRule::Any,
                }
            }

            /// One line saying what the opcode computes (its doc comment).
            pub fn summary(self) -> &'static str {
                match self {
                    $( Opcode::$variant => concat!($($doc),*).trim_ascii(), )*
                    Opcode::Extension(_) => "An extension method registered at run time.",
                }
            }

            /// The opcode as its kind's own enum: what engines match on, without a wildcard,
            /// so that an opcode added to the table is a compile error in every engine until
            /// it handles it.
            #[inline]
            pub fn class(self) -> OpClass {
                match self {
                    $( Opcode::$variant => class_of!($kind, $variant), )*
                    Opcode::Extension(n) => OpClass::Extension(n),
                }
            }
        }

        kind_enums! { @split [] [] [] [] [] ; $( $variant $kind, )* }
    };
}

/// The [`OpClass`] of opcode `$variant` of kind `$kind`.
macro_rules! class_of {
    (Unary, $v:ident) => {
        OpClass::Unary(UnaryOp::$v)
    };
    (Binary, $v:ident) => {
        OpClass::Binary(BinaryOp::$v)
    };
    (Reduce, $v:ident) => {
        OpClass::Reduce(ReduceOp::$v)
    };
    (Accumulate, $v:ident) => {
        OpClass::Accumulate(AccumulateOp::$v)
    };
    (System, $v:ident) => {
        OpClass::System(SystemOp::$v)
    };
    (Scatter, ScatterAdd) => {
        OpClass::ScatterAdd
    };
    (Sort, Argsort) => {
        OpClass::Argsort
    };
    (Search, SearchsortedLeft) => {
        OpClass::SearchLeft
    };
    (Search, SearchsortedRight) => {
        OpClass::SearchRight
    };
    ($kind:ident, $v:ident) => {
        OpClass::$kind
    };
}

/// Sorts the table's opcodes by kind (a token muncher) and declares one enum per kind that has
/// several opcodes, with the conversions back to [`Opcode`].
macro_rules! kind_enums {
    (@split [$($u:ident)*] [$($b:ident)*] [$($r:ident)*] [$($a:ident)*] [$($s:ident)*] ; ) => {
        kind_enums!(@enum UnaryOp, Unary, "An element-wise opcode with one input ([`Kind::Unary`]).", $($u)*);
        kind_enums!(@enum BinaryOp, Binary, "An element-wise opcode with two inputs ([`Kind::Binary`]).", $($b)*);
        kind_enums!(@enum ReduceOp, Reduce, "A reduction along one axis ([`Kind::Reduce`]).", $($r)*);
        kind_enums!(@enum AccumulateOp, Accumulate, "A scan along one axis ([`Kind::Accumulate`]).", $($a)*);
        kind_enums!(@enum SystemOp, System, "A system instruction on a base ([`Kind::System`]).", $($s)*);
    };
    (@split [$($u:ident)*] [$($b:ident)*] [$($r:ident)*] [$($a:ident)*] [$($s:ident)*] ; $v:ident Unary, $($rest:tt)*) => {
        kind_enums!(@split [$($u)* $v] [$($b)*] [$($r)*] [$($a)*] [$($s)*] ; $($rest)*);
    };
    (@split [$($u:ident)*] [$($b:ident)*] [$($r:ident)*] [$($a:ident)*] [$($s:ident)*] ; $v:ident Binary, $($rest:tt)*) => {
        kind_enums!(@split [$($u)*] [$($b)* $v] [$($r)*] [$($a)*] [$($s)*] ; $($rest)*);
    };
    (@split [$($u:ident)*] [$($b:ident)*] [$($r:ident)*] [$($a:ident)*] [$($s:ident)*] ; $v:ident Reduce, $($rest:tt)*) => {
        kind_enums!(@split [$($u)*] [$($b)*] [$($r)* $v] [$($a)*] [$($s)*] ; $($rest)*);
    };
    (@split [$($u:ident)*] [$($b:ident)*] [$($r:ident)*] [$($a:ident)*] [$($s:ident)*] ; $v:ident Accumulate, $($rest:tt)*) => {
        kind_enums!(@split [$($u)*] [$($b)*] [$($r)*] [$($a)* $v] [$($s)*] ; $($rest)*);
    };
    (@split [$($u:ident)*] [$($b:ident)*] [$($r:ident)*] [$($a:ident)*] [$($s:ident)*] ; $v:ident System, $($rest:tt)*) => {
        kind_enums!(@split [$($u)*] [$($b)*] [$($r)*] [$($a)*] [$($s)* $v] ; $($rest)*);
    };
    (@split [$($u:ident)*] [$($b:ident)*] [$($r:ident)*] [$($a:ident)*] [$($s:ident)*] ; $v:ident $other:ident, $($rest:tt)*) => {
        kind_enums!(@split [$($u)*] [$($b)*] [$($r)*] [$($a)*] [$($s)*] ; $($rest)*);
    };
    (@enum $name:ident, $kind:ident, $doc:literal, $($v:ident)*) => {
        #[doc = $doc]
        #[allow(missing_docs)] // each variant is the opcode of the same name
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $v, )*
        }

        impl $name {
            /// Every opcode of the kind, in table order.
            pub const ALL: &'static [$name] = &[ $( $name::$v, )* ];
        }

        impl From<$name> for Opcode {
            #[inline]
            fn from(op: $name) -> Opcode {
                match op {
                    $( $name::$v => Opcode::$v, )*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&Opcode::from(*self), f)
            }
        }
    };
}

/// An opcode by kind, each kind with several opcodes carrying its own enum ([`Opcode::class`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// See [`Kind::Unary`].
    Unary(UnaryOp),
    /// See [`Kind::Binary`].
    Binary(BinaryOp),
    /// `select` ([`Kind::Select`]).
    Select,
    /// See [`Kind::Reduce`].
    Reduce(ReduceOp),
    /// See [`Kind::Accumulate`].
    Accumulate(AccumulateOp),
    /// `range` ([`Kind::Range`]).
    Range,
    /// `random` ([`Kind::Random`]).
    Random,
    /// `gather` ([`Kind::Gather`]).
    Gather,
    /// `scatter` ([`Kind::Scatter`]).
    Scatter,
    /// `scatter_add` ([`Kind::Scatter`]).
    ScatterAdd,
    /// `sort` ([`Kind::Sort`]).
    Sort,
    /// `argsort` ([`Kind::Sort`]).
    Argsort,
    /// `searchsorted_left` ([`Kind::Search`]).
    SearchLeft,
    /// `searchsorted_right` ([`Kind::Search`]).
    SearchRight,
    /// See [`Kind::System`].
    System(SystemOp),
    /// `none` ([`Kind::Nothing`]).
    Nothing,
    /// An extension method, by registration number.
    Extension(u32),
}

use DTypeSet as S;
use TypeRule::*;

opcode_table! {
    // ---- element-wise arithmetic ----
    /// out = a + b (integers wrap).
    Add = 1, "add", Binary, Same(S::NUMERIC);
    /// out = a - b (integers wrap).
    Subtract = 2, "subtract", Binary, Same(S::NUMERIC);
    /// out = a * b (integers wrap).
    Multiply = 3, "multiply", Binary, Same(S::NUMERIC);
    /// out = a / b, true division (floats only; frontends cast integers first).
    Divide = 4, "divide", Binary, Same(S::FLOAT);
    /// out = floor(a / b), NumPy's `divmod` quotient (float `x // 0` is `x / 0`); integer division by zero gives 0.
    FloorDivide = 5, "floor_divide", Binary, Same(S::NUMERIC);
    /// out = a mod b with the sign of b (NumPy `remainder`; float `x % 0` is NaN); integer `x % 0` gives 0.
    Remainder = 6, "remainder", Binary, Same(S::NUMERIC);
    /// out = a mod b with the sign of a (C `fmod`); integer `x % 0` gives 0.
    Fmod = 7, "fmod", Binary, Same(S::NUMERIC);
    /// out = a ** b; integers by repeated squaring with wrapping, negative integer exponents give 0 (1 for base 1, +-1 for base -1).
    Power = 8, "power", Binary, Same(S::NUMERIC);
    /// out = max(a, b); NaN if either is NaN; b of equal values (max(0.0, -0.0) is -0.0).
    Maximum = 9, "maximum", Binary, Same(S::NUMERIC);
    /// out = min(a, b); NaN if either is NaN; b of equal values (min(-0.0, 0.0) is 0.0).
    Minimum = 10, "minimum", Binary, Same(S::NUMERIC);
    /// out = max(a, b) ignoring NaN (NaN only if both are).
    Fmax = 11, "fmax", Binary, Same(S::FLOAT);
    /// out = min(a, b) ignoring NaN (NaN only if both are).
    Fmin = 12, "fmin", Binary, Same(S::FLOAT);
    /// out = atan2(a, b).
    Arctan2 = 13, "arctan2", Binary, Same(S::FLOAT);
    /// out = sqrt(a*a + b*b) without undue overflow.
    Hypot = 14, "hypot", Binary, Same(S::FLOAT);
    /// out = |a| with the sign of b.
    Copysign = 15, "copysign", Binary, Same(S::FLOAT);
    /// out = -a (unsigned integers wrap).
    Negative = 16, "negative", Unary, Same(S::NUMERIC);
    /// out = |a| (the minimum signed integer stays itself, as in NumPy).
    Absolute = 17, "absolute", Unary, Same(S::NUMERIC);
    /// out = -1, 0 or 1 by the sign of a (NaN for NaN).
    Sign = 18, "sign", Unary, Same(S::NUMERIC);
    /// out = a * a.
    Square = 19, "square", Unary, Same(S::NUMERIC);
    /// out = 1 / a.
    Reciprocal = 20, "reciprocal", Unary, Same(S::FLOAT);
    /// out = ln(e ** a + e ** b) without overflow (NumPy `logaddexp`).
    Logaddexp = 21, "logaddexp", Binary, Same(S::FLOAT);
    /// out = log2(2 ** a + 2 ** b) without overflow (NumPy `logaddexp2`).
    Logaddexp2 = 22, "logaddexp2", Binary, Same(S::FLOAT);
    // ---- math functions (floats) ----
    /// out = sqrt(a).
    Sqrt = 30, "sqrt", Unary, Same(S::FLOAT);
    /// out = cube root of a.
    Cbrt = 31, "cbrt", Unary, Same(S::FLOAT);
    /// out = e ** a.
    Exp = 32, "exp", Unary, Same(S::FLOAT);
    /// out = 2 ** a.
    Exp2 = 33, "exp2", Unary, Same(S::FLOAT);
    /// out = e ** a - 1, accurate near 0.
    Expm1 = 34, "expm1", Unary, Same(S::FLOAT);
    /// out = natural logarithm of a.
    Log = 35, "log", Unary, Same(S::FLOAT);
    /// out = base-2 logarithm of a.
    Log2 = 36, "log2", Unary, Same(S::FLOAT);
    /// out = base-10 logarithm of a.
    Log10 = 37, "log10", Unary, Same(S::FLOAT);
    /// out = ln(1 + a), accurate near 0.
    Log1p = 38, "log1p", Unary, Same(S::FLOAT);
    /// out = sin(a).
    Sin = 39, "sin", Unary, Same(S::FLOAT);
    /// out = cos(a).
    Cos = 40, "cos", Unary, Same(S::FLOAT);
    /// out = tan(a).
    Tan = 41, "tan", Unary, Same(S::FLOAT);
    /// out = arcsin(a).
    Arcsin = 42, "arcsin", Unary, Same(S::FLOAT);
    /// out = arccos(a).
    Arccos = 43, "arccos", Unary, Same(S::FLOAT);
    /// out = arctan(a).
    Arctan = 44, "arctan", Unary, Same(S::FLOAT);
    /// out = sinh(a).
    Sinh = 45, "sinh", Unary, Same(S::FLOAT);
    /// out = cosh(a).
    Cosh = 46, "cosh", Unary, Same(S::FLOAT);
    /// out = tanh(a).
    Tanh = 47, "tanh", Unary, Same(S::FLOAT);
    /// out = arcsinh(a).
    Arcsinh = 48, "arcsinh", Unary, Same(S::FLOAT);
    /// out = arccosh(a).
    Arccosh = 49, "arccosh", Unary, Same(S::FLOAT);
    /// out = arctanh(a).
    Arctanh = 50, "arctanh", Unary, Same(S::FLOAT);
    /// out = a in radians, given degrees.
    Deg2rad = 51, "deg2rad", Unary, Same(S::FLOAT);
    /// out = a in degrees, given radians.
    Rad2deg = 52, "rad2deg", Unary, Same(S::FLOAT);
    /// out = largest integer <= a.
    Floor = 53, "floor", Unary, Same(S::FLOAT);
    /// out = smallest integer >= a.
    Ceil = 54, "ceil", Unary, Same(S::FLOAT);
    /// out = a rounded toward zero.
    Trunc = 55, "trunc", Unary, Same(S::FLOAT);
    /// out = a rounded to the nearest integer, ties to even.
    Rint = 56, "rint", Unary, Same(S::FLOAT);
    /// out = true where a is NaN.
    Isnan = 57, "isnan", Unary, ToBool(S::FLOAT);
    /// out = true where a is +-infinity.
    Isinf = 58, "isinf", Unary, ToBool(S::FLOAT);
    /// out = true where a is neither NaN nor infinite.
    Isfinite = 59, "isfinite", Unary, ToBool(S::FLOAT);
    /// out = true where the sign bit of a is set (-0.0 included).
    Signbit = 60, "signbit", Unary, ToBool(S::FLOAT);
    // ---- comparison ----
    /// out = a == b.
    Equal = 70, "equal", Binary, ToBool(S::ALL);
    /// out = a != b.
    NotEqual = 71, "not_equal", Binary, ToBool(S::ALL);
    /// out = a < b.
    Less = 72, "less", Binary, ToBool(S::ALL);
    /// out = a <= b.
    LessEqual = 73, "less_equal", Binary, ToBool(S::ALL);
    /// out = a > b.
    Greater = 74, "greater", Binary, ToBool(S::ALL);
    /// out = a >= b.
    GreaterEqual = 75, "greater_equal", Binary, ToBool(S::ALL);
    // ---- logical (inputs are truth values: nonzero is true) ----
    /// out = a && b.
    LogicalAnd = 80, "logical_and", Binary, ToBool(S::ALL);
    /// out = a || b.
    LogicalOr = 81, "logical_or", Binary, ToBool(S::ALL);
    /// out = a != b as truth values.
    LogicalXor = 82, "logical_xor", Binary, ToBool(S::ALL);
    /// out = !a.
    LogicalNot = 83, "logical_not", Unary, ToBool(S::ALL);
    // ---- bitwise ----
    /// out = a & b.
    BitwiseAnd = 90, "bitwise_and", Binary, Same(S::INTEGER_BOOL);
    /// out = a | b.
    BitwiseOr = 91, "bitwise_or", Binary, Same(S::INTEGER_BOOL);
    /// out = a ^ b.
    BitwiseXor = 92, "bitwise_xor", Binary, Same(S::INTEGER_BOOL);
    /// out = !a (bitwise not; logical not for bool).
    Invert = 93, "invert", Unary, Same(S::INTEGER_BOOL);
    /// out = a << b; shifts of the width or more, or negative, give 0.
    LeftShift = 94, "left_shift", Binary, Same(S::INTEGER);
    /// out = a >> b (arithmetic for signed); shifts of the width or more, or negative, give 0 (-1 for negative a).
    RightShift = 95, "right_shift", Binary, Same(S::INTEGER);
    // ---- copy, cast, select ----
    /// out = a converted to out's dtype (a copy when the dtypes agree); see `scalar::Cast`.
    Identity = 100, "identity", Unary, Cast;
    /// out = cond ? a : b.
    Select = 101, "select", Select, Select;
    // ---- reductions along one axis ----
    /// Sum along an axis (integers wrap); the sum of nothing is 0.
    AddReduce = 110, "add_reduce", Reduce, Same(S::NUMERIC);
    /// Product along an axis; the product of nothing is 1.
    MultiplyReduce = 111, "multiply_reduce", Reduce, Same(S::NUMERIC);
    /// Minimum along an axis (NaN if any is NaN); of nothing: the dtype's largest value (+inf).
    MinimumReduce = 112, "minimum_reduce", Reduce, Same(S::NUMERIC);
    /// Maximum along an axis (NaN if any is NaN); of nothing: the dtype's smallest value (-inf).
    MaximumReduce = 113, "maximum_reduce", Reduce, Same(S::NUMERIC);
    /// All along an axis (true for nothing).
    LogicalAndReduce = 114, "logical_and_reduce", Reduce, ToBool(S::ALL);
    /// Any along an axis (false for nothing).
    LogicalOrReduce = 115, "logical_or_reduce", Reduce, ToBool(S::ALL);
    /// Parity of the number of true values along an axis.
    LogicalXorReduce = 116, "logical_xor_reduce", Reduce, ToBool(S::ALL);
    /// Bitwise and along an axis (all ones for nothing).
    BitwiseAndReduce = 117, "bitwise_and_reduce", Reduce, Same(S::INTEGER_BOOL);
    /// Bitwise or along an axis (0 for nothing).
    BitwiseOrReduce = 118, "bitwise_or_reduce", Reduce, Same(S::INTEGER_BOOL);
    /// Bitwise xor along an axis (0 for nothing).
    BitwiseXorReduce = 119, "bitwise_xor_reduce", Reduce, Same(S::INTEGER_BOOL);
    /// Position (i64) along an axis of the first minimum, or of the first NaN (NumPy's `argmin`; -0.0 equals 0.0); an empty axis is invalid.
    ArgminReduce = 120, "argmin_reduce", Reduce, ToPosition(S::ALL);
    /// Position (i64) along an axis of the first maximum, or of the first NaN (NumPy's `argmax`; -0.0 equals 0.0); an empty axis is invalid.
    ArgmaxReduce = 121, "argmax_reduce", Reduce, ToPosition(S::ALL);
    // ---- scans ----
    /// Running sum along an axis.
    AddAccumulate = 130, "add_accumulate", Accumulate, Same(S::NUMERIC);
    /// Running product along an axis.
    MultiplyAccumulate = 131, "multiply_accumulate", Accumulate, Same(S::NUMERIC);
    // ---- generators and indexing ----
    /// `out[i] = i` (row-major position), cast to out's dtype.
    Range = 140, "range", Range, Generate(S::ALL);
    /// Counter-based random numbers (Philox-4x32-10).
    Random = 141, "random", Random, Generate(S::ALL);
    /// `out[i] = src.flat[index[i]]`.
    Gather = 142, "gather", Gather, Indexed;
    /// `dst.flat[index[i]] = src[i]` (of repeated positions, the last index element's value wins).
    Scatter = 143, "scatter", Scatter, Indexed;
    /// `dst.flat[index[i]] += src[i]`, in index order: repeated positions accumulate (NumPy's `add.at`; integers wrap, bools or).
    ScatterAdd = 144, "scatter_add", Scatter, Indexed;
    // ---- sorting ----
    /// Each line along an axis in ascending order: -0.0 before 0.0, NaNs last in their order (NumPy's `sort`).
    Sort = 150, "sort", Sort, Same(S::ALL);
    /// Positions (i64) that sort each line along an axis: NaNs last, equal values in their order (NumPy's `argsort(kind="stable")`).
    Argsort = 151, "argsort", Sort, ToPosition(S::ALL);
    // ---- searching ----
    /// Positions (i64) in a sorted 1-d view before the values equal to each key (NumPy's `searchsorted(side="left")`).
    SearchsortedLeft = 152, "searchsorted_left", Search, ToPosition(S::ALL);
    /// Positions (i64) in a sorted 1-d view after the values equal to each key (NumPy's `searchsorted(side="right")`).
    SearchsortedRight = 153, "searchsorted_right", Search, ToPosition(S::ALL);
    // ---- system ----
    /// Make the host copy of the view's base current.
    Sync = 200, "sync", System, Any;
    /// Drop engine-side copies of the view's base (the host copy is authoritative).
    Discard = 201, "discard", System, Any;
    /// End the view's base: its memory is released everywhere.
    Free = 202, "free", System, Any;
    /// Do nothing.
    None = 203, "none", Nothing, Any;
}

impl Kind {
    /// Number of data operands (views or constants) including the output, and of trailing
    /// parameter constants; `None` for extensions (variable).
    pub fn arity(self) -> Option<(usize, &'static [DType])> {
        Some(match self {
            Kind::Unary => (2, &[]),
            Kind::Binary => (3, &[]),
            Kind::Select => (4, &[]),
            Kind::Reduce | Kind::Accumulate | Kind::Sort => (2, &[DType::I64]),
            Kind::Range => (1, &[]),
            Kind::Random => (1, &[DType::U64, DType::U64]),
            Kind::Gather | Kind::Scatter | Kind::Search => (3, &[]),
            Kind::System => (1, &[]),
            Kind::Nothing => (0, &[]),
            Kind::Extension => return None,
        })
    }

    /// True for opcodes that write operand 0.
    #[inline]
    pub fn writes_output(self) -> bool {
        !matches!(self, Kind::System | Kind::Nothing)
    }

    /// True for the element-wise kinds (same iteration space for all operands).
    #[inline]
    pub fn is_elementwise(self) -> bool {
        matches!(self, Kind::Unary | Kind::Binary | Kind::Select)
    }
}

impl Opcode {
    /// True for system opcodes and `none`.
    #[inline]
    pub fn is_system(self) -> bool {
        matches!(self.kind(), Kind::System | Kind::Nothing)
    }

    /// True for the reductions to a position, `argmin_reduce` and `argmax_reduce`: they have no
    /// combining opcode (their partial results are (value, position) pairs) and refuse an
    /// empty axis.
    #[inline]
    pub fn is_arg_reduce(self) -> bool {
        matches!(self, Opcode::ArgminReduce | Opcode::ArgmaxReduce)
    }

    /// The element-wise opcode a reduction or scan combines with (`add` for `add_reduce`, ...);
    /// `None` for the reductions to a position ([`Opcode::is_arg_reduce`]).
    pub fn combiner(self) -> Option<Opcode> {
        match self.class() {
            OpClass::Reduce(r) => r.combiner().map(Opcode::from),
            OpClass::Accumulate(a) => Some(a.combiner().into()),
            _ => None,
        }
    }
}

impl ReduceOp {
    /// The binary opcode that combines two partial results; `None` for the reductions to a
    /// position (`argmin_reduce`, `argmax_reduce`), which keep a position beside the value.
    pub fn combiner(self) -> Option<BinaryOp> {
        use ReduceOp as R;
        Some(match self {
            R::AddReduce => BinaryOp::Add,
            R::MultiplyReduce => BinaryOp::Multiply,
            R::MinimumReduce => BinaryOp::Minimum,
            R::MaximumReduce => BinaryOp::Maximum,
            R::LogicalAndReduce => BinaryOp::LogicalAnd,
            R::LogicalOrReduce => BinaryOp::LogicalOr,
            R::LogicalXorReduce => BinaryOp::LogicalXor,
            R::BitwiseAndReduce => BinaryOp::BitwiseAnd,
            R::BitwiseOrReduce => BinaryOp::BitwiseOr,
            R::BitwiseXorReduce => BinaryOp::BitwiseXor,
            R::ArgminReduce | R::ArgmaxReduce => return None,
        })
    }
}

impl BinaryOp {
    /// The reduction that combines its elements with this operation (`add_reduce` for `add`),
    /// when the bytecode has one.
    pub fn reduction(self) -> Option<ReduceOp> {
        ReduceOp::ALL.iter().copied().find(|r| r.combiner() == Some(self))
    }
}

impl AccumulateOp {
    /// The binary opcode the scan applies between the running value and the next element.
    pub fn combiner(self) -> BinaryOp {
        match self {
            AccumulateOp::AddAccumulate => BinaryOp::Add,
            AccumulateOp::MultiplyAccumulate => BinaryOp::Multiply,
        }
    }
}

/// The element-wise operation with which `scatter_add` combines each value with the element it
/// lands on: `add` (integers wrap), on bools `bitwise_or` (NumPy's bool `add`).
pub fn scatter_add_op(dtype: DType) -> BinaryOp {
    if dtype == DType::Bool { BinaryOp::BitwiseOr } else { BinaryOp::Add }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Opcode::Extension(n) => write!(f, "extension#{n}"),
            op => f.write_str(op.name()),
        }
    }
}

impl DTypeSet {
    /// The set of one class.
    pub fn of_class(c: DTypeClass) -> DTypeSet {
        DTypeSet(DType::ALL.iter().filter(|d| d.class() == c).fold(0, |m, d| m | 1 << d.id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_opcode_has_the_class_of_its_kind_and_converts_back() {
        for &op in Opcode::ALL {
            let (kind, back) = match op.class() {
                OpClass::Unary(u) => (Kind::Unary, Opcode::from(u)),
                OpClass::Binary(b) => (Kind::Binary, b.into()),
                OpClass::Select => (Kind::Select, Opcode::Select),
                OpClass::Reduce(r) => (Kind::Reduce, r.into()),
                OpClass::Accumulate(a) => (Kind::Accumulate, a.into()),
                OpClass::Range => (Kind::Range, Opcode::Range),
                OpClass::Random => (Kind::Random, Opcode::Random),
                OpClass::Gather => (Kind::Gather, Opcode::Gather),
                OpClass::Scatter => (Kind::Scatter, Opcode::Scatter),
                OpClass::ScatterAdd => (Kind::Scatter, Opcode::ScatterAdd),
                OpClass::Sort => (Kind::Sort, Opcode::Sort),
                OpClass::Argsort => (Kind::Sort, Opcode::Argsort),
                OpClass::SearchLeft => (Kind::Search, Opcode::SearchsortedLeft),
                OpClass::SearchRight => (Kind::Search, Opcode::SearchsortedRight),
                OpClass::System(s) => (Kind::System, s.into()),
                OpClass::Nothing => (Kind::Nothing, Opcode::None),
                OpClass::Extension(n) => (Kind::Extension, Opcode::Extension(n)),
            };
            assert_eq!((kind, back), (op.kind(), op), "{op}");
        }
        let by_kind = |k: Kind| Opcode::ALL.iter().filter(|op| op.kind() == k).count();
        assert_eq!(UnaryOp::ALL.len(), by_kind(Kind::Unary));
        assert_eq!(BinaryOp::ALL.len(), by_kind(Kind::Binary));
        assert_eq!(ReduceOp::ALL.len(), by_kind(Kind::Reduce));
        assert_eq!(AccumulateOp::ALL.len(), by_kind(Kind::Accumulate));
        assert_eq!(SystemOp::ALL.len(), by_kind(Kind::System));
        assert_eq!(Opcode::Extension(3).class(), OpClass::Extension(3));
        assert_eq!(BinaryOp::Add.to_string(), "add");
    }

    #[test]
    fn ids_and_names_are_unique_and_round_trip() {
        let mut ids = HashSet::new();
        let mut names = HashSet::new();
        for &op in Opcode::ALL {
            assert!(ids.insert(op.id()), "duplicate id {}", op.id());
            assert!(names.insert(op.name()), "duplicate name {}", op.name());
            assert!(op.id() < EXTENSION_BASE);
            assert_eq!(Opcode::from_id(op.id()).unwrap(), op);
            assert_eq!(Opcode::from_name(op.name()), Some(op));
            assert!(!op.summary().is_empty());
        }
        assert_eq!(Opcode::from_id(EXTENSION_BASE + 3).unwrap(), Opcode::Extension(3));
        assert!(Opcode::from_id(999).is_err());
    }

    #[test]
    fn a_binary_operation_and_its_reduction_name_each_other() {
        assert_eq!(BinaryOp::Add.reduction(), Some(ReduceOp::AddReduce));
        assert_eq!(BinaryOp::BitwiseOr.reduction(), Some(ReduceOp::BitwiseOrReduce));
        assert_eq!(BinaryOp::Subtract.reduction(), None);
        for r in ReduceOp::ALL.iter().filter(|r| !Opcode::from(**r).is_arg_reduce()) {
            assert_eq!(r.combiner().and_then(BinaryOp::reduction), Some(*r), "{r:?}");
        }
        for dtype in [DType::Bool, DType::I8, DType::F64] {
            assert!(scatter_add_op(dtype).reduction().is_some(), "{dtype}");
        }
    }

    #[test]
    fn dtype_sets_match_classes() {
        use DTypeClass::*;
        assert_eq!(DTypeSet::FLOAT, DTypeSet::of_class(Float));
        assert_eq!(DTypeSet::INTEGER.0, DTypeSet::of_class(Signed).0 | DTypeSet::of_class(Unsigned).0);
        assert_eq!(DTypeSet::NUMERIC.0, DTypeSet::ALL.0 & !DTypeSet::of_class(Bool).0);
    }
}
