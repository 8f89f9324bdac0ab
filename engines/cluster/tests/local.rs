//! The cluster manager with its ranks as threads of this process (no MPI needed): differential
//! tests against the reference engine, communication volume, and the runtime on top.

use vm_cluster::{Cluster, LocalTransport, local_cluster};
use vm_interp::Interp;
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Scalar, View};
use vm_runtime::{Component, HostMemory, ReductionOrder};
use vm_testkit::fixtures::random_fill;
use vm_testkit::generate::random_view_in;
use vm_testkit::per_opcode::opcode_programs;
use vm_testkit::program::sync_all;
use vm_testkit::runs::random_fusable_program;
use vm_testkit::{Agree, Data, Program, ProgramSpec, Rng, Tolerance, compare, differential, random_program, run};

fn cluster(p: usize) -> Cluster<LocalTransport> {
    local_cluster(p, || Box::new(vm_node::Node::new(Box::new(Interp::default()))))
}

/// Runs `prog` on `p` ranks and on the reference: the same bytes (the cluster over `interp` is
/// `interp`, bit for bit).
fn check(name: &str, prog: &Program, p: usize) {
    let mut c = cluster(p);
    let agreed = differential(&mut c, &mut Interp::default(), prog, Data::Full, Agree::Bits);
    c.shutdown().unwrap();
    agreed.unwrap_or_else(|m| panic!("{name} on {p} ranks: {m}"));
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
        let prog = random_program(seed, &ProgramSpec::uneven());
        for p in [1, 2, 3, 4, 5] {
            check(&format!("random program {seed}"), &prog, p);
        }
    }
}

#[test]
fn random_fusable_runs_match_the_reference_planned_together_or_alone() {
    use vm_cluster::{Options, local_cluster_with};
    let n: u64 = std::env::var("SEEDS").map_or(60, |s| s.parse().unwrap());
    for seed in 0..n {
        let prog = random_fusable_program(seed, 8);
        let want = run(&mut Interp::default(), &prog, Data::Full).unwrap();
        for p in [1, 2, 3, 4, 5] {
            for fuse in [true, false] {
                let mut c = local_cluster_with(p, Options { fuse, ..Options::default() }, || {
                    Box::new(vm_node::Node::new(Box::new(Interp::default())))
                });
                let got = run(&mut c, &prog, Data::Full).unwrap_or_else(|e| panic!("seed {seed} on {p} ranks: {e}"));
                c.shutdown().unwrap();
                compare(&got, &want, &prog.bases, Agree::Bits)
                    .unwrap_or_else(|m| panic!("seed {seed} on {p} ranks, fuse {fuse}: {m}"));
            }
        }
    }
}

/// The reference engine as a child, with what a test needs: the reduction order it claims
/// (the fusing engines reassociate), and, when asked, the kernels the fusing engines would form
/// from its batches, counted.
struct TestChild {
    inner: Interp,
    order: ReductionOrder,
    /// (kernels formed, temporaries contracted), shared with the test.
    counts: Option<std::sync::Arc<std::sync::Mutex<(usize, usize)>>>,
}

impl TestChild {
    /// The reference engine claiming to reassociate reductions.
    fn reassociating() -> Box<dyn Component> {
        Box::new(TestChild { inner: Interp::default(), order: ReductionOrder::Reassociated, counts: None })
    }
}

impl Component for TestChild {
    fn name(&self) -> &str {
        "test-child"
    }
    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> vm_ir::Result<()> {
        use vm_fusion::{Options, Step, partition};
        if let Some(counts) = &self.counts {
            let mut c = counts.lock().unwrap();
            for step in partition(batch, &Options::default()) {
                if let Step::Kernel(k) = step {
                    c.0 += 1;
                    c.1 += k.temps.len();
                }
            }
        }
        self.inner.execute(batch, mem)
    }
    fn register_extension(&mut self, name: &str, opcode: Opcode) -> vm_ir::Result<bool> {
        self.inner.register_extension(name, opcode)
    }
    fn info(&self) -> vm_runtime::ComponentInfo {
        self.inner.info()
    }
    fn reduction_order(&self) -> ReductionOrder {
        self.order
    }
}

/// Float results of a reassociating child: within 1e-12 of the reference's, relative.
const CLOSE: Agree = Agree::Relative(Tolerance { f64: 1e-12, f32: 1e-12 });

#[test]
fn random_fusable_runs_over_a_reassociating_child_stay_close_to_the_reference() {
    let n: u64 = std::env::var("SEEDS").map_or(40, |s| s.parse().unwrap());
    for seed in 0..n {
        let prog = random_fusable_program(seed, 8);
        let want = run(&mut Interp::default(), &prog, Data::Full).unwrap();
        for p in [1, 2, 3, 4] {
            let mut c = local_cluster(p, TestChild::reassociating);
            let got = run(&mut c, &prog, Data::Full).unwrap_or_else(|e| panic!("seed {seed} on {p} ranks: {e}"));
            c.shutdown().unwrap();
            compare(&got, &want, &prog.bases, CLOSE).unwrap_or_else(|m| panic!("seed {seed} on {p} ranks: {m}"));
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
    use vm_frontend::Vm;
    use vm_frontend::s;
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
    let want = heat(&Vm::from_stack(Box::new(Interp::default())).unwrap());
    for p in [1, 3, 4] {
        let got = heat(&Vm::from_stack(Box::new(cluster(p))).unwrap());
        assert_eq!(got, want, "{p} ranks");
    }
}

/// A Jacobi loop with a global sum per step, as one batch (temporaries freed as a runtime
/// would), run on `c` and synced: the grid and the sums.
fn heat_loop(c: &mut dyn Component, steps: usize) -> Vec<f64> {
    let (h, w) = (34usize, 30usize);
    let (m, k) = (h - 2, w - 2);
    let mut next = 1;
    let mut base = |nelem: usize| {
        next += 1;
        Base { id: BaseId(next), dtype: DType::F64, nelem: nelem as u64 }
    };
    let grid = base(h * w);
    let at = |r: i64, col: i64| View::new(grid, r * w as i64 + col, &[m, k], &[w as i64, 1]).unwrap();
    let i = |op: Opcode, ops: Vec<vm_ir::Operand>| Instruction::new(op, ops);
    let mut batch =
        vec![i(Opcode::Random, vec![View::of_base(grid).into(), Scalar::U64(7).into(), Scalar::U64(0).into()])];
    let mut sums = Vec::new();
    for _ in 0..steps {
        let t: Vec<Base> = (0..7).map(|_| base(m * k)).collect();
        let v = |b: Base| View::contiguous(b, 0, &[m, k]).unwrap();
        batch.push(i(Opcode::Add, vec![v(t[0]).into(), at(1, 1).into(), at(0, 1).into()]));
        batch.push(i(Opcode::Add, vec![v(t[1]).into(), v(t[0]).into(), at(2, 1).into()]));
        batch.push(i(Opcode::Add, vec![v(t[2]).into(), v(t[1]).into(), at(1, 2).into()]));
        batch.push(i(Opcode::Add, vec![v(t[3]).into(), v(t[2]).into(), at(1, 0).into()]));
        batch.push(i(Opcode::Multiply, vec![v(t[4]).into(), v(t[3]).into(), Scalar::F64(0.2).into()]));
        batch.push(i(Opcode::Subtract, vec![v(t[5]).into(), v(t[4]).into(), at(1, 1).into()]));
        batch.push(i(Opcode::Absolute, vec![v(t[6]).into(), v(t[5]).into()]));
        let sum = base(1);
        let flat = View::contiguous(t[6], 0, &[m * k]).unwrap();
        batch.push(i(
            Opcode::AddReduce,
            vec![View::contiguous(sum, 0, &[]).unwrap().into(), flat.into(), Scalar::I64(0).into()],
        ));
        sums.push(sum);
        batch.push(i(Opcode::Identity, vec![at(1, 1).into(), v(t[4]).into()]));
        for b in t {
            batch.push(i(Opcode::Free, vec![View::of_base(b).into()]));
        }
    }
    for b in std::iter::once(grid).chain(sums.iter().copied()) {
        batch.push(i(Opcode::Sync, vec![View::of_base(b).into()]));
    }
    let mut mem = HostMemory::new();
    c.execute(&batch, &mut mem).unwrap();
    let mut out = mem.get(grid.id).unwrap().as_slice::<f64>().to_vec();
    out.extend(sums.iter().map(|b| mem.get(b.id).unwrap().as_slice::<f64>()[0]));
    out
}

#[test]
fn planning_runs_together_keeps_the_childs_kernels_whole_and_its_temporaries_contracted() {
    use vm_cluster::{Options, local_cluster_with};
    let steps = 6;
    let want = heat_loop(&mut Interp::default(), steps);
    let mut counts = Vec::new();
    for fuse in [true, false] {
        let shared = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
        let child_counts = shared.clone();
        let mut c = local_cluster_with(2, Options { fuse, ..Options::default() }, move || {
            Box::new(TestChild {
                inner: Interp::default(),
                order: ReductionOrder::Sequential,
                counts: Some(child_counts.clone()),
            })
        });
        let got = heat_loop(&mut c, steps);
        c.shutdown().unwrap();
        assert!(got == want, "fuse {fuse}: results differ");
        counts.push(*shared.lock().unwrap());
    }
    let ((kernels, contracted), (kernels_alone, contracted_alone)) = (counts[0], counts[1]);
    // Each step, each rank's bulk piece is one kernel in which the five temporaries only the
    // element-wise run uses (all but the one reduced and the one copied back) are contracted.
    assert!(contracted >= 5 * steps * 2, "{contracted} temporaries contracted");
    assert!(contracted >= 2 * contracted_alone, "{contracted} vs {contracted_alone} contracted");
    assert!(kernels < kernels_alone, "{kernels} vs {kernels_alone} kernels");
}

#[test]
fn a_stencil_loop_reaches_the_child_in_few_calls_and_stays_exact() {
    use vm_cluster::{Options, local_cluster_with};
    let steps = 12;
    let want = heat_loop(&mut Interp::default(), steps);
    for p in [2, 3] {
        for overlap in [true, false] {
            let mut c = local_cluster_with(p, Options { overlap, ..Options::default() }, || {
                Box::new(vm_node::Node::new(Box::new(Interp::default())))
            });
            let got = heat_loop(&mut c, steps);
            c.shutdown().unwrap();
            assert!(got == want, "{p} ranks, overlap {overlap}: results differ");
            for (r, s) in c.rank_stats().iter().enumerate() {
                assert!(s.exchanges > 0, "rank {r} of {p} communicates");
                // A few calls per step: the sends of the halo rows and of the partial sums
                // split the local work no further than the dependences require.
                assert!(
                    s.child_calls <= 3 * steps as u64 + 4,
                    "rank {r} of {p} (overlap {overlap}): {} child calls for {steps} steps",
                    s.child_calls
                );
            }
        }
    }
}

#[test]
#[ignore]
fn one_random_program() {
    let seed: u64 = std::env::var("SEED").map_or(0, |s| s.parse().unwrap());
    let p: usize = std::env::var("P").map_or(3, |s| s.parse().unwrap());
    let t = std::time::Instant::now();
    check("one", &random_program(seed, &ProgramSpec::uneven()), p);
    eprintln!("took {:?}", t.elapsed());
}

/// The ranks that do local work in the plan of `instr` over `p` ranks.
fn working_ranks(instr: &Instruction, p: usize) -> Vec<usize> {
    let plan = vm_cluster::plan::plan(instr, p, ReductionOrder::Sequential);
    let mut ranks: Vec<usize> =
        plan.stages.iter().flat_map(|s| s.early.iter().chain(&s.late)).map(|t| t.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

#[test]
fn reductions_and_scans_run_on_every_rank_and_move_only_boundaries() {
    let (rows, cols) = (64usize, 50usize);
    let a = Base { id: BaseId(1), dtype: DType::F64, nelem: (rows * cols) as u64 };
    let o = Base { id: BaseId(2), dtype: DType::F64, nelem: (rows * cols) as u64 };
    let r = Base { id: BaseId(3), dtype: DType::F64, nelem: rows as u64 };
    let m = View::contiguous(a, 0, &[rows, cols]).unwrap();
    let out = View::contiguous(o, 0, &[rows, cols]).unwrap();
    let axis = |k: i64| Scalar::I64(k).into();
    // Row sums: each rank sums its rows; only rows cut by a block boundary travel.
    let row_sums = Instruction::new(Opcode::AddReduce, [View::of_base(r).into(), m.clone().into(), axis(1)]);
    assert_eq!(working_ranks(&row_sums, 4), [0, 1, 2, 3]);
    assert!(vm_cluster::plan::plan(&row_sums, 4, ReductionOrder::Sequential).remote_bytes() <= 3 * cols * 8);
    // A scan down the columns: a pipeline whose messages are the boundary rows (the carries).
    let col_scan = Instruction::new(Opcode::AddAccumulate, [out.clone().into(), m.clone().into(), axis(0)]);
    let plan = vm_cluster::plan::plan(&col_scan, 4, ReductionOrder::Sequential);
    assert_eq!(working_ranks(&col_scan, 4), [0, 1, 2, 3]);
    assert!(plan.stages.len() >= 4, "one level per block along the axis");
    assert!(plan.remote_bytes() <= 2 * 3 * cols * 8, "{} bytes", plan.remote_bytes());
    // A scan along the rows is local but for the rows cut by a boundary.
    let row_scan = Instruction::new(Opcode::AddAccumulate, [out.into(), m.into(), axis(1)]);
    assert_eq!(working_ranks(&row_scan, 4), [0, 1, 2, 3]);
    assert!(vm_cluster::plan::plan(&row_scan, 4, ReductionOrder::Sequential).remote_bytes() <= 3 * 8);
    // A flat scan carries one running value from rank to rank.
    let flat = Instruction::new(
        Opcode::MultiplyAccumulate,
        [View::of_base(o).into(), View::of_base(a).into(), Scalar::I64(0).into()],
    );
    assert_eq!(vm_cluster::plan::plan(&flat, 4, ReductionOrder::Sequential).remote_bytes(), 3 * 8);
    // So does a reduction of all elements, and its result goes to the output's owner.
    let total = Base { id: BaseId(4), dtype: DType::F64, nelem: 1 };
    let scalar = View::new(total, 0, &[], &[]).unwrap();
    let sum =
        Instruction::new(Opcode::AddReduce, [scalar.clone().into(), View::of_base(a).into(), Scalar::I64(0).into()]);
    assert_eq!(working_ranks(&sum, 4), [0, 1, 2, 3]);
    assert_eq!(vm_cluster::plan::plan(&sum, 4, ReductionOrder::Sequential).remote_bytes(), 3 * 8);
    let first = View::contiguous(a, 0, &[10]).unwrap();
    let sum_first = Instruction::new(Opcode::AddReduce, [scalar.into(), first.into(), axis(0)]);
    assert_eq!(
        vm_cluster::plan::plan(&sum_first, 4, ReductionOrder::Sequential).remote_bytes(),
        8,
        "rank 0 sends its sum to rank 3"
    );
}

/// A random scan or reduction (case `case` of `rng`) over bases of `dtype` of uneven sizes,
/// filled with random values (near 1 for floating point, so products stay finite and sums
/// inexact), with every base synced.
fn reduction_case(rng: &mut Rng, case: u64, dtype: DType) -> Program {
    let sizes = [1u64, 3, 7, 40, 97, 300];
    let bases: Vec<Base> =
        sizes.iter().enumerate().map(|(i, &n)| Base { id: BaseId(i as u64 + 1), dtype, nelem: n }).collect();
    let nd = 1 + rng.below(3);
    let shape: Vec<usize> = (0..nd).map(|_| 1 + rng.below(7)).collect();
    let axis = rng.below(nd);
    let ops = [
        Opcode::AddAccumulate,
        Opcode::MultiplyAccumulate,
        Opcode::AddReduce,
        Opcode::MultiplyReduce,
        Opcode::MaximumReduce,
        Opcode::MinimumReduce,
    ];
    let op = ops[rng.below(ops.len())];
    let (out, input) = if op.kind() == vm_ir::Kind::Reduce {
        let mut in_shape = shape.clone();
        in_shape[axis] = rng.below(12);
        let out_shape: Vec<usize> = shape.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &n)| n).collect();
        (random_view_in(rng, &bases, &out_shape, true), random_view_in(rng, &bases, &in_shape, false))
    } else {
        let out = random_view_in(rng, &bases, &shape, true);
        // Half the time the scan is in place.
        let input = if rng.below(2) == 0 { out.clone() } else { random_view_in(rng, &bases, &shape, false) };
        (out, input)
    };
    let mut batch: Vec<Instruction> = bases.iter().map(|&b| random_fill(b, case)).collect();
    if dtype.is_float() {
        for b in &bases {
            let v = View::of_base(*b);
            batch
                .push(Instruction::new(Opcode::Add, [v.clone().into(), v.into(), Scalar::F64(0.5).cast(dtype).into()]));
        }
    }
    batch.push(Instruction::new(op, [out.into(), input.into(), Scalar::I64(axis as i64).into()]));
    batch.extend(sync_all(&bases));
    Program::of_batch(batch, bases)
}

#[test]
fn random_scans_and_reductions_match_the_reference_exactly() {
    let mut rng = Rng::new(99);
    for case in 0..300 {
        let dtype = [DType::F64, DType::F32, DType::I32, DType::U8][rng.below(4)];
        let prog = reduction_case(&mut rng, case, dtype);
        for p in [2, 3, 4, 5] {
            check(&format!("scan case {case}"), &prog, p);
        }
    }
}

#[test]
fn over_a_reassociating_child_every_box_is_reduced_at_once_and_results_stay_close() {
    // The plan: a sum of all elements over 4 ranks reduces every block in the first stage,
    // with no copy, and only the running values travel.
    let a = Base { id: BaseId(1), dtype: DType::F64, nelem: 3000 };
    let total = Base { id: BaseId(2), dtype: DType::F64, nelem: 1 };
    let sum = Instruction::new(
        Opcode::AddReduce,
        [View::new(total, 0, &[], &[]).unwrap().into(), View::of_base(a).into(), Scalar::I64(0).into()],
    );
    let plan = vm_cluster::plan::plan(&sum, 4, ReductionOrder::Reassociated);
    let reduces = |s: &vm_cluster::plan::Stage| {
        s.early.iter().filter(|t| matches!(t.work, vm_cluster::plan::Work::Child(Opcode::AddReduce, _))).count()
    };
    assert_eq!(reduces(&plan.stages[0]), 4);
    let copies = plan.stages.iter().flat_map(|s| s.early.iter().chain(&s.late));
    assert!(copies.filter(|t| matches!(t.work, vm_cluster::plan::Work::Child(Opcode::Identity, _))).count() <= 1);
    assert_eq!(plan.remote_bytes(), 3 * 8);
    // Integers are exact in any order: the same plan even over a child keeping the order.
    let ints = Base { dtype: DType::I32, ..a };
    let int_total = Base { dtype: DType::I32, ..total };
    let int_sum = Instruction::new(
        Opcode::AddReduce,
        [View::new(int_total, 0, &[], &[]).unwrap().into(), View::of_base(ints).into(), Scalar::I64(0).into()],
    );
    assert_eq!(reduces(&vm_cluster::plan::plan(&int_sum, 4, ReductionOrder::Sequential).stages[0]), 4);
    // Results: the reference's up to the reassociation of floating-point sums and products.
    let mut rng = Rng::new(7);
    for case in 0..150 {
        let dtype = [DType::F64, DType::I32][rng.below(2)];
        let prog = reduction_case(&mut rng, case, dtype);
        let want = run(&mut Interp::default(), &prog, Data::Full).unwrap();
        for p in [2, 3, 5] {
            let mut c = local_cluster(p, TestChild::reassociating);
            assert_eq!(c.reduction_order(), ReductionOrder::Reassociated);
            let got = run(&mut c, &prog, Data::Full).unwrap();
            c.shutdown().unwrap();
            if dtype == DType::I32 {
                compare(&got, &want, &prog.bases, Agree::Bits)
                    .unwrap_or_else(|m| panic!("case {case} on {p} ranks: {m}"));
            } else {
                compare(&got, &want, &prog.bases, CLOSE).unwrap_or_else(|m| panic!("case {case} on {p} ranks: {m}"));
            }
        }
    }
}

#[test]
fn without_latency_hiding_results_are_the_same_and_nothing_overlaps() {
    use vm_cluster::{Options, local_cluster_with};
    for seed in 0..8 {
        let prog = random_program(seed, &ProgramSpec::uneven());
        let want = run(&mut Interp::default(), &prog, Data::Full).unwrap();
        for overlap in [true, false] {
            let mut c = local_cluster_with(3, Options { overlap, ..Options::default() }, || {
                Box::new(vm_node::Node::new(Box::new(Interp::default())))
            });
            let got = run(&mut c, &prog, Data::Full).unwrap();
            c.shutdown().unwrap();
            compare(&got, &want, &prog.bases, Agree::Bits)
                .unwrap_or_else(|m| panic!("seed {seed}, overlap {overlap}: {m}"));
            let stats = c.rank_stats();
            assert!(stats.iter().any(|s| s.exchanges > 0), "seed {seed}: the program communicates");
            if !overlap {
                assert!(stats.iter().all(|s| s.overlap_seconds == 0.0), "seed {seed}: nothing may overlap");
            }
            let report = vm_cluster::profile_report(stats);
            assert_eq!(report.lines().count(), 1 + 3 + 1, "{report}");
            assert!(report.contains("waiting"), "{report}");
        }
    }
}
