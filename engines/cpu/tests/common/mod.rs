//! Shared helpers of the differential tests: run one batch on `cpu` and on the reference
//! `interp` from the same initial host data, and compare every base.
//!
//! Tolerance: integers and bools must be equal. Floats must be equal, or both NaN, or within
//! `tol * max(1, |a|, |b|)` with `tol` = 1e-9 for f64 and 1e-4 for f32: reductions add in a
//! different order (per-block partials), everything element-wise is bit-identical (the same
//! libm routines).
#![allow(dead_code)]

use vm_core::{Base, BaseId, Component, DType, HostMemory, Instruction, Operand, Scalar, View, with_dtype};
use vm_cpu::CpuEngine;
use vm_interp::Interp;

/// Fills `base` in `mem` with deterministic pseudo-random data suited to its dtype.
pub fn fill(mem: &mut HostMemory, base: &Base, seed: u64, small: bool) {
    let buf = mem.ensure(base).unwrap();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    with_dtype!(base.dtype, T => {
        let data = buf.as_mut_slice::<T>();
        for x in data.iter_mut() {
            *x = value(base.dtype, next(), small).get::<T>();
        }
    });
}

/// A pseudo-random value of `d` from 64 random bits: floats in [-8, 8) with some specials,
/// integers over their full range (or small ones when `small`), bools.
fn value(d: DType, bits: u64, small: bool) -> Scalar {
    let s = if d.is_float() {
        let x = (bits >> 11) as f64 / (1u64 << 53) as f64 * 16.0 - 8.0;
        let x = match bits % 97 {
            0 => 0.0,
            1 => -0.0,
            2 if !small => f64::NAN,
            3 if !small => f64::INFINITY,
            4 => 1.0,
            _ => x,
        };
        Scalar::F64(x)
    } else if small || d == DType::Bool {
        Scalar::I64((bits % 11) as i64 - 5)
    } else {
        Scalar::U64(bits)
    };
    s.cast(d)
}

/// True when `a` and `b` agree under the documented tolerance.
pub fn close_f64(a: f64, b: f64, tol: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol * 1f64.max(a.abs()).max(b.abs())
}

/// Compares every base allocated by the reference run; panics with a description on mismatch.
pub fn compare(cpu: &HostMemory, reference: &HostMemory, bases: &[Base], what: &str) {
    for b in bases {
        let (Some(x), Some(y)) = (cpu.get(b.id), reference.get(b.id)) else {
            // Bases freed by the batch are gone from both; contracted temporaries were never
            // allocated by cpu. Anything interp holds, cpu must hold too.
            assert!(reference.get(b.id).is_none(), "{what}: base {} missing from cpu's memory", b.id);
            continue;
        };
        with_dtype!(b.dtype, T => {
            let (xs, ys) = (x.as_slice::<T>(), y.as_slice::<T>());
            for (i, (p, q)) in xs.iter().zip(ys).enumerate() {
                let ok = match b.dtype {
                    DType::F64 => close_f64(Scalar::from(*p).as_f64(), Scalar::from(*q).as_f64(), 1e-9),
                    DType::F32 => close_f64(Scalar::from(*p).as_f64(), Scalar::from(*q).as_f64(), 1e-4),
                    _ => p == q,
                };
                assert!(ok, "{what}: base {} element {i}: cpu {p:?}, interp {q:?}", b.id);
            }
        });
    }
}

/// Runs `batch` on a cpu engine with `threads` threads and on interp from the same initial data
/// (`init`: bases filled with `fill`), and compares every base in `bases`.
pub fn differential(
    batch: &[Instruction],
    init: &[Base],
    bases: &[Base],
    threads: usize,
    small: bool,
    what: &str,
) -> vm_cpu::profile::Profile {
    differential_on(engine(threads), batch, init, bases, small, what)
}

/// [`differential`] on a given cpu engine.
pub fn differential_on(
    mut cpu: CpuEngine,
    batch: &[Instruction],
    init: &[Base],
    bases: &[Base],
    small: bool,
    what: &str,
) -> vm_cpu::profile::Profile {
    let mut m1 = HostMemory::new();
    let mut m2 = HostMemory::new();
    for (i, b) in init.iter().enumerate() {
        fill(&mut m1, b, i as u64 + 1, small);
        fill(&mut m2, b, i as u64 + 1, small);
    }
    let mut interp = Interp::new(None);
    let r1 = cpu.execute(batch, &mut m1);
    let r2 = interp.execute(batch, &mut m2);
    // The host reads a base after syncing it: sync every base the reference still holds (cpu
    // may have deferred some).
    let syncs: Vec<Instruction> = bases
        .iter()
        .filter(|b| m2.get(b.id).is_some())
        .map(|b| Instruction::new(vm_core::Opcode::Sync, [whole(*b)]))
        .collect();
    let r1 = r1.and_then(|()| cpu.execute(&syncs, &mut m1));
    match (&r1, &r2) {
        (Ok(()), Ok(())) => compare(&m1, &m2, bases, what),
        (Err(a), Err(b)) => assert_eq!(a.code(), b.code(), "{what}: different errors: {a} / {b}"),
        _ => panic!("{what}: cpu {r1:?}, interp {r2:?}"),
    }
    cpu.profile()
}

/// A cpu engine with `threads` threads and small blocks, so that even small tests run many
/// blocks in parallel.
pub fn engine(threads: usize) -> CpuEngine {
    engine_at(threads, &vm_cpu::Config::default().opt_level)
}

/// [`engine`] compiling at Cranelift optimisation level `opt_level`.
pub fn engine_at(threads: usize, opt_level: &str) -> CpuEngine {
    let config = vm_cpu::Config {
        threads,
        block_size: 64,
        min_parallel: 100,
        opt_level: opt_level.into(),
        ..vm_cpu::Config::default()
    };
    CpuEngine::new(config, None).unwrap()
}

/// A base of `n` elements of `dtype`.
pub fn base(id: u64, dtype: DType, n: usize) -> Base {
    Base { id: BaseId(id), dtype, nelem: n as u64 }
}

/// The whole base as a 1-d view operand.
pub fn whole(b: Base) -> Operand {
    Operand::View(View::of_base(b))
}

/// A view operand.
pub fn view(b: Base, start: i64, shape: &[usize], stride: &[i64]) -> Operand {
    Operand::View(View::new(b, start, shape, stride).unwrap())
}
