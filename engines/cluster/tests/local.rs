//! The cluster manager with its ranks as threads of this process (no MPI needed): differential
//! tests against the reference engine, communication volume, and the runtime on top.

use vm_cluster::testprog::{Program, compare, opcode_programs, random_program, run};
use vm_cluster::{Cluster, LocalTransport, local_cluster};
use vm_core::{Base, BaseId, Component, DType, HostMemory, Instruction, Opcode, Scalar, View};
use vm_interp::Interp;

fn cluster(p: usize) -> Cluster<LocalTransport> {
    local_cluster(p, || Box::new(vm_node::Node::new(Box::new(Interp::default()))))
}

fn check(name: &str, prog: &Program, p: usize) {
    let want = run(&mut Interp::default(), prog).unwrap_or_else(|e| panic!("{name}: interp failed: {e}"));
    let mut c = cluster(p);
    let got = run(&mut c, prog).unwrap_or_else(|e| panic!("{name} on {p} ranks: {e}"));
    c.shutdown().unwrap();
    if let Err(m) = compare(prog, &want, &got) {
        panic!("{name} on {p} ranks: {m}");
    }
}

#[test]
fn every_opcode_matches_the_reference_on_1_to_4_ranks() {
    for (op, prog) in opcode_programs() {
        for p in 1..=4 {
            check(op.name(), &prog, p);
        }
    }
}

#[test]
fn random_programs_match_the_reference_on_1_to_5_ranks() {
    for seed in 0..60 {
        let prog = random_program(seed, 30);
        for p in [1, 2, 3, 4, 5] {
            check(&format!("random program {seed}"), &prog, p);
        }
    }
}

/// Bytes all ranks send for one step of the 2-D heat equation on an n x n grid over 4 ranks.
fn heat_step_bytes(n: usize) -> u64 {
    let grid = Base { id: BaseId(1), dtype: DType::F64, nelem: (n * n) as u64 };
    let work = Base { id: BaseId(2), dtype: DType::F64, nelem: ((n - 2) * (n - 2)) as u64 };
    let m = n - 2;
    let at = |r: i64, c: i64| View::new(grid, r * n as i64 + c, &[m, m], &[n as i64, 1]).unwrap();
    let w = View::contiguous(work, 0, &[m, m]).unwrap();
    let add = |x: View| Instruction::new(Opcode::Add, [w.clone().into(), w.clone().into(), x.into()]);
    let step = vec![
        Instruction::new(Opcode::Identity, [w.clone().into(), at(1, 1).into()]),
        add(at(0, 1)),
        add(at(2, 1)),
        add(at(1, 0)),
        add(at(1, 2)),
        Instruction::new(Opcode::Multiply, [w.clone().into(), w.clone().into(), Scalar::F64(0.2).into()]),
        Instruction::new(Opcode::Identity, [at(1, 1).into(), w.clone().into()]),
    ];
    let mut c = cluster(4);
    let mut mem = HostMemory::new();
    c.execute(
        &[Instruction::new(Opcode::Random, [View::of_base(grid).into(), Scalar::U64(1).into(), Scalar::U64(0).into()])],
        &mut mem,
    )
    .unwrap();
    c.shutdown().unwrap();
    let before: u64 = c.rank_stats().iter().map(|s| s.bytes_sent).sum();
    assert_eq!(before, 0, "random fills need no messages");
    let mut c = cluster(4);
    c.execute(&step, &mut mem).unwrap();
    c.shutdown().unwrap();
    let stats = c.rank_stats();
    assert_eq!(stats.len(), 4);
    stats.iter().map(|s| s.bytes_sent).sum()
}

#[test]
fn heat_step_communication_is_proportional_to_the_boundary_not_the_grid() {
    let (small, large) = (heat_step_bytes(66), heat_step_bytes(258));
    let grid_bytes = 258 * 258 * 8;
    eprintln!("heat step bytes sent: 66x66 grid {small}, 258x258 grid {large} (grid: {grid_bytes} bytes)");
    assert!(small > 0);
    // The grid grows 15x in elements, the boundary rows ~3.9x.
    let ratio = large as f64 / small as f64;
    assert!(ratio < 5.0, "communication grew {ratio:.1}x");
    assert!((large as usize) < grid_bytes / 4, "{large} bytes sent for a {grid_bytes}-byte grid");
}

#[test]
fn sync_moves_only_the_synced_view_to_rank_0() {
    let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 1000 };
    let mut c = cluster(4);
    let mut mem = HostMemory::new();
    c.execute(&[Instruction::new(Opcode::Range, [View::of_base(b).into()])], &mut mem).unwrap();
    let tail = View::contiguous(b, 990, &[10]).unwrap();
    c.execute(&[Instruction::new(Opcode::Sync, [tail.into()])], &mut mem).unwrap();
    c.shutdown().unwrap();
    let sent: u64 = c.rank_stats().iter().map(|s| s.bytes_sent).sum();
    assert_eq!(sent, 80, "ten f64 elements travel");
    assert_eq!(
        &mem.get(b.id).unwrap().as_slice::<f64>()[990..],
        &[990., 991., 992., 993., 994., 995., 996., 997., 998., 999.]
    );
}

#[test]
fn errors_on_any_rank_reach_rank_0_and_the_session_goes_on() {
    let src = Base { id: BaseId(1), dtype: DType::F64, nelem: 8 };
    let idx = Base { id: BaseId(2), dtype: DType::I64, nelem: 8 };
    let out = Base { id: BaseId(3), dtype: DType::F64, nelem: 8 };
    let mut c = cluster(3);
    let mut mem = HostMemory::new();
    let bad = vec![
        Instruction::new(Opcode::Range, [View::of_base(idx).into()]),
        Instruction::new(Opcode::Add, [View::of_base(idx).into(), View::of_base(idx).into(), Scalar::I64(100).into()]),
        Instruction::new(
            Opcode::Gather,
            [View::of_base(out).into(), View::of_base(src).into(), View::of_base(idx).into()],
        ),
    ];
    let e = c.execute(&bad, &mut mem).unwrap_err();
    assert!(e.to_string().contains("out of range") || e.to_string().contains("index"), "{e}");
    c.execute(
        &[
            Instruction::new(Opcode::Range, [View::of_base(out).into()]),
            Instruction::new(Opcode::Sync, [View::of_base(out).into()]),
        ],
        &mut mem,
    )
    .unwrap();
    assert_eq!(mem.get(out.id).unwrap().as_slice::<f64>(), &[0., 1., 2., 3., 4., 5., 6., 7.]);
    c.shutdown().unwrap();
}

#[test]
fn the_frontend_runs_unchanged_on_a_cluster() {
    use vm_core::frontend::Vm;
    use vm_core::s;
    let heat = |vm: &Vm| -> Vec<f64> {
        let grid = vm.full::<f64>(&[12, 12], -273.15).unwrap();
        grid.slice(s![0, ..]).unwrap().fill(40.0).unwrap();
        grid.slice(s![1..-1, 1..-1]).unwrap().fill(0.0).unwrap();
        let center = grid.slice(s![1..-1, 1..-1]).unwrap();
        let (north, south) = (grid.slice(s![..-2, 1..-1]).unwrap(), grid.slice(s![2.., 1..-1]).unwrap());
        let (west, east) = (grid.slice(s![1..-1, ..-2]).unwrap(), grid.slice(s![1..-1, 2..]).unwrap());
        for _ in 0..5 {
            let work = (&center + &north + &south + &east + &west) * 0.2;
            center.assign(&work).unwrap();
        }
        let mut v = grid.to_vec().unwrap();
        v.push(grid.sum_all().to_scalar().unwrap());
        v
    };
    let want = heat(&Vm::from_stack(Box::new(Interp::default())));
    for p in [1, 3, 4] {
        let got = heat(&Vm::from_stack(Box::new(cluster(p))));
        assert_eq!(got, want, "{p} ranks");
    }
}

#[test]
#[ignore]
fn one_random_program() {
    let seed: u64 = std::env::var("SEED").map_or(0, |s| s.parse().unwrap());
    let p: usize = std::env::var("P").map_or(3, |s| s.parse().unwrap());
    let t = std::time::Instant::now();
    check("one", &random_program(seed, 30), p);
    eprintln!("took {:?}", t.elapsed());
}
