//! View traversal and how the engine touches memory. An instruction runs in three steps:
//! [`prepare`] allocates every base it touches; its result is computed into a row-major `Vec`
//! while its inputs are read in place ([`elements`], [`operand`]); then [`write_view`] stores the
//! result. Every input is thus read in full before the output is written, which gives the opcode
//! table's "inputs are read in full first" semantics for overlapping operands without further
//! thought, and no input is ever copied: a broadcast (stride-0) view may visit far more elements
//! than its base holds, and reading it costs no memory. The result holds one value per element
//! written (the output view's size, whose base exists by then; for `scatter`, the index's), and
//! its `Vec` is allocated fallibly ([`room`], [`result`]), so asking for more memory than the
//! machine has is [`vm_ir::Error::OutOfMemory`], never an abort. Instructions that read
//! nothing (`range`, `random`) write their values directly.
//!
//! Interrupts: reading an input polls the flush's [`Interrupt`] every [`POLL_EVERY`] elements
//! and, when a stop was requested, ends early; [`result`] polls it too and then fails with
//! [`vm_ir::Error::Interrupted`], as the engine does after any instruction that saw a request.

use crate::elem::Elem;
use std::mem::MaybeUninit;
use vm_ir::{Base, Error, Instruction, Operand, Result, View};
use vm_runtime::memory::{COPY_PIECE_BYTES, try_vec};
use vm_runtime::{Buffer, HostMemory, Interrupt};

/// Elements read between two looks at the flush's [`Interrupt`] (a power of two).
pub const POLL_EVERY: usize = 1 << 14;

/// Results computed between two looks at the flush's [`Interrupt`] (each may cost more than
/// an element read: a matrix product's).
pub(crate) const PIECE: usize = POLL_EVERY / 16;

/// The base offsets of a view's elements in row-major order of the view's index space (the
/// last dimension varies fastest). A 0-d view yields its one element; a view with an extent 0
/// yields nothing.
pub struct Offsets<'a> {
    walk: vm_ir::view::Offsets<'a>,
    /// Polled every [`POLL_EVERY`] offsets: a request ends the traversal early.
    interrupt: Option<&'a Interrupt>,
    stopped: bool,
}

/// The base offsets of `view`'s elements, row-major ([`View::offsets`]). The view must lie
/// inside its base ([`View::validate`]).
pub fn offsets(view: &View) -> Offsets<'_> {
    Offsets { walk: view.offsets(), interrupt: None, stopped: false }
}

impl Iterator for Offsets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let remaining = self.walk.len();
        self.stopped |= remaining.is_multiple_of(POLL_EVERY) && self.interrupt.is_some_and(Interrupt::is_requested);
        if self.stopped {
            return None;
        }
        self.walk.next().map(|o| o as usize)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.stopped { (0, Some(0)) } else { self.walk.size_hint() }
    }
}

impl ExactSizeIterator for Offsets<'_> {}

/// The host buffer of `base`, allocated (zero-filled) if it has none yet, checked to match the
/// base's dtype and size.
pub fn buffer<'m>(mem: &'m mut HostMemory, base: &Base) -> Result<&'m mut Buffer> {
    let buf = mem.ensure(base)?;
    if buf.dtype() != base.dtype || buf.nelem() as u64 != base.nelem {
        return Err(Error::invalid(
            None,
            format!(
                "base {} is used as {} {} elements but its buffer holds {} {} elements",
                base.id,
                base.nelem,
                base.dtype,
                buf.nelem(),
                buf.dtype()
            ),
        ));
    }
    Ok(buf)
}

/// Allocates (zero-filled) the base of every view operand of `instr` that has no buffer yet, so
/// that its inputs can then be read in place through a shared borrow of `mem`. Bases are
/// allocated in operand order, the output first: a base too large for the machine fails here,
/// before anything is computed or written.
pub fn prepare(mem: &mut HostMemory, instr: &Instruction) -> Result<()> {
    for v in instr.operands.iter().filter_map(Operand::as_view) {
        buffer(mem, &v.base)?;
    }
    Ok(())
}

/// [`prepare`] for an instruction that writes every element of its output (operand 0): when
/// that output is the whole of a base with no buffer yet, which no input reads, the buffer is
/// not zeroed first (a temporary's, taken from the pool of freed ones, is reused as it is).
pub fn prepare_overwriting(mem: &mut HostMemory, instr: &Instruction) -> Result<()> {
    if let Some(out) = instr.operands.first().and_then(Operand::as_view)
        && out.is_whole_base()
        && !mem.is_allocated(out.base.id)
        && !reads_base_of(instr, out)
    {
        mem.ensure_overwritten(&out.base)?;
    }
    prepare(mem, instr)
}

/// True when an input of `instr` (an operand after the first) is a view of `out`'s base.
pub fn reads_base_of(instr: &Instruction, out: &View) -> bool {
    instr.operands[1..].iter().any(|o| o.as_view().is_some_and(|v| v.base.id == out.base.id))
}

/// Checks that the element type `T` is the dtype of `view` (a bug in the engine otherwise).
fn check_type<T: Elem>(view: &View) -> Result<()> {
    if view.dtype() != T::DTYPE {
        return Err(Error::Internal(format!("interp accessed a view of {} as {}", view.dtype(), T::DTYPE)));
    }
    Ok(())
}

/// The data of `view`'s base, which [`prepare`] allocated.
pub fn data<'m, T: Elem>(mem: &'m HostMemory, view: &View) -> Result<&'m [T]> {
    check_type::<T>(view)?;
    let buf = mem
        .get(view.base.id)
        .ok_or_else(|| Error::Internal(format!("interp read base {} before allocating it", view.base.id)))?;
    Ok(buf.as_slice::<T>())
}

/// The elements of an input operand in row-major order, read where they lie (see the module
/// documentation): a view's elements, or a constant repeated.
pub enum Elements<'m, T> {
    /// A view's elements, at these offsets of its base's data.
    View(&'m [T], Offsets<'m>),
    /// A contiguous view's elements, in order (no offsets to compute).
    Run(std::slice::Iter<'m, T>),
    /// A constant, this many more times.
    Const(T, usize),
}

impl<T: Copy> Iterator for Elements<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match self {
            Elements::View(data, offsets) => offsets.next().map(|o| data[o]),
            Elements::Run(run) => run.next().copied(),
            Elements::Const(x, left) => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                Some(*x)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Elements::View(_, offsets) => offsets.len(),
            Elements::Run(run) => run.len(),
            Elements::Const(_, left) => *left,
        };
        (n, Some(n))
    }
}

impl<T: Copy> ExactSizeIterator for Elements<'_, T> {}

/// The elements of `view`, row-major, read in place (its base must be [`prepare`]d); they end
/// early when the flush is interrupted, except a contiguous view's, which are read as a run
/// (their consumer, [`result`], polls the interrupt as often).
pub fn elements<'m, T: Elem>(mem: &'m HostMemory, view: &'m View) -> Result<Elements<'m, T>> {
    let data = data::<T>(mem, view)?;
    if let Some(run) = contiguous_run(view) {
        return Ok(Elements::Run(data[run].iter()));
    }
    let offsets = Offsets { interrupt: Some(mem.interrupt()), ..offsets(view) };
    Ok(Elements::View(data, offsets))
}

/// The range of base offsets a contiguous `view` visits in row-major order; `None` for any
/// other view.
pub fn contiguous_run(view: &View) -> Option<std::ops::Range<usize>> {
    let start = view.start as usize;
    view.is_contiguous().then(|| start..start + view.nelem())
}

/// An error unless input view `v` has the instruction's `shape`.
fn check_shape(v: &View, shape: &[usize]) -> Result<()> {
    if v.shape[..] != *shape {
        return Err(Error::invalid(
            None,
            format!("input shape {:?} differs from the expected {:?}", &v.shape[..], shape),
        ));
    }
    Ok(())
}

/// The elements of a data operand, row-major, as an array of `shape`: a view (which must have
/// that shape, and whose base must be [`prepare`]d) or a constant (broadcast to it).
pub fn operand<'m, T: Elem>(mem: &'m HostMemory, operand: &'m Operand, shape: &[usize]) -> Result<Elements<'m, T>> {
    match operand {
        Operand::View(v) => {
            check_shape(v, shape)?;
            elements(mem, v)
        }
        Operand::Const(s) => {
            if s.dtype() != T::DTYPE {
                return Err(Error::Internal(format!("interp read a {} constant as {}", s.dtype(), T::DTYPE)));
            }
            Ok(Elements::Const(T::from_scalar(*s), shape.iter().product()))
        }
    }
}

/// An operand's elements by their row-major position `k`, for the element-wise loops: a view
/// whose elements lie on one line of its base ([`View::line_stride`]: a row, a column, a
/// contiguous block), or a constant. Reading element `k` is then one multiply-add, with no
/// traversal state, and a loop over `k` compiles to a tight one (vectorised over runs).
#[derive(Clone, Copy)]
pub enum Lane<'m, T> {
    /// `run[k]`: consecutive elements.
    Run(&'m [T]),
    /// `data[start + k * stride]`.
    Line { data: &'m [T], start: isize, stride: isize },
    /// The same value at every position.
    Const(T),
}

impl<'m, T: Copy> Lane<'m, T> {
    /// The `n` elements from element `k` on, as a lane of their own.
    #[inline]
    pub fn part(self, k: usize, n: usize) -> Lane<'m, T> {
        match self {
            Lane::Run(run) => Lane::Run(&run[k..k + n]),
            Lane::Line { data, start, stride } => Lane::Line { data, start: start + k as isize * stride, stride },
            Lane::Const(x) => Lane::Const(x),
        }
    }

    /// True for a [`Lane::Line`].
    #[inline]
    pub fn is_line(&self) -> bool {
        matches!(self, Lane::Line { .. })
    }

    /// This lane, a line's first `buf.len()` elements gathered into `buf` and read from there as
    /// a run (the fast loops take runs); a run or a constant as it is.
    #[inline]
    pub fn gathered<'b>(self, buf: &'b mut [MaybeUninit<T>]) -> Lane<'b, T>
    where
        'm: 'b,
    {
        let Lane::Line { data, start, stride } = self else { return self };
        let n = buf.len();
        if n == 0 {
            return Lane::Run(&[]);
        }
        let last = start + (n as isize - 1) * stride;
        let inside = |at: isize| at >= 0 && (at as usize) < data.len();
        // (So each of the zips below writes all of `buf`.)
        assert!(inside(start) && inside(last), "a line past its data");
        let start = start as usize;
        match stride {
            0 => buf.fill(MaybeUninit::new(data[start])),
            s if s > 0 => buf.iter_mut().zip(data[start..].iter().step_by(s as usize)).for_each(|(b, &x)| {
                b.write(x);
            }),
            s => buf.iter_mut().zip(data[..=start].iter().rev().step_by(s.unsigned_abs())).for_each(|(b, &x)| {
                b.write(x);
            }),
        }
        // SAFETY: every element of `buf` was written just now; `MaybeUninit<T>` has `T`'s layout.
        Lane::Run(unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<T>(), n) })
    }

    /// Calls `f(piece, lanes)` over `dst` a piece of up to [`LINE_PIECE`] elements at a time,
    /// `lanes` the pieces' parts of `all`, each line among them [`gathered`](Lane::gathered) onto
    /// the stack (so the fast loops read every lane as a run or a constant).
    pub fn for_each_gathered_piece<R, const K: usize>(
        dst: &mut [R],
        all: [Lane<'m, T>; K],
        mut f: impl FnMut(&mut [R], [Lane<'_, T>; K]) -> Result<()>,
    ) -> Result<()> {
        let mut bufs = [[MaybeUninit::uninit(); LINE_PIECE]; K];
        for (k, piece) in dst.chunks_mut(LINE_PIECE).enumerate() {
            let (from, n) = (k * LINE_PIECE, piece.len());
            let mut bufs = bufs.iter_mut();
            let lanes = all.map(|lane| {
                let buf = bufs.next().expect("one buffer per lane");
                lane.part(from, n).gathered(&mut buf[..n])
            });
            f(piece, lanes)?;
        }
        Ok(())
    }

    /// Element `k`.
    #[inline]
    pub fn at(&self, k: usize) -> T {
        match *self {
            Lane::Run(run) => run[k],
            Lane::Line { data, start, stride } => data[(start + k as isize * stride) as usize],
            Lane::Const(x) => x,
        }
    }
}

/// The elements of a data operand as a [`Lane`] over an array of `shape` (a view of that shape,
/// its base [`prepare`]d, or a constant); `None` for a view whose elements do not lie on one
/// line (the caller reads it with [`operand`]).
pub fn lane<'m, T: Elem>(mem: &'m HostMemory, operand: &'m Operand, shape: &[usize]) -> Result<Option<Lane<'m, T>>> {
    let Operand::View(v) = operand else {
        return match self::operand::<T>(mem, operand, shape)? {
            Elements::Const(x, _) => Ok(Some(Lane::Const(x))),
            _ => Err(Error::Internal("a constant operand read as a view".into())),
        };
    };
    check_shape(v, shape)?;
    let Some(stride) = v.line_stride() else { return Ok(None) };
    let data = data::<T>(mem, v)?;
    let n = v.nelem();
    if stride == 1 || n <= 1 {
        let start = v.start as usize;
        return Ok(Some(Lane::Run(&data[start..start + n])));
    }
    if stride == 0 {
        return Ok(Some(Lane::Const(data[v.start as usize]))); // one element, broadcast
    }
    Ok(Some(Lane::Line { data, start: v.start as isize, stride: stride as isize }))
}

/// A data operand of an instruction writing an array of `shape`, read row by row (a row: the
/// elements whose indices agree but for the last), for operands that are not one [`Lane`]
/// (a broadcast row or column, rows with gaps between them).
pub enum Rows<'m, T> {
    /// A view (of that shape) and its base's data.
    View(&'m [T], &'m View),
    /// A constant.
    Const(T),
}

/// `operand` of an instruction writing an array of `shape` as [`Rows`] (its base [`prepare`]d).
pub fn rows<'m, T: Elem>(mem: &'m HostMemory, operand: &'m Operand, shape: &[usize]) -> Result<Rows<'m, T>> {
    Ok(match self::operand::<T>(mem, operand, shape)? {
        Elements::Const(x, _) => Rows::Const(x),
        _ => {
            let v = operand.as_view().ok_or_else(|| Error::Internal("a view operand without a view".into()))?;
            Rows::View(data::<T>(mem, v)?, v)
        }
    })
}

impl<'m, T: Copy> Rows<'m, T> {
    /// The row at index `outer` of all axes but the last, as a [`Lane`].
    pub fn row(&self, outer: &[usize]) -> Lane<'m, T> {
        let start = match self {
            Rows::Const(_) => 0,
            Rows::View(_, v) => v.start + outer.iter().zip(&v.stride).map(|(&i, &s)| i as i64 * s).sum::<i64>(),
        };
        self.reader().at(start)
    }

    /// How to read a row from its start: the same for every row of the operand.
    fn reader(&self) -> RowReader<'m, T> {
        match *self {
            Rows::Const(x) => RowReader::Const(x),
            Rows::View(data, v) => {
                let last = v.ndim() - 1;
                match v.stride[last] {
                    1 => RowReader::Run(data, v.shape[last]),
                    0 => RowReader::Broadcast(data),
                    stride => RowReader::Line(data, stride as isize),
                }
            }
        }
    }

    /// The base offset of the first row (0 for a constant).
    fn first_row(&self) -> i64 {
        match self {
            Rows::Const(_) => 0,
            Rows::View(_, v) => v.start,
        }
    }

    /// How far the row start moves along outer axis `d` (0 for a constant).
    #[inline]
    fn outer_stride(&self, d: usize) -> i64 {
        match self {
            Rows::Const(_) => 0,
            Rows::View(_, v) => v.stride[d],
        }
    }
}

/// [`Rows`] read one row at a time ([`Rows::reader`]): what a row's last axis is, decided once
/// for all rows of an operand (every row of a view has the same extent and stride).
#[derive(Clone, Copy)]
enum RowReader<'m, T> {
    /// A constant.
    Const(T),
    /// Rows of this many consecutive elements.
    Run(&'m [T], usize),
    /// Rows broadcast from one element (`x[..., None] * w`): constants.
    Broadcast(&'m [T]),
    /// Rows of elements this far apart.
    Line(&'m [T], isize),
}

impl<'m, T: Copy> RowReader<'m, T> {
    /// The row whose first element is at base offset `start`.
    #[inline(always)]
    fn at(self, start: i64) -> Lane<'m, T> {
        match self {
            RowReader::Const(x) => Lane::Const(x),
            RowReader::Run(data, n) => Lane::Run(&data[start as usize..start as usize + n]),
            RowReader::Broadcast(data) => Lane::Const(data[start as usize]),
            RowReader::Line(data, stride) => Lane::Line { data, start: start as isize, stride },
        }
    }
}

/// [`for_each_row`] with the rows of `K` operands of one element type: calls `f(row, lanes)`
/// for each row of `dst`, an array of `shape` (at least one axis), `lanes[k]` operand `k`'s row
/// (short rows, `x[:, i:i+5, None] * w`, are many: each costs a few steps of [`walk_rows`]).
pub fn for_each_row_of<'m, A: Copy, R, const K: usize>(
    shape: &[usize],
    dst: &mut [R],
    operands: [&Rows<'m, A>; K],
    mut f: impl FnMut(&mut [R], [Lane<'m, A>; K]) -> Result<()>,
) -> Result<()> {
    let (outer_shape, inner) = match shape.split_last() {
        Some((&inner, outer)) if inner > 0 => (outer, inner),
        _ => return Ok(()),
    };
    let readers = operands.map(Rows::reader);
    let axes = outer_shape.iter().enumerate().map(|(d, &n)| (n, operands.map(|o| o.outer_stride(d))));
    let mut rows = dst.chunks_mut(inner);
    walk_rows(axes, operands.map(Rows::first_row), |starts| {
        let row = rows.next().ok_or_else(|| Error::Internal("more rows than the output holds".into()))?;
        f(row, std::array::from_fn(|k| readers[k].at(starts[k])))
    })
}

/// [`for_each_row_of`] writing into `view`'s rows in place: calls `f(row, lanes)` for each row
/// of `view` in row-major order, `row` its last axis as a slice of `data`, its base's elements,
/// where the axis is contiguous there (stride 1, or one element); where it is not (a column,
/// `x[1:-1, j] = ...`), `row` is a piece of up to [`LINE_PIECE`] elements on the stack that
/// is stored into the view's elements after `f` has filled it (`f` only writes `row`).
pub fn for_each_view_row_of<'m, A: Copy, R: Copy, const K: usize>(
    view: &View,
    data: &mut [R],
    operands: [&Rows<'m, A>; K],
    mut f: impl FnMut(&mut [R], [Lane<'m, A>; K]) -> Result<()>,
) -> Result<()> {
    let (outer_shape, inner) = match view.shape.split_last() {
        Some((&inner, outer)) if inner > 0 => (outer, inner),
        _ => return Ok(()),
    };
    if K >= VIEW_WALK {
        return Err(Error::Internal(format!("{K} operands written into a view row by row")));
    }
    let readers = operands.map(Rows::reader);
    // Slot 0 is the view's row start, slot `k + 1` operand `k`'s; the slots after are unused.
    let slot = |d: usize, k: usize| match k {
        0 => view.stride[d],
        k if k <= K => operands[k - 1].outer_stride(d),
        _ => 0,
    };
    let axes = outer_shape.iter().enumerate().map(|(d, &n)| (n, std::array::from_fn(|k| slot(d, k))));
    let first: [i64; VIEW_WALK] = std::array::from_fn(|k| {
        if k == 0 {
            view.start
        } else if k <= K {
            operands[k - 1].first_row()
        } else {
            0
        }
    });
    let step = view.stride[view.ndim() - 1] as isize;
    if step == 1 || inner == 1 {
        return walk_rows(axes, first, |starts| {
            let start = starts[0] as usize;
            f(&mut data[start..start + inner], std::array::from_fn(|k| readers[k].at(starts[k + 1])))
        });
    }
    walk_rows(axes, first, |starts| {
        let lanes: [Lane<'m, A>; K] = std::array::from_fn(|k| readers[k].at(starts[k + 1]));
        // (Any element will do as the piece's filler: `f` overwrites what it is given.)
        let mut piece = [data[starts[0] as usize]; LINE_PIECE];
        for from in (0..inner).step_by(LINE_PIECE) {
            let n = LINE_PIECE.min(inner - from);
            f(&mut piece[..n], lanes.map(|lane| lane.part(from, n)))?;
            scatter(&piece[..n], data, starts[0] as isize + from as isize * step, step);
        }
        Ok(())
    })
}

/// Stores `values` into `data[start + k * stride]` (the inverse of [`Lane::gathered`]).
fn scatter<R: Copy>(values: &[R], data: &mut [R], start: isize, stride: isize) {
    let mut at = start;
    for &x in values {
        data[at as usize] = x;
        at += stride;
    }
}

/// The row starts [`for_each_view_row_of`] walks: the view's and up to three operands'.
const VIEW_WALK: usize = 4;

/// Appends the elements of `view`, whose last axis is contiguous (stride 1), to `run` in
/// row-major order, a row at a time (`run` has room for them: the caller allocates fallibly);
/// the flush's [`Interrupt`] is looked at after each row.
pub fn gather_rows<T: Copy>(run: &mut Vec<T>, view: &View, data: &[T], interrupt: &Interrupt) -> Result<()> {
    let (outer_shape, inner) = match view.shape.split_last() {
        Some((&inner, outer)) if inner > 0 => (outer, inner),
        _ => return Ok(()),
    };
    if view.stride.last() != Some(&1) {
        return Err(Error::Internal(format!("rows of {view} gathered, its last axis not contiguous")));
    }
    let axes = outer_shape.iter().zip(&view.stride).map(|(&n, &s)| (n, [s]));
    walk_rows(axes, [view.start], |[start]| {
        run.extend_from_slice(&data[start as usize..start as usize + inner]);
        interrupt.check()
    })
}

/// Calls `f(starts)` for each row of an array whose outer axes (all but the last) are `axes`,
/// in row-major order: each axis's extent and how far each of `K` operands' row start moves
/// along it; `starts[k]` is operand `k`'s row start, `first[k]` at the first row. Adjacent axes
/// along which every operand moves evenly are walked as one (`x[:, :, :, None]`'s rows of a
/// 4-d array: one axis where it can), the innermost in a plain loop; an empty array has no
/// rows.
fn walk_rows<const K: usize>(
    axes: impl Iterator<Item = (usize, [i64; K])>,
    first: [i64; K],
    mut f: impl FnMut([i64; K]) -> Result<()>,
) -> Result<()> {
    let mut merged: Vec<(usize, [i64; K])> = Vec::with_capacity(axes.size_hint().0);
    for (n, step) in axes {
        match merged.last_mut() {
            _ if n == 0 => return Ok(()),
            _ if n == 1 => {}
            // The axis before moves each operand as far as this whole axis does: one axis.
            Some((m, outer)) if (0..K).all(|k| outer[k] == step[k] * n as i64) => {
                *m *= n;
                *outer = step;
            }
            _ => merged.push((n, step)),
        }
    }
    let Some((inner_n, inner_step)) = merged.pop() else { return f(first) };
    let mut index = vec![0usize; merged.len()];
    let mut start = first;
    loop {
        let mut at = start;
        for _ in 0..inner_n {
            f(at)?;
            for k in 0..K {
                at[k] += inner_step[k];
            }
        }
        // Odometer step over the other axes, the starts along.
        let mut d = merged.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            let (n, step) = merged[d];
            index[d] += 1;
            if index[d] < n {
                for k in 0..K {
                    start[k] += step[k];
                }
                break;
            }
            index[d] = 0;
            for k in 0..K {
                start[k] -= step[k] * (n as i64 - 1);
            }
        }
    }
}

/// Calls `f(outer, row)` for each row of `dst`, an array of `shape` (at least one axis) in
/// row-major order: `outer` is the row's index over all axes but the last.
pub fn for_each_row<R>(
    shape: &[usize],
    dst: &mut [R],
    mut f: impl FnMut(&[usize], &mut [R]) -> Result<()>,
) -> Result<()> {
    let (outer_shape, inner) = match shape.split_last() {
        Some((&inner, outer)) if inner > 0 => (outer, inner),
        _ => return Ok(()),
    };
    let mut outer = vec![0usize; outer_shape.len()];
    for row in dst.chunks_mut(inner) {
        f(&outer, row)?;
        // Odometer step over the outer axes.
        for d in (0..outer.len()).rev() {
            outer[d] += 1;
            if outer[d] < outer_shape[d] {
                break;
            }
            outer[d] = 0;
        }
    }
    Ok(())
}

/// Writes `f(k)` into `dst[k]` for every `k`, in pieces between looks at the flush's
/// [`Interrupt`] (as [`result`] does).
pub fn fill_at<R>(dst: &mut [R], f: impl Fn(usize) -> R, interrupt: &Interrupt) -> Result<()> {
    for (c, piece) in dst.chunks_mut(PIECE).enumerate() {
        let first = c * PIECE;
        piece.iter_mut().enumerate().for_each(|(i, d)| *d = f(first + i));
        interrupt.check()?;
    }
    Ok(())
}

/// Replaces `base[start + k * stride]` by `f(k, &base[start + k * stride])` for `k < n`: one
/// strided line of `base` (a column) updated where it lies, in pieces between looks at the
/// flush's [`Interrupt`] (as [`update_at`], for an output that is not a run).
pub fn update_line<R>(
    base: &mut [R],
    (start, stride): (usize, isize),
    n: usize,
    f: impl Fn(usize, &R) -> R,
    interrupt: &Interrupt,
) -> Result<()> {
    let at = |k: usize| (start as isize + k as isize * stride) as usize;
    for first in (0..n).step_by(PIECE) {
        for k in first..(first + PIECE).min(n) {
            let i = at(k);
            base[i] = f(k, &base[i]);
        }
        interrupt.check()?;
    }
    Ok(())
}

/// Writes `f(xs[k])` into `dst[k]` for a run `xs` as long as `dst`, in pieces between looks at
/// the flush's [`Interrupt`]: slices walked together, which the compiler vectorises. (A copy,
/// which the compiler makes a `memcpy`, goes in pieces of [`COPY_PIECE_BYTES`], for the reason
/// given there.)
pub fn fill_run<A: Copy, R>(dst: &mut [R], xs: &[A], f: impl Fn(A) -> R, interrupt: &Interrupt) -> Result<()> {
    let copy_piece = (COPY_PIECE_BYTES / std::mem::size_of::<R>().max(1)).max(1);
    for (piece, xs) in dst.chunks_mut(PIECE).zip(xs.chunks(PIECE)) {
        for (d, x) in piece.chunks_mut(copy_piece).zip(xs.chunks(copy_piece)) {
            d.iter_mut().zip(x).for_each(|(d, &x)| *d = f(x));
        }
        interrupt.check()?;
    }
    Ok(())
}

/// Replaces `dst[k]` by `f(&dst[k], ys[k])` for a run `ys` as long as `dst`, in pieces between
/// looks at the flush's [`Interrupt`]: an output that is also an input (`x += y`).
pub fn update_run<B: Copy, R>(dst: &mut [R], ys: &[B], f: impl Fn(&R, B) -> R, interrupt: &Interrupt) -> Result<()> {
    for (piece, ys) in dst.chunks_mut(PIECE).zip(ys.chunks(PIECE)) {
        piece.iter_mut().zip(ys).for_each(|(d, &y)| *d = f(d, y));
        interrupt.check()?;
    }
    Ok(())
}

/// Replaces `dst[k]` by `f(k, &dst[k])` for every `k`, in pieces between looks at the flush's
/// [`Interrupt`] (as [`update_run`], for an input that is not a run).
pub fn update_at<R>(dst: &mut [R], f: impl Fn(usize, &R) -> R, interrupt: &Interrupt) -> Result<()> {
    for (c, piece) in dst.chunks_mut(PIECE).enumerate() {
        let first = c * PIECE;
        piece.iter_mut().enumerate().for_each(|(i, d)| *d = f(first + i, d));
        interrupt.check()?;
    }
    Ok(())
}

/// Rows shorter than this take the plain loop: choosing the vectorised one costs more than it
/// saves (a broadcast product `x[:, i:i+5, :, None] * w` has rows of a few elements).
const SHORT_ROW: usize = 64;

/// The most elements of a line (a strided row) held on the stack at once: gathered to be read as
/// a run ([`Lane::gathered`]), or computed before being stored ([`for_each_view_row_of`]); 512
/// bytes of float64.
pub const LINE_PIECE: usize = 64;

/// Writes `f(x[k], y[k])` into `dst[k]` for runs `x` and `y` as long as `dst` (where `y` is
/// `None`, `f(x[k], c)` with the constant `c`; where `x` is, `f(c, y[k])`), in pieces between
/// looks at the flush's [`Interrupt`]: slices walked together, which the compiler vectorises,
/// for AVX2 where the processor has it (the same operations on each element, so the same
/// results; `f` is never contracted into fused multiply-adds); a short row by the plain loop,
/// inline in the caller.
#[inline(always)]
pub fn fill_runs<A: Copy, R>(
    dst: &mut [R],
    lanes: (Lane<'_, A>, Lane<'_, A>),
    f: impl Fn(A, A) -> R,
    interrupt: &Interrupt,
) -> Result<bool> {
    if dst.len() < SHORT_ROW {
        let done = fill_piece(dst, lanes, &f);
        interrupt.check()?;
        return Ok(done);
    }
    fill_long_runs(dst, lanes, f, interrupt)
}

/// [`fill_runs`] of a row of [`SHORT_ROW`] elements or more: vectorised for the processor.
fn fill_long_runs<A: Copy, R>(
    dst: &mut [R],
    lanes: (Lane<'_, A>, Lane<'_, A>),
    f: impl Fn(A, A) -> R,
    interrupt: &Interrupt,
) -> Result<bool> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2.
        return unsafe { fill_runs_avx2(dst, lanes, f, interrupt) };
    }
    fill_runs_body(dst, lanes, f, interrupt)
}

/// [`fill_runs`] compiled for AVX2.
///
/// # Safety
/// The processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_runs_avx2<A: Copy, R>(
    dst: &mut [R],
    lanes: (Lane<'_, A>, Lane<'_, A>),
    f: impl Fn(A, A) -> R,
    interrupt: &Interrupt,
) -> Result<bool> {
    fill_runs_body(dst, lanes, f, interrupt)
}

/// The loop of [`fill_runs`], compiled into each variant.
#[inline(always)]
fn fill_runs_body<A: Copy, R>(
    dst: &mut [R],
    (x, y): (Lane<'_, A>, Lane<'_, A>),
    f: impl Fn(A, A) -> R,
    interrupt: &Interrupt,
) -> Result<bool> {
    let n = dst.len();
    fn part<A>(lane: Lane<'_, A>, r: std::ops::Range<usize>) -> Lane<'_, A> {
        match lane {
            Lane::Run(xs) => Lane::Run(&xs[r]),
            other => other,
        }
    }
    for (c, piece) in dst.chunks_mut(PIECE).enumerate() {
        let r = c * PIECE..(c * PIECE + PIECE).min(n);
        if !fill_piece(piece, (part(x, r.clone()), part(y, r)), &f) {
            return Ok(false);
        }
        interrupt.check()?;
    }
    Ok(true)
}

/// `dst[k] = f(x[k], y[k])` over slices walked together when each lane is a run as long as
/// `dst` or a constant (not both constants); false, having written nothing, otherwise.
#[inline(always)]
fn fill_piece<A: Copy, R>(dst: &mut [R], (x, y): (Lane<'_, A>, Lane<'_, A>), f: &impl Fn(A, A) -> R) -> bool {
    match (x, y) {
        (Lane::Run(xs), Lane::Run(ys)) => dst.iter_mut().zip(xs).zip(ys).for_each(|((d, &a), &b)| *d = f(a, b)),
        (Lane::Run(xs), Lane::Const(b)) => dst.iter_mut().zip(xs).for_each(|(d, &a)| *d = f(a, b)),
        (Lane::Const(a), Lane::Run(ys)) => dst.iter_mut().zip(ys).for_each(|(d, &b)| *d = f(a, b)),
        _ => return false,
    }
    true
}

/// An empty `Vec`, allocated fallibly, with room for `len` values of the result of an
/// instruction writing `out`.
pub fn room<T>(out: &View, len: usize) -> Result<Vec<T>> {
    try_vec(len, out.base.id, "the result of an instruction writing")
}

/// The values of `iter` (an instruction's result, row-major) in a `Vec` from [`room`], for
/// writing into `out` once every input has been read; [`vm_ir::Error::Interrupted`] when a stop
/// is requested meanwhile (looked at every [`POLL_EVERY`] values, each of which may be costly:
/// a matrix product's).
pub fn result<I: ExactSizeIterator>(out: &View, mut iter: I, interrupt: &Interrupt) -> Result<Vec<I::Item>> {
    let mut values = room(out, iter.len())?;
    loop {
        let before = values.len();
        values.extend(iter.by_ref().take(PIECE));
        interrupt.check()?;
        if values.len() - before < PIECE {
            return Ok(values);
        }
    }
}

/// Writes `values` (row-major) into `view`, allocating its base if needed.
pub fn write_view<T: Elem>(
    mem: &mut HostMemory,
    view: &View,
    values: impl IntoIterator<Item = T, IntoIter: ExactSizeIterator>,
) -> Result<()> {
    check_type::<T>(view)?;
    let values = values.into_iter();
    if values.len() != view.nelem() {
        return Err(Error::Internal(format!(
            "interp computed {} values for an output of {} elements",
            values.len(),
            view.nelem()
        )));
    }
    let data = buffer(mem, &view.base)?.as_mut_slice::<T>();
    match (contiguous_run(view), view.line_stride()) {
        (Some(run), _) => data[run].iter_mut().zip(values).for_each(|(d, v)| *d = v),
        (None, Some(stride)) => {
            let (start, stride) = (view.start as isize, stride as isize);
            values.enumerate().for_each(|(k, v)| data[(start + k as isize * stride) as usize] = v)
        }
        (None, None) => offsets(view).zip(values).for_each(|(o, v)| data[o] = v),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::{BaseId, DType};

    /// Row-major offsets the slow way: decompose each flat position into a multi-index.
    fn by_division(v: &View) -> Vec<usize> {
        (0..v.nelem())
            .map(|flat| {
                let mut rem = flat;
                let mut idx = vec![0; v.ndim()];
                for d in (0..v.ndim()).rev() {
                    idx[d] = rem % v.shape[d];
                    rem /= v.shape[d];
                }
                v.offset_of(&idx) as usize
            })
            .collect()
    }

    #[test]
    fn offsets_match_the_index_formula() {
        let base = Base { id: BaseId(1), dtype: DType::F64, nelem: 200 };
        let views = [
            View::new(base, 0, &[], &[]).unwrap(),
            View::new(base, 7, &[5], &[3]).unwrap(),
            View::new(base, 199, &[4, 5], &[-20, -2]).unwrap(),
            View::new(base, 50, &[3, 4, 5], &[0, 10, -1]).unwrap(),
            View::new(base, 3, &[2, 0, 5], &[1, 1, 1]).unwrap(),
            View::new(base, 3, &[1, 1, 7, 1], &[9, 9, 2, 9]).unwrap(),
        ];
        for v in &views {
            let fast: Vec<usize> = offsets(v).collect();
            assert_eq!(fast, by_division(v), "{v}");
            assert_eq!(offsets(v).len(), v.nelem());
            let random_access: Vec<usize> = (0..v.nelem()).map(|k| v.offset_at(k) as usize).collect();
            assert_eq!(random_access, fast, "{v}");
        }
    }

    /// The AVX2 variant of the element-wise loop gives the bits of the 128-bit one.
    #[test]
    fn element_loops_give_the_same_bits_at_every_vector_width() {
        let xs: Vec<f64> = (0..1037).map(|i| (i as f64 * 0.37).sin() * 1e3).collect();
        let ys: Vec<f64> = (0..1037).map(|i| 1.0 / (i as f64 - 500.5)).collect();
        let interrupt = Interrupt::default();
        let ops: [fn(f64, f64) -> f64; 4] = [|a, b| a + b, |a, b| a * b - b, |a, b| a / b, f64::max];
        for op in ops {
            for lanes in [(Lane::Run(&xs[..]), Lane::Run(&ys[..])), (Lane::Run(&xs[..]), Lane::Const(0.1))] {
                let mut want = vec![0.0; xs.len()];
                assert!(fill_runs_body(&mut want, lanes, op, &interrupt).unwrap());
                let mut got = vec![0.0; xs.len()];
                assert!(fill_runs(&mut got, lanes, op, &interrupt).unwrap());
                assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()));
            }
        }
    }
    /// Writing a view's rows in place, whatever its last axis's step (a run, a column, reversed,
    /// rows longer than a stack piece), puts each element where the index formula says and
    /// touches nothing else.
    #[test]
    fn view_rows_are_written_where_the_view_lies() {
        let out_base = Base { id: BaseId(1), dtype: DType::F64, nelem: 400 };
        let in_base = Base { id: BaseId(2), dtype: DType::F64, nelem: 400 };
        let cases = [
            (View::new(out_base, 3, &[4, 5], &[20, 1]).unwrap(), View::new(in_base, 0, &[4, 5], &[5, 1]).unwrap()),
            (View::new(out_base, 3, &[48], &[7]).unwrap(), View::new(in_base, 10, &[48], &[1]).unwrap()),
            (
                View::new(out_base, 399, &[3, 130], &[-1, -3]).unwrap(),
                View::new(in_base, 5, &[3, 130], &[0, 2]).unwrap(),
            ),
            (
                View::new(out_base, 2, &[2, 3, 70], &[1, 2, 5]).unwrap(),
                View::new(in_base, 0, &[2, 3, 70], &[70, 0, 1]).unwrap(),
            ),
        ];
        let input: Vec<f64> = (0..400).map(|i| i as f64).collect();
        for (out, inp) in &cases {
            let mut want = vec![-1.0; 400];
            for (o, i) in by_division(out).into_iter().zip(by_division(inp)) {
                want[o] = input[i] * 2.0 + 0.5;
            }
            let mut got = vec![-1.0; 400];
            let rows = [Rows::View(&input[..], inp), Rows::Const(0.5)];
            for_each_view_row_of(out, &mut got, [&rows[0], &rows[1]], |row, [a, c]| {
                row.iter_mut().enumerate().for_each(|(k, x)| *x = a.at(k) * 2.0 + c.at(k));
                Ok(())
            })
            .unwrap();
            assert_eq!(got, want, "{out} <- {inp}");
        }
    }

    /// A line gathered onto the stack holds its elements in order, whatever its step; runs and
    /// constants pass as they are.
    #[test]
    fn gathered_lines_are_runs_of_their_elements() {
        let data: Vec<f64> = (0..50).map(|i| i as f64).collect();
        for (start, stride, n) in [(3, 7, 7), (49, -6, 9), (10, 0, 5), (0, 1, 50), (20, -1, 21), (5, 3, 0)] {
            let line = Lane::Line { data: &data[..], start, stride };
            let want: Vec<f64> = (0..n).map(|k| line.at(k)).collect();
            let mut buf = [MaybeUninit::uninit(); 64];
            let Lane::Run(run) = line.gathered(&mut buf[..n]) else { panic!("a line gathered into no run") };
            assert_eq!(run, &want[..], "start {start} stride {stride} n {n}");
        }
        let mut buf = [MaybeUninit::uninit(); 4];
        assert!(matches!(Lane::Const(2.5).gathered(&mut buf), Lane::Const(2.5)));
        assert!(matches!(Lane::Run(&data[..3]).gathered(&mut buf), Lane::Run(r) if r == &data[..3]));
        let past = std::panic::catch_unwind(|| {
            let mut buf = [MaybeUninit::uninit(); 8];
            let _ = Lane::Line { data: &data[..], start: 40, stride: 2 }.gathered(&mut buf);
        });
        assert!(past.is_err(), "a line leaving its data is refused");
    }

    /// Row starts walked with merged axes are those of each row's index, in row-major order.
    #[test]
    fn rows_are_walked_in_order_with_axes_merged() {
        // Extents and two operands' steps: evenly stepping axes (merged), broadcasts, axes of
        // one element, reversed steps, an empty axis.
        let cases: [&[(usize, [i64; 2])]; 7] = [
            &[],
            &[(3, [5, 0])],
            &[(2, [12, 0]), (3, [4, 0]), (4, [1, 0])],
            &[(2, [3072, 0]), (2, [96, 96]), (2, [3, 48]), (3, [1, 16])],
            &[(4, [-7, 2]), (1, [100, 100]), (3, [2, -1]), (2, [1, 0])],
            &[(3, [6, 0]), (0, [2, 1]), (2, [1, 1])],
            &[(1, [9, 9]), (1, [4, 4])],
        ];
        for axes in cases {
            let first = [1000, 2000];
            let mut want = Vec::new();
            let rows: usize = axes.iter().map(|a| a.0).product();
            for flat in 0..rows {
                let (mut rem, mut at) = (flat, first);
                for &(n, step) in axes.iter().rev() {
                    for k in 0..2 {
                        at[k] += (rem % n) as i64 * step[k];
                    }
                    rem /= n;
                }
                want.push(at);
            }
            let mut got = Vec::new();
            walk_rows(axes.iter().copied(), first, |at| {
                got.push(at);
                Ok(())
            })
            .unwrap();
            assert_eq!(got, want, "{axes:?}");
        }
    }
}
