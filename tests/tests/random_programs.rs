//! Every engine compiled in against the reference `interp` on the same random programs
//! ([`vm_testkit::random_program`]: every opcode of the table but gather and scatter, on
//! seven dtypes, up to 4-d, with slices, negative and broadcast strides, aliasing views,
//! reductions and scans along each axis, temporaries freed mid-batch). A failure names the seed
//! and prints the program in the text form.

use vm_interp::Interp;
use vm_runtime::Component;
use vm_testkit::{Agree, Data, random_program_count as count, random_program_failures};

/// Runs `count` programs on the engine `make` builds; fails naming the seeds that disagree.
fn run(name: &str, count: u64, small: bool, make: impl FnMut() -> Box<dyn Component>) {
    let (_, failures) = random_program_failures(name, count, Data::small_if(small), Agree::REORDERED, make);
    assert!(
        failures.is_empty(),
        "{} of {count} programs disagree:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

fn cpu(threads: usize) -> Box<dyn Component> {
    cpu_with(threads, false)
}

/// The cpu engine over interp; small blocks, so that even small programs run many blocks in
/// parallel. Kernels run on the child the first time only with `first_runs_on_child` (else
/// every small program seen once would test the child against itself).
fn cpu_with(threads: usize, first_runs_on_child: bool) -> Box<dyn Component> {
    cpu_over_interp(vm_cpu::Config { first_runs_on_child, ..small_blocks(threads) })
}

/// `threads` threads and small blocks (64 positions; parallel from 100 positions times
/// operations).
fn small_blocks(threads: usize) -> vm_cpu::Config {
    vm_cpu::Config { threads, block_size: 64, min_parallel: 100, ..vm_cpu::Config::default() }
}

/// The cpu engine configured by `config`, over interp.
fn cpu_over_interp(config: vm_cpu::Config) -> Box<dyn Component> {
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

/// The cpu engine running every row-blocked group it finds, however small (`row_group_bytes`).
fn cpu_in_row_groups(threads: usize) -> Box<dyn Component> {
    cpu_over_interp(vm_cpu::Config { first_runs_on_child: false, row_group_bytes: 1, ..small_blocks(threads) })
}

#[test]
fn cpu_running_row_blocked_groups_agrees_with_interp() {
    run("cpu, row-blocked groups", count(1000), false, || cpu_in_row_groups(2));
}

#[test]
fn cpu_running_first_sightings_on_its_child_agrees_with_interp() {
    run("cpu, first runs on the child", count(300), false, || cpu_with(2, true));
}
