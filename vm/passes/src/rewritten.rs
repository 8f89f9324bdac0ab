//! [`Rewritten`]: a batch on its way through the passes.

use std::borrow::Cow;
use vm_ir::Instruction;

/// A batch on its way through the rewrites, with, for each of its instructions, the position in
/// the submitted batch it comes from (errors name that position).
pub struct Rewritten<'a> {
    batch: Cow<'a, [Instruction]>,
    /// `None` while the batch is the submitted one, position for position.
    origin: Option<Vec<usize>>,
    /// Rewrites applied so far.
    changes: u32,
}

impl<'a> Rewritten<'a> {
    /// The submitted batch, not rewritten yet.
    pub fn new(batch: &'a [Instruction]) -> Rewritten<'a> {
        Rewritten { batch: Cow::Borrowed(batch), origin: None, changes: 0 }
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
        self.changes += 1;
    }

    /// Applies a rewrite that keeps every instruction at its position (renaming bases, say).
    pub fn replace(&mut self, rewrite: impl FnOnce(&[Instruction]) -> Option<Vec<Instruction>>) {
        if let Some(batch) = rewrite(&self.batch) {
            debug_assert_eq!(batch.len(), self.batch.len());
            self.batch = Cow::Owned(batch);
            self.changes += 1;
        }
    }

    /// How many rewrites changed the batch so far.
    pub fn changes(&self) -> u32 {
        self.changes
    }
}
