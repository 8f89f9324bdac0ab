//! Where to cut a full batch: at a whole number of periods of the loop that filled it.
//!
//! A loop that is never observed (`for i in range(n): x = x * a + b`, read once at the end)
//! reaches the runtime as one long stream of instructions, cut into batches only because a batch
//! is full. Cut at a fixed count, every batch starts at another point of the loop's body, so no
//! two batches have the same structure: the engines' caches (partitions, compiled kernels) miss
//! on every batch, and a JIT engine compiles all the time. Cut after a whole number of the
//! loop's periods, every batch after the first has the same structure.
//!
//! The period is found on the batch's *structure* (opcodes, dtypes, view layouts; not base ids
//! or constant values, which change from one iteration to the next): the longest tail of the
//! batch that repeats itself, shifted by its period, over at least [`MIN_OVERLAP`] instructions.

use std::hash::{Hash, Hasher};
use vm_ir::instr::{Instruction, Operand};

/// The least number of instructions a tail must have in common with itself shifted by its
/// period to count as repeating (shorter repeats are as likely chance as loops).
pub const MIN_OVERLAP: usize = 64;

/// A hash of the structure of `instr`: its opcode, axis and operands' kinds, dtypes and view
/// layouts, not its bases or constant values.
fn structure(instr: &Instruction) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    instr.opcode.id().hash(&mut h);
    instr.axis().hash(&mut h);
    for o in &instr.operands {
        match o {
            Operand::Const(s) => (1u8, s.dtype().id()).hash(&mut h),
            Operand::View(v) => {
                (2u8, v.dtype().id(), v.start).hash(&mut h);
                v.shape.hash(&mut h);
                v.stride.hash(&mut h);
            }
        }
    }
    h.finish()
}

/// How many instructions at the end of `batch` to leave pending so that what runs now ends
/// after a whole number of periods of the batch's repeating tail (0: run it all); `None` when
/// the batch does not repeat (a loop whose steps differ in shape: `x[:k]` for a growing `k`).
pub fn leftover(batch: &[Instruction]) -> Option<usize> {
    let n = batch.len();
    if n < 2 * MIN_OVERLAP {
        return None;
    }
    // The batch backwards: a prefix of `rev` is a tail of the batch, and a border of that prefix
    // (a prefix that is also its suffix) of length b says that the tail repeats with period
    // `len - b`. The prefix function gives every prefix's longest border.
    let rev: Vec<u64> = batch.iter().rev().map(structure).collect();
    let mut border = vec![0usize; n];
    for i in 1..n {
        let mut k = border[i - 1];
        while k > 0 && rev[i] != rev[k] {
            k = border[k - 1];
        }
        if rev[i] == rev[k] {
            k += 1;
        }
        border[i] = k;
    }
    // The longest tail, down to half the batch, that repeats.
    let len = (n / 2..=n).rev().find(|&len| border[len - 1] >= MIN_OVERLAP)?;
    let period = len - border[len - 1];
    // The tail starts at `n - len`, a point of the loop's body; the batch ends at the last
    // whole period after it, so the next batch starts at that same point.
    Some(len % period)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::DType;
    use vm_ir::instr::Operand;
    use vm_ir::opcode::Opcode;
    use vm_ir::scalar::Scalar;
    use vm_ir::view::{Base, BaseId, View};

    fn op(opcode: Opcode, id: u64, n: usize, c: f64) -> Instruction {
        let v = |id| Operand::View(View::of_base(Base { id: BaseId(id), dtype: DType::F64, nelem: n as u64 }));
        Instruction::new(opcode, [v(id + 1), v(id), Operand::Const(Scalar::F64(c))])
    }

    /// `steps` of a loop body of `ops` multiplies then a sum, each on a fresh base, from `at`.
    fn stream(at: usize, steps: usize, ops: usize) -> Vec<Instruction> {
        (0..steps * (ops + 1))
            .skip(at)
            .take(steps * (ops + 1) - at)
            .map(|i| {
                let opcode = if i % (ops + 1) == ops { Opcode::Add } else { Opcode::Multiply };
                op(opcode, i as u64, 100, i as f64)
            })
            .collect()
    }

    #[test]
    fn a_repeating_batch_ends_after_whole_periods_wherever_it_starts() {
        for at in [0, 1, 5, 29] {
            let batch: Vec<_> = stream(at, 100, 29).into_iter().take(1000).collect();
            let keep = leftover(&batch).expect("a repeating batch");
            let ran = 1000 - keep;
            // What runs ends where the next batch starts at the same point of the body.
            assert_eq!(ran % 30, 0, "from {at}: {keep} left");
            assert!(keep < 30, "from {at}: {keep} left");
        }
    }

    #[test]
    fn a_period_longer_than_half_the_batch_is_found() {
        // 2002 instructions per iteration, a batch of 4000: one period runs, the rest waits.
        let batch: Vec<_> = stream(700, 3, 2001).into_iter().take(4000).collect();
        assert_eq!(leftover(&batch), Some(4000 - 2002));
    }

    #[test]
    fn batches_that_do_not_repeat_run_whole() {
        let batch: Vec<_> = (0..1000).map(|i| op(Opcode::Multiply, 0, i + 1, 1.0)).collect();
        assert_eq!(leftover(&batch), None);
        assert_eq!(leftover(&stream(0, 1, 50)), None, "too short to tell");
        // Constants and base ids are not structure: a loop over other values is the same loop.
        let same: Vec<_> = (0..1000).map(|i| op(Opcode::Multiply, 3 * i, 10, i as f64)).collect();
        assert_eq!(leftover(&same), Some(0), "period 1 divides everything");
    }
}
