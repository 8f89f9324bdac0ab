//! Engine-level behaviour: the seed's blocking rules on a stencil, the kernel cache, the
//! fallback child for extension methods, settings.

mod common;

use common::*;
use vm_cpu::CpuEngine;
use vm_interp::Interp;
use vm_ir::{Base, DType, Error, Instruction, Opcode, Operand, Scalar};
use vm_runtime::component::Settings;
use vm_runtime::{Component, HostMemory};

/// One Jacobi step of the heat equation on an `n x n` grid with a border:
/// `work = (c + n + s + e + w) * 0.2; c[:] = work`, then the next step reads neighbours of the
/// just-written center, which must not be fused with the copy.
fn heat_step(grid: Base, work: Base, n: usize, k: f64) -> Vec<Instruction> {
    let w = n + 2;
    let at = |r: i64, c: i64| view(grid, r * w as i64 + c, &[n, n], &[w as i64, 1]);
    let wv = view(work, 0, &[n, n], &[n as i64, 1]);
    vec![
        Instruction::new(Opcode::Add, [wv.clone(), at(1, 1), at(0, 1)]),
        Instruction::new(Opcode::Add, [wv.clone(), wv.clone(), at(2, 1)]),
        Instruction::new(Opcode::Add, [wv.clone(), wv.clone(), at(1, 0)]),
        Instruction::new(Opcode::Add, [wv.clone(), wv.clone(), at(1, 2)]),
        Instruction::new(Opcode::Multiply, [wv.clone(), wv.clone(), Scalar::F64(k).into()]),
        Instruction::new(Opcode::Identity, [at(1, 1), wv.clone()]),
    ]
}

#[test]
fn stencil_iterations_match_interp_and_compile_once() {
    for threads in [1, 2, 4] {
        let n = 30;
        let (grid, work) = (base(1, DType::F64, (n + 2) * (n + 2)), base(2, DType::F64, n * n));
        let mut batch = Vec::new();
        for _ in 0..5 {
            batch.extend(heat_step(grid, work, n, 0.2));
        }
        let p = differential(&batch, &[grid, work], &[grid, work], threads, true, "heat");
        // Each step is two kernels (the sums, then the copy); both compile once.
        assert_eq!(p.kernels, 10);
        assert_eq!((p.cache.misses, p.cache.hits), (2, 8));
    }
}

#[test]
fn shifted_read_of_a_just_written_output_is_not_fused() {
    // a[1:] = b; c = a[:-1] * 2 reads a shifted by one: fusing would read stale values.
    let (a, b, c) = (base(1, DType::I64, 9), base(2, DType::I64, 8), base(3, DType::I64, 8));
    let batch = vec![
        Instruction::new(Opcode::Identity, [view(a, 1, &[8], &[1]), whole(b)]),
        Instruction::new(Opcode::Multiply, [whole(c), view(a, 0, &[8], &[1]), Scalar::I64(2).into()]),
    ];
    let mut mem = HostMemory::new();
    mem.ensure(&b).unwrap().as_mut_slice::<i64>().copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let mut cpu = engine(2);
    cpu.execute(&batch, &mut mem).unwrap();
    assert_eq!(mem.get(c.id).unwrap().as_slice::<i64>(), &[0, 2, 4, 6, 8, 10, 12, 14]);
    assert_eq!(cpu.profile().kernels, 2);
}

#[test]
fn same_structure_with_other_sizes_and_constants_hits_the_cache() {
    let mut cpu = engine(2);
    let mut mem = HostMemory::new();
    for (i, n) in [100usize, 1000, 37, 5000].into_iter().enumerate() {
        let (a, b) = (base(10 * i as u64 + 1, DType::F32, n), base(10 * i as u64 + 2, DType::F32, n));
        let batch = vec![
            Instruction::new(Opcode::Range, [whole(a)]),
            Instruction::new(Opcode::Multiply, [whole(b), whole(a), Scalar::F32(i as f32 + 0.5).into()]),
            Instruction::new(Opcode::Exp, [whole(b), whole(b)]),
            Instruction::new(Opcode::Free, [whole(a)]),
            Instruction::new(Opcode::Sync, [whole(b)]),
        ];
        cpu.execute(&batch, &mut mem).unwrap();
        let got = mem.get(b.id).unwrap().as_slice::<f32>();
        assert_eq!(got[3], (3.0 * (i as f32 + 0.5)).exp());
        assert!(!mem.is_allocated(a.id), "the contracted temporary is never allocated");
    }
    let p = cpu.profile();
    assert_eq!((p.cache.misses, p.cache.hits), (1, 3));
    assert_eq!(p.contracted, 4);
}

#[test]
fn extensions_go_to_the_fallback_child() {
    // cpu computes matmul of floats itself (as GEMM); of integers, the child does.
    let (a, b, c) = (base(1, DType::I64, 6), base(2, DType::I64, 6), base(3, DType::I64, 4));
    let matmul = Opcode::Extension(0);
    let batch = vec![
        Instruction::new(Opcode::Range, [whole(a)]),
        Instruction::new(Opcode::Add, [whole(b), whole(a), Scalar::I64(1).into()]),
        Instruction::new(
            matmul,
            [view(c, 0, &[2, 2], &[2, 1]), view(a, 0, &[2, 3], &[3, 1]), view(b, 0, &[3, 2], &[2, 1])]
                .into_iter()
                .collect::<Vec<Operand>>(),
        ),
    ];
    // Small work runs on the child unless the setting says otherwise: here cpu runs the batch.
    let config = vm_cpu::Config { first_runs_on_child: false, ..vm_cpu::Config::default() };
    let mut cpu = CpuEngine::new(config, Some(Box::new(Interp::new(None)))).unwrap();
    assert!(cpu.register_extension(vm_interp::MATMUL, matmul).unwrap());
    let mut mem = HostMemory::new();
    cpu.execute(&batch, &mut mem).unwrap();
    // a = [[0,1,2],[3,4,5]], b = [[1,2],[3,4],[5,6]]
    assert_eq!(mem.get(c.id).unwrap().as_slice::<i64>(), &[13, 16, 40, 52]);
    assert_eq!(cpu.profile().fallback, 1);
    // The same, typed, through the trait: cpu handed one instruction down, interp ran it.
    let info = cpu.describe();
    assert_eq!((info[0].statistics.fallbacks, info[0].statistics.batches), (1, 1));
    assert_eq!((info[1].implementation.as_str(), info[1].statistics.batches), ("interp", 1));
    assert_eq!((cpu.profile().first_runs_on_child, cpu.profile().batches_on_child), (0, 0));

    let mut alone = CpuEngine::with_threads(1).unwrap();
    assert!(alone.register_extension(vm_interp::MATMUL, matmul).unwrap());
    assert!(!alone.register_extension("fft", Opcode::Extension(1)).unwrap());
    let e = alone.execute(&batch, &mut HostMemory::new()).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
}

#[test]
fn settings_are_read_and_bad_ones_rejected() {
    let s = Settings::from_pairs(
        "cpu",
        &[
            ("threads", toml::Value::Integer(3)),
            ("profile", toml::Value::Boolean(true)),
            ("block_size", toml::Value::Integer(1024)),
        ],
    );
    let mut c = (vm_cpu::IMPLEMENTATION.construct)(&s, None).unwrap();
    assert_eq!(c.name(), "cpu");
    let info = c.describe();
    assert!(info[0].notes[0].contains("3 threads"), "{:?}", info[0].notes);
    c.shutdown().unwrap();
    let bad = Settings::from_pairs("cpu", &[("threads", toml::Value::String("many".into()))]);
    assert!((vm_cpu::IMPLEMENTATION.construct)(&bad, None).is_err());
    let keys: Vec<&str> = vm_cpu::IMPLEMENTATION.settings.iter().map(|s| s.key).collect();
    assert!(keys.contains(&"threads") && keys.contains(&"profile"));
    // The optimisation level is one of two names; anything else names the key and the choices.
    for level in ["none", "speed"] {
        let s = Settings::from_pairs("cpu", &[("opt_level", toml::Value::String(level.into()))]);
        let c = (vm_cpu::IMPLEMENTATION.construct)(&s, None).unwrap();
        let settings = &c.describe()[0].settings;
        assert!(settings.contains(&("opt_level".into(), format!("\"{level}\""))), "{settings:?}");
    }
    let bad = Settings::from_pairs("cpu", &[("opt_level", toml::Value::String("fast".into()))]);
    let e = (vm_cpu::IMPLEMENTATION.construct)(&bad, None).err().expect("opt_level = fast is an error").to_string();
    assert!(e.contains("opt_level") && e.contains("\"speed\"") && e.contains("fast"), "{e}");
    // A config built in code is held to the same ranges as a config file's.
    let many = vm_cpu::Config { threads: vm_cpu::MAX_THREADS + 1, ..vm_cpu::Config::default() };
    let e = CpuEngine::new(many, None).err().expect("too many threads is an error").to_string();
    assert!(e.contains("[cpu] threads = 1025 is out of range: accepted are 0 to 1024"), "{e}");
}

/// `x[i] = i`, then a chain `y = y * a_k` / `y = y + b_k` of `ops` operations with distinct
/// constants, `y` synced.
fn constant_chain(x: Base, y: Base, ops: usize) -> Vec<Instruction> {
    let mut batch = vec![Instruction::new(Opcode::Range, [whole(x)])];
    for k in 0..ops {
        let (opcode, c) =
            if k % 2 == 0 { (Opcode::Multiply, 1.0 - k as f64 * 1e-4) } else { (Opcode::Add, k as f64 * 1e-3) };
        let src = if k == 0 { whole(x) } else { whole(y) };
        batch.push(Instruction::new(opcode, [whole(y), src, Scalar::F64(c).into()]));
    }
    batch.push(Instruction::new(Opcode::Free, [whole(x)]));
    batch.push(Instruction::new(Opcode::Sync, [whole(y)]));
    batch
}

#[test]
fn long_chains_of_constants_match_the_same_operations_in_rust() {
    // Hundreds of distinct constants in one kernel: most are loaded where used, not held in
    // registers; the vector loop of a chain runs 8 copies, and 1001 elements leave a scalar tail.
    for (threads, regalloc) in [(1, "tiered"), (2, "single_pass"), (2, "backtracking")] {
        let n = 1001;
        let (x, y) = (base(1, DType::F64, n), base(2, DType::F64, n));
        let batch = constant_chain(x, y, 600);
        let config = vm_cpu::Config { threads, regalloc: regalloc.into(), max_kernel: 0, ..vm_cpu::Config::default() };
        let mut cpu = CpuEngine::new(config, None).unwrap();
        let mut mem = HostMemory::new();
        cpu.execute(&batch, &mut mem).unwrap();
        let got = mem.get(y.id).unwrap().as_slice::<f64>();
        for (i, &g) in got.iter().enumerate() {
            let mut v = i as f64;
            for k in 0..600 {
                v = if k % 2 == 0 { v * (1.0 - k as f64 * 1e-4) } else { v + k as f64 * 1e-3 };
            }
            assert_eq!(g, v, "element {i} with {regalloc} allocation");
        }
        assert_eq!(cpu.profile().kernels, 1);
    }
}

#[test]
fn hot_kernels_are_compiled_again_by_the_good_tier() {
    let run_chain = |regalloc: &str, n: usize, times: usize, ops: usize| {
        let config = vm_cpu::Config { threads: 2, regalloc: regalloc.into(), ..vm_cpu::Config::default() };
        let mut cpu = CpuEngine::new(config, None).unwrap();
        let mut mem = HostMemory::new();
        for t in 0..times {
            let (x, y) = (base(10 * t as u64 + 1, DType::F64, n), base(10 * t as u64 + 2, DType::F64, n));
            cpu.execute(&constant_chain(x, y, ops), &mut mem).unwrap();
            let got = mem.get(y.id).unwrap().as_slice::<f64>();
            let mut v = 7.0;
            for k in 0..ops {
                v = if k % 2 == 0 { v * (1.0 - k as f64 * 1e-4) } else { v + k as f64 * 1e-3 };
            }
            assert_eq!(got[7], v, "run {t} with {regalloc} allocation");
        }
        let p = cpu.profile();
        (p.cache.misses, p.cache.promoted, p.cache.hits)
    };
    let run = |regalloc: &str, n: usize, times: usize| run_chain(regalloc, n, times, 6);
    // Seven operations on 2^17 positions: single-pass first; the second run passes 2^21 of
    // work in all and gets the backtracking code.
    assert_eq!(run("tiered", 1 << 17, 5), (1, 1, 4));
    // Small kernels run a few times are compiled once.
    assert_eq!(run("tiered", 1000, 5), (1, 0, 4));
    // A short kernel whose first run alone passes the threshold gets the good code at once.
    assert_eq!(run("tiered", 3 << 22, 1), (1, 0, 0));
    assert_eq!(run("tiered", 3 << 22, 3), (1, 0, 2));
    // A long one gets the fast tier's code first (compiled several times faster), however
    // large its first run, and the good code once it runs again.
    let long = vm_cpu::compile::cache::GOOD_FIRST_MAX_OPS + 8;
    assert_eq!(run_chain("tiered", 1 << 20, 1, long), (1, 0, 0));
    assert_eq!(run_chain("tiered", 1 << 20, 2, long), (1, 1, 1));
    assert_eq!(run("single_pass", 1 << 17, 5), (1, 0, 4));
    assert_eq!(run("backtracking", 1 << 17, 5), (1, 0, 4));
}

#[test]
fn small_kernels_run_on_the_child_the_first_times_and_compile_after() {
    // Exactly rounded element-wise work: the child's results and the compiled code's are the
    // same bits, so which one ran does not show.
    let mut cpu = CpuEngine::new(vm_cpu::Config::default(), Some(Box::new(Interp::new(None)))).unwrap();
    let mut mem = HostMemory::new();
    let mut results = Vec::new();
    // Each batch also fills a large array, so that the batch as a whole is not small (small
    // batches run whole on the child; see below).
    let large = base(1000, DType::F64, 1 << 15);
    let with_large = |mut batch: Vec<Instruction>| {
        batch.push(Instruction::new(Opcode::Identity, [whole(large), Scalar::F64(2.0).into()]));
        batch
    };
    for t in 0..4u64 {
        let (x, y) = (base(10 * t + 1, DType::F64, 100), base(10 * t + 2, DType::F64, 100));
        cpu.execute(&with_large(constant_chain(x, y, 6)), &mut mem).unwrap();
        results.push(mem.get(y.id).unwrap().as_slice::<f64>().to_vec());
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
    let p = cpu.profile();
    // The chain twice on the child, then compiled once and reused; the fill compiled once.
    assert_eq!((p.first_runs_on_child, p.batches_on_child, p.cache.misses, p.cache.hits), (2, 0, 2, 4));
    // `exp` too (the child computes `vm_math`'s, as the compiled code does); a kernel too large
    // for the child to run as fast is compiled at once.
    let (x, y) = (base(100, DType::F64, 100), base(101, DType::F64, 100));
    let exp = vec![
        Instruction::new(Opcode::Range, [whole(x)]),
        Instruction::new(Opcode::Exp, [whole(y), whole(x)]),
        Instruction::new(Opcode::Sync, [whole(y)]),
    ];
    cpu.execute(&with_large(exp), &mut mem).unwrap();
    let exps = mem.get(y.id).unwrap().as_slice::<f64>();
    assert!((0..100).all(|i| exps[i].to_bits() == vm_math::exp_f64(i as f64).to_bits()));
    let (x, y) = (base(102, DType::F64, 1 << 16), base(103, DType::F64, 1 << 16));
    cpu.execute(&constant_chain(x, y, 5), &mut mem).unwrap();
    let p = cpu.profile();
    assert_eq!((p.first_runs_on_child, p.cache.misses), (3, 3));
}

#[test]
fn small_batches_run_whole_on_the_child_unless_they_read_a_deferred_base() {
    let mut cpu = CpuEngine::new(vm_cpu::Config::default(), Some(Box::new(Interp::new(None)))).unwrap();
    let mut mem = HostMemory::new();
    // Writes to a small board in a pattern that never repeats: each batch is a structure not
    // seen before, run by the child without kernel formation; the values are interp's.
    let board = base(1, DType::F64, 9 * 9);
    let mut want = vec![0.0f64; 81];
    for round in 0..5usize {
        let mut batch = Vec::new();
        for j in 0..40usize {
            let (r, c) = ((j * 4 + round) % 9, (j * 7 + round) % 9);
            let row = view(board, (r * 9) as i64, &[9], &[1]);
            let col = view(board, c as i64, &[9], &[9]);
            batch.push(Instruction::new(Opcode::Add, [row.clone(), row, Scalar::F64(1.0).into()]));
            batch.push(Instruction::new(Opcode::Multiply, [col.clone(), col, Scalar::F64(0.5).into()]));
            (0..9).for_each(|k| want[r * 9 + k] += 1.0);
            (0..9).for_each(|k| want[k * 9 + c] *= 0.5);
        }
        batch.push(Instruction::new(Opcode::Sync, [whole(board)]));
        cpu.execute(&batch, &mut mem).unwrap();
        assert_eq!(mem.get(board.id).unwrap().as_slice::<f64>(), &want[..], "round {round}");
    }
    let p = cpu.profile();
    assert_eq!((p.batches_on_child, p.kernels), (5, 0));
    // A large batch defers a pure array it does not read (its values stay a recipe); a small
    // batch reading it is not the child's: cpu replays the recipe first.
    let (x, y, s) = (base(2, DType::F64, 1 << 15), base(3, DType::F64, 1 << 15), base(4, DType::F64, 4));
    let defer = vec![
        Instruction::new(Opcode::Range, [whole(x)]),
        Instruction::new(Opcode::Multiply, [whole(y), whole(x), Scalar::F64(3.0).into()]),
        Instruction::new(Opcode::Sync, [whole(y)]),
    ];
    cpu.execute(&defer, &mut mem).unwrap();
    let read = vec![
        Instruction::new(Opcode::Add, [whole(s), view(x, 10, &[4], &[1]), Scalar::F64(0.5).into()]),
        Instruction::new(Opcode::Sync, [whole(s)]),
    ];
    cpu.execute(&read, &mut mem).unwrap();
    assert_eq!(mem.get(s.id).unwrap().as_slice::<f64>(), &[10.5, 11.5, 12.5, 13.5]);
    assert_eq!(cpu.profile().batches_on_child, 5);
}

#[test]
fn reused_buffers_are_zero_unless_the_kernel_overwrites_them_whole() {
    // A freed large buffer goes to the pool; the next base of its size gets it back. A kernel
    // that stores its whole output without reading it takes it as it is; one that reads a base
    // never written (here `y = y + 1` and a half-written `z`) must still see zeros.
    let n = (1 << 20) / 8 * 2;
    let (a, x, y, z) = (base(1, DType::F64, n), base(2, DType::F64, n), base(3, DType::F64, n), base(4, DType::F64, n));
    let mut mem = HostMemory::new();
    let mut cpu = engine(2);
    for (fresh, reads_itself) in [(x, false), (y, true), (z, false)] {
        let fill = Instruction::new(Opcode::Identity, [whole(a), Scalar::F64(7.0).into()]);
        cpu.execute(&[fill, Instruction::new(Opcode::Sync, [whole(a)])], &mut mem).unwrap();
        cpu.execute(&[Instruction::new(Opcode::Free, [whole(a)])], &mut mem).unwrap();
        assert!(mem.pooled_bytes() >= n * 8, "the freed buffer waits in the pool");
        let instr = if reads_itself {
            Instruction::new(Opcode::Add, [whole(fresh), whole(fresh), Scalar::F64(1.0).into()])
        } else if fresh == z {
            Instruction::new(Opcode::Identity, [view(z, 0, &[n / 2], &[1]), Scalar::F64(2.0).into()])
        } else {
            Instruction::new(Opcode::Identity, [whole(fresh), Scalar::F64(3.0).into()])
        };
        cpu.execute(&[instr, Instruction::new(Opcode::Sync, [whole(fresh)])], &mut mem).unwrap();
    }
    let data = |b: Base| mem.get(b.id).unwrap().as_slice::<f64>().to_vec();
    assert!(data(x).iter().all(|&v| v == 3.0));
    assert!(data(y).iter().all(|&v| v == 1.0), "a read of a never-written base sees zeros");
    let z = data(z);
    assert!(z[..n / 2].iter().all(|&v| v == 2.0) && z[n / 2..].iter().all(|&v| v == 0.0));
}

/// One iteration of a pricing-like loop over the pure 128 x 256 array `s` (a range):
/// `d = log(s / 7) + a`, `r = sqrt(d * d) / b`, then the column sums of `r` into `out`, synced.
/// Fresh temporaries each time.
fn invariant_iteration(s: Base, out: Base, t: u64, a: f64, b: f64) -> Vec<Instruction> {
    let tmp = |k: u64| base(100 + 10 * t + k, DType::F64, s.nelem as usize);
    let (t1, t2, t3, t4, t5) = (tmp(1), tmp(2), tmp(3), tmp(4), tmp(5));
    let c = |x: f64| Operand::from(Scalar::F64(x));
    vec![
        Instruction::new(Opcode::Divide, [grid(t1), grid(s), c(7.0)]),
        Instruction::new(Opcode::Log, [grid(t2), grid(t1)]),
        Instruction::new(Opcode::Add, [grid(t3), grid(t2), c(a)]),
        Instruction::new(Opcode::Multiply, [grid(t4), grid(t3), grid(t3)]),
        Instruction::new(Opcode::Sqrt, [grid(t5), grid(t4)]),
        Instruction::new(Opcode::Divide, [grid(t5), grid(t5), c(b)]),
        Instruction::new(Opcode::AddReduce, [whole(out), grid(t5), Scalar::I64(0).into()]),
        Instruction::new(Opcode::Free, [whole(t1)]),
        Instruction::new(Opcode::Free, [whole(t2)]),
        Instruction::new(Opcode::Free, [whole(t3)]),
        Instruction::new(Opcode::Free, [whole(t4)]),
        Instruction::new(Opcode::Free, [whole(t5)]),
        Instruction::new(Opcode::Sync, [whole(out)]),
    ]
}

/// `b` as a 128 x 256 array.
fn grid(b: Base) -> Operand {
    view(b, 0, &[128, 256], &[256, 1])
}

#[test]
fn loop_invariant_results_are_kept_and_give_the_same_values() {
    let (s, out) = (base(1, DType::F64, 128 * 256), base(2, DType::F64, 256));
    for hoist_bytes in [0, 1 << 28] {
        let config = vm_cpu::Config { threads: 2, hoist_bytes, ..vm_cpu::Config::default() };
        let mut cpu = CpuEngine::new(config, None).unwrap();
        let mut interp = Interp::new(None);
        let (mut a, mut b) = (HostMemory::new(), HostMemory::new());
        let range = [
            Instruction::new(Opcode::Range, [grid(s)]),
            Instruction::new(Opcode::Add, [grid(s), grid(s), Scalar::F64(1.0).into()]),
        ];
        cpu.execute(&range, &mut a).unwrap();
        interp.execute(&range, &mut b).unwrap();
        let mut run = |t: u64, prefix: &[Instruction]| {
            let mut batch = prefix.to_vec();
            batch.extend(invariant_iteration(s, out, t, 0.1 * t as f64, 1.0 + t as f64));
            cpu.execute(&batch, &mut a).unwrap();
            interp.execute(&batch, &mut b).unwrap();
            let (got, want) = (a.get(out.id).unwrap().as_slice::<f64>(), b.get(out.id).unwrap().as_slice::<f64>());
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() <= 1e-12 * w.abs(), "iteration {t} hoist_bytes {hoist_bytes}: {g} vs {w}");
            }
            cpu.profile().hoisted
        };
        let mut hoisted = 0;
        for t in 0..6 {
            hoisted = run(t, &[]);
        }
        // Kept the second time, read from then on (iterations 3..6).
        assert_eq!(hoisted, if hoist_bytes == 0 { 0 } else { 4 });
        // `s` changes (another pure value, then a partial write): the kept value is not read.
        let double = Instruction::new(Opcode::Multiply, [grid(s), grid(s), Scalar::F64(2.0).into()]);
        assert_eq!(run(6, &[double]), hoisted);
        assert_eq!(
            run(7, &[Instruction::new(Opcode::Identity, [view(s, 0, &[1], &[1]), Scalar::F64(5.0).into()])]),
            hoisted
        );
        assert_eq!(run(8, &[]), hoisted, "nothing kept matches the new `s`");
    }
}

/// A 300-step element-wise expression over a 3-d grid as a frontend records it (each step
/// writes a new temporary and frees the one before), with a `(1, 1, n)` operand broadcast and
/// square roots, logarithms, exponentials, squares and divisions among the steps (the shape of
/// an ocean model's equation of state): it runs as one kernel that reads each input and
/// writes the output once, whatever the steps drawn.
#[test]
fn long_expressions_run_in_one_pass() {
    let n = 12;
    let cells = n * n * n;
    let grid = |b: Base| view(b, 0, &[n, n, n], &[(n * n) as i64, n as i64, 1]);
    let inputs: Vec<Base> = (1..=6).map(|id| base(id, DType::F64, cells)).collect();
    let z = base(7, DType::F64, n);
    let z_broadcast = view(z, 0, &[n, n, n], &[0, 0, 1]);
    let out = base(8, DType::F64, cells);
    for seed in 0..3 {
        let mut rng = vm_testkit::Rng::new(seed);
        let mut batch = Vec::new();
        let mut next_id = 100;
        let mut temp = |batch: &mut Vec<Instruction>, opcode: Opcode, from: Option<Base>, operands: Vec<Operand>| {
            let t = base(next_id, DType::F64, cells);
            next_id += 1;
            let mut all = vec![grid(t)];
            all.extend(operands);
            batch.push(Instruction::new(opcode, all));
            if let Some(f) = from {
                batch.push(Instruction::new(Opcode::Free, [whole(f)]));
            }
            t
        };
        let mut t = temp(&mut batch, Opcode::Identity, None, vec![grid(inputs[0])]);
        for _ in 0..300 {
            let a = grid(inputs[rng.below(6)]);
            let c = |x: f64| Operand::from(Scalar::F64(x));
            t = match rng.below(20) {
                0 => {
                    let m = temp(&mut batch, Opcode::Absolute, Some(t), vec![grid(t)]);
                    temp(&mut batch, Opcode::Sqrt, Some(m), vec![grid(m)])
                }
                1 => {
                    let m = temp(&mut batch, Opcode::Absolute, Some(t), vec![grid(t)]);
                    let p = temp(&mut batch, Opcode::Add, Some(m), vec![grid(m), c(2.0)]);
                    temp(&mut batch, Opcode::Log, Some(p), vec![grid(p)])
                }
                2 => {
                    let m = temp(&mut batch, Opcode::Absolute, Some(t), vec![grid(t)]);
                    let s = temp(&mut batch, Opcode::Multiply, Some(m), vec![grid(m), c(-0.01)]);
                    temp(&mut batch, Opcode::Exp, Some(s), vec![grid(s)])
                }
                3 => temp(&mut batch, Opcode::Power, Some(t), vec![grid(t), c(2.0)]),
                4..=6 => temp(&mut batch, Opcode::Divide, Some(t), vec![grid(t), a]),
                7..=9 => temp(&mut batch, Opcode::Subtract, Some(t), vec![grid(t), z_broadcast.clone()]),
                10..=14 => temp(&mut batch, Opcode::Multiply, Some(t), vec![grid(t), a]),
                _ => temp(&mut batch, Opcode::Add, Some(t), vec![grid(t), a]),
            };
        }
        batch.push(Instruction::new(Opcode::Identity, [grid(out), grid(t)]));
        batch.push(Instruction::new(Opcode::Free, [whole(t)]));
        batch.push(Instruction::new(Opcode::Sync, [whole(out)]));
        let mut init = inputs.clone();
        init.push(z);
        let p = differential(&batch, &init, &[out], 2, true, "a long expression");
        let touched = (inputs.len() * cells + n + cells) as u64 * 8;
        assert_eq!(p.kernels, 1, "seed {seed}: one kernel for the whole expression");
        assert!(
            p.bytes_moved <= touched,
            "seed {seed}: {} bytes moved for {touched} of inputs and output",
            p.bytes_moved
        );
    }
}
