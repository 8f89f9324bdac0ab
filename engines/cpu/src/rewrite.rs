//! Batch rewrites done before kernel formation, and [`Rewritten`], the batch they act on.
//!
//! The engine's batch path: [`Rewritten::apply`] the lazy engine's replay (`lazy.rs`) and the
//! split of flat reductions below, each keeping the map back to the submitted batch; partition
//! the result once; rename recyclable temporaries in place (`recycle.rs`, positions unchanged, so
//! the partition and the map stay valid); record pure bases (`lazy.rs`); run the steps.
//!
//! A full reduction of a multi-dimensional array reaches the engine as a reduction along axis 0
//! of a flat (1-D, contiguous) view of it, e.g. `delta = sum(abs(work - center))` in the heat
//! equation. That view has another shape than the kernel that computed the array, so the
//! reduction would start a kernel of its own and the array could not be contracted: one more
//! pass over memory. When the same memory was written earlier in the batch through a contiguous
//! view of shape `S` (more than one dimension), the reduction is split into a reduction along
//! the last axis of the `S`-shaped view (which fuses with the producer) into a small partial
//! array, and a reduction of that partial array, flat, along axis 0. Only floating-point
//! reductions whose input and output dtypes agree are split: the result differs from the
//! unsplit one by the reassociation of the sum, as block partials already do.

use std::borrow::Cow;
use vm_ir::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Scalar, View};

/// A batch on its way through the rewrites, with, for each of its instructions, the position in
/// the submitted batch it comes from (errors name that position).
pub struct Rewritten<'a> {
    batch: Cow<'a, [Instruction]>,
    /// `None` while the batch is the submitted one, position for position.
    origin: Option<Vec<usize>>,
}

impl<'a> Rewritten<'a> {
    /// The submitted batch, not rewritten yet.
    pub fn new(batch: &'a [Instruction]) -> Rewritten<'a> {
        Rewritten { batch: Cow::Borrowed(batch), origin: None }
    }

    /// The batch as rewritten so far.
    pub fn batch(&self) -> &[Instruction] {
        &self.batch
    }

    /// For each instruction of [`Rewritten::batch`], its position in the submitted batch; empty
    /// while they are the same.
    pub fn origin(&self) -> &[usize] {
        self.origin.as_deref().unwrap_or(&[])
    }

    /// Applies a rewrite that returns the new batch and, for each of its instructions, the
    /// position in its input it comes from (`None`: nothing to rewrite); the maps compose.
    pub fn apply(&mut self, rewrite: impl FnOnce(&[Instruction]) -> Option<(Vec<Instruction>, Vec<usize>)>) {
        let Some((batch, from)) = rewrite(&self.batch) else { return };
        self.origin = Some(match &self.origin {
            Some(before) => from.iter().map(|&i| before[i]).collect(),
            None => from,
        });
        self.batch = Cow::Owned(batch);
    }

    /// Applies a rewrite that keeps every instruction at its position (renaming bases, say).
    pub fn replace(&mut self, rewrite: impl FnOnce(&[Instruction]) -> Option<Vec<Instruction>>) {
        if let Some(batch) = rewrite(&self.batch) {
            debug_assert_eq!(batch.len(), self.batch.len());
            self.batch = Cow::Owned(batch);
        }
    }
}

/// Synthetic bases for partial arrays count down from here (below the snapshot bases).
const PARTIAL_BASE: u64 = u64::MAX - (1 << 21);

/// True when `instr` is a full floating-point reduction of a flat contiguous view.
fn flat_full_reduction(instr: &Instruction) -> Option<&View> {
    if instr.opcode.kind() != Kind::Reduce || instr.axis() != Some(0) {
        return None;
    }
    let out = instr.output()?;
    let input = instr.operands.get(1)?.as_view()?;
    let float = matches!(out.dtype(), DType::F32 | DType::F64);
    (float
        && out.dtype() == input.dtype()
        && out.ndim() == 0
        && input.ndim() == 1
        && input.stride[0] == 1
        && input.shape[0] > 1)
        .then_some(input)
}

/// The latest element-wise write before position `i` through a contiguous multi-dimensional
/// view of exactly the memory of `flat`.
fn shaped_producer(batch: &[Instruction], i: usize, flat: &View) -> Option<View> {
    batch[..i].iter().rev().find_map(|p| {
        let w = p.output()?;
        let ok = p.opcode.kind().is_elementwise()
            && w.base.id == flat.base.id
            && w.ndim() >= 2
            && w.shape.last().is_some_and(|&n| n > 1)
            && w.start == flat.start
            && w.nelem() == flat.nelem()
            && w.is_contiguous();
        ok.then(|| w.clone())
    })
}

/// The batch with full reductions of flat views split as the module doc says, and for each of
/// its instructions the position in `batch` of the instruction it comes from; `None` when
/// nothing is split (the common case costs one pass over the opcodes).
pub fn split_flat_reductions(batch: &[Instruction]) -> Option<(Vec<Instruction>, Vec<usize>)> {
    // Decide every split before copying anything: most batches with a flat reduction (a 1-d
    // sum, say) have nothing to split, and copying the batch costs more than deciding.
    let mut next = 0u64;
    let splits: Vec<(usize, [Instruction; 3])> = batch
        .iter()
        .enumerate()
        .filter_map(|(i, instr)| {
            let three = split_one(batch, i, instr, next)?;
            next += 1;
            Some((i, three))
        })
        .collect();
    if splits.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(batch.len() + 2 * splits.len());
    let mut origin = Vec::with_capacity(batch.len() + 2 * splits.len());
    let mut splits = splits.into_iter().peekable();
    for (i, instr) in batch.iter().enumerate() {
        match splits.next_if(|(at, _)| *at == i) {
            Some((_, three)) => {
                out.extend(three);
                origin.extend([i; 3]);
            }
            None => {
                out.push(instr.clone());
                origin.push(i);
            }
        }
    }
    Some((out, origin))
}

/// The three instructions that replace `instr` (at `i` in `batch`) when it is a full reduction
/// of a flat view whose producer is shaped; its partial results go to the `next`-th partial base.
fn split_one(batch: &[Instruction], i: usize, instr: &Instruction, next: u64) -> Option<[Instruction; 3]> {
    let flat = flat_full_reduction(instr)?;
    let w = shaped_producer(batch, i, flat)?;
    let shaped = View::contiguous(flat.base, flat.start, &w.shape).ok()?;
    let lead = &w.shape[..w.ndim() - 1];
    let m: usize = lead.iter().product();
    let part = Base { id: BaseId(PARTIAL_BASE - next), dtype: flat.dtype(), nelem: m as u64 };
    let part_view = View::contiguous(part, 0, lead).ok()?;
    let part_flat = View::contiguous(part, 0, &[m]).ok()?;
    let axis = Scalar::I64(w.ndim() as i64 - 1);
    let first =
        Instruction::new(instr.opcode, [Operand::View(part_view.clone()), Operand::View(shaped), Operand::Const(axis)]);
    let second = Instruction::new(
        instr.opcode,
        [instr.operands[0].clone(), Operand::View(part_flat), Operand::Const(Scalar::I64(0))],
    );
    let free = Instruction::new(Opcode::Free, [Operand::View(part_view)]);
    Some([first, second, free])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_sum_of_a_2d_temporary_is_split() {
        let t = Base { id: BaseId(1), dtype: DType::F64, nelem: 12 };
        let s = Base { id: BaseId(2), dtype: DType::F64, nelem: 1 };
        let batch = vec![
            Instruction::new(
                Opcode::Add,
                [
                    Operand::View(View::contiguous(t, 0, &[3, 4]).unwrap()),
                    Operand::Const(Scalar::F64(1.0)),
                    Operand::Const(Scalar::F64(2.0)),
                ],
            ),
            Instruction::new(
                Opcode::AddReduce,
                [
                    Operand::View(View::new(s, 0, &[], &[]).unwrap()),
                    Operand::View(View::contiguous(t, 0, &[12]).unwrap()),
                    Operand::Const(Scalar::I64(0)),
                ],
            ),
        ];
        let (b, origin) = split_flat_reductions(&batch).expect("split");
        assert_eq!(origin, vec![0, 1, 1, 1]);
        assert_eq!(b[1].operands[1].as_view().unwrap().shape.as_slice(), &[3, 4]);
        assert_eq!(b[1].axis(), Some(1));
        assert_eq!(b[2].operands[1].as_view().unwrap().shape.as_slice(), &[3]);
        assert_eq!(b[3].opcode, Opcode::Free);
        for i in &b {
            i.validate().unwrap();
        }
    }
}
