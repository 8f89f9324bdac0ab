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
