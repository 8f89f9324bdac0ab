//! OpenCL C for the engine's device work: fused element-wise kernels of
//! [`vm_core::kernel::partition`], reductions (one work item per output element for short axes,
//! parallel tree reductions in work-group local memory for long ones), scans, gather and scatter.
//!
//! Element-wise kernels run one work item per position of the kernel's iteration space: it splits
//! its global id into a row-major index, computes every instruction of the kernel in order, keeps
//! contracted temporaries in private variables and stores every other output once. View layouts
//! (start, strides), sizes and constants are written into the source, so the source text is the
//! program cache key.
//!
//! Element semantics follow [`vm_core::semantics`] exactly for integers (NumPy's division family
//! with 0 for a zero divisor, wrapping powers, saturated shifts) and for the exactly rounded float
//! operations (arithmetic, `sqrt`, `fmod`, NumPy's float `floor_divide`/`remainder`, rounding,
//! min/max, `copysign`); transcendental functions use the OpenCL C built-ins, which the OpenCL
//! specification bounds to a few ulp (16 for `pow`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use vm_core::kernel::Kernel;
use vm_core::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Scalar, TypeRule, View};

/// One entry point of a program, run over `items` work items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The kernel function's name.
    pub name: &'static str,
    /// Work items needed (a multiple of `group` when that is set).
    pub items: usize,
    /// The work-group size the code requires (tree reductions), or `None` for the configured
    /// size (or the driver's choice).
    pub group: Option<usize>,
}

/// A device buffer the engine allocates for one run of a [`Source`] (partial results, flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scratch {
    /// Size in bytes.
    pub bytes: usize,
    /// The byte every position is filled with before the first launch.
    pub fill: u8,
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
    /// A short name for error messages: the opcodes and the first entry point.
    pub fn describe(&self) -> String {
        let ops: Vec<&str> = self.opcodes.iter().map(|o| o.name()).collect();
        format!("`{}` [{}]", self.launches.first().map_or("-", |l| l.name), ops.join(" "))
    }
}

/// The name of the main entry point of a generated program.
pub const KERNEL_NAME: &str = "vm_kernel";

/// How the engine wants reductions laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReducePlan {
    /// Work-group size of tree reductions (a power of two).
    pub group: usize,
    /// Work groups that keep the device busy (a few per compute unit).
    pub target_groups: usize,
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

/// A constant as an exact OpenCL C expression of its dtype.
fn literal(s: Scalar) -> String {
    match s {
        Scalar::F32(x) => format!("as_float(0x{:08x}u)", x.to_bits()),
        Scalar::F64(x) => format!("as_double(0x{:016x}UL)", x.to_bits()),
        Scalar::Bool(b) => format!("((uchar){})", u8::from(b)),
        s => format!("(({})0x{:x}UL)", ctype(s.dtype()), s.to_payload()),
    }
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

/// The NumPy integer division family, powers and shifts on `d` (see [`vm_core::semantics`]).
fn int_helper(op: Opcode, d: DType) -> String {
    let (t, u, w) = (ctype(d), unsigned(d), wide_unsigned(d));
    let bits = d.size() * 8;
    let name = format!("vm_{}_{t}", op.name());
    let signed = is_signed(d);
    let body = match op {
        Opcode::FloorDivide if signed => format!(
            "if (b == 0) return 0;\n    if (b == -1) return ({t})({u})(({w})0 - ({w})({u})a);\n    \
             {t} q = ({t})(a / b), r = ({t})(a % b);\n    \
             return (r != 0 && ((a < 0) != (b < 0))) ? ({t})({u})(({w})({u})q - ({w})1) : q;"
        ),
        Opcode::Remainder if signed => format!(
            "if (b == 0 || b == -1) return 0;\n    {t} r = ({t})(a % b);\n    \
             return (r != 0 && ((r < 0) != (b < 0))) ? ({t})({u})(({w})({u})r + ({w})({u})b) : r;"
        ),
        Opcode::Fmod if signed => format!("return (b == 0 || b == -1) ? ({t})0 : ({t})(a % b);"),
        Opcode::FloorDivide => format!("return b == 0 ? ({t})0 : ({t})(a / b);"),
        Opcode::Remainder | Opcode::Fmod => format!("return b == 0 ? ({t})0 : ({t})(a % b);"),
        Opcode::Power => {
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
        Opcode::LeftShift => {
            let neg = if signed { "b < 0 || " } else { "" };
            format!("if ({neg}b >= {bits}) return 0;\n    return ({t})({u})(({w})({u})a << (uint)b);")
        }
        Opcode::RightShift if signed => format!(
            "if (b < 0 || b >= {bits}) return a < 0 ? ({t})-1 : ({t})0;\n    \
             return a < 0 ? ({t})~(~a >> (uint)b) : ({t})(a >> (uint)b);"
        ),
        Opcode::RightShift => format!("if (b >= {bits}) return 0;\n    return ({t})(a >> (uint)b);"),
        _ => unreachable!("no integer helper for {op}"),
    };
    format!("{t} {name}({t} a, {t} b) {{\n    {body}\n}}\n")
}

/// NumPy's float `floor_divide` and `remainder` (`npy_divmod`), as in [`vm_core::semantics`].
fn float_helper(op: Opcode, d: DType) -> String {
    let t = ctype(d);
    let half = if d == DType::F32 { "0.5f" } else { "0.5" };
    let name = format!("vm_{}_{t}", op.name());
    let body = match op {
        Opcode::FloorDivide => format!(
            "if (b == ({t})0) return a / b;\n    {t} m = fmod(a, b);\n    {t} div = (a - m) / b;\n    \
             if (m != ({t})0 && ((b < ({t})0) != (m < ({t})0))) div = div - ({t})1;\n    \
             if (div != ({t})0) {{ {t} q = floor(div); if (div - q > {half}) q = q + ({t})1; return q; }}\n    \
             return copysign(({t})0, a / b);"
        ),
        Opcode::Remainder => format!(
            "if (b == ({t})0) return fmod(a, b);\n    {t} m = fmod(a, b);\n    \
             if (m != ({t})0) {{ if ((b < ({t})0) != (m < ({t})0)) m = m + b; }} else m = copysign(({t})0, b);\n    \
             return m;"
        ),
        _ => unreachable!("no float helper for {op}"),
    };
    format!("{t} {name}({t} a, {t} b) {{\n    {body}\n}}\n")
}

/// The expression of a binary opcode on two operands of dtype `d` (cheap expressions without
/// side effects: loads, registers, literals), or `None` when the device code does not implement
/// it (the instruction then goes to the fallback).
fn binary(op: Opcode, d: DType, a: &str, b: &str, h: &mut Helpers) -> Option<String> {
    let t = ctype(d);
    let int = d.is_integer();
    let float = d.is_float();
    let wrap = |o: &str| {
        let (w, u) = (wide_unsigned(d), unsigned(d));
        format!("(({t})(({w})({u})({a}) {o} ({w})({u})({b})))")
    };
    Some(match op {
        Opcode::Add if int => wrap("+"),
        Opcode::Subtract if int => wrap("-"),
        Opcode::Multiply if int => wrap("*"),
        Opcode::Add | Opcode::Subtract | Opcode::Multiply | Opcode::Divide if float => {
            let o = match op {
                Opcode::Add => "+",
                Opcode::Subtract => "-",
                Opcode::Multiply => "*",
                _ => "/",
            };
            format!("(({a}) {o} ({b}))")
        }
        Opcode::FloorDivide
        | Opcode::Remainder
        | Opcode::Fmod
        | Opcode::Power
        | Opcode::LeftShift
        | Opcode::RightShift
            if int =>
        {
            h.call(format!("vm_{}_{t}", op.name()), || int_helper(op, d), &[a, b])
        }
        Opcode::FloorDivide | Opcode::Remainder if float => {
            h.call(format!("vm_{}_{t}", op.name()), || float_helper(op, d), &[a, b])
        }
        Opcode::Fmod if float => format!("fmod({a}, {b})"),
        Opcode::Power if float => format!("pow({a}, {b})"),
        Opcode::Arctan2 if float => format!("atan2({a}, {b})"),
        Opcode::Hypot if float => format!("hypot({a}, {b})"),
        Opcode::Copysign if float => format!("copysign({a}, {b})"),
        Opcode::Maximum if int => format!("(({a}) > ({b}) ? ({a}) : ({b}))"),
        Opcode::Minimum if int => format!("(({a}) < ({b}) ? ({a}) : ({b}))"),
        Opcode::Maximum if float => format!("((({a}) >= ({b}) || isnan({a})) ? ({a}) : ({b}))"),
        Opcode::Minimum if float => format!("((({a}) <= ({b}) || isnan({a})) ? ({a}) : ({b}))"),
        Opcode::Fmax if float => format!("((({a}) >= ({b}) || isnan({b})) ? ({a}) : ({b}))"),
        Opcode::Fmin if float => format!("((({a}) <= ({b}) || isnan({b})) ? ({a}) : ({b}))"),
        Opcode::Equal => format!("((uchar)(({a}) == ({b})))"),
        Opcode::NotEqual => format!("((uchar)(({a}) != ({b})))"),
        Opcode::Less => format!("((uchar)(({a}) < ({b})))"),
        Opcode::LessEqual => format!("((uchar)(({a}) <= ({b})))"),
        Opcode::Greater => format!("((uchar)(({a}) > ({b})))"),
        Opcode::GreaterEqual => format!("((uchar)(({a}) >= ({b})))"),
        Opcode::LogicalAnd => format!("((uchar)((({a}) != 0) && (({b}) != 0)))"),
        Opcode::LogicalOr => format!("((uchar)((({a}) != 0) || (({b}) != 0)))"),
        Opcode::LogicalXor => format!("((uchar)((({a}) != 0) != (({b}) != 0)))"),
        Opcode::BitwiseAnd if !float => format!("(({t})(({a}) & ({b})))"),
        Opcode::BitwiseOr if !float => format!("(({t})(({a}) | ({b})))"),
        Opcode::BitwiseXor if !float => format!("(({t})(({a}) ^ ({b})))"),
        _ => return None,
    })
}

/// The expression of a unary opcode from dtype `d` to dtype `to` (they differ for `identity`
/// casts and the predicates), or `None` when not implemented on the device.
fn unary(op: Opcode, d: DType, to: DType, a: &str, h: &mut Helpers) -> Option<String> {
    let t = ctype(d);
    let float = d.is_float();
    let int = d.is_integer();
    let (w, u) = (wide_unsigned(d), unsigned(d));
    let f = |name: &str| format!("{name}({a})");
    Some(match op {
        Opcode::Identity => cast(d, to, a),
        Opcode::Negative if int => format!("(({t})(({w})0 - ({w})({u})({a})))"),
        Opcode::Negative if float => format!("(-({a}))"),
        Opcode::Square if int => binary(Opcode::Multiply, d, a, a, h)?,
        Opcode::Square if float => format!("(({a}) * ({a}))"),
        Opcode::Absolute if int && is_signed(d) => format!("(({a}) < 0 ? ({t})(({w})0 - ({w})({u})({a})) : ({a}))"),
        Opcode::Absolute if int => format!("({a})"),
        Opcode::Absolute if float => f("fabs"),
        Opcode::Sign if int && is_signed(d) => format!("(({a}) < 0 ? ({t})-1 : (({a}) == 0 ? ({t})0 : ({t})1))"),
        Opcode::Sign if int => format!("(({a}) == 0 ? ({t})0 : ({t})1)"),
        Opcode::Sign if float => {
            format!("(({a}) > ({t})0 ? ({t})1 : (({a}) < ({t})0 ? ({t})-1 : (({a}) == ({t})0 ? ({t})0 : ({a}))))")
        }
        Opcode::Reciprocal if float => format!("(({t})1 / ({a}))"),
        Opcode::Deg2rad if d == DType::F32 => format!("(({a}) * {})", literal(Scalar::F32(1f32.to_radians()))),
        Opcode::Deg2rad if float => format!("(({a}) * {})", literal(Scalar::F64(1f64.to_radians()))),
        Opcode::Rad2deg if d == DType::F32 => format!("(({a}) * {})", literal(Scalar::F32(1f32.to_degrees()))),
        Opcode::Rad2deg if float => format!("(({a}) * {})", literal(Scalar::F64(1f64.to_degrees()))),
        Opcode::Isnan if float => format!("((uchar)(isnan({a}) ? 1 : 0))"),
        Opcode::Isinf if float => format!("((uchar)(isinf({a}) ? 1 : 0))"),
        Opcode::Isfinite if float => format!("((uchar)(isfinite({a}) ? 1 : 0))"),
        Opcode::Signbit if float => format!("((uchar)(signbit({a}) ? 1 : 0))"),
        Opcode::LogicalNot => format!("((uchar)(({a}) == 0))"),
        Opcode::Invert if d == DType::Bool => format!("((uchar)(({a}) == 0))"),
        Opcode::Invert if int => format!("(({t})(~({a})))"),
        op if float => f(float_function(op)?),
        _ => return None,
    })
}

/// The OpenCL C built-in computing a float math opcode.
fn float_function(op: Opcode) -> Option<&'static str> {
    Some(match op {
        Opcode::Sqrt => "sqrt",
        Opcode::Cbrt => "cbrt",
        Opcode::Exp => "exp",
        Opcode::Exp2 => "exp2",
        Opcode::Expm1 => "expm1",
        Opcode::Log => "log",
        Opcode::Log2 => "log2",
        Opcode::Log10 => "log10",
        Opcode::Log1p => "log1p",
        Opcode::Sin => "sin",
        Opcode::Cos => "cos",
        Opcode::Tan => "tan",
        Opcode::Arcsin => "asin",
        Opcode::Arccos => "acos",
        Opcode::Arctan => "atan",
        Opcode::Sinh => "sinh",
        Opcode::Cosh => "cosh",
        Opcode::Tanh => "tanh",
        Opcode::Arcsinh => "asinh",
        Opcode::Arccosh => "acosh",
        Opcode::Arctanh => "atanh",
        Opcode::Floor => "floor",
        Opcode::Ceil => "ceil",
        Opcode::Trunc => "trunc",
        Opcode::Rint => "rint",
        _ => return None,
    })
}

/// True when the device result of `op` on floats may differ from a correctly rounded one by a
/// few ulp (the OpenCL built-in's documented error bound); every other opcode the device runs
/// gives exactly the reference engine's bits.
pub fn is_approximate(op: Opcode) -> bool {
    matches!(op, Opcode::Power | Opcode::Arctan2 | Opcode::Hypot)
        || (float_function(op).is_some()
            && !matches!(op, Opcode::Sqrt | Opcode::Floor | Opcode::Ceil | Opcode::Trunc | Opcode::Rint))
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
        format!("convert_{t}_sat_rtz({a})")
    } else if from.is_integer() && to.is_integer() {
        format!("(({t})({})({a}))", unsigned(to))
    } else {
        format!("(({t})({a}))")
    }
}

/// The expression that produces element `pos` (the row-major position, a `ulong`) of
/// `range`/`random` output of dtype `d`.
fn generator(instr: &Instruction, d: DType) -> Option<String> {
    match instr.opcode {
        Opcode::Range => Some(cast(DType::U64, d, "pos")),
        Opcode::Random => {
            let (Some(Scalar::U64(seed)), Some(Scalar::U64(offset))) =
                (instr.operands.get(1)?.as_const(), instr.operands.get(2)?.as_const())
            else {
                return None;
            };
            let bits = format!("vm_random_bits(0x{seed:x}UL, 0x{offset:x}UL + pos)");
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

/// Philox4x32-10, bit-identical to [`vm_core::random::random_bits`].
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

/// The parameter list: every base, then every scratch buffer.
fn params(args: &Args, scratch: &[(Scratch, &str)]) -> String {
    let mut p: Vec<String> =
        args.bases.iter().enumerate().map(|(k, b)| format!("__global {}* restrict b{k}", ctype(b.dtype))).collect();
    p.extend(scratch.iter().enumerate().map(|(k, (_, t))| format!("__global {t}* s{k}")));
    p.join(", ")
}

/// Lines splitting `pos` (a `ulong` expression) into the row-major indices `{prefix}0..` of `shape`.
fn split_index(text: &mut String, prefix: &str, pos: &str, shape: &[usize]) {
    let _ = writeln!(text, "    ulong {prefix}r = {pos};");
    for d in (0..shape.len()).rev() {
        let s = shape[d].max(1);
        let _ = writeln!(text, "    long {prefix}{d} = (long)({prefix}r % {s}UL); {prefix}r /= {s}UL;");
    }
    let _ = writeln!(text, "    (void){prefix}r;");
}

/// The element offset of `v` at indices `vars` (one per dimension of `v`).
fn offset(v: &View, vars: &[String]) -> String {
    let mut e = format!("{}L", v.start);
    for (s, x) in v.stride.iter().zip(vars) {
        if *s != 0 {
            let _ = write!(e, " + {x} * {s}L");
        }
    }
    e
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|d| format!("{prefix}{d}")).collect()
}

fn needs_f64(instr: &Instruction) -> bool {
    instr.operands.iter().any(|o| o.dtype() == DType::F64)
}

/// Builds the source of an element-wise `kernel` (positions into `batch`), or `None` when some
/// instruction or dtype is not implemented on the device (f64 without `fp64`, reductions, ...).
pub fn generate(batch: &[Instruction], kernel: &Kernel, fp64: bool) -> Option<Source> {
    let mut args = Args::default();
    let mut helpers = Helpers::default();
    let mut written = Vec::new();
    let mut body = String::new();
    let mut uses_f64 = false;
    let mut uses_random = false;
    let mut temps_declared = Vec::new();
    let ndim = kernel.shape.len();
    let vars = names("i", ndim);
    let mut opcodes = Vec::new();
    for &p in &kernel.instrs {
        let instr = &batch[p];
        opcodes.push(instr.opcode);
        uses_f64 |= needs_f64(instr);
        let operand = |o: &Operand, args: &mut Args| -> Option<String> {
            match o {
                Operand::Const(s) => Some(literal(*s)),
                Operand::View(v) if kernel.temps.contains(&v.base.id) => Some(format!("t{}", v.base.id.0)),
                Operand::View(v) => {
                    if v.ndim() != ndim {
                        return None;
                    }
                    Some(format!("{}[{}]", args.of(v.base), offset(v, &vars)))
                }
            }
        };
        let out = instr.output()?;
        let d_out = out.dtype();
        let expr = match instr.opcode.kind() {
            Kind::Unary => {
                let a = operand(&instr.operands[1], &mut args)?;
                unary(instr.opcode, instr.operands[1].dtype(), d_out, &a, &mut helpers)?
            }
            Kind::Binary => {
                let a = operand(&instr.operands[1], &mut args)?;
                let b = operand(&instr.operands[2], &mut args)?;
                binary(instr.opcode, instr.operands[1].dtype(), &a, &b, &mut helpers)?
            }
            Kind::Select => {
                let c = operand(&instr.operands[1], &mut args)?;
                let a = operand(&instr.operands[2], &mut args)?;
                let b = operand(&instr.operands[3], &mut args)?;
                format!("(({c}) != 0 ? ({a}) : ({b}))")
            }
            Kind::Range | Kind::Random => {
                uses_random |= instr.opcode == Opcode::Random;
                generator(instr, d_out)?
            }
            _ => return None,
        };
        let target = operand(&Operand::View(out.clone()), &mut args)?;
        if kernel.temps.contains(&out.base.id) {
            if !temps_declared.contains(&out.base.id) {
                temps_declared.push(out.base.id);
                let _ = writeln!(body, "    {} {target};", ctype(d_out));
            }
        } else if !written.contains(&out.base.id) {
            written.push(out.base.id);
        }
        let _ = writeln!(body, "    {target} = {expr};");
    }
    if uses_f64 && !fp64 {
        return None;
    }
    let n: usize = kernel.shape.iter().product();
    let mut text = prelude(uses_f64, &helpers, uses_random);
    let _ = writeln!(text, "__kernel void {KERNEL_NAME}({}) {{", params(&args, &[]));
    let _ = writeln!(text, "    ulong pos = get_global_id(0);\n    if (pos >= {n}UL) return;");
    split_index(&mut text, "i", "pos", &kernel.shape);
    text.push_str(&body);
    text.push_str("}\n");
    Some(Source {
        text,
        args: args.bases,
        scratch: Vec::new(),
        launches: vec![Launch { name: KERNEL_NAME, items: n, group: None }],
        check_first: false,
        written,
        opcodes,
    })
}

/// The combining expression of reduction or scan `op` on two values of `d` (the output dtype).
fn combine(op: Opcode, d: DType, a: &str, b: &str, h: &mut Helpers) -> Option<String> {
    binary(op.combiner()?, d, a, b, h)
}

/// Builds the source of one reduction with a nonempty axis: one work item per output element
/// folding the axis in order (axes up to [`SERIAL_REDUCE_MAX`] long, bit-identical to the
/// reference engine), or a deterministic parallel tree reduction in work-group local memory,
/// in two stages when there are too few output elements to keep the device busy. `None` when
/// the device cannot run it (f64 without `fp64`, output overlapping the input).
pub fn generate_reduce(instr: &Instruction, fp64: bool, plan: ReducePlan) -> Option<Source> {
    let (out, input, axis) = (instr.output()?, instr.operands.get(1)?.as_view()?, instr.axis()?);
    let (d, d_out) = (input.dtype(), out.dtype());
    if needs_f64(instr) && !fp64 || axis >= input.ndim() || out.ndim() + 1 != input.ndim() {
        return None;
    }
    if out.base.id == input.base.id && out.overlap(input) != vm_core::Overlap::Disjoint {
        return None;
    }
    let len = input.shape[axis];
    let m = out.nelem();
    if len == 0 || m == 0 {
        return None;
    }
    let mut h = Helpers::default();
    let step = combine(instr.opcode, d_out, "x", "y", &mut h)?;
    let to = ctype(d_out);
    let load = |e: &str| {
        if matches!(instr.opcode.type_rule(), TypeRule::ToBool(_)) { cast(d, DType::Bool, e) } else { e.to_string() }
    };
    let mut args = Args::default();
    let (ob, ib) = (args.of(out.base), args.of(input.base));
    // The input's offset for output indices o0.. and axis position `k`.
    let ovars = names("o", out.ndim());
    let mut ivars: Vec<String> = ovars.clone();
    ivars.insert(axis, "0".into());
    let in_base = offset(input, &ivars);
    let at = |k: &str| load(&format!("{ib}[ibase + ({k}) * {}L]", input.stride[axis]));
    let out_at = format!("{ob}[{}]", offset(out, &ovars));
    let fold = format!("{to} vm_combine({to} x, {to} y) {{ return {step}; }}\n");
    let opcodes = vec![instr.opcode];
    if len <= SERIAL_REDUCE_MAX || plan.group < 2 {
        let mut text = prelude(needs_f64(instr), &h, false);
        text.push_str(&fold);
        let _ = writeln!(text, "__kernel void {KERNEL_NAME}({}) {{", params(&args, &[]));
        let _ = writeln!(text, "    ulong pos = get_global_id(0);\n    if (pos >= {m}UL) return;");
        split_index(&mut text, "o", "pos", &out.shape);
        let _ = writeln!(text, "    long ibase = {in_base};");
        let _ = writeln!(text, "    {to} acc = {};", at("0"));
        let _ = writeln!(text, "    for (long k = 1; k < {len}L; k++) acc = vm_combine(acc, {});", at("k"));
        let _ = writeln!(text, "    {out_at} = acc;\n}}");
        return Some(Source {
            text,
            args: args.bases,
            scratch: Vec::new(),
            launches: vec![Launch { name: KERNEL_NAME, items: m, group: None }],
            check_first: false,
            written: vec![out.base.id],
            opcodes,
        });
    }
    let w = plan.group;
    // Chunks per output element: enough work groups to keep the device busy, each chunk at least
    // one work group's worth of elements.
    let chunks = if m >= plan.target_groups { 1 } else { plan.target_groups.div_ceil(m).min(len.div_ceil(w)).max(1) };
    let scratch =
        if chunks > 1 { vec![(Scratch { bytes: m * chunks * d_out.size(), fill: 0 }, to)] } else { Vec::new() };
    let mut text = prelude(needs_f64(instr), &h, false);
    text.push_str(&fold);
    // The tree over the work group's values; `have` marks work items that saw an element, so no
    // identity value is needed (a sum of one -0.0 stays -0.0).
    let tree = format!(
        "    __local {to} sv[{w}];\n    __local uchar sh[{w}];\n    sv[lid] = acc; sh[lid] = have;\n    \
         barrier(CLK_LOCAL_MEM_FENCE);\n    for (uint s = {half}; s > 0; s >>= 1) {{\n        \
         if (lid < s && sh[lid + s]) {{ sv[lid] = sh[lid] ? vm_combine(sv[lid], sv[lid + s]) : sv[lid + s]; sh[lid] = 1; }}\n        \
         barrier(CLK_LOCAL_MEM_FENCE);\n    }}\n",
        half = w / 2
    );
    let attr = format!("__attribute__((reqd_work_group_size({w}, 1, 1)))");
    let p = params(&args, &scratch);
    let _ = writeln!(text, "__kernel {attr} void {KERNEL_NAME}({p}) {{");
    let _ = writeln!(text, "    ulong g = get_group_id(0);\n    uint lid = (uint)get_local_id(0);");
    let _ = writeln!(text, "    ulong c = g % {chunks}UL;");
    split_index(&mut text, "o", &format!("g / {chunks}UL"), &out.shape);
    let _ = writeln!(text, "    long ibase = {in_base};");
    let _ =
        writeln!(text, "    long lo = (long)(c * {len}UL / {chunks}UL), hi = (long)((c + 1) * {len}UL / {chunks}UL);");
    let _ = writeln!(text, "    {to} acc = 0; uchar have = 0;");
    let _ = writeln!(
        text,
        "    for (long k = lo + lid; k < hi; k += {w}L) {{ {to} v = {}; acc = have ? vm_combine(acc, v) : v; have = 1; }}",
        at("k")
    );
    text.push_str(&tree);
    if chunks == 1 {
        let _ = writeln!(text, "    if (lid == 0) {out_at} = sv[0];\n}}");
    } else {
        let _ = writeln!(text, "    if (lid == 0) s0[g] = sv[0];\n}}");
        let _ = writeln!(text, "__kernel {attr} void vm_kernel2({p}) {{");
        let _ = writeln!(text, "    ulong g = get_group_id(0);\n    uint lid = (uint)get_local_id(0);");
        split_index(&mut text, "o", "g", &out.shape);
        let _ = writeln!(text, "    {to} acc = 0; uchar have = 0;");
        let _ = writeln!(
            text,
            "    for (ulong k = lid; k < {chunks}UL; k += {w}UL) {{ {to} v = s0[g * {chunks}UL + k]; acc = have ? vm_combine(acc, v) : v; have = 1; }}"
        );
        text.push_str(&tree);
        let _ = writeln!(text, "    if (lid == 0) {out_at} = sv[0];\n}}");
    }
    let mut launches = vec![Launch { name: KERNEL_NAME, items: m * chunks * w, group: Some(w) }];
    if chunks > 1 {
        launches.push(Launch { name: "vm_kernel2", items: m * w, group: Some(w) });
    }
    Some(Source {
        text,
        args: args.bases,
        scratch: scratch.into_iter().map(|(s, _)| s).collect(),
        launches,
        check_first: false,
        written: vec![out.base.id],
        opcodes,
    })
}

/// Builds the source of a scan: one work item per line along the axis, in order (bit-identical
/// to the reference engine). `None` when the device cannot run it.
pub fn generate_accumulate(instr: &Instruction, fp64: bool) -> Option<Source> {
    let (out, input, axis) = (instr.output()?, instr.operands.get(1)?.as_view()?, instr.axis()?);
    if needs_f64(instr) && !fp64 || axis >= input.ndim() || instr.output_partially_overlaps_input() {
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
    let (ob, ib) = (args.of(out.base), args.of(input.base));
    let mut vars = names("o", lines_shape.len());
    vars.insert(axis, "0".into());
    let (ibase, obase) = (offset(input, &vars), offset(out, &vars));
    let (si, so) = (input.stride[axis], out.stride[axis]);
    let to = ctype(d);
    let mut text = prelude(needs_f64(instr), &h, false);
    let _ = writeln!(text, "__kernel void {KERNEL_NAME}({}) {{", params(&args, &[]));
    let _ = writeln!(text, "    ulong pos = get_global_id(0);\n    if (pos >= {m}UL || {len} == 0) return;");
    split_index(&mut text, "o", "pos", &lines_shape);
    let _ = writeln!(text, "    long ib = {ibase}, ob = {obase};");
    let _ = writeln!(text, "    {to} acc = {ib}[ib];\n    {ob}[ob] = acc;");
    let _ = writeln!(
        text,
        "    for (long k = 1; k < {len}L; k++) {{ {to} x = {ib}[ib + k * {si}L]; acc = {step}; {ob}[ob + k * {so}L] = acc; }}\n}}"
    );
    Some(Source {
        text,
        args: args.bases,
        scratch: Vec::new(),
        launches: vec![Launch { name: KERNEL_NAME, items: m, group: None }],
        check_first: false,
        written: vec![out.base.id],
        opcodes: vec![instr.opcode],
    })
}

/// The check kernel of gather/scatter: sets `s0[0]` when an index is outside `0..len`.
fn index_check(text: &mut String, p: &str, index: &View, xb: &str, len: usize) {
    let n = index.nelem();
    let _ = writeln!(text, "__kernel void vm_check({p}) {{");
    let _ = writeln!(text, "    ulong pos = get_global_id(0);\n    if (pos >= {n}UL) return;");
    split_index(text, "i", "pos", &index.shape);
    let _ = writeln!(text, "    {} k = {xb}[{}];", ctype(index.dtype()), offset(index, &names("i", index.ndim())));
    let neg = if is_signed(index.dtype()) { "k < 0 || " } else { "" };
    let _ = writeln!(text, "    if ({neg}(ulong)k >= {len}UL) s0[0] = 1u;\n}}");
}

/// Builds the source of `gather out, src, index`: a check launch, then one work item per output
/// element. `None` when the device cannot run it (the output shares a base with an input, f64
/// without `fp64`).
pub fn generate_gather(instr: &Instruction, fp64: bool) -> Option<Source> {
    let (out, src, index) = (instr.output()?, instr.operands.get(1)?.as_view()?, instr.operands.get(2)?.as_view()?);
    if needs_f64(instr) && !fp64
        || out.base.id == src.base.id
        || out.base.id == index.base.id
        || index.shape != out.shape
    {
        return None;
    }
    let mut args = Args::default();
    let (ob, sb, xb) = (args.of(out.base), args.of(src.base), args.of(index.base));
    let scratch = [(Scratch { bytes: 4, fill: 0 }, "uint")];
    let p = params(&args, &scratch);
    let mut text = prelude(needs_f64(instr), &Helpers::default(), false);
    index_check(&mut text, &p, index, &xb, src.nelem());
    let n = out.nelem();
    let _ = writeln!(text, "__kernel void {KERNEL_NAME}({p}) {{");
    let _ = writeln!(text, "    ulong pos = get_global_id(0);\n    if (pos >= {n}UL) return;");
    split_index(&mut text, "i", "pos", &out.shape);
    let iv = names("i", out.ndim());
    let _ = writeln!(text, "    ulong k = (ulong){xb}[{}];", offset(index, &iv));
    split_index(&mut text, "j", "k", &src.shape);
    let _ = writeln!(text, "    {ob}[{}] = {sb}[{}];\n}}", offset(out, &iv), offset(src, &names("j", src.ndim())));
    Some(Source {
        text,
        args: args.bases,
        scratch: vec![scratch[0].0],
        launches: vec![
            Launch { name: "vm_check", items: n, group: None },
            Launch { name: KERNEL_NAME, items: n, group: None },
        ],
        check_first: true,
        written: vec![out.base.id],
        opcodes: vec![instr.opcode],
    })
}

/// Builds the source of `scatter dst, src, index`: a check launch, a launch that finds the last
/// position writing each destination element (an `atomic_max` per element), then one work item
/// per source element that writes only where it is that last one. `None` when the device cannot
/// run it (inputs sharing the destination's base, 2^31 or more source elements, f64 without
/// `fp64`).
pub fn generate_scatter(instr: &Instruction, fp64: bool) -> Option<Source> {
    let (dst, src, index) = (instr.output()?, instr.operands.get(1)?, instr.operands.get(2)?.as_view()?);
    let n = index.nelem();
    if needs_f64(instr) && !fp64
        || dst.base.id == index.base.id
        || src.as_view().is_some_and(|v| v.base.id == dst.base.id || v.shape != index.shape)
        || n >= (1 << 31)
    {
        return None;
    }
    let mut args = Args::default();
    let (db, xb) = (args.of(dst.base), args.of(index.base));
    let iv = names("i", index.ndim());
    let value = match src {
        Operand::Const(s) => literal(*s),
        Operand::View(v) => format!("{}[{}]", args.of(v.base), offset(v, &iv)),
    };
    let len = dst.nelem();
    let scratch = [(Scratch { bytes: 4, fill: 0 }, "uint"), (Scratch { bytes: 4 * len.max(1), fill: 0xff }, "int")];
    let p = params(&args, &scratch);
    let mut text = prelude(needs_f64(instr), &Helpers::default(), false);
    index_check(&mut text, &p, index, &xb, len);
    for (name, body) in [
        ("vm_last", "atomic_max(&s1[k], (int)pos);".to_string()),
        (KERNEL_NAME, format!("if (s1[k] == (int)pos) {db}[{}] = {value};", offset(dst, &names("d", dst.ndim())))),
    ] {
        let _ = writeln!(text, "__kernel void {name}({p}) {{");
        let _ = writeln!(text, "    ulong pos = get_global_id(0);\n    if (pos >= {n}UL) return;");
        split_index(&mut text, "i", "pos", &index.shape);
        let _ = writeln!(text, "    ulong k = (ulong){xb}[{}];", offset(index, &iv));
        if name == KERNEL_NAME {
            split_index(&mut text, "d", "k", &dst.shape);
        }
        let _ = writeln!(text, "    {body}\n}}");
    }
    Some(Source {
        text,
        args: args.bases,
        scratch: scratch.iter().map(|(s, _)| *s).collect(),
        launches: vec![
            Launch { name: "vm_check", items: n, group: None },
            Launch { name: "vm_last", items: n, group: None },
            Launch { name: KERNEL_NAME, items: n, group: None },
        ],
        check_first: true,
        written: vec![dst.base.id],
        opcodes: vec![instr.opcode],
    })
}
