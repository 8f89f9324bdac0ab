//! The `matmul` extension method: `matmul out, a, b` with 2-d views `a` (M x K), `b` (K x N)
//! and `out` (M x N) of one numeric dtype: `out[m, n] = sum_k a[m, k] * b[k, n]`. Integers are
//! summed for k = 0, 1, ... starting from 0 (they wrap); floats in [`vm_math::dot`]'s order
//! (partial sums whose additions do not wait for each other, as a BLAS dot product's).

use crate::elem::Elem;
use crate::elementwise::not_defined;
use crate::iterate::{data, prepare_overwriting, result, write_view};
use vm_ir::{BinaryOp, DType, Instruction, Opcode, ReduceOp, Result, View, with_dtype};
use vm_math::dot::{DotFloat, dot, lane_sum};
use vm_runtime::HostMemory;

/// The name the extension is registered under.
pub const NAME: &str = vm_ir::extension::MATMUL;

/// `out = a @ b` of integers, row-major, for the 2-d views `a` (m x k) and `b` (k x n), read in
/// place from their bases' data `x` and `y` (broadcast views cost nothing however large `k` is),
/// each sum in order from 0.
fn product<'m, T: Elem>(
    (x, a): (&'m [T], &'m View),
    (y, b): (&'m [T], &'m View),
) -> Result<impl ExactSizeIterator<Item = T> + 'm> {
    let add = T::binary(BinaryOp::Add).ok_or_else(|| not_defined(Opcode::Add, T::DTYPE))?;
    let mul = T::binary(BinaryOp::Multiply).ok_or_else(|| not_defined(Opcode::Multiply, T::DTYPE))?;
    let zero = T::reduce_identity(ReduceOp::AddReduce).ok_or_else(|| not_defined(Opcode::AddReduce, T::DTYPE))?;
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let [sa0, sa1, sb0, sb1] = [a.stride[0], a.stride[1], b.stride[0], b.stride[1]].map(|s| s as isize);
    let (a0, b0) = (a.start as isize, b.start as isize);
    Ok((0..m * n).map(move |ij| {
        let (i, j) = ((ij / n) as isize, (ij % n) as isize);
        // Row i of a and column j of b, walked together.
        let (row, col) = (a0 + i * sa0, b0 + j * sb1);
        (0..k as isize).fold(zero, |acc, p| add(acc, mul(x[(row + p * sa1) as usize], y[(col + p * sb0) as usize])))
    }))
}

/// Row-column pairs at least this long that are not both contiguous are copied into slices
/// first, for [`dot`] (a column of a row-major matrix: `A[:j, j]`).
const GATHER_FROM: usize = 16;

/// `out = a @ b` of floats, each sum in the order of [`vm_math::dot`]: a row of `a` and a
/// column of `b` that are both contiguous are walked as slices, others by their strides, in the
/// same order (the layout never changes a result).
fn float_product<'m, T: Elem + DotFloat>(
    (x, a): (&'m [T], &'m View),
    (y, b): (&'m [T], &'m View),
) -> Result<impl ExactSizeIterator<Item = T> + 'm> {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let [sa0, sa1, sb0, sb1] = [a.stride[0], a.stride[1], b.stride[0], b.stride[1]].map(|s| s as isize);
    let (a0, b0) = (a.start as isize, b.start as isize);
    let contiguous = k <= 1 || (sa1 == 1 && sb0 == 1);
    // Scratch for a pair gathered into slices (the same terms in the same order).
    let mut pair: (Vec<T>, Vec<T>) = (Vec::new(), Vec::new());
    if !contiguous && k >= GATHER_FROM {
        try_vec_for(&mut pair.0, k)?;
        try_vec_for(&mut pair.1, k)?;
    }
    Ok((0..m * n).map(move |ij| {
        let (i, j) = ((ij / n) as isize, (ij % n) as isize);
        let (row, col) = (a0 + i * sa0, b0 + j * sb1);
        if contiguous && k > 0 {
            dot(&x[row as usize..row as usize + k], &y[col as usize..col as usize + k])
        } else if k >= GATHER_FROM {
            let (xs, ys) = &mut pair;
            dot(run_of(xs, x, row, sa1, k), run_of(ys, y, col, sb0, k))
        } else {
            lane_sum(k, |p| x[(row + p as isize * sa1) as usize] * y[(col + p as isize * sb0) as usize])
        }
    }))
}

/// The `k` (at least 1) elements of `x` from `start` by `stride` as a slice: where they lie
/// when contiguous, else gathered into `scratch` (a reversed run copied backwards, which the
/// compiler vectorises).
fn run_of<'a, T: Copy>(scratch: &'a mut Vec<T>, x: &'a [T], start: isize, stride: isize, k: usize) -> &'a [T] {
    let last = start + (k as isize - 1) * stride;
    scratch.clear();
    match stride {
        1 => return &x[start as usize..=last as usize],
        -1 => scratch.extend(x[last as usize..=start as usize].iter().rev()),
        _ => scratch.extend((0..k as isize).map(|p| x[(start + p * stride) as usize])),
    }
    scratch
}

/// Reserves room for `k` elements in `v` (fallibly: `k` is a dimension of the operands).
fn try_vec_for<T>(v: &mut Vec<T>, k: usize) -> Result<()> {
    v.try_reserve_exact(k).map_err(|_| vm_ir::Error::OutOfMemory(format!("matmul: room for a row of {k} elements")))
}

/// Executes a `matmul` instruction.
pub fn matmul(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    // The runtime checked the operands at submit; a stack driven without one gets the same check.
    let (out, a, b) = vm_ir::extension::matmul_operands(instr)?;
    prepare_overwriting(mem, instr)?;
    // The values are computed from data borrowed from `mem`, then written into it: one value
    // (a dot product of vectors) is kept as it is, more are collected first.
    macro_rules! store {
        ($values:expr) => {{
            let mut values = $values;
            if out.nelem() == 1 {
                let one = values.next();
                drop(values);
                write_view(mem, out, one)
            } else {
                let values = result(out, values, mem.interrupt())?;
                write_view(mem, out, values)
            }
        }};
    }
    match out.dtype() {
        DType::F64 => store!(float_product::<f64>((data(mem, a)?, a), (data(mem, b)?, b))?),
        DType::F32 => store!(float_product::<f32>((data(mem, a)?, a), (data(mem, b)?, b))?),
        _ => with_dtype!(out.dtype(), T => store!(product((data::<T>(mem, a)?, a), (data::<T>(mem, b)?, b))?)),
    }
}
