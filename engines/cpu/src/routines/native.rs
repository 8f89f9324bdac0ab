//! The built-in instructions that do not become generated kernels, in plain Rust: scans,
//! gathers, scatters, sorts, searches, float products (in order) and reductions of nothing.

use crate::routines::reduce::{Reducible, scan, scan_into};
use crate::routines::views;
use crate::run::pool::Pool;
use std::sync::{Mutex, PoisonError};
use vm_ir::semantics::SortKey;
use vm_ir::{DType, Element, Error, Instruction, Kind, Opcode, Operand, Result, View, with_dtype};
use vm_runtime::HostMemory;
use vm_runtime::memory::{try_collect, try_vec};

fn view(instr: &Instruction, i: usize) -> Result<&View> {
    instr.operands.get(i).and_then(Operand::as_view).ok_or_else(|| Error::invalid(Some(i), "expected a view"))
}

/// Executes one non-kernel built-in instruction; sorts of many lines and searches of many keys
/// in parallel on `pool`.
pub fn execute(instr: &Instruction, mem: &mut HostMemory, pool: &Pool) -> Result<()> {
    match instr.opcode.kind() {
        Kind::Accumulate => accumulate(instr, mem),
        Kind::Gather => gather(instr, mem),
        Kind::Scatter => scatter(instr, mem),
        Kind::Sort => sort(instr, mem, pool),
        Kind::Search => search(instr, mem, pool),
        Kind::Reduce if view(instr, 1)?.nelem() == 0 => empty_reduce(instr, mem),
        Kind::Reduce if vm_fusion::is_float_product(instr) => ordered_product(instr, mem),
        k => Err(Error::Internal(format!("{} ({k:?}) is not a native instruction", instr.opcode))),
    }
}

fn accumulate(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, input) = (view(instr, 0)?, view(instr, 1)?);
    let axis = instr.axis().ok_or_else(|| Error::invalid(Some(2), "missing axis"))?;
    let n = input.nelem();
    if out.is_contiguous() && input.is_contiguous() && out.base.id != input.base.id && n > 0 {
        // Straight from the input's run into the output's, which nothing else reads meanwhile.
        let whole = out.start == 0 && n as u64 == out.base.nelem;
        views::buffer(mem, input)?;
        let to = if whole { views::buffer_overwritten(mem, out)? } else { views::buffer(mem, out)? };
        return with_dtype!(out.dtype(), T => {
            let to = to.as_mut_slice::<T>()[out.start as usize..][..n].as_mut_ptr();
            let from = &views::data::<T>(mem, input)?[input.start as usize..][..n];
            // SAFETY: `to` addresses the output's `n` elements in its base's buffer, an
            // allocation apart from the input's (another base) and from the table of buffers;
            // nothing allocates or frees a buffer meanwhile, and this is its only access.
            let to = unsafe { std::slice::from_raw_parts_mut(to, n) };
            scan_into(instr.opcode, from, to, &input.shape, axis);
            Ok(())
        });
    }
    // The output first: its base bounds the copy of the input (same shape), and when it cannot
    // be allocated the error names it.
    views::buffer(mem, out)?;
    with_dtype!(out.dtype(), T => {
        let mut data = views::read::<T>(mem, input)?;
        scan(instr.opcode, &mut data, &input.shape, axis);
        views::write(mem, out, &data)
    })
}

/// Readies the buffer of `out` for a routine that reads `input` whole, then writes every element
/// of `out`: not zeroed first when `out` is its whole base and `input` lies in another.
fn output_buffer(mem: &mut HostMemory, out: &View, input: &View) -> Result<()> {
    match out.is_whole_base() && out.base.id != input.base.id {
        true => views::buffer_overwritten(mem, out).map(|_| ()),
        false => views::buffer(mem, out).map(|_| ()),
    }
}

/// Elements per task of a parallel sort or search: below twice this, one thread does it all.
const PARALLEL_ELEMENTS: usize = 1 << 15;

/// Runs `f` on each pair of matching parts of `a` and `b` (`a_part` and `b_part` elements
/// long), in parallel on `pool`.
fn in_parts<A: Send, B: Send>(
    pool: &Pool,
    mem: &HostMemory,
    (a, a_part): (&mut [A], usize),
    (b, b_part): (&mut [B], usize),
    f: impl Fn(&mut [A], &mut [B]) + Sync,
) -> Result<()> {
    let parts: Vec<Mutex<(&mut [A], &mut [B])>> =
        a.chunks_mut(a_part.max(1)).zip(b.chunks_mut(b_part.max(1))).map(Mutex::new).collect();
    let task = |t: usize| {
        let mut part = parts[t].lock().unwrap_or_else(PoisonError::into_inner);
        let (x, y) = &mut *part;
        f(x, y);
    };
    pool.run(parts.len(), &task, mem.interrupt())
}

/// `sort` and `argsort` (the whole input read before the output is written); the lines of a
/// sort along the last axis in parallel, whole lines to a task, or, when fewer long lines than
/// threads, each line split into places by key ([`sort_in_places`]), sorted in parallel.
fn sort(instr: &Instruction, mem: &mut HostMemory, pool: &Pool) -> Result<()> {
    let (out, input) = (view(instr, 0)?, view(instr, 1)?);
    let axis = instr.axis().ok_or_else(|| Error::invalid(Some(2), "missing axis"))?;
    output_buffer(mem, out, input)?;
    let len = input.shape[axis];
    let lines_per_task = if axis + 1 == input.ndim() && len > 0 && input.nelem() >= 2 * PARALLEL_ELEMENTS {
        Some(PARALLEL_ELEMENTS.div_ceil(len))
    } else {
        None
    };
    // Fewer long lines than threads (one line of a 1-d array): each line split into places by
    // key, the places sorted in parallel (what one stable sort gives).
    let threads = pool.threads();
    let long_lines =
        axis + 1 == input.ndim() && threads > 1 && len >= 2 * PARALLEL_ELEMENTS && input.nelem() / len < threads;
    with_dtype!(input.dtype(), T => {
        let mut data = views::read::<T>(mem, input)?;
        if long_lines {
            if instr.opcode == Opcode::Argsort {
                let mut positions = try_vec::<i64>(data.len(), out.base.id, "argsort's positions")?;
                positions.resize(data.len(), 0);
                // Each value's (order key, position), sorted by key.
                let mut keyed: Vec<(u64, i64)> = try_vec(len, out.base.id, "argsort's keys")?;
                for (line, at) in data.chunks(len).zip(positions.chunks_mut(len)) {
                    keyed.clear();
                    keyed.extend(line.iter().enumerate().map(|(p, &v)| (SortKey::position_key(v), p as i64)));
                    sort_in_places(pool, mem, &mut keyed, |&(key, _)| key, out)?;
                    at.iter_mut().zip(&keyed).for_each(|(p, &(_, q))| *p = q);
                }
                return views::write(mem, out, &positions);
            }
            let mut nans = Vec::new();
            for line in data.chunks_mut(len) {
                let numbers = vm_ir::semantics::nans_last(line, &mut nans);
                sort_in_places(pool, mem, &mut line[..numbers], |&v| SortKey::key(v), out)?;
            }
            return views::write(mem, out, &data);
        }
        if instr.opcode == Opcode::Argsort {
            let mut positions = try_vec::<i64>(data.len(), out.base.id, "argsort's positions")?;
            positions.resize(data.len(), 0);
            match lines_per_task {
                Some(lines) => in_parts(pool, mem, (&mut data, lines * len), (&mut positions, lines * len), |x, p| {
                    vm_ir::semantics::argsort_lines(x, &[x.len() / len, len], 1, p)
                })?,
                None => vm_ir::semantics::argsort_lines(&data, &input.shape, axis, &mut positions),
            }
            views::write(mem, out, &positions)
        } else {
            match lines_per_task {
                Some(lines) => {
                    let mut nothing = vec![(); data.len()]; // (zero-sized: no memory)
                    in_parts(pool, mem, (&mut data, lines * len), (&mut nothing, lines * len), |x, _| {
                        vm_ir::semantics::sort_lines(x, &[x.len() / len, len], 1)
                    })?
                }
                None => vm_ir::semantics::sort_lines(&mut data, &input.shape, axis),
            }
            views::write(mem, out, &data)
        }
    })
}

/// The extension methods `partition` (`positions` false) and `argpartition` (true): the input
/// read whole before the output is written, lines along the last axis in parallel, whole lines
/// to a task.
pub fn partition(instr: &Instruction, positions: bool, mem: &mut HostMemory, pool: &Pool) -> Result<()> {
    let (out, input, lo, hi) = vm_ir::extension::partition_operands(instr, positions)?;
    output_buffer(mem, out, input)?;
    let len = input.shape[input.ndim() - 1];
    let part = PARALLEL_ELEMENTS.div_ceil(len) * len;
    let parallel = input.nelem() >= 2 * PARALLEL_ELEMENTS && input.nelem() > len;
    with_dtype!(input.dtype(), T => {
        let mut data = views::read::<T>(mem, input)?;
        if positions {
            let mut at = try_vec::<i64>(data.len(), out.base.id, "argpartition's positions")?;
            at.resize(data.len(), 0);
            let lines = |x: &mut [T], p: &mut [i64]| {
                for (line, q) in x.chunks_exact(len).zip(p.chunks_exact_mut(len)) {
                    vm_ir::semantics::argpartition_line(line, lo, hi, q);
                }
            };
            match parallel {
                true => in_parts(pool, mem, (&mut data, part), (&mut at, part), lines)?,
                false => lines(&mut data, &mut at),
            }
            views::write(mem, out, &at)
        } else {
            let lines = |x: &mut [T], _: &mut [()]| {
                x.chunks_exact_mut(len).for_each(|line| vm_ir::semantics::partition_line(line, lo, hi));
            };
            let mut nothing = vec![(); data.len()]; // (zero-sized: no memory)
            match parallel {
                true => in_parts(pool, mem, (&mut data, part), (&mut nothing, part), lines)?,
                false => lines(&mut data, &mut nothing),
            }
            views::write(mem, out, &data)
        }
    })
}

/// Sorts `items` by `key` stably ([`vm_ir::semantics::sort_by_key`]'s result), in parallel on
/// `pool`: split into places of about as many values by sampled key bounds
/// ([`vm_ir::semantics::split_by_key`], [`PLACES_PER_THREAD`] a thread), the places sorted apart.
/// `out` names the output when the scratch cannot be allocated.
fn sort_in_places<E: Copy + Send>(
    pool: &Pool,
    mem: &HostMemory,
    items: &mut [E],
    key: impl Fn(&E) -> u64 + Sync,
    out: &View,
) -> Result<()> {
    let mut scratch = try_vec::<E>(items.len(), out.base.id, "a sort's scratch")?;
    scratch.extend_from_slice(items);
    let lengths = vm_ir::semantics::split_by_key(items, &mut scratch, PLACES_PER_THREAD * pool.threads(), &key);
    let mut places: Vec<Mutex<&mut [E]>> = Vec::with_capacity(lengths.len());
    let mut rest = &mut scratch[..];
    for count in lengths {
        let (place, tail) = std::mem::take(&mut rest).split_at_mut(count);
        places.push(Mutex::new(place));
        rest = tail;
    }
    let task = |t: usize| {
        let mut place = places[t].lock().unwrap_or_else(PoisonError::into_inner);
        vm_ir::semantics::sort_by_key(&mut place, &key);
    };
    pool.run(places.len(), &task, mem.interrupt())?;
    items.copy_from_slice(&scratch);
    Ok(())
}

/// Places per thread of a long line's parallel sort ([`sort_in_places`]): enough that the
/// threads finish about together when some places come out larger.
const PLACES_PER_THREAD: usize = 4;

/// `searchsorted_left` and `searchsorted_right` (the inputs read whole before the output is
/// written); many keys into sorted values in parallel.
fn search(instr: &Instruction, mem: &mut HostMemory, pool: &Pool) -> Result<()> {
    let (out, sorted, keys) = (view(instr, 0)?, view(instr, 1)?, view(instr, 2)?);
    views::buffer(mem, out)?;
    let right = instr.opcode == Opcode::SearchsortedRight;
    with_dtype!(sorted.dtype(), T => {
        let mut wanted = views::read::<T>(mem, keys)?;
        let few = wanted.len().saturating_mul(vm_ir::semantics::FEW_KEYS) <= sorted.nelem();
        if few && sorted.is_contiguous() && sorted.nelem() > 0 {
            // Few keys: searched among the values in place (no table of all of them).
            views::buffer(mem, sorted)?;
            let values = &views::data::<T>(mem, sorted)?[sorted.start as usize..][..sorted.nelem()];
            let mut positions = try_vec::<i64>(wanted.len(), out.base.id, "searchsorted's positions")?;
            positions.resize(wanted.len(), 0);
            vm_ir::semantics::search_sorted(values, &wanted, right, &mut positions);
            return views::write(mem, out, &positions);
        }
        let table = vm_ir::semantics::SearchTable::new(&views::read::<T>(mem, sorted)?);
        let mut positions = try_vec::<i64>(wanted.len(), out.base.id, "searchsorted's positions")?;
        positions.resize(wanted.len(), 0);
        if table.is_sorted() && wanted.len() >= 2 * PARALLEL_ELEMENTS {
            let part = PARALLEL_ELEMENTS;
            in_parts(pool, mem, (&mut wanted, part), (&mut positions, part), |k, p| table.search(k, right, p))?;
        } else {
            table.search(&wanted, right, &mut positions);
        }
        views::write(mem, out, &positions)
    })
}

fn empty_reduce(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let out = view(instr, 0)?;
    with_dtype!(out.dtype(), T => {
        let identity = T::identity(instr.opcode);
        let data = views::buffer(mem, out)?.as_mut_slice::<T>();
        for o in out.offsets() {
            data[o as usize] = identity;
        }
        Ok(())
    })
}

/// A float product along the instruction's axis, left to right from the first element, as
/// NumPy multiplies: where a running product overflows or underflows, the order decides
/// between infinity, NaN and a finite result (see `vm_fusion::Options::ordered_float_products`).
fn ordered_product(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, input) = (view(instr, 0)?, view(instr, 1)?);
    let axis = instr.axis().ok_or_else(|| Error::invalid(Some(2), "missing axis"))?;
    let (outer, len, inner) =
        (input.shape[..axis].iter().product::<usize>(), input.shape[axis], input.shape[axis + 1..].iter().product());
    views::buffer(mem, out)?;
    views::buffer(mem, input)?;
    with_dtype!(out.dtype(), T => {
        let mut acc = try_vec::<T>(outer * inner, out.base.id, "a product along an axis into")?;
        let mut values = views::elements::<T>(mem, input)?;
        for _ in 0..outer {
            let row = acc.len();
            acc.extend(values.by_ref().take(inner));
            for _ in 1..len {
                for (a, x) in acc[row..].iter_mut().zip(values.by_ref().take(inner)) {
                    *a = T::combine(instr.opcode, *a, x);
                }
            }
        }
        drop(values);
        views::write(mem, out, &acc)
    })
}

/// The index view's values, row-major, read in place (its base allocated), as exact integers.
fn raw_index<'m>(mem: &'m HostMemory, index: &'m View) -> Result<Box<dyn ExactSizeIterator<Item = i128> + 'm>> {
    with_dtype!(index.dtype(), I => {
        let values = views::elements::<I>(mem, index)?;
        Ok(Box::new(values.map(ToIndex::index)))
    })
}

/// Checks every index of `instr` against `len` before anything is written. The positions are
/// not stored: an index may be a broadcast view of any extent, and it is read again when used.
fn check_positions(instr: &Instruction, mem: &HostMemory, index: &View, len: usize) -> Result<()> {
    for (i, k) in raw_index(mem, index)?.enumerate() {
        if k < 0 || k >= len as i128 {
            return Err(out_of_range(instr, i, k, len));
        }
    }
    Ok(())
}

/// The positions the index holds, checked before by [`check_positions`].
fn positions<'m>(mem: &'m HostMemory, index: &'m View) -> Result<impl ExactSizeIterator<Item = usize> + 'm> {
    Ok(raw_index(mem, index)?.map(|k| k as usize))
}

/// Index elements as `i128` (validation admits only integer index dtypes; the others are here
/// for `with_dtype!`).
trait ToIndex: Copy {
    fn index(self) -> i128;
}

macro_rules! to_index {
    ($($t:ty),*) => { $( impl ToIndex for $t { fn index(self) -> i128 { self as i128 } } )* };
}
to_index!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl ToIndex for bool {
    fn index(self) -> i128 {
        i128::from(self)
    }
}

/// Allocates the bases of every view operand of `instr` (the output first), so that its inputs
/// can be read in place through a shared borrow of `mem`.
fn allocate(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    for v in instr.operands.iter().filter_map(Operand::as_view) {
        views::buffer(mem, v)?;
    }
    Ok(())
}

fn gather(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (out, src, index) = (view(instr, 0)?, view(instr, 1)?, view(instr, 2)?);
    let len = src.nelem();
    // A row-major source holds position `k` at `start + k`; any other is unravelled.
    let dense = src.is_contiguous();
    if dense && index.dtype() == DType::I64 && index.is_contiguous() && out.is_contiguous() {
        return with_dtype!(out.dtype(), T => gather_dense::<T>(instr, mem, (out, src, index)));
    }
    allocate(instr, mem)?;
    with_dtype!(out.dtype(), T => {
        // The source is indexed where it lies (a broadcast source may visit far more elements
        // than its base holds); the values are staged, every index checked before anything is
        // written, because the output may overlap the source or the index.
        let from = views::data::<T>(mem, src)?;
        let mut values = try_vec(index.nelem(), out.base.id, "the values gather writes to")?;
        for (i, k) in raw_index(mem, index)?.enumerate() {
            if k < 0 || k >= len as i128 {
                return Err(out_of_range(instr, i, k, len));
            }
            let k = k as usize;
            values.push(from[if dense { src.start as usize + k } else { src.offset_at(k) as usize }]);
        }
        views::write(mem, out, &values)
    })
}

/// [`gather`] of row-major views with an `i64` index: slices instead of position iterators.
fn gather_dense<T: Element>(
    instr: &Instruction,
    mem: &mut HostMemory,
    (out, src, index): (&View, &View, &View),
) -> Result<()> {
    let (n, len) = (index.nelem(), src.nelem());
    views::buffer(mem, src)?;
    views::buffer(mem, index)?;
    // An output of its own base, all of it, is written in place, not zeroed first; else the
    // values are staged (the output may overlap the source or the index).
    let apart = out.base.id != src.base.id && out.base.id != index.base.id;
    let whole = out.start == 0 && n as u64 == out.base.nelem;
    if n == 0 {
        // Nothing to read; an empty view may start past the end of its (empty) base.
        return views::buffer(mem, out).map(|_| ());
    }
    // Every index checked before the output is touched.
    let idx = &views::data::<i64>(mem, index)?[index.start as usize..][..n];
    if let Some(i) = idx.iter().position(|&k| k < 0 || k as usize >= len) {
        return Err(out_of_range(instr, i, i128::from(idx[i]), len));
    }
    if apart {
        let to = if whole { views::buffer_overwritten(mem, out)? } else { views::buffer(mem, out)? };
        let to = to.as_mut_slice::<T>()[out.start as usize..][..n].as_mut_ptr();
        let idx = &views::data::<i64>(mem, index)?[index.start as usize..][..n];
        let from = &views::data::<T>(mem, src)?[src.start as usize..][..len];
        // SAFETY: `to` addresses the output's `n` elements in its base's buffer, its own
        // allocation apart from the buffers read here (other bases) and from the table of
        // buffers; nothing allocates or frees a buffer while it is written, and this slice is
        // the only access to that memory.
        let to = unsafe { std::slice::from_raw_parts_mut(to, n) };
        for (o, &k) in to.iter_mut().zip(idx) {
            *o = from[k as usize];
        }
        return Ok(());
    }
    let idx = &views::data::<i64>(mem, index)?[index.start as usize..][..n];
    let from = &views::data::<T>(mem, src)?[src.start as usize..][..len];
    let mut values = try_vec(n, out.base.id, "the values gather writes to")?;
    values.extend(idx.iter().map(|&k| from[k as usize]));
    views::buffer(mem, out)?.as_mut_slice::<T>()[out.start as usize..][..n].copy_from_slice(&values);
    Ok(())
}

/// [`scatter`] into a run of its base from row-major views of other bases with an `i64` index
/// (the source's value `constant` when it is one): every index checked, then written in index
/// order straight from the slices (nothing read can be written, so nothing is staged).
fn scatter_dense<T: Element + Reducible>(
    instr: &Instruction,
    mem: &mut HostMemory,
    (dst, index): (&View, &View),
    constant: Option<T>,
    combine: Option<Opcode>,
) -> Result<()> {
    let (n, len) = (index.nelem(), dst.nelem());
    if n == 0 {
        return Ok(()); // an empty view may start past the end of its (empty) base
    }
    let idx = &views::data::<i64>(mem, index)?[index.start as usize..][..n];
    if let Some(i) = idx.iter().position(|&k| k < 0 || k as usize >= len) {
        return Err(out_of_range(instr, i, i128::from(idx[i]), len));
    }
    let out = &mut views::buffer(mem, dst)?.as_mut_slice::<T>()[dst.start as usize..][..len];
    let (out, len) = (out.as_mut_ptr(), out.len());
    // SAFETY: `out` is a run of the destination base's buffer, its own allocation apart from
    // the buffers read below (other bases) and from the table of buffers; nothing allocates or
    // frees a buffer while it is written, and the slice is the only access to that memory.
    let out = unsafe { std::slice::from_raw_parts_mut(out, len) };
    let at = views::data::<i64>(mem, index)?[index.start as usize..][..n].iter().map(|&k| k as usize);
    match (constant, combine) {
        (Some(x), None) => at.for_each(|k| out[k] = x),
        (Some(x), Some(op)) => combine_at(op, out, at.map(|k| (k, x))),
        (None, combine) => {
            let v = view(instr, 1)?;
            let src = &views::data::<T>(mem, v)?[v.start as usize..][..n];
            match combine {
                None => at.zip(src).for_each(|(k, &x)| out[k] = x),
                Some(op) => combine_at(op, out, at.zip(src.iter().copied())),
            }
        }
    }
    Ok(())
}

/// `out[k] = out[k] op x` for each position `k` and value `x` in turn, the combiner of `op`
/// matched once (a sum, the common case, in a loop of its own).
fn combine_at<T: Reducible>(op: Opcode, out: &mut [T], at: impl Iterator<Item = (usize, T)>) {
    if op == Opcode::AddReduce {
        at.for_each(|(k, x)| out[k] = T::combine(Opcode::AddReduce, out[k], x));
    } else {
        at.for_each(|(k, x)| out[k] = T::combine(op, out[k], x));
    }
}

/// The error of index `k`, at position `i` of the index, outside `len` elements.
fn out_of_range(instr: &Instruction, i: usize, k: i128, len: usize) -> Error {
    Error::Execution(format!(
        "{}: index {k} (at position {i} of the index) is out of range for {len} elements",
        instr.opcode
    ))
}

/// `scatter` and `scatter_add` (each value combined, in index order, with the element it lands
/// on by the combiner of the reduction of the same operation).
fn scatter(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    let (dst, index) = (view(instr, 0)?, view(instr, 2)?);
    let combine = match instr.opcode {
        Opcode::ScatterAdd => {
            let reduction = vm_ir::opcode::scatter_add_op(dst.dtype()).reduction();
            Some(Opcode::from(reduction.expect("scatter_add combines as a reduction does")))
        }
        _ => None,
    };
    allocate(instr, mem)?;
    let apart = |o: &Operand| o.as_view().is_none_or(|v| v.base.id != dst.base.id && v.is_contiguous());
    if index.dtype() == DType::I64
        && index.is_contiguous()
        && index.base.id != dst.base.id
        && dst.line_stride() == Some(1)
        && apart(&instr.operands[1])
    {
        return with_dtype!(dst.dtype(), T => {
            let constant = instr.operands[1].as_const().map(|s| s.get::<T>());
            scatter_dense::<T>(instr, mem, (dst, index), constant, combine)
        });
    }
    check_positions(instr, mem, index, dst.nelem())?;
    with_dtype!(dst.dtype(), T => {
        // Writes are staged (one per index element) so that a source or index overlapping the
        // destination is read in full first; the destination is addressed position by position.
        let values: Box<dyn ExactSizeIterator<Item = T>> = match &instr.operands[1] {
            Operand::View(v) => Box::new(views::elements::<T>(mem, v)?),
            Operand::Const(s) => Box::new(std::iter::repeat_n(s.get::<T>(), index.nelem())),
        };
        let writes = positions(mem, index)?.zip(values).map(|(k, x)| (dst.offset_at(k) as usize, x));
        let writes = try_collect(writes, dst.base.id, "the values scatter writes to")?;
        let data = views::buffer(mem, dst)?.as_mut_slice::<T>();
        match combine {
            None => writes.into_iter().for_each(|(o, x)| data[o] = x),
            Some(op) => writes.into_iter().for_each(|(o, x)| data[o] = T::combine(op, data[o], x)),
        }
        Ok(())
    })
}
