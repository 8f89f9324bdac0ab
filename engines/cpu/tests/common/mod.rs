//! The cpu engine's test fixtures: engines configured for tests (small blocks, so that even
//! small tests run many blocks in parallel), and the test kit's differential run against the
//! reference `interp` under cpu's rule for agreeing, [`AGREE`].
#![allow(dead_code, unused_imports)] // each test binary uses part of the fixtures

use vm_cpu::CpuEngine;
use vm_interp::Interp;
use vm_ir::{Base, Instruction};
use vm_runtime::HostMemory;
use vm_testkit::{Agree, Data, Program, Step};

pub use vm_testkit::fixtures::{base, view, whole};

/// How cpu's results agree with interp's: integers and bools exactly; floats within
/// `Tolerance::REORDERED`, because reductions add per-block partials in another order
/// (everything element-wise is bit-identical: the same libm routines).
pub const AGREE: Agree = Agree::REORDERED;

/// Fills `base` in `mem` with the kit's data from `seed`: small values when `small`.
pub fn fill(mem: &mut HostMemory, base: &Base, seed: u64, small: bool) {
    vm_testkit::data::fill(mem, base, seed, Data::small_if(small)).unwrap();
}

/// Compares every base the reference holds under [`AGREE`]; panics naming `what` on a mismatch.
pub fn compare(cpu: &HostMemory, reference: &HostMemory, bases: &[Base], what: &str) {
    if let Err(e) = vm_testkit::compare(cpu, reference, bases, AGREE) {
        panic!("{what}: {e}");
    }
}

/// Runs `batch` on a cpu engine with `threads` threads and on interp from the same initial data
/// (`init`: bases filled by the kit), and compares every base in `bases`.
pub fn differential(
    batch: &[Instruction],
    init: &[Base],
    bases: &[Base],
    threads: usize,
    small: bool,
    what: &str,
) -> vm_cpu::profile::Profile {
    differential_on(engine(threads), batch, init, bases, small, what)
}

/// [`differential`] on a given cpu engine.
pub fn differential_on(
    mut cpu: CpuEngine,
    batch: &[Instruction],
    init: &[Base],
    bases: &[Base],
    small: bool,
    what: &str,
) -> vm_cpu::profile::Profile {
    let program = Program { inputs: init.to_vec(), bases: bases.to_vec(), steps: vec![Step::Batch(batch.to_vec())] };
    check_program(&mut cpu, &program, small, what);
    cpu.profile()
}

/// Runs `program` on `cpu` and on interp and compares them under [`AGREE`]; panics naming
/// `what` and listing the program on a mismatch.
pub fn check_program(cpu: &mut CpuEngine, program: &Program, small: bool, what: &str) {
    let data = Data::small_if(small);
    if let Err(e) = vm_testkit::differential(cpu, &mut Interp::new(None), program, data, AGREE) {
        panic!("{what}: {e}\n{}", program.listing());
    }
}

/// A cpu engine with `threads` threads and small blocks, so that even small tests run many
/// blocks in parallel.
pub fn engine(threads: usize) -> CpuEngine {
    engine_at(threads, &vm_cpu::Config::default().opt_level)
}

/// [`engine`] compiling at Cranelift optimisation level `opt_level`.
pub fn engine_at(threads: usize, opt_level: &str) -> CpuEngine {
    let config = vm_cpu::Config { opt_level: opt_level.into(), ..small_blocks(threads) };
    CpuEngine::new(config, None).unwrap()
}

/// The configuration of [`engine`]: `threads` threads, blocks of 64 positions, and parallel
/// runs from 100 positions times operations.
pub fn small_blocks(threads: usize) -> vm_cpu::Config {
    vm_cpu::Config { threads, block_size: 64, min_parallel: 100, ..vm_cpu::Config::default() }
}
