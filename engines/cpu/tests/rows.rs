//! Row-blocked groups (`vm_cpu::run::rows`): chains of kernels over the same rows run a block of
//! rows at a time, with the results of running them one after the other (checked against
//! interp), and kernels whose rows would meet are kept apart.

mod common;

use common::*;
use vm_cpu::CpuEngine;
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar};

/// An engine forming every row-blocked group it finds, however small, with `threads` threads.
fn grouping(threads: usize) -> CpuEngine {
    let config = vm_cpu::Config { first_runs_on_child: false, row_group_bytes: 1, ..small_blocks(threads) };
    CpuEngine::new(config, None).unwrap()
}

fn rows_of(b: Base, r: usize, c: usize) -> Operand {
    view(b, 0, &[r, c], &[c as i64, 1])
}

/// `b` (r elements) seen as a column broadcast over c columns.
fn column(b: Base, r: usize, c: usize) -> Operand {
    view(b, 0, &[r, c], &[1, 0])
}

/// The one element of `b` as a 0-d view.
fn scalar(b: Base) -> Operand {
    view(b, 0, &[], &[])
}

fn op(opcode: Opcode, operands: impl IntoIterator<Item = Operand>) -> Instruction {
    Instruction::new(opcode, operands.into_iter().collect::<Vec<_>>())
}

fn reduce(opcode: Opcode, out: Operand, input: Operand, axis: i64) -> Instruction {
    op(opcode, [out, input, Scalar::I64(axis).into()])
}

fn free(b: Base) -> Instruction {
    op(Opcode::Free, [whole(b)])
}

#[test]
fn a_softmax_and_a_normalisation_run_in_row_blocks_as_interp_does() {
    let (r, c) = (37, 50);
    let x = base(1, DType::F64, r * c);
    let (mx, e, s, y, total) = (
        base(2, DType::F64, r),
        base(3, DType::F64, r * c),
        base(4, DType::F64, r),
        base(5, DType::F64, r * c),
        base(6, DType::F64, 1),
    );
    let (mu, d, var, sd, z) = (
        base(7, DType::F64, r),
        base(8, DType::F64, r * c),
        base(9, DType::F64, r),
        base(10, DType::F64, r),
        base(11, DType::F64, r * c),
    );
    let batch = vec![
        // Softmax of each row, and the sum of everything.
        reduce(Opcode::MaximumReduce, whole(mx), rows_of(x, r, c), 1),
        op(Opcode::Subtract, [rows_of(e, r, c), rows_of(x, r, c), column(mx, r, c)]),
        op(Opcode::Exp, [rows_of(e, r, c), rows_of(e, r, c)]),
        reduce(Opcode::AddReduce, whole(s), rows_of(e, r, c), 1),
        op(Opcode::Divide, [rows_of(y, r, c), rows_of(e, r, c), column(s, r, c)]),
        reduce(Opcode::AddReduce, scalar(total), whole(y), 0),
        // Each row centred and scaled: small kernels of one position per row in between.
        reduce(Opcode::AddReduce, whole(mu), rows_of(x, r, c), 1),
        op(Opcode::Divide, [whole(mu), whole(mu), Scalar::F64(c as f64).into()]),
        op(Opcode::Subtract, [rows_of(d, r, c), rows_of(x, r, c), column(mu, r, c)]),
        op(Opcode::Multiply, [rows_of(z, r, c), rows_of(d, r, c), rows_of(d, r, c)]),
        reduce(Opcode::AddReduce, whole(var), rows_of(z, r, c), 1),
        op(Opcode::Divide, [whole(var), whole(var), Scalar::F64(c as f64).into()]),
        op(Opcode::Sqrt, [whole(sd), whole(var)]),
        op(Opcode::Divide, [rows_of(z, r, c), rows_of(d, r, c), column(sd, r, c)]),
        free(e),
        free(d),
    ];
    let kept = [x, mx, s, y, total, mu, var, sd, z];
    for threads in [1, 3] {
        let p = differential_on(grouping(threads), &batch, &[x], &kept, true, "softmax and normalisation");
        assert!(p.row_grouped >= 8, "most kernels run in row blocks: {}", p.row_grouped);
        assert_eq!(p.row_scratch, 2, "e and d, freed in the group, live in scratch memory");
    }
}

#[test]
fn nearest_neighbours_run_in_row_blocks_with_the_scalar_sums_after() {
    // D = sum((Q[:, None] - E[None])**2, 2); k times: m = min(D, 1), total += sum(m),
    // D = where(D == m[:, None], inf, D).
    let (n, q, dim, k) = (23, 19, 4, 3);
    let (e, qs, dist, diff) = (
        base(1, DType::F64, n * dim),
        base(2, DType::F64, q * dim),
        base(3, DType::F64, q * n),
        base(4, DType::F64, q * n * dim),
    );
    let (total, m, s, eq) =
        (base(5, DType::F64, 1), base(6, DType::F64, q), base(7, DType::F64, 1), base(8, DType::Bool, q * n));
    let mut batch = vec![
        op(
            Opcode::Subtract,
            [
                view(diff, 0, &[q, n, dim], &[(n * dim) as i64, dim as i64, 1]),
                view(qs, 0, &[q, n, dim], &[dim as i64, 0, 1]),
                view(e, 0, &[q, n, dim], &[0, dim as i64, 1]),
            ],
        ),
        op(Opcode::Multiply, [whole(diff), whole(diff), whole(diff)]),
        reduce(
            Opcode::AddReduce,
            rows_of(dist, q, n),
            view(diff, 0, &[q, n, dim], &[(n * dim) as i64, dim as i64, 1]),
            2,
        ),
        free(diff),
        op(Opcode::Identity, [scalar(total), Scalar::F64(0.0).into()]),
    ];
    for _ in 0..k {
        batch.extend([
            reduce(Opcode::MinimumReduce, whole(m), rows_of(dist, q, n), 1),
            reduce(Opcode::AddReduce, scalar(s), whole(m), 0),
            op(Opcode::Add, [scalar(total), scalar(total), scalar(s)]),
            op(Opcode::Equal, [rows_of(eq, q, n), rows_of(dist, q, n), column(m, q, n)]),
            op(
                Opcode::Select,
                [rows_of(dist, q, n), rows_of(eq, q, n), Scalar::F64(f64::INFINITY).into(), rows_of(dist, q, n)],
            ),
        ]);
    }
    for threads in [1, 2] {
        let p = differential_on(grouping(threads), &batch, &[e, qs], &[total, dist, m], true, "knn");
        assert!(p.row_grouped >= 4, "the distance, minimum and mask kernels run in row blocks: {}", p.row_grouped);
    }
}

#[test]
fn kernels_reading_a_neighbouring_row_of_what_another_wrote_stay_apart() {
    // y = x * 2; z = y[1:] + y[:-1]: row r of z reads rows r and r + 1 of y.
    let (r, c) = (40, 30);
    let (x, y, z) = (base(1, DType::F64, r * c), base(2, DType::F64, r * c), base(3, DType::F64, (r - 1) * c));
    let batch = vec![
        op(Opcode::Multiply, [rows_of(y, r, c), rows_of(x, r, c), Scalar::F64(2.0).into()]),
        op(
            Opcode::Add,
            [
                rows_of(z, r - 1, c),
                view(y, c as i64, &[r - 1, c], &[c as i64, 1]),
                view(y, 0, &[r - 1, c], &[c as i64, 1]),
            ],
        ),
    ];
    let p = differential_on(grouping(2), &batch, &[x], &[y, z], true, "shifted rows");
    assert_eq!(p.row_grouped, 0);
    // Columns: y = x * 2, then y's columns summed (a reduction across rows, combined after).
    let sums = base(4, DType::F64, c);
    let batch = vec![
        op(Opcode::Multiply, [rows_of(y, r, c), rows_of(x, r, c), Scalar::F64(2.0).into()]),
        reduce(Opcode::AddReduce, whole(sums), rows_of(y, r, c), 0),
        op(Opcode::Add, [rows_of(y, r, c), rows_of(y, r, c), view(sums, 0, &[r, c], &[0, 1])]),
    ];
    let p = differential_on(grouping(2), &batch, &[x], &[y, sums], true, "column sums read back");
    assert!(p.row_grouped <= 2, "the sums are whole only after the group: {}", p.row_grouped);
}

#[test]
fn temporaries_a_group_frees_live_in_scratch_memory_from_their_first_writer() {
    // y = sum(x, 2) (a reduction writes y first); z = y * 2 + y; w = z's row sums; y and z
    // freed: y in scratch (z never leaves the registers of its kernel), w in memory. Then the
    // same with y read after the group: y keeps its buffer.
    let (r, c, k) = (29, 17, 5);
    let (x, y, z, w, v) = (
        base(1, DType::F64, r * c * k),
        base(2, DType::F64, r * c),
        base(3, DType::F64, r * c),
        base(4, DType::F64, r),
        base(5, DType::F64, r * c),
    );
    let head = vec![
        reduce(Opcode::AddReduce, rows_of(y, r, c), view(x, 0, &[r, c, k], &[(c * k) as i64, k as i64, 1]), 2),
        op(Opcode::Multiply, [rows_of(z, r, c), rows_of(y, r, c), Scalar::F64(2.0).into()]),
        op(Opcode::Add, [rows_of(z, r, c), rows_of(z, r, c), rows_of(y, r, c)]),
        reduce(Opcode::AddReduce, whole(w), rows_of(z, r, c), 1),
    ];
    let mut batch = head.clone();
    batch.extend([free(y), free(z)]);
    let p = differential_on(grouping(2), &batch, &[x], &[x, w], true, "scratch temporaries");
    assert_eq!((p.row_scratch, p.row_grouped), (1, 2));
    let mut batch = head;
    batch.extend([
        free(z),
        op(Opcode::Negative, [view(v, 0, &[c, r], &[1, c as i64]), view(y, 0, &[c, r], &[1, c as i64])]),
        free(y),
    ]);
    let p = differential_on(grouping(2), &batch, &[x], &[x, w, v], true, "a temporary read after the group");
    assert_eq!((p.row_scratch, p.row_grouped), (0, 2));
}
