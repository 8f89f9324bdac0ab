//! OpenCL C for the engine's device work: fused element-wise kernels of
//! [`vm_fusion::partition`], reductions to a value or to a position (one work item per
//! output element for short axes, parallel tree reductions in work-group local memory for long
//! ones), scans, gather and scatter.
//!
//! Element-wise kernels run one work item per position of the kernel's iteration space (the
//! innermost dimension along the first dimension of the NDRange, the other dimensions folded into
//! the second): each splits its ids into a row-major index, computes every instruction of the
//! kernel in order, keeps contracted temporaries in private variables and stores every other
//! output once. Unless the engine pads launches to a configured work-group size
//! ([`Target::padded`]), kernels have no bounds check, so the compiler can vectorize them across
//! work items.
//!
//! The source text is structural: it depends only on the opcodes, the dtypes, the number of
//! dimensions, which operands are views, constants or contracted temporaries, which operands
//! share a base (by argument position), which strides are 0, 1 or something else, and the choices
//! a reduction makes (serial or tree, one stage or two, the configured work-group size). Base ids,
//! view starts and strides, extents, element counts, reduction lengths and constants (passed
//! bit-exactly) are read at run time from a parameter buffer (`prm`, a `__constant ulong*` bound
//! after the bases and scratch buffers, filled from [`Source::params`]); temporaries are
//! named by their order in the kernel. So an iterative program that makes new temporaries and
//! moves its views every iteration reuses the programs built in the first one: the source text
//! is the program cache key.
//!
//! Element semantics follow [`vm_ir::semantics`] exactly for integers (NumPy's division family
//! with 0 for a zero divisor, wrapping powers, saturated shifts) and for the exactly rounded float
//! operations (arithmetic, `sqrt`, `fmod`, NumPy's float `floor_divide`/`remainder`, rounding,
//! min/max, `copysign`); transcendental functions use the OpenCL C built-ins, which the OpenCL
//! specification bounds to a few ulp (16 for `pow`), except where a built-in misses an exact
//! answer at special values (`log1p` of subnormals, f32 `tanh` of large values and infinities).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use vm_fusion::Kernel;
use vm_ir::semantics::Float;
use vm_ir::{Base, BaseId, BinaryOp, DType, Instruction, OpClass, Opcode, Operand, Scalar, TypeRule, UnaryOp, View};

/// One entry point of a program, run over `items` x `rows` work items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The kernel function's name.
    pub name: &'static str,
    /// Work items needed along the first dimension of the NDRange (a multiple of `group` when
    /// that is set); the code ignores work items past the ones it needs.
    pub items: usize,
    /// Work items along the second dimension of the NDRange (1: a one-dimensional launch).
    pub rows: usize,
    /// The work-group size the code requires (tree reductions), or `None` for the configured
    /// size (or the driver's choice).
    pub group: Option<usize>,
}

/// A device buffer the engine allocates for one run of a [`Source`] (partial results, flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scratch {
    /// Size in bytes.
    pub bytes: usize,
    /// The byte every position is filled with before the first launch, or `None` when the code
    /// writes every byte before reading it.
    pub fill: Option<u8>,
}

/// The generated source of one piece of device work and what its arguments bind.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// OpenCL C text.
    pub text: String,
    /// The bases bound to arguments `b0..`, each a `__global` pointer of its dtype.
    pub args: Vec<Base>,
    /// Scratch buffers bound to the arguments `s0..` after the bases.
    pub scratch: Vec<Scratch>,
    /// The parameter buffer's contents, bound as the last argument `prm` (a `__constant ulong*`
    /// when there are at most [`Target::constant_params`], else a `__global const ulong*`; bind a
    /// buffer of at least one element even when this is empty): the starts, strides, extents,
    /// counts and constants the structural text reads at run time.
    pub params: Vec<u64>,
    /// The entry points, run in order on the same arguments.
    pub launches: Vec<Launch>,
    /// When set, the first launch is a check: a nonzero first `uint` of scratch 0 afterwards means
    /// the instruction cannot run on the device as it stands (an index out of range) and goes to
    /// the fallback, which reports the error exactly as the reference engine does.
    pub check_first: bool,
    /// Bases written (to mark device-newer afterwards).
    pub written: Vec<BaseId>,
    /// The opcodes, for error messages.
    pub opcodes: Vec<Opcode>,
}

impl Source {
    /// A program of one launch of [`KERNEL_NAME`] over `items` work items, without scratch or
    /// check, writing base `written`.
    fn one_launch(
        text: String,
        args: Vec<Base>,
        params: Vec<u64>,
        items: usize,
        written: BaseId,
        opcodes: Vec<Opcode>,
    ) -> Source {
        Source {
            text,
            args,
            scratch: Vec::new(),
            params,
            launches: vec![launch(KERNEL_NAME, items, None)],
            check_first: false,
            written: vec![written],
            opcodes,
        }
    }

    /// A short name for error messages: the opcodes and the first entry point.
    pub fn describe(&self) -> String {
        let ops: Vec<&str> = self.opcodes.iter().map(|o| o.name()).collect();
        format!("`{}` [{}]", self.launches.first().map_or("-", |l| l.name), ops.join(" "))
    }
}

/// The name of the main entry point of a generated program.
pub const KERNEL_NAME: &str = "vm_kernel";

/// `text` (a generated source, or one of its entry points' names) with every identifier of
/// program scope in namespace `j`, so that the sources of several pieces of work can be built as
/// one program: every function, kernel and macro the generated code defines is named `vm_...`
/// or `VM_PARAMS`, and those become `vm{j}_...` and `VM{j}_PARAMS`.
pub fn namespaced(text: &str, j: usize) -> String {
    text.replace("vm_", &format!("vm{j}_")).replace("VM_PARAMS", &format!("VM{j}_PARAMS"))
}

/// How the engine wants reductions laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReducePlan {
    /// Work-group size of tree reductions (a power of two).
    pub group: usize,
    /// Work groups that keep the device busy (a few per compute unit).
    pub target_groups: usize,
}

/// What the generated code may assume about the device and about how the engine launches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The device computes in f64 (`cl_khr_fp64`); without it, work using f64 gets no source.
    pub fp64: bool,
    /// Launches without a required work-group size ([`Launch::group`] `None`) are padded to a
    /// multiple of a configured work-group size, so the code skips work items past the end. When
    /// false they run exactly the work items needed and the code has no such check, which lets
    /// the compiler vectorize across work items.
    pub padded: bool,
    /// The most parameters read from `__constant` memory (the device's constant buffer holds at
    /// least this many `ulong`s); a program with more reads them from `__global` memory.
    pub constant_params: usize,
}

/// Axes up to this long are reduced by one work item per output element (in order, exactly as
/// the reference engine does); longer ones by a parallel tree.
pub const SERIAL_REDUCE_MAX: usize = 64;

/// The OpenCL C type that stores `d` (`bool` is one byte, 0 or 1).
pub fn ctype(d: DType) -> &'static str {
    match d {
        DType::Bool | DType::U8 => "uchar",
        DType::I8 => "char",
        DType::I16 => "short",
        DType::I32 => "int",
        DType::I64 => "long",
        DType::U16 => "ushort",
        DType::U32 => "uint",
        DType::U64 => "ulong",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

/// The unsigned type integer arithmetic wraps in (never narrower than `uint`, so C's promotion
/// to `int` cannot overflow).
fn wide_unsigned(d: DType) -> &'static str {
    if d.size() == 8 { "ulong" } else { "uint" }
}

/// The unsigned type of `d`'s width.
fn unsigned(d: DType) -> &'static str {
    match d.size() {
        1 => "uchar",
        2 => "ushort",
        4 => "uint",
        _ => "ulong",
    }
}

fn is_signed(d: DType) -> bool {
    matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::I64)
}

/// The bits of `s` in a `ulong`: a float's own bits (`f32` in the low half), `bool` as 0/1,
/// integers as their payload (signed ones sign-extended).
fn bits(s: Scalar) -> u64 {
    match s {
        Scalar::F32(x) => u64::from(x.to_bits()),
        Scalar::F64(x) => x.to_bits(),
        s => s.to_payload(),
    }
}

/// The value of dtype `d` whose [`bits`] are the `ulong` expression `b`, exactly.
fn from_bits(d: DType, b: &str) -> String {
    match d {
        DType::F32 => format!("as_float((uint){b})"),
        DType::F64 => format!("as_double({b})"),
        d => format!("(({}){b})", ctype(d)),
    }
}

/// A fixed constant of the code (never an operand's value, which is a parameter) as an exact
/// OpenCL C expression of its dtype.
fn literal(s: Scalar) -> String {
    from_bits(s.dtype(), &format!("0x{:x}UL", bits(s)))
}

/// Helper functions a kernel needs, by name (each emitted once, in name order).
#[derive(Debug, Default)]
struct Helpers(BTreeMap<String, String>);

impl Helpers {
    /// Registers helper `name` (made by `text` when first needed) and returns `name(args)`.
    fn call(&mut self, name: String, text: impl FnOnce() -> String, args: &[&str]) -> String {
        let call = format!("{name}({})", args.join(", "));
        self.0.entry(name).or_insert_with(text);
        call
    }

    fn emit(&self, text: &mut String) {
        for t in self.0.values() {
            text.push_str(t);
        }
    }
}

/// The NumPy integer division family, powers and shifts on `d` (see [`vm_ir::semantics`]).
fn int_helper(op: BinaryOp, d: DType) -> String {
    let (t, u, w) = (ctype(d), unsigned(d), wide_unsigned(d));
    let bits = d.size() * 8;
    let name = format!("vm_{op}_{t}");
    let signed = is_signed(d);
    let body = match op {
        BinaryOp::FloorDivide if signed => format!(
            "if (b == 0) return 0;\n    if (b == -1) return ({t})({u})(({w})0 - ({w})({u})a);\n    \
             {t} q = ({t})(a / b), r = ({t})(a % b);\n    \
             return (r != 0 && ((a < 0) != (b < 0))) ? ({t})({u})(({w})({u})q - ({w})1) : q;"
        ),
        BinaryOp::Remainder if signed => format!(
            "if (b == 0 || b == -1) return 0;\n    {t} r = ({t})(a % b);\n    \
             return (r != 0 && ((r < 0) != (b < 0))) ? ({t})({u})(({w})({u})r + ({w})({u})b) : r;"
        ),
        BinaryOp::Fmod if signed => format!("return (b == 0 || b == -1) ? ({t})0 : ({t})(a % b);"),
        BinaryOp::FloorDivide => format!("return b == 0 ? ({t})0 : ({t})(a / b);"),
        BinaryOp::Remainder | BinaryOp::Fmod => format!("return b == 0 ? ({t})0 : ({t})(a % b);"),
        BinaryOp::Power => {
            let neg = if signed {
                format!("if (b < 0) return a == 1 ? ({t})1 : (a == -1 ? ((b & 1) ? ({t})-1 : ({t})1) : ({t})0);\n    ")
            } else {
                String::new()
            };
            format!(
                "{neg}{u} n = ({u})b;\n    {w} s = ({w})({u})a, r = 1;\n    \
                 while (n != 0) {{ if (n & 1) r = r * s; s = s * s; n >>= 1; }}\n    return ({t})({u})r;"
            )
        }
        BinaryOp::LeftShift => {
            let neg = if signed { "b < 0 || " } else { "" };
            format!("if ({neg}b >= {bits}) return 0;\n    return ({t})({u})(({w})({u})a << (uint)b);")
        }
        BinaryOp::RightShift if signed => format!(
            "if (b < 0 || b >= {bits}) return a < 0 ? ({t})-1 : ({t})0;\n    \
             return a < 0 ? ({t})~(~a >> (uint)b) : ({t})(a >> (uint)b);"
        ),
        BinaryOp::RightShift => format!("if (b >= {bits}) return 0;\n    return ({t})(a >> (uint)b);"),
        _ => unreachable!("no integer helper for {op}"),
    };
    format!("{t} {name}({t} a, {t} b) {{\n    {body}\n}}\n")
}

/// C's `fmod(a, b)` as the host's C library computes it: where it is NaN (`b` zero or NaN, `a`
/// infinite or NaN), glibc's `(a * b) / (a * b)`, so that the NaN is the one the processor's
/// arithmetic makes (its sign and payload), as on the host; OpenCL's built-in returns a
/// canonical NaN instead.
fn host_fmod(d: DType, a: &str, b: &str) -> String {
    let t = ctype(d);
    format!("(({b}) == ({t})0 || isnan({b}) || !isfinite({a}) ? (({a}) * ({b})) / (({a}) * ({b})) : fmod({a}, {b}))")
}

/// NumPy's float `floor_divide` and `remainder` (`npy_divmod`), as in [`vm_ir::semantics`].
fn float_helper(op: BinaryOp, d: DType) -> String {
    let t = ctype(d);
    let half = if d == DType::F32 { "0.5f" } else { "0.5" };
    let name = format!("vm_{op}_{t}");
    let fmod = host_fmod(d, "a", "b");
    let body = match op {
        BinaryOp::FloorDivide => format!(
            "if (b == ({t})0) return a / b;\n    {t} m = {fmod};\n    {t} div = (a - m) / b;\n    \
             if (m != ({t})0 && ((b < ({t})0) != (m < ({t})0))) div = div - ({t})1;\n    \
             if (div != ({t})0) {{ {t} q = floor(div); if (div - q > {half}) q = q + ({t})1; return q; }}\n    \
             return copysign(({t})0, a / b);"
        ),
        BinaryOp::Remainder => format!(
            "{t} m = {fmod};\n    if (b == ({t})0) return m;\n    \
             if (m != ({t})0) {{ if ((b < ({t})0) != (m < ({t})0)) m = m + b; }} else m = copysign(({t})0, b);\n    \
             return m;"
        ),
        // NumPy's npy_logaddexp and npy_logaddexp2.
        BinaryOp::Logaddexp | BinaryOp::Logaddexp2 => {
            // `log(base^a + base^b)`: `a + log(2)` for equal arguments, else the larger plus
            // `log1p(base^-|a-b|)` in the base's logarithm (`scale` times the natural one).
            let (power, equal_step, scale) = match (op, d) {
                (BinaryOp::Logaddexp, DType::F32) => ("exp", "M_LN2_F", "1.0f"),
                (BinaryOp::Logaddexp, _) => ("exp", "M_LN2", "1.0"),
                (_, DType::F32) => ("exp2", "1.0f", "M_LOG2E_F"),
                _ => ("exp2", "1.0", "M_LOG2E"),
            };
            format!(
                "if (a == b) return a + {equal_step};\n    {t} d = a - b;\n    \
                 if (d > ({t})0) return a + {scale} * log1p({power}(-d));\n    \
                 if (d <= ({t})0) return b + {scale} * log1p({power}(d));\n    \
                 return d;"
            )
        }
        _ => unreachable!("no float helper for {op}"),
    };
    format!("{t} {name}({t} a, {t} b) {{\n    {body}\n}}\n")
}

/// The expression of a binary opcode on two operands of dtype `d` (cheap expressions without
/// side effects: loads, registers, literals), or `None` when the device code does not implement
/// it (the instruction then goes to the fallback).
fn binary(op: BinaryOp, d: DType, a: &str, b: &str, h: &mut Helpers) -> Option<String> {
    let t = ctype(d);
    let int = d.is_integer();
    let float = d.is_float();
    let wrap = |o: &str| {
        let (w, u) = (wide_unsigned(d), unsigned(d));
        format!("(({t})(({w})({u})({a}) {o} ({w})({u})({b})))")
    };
    use BinaryOp as O;
    Some(match op {
        O::Add if int => wrap("+"),
        O::Subtract if int => wrap("-"),
        O::Multiply if int => wrap("*"),
        O::Add | O::Subtract | O::Multiply | O::Divide if float => {
            let o = match op {
                O::Add => "+",
                O::Subtract => "-",
                O::Multiply => "*",
                _ => "/",
            };
            format!("(({a}) {o} ({b}))")
        }
        O::FloorDivide | O::Remainder | O::Fmod | O::Power | O::LeftShift | O::RightShift if int => {
            h.call(format!("vm_{op}_{t}"), || int_helper(op, d), &[a, b])
        }
        O::FloorDivide | O::Remainder | O::Logaddexp | O::Logaddexp2 if float => {
            h.call(format!("vm_{op}_{t}"), || float_helper(op, d), &[a, b])
        }
        O::Fmod if float => host_fmod(d, a, b),
        // `pow(x, 1)` is x, as NumPy's is; the device's pow may be an ulp off (NVIDIA's is).
        O::Power if float => format!("(({b}) == 1 ? ({a}) : pow({a}, {b}))"),
        O::Arctan2 if float => format!("atan2({a}, {b})"),
        O::Hypot if float => format!("hypot({a}, {b})"),
        O::Copysign if float => format!("copysign({a}, {b})"),
        O::Maximum if int => format!("(({a}) > ({b}) ? ({a}) : ({b}))"),
        O::Minimum if int => format!("(({a}) < ({b}) ? ({a}) : ({b}))"),
        O::Maximum if float => format!("((({a}) > ({b}) || isnan({a})) ? ({a}) : ({b}))"),
        O::Minimum if float => format!("((({a}) < ({b}) || isnan({a})) ? ({a}) : ({b}))"),
        O::Fmax if float => format!("((({a}) >= ({b}) || isnan({b})) ? ({a}) : ({b}))"),
        O::Fmin if float => format!("((({a}) <= ({b}) || isnan({b})) ? ({a}) : ({b}))"),
        O::Equal => format!("((uchar)(({a}) == ({b})))"),
        O::NotEqual => format!("((uchar)(({a}) != ({b})))"),
        O::Less => format!("((uchar)(({a}) < ({b})))"),
        O::LessEqual => format!("((uchar)(({a}) <= ({b})))"),
        O::Greater => format!("((uchar)(({a}) > ({b})))"),
        O::GreaterEqual => format!("((uchar)(({a}) >= ({b})))"),
        O::LogicalAnd => format!("((uchar)((({a}) != 0) && (({b}) != 0)))"),
        O::LogicalOr => format!("((uchar)((({a}) != 0) || (({b}) != 0)))"),
        O::LogicalXor => format!("((uchar)((({a}) != 0) != (({b}) != 0)))"),
        O::BitwiseAnd if !float => format!("(({t})(({a}) & ({b})))"),
        O::BitwiseOr if !float => format!("(({t})(({a}) | ({b})))"),
        O::BitwiseXor if !float => format!("(({t})(({a}) ^ ({b})))"),
        // What the opcode table does not allow for the dtype (`divide` on integers, ...).
        O::Add | O::Subtract | O::Multiply | O::Divide | O::FloorDivide | O::Remainder | O::Fmod | O::Power => {
            return None;
        }
        O::Maximum | O::Minimum | O::Fmax | O::Fmin | O::Arctan2 | O::Hypot | O::Copysign => return None,
        O::Logaddexp | O::Logaddexp2 => return None,
        O::BitwiseAnd | O::BitwiseOr | O::BitwiseXor | O::LeftShift | O::RightShift => return None,
    })
}

/// The expression of a unary opcode from dtype `d` to dtype `to` (they differ for `identity`
/// casts and the predicates), or `None` when not implemented on the device.
fn unary(op: UnaryOp, d: DType, to: DType, a: &str, h: &mut Helpers) -> Option<String> {
    let t = ctype(d);
    let float = d.is_float();
    let int = d.is_integer();
    let (w, u) = (wide_unsigned(d), unsigned(d));
    let f = |name: &str| format!("{name}({a})");
    use UnaryOp as O;
    Some(match op {
        O::Identity => cast(d, to, a),
        O::Negative if int => format!("(({t})(({w})0 - ({w})({u})({a})))"),
        O::Negative if float => format!("(-({a}))"),
        O::Square if int => binary(BinaryOp::Multiply, d, a, a, h)?,
        O::Square if float => format!("(({a}) * ({a}))"),
        O::Absolute if int && is_signed(d) => format!("(({a}) < 0 ? ({t})(({w})0 - ({w})({u})({a})) : ({a}))"),
        O::Absolute if int => format!("({a})"),
        O::Absolute if float => f("fabs"),
        O::Sign if int && is_signed(d) => format!("(({a}) < 0 ? ({t})-1 : (({a}) == 0 ? ({t})0 : ({t})1))"),
        O::Sign if int => format!("(({a}) == 0 ? ({t})0 : ({t})1)"),
        O::Sign if float => {
            format!("(({a}) > ({t})0 ? ({t})1 : (({a}) < ({t})0 ? ({t})-1 : (({a}) == ({t})0 ? ({t})0 : ({a}))))")
        }
        O::Reciprocal if float => format!("(({t})1 / ({a}))"),
        O::Deg2rad if d == DType::F32 => format!("(({a}) * {})", literal(Scalar::F32(f32::RADIANS_PER_DEGREE))),
        O::Deg2rad if float => format!("(({a}) * {})", literal(Scalar::F64(f64::RADIANS_PER_DEGREE))),
        O::Rad2deg if d == DType::F32 => format!("(({a}) * {})", literal(Scalar::F32(f32::DEGREES_PER_RADIAN))),
        O::Rad2deg if float => format!("(({a}) * {})", literal(Scalar::F64(f64::DEGREES_PER_RADIAN))),
        // Below 2^-24 (f32) or 2^-53 (f64), log1p(a) rounds to `a` itself; the built-in of some
        // devices (PoCL) flushes subnormals there, to 0 or to the smallest normal.
        O::Log1p if d == DType::F32 => format!("(fabs({a}) < 0x1p-24f ? ({a}) : log1p({a}))"),
        O::Log1p if float => format!("(fabs({a}) < 0x1p-53 ? ({a}) : log1p({a}))"),
        // Beyond 9.1, the f32 tanh(a) rounds to +-1; PoCL's f32 built-in gives the float just
        // below 1 there, even at infinity.
        O::Tanh if d == DType::F32 => format!("(fabs({a}) > 9.1f ? copysign(1.0f, {a}) : tanh({a}))"),
        O::Isnan if float => format!("((uchar)(isnan({a}) ? 1 : 0))"),
        O::Isinf if float => format!("((uchar)(isinf({a}) ? 1 : 0))"),
        O::Isfinite if float => format!("((uchar)(isfinite({a}) ? 1 : 0))"),
        O::Signbit if float => format!("((uchar)(signbit({a}) ? 1 : 0))"),
        O::LogicalNot => format!("((uchar)(({a}) == 0))"),
        O::Invert if d == DType::Bool => format!("((uchar)(({a}) == 0))"),
        O::Invert if int => format!("(({t})(~({a})))"),
        op if float => f(float_function(op)?),
        // What the opcode table does not allow for the dtype (`sqrt` on integers, ...).
        O::Negative | O::Absolute | O::Sign | O::Square | O::Reciprocal | O::Deg2rad | O::Rad2deg => return None,
        O::Sqrt | O::Cbrt | O::Exp | O::Exp2 | O::Expm1 | O::Log | O::Log2 | O::Log10 | O::Log1p => return None,
        O::Sin | O::Cos | O::Tan | O::Arcsin | O::Arccos | O::Arctan => return None,
        O::Sinh | O::Cosh | O::Tanh | O::Arcsinh | O::Arccosh | O::Arctanh => return None,
        O::Floor | O::Ceil | O::Trunc | O::Rint | O::Isnan | O::Isinf | O::Isfinite | O::Signbit | O::Invert => {
            return None;
        }
    })
}

/// The OpenCL C built-in computing a float math opcode.
fn float_function(op: UnaryOp) -> Option<&'static str> {
    use UnaryOp as O;
    Some(match op {
        O::Sqrt => "sqrt",
        O::Cbrt => "cbrt",
        O::Exp => "exp",
        O::Exp2 => "exp2",
        O::Expm1 => "expm1",
        O::Log => "log",
        O::Log2 => "log2",
        O::Log10 => "log10",
        O::Log1p => "log1p",
        O::Sin => "sin",
        O::Cos => "cos",
        O::Tan => "tan",
        O::Arcsin => "asin",
        O::Arccos => "acos",
        O::Arctan => "atan",
        O::Sinh => "sinh",
        O::Cosh => "cosh",
        O::Tanh => "tanh",
        O::Arcsinh => "asinh",
        O::Arccosh => "acosh",
        O::Arctanh => "atanh",
        O::Floor => "floor",
        O::Ceil => "ceil",
        O::Trunc => "trunc",
        O::Rint => "rint",
        // Inline expressions (see `unary`).
        O::Negative | O::Absolute | O::Sign | O::Square | O::Reciprocal | O::Deg2rad | O::Rad2deg => return None,
        O::Isnan | O::Isinf | O::Isfinite | O::Signbit | O::LogicalNot | O::Invert | O::Identity => return None,
    })
}

/// True when the device result of `op` on floats may differ from a correctly rounded one by a
/// few ulp (the OpenCL built-in's documented error bound); every other opcode the device runs
/// gives exactly the reference engine's bits.
pub fn is_approximate(op: Opcode) -> bool {
    match op.class() {
        OpClass::Binary(b) => matches!(
            b,
            BinaryOp::Power | BinaryOp::Arctan2 | BinaryOp::Hypot | BinaryOp::Logaddexp | BinaryOp::Logaddexp2
        ),
        OpClass::Unary(u) => {
            float_function(u).is_some()
                && !matches!(u, UnaryOp::Sqrt | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Rint)
        }
        _ => false,
    }
}

/// A cast from `from` to `to` with Rust `as` semantics (wrapping between integers, saturating
/// and NaN to 0 from floats to integers, round to nearest even otherwise; nonzero is true).
fn cast(from: DType, to: DType, a: &str) -> String {
    let t = ctype(to);
    if from == to {
        format!("({a})")
    } else if to == DType::Bool {
        format!("((uchar)(({a}) != 0))")
    } else if from.is_float() && to.is_integer() {
        // The saturating conversion's NaN is 0 by the specification, but not on every driver.
        format!("(isnan({a}) ? ({t})0 : convert_{t}_sat_rtz({a}))")
    } else if from.is_integer() && to.is_integer() {
        format!("(({t})({})({a}))", unsigned(to))
    } else {
        format!("(({t})({a}))")
    }
}

/// The expression that produces element `pos` (the row-major position, a `ulong`) of
/// `range`/`random` output of dtype `d`; a random's seed and offset are parameters.
fn generator(instr: &Instruction, d: DType, prm: &mut Params) -> Option<String> {
    match instr.opcode {
        Opcode::Range => Some(cast(DType::U64, d, "pos")),
        Opcode::Random => {
            let (Some(Scalar::U64(seed)), Some(Scalar::U64(offset))) =
                (instr.operands.get(1)?.as_const(), instr.operands.get(2)?.as_const())
            else {
                return None;
            };
            let bits = format!("vm_random_bits({}, {} + pos)", prm.ulong(seed), prm.ulong(offset));
            Some(match d {
                DType::F64 => format!("((double)({bits} >> 11) * 0x1p-53)"),
                DType::F32 => format!("((float)(uint)({bits} >> 40) * 0x1p-24f)"),
                DType::Bool => format!("((uchar)({bits} & 1UL))"),
                d => format!("(({})({bits}))", ctype(d)),
            })
        }
        _ => None,
    }
}

/// Philox4x32-10, bit-identical to [`vm_ir::random::random_bits`].
const PHILOX: &str = r"
ulong vm_random_bits(ulong seed, ulong counter) {
    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        if (round > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        ulong p0 = (ulong)0xD2511F53u * (ulong)c0;
        ulong p1 = (ulong)0xCD9E8D57u * (ulong)c2;
        uint n0 = ((uint)(p1 >> 32)) ^ c1 ^ k0, n1 = (uint)p1;
        uint n2 = ((uint)(p0 >> 32)) ^ c3 ^ k1, n3 = (uint)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    }
    return (ulong)c0 | ((ulong)c1 << 32);
}
";

/// The values a program reads at run time from its parameter buffer `prm`, one `ulong` slot
/// each, in the order the code generator asks for them (an order that depends only on the
/// structure, never on the values, so equal texts always read their slots alike).
#[derive(Debug, Default)]
struct Params(Vec<u64>);

impl Params {
    /// A new slot holding `v`, as a `ulong` expression.
    fn ulong(&mut self, v: u64) -> String {
        self.0.push(v);
        format!("prm[{}]", self.0.len() - 1)
    }

    /// A new slot holding `v` (two's complement), as a `long` expression.
    fn long(&mut self, v: i64) -> String {
        format!("((long){})", self.ulong(v as u64))
    }

    /// The program text, opened by the definition of `VM_PARAMS` (the address space of `prm`:
    /// `__constant` when the device's constant buffer holds every slot), and the slot values.
    fn finish(self, text: String, target: Target) -> (String, Vec<u64>) {
        let space = if self.0.len() <= target.constant_params { "__constant" } else { "__global const" };
        (format!("#define VM_PARAMS {space}\n{text}"), self.0)
    }

    /// A new slot holding the bits of constant `s`, as an exact expression of its dtype.
    fn constant(&mut self, s: Scalar) -> String {
        from_bits(s.dtype(), &self.ulong(bits(s)))
    }
}

/// The bases bound to a program's arguments, in order.
#[derive(Default)]
struct Args {
    bases: Vec<Base>,
    of: HashMap<BaseId, usize>,
}

impl Args {
    /// The argument name (`bK`) of `b`'s buffer.
    fn of(&mut self, b: Base) -> String {
        let k = *self.of.entry(b.id).or_insert_with(|| {
            self.bases.push(b);
            self.bases.len() - 1
        });
        format!("b{k}")
    }
}

/// The text around a program's kernels: pragmas, helpers.
fn prelude(uses_f64: bool, helpers: &Helpers, random: bool) -> String {
    let mut text = String::from("#pragma OPENCL FP_CONTRACT OFF\n");
    if uses_f64 {
        text.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    if random {
        text.push_str(PHILOX);
    }
    helpers.emit(&mut text);
    text
}

/// The parameter list: every base, then every scratch buffer, then the parameter buffer (in the
/// address space `VM_PARAMS`, see [`Params::finish`]).
fn signature(args: &Args, scratch: &[(Scratch, &str)]) -> String {
    let mut p: Vec<String> =
        args.bases.iter().enumerate().map(|(k, b)| format!("__global {}* restrict b{k}", ctype(b.dtype))).collect();
    p.extend(scratch.iter().enumerate().map(|(k, (_, t))| format!("__global {t}* s{k}")));
    p.push("VM_PARAMS ulong* restrict prm".into());
    p.join(", ")
}

/// Lines splitting `pos` (a `ulong` expression below the product of `shape`) into the row-major
/// indices `{prefix}0..` of `shape`; the extents are parameters (the first is not needed).
fn split_index(prefix: &str, pos: &str, shape: &[usize], prm: &mut Params) -> String {
    let mut text = String::new();
    if shape.is_empty() {
        return text;
    }
    let _ = writeln!(text, "    ulong {prefix}r = {pos};");
    for d in (1..shape.len()).rev() {
        let n = prm.ulong(shape[d].max(1) as u64);
        let _ = writeln!(text, "    long {prefix}{d} = (long)({prefix}r % {n}); {prefix}r /= {n};");
    }
    let _ = writeln!(text, "    long {prefix}0 = (long){prefix}r;");
    text
}

/// The element offset of `v` at indices `vars` (one per dimension of `v`; `"0"` for none). The
/// start and the strides are parameters, except that a zero stride (or index) drops its term and
/// a unit stride is written as such: the text depends only on which strides are 0, 1 or other.
fn offset(v: &View, vars: &[String], prm: &mut Params) -> String {
    let mut e = prm.long(v.start);
    for (&s, x) in v.stride.iter().zip(vars) {
        match s {
            _ if x == "0" => {}
            0 => {}
            1 => {
                let _ = write!(e, " + {x}");
            }
            s => {
                let _ = write!(e, " + {x} * {}", prm.long(s));
            }
        }
    }
    e
}

/// The line returning from work items at or past `n` (a `ulong` expression) along the padded
/// NDRange dimension `id` (a `ulong` variable), when launches may be padded.
fn guard(target: Target, id: &str, n: &str) -> String {
    if target.padded { format!("    if ({id} >= {n}) return;\n") } else { String::new() }
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|d| format!("{prefix}{d}")).collect()
}

fn needs_f64(instr: &Instruction) -> bool {
    instr.operands.iter().any(|o| o.dtype() == DType::F64)
}

/// A one-dimensional launch of `items` work items.
fn launch(name: &'static str, items: usize, group: Option<usize>) -> Launch {
    Launch { name, items, rows: 1, group }
}

/// Builds the source of an element-wise `kernel` (positions into `batch`), or `None` when some
/// instruction or dtype is not implemented on the device (f64 without `fp64`, reductions, ...).
/// Its one launch runs the innermost dimension along the first NDRange dimension and every
/// other position along the second.
pub fn generate(batch: &[Instruction], kernel: &Kernel, target: Target) -> Option<Source> {
    let mut args = Args::default();
    let mut prm = Params::default();
    let mut helpers = Helpers::default();
    let mut written = Vec::new();
    let mut body = String::new();
    let mut uses_f64 = false;
    let mut uses_random = false;
    // The contracted temporaries in the order they are first written: `t0`, `t1`, ...
    let mut temps: Vec<BaseId> = Vec::new();
    let ndim = kernel.shape.len();
    let vars = names("i", ndim);
    let mut opcodes = Vec::new();
    // The views this work item has stored and the variables holding what it stored: reading one
    // of them again takes the variable (no load, and no reliance on the device compiler seeing
    // that the load reads the store).
    let mut stored: Vec<(View, String)> = Vec::new();
    let mut written_values = 0usize;
    let operand = |o: &Operand, args: &mut Args, prm: &mut Params, temps: &[BaseId], stored: &[(View, String)]| match o
    {
        Operand::Const(s) => Some(prm.constant(*s)),
        Operand::View(v) if kernel.temps.contains(&v.base.id) => {
            temps.iter().position(|&t| t == v.base.id).map(|k| format!("t{k}"))
        }
        Operand::View(v) if v.ndim() != ndim => None,
        Operand::View(v) => match stored.iter().rev().find(|(w, _)| w == v) {
            Some((_, var)) => Some(var.clone()),
            None => Some(format!("{}[{}]", args.of(v.base), offset(v, &vars, prm))),
        },
    };
    for &p in &kernel.instrs {
        let instr = &batch[p];
        opcodes.push(instr.opcode);
        uses_f64 |= needs_f64(instr);
        let out = instr.output()?;
        let d_out = out.dtype();
        let mut input = |k: usize| operand(instr.operands.get(k)?, &mut args, &mut prm, &temps, &stored);
        let expr = match instr.opcode.class() {
            OpClass::Unary(op) => {
                let a = input(1)?;
                unary(op, instr.operands[1].dtype(), d_out, &a, &mut helpers)?
            }
            OpClass::Binary(op) => {
                let (a, b) = (input(1)?, input(2)?);
                binary(op, instr.operands[1].dtype(), &a, &b, &mut helpers)?
            }
            OpClass::Select => {
                let (c, a, b) = (input(1)?, input(2)?, input(3)?);
                format!("(({c}) != 0 ? ({a}) : ({b}))")
            }
            OpClass::Range | OpClass::Random => {
                uses_random |= instr.opcode == Opcode::Random;
                generator(instr, d_out, &mut prm)?
            }
            // Not element-wise: never in a kernel of the fusion rule.
            OpClass::Reduce(_)
            | OpClass::Accumulate(_)
            | OpClass::Gather
            | OpClass::Scatter
            | OpClass::ScatterAdd
            | OpClass::Sort
            | OpClass::Argsort
            | OpClass::SearchLeft
            | OpClass::SearchRight => {
                return None;
            }
            OpClass::System(_) | OpClass::Nothing | OpClass::Extension(_) => return None,
        };
        if kernel.temps.contains(&out.base.id) {
            let k = match temps.iter().position(|&t| t == out.base.id) {
                Some(k) => k,
                None => {
                    temps.push(out.base.id);
                    let _ = writeln!(body, "    {} t{};", ctype(d_out), temps.len() - 1);
                    temps.len() - 1
                }
            };
            let _ = writeln!(body, "    t{k} = {expr};");
        } else {
            if out.ndim() != ndim {
                return None;
            }
            if !written.contains(&out.base.id) {
                written.push(out.base.id);
            }
            let target = format!("{}[{}]", args.of(out.base), offset(out, &vars, &mut prm));
            // Named by their order in the kernel: the text depends on the structure only.
            let var = format!("s{}", written_values);
            written_values += 1;
            let _ = writeln!(body, "    {} {var} = {expr};\n    {target} = {var};", ctype(d_out));
            // A later read of another view of this base reads memory (what this item stored
            // there, by the fusion rule).
            stored.retain(|(w, _)| w.base.id != out.base.id);
            stored.push((out.clone(), var));
        }
    }
    if uses_f64 && !target.fp64 {
        return None;
    }
    let inner = kernel.shape.last().copied().unwrap_or(1);
    let rows: usize = kernel.shape.iter().rev().skip(1).product();
    let mut text = prelude(uses_f64, &helpers, uses_random);
    let _ = writeln!(text, "__kernel void {KERNEL_NAME}({}) {{", signature(&args, &[]));
    let n = prm.ulong(inner as u64);
    let _ = writeln!(text, "    ulong c = get_global_id(0), r = get_global_id(1);");
    text.push_str(&guard(target, "c", &n));
    if target.padded && rows > 1 {
        text.push_str(&guard(target, "r", &prm.ulong(rows as u64)));
    }
    let _ = writeln!(text, "    ulong pos = r * {n} + c;");
    if ndim > 0 {
        let _ = writeln!(text, "    long i{} = (long)c;", ndim - 1);
        text.push_str(&split_index("i", "r", &kernel.shape[..ndim - 1], &mut prm));
    }
    text.push_str(&body);
    text.push_str("}\n");
    let (text, params) = prm.finish(text, target);
    Some(Source {
        text,
        args: args.bases,
        scratch: Vec::new(),
        params,
        launches: vec![Launch { name: KERNEL_NAME, items: inner, rows, group: None }],
        check_first: false,
        written,
        opcodes,
    })
}

/// The combining expression of reduction or scan `op` on two values of `d` (the output dtype).
fn combine(op: Opcode, d: DType, a: &str, b: &str, h: &mut Helpers) -> Option<String> {
    let combiner = match op.class() {
        OpClass::Reduce(r) => r.combiner()?,
        OpClass::Accumulate(a) => a.combiner(),
        _ => return None,
    };
    binary(combiner, d, a, b, h)
}

/// What a reduction along an axis keeps per work item and how two of them combine: a value
/// (`add_reduce`, ...: `vm_combine`) or a value with its position (`argmin_reduce`,
/// `argmax_reduce`: `vm_wins`). The kernels around them are the same ([`generate_axis_fold`]).
enum Fold {
    /// A value of dtype `d`; `to_bool` is the input's dtype when elements are loaded as truth
    /// values (logical reductions).
    Value { d: DType, to_bool: Option<DType> },
    /// A value of dtype `d` and its position along the axis (a `long`).
    Position { d: DType },
}

impl Fold {
    /// An input element as the fold takes it.
    fn load(&self, element: String) -> String {
        match self {
            Fold::Value { to_bool: Some(d), .. } => cast(*d, DType::Bool, &element),
            _ => element,
        }
    }

    /// The serial walk along the axis from `at("0")`, storing the result at `out_at`.
    fn serial(&self, at: &dyn Fn(&str) -> String, out_at: &str) -> String {
        let t = self.value_type();
        match self {
            Fold::Value { .. } => format!(
                "    {t} acc = {};\n    for (long k = 1; k < len; k++) acc = vm_combine(acc, {});\n    {out_at} = acc;\n",
                at("0"),
                at("k")
            ),
            Fold::Position { .. } => format!(
                "    {t} best = {};\n    long bk = 0;\n    \
                 for (long k = 1; k < len; k++) {{ {t} x = {}; if (vm_replaces(best, x)) {{ best = x; bk = k; }} }}\n    \
                 {out_at} = bk;\n",
                at("0"),
                at("k")
            ),
        }
    }

    /// The first stage's scratch for `n` partial results (one buffer per part of the state).
    fn scratch(&self, n: usize) -> Vec<(Scratch, &'static str)> {
        let (Fold::Value { d, .. } | Fold::Position { d }) = self;
        let value = (Scratch { bytes: n * d.size(), fill: None }, self.value_type());
        match self {
            Fold::Value { .. } => vec![value],
            Fold::Position { .. } => vec![value, (Scratch { bytes: n * 8, fill: None }, "long")],
        }
    }

    /// The C type of the value kept.
    fn value_type(&self) -> &'static str {
        let (Fold::Value { d, .. } | Fold::Position { d }) = self;
        ctype(*d)
    }

    /// A work item's empty state (`have` marks one that saw an element, so no identity value is
    /// needed: a sum of one -0.0 stays -0.0).
    fn state(&self) -> String {
        let t = self.value_type();
        match self {
            Fold::Value { .. } => format!("    {t} acc = 0; uchar have = 0;\n"),
            Fold::Position { .. } => format!("    {t} acc = 0; long ak = 0; uchar have = 0;\n"),
        }
    }

    /// Folds the element `v` (at position `vk`) into the work item's state.
    fn take(&self, v: &str, vk: &str) -> String {
        let t = self.value_type();
        match self {
            Fold::Value { .. } => format!("{t} v = {v}; acc = have ? vm_combine(acc, v) : v; have = 1;"),
            Fold::Position { .. } => {
                format!(
                    "{t} v = {v}; long vk = {vk}; if (!have || vm_wins(acc, ak, v, vk)) {{ acc = v; ak = vk; }} have = 1;"
                )
            }
        }
    }

    /// The tree over a work group's `w` states in local memory; the result is in slot 0.
    fn tree(&self, w: usize) -> String {
        let (t, half) = (self.value_type(), w / 2);
        match self {
            Fold::Value { .. } => format!(
                "    __local {t} sv[{w}];\n    __local uchar sh[{w}];\n    sv[lid] = acc; sh[lid] = have;\n    \
                 barrier(CLK_LOCAL_MEM_FENCE);\n    for (uint s = {half}; s > 0; s >>= 1) {{\n        \
                 if (lid < s && sh[lid + s]) {{ sv[lid] = sh[lid] ? vm_combine(sv[lid], sv[lid + s]) : sv[lid + s]; sh[lid] = 1; }}\n        \
                 barrier(CLK_LOCAL_MEM_FENCE);\n    }}\n"
            ),
            Fold::Position { .. } => format!(
                "    __local {t} sv[{w}];\n    __local long sk[{w}];\n    __local uchar sh[{w}];\n    \
                 sv[lid] = acc; sk[lid] = ak; sh[lid] = have;\n    barrier(CLK_LOCAL_MEM_FENCE);\n    \
                 for (uint s = {half}; s > 0; s >>= 1) {{\n        \
                 if (lid < s && sh[lid + s]) {{\n            \
                 if (!sh[lid] || vm_wins(sv[lid], sk[lid], sv[lid + s], sk[lid + s])) {{ sv[lid] = sv[lid + s]; sk[lid] = sk[lid + s]; }}\n            \
                 sh[lid] = 1;\n        }}\n        barrier(CLK_LOCAL_MEM_FENCE);\n    }}\n"
            ),
        }
    }

    /// The work group's result (after the tree).
    fn result(&self) -> &'static str {
        match self {
            Fold::Value { .. } => "sv[0]",
            Fold::Position { .. } => "sk[0]",
        }
    }

    /// Stores the work group's state as partial `g` of the first stage.
    fn store_partial(&self) -> &'static str {
        match self {
            Fold::Value { .. } => "s0[g] = sv[0];",
            Fold::Position { .. } => "{ s0[g] = sv[0]; s1[g] = sk[0]; }",
        }
    }

    /// Folds partial `k` of output element `g` (second stage).
    fn take_partial(&self) -> String {
        match self {
            Fold::Value { .. } => self.take("s0[g * chunks + k]", ""),
            Fold::Position { .. } => self.take("s0[g * chunks + k]", "s1[g * chunks + k]"),
        }
    }
}

/// Builds the source of one reduction with a nonempty axis: one work item per output element
/// folding the axis in order (axes up to [`SERIAL_REDUCE_MAX`] long, bit-identical to the
/// reference engine), or a deterministic parallel tree reduction in work-group local memory,
/// in two stages when there are too few output elements to keep the device busy. The axis
/// length, the output count and the number of chunks per output element are parameters; only
/// the choices between these forms and the work-group size are in the text. `None` when the
/// device cannot run it (f64 without `fp64`, output overlapping the input).
pub fn generate_reduce(instr: &Instruction, target: Target, plan: ReducePlan) -> Option<Source> {
    let (input, d_out) = (instr.operands.get(1)?.as_view()?, instr.output()?.dtype());
    let mut h = Helpers::default();
    let step = combine(instr.opcode, d_out, "x", "y", &mut h)?;
    let to = ctype(d_out);
    let to_bool = matches!(instr.opcode.type_rule(), TypeRule::ToBool(_)).then_some(input.dtype());
    let helpers = format!("{to} vm_combine({to} x, {to} y) {{ return {step}; }}\n");
    generate_axis_fold(instr, target, plan, &h, &helpers, &Fold::Value { d: d_out, to_bool })
}

/// The helpers of a reduction to a position of values of dtype `d`: `vm_replaces(x, y)`, true
/// when `y`, met after `x` along the axis, takes its place ([`vm_ir::semantics::arg_replaces`]:
/// a NaN beats every number and the first NaN stays, else only a strictly greater (`max`) or
/// smaller value wins), and `vm_wins(a, ka, b, kb)`, true when the pair `(b, kb)` beats `(a, ka)`
/// in either order of the positions ([`vm_ir::semantics::arg_combine`]).
fn position_helpers(d: DType, max: bool) -> String {
    let t = ctype(d);
    let better = if max { "y > x" } else { "y < x" };
    let replaces = if d.is_float() { format!("!isnan(x) && (isnan(y) || {better})") } else { better.to_string() };
    format!(
        "int vm_replaces({t} x, {t} y) {{ return {replaces}; }}\n\
         int vm_wins({t} a, long ka, {t} b, long kb) {{ return ka < kb ? vm_replaces(a, b) : !vm_replaces(b, a); }}\n"
    )
}

/// Builds the source of `argmin_reduce` or `argmax_reduce` (whose axis is never empty), in the
/// forms of [`generate_reduce`] over (value, position) pairs. Pairs combine by `vm_wins`, which
/// gives the position a walk along the axis gives whatever the grouping, so every form is
/// exactly the reference engine's. `None` for other opcodes and when the device cannot run it
/// (f64 without `fp64`, output overlapping the input).
pub fn generate_arg_reduce(instr: &Instruction, target: Target, plan: ReducePlan) -> Option<Source> {
    if !instr.opcode.is_arg_reduce() {
        return None;
    }
    let d = instr.operands.get(1)?.as_view()?.dtype();
    let helpers = position_helpers(d, instr.opcode == Opcode::ArgmaxReduce);
    generate_axis_fold(instr, target, plan, &Helpers::default(), &helpers, &Fold::Position { d })
}

/// The kernels of a reduction along an axis with `fold` (see [`generate_reduce`]); `h` and
/// `helpers` are the functions the fold's text calls.
fn generate_axis_fold(
    instr: &Instruction,
    target: Target,
    plan: ReducePlan,
    h: &Helpers,
    helpers: &str,
    fold: &Fold,
) -> Option<Source> {
    let (out, input, axis) = (instr.output()?, instr.operands.get(1)?.as_view()?, instr.axis()?);
    if needs_f64(instr) && !target.fp64 || axis >= input.ndim() || out.ndim() + 1 != input.ndim() {
        return None;
    }
    if out.base.id == input.base.id && out.overlap(input) != vm_ir::Overlap::Disjoint {
        return None;
    }
    let (len, m) = (input.shape[axis], out.nelem());
    if len == 0 || m == 0 {
        return None;
    }
    let mut args = Args::default();
    let mut prm = Params::default();
    let (ob, ib) = (args.of(out.base), args.of(input.base));
    // The input's offset for output indices o0.. and axis position `k`.
    let ovars = names("o", out.ndim());
    let mut ivars: Vec<String> = ovars.clone();
    ivars.insert(axis, "0".into());
    let in_base = offset(input, &ivars, &mut prm);
    let out_at = format!("{ob}[{}]", offset(out, &ovars, &mut prm));
    let (istep, len_p) = (prm.long(input.stride[axis]), prm.ulong(len as u64));
    let at = |k: &str| fold.load(format!("{ib}[ibase + ({k}) * istep]"));
    let mut text = prelude(needs_f64(instr), h, false);
    text.push_str(helpers);
    let opcodes = vec![instr.opcode];
    if len <= SERIAL_REDUCE_MAX || plan.group < 2 {
        let _ = writeln!(text, "__kernel void {KERNEL_NAME}({}) {{", signature(&args, &[]));
        let m_p = prm.ulong(m as u64);
        let _ = writeln!(text, "    ulong pos = get_global_id(0);");
        text.push_str(&guard(target, "pos", &m_p));
        text.push_str(&split_index("o", "pos", &out.shape, &mut prm));
        let _ = writeln!(text, "    long ibase = {in_base}, istep = {istep}, len = (long){len_p};");
        text.push_str(&fold.serial(&at, &out_at));
        text.push_str("}\n");
        let (text, params) = prm.finish(text, target);
        return Some(Source::one_launch(text, args.bases, params, m, out.base.id, opcodes));
    }
    let w = plan.group;
    // Chunks per output element: enough work groups to keep the device busy, each chunk at least
    // one work group's worth of elements.
    let chunks = if m >= plan.target_groups { 1 } else { plan.target_groups.div_ceil(m).min(len.div_ceil(w)).max(1) };
    let chunks_p = prm.ulong(chunks as u64);
    let scratch = if chunks > 1 { fold.scratch(m * chunks) } else { Vec::new() };
    let tree = fold.tree(w);
    let attr = format!("__attribute__((reqd_work_group_size({w}, 1, 1)))");
    let p = signature(&args, &scratch);
    let _ = writeln!(text, "__kernel {attr} void {KERNEL_NAME}({p}) {{");
    let _ = writeln!(text, "    ulong g = get_group_id(0);\n    uint lid = (uint)get_local_id(0);");
    let _ = writeln!(text, "    ulong chunks = {chunks_p}, len = {len_p};\n    ulong c = g % chunks;");
    text.push_str(&split_index("o", "g / chunks", &out.shape, &mut prm));
    let _ = writeln!(text, "    long ibase = {in_base}, istep = {istep};");
    let _ = writeln!(text, "    long lo = (long)(c * len / chunks), hi = (long)((c + 1) * len / chunks);");
    text.push_str(&fold.state());
    let _ = writeln!(text, "    for (long k = lo + lid; k < hi; k += {w}L) {{ {} }}", fold.take(&at("k"), "k"));
    text.push_str(&tree);
    let result = fold.result();
    if chunks == 1 {
        let _ = writeln!(text, "    if (lid == 0) {out_at} = {result};\n}}");
    } else {
        let _ = writeln!(text, "    if (lid == 0) {}\n}}", fold.store_partial());
        let _ = writeln!(text, "__kernel {attr} void vm_kernel2({p}) {{");
        let _ = writeln!(text, "    ulong g = get_group_id(0);\n    uint lid = (uint)get_local_id(0);");
        let _ = writeln!(text, "    ulong chunks = {chunks_p};");
        text.push_str(&split_index("o", "g", &out.shape, &mut prm));
        text.push_str(&fold.state());
        let _ = writeln!(text, "    for (ulong k = lid; k < chunks; k += {w}UL) {{ {} }}", fold.take_partial());
        text.push_str(&tree);
        let _ = writeln!(text, "    if (lid == 0) {out_at} = {result};\n}}");
    }
    let mut launches = vec![launch(KERNEL_NAME, m * chunks * w, Some(w))];
    if chunks > 1 {
        launches.push(launch("vm_kernel2", m * w, Some(w)));
    }
    let (text, params) = prm.finish(text, target);
    Some(Source {
        text,
        args: args.bases,
        scratch: scratch.into_iter().map(|(s, _)| s).collect(),
        params,
        launches,
        check_first: false,
        written: vec![out.base.id],
        opcodes,
    })
}

/// Builds the source of a scan: one work item per line along the axis, in order (bit-identical
/// to the reference engine). `None` when the device cannot run it.
pub fn generate_accumulate(instr: &Instruction, target: Target) -> Option<Source> {
    let (out, input, axis) = (instr.output()?, instr.operands.get(1)?.as_view()?, instr.axis()?);
    if needs_f64(instr) && !target.fp64 || axis >= input.ndim() || instr.output_partially_overlaps_input() {
        return None;
    }
    let d = out.dtype();
    let len = input.shape[axis];
    let mut lines_shape = input.shape.clone();
    lines_shape.remove(axis);
    let m: usize = lines_shape.iter().product();
    let mut h = Helpers::default();
    let step = combine(instr.opcode, d, "acc", "x", &mut h)?;
    let mut args = Args::default();
    let mut prm = Params::default();
    let (ob, ib) = (args.of(out.base), args.of(input.base));
    let mut vars = names("o", lines_shape.len());
    vars.insert(axis, "0".into());
    let (ibase, obase) = (offset(input, &vars, &mut prm), offset(out, &vars, &mut prm));
    let (si, so) = (prm.long(input.stride[axis]), prm.long(out.stride[axis]));
    let (m_p, len_p) = (prm.ulong(m as u64), prm.ulong(len as u64));
    let to = ctype(d);
    let mut text = prelude(needs_f64(instr), &h, false);
    let _ = writeln!(text, "__kernel void {KERNEL_NAME}({}) {{", signature(&args, &[]));
    let _ = writeln!(text, "    ulong pos = get_global_id(0);\n    if ({len_p} == 0) return;");
    text.push_str(&guard(target, "pos", &m_p));
    text.push_str(&split_index("o", "pos", &lines_shape, &mut prm));
    let _ = writeln!(text, "    long ip = {ibase}, op = {obase}, si = {si}, so = {so}, len = (long){len_p};");
    let _ = writeln!(text, "    {to} acc = {ib}[ip];\n    {ob}[op] = acc;");
    let _ = writeln!(
        text,
        "    for (long k = 1; k < len; k++) {{ {to} x = {ib}[ip + k * si]; acc = {step}; {ob}[op + k * so] = acc; }}\n}}"
    );
    let (text, params) = prm.finish(text, target);
    Some(Source::one_launch(text, args.bases, params, m, out.base.id, vec![instr.opcode]))
}

/// The parts of a gather or scatter that walk its index view: the check against the count of
/// positions (when launches are padded), the lines splitting `pos` into `i0..`, and the offset
/// of the index element there.
struct IndexWalk {
    guard: String,
    split: String,
    at: String,
}

impl IndexWalk {
    fn new(index: &View, target: Target, prm: &mut Params) -> IndexWalk {
        let guard = guard(target, "pos", &prm.ulong(index.nelem() as u64));
        let split = split_index("i", "pos", &index.shape, prm);
        let at = offset(index, &names("i", index.ndim()), prm);
        IndexWalk { guard, split, at }
    }

    /// The opening lines of a kernel over the index positions.
    fn open(&self, text: &mut String, name: &str, p: &str) {
        let _ = writeln!(text, "__kernel void {name}({p}) {{\n    ulong pos = get_global_id(0);");
        text.push_str(&self.guard);
        text.push_str(&self.split);
    }
}

/// The check kernel of gather/scatter: sets `s0[0]` when an index (in `xb`, of dtype `d`) is
/// outside `0..len` (a `ulong` expression).
fn index_check(text: &mut String, p: &str, walk: &IndexWalk, xb: &str, d: DType, len: &str) {
    walk.open(text, "vm_check", p);
    let _ = writeln!(text, "    {} k = {xb}[{}];", ctype(d), walk.at);
    let neg = if is_signed(d) { "k < 0 || " } else { "" };
    let _ = writeln!(text, "    if ({neg}(ulong)k >= {len}) s0[0] = 1u;\n}}");
}

/// Builds the source of `gather out, src, index`: a check launch, then one work item per output
/// element. `None` when the device cannot run it (the output shares a base with an input, f64
/// without `fp64`).
pub fn generate_gather(instr: &Instruction, target: Target) -> Option<Source> {
    let (out, src, index) = (instr.output()?, instr.operands.get(1)?.as_view()?, instr.operands.get(2)?.as_view()?);
    if needs_f64(instr) && !target.fp64
        || out.base.id == src.base.id
        || out.base.id == index.base.id
        || index.shape != out.shape
    {
        return None;
    }
    let mut args = Args::default();
    let mut prm = Params::default();
    let (ob, sb, xb) = (args.of(out.base), args.of(src.base), args.of(index.base));
    let scratch = [(Scratch { bytes: 4, fill: Some(0) }, "uint")];
    let p = signature(&args, &scratch);
    let walk = IndexWalk::new(index, target, &mut prm);
    let len = prm.ulong(src.nelem() as u64);
    let mut text = prelude(needs_f64(instr), &Helpers::default(), false);
    index_check(&mut text, &p, &walk, &xb, index.dtype(), &len);
    walk.open(&mut text, KERNEL_NAME, &p);
    let _ = writeln!(text, "    ulong k = (ulong){xb}[{}];", walk.at);
    text.push_str(&split_index("j", "k", &src.shape, &mut prm));
    let out_at = offset(out, &names("i", out.ndim()), &mut prm);
    let src_at = offset(src, &names("j", src.ndim()), &mut prm);
    let _ = writeln!(text, "    {ob}[{out_at}] = {sb}[{src_at}];\n}}");
    let n = out.nelem();
    let (text, params) = prm.finish(text, target);
    Some(Source {
        text,
        args: args.bases,
        scratch: vec![scratch[0].0],
        params,
        launches: vec![launch("vm_check", n, None), launch(KERNEL_NAME, n, None)],
        check_first: true,
        written: vec![out.base.id],
        opcodes: vec![instr.opcode],
    })
}

/// Builds the source of `scatter dst, src, index`: a check launch, a launch that finds the last
/// position writing each destination element (an `atomic_max` per element), then one work item
/// per source element that writes only where it is that last one. `None` when the device cannot
/// run it (inputs sharing the destination's base, 2^31 or more source elements, f64 without
/// `fp64`), and for `scatter_add`, whose sums in index order the fallback computes.
pub fn generate_scatter(instr: &Instruction, target: Target) -> Option<Source> {
    if instr.opcode != Opcode::Scatter {
        return None;
    }
    let (dst, src, index) = (instr.output()?, instr.operands.get(1)?, instr.operands.get(2)?.as_view()?);
    let n = index.nelem();
    if needs_f64(instr) && !target.fp64
        || dst.base.id == index.base.id
        || src.as_view().is_some_and(|v| v.base.id == dst.base.id || v.shape != index.shape)
        || n >= (1 << 31)
    {
        return None;
    }
    let mut args = Args::default();
    let mut prm = Params::default();
    let (db, xb) = (args.of(dst.base), args.of(index.base));
    let walk = IndexWalk::new(index, target, &mut prm);
    let value = match src {
        Operand::Const(s) => prm.constant(*s),
        Operand::View(v) => format!("{}[{}]", args.of(v.base), offset(v, &names("i", index.ndim()), &mut prm)),
    };
    let len = dst.nelem();
    let len_p = prm.ulong(len as u64);
    let scratch =
        [(Scratch { bytes: 4, fill: Some(0) }, "uint"), (Scratch { bytes: 4 * len.max(1), fill: Some(0xff) }, "int")];
    let p = signature(&args, &scratch);
    let mut text = prelude(needs_f64(instr), &Helpers::default(), false);
    index_check(&mut text, &p, &walk, &xb, index.dtype(), &len_p);
    walk.open(&mut text, "vm_last", &p);
    let _ = writeln!(text, "    ulong k = (ulong){xb}[{}];\n    atomic_max(&s1[k], (int)pos);\n}}", walk.at);
    walk.open(&mut text, KERNEL_NAME, &p);
    let _ = writeln!(text, "    ulong k = (ulong){xb}[{}];", walk.at);
    text.push_str(&split_index("d", "k", &dst.shape, &mut prm));
    let dst_at = offset(dst, &names("d", dst.ndim()), &mut prm);
    let _ = writeln!(text, "    if (s1[k] == (int)pos) {db}[{dst_at}] = {value};\n}}");
    let (text, params) = prm.finish(text, target);
    Some(Source {
        text,
        args: args.bases,
        scratch: scratch.iter().map(|(s, _)| *s).collect(),
        params,
        launches: vec![launch("vm_check", n, None), launch("vm_last", n, None), launch(KERNEL_NAME, n, None)],
        check_first: true,
        written: vec![dst.base.id],
        opcodes: vec![instr.opcode],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_fusion::{Options, Step, partition};

    const TARGET: Target = Target { fp64: true, padded: false, constant_params: 4096 };

    fn view(id: u64, d: DType, nelem: u64, start: i64, shape: &[usize], stride: &[i64]) -> View {
        View::new(Base { id: BaseId(id), dtype: d, nelem }, start, shape, stride).unwrap()
    }

    /// One heat-equation step on an `(h+2) x (w+2)` grid (base `g`) into `out`, through the
    /// contracted temporary `t`, scaled by `k`; the grid's rows are `pitch` elements apart.
    fn heat(g: u64, t: u64, out: u64, h: usize, w: usize, pitch: usize, k: f64) -> Source {
        let n = ((h + 2) * pitch) as u64;
        let p = pitch as i64;
        let at = |r: i64, c: i64| Operand::View(view(g, DType::F64, n, r * p + c, &[h, w], &[p, 1]));
        let tv = || Operand::View(view(t, DType::F64, (h * w) as u64, 0, &[h, w], &[w as i64, 1]));
        let batch = [
            Instruction::new(Opcode::Add, [tv(), at(0, 1), at(2, 1)]),
            Instruction::new(Opcode::Add, [tv(), tv(), at(1, 0)]),
            Instruction::new(Opcode::Add, [tv(), tv(), at(1, 2)]),
            Instruction::new(
                Opcode::Multiply,
                [Operand::View(view(out, DType::F64, n, p + 1, &[h, w], &[p, 1])), tv(), Scalar::F64(k).into()],
            ),
            Instruction::new(Opcode::Free, [tv()]),
        ];
        let steps = partition(&batch, &Options::default());
        let Step::Kernel(kernel) = &steps[0] else { panic!("{steps:?}") };
        assert_eq!(kernel.temps, vec![BaseId(t)]);
        generate(&batch, kernel, TARGET).unwrap()
    }

    #[test]
    fn element_wise_text_depends_on_the_structure_only() {
        let a = heat(1, 2, 3, 10, 20, 22, 0.2);
        let b = heat(7, 90, 4, 500, 300, 302, -1.5);
        assert_eq!(a.text, b.text, "other ids, sizes, starts, strides and constants");
        assert_ne!(a.params, b.params);
        assert!(a.params.contains(&0.2f64.to_bits()) && b.params.contains(&(-1.5f64).to_bits()));
        assert!(a.text.contains("t0") && !a.text.contains("t2"), "temporaries are named by order");
        assert_eq!((a.launches[0].items, a.launches[0].rows), (20, 10));
        // Operands sharing a base, or a stride of 1 where there was another, is another structure.
        let add = |ids: [u64; 3], stride: i64, target: Target| {
            let v = |id| Operand::View(view(id, DType::I32, 100, 0, &[10], &[stride]));
            let batch = [Instruction::new(Opcode::Add, [v(ids[0]), v(ids[1]), v(ids[2])])];
            let Step::Kernel(kernel) = &partition(&batch, &Options::default())[0] else { unreachable!() };
            generate(&batch, kernel, target).unwrap().text
        };
        let other = add([1, 2, 3], 3, TARGET);
        assert_eq!(other, add([4, 6, 5], 2, TARGET));
        assert_ne!(other, add([1, 2, 2], 3, TARGET));
        assert_ne!(other, add([1, 2, 3], 1, TARGET));
        // Padded launches check the id; many parameters live in __global memory.
        assert!(!other.contains("return;") && other.contains("#define VM_PARAMS __constant\n"), "{other}");
        let padded = add([1, 2, 3], 3, Target { padded: true, ..TARGET });
        assert!(padded.contains("if (c >= prm[") && padded.contains("return;"), "{padded}");
        let global = add([1, 2, 3], 3, Target { constant_params: 3, ..TARGET });
        assert!(global.contains("#define VM_PARAMS __global const\n"), "{global}");
    }

    /// The source of the element-wise `batch`, fused into one kernel (its last step).
    fn fused(batch: &[Instruction]) -> String {
        let steps = partition(batch, &Options::default());
        let Some(Step::Kernel(kernel)) = steps.last() else { panic!("{steps:?}") };
        generate(batch, kernel, TARGET).unwrap().text
    }

    #[test]
    fn a_view_stored_by_the_kernel_is_read_back_from_its_variable() {
        let v = |id, d| Operand::View(view(id, d, 64, 0, &[4, 8], &[8, 1]));
        let text = fused(&[
            Instruction::new(Opcode::BitwiseAnd, [v(3, DType::I64), v(1, DType::I64), v(2, DType::I64)]),
            Instruction::new(Opcode::Add, [v(4, DType::I64), v(3, DType::I64), v(1, DType::I64)]),
        ]);
        // Bases 1, 2, 3 and 4 are b0..b3: the stored b2 is written once and never loaded.
        assert_eq!(text.matches("b2[").count(), 1, "{text}");
        // The same kernel later in a batch has the same text (its program is built once).
        let flat = |id| Operand::View(view(id, DType::F64, 64, 0, &[64], &[1]));
        let later = fused(&[
            Instruction::new(Opcode::Sqrt, [flat(9), flat(8)]),
            Instruction::new(Opcode::BitwiseAnd, [v(3, DType::I64), v(1, DType::I64), v(2, DType::I64)]),
            Instruction::new(Opcode::Add, [v(4, DType::I64), v(3, DType::I64), v(1, DType::I64)]),
        ]);
        assert_eq!(later, text);
        assert!(text.contains("long s0 = ") && text.contains("(ulong)(s0) + "), "{text}");
    }

    #[test]
    fn float_to_integer_casts_and_powers_keep_numpy_results_on_every_driver() {
        let v = |id, d| Operand::View(view(id, d, 64, 0, &[64], &[1]));
        let cast = fused(&[Instruction::new(Opcode::Identity, [v(2, DType::I32), v(1, DType::F64)])]);
        assert!(cast.contains("isnan(") && cast.contains("convert_int_sat_rtz("), "{cast}");
        let power = fused(&[Instruction::new(Opcode::Power, [v(3, DType::F64), v(1, DType::F64), v(2, DType::F64)])]);
        assert!(power.contains(") == 1 ? (") && power.contains("pow("), "{power}");
    }

    #[test]
    fn namespaced_sources_share_no_identifier() {
        let plan = ReducePlan { group: 64, target_groups: 8 };
        let x = view(1, DType::F32, 5000, 0, &[5000], &[1]);
        let o = view(2, DType::F32, 1, 0, &[], &[]);
        let reduce = one(Instruction::new(Opcode::AddReduce, [o.into(), x.into(), Scalar::I64(0).into()]), |i| {
            generate_reduce(i, TARGET, plan)
        });
        let texts = [heat(1, 2, 3, 10, 20, 22, 0.2).text, reduce.text];
        let joined: Vec<String> = texts.iter().enumerate().map(|(j, t)| namespaced(t, j)).collect();
        for (j, t) in joined.iter().enumerate() {
            assert!(!t.contains("vm_") && !t.contains(" VM_PARAMS"), "{t}");
            assert!(t.contains(&format!("void {}(", namespaced(KERNEL_NAME, j))), "{t}");
            assert!(t.contains(&format!("#define VM{j}_PARAMS ")), "{t}");
        }
        assert!(joined[1].contains("vm1_combine(") && joined[1].contains("void vm1_kernel2("), "{}", joined[1]);
    }

    fn one(instr: Instruction, make: impl Fn(&Instruction) -> Option<Source>) -> Source {
        make(&instr).unwrap()
    }

    #[test]
    fn reduction_scan_gather_and_scatter_texts_depend_on_the_structure_only() {
        let plan = ReducePlan { group: 64, target_groups: 8 };
        let reduce = |id: u64, len: usize, rows: usize, start: i64| {
            let x = view(id, DType::F32, (len * rows) as u64 + 10, start, &[rows, len], &[len as i64, 1]);
            let o = view(id + 1, DType::F32, rows as u64, 0, &[rows], &[1]);
            one(Instruction::new(Opcode::AddReduce, [o.into(), x.into(), Scalar::I64(1).into()]), |i| {
                generate_reduce(i, TARGET, plan)
            })
        };
        // Serial, one-stage tree and two-stage tree reductions.
        assert_eq!(reduce(1, 10, 3, 0).text, reduce(5, 60, 7, 4).text);
        assert_eq!(reduce(1, 1000, 30, 0).text, reduce(5, 3000, 9, 2).text);
        assert_eq!(reduce(1, 1000, 1, 0).text, reduce(5, 5000, 2, 3).text);
        assert_ne!(reduce(1, 1000, 1, 0).text, reduce(1, 1000, 30, 0).text);
        let scan = |id: u64, len: usize, rows: usize| {
            let x = view(id, DType::I32, (len * rows) as u64, 0, &[rows, len], &[len as i64, 1]);
            let o = view(id + 1, DType::I32, (len * rows) as u64, 0, &[rows, len], &[len as i64, 1]);
            one(Instruction::new(Opcode::AddAccumulate, [o.into(), x.into(), Scalar::I64(1).into()]), |i| {
                generate_accumulate(i, TARGET)
            })
        };
        assert_eq!(scan(1, 10, 3).text, scan(8, 100, 7).text);
        let gather = |id: u64, n: usize, len: usize| {
            let (o, s, x) = (
                view(id, DType::F64, n as u64, 0, &[n], &[1]),
                view(id + 1, DType::F64, len as u64 * 2, 1, &[len], &[2]),
                view(id + 2, DType::I64, n as u64, 0, &[n], &[1]),
            );
            one(Instruction::new(Opcode::Gather, [o.into(), s.into(), x.into()]), |i| generate_gather(i, TARGET))
        };
        assert_eq!(gather(1, 10, 30).text, gather(4, 70, 5).text);
        let scatter = |id: u64, n: usize, len: usize, k: i16| {
            let (d, x) =
                (view(id, DType::I16, len as u64, 0, &[len], &[1]), view(id + 2, DType::U32, n as u64, 0, &[n], &[1]));
            let s = generate_scatter(
                &Instruction::new(Opcode::Scatter, [d.into(), Scalar::I16(k).into(), x.into()]),
                TARGET,
            );
            s.unwrap()
        };
        assert_eq!(scatter(1, 10, 30, 3).text, scatter(6, 17, 50, -9).text);
        assert!(scatter(6, 17, 50, -9).params.contains(&(-9i64 as u64)));
    }

    #[test]
    fn position_texts_depend_on_the_structure_only_and_choose_their_form() {
        let plan = ReducePlan { group: 64, target_groups: 8 };
        let arg = |op: Opcode, d: DType, id: u64, len: usize, rows: usize, start: i64| {
            let x = view(id, d, (len * rows) as u64 + 10, start, &[rows, len], &[len as i64, 1]);
            let o = view(id + 1, DType::I64, rows as u64, 0, &[rows], &[1]);
            generate_arg_reduce(&Instruction::new(op, [o.into(), x.into(), Scalar::I64(1).into()]), TARGET, plan)
        };
        let max = |id, len, rows, start| arg(Opcode::ArgmaxReduce, DType::F32, id, len, rows, start).unwrap();
        // Serial, one-stage tree and two-stage tree.
        assert_eq!(max(1, 10, 3, 0).text, max(5, 60, 7, 4).text);
        assert_eq!(max(1, 1000, 30, 0).text, max(5, 3000, 9, 2).text);
        assert_eq!(max(1, 1000, 1, 0).text, max(5, 5000, 2, 3).text);
        let (serial, tree, two) = (max(1, 10, 3, 0), max(1, 1000, 30, 0), max(1, 1000, 1, 0));
        assert_eq!((serial.launches.len(), tree.launches.len(), two.launches.len()), (1, 1, 2));
        assert_eq!(two.scratch.len(), 2, "values and positions of the chunks");
        assert!(serial.text.contains("isnan") && tree.text.contains("vm_wins("), "{}", tree.text);
        let min = arg(Opcode::ArgminReduce, DType::F32, 1, 10, 3, 0).unwrap();
        assert_ne!(min.text, serial.text);
        let int = arg(Opcode::ArgmaxReduce, DType::I16, 1, 10, 3, 0).unwrap();
        assert!(!int.text.contains("isnan") && int.text.contains("short"), "{}", int.text);
        assert!(arg(Opcode::AddReduce, DType::F32, 1, 10, 3, 0).is_none(), "a reduction to a value");
        let no_fp64 = Target { fp64: false, ..TARGET };
        let x = view(1, DType::F64, 10, 0, &[10], &[1]);
        let o = view(2, DType::I64, 1, 0, &[], &[]);
        let f64_arg = Instruction::new(Opcode::ArgminReduce, [o.into(), x.into(), Scalar::I64(0).into()]);
        assert!(generate_arg_reduce(&f64_arg, no_fp64, plan).is_none());
    }
}
