//! OpenCL C for one fused kernel of [`vm_core::kernel::partition`].
//!
//! One work item per position of the kernel's iteration space: it splits its global id into a
//! row-major index, computes every instruction of the kernel in order, keeps contracted
//! temporaries in private variables and stores every other output once. View layouts (start,
//! strides) and constants are written into the source, so the source is the program cache key.

use std::collections::HashMap;
use std::fmt::Write;
use vm_core::kernel::Kernel;
use vm_core::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Scalar, View};

/// The generated source of one kernel and the bases its arguments bind, in argument order.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// OpenCL C text; the kernel function is named [`KERNEL_NAME`].
    pub text: String,
    /// The bases bound to arguments 0.., each a `__global` pointer of its dtype.
    pub args: Vec<Base>,
    /// Bases written by the kernel (to mark device-newer afterwards).
    pub written: Vec<BaseId>,
    /// The kernel's opcodes, for error messages.
    pub opcodes: Vec<Opcode>,
}

/// The name of the generated kernel function.
pub const KERNEL_NAME: &str = "vm_kernel";

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

/// A constant as an exact OpenCL C expression of its dtype.
fn literal(s: Scalar) -> String {
    match s {
        Scalar::F32(x) => format!("as_float(0x{:08x}u)", x.to_bits()),
        Scalar::F64(x) => format!("as_double(0x{:016x}UL)", x.to_bits()),
        Scalar::Bool(b) => format!("((uchar){})", u8::from(b)),
        s => format!("(({})0x{:x}UL)", ctype(s.dtype()), s.to_payload()),
    }
}

/// The expression of a binary opcode on two operands of dtype `d`, or `None` when the device
/// code does not implement it (the instruction then goes to the fallback).
fn binary(op: Opcode, d: DType, a: &str, b: &str) -> Option<String> {
    let t = ctype(d);
    let int = d.is_integer();
    let wrap = |o: &str| {
        let (w, u) = (wide_unsigned(d), unsigned(d));
        format!("(({t})(({w})({u})({a}) {o} ({w})({u})({b})))")
    };
    Some(match op {
        Opcode::Add if int => wrap("+"),
        Opcode::Subtract if int => wrap("-"),
        Opcode::Multiply if int => wrap("*"),
        Opcode::Add | Opcode::Subtract | Opcode::Multiply | Opcode::Divide if d.is_float() => {
            let o = match op {
                Opcode::Add => "+",
                Opcode::Subtract => "-",
                Opcode::Multiply => "*",
                _ => "/",
            };
            format!("(({a}) {o} ({b}))")
        }
        Opcode::Maximum if int => format!("(({a}) > ({b}) ? ({a}) : ({b}))"),
        Opcode::Minimum if int => format!("(({a}) < ({b}) ? ({a}) : ({b}))"),
        Opcode::Maximum if d.is_float() => format!("((({a}) >= ({b}) || isnan({a})) ? ({a}) : ({b}))"),
        Opcode::Minimum if d.is_float() => format!("((({a}) <= ({b}) || isnan({a})) ? ({a}) : ({b}))"),
        Opcode::Equal => format!("((uchar)(({a}) == ({b})))"),
        Opcode::NotEqual => format!("((uchar)(({a}) != ({b})))"),
        Opcode::Less => format!("((uchar)(({a}) < ({b})))"),
        Opcode::LessEqual => format!("((uchar)(({a}) <= ({b})))"),
        Opcode::Greater => format!("((uchar)(({a}) > ({b})))"),
        Opcode::GreaterEqual => format!("((uchar)(({a}) >= ({b})))"),
        Opcode::LogicalAnd => format!("((uchar)((({a}) != 0) && (({b}) != 0)))"),
        Opcode::LogicalOr => format!("((uchar)((({a}) != 0) || (({b}) != 0)))"),
        Opcode::LogicalXor => format!("((uchar)((({a}) != 0) != (({b}) != 0)))"),
        Opcode::BitwiseAnd if !d.is_float() => format!("(({t})(({a}) & ({b})))"),
        Opcode::BitwiseOr if !d.is_float() => format!("(({t})(({a}) | ({b})))"),
        Opcode::BitwiseXor if !d.is_float() => format!("(({t})(({a}) ^ ({b})))"),
        _ => return None,
    })
}

/// The expression of a unary opcode from dtype `d` to dtype `to` (they differ for `identity`
/// casts and the predicates), or `None` when not implemented on the device.
fn unary(op: Opcode, d: DType, to: DType, a: &str) -> Option<String> {
    let t = ctype(d);
    let float = d.is_float();
    Some(match op {
        Opcode::Identity => cast(d, to, a),
        Opcode::Negative if d.is_integer() => {
            let w = wide_unsigned(d);
            format!("(({t})(({w})0 - ({w})({})({a})))", unsigned(d))
        }
        Opcode::Negative if float => format!("(-({a}))"),
        Opcode::Square if d.is_integer() => binary(Opcode::Multiply, d, a, a)?,
        Opcode::Square if float => format!("(({a}) * ({a}))"),
        Opcode::Absolute if float => format!("fabs({a})"),
        Opcode::Reciprocal if float => format!("(({t})1 / ({a}))"),
        Opcode::Sqrt if float => format!("sqrt({a})"),
        Opcode::Floor if float => format!("floor({a})"),
        Opcode::Ceil if float => format!("ceil({a})"),
        Opcode::Trunc if float => format!("trunc({a})"),
        Opcode::Isnan if float => format!("((uchar)(isnan({a}) ? 1 : 0))"),
        Opcode::Isinf if float => format!("((uchar)(isinf({a}) ? 1 : 0))"),
        Opcode::Isfinite if float => format!("((uchar)(isfinite({a}) ? 1 : 0))"),
        Opcode::Signbit if float => format!("((uchar)(signbit({a}) ? 1 : 0))"),
        Opcode::LogicalNot => format!("((uchar)(({a}) == 0))"),
        Opcode::Invert if d == DType::Bool => format!("((uchar)(({a}) == 0))"),
        Opcode::Invert if d.is_integer() => format!("(({t})(~({a})))"),
        _ => return None,
    })
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

/// Builds the source of `kernel` (positions into `batch`), or `None` when some instruction or
/// dtype is not implemented on the device (f64 without `fp64`, reductions, ...).
pub fn generate(batch: &[Instruction], kernel: &Kernel, fp64: bool) -> Option<Source> {
    let mut args: Vec<Base> = Vec::new();
    let mut arg_of: HashMap<BaseId, usize> = HashMap::new();
    let mut written = Vec::new();
    let mut body = String::new();
    let mut uses_f64 = false;
    let mut uses_random = false;
    let mut temps_declared = Vec::new();
    let ndim = kernel.shape.len();
    let index = |v: &View| {
        let mut e = format!("{}L", v.start);
        for (d, s) in v.stride.iter().enumerate() {
            if *s != 0 {
                let _ = write!(e, " + i{d} * {s}L");
            }
        }
        e
    };
    let mut opcodes = Vec::new();
    for &p in &kernel.instrs {
        let instr = &batch[p];
        opcodes.push(instr.opcode);
        for o in &instr.operands {
            uses_f64 |= o.dtype() == DType::F64;
        }
        let mut operand = |o: &Operand, args: &mut Vec<Base>| -> Option<String> {
            match o {
                Operand::Const(s) => Some(literal(*s)),
                Operand::View(v) if kernel.temps.contains(&v.base.id) => Some(format!("t{}", v.base.id.0)),
                Operand::View(v) => {
                    if v.ndim() != ndim {
                        return None;
                    }
                    let k = *arg_of.entry(v.base.id).or_insert_with(|| {
                        args.push(v.base);
                        args.len() - 1
                    });
                    Some(format!("b{k}[{}]", index(v)))
                }
            }
        };
        let out = instr.output()?;
        let d_out = out.dtype();
        let expr = match instr.opcode.kind() {
            Kind::Unary => {
                let a = operand(&instr.operands[1], &mut args)?;
                unary(instr.opcode, instr.operands[1].dtype(), d_out, &a)?
            }
            Kind::Binary => {
                let a = operand(&instr.operands[1], &mut args)?;
                let b = operand(&instr.operands[2], &mut args)?;
                binary(instr.opcode, instr.operands[1].dtype(), &a, &b)?
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
    let mut text = String::from("#pragma OPENCL FP_CONTRACT OFF\n");
    if uses_f64 {
        text.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    if uses_random {
        text.push_str(PHILOX);
    }
    let params: Vec<String> =
        args.iter().enumerate().map(|(k, b)| format!("__global {}* restrict b{k}", ctype(b.dtype))).collect();
    let _ = writeln!(
        text,
        "__kernel void {KERNEL_NAME}({}{}ulong n) {{",
        params.join(", "),
        if args.is_empty() { "" } else { ", " }
    );
    text.push_str("    ulong pos = get_global_id(0);\n    if (pos >= n) return;\n    ulong r = pos;\n");
    for d in (0..ndim).rev() {
        let _ = writeln!(
            text,
            "    long i{d} = (long)(r % {}UL); r /= {}UL;",
            kernel.shape[d].max(1),
            kernel.shape[d].max(1)
        );
    }
    text.push_str("    (void)r;\n");
    text.push_str(&body);
    text.push_str("}\n");
    Some(Source { text, args, written, opcodes })
}

/// Builds the source of a kernel made of one reduction: one work item per output element folds
/// the reduced axis in order from its first element, exactly as the reference engine does.
pub fn generate_reduce(instr: &Instruction, fp64: bool) -> Option<Source> {
    let combiner = instr.opcode.combiner()?;
    let (out, input, axis) = (instr.output()?, instr.operands.get(1)?.as_view()?, instr.axis()?);
    let (d, d_out) = (input.dtype(), out.dtype());
    if (d == DType::F64 || d_out == DType::F64) && !fp64 || axis >= input.ndim() || out.ndim() + 1 != input.ndim() {
        return None;
    }
    if out.base.id == input.base.id {
        return None; // work items would read what others write
    }
    let args = vec![out.base, input.base];
    let inb = "b1";
    let mut text = String::from("#pragma OPENCL FP_CONTRACT OFF\n");
    if d == DType::F64 || d_out == DType::F64 {
        text.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    let params: Vec<String> =
        args.iter().enumerate().map(|(k, b)| format!("__global {}* b{k}", ctype(b.dtype))).collect();
    let _ = writeln!(text, "__kernel void {KERNEL_NAME}({}, ulong n) {{", params.join(", "));
    text.push_str("    ulong pos = get_global_id(0);\n    if (pos >= n) return;\n    ulong r = pos;\n");
    for k in (0..out.ndim()).rev() {
        let s = out.shape[k].max(1);
        let _ = writeln!(text, "    long o{k} = (long)(r % {s}UL); r /= {s}UL;");
    }
    text.push_str("    (void)r;\n");
    let mut out_idx = format!("{}L", out.start);
    let mut in_idx = format!("{}L", input.start);
    for k in 0..out.ndim() {
        let _ = write!(out_idx, " + o{k} * {}L", out.stride[k]);
        let j = if k < axis { k } else { k + 1 };
        let _ = write!(in_idx, " + o{k} * {}L", input.stride[j]);
    }
    let at = |k: &str| format!("{inb}[{in_idx} + ({k}) * {}L]", input.stride[axis]);
    let first = if d_out == DType::Bool && d != DType::Bool { format!("(({}) != 0)", at("0")) } else { at("0") };
    let step = binary(combiner, d, "acc", &at("k"))?;
    let _ = writeln!(text, "    {} acc = ({})({first});", ctype(d_out), ctype(d_out));
    let _ = writeln!(text, "    for (long k = 1; k < {}L; k++) acc = {step};", input.shape[axis]);
    let _ = writeln!(text, "    b0[{out_idx}] = acc;\n}}");
    Some(Source { text, args, written: vec![out.base.id], opcodes: vec![instr.opcode] })
}
