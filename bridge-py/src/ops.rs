//! Recording operations: element-wise ufuncs with NumPy's dtype resolution and broadcasting,
//! reductions and scans over axes, creation, casts, `where`, gather and scatter.

use crate::array::{Arg, NdArray, arg, broadcast_shapes, broadcast_view, shape_text};
use crate::dtypes::{Weak, float_of, promote, promote_weak};
use crate::session::{BaseHandle, hook, value_err, vm};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyModule, PyTuple};
use std::sync::Arc;
use vm_ir::view::{row_major_strides, same_shape};
use vm_ir::{DType, Instruction, Opcode, Operand, Scalar, View};

/// NumPy's name of a dtype.
pub fn np_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U8 => "uint8",
        DType::U16 => "uint16",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::F32 => "float32",
        DType::F64 => "float64",
    }
}

/// The dtype NumPy calls `name` (as `numpy.dtype(x).name` spells it).
pub fn dtype_of(name: &str) -> PyResult<DType> {
    DType::ALL
        .into_iter()
        .find(|&d| np_name(d) == name)
        .ok_or_else(|| PyTypeError::new_err(format!("vmnp does not support dtype {name}")))
}

/// The number of elements of `shape`; NumPy's `ValueError` when it overflows.
///
/// An array of more bytes than the machine's memory and swap together is NumPy's `MemoryError`
/// at once, as NumPy's allocation is under Linux's default overcommit policy, although the VM
/// allocates lazily: otherwise `zeros(2**40).sum()` would run a fused loop over 10^12 elements
/// that no memory could ever hold.
pub fn element_count(shape: &[usize], dtype: DType) -> PyResult<usize> {
    let nelem = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|n| n.checked_mul(dtype.size()).is_some_and(|b| b <= isize::MAX as usize))
        .ok_or_else(|| {
            value_err("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.")
        })?;
    if (nelem * dtype.size()) as u64 > machine_memory() {
        return Err(allocation_error(shape, dtype));
    }
    Ok(nelem)
}

/// NumPy's `MemoryError` for an array of `shape` and `dtype` that cannot be allocated.
pub fn allocation_error(shape: &[usize], dtype: DType) -> PyErr {
    let nbytes = shape.iter().fold(dtype.size() as u128, |n, &d| n * d as u128);
    pyo3::exceptions::PyMemoryError::new_err(format!(
        "Unable to allocate {} for an array with shape {} and data type {}",
        size_text(nbytes),
        crate::array::tuple_text(shape),
        np_name(dtype)
    ))
}

/// The bytes of memory and swap this machine has (`/proc/meminfo`), read once; unlimited where
/// it cannot be read.
fn machine_memory() -> u64 {
    static TOTAL: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TOTAL.get_or_init(|| {
        let Ok(info) = std::fs::read_to_string("/proc/meminfo") else { return u64::MAX };
        let kib = |key: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        };
        match kib("MemTotal:") {
            Some(mem) => (mem + kib("SwapTotal:").unwrap_or(0)).saturating_mul(1024),
            None => u64::MAX,
        }
    })
}

/// `nbytes` as NumPy's allocation errors write sizes (its `_size_to_string`): in the largest
/// binary unit, to three significant digits, keeping zeros and the point (`8.00 TiB`, `10.4 TiB`,
/// `123. TiB`, `12 bytes`).
fn size_text(nbytes: u128) -> String {
    const UNITS: [&str; 7] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let bits = 128 - nbytes.max(2).leading_zeros() as usize - 1;
    let mut unit = (bits / 10).min(UNITS.len() - 1);
    let mut x = nbytes as f64 / (1u128 << (10 * unit)) as f64;
    if x.round() == 1024.0 && unit + 1 < UNITS.len() {
        unit += 1;
        x /= 1024.0;
    }
    if unit == 0 {
        return format!("{nbytes} bytes");
    }
    // `{:#.3g}`: the digits after the point that three significant ones leave, after rounding.
    let digits = 2 - (format!("{x:.2}").parse::<f64>().unwrap_or(x).log10().floor() as i32).clamp(0, 2);
    let text = format!("{x:.prec$}", prec = digits as usize);
    if digits == 0 { format!("{text}. {}", UNITS[unit]) } else { format!("{text} {}", UNITS[unit]) }
}

/// A new row-major array of `shape` (memory is allocated lazily by the engine that writes it).
pub fn new_array(shape: &[usize], dtype: DType) -> PyResult<(View, Arc<BaseHandle>)> {
    let nelem = element_count(shape, dtype)?;
    let base = vm()?.new_base(dtype, nelem)?;
    Ok((View::row_major(base, shape), Arc::new(BaseHandle { base })))
}

/// Wraps a fresh view and its base's handle as a Python array.
pub fn wrap(py: Python<'_>, view: View, handle: Arc<BaseHandle>) -> PyResult<Py<NdArray>> {
    Py::new(py, NdArray::new(view, handle))
}

/// `v` converted to `dtype` in a new array (an `identity` instruction).
pub fn cast_view(py: Python<'_>, v: &View, dtype: DType) -> PyResult<(View, Arc<BaseHandle>)> {
    let (out, h) = new_array(&v.shape, dtype)?;
    vm()?.submit(py, Instruction::new(Opcode::Identity, [Operand::View(out.clone()), Operand::View(v.clone())]))?;
    Ok((out, h))
}

/// `a` as an operand of an instruction computing in `ct` over `shape`: an array cast (the cast
/// kept alive in `temps` until the instruction is queued) and broadcast, a scalar as a constant
/// (`OverflowError`, NumPy's, for a Python int the dtype does not hold).
#[inline]
fn operand_of(
    py: Python<'_>,
    a: Arg,
    ct: DType,
    shape: &[usize],
    temps: &mut smallvec::SmallVec<[Arc<BaseHandle>; 2]>,
) -> PyResult<Operand> {
    Ok(match a {
        Arg::Arr(v) if v.dtype() == ct && same_shape(&v.shape, shape) => Operand::View(v),
        Arg::Arr(v) => {
            let v = if v.dtype() == ct {
                broadcast_view(&v, shape)
            } else {
                let (c, h) = cast_view(py, &v, ct)?;
                temps.push(h);
                broadcast_view(&c, shape)
            };
            Operand::View(v)
        }
        Arg::Strong(c) => Operand::Const(c.cast(ct)),
        Arg::Weak(w) => Operand::Const(w.to_scalar(ct).ok_or_else(|| match w {
            Weak::Int(i) => PyOverflowError::new_err(format!("Python integer {i} out of bounds for {}", np_name(ct))),
            Weak::BigUint(u) if ct == DType::U32 => {
                PyOverflowError::new_err(format!("Python integer {u} out of bounds for uint32"))
            }
            // NumPy's words for an int past every integer dtype.
            _ => PyOverflowError::new_err("Python int too large to convert to C long"),
        })?),
    })
}

fn same_kind(from: DType, to: DType) -> bool {
    let kind = |d: DType| match d {
        DType::Bool => 0,
        _ if d.is_float() => 3,
        _ if d.is_signed() => 2,
        _ => 1,
    };
    let (kf, kt) = (kind(from), kind(to));
    kf <= kt && !(kf == 2 && kt == 1)
}

fn type_error(msg: String) -> PyErr {
    PyTypeError::new_err(msg)
}

/// The opcode, compute dtype and output dtype of binary ufunc `op` on operands of promoted
/// dtype `rt`, following NumPy's loops (bool arithmetic as logic, true division in floats).
pub fn binary_types(op: Opcode, rt: DType) -> PyResult<(Opcode, DType, DType)> {
    use Opcode as O;
    let b = rt == DType::Bool;
    Ok(match op {
        O::Add | O::Maximum | O::Fmax if b => (O::LogicalOr, rt, rt),
        O::Multiply | O::Minimum | O::Fmin if b => (O::LogicalAnd, rt, rt),
        O::Subtract if b => {
            return Err(type_error(
                "numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, or the logical_xor function instead.".into(),
            ));
        }
        O::FloorDivide | O::Remainder | O::Fmod | O::Power | O::LeftShift | O::RightShift if b => {
            (op, DType::I8, DType::I8)
        }
        // NumPy divides integers and bools in float64 (it has no narrower loop for `/`).
        O::Divide if !rt.is_float() => (op, DType::F64, DType::F64),
        O::Divide | O::Arctan2 | O::Hypot | O::Copysign | O::Logaddexp | O::Logaddexp2 => {
            (op, float_of(rt), float_of(rt))
        }
        O::Fmax if !rt.is_float() => (O::Maximum, rt, rt),
        O::Fmin if !rt.is_float() => (O::Minimum, rt, rt),
        O::Equal | O::NotEqual | O::Less | O::LessEqual | O::Greater | O::GreaterEqual => (op, rt, DType::Bool),
        O::LogicalAnd | O::LogicalOr | O::LogicalXor => (op, rt, DType::Bool),
        O::BitwiseAnd | O::BitwiseOr | O::BitwiseXor | O::LeftShift | O::RightShift if rt.is_float() => {
            return Err(type_error(format!(
                "ufunc '{}' not supported for the input types, and the inputs could not be safely coerced to any supported types according to the casting rule ''safe''",
                op.name()
            )));
        }
        _ => (op, rt, rt),
    })
}

/// The opcode, compute dtype and output dtype of unary ufunc `op` on dtype `d`.
pub fn unary_types(op: Opcode, d: DType) -> PyResult<(Opcode, DType, DType)> {
    use Opcode as O;
    let b = d == DType::Bool;
    Ok(match op {
        O::Negative if b => {
            return Err(type_error(
                "The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or the logical_not function instead.".into(),
            ));
        }
        O::Absolute if b => (O::Identity, d, d),
        O::Sign if b => {
            return Err(type_error(
                "ufunc 'sign' did not contain a loop with signature matching types <class 'numpy.dtypes.BoolDType'> -> None".into(),
            ));
        }
        O::Square if b => (op, DType::I8, DType::I8),
        O::Invert if d.is_float() => {
            return Err(type_error(
                "ufunc 'invert' not supported for the input types, and the inputs could not be safely coerced to any supported types according to the casting rule ''safe''".into(),
            ));
        }
        // Integers and bools are whole already: NumPy keeps their dtype.
        O::Floor | O::Ceil | O::Trunc if !d.is_float() => (O::Identity, d, d),
        O::LogicalNot => (op, d, DType::Bool),
        O::Isnan | O::Isinf | O::Isfinite | O::Signbit => (op, float_of(d), DType::Bool),
        O::Negative | O::Absolute | O::Sign | O::Square | O::Invert | O::Identity => (op, d, d),
        _ => (op, float_of(d), float_of(d)),
    })
}

/// The dtype an operand list promotes to (NEP 50: weak scalars only when no array is present).
pub fn result_type(args: &[Arg]) -> DType {
    let mut strong: Option<DType> = None;
    for a in args {
        let d = match a {
            Arg::Arr(v) => v.dtype(),
            Arg::Strong(c) => c.dtype(),
            Arg::Weak(_) => continue,
        };
        strong = Some(strong.map_or(d, |s| promote(s, d)));
    }
    let mut weak_only: Option<DType> = None;
    for a in args {
        if let Arg::Weak(w) = a {
            match strong {
                Some(s) => strong = Some(promote_weak(s, *w)),
                None => weak_only = Some(weak_only.map_or(w.default_dtype(), |d| promote(d, w.default_dtype()))),
            }
        }
    }
    strong.or(weak_only).unwrap_or(DType::F64)
}

/// Records `op` over `inputs` broadcast together, computing in `ct` and writing `out_dtype`
/// (into `out` when given: the inputs must broadcast to its shape, and a dtype it cannot hold
/// under NumPy's `same_kind` rule is a `TypeError`).
pub fn record<const N: usize>(
    py: Python<'_>,
    op: Opcode,
    inputs: [Arg; N],
    ct: DType,
    out_dtype: DType,
    out: Option<&NdArray>,
) -> PyResult<Option<(View, Arc<BaseHandle>)>> {
    if let Some(o) = out {
        o.check_writeable("output array")?;
    }
    // NumPy resolves dtypes before it broadcasts, so a bad cast is reported first.
    if let Some(o) = out
        && !same_kind(out_dtype, o.view().dtype())
    {
        return Err(type_error(format!(
            "Cannot cast ufunc '{}' output from dtype('{}') to dtype('{}') with casting rule 'same_kind'",
            op.name(),
            np_name(out_dtype),
            np_name(o.view().dtype())
        )));
    }
    let mut shape = match (broadcast_shapes(&inputs), out) {
        (Ok(shape), _) => shape,
        (Err(e), None) => return Err(e),
        (Err(_), Some(o)) => {
            let mut all = inputs.to_vec();
            all.push(Arg::Arr(o.view().clone()));
            return Err(broadcast_shapes(&all)
                .err()
                .unwrap_or_else(|| value_err("operands could not be broadcast together")));
        }
    };
    if let Some(o) = out
        && broadcasts_to(&shape, &o.view().shape)
    {
        // NumPy broadcasts the inputs to the output's shape (`add(row, 1, out=matrix)`).
        shape = o.view().shape.clone();
    }
    if let Some(o) = out
        && o.view().shape[..] != shape[..]
    {
        // NumPy broadcasts the output with the inputs: operands that do not broadcast together
        // are listed, output included; else the output is too small for their shape.
        let mut all = inputs.to_vec();
        all.push(Arg::Arr(o.view().clone()));
        let full = broadcast_shapes(&all)?;
        return Err(value_err(format!(
            "non-broadcastable output operand with shape {} doesn't match the broadcast shape {}",
            shape_text(&o.view().shape),
            shape_text(&full)
        )));
    }
    // Casts of the inputs, alive until the instruction reading them is queued.
    let mut temps: smallvec::SmallVec<[Arc<BaseHandle>; 2]> = smallvec::SmallVec::new();
    let mut operands: smallvec_ops::Ops = smallvec_ops::Ops::new();
    for (i, a) in inputs.into_iter().enumerate() {
        // select's condition stays bool whatever the values compute in
        let ct = if op == Opcode::Select && i == 0 { DType::Bool } else { ct };
        operands.push(operand_of(py, a, ct, &shape, &mut temps)?);
    }
    let vm = vm()?;
    match out {
        Some(o) if o.view().dtype() == out_dtype => {
            operands.insert(0, Operand::View(o.view().clone()));
            vm.submit(py, Instruction { opcode: op, operands })?;
            Ok(None)
        }
        Some(o) => {
            let (tmp, _h) = new_array(&shape, out_dtype)?;
            operands.insert(0, Operand::View(tmp.clone()));
            vm.submit(py, Instruction { opcode: op, operands })?;
            vm.submit(py, Instruction::new(Opcode::Identity, [Operand::View(o.view().clone()), Operand::View(tmp)]))?;
            Ok(None)
        }
        None => vm.submit_new(py, &shape, out_dtype, op, &mut operands).map(Some),
    }
}

/// True when an array of `shape` broadcasts to `target` without changing `target`.
fn broadcasts_to(shape: &[usize], target: &[usize]) -> bool {
    shape.len() <= target.len() && shape.iter().rev().zip(target.iter().rev()).all(|(&s, &t)| s == t || s == 1)
}

mod smallvec_ops {
    /// The operand list of an instruction, as `Instruction` stores it.
    pub type Ops = smallvec::SmallVec<[vm_ir::Operand; 3]>;
}

/// Records binary ufunc `op` on two Python operands; `Ok(None)` when an operand is of a type
/// vmnp does not know (the caller returns `NotImplemented`).
pub fn binary(
    py: Python<'_>,
    op: Opcode,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    out: Option<&Bound<'_, NdArray>>,
) -> PyResult<Option<Py<PyAny>>> {
    let (Some((x, _kx)), Some((y, _ky))) = (arg(a)?, arg(b)?) else { return Ok(None) };
    let (op, args) = if is_comparison(op) { exact_past_int64(op, compared_past_int64([x, y])) } else { (op, [x, y]) };
    let (op, mut ct, mut od) = binary_types(op, result_type(&args))?;
    if op == Opcode::Power && ct.is_integer() && ct.is_signed() && negative_scalar(&args[1]) {
        return Err(value_err("Integers to negative integer powers are not allowed."));
    }
    if op == Opcode::Power
        && ct.is_float()
        && matches!(args[0], Arg::Arr(_))
        && matches!(args[1], Arg::Weak(Weak::Int(2)) | Arg::Weak(Weak::Float(2.0)))
    {
        // `x ** 2` squares, as NumPy's does (its result is x * x, bit for bit), at the cost of a
        // multiplication rather than a call of pow per element.
        let [x, _] = args;
        return finish(py, Opcode::Multiply, [x.clone(), x], ct, od, out);
    }
    let half = |a: &Arg| match a {
        Arg::Weak(Weak::Float(f)) => *f == 0.5,
        Arg::Strong(c) => c.dtype().is_float() && c.as_f64() == 0.5,
        _ => false,
    };
    let array = |a: &Arg| matches!(a, Arg::Arr(v) if !v.shape.is_empty());
    if op == Opcode::Power && ct.is_float() && array(&args[0]) && half(&args[1]) {
        // NumPy's float power loop takes a scalar exponent of 0.5 as `sqrt` (so `-0.0 ** 0.5`
        // is -0.0 and `-inf ** 0.5` NaN, where pow gives 0.0 and inf). A 0-d base stands for a
        // scalar, whose `**` is pow.
        let [x, _] = args;
        return finish(py, Opcode::Sqrt, [x], ct, od, out);
    }
    if matches!(op, Opcode::Arctan2 | Opcode::Hypot | Opcode::Copysign | Opcode::Logaddexp | Opcode::Logaddexp2)
        && !args.iter().any(|a| matches!(a, Arg::Weak(Weak::Float(_))))
    {
        // NumPy's float loop for integer inputs: the smallest float each input casts to safely
        // (a Python float has promoted them to the default float already: float64; a Python int
        // next to bools only is an int64).
        let typed = args.iter().filter_map(|a| match a {
            Arg::Arr(v) => Some(v.dtype()),
            Arg::Strong(c) => Some(c.dtype()),
            Arg::Weak(Weak::Bool(_) | Weak::Float(_)) => None,
            Arg::Weak(_) => (result_type(&args) == DType::I64).then_some(DType::I64),
        });
        if let Some(f) = typed.map(float_of).max_by_key(|d| d.size()) {
            (ct, od) = (f, f);
        }
    }
    let typed_bool = |a: &Arg| match a {
        Arg::Arr(v) => v.dtype() == DType::Bool,
        Arg::Strong(c) => c.dtype() == DType::Bool,
        Arg::Weak(_) => false,
    };
    if od == DType::Bool && ct.is_integer() && !args.iter().any(typed_bool) {
        // NumPy 2 compares an out-of-range Python int with an integer array exactly instead of
        // raising (a bool array takes it as int64, which must hold it).
        let fits =
            |a: &Arg| !matches!(a, Arg::Weak(w @ (Weak::Int(_) | Weak::HugeInt(_))) if w.to_scalar(ct).is_none());
        let huge = args.iter().any(|a| matches!(a, Arg::Weak(Weak::HugeInt(_))));
        if !args.iter().all(fits) {
            // Past int64 only floats hold the scalar (its magnitude decides every comparison).
            ct = if ct == DType::U64 || huge { DType::F64 } else { DType::I64 };
        }
    }
    finish(py, op, args, ct, od, out)
}

/// True for the comparison opcodes.
fn is_comparison(op: Opcode) -> bool {
    use Opcode as O;
    matches!(op, O::Equal | O::NotEqual | O::Less | O::LessEqual | O::Greater | O::GreaterEqual)
}

/// Of a comparison's operands: a Python int in `2**63..2**64` next to an integer or float one, typed uint64 as
/// NumPy 2 compares it (exactly, [`exact_past_int64`]); next to a bool operand it stays weak
/// (NumPy takes it as int64 there, which cannot hold it: `OverflowError`).
fn compared_past_int64(args: [Arg; 2]) -> [Arg; 2] {
    let not_bool = |a: &Arg| match a {
        Arg::Arr(v) => v.dtype() != DType::Bool,
        Arg::Strong(c) => c.dtype() != DType::Bool,
        Arg::Weak(_) => false,
    };
    let [x, y] = args;
    match (x, y) {
        (Arg::Weak(Weak::BigUint(u)), y) if not_bool(&y) => [Arg::Strong(Scalar::U64(u)), y],
        (x, Arg::Weak(Weak::BigUint(u))) if not_bool(&x) => [x, Arg::Strong(Scalar::U64(u))],
        (x, y) => [x, y],
    }
}

/// A comparison of a signed integer array with an integer past int64 (a Python int in
/// `2**63..2**64`, typed uint64) as NumPy 2 makes it, exactly: the answer is the same for every
/// element (`a == 2**63` is False; in float64, where the promotion would compare, `2**63 - 1`
/// equals it). Rewritten as the comparison of the array with itself that gives that answer
/// everywhere; any other operation unchanged.
fn exact_past_int64(op: Opcode, [x, y]: [Arg; 2]) -> (Opcode, [Arg; 2]) {
    use Opcode as O;
    let signed = |a: &Arg| matches!(a, Arg::Arr(v) if v.dtype().is_integer() && v.dtype().is_signed());
    let past = |a: &Arg| matches!(a, Arg::Strong(Scalar::U64(u)) if *u > i64::MAX as u64);
    // `array op big`: equal and greater never hold, the others always; mirrored for `big op array`.
    let always = match (op, signed(&x) && past(&y), past(&x) && signed(&y)) {
        (O::Equal, true, _) | (O::Equal, _, true) => false,
        (O::NotEqual, true, _) | (O::NotEqual, _, true) => true,
        (O::Less | O::LessEqual, true, _) | (O::Greater | O::GreaterEqual, _, true) => true,
        (O::Greater | O::GreaterEqual, true, _) | (O::Less | O::LessEqual, _, true) => false,
        _ => return (op, [x, y]),
    };
    let array = if signed(&x) { x } else { y };
    (if always { O::Equal } else { O::NotEqual }, [array.clone(), array])
}

/// True when `a` is a negative integer scalar.
fn negative_scalar(a: &Arg) -> bool {
    match a {
        Arg::Weak(Weak::Int(i)) => *i < 0,
        Arg::Weak(Weak::HugeInt(f)) => *f < 0.0,
        Arg::Strong(c) if c.dtype().is_integer() => c.dtype() != DType::U64 && c.as_i64() < 0,
        _ => false,
    }
}

/// Records unary ufunc `op` on a Python operand.
pub fn unary(
    py: Python<'_>,
    op: Opcode,
    a: &Bound<'_, PyAny>,
    out: Option<&Bound<'_, NdArray>>,
) -> PyResult<Option<Py<PyAny>>> {
    let Some((x, _k)) = arg(a)? else { return Ok(None) };
    let args = [x];
    let d = result_type(&args);
    if op == Opcode::Reciprocal && !d.is_float() {
        // NumPy's integer reciprocal is `1.0 / x` cast back to the integer dtype: the Python
        // ufunc records it so when this declines.
        return Ok(None);
    }
    let (op, ct, od) = unary_types(op, d)?;
    finish(py, op, args, ct, od, out)
}

/// `fabs`: the absolute value computed in NumPy's float dtype for `a` (integers included).
fn fabs(py: Python<'_>, a: &Bound<'_, PyAny>, out: Option<&Bound<'_, NdArray>>) -> PyResult<Option<Py<PyAny>>> {
    let Some((x, _k)) = arg(a)? else { return Ok(None) };
    let args = [x];
    let f = float_of(result_type(&args));
    finish(py, Opcode::Absolute, args, f, f, out)
}

/// `positive` (also `+x`) and `conjugate` (the identity on real dtypes): NumPy has no bool
/// loop of `positive` and computes a bool `conjugate` in int8.
pub fn identity(
    py: Python<'_>,
    name: &str,
    a: &Bound<'_, PyAny>,
    out: Option<&Bound<'_, NdArray>>,
) -> PyResult<Option<Py<PyAny>>> {
    let Some((x, _k)) = arg(a)? else { return Ok(None) };
    let args = [x];
    let d = result_type(&args);
    if d != DType::Bool {
        return finish(py, Opcode::Identity, args, d, d, out);
    }
    if name == "positive" {
        return Err(type_error(
            "ufunc 'positive' did not contain a loop with signature matching types <class 'numpy.dtypes.BoolDType'> -> None"
                .into(),
        ));
    }
    finish(py, Opcode::Identity, args, DType::I8, DType::I8, out)
}

fn finish<const N: usize>(
    py: Python<'_>,
    op: Opcode,
    args: [Arg; N],
    ct: DType,
    od: DType,
    out: Option<&Bound<'_, NdArray>>,
) -> PyResult<Option<Py<PyAny>>> {
    match record(py, op, args, ct, od, out.map(|o| o.get()))? {
        Some((v, h)) => Ok(Some(wrap(py, v, h)?.into_any())),
        None => Ok(out.map(|o| o.clone().unbind().into_any())),
    }
}

fn opcode(name: &str) -> PyResult<Opcode> {
    let alias = match name {
        "true_divide" => "divide",
        "abs" | "fabs" => "absolute",
        "mod" => "remainder",
        "conjugate" | "conj" | "positive" => "identity",
        n => n,
    };
    Opcode::from_name(alias)
        .filter(|op| op.kind().is_elementwise())
        .ok_or_else(|| PyTypeError::new_err(format!("vmnp has no ufunc {name}")))
}

/// `ufunc(*inputs, out=out)` for the ufunc NumPy calls `name`; `None` when an input is of an
/// unknown type.
#[pyfunction]
#[pyo3(signature = (name, inputs, out=None))]
fn _ufunc(
    py: Python<'_>,
    name: &str,
    inputs: &Bound<'_, PyTuple>,
    out: Option<&Bound<'_, NdArray>>,
) -> PyResult<Option<Py<PyAny>>> {
    let op = opcode(name)?;
    match (op.kind(), inputs.len()) {
        (vm_ir::Kind::Binary, 2) => binary(py, op, &inputs.get_item(0)?, &inputs.get_item(1)?, out),
        (vm_ir::Kind::Unary, 1) if name == "fabs" => fabs(py, &inputs.get_item(0)?, out),
        (vm_ir::Kind::Unary, 1) if op == Opcode::Identity => identity(py, name, &inputs.get_item(0)?, out),
        (vm_ir::Kind::Unary, 1) => unary(py, op, &inputs.get_item(0)?, out),
        _ => Err(PyTypeError::new_err(format!(
            "{name} takes {} inputs, got {}",
            op.kind().arity().map_or(0, |a| a.0 - 1),
            inputs.len()
        ))),
    }
}

/// The native half of vmnp's `ufunc` class (the Python class derives from it): a call with
/// just its inputs, vmnp arrays with Python numbers (`np.exp(x)`, `np.maximum(x, 0.0)`), and
/// maybe a vmnp array as `out=`, is recorded here; any other call goes to the Python class's `_call_any` (keywords, NumPy's
/// arrays and scalars, overrides, the fallback). A NumPy program calls ufuncs more than
/// anything else.
#[pyclass(subclass, frozen, module = "vmnp", name = "_UfuncBase")]
pub struct UfuncBase {
    /// The name `_ufunc` records it by.
    op: String,
    /// The number of inputs.
    nin: usize,
    /// NumPy's ufunc of the same name (`None` where NumPy has none): it computes calls on
    /// numbers only, as NumPy's scalars.
    numpy: Py<PyAny>,
}

#[pymethods]
impl UfuncBase {
    #[new]
    fn py_new(name: &str, op: &str, nin: usize, numpy: Py<PyAny>) -> UfuncBase {
        let _ = name; // the Python class keeps NumPy's name
        UfuncBase { op: op.to_string(), nin, numpy }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let me = slf.get();
        let array = |x: &Bound<'_, PyAny>| x.is_exact_instance_of::<NdArray>();
        let number = |x: &Bound<'_, PyAny>| {
            array(x)
                || x.is_exact_instance_of::<PyFloat>()
                || x.is_exact_instance_of::<PyInt>()
                || x.is_exact_instance_of::<PyBool>()
        };
        // `out=` alone, a vmnp array (`np.add(a, b, out=c)`): recorded here too.
        let only_out = match kwargs {
            Some(k) if k.len() == 1 => k
                .get_item(pyo3::intern!(py, "out"))?
                .filter(|o| o.is_exact_instance_of::<NdArray>())
                .map(|o| o.cast_into::<NdArray>())
                .transpose()?,
            _ => None,
        };
        if let Some(out) = &only_out
            && args.len() == me.nin
            && args.iter().all(|x| number(&x))
            && let Some(r) = _ufunc(py, &me.op, args, Some(out))?
        {
            return Ok(r);
        }
        if kwargs.is_none_or(|k| k.is_empty()) && args.len() == me.nin {
            let direct = match me.nin {
                1 => array(&args.get_item(0)?),
                2 => {
                    let (a, b) = (args.get_item(0)?, args.get_item(1)?);
                    (array(&a) && number(&b)) || (array(&b) && number(&a))
                }
                _ => false,
            };
            if direct && let Some(r) = _ufunc(py, &me.op, args, None)? {
                return Ok(r);
            }
            // Numbers only (`np.sqrt(a[i])` in an element loop): NumPy's scalar, as NumPy
            // computes it.
            let scalar = |x: Bound<'_, PyAny>| -> PyResult<bool> {
                Ok((number(&x) && !array(&x)) || crate::array::is_numpy_scalar(&x)?)
            };
            let numpy = me.numpy.bind(py);
            if !direct && !numpy.is_none() && args.iter().try_fold(true, |all, x| Ok::<_, PyErr>(all && scalar(x)?))? {
                return Ok(numpy.call1(args.clone())?.unbind());
            }
        }
        Ok(slf.call_method(pyo3::intern!(py, "_call_any"), args.clone(), kwargs)?.unbind())
    }
}

/// How the views of `a` and `b` share elements: "disjoint", "identical" or "partial" (exact;
/// arrays of different bases are disjoint).
#[pyfunction]
fn _overlap(a: &Bound<'_, NdArray>, b: &Bound<'_, NdArray>) -> &'static str {
    match a.get().view().overlap(&b.get().view()) {
        vm_ir::Overlap::Disjoint => "disjoint",
        vm_ir::Overlap::Identical => "identical",
        vm_ir::Overlap::Partial => "partial",
    }
}

/// `where(cond, x, y)` with NumPy's promotion of `x` and `y`.
#[pyfunction]
fn _where(py: Python<'_>, cond: &Bound<'_, PyAny>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let unknown = || PyTypeError::new_err("where: unsupported operand types");
    let (c, _kc) = arg(cond)?.ok_or_else(unknown)?;
    let (a, _ka) = arg(x)?.ok_or_else(unknown)?;
    let (b, _kb) = arg(y)?.ok_or_else(unknown)?;
    let c = match c {
        Arg::Weak(w) => Arg::Weak(Weak::Bool(w.to_scalar(DType::Bool).is_some_and(|s| s == Scalar::Bool(true)))),
        other => other,
    };
    let rt = result_type(&[a.clone(), b.clone()]);
    // NumPy's where casts a Python int its result dtype cannot hold instead of raising
    // (`where(m, uint8_image, -1)` holds 255).
    let wrapped = |x: Arg| match x {
        Arg::Weak(w @ Weak::Int(i)) if rt.is_integer() && w.to_scalar(rt).is_none() => {
            Arg::Strong(Scalar::I64(i).cast(rt))
        }
        Arg::Weak(w @ Weak::BigUint(u)) if rt.is_integer() && w.to_scalar(rt).is_none() => {
            Arg::Strong(Scalar::U64(u).cast(rt))
        }
        x => x,
    };
    let (a, b) = (wrapped(a), wrapped(b));
    let (v, h) = record(py, Opcode::Select, [c, a, b], rt, rt, None)?.expect("a new array");
    Ok(wrap(py, v, h)?.into_any())
}

/// `x.astype(dtype)`: always a new array.
#[pyfunction]
fn _cast(py: Python<'_>, a: &Bound<'_, NdArray>, dtype: &str) -> PyResult<Py<NdArray>> {
    let (v, h) = cast_view(py, &a.get().view(), dtype_of(dtype)?)?;
    wrap(py, v, h)
}

/// A scalar stored into an element of integer dtype `dt`, as NumPy stores one: through a
/// Python int (floats truncated), which must fit: NaN is a `ValueError`, infinities and values
/// out of range are `OverflowError`s.
fn integer_element(c: Scalar, dt: DType) -> PyResult<Scalar> {
    let i = match c {
        Scalar::F32(_) | Scalar::F64(_) => {
            let f = c.as_f64();
            if f.is_nan() {
                return Err(value_err("cannot convert float NaN to integer"));
            }
            if f.is_infinite() {
                return Err(PyOverflowError::new_err("cannot convert float infinity to integer"));
            }
            f.trunc() as i128 // saturates beyond i128, which no dtype holds anyway
        }
        Scalar::U64(u) => i128::from(u),
        Scalar::Bool(b) => i128::from(b),
        c => i128::from(c.as_i64()),
    };
    Scalar::from_int(dt, i).map_err(|_| match i64::try_from(i) {
        Ok(_) => PyOverflowError::new_err(format!("Python integer {i} out of bounds for {}", np_name(dt))),
        Err(_) => PyOverflowError::new_err("Python int too large to convert to C long"),
    })
}

/// Writes `value` (broadcast, cast unsafely as NumPy's assignment does) into `dst`'s view.
#[pyfunction]
pub fn _assign(py: Python<'_>, dst: &Bound<'_, NdArray>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    assign(py, dst.get(), value, true)
}

/// [`_assign`] into an array that Python need not see (a view `a[key] = value` selects).
pub fn assign_into(py: Python<'_>, dst: &NdArray, value: &Bound<'_, PyAny>) -> PyResult<()> {
    assign(py, dst, value, true)
}

/// [`_assign`]; `checked`: a float scalar stored into integers must convert exactly as a Python
/// int (NumPy's assignment), else it is cast as NumPy's `full` and `copyto` cast it.
fn assign(py: Python<'_>, dst: &NdArray, value: &Bound<'_, PyAny>, checked: bool) -> PyResult<()> {
    dst.check_writeable("assignment destination")?;
    if value.is_instance_of::<pyo3::types::PyString>() {
        // NumPy parses a string as the element type does: `a[0] = "2.5"`.
        let kind = if dst.view().dtype().is_float() { "float" } else { "int" };
        let parsed = py.import("builtins")?.getattr(kind)?.call1((value,))?;
        return assign(py, dst, &parsed, checked);
    }
    let dt = dst.view().dtype();
    let sequence = value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>();
    // NumPy converts a sequence with at most the destination's dimensions (an array may have
    // more, if unit ones: they are dropped below).
    let too_deep = |ndim: usize| {
        let max = dst.view().ndim();
        (sequence && ndim > max).then(|| {
            value_err(format!(
                "setting an array element with a sequence. The requested array would exceed the maximum number of dimension of {max}."
            ))
        })
    };
    if dt.is_integer() && sequence {
        // Python numbers go in as NumPy converts them: ints must fit, floats truncate.
        let converted = hook(py, "convert_as")?.call1((value, np_name(dt)))?;
        if !converted.is_none() {
            if let Some(e) = too_deep(converted.getattr("ndim")?.extract()?) {
                return Err(e);
            }
            return assign(py, dst, &converted, checked);
        }
    }
    let Some((a, _k)) = arg(value)? else {
        // Any other object (`None`, a `Fraction`, a type with `__float__`) is converted as NumPy
        // stores it into `dt`.
        let converted = hook(py, "convert_as")?.call1((value, np_name(dt)))?;
        if converted.is_none() {
            return Err(PyTypeError::new_err("cannot assign this value to a vmnp array"));
        }
        return assign(py, dst, &converted, checked);
    };
    if let Arg::Arr(v) = &a
        && *v == *dst.view()
    {
        return Ok(()); // `x[...] = x` after an in-place operator on the same view
    }
    // NumPy drops leading unit dimensions of a value with more dimensions than the destination
    // (`a[0] = row[None]`).
    let a = match a {
        Arg::Arr(v) if v.ndim() > dst.view().ndim() => {
            if let Some(e) = too_deep(v.ndim()) {
                return Err(e);
            }
            let extra = v.shape[..v.ndim() - dst.view().ndim()].iter().take_while(|&&n| n == 1).count();
            Arg::Arr(View {
                base: v.base,
                start: v.start,
                shape: v.shape[extra..].into(),
                stride: v.stride[extra..].into(),
            })
        }
        other => other,
    };
    let shape = broadcast_shapes(std::slice::from_ref(&a))?;
    if broadcast_shapes(&[Arg::Arr(dst.view().clone()), a.clone()])
        .map(|s| s[..] != dst.view().shape[..])
        .unwrap_or(true)
        || shape.len() > dst.view().ndim()
    {
        return Err(value_err(format!(
            "could not broadcast input array from shape {} into shape {}",
            shape_text(&shape),
            shape_text(&dst.view().shape)
        )));
    }
    let src = match a {
        Arg::Arr(v) => Operand::View(broadcast_view(&v, &dst.view().shape)),
        scalar => Operand::Const(stored_constant(value, scalar, dt, checked)?),
    };
    // One element from a number: written in memory when the array's host copy is at hand.
    if let Operand::Const(c) = src
        && dst.view().nelem() == 1
        && crate::session::host_store(
            py,
            dst.view().base.id,
            dst.view().start as usize,
            &c.to_ne_bytes()[..c.dtype().size()],
        )?
    {
        return Ok(());
    }
    vm()?.submit(py, Instruction::new(Opcode::Identity, [Operand::View(dst.view().clone()), src]))
}

/// Scalar `a` (the argument `value` read by [`arg`]) as the constant stored into an array of
/// `dt`, with NumPy's conversion errors; `checked`: a float into integers must convert exactly
/// as a Python int (NumPy's assignment), else it is cast.
fn stored_constant(value: &Bound<'_, PyAny>, a: Arg, dt: DType, checked: bool) -> PyResult<Scalar> {
    Ok(match a {
        Arg::Arr(_) => return Err(PyTypeError::new_err("an array is not a scalar")),
        // A NumPy scalar stored into an unsigned dtype is cast, as NumPy's C conversion does
        // (`uint8_array[0] = np.int64(-1)` holds 255; floats out of range saturate, the VM's
        // cast); into a signed one it must fit.
        Arg::Strong(c) if dt.is_integer() && !dt.is_signed() => c.cast(dt),
        Arg::Strong(c) if dt.is_integer() && (checked || !c.dtype().is_float()) => integer_element(c, dt)?,
        Arg::Strong(c) => c.cast(dt),
        Arg::Weak(w) => match w {
            Weak::HugeInt(_) if dt.is_integer() => {
                return Err(PyOverflowError::new_err("Python int too large to convert to C long"));
            }
            Weak::BigUint(u) if dt.is_integer() => w.to_scalar(dt).ok_or_else(|| match dt {
                DType::U32 => PyOverflowError::new_err(format!("Python integer {u} out of bounds for uint32")),
                _ => PyOverflowError::new_err("Python int too large to convert to C long"),
            })?,
            Weak::Int(_) if dt.is_integer() => w.to_scalar(dt).ok_or_else(|| {
                PyOverflowError::new_err(format!("Python integer {} out of bounds for {}", value, np_name(dt)))
            })?,
            Weak::Int(i) => Scalar::I64(i).cast(dt),
            Weak::Float(f) if dt.is_integer() && checked => integer_element(Scalar::F64(f), dt)?,
            _ => w.to_scalar(dt).expect("bools and floats always convert"),
        },
    })
}

/// `a[mask] = value` for a boolean `mask` of `a`'s leading axes and one scalar `value` (a Python
/// or NumPy number): one `select` writing `a` where the mask holds, nothing computed now.
/// `False` for any other value (the caller's general path).
#[pyfunction]
pub(crate) fn _masked_fill(
    py: Python<'_>,
    a: &Bound<'_, NdArray>,
    mask: &Bound<'_, NdArray>,
    value: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    a.get().check_writeable("assignment destination")?;
    let dst = a.get().view().clone();
    let m = mask.get().view().clone();
    let fits = m.dtype() == DType::Bool && m.ndim() <= dst.ndim() && m.shape[..] == dst.shape[..m.ndim()];
    let Some((scalar @ (Arg::Strong(_) | Arg::Weak(_)), _)) = arg(value)? else { return Ok(false) };
    if !fits {
        return Ok(false);
    }
    let constant = stored_constant(value, scalar, dst.dtype(), true)?;
    if dst.nelem() == 0 {
        return Ok(true);
    }
    // The mask over the trailing axes too (stride 0).
    let mut stride = m.stride.clone();
    stride.extend(std::iter::repeat_n(0, dst.ndim() - m.ndim()));
    let cond = View { base: m.base, start: m.start, shape: dst.shape.clone(), stride };
    vm()?.submit(
        py,
        Instruction::new(
            Opcode::Select,
            [Operand::View(dst.clone()), Operand::View(cond), Operand::Const(constant), Operand::View(dst)],
        ),
    )?;
    Ok(true)
}

/// An array of `shape` filled with `value` in `dtype`.
#[pyfunction]
fn _full(py: Python<'_>, shape: Vec<usize>, value: &Bound<'_, PyAny>, dtype: &str) -> PyResult<Py<NdArray>> {
    Ok(new_filled(py, &shape, dtype_of(dtype)?, Some(value))?.unbind())
}

/// A new array of `shape` and `dtype`, filled with `value` when one is given (a new base
/// reads as zeros until written).
fn new_filled<'py>(
    py: Python<'py>,
    shape: &[usize],
    dtype: DType,
    value: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, NdArray>> {
    let (v, h) = new_array(shape, dtype)?;
    let a = Bound::new(py, NdArray::new(v, h))?;
    if let Some(value) = value {
        assign(py, a.get(), value, false)?;
    }
    Ok(a)
}

/// The shape, dtype (the arrays' promoted one) and axis of `concatenate(arrays, axis)`, with
/// NumPy's errors for arrays that do not fit together.
fn concatenated(py: Python<'_>, views: &[View], axis: isize) -> PyResult<(Vec<usize>, DType, usize)> {
    let Some(first) = views.first() else {
        return Err(value_err("need at least one array to concatenate"));
    };
    let nd = first.ndim();
    if nd == 0 {
        return Err(value_err("zero-dimensional arrays cannot be concatenated"));
    }
    if axis < -(nd as isize) || axis >= nd as isize {
        return Err(axis_error(py, axis, nd));
    }
    let axis = axis.rem_euclid(nd as isize) as usize;
    let mut shape = first.shape.to_vec();
    let mut dtype = first.dtype();
    for (i, v) in views.iter().enumerate().skip(1) {
        if v.ndim() != nd {
            return Err(value_err(format!(
                "all the input arrays must have same number of dimensions, but the array at index 0 has {nd} \
                 dimension(s) and the array at index {i} has {} dimension(s)",
                v.ndim()
            )));
        }
        if let Some(d) = (0..nd).find(|&d| d != axis && v.shape[d] != first.shape[d]) {
            return Err(value_err(format!(
                "all the input array dimensions except for the concatenation axis must match exactly, but along \
                 dimension {d}, the array at index 0 has size {} and the array at index {i} has size {}",
                first.shape[d], v.shape[d]
            )));
        }
        shape[axis] += v.shape[axis];
        dtype = promote(dtype, v.dtype());
    }
    Ok((shape, dtype, axis))
}

/// Copies `views` one after another along `axis` into `dst`, whose shape [`concatenated`]
/// gave: one `identity` instruction each (a cast where the dtypes differ).
fn copy_along(py: Python<'_>, dst: &View, views: &[View], axis: usize) -> PyResult<()> {
    let mut pos = 0;
    for src in views {
        let n = src.shape[axis];
        if n > 0 && src.nelem() > 0 {
            let mut part = dst.clone();
            part.start += pos as i64 * dst.stride[axis];
            part.shape[axis] = n;
            vm()?.submit(py, Instruction::new(Opcode::Identity, [Operand::View(part), Operand::View(src.clone())]))?;
        }
        pos += n;
    }
    Ok(())
}

/// The most elements [`concatenate_in_host`] assembles (256 KiB of float64).
const HOST_CONCAT_ELEMENTS: usize = 1 << 15;

/// `views` (all of `dtype`) joined along `axis` into a new array of `shape` in host memory, when
/// host memory holds every one and the result is small: their elements copied out in row-major
/// order and interleaved, one call on the runtime where an `identity` instruction per input
/// costs more (`np.hstack((x, y, z))` of columns, in a loop). `None` otherwise (nothing done).
fn concatenate_in_host(
    py: Python<'_>,
    views: &[View],
    (shape, dtype, axis): (&[usize], DType, usize),
) -> PyResult<Option<(View, Arc<BaseHandle>)>> {
    let n: usize = shape.iter().product();
    if n == 0 || n > HOST_CONCAT_ELEMENTS || views.iter().any(|v| v.dtype() != dtype) {
        return Ok(None);
    }
    let es = dtype.size();
    let (outer, inner): (usize, usize) = (shape[..axis].iter().product(), shape[axis + 1..].iter().product());
    let mut joined = vec![0u8; n * es];
    let in_host = vm()?.with(|rt| {
        for v in views {
            if !rt.is_in_host(v.base.id)? {
                return Ok(false);
            }
        }
        let mut parts = Vec::with_capacity(views.len());
        for v in views {
            rt.sync(v.base.id)?; // (runs nothing: host memory holds it)
            let mut part = vec![0u8; v.nelem() * es];
            crate::array::copy_view(v, rt.host_data(v.base.id)?, &mut part, es);
            parts.push(part);
        }
        let mut at = 0;
        for o in 0..outer {
            for (v, part) in views.iter().zip(&parts) {
                let block = v.shape[axis] * inner * es;
                joined[at..at + block].copy_from_slice(&part[o * block..(o + 1) * block]);
                at += block;
            }
        }
        Ok(true)
    })?;
    if !in_host {
        return Ok(None);
    }
    let (view, handle) = new_array(shape, dtype)?;
    write_new(py, view.base.id, &joined)?;
    Ok(Some((view, handle)))
}

fn views_of(arrays: &[Bound<'_, NdArray>]) -> Vec<View> {
    arrays.iter().map(|a| a.get().view().clone()).collect()
}

/// `concatenate(arrays, axis)` of vmnp arrays into a new array of their promoted dtype.
#[pyfunction]
fn _concatenate(py: Python<'_>, arrays: Vec<Bound<'_, NdArray>>, axis: isize) -> PyResult<Py<NdArray>> {
    let views = views_of(&arrays);
    let (shape, dtype, axis) = concatenated(py, &views, axis)?;
    if let Some((view, handle)) = concatenate_in_host(py, &views, (&shape, dtype, axis))? {
        return wrap(py, view, handle);
    }
    let (view, handle) = new_array(&shape, dtype)?;
    copy_along(py, &view, &views, axis)?;
    wrap(py, view, handle)
}

/// The shape, dtype name and axis `concatenate(arrays, axis)` makes, with NumPy's errors (for
/// a concatenation into `out` or another dtype, which [`_concat_into`] then writes).
#[pyfunction]
fn _concat_shape(
    py: Python<'_>,
    arrays: Vec<Bound<'_, NdArray>>,
    axis: isize,
) -> PyResult<(Vec<usize>, &'static str, usize)> {
    let (shape, dtype, axis) = concatenated(py, &views_of(&arrays), axis)?;
    Ok((shape, np_name(dtype), axis))
}

/// Copies `arrays` one after another along `axis` into `out`, whose shape is
/// [`_concat_shape`]'s (any dtype: the copies cast).
#[pyfunction]
fn _concat_into(
    py: Python<'_>,
    out: &Bound<'_, NdArray>,
    arrays: Vec<Bound<'_, NdArray>>,
    axis: usize,
) -> PyResult<()> {
    out.get().check_writeable("output array")?;
    let dst = out.get().view().clone();
    let views = views_of(&arrays);
    let fits = axis < dst.ndim()
        && views
            .iter()
            .all(|v| v.ndim() == dst.ndim() && (0..v.ndim()).all(|d| d == axis || v.shape[d] == dst.shape[d]))
        && views.iter().map(|v| v.shape[axis]).sum::<usize>() == dst.shape[axis];
    if !fits {
        return Err(value_err("the arrays do not fit the output of the concatenation"));
    }
    copy_along(py, &dst, &views, axis)
}

/// A shape argument given as an int or a tuple or list of Python ints (the common spellings),
/// as a list of extents, when each is in `0..=isize::MAX` and there are at most the VM's
/// [`vm_ir::view::MAX_NDIM`]; `None` for anything else (the caller's general path, which raises
/// NumPy's errors).
#[pyfunction]
fn _plain_shape(shape: &Bound<'_, PyAny>) -> Option<Vec<usize>> {
    let extent = |x: &Bound<'_, PyAny>| -> Option<usize> {
        if !x.is_exact_instance_of::<pyo3::types::PyInt>() {
            return None;
        }
        x.extract::<i64>().ok().and_then(|n| usize::try_from(n).ok())
    };
    if let Some(n) = extent(shape) {
        return Some(vec![n]);
    }
    let items = if let Ok(t) = shape.cast_exact::<PyTuple>() {
        t.iter().map(|x| extent(&x)).collect::<Option<Vec<usize>>>()?
    } else if let Ok(l) = shape.cast_exact::<PyList>() {
        l.iter().map(|x| extent(&x)).collect::<Option<Vec<usize>>>()?
    } else {
        return None;
    };
    (items.len() <= vm_ir::view::MAX_NDIM).then_some(items)
}

/// An array of `shape` whose contents are unspecified (its memory is allocated lazily).
#[pyfunction]
fn _empty(py: Python<'_>, shape: Vec<usize>, dtype: &str) -> PyResult<Py<NdArray>> {
    let (v, h) = new_array(&shape, dtype_of(dtype)?)?;
    wrap(py, v, h)
}

/// `dtype` arguments spelled as programs spell them most (absent or `None`: float64; Python's
/// `float`, `int`, `bool`; NumPy's scalar types; a dtype object or name of a VM dtype), as the
/// VM's dtype; `None` for any other (the Python layer's general path, and NumPy's errors).
pub fn plain_dtype(dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    let Some(d) = dtype.filter(|d| !d.is_none()) else { return Ok(Some(DType::F64)) };
    let py = d.py();
    if let Ok(t) = d.cast::<pyo3::types::PyType>() {
        if t.is(py.get_type::<PyFloat>()) {
            return Ok(Some(DType::F64));
        }
        if t.is(py.get_type::<PyInt>()) {
            return Ok(Some(DType::I64));
        }
        if t.is(py.get_type::<PyBool>()) {
            return Ok(Some(DType::Bool));
        }
        return crate::array::numpy_scalar_dtype(t);
    }
    if let Ok(name) = d.cast_exact::<pyo3::types::PyString>() {
        return Ok(name.to_str().ok().and_then(|n| dtype_of(n).ok()));
    }
    // A dtype object: its `type`, a NumPy scalar type.
    match d.getattr_opt(pyo3::intern!(py, "type"))? {
        Some(t) if d.is_instance(crate::array::numpy_dtype_class(py)?)? => {
            t.cast::<pyo3::types::PyType>().map_or(Ok(None), |t| crate::array::numpy_scalar_dtype(t))
        }
        _ => Ok(None),
    }
}

/// True when `v` is dense in column-major order (NumPy's F-contiguity).
fn column_major(v: &View) -> bool {
    let mut expect = 1i64;
    for (&n, &s) in v.shape.iter().zip(&v.stride) {
        if n != 1 && s != expect {
            return false;
        }
        expect *= n as i64;
    }
    true
}

/// `empty zeros ones (shape, dtype)` and `empty_like zeros_like ones_like (a, dtype)` called
/// with their common arguments (a plain shape, a plain dtype; an array of vmnp laid out
/// row-major or in no particular order), made natively: NumPy's cost for the call rather than
/// the Python layer's. `None` for any other call, which the Python function takes.
pub fn native_creation(
    py: Python<'_>,
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Py<PyAny>>> {
    let mut dtype = if args.len() == 2 { Some(args.get_item(1)?) } else { None };
    if args.is_empty() || args.len() > 2 {
        return Ok(None);
    }
    if let Some(k) = kwargs.filter(|k| !k.is_empty()) {
        match k.get_item(pyo3::intern!(py, "dtype"))? {
            Some(d) if k.len() == 1 && dtype.is_none() => dtype = Some(d),
            _ => return Ok(None),
        }
    }
    let first = args.get_item(0)?;
    let (kind, shape, dtype) = match name.strip_suffix("_like") {
        Some(kind) => {
            let Ok(a) = first.cast::<NdArray>() else { return Ok(None) };
            let v = a.get().view().clone();
            // Order 'K' keeps a column-major layout: the Python layer makes that one.
            if v.ndim() > 1 && v.nelem() > 0 && !v.is_contiguous() && column_major(&v) {
                return Ok(None);
            }
            let dtype = match dtype.filter(|d| !d.is_none()) {
                None => v.dtype(),
                given => match plain_dtype(given.as_ref())? {
                    Some(d) => d,
                    None => return Ok(None),
                },
            };
            (kind, v.shape.to_vec(), dtype)
        }
        None => {
            let Some(shape) = _plain_shape(&first) else { return Ok(None) };
            let Some(dtype) = plain_dtype(dtype.as_ref())? else { return Ok(None) };
            (name, shape, dtype)
        }
    };
    // A new base reads as zeros until written (the VM's guarantee): `zeros` records nothing.
    let one = 1i64.into_pyobject(py)?.into_any();
    let a = new_filled(py, &shape, dtype, (kind == "ones").then_some(&one))?;
    Ok(Some(a.into_any().unbind()))
}

/// `full(shape, value)` of a plain shape and a Python float, int (in int64) or bool: NumPy's
/// dtype of the value (float64, int64, bool), made natively; `None` for any other call.
pub fn native_full(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Py<PyAny>>> {
    if args.len() != 2 || kwargs.is_some_and(|k| !k.is_empty()) {
        return Ok(None);
    }
    let (shape, value) = (args.get_item(0)?, args.get_item(1)?);
    let Some(shape) = _plain_shape(&shape) else { return Ok(None) };
    let dtype = if value.is_exact_instance_of::<PyFloat>() {
        DType::F64
    } else if value.is_exact_instance_of::<PyBool>() {
        DType::Bool
    } else if value.is_exact_instance_of::<PyInt>() && value.extract::<i64>().is_ok() {
        DType::I64
    } else {
        return Ok(None);
    };
    Ok(Some(new_filled(py, &shape, dtype, Some(&value))?.into_any().unbind()))
}

/// `concatenate(arrays)` or `concatenate(arrays, axis)` (an int, by position or keyword) of a
/// list or tuple of vmnp arrays: [`_concatenate`]; `stack` (`new_axis`) the same, along a new
/// axis, of arrays of one shape; `None` for any other call.
pub fn native_concatenate(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
    new_axis: bool,
) -> PyResult<Option<Py<PyAny>>> {
    let axis = match (args.len(), kwargs.filter(|k| !k.is_empty())) {
        (1, None) => None,
        (2, None) => Some(args.get_item(1)?),
        (1, Some(k)) if k.len() == 1 => k.get_item(pyo3::intern!(py, "axis"))?,
        _ => return Ok(None),
    };
    let axis = match axis {
        None => 0,
        Some(x) if x.is_exact_instance_of::<PyInt>() => x.extract::<isize>()?,
        Some(_) => return Ok(None),
    };
    let Some(items) = list_items(&args.get_item(0)?) else { return Ok(None) };
    let arrays: Option<Vec<Bound<'_, NdArray>>> =
        items.into_iter().map(|x| x.cast_into_exact::<NdArray>().ok()).collect();
    let Some(arrays) = arrays.filter(|a| !a.is_empty()) else { return Ok(None) };
    if !new_axis {
        return Ok(Some(_concatenate(py, arrays, axis)?.into_any()));
    }
    // A new axis of extent 1 at `axis` in each (arrays of one shape: else NumPy's error, from
    // the Python layer), then joined along it.
    let mut views = views_of(&arrays);
    let nd = views[0].ndim() as isize;
    if views.iter().any(|v| v.shape != views[0].shape) || !(-(nd + 1)..=nd).contains(&axis) {
        return Ok(None);
    }
    let at = axis.rem_euclid(nd + 1) as usize;
    for v in &mut views {
        v.shape.insert(at, 1);
        v.stride.insert(at, 0);
    }
    let (shape, dtype, at) = concatenated(py, &views, at as isize)?;
    if let Some((view, handle)) = concatenate_in_host(py, &views, (&shape, dtype, at))? {
        return Ok(Some(wrap(py, view, handle)?.into_any()));
    }
    let (view, handle) = new_array(&shape, dtype)?;
    copy_along(py, &view, &views, at)?;
    Ok(Some(wrap(py, view, handle)?.into_any()))
}

/// The items of a list or tuple (exactly those types); `None` for anything else.
fn list_items<'py>(x: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(l) = x.cast_exact::<PyList>() {
        Some(l.iter().collect())
    } else if let Ok(t) = x.cast_exact::<PyTuple>() {
        Some(t.iter().collect())
    } else {
        None
    }
}

/// `arange(n)` of a Python int `n` (the common spelling): `0, 1, ..., n-1` in int64, its
/// values' range recorded for indexing with it; `None` for any other call (the Python layer).
pub fn native_arange(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Py<PyAny>>> {
    if args.len() != 1 || kwargs.is_some_and(|k| !k.is_empty()) {
        return Ok(None);
    }
    let n = args.get_item(0)?;
    // (Two elements or fewer: NumPy's own values, in the Python layer.)
    let Some(n) = n.is_exact_instance_of::<PyInt>().then(|| n.extract::<i64>().ok()).flatten().filter(|&n| n > 2)
    else {
        return Ok(None);
    };
    let (v, h) = new_array(&[n as usize], DType::I64)?;
    vm()?.submit(py, Instruction::new(Opcode::Range, [Operand::View(v.clone())]))?;
    crate::bounds::record(v.base.id, 0, n - 1);
    Ok(Some(wrap(py, v, h)?.into_any()))
}

/// `0, 1, ..., n-1` in `dtype` (the `range` instruction).
#[pyfunction]
fn _range(py: Python<'_>, n: usize, dtype: &str) -> PyResult<Py<NdArray>> {
    let (v, h) = new_array(&[n], dtype_of(dtype)?)?;
    vm()?.submit(py, Instruction::new(Opcode::Range, [Operand::View(v.clone())]))?;
    wrap(py, v, h)
}

/// Counter-based random numbers of `shape`: floats uniform in [0, 1), integers of random bits;
/// element `i` (row-major) is drawn from counter `offset + i` of stream `seed`.
#[pyfunction]
fn _random(py: Python<'_>, shape: Vec<usize>, dtype: &str, seed: u64, offset: u64) -> PyResult<Py<NdArray>> {
    let (v, h) = new_array(&shape, dtype_of(dtype)?)?;
    vm()?.submit(
        py,
        Instruction::new(
            Opcode::Random,
            [Operand::View(v.clone()), Operand::Const(Scalar::U64(seed)), Operand::Const(Scalar::U64(offset))],
        ),
    )?;
    wrap(py, v, h)
}

/// An array of `shape` copied in from host bytes (row-major, `dtype`): any C-contiguous buffer
/// of bytes (`bytes`, a NumPy array's `memoryview(...).cast("B")`), read in place.
#[pyfunction]
fn _from_bytes(
    py: Python<'_>,
    data: pyo3::buffer::PyBuffer<u8>,
    dtype: &str,
    shape: Vec<usize>,
) -> PyResult<Py<NdArray>> {
    let dt = dtype_of(dtype)?;
    if !data.is_c_contiguous() {
        return Err(value_err("the bytes of an array must be contiguous"));
    }
    let (v, h) = new_array(&shape, dt)?;
    // SAFETY: `data` holds the exporter's buffer (C-contiguous, `len_bytes` bytes) until it is
    // dropped at the end of this function; the bytes are only read.
    let bytes = unsafe { std::slice::from_raw_parts(data.buf_ptr().cast::<u8>(), data.len_bytes()) };
    if bytes.len() != v.nelem() * dt.size() {
        return Err(value_err(format!("{} bytes do not make a {} array of {dtype}", bytes.len(), shape_text(&shape))));
    }
    write_new(py, v.base.id, bytes)?;
    wrap(py, v, h)
}

/// Writes `bytes` into new base `id` from element 0: at once where host memory holds it (a
/// new base on a direct stack), else with the GIL released (the write may run queued work).
pub(crate) fn write_new(py: Python<'_>, id: vm_ir::BaseId, bytes: &[u8]) -> PyResult<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let vm = vm()?;
    if !vm.with(|rt| rt.write_in_host(id, 0, bytes))? {
        vm.run(py, "writing host data", move |rt| rt.write(id, 0, bytes))?;
    }
    Ok(())
}

/// `array(x)` or `asarray(x)` of a list or tuple of Python floats and ints, or of such lists
/// of one length (the common spelling of coefficients and small tables): NumPy's array of
/// float64 (int64 for ints only) made natively; `None` for anything else (the Python layer,
/// through NumPy's conversion).
pub fn native_from_numbers<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Option<Py<PyAny>>> {
    let Some(outer) = list_items(x).filter(|o| !o.is_empty()) else { return Ok(None) };
    let (shape, numbers) = if outer[0].is_exact_instance_of::<PyList>() || outer[0].is_exact_instance_of::<PyTuple>() {
        let rows: Option<Vec<Vec<Bound<'py, PyAny>>>> = outer.iter().map(|r| list_items(r)).collect();
        let Some(rows) = rows else { return Ok(None) };
        let m = rows[0].len();
        if m == 0 || rows.iter().any(|r| r.len() != m) {
            return Ok(None);
        }
        (vec![rows.len(), m], rows.into_iter().flatten().collect::<Vec<_>>())
    } else {
        (vec![outer.len()], outer)
    };
    let mut floats = false;
    for n in &numbers {
        if n.is_exact_instance_of::<PyFloat>() {
            floats = true;
        } else if !n.is_exact_instance_of::<PyInt>() {
            return Ok(None);
        }
    }
    let mut bytes = Vec::with_capacity(numbers.len() * 8);
    for n in &numbers {
        if floats {
            bytes.extend_from_slice(&n.extract::<f64>()?.to_ne_bytes());
        } else {
            // (An int past int64: NumPy's conversion decides, in the Python layer.)
            let Ok(i) = n.extract::<i64>() else { return Ok(None) };
            bytes.extend_from_slice(&i.to_ne_bytes());
        }
    }
    let (v, h) = new_array(&shape, if floats { DType::F64 } else { DType::I64 })?;
    write_new(py, v.base.id, &bytes)?;
    Ok(Some(wrap(py, v, h)?.into_any()))
}

/// A new view of `a`'s base: `start`, `shape` and `strides` in elements of the base.
#[pyfunction]
fn _view(
    py: Python<'_>,
    a: &Bound<'_, NdArray>,
    start: i64,
    shape: Vec<usize>,
    strides: Vec<i64>,
) -> PyResult<Py<NdArray>> {
    let a = a.get();
    if shape.len() != strides.len() {
        return Err(value_err("shape and strides differ in length"));
    }
    let v = View::new(a.view().base, start, &shape, &strides).map_err(|e| value_err(e.to_string()))?;
    a.with_view(py, v)
}

/// `out[i] = a.flat[index[i]]` (positions in `a`'s row-major order).
#[pyfunction]
pub(crate) fn _gather(py: Python<'_>, a: &Bound<'_, NdArray>, index: &Bound<'_, NdArray>) -> PyResult<Py<NdArray>> {
    let (a, index) = (a.get(), index.get());
    let (v, h) = new_array(&index.view().shape, a.view().dtype())?;
    let instr = Instruction::new(
        Opcode::Gather,
        [Operand::View(v.clone()), Operand::View(a.view().clone()), Operand::View(index.view().clone())],
    );
    vm()?.submit(py, instr)?;
    wrap(py, v, h)
}

/// `a.flat[index[i]] = values[i]` (values broadcast to the index's shape and cast to `a`'s dtype);
/// with `add`, `a.flat[index[i]] += values[i]` in the order of `i` (NumPy's `add.at`).
#[pyfunction]
#[pyo3(signature = (a, index, values, add=false))]
fn _scatter(
    py: Python<'_>,
    a: &Bound<'_, NdArray>,
    index: &Bound<'_, NdArray>,
    values: &Bound<'_, PyAny>,
    add: bool,
) -> PyResult<()> {
    let (a, index) = (a.get(), index.get());
    let dtype = a.view().dtype();
    // A number is the instruction's constant, converted as an assignment converts it; an array
    // of the index's shape and `a`'s dtype is read where it is; anything else is assigned to
    // an array of the index's shape first.
    let (constant, same) = match arg(values)? {
        Some((number @ (Arg::Weak(_) | Arg::Strong(_)), _)) => {
            (Some(stored_constant(values, number, dtype, true)?), None)
        }
        Some((Arg::Arr(v), None)) if v.dtype() == dtype && same_shape(&v.shape, &index.view().shape) => (None, Some(v)),
        _ => (None, None),
    };
    let mut _temp = None;
    let src = match (constant, same) {
        (Some(c), _) => Operand::Const(c),
        (None, Some(v)) => Operand::View(v),
        (None, None) => {
            let (src, h) = new_array(&index.view().shape, dtype)?;
            assign_into(py, &NdArray::new(src.clone(), h.clone()), values)?;
            _temp = Some(h);
            Operand::View(src)
        }
    };
    let op = if add { Opcode::ScatterAdd } else { Opcode::Scatter };
    let instr = Instruction::new(op, [Operand::View(a.view().clone()), src, Operand::View(index.view().clone())]);
    vm()?.submit(py, instr)
}

fn reduce_op(name: &str) -> PyResult<Opcode> {
    Ok(match name {
        "sum" | "add" => Opcode::AddReduce,
        "prod" | "multiply" => Opcode::MultiplyReduce,
        "min" | "minimum" | "fmin" => Opcode::MinimumReduce,
        "max" | "maximum" | "fmax" => Opcode::MaximumReduce,
        "all" | "logical_and" => Opcode::LogicalAndReduce,
        "any" | "logical_or" => Opcode::LogicalOrReduce,
        "logical_xor" => Opcode::LogicalXorReduce,
        "bitwise_and" => Opcode::BitwiseAndReduce,
        "bitwise_or" => Opcode::BitwiseOrReduce,
        "bitwise_xor" => Opcode::BitwiseXorReduce,
        "cumsum" => Opcode::AddAccumulate,
        "cumprod" => Opcode::MultiplyAccumulate,
        _ => return Err(PyTypeError::new_err(format!("vmnp cannot reduce with {name}"))),
    })
}

/// The dtype `sum`/`prod`/`cumsum` accumulate in by default (NumPy: at least the platform int).
fn accumulating(d: DType) -> DType {
    match d {
        DType::Bool | DType::I8 | DType::I16 | DType::I32 => DType::I64,
        DType::U8 | DType::U16 | DType::U32 => DType::U64,
        d => d,
    }
}

fn axis_error(py: Python<'_>, axis: isize, ndim: usize) -> PyErr {
    match py.import("numpy.exceptions").and_then(|m| m.getattr("AxisError")).and_then(|c| c.call1((axis, ndim))) {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// Normalised axes (sorted, distinct) from `None`, an int or a tuple of ints.
pub fn axes(py: Python<'_>, axis: Option<&Bound<'_, PyAny>>, ndim: usize) -> PyResult<Vec<usize>> {
    let raw: Vec<isize> = match axis {
        None => return Ok((0..ndim).collect()),
        Some(a) if a.is_none() => return Ok((0..ndim).collect()),
        // A tuple first: an int's failed extraction would build an exception to throw away.
        Some(a) => match a.cast::<PyTuple>() {
            Ok(t) => t.iter().map(|i| i.extract::<isize>()).collect::<PyResult<_>>()?,
            Err(_) => match a.extract::<isize>() {
                Ok(i) => vec![i],
                Err(_) => a.extract::<Vec<isize>>()?,
            },
        },
    };
    let mut out = Vec::with_capacity(raw.len());
    for i in raw {
        let n = ndim as isize;
        if i < -n || i >= n {
            return Err(axis_error(py, i, ndim));
        }
        let a = i.rem_euclid(n.max(1)) as usize;
        if out.contains(&a) {
            return Err(value_err("duplicate value in 'axis'"));
        }
        out.push(a);
    }
    out.sort_unstable();
    Ok(out)
}

/// Reduces `a` over `axis` (None: all) with the reduction NumPy calls `name`. Float sums start,
/// as NumPy's, from the identity +0.0 (a sum of -0.0s is +0.0), unless `from_identity` is false
/// (the caller adds the start). `initial` starts every group as NumPy's does: a sum adds it to
/// the group's sum, other reductions take it as the group's first element (a product of
/// `[1e300, 1e300]` from 0.0 is 0.0), and an empty group is `initial`.
#[pyfunction]
#[pyo3(signature = (name, a, axis=None, keepdims=false, dtype=None, from_identity=true, initial=None))]
#[expect(clippy::too_many_arguments, reason = "NumPy's reduction keywords, one each")]
pub(crate) fn _reduce(
    py: Python<'_>,
    name: &str,
    a: &Bound<'_, NdArray>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
    dtype: Option<&str>,
    from_identity: bool,
    initial: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<NdArray>> {
    let mut op = reduce_op(name)?;
    // A maximum or minimum has no identity, whatever the dtype computes it (bools: or, and).
    let extremum = match op {
        Opcode::MaximumReduce => Some("maximum"),
        Opcode::MinimumReduce => Some("minimum"),
        _ => None,
    };
    let a = a.get();
    let d = a.view().dtype();
    let ct = match (dtype, op) {
        (Some(t), _) => dtype_of(t)?,
        (None, Opcode::AddReduce | Opcode::MultiplyReduce) => accumulating(d),
        _ => d,
    };
    if ct == DType::Bool {
        op = match op {
            Opcode::MaximumReduce | Opcode::AddReduce => Opcode::LogicalOrReduce,
            Opcode::MinimumReduce | Opcode::MultiplyReduce => Opcode::LogicalAndReduce,
            op => op,
        };
    }
    let out_dtype = match op {
        Opcode::LogicalAndReduce | Opcode::LogicalOrReduce | Opcode::LogicalXorReduce => DType::Bool,
        _ => ct,
    };
    let ax = axes(py, axis, a.view().ndim())?;
    let mut v = a.view().clone();
    let mut keep: Arc<BaseHandle> = a.handle();
    let initial = match initial {
        None => None,
        Some(x) => match crate::array::arg(x)? {
            Some((Arg::Arr(v), _)) if v.ndim() > 0 => {
                return Err(PyTypeError::new_err(format!(
                    "initial must be a scalar, not an array of shape {}",
                    shape_text(&v.shape)
                )));
            }
            Some((arg, _)) => Some(arg),
            None => return Err(PyTypeError::new_err("initial must be a number")),
        },
    };
    let from_identity = from_identity && initial.is_none();
    // Casts of `initial`, alive until the instructions reading them are queued.
    let mut temps: smallvec::SmallVec<[Arc<BaseHandle>; 2]> = smallvec::SmallVec::new();
    if ax.iter().any(|&i| v.shape[i] == 0) {
        // Groups of nothing: each is `initial`, else the reduction's identity.
        let shape: Vec<usize> = (0..v.ndim()).filter(|i| !ax.contains(i)).map(|i| v.shape[i]).collect();
        let identity = |x: f64| Operand::Const(Scalar::F64(x));
        let fill = match op {
            _ if let Some(init) = &initial => operand_of(py, init.clone(), out_dtype, &shape, &mut temps)?,
            _ if let Some(extremum) = extremum => {
                return Err(value_err(format!(
                    "zero-size array to reduction operation {extremum} which has no identity"
                )));
            }
            Opcode::AddReduce
            | Opcode::LogicalOrReduce
            | Opcode::LogicalXorReduce
            | Opcode::BitwiseOrReduce
            | Opcode::BitwiseXorReduce => identity(0.0),
            Opcode::MultiplyReduce | Opcode::LogicalAndReduce => identity(1.0),
            Opcode::BitwiseAndReduce => identity(-1.0),
            _ => {
                return Err(value_err(format!(
                    "zero-size array to reduction operation {} which has no identity",
                    op.combiner().map_or(name.to_string(), |c| c.name().to_string())
                )));
            }
        };
        let (o, h) = new_array(&shape, out_dtype)?;
        vm()?.submit(py, Instruction::new(Opcode::Identity, [Operand::View(o.clone()), fill]))?;
        return finish_keepdims(py, o, h, &ax, a.view().ndim(), keepdims);
    }
    if v.dtype() != ct && !matches!(op, Opcode::LogicalAndReduce | Opcode::LogicalOrReduce | Opcode::LogicalXorReduce) {
        let (c, h) = cast_view(py, &v, ct)?;
        v = c;
        keep = h;
    }
    if ax.is_empty() {
        // Nothing reduced: each element joins the identity (a sum's +0.0 turns -0.0 into 0.0)
        // or `initial`.
        let (c, h) = cast_view(py, &v, out_dtype)?;
        if let Some(init) = initial {
            let combiner = op.combiner().ok_or_else(|| value_err(format!("{name} cannot start from initial")))?;
            let init = operand_of(py, init, out_dtype, &c.shape, &mut temps)?;
            vm()?.submit(py, Instruction::new(combiner, [Operand::View(c.clone()), init, Operand::View(c.clone())]))?;
        } else if from_identity && op == Opcode::AddReduce && out_dtype.is_float() {
            let zero = Operand::Const(Scalar::F64(0.0).cast(out_dtype));
            vm()?.submit(
                py,
                Instruction::new(Opcode::Add, [Operand::View(c.clone()), Operand::View(c.clone()), zero]),
            )?;
        }
        return finish_keepdims(py, c, h, &ax, a.view().ndim(), keepdims);
    }
    // Adjacent reduced axes laid out as one (all of a row-major array, `axis=(1, 2, 3)` of a
    // fresh product) are one reduction of that axis, in NumPy's order (reducing axis by axis
    // would combine in another: a zero before an overflowing product stays a zero in NumPy's),
    // and one instruction instead of several.
    let (merged, reduced) = merge_reduced_axes(&v, &ax);
    v = merged;
    // NumPy adds `initial` to a group's sum; other reductions start from it.
    let (prepend, add_after) = match initial {
        Some(init) if op == Opcode::AddReduce => (None, Some(init)),
        init => (init, None),
    };
    // The array with `initial` prepended, alive until its reduction is queued.
    let mut _prepended = None;
    for &i in reduced.iter().rev() {
        if let Some(init) = &prepend
            && i == reduced[0]
            && v.nelem() > 0
        {
            // The last reduction (the outermost axis): its groups start with `initial` (no
            // groups, nothing to start, where a kept axis is empty).
            let (p, h) = prepend_along(py, &v, i, init)?;
            v = p;
            _prepended = Some(h);
        }
        let mut shape = v.shape.clone();
        shape.remove(i);
        let (o, h) = new_array(&shape, out_dtype)?;
        let instr =
            Instruction::new(op, [Operand::View(o.clone()), Operand::View(v), Operand::Const(Scalar::I64(i as i64))]);
        vm()?.submit(py, instr)?;
        v = o;
        keep = h;
    }
    if let Some(init) = add_after {
        let init = operand_of(py, init, out_dtype, &v.shape, &mut temps)?;
        vm()?.submit(py, Instruction::new(Opcode::Add, [Operand::View(v.clone()), init, Operand::View(v.clone())]))?;
    } else if from_identity && op == Opcode::AddReduce && out_dtype.is_float() {
        // The engines' sums start from the first element (-0.0 stays -0.0); NumPy's from +0.0.
        let zero = Operand::Const(Scalar::F64(0.0).cast(out_dtype));
        vm()?.submit(py, Instruction::new(Opcode::Add, [Operand::View(v.clone()), Operand::View(v.clone()), zero]))?;
    }
    finish_keepdims(py, v, keep, &ax, a.view().ndim(), keepdims)
}

/// `v` with `first` (cast to `v`'s dtype) before its elements along `axis`, in a new array.
fn prepend_along(py: Python<'_>, v: &View, axis: usize, first: &Arg) -> PyResult<(View, Arc<BaseHandle>)> {
    let mut shape = v.shape.to_vec();
    shape[axis] += 1;
    let (o, h) = new_array(&shape, v.dtype())?;
    let mut head = o.clone();
    head.shape[axis] = 1;
    let mut tail = o.clone();
    tail.start += o.stride[axis];
    tail.shape[axis] = v.shape[axis];
    let mut temps = smallvec::SmallVec::new();
    let first = operand_of(py, first.clone(), v.dtype(), &head.shape, &mut temps)?;
    let vm = vm()?;
    vm.submit(py, Instruction::new(Opcode::Identity, [Operand::View(head), first]))?;
    vm.submit(py, Instruction::new(Opcode::Identity, [Operand::View(tail), Operand::View(v.clone())]))?;
    Ok((o, h))
}

/// `v` with each run of adjacent axes of `axes` (sorted) that its strides lay out as one axis
/// merged into one, and the reduced axes of the result.
fn merge_reduced_axes(v: &View, axes: &[usize]) -> (View, Vec<usize>) {
    let (mut shape, mut stride, mut reduced): (Vec<usize>, Vec<i64>, Vec<usize>) = (vec![], vec![], vec![]);
    for d in 0..v.ndim() {
        let joins = d > 0
            && axes.contains(&d)
            && axes.contains(&(d - 1))
            && reduced.last() == Some(&(shape.len() - 1))
            && *stride.last().expect("an axis before") == v.shape[d] as i64 * v.stride[d];
        if joins {
            *shape.last_mut().expect("an axis before") *= v.shape[d];
            *stride.last_mut().expect("an axis before") = v.stride[d];
            continue;
        }
        if axes.contains(&d) {
            reduced.push(shape.len());
        }
        shape.push(v.shape[d]);
        stride.push(v.stride[d]);
    }
    let merged =
        View { base: v.base, start: v.start, shape: shape.as_slice().into(), stride: stride.as_slice().into() };
    (merged, reduced)
}

/// [`_reduce`] of `a` over `axis` with NumPy's defaults (no dtype, keepdims or initial), as the
/// reduction methods call it, a 0-d result computed at once being NumPy's scalar: a float sum's
/// start from +0.0 is then applied to the value instead of being one more instruction.
pub fn reduce_value(
    py: Python<'_>,
    name: &str,
    a: &Bound<'_, NdArray>,
    axis: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let (ndim, nelem) = (a.get().view().ndim(), a.get().view().nelem());
    if ndim == 0 || nelem == 0 || reduce_op(name)? != Opcode::AddReduce {
        let r = _reduce(py, name, a, axis, false, None, true, None)?;
        return crate::array::scalar_if_computed(py, r);
    }
    let r = _reduce(py, name, a, axis, false, None, false, None)?;
    let v = r.get().view().clone();
    let computed = match v.ndim() {
        0 => crate::session::computed_element(v.base.id, v.start as usize)?,
        _ => None,
    };
    match computed {
        Some(Scalar::F64(x)) => crate::array::numpy_scalar_of(py, Scalar::F64(x + 0.0)),
        Some(Scalar::F32(x)) => crate::array::numpy_scalar_of(py, Scalar::F32(x + 0.0)),
        Some(x) => crate::array::numpy_scalar_of(py, x),
        None => {
            if v.dtype().is_float() {
                // The engines' sums start from the first element; NumPy's from +0.0.
                let zero = Operand::Const(Scalar::F64(0.0).cast(v.dtype()));
                vm()?.submit(py, Instruction::new(Opcode::Add, [Operand::View(v.clone()), Operand::View(v), zero]))?;
            }
            Ok(r.into_any())
        }
    }
}

fn finish_keepdims(
    py: Python<'_>,
    v: View,
    h: Arc<BaseHandle>,
    ax: &[usize],
    ndim: usize,
    keepdims: bool,
) -> PyResult<Py<NdArray>> {
    if !keepdims {
        return wrap(py, v, h);
    }
    let mut shape = Vec::with_capacity(ndim);
    let mut it = v.shape.iter();
    for i in 0..ndim {
        shape.push(if ax.contains(&i) { 1 } else { *it.next().expect("one extent per kept axis") });
    }
    let view = View { base: v.base, start: v.start, shape: shape.as_slice().into(), stride: row_major_strides(&shape) };
    wrap(py, view, h)
}

/// `cumsum`/`cumprod` along `axis` (None: over the flattened array).
#[pyfunction]
#[pyo3(signature = (name, a, axis=None, dtype=None))]
fn _accumulate(
    py: Python<'_>,
    name: &str,
    a: &Bound<'_, NdArray>,
    axis: Option<isize>,
    dtype: Option<&str>,
) -> PyResult<Py<NdArray>> {
    let op = reduce_op(name)?;
    let a = a.get();
    let ct = match dtype {
        Some(t) => dtype_of(t)?,
        None => accumulating(a.view().dtype()),
    };
    let (mut v, mut keep) = (a.view().clone(), a.handle());
    if v.dtype() != ct || (axis.is_none() && !v.is_contiguous()) {
        (v, keep) = cast_view(py, &v, ct)?;
    }
    let ax = match axis {
        None => {
            v = View { base: v.base, start: v.start, shape: [v.nelem()][..].into(), stride: [1i64][..].into() };
            0
        }
        Some(i) => axes(py, Some(&i.into_pyobject(py)?.into_any()), v.ndim())?[0],
    };
    if v.nelem() == 0 {
        return wrap(py, v, keep);
    }
    let (o, h) = new_array(&v.shape, ct)?;
    vm()?.submit(
        py,
        Instruction::new(op, [Operand::View(o.clone()), Operand::View(v), Operand::Const(Scalar::I64(ax as i64))]),
    )?;
    drop(keep);
    wrap(py, o, h)
}

/// Each line of `a` along `axis` sorted (`positions`: the int64 positions that sort it,
/// NumPy's stable `argsort`), NaNs last; `axis` None sorts the flattened array. With
/// `in_place`, `a` itself is sorted (`ndarray.sort`) and None is returned.
#[pyfunction]
#[pyo3(signature = (a, axis, positions=false, in_place=false))]
fn _sort(
    py: Python<'_>,
    a: &Bound<'_, NdArray>,
    axis: Option<&Bound<'_, PyAny>>,
    positions: bool,
    in_place: bool,
) -> PyResult<Option<Py<NdArray>>> {
    let arr = a.get();
    if in_place {
        arr.check_writeable("assignment destination")?;
    }
    let (mut v, mut keep) = (arr.view().clone(), arr.handle());
    let flat = axis.is_none_or(|x| x.is_none());
    if flat && !v.is_contiguous() {
        (v, keep) = cast_view(py, &v, v.dtype())?;
    }
    let ax = if flat {
        v = View { base: v.base, start: v.start, shape: [v.nelem()][..].into(), stride: [1i64][..].into() };
        0
    } else {
        axes(py, axis, v.ndim())?[0]
    };
    let dtype = if positions { DType::I64 } else { v.dtype() };
    let (out, h) = if in_place { (arr.view().clone(), arr.handle()) } else { new_array(&v.shape, dtype)? };
    if v.nelem() > 0 {
        let axis = Operand::Const(Scalar::I64(ax as i64));
        let op = if positions { Opcode::Argsort } else { Opcode::Sort };
        vm()?.submit(py, Instruction::new(op, [Operand::View(out.clone()), Operand::View(v), axis]))?;
    }
    drop(keep);
    if in_place { Ok(None) } else { wrap(py, out, h).map(Some) }
}

/// The int64 positions in the 1-d `a` where the elements of `keys` (of `a`'s dtype) go to
/// keep its order, of `keys`' shape: NumPy's `searchsorted` (`right`: `side="right"`).
#[pyfunction]
#[pyo3(signature = (a, keys, right=false))]
fn _search(py: Python<'_>, a: &Bound<'_, NdArray>, keys: &Bound<'_, NdArray>, right: bool) -> PyResult<Py<NdArray>> {
    let (a, keys) = (a.get(), keys.get());
    let (out, h) = new_array(&keys.view().shape, DType::I64)?;
    if out.nelem() > 0 {
        let op = if right { Opcode::SearchsortedRight } else { Opcode::SearchsortedLeft };
        let operands =
            [Operand::View(out.clone()), Operand::View(a.view().clone()), Operand::View(keys.view().clone())];
        vm()?.submit(py, Instruction::new(op, operands))?;
    }
    wrap(py, out, h)
}

/// `argmin`/`argmax` (`name`) of `a` along `axis`: int64 positions, the axis removed.
#[pyfunction]
fn _argreduce(py: Python<'_>, name: &str, a: &Bound<'_, NdArray>, axis: isize) -> PyResult<Py<NdArray>> {
    let op = match name {
        "argmin" => Opcode::from_name("argmin_reduce"),
        "argmax" => Opcode::from_name("argmax_reduce"),
        _ => None,
    }
    .ok_or_else(|| PyTypeError::new_err(format!("vmnp has no {name}")))?;
    let a = a.get();
    let ax = axes(py, Some(&axis.into_pyobject(py)?.into_any()), a.view().ndim())?[0];
    if a.view().shape.get(ax) == Some(&0) {
        return Err(value_err(format!("attempt to get {name} of an empty sequence")));
    }
    let shape: Vec<usize> = (0..a.view().ndim()).filter(|&i| i != ax).map(|i| a.view().shape[i]).collect();
    let (o, h) = new_array(&shape, DType::I64)?;
    vm()?.submit(
        py,
        Instruction::new(
            op,
            [Operand::View(o.clone()), Operand::View(a.view().clone()), Operand::Const(Scalar::I64(ax as i64))],
        ),
    )?;
    wrap(py, o, h)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_argreduce, m)?)?;
    m.add_function(wrap_pyfunction!(_ufunc, m)?)?;
    m.add_class::<UfuncBase>()?;
    m.add_function(wrap_pyfunction!(_where, m)?)?;
    m.add_function(wrap_pyfunction!(_overlap, m)?)?;
    m.add_function(wrap_pyfunction!(_cast, m)?)?;
    m.add_function(wrap_pyfunction!(_assign, m)?)?;
    m.add_function(wrap_pyfunction!(_full, m)?)?;
    m.add_function(wrap_pyfunction!(_concat_into, m)?)?;
    m.add_function(wrap_pyfunction!(_masked_fill, m)?)?;
    m.add_function(wrap_pyfunction!(_concatenate, m)?)?;
    m.add_function(wrap_pyfunction!(_concat_shape, m)?)?;
    m.add_function(wrap_pyfunction!(_plain_shape, m)?)?;
    m.add_function(wrap_pyfunction!(_empty, m)?)?;
    m.add_function(wrap_pyfunction!(_range, m)?)?;
    m.add_function(wrap_pyfunction!(_random, m)?)?;
    m.add_function(wrap_pyfunction!(_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_view, m)?)?;
    m.add_function(wrap_pyfunction!(_gather, m)?)?;
    m.add_function(wrap_pyfunction!(_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(_accumulate, m)?)?;
    m.add_function(wrap_pyfunction!(_sort, m)?)?;
    m.add_function(wrap_pyfunction!(_search, m)?)?;
    Ok(())
}
