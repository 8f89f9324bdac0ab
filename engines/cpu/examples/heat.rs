//! Heat equation (Jacobi, 5-point stencil) on an `n x n` grid: `cargo run --release --example
//! heat -- N ITERS THREADS`. Prints the median seconds per iteration of 5 runs.

use vm_core::{Base, BaseId, Component, DType, HostMemory, Instruction, Opcode, Operand, Scalar, View};
use vm_cpu::{Config, CpuEngine};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let (n, iters, threads) =
        (args.first().copied().unwrap_or(2000), args.get(1).copied().unwrap_or(20), args.get(2).copied().unwrap_or(1));
    let w = n + 2;
    let grid = Base { id: BaseId(1), dtype: DType::F64, nelem: (w * w) as u64 };
    let work = Base { id: BaseId(2), dtype: DType::F64, nelem: (n * n) as u64 };
    let at = |r: i64, c: i64| Operand::View(View::new(grid, r * w as i64 + c, &[n, n], &[w as i64, 1]).unwrap());
    let wv = Operand::View(View::new(work, 0, &[n, n], &[n as i64, 1]).unwrap());
    let step = vec![
        Instruction::new(Opcode::Add, [wv.clone(), at(1, 1), at(0, 1)]),
        Instruction::new(Opcode::Add, [wv.clone(), wv.clone(), at(2, 1)]),
        Instruction::new(Opcode::Add, [wv.clone(), wv.clone(), at(1, 0)]),
        Instruction::new(Opcode::Add, [wv.clone(), wv.clone(), at(1, 2)]),
        Instruction::new(Opcode::Multiply, [wv.clone(), wv.clone(), Scalar::F64(0.2).into()]),
        Instruction::new(Opcode::Identity, [at(1, 1), wv.clone()]),
    ];
    let mut cpu = CpuEngine::new(Config { threads, ..Config::default() }, None).unwrap();
    let mut mem = HostMemory::new();
    mem.ensure(&grid).unwrap().as_mut_slice::<f64>()[..w].fill(100.0);
    let mut times = Vec::new();
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        for _ in 0..iters {
            cpu.execute(&step, &mut mem).unwrap();
        }
        times.push(t0.elapsed().as_secs_f64() / iters as f64);
    }
    times.sort_by(f64::total_cmp);
    let s: f64 = mem.get(grid.id).unwrap().as_slice::<f64>().iter().sum();
    println!("n={n} threads={threads}: median {:.3} ms/iter (checksum {s:.6e})", times[2] * 1e3);
    eprintln!("{}", cpu.profile());
}
