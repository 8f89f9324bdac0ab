//! The `matmul` extension method: `matmul out, a, b` with 2-d views `a` (M x K), `b` (K x N)
//! and `out` (M x N) of one numeric dtype: `out[m, n] = sum_k a[m, k] * b[k, n]`, summed for
//! k = 0, 1, ... starting from 0 (integers wrap).

use crate::elem::Elem;
use crate::elementwise::not_defined;
use crate::iterate::{read_view, write_view};
use vm_core::instr::visits_each_element_once;
use vm_core::{Error, HostMemory, Instruction, Opcode, Result, View, with_dtype};

/// The name the extension is registered under.
pub const NAME: &str = "matmul";

/// Checks the operands of a `matmul` instruction and returns them as (out, a, b).
fn operands(instr: &Instruction) -> Result<(&View, &View, &View)> {
    if instr.operands.len() != 3 {
        return Err(Error::invalid(None, format!("matmul takes 3 operands (out, a, b), got {}", instr.operands.len())));
    }
    let mut views = Vec::with_capacity(3);
    for (i, o) in instr.operands.iter().enumerate() {
        let v = o.as_view().ok_or_else(|| Error::invalid(Some(i), "matmul's operands must be views, not constants"))?;
        if v.ndim() != 2 {
            return Err(Error::invalid(Some(i), format!("matmul needs 2-d views, this one is {}-d", v.ndim())));
        }
        views.push(v);
    }
    let (out, a, b) = (views[0], views[1], views[2]);
    let dt = out.dtype();
    if dt.is_float() || dt.is_integer() {
        for (i, v) in [(1, a), (2, b)] {
            if v.dtype() != dt {
                return Err(Error::invalid(
                    Some(i),
                    format!("matmul: dtype mismatch, output is {dt} but this is {}", v.dtype()),
                ));
            }
        }
    } else {
        return Err(Error::invalid(Some(0), format!("matmul needs a numeric dtype (not bool), got {dt}")));
    }
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    if b.shape[0] != k {
        return Err(Error::invalid(
            Some(2),
            format!("matmul: a is {m}x{k} but b is {}x{n}; inner extents differ", b.shape[0]),
        ));
    }
    if out.shape[..] != [m, n] {
        return Err(Error::invalid(
            Some(0),
            format!("matmul: output is {}x{}, expected {m}x{n}", out.shape[0], out.shape[1]),
        ));
    }
    if !visits_each_element_once(out) {
        return Err(Error::invalid(Some(0), format!("output view {out} visits some element more than once")));
    }
    Ok((out, a, b))
}

/// `out = a @ b` for row-major `a` (m x k) and `b` (k x n).
fn product<T: Elem>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Result<Vec<T>> {
    let add = T::binary(Opcode::Add).ok_or_else(|| not_defined(Opcode::Add, T::DTYPE))?;
    let mul = T::binary(Opcode::Multiply).ok_or_else(|| not_defined(Opcode::Multiply, T::DTYPE))?;
    let zero = T::reduce_identity(Opcode::AddReduce).ok_or_else(|| not_defined(Opcode::AddReduce, T::DTYPE))?;
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            out.push((0..k).fold(zero, |acc, p| add(acc, mul(a[i * k + p], b[p * n + j]))));
        }
    }
    Ok(out)
}

/// Executes a `matmul` instruction.
pub fn matmul(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, a, b) = operands(instr)?;
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    with_dtype!(out.dtype(), T => {
        let (x, y) = (read_view::<T>(mem, a)?, read_view::<T>(mem, b)?);
        write_view(mem, out, &product(&x, &y, m, k, n)?)
    })
}
