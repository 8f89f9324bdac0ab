//! Random programs shaped like a frontend's: runs of element-wise instructions over one shape
//! each, writing fresh temporaries (of the run's size or larger, so distributed differently)
//! that later instructions of the run read through the written view, and persistent bases
//! through random views; temporaries are freed as soon as they are dead (inside the run, as a
//! runtime does), some are reduced or synced first, and system instructions are mixed in.
//! What a fusing planner must cut into groups and contract.

use crate::fixtures::random_fill;
use crate::generate::random_view_in;
use crate::program::{Program, Step, sync_all};
use crate::rng::Rng;
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};

/// The frontend-shaped program of `seed`, `runs` runs long, over f64 bases of uneven sizes
/// (filled by `random` in the program, so it has no host inputs).
pub fn random_fusable_program(seed: u64, runs: usize) -> Program {
    let mut rng = Rng::new(seed);
    let sizes = [1u64, 3, 17, 60, 100, 400, 1500];
    let persistent: Vec<Base> =
        sizes.iter().zip(1..).map(|(&nelem, i)| Base { id: BaseId(i), dtype: DType::F64, nelem }).collect();
    let mut bases = persistent.clone();
    let mut steps = vec![Step::Batch(persistent.iter().map(|&b| random_fill(b, seed ^ b.id.0)).collect())];
    let mut batch = Vec::new();
    let mut next_id = 100;
    let ops = [Opcode::Add, Opcode::Subtract, Opcode::Multiply, Opcode::Maximum];
    for _ in 0..runs {
        let nd = 1 + rng.below(3);
        let shape: Vec<usize> = (0..nd).map(|_| 1 + rng.below(9)).collect();
        let n: usize = shape.iter().product();
        // Temporaries written in this run: (base, the view written, reads left before its free).
        let mut temps: Vec<(Base, View, usize)> = Vec::new();
        for _ in 0..2 + rng.below(7) {
            let input = |rng: &mut Rng, temps: &mut Vec<(Base, View, usize)>| -> Operand {
                if !temps.is_empty() && rng.below(3) != 0 {
                    let k = rng.below(temps.len());
                    temps[k].2 = temps[k].2.saturating_sub(1);
                    temps[k].1.clone().into()
                } else {
                    random_view_in(rng, &persistent, &shape, false).into()
                }
            };
            let a = input(&mut rng, &mut temps);
            let instr_inputs: Vec<Operand> = match rng.below(4) {
                0 => vec![a],
                1 => vec![a, Scalar::F64(0.25).into()],
                _ => vec![a, input(&mut rng, &mut temps)],
            };
            let out = if rng.below(3) == 0 {
                random_view_in(&mut rng, &persistent, &shape, true)
            } else {
                next_id += 1;
                let extra = [0, 0, 1, 7][rng.below(4)];
                let base = Base { id: BaseId(next_id), dtype: DType::F64, nelem: (n + extra) as u64 };
                let view = View::contiguous(base, rng.below(extra + 1) as i64, &shape).expect("fits");
                temps.push((base, view.clone(), 1 + rng.below(3)));
                view
            };
            let opcode = match instr_inputs.len() {
                1 => [Opcode::Negative, Opcode::Sin, Opcode::Identity][rng.below(3)],
                _ => ops[rng.below(ops.len())],
            };
            batch.push(Instruction::new(opcode, std::iter::once(out.into()).chain(instr_inputs)));
            // Free what is dead, as a runtime would (its reads are used up).
            while let Some(k) = temps.iter().position(|t| t.2 == 0) {
                let (b, _, _) = temps.remove(k);
                batch.push(Instruction::new(Opcode::Free, [View::of_base(b).into()]));
            }
            if rng.below(8) == 0 {
                let b = persistent[rng.below(persistent.len())];
                batch.push(Instruction::new(Opcode::Sync, [View::of_base(b).into()]));
            }
        }
        // What is left of the run: reduced into a persistent base, kept, or freed.
        for (b, v, _) in temps {
            match rng.below(4) {
                0 => {
                    let sum = persistent[0];
                    let flat = View::contiguous(b, v.start, &[n]).expect("fits");
                    let out = View::contiguous(sum, 0, &[]).expect("one element");
                    batch.push(Instruction::new(Opcode::AddReduce, [out.into(), flat.into(), Scalar::I64(0).into()]));
                    batch.push(Instruction::new(Opcode::Free, [View::of_base(b).into()]));
                }
                1 => bases.push(b),
                _ => batch.push(Instruction::new(Opcode::Free, [View::of_base(b).into()])),
            }
        }
        if rng.below(3) == 0 {
            steps.push(Step::Batch(std::mem::take(&mut batch)));
        }
    }
    steps.push(Step::Batch(batch));
    steps.push(Step::Batch(sync_all(&bases)));
    Program { inputs: Vec::new(), bases, steps }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_valid_and_free_their_temporaries_inside_the_run() {
        let mut frees = 0;
        for seed in 0..100 {
            let p = random_fusable_program(seed, 8);
            for batch in p.batches() {
                vm_ir::instr::validate_batch(batch).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            }
            frees += p.instructions().filter(|i| i.opcode == Opcode::Free).count();
        }
        assert!(frees > 500, "{frees} frees");
    }
}
