//! Dropping an engine returns its compiled code's memory: a process that makes and drops engines
//! (a context per task, an engine per test program) does not grow. (A test binary of its own: it
//! reads the process's resident memory.)

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar};
use vm_runtime::{Component, HostMemory};

/// Resident memory of this process in KiB (`VmRSS` of `/proc/self/status`); `None` where there
/// is no such file.
fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn dropped_engines_return_their_code_memory() {
    let (a, b) = (base(1, DType::F64, 4096), base(2, DType::F64, 4096));
    let batch = vec![
        Instruction::new(Opcode::Multiply, vec![whole(b), whole(a), Scalar::F64(3.0).into()]),
        Instruction::new(Opcode::Sqrt, vec![whole(b), whole(b)]),
        Instruction::new(Opcode::Sync, vec![whole(b)]),
    ];
    let cycle = || {
        let mut mem = HostMemory::new();
        mem.ensure(&a).unwrap();
        let config = vm_cpu::Config { first_runs_on_child: false, threads: 1, ..vm_cpu::Config::default() };
        let mut cpu = vm_cpu::CpuEngine::new(config, None).unwrap();
        cpu.execute(&batch, &mut mem).unwrap();
        // Kernels of other structures, compiled in turn.
        for (k, op) in [Opcode::Add, Opcode::Subtract, Opcode::Divide, Opcode::Maximum].into_iter().enumerate() {
            let step = vec![
                Instruction::new(op, vec![whole(b), whole(b), Scalar::F64(k as f64).into()]),
                Instruction::new(Opcode::Sync, vec![whole(b)]),
            ];
            cpu.execute(&step, &mut mem).unwrap();
        }
        assert!(cpu.profile().cache.misses >= 1, "a kernel was compiled");
    };
    cycle(); // the first engine's lasting allocations (thread-locals, libraries)
    let Some(before) = resident_kib() else { return };
    for _ in 0..1000 {
        cycle();
    }
    let after = resident_kib().unwrap();
    // Without returning the code memory, each engine keeps about 37 KiB of it.
    assert!(after < before + 8 * 1024, "{before} KiB resident before 1000 engines, {after} KiB after");
}
