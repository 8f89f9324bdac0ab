//! The partition cache of `vm_fusion` against a fresh analysis, on the shared random
//! programs and on the same programs under other base ids.

use vm_fusion::{Options, PartitionCache, partition};
use vm_ir::{BaseId, Instruction, Operand};
use vm_testkit::{ProgramSpec, random_program};

/// `batch` with every base id moved by `by` (the same structure under other names).
fn renamed(batch: &[Instruction], by: u64) -> Vec<Instruction> {
    let mut out = batch.to_vec();
    for o in out.iter_mut().flat_map(|i| i.operands.iter_mut()) {
        if let Operand::View(v) = o {
            v.base.id = BaseId(v.base.id.0 + by);
        }
    }
    out
}

#[test]
fn the_partition_cache_answers_renamed_batches_like_a_fresh_analysis() {
    let spec = ProgramSpec::default();
    let mut cache = PartitionCache::default();
    let options = Options::default();
    for seed in 0..400 {
        let p = random_program(seed, &spec);
        for batch in p.batches() {
            assert_eq!(cache.partition(batch, &options), partition(batch, &options), "seed {seed}");
            let again = renamed(batch, 1000);
            assert_eq!(cache.partition(&again, &options), partition(&again, &options), "seed {seed}, renamed");
        }
    }
    assert!(cache.hits >= 400, "every renamed batch is a hit: {} hits", cache.hits);
}
