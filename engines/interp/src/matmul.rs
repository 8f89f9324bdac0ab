//! The `matmul` extension method: `matmul out, a, b` with 2-d views `a` (M x K), `b` (K x N)
//! and `out` (M x N) of one numeric dtype: `out[m, n] = sum_k a[m, k] * b[k, n]`, summed for
//! k = 0, 1, ... starting from 0 (integers wrap).

use crate::elem::Elem;
use crate::elementwise::not_defined;
use crate::iterate::{data, prepare, result, write_view};
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

/// `out = a @ b`, row-major, for the 2-d views `a` (m x k) and `b` (k x n), read in place from
/// their bases' data `x` and `y` (broadcast views cost nothing however large `k` is).
fn product<'m, T: Elem>(
    (x, a): (&'m [T], &'m View),
    (y, b): (&'m [T], &'m View),
) -> Result<impl ExactSizeIterator<Item = T> + 'm> {
    let add = T::binary(Opcode::Add).ok_or_else(|| not_defined(Opcode::Add, T::DTYPE))?;
    let mul = T::binary(Opcode::Multiply).ok_or_else(|| not_defined(Opcode::Multiply, T::DTYPE))?;
    let zero = T::reduce_identity(Opcode::AddReduce).ok_or_else(|| not_defined(Opcode::AddReduce, T::DTYPE))?;
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let at = |v: &View, r: usize, c: usize| (v.start + r as i64 * v.stride[0] + c as i64 * v.stride[1]) as usize;
    Ok((0..m * n).map(move |ij| {
        let (i, j) = (ij / n, ij % n);
        (0..k).fold(zero, |acc, p| add(acc, mul(x[at(a, i, p)], y[at(b, p, j)])))
    }))
}

/// Executes a `matmul` instruction.
pub fn matmul(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, a, b) = operands(instr)?;
    prepare(mem, instr)?;
    with_dtype!(out.dtype(), T => {
        let values = product((data::<T>(mem, a)?, a), (data::<T>(mem, b)?, b))?;
        let values = result(out, values)?;
        write_view(mem, out, values)
    })
}
