//! Cranelift IR for the operations computed inline, one element at a time: arithmetic,
//! comparisons, logic, bit operations, casts, selects, rounding, and the reduction combiners.
//! Semantics are the opcode table's; every branch-free (selects only), so an operation is one
//! straight run of instructions inside the loop body.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type, Value, types};
use cranelift_frontend::FunctionBuilder;
use vm_ir::semantics::Float;
use vm_ir::{BinaryOp, DType, Error, OpClass, Opcode, Result, UnaryOp};

/// The IR type holding one element of `d` (`bool` is a byte holding 0 or 1).
pub fn ir_type(d: DType) -> Type {
    match d {
        DType::Bool | DType::I8 | DType::U8 => types::I8,
        DType::I16 | DType::U16 => types::I16,
        DType::I32 | DType::U32 => types::I32,
        DType::I64 | DType::U64 => types::I64,
        DType::F32 => types::F32,
        DType::F64 => types::F64,
    }
}

fn fconst(b: &mut FunctionBuilder, d: DType, x: f64) -> Value {
    if d == DType::F32 { b.ins().f32const(x as f32) } else { b.ins().f64const(x) }
}

fn iconst(b: &mut FunctionBuilder, d: DType, x: i64) -> Value {
    b.ins().iconst(ir_type(d), x)
}

/// The truth value (`x != 0`, NaN is true) of an element of `d`, as a 0/1 byte.
pub fn truth(b: &mut FunctionBuilder, d: DType, x: Value) -> Value {
    if d.is_float() {
        let z = fconst(b, d, 0.0);
        b.ins().fcmp(FloatCC::NotEqual, x, z)
    } else {
        b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
    }
}

/// Converts `x` from `from` to `to` with the cast rules of `vm_ir::scalar::Cast` (Rust `as`).
pub fn cast(b: &mut FunctionBuilder, from: DType, to: DType, x: Value) -> Value {
    if from == to {
        return x;
    }
    if to == DType::Bool {
        return truth(b, from, x);
    }
    let (fi, ti) = (from.is_float(), to.is_float());
    let (fw, tw) = (from.size() * 8, to.size() * 8);
    match (fi, ti) {
        (true, true) => {
            if to == DType::F64 {
                b.ins().fpromote(types::F64, x)
            } else {
                b.ins().fdemote(types::F32, x)
            }
        }
        (false, true) => {
            // Widen to 64 bits first, then convert: correctly rounded either way.
            if from.is_signed() {
                let w = if fw < 64 { b.ins().sextend(types::I64, x) } else { x };
                b.ins().fcvt_from_sint(ir_type(to), w)
            } else {
                let w = if fw < 64 { b.ins().uextend(types::I64, x) } else { x };
                b.ins().fcvt_from_uint(ir_type(to), w)
            }
        }
        (true, false) => {
            // Saturating, NaN to 0, then clamp to the target's range.
            if to.is_signed() {
                let w = b.ins().fcvt_to_sint_sat(types::I64, x);
                if tw == 64 {
                    return w;
                }
                let (lo, hi) = (-(1i64 << (tw - 1)), (1i64 << (tw - 1)) - 1);
                let lo = b.ins().iconst(types::I64, lo);
                let hi = b.ins().iconst(types::I64, hi);
                let w = b.ins().smax(w, lo);
                let w = b.ins().smin(w, hi);
                b.ins().ireduce(ir_type(to), w)
            } else {
                let w = b.ins().fcvt_to_uint_sat(types::I64, x);
                if tw == 64 {
                    return w;
                }
                let hi = b.ins().iconst(types::I64, ((1u64 << tw) - 1) as i64);
                let w = b.ins().umin(w, hi);
                b.ins().ireduce(ir_type(to), w)
            }
        }
        (false, false) => {
            if tw < fw {
                b.ins().ireduce(ir_type(to), x)
            } else if tw > fw {
                if from.is_signed() { b.ins().sextend(ir_type(to), x) } else { b.ins().uextend(ir_type(to), x) }
            } else {
                x
            }
        }
    }
}

fn icmp_cc(op: BinaryOp, signed: bool) -> IntCC {
    use BinaryOp as O;
    use IntCC::*;
    match (op, signed) {
        (O::Equal, _) => Equal,
        (O::NotEqual, _) => NotEqual,
        (O::Less, true) => SignedLessThan,
        (O::Less, false) => UnsignedLessThan,
        (O::LessEqual, true) => SignedLessThanOrEqual,
        (O::LessEqual, false) => UnsignedLessThanOrEqual,
        (O::Greater, true) => SignedGreaterThan,
        (O::Greater, false) => UnsignedGreaterThan,
        (O::GreaterEqual, true) => SignedGreaterThanOrEqual,
        _ => UnsignedGreaterThanOrEqual,
    }
}

fn fcmp_cc(op: BinaryOp) -> FloatCC {
    match op {
        BinaryOp::Equal => FloatCC::Equal,
        BinaryOp::NotEqual => FloatCC::NotEqual,
        BinaryOp::Less => FloatCC::LessThan,
        BinaryOp::LessEqual => FloatCC::LessThanOrEqual,
        BinaryOp::Greater => FloatCC::GreaterThan,
        _ => FloatCC::GreaterThanOrEqual,
    }
}

/// NumPy's float `maximum`/`minimum` (`nan_of` = `a`) and `fmax`/`fmin` (`nan_of` = `y`), as
/// [`vm_ir::semantics`] writes them: `a` where `a cc y` holds or `nan_of` is NaN, else `y`.
/// Cranelift's `fmax`/`fmin` order -0.0 below +0.0, where these keep `a` of two equal zeros.
fn numpy_pick(b: &mut FunctionBuilder, cc: FloatCC, a: Value, y: Value, nan_of: Value) -> Value {
    let keep = b.ins().fcmp(cc, a, y);
    let nan = b.ins().fcmp(FloatCC::Unordered, nan_of, nan_of);
    let keep = b.ins().bor(keep, nan);
    b.ins().select(keep, a, y)
}

fn unsupported(op: Opcode, d: DType) -> Error {
    Error::Internal(format!("no inline code for {op} on {d}"))
}

/// Emits `op` on `args`; `d` is the result dtype, `ind` the inputs' dtype (see `program::Op`).
/// The opcodes computed by block routines ([`crate::routines::calls`]) and those that are not
/// element-wise have no inline code: an internal error.
pub fn emit(b: &mut FunctionBuilder, op: Opcode, d: DType, ind: DType, args: &[Value]) -> Result<Value> {
    let arg = |k: usize| args.get(k).copied().ok_or_else(|| unsupported(op, d));
    match op.class() {
        OpClass::Unary(u) => unary(b, u, d, ind, arg(0)?),
        OpClass::Binary(o) => binary(b, o, d, ind, arg(0)?, arg(1)?),
        // args: cond (bool), a, b; `ind` is the dtype of the last input (= d).
        OpClass::Select => Ok(b.ins().select(arg(0)?, arg(1)?, arg(2)?)),
        OpClass::Reduce(_) | OpClass::Accumulate(_) | OpClass::Range | OpClass::Random => Err(unsupported(op, d)),
        OpClass::Gather
        | OpClass::Scatter
        | OpClass::ScatterAdd
        | OpClass::Sort
        | OpClass::Argsort
        | OpClass::SearchLeft
        | OpClass::SearchRight
        | OpClass::System(_)
        | OpClass::Nothing
        | OpClass::Extension(_) => Err(unsupported(op, d)),
    }
}

/// Emits unary `op` on `a`. Every unary opcode is named: inline code, or a block routine's.
fn unary(b: &mut FunctionBuilder, op: UnaryOp, d: DType, ind: DType, a: Value) -> Result<Value> {
    use UnaryOp as O;
    let float = ind.is_float();
    let signed = ind.is_signed();
    let v = match op {
        O::Negative if float => b.ins().fneg(a),
        O::Negative => b.ins().ineg(a),
        O::Absolute if float => b.ins().fabs(a),
        O::Absolute if signed => b.ins().iabs(a),
        O::Absolute => a,
        O::Sign if float => {
            let (one, m1, z) = (fconst(b, d, 1.0), fconst(b, d, -1.0), fconst(b, d, 0.0));
            let gt = b.ins().fcmp(FloatCC::GreaterThan, a, z);
            let lt = b.ins().fcmp(FloatCC::LessThan, a, z);
            let eq = b.ins().fcmp(FloatCC::Equal, a, z);
            let r = b.ins().select(eq, z, a); // NaN stays NaN, +-0 becomes +0
            let r = b.ins().select(lt, m1, r);
            b.ins().select(gt, one, r)
        }
        O::Sign => {
            let (one, z) = (iconst(b, d, 1), iconst(b, d, 0));
            let m1 = iconst(b, d, -1);
            let nz = b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
            let r = b.ins().select(nz, one, z);
            if signed {
                let lt = b.ins().icmp_imm_s(IntCC::SignedLessThan, a, 0);
                b.ins().select(lt, m1, r)
            } else {
                r
            }
        }
        O::Square if float => b.ins().fmul(a, a),
        O::Square => b.ins().imul(a, a),
        O::Reciprocal => {
            let one = fconst(b, d, 1.0);
            b.ins().fdiv(one, a)
        }
        O::Sqrt => b.ins().sqrt(a),
        O::Deg2rad | O::Rad2deg => {
            // One multiplication by the factor of vm-ir's semantics (NumPy's, in the dtype).
            let k = match (op, d) {
                (O::Deg2rad, DType::F32) => f64::from(<f32 as Float>::RADIANS_PER_DEGREE),
                (O::Deg2rad, _) => <f64 as Float>::RADIANS_PER_DEGREE,
                (_, DType::F32) => f64::from(<f32 as Float>::DEGREES_PER_RADIAN),
                _ => <f64 as Float>::DEGREES_PER_RADIAN,
            };
            let k = fconst(b, d, k);
            b.ins().fmul(a, k)
        }
        O::Floor => b.ins().floor(a),
        O::Ceil => b.ins().ceil(a),
        O::Trunc => b.ins().trunc(a),
        O::Rint => b.ins().nearest(a),
        O::Isnan => b.ins().fcmp(FloatCC::Unordered, a, a),
        O::Isinf | O::Isfinite => {
            let abs = b.ins().fabs(a);
            let inf = fconst(b, ind, f64::INFINITY);
            let cc = if op == O::Isinf { FloatCC::Equal } else { FloatCC::LessThan };
            b.ins().fcmp(cc, abs, inf)
        }
        O::Signbit => {
            let ity = if ind == DType::F32 { types::I32 } else { types::I64 };
            let bits = b.ins().bitcast(ity, MemFlagsData::new(), a);
            b.ins().icmp_imm_s(IntCC::SignedLessThan, bits, 0)
        }
        O::LogicalNot => {
            let t = truth(b, ind, a);
            b.ins().bxor_imm_s(t, 1)
        }
        O::Invert if d == DType::Bool => b.ins().bxor_imm_s(a, 1),
        O::Invert => b.ins().bnot(a),
        O::Identity => cast(b, ind, d, a),
        // Block routines (`calls`, `fastmath`): Cranelift has no instruction for them.
        O::Cbrt | O::Exp | O::Exp2 | O::Expm1 | O::Log | O::Log2 | O::Log10 | O::Log1p => {
            return Err(unsupported(op.into(), d));
        }
        O::Sin | O::Cos | O::Tan | O::Arcsin | O::Arccos | O::Arctan => return Err(unsupported(op.into(), d)),
        O::Sinh | O::Cosh | O::Tanh | O::Arcsinh | O::Arccosh | O::Arctanh => return Err(unsupported(op.into(), d)),
    };
    Ok(v)
}

/// Emits binary `op` on `a` and `y`. Every binary opcode is named: inline code, or a block
/// routine's.
fn binary(b: &mut FunctionBuilder, op: BinaryOp, d: DType, ind: DType, a: Value, y: Value) -> Result<Value> {
    use BinaryOp as O;
    let float = ind.is_float();
    let signed = ind.is_signed();
    let v = match op {
        O::Add if float => b.ins().fadd(a, y),
        O::Add => b.ins().iadd(a, y),
        O::Subtract if float => b.ins().fsub(a, y),
        O::Subtract => b.ins().isub(a, y),
        O::Multiply if float => b.ins().fmul(a, y),
        O::Multiply => b.ins().imul(a, y),
        O::Divide => b.ins().fdiv(a, y),
        O::Maximum if float => numpy_pick(b, FloatCC::GreaterThan, a, y, a),
        O::Minimum if float => numpy_pick(b, FloatCC::LessThan, a, y, a),
        O::Maximum if signed => b.ins().smax(a, y),
        O::Maximum => b.ins().umax(a, y),
        O::Minimum if signed => b.ins().smin(a, y),
        O::Minimum => b.ins().umin(a, y),
        O::Fmax => numpy_pick(b, FloatCC::GreaterThanOrEqual, a, y, y),
        O::Fmin => numpy_pick(b, FloatCC::LessThanOrEqual, a, y, y),
        O::Copysign => b.ins().fcopysign(a, y),
        O::Equal | O::NotEqual | O::Less | O::LessEqual | O::Greater | O::GreaterEqual => {
            if float {
                b.ins().fcmp(fcmp_cc(op), a, y)
            } else {
                b.ins().icmp(icmp_cc(op, signed), a, y)
            }
        }
        O::LogicalAnd | O::LogicalOr | O::LogicalXor => {
            let (x, y) = (truth(b, ind, a), truth(b, ind, y));
            match op {
                O::LogicalAnd => b.ins().band(x, y),
                O::LogicalOr => b.ins().bor(x, y),
                _ => b.ins().bxor(x, y),
            }
        }
        O::BitwiseAnd => b.ins().band(a, y),
        O::BitwiseOr => b.ins().bor(a, y),
        O::BitwiseXor => b.ins().bxor(a, y),
        O::LeftShift | O::RightShift => {
            let n = y;
            let width = (d.size() * 8) as i64;
            // In range: 0 <= n < width (a negative n is a huge unsigned number).
            let ok = b.ins().icmp_imm_s(IntCC::UnsignedLessThan, n, width);
            let (shifted, out_of_range) = match op {
                O::LeftShift => (b.ins().ishl(a, n), iconst(b, d, 0)),
                _ if signed => {
                    let fill = b.ins().sshr_imm_s(a, width - 1);
                    (b.ins().sshr(a, n), fill)
                }
                _ => (b.ins().ushr(a, n), iconst(b, d, 0)),
            };
            b.ins().select(ok, shifted, out_of_range)
        }
        // Block routines (`calls`): NumPy's division family, powers, and float functions.
        O::FloorDivide | O::Remainder | O::Fmod | O::Power | O::Arctan2 | O::Hypot | O::Logaddexp | O::Logaddexp2 => {
            return Err(unsupported(op.into(), d));
        }
    };
    Ok(v)
}

/// Emits the combination of a reduction's running value `acc` with the element `x` (of the
/// reduction's input dtype `ind`); `d` is the output dtype.
pub fn combine(b: &mut FunctionBuilder, reduce: Opcode, d: DType, ind: DType, acc: Value, x: Value) -> Result<Value> {
    let comb = reduce.combiner().ok_or_else(|| unsupported(reduce, d))?;
    let x = if d == DType::Bool && ind != DType::Bool { truth(b, ind, x) } else { x };
    emit(b, comb, d, d, &[acc, x])
}
