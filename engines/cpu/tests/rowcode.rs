//! The row routines (`vm_cpu::x86`), AVX-512 and AVX2: kernels of f64 and f32 arithmetic with more live values
//! than vector registers and more operands than address registers, rows of every length modulo
//! eight (views with a gap between rows, so that rows stay rows, and blocks that start and end
//! inside rows), operands broadcast along rows or everywhere, constants on either side, in-place
//! updates and reductions, against interp. On a CPU without AVX-512 the same kernels run
//! Cranelift's code (and the tests check that no routine was made); on one with it (by its own
//! CPUID, not the engine's), that routines were made. Every routine of every kernel these tests
//! compile is decoded with iced-x86 in both instruction sets, whatever the CPU, and compared
//! with what the assembler meant ([`decode`]); a property test does the same for random
//! instructions of every form the assembler has.

mod common;
#[path = "rowcode/decode.rs"]
mod decode;

use common::*;
use proptest::prelude::*;
use std::cell::Cell;
use std::sync::Mutex;
use vm_cpu::CpuEngine;
use vm_cpu::x86::{Emitted, Isa, Mem, Rm, Routine};
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar};

thread_local! {
    /// Routines decoded for the kernels compiled on this thread: AVX-512, AVX2.
    static DECODED: Cell<[u64; 2]> = const { Cell::new([0, 0]) };
}

/// What the decode check found wrong (it panics too, but an engine may turn a panic into an
/// error).
static MISMATCHES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The check the engines run on the routines of each kernel they compile.
fn audit(r: &Routine) {
    DECODED.with(|d| {
        let mut n = d.get();
        n[usize::from(r.isa == Isa::Avx2)] += 1;
        d.set(n);
    });
    if let Err(e) = decode::check(r) {
        MISMATCHES.lock().unwrap().push(e.clone());
        panic!("{e}");
    }
}

/// Routines decoded on this thread since [`decoding`].
struct Decoding([u64; 2]);

/// Has the engines decode every routine from now on (see [`audit`]).
fn decoding() -> Decoding {
    vm_cpu::x86::set_audit(audit);
    Decoding(DECODED.with(Cell::get))
}

impl Decoding {
    /// Checks that routines of both instruction sets were decoded, and all agreed.
    fn check(self, what: &str) {
        let now = DECODED.with(Cell::get);
        assert!(now[0] > self.0[0] && now[1] > self.0[1], "{what}: no AVX-512 or no AVX2 routine decoded");
        let bad = MISMATCHES.lock().unwrap();
        assert!(bad.is_empty(), "{what}: decoded code differs from the listing: {bad:#?}");
    }
}

/// True when this CPU runs routines of `row_code`, by its own CPUID: a routine of a CPU
/// feature the engine fails to detect must fail the tests, not fall back to Cranelift's code.
fn cpu_has(row_code: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match row_code {
            "avx512" => is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("bmi2"),
            "avx2" => is_x86_feature_detected!("avx2"),
            "auto" => cpu_has("avx512") || cpu_has("avx2"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = row_code;
        false
    }
}

#[test]
fn the_engine_finds_the_instruction_sets_this_cpu_has() {
    for name in ["avx512", "avx2", "auto", "none"] {
        assert_eq!(Isa::named(name).is_some(), cpu_has(name), "{name}");
    }
}

fn op(opcode: Opcode, operands: impl IntoIterator<Item = Operand>) -> Instruction {
    Instruction::new(opcode, operands.into_iter().collect::<Vec<_>>())
}

/// Elements of a base holding `r` rows of `c` with a gap of [`GAP`] after each.
fn size(r: usize, c: usize) -> usize {
    r * (c + GAP)
}

const GAP: usize = 2;

/// The `r` rows of `c` elements of `b` (of [`size`] elements).
fn rows(b: Base, r: usize, c: usize) -> Operand {
    view(b, 0, &[r, c], &[(c + GAP) as i64, 1])
}

fn f64s(x: f64) -> Operand {
    Scalar::F64(x).into()
}

/// The constant `x` as an element of `d` (f64 or f32).
fn konst(d: DType, x: f64) -> Operand {
    match d {
        DType::F32 => Scalar::F32(x as f32).into(),
        _ => Scalar::F64(x).into(),
    }
}

/// An engine with blocks of 300 positions: they start and end inside the rows, leaving pieces
/// of every length.
fn engine_with(threads: usize, row_code: &str) -> CpuEngine {
    let config = vm_cpu::Config {
        first_runs_on_child: false,
        row_code: row_code.into(),
        block_size: 300,
        ..small_blocks(threads)
    };
    CpuEngine::new(config, None).unwrap()
}

/// The instruction sets tested: each the CPU has (the tests check that one it lacks makes no
/// routine), and none.
const ROW_CODES: [&str; 3] = ["avx512", "avx2", "none"];

/// Row shapes: lengths of every remainder modulo eight from the routine's shortest row
/// (`vm_cpu::compile::codegen::ROW_ROUTINE_MIN`) on, in kernels of several blocks, and rows too short for
/// it. (A kernel is cut into at least eight blocks: a small one has only short pieces of rows.)
const SHAPES: [(usize, usize); 10] =
    [(40, 64), (33, 65), (36, 66), (41, 67), (38, 68), (35, 69), (37, 70), (39, 71), (7, 29), (2, 3)];

/// Runs `batch` on `cpu` and on interp (which must run it without an error: a batch both
/// refuse would agree) and compares `compared`.
fn agree(
    cpu: CpuEngine,
    batch: &[Instruction],
    init: &[Base],
    compared: &[Base],
    what: &str,
) -> vm_cpu::profile::Profile {
    let program = vm_testkit::Program {
        inputs: init.to_vec(),
        bases: compared.to_vec(),
        steps: vec![vm_testkit::Step::Batch(batch.to_vec())],
    };
    if let Err(e) = vm_testkit::run(&mut vm_interp::Interp::new(None), &program, vm_testkit::Data::small_if(false)) {
        panic!("{what}: interp refuses the batch: {e}");
    }
    differential_on(cpu, batch, init, compared, false, what)
}

/// Checks that the kernels got routines exactly when the CPU has the instruction set and the
/// setting allows.
fn check_routines(p: &vm_cpu::profile::Profile, row_code: &str, what: &str) {
    if cpu_has(row_code) {
        assert!(p.cache.row_code >= 1, "{what}: no routine made");
    } else {
        assert_eq!(p.cache.row_code, 0, "{what}: a routine made where none may be");
    }
}

#[test]
fn more_live_values_than_registers_and_operands_than_address_registers_match_interp() {
    let decoding = decoding();
    for (d, (r, c)) in [DType::F64, DType::F32].into_iter().flat_map(|d| SHAPES.map(|s| (d, s))) {
        for row_code in ROW_CODES {
            let n = size(r, c);
            let inputs: Vec<Base> = (1..=12).map(|i| base(i, d, n)).collect();
            let temps: Vec<Base> = (100..148).map(|i| base(i, d, n)).collect();
            let out = base(200, d, n);
            let mut batch = Vec::new();
            // 48 results, all live until the chain at the end takes them from the last.
            for (i, &t) in temps.iter().enumerate() {
                let (x, y) = (inputs[i % 12], inputs[(i * 5 + 3) % 12]);
                batch.push(op(Opcode::Multiply, [rows(t, r, c), rows(x, r, c), konst(d, 1.0 + i as f64 / 8.0)]));
                batch.push(op(Opcode::Add, [rows(t, r, c), rows(t, r, c), rows(y, r, c)]));
            }
            batch.push(op(Opcode::Identity, [rows(out, r, c), rows(temps[47], r, c)]));
            for &t in temps[..47].iter().rev() {
                batch.push(op(Opcode::Subtract, [rows(out, r, c), rows(t, r, c), rows(out, r, c)]));
            }
            for &t in &temps {
                batch.push(op(Opcode::Free, [whole(t)]));
            }
            let mut compared = inputs.clone();
            compared.push(out);
            let what = format!("{d} {r}x{c}, row code {row_code}");
            let p = agree(engine_with(2, row_code), &batch, &inputs, &compared, &what);
            check_routines(&p, row_code, &what);
        }
    }
    decoding.check("more live values than registers and operands than address registers match interp");
}

#[test]
fn broadcasts_constants_first_every_unary_and_in_place_updates_match_interp() {
    let decoding = decoding();
    for (d, (r, c)) in [DType::F64, DType::F32].into_iter().flat_map(|d| SHAPES.map(|s| (d, s))) {
        for (threads, row_code) in [(1, "avx512"), (2, "avx512"), (1, "avx2"), (2, "avx2")] {
            let n = size(r, c);
            let (a, col, s, out) = (base(1, d, n), base(2, d, r), base(3, d, 1), base(4, d, n));
            let t: Vec<Base> = (10..21).map(|i| base(i, d, n)).collect();
            let v = |b: Base| rows(b, r, c);
            let column = view(col, 0, &[r, c], &[1, 0]);
            let scalar = view(s, 0, &[r, c], &[0, 0]);
            let mut batch = vec![
                op(Opcode::Divide, [v(t[0]), konst(d, 2.5), column]),
                op(Opcode::Subtract, [v(t[1]), konst(d, 1.5), v(a)]),
                op(Opcode::Negative, [v(t[2]), v(a)]),
                op(Opcode::Multiply, [v(t[3]), v(t[1]), v(t[2])]),
                op(Opcode::Absolute, [v(t[4]), v(a)]),
                op(Opcode::Sqrt, [v(t[5]), v(t[4])]),
                op(Opcode::Square, [v(t[6]), scalar]),
                op(Opcode::Reciprocal, [v(t[7]), v(t[6])]),
                op(Opcode::Subtract, [v(t[8]), v(t[0]), v(t[3])]),
                op(Opcode::Add, [v(t[9]), v(t[8]), v(t[5])]),
                op(Opcode::Multiply, [v(t[10]), v(t[9]), v(t[7])]),
                op(Opcode::Add, [v(a), v(a), v(t[10])]),
                op(Opcode::Identity, [v(out), v(t[10])]),
                op(Opcode::Sqrt, [v(t[0]), konst(d, 2.0)]),
                op(Opcode::Subtract, [v(out), v(out), v(t[0])]),
            ];
            batch.extend(t.iter().map(|&b| op(Opcode::Free, [whole(b)])));
            let what = format!("{d} {r}x{c}, {threads} threads, {row_code}");
            let p = agree(engine_with(threads, row_code), &batch, &[a, col, s], &[a, col, s, out], &what);
            check_routines(&p, row_code, &what);
        }
    }
    decoding.check("broadcasts constants first every unary and in place updates match interp");
}

fn reduce(opcode: Opcode, out: Operand, input: Operand, axis: i64) -> Instruction {
    op(opcode, [out, input, Scalar::I64(axis).into()])
}

/// Sums along rows and products across them, of values computed in the same kernel (the float
/// products run in order after it).
fn reductions(r: usize, c: usize) -> (Vec<Instruction>, Vec<Base>, Vec<Base>) {
    let n = size(r, c);
    let (x, y) = (base(1, DType::F64, n), base(2, DType::F64, n));
    let (t, u, w) = (base(10, DType::F64, n), base(11, DType::F64, n), base(12, DType::F64, n));
    let (rowsum, colprod, rowprod) = (base(20, DType::F64, r), base(21, DType::F64, c), base(22, DType::F64, r));
    let v = |b: Base| rows(b, r, c);
    let mut batch = vec![
        op(Opcode::Multiply, [v(t), v(x), v(y)]),
        op(Opcode::Subtract, [v(t), v(t), f64s(0.5)]),
        reduce(Opcode::AddReduce, view(rowsum, 0, &[r], &[1]), v(t), 1),
        op(Opcode::Absolute, [v(u), v(x)]),
        op(Opcode::Multiply, [v(u), v(u), f64s(0.5)]),
        op(Opcode::Add, [v(u), v(u), f64s(0.75)]),
        reduce(Opcode::MultiplyReduce, view(colprod, 0, &[c], &[1]), v(u), 0),
        op(Opcode::Divide, [v(w), v(u), v(t)]),
        reduce(Opcode::MultiplyReduce, view(rowprod, 0, &[r], &[1]), v(w), 1),
    ];
    batch.extend([t, u, w].map(|b| op(Opcode::Free, [whole(b)])));
    (batch, vec![x, y], vec![x, y, rowsum, colprod, rowprod])
}

#[test]
fn sums_and_products_in_the_kernels_match_interp() {
    let decoding = decoding();
    for (r, c) in SHAPES.into_iter().chain([(4, 1000), (1, 7)]) {
        for row_code in ["avx512", "avx2"] {
            let (batch, init, compared) = reductions(r, c);
            let what = format!("{r}x{c}, {row_code}");
            let p = agree(engine_with(2, row_code), &batch, &init, &compared, &what);
            check_routines(&p, row_code, &what);
        }
    }
    decoding.check("sums and products in the kernels match interp");
}

/// The routine sums the lanes and the last positions of a row in the order of Cranelift's
/// vector loop: the results do not depend on whether the CPU has AVX-512.
#[test]
fn sums_and_products_are_bit_for_bit_those_of_the_engine_without_routines() {
    let decoding = decoding();
    use vm_runtime::{Component, HostMemory};
    for (r, c) in SHAPES.into_iter().chain([(4, 1000), (1, 7)]) {
        let (batch, init, compared) = reductions(r, c);
        let run = |row_code: &str| {
            let mut mem = HostMemory::new();
            for (seed, b) in init.iter().enumerate() {
                fill(&mut mem, b, seed as u64, false);
            }
            engine_with(1, row_code).execute(&batch, &mut mem).unwrap();
            compared.iter().map(|b| mem.get(b.id).unwrap().bytes().to_vec()).collect::<Vec<_>>()
        };
        let reference = run("none");
        assert_eq!(run("avx512"), reference, "{r}x{c}, avx512");
        assert_eq!(run("avx2"), reference, "{r}x{c}, avx2");
    }
    decoding.check("sums and products are bit for bit those of the engine without routines");
}

/// A kernel with a routine still compiles its short rows' loop itself, so a hot one is compiled
/// again by the good tier like any other (rows of 8, too short for the routine, ran the fast
/// tier's loop for good when it was not).
#[test]
fn hot_kernels_with_routines_are_compiled_again() {
    use vm_runtime::{Component, HostMemory};
    let (r, c) = (1 << 12, 100);
    let (x, y) = (base(1, DType::F64, size(r, c)), base(2, DType::F64, size(r, c)));
    let batch = [
        op(Opcode::Multiply, [rows(y, r, c), rows(x, r, c), f64s(0.5)]),
        op(Opcode::Add, [rows(y, r, c), rows(y, r, c), f64s(0.25)]),
    ];
    for row_code in ["avx512", "avx2"] {
        let mut cpu = engine_with(1, row_code);
        let mut mem = HostMemory::new();
        fill(&mut mem, &x, 1, false);
        for _ in 0..8 {
            cpu.execute(&batch, &mut mem).unwrap();
        }
        let p = cpu.profile();
        check_routines(&p, row_code, row_code);
        assert_eq!((p.cache.misses, p.cache.promoted), (1, 1), "{row_code}");
    }
}

/// `maximum` and `minimum` in the routines: a NaN in either input wins (the first's when both
/// are), equal zeros give the first input, as NumPy's; bit for bit against interp, for arrays
/// and constants on either side.
#[test]
fn maximum_and_minimum_keep_numpys_nans_and_zeros() {
    let decoding = decoding();
    use vm_runtime::{Component, HostMemory};
    let specials = [0.0, -0.0, 1.5, -2.5, f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 3.0];
    // Several blocks of 300 positions: rows long enough for the routine.
    let n = 4000;
    for d in [DType::F64, DType::F32] {
        let (x, y, out1, out2, out3) = (base(1, d, n), base(2, d, n), base(3, d, n), base(4, d, n), base(5, d, n));
        // Every pair of specials somewhere in the rows.
        let xs: Vec<f64> = (0..n).map(|i| specials[i % specials.len()]).collect();
        let ys: Vec<f64> = (0..n).map(|i| specials[(i / specials.len()) % specials.len()]).collect();
        let batch = vec![
            op(Opcode::Maximum, [whole(out1), whole(x), whole(y)]),
            op(Opcode::Minimum, [whole(out2), whole(y), whole(x)]),
            op(Opcode::Maximum, [whole(out3), konst(d, -0.0), whole(x)]),
            op(Opcode::Minimum, [whole(out3), whole(out3), konst(d, f64::NAN)]),
            op(Opcode::Sync, [whole(out1)]),
            op(Opcode::Sync, [whole(out2)]),
            op(Opcode::Sync, [whole(out3)]),
        ];
        let run = |engine: &mut dyn Component| {
            let mut mem = HostMemory::new();
            for (b, values) in [(x, &xs), (y, &ys)] {
                let buf = mem.ensure(&b).unwrap();
                match d {
                    DType::F32 => buf.as_mut_slice::<f32>().iter_mut().zip(values).for_each(|(o, &v)| *o = v as f32),
                    _ => buf.as_mut_slice::<f64>().copy_from_slice(values),
                }
            }
            engine.execute(&batch, &mut mem).unwrap();
            [out1, out2, out3].map(|b| mem.get(b.id).unwrap().bytes().to_vec())
        };
        let want = run(&mut vm_interp::Interp::new(None));
        for row_code in ["avx512", "avx2"] {
            let mut cpu = engine_with(1, row_code);
            let got = run(&mut cpu);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                let size = g.len() / n;
                let first = (0..n).find(|&i| g[i * size..(i + 1) * size] != w[i * size..(i + 1) * size]);
                assert_eq!(
                    first,
                    None,
                    "{d} {row_code}: output {k}, x {:?}, y {:?}, got {:?}, want {:?}",
                    first.map(|i| xs[i]),
                    first.map(|i| ys[i]),
                    first.map(|i| g[i * size..(i + 1) * size].to_vec()),
                    first.map(|i| w[i * size..(i + 1) * size].to_vec())
                );
            }
            check_routines(&cpu.profile(), row_code, &format!("{d} {row_code}"));
        }
    }
    decoding.check("maximum and minimum keep numpys nans and zeros");
}

/// The random programs of the test kit, on engines whose blocks hold whole rows, so that the
/// routines run wherever a kernel can have one: AVX-512, AVX2, against interp.
#[test]
fn random_programs_with_routines_match_interp() {
    let decoding = decoding();
    let count = std::env::var("VM_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(300u64);
    for spec in [vm_testkit::ProgramSpec::default(), vm_testkit::ProgramSpec::uneven()] {
        for row_code in ["avx512", "avx2"] {
            let mut routines = 0;
            for seed in 0..count {
                let program = vm_testkit::random_program(seed, &spec);
                let config = vm_cpu::Config {
                    first_runs_on_child: false,
                    row_code: row_code.into(),
                    block_size: 1 << 16,
                    ..small_blocks(2)
                };
                let mut cpu = CpuEngine::new(config, None).unwrap();
                check_program(&mut cpu, &program, seed % 2 == 0, &format!("{row_code}, seed {seed}"));
                routines += cpu.profile().cache.row_code;
            }
            eprintln!("{row_code}: {routines} kernels with routines in {count} programs");
            if cpu_has(row_code) && count >= 100 {
                assert!(routines > 0, "{row_code}: no routine in {count} programs");
            }
        }
    }
    if count > 0 {
        decoding.check("random programs with routines match interp");
    }
}

// ---- every form of every instruction, encoded and decoded ----------------------------------

/// Displacements: none, 8-bit, multiples of every compressed-displacement scale (in and out of
/// the 8-bit range after scaling), 32-bit.
fn disp() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(0),
        -130i32..130,
        (-130i32..130).prop_map(|k| k * 4),
        (-130i32..130).prop_map(|k| k * 8),
        (-130i32..130).prop_map(|k| k * 64),
        any::<i32>(),
    ]
}

/// Memory operands with every base register (rsp, rbp, r12 and r13 included: SIB and
/// displacement-only forms), rows indexed by rcx, and constant pool entries.
fn mem() -> impl Strategy<Value = Mem> {
    prop_oneof![
        (0u8..16, disp()).prop_map(|(b, d)| Mem::Row(b, d)),
        (0u8..16, disp()).prop_map(|(b, d)| Mem::At(b, d)),
        (0usize..12).prop_map(Mem::Pool),
    ]
}

/// Vector instructions of `isa` in every form: every register, memory or register operands,
/// masks, zeroing and broadcasts where the instruction takes them.
fn vector(isa: Isa) -> impl Strategy<Value = Emitted> {
    let avx512 = isa == Isa::Avx512;
    let vregs: u8 = if avx512 { 32 } else { 16 };
    let rm = prop_oneof![(0..vregs).prop_map(Rm::Reg), mem().prop_map(Rm::Mem)];
    // (map, opcode, takes a second source, takes an immediate)
    let kinds: Vec<(u8, u8, bool, bool)> = if avx512 {
        vec![
            (1, 0x58, true, false),
            (1, 0x59, true, false),
            (1, 0x5C, true, false),
            (1, 0x5E, true, false),
            (1, 0x51, false, false),
            (1, 0x28, false, false),
            (1, 0xEF, true, false),
            (1, 0xDB, true, false),
            (1, 0xC2, true, true),
            (2, 0x65, true, false),
        ]
    } else {
        vec![
            (1, 0x58, true, false),
            (1, 0x59, true, false),
            (1, 0x5C, true, false),
            (1, 0x5E, true, false),
            (1, 0x51, false, false),
            (1, 0x28, false, false),
            (1, 0x54, true, false),
            (1, 0x57, true, false),
            (1, 0xC2, true, true),
            (3, 0x4B, true, true),
            (3, 0x4A, true, true),
        ]
    };
    (prop::sample::select(kinds), 0..vregs, 0..vregs, rm, 0u8..8, any::<bool>(), any::<bool>(), 0u8..32).prop_map(
        move |((map, opcode, two, has_imm), reg, v, rm, mask, zero, bcst, imm)| {
            let compare = opcode == 0xC2;
            let memory = matches!(rm, Rm::Mem(_));
            let mask = if avx512 { mask } else { 0 };
            Emitted::Vector {
                map,
                opcode,
                // A compare's destination is an opmask with AVX-512.
                reg: if compare && avx512 { reg % 8 } else { reg },
                v: if two { v } else { 0 },
                rm,
                mask,
                zero: mask != 0 && zero && !compare,
                bcst: avx512 && memory && bcst && opcode != 0x28,
                imm: has_imm.then_some(if map == 3 { (imm % 16) << 4 } else { imm }),
            }
        },
    )
}

/// Every instruction the assembler has, in every form, for `isa`.
fn instruction(isa: Isa) -> impl Strategy<Value = Emitted> {
    let vregs: u8 = if isa == Isa::Avx512 { 32 } else { 16 };
    let masks: u8 = if isa == Isa::Avx512 { 8 } else { 2 };
    let gpr = || 0u8..16;
    prop_oneof![
        4 => vector(isa),
        1 => (prop::sample::select(vec![0x10u8, 0x11]), 0..vregs, mem())
            .prop_map(|(opcode, reg, m)| Emitted::Scalar { opcode, reg, v: 0, rm: Rm::Mem(m) }),
        1 => (prop::sample::select(vec![0x58u8, 0x59]), 0..vregs, 0..vregs, prop_oneof![(0..vregs).prop_map(Rm::Reg), mem().prop_map(Rm::Mem)])
            .prop_map(|(opcode, reg, v, rm)| Emitted::Scalar { opcode, reg, v, rm }),
        1 => (0..vregs, mem(), 0..masks).prop_map(|(dst, mem, mask)| Emitted::Load { dst, mem, mask }),
        1 => (0..vregs, mem(), 0..masks).prop_map(|(src, mem, mask)| Emitted::Store { mem, src, mask }),
        1 => (0..vregs, mem()).prop_map(|(dst, mem)| Emitted::Broadcast { dst, mem }),
        1 => (prop::sample::select(vec![0x89u8, 0x29, 0x39]), gpr(), gpr())
            .prop_map(|(opcode, reg, rm)| Emitted::RegReg { opcode, reg, rm }),
        1 => (prop::sample::select(vec![(0x83u8, 0u8), (0x83, 5), (0x83, 7), (0xC1, 4)]), gpr(), any::<i8>())
            .prop_map(|((opcode, ext), reg, imm)| Emitted::RegImm8 { opcode, ext, reg, imm }),
        1 => (prop::sample::select(vec![0u8, 5]), gpr(), any::<i32>())
            .prop_map(|(ext, reg, imm)| Emitted::RegImm32 { ext, reg, imm }),
        1 => (gpr(), any::<u32>()).prop_map(|(reg, imm)| Emitted::MovImm32 { reg, imm }),
        1 => gpr().prop_map(Emitted::Zero32),
        1 => (gpr(), gpr(), disp()).prop_map(|(dst, base, disp)| Emitted::MovLoad { dst, base, disp }),
        1 => (gpr(), 0usize..12).prop_map(|(dst, entry)| Emitted::LeaPool { dst, entry }),
        1 => (gpr(), gpr(), gpr()).prop_map(|(dst, src, index)| Emitted::Bzhi { dst, src, index }),
        1 => (0u8..8, gpr()).prop_map(|(k, src)| Emitted::Kmovw { k, src }),
        1 => gpr().prop_map(Emitted::Push),
        1 => gpr().prop_map(Emitted::Pop),
        1 => (prop::sample::select(vec![0xFu8, 0xE]), 0usize..100_000).prop_map(|(cc, target)| Emitted::Jcc { cc, target }),
        1 => Just(Emitted::Vzeroupper),
        1 => Just(Emitted::Ret),
    ]
}

/// Instruction sets with the instructions only the other has left out (`kmovw`, `bzhi`:
/// AVX-512 routines only).
fn listing() -> impl Strategy<Value = (Isa, bool, Vec<Emitted>)> {
    (prop::sample::select(vec![Isa::Avx512, Isa::Avx2]), any::<bool>()).prop_flat_map(|(isa, f32)| {
        let only512 = |e: &Emitted| matches!(e, Emitted::Kmovw { .. } | Emitted::Bzhi { .. });
        let list = prop::collection::vec(instruction(isa), 1..40)
            .prop_map(move |l| l.into_iter().filter(|e| isa == Isa::Avx512 || !only512(e)).collect::<Vec<_>>());
        (Just(isa), Just(f32), list)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Random lists of instructions of every form, encoded as the routines encode them,
    /// decode to what was meant.
    #[test]
    fn every_form_of_every_instruction_decodes_as_meant((isa, f32, list) in listing()) {
        let r = vm_cpu::x86::replay(isa, f32, &list);
        if let Err(e) = decode::check(&r) {
            prop_assert!(false, "{e}");
        }
    }
}
