//! Every engine compiled in against the reference `interp` on the same random programs
//! ([`vm_testkit::random_program`]: every opcode of the table but gather and scatter, on
//! seven dtypes, up to 4-d, with slices, negative and broadcast strides, aliasing views,
//! reductions and scans along each axis, temporaries freed mid-batch). A failure names the seed
//! and prints the program in the text form.

use vm_interp::Interp;
use vm_runtime::Component;
use vm_testkit::{Agree, Data, ProgramSpec, differential, random_program};

/// How many programs each engine runs (`VM_RANDOM_PROGRAMS` overrides).
fn count(default: u64) -> u64 {
    std::env::var("VM_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Runs `count` programs on the engine `make` builds; collects the seeds that disagree.
fn run(name: &str, count: u64, small: bool, mut make: impl FnMut() -> Box<dyn Component>) {
    let spec = ProgramSpec::default();
    let mut failures = Vec::new();
    let mut subject = make();
    for seed in 0..count {
        let program = random_program(seed, &spec);
        let mut reference = Interp::new(None);
        if let Err(e) =
            differential(subject.as_mut(), &mut reference, &program, Data::small_if(small), Agree::REORDERED)
        {
            failures.push(format!("{name}, seed {seed}: {e}\n{}", program.listing()));
            subject = make();
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} programs disagree:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

fn cpu(threads: usize) -> Box<dyn Component> {
    // Small blocks, so that even small programs run many blocks in parallel.
    let config = vm_cpu::Config { threads, block_size: 64, min_parallel: 100, ..vm_cpu::Config::default() };
    Box::new(vm_cpu::CpuEngine::new(config, Some(Box::new(Interp::new(None)))).unwrap())
}

#[test]
fn cpu_on_one_thread_agrees_with_interp() {
    run("cpu, 1 thread", count(1000), false, || cpu(1));
}

#[test]
fn cpu_on_three_threads_agrees_with_interp() {
    run("cpu, 3 threads", count(1000), true, || cpu(3));
}
