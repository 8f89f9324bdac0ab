//! `argmin_reduce` and `argmax_reduce` on `cpu` against the reference `interp`: every dtype,
//! every axis of 1-d to 4-d views (contiguous, strided, reversed, broadcast along the reduced
//! axis or another), with blocks of 1 to 64 positions and 1 or 3 threads, so that lines are cut
//! into groups and into pieces, walked line by line and position by position. The positions are
//! integers: any difference is a bug, whatever the cut.

mod common;

use common::*;
use vm_ir::view::row_major_strides;
use vm_ir::{Base, DType, Instruction, Opcode, Scalar};
use vm_testkit::fixtures::layouts;

fn engine_with(threads: usize, block_size: usize) -> vm_cpu::CpuEngine {
    let config = vm_cpu::Config { threads, block_size, min_parallel: 10, ..vm_cpu::Config::default() };
    vm_cpu::CpuEngine::new(config, None).unwrap()
}

#[test]
fn every_axis_of_every_layout_matches_interp_whatever_the_cut() {
    let shapes: [&[usize]; 6] = [&[150], &[9, 31], &[40, 3], &[5, 1, 7], &[3, 4, 2, 6], &[1, 70]];
    let mut count = 0;
    for d in DType::ALL {
        for shape in shapes {
            let n = 2 * shape.iter().product::<usize>() + 4;
            let a = base(1, d, n);
            for (name, start, strides) in layouts(shape, n) {
                for axis in 0..shape.len() {
                    let mut rest = shape.to_vec();
                    rest.remove(axis);
                    let out = base(100, DType::I64, rest.iter().product::<usize>().max(1));
                    let o = view(out, 0, &rest, &row_major_strides(&rest));
                    for op in [Opcode::ArgminReduce, Opcode::ArgmaxReduce] {
                        let batch = vec![Instruction::new(
                            op,
                            [o.clone(), view(a, start, shape, &strides), Scalar::I64(axis as i64).into()],
                        )];
                        for (threads, block) in [(1, 64), (3, 1), (3, 7), (3, 64)] {
                            // Small values make ties; full-range floats have NaN and infinities.
                            for small in [true, false] {
                                let what =
                                    format!("{op} {d} {name} {shape:?} axis {axis}, threads {threads}, block {block}");
                                let bases: [Base; 2] = [a, out];
                                differential_on(engine_with(threads, block), &batch, &[a], &bases, small, &what);
                                count += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(count > 5000, "{count}");
}

#[test]
fn a_temporary_reduced_to_a_position_is_computed_first() {
    // argmax(a * b) with the product freed after: the temporary cannot be contracted, because
    // the reduction to a position runs outside the kernel that computes it.
    let (a, b, t, s) =
        (base(1, DType::F32, 1000), base(2, DType::F32, 1000), base(3, DType::F32, 1000), base(4, DType::I64, 1));
    let batch = vec![
        Instruction::new(Opcode::Multiply, [whole(t), whole(a), whole(b)]),
        Instruction::new(Opcode::ArgmaxReduce, [view(s, 0, &[], &[]), whole(t), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Free, [whole(t)]),
    ];
    for threads in [1, 3] {
        let p = differential(&batch, &[a, b], &[a, b, s], threads, false, "argmax of a product");
        assert_eq!((p.kernels, p.native), (1, 1), "{p:?}");
    }
}
