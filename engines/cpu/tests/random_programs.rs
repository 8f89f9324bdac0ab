//! Thousands of the test kit's random programs (every opcode of the table but gather and
//! scatter, seven dtypes, shapes up to 4-d, slices, negative strides, broadcasts, aliasing
//! views, reductions along each axis, scans, temporaries freed mid-batch) run on `cpu` with 1
//! and 3 threads and compared with the reference `interp`; and programs over bases of uneven
//! sizes in several batches with host writes between them, which deferred bases must survive.
//! A failure names the seed and lists the program.

mod common;

use common::*;
use vm_testkit::{ProgramSpec, random_program};

/// How many programs to run (`VM_RANDOM_PROGRAMS` overrides).
fn count(default: u64) -> u64 {
    std::env::var("VM_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[test]
fn random_programs_match_interp() {
    let count = count(1500);
    // The final syncs in a batch of their own, so that bases are deferred and replayed.
    let spec = ProgramSpec { sync_apart: true, ..ProgramSpec::default() };
    let (mut kernels, mut fused, mut contracted, mut hits) = (0, 0, 0, 0);
    let (mut deferred, mut replayed) = (0, 0);
    for seed in 0..count {
        let program = random_program(seed, &spec);
        for threads in [1, 3] {
            // Both optimisation levels of Cranelift, on alternate seeds.
            let opt_level = if seed % 2 == 0 { "none" } else { "speed" };
            let mut cpu = engine_at(threads, opt_level);
            check_program(&mut cpu, &program, true, &format!("seed {seed}, {threads} threads, opt_level {opt_level}"));
            let p = cpu.profile();
            kernels += p.kernels;
            fused += p.fused_instructions;
            contracted += p.contracted;
            hits += p.cache.hits;
            deferred += p.deferred;
            replayed += p.replayed;
        }
    }
    eprintln!(
        "{kernels} kernels, {fused} instructions in kernels, {contracted} contracted, {hits} cache hits, \
         {deferred} deferred, {replayed} replayed"
    );
    assert!(fused > kernels * 5 / 4, "fusion happens");
    assert!(contracted > count / 10, "contraction happens");
    assert!(deferred > 0 && replayed > 0, "pure bases are deferred, and replayed when read");
}

#[test]
fn uneven_programs_with_host_writes_match_interp() {
    let spec = ProgramSpec::uneven();
    let mut replayed = 0;
    for seed in 0..count(300) {
        let program = random_program(seed, &spec);
        let mut cpu = engine(3);
        check_program(&mut cpu, &program, seed % 2 == 0, &format!("uneven seed {seed}"));
        replayed += cpu.profile().replayed;
    }
    assert!(replayed > 0, "deferred bases are replayed when read");
}

#[test]
fn programs_match_interp_with_each_pass_and_every_pass_turned_off() {
    let spec = ProgramSpec { sync_apart: true, ..ProgramSpec::default() };
    let every = vm_passes::STANDARD.join(",");
    let offs: Vec<&str> = vm_passes::STANDARD.iter().copied().chain([every.as_str()]).collect();
    for (k, off) in offs.iter().enumerate() {
        let config = vm_cpu::Config { threads: 2, passes_off: off.to_string(), ..vm_cpu::Config::default() };
        for seed in (0..count(40)).map(|s| 1_000_000 + 100 * k as u64 + s) {
            let mut cpu = vm_cpu::CpuEngine::new(config.clone(), None).unwrap();
            check_program(&mut cpu, &random_program(seed, &spec), true, &format!("seed {seed}, passes_off {off:?}"));
        }
    }
    // With `lazy` off nothing is deferred.
    let config = vm_cpu::Config { passes_off: "lazy".into(), ..vm_cpu::Config::default() };
    let mut cpu = vm_cpu::CpuEngine::new(config, None).unwrap();
    for seed in 0..count(40) {
        check_program(&mut cpu, &random_program(seed, &spec), true, &format!("seed {seed}, lazy off"));
    }
    assert_eq!(cpu.profile().deferred, 0);
}

#[test]
fn an_unknown_pass_name_is_refused_with_the_list_of_passes() {
    let config = vm_cpu::Config { passes_off: "hoist, hoisting".into(), ..vm_cpu::Config::default() };
    let Err(e) = vm_cpu::CpuEngine::new(config, None) else { panic!("an unknown pass was accepted") };
    let text = e.to_string();
    assert!(text.contains("[cpu] passes_off = \"hoist, hoisting\": no optimizer pass is named `hoisting`"), "{text}");
    assert!(text.contains(&vm_passes::STANDARD.join(", ")) && text.matches("invalid argument").count() == 1, "{text}");
}
