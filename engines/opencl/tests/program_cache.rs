//! The program cache across the iterations of an iterative program: generated source texts are
//! structural, so new temporaries, other constants, random seeds, view starts and sizes reuse
//! the programs built in the first iteration; results still equal interp's.

mod common;

use common::*;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_opencl::OpenClEngine;
use vm_runtime::{Component, HostMemory};

/// One grid of a heat-equation-like program: an `(h+2) x (w+2)` f64 array whose element (0, 0)
/// lies at `origin` in its base.
#[derive(Clone, Copy)]
struct Grid {
    base: Base,
    origin: i64,
    h: usize,
    w: usize,
}

impl Grid {
    fn new(id: u64, origin: i64, h: usize, w: usize) -> Grid {
        Grid { base: base(id, DType::F64, origin as usize + (h + 2) * (w + 2)), origin, h, w }
    }

    /// The `h x w` view whose element (0, 0) is grid element (`r`, `c`).
    fn at(&self, r: i64, c: i64) -> Operand {
        let pitch = (self.w + 2) as i64;
        View::new(self.base, self.origin + r * pitch + c, &[self.h, self.w], &[pitch, 1]).unwrap().into()
    }
}

/// One iteration in its own batch, with bases from `fresh` on (never reused): a sum of the four
/// neighbours and the centre plus small Philox noise (seed `seed`) into contracted temporaries,
/// scaled by `k` into `work`; the sum of |work - centre| (row sums, then their sum) into a new
/// scalar base, returned; then the centre becomes `work`.
fn step(g: &Grid, fresh: u64, k: f64, seed: u64) -> (Vec<Instruction>, Base) {
    let (h, w) = (g.h, g.w);
    let new = |i: u64, n: usize| base(fresh + i, DType::F64, n);
    let (t, noise, work, d, rows, delta) =
        (new(0, h * w), new(1, h * w), new(2, h * w), new(3, h * w), new(4, h), new(5, 1));
    let v = |b: Base| -> Operand { View::contiguous(b, 0, &[h, w]).unwrap().into() };
    let f = |x: f64| -> Operand { Scalar::F64(x).into() };
    let axis = |a: i64| -> Operand { Scalar::I64(a).into() };
    let batch = vec![
        Instruction::new(Opcode::Add, [v(t), g.at(0, 1), g.at(2, 1)]),
        Instruction::new(Opcode::Add, [v(t), v(t), g.at(1, 0)]),
        Instruction::new(Opcode::Add, [v(t), v(t), g.at(1, 2)]),
        Instruction::new(Opcode::Add, [v(t), v(t), g.at(1, 1)]),
        Instruction::new(Opcode::Random, [v(noise), Scalar::U64(seed).into(), Scalar::U64(seed * 977).into()]),
        Instruction::new(Opcode::Multiply, [v(noise), v(noise), f(1e-3)]),
        Instruction::new(Opcode::Add, [v(t), v(t), v(noise)]),
        Instruction::new(Opcode::Multiply, [v(work), v(t), f(k)]),
        Instruction::new(Opcode::Subtract, [v(d), v(work), g.at(1, 1)]),
        Instruction::new(Opcode::Absolute, [v(d), v(d)]),
        Instruction::new(Opcode::AddReduce, [whole(rows), v(d), axis(1)]),
        Instruction::new(Opcode::AddReduce, [View::contiguous(delta, 0, &[]).unwrap().into(), whole(rows), axis(0)]),
        Instruction::new(Opcode::Identity, [g.at(1, 1), v(work)]),
        Instruction::new(Opcode::Free, [v(t)]),
        Instruction::new(Opcode::Free, [v(noise)]),
        Instruction::new(Opcode::Free, [v(work)]),
        Instruction::new(Opcode::Free, [v(d)]),
        Instruction::new(Opcode::Free, [whole(rows)]),
    ];
    (batch, delta)
}

/// Runs `iterations` steps of `g` on opencl (memory `a`) and interp (memory `b`), comparing the
/// grid and each delta bit for bit, and returns the engine's (builds, hits) after each step.
fn run(
    cl: &mut OpenClEngine,
    g: &Grid,
    a: &mut HostMemory,
    b: &mut HostMemory,
    iterations: u64,
    first_id: u64,
    k: f64,
) -> Vec<(u64, u64)> {
    let mut counts = Vec::new();
    for it in 0..iterations {
        let (batch, delta) = step(g, first_id + 10 * it, k, 1 + it);
        compare(cl, &batch, a, b, &[g.base, delta], &format!("iteration {it} of a {}x{} grid", g.h, g.w));
        release(cl, a, &[delta]);
        b.free(delta.id);
        let s = cl.stats();
        counts.push((s.builds, s.hits));
    }
    counts
}

fn grid_memories(g: &Grid, seed: u64) -> (HostMemory, HostMemory) {
    let (mut a, mut b) = (HostMemory::new(), HostMemory::new());
    for m in [&mut a, &mut b] {
        let mut r = Rng::new(seed);
        let data: Vec<f64> = (0..g.base.nelem).map(|_| (r.below(2000) as f64 - 1000.0) / 8.0).collect();
        m.ensure(&g.base).unwrap().as_mut_slice::<f64>().copy_from_slice(&data);
    }
    (a, b)
}

#[test]
fn an_iterative_program_builds_each_program_once() {
    let Some(mut cl) = engine() else { return };
    let g = Grid::new(1, 0, 20, 30);
    let (mut a, mut b) = grid_memories(&g, 5);
    let counts = run(&mut cl, &g, &mut a, &mut b, 6, 100, 0.2);
    // The first iteration builds its programs (and may run one twice); every later one runs
    // them all again from the cache.
    let (built, hits) = counts[0];
    assert!(built >= 3, "{counts:?}");
    for w in counts.windows(2) {
        assert_eq!(w[1].0, built, "no builds after the first iteration: {counts:?}");
        assert_eq!(w[1].1 - w[0].1, built + hits, "each iteration hits for every program it runs: {counts:?}");
    }
    // Another grid: other sizes, another origin (other view starts and strides), another
    // constant, other seeds and base ids: still the same programs.
    let g2 = Grid::new(2, 7, 45, 13);
    let (mut a2, mut b2) = grid_memories(&g2, 6);
    let counts2 = run(&mut cl, &g2, &mut a2, &mut b2, 3, 10_000, -0.25);
    assert!(counts2.iter().all(|&(n, _)| n == built), "{counts:?} then {counts2:?}");
    assert!(counts2[2].1 > counts[5].1);
    let s = cl.stats();
    assert_eq!(s.fallback_instructions, 0, "{s:?}");
    let reported = cl.describe()[0].statistics;
    assert_eq!((reported.cache_hits, reported.cache_misses), (Some(s.hits), Some(s.builds + s.disk_hits)));
    assert_eq!(reported.compile_seconds, Some(s.build_time.as_secs_f64()));
    assert_eq!((reported.kernels, reported.fallbacks), (s.launches, 0));
    assert!(s.build_time > std::time::Duration::ZERO, "{s:?}");
}

/// A batch needing an element-wise kernel, a reduction, a scan and another kernel.
fn mixed_batch() -> (Vec<Instruction>, Vec<Base>) {
    let (x, t, s, c, u) = (
        base(1, DType::F64, 1000),
        base(2, DType::F64, 1000),
        base(3, DType::F64, 1),
        base(4, DType::F64, 1000),
        base(5, DType::F64, 1000),
    );
    let rows = |b: Base| -> Operand { View::contiguous(b, 0, &[10, 100]).unwrap().into() };
    let batch = vec![
        Instruction::new(Opcode::Multiply, [whole(t), whole(x), Scalar::F64(2.0).into()]),
        Instruction::new(
            Opcode::AddReduce,
            [View::contiguous(s, 0, &[]).unwrap().into(), whole(x), Scalar::I64(0).into()],
        ),
        Instruction::new(Opcode::AddAccumulate, [whole(c), whole(x), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Sqrt, [rows(u), rows(t)]),
    ];
    (batch, vec![x, t, s, c, u])
}

#[test]
fn a_batch_builds_its_new_programs_in_one_compilation() {
    let Some(mut cl) = engine() else { return };
    let (batch, bases) = mixed_batch();
    let (mut a, mut b) = twin(&bases[..1], 9);
    compare(&mut cl, &batch, &mut a, &mut b, &bases, "a mixed batch");
    let first = cl.stats();
    assert!(first.builds >= 4 && first.compilations == 1, "{first:?}");
    assert_eq!(first.hits, 0, "a program built ahead of its first run is no hit: {first:?}");
    compare(&mut cl, &batch, &mut a, &mut b, &bases, "the mixed batch again");
    let second = cl.stats();
    assert_eq!((second.builds, second.compilations, second.hits), (first.builds, 1, first.builds), "{second:?}");
    let notes = cl.describe()[0].notes.join("\n");
    assert!(notes.contains(&format!("{} programs built in 1 compilations", first.builds)), "{notes}");
}

#[test]
fn with_a_disk_cache_each_program_is_built_and_stored_alone() {
    if engine().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("vm-opencl-one-by-one-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let settings =
        vm_runtime::Settings::from_pairs("opencl", &[("cache_dir", toml::Value::String(dir.to_string_lossy().into()))]);
    let config = vm_opencl::Config::from_settings(&settings).unwrap();
    let mut cl = OpenClEngine::new(config, Some(Box::new(vm_interp::Interp::new(None)))).unwrap();
    let (batch, bases) = mixed_batch();
    let (mut a, mut b) = twin(&bases[..1], 9);
    compare(&mut cl, &batch, &mut a, &mut b, &bases, "a mixed batch with a disk cache");
    let s = cl.stats();
    assert!(s.builds >= 4 && s.compilations == s.builds && s.disk_stores == s.builds, "{s:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
