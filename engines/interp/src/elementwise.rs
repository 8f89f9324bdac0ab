//! Element-wise instructions: unary, binary, `identity` (copy and cast) and `select`. Each one
//! maps its inputs (read in place, constants broadcast) element by element into its result,
//! then writes it.

use crate::elem::{Elem, to_bool_binary, to_bool_unary};
use crate::iterate::{
    Lane, fill_at, fill_run, fill_runs, for_each_row, for_each_row_of, for_each_view_row_of, lane, prepare_overwriting,
    reads_base_of, room, rows, update_at, update_line, update_run, write_view,
};
use vm_ir::scalar::Cast;
use vm_ir::semantics;
use vm_ir::{BinaryOp, DType, Error, Instruction, Opcode, Operand, Result, TypeRule, UnaryOp, View, with_dtype};
use vm_runtime::{HostMemory, Interrupt};

/// The output view (operand 0) of an instruction that writes one.
pub fn output(instr: &Instruction) -> Result<&View> {
    instr
        .operands
        .first()
        .and_then(|o| o.as_view())
        .ok_or_else(|| Error::invalid(Some(0), format!("the output of {} must be a view", instr.opcode)))
}

/// The error for an opcode the tables do not define for a dtype.
pub fn not_defined(op: Opcode, dtype: DType) -> Error {
    Error::Unsupported(format!("interp has no {op} for {dtype}"))
}

/// Checks the operand count, so that indexing operands cannot panic.
pub fn expect_operands(instr: &Instruction, n: usize) -> Result<()> {
    if instr.operands.len() != n {
        return Err(Error::invalid(None, format!("{} takes {n} operands, got {}", instr.opcode, instr.operands.len())));
    }
    Ok(())
}

/// Binds `$get` to the reader of lane `$lane`'s element `k` and evaluates `$body` with it: one
/// copy of `$body` per kind of lane, each a loop the compiler sees through.
macro_rules! with_lane {
    ($lane:expr, |$get:ident| $body:expr) => {
        match $lane {
            Lane::Run(run) => {
                let $get = |k: usize| run[k];
                $body
            }
            Lane::Line { data, start, stride } => {
                let $get = |k: usize| data[(start + k as isize * stride) as usize];
                $body
            }
            Lane::Const(x) => {
                let $get = |_: usize| x;
                $body
            }
        }
    };
}

/// The inputs of an instruction computed in place that are its output itself: bit `k` for
/// operand `k + 1` (`x += y`, `x = x * x`).
type ItselfInputs = u8;

/// The elements of output `out` of `instr` as one slice of its base's buffer, for computing the
/// result in place: when `out` is a contiguous run of its base and every input that reads that
/// base is `out` itself (so what the instruction reads of it at element `k` is what it writes
/// there, read just before: the opcode table's "inputs read in full first" holds trivially).
/// `compute` gets host memory for reading the other inputs, the slice, and which inputs are the
/// output ([`ItselfInputs`]: it reads those from the slice, never from host memory); `Ok(false)`
/// when the output does not qualify (the caller collects the result first).
fn in_place<R: Elem>(
    mem: &mut HostMemory,
    instr: &Instruction,
    out: &View,
    compute: impl FnOnce(&HostMemory, &mut [R], ItselfInputs) -> Result<()>,
) -> Result<bool> {
    if !out.is_contiguous() || out.dtype() != R::DTYPE {
        return Ok(false);
    }
    let Some(itself) = itself_inputs(instr, out) else { return Ok(false) };
    let (start, n) = (out.start as usize, out.nelem());
    let run = &mut crate::iterate::buffer(mem, &out.base)?.as_mut_slice::<R>()[start..start + n];
    let (ptr, len) = (run.as_mut_ptr(), run.len());
    // SAFETY: `ptr..ptr + len` lies in the buffer of `out`'s base (just sliced), whose memory is
    // its own allocation, apart from the table of buffers and from every other buffer. `compute`
    // reads through host memory only the inputs of other bases (those of `out`'s are marked in
    // `itself`, and it reads them from the slice), and allocates or frees no buffer, so the
    // slice is the only access to that memory and stays valid while it runs.
    let dst = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
    compute(mem, dst, itself)?;
    Ok(true)
}

/// All of the buffer of `out`'s base, for writing the output's rows where they lie: when `out`
/// is not one contiguous run (that is [`in_place`]: `v[1:-1, 1:-1] = ...`, `v[1:-1, j] = ...`)
/// and no input reads its base. `compute` gets host memory for reading the inputs and the
/// base's elements, of which it writes only `out`'s rows ([`for_each_view_row_of`]); `Ok(false)`
/// when the output does not qualify.
fn in_place_rows<R: Elem>(
    mem: &mut HostMemory,
    instr: &Instruction,
    out: &View,
    compute: impl FnOnce(&HostMemory, &mut [R]) -> Result<()>,
) -> Result<bool> {
    if out.ndim() == 0 || reads_base_of(instr, out) || out.dtype() != R::DTYPE || out.nelem() == 0 {
        return Ok(false);
    }
    let all = crate::iterate::buffer(mem, &out.base)?.as_mut_slice::<R>();
    let (ptr, len) = (all.as_mut_ptr(), all.len());
    // SAFETY: as in `in_place`: the buffer of `out`'s base is its own allocation, which
    // `compute` reaches only through this slice (no input reads that base) and which no buffer
    // is allocated or freed while it runs.
    let base = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
    compute(mem, base)?;
    Ok(true)
}

/// The buffer of output `out` of `instr` as one slice, for the common case computed first:
/// `out` is all of its base (row-major from element 0) and no input reads that base (a new
/// result: `a + b`). The buffer is taken as it is (from the pool, not cleared) when the base
/// has none yet. `compute` gets host memory for the inputs and the slice; it answers
/// `Ok(false)`, having written nothing, when it cannot read the inputs as lanes of their bases
/// ([`run_input`]), as does this function when `out` does not qualify.
fn into_whole_output<R: Elem>(
    mem: &mut HostMemory,
    instr: &Instruction,
    out: &View,
    compute: impl FnOnce(&HostMemory, &mut [R]) -> Result<bool>,
) -> Result<bool> {
    if out.dtype() != R::DTYPE || !out.is_whole_base() || reads_base_of(instr, out) {
        return Ok(false);
    }
    // (Inputs that cannot be lanes are known before the output's buffer is taken.)
    if instr.operands[1..].iter().any(|o| o.as_view().is_some_and(|v| v.line_stride().is_none())) {
        return Ok(false);
    }
    let all = mem.ensure_overwritten(&out.base)?;
    if all.dtype() != R::DTYPE || all.nelem() != out.nelem() {
        return Ok(false); // (a mismatched buffer: the general path reports it)
    }
    let all = all.as_mut_slice::<R>();
    let (ptr, len) = (all.as_mut_ptr(), all.len());
    // SAFETY: the buffer of `out`'s base is its own allocation, apart from the table of
    // buffers and from every other buffer; no input reads that base, and `compute` allocates or
    // frees no buffer, so the slice is the only access to that memory while it runs.
    let dst = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
    compute(mem, dst)
}

/// Input `o` of an instruction writing an array of `shape` as a [`Lane`] of its elements in
/// row-major order ([`lane`]): a constant, or a view of an allocated base of `T`'s dtype whose
/// elements lie on one line of its data (a run, a strided line: a column, or one element
/// broadcast); `None` for anything else (the general path reads it).
fn run_input<'m, T: Elem>(mem: &'m HostMemory, o: &'m Operand, shape: &[usize]) -> Option<Lane<'m, T>> {
    let readable = match o {
        Operand::Const(c) => c.dtype() == T::DTYPE,
        Operand::View(v) => v.dtype() == T::DTYPE && mem.get(v.base.id).is_some_and(|b| b.dtype() == T::DTYPE),
    };
    if !readable {
        return None;
    }
    lane(mem, o, shape).ok().flatten()
}

/// All of the buffer of `out`'s base, with `out`'s first offset and stride, for computing the
/// result where it lies when `out` is one strided line of its base (a column: `A[:, j] -= t`)
/// and every input reading that base is `out` itself (as in [`in_place`]). `compute` gets host
/// memory for the other inputs, the base's elements (it writes only `out`'s), the line, and
/// the inputs that are the output; it answers `Ok(false)`, having written nothing, when it
/// cannot read the other inputs as lanes, as does this function when `out` does not qualify.
fn in_place_line<R: Elem>(
    mem: &mut HostMemory,
    instr: &Instruction,
    out: &View,
    compute: impl FnOnce(&HostMemory, &mut [R], (usize, isize), ItselfInputs) -> Result<bool>,
) -> Result<bool> {
    let Some(stride) = out.line_stride() else { return Ok(false) };
    if stride == 1 || out.nelem() < 2 || out.dtype() != R::DTYPE {
        return Ok(false);
    }
    let Some(itself) = itself_inputs(instr, out) else { return Ok(false) };
    let all = crate::iterate::buffer(mem, &out.base)?.as_mut_slice::<R>();
    let (ptr, len) = (all.as_mut_ptr(), all.len());
    // SAFETY: as in `in_place`: the buffer of `out`'s base is its own allocation, which
    // `compute` reaches only through this slice (the inputs of that base are `out` itself,
    // read from the slice) and which no buffer is allocated or freed while it runs.
    let base = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
    compute(mem, base, (out.start as usize, stride as isize), itself)
}

/// The inputs of `instr` that are its output `out` ([`ItselfInputs`]); `None` when another
/// input reads `out`'s base (the result is then computed aside first).
fn itself_inputs(instr: &Instruction, out: &View) -> Option<ItselfInputs> {
    let mut itself: ItselfInputs = 0;
    for (k, input) in instr.operands[1..].iter().enumerate() {
        match input.as_view() {
            Some(v) if v.base.id == out.base.id => {
                if !v.is_identical(out) || k >= ItselfInputs::BITS as usize {
                    return None;
                }
                itself |= 1 << k;
            }
            _ => {}
        }
    }
    Some(itself)
}

/// An element of an output read as an input of the same dtype (see [`ItselfInputs`]):
/// `A` and `R` are one type, as [`Elem`] has one type per dtype (checked by the caller).
fn itself<A: Elem, R: Elem>(d: &R) -> A {
    debug_assert_eq!(A::DTYPE, R::DTYPE);
    // SAFETY: A and R are the same type (same dtype, one Elem type per dtype), so this is a copy.
    unsafe { std::mem::transmute_copy(d) }
}

/// The error for an instruction whose output is one of its inputs with another dtype (which
/// cannot be: one base, one dtype).
fn itself_mismatch(instr: &Instruction) -> Error {
    Error::Internal(format!("{} reads its output as another dtype", instr.opcode))
}

/// `out = f(in)` element-wise.
fn map1<A: Elem, R: Elem>(mem: &mut HostMemory, instr: &Instruction, f: impl Fn(A) -> R + Copy) -> Result<()> {
    let out = output(instr)?;
    let new_result = |mem: &HostMemory, dst: &mut [R]| -> Result<bool> {
        let Some(a) = run_input::<A>(mem, &instr.operands[1], &out.shape) else { return Ok(false) };
        row1(dst, a, f, mem.interrupt()).map(|()| true)
    };
    if into_whole_output::<R>(mem, instr, out, new_result)? {
        return Ok(());
    }
    prepare_overwriting(mem, instr)?;
    let compute = |mem: &HostMemory, dst: &mut [R], itself_inputs: ItselfInputs| -> Result<()> {
        let interrupt = mem.interrupt();
        if itself_inputs != 0 {
            if A::DTYPE != R::DTYPE {
                return Err(itself_mismatch(instr));
            }
            return update_row(dst, Lane::Const(()), move |a: A, ()| f(a), interrupt);
        }
        if let Some(a) = lane::<A>(mem, &instr.operands[1], &out.shape)? {
            return row1(dst, a, f, interrupt);
        }
        let a = rows::<A>(mem, &instr.operands[1], &out.shape)?;
        for_each_row_of(&out.shape, dst, [&a], |row, [a]| row1(row, a, f, interrupt))
    };
    if in_place::<R>(mem, instr, out, compute)? {
        return Ok(());
    }
    let along_line = |mem: &HostMemory, base: &mut [R], line: (usize, isize), itself_inputs| {
        if itself_inputs != 0 && A::DTYPE != R::DTYPE {
            return Err(itself_mismatch(instr));
        }
        // The input as a lane (`None`: the output itself).
        let a = match itself_inputs {
            0 => match lane::<A>(mem, &instr.operands[1], &out.shape)? {
                Some(l) => Some(l),
                None => return Ok(false),
            },
            _ => None,
        };
        let value = |k: usize, d: &R| f(a.as_ref().map_or_else(|| itself(d), |a| a.at(k)));
        update_line(base, line, out.nelem(), value, mem.interrupt())?;
        Ok(true)
    };
    if in_place_line::<R>(mem, instr, out, along_line)? {
        return Ok(());
    }
    let by_rows = |mem: &HostMemory, base: &mut [R]| -> Result<()> {
        let a = rows::<A>(mem, &instr.operands[1], &out.shape)?;
        for_each_view_row_of(out, base, [&a], |row, [a]| row1(row, a, f, mem.interrupt()))
    };
    if in_place_rows::<R>(mem, instr, out, by_rows)? {
        return Ok(());
    }
    let mut values = zeroed_result::<R>(out)?;
    compute(mem, &mut values, 0)?;
    write_view(mem, out, values)
}

/// One row of [`map1`].
fn row1<A: Copy, R>(dst: &mut [R], a: Lane<'_, A>, f: impl Fn(A) -> R, interrupt: &Interrupt) -> Result<()> {
    match a {
        Lane::Run(xs) => fill_run(dst, xs, f, interrupt),
        Lane::Line { .. } => Lane::for_each_gathered_piece(dst, [a], |piece, [run]| {
            with_lane!(run, |x| fill_at(piece, |k| f(x(k)), interrupt))
        }),
        a => with_lane!(a, |x| fill_at(dst, |k| f(x(k)), interrupt)),
    }
}

/// `out = f(in1, in2)` element-wise.
fn map2<A: Elem, R: Elem>(mem: &mut HostMemory, instr: &Instruction, f: impl Fn(A, A) -> R + Copy) -> Result<()> {
    let out = output(instr)?;
    let new_result = |mem: &HostMemory, dst: &mut [R]| -> Result<bool> {
        let (Some(a), Some(b)) =
            (run_input::<A>(mem, &instr.operands[1], &out.shape), run_input::<A>(mem, &instr.operands[2], &out.shape))
        else {
            return Ok(false);
        };
        row2(dst, (a, b), f, mem.interrupt()).map(|()| true)
    };
    if into_whole_output::<R>(mem, instr, out, new_result)? {
        return Ok(());
    }
    prepare_overwriting(mem, instr)?;
    let compute = |mem: &HostMemory, dst: &mut [R], itself_inputs: ItselfInputs| -> Result<()> {
        let interrupt = mem.interrupt();
        let (x, y) = (&instr.operands[1], &instr.operands[2]);
        if itself_inputs != 0 {
            if A::DTYPE != R::DTYPE {
                return Err(itself_mismatch(instr));
            }
            let swapped = move |a: A, b: A| f(b, a);
            return match itself_inputs {
                0b11 => update_row(dst, Lane::Const(()), move |a: A, ()| f(a, a), interrupt),
                0b01 => update_rows(mem, y, &out.shape, dst, f, interrupt),
                _ => update_rows(mem, x, &out.shape, dst, swapped, interrupt),
            };
        }
        if let (Some(a), Some(b)) = (lane::<A>(mem, x, &out.shape)?, lane::<A>(mem, y, &out.shape)?) {
            return row2(dst, (a, b), f, interrupt);
        }
        let (a, b) = (rows::<A>(mem, x, &out.shape)?, rows::<A>(mem, y, &out.shape)?);
        for_each_row_of(&out.shape, dst, [&a, &b], |row, [a, b]| row2(row, (a, b), f, interrupt))
    };
    if in_place::<R>(mem, instr, out, compute)? {
        return Ok(());
    }
    let along_line = |mem: &HostMemory, base: &mut [R], line: (usize, isize), itself_inputs| {
        let (x, y) = (&instr.operands[1], &instr.operands[2]);
        if itself_inputs != 0 && A::DTYPE != R::DTYPE {
            return Err(itself_mismatch(instr));
        }
        // The inputs that are not the output, as lanes (`None`: the output itself).
        let mut lanes = [None, None];
        for (k, (o, lane_k)) in [x, y].into_iter().zip(&mut lanes).enumerate() {
            if itself_inputs & (1 << k) == 0 {
                match lane::<A>(mem, o, &out.shape)? {
                    Some(l) => *lane_k = Some(l),
                    None => return Ok(false),
                }
            }
        }
        let [a, b] = lanes;
        let value = |k: usize, d: &R| {
            let p = a.as_ref().map_or_else(|| itself(d), |a| a.at(k));
            let q = b.as_ref().map_or_else(|| itself(d), |b| b.at(k));
            f(p, q)
        };
        update_line(base, line, out.nelem(), value, mem.interrupt())?;
        Ok(true)
    };
    if in_place_line::<R>(mem, instr, out, along_line)? {
        return Ok(());
    }
    let by_rows = |mem: &HostMemory, base: &mut [R]| -> Result<()> {
        let (x, y) = (&instr.operands[1], &instr.operands[2]);
        let (a, b) = (rows::<A>(mem, x, &out.shape)?, rows::<A>(mem, y, &out.shape)?);
        for_each_view_row_of(out, base, [&a, &b], |row, [a, b]| row2(row, (a, b), f, mem.interrupt()))
    };
    if in_place_rows::<R>(mem, instr, out, by_rows)? {
        return Ok(());
    }
    let mut values = zeroed_result::<R>(out)?;
    compute(mem, &mut values, 0)?;
    write_view(mem, out, values)
}

/// `dst[k] = f(dst[k], other[k])` over an output that is also an input (see [`in_place`]), with
/// `other` an input of another base read as a [`Lane`] where it is one, else row by row.
fn update_rows<A: Elem, R: Elem>(
    mem: &HostMemory,
    other: &Operand,
    shape: &[usize],
    dst: &mut [R],
    f: impl Fn(A, A) -> R + Copy,
    interrupt: &Interrupt,
) -> Result<()> {
    if let Some(b) = lane::<A>(mem, other, shape)? {
        return update_row(dst, b, f, interrupt);
    }
    let b = rows::<A>(mem, other, shape)?;
    for_each_row_of(shape, dst, [&b], |row, [b]| update_row(row, b, f, interrupt))
}

/// One row of [`update_rows`]: `dst[k] = f(dst[k], other[k])`.
fn update_row<A: Elem, B: Copy, R: Elem>(
    dst: &mut [R],
    other: Lane<'_, B>,
    f: impl Fn(A, B) -> R,
    interrupt: &Interrupt,
) -> Result<()> {
    match other {
        Lane::Run(ys) => update_run(dst, ys, |d: &R, y| f(itself(d), y), interrupt),
        other => with_lane!(other, |y| update_at(dst, |k, d: &R| f(itself(d), y(k)), interrupt)),
    }
}

/// One row of [`map2`].
fn row2<A: Copy, R>(
    dst: &mut [R],
    (a, b): (Lane<'_, A>, Lane<'_, A>),
    f: impl Fn(A, A) -> R + Copy,
    interrupt: &Interrupt,
) -> Result<()> {
    if fill_runs(dst, (a, b), f, interrupt)? {
        return Ok(());
    }
    if a.is_line() || b.is_line() {
        // Lines (strided rows: `x[:, :, k]`, a column) are gathered a piece at a time onto the
        // stack and read as runs.
        return Lane::for_each_gathered_piece(dst, [a, b], |piece, [a, b]| {
            if !fill_runs(piece, (a, b), f, interrupt)? {
                return Err(Error::Internal("gathered lines not read as runs".into()));
            }
            Ok(())
        });
    }
    with_lane!(a, |x| with_lane!(b, |y| fill_at(dst, |k| f(x(k), y(k)), interrupt)))
}

/// A result of `out`'s size, row-major, zero until computed, allocated fallibly.
fn zeroed_result<R: Elem>(out: &View) -> Result<Vec<R>> {
    let n = out.nelem();
    let mut values = room(out, n)?;
    values.resize(n, R::from_scalar(vm_ir::Scalar::Bool(false)));
    Ok(values)
}

/// The float functions cheap enough per element that the loop over a run is compiled around
/// each (vectorised), written out here as in the tables (called through a pointer per element
/// otherwise): `-x`, `abs`, `x * x`, `sqrt`, rounding. The oracle test (`tests/opcodes.rs`)
/// checks them against references of their own, like every opcode.
macro_rules! inline_float_unary {
    ($mem:expr, $instr:expr, $dtype:expr, $op:expr, $($t:ty => $d:ident),*) => {
        match ($dtype, $op) {
            $(
                (DType::$d, UnaryOp::Negative) => return map1::<$t, $t>($mem, $instr, |a| -a),
                (DType::$d, UnaryOp::Absolute) => return map1::<$t, $t>($mem, $instr, <$t>::abs),
                (DType::$d, UnaryOp::Square) => return map1::<$t, $t>($mem, $instr, |a| a * a),
                (DType::$d, UnaryOp::Reciprocal) => return map1::<$t, $t>($mem, $instr, |a| 1.0 / a),
                (DType::$d, UnaryOp::Sqrt) => return map1::<$t, $t>($mem, $instr, <$t>::sqrt),
                (DType::$d, UnaryOp::Floor) => return map1::<$t, $t>($mem, $instr, <$t>::floor),
                (DType::$d, UnaryOp::Ceil) => return map1::<$t, $t>($mem, $instr, <$t>::ceil),
                (DType::$d, UnaryOp::Trunc) => return map1::<$t, $t>($mem, $instr, <$t>::trunc),
                (DType::$d, UnaryOp::Rint) => return map1::<$t, $t>($mem, $instr, <$t>::round_ties_even),
            )*
            _ => {}
        }
    };
}

/// Comparisons (to `bool`) of the dtypes NumPy programs compare most, written out here as in
/// [`to_bool_binary`] so that their loops are compiled around them (see
/// [`inline_float_unary`]).
macro_rules! inline_comparisons {
    ($mem:expr, $instr:expr, $dtype:expr, $op:expr, $($t:ty => $d:ident),*) => {
        match ($dtype, $op) {
            $(
                (DType::$d, BinaryOp::Equal) => return map2::<$t, bool>($mem, $instr, |a, b| a == b),
                (DType::$d, BinaryOp::NotEqual) => return map2::<$t, bool>($mem, $instr, |a, b| a != b),
                (DType::$d, BinaryOp::Less) => return map2::<$t, bool>($mem, $instr, |a, b| a < b),
                (DType::$d, BinaryOp::LessEqual) => return map2::<$t, bool>($mem, $instr, |a, b| a <= b),
                (DType::$d, BinaryOp::Greater) => return map2::<$t, bool>($mem, $instr, |a, b| a > b),
                (DType::$d, BinaryOp::GreaterEqual) => return map2::<$t, bool>($mem, $instr, |a, b| a >= b),
            )*
            _ => {}
        }
    };
}

/// Float arithmetic, written out here (it is the tables' `+ - * /`) so that the loop over a run
/// of elements is compiled around it rather than calling the table's function per element: the
/// four operations most instructions of a NumPy program are, and `maximum`/`minimum`.
macro_rules! inline_float_arithmetic {
    ($mem:expr, $instr:expr, $dtype:expr, $op:expr, $($t:ty => $d:ident),*) => {
        match ($dtype, $op) {
            $(
                (DType::$d, BinaryOp::Add) => return map2::<$t, $t>($mem, $instr, |a, b| a + b),
                (DType::$d, BinaryOp::Subtract) => return map2::<$t, $t>($mem, $instr, |a, b| a - b),
                (DType::$d, BinaryOp::Multiply) => return map2::<$t, $t>($mem, $instr, |a, b| a * b),
                (DType::$d, BinaryOp::Divide) => return map2::<$t, $t>($mem, $instr, |a, b| a / b),
                (DType::$d, BinaryOp::Maximum) => return map2::<$t, $t>($mem, $instr, semantics::float_maximum),
                (DType::$d, BinaryOp::Minimum) => return map2::<$t, $t>($mem, $instr, semantics::float_minimum),
            )*
            _ => {}
        }
    };
}

/// `out = f(in)` for a function `f` of [`vm_math`] computed over slices (vectorised for this
/// CPU: elementwise, it would be compiled for the baseline here, without fused multiply-adds):
/// runs of the input directly, other rows gathered into a small buffer first.
fn map_slices<T: Elem + Default>(mem: &mut HostMemory, instr: &Instruction, f: fn(&mut [T], &[T])) -> Result<()> {
    const GATHERED: usize = 256;
    let out = output(instr)?;
    prepare_overwriting(mem, instr)?;
    let interrupt = mem.interrupt();
    let row = |dst: &mut [T], a: Lane<'_, T>| -> Result<()> {
        let mut buffer = [T::default(); GATHERED];
        for (c, piece) in dst.chunks_mut(GATHERED).enumerate() {
            match a {
                Lane::Run(xs) => f(piece, &xs[c * GATHERED..c * GATHERED + piece.len()]),
                a => {
                    let gathered = &mut buffer[..piece.len()];
                    gathered.iter_mut().enumerate().for_each(|(i, x)| *x = a.at(c * GATHERED + i));
                    f(piece, gathered);
                }
            }
            interrupt.check()?;
        }
        Ok(())
    };
    let mut values = zeroed_result::<T>(out)?;
    match lane::<T>(mem, &instr.operands[1], &out.shape)? {
        Some(a) => row(&mut values, a)?,
        None => {
            let a = rows::<T>(mem, &instr.operands[1], &out.shape)?;
            for_each_row_of(&out.shape, &mut values, [&a], |dst, [a]| row(dst, a))?;
        }
    }
    write_view(mem, out, values)
}

/// Executes a [`vm_ir::Kind::Unary`] instruction (`identity` included).
pub fn unary(instr: &Instruction, unary: UnaryOp, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 2)?;
    let op = instr.opcode;
    let (out_dt, in_dt) = (instr.operands[0].dtype(), instr.operands[1].dtype());
    if out_dt == in_dt {
        inline_float_unary!(mem, instr, in_dt, unary, f64 => F64, f32 => F32);
        match (in_dt, unary) {
            (DType::F64, UnaryOp::Exp) => return map_slices::<f64>(mem, instr, vm_math::exp_f64s),
            (DType::F32, UnaryOp::Exp) => return map_slices::<f32>(mem, instr, vm_math::exp_f32s),
            (DType::F64, UnaryOp::Log) => return map_slices::<f64>(mem, instr, vm_math::ln_f64s),
            (DType::F32, UnaryOp::Log) => return map_slices::<f32>(mem, instr, vm_math::ln_f32s),
            _ => {}
        }
        if in_dt == DType::Bool && matches!(unary, UnaryOp::Invert | UnaryOp::LogicalNot) {
            return map1::<bool, bool>(mem, instr, |a| !a);
        }
    }
    match op.type_rule() {
        TypeRule::Same(_) => with_dtype!(in_dt, T => {
            let f = T::unary(unary).ok_or_else(|| not_defined(op, in_dt))?;
            map1::<T, T>(mem, instr, f)
        }),
        TypeRule::ToBool(_) => with_dtype!(in_dt, T => {
            let f = to_bool_unary::<T>(unary).ok_or_else(|| not_defined(op, in_dt))?;
            map1::<T, bool>(mem, instr, f)
        }),
        TypeRule::Cast => with_dtype!(in_dt, A => with_dtype!(out_dt, B => {
            map1::<A, B>(mem, instr, <A as Cast<B>>::cast)
        })),
        rule => Err(Error::Internal(format!("unary {op} with type rule {rule:?}"))),
    }
}

/// Executes a [`vm_ir::Kind::Binary`] instruction.
pub fn binary(instr: &Instruction, binary: BinaryOp, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 3)?;
    let op = instr.opcode;
    let in_dt = instr.operands[1].dtype();
    if instr.operands[0].dtype() == in_dt {
        inline_float_arithmetic!(mem, instr, in_dt, binary, f64 => F64, f32 => F32);
        match (in_dt, binary) {
            (DType::Bool, BinaryOp::BitwiseAnd | BinaryOp::LogicalAnd) => {
                return map2::<bool, bool>(mem, instr, |a, b| a & b);
            }
            (DType::Bool, BinaryOp::BitwiseOr | BinaryOp::LogicalOr) => {
                return map2::<bool, bool>(mem, instr, |a, b| a | b);
            }
            (DType::Bool, BinaryOp::BitwiseXor | BinaryOp::LogicalXor) => {
                return map2::<bool, bool>(mem, instr, |a, b| a ^ b);
            }
            _ => {}
        }
    }
    if instr.operands[0].dtype() == DType::Bool {
        inline_comparisons!(mem, instr, in_dt, binary, f64 => F64, f32 => F32, i64 => I64, i32 => I32);
    }
    match op.type_rule() {
        TypeRule::Same(_) => with_dtype!(in_dt, T => {
            let f = T::binary(binary).ok_or_else(|| not_defined(op, in_dt))?;
            map2::<T, T>(mem, instr, f)
        }),
        TypeRule::ToBool(_) => with_dtype!(in_dt, T => {
            let f = to_bool_binary::<T>(binary).ok_or_else(|| not_defined(op, in_dt))?;
            map2::<T, bool>(mem, instr, f)
        }),
        rule => Err(Error::Internal(format!("binary {op} with type rule {rule:?}"))),
    }
}

/// Executes `select out, cond, a, b`: `out = cond ? a : b`, row by row.
pub fn select(instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
    expect_operands(instr, 4)?;
    let out = output(instr)?;
    prepare_overwriting(mem, instr)?;
    with_dtype!(out.dtype(), T => {
        let interrupt = mem.interrupt();
        let (c, x, y) = (&instr.operands[1], &instr.operands[2], &instr.operands[3]);
        let mut values = zeroed_result::<T>(out)?;
        if let (Some(c), Some(x), Some(y)) = (lane(mem, c, &out.shape)?, lane::<T>(mem, x, &out.shape)?, lane::<T>(mem, y, &out.shape)?) {
            select_row(&mut values, c, (x, y), interrupt)?;
        } else {
            let (c, x, y) = (rows::<bool>(mem, c, &out.shape)?, rows::<T>(mem, x, &out.shape)?, rows::<T>(mem, y, &out.shape)?);
            for_each_row(&out.shape, &mut values, |idx, row| select_row(row, c.row(idx), (x.row(idx), y.row(idx)), interrupt))?;
        }
        write_view(mem, out, values)
    })
}

/// One row of [`select`]: a loop over slices where the condition and both values are runs (or
/// a value is a constant), else one reading each lane by position.
fn select_row<T: Copy>(
    dst: &mut [T],
    cond: Lane<'_, bool>,
    (a, b): (Lane<'_, T>, Lane<'_, T>),
    interrupt: &Interrupt,
) -> Result<()> {
    let pick = |c: bool, x: T, y: T| if c { x } else { y };
    match (cond, a, b) {
        (Lane::Run(cs), Lane::Run(xs), Lane::Run(ys)) => {
            dst.iter_mut().zip(cs.iter().zip(xs.iter().zip(ys))).for_each(|(d, (&c, (&x, &y)))| *d = pick(c, x, y));
            interrupt.check()
        }
        (Lane::Run(cs), Lane::Run(xs), Lane::Const(y)) => {
            dst.iter_mut().zip(cs.iter().zip(xs)).for_each(|(d, (&c, &x))| *d = pick(c, x, y));
            interrupt.check()
        }
        (Lane::Run(cs), Lane::Const(x), Lane::Run(ys)) => {
            dst.iter_mut().zip(cs.iter().zip(ys)).for_each(|(d, (&c, &y))| *d = pick(c, x, y));
            interrupt.check()
        }
        (cond, a, b) => with_lane!(cond, |c| fill_at(dst, |k| pick(c(k), a.at(k), b.at(k)), interrupt)),
    }
}
