//! Generators (`range`, `random`) and indexing (`gather`, `scatter`).

use crate::elem::Elem;
use crate::elementwise::{expect_operands, output};
use crate::iterate::{buffer, offsets, read_operand, read_view, write_view};
use vm_core::random::{FromRandomBits, random_bits};
use vm_core::scalar::Cast;
use vm_core::{Error, HostMemory, Instruction, Operand, Result, Scalar, View, with_dtype};

/// `out[i] = i` for `0 <= i < n`, cast to `T`.
fn iota<T: Elem>(n: usize) -> Vec<T>
where
    u64: Cast<T>,
{
    (0..n as u64).map(Cast::cast).collect()
}

/// Executes `range out`: `out[i] = i` (row-major position), cast to out's dtype.
pub fn range(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 1)?;
    let out = output(instr)?;
    with_dtype!(out.dtype(), T => write_view(mem, out, &iota::<T>(out.nelem())))
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
        let values: Vec<T> =
            (0..out.nelem() as u64).map(|i| T::from_random_bits(random_bits(seed, offset.wrapping_add(i)))).collect();
        write_view(mem, out, &values)
    })
}

/// The index view (operand 2) read row-major as exact integers.
fn read_index(instr: &Instruction, mem: &mut HostMemory) -> Result<(Vec<i128>, View)> {
    let index = instr.operands[2]
        .as_view()
        .ok_or_else(|| Error::invalid(Some(2), format!("{}'s index must be a view", instr.opcode)))?;
    let values = with_dtype!(index.dtype(), I => {
        read_view::<I>(mem, index)?.into_iter().map(Elem::to_index).collect::<Option<Vec<i128>>>()
    });
    let values = values.ok_or_else(|| {
        Error::invalid(Some(2), format!("{}'s index must be an integer dtype, got {}", instr.opcode, index.dtype()))
    })?;
    Ok((values, index.clone()))
}

/// The positions `index` as `usize`, after checking every one against `len`: an error naming
/// the first index out of range, before anything is written.
fn check_indices(what: &str, index: &[i128], len: usize) -> Result<Vec<usize>> {
    index
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            if k < 0 || k >= len as i128 {
                Err(Error::Execution(format!(
                    "{what}: index {k} (at position {i} of the index) is out of range for {len} elements"
                )))
            } else {
                Ok(k as usize)
            }
        })
        .collect()
}

/// Executes `gather out, src, index`: `out[i] = src.flat[index[i]]`.
pub fn gather(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 3)?;
    let out = output(instr)?;
    let src = instr.operands[1]
        .as_view()
        .ok_or_else(|| Error::invalid(Some(1), "gather's source must be a view".to_string()))?;
    let (index, index_view) = read_index(instr, mem)?;
    if index_view.shape != out.shape {
        return Err(Error::invalid(Some(2), "gather: the index's shape differs from the output's".to_string()));
    }
    let positions = check_indices("gather", &index, src.nelem())?;
    with_dtype!(out.dtype(), T => {
        let data = read_view::<T>(mem, src)?;
        let values: Vec<T> = positions.iter().map(|&k| data[k]).collect();
        write_view(mem, out, &values)
    })
}

/// Executes `scatter dst, src, index`: `dst.flat[index[i]] = src[i]`; where an index repeats,
/// the largest `i` wins.
pub fn scatter(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 3)?;
    let dst = output(instr)?;
    let (index, index_view) = read_index(instr, mem)?;
    let positions = check_indices("scatter", &index, dst.nelem())?;
    with_dtype!(dst.dtype(), T => {
        let values = read_operand::<T>(mem, &instr.operands[1], &index_view.shape)?;
        let dst_offsets: Vec<usize> = offsets(dst).collect();
        let data = buffer(mem, &dst.base)?.as_mut_slice::<T>();
        for (&k, &v) in positions.iter().zip(&values) {
            data[dst_offsets[k]] = v;
        }
        Ok(())
    })
}
