//! The built-in instructions that do not become generated kernels, in plain Rust: scans,
//! gathers, scatters, and reductions of nothing.

use crate::reduce::{Reducible, scan};
use crate::views;
use vm_core::{Error, HostMemory, Instruction, Kind, Operand, Result, View, with_dtype};

fn view(instr: &Instruction, i: usize) -> Result<&View> {
    instr.operands.get(i).and_then(Operand::as_view).ok_or_else(|| Error::invalid(Some(i), "expected a view"))
}

/// Executes one non-kernel built-in instruction.
pub fn execute(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    match instr.opcode.kind() {
        Kind::Accumulate => accumulate(instr, mem),
        Kind::Gather => gather(instr, mem),
        Kind::Scatter => scatter(instr, mem),
        Kind::Reduce => empty_reduce(instr, mem),
        k => Err(Error::Internal(format!("{} ({k:?}) is not a native instruction", instr.opcode))),
    }
}

fn accumulate(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, input) = (view(instr, 0)?, view(instr, 1)?);
    let axis = instr.axis().ok_or_else(|| Error::invalid(Some(2), "missing axis"))?;
    with_dtype!(out.dtype(), T => {
        let mut data = views::read::<T>(mem, input)?;
        scan(instr.opcode, &mut data, &input.shape, axis);
        views::write(mem, out, &data)
    })
}

fn empty_reduce(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let out = view(instr, 0)?;
    with_dtype!(out.dtype(), T => {
        let values = vec![T::identity(instr.opcode); out.nelem()];
        views::write(mem, out, &values)
    })
}

/// The index view's values as positions, checked against `len`.
fn positions(instr: &Instruction, mem: &mut HostMemory, len: usize) -> Result<Vec<usize>> {
    let index = view(instr, 2)?;
    let raw: Vec<i128> = with_dtype!(index.dtype(), I => {
        views::read::<I>(mem, index)?.into_iter().map(ToIndex::index).collect()
    });
    raw.iter()
        .enumerate()
        .map(|(i, &k)| {
            if k < 0 || k >= len as i128 {
                Err(Error::Execution(format!(
                    "{}: index {k} (at position {i} of the index) is out of range for {len} elements",
                    instr.opcode
                )))
            } else {
                Ok(k as usize)
            }
        })
        .collect()
}

/// Index elements as `i128` (validation admits only integer index dtypes; the others are here
/// for `with_dtype!`).
trait ToIndex: Copy {
    fn index(self) -> i128;
}

macro_rules! to_index {
    ($($t:ty),*) => { $( impl ToIndex for $t { fn index(self) -> i128 { self as i128 } } )* };
}
to_index!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl ToIndex for bool {
    fn index(self) -> i128 {
        i128::from(self)
    }
}

fn gather(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, src) = (view(instr, 0)?, view(instr, 1)?);
    let pos = positions(instr, mem, src.nelem())?;
    with_dtype!(out.dtype(), T => {
        let data = views::read::<T>(mem, src)?;
        let values: Vec<T> = pos.iter().map(|&k| data[k]).collect();
        views::write(mem, out, &values)
    })
}

fn scatter(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let dst = view(instr, 0)?;
    let index = view(instr, 2)?;
    let pos = positions(instr, mem, dst.nelem())?;
    let offsets: Vec<i64> = views::offsets(dst).collect();
    with_dtype!(dst.dtype(), T => {
        let values: Vec<T> = match &instr.operands[1] {
            Operand::View(v) => views::read::<T>(mem, v)?,
            Operand::Const(s) => vec![s.get::<T>(); index.nelem()],
        };
        let data = views::buffer(mem, dst)?.as_mut_slice::<T>();
        for (&k, &x) in pos.iter().zip(&values) {
            data[offsets[k] as usize] = x;
        }
        Ok(())
    })
}
