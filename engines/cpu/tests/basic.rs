//! Hand-computed checks of the cpu engine: fusion, reductions, system instructions, the cache.

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar};
use vm_runtime::{Component, HostMemory};

fn ins(op: Opcode, ops: Vec<vm_ir::Operand>) -> Instruction {
    Instruction::new(op, ops)
}

#[test]
fn add_multiply_and_sum() {
    let (a, b, c, s) = (base(1, DType::F64, 5), base(2, DType::F64, 5), base(3, DType::F64, 5), base(4, DType::F64, 1));
    let mut mem = HostMemory::new();
    mem.ensure(&a).unwrap().as_mut_slice::<f64>().copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0]);
    mem.ensure(&b).unwrap().as_mut_slice::<f64>().copy_from_slice(&[10.0, 20.0, 30.0, 40.0, 50.0]);
    let batch = vec![
        ins(Opcode::Add, vec![whole(c), whole(a), whole(b)]),
        ins(Opcode::Multiply, vec![whole(c), whole(c), Scalar::F64(2.0).into()]),
        ins(Opcode::AddReduce, vec![view(s, 0, &[], &[]), whole(c), Scalar::I64(0).into()]),
        ins(Opcode::Sync, vec![whole(c)]),
    ];
    let mut cpu = CpuEngine::with_threads(1).unwrap();
    cpu.execute(&batch, &mut mem).unwrap();
    assert_eq!(mem.get(c.id).unwrap().as_slice::<f64>(), &[22.0, 44.0, 66.0, 88.0, 110.0]);
    assert_eq!(mem.get(s.id).unwrap().as_slice::<f64>(), &[330.0]);
    let p = cpu.profile();
    assert_eq!((p.kernels, p.cache.misses), (1, 1));
}

use vm_cpu::CpuEngine;

#[test]
fn float32_sums_are_accurate_to_a_few_ulp() {
    // Ten million f32 values 0.1 summed whole (per-block sums in f32 would be off by dozens of
    // ulp), and 0.1 * (i % 7) along the rows and the columns of a 2500 x 4000 grid.
    let n = 10_000_000;
    let (rows, cols) = (2500, 4000);
    let (x, y) = (base(1, DType::F32, n), base(5, DType::F32, n));
    let (total, by_row, by_col) = (base(2, DType::F32, 1), base(3, DType::F32, rows), base(4, DType::F32, cols));
    let mut mem = HostMemory::new();
    mem.ensure(&x).unwrap().as_mut_slice::<f32>().fill(0.1);
    let values: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.1).collect();
    mem.ensure(&y).unwrap().as_mut_slice::<f32>().copy_from_slice(&values);
    let grid = || view(y, 0, &[rows, cols], &[cols as i64, 1]);
    let batch = vec![
        ins(Opcode::AddReduce, vec![view(total, 0, &[], &[]), whole(x), Scalar::I64(0).into()]),
        ins(Opcode::AddReduce, vec![whole(by_row), grid(), Scalar::I64(1).into()]),
        ins(Opcode::AddReduce, vec![whole(by_col), grid(), Scalar::I64(0).into()]),
    ];
    let mut cpu = CpuEngine::with_threads(2).unwrap();
    cpu.execute(&batch, &mut mem).unwrap();
    let close = |got: f32, want: f64, what: &str| {
        assert!(((got as f64) - want).abs() <= 4.0 * f32::EPSILON as f64 * want.abs(), "{what}: {got} vs {want}");
    };
    close(mem.get(total.id).unwrap().as_slice::<f32>()[0], n as f64 * 0.1f32 as f64, "total");
    for (r, &got) in mem.get(by_row.id).unwrap().as_slice::<f32>().iter().enumerate() {
        close(got, values[r * cols..(r + 1) * cols].iter().map(|&v| v as f64).sum(), "row");
    }
    for (c, &got) in mem.get(by_col.id).unwrap().as_slice::<f32>().iter().enumerate() {
        close(got, (0..rows).map(|r| values[r * cols + c] as f64).sum(), "column");
    }
}

/// f32 sums (accumulated in f64) along each axis of 3-d grids whose last axis is short or odd,
/// from a contiguous input and from one broadcast along the last axis: the vector loop reads
/// the f32 elements two at a time and widens them; interp sums one at a time.
#[test]
fn float32_sums_along_every_axis_of_short_rows_match_interp() {
    for last in [1, 2, 3, 5, 8, 9, 17] {
        let (a, b) = (7, 6);
        let n = a * b * last;
        let x = base(1, DType::F32, n);
        let flat = base(2, DType::F32, a * b);
        let grid = view(x, 0, &[a, b, last], &[(b * last) as i64, last as i64, 1]);
        let spread = view(flat, 0, &[a, b, last], &[b as i64, 1, 0]);
        let mut batch = Vec::new();
        let mut outs = Vec::new();
        for (k, input) in [grid, spread].into_iter().enumerate() {
            for axis in 0..3 {
                let mut shape = vec![a, b, last];
                shape.remove(axis);
                let out = base(10 + 3 * k as u64 + axis as u64, DType::F32, shape[0] * shape[1]);
                let strides = [shape[1] as i64, 1];
                batch.push(ins(
                    Opcode::AddReduce,
                    vec![view(out, 0, &shape, &strides), input.clone(), Scalar::I64(axis as i64).into()],
                ));
                outs.push(out);
            }
        }
        differential(&batch, &[x, flat], &outs, 2, false, &format!("last axis of {last}"));
    }
}

/// A reduction whose output lies in its own input (`a[0] = a.sum()`, `r[i] = m[i, :].sum()`
/// written over `m`'s first column) reads the input before writing: the output does not start
/// from the identity while the blocks still read it.
#[test]
fn reductions_into_their_own_input_read_it_first() {
    let a = base(1, DType::F64, 3);
    let m = base(2, DType::F64, 12);
    let batch = vec![
        ins(Opcode::AddReduce, vec![view(a, 0, &[], &[]), view(a, 0, &[3], &[0]), Scalar::I64(0).into()]),
        ins(Opcode::AddReduce, vec![view(a, 1, &[], &[]), whole(a), Scalar::I64(0).into()]),
        ins(Opcode::MultiplyReduce, vec![view(m, 0, &[4], &[3]), view(m, 0, &[4, 3], &[3, 1]), Scalar::I64(1).into()]),
    ];
    for threads in [1, 2] {
        let mut mem = HostMemory::new();
        mem.ensure(&a).unwrap().as_mut_slice::<f64>().copy_from_slice(&[1.5, 2.0, 4.0]);
        let values: Vec<f64> = (1..=12).map(f64::from).collect();
        mem.ensure(&m).unwrap().as_mut_slice::<f64>().copy_from_slice(&values);
        let mut cpu =
            CpuEngine::new(vm_cpu::Config { first_runs_on_child: false, ..small_blocks(threads) }, None).unwrap();
        cpu.execute(&batch, &mut mem).unwrap();
        cpu.execute(&[ins(Opcode::Sync, vec![whole(a)]), ins(Opcode::Sync, vec![whole(m)])], &mut mem).unwrap();
        // a[0] = 3 * 1.5; a[1] = 4.5 + 2 + 4; each row's product over the row's first element.
        assert_eq!(mem.get(a.id).unwrap().as_slice::<f64>(), &[4.5, 10.5, 4.0], "{threads} threads");
        let m_out = mem.get(m.id).unwrap().as_slice::<f64>();
        let products: Vec<f64> = (0..4).map(|r| m_out[3 * r]).collect();
        assert_eq!(products, [6.0, 120.0, 504.0, 1320.0], "{threads} threads");
    }
}
