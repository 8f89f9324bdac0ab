//! Heat equation (Jacobi, 5-point stencil) on an `n x n` grid, as the frontend emits it (see
//! BENCHMARKS.md: `work = 0.2*(c+n+s+e+w)`, `delta = sum(abs(work-c))`, `c[:] = work`, with
//! temporaries created and freed): `cargo run --release --example heat -- N ITERS THREADS`.
//! Prints the median milliseconds per iteration of 5 runs and the profile.

use vm_cpu::{Config, CpuEngine};
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let (n, iters, threads) =
        (args.first().copied().unwrap_or(2000), args.get(1).copied().unwrap_or(20), args.get(2).copied().unwrap_or(1));
    let w = n + 2;
    let grid = Base { id: BaseId(1), dtype: DType::F64, nelem: (w * w) as u64 };
    let at = |r: i64, c: i64| Operand::View(View::new(grid, r * w as i64 + c, &[n, n], &[w as i64, 1]).unwrap());
    let tmp = |id: u64| Base { id: BaseId(id), dtype: DType::F64, nelem: (n * n) as u64 };
    let tv = |id: u64| Operand::View(View::contiguous(tmp(id), 0, &[n, n]).unwrap());
    let flat = |id: u64| Operand::View(View::contiguous(tmp(id), 0, &[n * n]).unwrap());
    let delta = Base { id: BaseId(99), dtype: DType::F64, nelem: 1 };
    let dv = Operand::View(View::new(delta, 0, &[], &[]).unwrap());
    let free = |id: u64| Instruction::new(Opcode::Free, [tv(id)]);
    let step = vec![
        Instruction::new(Opcode::Add, [tv(10), at(1, 1), at(0, 1)]),
        Instruction::new(Opcode::Add, [tv(11), tv(10), at(2, 1)]),
        free(10),
        Instruction::new(Opcode::Add, [tv(12), tv(11), at(1, 2)]),
        free(11),
        Instruction::new(Opcode::Add, [tv(13), tv(12), at(1, 0)]),
        free(12),
        Instruction::new(Opcode::Multiply, [tv(2), tv(13), Scalar::F64(0.2).into()]),
        free(13),
        Instruction::new(Opcode::Subtract, [tv(14), tv(2), at(1, 1)]),
        Instruction::new(Opcode::Absolute, [tv(15), tv(14)]),
        free(14),
        Instruction::new(Opcode::AddReduce, [dv.clone(), flat(15), Scalar::I64(0).into()]),
        free(15),
        Instruction::new(Opcode::Identity, [at(1, 1), tv(2)]),
        free(2),
    ];
    let mut cpu = CpuEngine::new(Config { threads, ..Config::default() }, None).unwrap();
    let mut mem = HostMemory::new();
    mem.ensure(&grid).unwrap().as_mut_slice::<f64>()[..w].fill(40.0);
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
    let d = mem.get(delta.id).unwrap().as_slice::<f64>()[0];
    println!(
        "n={n} threads={threads}: median {:.3} ms/iter, min {:.3} (checksum {s:.6e}, delta {d:.6e})",
        times[2] * 1e3,
        times[0] * 1e3
    );
    eprintln!("{}", cpu.profile());
}
