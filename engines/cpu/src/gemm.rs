//! Matrix products as blocked GEMM.
//!
//! A frontend records `a @ b` as a product broadcast over an `(..., n, k, m)` space and a sum
//! over `k`: `add_reduce(c, multiply(a[..., :, :, None], b[..., None, :, :]), axis = -2)`. Fused,
//! that is one kernel whose product never reaches memory, but its loops walk all of `b` once per
//! row of `a`: past the caches (`n = 1000`: 8 GB from L3 for 16 MB of operands) it runs at a
//! tenth of a blocked matrix product. A kernel of exactly that shape, in `f32` or `f64`, runs
//! instead as `matrixmultiply`'s GEMM (packed panels, register tiles, the machine's vector
//! width chosen at run time), cut into tasks of [`ROWS`] rows of `c` on the engine's pool.
//!
//! Float32 products summed in float64 (as the engine sums every float32 reduction) widen their
//! factors once and run as float64 GEMM. The `matmul` extension method runs the same way
//! ([`of_extension`]).
//!
//! The tasks depend only on the sizes, never on the number of threads, and each element of `c`
//! sums its `k` products in the order GEMM's blocking gives, the same in every task: results
//! are reassociated against the interpreter's sequential sum (as any reduction on this engine)
//! and bit-identical from run to run, whatever the thread count.

use crate::pool::Pool;
use crate::views;
use vm_fusion::Kernel;
use vm_ir::{DType, Error, Instruction, Kind, Opcode, Result, View};
use vm_runtime::HostMemory;
use vm_runtime::memory::try_vec;

/// Rows of `c` per task: enough for GEMM's packing to pay off, small enough to balance a few
/// hundred rows over the pool's threads.
const ROWS: usize = 64;

/// A matrix product recognised in a kernel: `c[..., i, j] = sum_p a[..., i, p] * b[..., p, j]`.
#[derive(Debug)]
pub struct Gemm {
    /// `a` as the product's first factor broadcast over `j` (axis `-1` has stride 0).
    a: View,
    /// `b` broadcast over `i` (axis `-3` has stride 0).
    b: View,
    /// The reduction's output, `(..., n, m)`.
    c: View,
    /// True for `f32` factors summed in `f64` (the engine's float32 sums,
    /// `rewrite::widen_float32_reductions`): the factors are widened (their products are then
    /// exact) and multiplied by `f64` GEMM into the `f64` output.
    widen: bool,
}

/// The matrix product that kernel `k` of `batch` computes, when it is exactly one.
pub fn recognise(k: &Kernel, batch: &[Instruction]) -> Option<Gemm> {
    // The product, then (float32 widened) its cast to float64, then the sum.
    let (mul, cast, sum) = match k.instrs[..] {
        [i0, i1] => (&batch[i0], None, &batch[i1]),
        [i0, i1, i2] => (&batch[i0], Some(&batch[i1]), &batch[i2]),
        _ => return None,
    };
    if mul.opcode != Opcode::Multiply || sum.opcode != Opcode::AddReduce || sum.opcode.kind() != Kind::Reduce {
        return None;
    }
    let t = mul.output()?;
    let r = t.ndim();
    let summed = match cast {
        None => t,
        Some(c) => {
            let wide = c.output()?;
            let narrow_to_wide = c.opcode == Opcode::Identity && t.dtype() == DType::F32 && wide.dtype() == DType::F64;
            if !narrow_to_wide || c.operands.get(1)?.as_view()? != t || !k.temps.contains(&wide.base.id) {
                return None;
            }
            wide
        }
    };
    if r < 3
        || !k.temps.contains(&t.base.id)
        || sum.operands.get(1)?.as_view()? != summed
        || summed.shape != t.shape
        || sum.axis()? != r - 2
    {
        return None;
    }
    let dtype = t.dtype();
    let (x, y, c) = (mul.operands.get(1)?.as_view()?, mul.operands.get(2)?.as_view()?, sum.output()?);
    if !matches!(dtype, DType::F32 | DType::F64)
        || [x, y].iter().any(|v| v.dtype() != dtype)
        || c.dtype() != summed.dtype()
    {
        return None;
    }
    // Which factor is constant along `j` and which along `i` (an extent of 1 is both).
    let along = |v: &View, axis: usize| v.shape[axis] == 1 || v.stride[axis] == 0;
    let (a, b) = if along(x, r - 1) && along(y, r - 3) {
        (x, y)
    } else if along(y, r - 1) && along(x, r - 3) {
        (y, x)
    } else {
        return None;
    };
    // `c` is written while `a` and `b` are read: never the same memory.
    if c.base.id == a.base.id || c.base.id == b.base.id {
        return None;
    }
    Some(Gemm { a: a.clone(), b: b.clone(), c: c.clone(), widen: cast.is_some() })
}

/// The `matmul` extension method's product (`out = a @ b` of 2-d views), when its dtype is one
/// GEMM computes (`f32`, `f64`).
pub fn of_extension(out: &View, a: &View, b: &View) -> Option<Gemm> {
    if !matches!(out.dtype(), DType::F32 | DType::F64) {
        return None;
    }
    // The product's (n, k, m) space, each factor broadcast along the axis it lacks.
    let (n, k, m) = (a.shape[0], a.shape[1], b.shape[1]);
    let space =
        |v: &View, stride: [i64; 3]| View { shape: [n, k, m][..].into(), stride: stride[..].into(), ..v.clone() };
    Some(Gemm {
        a: space(a, [a.stride[0], a.stride[1], 0]),
        b: space(b, [0, b.stride[0], b.stride[1]]),
        c: out.clone(),
        widen: false,
    })
}

/// Row-major multi-index of `f` in `shape`.
fn unravel(shape: &[usize], mut f: usize, idx: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        idx[d] = f % shape[d];
        f /= shape[d];
    }
}

impl Gemm {
    /// Bytes read and written: the operands' elements once each, and the output.
    pub fn bytes_moved(&self) -> u64 {
        let touched =
            |v: &View| v.shape.iter().zip(&v.stride).filter(|&(_, &s)| s != 0).map(|(&e, _)| e as u64).product::<u64>();
        (touched(&self.a) + touched(&self.b) + self.c.nelem() as u64) * self.c.dtype().size() as u64
    }

    /// Computes the product into `c`'s base, on `pool`.
    pub fn run(&self, mem: &mut HostMemory, pool: &Pool) -> Result<()> {
        let r = self.a.ndim();
        let (n, kk, m) = (self.a.shape[r - 3], self.a.shape[r - 2], self.b.shape[r - 1]);
        let batch: Vec<usize> = self.c.shape[..r - 3].to_vec();
        let nbatch: usize = batch.iter().product();
        if n == 0 || m == 0 || nbatch == 0 {
            views::buffer(mem, &self.c)?;
            return Ok(());
        }
        // The element size of every operand GEMM reads and writes (widened factors are f64, as
        // their output is).
        let size = self.c.dtype().size() as isize;
        // Every base allocated and checked first; then each view's element 0, as an address,
        // and its strides in elements.
        let mut origin = [0usize; 3];
        let mut strides: [Vec<isize>; 3] = Default::default();
        for ((o, st), v) in origin.iter_mut().zip(strides.iter_mut()).zip([&self.a, &self.b, &self.c]) {
            let buf = views::buffer(mem, v)?;
            *o = (buf.as_mut_ptr() as isize + v.start as isize * v.dtype().size() as isize) as usize;
            *st = v.stride.iter().map(|&x| x as isize).collect();
        }
        // Widened factors: f64 copies, alive until the products are done.
        let mut wide: [Vec<f64>; 2] = Default::default();
        if self.widen {
            for (f, (v, axis)) in [(&self.a, r - 1), (&self.b, r - 3)].into_iter().enumerate() {
                // Each element once: the broadcast axis at extent 1, stride 0 in the copy.
                let mut once = v.clone();
                once.shape[axis] = 1;
                let narrow = views::read::<f32>(mem, &once)?;
                let mut w = try_vec(narrow.len(), v.base.id, "a float64 copy of a matrix product's factor")?;
                w.extend(narrow.iter().map(|&x| f64::from(x)));
                let mut st: Vec<isize> =
                    vm_ir::view::row_major_strides(&once.shape).iter().map(|&x| x as isize).collect();
                st[axis] = 0;
                origin[f] = w.as_ptr() as usize;
                strides[f] = st;
                wide[f] = w;
            }
        }
        let (sa, sb, sc) = (&strides[0], &strides[1], &strides[2]);
        let rows = n.div_ceil(ROWS);
        let tasks =
            nbatch.checked_mul(rows).ok_or_else(|| Error::Internal("a matrix product of too many rows".into()))?;
        let task = |t: usize| {
            let (bi, row) = (t / rows, t % rows);
            let mut idx = vec![0usize; batch.len()];
            unravel(&batch, bi, &mut idx);
            let (i0, i1) = (row * ROWS, ((row + 1) * ROWS).min(n));
            // Element (batch index, first, 0) of an operand with element strides `st`, whose
            // axis `first_axis` is the one of `i`.
            let at = |base: usize, st: &[isize], first_axis: usize, first: usize| {
                let lead: isize = idx.iter().zip(st).map(|(&i, &s)| i as isize * s).sum();
                base as isize + (lead + first as isize * st[first_axis]) * size
            };
            let pa = at(origin[0], sa, r - 3, i0);
            let pb = at(origin[1], sb, r - 3, 0);
            let pc = at(origin[2], sc, r - 3, i0);
            let (rsa, csa) = (sa[r - 3], sa[r - 2]);
            let (rsb, csb) = (sb[r - 2], sb[r - 1]);
            let (rsc, csc) = (sc[r - 3], sc[r - 2]);
            // SAFETY: the views were checked to lie inside their allocated buffers (widened
            // factors are dense copies of exactly the elements GEMM walks), so every element
            // GEMM reads (`a`'s rows `i0..i1`, all of `b`) and writes (`c`'s rows `i0..i1` of
            // this batch index) is in bounds; tasks write disjoint rows of `c` (its view visits
            // each element once), which no task reads; the buffers outlive the pool's run.
            unsafe {
                match self.c.dtype() {
                    DType::F64 => matrixmultiply::dgemm(
                        i1 - i0,
                        kk,
                        m,
                        1.0,
                        pa as *const f64,
                        rsa,
                        csa,
                        pb as *const f64,
                        rsb,
                        csb,
                        0.0,
                        pc as *mut f64,
                        rsc,
                        csc,
                    ),
                    _ => matrixmultiply::sgemm(
                        i1 - i0,
                        kk,
                        m,
                        1.0,
                        pa as *const f32,
                        rsa,
                        csa,
                        pb as *const f32,
                        rsb,
                        csb,
                        0.0,
                        pc as *mut f32,
                        rsc,
                        csc,
                    ),
                }
            }
        };
        let ran = pool.run(tasks, &task, mem.interrupt());
        drop(wide);
        ran
    }
}
