//! The reductions to a position, `argmin_reduce` and `argmax_reduce`, in plain Rust on the pool.
//!
//! Kernels carry one value per reduction partial, not the (value, position) pair these need,
//! so they run alone ([`vm_fusion`] makes them single steps). The input is read in place.
//! Its lines along the axis are cut into tasks of about one block of elements each: groups of
//! whole lines when lines are short, pieces of one line when they are long. A task keeps the
//! best value and its position per line it sees ([`semantics::arg_replaces`], walking the axis
//! forwards), and the pieces of a line are combined with [`semantics::arg_combine`], which gives
//! exactly the walk's position whatever the cut: the result depends neither on the block size
//! nor on the number of threads.

use crate::routines::views;
use crate::run::exec::ExecConfig;
use crate::run::pool::Pool;
use std::sync::{Mutex, PoisonError};
use vm_ir::{Error, Instruction, Opcode, Operand, Result, View, semantics, with_dtype};
use vm_runtime::HostMemory;
use vm_runtime::memory::{try_collect, try_vec};

/// The most tasks one instruction is cut into (as kernels are cut into at most this many
/// blocks): past it tasks grow, so that the bookkeeping stays small for any broadcast input.
const MAX_TASKS: usize = 1 << 20;

/// How the lines are cut into tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cut {
    /// Lines (output elements) per task; 1 when lines are cut into pieces.
    lines: usize,
    /// Pieces per line.
    pieces: usize,
}

impl Cut {
    /// The cut of `m` lines of `len` elements (`len > 0`) into tasks of about `block` elements.
    fn new(m: usize, len: usize, block: usize) -> Cut {
        let block = block.max(1);
        if len > block && m < MAX_TASKS {
            let pieces = len.div_ceil(block).min((MAX_TASKS / m.max(1)).max(1));
            return Cut { lines: 1, pieces };
        }
        let lines = (block / len).max(1).max(m.div_ceil(MAX_TASKS));
        Cut { lines, pieces: 1 }
    }

    /// Number of tasks for `m` lines.
    fn tasks(self, m: usize) -> usize {
        m.div_ceil(self.lines) * self.pieces
    }

    /// The positions along the axis (of `len`) that piece `p` covers.
    fn piece(self, p: usize, len: usize) -> (usize, usize) {
        (p * len / self.pieces, (p + 1) * len / self.pieces)
    }
}

/// The element offset (into the base) where line `j` of `input` along `axis` starts, `j`
/// counting row-major over the other dimensions.
fn line_start(input: &View, axis: usize, mut j: usize) -> i64 {
    let mut off = input.start;
    for d in (0..input.ndim()).rev().filter(|&d| d != axis) {
        let n = input.shape[d];
        off += (j % n) as i64 * input.stride[d];
        j /= n;
    }
    off
}

/// True when walking each line along the axis reads memory in a better order than walking all
/// of a task's lines position by position: when the axis has the smallest stride.
fn line_major(input: &View, axis: usize) -> bool {
    let step = input.stride[axis].unsigned_abs();
    (0..input.ndim()).filter(|&d| d != axis && input.shape[d] > 1).all(|d| input.stride[d].unsigned_abs() >= step)
}

/// Executes `argmin_reduce` or `argmax_reduce` (a validated instruction: the axis is not
/// empty), running the tasks on `pool` unless the input is small.
pub fn execute(instr: &Instruction, mem: &mut HostMemory, pool: &Pool, config: &ExecConfig) -> Result<()> {
    let view = |i: usize| {
        instr.operands.get(i).and_then(Operand::as_view).ok_or_else(|| Error::invalid(Some(i), "expected a view"))
    };
    let (out, input) = (view(0)?, view(1)?);
    let axis = instr.axis().ok_or_else(|| Error::invalid(Some(2), "missing axis"))?;
    let max = match instr.opcode {
        Opcode::ArgmaxReduce => true,
        Opcode::ArgminReduce => false,
        op => return Err(Error::Internal(format!("{op} is not a reduction to a position"))),
    };
    let (len, m) = (input.shape[axis], out.nelem());
    if len == 0 {
        return Err(Error::Internal(format!("{}: an empty axis passed validation", instr.opcode)));
    }
    views::buffer(mem, out)?;
    views::buffer(mem, input)?;
    if m == 0 {
        return Ok(());
    }
    let cut = Cut::new(m, len, config.block);
    let positions = with_dtype!(input.dtype(), T => {
        let lines = Lines { data: views::data::<T>(mem, input)?, input, axis, max, by_line: line_major(input, axis) };
        let mut best: Vec<(T, i64)> = try_vec(m * cut.pieces, out.base.id, "the partial positions of")?;
        best.resize(m * cut.pieces, (lines.data[input.start as usize], 0));
        {
            let slots = try_collect(best.chunks_mut(cut.lines).map(Mutex::new), out.base.id, "the tasks of")?;
            let task = |t: usize| {
                let mut slot = slots[t].lock().unwrap_or_else(PoisonError::into_inner);
                if cut.pieces > 1 {
                    lines.fill(t / cut.pieces, cut.piece(t % cut.pieces, len), &mut slot);
                } else {
                    lines.fill(t * cut.lines, (0, len), &mut slot);
                }
            };
            let tasks = cut.tasks(m);
            if m * len <= config.min_parallel || pool.threads() == 1 || tasks == 1 {
                (0..tasks).for_each(&task);
            } else {
                pool.run(tasks, &task, mem.interrupt())?;
            }
        }
        let per_line = best.chunks(cut.pieces).map(|pieces| {
            pieces.iter().copied().reduce(|a, b| semantics::arg_combine(max, a, b)).map_or(0, |(_, k)| k)
        });
        try_collect(per_line, out.base.id, "the positions written to")?
    });
    views::write(mem, out, &positions)
}

/// The lines of one instruction's input along its axis.
struct Lines<'a, T> {
    data: &'a [T],
    input: &'a View,
    axis: usize,
    /// `argmax_reduce` (else `argmin_reduce`).
    max: bool,
    /// Walk line by line (see [`line_major`]), else position by position.
    by_line: bool,
}

impl<T: Copy + PartialOrd> Lines<'_, T> {
    /// Fills `slot[i]` with the best (value, position) of positions `lo..hi` of line `first + i`.
    fn fill(&self, first: usize, (lo, hi): (usize, usize), slot: &mut [(T, i64)]) {
        let (data, max) = (self.data, self.max);
        let step = self.input.stride[self.axis];
        let start = |i: usize| line_start(self.input, self.axis, first + i) + lo as i64 * step;
        if self.by_line || slot.len() == 1 {
            for (i, best) in slot.iter_mut().enumerate() {
                let mut off = start(i);
                if step == 1 {
                    let line = &data[off as usize..off as usize + (hi - lo)];
                    *best = if max { best_of::<T, true>(line, lo) } else { best_of::<T, false>(line, lo) };
                    continue;
                }
                let mut b = (data[off as usize], lo as i64);
                for k in lo + 1..hi {
                    off += step;
                    let x = data[off as usize];
                    if semantics::arg_replaces(max, b.0, x) {
                        b = (x, k as i64);
                    }
                }
                *best = b;
            }
            return;
        }
        // Position by position along the axis, every line of the task at each: neighbouring
        // lines are near each other in memory when the axis is not the innermost dimension.
        let starts: Vec<i64> = (0..slot.len()).map(start).collect();
        for (best, &s) in slot.iter_mut().zip(&starts) {
            *best = (data[s as usize], lo as i64);
        }
        for k in lo + 1..hi {
            let at = (k - lo) as i64 * step;
            for (best, &s) in slot.iter_mut().zip(&starts) {
                let x = data[(s + at) as usize];
                if semantics::arg_replaces(max, best.0, x) {
                    *best = (x, k as i64);
                }
            }
        }
    }
}

/// Elements per block of [`best_of`].
const BLOCK: usize = 256;

/// The (value, position) a walk of [`semantics::arg_replaces`] along contiguous `xs` (positions
/// from `first`) ends with, by blocks: each block's best value found by a lane-wise fold the
/// compiler vectorises, and the block searched only when that value beats the best so far. The
/// first element equal to the block's best (or its first NaN) is where the walk would have
/// taken it, so the result is the walk's, bit for bit.
fn best_of<T: Copy + PartialOrd, const MAX: bool>(xs: &[T], first: usize) -> (T, i64) {
    let nan = |v: &T| v.partial_cmp(v).is_none();
    let mut best = (xs[0], first as i64);
    for (b, block) in xs.chunks(BLOCK).enumerate() {
        let found = match block_best::<T, MAX>(block) {
            Some(top) if semantics::arg_replaces(MAX, best.0, top) => block.iter().position(|x| *x == top),
            Some(_) => None,
            None if !nan(&best.0) => block.iter().position(nan),
            None => None,
        };
        if let Some(i) = found {
            best = (block[i], (first + b * BLOCK + i) as i64);
        }
    }
    best
}

/// The greatest (`MAX`) or least value of a non-empty `block`, or `None` when it holds a NaN.
#[inline(always)]
fn block_best<T: Copy + PartialOrd, const MAX: bool>(block: &[T]) -> Option<T> {
    let better = |x: T, y: T| if MAX { x > y } else { x < y };
    let mut lanes = [block[0]; 8];
    let mut nans = false;
    let (chunks, rest) = block.as_chunks::<8>();
    for c in chunks {
        for l in 0..8 {
            nans |= c[l].partial_cmp(&c[l]).is_none();
            lanes[l] = if better(c[l], lanes[l]) { c[l] } else { lanes[l] };
        }
    }
    for &x in rest {
        nans |= x.partial_cmp(&x).is_none();
        lanes[0] = if better(x, lanes[0]) { x } else { lanes[0] };
    }
    (!nans).then(|| lanes.into_iter().reduce(|a, b| if better(b, a) { b } else { a }).unwrap_or(block[0]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::{Base, BaseId, DType};

    #[test]
    fn cuts_bound_the_tasks_and_cover_every_line() {
        assert_eq!(Cut::new(1, 100, 32), Cut { lines: 1, pieces: 4 });
        assert_eq!(Cut::new(10, 5, 32), Cut { lines: 6, pieces: 1 });
        assert_eq!(Cut::new(10, 100, 1000), Cut { lines: 10, pieces: 1 });
        assert_eq!(Cut::new(3, 1 << 40, 1000).tasks(3), 3 * (MAX_TASKS / 3));
        assert!(Cut::new(1 << 30, 2, 1).tasks(1 << 30) <= MAX_TASKS);
        let cut = Cut::new(1, 10, 3);
        let pieces: Vec<(usize, usize)> = (0..cut.pieces).map(|p| cut.piece(p, 10)).collect();
        assert_eq!(pieces, vec![(0, 2), (2, 5), (5, 7), (7, 10)]);
    }

    #[test]
    fn line_starts_skip_the_axis() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 100 };
        let v = View::new(b, 5, &[2, 3, 4], &[12, 4, 1]).unwrap();
        assert_eq!((0..8).map(|j| line_start(&v, 1, j)).collect::<Vec<_>>(), vec![5, 6, 7, 8, 17, 18, 19, 20]);
        assert!(line_major(&v, 2) && !line_major(&v, 0));
    }

    /// The walk [`best_of`] must reproduce: [`semantics::arg_replaces`] element by element.
    fn walk<T: Copy + PartialOrd>(max: bool, xs: &[T], first: usize) -> (T, i64) {
        let mut best = (xs[0], first as i64);
        for (i, &x) in xs.iter().enumerate().skip(1) {
            if semantics::arg_replaces(max, best.0, x) {
                best = (x, (first + i) as i64);
            }
        }
        best
    }

    proptest::proptest! {
        #[test]
        fn blocked_search_finds_the_walks_value_and_position(
            picks in proptest::collection::vec(0usize..7, 1..1200),
            first in 0usize..5,
            nans in proptest::bool::ANY,
        ) {
            // Few distinct values, so that ties (0.0 and -0.0 among them), NaNs and infinities
            // fall in every block and across block edges.
            let palette = [0.0, -0.0, 1.5, -2.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
            let xs: Vec<f64> = picks.iter().map(|&i| if i == 4 && !nans { 3.0 } else { palette[i] }).collect();
            for max in [true, false] {
                let got = if max { best_of::<f64, true>(&xs, first) } else { best_of::<f64, false>(&xs, first) };
                let want = walk(max, &xs, first);
                proptest::prop_assert_eq!(got.1, want.1);
                proptest::prop_assert_eq!(got.0.to_bits(), want.0.to_bits());
            }
            let ints: Vec<i64> = picks.iter().map(|&i| i as i64 % 4 - 2).collect();
            proptest::prop_assert_eq!(best_of::<i64, true>(&ints, first), walk(true, &ints, first));
            proptest::prop_assert_eq!(best_of::<i64, false>(&ints, first), walk(false, &ints, first));
        }
    }
}
