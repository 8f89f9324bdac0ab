//! `vm run FILE`: executes a text bytecode program (see `vm_ir::asm`) on a runtime and prints
//! every view the program syncs, at the point the sync runs.
//!
//! Output, one block per `sync` in program order (in arrays of two or more dimensions each
//! column right-aligned to its widest value, or all columns to one width when rows are longer
//! than [`MAX_ALIGNED_COLUMNS`]; floats as Rust's `{}` prints them, so `1` and `0.25`):
//!
//! ```text
//! s: f64 = 10
//! a: f64[4] = [1, 2, 3, 4]
//! grid: f64[3, 3] = [[1, 2, 3],
//!                    [4, 5, 6],
//!                    [7, 8, 9]]
//! ```
//!
//! A sync prints the elements of its view, in the view's shape; a view that is not the whole base
//! (contiguous, from element 0) is named after the base: `grid{start=7 shape=[2, 2] stride=[6,
//! 1]}: f64[2, 2] = ...`.
//!
//! Output is streamed: each element is formatted and written as it is read from the base, with
//! one extra formatting pass for the column widths of arrays of two or more dimensions, so
//! printing a base takes no memory proportional to its size (a 2 GiB base once needed 17.5 GB
//! as text). Errors name the source line ([`RunError::in_file`]).

use std::collections::HashMap;
use std::fmt::{self, Display};
use std::io::{self, Write};
use vm_ir::asm::{self, Program};
use vm_ir::{Base, BaseId, Error, Instruction, Opcode, Operand, View, with_dtype};
use vm_runtime::Runtime;

/// Rows longer than this many columns are aligned to one width for all columns rather than one
/// per column, so that printing keeps no state proportional to the data (a 2 GiB base printed
/// as a single row of 2^28 columns would otherwise need a width per column).
pub const MAX_ALIGNED_COLUMNS: usize = 4096;

/// Why `vm run` stopped: the VM refused or failed, or the output could not be written.
#[derive(Debug)]
pub enum Failure {
    /// An error of the VM (parsing, submission, execution).
    Vm(Error),
    /// Writing the output failed (a closed pipe, a full disk).
    Output(io::Error),
}

/// An error of `vm run`, placed in the program's source where it can be: the line of the
/// instruction at fault, of the `sync` whose batch failed, or none (the final flush).
#[derive(Debug)]
pub struct RunError {
    /// The 1-based line of the source, when known.
    pub line: Option<usize>,
    /// What went wrong.
    pub failure: Failure,
}

impl RunError {
    fn vm(line: Option<usize>, e: Error) -> RunError {
        RunError { line, failure: Failure::Vm(e) }
    }

    /// The error as `FILE:LINE: message` (`FILE: message` without a line), for `vm run FILE`.
    pub fn in_file(&self, file: &str) -> String {
        match self.line {
            Some(l) => format!("{file}:{l}: {self}"),
            None => format!("{file}: {self}"),
        }
    }
}

impl Display for RunError {
    /// The message without its place: a parse error's line and an instruction's position in
    /// its batch are left out, since [`RunError::in_file`] names the line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Vm(Error::Parse { message, .. }) => f.write_str(message),
            Failure::Vm(Error::InvalidInstruction { operand, message, .. }) if self.line.is_some() => {
                write!(f, "{}", Error::invalid(*operand, message))
            }
            Failure::Vm(e) => write!(f, "{e}"),
            Failure::Output(e) => write!(f, "writing the output: {e}"),
        }
    }
}

impl From<io::Error> for RunError {
    fn from(e: io::Error) -> RunError {
        RunError { line: None, failure: Failure::Output(e) }
    }
}

/// Parses `text` and runs it on `rt`, writing the printed syncs to `out` as they happen (see
/// the module doc).
pub fn run_text(text: &str, rt: &mut Runtime, out: &mut impl Write) -> Result<(), RunError> {
    let (program, lines) = asm::parse_with_lines(text).map_err(|e| match e {
        Error::Parse { line, .. } => RunError::vm(Some(line), e),
        e => RunError::vm(None, e),
    })?;
    run_program(&program, &lines, rt, out)
}

/// Runs a parsed program on `rt`: creates its bases, registers its extension methods, submits
/// its instructions and prints each synced view to `out` when its sync has run. `lines[i]` is
/// the source line of instruction `i` (empty when there is no source), for errors.
pub fn run_program(program: &Program, lines: &[usize], rt: &mut Runtime, out: &mut impl Write) -> Result<(), RunError> {
    let mut bases: HashMap<BaseId, Base> = HashMap::new();
    let mut names: HashMap<BaseId, &str> = HashMap::new();
    for (name, b) in &program.bases {
        let live = rt.new_base(b.dtype, b.nelem).map_err(|e| RunError::vm(None, e))?;
        bases.insert(b.id, live);
        names.insert(live.id, name);
    }
    let extensions: Vec<Opcode> = program
        .extensions
        .iter()
        .map(|name| rt.register_extension(name))
        .collect::<vm_ir::Result<_>>()
        .map_err(|e| RunError::vm(None, e))?;
    let line_of = |i: usize| lines.get(i).copied();

    let mut chunk: Vec<Instruction> = Vec::new();
    let mut chunk_start = 0;
    for (i, instr) in program.instructions.iter().enumerate() {
        let instr = relocate(instr, &bases, &extensions).map_err(|e| RunError::vm(line_of(i), e))?;
        let synced = (instr.opcode == Opcode::Sync).then(|| instr.operands[0].as_view().cloned()).flatten();
        chunk.push(instr);
        if let Some(view) = synced {
            // The chunk is the whole batch (the previous sync flushed), so an instruction's
            // position in the error is its position in the chunk; other errors belong to the
            // sync that ran the batch.
            rt.submit(std::mem::take(&mut chunk)).map_err(|e| place(e, chunk_start, line_of(i), &line_of))?;
            chunk_start = i + 1;
            let name = names.get(&view.base.id).copied().unwrap_or("?");
            show(out, rt, name, &view).map_err(|e| match e {
                Failure::Vm(e) => RunError::vm(line_of(i), e),
                f => RunError { line: None, failure: f },
            })?;
        }
    }
    rt.submit(chunk).map_err(|e| place(e, chunk_start, None, &line_of))?;
    rt.flush().map_err(|e| RunError::vm(None, e))?;
    out.flush()?;
    Ok(())
}

/// Places an error of the batch starting at instruction `offset`: at the line of the instruction
/// it names, else at `fallback`.
fn place(e: Error, offset: usize, fallback: Option<usize>, line_of: &impl Fn(usize) -> Option<usize>) -> RunError {
    match e {
        Error::InvalidInstruction { index: Some(i), operand, message } => RunError::vm(
            line_of(i + offset).or(fallback),
            Error::InvalidInstruction { index: Some(i + offset), operand, message },
        ),
        e => RunError::vm(fallback, e),
    }
}

/// The instruction with the program's base ids and extension numbers replaced by the runtime's.
fn relocate(instr: &Instruction, bases: &HashMap<BaseId, Base>, extensions: &[Opcode]) -> vm_ir::Result<Instruction> {
    let opcode = match instr.opcode {
        Opcode::Extension(n) => *extensions
            .get(n as usize)
            .ok_or_else(|| Error::Internal(format!("the parser numbered an extension {n} it did not name")))?,
        op => op,
    };
    let operands = instr
        .operands
        .iter()
        .map(|o| match o {
            Operand::View(v) => {
                let mut v = v.clone();
                v.base = *bases
                    .get(&v.base.id)
                    .ok_or_else(|| Error::Internal(format!("the parser let through undeclared base {}", v.base.id)))?;
                Ok(Operand::View(v))
            }
            c => Ok(c.clone()),
        })
        .collect::<vm_ir::Result<Vec<_>>>()?;
    Ok(Instruction::new(opcode, operands))
}

/// Writes the printed form of the synced view `v` of base `name` to `out`, element by element.
fn show(out: &mut impl Write, rt: &mut Runtime, name: &str, v: &View) -> Result<(), Failure> {
    let whole = v.start == 0 && v.is_contiguous() && v.nelem() as u64 == v.base.nelem;
    let label = if whole {
        name.to_string()
    } else {
        format!("{name}{{start={} shape={:?} stride={:?}}}", v.start, &v.shape[..], &v.stride[..])
    };
    let dims = if v.ndim() == 0 {
        String::new()
    } else {
        format!("[{}]", v.shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
    };
    let head = format!("{label}: {}{dims} = ", v.dtype());
    with_dtype!(v.dtype(), T => {
        let data = rt.host_slice::<T>(v.base.id).map_err(Failure::Vm)?;
        let elements = Elements { data, shape: &v.shape, stride: &v.stride, start: v.start };
        let widths = column_widths(&elements);
        out.write_all(head.as_bytes()).map_err(Failure::Output)?;
        nest(out, &elements, 0, v.start, &widths, head.len()).map_err(Failure::Output)?;
        out.write_all(b"\n").map_err(Failure::Output)
    })
}

/// The elements of a view, read in place from its base's data.
struct Elements<'a, T> {
    data: &'a [T],
    shape: &'a [usize],
    stride: &'a [i64],
    start: i64,
}

impl<T> Elements<'_, T> {
    /// Calls `f(column, element)` for every element in row-major order, where `column` is the
    /// position along the last dimension.
    fn each(&self, f: &mut impl FnMut(usize, &T)) {
        self.each_from(0, self.start, f);
    }

    fn each_from(&self, dim: usize, offset: i64, f: &mut impl FnMut(usize, &T)) {
        match self.shape.len() - dim {
            0 => f(0, &self.data[offset as usize]),
            1 => {
                for k in 0..self.shape[dim] {
                    f(k, &self.data[(offset + k as i64 * self.stride[dim]) as usize]);
                }
            }
            _ => {
                for k in 0..self.shape[dim] {
                    self.each_from(dim + 1, offset + k as i64 * self.stride[dim], f);
                }
            }
        }
    }
}

/// How the columns of a 2-d or higher array are padded so that rows line up.
#[derive(Debug, Clone, PartialEq)]
enum Widths {
    /// No padding (0-d and 1-d arrays).
    None,
    /// Column `j` right-aligned to the `j`-th width.
    PerColumn(Vec<usize>),
    /// Every column right-aligned to one width (rows longer than [`MAX_ALIGNED_COLUMNS`]).
    Common(usize),
}

impl Widths {
    fn get(&self, column: usize) -> usize {
        match self {
            Widths::None => 0,
            Widths::PerColumn(w) => w.get(column).copied().unwrap_or(0),
            Widths::Common(w) => *w,
        }
    }
}

/// The column widths of `e`: a pass formatting every element once into one small buffer.
fn column_widths<T: Display>(e: &Elements<'_, T>) -> Widths {
    let n = match e.shape.last() {
        Some(&n) if e.shape.len() >= 2 && n > 0 => n,
        _ => return Widths::None,
    };
    let mut text = String::new();
    let mut width_of = |x: &T| {
        text.clear();
        let _ = fmt::Write::write_fmt(&mut text, format_args!("{x}"));
        text.len()
    };
    if n > MAX_ALIGNED_COLUMNS {
        let mut w = 0;
        e.each(&mut |_, x| w = w.max(width_of(x)));
        return Widths::Common(w);
    }
    let mut w = vec![0; n];
    e.each(&mut |k, x| w[k] = w[k].max(width_of(x)));
    Widths::PerColumn(w)
}

/// Writes the elements of dimensions `dim..` starting at `offset` as nested brackets, column `j`
/// right-aligned to `widths.get(j)`; rows after the first start at column `indent`.
fn nest<T: Display>(
    out: &mut impl Write,
    e: &Elements<'_, T>,
    dim: usize,
    offset: i64,
    widths: &Widths,
    indent: usize,
) -> io::Result<()> {
    let rest = e.shape.len() - dim;
    if rest == 0 {
        return write!(out, "{}", e.data[offset as usize]);
    }
    out.write_all(b"[")?;
    for k in 0..e.shape[dim] {
        let at = offset + k as i64 * e.stride[dim];
        if rest == 1 {
            if k > 0 {
                out.write_all(b", ")?;
            }
            let width = widths.get(k);
            write!(out, "{:>width$}", e.data[at as usize])?;
        } else {
            if k > 0 {
                out.write_all(b",")?;
                for _ in 1..rest {
                    out.write_all(b"\n")?;
                }
                write!(out, "{:indent$}", "", indent = indent + 1)?;
            }
            nest(out, e, dim + 1, at, widths, indent + 1)?;
        }
    }
    out.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` (row-major, of `shape`) printed after a label, as `show` prints them.
    fn shown(shape: &[usize], values: &[f64]) -> String {
        let stride = vm_ir::view::row_major_strides(shape);
        let e = Elements { data: values, shape, stride: &stride, start: 0 };
        let mut s = b"x: f64[..] = ".to_vec();
        let indent = s.len();
        nest(&mut s, &e, 0, 0, &column_widths(&e), indent).unwrap();
        String::from_utf8(s).unwrap()
    }

    #[test]
    fn nested_brackets_align() {
        assert_eq!(shown(&[], &[10.0]), "x: f64[..] = 10");
        assert_eq!(shown(&[3], &[1.0, 2.5, 3.0]), "x: f64[..] = [1, 2.5, 3]");
        assert_eq!(shown(&[2, 2], &[1.0, 20.0, 3.5, 4.0]), "x: f64[..] = [[  1, 20],\n              [3.5,  4]]");
        assert_eq!(shown(&[2, 1, 1], &[1.0, 2.0]), "x: f64[..] = [[[1]],\n\n              [[2]]]");
        assert_eq!(shown(&[0], &[]), "x: f64[..] = []");
        assert_eq!(shown(&[2, 0], &[]), "x: f64[..] = [[],\n              []]");
    }

    #[test]
    fn long_rows_share_one_width() {
        let n = MAX_ALIGNED_COLUMNS + 1;
        let mut values = vec![1.0; 2 * n];
        values[n + 3] = 100.0;
        let s = shown(&[2, n], &values);
        // Every element of both rows is padded to the widest, `100`.
        assert!(s.starts_with("x: f64[..] = [[  1,   1,   1,   1,   1,"), "{}", &s[..60]);
        assert!(s.contains("\n              [  1,   1,   1, 100,   1,"), "the second row");
        let e = Elements { data: &values, shape: &[2, n], stride: &[n as i64, 1], start: 0 };
        assert_eq!(column_widths(&e), Widths::Common(3));
    }

    #[test]
    fn errors_name_file_and_line() {
        let parse = RunError::vm(Some(3), Error::Parse { line: 3, message: "unknown mnemonic `ad`".into() });
        assert_eq!(parse.in_file("p.vm"), "p.vm:3: unknown mnemonic `ad`");
        let invalid = RunError::vm(Some(5), Error::invalid(Some(1), "add: dtype mismatch").at_instruction(2));
        assert_eq!(invalid.in_file("p.vm"), "p.vm:5: invalid instruction, operand 1: add: dtype mismatch");
        let late = RunError::vm(None, Error::Execution("index 9 out of range".into()));
        assert_eq!(late.in_file("p.vm"), "p.vm: execution failed: index 9 out of range");
    }
}
