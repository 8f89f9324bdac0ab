//! Reductions and scans along one axis of a view of any layout. The input is read in place, in
//! row-major order, and folded into a result of the output's size: a reduction of a broadcast
//! view costs no memory beyond its result, however many elements it visits.
//!
//! Order of combination: along the axis, left to right, starting from the first element
//! (`((x0 op x1) op x2) ...`), as NumPy does for a non-empty reduction without an `initial`
//! (so the sum of `[-0.0]` is `-0.0`). An empty axis gives the opcode's identity. NumPy sums
//! floats pairwise, so float sums of NumPy and of this engine may differ in rounding. Sums stay
//! in the element dtype, so that a distributed run (the cluster over `interp`) reproduces them
//! bit for bit; a float32 sum of millions of elements is then far less accurate than NumPy's
//! (it stops growing at 2^24 ones), where the cpu engine accumulates float32 sums in float64. The
//! reductions to a position (`argmin_reduce`, `argmax_reduce`) walk each line from its start
//! too, keeping the best value so far and its position.

use crate::elem::{Elem, to_bool_binary, truth};
use crate::elementwise::{expect_operands, not_defined, output};
use crate::iterate::{data, elements, gather_rows, prepare_overwriting, room, write_view};
use std::borrow::Cow;
use vm_ir::{AccumulateOp, DType, Error, Instruction, Opcode, ReduceOp, Result, TypeRule, View, semantics, with_dtype};
use vm_runtime::memory::try_vec;
use vm_runtime::{HostMemory, Interrupt};

/// The shape split at `axis`: (product of the dims before, the axis' extent, product after).
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// For the row-major positions of an array of `shape`, in order: the position in the result
/// of a reduction along `axis` (row-major in `shape` without `axis`) and the position along
/// `axis`. Values arrive in row-major order (o, k, i); the result position is o * inner + i.
fn along_axis(shape: &[usize], axis: usize) -> AlongAxis {
    let (outer, len, inner) = split(shape, axis);
    AlongAxis { outer: if len == 0 || inner == 0 { 0 } else { outer }, len, inner, o: 0, k: 0, i: 0 }
}

/// The iterator of [`along_axis`]: an odometer over (o, k, i). (Written out rather than as
/// nested `flat_map`s, whose optimised code valgrind reports as branching on uninitialised
/// memory.)
struct AlongAxis {
    outer: usize,
    len: usize,
    inner: usize,
    o: usize,
    k: usize,
    i: usize,
}

impl Iterator for AlongAxis {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        if self.o >= self.outer {
            return None;
        }
        let item = (self.o * self.inner + self.i, self.k);
        self.i += 1;
        if self.i == self.inner {
            self.i = 0;
            self.k += 1;
            if self.k == self.len {
                self.k = 0;
                self.o += 1;
            }
        }
        Some(item)
    }
}

/// Reduces the row-major `values` of an array of `shape` along `axis` with `f`; `identity` for
/// an empty axis. The result, row-major in `shape` without `axis`, is built in `acc` (emptied
/// first), which must have room for it: the caller allocates it fallibly.
pub fn reduce_axis<T: Copy>(
    values: impl Iterator<Item = T>,
    shape: &[usize],
    axis: usize,
    identity: T,
    f: fn(T, T) -> T,
    mut acc: Vec<T>,
) -> Vec<T> {
    let (outer, _, inner) = split(shape, axis);
    debug_assert!(acc.capacity() >= outer * inner, "reduce_axis needs room for its result");
    acc.clear();
    acc.resize(outer * inner, identity);
    for (v, (at, k)) in values.zip(along_axis(shape, axis)) {
        let r = &mut acc[at];
        *r = if k == 0 { v } else { f(*r, v) };
    }
    acc
}

/// [`reduce_axis`] of an input whose elements are the contiguous `run` (row-major, as many as
/// `shape` holds): the same combinations in the same order, over slices (each result a fold
/// along its line, or whole rows combined element by element when the axis is not the last),
/// with `f` inlined where the caller passes a closure. The flush's interrupt is looked at
/// after every [`POLL_EVERY`](crate::iterate::POLL_EVERY) elements or so.
pub fn reduce_run<T: Copy>(
    run: &[T],
    shape: &[usize],
    axis: usize,
    identity: T,
    f: impl Fn(T, T) -> T,
    acc: Vec<T>,
    interrupt: &Interrupt,
) -> Result<Vec<T>> {
    reduce_run_folding(
        run,
        shape,
        axis,
        identity,
        &f,
        |total, piece| piece.iter().fold(total, |s, &x| f(s, x)),
        acc,
        interrupt,
    )
}

/// [`reduce_run`] with `fold_line(total, piece)`, the fold of `piece` by `f` from `total`, for
/// the lines along a last axis (computed another way than element after element where that is
/// faster: [`fold_extreme`]).
#[expect(clippy::too_many_arguments, reason = "reduce_run's, and the line fold")]
fn reduce_run_folding<T: Copy>(
    run: &[T],
    shape: &[usize],
    axis: usize,
    identity: T,
    f: &impl Fn(T, T) -> T,
    fold_line: impl Fn(T, &[T]) -> T,
    mut acc: Vec<T>,
    interrupt: &Interrupt,
) -> Result<Vec<T>> {
    let (outer, len, inner) = split(shape, axis);
    debug_assert!(acc.capacity() >= outer * inner, "reduce_run needs room for its result");
    acc.clear();
    if len == 0 || outer * inner == 0 {
        acc.resize(outer * inner, identity);
        return Ok(acc);
    }
    let mut since_poll = 0;
    for block in run.chunks_exact(len * inner).take(outer) {
        if inner == 1 {
            let mut total = block[0];
            for piece in block[1..].chunks(crate::iterate::POLL_EVERY) {
                total = fold_line(total, piece);
                interrupt.check()?;
            }
            acc.push(total);
            continue;
        }
        let start = acc.len();
        acc.extend_from_slice(&block[..inner]);
        let out = &mut acc[start..];
        for row in block[inner..].chunks_exact(inner) {
            out.iter_mut().zip(row).for_each(|(o, &x)| *o = f(*o, x));
            since_poll += inner;
            if since_poll >= crate::iterate::POLL_EVERY {
                since_poll = 0;
                interrupt.check()?;
            }
        }
    }
    Ok(acc)
}

/// For each line along `axis` of the row-major `values` of an array of `shape`, the first
/// position of its maximum (`max`) or minimum, NaN counting as the extreme
/// ([`semantics::arg_replaces`]): the result of `argmax_reduce` or `argmin_reduce`, row-major in
/// `shape` without `axis`, with each line's value there. Built in `best` (emptied first), which
/// must have room for it. The axis is not empty (validation refuses that).
pub fn position_axis<T: Copy + PartialOrd>(
    values: impl Iterator<Item = T>,
    shape: &[usize],
    axis: usize,
    max: bool,
    mut best: Vec<(T, i64)>,
) -> Vec<(T, i64)> {
    let (outer, _, inner) = split(shape, axis);
    debug_assert!(best.capacity() >= outer * inner, "position_axis needs room for its result");
    best.clear();
    for (v, (at, k)) in values.zip(along_axis(shape, axis)) {
        if k == 0 {
            best.push((v, 0));
        } else {
            let b = &mut best[at];
            if semantics::arg_replaces(max, b.0, v) {
                *b = (v, k as i64);
            }
        }
    }
    best
}

/// [`position_axis`] along the last axis of a contiguous `run`: each line of `len` values
/// (at least one) folded on its own, with the same choices.
pub fn position_lines<T: Copy + PartialOrd>(
    run: &[T],
    len: usize,
    max: bool,
    mut best: Vec<(T, i64)>,
) -> Vec<(T, i64)> {
    best.clear();
    for line in run.chunks_exact(len) {
        let mut b = (line[0], 0);
        for (k, &v) in line.iter().enumerate().skip(1) {
            if semantics::arg_replaces(max, b.0, v) {
                b = (v, k as i64);
            }
        }
        best.push(b);
    }
    best
}

/// The running reduction of the row-major `values` of an array of `shape` along `axis` with
/// `f` (same shape), built in `acc` (emptied first), which must have room for it.
pub fn accumulate_axis<T: Copy>(
    values: impl Iterator<Item = T>,
    shape: &[usize],
    axis: usize,
    f: fn(T, T) -> T,
    mut acc: Vec<T>,
) -> Vec<T> {
    let (_, len, inner) = split(shape, axis);
    debug_assert!(acc.capacity() >= shape.iter().product(), "accumulate_axis needs room for its result");
    acc.clear();
    // Values arrive in row-major order (o, k, i); the one before along the axis is `inner` back.
    let (mut k, mut i) = (0, 0);
    for v in values {
        let r = if k == 0 { v } else { f(acc[acc.len() - inner], v) };
        acc.push(r);
        i += 1;
        if i == inner {
            i = 0;
            k += 1;
            if k == len {
                k = 0;
            }
        }
    }
    acc
}

/// The reduced, scanned or sorted view (operand 1) and the axis (operand 2, checked against the
/// view).
pub(crate) fn input_and_axis(instr: &Instruction) -> Result<(&View, usize)> {
    expect_operands(instr, 3)?;
    let input = instr.operands[1].as_view().ok_or_else(|| {
        Error::invalid(Some(1), format!("{} takes a view along the axis, not a constant", instr.opcode))
    })?;
    let axis = instr.operands[2].as_const().map(|s| s.as_i64()).unwrap_or(-1);
    if axis < 0 || axis as usize >= input.ndim() {
        return Err(Error::invalid(Some(2), format!("axis {axis} out of range for a {}-d input", input.ndim())));
    }
    Ok((input, axis as usize))
}

/// A function combining two truth values.
type Logical = fn(bool, bool) -> bool;

/// The combining function and empty-axis identity of a logical reduction, on truth values.
fn logical(op: ReduceOp) -> Option<(Logical, bool)> {
    let identity = match op {
        ReduceOp::LogicalAndReduce => true,
        ReduceOp::LogicalOrReduce | ReduceOp::LogicalXorReduce => false,
        ReduceOp::AddReduce | ReduceOp::MultiplyReduce | ReduceOp::MinimumReduce | ReduceOp::MaximumReduce => {
            return None;
        }
        ReduceOp::BitwiseAndReduce | ReduceOp::BitwiseOrReduce | ReduceOp::BitwiseXorReduce => return None,
        ReduceOp::ArgminReduce | ReduceOp::ArgmaxReduce => return None,
    };
    Some((to_bool_binary::<bool>(op.combiner()?)?, identity))
}

/// The most elements [`input_run`] gathers (8 MiB of float64): a larger view is walked element
/// by element rather than copied whole.
const GATHER_LIMIT: usize = 1 << 20;

/// The elements of `input` in row-major order as one slice: its base's own where the view is
/// contiguous, else gathered row by row where its rows are runs (`A[1:-1, 1:-1]`: a copy per
/// row, then the reduction of a contiguous input, the same combinations in the same order as
/// element by element) and it is neither broadcast nor over [`GATHER_LIMIT`]; `None` for other
/// views.
fn input_run<'m, T: Elem>(mem: &'m HostMemory, input: &View) -> Result<Option<Cow<'m, [T]>>> {
    let data = data::<T>(mem, input)?;
    let n = input.nelem();
    if input.is_contiguous() {
        let start = input.start as usize;
        return Ok(Some(Cow::Borrowed(&data[start..start + n])));
    }
    // A broadcast view may visit far more elements than its base holds: gathered, they would
    // all be in memory at once.
    let broadcast = input.shape.iter().zip(&input.stride).any(|(&n, &s)| n > 1 && s == 0);
    if input.stride.last() != Some(&1) || broadcast || n > GATHER_LIMIT {
        return Ok(None);
    }
    let mut run = try_vec::<T>(n, input.base.id, "the gathered rows of a reduction's input")?;
    gather_rows(&mut run, input, data, mem.interrupt())?;
    Ok(Some(Cow::Owned(run)))
}

/// [`reduce_run`] of `run`, `input`'s elements ([`input_run`]), into a result for `out`.
fn reduce_contiguous<T: Elem>(
    mem: &HostMemory,
    (input, run): (&View, &[T]),
    out: &View,
    axis: usize,
    (op, reduction): (Opcode, ReduceOp),
    f: impl Fn(T, T) -> T,
) -> Result<Vec<T>> {
    let identity = T::reduce_identity(reduction).ok_or_else(|| not_defined(op, T::DTYPE))?;
    reduce_run(run, &input.shape, axis, identity, f, room(out, out.nelem())?, mem.interrupt())
}

/// [`reduce_contiguous`] of a float `maximum_reduce` (`max`) or `minimum_reduce`, its lines
/// folded by [`fold_extreme`].
fn reduce_contiguous_extreme<T: Elem + semantics::Float>(
    mem: &HostMemory,
    (input, run): (&View, &[T]),
    out: &View,
    axis: usize,
    (op, reduction): (Opcode, ReduceOp),
) -> Result<Vec<T>> {
    let max = reduction == ReduceOp::MaximumReduce;
    let identity = T::reduce_identity(reduction).ok_or_else(|| not_defined(op, T::DTYPE))?;
    let f = if max { semantics::float_maximum::<T> } else { semantics::float_minimum::<T> };
    let acc = room(out, out.nelem())?;
    reduce_run_folding(
        run,
        &input.shape,
        axis,
        identity,
        &f,
        |t, piece| fold_extreme(t, piece, max),
        acc,
        mem.interrupt(),
    )
}

/// Lanes of [`fold_extreme`]: independent running extremes the compiler keeps in vector
/// registers.
const EXTREME_LANES: usize = 8;

/// The fold of `piece` from `total` by NumPy's `maximum` (`max`) or `minimum`, element after
/// element ([`semantics::float_maximum`]), computed in [`EXTREME_LANES`] lanes instead of one
/// chain of dependent comparisons. That fold keeps the first NaN it meets; without one, it
/// keeps the last of the elements equal to the extreme (two equal floats differ only as `0.0`
/// and `-0.0`). Both are found again here: NaNs are looked for beside the lanes (the fold
/// itself then decides), and a zero extreme is the last zero.
pub fn fold_extreme<T: semantics::Float>(total: T, piece: &[T], max: bool) -> T {
    // One loop for each direction: a loop choosing between two comparisons per element
    // vectorises into mask conversions that cost more than the fold.
    if max { fold_extreme_in::<T, true>(total, piece) } else { fold_extreme_in::<T, false>(total, piece) }
}

fn fold_extreme_in<T: semantics::Float, const MAX: bool>(total: T, piece: &[T]) -> T {
    let better = |a: T, x: T| if MAX { a > x } else { a < x };
    if total.is_nan() || piece.is_empty() {
        return total;
    }
    let mut lanes = [total; EXTREME_LANES];
    // A NaN seen in a lane, kept as a float (a select of floats vectorises as cleanly as the
    // lanes; flags of bools became mask conversions costing more than the fold).
    let mut nan = [T::ZERO; EXTREME_LANES];
    let chunks = piece.chunks_exact(EXTREME_LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for k in 0..EXTREME_LANES {
            let x = chunk[k];
            nan[k] = if x.is_nan() { x } else { nan[k] };
            lanes[k] = if better(lanes[k], x) { lanes[k] } else { x };
        }
    }
    if nan.iter().any(|n| n.is_nan()) || rest.iter().any(|x| x.is_nan()) {
        let f = if MAX { semantics::float_maximum::<T> } else { semantics::float_minimum::<T> };
        return piece.iter().fold(total, |s, &x| f(s, x));
    }
    let extreme = rest.iter().fold(lanes.into_iter().fold(total, |a, x| if better(a, x) { a } else { x }), |a, &x| {
        if better(a, x) { a } else { x }
    });
    if extreme != T::ZERO {
        return extreme; // (a value no other bit pattern equals)
    }
    piece.iter().rev().copied().find(|&x| x == T::ZERO).unwrap_or(total)
}

/// Executes a [`vm_ir::Kind::Reduce`] instruction.
pub fn reduce(instr: &Instruction, reduction: ReduceOp, mem: &mut HostMemory) -> Result<()> {
    let op = instr.opcode;
    let (input, axis) = input_and_axis(instr)?;
    let out = output(instr)?;
    let dt = input.dtype();
    prepare_overwriting(mem, instr)?;
    match op.type_rule() {
        TypeRule::Same(_) => {
            // Sums, products and extremes of floats, most reductions of a NumPy program, inlined.
            macro_rules! inlined {
                ($t:ty, $f:expr) => {{
                    if let Some(run) = input_run::<$t>(mem, input)? {
                        let r = reduce_contiguous::<$t>(mem, (input, &run), out, axis, (op, reduction), $f)?;
                        drop(run);
                        return write_view(mem, out, r);
                    }
                }};
            }
            macro_rules! extreme {
                ($t:ty) => {{
                    if let Some(run) = input_run::<$t>(mem, input)? {
                        let r = reduce_contiguous_extreme::<$t>(mem, (input, &run), out, axis, (op, reduction))?;
                        drop(run);
                        return write_view(mem, out, r);
                    }
                }};
            }
            match (reduction, dt) {
                (ReduceOp::AddReduce, DType::F64) => inlined!(f64, |a, b| a + b),
                (ReduceOp::AddReduce, DType::F32) => inlined!(f32, |a, b| a + b),
                (ReduceOp::MultiplyReduce, DType::F64) => inlined!(f64, |a, b| a * b),
                (ReduceOp::MultiplyReduce, DType::F32) => inlined!(f32, |a, b| a * b),
                (ReduceOp::MaximumReduce | ReduceOp::MinimumReduce, DType::F64) => extreme!(f64),
                (ReduceOp::MaximumReduce | ReduceOp::MinimumReduce, DType::F32) => extreme!(f32),
                _ => {}
            }
            with_dtype!(dt, T => {
                let f = reduction.combiner().and_then(T::binary).ok_or_else(|| not_defined(op, dt))?;
                let r = if let Some(run) = input_run::<T>(mem, input)? {
                    reduce_contiguous::<T>(mem, (input, &run), out, axis, (op, reduction), f)?
                } else {
                    let identity = T::reduce_identity(reduction).ok_or_else(|| not_defined(op, dt))?;
                    let values = elements::<T>(mem, input)?;
                    reduce_axis(values, &input.shape, axis, identity, f, room(out, out.nelem())?)
                };
                write_view(mem, out, r)
            })
        }
        TypeRule::ToBool(_) if dt == DType::Bool => {
            // `any` and `all` of a mask (`(A > 0.5).any()`): folds of its run with the logic
            // inlined.
            let (_, identity) = logical(reduction).ok_or_else(|| not_defined(op, dt))?;
            let Some(run) = input_run::<bool>(mem, input)? else {
                let values = elements::<bool>(mem, input)?;
                let (f, _) = logical(reduction).ok_or_else(|| not_defined(op, dt))?;
                let r = reduce_axis(values, &input.shape, axis, identity, f, room(out, out.nelem())?);
                return write_view(mem, out, r);
            };
            let (acc, interrupt, shape) = (room(out, out.nelem())?, mem.interrupt(), &input.shape);
            let r = match reduction {
                ReduceOp::LogicalAndReduce => reduce_run(&run, shape, axis, identity, |a, b| a & b, acc, interrupt)?,
                ReduceOp::LogicalOrReduce => reduce_run(&run, shape, axis, identity, |a, b| a | b, acc, interrupt)?,
                _ => reduce_run(&run, shape, axis, identity, |a, b| a ^ b, acc, interrupt)?,
            };
            drop(run);
            write_view(mem, out, r)
        }
        TypeRule::ToBool(_) => with_dtype!(dt, T => {
            let (f, identity) = logical(reduction).ok_or_else(|| not_defined(op, dt))?;
            let acc = room(out, out.nelem())?;
            let r = match input_run::<T>(mem, input)? {
                Some(run) => reduce_axis(run.iter().copied().map(truth), &input.shape, axis, identity, f, acc),
                None => reduce_axis(elements::<T>(mem, input)?.map(truth), &input.shape, axis, identity, f, acc),
            };
            write_view(mem, out, r)
        }),
        TypeRule::ToPosition(_) => with_dtype!(dt, T => {
            let max = reduction == ReduceOp::ArgmaxReduce;
            let acc = room(out, out.nelem())?;
            let best = match input_run::<T>(mem, input)? {
                Some(run) if axis + 1 == input.ndim() && input.shape[axis] > 0 => {
                    position_lines(&run, input.shape[axis], max, acc)
                }
                Some(run) => position_axis(run.iter().copied(), &input.shape, axis, max, acc),
                None => position_axis(elements::<T>(mem, input)?, &input.shape, axis, max, acc),
            };
            write_view(mem, out, best.into_iter().map(|(_, k)| k))
        }),
        rule => Err(Error::Internal(format!("reduction {op} with type rule {rule:?}"))),
    }
}

/// Executes a [`vm_ir::Kind::Accumulate`] instruction.
pub fn accumulate(instr: &Instruction, scan: AccumulateOp, mem: &mut HostMemory) -> Result<()> {
    let op = instr.opcode;
    let (input, axis) = input_and_axis(instr)?;
    let out = output(instr)?;
    let dt = input.dtype();
    prepare_overwriting(mem, instr)?;
    with_dtype!(dt, T => {
        let f = T::binary(scan.combiner()).ok_or_else(|| not_defined(op, dt))?;
        let acc = room(out, input.nelem())?;
        let r = match input_run::<T>(mem, input)? {
            Some(run) => accumulate_axis(run.iter().copied(), &input.shape, axis, f, acc),
            None => accumulate_axis(elements::<T>(mem, input)?, &input.shape, axis, f, acc),
        };
        write_view(mem, out, r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_and_accumulate_each_axis_of_a_small_block() {
        // shape [2, 3], row-major [[1, 2, 3], [4, 5, 6]]
        let data = [1i32, 2, 3, 4, 5, 6];
        let add: fn(i32, i32) -> i32 = |a, b| a + b;
        let red = |data: &[i32], shape: &[usize], axis| {
            reduce_axis(data.iter().copied(), shape, axis, 7, add, Vec::with_capacity(16))
        };
        let acc =
            |shape: &[usize], axis| accumulate_axis(data.iter().copied(), shape, axis, add, Vec::with_capacity(16));
        assert_eq!(red(&data, &[2, 3], 0), vec![5, 7, 9]);
        assert_eq!(red(&data, &[2, 3], 1), vec![6, 15]);
        assert_eq!(red(&data, &[3, 1, 2], 1), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(red(&data, &[1, 2, 3], 2), vec![6, 15]);
        assert_eq!(acc(&[2, 3], 0), vec![1, 2, 3, 5, 7, 9]);
        assert_eq!(acc(&[2, 3], 1), vec![1, 3, 6, 4, 9, 15]);
        assert_eq!(acc(&[1, 2, 3], 1), vec![1, 2, 3, 5, 7, 9]);
        assert_eq!(red(&[], &[3, 0], 1), vec![7, 7, 7]);
        assert_eq!(red(&[], &[0, 3], 1), Vec::<i32>::new());
        assert_eq!(red(&[], &[2, 0, 2], 1), vec![7; 4]);
    }

    /// The slice walk of a contiguous input combines the same values in the same order as the
    /// general one (checked with a combination that is neither commutative nor associative).
    #[test]
    fn contiguous_reductions_combine_as_the_general_walk() {
        let order: fn(i64, i64) -> i64 = |a, b| a.wrapping_mul(3).wrapping_add(b);
        let interrupt = Interrupt::default();
        for shape in [&[2, 3][..], &[3, 1, 2], &[1, 2, 3], &[4, 5, 6], &[3, 0], &[0, 3], &[2, 0, 2], &[7], &[0]] {
            let n: usize = shape.iter().product();
            let data: Vec<i64> = (0..n as i64).map(|x| x * x - 5).collect();
            for axis in 0..shape.len() {
                let room = || Vec::with_capacity(n.max(16));
                let want = reduce_axis(data.iter().copied(), shape, axis, 7, order, room());
                let got = reduce_run(&data, shape, axis, 7, order, room(), &interrupt).unwrap();
                assert_eq!(got, want, "{shape:?} along {axis}");
            }
        }
    }

    /// A view whose rows are runs is gathered into its elements in row-major order; a
    /// contiguous one is read where it lies; others are left to the element walk.
    #[test]
    fn inputs_are_gathered_row_by_row_where_rows_are_runs() {
        use vm_ir::{Base, BaseId};
        let base = Base { id: BaseId(1), dtype: DType::F64, nelem: 64 };
        let mut mem = HostMemory::new();
        let buf = mem.ensure(&base).unwrap().as_mut_slice::<f64>();
        buf.iter_mut().enumerate().for_each(|(k, x)| *x = k as f64 * 0.5 - 3.0);
        let gathered = [
            View::new(base, 2, &[3, 4], &[6, 1]).unwrap(),
            View::new(base, 40, &[2, 3, 5], &[-20, 6, 1]).unwrap(),
            View::new(base, 7, &[2, 1, 3], &[30, 0, 1]).unwrap(),
        ];
        for v in &gathered {
            let want: Vec<f64> = elements::<f64>(&mem, v).unwrap().collect();
            let got = input_run::<f64>(&mem, v).unwrap().expect("rows that are runs");
            assert!(matches!(got, Cow::Owned(_)), "{v}");
            assert_eq!(&got[..], &want[..], "{v}");
        }
        let whole = View::new(base, 4, &[5, 6], &[6, 1]).unwrap();
        let got = input_run::<f64>(&mem, &whole).unwrap().unwrap();
        assert!(matches!(got, Cow::Borrowed(_)));
        assert_eq!(&got[..], &elements::<f64>(&mem, &whole).unwrap().collect::<Vec<_>>()[..]);
        // Rows apart, a broadcast (its elements could outnumber its base's many times over).
        for v in [View::new(base, 0, &[4, 3], &[8, 2]).unwrap(), View::new(base, 1, &[3, 2, 4], &[0, 9, 1]).unwrap()] {
            assert!(input_run::<f64>(&mem, &v).unwrap().is_none(), "{v}");
        }
    }

    #[test]
    fn positions_along_each_axis_of_a_small_block() {
        // shape [2, 3], row-major [[1, 5, 5], [NaN, 0, NaN]]
        let nan = f64::NAN;
        let data = [1.0, 5.0, 5.0, nan, 0.0, nan];
        let pos = |shape: &[usize], axis, max| -> Vec<i64> {
            let best = position_axis(data.iter().copied(), shape, axis, max, Vec::with_capacity(8));
            best.into_iter().map(|(_, k)| k).collect()
        };
        assert_eq!(pos(&[2, 3], 1, true), vec![1, 0]);
        assert_eq!(pos(&[2, 3], 1, false), vec![0, 0]);
        assert_eq!(pos(&[2, 3], 0, true), vec![1, 0, 1]);
        assert_eq!(pos(&[2, 3], 0, false), vec![1, 1, 1]);
        assert_eq!(pos(&[6], 0, false), vec![3]);
        assert_eq!(pos(&[3, 1, 2], 1, true), vec![0; 6]);
    }

    /// Positions along the last axis, line by line, are those of the general walk (NaNs, ties).
    #[test]
    fn positions_of_lines_are_the_general_walks() {
        let nan = f64::NAN;
        let data = [3.0, nan, 1.0, 3.0, -0.0, 0.0, 7.0, 7.0, 2.0, nan, nan, 5.0];
        for (shape, len) in [(&[3, 4][..], 4), (&[2, 6], 6), (&[12], 12), (&[12, 1], 1), (&[2, 2, 3], 3)] {
            for max in [true, false] {
                let axis = shape.len() - 1;
                let room = || Vec::with_capacity(16);
                let want = position_axis(data.iter().copied(), shape, axis, max, room());
                let got = position_lines(&data, len, max, room());
                let key = |b: &[(f64, i64)]| b.iter().map(|&(v, k)| (v.to_bits(), k)).collect::<Vec<_>>();
                assert_eq!(key(&got), key(&want), "{shape:?} max {max}");
            }
        }
    }

    /// The fold in lanes gives what the fold element after element gives, bit for bit: the
    /// first NaN (of its payload), and of equal extremes the last (`0.0` and `-0.0`), at every
    /// length around the lanes' width, from every kind of start.
    fn extremes_fold_as_one_chain<T: semantics::Float + std::fmt::Debug>(values: Vec<T>, bits: impl Fn(T) -> u64) {
        use proptest::prelude::*;
        let n = values.len();
        let pick = (0..n).prop_map(move |k| values[k]);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(2000));
        runner
            .run(&(pick.clone(), proptest::collection::vec(pick, 0..40)), |(total, piece)| {
                for max in [true, false] {
                    let f = if max { semantics::float_maximum::<T> } else { semantics::float_minimum::<T> };
                    let want = piece.iter().fold(total, |s, &x| f(s, x));
                    let got = fold_extreme(total, &piece, max);
                    prop_assert_eq!(bits(got), bits(want), "max {} from {:?} over {:?}", max, total, piece);
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn float_extremes_fold_in_lanes_as_in_one_chain() {
        let nan2 = f64::from_bits(f64::NAN.to_bits() ^ 1);
        let mut values = vec![0.0, -0.0, f64::NAN, nan2, f64::INFINITY, -f64::INFINITY];
        values.extend((-6..6).map(|k| f64::from(k) * 0.75));
        extremes_fold_as_one_chain(values.clone(), f64::to_bits);
        let values = values.into_iter().map(|x| x as f32).collect();
        extremes_fold_as_one_chain(values, |x: f32| u64::from(x.to_bits()));
    }
}
