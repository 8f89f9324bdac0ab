//! Generators (`range`, `random`) and indexing (`gather`, `scatter`).

use crate::elem::Elem;
use crate::elementwise::{expect_operands, not_defined, output};
use crate::iterate::{Elements, buffer, contiguous_run, data, elements, operand, prepare, result, room, write_view};
use vm_ir::random::{FromRandomBits, random_bits};
use vm_ir::scalar::Cast;
use vm_ir::{BinaryOp, DType, Error, Instruction, Operand, Result, Scalar, View, with_dtype};
use vm_runtime::HostMemory;

/// Executes `range out`: `out[i] = i` (row-major position), cast to out's dtype.
pub fn range(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 1)?;
    let out = output(instr)?;
    // Nothing is read, so the values go straight into the output.
    with_dtype!(out.dtype(), T => write_view(mem, out, (0..out.nelem()).map(|i| Cast::<T>::cast(i as u64))))
}

/// The `u64` constant parameter at operand `i`.
fn u64_param(instr: &Instruction, i: usize) -> Result<u64> {
    match instr.operands.get(i) {
        Some(Operand::Const(Scalar::U64(x))) => Ok(*x),
        _ => Err(Error::invalid(Some(i), format!("{} expects a u64 constant here", instr.opcode))),
    }
}

/// Executes `random out, seed, offset`: the element at row-major position `i` is drawn from
/// counter `offset + i` (wrapping) of the Philox stream keyed by `seed`.
pub fn random(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 3)?;
    let out = output(instr)?;
    let (seed, offset) = (u64_param(instr, 1)?, u64_param(instr, 2)?);
    with_dtype!(out.dtype(), T => {
        let values =
            (0..out.nelem()).map(|i| T::from_random_bits(random_bits(seed, offset.wrapping_add(i as u64))));
        write_view(mem, out, values)
    })
}

/// The index view (operand 2), which must have an integer dtype.
fn index_view(instr: &Instruction) -> Result<&View> {
    let index = instr.operands[2]
        .as_view()
        .ok_or_else(|| Error::invalid(Some(2), format!("{}'s index must be a view", instr.opcode)))?;
    if !index.dtype().is_integer() {
        return Err(Error::invalid(
            Some(2),
            format!("{}'s index must be an integer dtype, got {}", instr.opcode, index.dtype()),
        ));
    }
    Ok(index)
}

/// The index view's elements, row-major, read in place (its base must be prepared), as exact
/// integers ([`index_view`] admits integer dtypes only, so nothing maps to the -1 fallback).
fn raw_index<'m>(mem: &'m HostMemory, index: &'m View) -> Result<Box<dyn ExactSizeIterator<Item = i128> + 'm>> {
    with_dtype!(index.dtype(), I => {
        let values = elements::<I>(mem, index)?;
        Ok(Box::new(values.map(|k| Elem::to_index(k).unwrap_or(-1))))
    })
}

/// The positions the index view holds, each checked against `len` before anything is written
/// (an error names the first index out of range), in a `Vec` allocated fallibly as the result
/// of an instruction writing `out`. A contiguous `int64` index (what frontends build) is read
/// as a slice.
fn checked_positions(what: &str, mem: &HostMemory, index: &View, len: usize, out: &View) -> Result<Vec<usize>> {
    let out_of_range = |i: usize, k: i128| {
        Error::Execution(format!("{what}: index {k} (at position {i} of the index) is out of range for {len} elements"))
    };
    let mut positions = room(out, index.nelem())?;
    if index.dtype() == DType::I64
        && let Some(run) = contiguous_run(index)
    {
        for (i, &k) in data::<i64>(mem, index)?[run].iter().enumerate() {
            if k < 0 || k as u64 >= len as u64 {
                return Err(out_of_range(i, k.into()));
            }
            positions.push(k as usize);
        }
        return Ok(positions);
    }
    for (i, k) in raw_index(mem, index)?.enumerate() {
        if k < 0 || k >= len as i128 {
            return Err(out_of_range(i, k));
        }
        positions.push(k as usize);
    }
    Ok(positions)
}

/// The base offset of each row-major position of `view`: one multiply-add for a view on one
/// line of its base, else the position decomposed into an index.
fn offset_of(view: &View) -> impl Fn(usize) -> usize + '_ {
    let line = view.line_stride();
    move |k| match line {
        Some(s) => (view.start + k as i64 * s) as usize,
        None => view.offset_at(k) as usize,
    }
}

/// Executes `gather out, src, index`: `out[i] = src.flat[index[i]]`.
pub fn gather(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 3)?;
    let out = output(instr)?;
    let src = instr.operands[1]
        .as_view()
        .ok_or_else(|| Error::invalid(Some(1), "gather's source must be a view".to_string()))?;
    let index = index_view(instr)?;
    if index.shape != out.shape {
        return Err(Error::invalid(Some(2), "gather: the index's shape differs from the output's".to_string()));
    }
    prepare(mem, instr)?;
    let positions = checked_positions("gather", mem, index, src.nelem(), out)?;
    with_dtype!(out.dtype(), T => {
        // The source is indexed where it lies: a broadcast source may be far larger than its base.
        let from = data::<T>(mem, src)?;
        let values = match src.line_stride() {
            Some(1) => {
                let run = &from[src.start as usize..src.start as usize + src.nelem()];
                result(out, positions.iter().map(|&k| run[k]), mem.interrupt())?
            }
            _ => {
                let at = offset_of(src);
                result(out, positions.iter().map(|&k| from[at(k)]), mem.interrupt())?
            }
        };
        write_view(mem, out, values)
    })
}

/// Executes `scatter dst, src, index`: `dst.flat[index[i]] = src[i]`, where an index repeats
/// the largest `i` winning; with `combine` (`scatter_add`), `dst.flat[index[i]] =
/// combine(dst.flat[index[i]], src[i])` in the order of `i`.
pub fn scatter(instr: &Instruction, mem: &mut HostMemory, combine: Option<BinaryOp>) -> Result<()> {
    expect_operands(instr, 3)?;
    let dst = output(instr)?;
    let index = index_view(instr)?;
    prepare(mem, instr)?;
    let positions = checked_positions(instr.opcode.name(), mem, index, dst.nelem(), dst)?;
    with_dtype!(dst.dtype(), T => {
        // The writes are staged, so that a source or index overlapping the destination is read
        // in full first; there is one per index element, the size of the instruction's result.
        let values: Elements<T> = operand(mem, &instr.operands[1], &index.shape)?;
        let at = offset_of(dst);
        let writes = positions.iter().zip(values).map(|(&k, v)| (at(k), v));
        let writes = result(dst, writes, mem.interrupt())?;
        let data = buffer(mem, &dst.base)?.as_mut_slice::<T>();
        match combine {
            None => writes.into_iter().for_each(|(o, v)| data[o] = v),
            Some(op) => {
                let f = T::binary(op).ok_or_else(|| not_defined(instr.opcode, dst.dtype()))?;
                writes.into_iter().for_each(|(o, v)| data[o] = f(data[o], v));
            }
        }
        Ok(())
    })
}
