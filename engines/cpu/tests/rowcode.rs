//! The row routines (`vm_cpu::rowcode`), AVX-512 and AVX2: kernels of f64 and f32 arithmetic with more live values
//! than vector registers and more operands than address registers, rows of every length modulo
//! eight (views with a gap between rows, so that rows stay rows, and blocks that start and end
//! inside rows), operands broadcast along rows or everywhere, constants on either side, in-place
//! updates and reductions, against interp. On a CPU without AVX-512 the same kernels run
//! Cranelift's code (and the tests check that no routine was made).

mod common;

use common::*;
use vm_cpu::CpuEngine;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar};

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
/// (`vm_cpu::codegen::ROW_ROUTINE_MIN`) on, in kernels of several blocks, and rows too short for
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

/// Checks that the kernels got routines exactly when the CPU has AVX-512 and the setting allows.
fn check_routines(p: &vm_cpu::profile::Profile, row_code: &str, what: &str) {
    if vm_cpu::rowcode::Isa::named(row_code).is_some() {
        assert!(p.cache.row_code >= 1, "{what}: no routine made");
    } else {
        assert_eq!(p.cache.row_code, 0, "{what}: a routine made where none may be");
    }
}

#[test]
fn more_live_values_than_registers_and_operands_than_address_registers_match_interp() {
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
}

#[test]
fn broadcasts_constants_first_every_unary_and_in_place_updates_match_interp() {
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
}

fn reduce(opcode: Opcode, out: Operand, input: Operand, axis: i64) -> Instruction {
    op(opcode, [out, input, Scalar::I64(axis).into()])
}

/// Sums along rows and products across them, of values computed in the same kernel.
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
    for (r, c) in SHAPES.into_iter().chain([(4, 1000), (1, 7)]) {
        for row_code in ["avx512", "avx2"] {
            let (batch, init, compared) = reductions(r, c);
            let what = format!("{r}x{c}, {row_code}");
            let p = agree(engine_with(2, row_code), &batch, &init, &compared, &what);
            check_routines(&p, row_code, &what);
        }
    }
}

/// The routine sums the lanes and the last positions of a row in the order of Cranelift's
/// vector loop: the results do not depend on whether the CPU has AVX-512.
#[test]
fn sums_and_products_are_bit_for_bit_those_of_the_engine_without_routines() {
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
}

/// `maximum` and `minimum` in the routines: a NaN in either input wins (the first's when both
/// are), equal zeros give the first input, as NumPy's; bit for bit against interp, for arrays
/// and constants on either side.
#[test]
fn maximum_and_minimum_keep_numpys_nans_and_zeros() {
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
}

/// The random programs of the test kit, on engines whose blocks hold whole rows, so that the
/// routines run wherever a kernel can have one: AVX-512, AVX2, against interp.
#[test]
fn random_programs_with_routines_match_interp() {
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
        }
    }
}
