//! Extension methods of the stack that vmnp records as one instruction each: `matmul`,
//! `partition`, `argpartition`, and the linear algebra of `cholesky`, `solve`, `det` and
//! `slogdet`.
//!
//! A matrix product recorded as a broadcast multiply and a sum (vmnp's general form, which the
//! cpu engine recognises as GEMM) makes an engine without fusion, the reference interpreter,
//! materialise an `m x k x n` temporary; the `matmul` extension is one instruction that every
//! engine computes in `m x n` memory. It is used where the stack implements it for the dtype
//! (the cpu engine multiplies floats by GEMM; integers go to its interpreter, so vmnp keeps the
//! fusible form for them).

use crate::array::NdArray;
use crate::ops::wrap;
use crate::session::vm;
use pyo3::prelude::*;
use smallvec::{SmallVec, smallvec};
use std::sync::OnceLock;
use vm_ir::{DType, Opcode, Operand, Scalar, View};

/// The opcode the stack gave extension method `name` (registered once, at the first call with
/// `cell`), or `None` when no component implements it.
fn registered(cell: &OnceLock<Option<Opcode>>, name: &str) -> PyResult<Option<Opcode>> {
    if let Some(op) = cell.get() {
        return Ok(*op);
    }
    let op = vm()?.with(|rt| Ok(rt.register_extension(name).ok()))?;
    Ok(*cell.get_or_init(|| op))
}

/// The opcode the stack gave `matmul`, or `None` when no component implements it.
fn matmul_opcode() -> PyResult<Option<Opcode>> {
    static OPCODE: OnceLock<Option<Opcode>> = OnceLock::new();
    registered(&OPCODE, vm_ir::extension::MATMUL)
}

/// The opcode the stack gave `partition` (`positions` false) or `argpartition`, or `None` when
/// no component implements it.
fn partition_opcode(positions: bool) -> PyResult<Option<Opcode>> {
    static OPCODES: [OnceLock<Option<Opcode>>; 2] = [OnceLock::new(), OnceLock::new()];
    let name = if positions { vm_ir::extension::ARGPARTITION } else { vm_ir::extension::PARTITION };
    registered(&OPCODES[usize::from(positions)], name)
}

/// Linear algebra method `name` (`cholesky`, `solve`, `det` or `slogdet`) of the stack over the float
/// arrays `inputs` of one dtype, writing a new array of `shape` (the operands as
/// `vm_ir::extension` describes each method; the caller shapes them); `None` when the stack
/// lacks the method or an input is not of a float dtype (the caller goes to NumPy).
#[pyfunction]
fn _linalg(
    py: Python<'_>,
    name: &str,
    shape: Vec<usize>,
    inputs: Vec<Bound<'_, NdArray>>,
) -> PyResult<Option<Py<NdArray>>> {
    use vm_ir::extension::{CHOLESKY, DET, SLOGDET, SOLVE};
    const METHODS: [&str; 4] = [CHOLESKY, SOLVE, DET, SLOGDET];
    static OPCODES: [OnceLock<Option<Opcode>>; METHODS.len()] = [const { OnceLock::new() }; METHODS.len()];
    let Some(k) = METHODS.iter().position(|&m| m == name) else {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("no linear algebra method {name}")));
    };
    let mut operands: SmallVec<[Operand; 3]> = SmallVec::new();
    for a in &inputs {
        operands.push(Operand::View(a.get().view().clone()));
    }
    let dtype = operands.first().map(|o| o.dtype());
    let Some(dtype @ (DType::F32 | DType::F64)) = dtype else { return Ok(None) };
    let Some(op) = registered(&OPCODES[k], name)? else { return Ok(None) };
    let (view, handle) = vm()?.submit_new(py, &shape, dtype, op, &mut operands)?;
    wrap(py, view, handle).map(Some)
}

/// Each line along the last axis of `a` partitioned around positions `lo..=hi` (the stack's
/// `partition` extension), or the positions that partition it (`argpartition`); `None` when
/// the stack lacks the method (the caller sorts instead).
#[pyfunction]
fn _partition(
    py: Python<'_>,
    a: &Bound<'_, NdArray>,
    lo: i64,
    hi: i64,
    positions: bool,
) -> PyResult<Option<Py<NdArray>>> {
    let a = a.get().view().clone();
    let Some(op) = partition_opcode(positions)? else { return Ok(None) };
    let (shape, dtype) = (a.shape.to_vec(), if positions { DType::I64 } else { a.dtype() });
    let mut operands = smallvec![Operand::View(a), Operand::Const(Scalar::I64(lo)), Operand::Const(Scalar::I64(hi))];
    let (view, handle) = vm()?.submit_new(py, &shape, dtype, op, &mut operands)?;
    wrap(py, view, handle).map(Some)
}

/// `a @ b` for 2-d float arrays of one dtype as the stack's `matmul` extension; `None` when the
/// stack lacks it or the operands are not of that kind (the caller records the general form).
#[pyfunction]
fn _matmul(py: Python<'_>, a: &Bound<'_, NdArray>, b: &Bound<'_, NdArray>) -> PyResult<Option<Py<NdArray>>> {
    let (a, b) = (a.get().view().clone(), b.get().view().clone());
    let dtype = a.dtype();
    if a.ndim() != 2 || b.ndim() != 2 || b.dtype() != dtype || !matches!(dtype, DType::F32 | DType::F64) {
        return Ok(None);
    }
    let Some(op) = matmul_opcode()? else { return Ok(None) };
    let shape = [a.shape[0], b.shape[1]];
    let (view, handle) = vm()?.submit_new(py, &shape, dtype, op, &mut smallvec![Operand::View(a), Operand::View(b)])?;
    wrap(py, view, handle).map(Some)
}

/// `a @ b` of float vectors and matrices of one dtype (1-d and 2-d, no extent 0) recorded
/// without the Python layer, as that layer records it: a vector dot product as a product and
/// a sum, anything with a matrix as one `matmul` instruction (a vector as a one-column or
/// one-row matrix view); `None` for any other operands, shapes that do not match and stacks
/// without `matmul` (the Python layer records those, or raises NumPy's error). A loop of small
/// products (`A[i, :j] @ A[:j, j]`) spends its time here.
pub fn matmul_arrays(py: Python<'_>, a: &Bound<'_, NdArray>, b: &Bound<'_, NdArray>) -> PyResult<Option<Py<PyAny>>> {
    let (va, vb) = (a.get().view().clone(), b.get().view().clone());
    let dtype = va.dtype();
    let float = matches!(dtype, DType::F32 | DType::F64) && vb.dtype() == dtype;
    let ranks = (1..=2).contains(&va.ndim()) && (1..=2).contains(&vb.ndim());
    if !float || !ranks || vb.shape[0] != va.shape[va.ndim() - 1] {
        return Ok(None);
    }
    let op = matmul_opcode()?;
    if va.ndim() == 1 && vb.ndim() == 1 && (op.is_none() || va.shape[0] == 0) {
        // A product and a sum (of empty vectors too: the sum of nothing is 0).
        let product = crate::ops::binary(py, Opcode::Multiply, a.as_any(), b.as_any(), None)?.expect("array operands");
        let product = product.bind(py).cast::<NdArray>()?;
        let sum = crate::ops::_reduce(py, "sum", product, None, false, None, true, None)?;
        return crate::array::scalar_if_computed(py, sum).map(Some);
    }
    if va.shape.contains(&0) || vb.shape.contains(&0) {
        return Ok(None);
    }
    let Some(op) = op else { return Ok(None) };
    if va.ndim() == 1 && vb.ndim() == 1 {
        // A dot product of vectors in host memory: computed where they lie.
        if let Some(x) = vm()?.with(|rt| rt.dot_in_host(&va, &vb))? {
            return crate::array::numpy_scalar_of(py, x).map(Some);
        }
    }
    // A vector is a one-row (left) or one-column (right) matrix; the result drops that axis.
    // (The same elements with an axis of extent 1 more: the runtime checks the views anyway.)
    let as_matrix = |v: View, row: bool| -> View {
        if v.ndim() == 2 {
            return v;
        }
        let (shape, stride) =
            if row { ([1, v.shape[0]], [0, v.stride[0]]) } else { ([v.shape[0], 1], [v.stride[0], 0]) };
        View { base: v.base, start: v.start, shape: shape[..].into(), stride: stride[..].into() }
    };
    let (rows, cols) = (va.ndim() == 1, vb.ndim() == 1);
    let (ma, mb) = (as_matrix(va, true), as_matrix(vb, false));
    let shape = [ma.shape[0], mb.shape[1]];
    let (ma, mb) = if rows && cols {
        // A vector dot product: NumPy's scalar, computed at once where it may be.
        match vm()?.with(|rt| rt.compute_element(op, dtype, &shape, [Operand::View(ma), Operand::View(mb)]))? {
            Ok(x) => return crate::array::numpy_scalar_of(py, x).map(Some),
            Err([Operand::View(ma), Operand::View(mb)]) => (ma, mb),
            Err(_) => unreachable!("compute_element gives its inputs back as they were"),
        }
    } else {
        (ma, mb)
    };
    let (view, handle) =
        vm()?.submit_new(py, &shape, dtype, op, &mut smallvec![Operand::View(ma), Operand::View(mb)])?;
    let view = match (rows, cols) {
        // A vector dot product: NumPy's scalar once computed.
        (true, true) => View { shape: [][..].into(), stride: [][..].into(), ..view },
        (true, _) => View { shape: [shape[1]][..].into(), stride: [1i64][..].into(), ..view },
        (_, true) => View { shape: [shape[0]][..].into(), stride: [1i64][..].into(), ..view },
        _ => view,
    };
    crate::array::scalar_if_computed(py, wrap(py, view, handle)?).map(Some)
}

/// `a @ b` ([`matmul_arrays`]) for two vmnp arrays; `None` for anything else (the Python
/// layer's `dot` and `matmul` go on).
#[pyfunction]
pub(crate) fn _dot(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
    match (a.cast::<NdArray>(), b.cast::<NdArray>()) {
        (Ok(a), Ok(b)) => matmul_arrays(py, a, b),
        _ => Ok(None),
    }
}

/// Adds this module's functions to `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_matmul, m)?)?;
    m.add_function(wrap_pyfunction!(_partition, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg, m)?)?;
    m.add_function(wrap_pyfunction!(_dot, m)?)
}
