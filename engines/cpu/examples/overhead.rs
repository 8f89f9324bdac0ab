//! Per-instruction cost on small arrays with a warm kernel cache: batches of `OPS` dependent
//! element-wise instructions (`a = a * 1.0001`, `b = a + b`, alternating) on `N` f64 elements,
//! `REPS` times: `cargo run --release --example overhead -- N OPS REPS THREADS`. Prints the median
//! microseconds per instruction of 5 runs.

use vm_cpu::{Config, CpuEngine};
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let arg = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let (n, ops, reps, threads) = (arg(0, 1000), arg(1, 1000), arg(2, 100), arg(3, 1));
    let a = Operand::View(View::of_base(Base { id: BaseId(1), dtype: DType::F64, nelem: n as u64 }));
    let b = Operand::View(View::of_base(Base { id: BaseId(2), dtype: DType::F64, nelem: n as u64 }));
    let batch: Vec<Instruction> = (0..ops)
        .map(|i| match i % 2 {
            0 => Instruction::new(Opcode::Multiply, [a.clone(), a.clone(), Scalar::F64(1.0001).into()]),
            _ => Instruction::new(Opcode::Add, [b.clone(), a.clone(), b.clone()]),
        })
        .collect();
    let mut cpu = CpuEngine::new(Config { threads, ..Config::default() }, None).unwrap();
    let mut mem = HostMemory::new();
    cpu.execute(&batch, &mut mem).unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            cpu.execute(&batch, &mut mem).unwrap();
        }
        times.push(t0.elapsed().as_secs_f64() / (reps * ops) as f64);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "n={n} ops={ops} threads={threads}: median {:.3} us/instruction, min {:.3}",
        times[2] * 1e6,
        times[0] * 1e6
    );
    eprintln!("{}", cpu.profile());
}
