//! The `cholesky` extension method ([`vm_ir::extension::CHOLESKY`]), factorised by `faer`:
//! each `n x n` matrix of the input is copied row-major into a buffer, factorised there (its
//! lower triangle read and overwritten with `L`), its upper triangle zeroed, and written out.

use crate::elem::Elem;
use crate::iterate::{elements, prepare, room, write_view};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::{MatMut, Par};
use vm_ir::{DType, Error, Instruction, Result, Scalar};
use vm_runtime::HostMemory;

/// The name the extension is registered under.
pub const NAME: &str = vm_ir::extension::CHOLESKY;

/// Runs `cholesky out, a`.
pub fn cholesky(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, input) = vm_ir::extension::cholesky_operands(instr)?;
    prepare(mem, instr)?;
    match input.dtype() {
        DType::F32 => factorise::<f32>(mem, out, input),
        DType::F64 => factorise::<f64>(mem, out, input),
        d => Err(Error::invalid(Some(1), format!("cholesky needs a float dtype, got {d}"))),
    }
}

/// Factorises every matrix of `input` into `out` (see the module documentation).
fn factorise<T: Elem + faer::traits::RealField>(
    mem: &mut HostMemory,
    out: &vm_ir::View,
    input: &vm_ir::View,
) -> Result<()> {
    let n = input.shape[input.ndim() - 1];
    let mut values: Vec<T> = room(out, input.nelem())?;
    values.extend(elements::<T>(mem, input)?);
    let scratch = cholesky_in_place_scratch::<T>(n, Par::Seq, Default::default());
    let mut buffer = MemBuffer::try_new(scratch)
        .map_err(|_| Error::OutOfMemory(format!("cholesky's scratch space for {n} x {n} matrices")))?;
    let stack = MemStack::new(&mut buffer);
    for (k, matrix) in values.chunks_exact_mut((n * n).max(1)).enumerate() {
        if k > 0 {
            mem.interrupt().check()?;
        }
        let a = MatMut::from_row_major_slice_mut(matrix, n, n);
        if cholesky_in_place(a, Default::default(), Par::Seq, stack, Default::default()).is_err() {
            matrix.fill(T::from_scalar(Scalar::F64(f64::NAN)));
            continue;
        }
        for (i, row) in matrix.chunks_exact_mut(n).enumerate() {
            row[i + 1..].fill(T::from_scalar(Scalar::F64(0.0)));
        }
    }
    write_view(mem, out, values)
}
