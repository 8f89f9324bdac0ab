//! Criterion benchmarks of the cpu engine alone (no runtime, no frontend): the cost per
//! instruction of a long batch on tiny arrays with a warm kernel cache, and one heat-equation
//! step. `cargo bench -p vm-cpu`; the whole suite against NumPy is `vm-bench`.
#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use vm_cpu::{Config, CpuEngine};
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

fn base(id: u64, n: usize) -> Base {
    Base { id: BaseId(id), dtype: DType::F64, nelem: n as u64 }
}

fn whole(b: Base) -> Operand {
    Operand::View(View::of_base(b))
}

/// `ops` dependent element-wise instructions on `n` elements (alternately `x * 0.9999` and
/// `x + 0.0001`, each into a new temporary, the previous one freed), then the sum of the last
/// one, synced: what the overhead benchmark of the suite records per loop.
fn chain(n: usize, ops: usize) -> Vec<Instruction> {
    let x = base(1, n);
    let sum = base(2, 1);
    let mut batch = Vec::with_capacity(2 * ops + 3);
    let mut prev = x;
    for k in 0..ops {
        let next = base(10 + k as u64, n);
        let (op, c) = if k % 2 == 0 { (Opcode::Multiply, 0.9999) } else { (Opcode::Add, 0.0001) };
        batch.push(Instruction::new(op, [whole(next), whole(prev), Scalar::F64(c).into()]));
        if prev != x {
            batch.push(Instruction::new(Opcode::Free, [whole(prev)]));
        }
        prev = next;
    }
    let scalar = Operand::View(View::new(sum, 0, &[], &[]).unwrap());
    batch.push(Instruction::new(Opcode::AddReduce, [scalar.clone(), whole(prev), Scalar::I64(0).into()]));
    batch.push(Instruction::new(Opcode::Free, [whole(prev)]));
    batch.push(Instruction::new(Opcode::Sync, [scalar]));
    batch
}

/// One Jacobi step on an `n x n` interior: `work = 0.2 * (c + n + s + e + w)`, the delta
/// `sum(|work - c|)`, `c = work`, temporaries freed.
fn heat_step(n: usize) -> Vec<Instruction> {
    let w = n + 2;
    let grid = base(1, w * w);
    let at = |r: i64, c: i64| Operand::View(View::new(grid, r * w as i64 + c, &[n, n], &[w as i64, 1]).unwrap());
    let t = |id: u64| Operand::View(View::contiguous(base(id, n * n), 0, &[n, n]).unwrap());
    let flat = |id: u64| Operand::View(View::contiguous(base(id, n * n), 0, &[n * n]).unwrap());
    let delta = Operand::View(View::new(base(2, 1), 0, &[], &[]).unwrap());
    let mut batch = vec![
        Instruction::new(Opcode::Add, [t(10), at(1, 1), at(0, 1)]),
        Instruction::new(Opcode::Add, [t(11), t(10), at(2, 1)]),
        Instruction::new(Opcode::Add, [t(12), t(11), at(1, 0)]),
        Instruction::new(Opcode::Add, [t(13), t(12), at(1, 2)]),
        Instruction::new(Opcode::Multiply, [t(3), t(13), Scalar::F64(0.2).into()]),
        Instruction::new(Opcode::Subtract, [t(14), t(3), at(1, 1)]),
        Instruction::new(Opcode::Absolute, [t(15), t(14)]),
        Instruction::new(Opcode::AddReduce, [delta.clone(), flat(15), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Identity, [at(1, 1), t(3)]),
    ];
    for id in [10, 11, 12, 13, 14, 15, 3] {
        batch.push(Instruction::new(Opcode::Free, [t(id)]));
    }
    batch.push(Instruction::new(Opcode::Sync, [delta]));
    batch
}

fn engine() -> CpuEngine {
    CpuEngine::new(Config::default(), None).expect("a cpu engine")
}

fn per_instruction(c: &mut Criterion) {
    let ops = 1000;
    let mut g = c.benchmark_group("per_instruction");
    g.throughput(Throughput::Elements(ops as u64));
    for n in [1, 1024] {
        let batch = chain(n, ops);
        let mut cpu = engine();
        let mut mem = HostMemory::new();
        mem.ensure(&base(1, n)).unwrap();
        g.bench_with_input(BenchmarkId::from_parameter(n), &batch, |b, batch| {
            b.iter(|| cpu.execute(black_box(batch), &mut mem).unwrap())
        });
    }
    g.finish();
}

fn heat(c: &mut Criterion) {
    let mut g = c.benchmark_group("heat_step");
    for n in [500, 1000] {
        let batch = heat_step(n);
        let mut cpu = engine();
        let mut mem = HostMemory::new();
        mem.ensure(&base(1, (n + 2) * (n + 2))).unwrap();
        g.throughput(Throughput::Elements((n * n) as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &batch, |b, batch| {
            b.iter(|| cpu.execute(black_box(batch), &mut mem).unwrap())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = per_instruction, heat
}
criterion_main!(benches);
