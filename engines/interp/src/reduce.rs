//! Reductions and scans along one axis of a view of any layout. The input is read row-major into
//! a `Vec` of its shape; the axis is then walked with plain index arithmetic.
//!
//! Order of combination: along the axis, left to right, starting from the first element
//! (`((x0 op x1) op x2) ...`), as NumPy does for a non-empty reduction without an `initial`
//! (so the sum of `[-0.0]` is `-0.0`). An empty axis gives the opcode's identity. NumPy sums
//! floats pairwise, so float sums of NumPy and of this engine may differ in rounding.

use crate::elem::{Elem, to_bool_binary, truth};
use crate::elementwise::{expect_operands, not_defined, output};
use crate::iterate::{read_view, write_view};
use vm_core::{Error, HostMemory, Instruction, Opcode, Result, TypeRule, View, with_dtype};

/// The shape split at `axis`: (product of the dims before, the axis' extent, product after).
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// Reduces row-major `data` of `shape` along `axis` with `f`; `identity` for an empty axis.
/// The result is row-major in `shape` without `axis`.
pub fn reduce_axis<T: Copy>(data: &[T], shape: &[usize], axis: usize, identity: T, f: fn(T, T) -> T) -> Vec<T> {
    let (outer, len, inner) = split(shape, axis);
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| data[(o * len + k) * inner + i];
            let r = if len == 0 { identity } else { (1..len).fold(at(0), |acc, k| f(acc, at(k))) };
            out.push(r);
        }
    }
    out
}

/// The running reduction of row-major `data` of `shape` along `axis` with `f` (same shape).
pub fn accumulate_axis<T: Copy>(data: &[T], shape: &[usize], axis: usize, f: fn(T, T) -> T) -> Vec<T> {
    let (outer, len, inner) = split(shape, axis);
    let mut out = data.to_vec();
    for o in 0..outer {
        for i in 0..inner {
            for k in 1..len {
                let (prev, here) = ((o * len + k - 1) * inner + i, (o * len + k) * inner + i);
                out[here] = f(out[prev], data[here]);
            }
        }
    }
    out
}

/// The reduced view (operand 1) and the axis (operand 2, checked against the view).
fn input_and_axis(instr: &Instruction) -> Result<(&View, usize)> {
    expect_operands(instr, 3)?;
    let input = instr.operands[1]
        .as_view()
        .ok_or_else(|| Error::invalid(Some(1), format!("{} reduces a view, not a constant", instr.opcode)))?;
    let axis = instr.operands[2].as_const().map(|s| s.as_i64()).unwrap_or(-1);
    if axis < 0 || axis as usize >= input.ndim() {
        return Err(Error::invalid(Some(2), format!("axis {axis} out of range for a {}-d input", input.ndim())));
    }
    Ok((input, axis as usize))
}

/// A function combining two truth values.
type Logical = fn(bool, bool) -> bool;

/// The combining function and empty-axis identity of a logical reduction, on truth values.
fn logical(op: Opcode) -> Option<(Logical, bool)> {
    let (combiner, identity) = match op {
        Opcode::LogicalAndReduce => (Opcode::LogicalAnd, true),
        Opcode::LogicalOrReduce => (Opcode::LogicalOr, false),
        Opcode::LogicalXorReduce => (Opcode::LogicalXor, false),
        _ => return None,
    };
    Some((to_bool_binary::<bool>(combiner)?, identity))
}

/// Executes a [`vm_core::Kind::Reduce`] instruction.
pub fn reduce(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let op = instr.opcode;
    let (input, axis) = input_and_axis(instr)?;
    let out = output(instr)?;
    let dt = input.dtype();
    match op.type_rule() {
        TypeRule::Same(_) => with_dtype!(dt, T => {
            let f = op.combiner().and_then(T::binary).ok_or_else(|| not_defined(op, dt))?;
            let identity = T::reduce_identity(op).ok_or_else(|| not_defined(op, dt))?;
            let data = read_view::<T>(mem, input)?;
            write_view(mem, out, &reduce_axis(&data, &input.shape, axis, identity, f))
        }),
        TypeRule::ToBool(_) => with_dtype!(dt, T => {
            let (f, identity) = logical(op).ok_or_else(|| not_defined(op, dt))?;
            let data: Vec<bool> = read_view::<T>(mem, input)?.into_iter().map(truth).collect();
            write_view(mem, out, &reduce_axis(&data, &input.shape, axis, identity, f))
        }),
        rule => Err(Error::Internal(format!("reduction {op} with type rule {rule:?}"))),
    }
}

/// Executes a [`vm_core::Kind::Accumulate`] instruction.
pub fn accumulate(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let op = instr.opcode;
    let (input, axis) = input_and_axis(instr)?;
    let out = output(instr)?;
    let dt = input.dtype();
    with_dtype!(dt, T => {
        let f = op.combiner().and_then(T::binary).ok_or_else(|| not_defined(op, dt))?;
        let data = read_view::<T>(mem, input)?;
        write_view(mem, out, &accumulate_axis(&data, &input.shape, axis, f))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_and_accumulate_each_axis_of_a_small_block() {
        // shape [2, 3], row-major [[1, 2, 3], [4, 5, 6]]
        let data = [1i32, 2, 3, 4, 5, 6];
        let add: fn(i32, i32) -> i32 = |a, b| a + b;
        assert_eq!(reduce_axis(&data, &[2, 3], 0, 0, add), vec![5, 7, 9]);
        assert_eq!(reduce_axis(&data, &[2, 3], 1, 0, add), vec![6, 15]);
        assert_eq!(accumulate_axis(&data, &[2, 3], 0, add), vec![1, 2, 3, 5, 7, 9]);
        assert_eq!(accumulate_axis(&data, &[2, 3], 1, add), vec![1, 3, 6, 4, 9, 15]);
        assert_eq!(reduce_axis(&[] as &[i32], &[3, 0], 1, 7, add), vec![7, 7, 7]);
        assert_eq!(reduce_axis(&[] as &[i32], &[0, 3], 1, 7, add), Vec::<i32>::new());
    }
}
