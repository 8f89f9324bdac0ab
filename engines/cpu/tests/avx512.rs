//! The AVX-512 row routines (`vm_cpu::avx512`): kernels of f64 arithmetic with more live values
//! than vector registers and more operands than address registers, rows of every length modulo
//! eight, operands broadcast along rows or everywhere, constants on either side and in-place
//! updates, against interp. On a CPU without AVX-512 the same kernels run Cranelift's code (and
//! the tests check that no routine was made).

mod common;

use common::*;
use vm_cpu::CpuEngine;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar};

fn op(opcode: Opcode, operands: impl IntoIterator<Item = Operand>) -> Instruction {
    Instruction::new(opcode, operands.into_iter().collect::<Vec<_>>())
}

fn rows(b: Base, r: usize, c: usize) -> Operand {
    view(b, 0, &[r, c], &[c as i64, 1])
}

fn f64s(x: f64) -> Operand {
    Scalar::F64(x).into()
}

fn engine_with(threads: usize, avx512: bool) -> CpuEngine {
    let config = vm_cpu::Config { first_runs_on_child: false, avx512, ..small_blocks(threads) };
    CpuEngine::new(config, None).unwrap()
}

/// Row shapes whose lengths leave every remainder modulo eight somewhere (and rows shorter
/// than one vector).
const SHAPES: [(usize, usize); 5] = [(1, 3), (5, 8), (7, 29), (3, 71), (2, 1)];

/// Checks that the kernels got routines exactly when the CPU has AVX-512 and the setting allows.
fn check_routines(p: &vm_cpu::profile::Profile, avx512: bool, what: &str) {
    if avx512 && vm_cpu::avx512::available() {
        assert!(p.cache.avx512 >= 1, "{what}: no AVX-512 routine made");
    } else {
        assert_eq!(p.cache.avx512, 0, "{what}: a routine made where none may be");
    }
}

#[test]
fn more_live_values_than_registers_and_operands_than_address_registers_match_interp() {
    for (r, c) in SHAPES {
        for avx512 in [true, false] {
            let n = r * c;
            let inputs: Vec<Base> = (1..=12).map(|i| base(i, DType::F64, n)).collect();
            let temps: Vec<Base> = (100..148).map(|i| base(i, DType::F64, n)).collect();
            let out = base(200, DType::F64, n);
            let mut batch = Vec::new();
            // 48 results, all live until the chain at the end takes them from the last.
            for (i, &t) in temps.iter().enumerate() {
                let (x, y) = (inputs[i % 12], inputs[(i * 5 + 3) % 12]);
                batch.push(op(Opcode::Multiply, [rows(t, r, c), rows(x, r, c), f64s(1.0 + i as f64 / 8.0)]));
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
            let what = format!("{r}x{c}, avx512 = {avx512}");
            let p = differential_on(engine_with(2, avx512), &batch, &inputs, &compared, false, &what);
            check_routines(&p, avx512, &what);
        }
    }
}

#[test]
fn broadcasts_constants_first_every_unary_and_in_place_updates_match_interp() {
    for (r, c) in SHAPES {
        for threads in [1, 2] {
            let n = r * c;
            let (a, col, s, out) =
                (base(1, DType::F64, n), base(2, DType::F64, r), base(3, DType::F64, 1), base(4, DType::F64, n));
            let t: Vec<Base> = (10..21).map(|i| base(i, DType::F64, n)).collect();
            let v = |b: Base| rows(b, r, c);
            let column = view(col, 0, &[r, c], &[1, 0]);
            let scalar = view(s, 0, &[r, c], &[0, 0]);
            let mut batch = vec![
                op(Opcode::Divide, [v(t[0]), f64s(2.5), column]),
                op(Opcode::Subtract, [v(t[1]), f64s(1.5), v(a)]),
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
                op(Opcode::Sqrt, [v(t[0]), f64s(2.0)]),
                op(Opcode::Subtract, [v(out), v(out), v(t[0])]),
            ];
            batch.extend(t.iter().map(|&b| op(Opcode::Free, [whole(b)])));
            let what = format!("{r}x{c}, {threads} threads");
            let p = differential_on(engine_with(threads, true), &batch, &[a, col, s], &[a, col, s, out], false, &what);
            check_routines(&p, true, &what);
        }
    }
}
