//! The component contract: the `matmul` and linear algebra extensions, the fallback child for other extensions,
//! the implementation record and `describe`.

mod common;

use common::*;
use std::sync::{Arc, Mutex};
use vm_interp::{CHOLESKY, DET, IMPLEMENTATION, Interp, MATMUL, SLOGDET, SOLVE};
use vm_ir::opcode::EXTENSION_BASE;
use vm_ir::{DType, Error, Instruction, Opcode, Result, View};
use vm_runtime::component::Settings;
use vm_runtime::{Component, ComponentInfo, HostMemory};

const MM: Opcode = Opcode::Extension(3);

fn matmul_env() -> Env {
    let mut env = Env::new();
    assert!(env.interp.register_extension(MATMUL, MM).unwrap());
    env
}

#[test]
fn matmul_by_hand() {
    let mut env = matmul_env();
    // [[1, 2, 3], [4, 5, 6]] @ [[7, 8], [9, 10], [11, 12]] = [[58, 64], [139, 154]]
    let a = env.array_nd(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = env.array_nd(&[7.0f64, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]);
    let out = env.empty(DType::F64, &[2, 2]);
    env.run1(MM, vec![v(&out), v(&a), v(&b)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![58.0, 64.0, 139.0, 154.0]);
    // Integers wrap.
    let a = env.array_nd(&[100i8, 100], &[1, 2]);
    let b = env.array_nd(&[1i8, 2], &[2, 1]);
    let out = env.empty(DType::I8, &[1, 1]);
    env.run1(MM, vec![v(&out), v(&a), v(&b)]).unwrap();
    assert_eq!(env.read::<i8>(&out), vec![44]); // 300 mod 256
}

#[test]
fn cholesky_by_hand() {
    const CH: Opcode = Opcode::Extension(4);
    let mut env = Env::new();
    assert!(env.interp.register_extension(CHOLESKY, CH).unwrap());
    // [[4, 2], [2, 5]] = L L^T with L = [[2, 0], [1, 2]]; the upper triangle (99) is not read.
    // The second matrix of the stack, [[1, 0], [0, -1]], is not positive definite: NaN.
    let a = env.array_nd(&[4.0f64, 99.0, 2.0, 5.0, 1.0, 99.0, 0.0, -1.0], &[2, 2, 2]);
    let out = env.empty(DType::F64, &[2, 2, 2]);
    env.run1(CH, vec![v(&out), v(&a)]).unwrap();
    let got = env.read::<f64>(&out);
    assert_eq!(got[..4], [2.0, 0.0, 1.0, 2.0]);
    assert!(got[4..].iter().all(|x| x.is_nan()), "{got:?}");
    // In float32, read through a transposed view (its lower triangle is the base's upper one),
    // written in place over the input: [[9, 3, 3], [3, 5, 1], [3, 1, 10]] = L L^T with
    // L = [[3, 0, 0], [1, 2, 0], [1, 0, 3]].
    let b = env.array_nd(&[9.0f32, 3.0, 3.0, -1.0, 5.0, 1.0, -1.0, -1.0, 10.0], &[3, 3]);
    let bt = View::new(b.base, 0, &[3, 3], &[1, 3]).unwrap();
    env.run1(CH, vec![v(&bt), v(&bt)]).unwrap();
    assert_eq!(env.read::<f32>(&bt), vec![3.0, 0.0, 0.0, 1.0, 2.0, 0.0, 1.0, 0.0, 3.0]);
    // Integers are refused when submitted.
    let i = env.array_nd(&[1i64, 0, 0, 1], &[2, 2]);
    assert!(env.run1(CH, vec![v(&i), v(&i)]).is_err());
}

#[test]
fn solve_and_det_by_hand() {
    const SO: Opcode = Opcode::Extension(5);
    const DE: Opcode = Opcode::Extension(6);
    let mut env = Env::new();
    assert!(env.interp.register_extension(SOLVE, SO).unwrap());
    assert!(env.interp.register_extension(DET, DE).unwrap());
    // [[0, 2], [1, 1]] needs a row exchange: x = [1, 2] solves it for the first column of b,
    // [4, 3], and x = [1, 1] for the second, [2, 2]; its determinant is -2. The second matrix of
    // the stack, [[1, 2], [2, 4]], is singular: NaN, determinant 0.
    let a = env.array_nd(&[0.0f64, 2.0, 1.0, 1.0, 1.0, 2.0, 2.0, 4.0], &[2, 2, 2]);
    let b = env.array_nd(&[4.0f64, 2.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0], &[2, 2, 2]);
    let x = env.empty(DType::F64, &[2, 2, 2]);
    env.run1(SO, vec![v(&x), v(&a), v(&b)]).unwrap();
    let got = env.read::<f64>(&x);
    assert_eq!(got[..4], [1.0, 1.0, 2.0, 1.0]);
    assert!(got[4..].iter().all(|x| x.is_nan()), "{got:?}");
    let d = env.empty(DType::F64, &[2]);
    env.run1(DE, vec![v(&d), v(&a)]).unwrap();
    assert_eq!(env.read::<f64>(&d), vec![-2.0, 0.0]);
    // Its sign and logarithm: (-1, ln 2) and, singular, (0, -inf).
    const SL: Opcode = Opcode::Extension(7);
    assert!(env.interp.register_extension(SLOGDET, SL).unwrap());
    let s = env.empty(DType::F64, &[2, 2]);
    env.run1(SL, vec![v(&s), v(&a)]).unwrap();
    assert_eq!(env.read::<f64>(&s), vec![-1.0, 2f64.ln(), 0.0, f64::NEG_INFINITY]);
    // Float32, an upper triangular matrix read transposed (lower triangular, no row exchanges
    // needed): determinant 4 * 3 * 2.
    let c = env.array_nd(&[4.0f32, 1.0, 1.0, 0.0, 3.0, 1.0, 0.0, 0.0, 2.0], &[3, 3]);
    let ct = View::new(c.base, 0, &[3, 3], &[1, 3]).unwrap();
    let d = env.empty(DType::F32, &[]);
    env.run1(DE, vec![v(&d), v(&ct)]).unwrap();
    assert_eq!(env.read::<f32>(&d), vec![24.0]);
    // The determinant of 0 x 0 matrices is 1: sign 1, logarithm 0.
    let e = env.empty(DType::F64, &[3, 0, 0]);
    let d = env.empty(DType::F64, &[3]);
    env.run1(DE, vec![v(&d), v(&e)]).unwrap();
    assert_eq!(env.read::<f64>(&d), vec![1.0; 3]);
    let s = env.empty(DType::F64, &[3, 2]);
    env.run1(SL, vec![v(&s), v(&e)]).unwrap();
    assert_eq!(env.read::<f64>(&s), vec![1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
}

#[test]
fn matmul_of_strided_views() {
    let mut env = matmul_env();
    // a^T where a = [[1, 2], [3, 4], [5, 6]] (3x2), so a^T = [[1, 3, 5], [2, 4, 6]];
    // b = reversed [6, 5, 4, 3, 2, 1] as 3x2 = [[1, 2], [3, 4], [5, 6]].
    let a = env.array(&[1i64, 2, 3, 4, 5, 6]);
    let at = View::new(a.base, 0, &[2, 3], &[1, 2]).unwrap();
    let bb = env.array(&[6i64, 5, 4, 3, 2, 1]);
    let b = View::new(bb.base, 5, &[3, 2], &[-2, -1]).unwrap();
    // Output written transposed into a 2x2 base.
    let o = env.empty(DType::I64, &[4]);
    let out = View::new(o.base, 0, &[2, 2], &[1, 2]).unwrap();
    env.run1(MM, vec![v(&out), v(&at), v(&b)]).unwrap();
    // a^T @ b = [[1+9+25, 2+12+30], [2+12+30, 4+16+36]] = [[35, 44], [44, 56]]
    assert_eq!(env.read::<i64>(&out), vec![35, 44, 44, 56]);
    assert_eq!(env.base_data::<i64>(&o.base), vec![35, 44, 44, 56]);
    // Empty inner dimension: sums of nothing are 0.
    let a = env.empty(DType::F32, &[2, 0]);
    let b = env.empty(DType::F32, &[0, 3]);
    let out = env.array_nd(&[9.0f32; 6], &[2, 3]);
    env.run1(MM, vec![v(&out), v(&a), v(&b)]).unwrap();
    assert_eq!(env.read::<f32>(&out), vec![0.0; 6]);
}

/// Float products sum in eight partial sums combined pairwise, then the terms left in order
/// (`vm_math::dot`), whatever the layout: 1e16 followed by seven 1.0s and -1e16 sums to 6 (in order,
/// each 1.0 is lost against 1e16 and the sum is 0).
#[test]
fn float_products_sum_in_eight_partials_whatever_the_layout() {
    let mut env = matmul_env();
    let terms = [1e16f64, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1e16];
    let row = env.array_nd(&terms, &[1, 9]);
    let ones = env.array_nd(&[1.0f64; 9], &[9, 1]);
    let out = env.empty(DType::F64, &[1, 1]);
    env.run1(MM, vec![v(&out), v(&row), v(&ones)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![6.0]);
    // The same terms as a strided column of a (transposed) and a broadcast row of ones.
    let spread = env.array(&terms.iter().flat_map(|&t| [t, 0.0]).collect::<Vec<f64>>());
    let column = View::new(spread.base, 0, &[1, 9], &[0, 2]).unwrap();
    let one = env.array(&[1.0f64]);
    let broadcast = View::new(one.base, 0, &[9, 1], &[0, 0]).unwrap();
    let out = env.empty(DType::F64, &[1, 1]);
    env.run1(MM, vec![v(&out), v(&column), v(&broadcast)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![6.0]);
    // Fewer than eight terms: in order from 0 (1e16 + 1.0 rounds back to 1e16).
    let short = env.array_nd(&[1e16f64, 1.0, -1e16], &[1, 3]);
    let ones = env.array_nd(&[1.0f64; 3], &[3, 1]);
    let out = env.empty(DType::F64, &[1, 1]);
    env.run1(MM, vec![v(&out), v(&short), v(&ones)]).unwrap();
    assert_eq!(env.read::<f64>(&out), vec![0.0]);
}

/// Long row-column pairs (vectorised, strided ones gathered first) sum in the same order too:
/// the same bits from a contiguous row and column as from strided ones.
#[test]
fn long_float_products_sum_in_eight_partials_whatever_the_layout() {
    let k = 37;
    let xs: Vec<f64> = (0..k).map(|i| ((i * 7919 % 113) as f64 - 56.0) * 10f64.powi(i as i32 % 9 - 4)).collect();
    let ys: Vec<f64> = (0..k).map(|i| 1.0 + (i % 5) as f64 / 3.0).collect();
    let mut partial = [0.0f64; 8];
    for p in 0..k / 8 * 8 {
        partial[p % 8] += xs[p] * ys[p];
    }
    let [p0, p1, p2, p3, p4, p5, p6, p7] = partial;
    let want = (k / 8 * 8..k).fold(((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)), |s, p| s + xs[p] * ys[p]);
    let mut env = matmul_env();
    let row = env.array_nd(&xs, &[1, k]);
    let column = env.array_nd(&ys, &[k, 1]);
    let out = env.empty(DType::F64, &[1, 1]);
    env.run1(MM, vec![v(&out), v(&row), v(&column)]).unwrap();
    assert_eq!(env.read::<f64>(&out)[0].to_bits(), want.to_bits());
    // A column of a row-major matrix times a row of another, reversed.
    let spread = env.array(&xs.iter().flat_map(|&x| [x, 0.0, 0.0]).collect::<Vec<f64>>());
    let strided = View::new(spread.base, 0, &[1, k], &[0, 3]).unwrap();
    let reversed = env.array(&ys.iter().rev().copied().collect::<Vec<f64>>());
    let backwards = View::new(reversed.base, k as i64 - 1, &[k, 1], &[-1, 0]).unwrap();
    let out = env.empty(DType::F64, &[1, 1]);
    env.run1(MM, vec![v(&out), v(&strided), v(&backwards)]).unwrap();
    assert_eq!(env.read::<f64>(&out)[0].to_bits(), want.to_bits());
    // A contiguous row (read where it lies) times the reversed column (gathered backwards).
    let out = env.empty(DType::F64, &[1, 1]);
    env.run1(MM, vec![v(&out), v(&row), v(&backwards)]).unwrap();
    assert_eq!(env.read::<f64>(&out)[0].to_bits(), want.to_bits());
}

#[test]
fn matmul_rejects_bad_operands() {
    let mut env = matmul_env();
    let a = env.empty(DType::F64, &[2, 3]);
    let b = env.empty(DType::F64, &[3, 4]);
    let out = env.empty(DType::F64, &[2, 4]);
    let bad: Vec<(Vec<vm_ir::Operand>, &str)> = vec![
        (vec![v(&out), v(&a)], "3 operands"),
        (vec![v(&out), v(&b), v(&a)], "inner extents"),
        (vec![v(&env.empty(DType::F64, &[2, 3])), v(&a), v(&b)], "expected 2x4"),
        (vec![v(&out), v(&env.empty(DType::F32, &[2, 3])), v(&b)], "dtype mismatch"),
        (vec![v(&env.empty(DType::Bool, &[2, 4])), v(&a), v(&b)], "numeric"),
        (vec![v(&out), c(1.0f64), v(&b)], "views"),
        (vec![v(&env.empty(DType::F64, &[8])), v(&a), v(&b)], "2-d"),
        (vec![v(&View::new(out.base, 0, &[2, 4], &[0, 1]).unwrap()), v(&a), v(&b)], "more than once"),
    ];
    for (operands, msg) in bad {
        let e = env.run(vec![Instruction::new(Opcode::None, []), Instruction::new(MM, operands)]).unwrap_err();
        assert!(matches!(e, Error::InvalidInstruction { index: Some(1), .. }), "{e}");
        assert!(e.to_string().contains(msg), "expected {msg:?} in {e}");
    }
    assert!(!env.mem.is_allocated(out.base.id));
}

#[test]
fn unknown_extensions_without_a_child_are_unsupported() {
    let mut interp = Interp::new(None);
    assert!(!interp.register_extension("fft", Opcode::Extension(7)).unwrap());
    let mut mem = HostMemory::new();
    let mut env = Env::new();
    let a = env.empty(DType::F64, &[4]);
    let cases = [
        (Opcode::Extension(7), "fft", EXTENSION_BASE + 7),
        (Opcode::Extension(8), "never registered", EXTENSION_BASE + 8),
    ];
    for (op, name, id) in cases {
        let e = interp.execute(&[Instruction::new(op, [v(&a)])], &mut mem).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
        assert!(e.to_string().contains(name), "{e}");
        assert!(e.to_string().contains(&format!("opcode {id}")), "{e}");
    }
}

/// A child that implements `double` (out = 2 * in, f64) and records what it is asked.
struct Doubler {
    log: Arc<Mutex<Vec<String>>>,
    double: Option<Opcode>,
}

impl Component for Doubler {
    fn name(&self) -> &str {
        "doubler"
    }

    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        for instr in batch {
            self.log.lock().unwrap().push(format!("execute {}", instr.opcode));
            if Some(instr.opcode) != self.double {
                return Err(Error::Unsupported(format!("doubler cannot run {}", instr.opcode)));
            }
            let (out, input) = (instr.operands[0].as_view().unwrap(), instr.operands[1].as_view().unwrap());
            let x: Vec<f64> =
                positions(input).iter().map(|&o| mem.get(input.base.id).unwrap().as_slice::<f64>()[o]).collect();
            let buf = mem.ensure(&out.base)?.as_mut_slice::<f64>();
            for (o, x) in positions(out).into_iter().zip(x) {
                buf[o] = 2.0 * x;
            }
        }
        Ok(())
    }

    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        self.log.lock().unwrap().push(format!("register {name}"));
        if name == "double" {
            self.double = Some(opcode);
            return Ok(true);
        }
        Ok(false)
    }

    fn info(&self) -> ComponentInfo {
        ComponentInfo { name: "doubler".into(), implementation: "doubler".into(), ..ComponentInfo::default() }
    }
}

#[test]
fn other_extensions_go_to_the_fallback_child() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let child = Doubler { log: log.clone(), double: None };
    let mut interp = (IMPLEMENTATION.construct)(&Settings::from_pairs("ref", &[]), Some(Box::new(child))).unwrap();
    assert_eq!(interp.name(), "interp");
    let (dbl, mm, fft) = (Opcode::Extension(0), Opcode::Extension(1), Opcode::Extension(2));
    assert!(interp.register_extension("double", dbl).unwrap());
    assert!(interp.register_extension(MATMUL, mm).unwrap());
    assert!(!interp.register_extension("fft", fft).unwrap());
    assert_eq!(*log.lock().unwrap(), vec!["register double", "register fft"], "matmul is interp's own");

    let mut env = Env::new();
    let a = env.array(&[1.0f64, 2.0, 3.0]);
    let b = env.empty(DType::F64, &[3]);
    let m = env.array_nd(&[2.0f64], &[1, 1]);
    let mut mem = std::mem::take(&mut env.mem);
    interp
        .execute(
            &[
                Instruction::new(Opcode::Add, [v(&a), v(&a), c(1.0f64)]),
                Instruction::new(dbl, [v(&b), v(&a)]),
                Instruction::new(mm, [v(&m), v(&m), v(&m)]),
            ],
            &mut mem,
        )
        .unwrap();
    assert_eq!(mem.get(b.base.id).unwrap().as_slice::<f64>(), &[4.0, 6.0, 8.0]);
    assert_eq!(mem.get(m.base.id).unwrap().as_slice::<f64>(), &[4.0]);
    assert_eq!(log.lock().unwrap().last().unwrap(), "execute extension#0");
    // An extension nobody implements: the child's error, placed in the batch.
    let e = interp.execute(&[Instruction::new(fft, [v(&a)])], &mut mem).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");

    let info = interp.describe();
    assert_eq!(info.len(), 2);
    assert_eq!((info[0].name.as_str(), info[0].implementation.as_str()), ("ref", "interp"));
    assert_eq!(info[1].implementation, "doubler");
    interp.shutdown().unwrap();
}

#[test]
fn implementation_record() {
    assert_eq!(IMPLEMENTATION.name, "interp");
    const { assert!(!IMPLEMENTATION.needs_child) };
    const { assert!(IMPLEMENTATION.settings.is_empty()) };
    let c = (IMPLEMENTATION.construct)(&Settings::default(), None).unwrap();
    assert_eq!(c.describe()[0].name, "interp");
    assert_eq!(Interp::default().name(), "interp");
}

/// The runtime's dot product of two vectors in host memory gives the bits of the interpreter's
/// `matmul` of them (one summation order for both: `vm_math::dot`), whatever the lengths,
/// strides and directions; a vector whose base the queue is still computing is left to the
/// recorded product.
#[test]
fn a_dot_product_in_host_memory_has_the_bits_of_the_interpreters() {
    use vm_ir::{Scalar, view::Base};
    use vm_runtime::{Runtime, RuntimeOptions};
    let mut rt = Runtime::new(Box::new(Interp::new(None)), RuntimeOptions::default());
    let mm = rt.register_extension(MATMUL).unwrap();
    // Values of mixed magnitude and sign, so that the order of the additions shows in the bits.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 10f64.powi((state % 9) as i32 - 4)
    };
    let data: Vec<f64> = (0..400).map(|_| next()).collect();
    let (x, y) = (rt.new_base(DType::F64, 400).unwrap(), rt.new_base(DType::F32, 400).unwrap());
    rt.write(x.id, 0, &data.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>()).unwrap();
    rt.write(y.id, 0, &data.iter().flat_map(|&v| (v as f32).to_ne_bytes()).collect::<Vec<_>>()).unwrap();
    let as_matrix = |v: &View, row: bool| {
        let (shape, stride) =
            if row { ([1, v.shape[0]], [0, v.stride[0]]) } else { ([v.shape[0], 1], [v.stride[0], 0]) };
        View::new(v.base, v.start, &shape, &stride).unwrap()
    };
    let mut compared = 0;
    for base in [x, y] {
        for k in [1usize, 2, 7, 8, 9, 15, 16, 17, 33, 64, 99] {
            for (sa, sb) in [(1i64, 1i64), (2, 1), (1, -1), (-3, 2), (3, 3)] {
                let start = |s: i64| if s < 0 { (k as i64 - 1) * -s } else { 0 };
                let a = View::new(base, start(sa), &[k], &[sa]).unwrap();
                let b = View::new(base, start(sb) + 1, &[k], &[sb]).unwrap();
                let in_place = rt.dot_in_host(&a, &b).unwrap().expect("both in host memory");
                let operands = [as_matrix(&a, true).into(), as_matrix(&b, false).into()];
                let recorded = rt.compute_element(mm, base.dtype, &[1, 1], operands).unwrap().unwrap();
                let bits = |s: Scalar| match s {
                    Scalar::F64(v) => v.to_bits(),
                    Scalar::F32(v) => u64::from(v.to_bits()),
                    other => panic!("a float dot product gave {other:?}"),
                };
                assert_eq!(bits(in_place), bits(recorded), "{} k={k} strides ({sa}, {sb})", base.dtype);
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 2 * 11 * 5);
    // A base too large to compute at once, written by a queued instruction: not in host memory.
    let large: Base = rt.new_base(DType::F64, 1 << 20).unwrap();
    let whole = View::of_base(large);
    rt.submit_one(Instruction::new(Opcode::Identity, [whole.clone().into(), Scalar::F64(0.5).into()])).unwrap();
    rt.submit_one(Instruction::new(Opcode::Add, [whole.clone().into(), whole.clone().into(), whole.into()])).unwrap();
    let head = View::new(large, 0, &[4], &[1]).unwrap();
    assert_eq!(rt.dot_in_host(&head, &head).unwrap(), None);
    rt.sync(large.id).unwrap();
    assert_eq!(rt.dot_in_host(&head, &head).unwrap(), Some(Scalar::F64(4.0)));
    // Other ranks and dtypes are not this method's.
    let ints = rt.new_base(DType::I64, 4).unwrap();
    assert_eq!(rt.dot_in_host(&View::of_base(ints), &View::of_base(ints)).unwrap(), None);
}
