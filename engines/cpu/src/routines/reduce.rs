//! Reductions outside the generated code: identities, the combination of per-block partials
//! (in block order, so the result does not depend on which thread ran which block), scans, and
//! reductions of nothing. The combiners match the generated code's (`emit::combine`).

use vm_ir::scalar::Cast;
use vm_ir::semantics;
use vm_ir::{DType, Error, Opcode, with_dtype};

/// Element types that reductions and scans combine.
pub trait Reducible: Copy + Send + Sync + 'static {
    /// The result of reducing nothing with `op` (a reduction opcode).
    fn identity(op: Opcode) -> Self;
    /// `a op b` for the combiner of reduction or scan `op`.
    fn combine(op: Opcode, a: Self, b: Self) -> Self;
}

macro_rules! int_reducible {
    ($($t:ty),*) => { $(
        impl Reducible for $t {
            fn identity(op: Opcode) -> $t {
                match op {
                    Opcode::MultiplyReduce | Opcode::MultiplyAccumulate => 1,
                    Opcode::MinimumReduce => <$t>::MAX,
                    Opcode::MaximumReduce => <$t>::MIN,
                    Opcode::BitwiseAndReduce => !0,
                    _ => 0,
                }
            }
            #[inline(always)]
            fn combine(op: Opcode, a: $t, b: $t) -> $t {
                match op {
                    Opcode::AddReduce | Opcode::AddAccumulate => a.wrapping_add(b),
                    Opcode::MultiplyReduce | Opcode::MultiplyAccumulate => a.wrapping_mul(b),
                    Opcode::MinimumReduce => a.min(b),
                    Opcode::MaximumReduce => a.max(b),
                    Opcode::BitwiseAndReduce => a & b,
                    Opcode::BitwiseOrReduce => a | b,
                    _ => a ^ b,
                }
            }
        }
    )* };
}
int_reducible!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_reducible {
    ($($t:ty),*) => { $(
        impl Reducible for $t {
            fn identity(op: Opcode) -> $t {
                match op {
                    Opcode::MultiplyReduce | Opcode::MultiplyAccumulate => 1.0,
                    Opcode::MinimumReduce => <$t>::INFINITY,
                    Opcode::MaximumReduce => <$t>::NEG_INFINITY,
                    _ => 0.0,
                }
            }
            #[inline(always)]
            fn combine(op: Opcode, a: $t, b: $t) -> $t {
                match op {
                    Opcode::AddReduce | Opcode::AddAccumulate => a + b,
                    Opcode::MultiplyReduce | Opcode::MultiplyAccumulate => a * b,
                    Opcode::MinimumReduce => semantics::float_minimum(a, b),
                    _ => semantics::float_maximum(a, b),
                }
            }
        }
    )* };
}
float_reducible!(f32, f64);

impl Reducible for bool {
    fn identity(op: Opcode) -> bool {
        matches!(op, Opcode::LogicalAndReduce | Opcode::BitwiseAndReduce)
    }
    #[inline(always)]
    fn combine(op: Opcode, a: bool, b: bool) -> bool {
        match op {
            Opcode::LogicalAndReduce | Opcode::BitwiseAndReduce => a & b,
            Opcode::LogicalOrReduce | Opcode::BitwiseOrReduce => a | b,
            _ => a ^ b,
        }
    }
}

/// Fills `buf` (elements of `dtype`) with the identity of `op`.
pub fn fill_identity(op: Opcode, dtype: DType, buf: &mut [u8]) {
    with_dtype!(dtype, T => {
        let id = T::identity(op);
        for chunk in buf.chunks_exact_mut(std::mem::size_of::<T>()) {
            // SAFETY: chunk holds exactly one T; unaligned write.
            unsafe { chunk.as_mut_ptr().cast::<T>().write_unaligned(id) };
        }
    })
}

/// Folds `part` into `acc` element by element (`acc[i] = acc[i] op part[i]`), both of `dtype`.
pub fn fold(op: Opcode, dtype: DType, acc: &mut [u8], part: &[u8]) {
    with_dtype!(dtype, T => {
        let n = std::mem::size_of::<T>();
        for (a, p) in acc.chunks_exact_mut(n).zip(part.chunks_exact(n)) {
            // SAFETY: each chunk holds exactly one T; unaligned reads and writes.
            unsafe {
                let x = a.as_ptr().cast::<T>().read_unaligned();
                let y = p.as_ptr().cast::<T>().read_unaligned();
                a.as_mut_ptr().cast::<T>().write_unaligned(T::combine(op, x, y));
            }
        }
    })
}

/// A running reduction along `axis` of row-major `data` of `shape` (scan), in place.
pub fn scan<T: Reducible>(op: Opcode, data: &mut [T], shape: &[usize], axis: usize) {
    // The opcode matched once, not per element: each arm is a loop of its own combiner.
    match op {
        Opcode::AddAccumulate => scan_with(data, shape, axis, |a, b| T::combine(Opcode::AddAccumulate, a, b)),
        Opcode::MultiplyAccumulate => scan_with(data, shape, axis, |a, b| T::combine(Opcode::MultiplyAccumulate, a, b)),
        _ => scan_with(data, shape, axis, |a, b| T::combine(op, a, b)),
    }
}

/// [`scan`] of row-major `src` into `dst` (both of `shape`'s size, apart in memory).
pub fn scan_into<T: Reducible>(op: Opcode, src: &[T], dst: &mut [T], shape: &[usize], axis: usize) {
    match op {
        Opcode::AddAccumulate => scan_into_with(src, dst, shape, axis, |a, b| T::combine(Opcode::AddAccumulate, a, b)),
        Opcode::MultiplyAccumulate => {
            scan_into_with(src, dst, shape, axis, |a, b| T::combine(Opcode::MultiplyAccumulate, a, b))
        }
        _ => scan_into_with(src, dst, shape, axis, |a, b| T::combine(op, a, b)),
    }
}

#[inline(always)]
fn scan_with<T: Copy>(data: &mut [T], shape: &[usize], axis: usize, combine: impl Fn(T, T) -> T) {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    if len == 0 || inner == 0 {
        return;
    }
    for line in data.chunks_exact_mut(len * inner) {
        for k in 1..len {
            let (done, rest) = line.split_at_mut(k * inner);
            for (x, &p) in rest[..inner].iter_mut().zip(&done[(k - 1) * inner..]) {
                *x = combine(p, *x);
            }
        }
    }
}

#[inline(always)]
fn scan_into_with<T: Copy>(src: &[T], dst: &mut [T], shape: &[usize], axis: usize, combine: impl Fn(T, T) -> T) {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    if len == 0 || inner == 0 {
        return;
    }
    for (from, to) in src.chunks_exact(len * inner).zip(dst.chunks_exact_mut(len * inner)) {
        if inner == 1 {
            // One running value along each line.
            let mut run = from[0];
            to[0] = run;
            for (t, &x) in to[1..].iter_mut().zip(&from[1..]) {
                run = combine(run, x);
                *t = run;
            }
            continue;
        }
        to[..inner].copy_from_slice(&from[..inner]);
        for k in 1..len {
            let (done, rest) = to.split_at_mut(k * inner);
            let row = rest[..inner].iter_mut().zip(&done[(k - 1) * inner..]).zip(&from[k * inner..]);
            for ((t, &p), &x) in row {
                *t = combine(p, x);
            }
        }
    }
}

/// The truth value of element type `T`, for logical reductions of non-bool inputs.
pub fn truth<T: Cast<bool>>(x: T) -> bool {
    x.cast()
}

/// The error for a reduction opcode that has no combiner.
pub fn no_combiner(op: Opcode) -> Error {
    Error::Internal(format!("{op} has no combiner"))
}
