//! Criterion benchmarks of kernel formation alone: the cost per instruction of partitioning a
//! batch, for a loop whose iterations each form kernels of their own (a convolution over
//! output positions) and for a stencil whose long expressions fuse. `cargo bench -p vm-fusion`.
#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};

fn base(id: u64, n: usize) -> Base {
    Base { id: BaseId(id), dtype: DType::F64, nelem: n as u64 }
}

fn view(b: Base, start: i64, shape: &[usize], stride: &[i64]) -> Operand {
    Operand::View(View::new(b, start, shape, stride).expect("a valid view"))
}

fn free(b: Base) -> Instruction {
    Instruction::new(Opcode::Free, [Operand::View(View::of_base(b))])
}

/// A direct convolution over `positions` output positions, as NumPy code writes it
/// (`out[:, i, j, :] = sum(x[:, i:i+3, j:j+3, :, None] * w[None], axis=(1, 2, 3))`): per
/// position a 5-d product into a temporary, its sum over the window, the sum plus 0.0, the
/// store into the output, and the temporaries freed. No two consecutive instructions have the
/// same iteration shape, and no later product reads what an earlier one wrote.
fn convolution(positions: usize) -> Vec<Instruction> {
    let (n, k, c) = (8, 3, 8);
    let x = base(1, n * 16 * 16 * c);
    let w = base(2, k * k * c * c);
    let out = base(3, n * positions * c);
    let mut batch = Vec::new();
    for p in 0..positions {
        let id = 10 + 3 * p as u64;
        let (prod, sum) = (base(id, n * k * k * c * c), base(id + 1, n * c));
        let window = view(x, (p % 13 * c) as i64, &[n, k, k, c, c], &[2048, 128, 8, 1, 0]);
        let weights = view(w, 0, &[n, k, k, c, c], &[0, 192, 64, 8, 1]);
        let product = view(prod, 0, &[n, k, k, c, c], &[576, 192, 64, 8, 1]);
        let rows = view(sum, 0, &[n, c], &[c as i64, 1]);
        batch.push(Instruction::new(Opcode::Multiply, [product, window, weights]));
        let flat = view(prod, 0, &[n, k * k * c, c], &[576, 8, 1]);
        batch.push(Instruction::new(Opcode::AddReduce, [rows.clone(), flat, Scalar::I64(1).into()]));
        batch.push(Instruction::new(Opcode::Add, [rows.clone(), rows.clone(), Scalar::F64(0.0).into()]));
        let stored = view(out, (p * c) as i64, &[n, c], &[(positions * c) as i64, 1]);
        batch.push(Instruction::new(Opcode::Identity, [stored, rows]));
        batch.push(free(prod));
        batch.push(free(sum));
    }
    batch
}

/// `steps` time steps of a five-point stencil on an `n x n` interior, each a chain of
/// element-wise instructions over shifted views into temporaries, the result copied back.
fn stencil(n: usize, steps: usize) -> Vec<Instruction> {
    let w = n + 2;
    let grid = base(1, w * w);
    let at = |r: i64, c: i64| view(grid, r * w as i64 + c, &[n, n], &[w as i64, 1]);
    let mut batch = Vec::new();
    let mut id = 10;
    for _ in 0..steps {
        let t: Vec<Base> = (0..6).map(|k| base(id + k, n * n)).collect();
        id += 6;
        let tv = |k: usize| view(t[k], 0, &[n, n], &[n as i64, 1]);
        batch.push(Instruction::new(Opcode::Add, [tv(0), at(1, 1), at(0, 1)]));
        batch.push(Instruction::new(Opcode::Add, [tv(1), tv(0), at(2, 1)]));
        batch.push(Instruction::new(Opcode::Add, [tv(2), tv(1), at(1, 0)]));
        batch.push(Instruction::new(Opcode::Add, [tv(3), tv(2), at(1, 2)]));
        batch.push(Instruction::new(Opcode::Multiply, [tv(4), tv(3), Scalar::F64(0.2).into()]));
        batch.push(Instruction::new(Opcode::Subtract, [tv(5), tv(4), at(1, 1)]));
        batch.push(Instruction::new(Opcode::Identity, [at(1, 1), tv(4)]));
        batch.extend(t.into_iter().map(free));
    }
    batch
}

fn partition(c: &mut Criterion) {
    let options = vm_fusion::Options { max_instructions: 256, ordered_float_products: true };
    let mut group = c.benchmark_group("partition");
    for (name, batch) in [("convolution", convolution(600)), ("stencil", stencil(64, 100))] {
        batch.iter().for_each(|i| i.validate().expect("a valid instruction"));
        group.throughput(Throughput::Elements(batch.len() as u64));
        group.bench_function(name, |b| b.iter(|| black_box(vm_fusion::partition(black_box(&batch), &options))));
    }
    group.finish();
}

criterion_group!(benches, partition);
criterion_main!(benches);
