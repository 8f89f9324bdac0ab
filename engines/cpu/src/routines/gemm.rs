//! Matrix products as blocked GEMM.
//!
//! A frontend records `a @ b` as a product broadcast over an `(..., n, k, m)` space and a sum
//! over `k`: `add_reduce(c, multiply(a[..., :, :, None], b[..., None, :, :]), axis = -2)`. Fused,
//! that is one kernel whose product never reaches memory, but its loops walk all of `b` once per
//! row of `a`: past the caches (`n = 1000`: 8 GB from L3 for 16 MB of operands) it runs at a
//! tenth of a blocked matrix product. A kernel of exactly that shape, in `f32` or `f64`, runs
//! instead as the `gemm` crate's GEMM (packed panels, register tiles for AVX-512 or AVX2+FMA
//! chosen at run time), in tasks of rows of `c` on the engine's pool: as few as keep every
//! thread busy, since each packs all of `b` (64-row tasks packed it 30 times for a 2000-row
//! product and ran at two thirds of NumPy's speed).
//!
//! Float32 products summed in float64 (as the engine sums every float32 reduction) widen their
//! factors once and run as float64 GEMM. The `matmul` extension method runs the same way
//! ([`of_extension`]). A product whose result is one column or one row (a matrix times a
//! vector, a vector times a matrix), or has at most [`STREAM_ROWS`] rows (a batch of vectors
//! times a matrix), reads its matrix once instead, without GEMM's packing, which would copy
//! it: dot products by rows, or rows of the matrix scaled and added into rows of `c` (or
//! partial rows summed in order at the end). These loops are compiled for AVX-512 and AVX2
//! beside the 128-bit code and chosen at run time; they give the same bits at every width.
//! Matrix-vector products of one large matrix in a batch (`r @ A, A @ p`) share one pass over
//! it ([`run_matrix_vector_group`]), each with the bits it gets alone.
//!
//! Each element of `c` sums its `k` products in the order GEMM's blocking gives, which depends
//! on the sizes and the processor's vector width, never on the threads or the rows of a block:
//! results are reassociated against the interpreter's sequential sum (as any reduction on this
//! engine) and bit-identical from run to run, whatever the thread count.

use crate::routines::views;
use crate::run::pool::Pool;
use vm_fusion::Kernel;
use vm_ir::{DType, Error, Instruction, Kind, Opcode, Result, View};
use vm_runtime::HostMemory;
use vm_runtime::memory::try_vec;

/// Rows of `c` per task of a matrix-vector product, and the fewest rows per task of GEMM (whose
/// packing of `b` then pays off).
const ROWS: usize = 64;

/// Floating-point operations of a task of GEMM at most, between looks at the flush's interrupt
/// (a few tenths of a second; each task packs `b` anew, which smaller tasks pay for in speed).
const BLOCK_FLOPS: u64 = 1 << 35;

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
    /// `vm_passes::rewrite::widen_float32_reductions`): the factors are widened (their products are then
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

/// The float types GEMV computes in.
trait Real: Copy + Default + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + Send + Sync {}
impl Real for f32 {}
impl Real for f64 {}

/// Columns of `c` per task of a vector-matrix product.
const COLS: usize = 1024;

/// A product whose `c` is one column (`m == 1`: a matrix times a vector) or one row (`n == 1`:
/// a vector times a matrix), for each batch index: GEMM would pack (copy) the matrix, which such
/// a product reads once, and cut a single row into one task. A column is computed by dot
/// products, rows of `c` in tasks of [`ROWS`], each summing its `k` products in eight running
/// sums; a row by scaled rows of `b` added in order of `p`, columns in tasks of [`COLS`]. A
/// factor that is a transposed matrix (contiguous columns) swaps the two ways: a column by
/// scaled rows of the matrix, a row by dot products. `origin` holds each operand's element `(0, .., 0)` as an address and `strides` its strides
/// in elements over the product's `(..., n, k, m)` space (the factors' broadcast axes 0); `out`
/// is `c`'s base.
fn gemv<T: Real>(
    out: vm_ir::BaseId,
    tasks: &Tasks<'_>,
    [n, kk, m]: [usize; 3],
    batch: &[usize],
    origin: [usize; 3],
    [sa, sb, sc]: [&Vec<isize>; 3],
) -> Result<()> {
    let r = sa.len();
    let nbatch: usize = batch.iter().product();
    let column = m == 1;
    if !column && nbatch == 1 && sb[r - 1] == 1 && sc[r - 2] == 1 && kk * m >= 1 << 16 {
        return vector_times_matrix::<T>(out, tasks, [kk, m], origin, [sa[r - 2], sb[r - 2]]);
    }
    if column && nbatch == 1 && n > 1 && kk > 0 && sa[r - 3] == 1 && sc[r - 3] == 1 {
        // A transposed matrix times a vector (`A.T @ x`): `a`'s columns are the contiguous rows
        // of `A`, so `c` is `x @ A`, which streams `A` once (by columns it would read every
        // row of `A` for every element of `c`).
        let swapped = [origin[1], origin[0], origin[2]];
        return vector_times_matrix::<T>(out, tasks, [kk, n], swapped, [sb[r - 2], sa[r - 2]]);
    }
    if !column && nbatch == 1 && kk > 0 && sb[r - 2] == 1 && sa[r - 2] == 1 {
        // A vector times a transposed matrix (`x @ A.T`): `b`'s columns are the contiguous rows
        // of `A`, so `c` is `A @ x`, dot products by rows, in tasks of [`ROWS`] of them.
        let size = std::mem::size_of::<T>() as isize;
        let task = |t: usize| {
            let (j0, j1) = (t * ROWS, ((t + 1) * ROWS).min(m));
            let rows = Dots {
                a: (origin[1] as isize + j0 as isize * sb[r - 1] * size) as *const T,
                rsa: sb[r - 1],
                x: origin[0] as *const T,
                c: (origin[2] as isize + j0 as isize * sc[r - 2] * size) as *mut T,
                rsc: sc[r - 2],
                n: j1 - j0,
                k: kk,
            };
            // SAFETY: the views were checked to lie inside their buffers: columns `j0..j1` of
            // `b` (each `kk` contiguous elements), the contiguous `a` and elements `j0..j1` of
            // `c`, which tasks write disjointly and none reads.
            unsafe { dots::widest(rows) }
        };
        return tasks.run(m.div_ceil(ROWS), &task);
    }
    if column && n == 1 && nbatch == 1 && kk >= 2 * DOT_PART && sa[r - 2] == 1 && sb[r - 2] == 1 {
        return long_dot::<T>(out, tasks, kk, origin);
    }
    // Rows of `c` per task of a column: [`ROWS`], or more for a single tall product, which is
    // then cut into a few contiguous stretches of rows per thread (each thread streams long
    // runs of `a`, as memory serves best).
    let col_rows = if nbatch == 1 { ROWS.max(n.div_ceil(2 * tasks.threads())) } else { ROWS };
    let per_batch = if column { n.div_ceil(col_rows) } else { m.div_ceil(COLS) };
    let count =
        nbatch.checked_mul(per_batch).ok_or_else(|| Error::Internal("a matrix product of too many rows".into()))?;
    let size = std::mem::size_of::<T>() as isize;
    let task = |t: usize| {
        let (bi, part) = (t / per_batch, t % per_batch);
        let mut idx = vec![0usize; batch.len()];
        unravel(batch, bi, &mut idx);
        let lead = |st: &[isize]| idx.iter().zip(st).map(|(&i, &s)| i as isize * s).sum::<isize>();
        let (oa, ob, oc) = (
            origin[0] as isize + lead(sa) * size,
            origin[1] as isize + lead(sb) * size,
            origin[2] as isize + lead(sc) * size,
        );
        // Element (i, p) of `a`, (p, j) of `b`, (i, j) of `c`.
        let a = |i: usize, p: usize| (oa + (i as isize * sa[r - 3] + p as isize * sa[r - 2]) * size) as *const T;
        let b = |p: usize, j: usize| (ob + (p as isize * sb[r - 2] + j as isize * sb[r - 1]) * size) as *const T;
        let c = |i: usize, j: usize| (oc + (i as isize * sc[r - 3] + j as isize * sc[r - 2]) * size) as *mut T;
        // SAFETY: as for GEMM in `Gemm::run`: every element read or written lies inside the
        // operands' checked views, tasks write disjoint elements of `c`, which none reads.
        unsafe {
            if column && sa[r - 2] == 1 && sb[r - 2] == 1 {
                // Contiguous rows of `a` and a contiguous `b`: slices the compiler vectorises.
                let (i0, i1) = (part * col_rows, ((part + 1) * col_rows).min(n));
                let rows =
                    Dots { a: a(i0, 0), rsa: sa[r - 3], x: b(0, 0), c: c(i0, 0), rsc: sc[r - 3], n: i1 - i0, k: kk };
                dots::widest(rows);
            } else if column {
                for i in part * col_rows..((part + 1) * col_rows).min(n) {
                    let mut sums = [T::default(); 8];
                    let whole = kk - kk % 8;
                    for p in (0..whole).step_by(8) {
                        for (l, s) in sums.iter_mut().enumerate() {
                            *s = *s + *a(i, p + l) * *b(p + l, 0);
                        }
                    }
                    let mut total =
                        (sums[0] + sums[4]) + (sums[1] + sums[5]) + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
                    for p in whole..kk {
                        total = total + *a(i, p) * *b(p, 0);
                    }
                    *c(i, 0) = total;
                }
            } else {
                let (j0, j1) = (part * COLS, ((part + 1) * COLS).min(m));
                if sb[r - 1] == 1 && sc[r - 2] == 1 {
                    // Contiguous rows of `b` and `c`: streamed, four rows of `b` a pass.
                    stream::widest(Stream {
                        a: a(0, 0),
                        rsa: 0,
                        csa: sa[r - 2],
                        b: b(0, j0),
                        rsb: sb[r - 2],
                        c: c(0, j0),
                        rsc: 0,
                        n: 1,
                        k: kk,
                        width: j1 - j0,
                        accumulate: false,
                    });
                } else {
                    for j in j0..j1 {
                        *c(0, j) = T::default();
                    }
                    for p in 0..kk {
                        let x = *a(0, p);
                        for j in j0..j1 {
                            *c(0, j) = *c(0, j) + x * *b(p, j);
                        }
                    }
                }
            }
        }
    };
    tasks.run(count, &task)
}

/// Elements of each part of a long dot product ([`long_dot`]).
const DOT_PART: usize = 1 << 14;

/// One dot product of two contiguous vectors of `k` elements (`origin`: the first elements of
/// `a` and `b`, then `c`): the vectors are cut into parts of [`DOT_PART`], each part's dot
/// product computed as a row of [`dot_rows`] on the pool, and the partial sums added in order
/// of the parts, so that the bits depend neither on the threads nor on how they are scheduled.
fn long_dot<T: Real>(out: vm_ir::BaseId, tasks: &Tasks<'_>, k: usize, origin: [usize; 3]) -> Result<()> {
    let parts = k.div_ceil(DOT_PART);
    let mut partial: Vec<T> = try_vec(parts, out, "the partial sums of a dot product")?;
    partial.resize(parts, T::default());
    let at = partial.as_mut_ptr() as usize;
    let size = std::mem::size_of::<T>();
    let task = |t: usize| {
        let (p0, p1) = (t * DOT_PART, ((t + 1) * DOT_PART).min(k));
        let part = Dots {
            a: (origin[0] + p0 * size) as *const T,
            rsa: 0,
            x: (origin[1] + p0 * size) as *const T,
            c: (at + t * size) as *mut T,
            rsc: 0,
            n: 1,
            k: p1 - p0,
        };
        // SAFETY: elements `p0..p1` of both contiguous vectors lie in their checked views; each
        // task writes its own partial sum, which nothing else reads until the tasks are done.
        unsafe { dots::widest(part) }
    };
    tasks.run(parts, &task)?;
    let total = partial.iter().copied().reduce(|sum, x| sum + x).unwrap_or_default();
    // SAFETY: `c` (one element) lies in its checked view.
    unsafe { *(origin[2] as *mut T) = total };
    Ok(())
}

/// Parts of `p` a vector-matrix product is cut into, at most.
const PARTS: usize = 16;

/// `c = a @ b` of a row `a` of `k` elements (element stride `sa`) and a `(k, m)` matrix `b` with
/// contiguous rows (row stride `sb`) into the contiguous row `c`: the rows of `b` are cut into
/// parts, each summed in order into a partial row of its own while streaming its rows of `b`
/// once ([`stream_block`]), and the partial rows are added in order of the parts. `origin`
/// holds the operands' first elements as addresses; `out` is `c`'s base.
fn vector_times_matrix<T: Real>(
    out: vm_ir::BaseId,
    tasks: &Tasks<'_>,
    [kk, m]: [usize; 2],
    origin: [usize; 3],
    [sa, sb]: [isize; 2],
) -> Result<()> {
    let parts = ((kk * m) >> 16).clamp(1, PARTS).min(kk);
    let rows = kk.div_ceil(parts);
    // Part 0 sums straight into `c`, each later part into a partial row of its own.
    let mut partial: Vec<T> = try_vec((parts - 1) * m, out, "the partial rows of a vector-matrix product into")?;
    let partial_at = partial.spare_capacity_mut().as_mut_ptr() as usize;
    let size = std::mem::size_of::<T>() as isize;
    let task = |t: usize| {
        let (p0, p1) = (t * rows, ((t + 1) * rows).min(kk));
        let into = if t == 0 { origin[2] } else { partial_at + (t - 1) * m * size as usize };
        // Rows `p0..p1` of `b` times elements `p0..p1` of `a`: a streamed product of one row.
        let s = Stream {
            a: (origin[0] as isize + p0 as isize * sa * size) as *const T,
            rsa: 0,
            csa: sa,
            b: (origin[1] as isize + p0 as isize * sb * size) as *const T,
            rsb: sb,
            c: into as *mut T,
            rsc: 0,
            n: 1,
            k: p1 - p0,
            width: m,
            accumulate: false,
        };
        // SAFETY: the views were checked to lie inside their buffers: elements `p0..p1` of `a`
        // and the `m` contiguous elements of rows `p0..p1` of `b` are in bounds, and so is the
        // contiguous `c`, which overlaps neither; the partial row (allocated above, `m`
        // elements) is this task's alone, and the stream writes all of it before reading it.
        unsafe { stream::widest(s) }
    };
    tasks.run(parts, &task)?;
    // SAFETY: the tasks have written every element of the partial rows.
    unsafe { partial.set_len((parts - 1) * m) };
    // SAFETY: `c` is a checked contiguous view of `m` elements, which nothing else touches now.
    let c = unsafe { std::slice::from_raw_parts_mut(origin[2] as *mut T, m) };
    for part in partial.chunks(m) {
        for (o, &x) in c.iter_mut().zip(part) {
            *o = *o + x;
        }
    }
    Ok(())
}

/// Rows of `c` up to which a product with rows of `b` and `c` contiguous streams `b` once
/// ([`few_rows_times_matrix`]) instead of packing it for GEMM.
const STREAM_ROWS: usize = 16;

/// Columns of `c` per task of a streamed product, at most: the task's block of `c` (at most
/// [`STREAM_ROWS`] rows of this many) stays in the second-level cache while `b` streams by, in
/// pieces of rows long enough for the prefetcher. Fewer when that leaves a thread idle.
const STREAM_COLS: usize = 512;

/// Columns of `c` per task of a streamed product, at least.
const STREAM_COLS_MIN: usize = 64;

/// A streamed product's operands: element `(i, p)` of `a` at `a + i * rsa + p * csa`, row `p`
/// of `b` at `b + p * rsb` and row `i` of `c` at `c + i * rsc` (in elements; rows of `b` and
/// `c` contiguous), over `n` rows, `k` products and `width` columns.
#[derive(Clone, Copy)]
struct Stream<T> {
    a: *const T,
    rsa: isize,
    csa: isize,
    b: *const T,
    rsb: isize,
    c: *mut T,
    rsc: isize,
    n: usize,
    k: usize,
    width: usize,
    /// Adds to `c` instead of overwriting it.
    accumulate: bool,
}

/// `c = a @ b` for one block of columns (see [`few_rows_times_matrix`]): each element of `c`
/// sums its products in order of `p`, four rows of `b` a pass.
///
/// # Safety
/// Every element the [`Stream`] describes lies in a live buffer; `c`'s elements are written by
/// nothing else meanwhile and overlap no input.
#[inline(always)]
unsafe fn stream_block<T: Real>(s: Stream<T>) {
    // SAFETY: the caller's contract: all pointers below address elements of the stream.
    unsafe {
        let x = |i: usize, p: usize| *s.a.offset(i as isize * s.rsa + p as isize * s.csa);
        let row = |p: usize| std::slice::from_raw_parts(s.b.offset(p as isize * s.rsb), s.width);
        for i in 0..s.n {
            if !s.accumulate {
                std::slice::from_raw_parts_mut(s.c.offset(i as isize * s.rsc), s.width).fill(T::default());
            }
        }
        let mut p = 0;
        while p + 4 <= s.k {
            let (r0, r1, r2, r3) = (row(p), row(p + 1), row(p + 2), row(p + 3));
            for i in 0..s.n {
                let (x0, x1, x2, x3) = (x(i, p), x(i, p + 1), x(i, p + 2), x(i, p + 3));
                let out = std::slice::from_raw_parts_mut(s.c.offset(i as isize * s.rsc), s.width);
                for ((((o, &y0), &y1), &y2), &y3) in out.iter_mut().zip(r0).zip(r1).zip(r2).zip(r3) {
                    *o = *o + x0 * y0 + x1 * y1 + x2 * y2 + x3 * y3;
                }
            }
            p += 4;
        }
        for p in p..s.k {
            let r = row(p);
            for i in 0..s.n {
                let xp = x(i, p);
                let out = std::slice::from_raw_parts_mut(s.c.offset(i as isize * s.rsc), s.width);
                for (o, &y) in out.iter_mut().zip(r) {
                    *o = *o + xp * y;
                }
            }
        }
    }
}

/// A module `$name` of kernel `$inner` (an `unsafe fn(Args<T>)`, inlined) compiled for
/// AVX-512 (`avx512`), for AVX2 (`avx2`), and `widest`: the widest of these this CPU runs
/// ([`crate::routines::wide::vector_bits`]), else the 128-bit code. The kernels' vectors only split
/// independent elements, never a sum, so every variant gives the same bits (tested).
macro_rules! at_every_width {
    ($name:ident, $inner:ident, $args:ident) => {
        mod $name {
            use super::*;

            /// The kernel compiled for AVX-512.
            ///
            /// # Safety
            /// As the kernel's, on a CPU with AVX-512F, AVX-512VL and AVX2.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx2")]
            pub(super) unsafe fn avx512<T: Real>(s: $args<T>) {
                // SAFETY: the caller's contract.
                unsafe { $inner(s) }
            }

            /// The kernel compiled for AVX2.
            ///
            /// # Safety
            /// As the kernel's, on a CPU with AVX2.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            pub(super) unsafe fn avx2<T: Real>(s: $args<T>) {
                // SAFETY: the caller's contract.
                unsafe { $inner(s) }
            }

            /// The kernel at the widest vectors this CPU has.
            ///
            /// # Safety
            /// As the kernel's.
            pub(super) unsafe fn widest<T: Real>(s: $args<T>) {
                // SAFETY: the caller's contract; each variant runs only where its features are.
                unsafe {
                    #[cfg(target_arch = "x86_64")]
                    match crate::routines::wide::vector_bits() {
                        512 => return avx512(s),
                        256 => return avx2(s),
                        _ => {}
                    }
                    $inner(s)
                }
            }
        }
    };
}

at_every_width!(stream, stream_block, Stream);
at_every_width!(dots, dot_rows, Dots);

/// Dot products of rows of `a` with the vector `x` into `c`: row `i` of `a` at `a + i * rsa`
/// (contiguous, `k` elements), `c[i]` at `c + i * rsc`, for `i` in `0..n` (in elements).
#[derive(Clone, Copy)]
struct Dots<T> {
    a: *const T,
    rsa: isize,
    x: *const T,
    c: *mut T,
    rsc: isize,
    n: usize,
    k: usize,
}

/// Each dot product of a [`Dots`] in eight running sums over `p` (element `p` to sum
/// `p % 8`), combined pairwise, then the last `k % 8` products in order; four rows a pass,
/// which reads `x` a quarter as often and streams four rows of `a` at once.
///
/// # Safety
/// Every element the [`Dots`] describes lies in a live buffer; `c`'s are written by nothing
/// else meanwhile and overlap no input.
#[inline(always)]
unsafe fn dot_rows<T: Real>(s: Dots<T>) {
    // SAFETY: the caller's contract: all pointers below address elements of the products.
    unsafe {
        let x = std::slice::from_raw_parts(s.x, s.k);
        let row = |i: usize| std::slice::from_raw_parts(s.a.offset(i as isize * s.rsa), s.k);
        let whole = s.k - s.k % 8;
        let total = |sums: &[T; 8], row: &[T]| {
            let mut total = (sums[0] + sums[4]) + (sums[1] + sums[5]) + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
            for p in whole..s.k {
                total = total + row[p] * x[p];
            }
            total
        };
        let (xs, _) = x.as_chunks::<8>();
        let mut i = 0;
        while i + 4 <= s.n {
            let rows = [row(i), row(i + 1), row(i + 2), row(i + 3)];
            let ys = rows.map(|r| r.as_chunks::<8>().0);
            let (mut s0, mut s1, mut s2, mut s3) =
                ([T::default(); 8], [T::default(); 8], [T::default(); 8], [T::default(); 8]);
            for (c, xc) in xs.iter().enumerate() {
                let (y0, y1, y2, y3) = (&ys[0][c], &ys[1][c], &ys[2][c], &ys[3][c]);
                for l in 0..8 {
                    s0[l] = s0[l] + y0[l] * xc[l];
                    s1[l] = s1[l] + y1[l] * xc[l];
                    s2[l] = s2[l] + y2[l] * xc[l];
                    s3[l] = s3[l] + y3[l] * xc[l];
                }
            }
            for (r, (sums, row)) in [s0, s1, s2, s3].iter().zip(rows).enumerate() {
                *s.c.offset((i + r) as isize * s.rsc) = total(sums, row);
            }
            i += 4;
        }
        for i in i..s.n {
            let r = row(i);
            let mut sums = [T::default(); 8];
            for (xc, yc) in xs.iter().zip(r.as_chunks::<8>().0) {
                for l in 0..8 {
                    sums[l] = sums[l] + yc[l] * xc[l];
                }
            }
            *s.c.offset(i as isize * s.rsc) = total(&sums, r);
        }
    }
}

/// `c = a @ b` for a product of at most [`STREAM_ROWS`] rows whose `b` and `c` have contiguous
/// rows, one batch index: GEMM would pack (copy) all of `b` for so few rows of `a`, where this
/// reads it once, in tasks of up to [`STREAM_COLS`] columns of `c` (a batch of vectors times a
/// large matrix: a layer of a small network, `(8, 30000) @ (30000, 2000)`). Each element sums its
/// `k` products in order of `p`, whatever the tasks. `origin` holds the operands' element
/// `(0, 0)` as addresses; `[rsa, csa]` are `a`'s strides, `rsb` and `rsc` the row strides of
/// `b` and `c`.
#[allow(clippy::too_many_arguments)]
fn few_rows_times_matrix<T: Real>(
    tasks: &Tasks<'_>,
    [n, kk, m]: [usize; 3],
    origin: [usize; 3],
    [rsa, csa]: [isize; 2],
    rsb: isize,
    rsc: isize,
) -> Result<()> {
    // (Each element's sum is the same whatever the columns a task takes.)
    let width = m.div_ceil(tasks.threads()).next_multiple_of(STREAM_COLS_MIN).min(STREAM_COLS);
    let count = m.div_ceil(width);
    let task = |t: usize| {
        let (j0, j1) = (t * width, ((t + 1) * width).min(m));
        let s = Stream {
            a: origin[0] as *const T,
            rsa,
            csa,
            b: (origin[1] as *const T).wrapping_add(j0),
            rsb,
            c: (origin[2] as *mut T).wrapping_add(j0),
            rsc,
            n,
            k: kk,
            width: j1 - j0,
            accumulate: false,
        };
        // SAFETY: the views were checked to lie inside their buffers, so every element of `a`,
        // of `b`'s columns `j0..j1` and of `c`'s is in bounds; tasks write disjoint columns of
        // `c`, which no task reads.
        unsafe { stream::widest(s) }
    };
    tasks.run(count, &task)
}

/// Where a product's tasks run: on the engine's pool, or all on the calling thread when the
/// product is too small to pay for waking the workers (the same tasks either way, so the same
/// results).
struct Tasks<'a> {
    pool: &'a Pool,
    interrupt: &'a vm_runtime::Interrupt,
    here: bool,
}

impl Tasks<'_> {
    /// Threads the tasks share.
    fn threads(&self) -> usize {
        if self.here { 1 } else { self.pool.threads().max(1) }
    }

    /// Runs `f(t)` for every task `t` in `0..n`.
    fn run(&self, n: usize, f: &(dyn Fn(usize) + Sync)) -> Result<()> {
        if self.here { self.pool.run_here(n, f, self.interrupt) } else { self.pool.run(n, f, self.interrupt) }
    }
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

    /// Computes the product into `c`'s base, on `pool`; a product of at most `min_parallel`
    /// multiply-adds runs on the calling thread alone.
    pub fn run(&self, mem: &mut HostMemory, pool: &Pool, min_parallel: usize) -> Result<()> {
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
        let work = [nbatch, n, kk, m].iter().fold(1u128, |w, &x| w * x as u128);
        let tasks = Tasks { pool, interrupt: mem.interrupt(), here: work <= min_parallel as u128 };
        if m == 1 || n == 1 {
            let ran = match self.c.dtype() {
                DType::F64 => gemv::<f64>(self.c.base.id, &tasks, [n, kk, m], &batch, origin, [sa, sb, sc]),
                _ => gemv::<f32>(self.c.base.id, &tasks, [n, kk, m], &batch, origin, [sa, sb, sc]),
            };
            drop(wide);
            return ran;
        }
        if n <= STREAM_ROWS && nbatch == 1 && sb[r - 1] == 1 && sc[r - 2] == 1 {
            let (shape, a_strides, rsb, rsc) = ([n, kk, m], [sa[r - 3], sa[r - 2]], sb[r - 2], sc[r - 3]);
            let ran = match self.c.dtype() {
                DType::F64 => few_rows_times_matrix::<f64>(&tasks, shape, origin, a_strides, rsb, rsc),
                _ => few_rows_times_matrix::<f32>(&tasks, shape, origin, a_strides, rsb, rsc),
            };
            drop(wide);
            return ran;
        }
        let (rsa, csa) = (sa[r - 3], sa[r - 2]);
        let (rsb, csb) = (sb[r - 2], sb[r - 1]);
        let (rsc, csc) = (sc[r - 3], sc[r - 2]);
        // Rows `i0..i1` of `c` at batch index `bi`.
        let block = |bi: usize, (i0, i1): (usize, usize)| {
            let mut idx = vec![0usize; batch.len()];
            unravel(&batch, bi, &mut idx);
            // Element (batch index, first, 0) of an operand with element strides `st`, whose
            // axis `first_axis` is the one of `i`.
            let at = |base: usize, st: &[isize], first_axis: usize, first: usize| {
                let lead: isize = idx.iter().zip(st).map(|(&i, &s)| i as isize * s).sum();
                base as isize + (lead + first as isize * st[first_axis]) * size
            };
            let (pa, pb, pc) =
                (at(origin[0], sa, r - 3, i0), at(origin[1], sb, r - 3, 0), at(origin[2], sc, r - 3, i0));
            let (rows, dst, lhs, rhs) = (i1 - i0, (pc, rsc, csc), (pa, rsa, csa), (pb, rsb, csb));
            // SAFETY: the views were checked to lie inside their allocated buffers (widened
            // factors are dense copies of exactly the elements GEMM walks), so every element
            // GEMM reads (`a`'s rows `i0..i1`, all of `b`) and writes (`c`'s rows `i0..i1` of
            // this batch index) is in bounds; tasks write disjoint rows of `c` (its view visits
            // each element once), which no task reads; the buffers outlive the call.
            unsafe {
                match self.c.dtype() {
                    DType::F64 => gemm_rows::<f64>([rows, m, kk], dst, lhs, rhs, (0.0, 1.0)),
                    _ => gemm_rows::<f32>([rows, m, kk], dst, lhs, rhs, (0.0, 1.0)),
                }
            }
        };
        // Tasks of rows of `c` on the engine's pool, each one call of GEMM on one thread: as few
        // as keep every thread busy (each packs all of `b` anew), and small enough for the
        // flush's interrupt to be looked at between them. (Not `gemm`'s own threads: a
        // process forked after using them would wait on threads its child does not have.)
        let rows = n.div_ceil(tasks.threads().div_ceil(nbatch).max(1)).clamp(ROWS.min(n), block_rows(kk, m));
        let per_product = n.div_ceil(rows);
        let count = nbatch
            .checked_mul(per_product)
            .ok_or_else(|| Error::Internal("a matrix product of too many rows".into()))?;
        let task = |t: usize| {
            let (bi, i0) = (t / per_product, (t % per_product) * rows);
            block(bi, (i0, (i0 + rows).min(n)));
        };
        let ran = tasks.run(count, &task);
        drop(wide);
        ran
    }
}

/// How a matrix-vector product reads its matrix `M` (contiguous rows): by dot products of
/// its rows with the vector, or by its rows scaled by the vector's elements and summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    /// `c[i] = M[i, :] . x`, for every row `i`.
    Dots,
    /// `c = sum_p x[p] * M[p, :]`.
    Rows,
}

/// A matrix-vector product (`A @ x`, `x @ A`, `A.T @ x`, `x @ A.T`) in terms of the matrix with
/// contiguous rows it reads, `M` (`rows x cols`, row stride `row_stride`, element 0 at
/// `start` of `base`), its vector `x` (stride `x_stride`) and its output `c` (stride
/// `c_stride`): the matrix products whose passes over `M` [`run_matrix_vector_group`] shares.
#[derive(Debug)]
pub struct MatrixVector {
    reads: Reads,
    matrix: View,
    x: View,
    c: View,
}

/// Elements of a matrix, at least, whose matrix-vector products share their passes over it:
/// as many as a vector-matrix product of this size reads its matrix in parts
/// ([`vector_times_matrix`]), which the group cuts the same way (smaller matrices sit in the
/// caches, where a second pass costs little).
const GROUP_ELEMENTS: usize = 1 << 16;

impl Gemm {
    /// This product as a [`MatrixVector`]: one product (no stack), of a matrix with contiguous
    /// rows or columns of at least [`GROUP_ELEMENTS`], in the way [`gemv`] computes it (so that
    /// a group gives each product the bits it gives alone).
    pub fn matrix_vector(&self) -> Option<MatrixVector> {
        let r = self.a.ndim();
        let (n, kk, m) = (self.a.shape[r - 3], self.a.shape[r - 2], self.b.shape[r - 1]);
        if self.widen || self.c.shape[..r - 3].iter().product::<usize>() != 1 || (n == 1) == (m == 1) {
            return None;
        }
        if n * kk * m < GROUP_ELEMENTS || !matches!(self.c.dtype(), DType::F32 | DType::F64) {
            return None;
        }
        let (sa, sb, sc) = (&self.a.stride, &self.b.stride, &self.c.stride);
        let line = |v: &View, start: i64, len: usize, stride: i64| View {
            base: v.base,
            start,
            shape: [len][..].into(),
            stride: [stride][..].into(),
        };
        let matrix = |v: &View, rows: usize, cols: usize, row_stride: i64| View {
            base: v.base,
            start: v.start,
            shape: [rows, cols][..].into(),
            stride: [row_stride, 1][..].into(),
        };
        let (a, b, c) = (&self.a, &self.b, &self.c);
        let (reads, mat, x, out) = if m == 1 {
            // A column: `a` transposed is streamed by rows, `a`'s contiguous rows dotted.
            if sa[r - 3] == 1 && sc[r - 3] == 1 {
                (Reads::Rows, matrix(a, kk, n, sa[r - 2]), line(b, b.start, kk, sb[r - 2]), line(c, c.start, n, 1))
            } else if sa[r - 2] == 1 && sb[r - 2] == 1 {
                (Reads::Dots, matrix(a, n, kk, sa[r - 3]), line(b, b.start, kk, 1), line(c, c.start, n, sc[r - 3]))
            } else {
                return None;
            }
        } else if sb[r - 1] == 1 && sc[r - 2] == 1 {
            // A row: `b`'s contiguous rows streamed, `b` transposed dotted.
            (Reads::Rows, matrix(b, kk, m, sb[r - 2]), line(a, a.start, kk, sa[r - 2]), line(c, c.start, m, 1))
        } else if sb[r - 2] == 1 && sa[r - 2] == 1 {
            (Reads::Dots, matrix(b, m, kk, sb[r - 1]), line(a, a.start, kk, 1), line(c, c.start, m, sc[r - 2]))
        } else {
            return None;
        };
        Some(MatrixVector { reads, matrix: mat, x, c: out })
    }
}

impl MatrixVector {
    /// True when `other` reads the same matrix (the same elements, laid out the same way).
    pub fn same_matrix(&self, other: &MatrixVector) -> bool {
        self.matrix == other.matrix
    }
}

/// Rows of a group's matrix per pass of its products, at most: a block of rows that the
/// second-level cache holds while every product of the group reads it.
const GROUP_BLOCK_BYTES: usize = 256 << 10;

/// Runs matrix-vector products that read the same matrix (checked by the caller with
/// [`MatrixVector::same_matrix`]; none writes what another reads) in one pass over it: the
/// matrix is cut into the parts [`vector_times_matrix`] would cut it into, each part in blocks
/// of rows (a multiple of four) that every product reads in turn while they are in the cache.
/// Each product gets the bits it gets alone: dot products do not depend on the blocks, and a
/// part's partial row sums its rows in the same groups of four, in order.
pub fn run_matrix_vector_group(
    group: &[MatrixVector],
    mem: &mut HostMemory,
    pool: &Pool,
    min_parallel: usize,
) -> Result<()> {
    let Some(first) = group.first() else { return Ok(()) };
    match first.matrix.dtype() {
        DType::F64 => group_of::<f64>(group, mem, pool, min_parallel),
        _ => group_of::<f32>(group, mem, pool, min_parallel),
    }
}

fn group_of<T: Real>(group: &[MatrixVector], mem: &mut HostMemory, pool: &Pool, min_parallel: usize) -> Result<()> {
    let size = std::mem::size_of::<T>();
    let address = |mem: &mut HostMemory, v: &View| -> Result<isize> {
        let buf = views::buffer(mem, v)?;
        Ok(buf.as_mut_ptr() as isize + v.start as isize * size as isize)
    };
    let m0 = &group[0].matrix;
    let (rows, cols, row_stride) = (m0.shape[0], m0.shape[1], m0.stride[0] as isize);
    let matrix = address(mem, m0)?;
    let mut ends = Vec::with_capacity(group.len());
    for p in group {
        ends.push((address(mem, &p.x)?, p.x.stride[0] as isize, address(mem, &p.c)?, p.c.stride[0] as isize));
    }
    // The parts of `vector_times_matrix`, and each streamed product's partial rows.
    let parts = ((rows * cols) >> 16).clamp(1, PARTS).min(rows);
    let per_part = rows.div_ceil(parts);
    let mut partials: Vec<Vec<T>> = Vec::new();
    for p in group.iter().filter(|p| p.reads == Reads::Rows) {
        let mut partial = try_vec(parts * cols, p.c.base.id, "the partial rows of a vector-matrix product into")?;
        partial.resize(parts * cols, T::default());
        partials.push(partial);
    }
    let slots: Vec<std::sync::Mutex<Vec<&mut [T]>>> =
        (0..parts).map(|_| std::sync::Mutex::new(Vec::with_capacity(partials.len()))).collect();
    for partial in partials.iter_mut() {
        for (slot, row) in slots.iter().zip(partial.chunks_mut(cols)) {
            slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(row);
        }
    }
    let block = (GROUP_BLOCK_BYTES / (cols * size).max(1)).max(4) / 4 * 4;
    let task = |t: usize| {
        let mut rows_out = slots[t].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (p0, p1) = (t * per_part, ((t + 1) * per_part).min(rows));
        let mut q0 = p0;
        while q0 < p1 {
            let q1 = (q0 + block).min(p1);
            let at = |q: usize| (matrix + q as isize * row_stride * size as isize) as *const T;
            let mut streamed = 0;
            for (p, &(x, xs, c, cs)) in group.iter().zip(&ends) {
                // SAFETY: the views were checked to lie inside their buffers: rows `q0..q1` of
                // the matrix, the vector's elements and the output's; each part writes its own
                // partial rows and its own rows' dot products, which nothing reads meanwhile.
                unsafe {
                    match p.reads {
                        Reads::Dots => dots::widest(Dots {
                            a: at(q0),
                            rsa: row_stride,
                            x: x as *const T,
                            c: (c + q0 as isize * cs * size as isize) as *mut T,
                            rsc: cs,
                            n: q1 - q0,
                            k: cols,
                        }),
                        Reads::Rows => {
                            stream::widest(Stream {
                                a: (x + q0 as isize * xs * size as isize) as *const T,
                                rsa: 0,
                                csa: xs,
                                b: at(q0),
                                rsb: row_stride,
                                c: rows_out[streamed].as_mut_ptr(),
                                rsc: 0,
                                n: 1,
                                k: q1 - q0,
                                width: cols,
                                accumulate: true,
                            });
                            streamed += 1;
                        }
                    }
                }
            }
            q0 = q1;
        }
    };
    let work = (rows * cols).saturating_mul(group.len());
    let tasks = Tasks { pool, interrupt: mem.interrupt(), here: work <= min_parallel };
    tasks.run(parts, &task)?;
    drop(slots);
    // Each streamed product's partial rows added in order of the parts, as alone.
    let streamed_outputs = group.iter().zip(&ends).filter(|(p, _)| p.reads == Reads::Rows).map(|(_, end)| end.2);
    for (c, partial) in streamed_outputs.zip(&partials) {
        // SAFETY: `c` is a checked contiguous view of `cols` elements, which nothing else
        // touches now.
        let c = unsafe { std::slice::from_raw_parts_mut(c as *mut T, cols) };
        c.copy_from_slice(&partial[..cols]);
        for part in partial.chunks(cols).skip(1) {
            for (o, &x) in c.iter_mut().zip(part) {
                *o = *o + x;
            }
        }
    }
    Ok(())
}

/// `c = a @ b` by the `gemm` crate on one thread, for `[n, m, k]` (rows of `c`, its columns, the
/// summed extent); each operand as its address and its row and column strides in elements;
/// `(alpha, beta)` are `gemm`'s factors (`c = alpha * c + beta * a @ b`, `c` not read).
///
/// # Safety
/// Every element the strides reach from each address (`n x k` of `a`, `k x m` of `b`, `n x m`
/// of `c`) lies in a live allocation of `T`s; `c`'s elements are distinct and nothing else
/// reads or writes them meanwhile.
unsafe fn gemm_rows<T: 'static>(
    [n, m, k]: [usize; 3],
    (c, rsc, csc): (isize, isize, isize),
    (a, rsa, csa): (isize, isize, isize),
    (b, rsb, csb): (isize, isize, isize),
    (alpha, beta): (T, T),
) {
    // SAFETY: the caller's contract is `gemm`'s.
    unsafe {
        gemm::gemm::<T>(
            n,
            m,
            k,
            c as *mut T,
            csc,
            rsc,
            false,
            a as *const T,
            csa,
            rsa,
            b as *const T,
            csb,
            rsb,
            alpha,
            beta,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// The most rows of `c` per task of GEMM on one product of `k`-long rows and `m` columns: about
/// [`BLOCK_FLOPS`] of work between looks at the interrupt, and never fewer than [`ROWS`] (each
/// task packs `b` anew).
fn block_rows(k: usize, m: usize) -> usize {
    let per_row = 2u64.saturating_mul(k as u64).saturating_mul(m as u64).max(1);
    usize::try_from(BLOCK_FLOPS / per_row).unwrap_or(usize::MAX).max(ROWS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GEMM's blocks of rows hold about `BLOCK_FLOPS` of work, never fewer than `ROWS` rows,
    /// whatever the sizes (no overflow, no zero).
    #[test]
    fn blocks_of_rows_are_bounded_in_work_and_never_small() {
        assert_eq!(block_rows(1000, 1000), (BLOCK_FLOPS / 2_000_000) as usize);
        assert_eq!(block_rows(100_000, 100_000), ROWS);
        assert_eq!(block_rows(0, 0), BLOCK_FLOPS as usize);
        assert_eq!(block_rows(usize::MAX, usize::MAX), ROWS);
        for (k, m) in [(3, 5), (64, 64), (777, 12_345)] {
            let rows = block_rows(k, m);
            assert!(
                rows >= ROWS
                    && (rows as u64 - 1) * 2 * (k * m) as u64 <= BLOCK_FLOPS.max(2 * (k * m) as u64 * ROWS as u64)
            );
        }
    }

    /// Dot products by rows (four a pass, then the rest) at every compiled width give the
    /// bits of eight running sums combined pairwise, then the tail in order.
    #[test]
    fn dot_products_by_rows_give_the_same_bits_at_every_vector_width() {
        let (n, k) = (7, 29);
        let a: Vec<f64> = (0..n * k).map(|i| ((i * 7919) % 101) as f64 / 7.0 - 6.0).collect();
        let x: Vec<f64> = (0..k).map(|i| ((i * 104_729) % 97) as f64 / 3.0 - 15.0).collect();
        let run = |variant: unsafe fn(Dots<f64>)| {
            let mut c = vec![f64::NAN; 2 * n];
            let s = Dots { a: a.as_ptr(), rsa: k as isize, x: x.as_ptr(), c: c.as_mut_ptr(), rsc: 2, n, k };
            // SAFETY: as in the test above; `c` holds every other element.
            unsafe { variant(s) };
            c
        };
        let scalar = run(dot_rows::<f64>);
        for i in 0..n {
            let mut sums = [0.0f64; 8];
            for p in 0..k - k % 8 {
                sums[p % 8] += a[i * k + p] * x[p];
            }
            let mut want = (sums[0] + sums[4]) + (sums[1] + sums[5]) + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
            for p in k - k % 8..k {
                want += a[i * k + p] * x[p];
            }
            assert_eq!(scalar[2 * i].to_bits(), want.to_bits(), "row {i}");
            assert!(scalar[2 * i + 1].is_nan(), "only every other element of c is written");
        }
        #[cfg(target_arch = "x86_64")]
        {
            let same = |got: Vec<f64>| got.iter().zip(&scalar).all(|(g, s)| g.to_bits() == s.to_bits());
            if crate::routines::wide::vector_bits() >= 256 {
                assert!(same(run(dots::avx2::<f64>)), "AVX2");
            }
            if crate::routines::wide::vector_bits() == 512 {
                assert!(same(run(dots::avx512::<f64>)), "AVX-512");
            }
        }
    }

    /// Every compiled width of the streamed product this CPU can run gives the bits of the
    /// 128-bit code: the vectors only split the columns, each sum keeps its order.
    #[test]
    fn streamed_products_give_the_same_bits_at_every_vector_width() {
        let (n, k, m) = (5, 23, 77);
        let a: Vec<f64> = (0..n * k).map(|i| ((i * 7919) % 101) as f64 / 7.0 - 6.0).collect();
        let b: Vec<f64> = (0..k * m).map(|i| ((i * 104_729) % 97) as f64 / 3.0 - 15.0).collect();
        let run = |variant: unsafe fn(Stream<f64>)| {
            let mut c = vec![f64::NAN; n * m];
            let s = Stream {
                a: a.as_ptr(),
                rsa: k as isize,
                csa: 1,
                b: b.as_ptr(),
                rsb: m as isize,
                c: c.as_mut_ptr(),
                rsc: m as isize,
                n,
                k,
                width: m,
                accumulate: false,
            };
            // SAFETY: the stream describes the three vectors above, which outlive the call;
            // the variants run are those this CPU has the features of.
            unsafe { variant(s) };
            c
        };
        let scalar = run(stream_block::<f64>);
        let want: Vec<f64> =
            (0..n * m).map(|e| (0..k).fold(0.0, |sum, p| sum + a[(e / m) * k + p] * b[p * m + e % m])).collect();
        assert_eq!(scalar, want, "each element sums its products in order");
        #[cfg(target_arch = "x86_64")]
        {
            if crate::routines::wide::vector_bits() >= 256 {
                assert_eq!(run(stream::avx2::<f64>), scalar, "AVX2");
            }
            if crate::routines::wide::vector_bits() == 512 {
                assert_eq!(run(stream::avx512::<f64>), scalar, "AVX-512");
            }
        }
    }
}
