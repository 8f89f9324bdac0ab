//! Matrix products: kernels of a product broadcast over `(..., n, k, m)` summed over `k`, and
//! the `matmul` extension method, run as GEMM and agree with interp.

mod common;

use common::*;
use vm_interp::Interp;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

/// A matrix operand: `shape` and element strides of a view into `base` from `start`.
struct Mat {
    base: Base,
    start: i64,
    shape: Vec<usize>,
    stride: Vec<i64>,
}

/// `a @ b` as a frontend records it: `t = a[..., :, :, None] * b[..., None, :, :]`, `c = sum(t,
/// axis=-2)`, `t` freed (so contracted). `swap` writes the product as `b * a`.
fn product(a: &Mat, b: &Mat, c: Base, t: Base, swap: bool) -> Vec<Instruction> {
    let r = a.shape.len() + 1;
    let (n, k, m) = (a.shape[r - 3], a.shape[r - 2], b.shape[r - 2]);
    let lead: Vec<usize> = a.shape[..r - 3].to_vec();
    let space: Vec<usize> = lead.iter().copied().chain([n, k, m]).collect();
    let mut sa = a.stride[..r - 3].to_vec();
    sa.extend([a.stride[r - 3], a.stride[r - 2], 0]);
    let mut sb = b.stride[..r - 3].to_vec();
    sb.extend([0, b.stride[r - 3], b.stride[r - 2]]);
    let av = view(a.base, a.start, &space, &sa);
    let bv = view(b.base, b.start, &space, &sb);
    let tv = Operand::View(View::row_major(t, &space));
    let out: Vec<usize> = lead.iter().copied().chain([n, m]).collect();
    let (x, y) = if swap { (bv, av) } else { (av, bv) };
    vec![
        Instruction::new(Opcode::Multiply, [tv.clone(), x, y]),
        Instruction::new(
            Opcode::AddReduce,
            [Operand::View(View::row_major(c, &out)), tv, Scalar::I64(r as i64 - 2).into()],
        ),
        Instruction::new(Opcode::Free, [Operand::View(View::row_major(t, &space))]),
        Instruction::new(Opcode::Sync, [Operand::View(View::row_major(c, &out))]),
    ]
}

/// A row-major matrix (or stack) at the start of `base` (which may hold more).
fn dense(base: Base, shape: &[usize]) -> Mat {
    Mat { base, start: 0, shape: shape.to_vec(), stride: vm_ir::view::row_major_strides(shape).to_vec() }
}

/// Compares the product with interp's; a long sum gets finite data (the kit's full data holds
/// NaNs and infinities, which would make almost every element of it NaN whatever was summed).
fn check(what: &str, a: Mat, b: Mat, dtype: DType, swap: bool) {
    let r = a.shape.len() + 1;
    let (n, k, m) = (a.shape[r - 3], a.shape[r - 2], b.shape[r - 2]);
    let small = k > 30;
    let lead: usize = a.shape[..r - 3].iter().product();
    let c = base(10, dtype, lead * n * m);
    let t = base(11, dtype, lead * n * k * m);
    let batch = product(&a, &b, c, t, swap);
    let p = differential(&batch, &[a.base, b.base], &[c], 2, small, what);
    // A reduction of nothing runs alone (it fills the identity); every other one is a product.
    let products = u64::from(n * k * m > 0);
    assert_eq!(p.matrix_products, products, "{what}: run as {} matrix products", p.matrix_products);
}

#[test]
fn products_of_every_layout_agree_with_interp() {
    for dtype in [DType::F64, DType::F32] {
        let (x, y) = (base(1, dtype, 700_000), base(2, dtype, 700_000));
        // (A column or a row of `c`, of more than one task, runs as a matrix-vector product; a
        // few rows and many columns are cut along the columns.)
        for (n, k, m) in [
            (1, 1, 1),
            (7, 5, 3),
            (130, 70, 65),
            (64, 1, 200),
            (3, 0, 4),
            (200, 37, 1),
            // A tall column: a few stretches of rows per thread.
            (1003, 33, 1),
            (1, 37, 2500),
            (1, 300, 2000),
            // A row of `c` too small to cut along `k`: `b` streamed four rows a pass, then the
            // rest.
            (1, 50, 700),
            (1, 7, 129),
            (8, 50, 700),
            (2, 3, 1000),
            // Up to 16 rows stream `b` (four rows of it a pass, then the rest), in column
            // blocks that need not divide `m`; 17 rows are GEMM again.
            (16, 9, 1030),
            (5, 1, 600),
            (12, 4, 130),
            (17, 9, 300),
        ] {
            check(&format!("{dtype} {n}x{k} @ {k}x{m}"), dense(x, &[n, k]), dense(y, &[k, m]), dtype, false);
            check(&format!("{dtype} {n}x{k} @ {k}x{m} swapped"), dense(x, &[n, k]), dense(y, &[k, m]), dtype, true);
        }
        // A transposed: (n, k) read from a (k, n) matrix; b's rows reversed and every other column.
        let at = Mat { base: x, start: 0, shape: vec![90, 40], stride: vec![1, 90] };
        let bt = Mat { base: y, start: 39 * 150, shape: vec![40, 75], stride: vec![-150, 2] };
        check(&format!("{dtype} strided"), at, bt, dtype, false);
        // Few rows of a transposed `a` against contiguous rows of `b` (streamed).
        let at = Mat { base: x, start: 0, shape: vec![6, 43], stride: vec![1, 6] };
        check(&format!("{dtype} few strided rows"), at, dense(y, &[43, 700]), dtype, false);
        // The same layouts as a matrix times a vector and a vector times a matrix.
        let at = Mat { base: x, start: 0, shape: vec![90, 40], stride: vec![1, 90] };
        let bt = Mat { base: y, start: 39 * 150, shape: vec![40, 1], stride: vec![-150, 2] };
        check(&format!("{dtype} strided, one column"), at, bt, dtype, false);
        let at = Mat { base: x, start: 3, shape: vec![1, 40], stride: vec![0, 7] };
        let bt = Mat { base: y, start: 39 * 2200, shape: vec![40, 1100], stride: vec![-2200, 2] };
        check(&format!("{dtype} strided, one row"), at, bt, dtype, false);
        // A transposed matrix times a vector (`A.T @ x`) and a vector times one (`x @ A.T`),
        // small and in more than one task, the vector contiguous or not. (Float32 sums of
        // hundreds of terms of both signs differ from interp's float32 sums past the tolerance.)
        let large: &[_] = if dtype == DType::F64 { &[(2000, 300, 1), (700, 130, 2)] } else { &[] };
        for &(rows, k, step) in [(3, 5, 1), (90, 40, 3)].iter().chain(large) {
            let at = Mat { base: x, start: 0, shape: vec![rows, k], stride: vec![1, rows as i64] };
            let v = Mat { base: y, start: 0, shape: vec![k, 1], stride: vec![step, 0] };
            check(&format!("{dtype} transposed {rows}x{k} @ vector"), at, v, dtype, false);
            let v = Mat { base: y, start: 0, shape: vec![1, k], stride: vec![0, 1] };
            let bt = Mat { base: x, start: 0, shape: vec![k, rows], stride: vec![1, k as i64] };
            check(&format!("{dtype} vector @ transposed {k}x{rows}"), v, bt, dtype, false);
        }
        if dtype == DType::F64 {
            // One long dot product: its parts summed on the pool, then in order.
            let k = 100_003;
            check("f64 long dot", dense(x, &[1, k]), dense(y, &[k, 1]), dtype, false);
        }
        // A stack of 2 x 3 products against one shared b (its batch strides 0).
        let a3 = dense(x, &[2, 3, 33, 21]);
        let b3 = Mat { base: y, start: 0, shape: vec![2, 3, 21, 17], stride: vec![0, 0, 17, 1] };
        check(&format!("{dtype} batched"), a3, b3, dtype, false);
        let a3 = dense(x, &[2, 3, 1, 21]);
        let b3 = Mat { base: y, start: 0, shape: vec![2, 3, 21, 1500], stride: vec![0, 0, 1500, 1] };
        check(&format!("{dtype} batched rows"), a3, b3, dtype, false);
    }
}

#[test]
fn empty_products_fill_nothing_or_zeros() {
    let (x, y) = (base(1, DType::F64, 100), base(2, DType::F64, 100));
    check("0 rows", dense(x, &[0, 5]), dense(y, &[5, 4]), DType::F64, false);
    check("0 columns", dense(x, &[3, 5]), dense(y, &[5, 0]), DType::F64, false);
}

#[test]
fn the_matmul_extension_of_floats_runs_as_gemm() {
    let matmul = Opcode::Extension(0);
    for dtype in [DType::F64, DType::F32] {
        let (a, b, c) = (base(1, dtype, 150 * 80), base(2, dtype, 80 * 90), base(3, dtype, 150 * 90));
        let batch = vec![Instruction::new(
            matmul,
            [view(c, 0, &[150, 90], &[90, 1]), view(a, 0, &[150, 80], &[1, 150]), view(b, 0, &[80, 90], &[90, 1])],
        )];
        let mut cpu = engine(2);
        assert!(cpu.register_extension(vm_interp::MATMUL, matmul).unwrap());
        let mut interp = Interp::new(None);
        assert!(interp.register_extension(vm_interp::MATMUL, matmul).unwrap());
        let (mut got, mut want) = (HostMemory::new(), HostMemory::new());
        for mem in [&mut got, &mut want] {
            fill(mem, &a, 1, false);
            fill(mem, &b, 2, false);
        }
        cpu.execute(&batch, &mut got).unwrap();
        interp.execute(&batch, &mut want).unwrap();
        compare(&got, &want, &[c], &format!("{dtype} matmul"));
        assert_eq!((cpu.profile().matrix_products, cpu.profile().fallback), (1, 0));
    }
}

/// Matrix-vector products of one matrix in a batch (`A @ p`, `r @ A`, `A.T @ s`, `p @ A.T`)
/// share one pass over it, also past steps between that they may run before; a product reading
/// what a step between or a product of the group writes waits for its turn. Each gives the
/// bits it gives alone, and interp's results within the tolerance.
#[test]
fn products_sharing_a_matrix_run_in_one_pass_with_the_bits_they_get_alone() {
    let matmul = Opcode::Extension(0);
    let (rows, cols) = (300usize, 250usize);
    let (r, c) = (rows as i64, cols as i64);
    let dtype = DType::F64;
    let a = base(1, dtype, rows * cols);
    let (p, q) = (base(2, dtype, cols), base(3, dtype, cols));
    let (rv, s) = (base(4, dtype, rows), base(5, dtype, rows));
    let x = base(6, dtype, rows);
    let outs: Vec<Base> =
        [rows, cols, cols, cols, rows, rows].iter().enumerate().map(|(i, &n)| base(10 + i as u64, dtype, n)).collect();
    let [c1, c2, c3, c4, c5, c6] = outs[..] else { unreachable!() };
    let mat = view(a, 0, &[rows, cols], &[c, 1]);
    let ext = |out: Operand, x: Operand, y: Operand| Instruction::new(matmul, [out, x, y]);
    let batch = vec![
        // A @ p (dot products by rows)
        ext(view(c1, 0, &[rows, 1], &[1, 1]), mat.clone(), view(p, 0, &[cols, 1], &[1, 0])),
        // a step between, touching none of the others' operands
        Instruction::new(
            Opcode::Add,
            [view(x, 0, &[rows], &[1]), view(x, 0, &[rows], &[1]), view(c1, 0, &[rows], &[1])],
        ),
        // r @ A (rows scaled and summed)
        ext(view(c2, 0, &[1, cols], &[c, 1]), view(rv, 0, &[1, rows], &[0, 1]), mat.clone()),
        // A.T @ s (rows scaled and summed)
        ext(view(c3, 0, &[cols, 1], &[1, 1]), view(a, 0, &[cols, rows], &[1, c]), view(s, 0, &[rows, 1], &[1, 0])),
        // c1 @ A reads the first product's output: not in the group
        ext(view(c4, 0, &[1, cols], &[c, 1]), view(c1, 0, &[1, rows], &[0, 1]), mat.clone()),
        // q doubled, then A @ q reads it: not in the group
        Instruction::new(
            Opcode::Multiply,
            [view(q, 0, &[cols], &[1]), view(q, 0, &[cols], &[1]), Scalar::F64(2.0).into()],
        ),
        ext(view(c5, 0, &[rows, 1], &[1, 1]), mat.clone(), view(q, 0, &[cols, 1], &[1, 0])),
        // p @ A.T (dot products by rows)
        ext(view(c6, 0, &[1, rows], &[r, 1]), view(p, 0, &[1, cols], &[0, 1]), view(a, 0, &[cols, rows], &[1, c])),
    ];
    let inputs = [a, p, q, rv, s, x];
    let mut cpu = engine(2);
    let mut alone = engine(2);
    let mut interp = Interp::new(None);
    for e in [&mut cpu as &mut dyn Component, &mut alone, &mut interp] {
        assert!(e.register_extension(vm_interp::MATMUL, matmul).unwrap());
    }
    let (mut got, mut each, mut want) = (HostMemory::new(), HostMemory::new(), HostMemory::new());
    for mem in [&mut got, &mut each, &mut want] {
        // Inexact values (thirds, sevenths), so that sums in another order round otherwise.
        for (seed, b) in inputs.iter().enumerate() {
            let data = mem.ensure(b).unwrap().as_mut_slice::<f64>();
            for (i, v) in data.iter_mut().enumerate() {
                *v = ((i * 7919 + seed * 104_729) % 211) as f64 / 21.0 - 5.0;
            }
        }
    }
    cpu.execute(&batch, &mut got).unwrap();
    for instr in &batch {
        alone.execute(std::slice::from_ref(instr), &mut each).unwrap();
    }
    interp.execute(&batch, &mut want).unwrap();
    let mut all = outs.clone();
    all.extend(inputs);
    compare(&got, &want, &all, "products sharing a matrix");
    for b in &all {
        let values = |mem: &HostMemory| mem.get(b.id).unwrap().as_slice::<f64>().to_vec();
        let (grouped, single) = (values(&got), values(&each));
        let differ = grouped.iter().zip(&single).position(|(g, s)| g.to_bits() != s.to_bits());
        assert_eq!(differ, None, "base {}: an element differs in a group and alone", b.id.0);
    }
    let (grouped, products) = (cpu.profile().shared_matrix, cpu.profile().matrix_products);
    assert_eq!((grouped, products), (4, 6), "A @ p, r @ A, A.T @ s and p @ A.T share a pass");
    assert_eq!(alone.profile().shared_matrix, 0);
}
