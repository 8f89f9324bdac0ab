//! Throughput of a few one-instruction kernels on `n` f64 elements: `cargo run --release
//! --example elementwise -- N THREADS`. Prints the median milliseconds of 7 runs per kernel.

use vm_cpu::{Config, CpuEngine};
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let (n, threads) = (args.first().copied().unwrap_or(10_000_000), args.get(1).copied().unwrap_or(1));
    let a = Base { id: BaseId(1), dtype: DType::F64, nelem: n as u64 };
    let b = Base { id: BaseId(2), dtype: DType::F64, nelem: n as u64 };
    let s = Base { id: BaseId(3), dtype: DType::F64, nelem: 1 };
    let (va, vb) = (Operand::View(View::of_base(a)), Operand::View(View::of_base(b)));
    let vs = Operand::View(View::new(s, 0, &[], &[]).unwrap());
    let mut cpu = CpuEngine::new(Config { threads, ..Config::default() }, None).unwrap();
    let mut mem = HostMemory::new();
    let init = [Instruction::new(Opcode::Random, [va.clone(), Scalar::U64(1).into(), Scalar::U64(0).into()])];
    cpu.execute(&init, &mut mem).unwrap();
    let cases: Vec<(&str, Vec<Instruction>)> = vec![
        (
            "b = a * 2 + 1",
            vec![
                Instruction::new(Opcode::Multiply, [vb.clone(), va.clone(), Scalar::F64(2.0).into()]),
                Instruction::new(Opcode::Add, [vb.clone(), vb.clone(), Scalar::F64(1.0).into()]),
            ],
        ),
        ("b = exp(a)", vec![Instruction::new(Opcode::Exp, [vb.clone(), va.clone()])]),
        ("b = log(a)", vec![Instruction::new(Opcode::Log, [vb.clone(), va.clone()])]),
        ("b = sin(a)", vec![Instruction::new(Opcode::Sin, [vb.clone(), va.clone()])]),
        ("s = sum(a)", vec![Instruction::new(Opcode::AddReduce, [vs.clone(), va.clone(), Scalar::I64(0).into()])]),
    ];
    for (name, batch) in cases {
        let mut times = Vec::new();
        for _ in 0..7 {
            let t0 = std::time::Instant::now();
            cpu.execute(&batch, &mut mem).unwrap();
            times.push(t0.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        println!("{name:16} n={n} threads={threads}: median {:.3} ms", times[3] * 1e3);
    }
}
