//! `sort` and `argsort`: each line along the axis in [`vm_ir::semantics::sort_lines`]' order;
//! the extension methods `partition` and `argpartition`: each line along the last axis by
//! [`vm_ir::semantics::partition_line`] and [`vm_ir::semantics::argpartition_line`];
//! `searchsorted_left` and `searchsorted_right`: [`vm_ir::semantics::search_sorted`]. The
//! whole input is read before the output is written, so the output may be the input.

use crate::elementwise::output;
use crate::iterate::{elements, prepare, room, write_view};
use crate::reduce::input_and_axis;
use vm_ir::semantics::{argpartition_line, argsort_lines, partition_line, search_sorted, sort_lines};
use vm_ir::{Error, Instruction, Result, with_dtype};
use vm_runtime::HostMemory;

/// Runs `sort` (`positions` false) or `argsort` (true).
pub fn sort(instr: &Instruction, positions: bool, mem: &mut HostMemory) -> Result<()> {
    let (input, axis) = input_and_axis(instr)?;
    let out = output(instr)?;
    prepare(mem, instr)?;
    let n = input.nelem();
    with_dtype!(input.dtype(), T => {
        let mut values: Vec<T> = room(out, n)?;
        values.extend(elements::<T>(mem, input)?);
        if positions {
            let mut sorted: Vec<i64> = room(out, n)?;
            sorted.resize(n, 0);
            argsort_lines(&values, &input.shape, axis, &mut sorted);
            write_view(mem, out, sorted)
        } else {
            sort_lines(&mut values, &input.shape, axis);
            write_view(mem, out, values)
        }
    })
}

/// Runs the extension method `partition` (`positions` false) or `argpartition` (true).
pub fn partition(instr: &Instruction, positions: bool, mem: &mut HostMemory) -> Result<()> {
    let (out, input, lo, hi) = vm_ir::extension::partition_operands(instr, positions)?;
    prepare(mem, instr)?;
    let (n, len) = (input.nelem(), input.shape[input.ndim() - 1]);
    with_dtype!(input.dtype(), T => {
        let mut values: Vec<T> = room(out, n)?;
        values.extend(elements::<T>(mem, input)?);
        if positions {
            let mut at: Vec<i64> = room(out, n)?;
            at.resize(n, 0);
            for (line, p) in values.chunks_exact(len).zip(at.chunks_exact_mut(len)) {
                argpartition_line(line, lo, hi, p);
            }
            write_view(mem, out, at)
        } else {
            values.chunks_exact_mut(len).for_each(|line| partition_line(line, lo, hi));
            write_view(mem, out, values)
        }
    })
}

/// Runs `searchsorted_left` (`right` false) or `searchsorted_right` (true).
pub fn search(instr: &Instruction, right: bool, mem: &mut HostMemory) -> Result<()> {
    let input = |k: usize| {
        instr.operands[k].as_view().ok_or_else(|| Error::invalid(Some(k), format!("{} searches views", instr.opcode)))
    };
    let (sorted, keys) = (input(1)?, input(2)?);
    let out = output(instr)?;
    prepare(mem, instr)?;
    with_dtype!(sorted.dtype(), T => {
        let mut values: Vec<T> = room(sorted, sorted.nelem())?;
        values.extend(elements::<T>(mem, sorted)?);
        let mut wanted: Vec<T> = room(keys, keys.nelem())?;
        wanted.extend(elements::<T>(mem, keys)?);
        let mut positions: Vec<i64> = room(out, out.nelem())?;
        positions.resize(out.nelem(), 0);
        search_sorted(&values, &wanted, right, &mut positions);
        write_view(mem, out, positions)
    })
}
