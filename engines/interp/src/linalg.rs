//! The linear algebra extension methods `cholesky`, `solve`, `det` and `slogdet`
//! ([`vm_ir::extension::CHOLESKY`], [`SOLVE`](vm_ir::extension::SOLVE),
//! [`DET`](vm_ir::extension::DET), [`SLOGDET`](vm_ir::extension::SLOGDET)), computed by `faer`: each `n x n` matrix of the input is
//! copied row-major into a buffer and factorised there (Cholesky; LU with partial pivoting),
//! one matrix after another, with a look at the flush's interrupt between matrices.

use crate::elem::Elem;
use crate::iterate::{elements, prepare, room, write_view};
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};
use faer::linalg::lu::partial_pivoting::solve::{solve_in_place, solve_in_place_scratch};
use faer::traits::RealField;
use faer::{MatMut, MatRef, Par};
use vm_ir::{DType, Error, Instruction, Result, Scalar, View};
use vm_runtime::HostMemory;

/// The floats the methods compute in, with the conversions they need.
trait Float: Elem + RealField + Copy + Into<f64> + std::ops::Mul<Output = Self> + std::ops::Neg<Output = Self> {
    /// `x` in this type.
    fn of(x: f64) -> Self {
        Self::from_scalar(Scalar::F64(x))
    }
}

impl Float for f32 {}
impl Float for f64 {}

/// Calls `$f::<T>($args)` for the float dtype `$dtype` (the methods' operand checks have
/// refused any other).
macro_rules! with_float {
    ($dtype:expr, $f:ident($($args:expr),*)) => {
        match $dtype {
            DType::F32 => $f::<f32>($($args),*),
            DType::F64 => $f::<f64>($($args),*),
            d => Err(Error::Internal(format!("a linear algebra method of {d} passed its checks"))),
        }
    };
}

/// Runs `cholesky out, a`.
pub fn cholesky(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, a) = vm_ir::extension::cholesky_operands(instr)?;
    prepare(mem, instr)?;
    with_float!(a.dtype(), cholesky_all(mem, out, a))
}

/// Runs `solve out, a, b`.
pub fn solve(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, a, b) = vm_ir::extension::solve_operands(instr)?;
    prepare(mem, instr)?;
    with_float!(a.dtype(), solve_all(mem, out, a, b))
}

/// Runs `det out, a` (`log` false) or `slogdet out, a` (true).
pub fn det(instr: &Instruction, log: bool, mem: &mut HostMemory) -> Result<()> {
    let (out, a) =
        if log { vm_ir::extension::slogdet_operands(instr)? } else { vm_ir::extension::det_operands(instr)? };
    prepare(mem, instr)?;
    with_float!(a.dtype(), det_all(mem, out, a, log))
}

/// The elements of `view`, row-major, in a buffer of their own (allocated fallibly, for `out`).
fn copied<T: Elem>(mem: &HostMemory, view: &View, out: &View) -> Result<Vec<T>> {
    let mut values: Vec<T> = room(out, view.nelem())?;
    values.extend(elements::<T>(mem, view)?);
    Ok(values)
}

/// Scratch space of `req` for `faer`, allocated fallibly.
fn scratch(req: StackReq, what: &str) -> Result<MemBuffer> {
    MemBuffer::try_new(req).map_err(|_| Error::OutOfMemory(format!("scratch space for {what}")))
}

/// The matrices of `n x n` elements of `values`, row-major (none when `n` is 0).
fn matrices<T>(values: &mut [T], n: usize) -> std::slice::ChunksExactMut<'_, T> {
    values.chunks_exact_mut((n * n).max(1))
}

/// Two permutations of `n` positions for the LU decomposition, allocated fallibly.
fn permutations(n: usize, out: &View) -> Result<(Vec<usize>, Vec<usize>)> {
    let mut fwd: Vec<usize> = room(out, n)?;
    let mut bwd: Vec<usize> = room(out, n)?;
    fwd.resize(n, 0);
    bwd.resize(n, 0);
    Ok((fwd, bwd))
}

/// Factorises every matrix of `a` into `out` (see [`vm_ir::extension::CHOLESKY`]).
fn cholesky_all<T: Float>(mem: &mut HostMemory, out: &View, a: &View) -> Result<()> {
    let n = a.shape[a.ndim() - 1];
    let mut values = copied::<T>(mem, a, out)?;
    let mut buffer = scratch(cholesky_in_place_scratch::<T>(n, Par::Seq, Default::default()), "cholesky")?;
    let stack = MemStack::new(&mut buffer);
    for (k, matrix) in matrices(&mut values, n).enumerate() {
        if k > 0 {
            mem.interrupt().check()?;
        }
        let lower = MatMut::from_row_major_slice_mut(matrix, n, n);
        if cholesky_in_place(lower, Default::default(), Par::Seq, stack, Default::default()).is_err() {
            matrix.fill(T::of(f64::NAN));
            continue;
        }
        for (i, row) in matrix.chunks_exact_mut(n).enumerate() {
            row[i + 1..].fill(T::of(0.0));
        }
    }
    write_view(mem, out, values)
}

/// Solves every system of `a` and `b` into `out` (see [`vm_ir::extension::SOLVE`]).
fn solve_all<T: Float>(mem: &mut HostMemory, out: &View, a: &View, b: &View) -> Result<()> {
    let (n, k) = (a.shape[a.ndim() - 1], b.shape[b.ndim() - 1]);
    let mut lu = copied::<T>(mem, a, out)?;
    let mut x = copied::<T>(mem, b, out)?;
    if n == 0 || k == 0 {
        return write_view(mem, out, x);
    }
    let (mut fwd, mut bwd) = permutations(n, out)?;
    let req = lu_in_place_scratch::<usize, T>(n, n, Par::Seq, Default::default())
        .or(solve_in_place_scratch::<usize, T>(n, k, Par::Seq));
    let mut buffer = scratch(req, "solve")?;
    let stack = MemStack::new(&mut buffer);
    for (i, (matrix, rhs)) in matrices(&mut lu, n).zip(x.chunks_exact_mut(n * k)).enumerate() {
        if i > 0 {
            mem.interrupt().check()?;
        }
        let (_, perm) = lu_in_place(
            MatMut::from_row_major_slice_mut(matrix, n, n),
            &mut fwd,
            &mut bwd,
            Par::Seq,
            stack,
            Default::default(),
        );
        if (0..n).any(|j| matrix[j * n + j].into() == 0.0) {
            rhs.fill(T::of(f64::NAN)); // singular: LAPACK's `gesv` stops at the zero pivot
            continue;
        }
        let factors = MatRef::from_row_major_slice(matrix, n, n);
        solve_in_place(factors, factors, perm, MatMut::from_row_major_slice_mut(rhs, n, k), Par::Seq, stack);
    }
    write_view(mem, out, x)
}

/// The determinant of every matrix of `a` into `out` (see [`vm_ir::extension::DET`]), or with
/// `log` its sign and the logarithm of its absolute value ([`vm_ir::extension::SLOGDET`]).
fn det_all<T: Float>(mem: &mut HostMemory, out: &View, a: &View, log: bool) -> Result<()> {
    let n = a.shape[a.ndim() - 1];
    let mut lu = copied::<T>(mem, a, out)?;
    let mut dets: Vec<T> = room(out, out.nelem())?;
    if n == 0 {
        let empty: &[f64] = if log { &[1.0, 0.0] } else { &[1.0] };
        dets.extend((0..out.nelem()).map(|i| T::of(empty[i % empty.len()])));
        return write_view(mem, out, dets);
    }
    let (mut fwd, mut bwd) = permutations(n, out)?;
    let mut buffer = scratch(lu_in_place_scratch::<usize, T>(n, n, Par::Seq, Default::default()), "det")?;
    let stack = MemStack::new(&mut buffer);
    for (i, matrix) in matrices(&mut lu, n).enumerate() {
        if i > 0 {
            mem.interrupt().check()?;
        }
        let factors = MatMut::from_row_major_slice_mut(matrix, n, n);
        let (info, _) = lu_in_place(factors, &mut fwd, &mut bwd, Par::Seq, stack, Default::default());
        let pivots = (0..n).map(|j| matrix[j * n + j]);
        let exchanged = info.transposition_count % 2 == 1;
        if log {
            let (mut sign, mut sum) = (if exchanged { -1.0 } else { 1.0 }, 0.0f64);
            for p in pivots {
                let p: f64 = p.into();
                sign = if p == 0.0 { 0.0 } else { sign * p.signum() };
                sum += p.abs().ln();
            }
            if sign == 0.0 {
                sign = 0.0; // +0.0 however many negative pivots followed
            }
            dets.extend([T::of(sign), T::of(sum)]);
        } else {
            let product = pivots.fold(T::of(1.0), |d, p| d * p);
            dets.push(if exchanged { -product } else { product });
        }
    }
    write_view(mem, out, dets)
}
