//! `argmin_reduce` and `argmax_reduce` on the cluster (ranks as threads) against the reference
//! engine, byte for byte: lines cut by block boundaries, full reductions of a distributed base,
//! outputs in the input's base, on tie-rich data of several dtypes (floats with NaN).

use vm_cluster::{LocalTransport, local_cluster};
use vm_interp::Interp;
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Scalar, View};
use vm_runtime::Component;
use vm_testkit::fixtures::random_fill;
use vm_testkit::generate::random_view_in;
use vm_testkit::program::sync_all;
use vm_testkit::{Agree, Data, Program, Rng, differential, run};

/// Runs `prog` on `p` ranks and on the reference: the same bytes.
fn check(name: &str, prog: &Program, p: usize) {
    let mut c: vm_cluster::Cluster<LocalTransport> =
        local_cluster(p, || Box::new(vm_node::Node::new(Box::new(Interp::default()))));
    let agreed = differential(&mut c, &mut Interp::default(), prog, Data::Full, Agree::Bits);
    c.shutdown().unwrap();
    agreed.unwrap_or_else(|m| panic!("{name} on {p} ranks: {m}"));
}

/// A program filling bases of `dtype` with values from a handful (ties everywhere; for floats
/// a NaN now and then) and reducing a random view of them to positions along a random axis.
fn position_case(rng: &mut Rng, case: u64, dtype: DType) -> Program {
    let sizes = [1u64, 3, 7, 40, 97, 300];
    let bases: Vec<Base> =
        sizes.iter().enumerate().map(|(i, &n)| Base { id: BaseId(i as u64 + 1), dtype, nelem: n }).collect();
    // Outputs in the input's bases when those are i64 (reading and writing one base).
    let outs: Vec<Base> = if dtype == DType::I64 {
        bases.clone()
    } else {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| Base { id: BaseId(i as u64 + 11), dtype: DType::I64, nelem: n })
            .collect()
    };
    let nd = 1 + rng.below(3);
    let shape: Vec<usize> = (0..nd).map(|_| 1 + rng.below(7)).collect();
    let axis = rng.below(nd);
    let mut in_shape = shape.clone();
    in_shape[axis] = 1 + rng.below(if nd == 1 { 150 } else { 12 });
    let out_shape: Vec<usize> = shape.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &n)| n).collect();
    let out = random_view_in(rng, &outs, &out_shape, true);
    let input = random_view_in(rng, &bases, &in_shape, false);
    let mut all = bases.clone();
    all.extend(outs.iter().filter(|b| !bases.contains(b)));
    let mut batch: Vec<Instruction> = all.iter().map(|&b| random_fill(b, case)).collect();
    for b in &bases {
        let v = || View::of_base(*b).into();
        match dtype {
            DType::Bool => {}
            d if d.is_float() => {
                // Floats in [0, 1) to {0, 1, 2}, and a NaN in every seventh base element.
                batch.push(Instruction::new(Opcode::Multiply, [v(), v(), Scalar::F64(3.0).cast(d).into()]));
                batch.push(Instruction::new(Opcode::Floor, [v(), v()]));
                let sevenths = View::new(*b, 0, &[(b.nelem as usize).div_ceil(7)], &[7]).unwrap();
                let nan = Scalar::F64(if case.is_multiple_of(3) { f64::NAN } else { 0.0 }).cast(d);
                batch.push(Instruction::new(Opcode::Add, [sevenths.clone().into(), sevenths.into(), nan.into()]));
            }
            d => batch.push(Instruction::new(Opcode::Remainder, [v(), v(), Scalar::I64(3).cast(d).into()])),
        }
    }
    let op = [Opcode::ArgminReduce, Opcode::ArgmaxReduce][rng.below(2)];
    batch.push(Instruction::new(op, [out.into(), input.into(), Scalar::I64(axis as i64).into()]));
    batch.extend(sync_all(&all));
    Program::of_batch(batch, all)
}

#[test]
fn positions_match_the_reference_exactly_on_1_to_5_ranks() {
    let mut rng = Rng::new(7);
    for case in 0..200 {
        let dtype = [DType::F64, DType::F32, DType::I64, DType::I32, DType::U8, DType::Bool][rng.below(6)];
        let prog = position_case(&mut rng, case, dtype);
        for p in [1, 2, 3, 4, 5] {
            check(&format!("position case {case} ({dtype})"), &prog, p);
        }
    }
}

#[test]
fn the_position_of_all_elements_of_a_distributed_base_is_global() {
    // argmax of 0, 1, ..., 99 (the maximum on the last rank), and of its negation read
    // backwards: positions count along the whole base, not along a rank's block.
    let a = Base { id: BaseId(1), dtype: DType::I32, nelem: 100 };
    let s = Base { id: BaseId(2), dtype: DType::I64, nelem: 2 };
    let at = |k: i64| View::new(s, k, &[], &[]).unwrap().into();
    let whole = || View::of_base(a).into();
    let batch = vec![
        Instruction::new(Opcode::Range, [whole()]),
        Instruction::new(Opcode::ArgmaxReduce, [at(0), whole(), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Negative, [whole(), whole()]),
        Instruction::new(
            Opcode::ArgmaxReduce,
            [at(1), View::new(a, 99, &[100], &[-1]).unwrap().into(), Scalar::I64(0).into()],
        ),
        Instruction::new(Opcode::Sync, [View::of_base(s).into()]),
    ];
    let prog = Program::of_batch(batch, vec![s]);
    for p in 1..=4 {
        check("argmax of a range", &prog, p);
        let mut c: vm_cluster::Cluster<LocalTransport> =
            local_cluster(p, || Box::new(vm_node::Node::new(Box::new(Interp::default()))));
        let mem = run(&mut c, &prog, Data::Full).unwrap();
        c.shutdown().unwrap();
        assert_eq!(mem.get(s.id).unwrap().as_slice::<i64>(), [99, 99], "{p} ranks");
    }
}

#[test]
fn a_position_of_a_temporary_of_a_fused_run_is_not_reduced_box_by_box() {
    // t = (range - 30)^2 in i64, then argmin of all of t and t freed: the shape of run whose
    // full reduction of an integer temporary the planner reduces piece by piece. Positions
    // cannot be: the argmin is 30, not a position within some rank's piece.
    let a = Base { id: BaseId(1), dtype: DType::I64, nelem: 100 };
    let t = Base { id: BaseId(2), dtype: DType::I64, nelem: 100 };
    let s = Base { id: BaseId(3), dtype: DType::I64, nelem: 1 };
    let v = |b: Base| -> vm_ir::Operand { View::of_base(b).into() };
    let batch = vec![
        Instruction::new(Opcode::Range, [v(a)]),
        Instruction::new(Opcode::Subtract, [v(t), v(a), Scalar::I64(30).into()]),
        Instruction::new(Opcode::Multiply, [v(t), v(t), v(t)]),
        Instruction::new(
            Opcode::ArgminReduce,
            [View::new(s, 0, &[], &[]).unwrap().into(), v(t), Scalar::I64(0).into()],
        ),
        Instruction::new(Opcode::Free, [v(t)]),
        Instruction::new(Opcode::Sync, [v(a)]),
        Instruction::new(Opcode::Sync, [v(s)]),
    ];
    let prog = Program::of_batch(batch, vec![a, s]);
    for p in 1..=4 {
        check("argmin of a fused temporary", &prog, p);
    }
    assert_eq!(run(&mut Interp::default(), &prog, Data::Full).unwrap().get(s.id).unwrap().as_slice::<i64>(), [30]);
}
