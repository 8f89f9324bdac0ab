//! Extension methods of the stack that vmnp records as one instruction each: `matmul`.
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
use smallvec::smallvec;
use std::sync::OnceLock;
use vm_ir::{DType, Opcode, Operand};

/// The opcode the stack gave `matmul`, or `None` when no component implements it.
fn matmul_opcode() -> PyResult<Option<Opcode>> {
    static OPCODE: OnceLock<Option<Opcode>> = OnceLock::new();
    if let Some(op) = OPCODE.get() {
        return Ok(*op);
    }
    let op = vm()?.with(|rt| Ok(rt.register_extension(vm_ir::extension::MATMUL).ok()))?;
    Ok(*OPCODE.get_or_init(|| op))
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

/// Adds this module's functions to `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_matmul, m)?)
}
