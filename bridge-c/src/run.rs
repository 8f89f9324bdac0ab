//! `vm run FILE`: executes a text bytecode program (see `vm_core::asm`) on a runtime and prints
//! every view the program syncs, at the point the sync runs.
//!
//! Output, one block per `sync` in program order (values right-aligned to a common width,
//! floats as Rust's `{}` prints them, so `1` and `0.25`):
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

use std::collections::HashMap;
use std::fmt::Write as _;
use vm_core::asm::{self, Program};
use vm_core::{Base, BaseId, Element, Error, Instruction, Opcode, Operand, Result, Runtime, View, with_dtype};

/// Parses `text` and runs it on `rt`, returning the printed syncs (see the module doc).
pub fn run_text(text: &str, rt: &mut Runtime) -> Result<String> {
    run_program(&asm::parse(text)?, rt)
}

/// Runs a parsed program on `rt`: creates its bases, registers its extension methods, submits
/// its instructions and prints each synced view when its sync has run.
pub fn run_program(program: &Program, rt: &mut Runtime) -> Result<String> {
    let mut bases: HashMap<BaseId, Base> = HashMap::new();
    let mut names: HashMap<BaseId, &str> = HashMap::new();
    for (name, b) in &program.bases {
        let live = rt.new_base(b.dtype, b.nelem)?;
        bases.insert(b.id, live);
        names.insert(live.id, name);
    }
    let extensions: Vec<Opcode> =
        program.extensions.iter().map(|name| rt.register_extension(name)).collect::<Result<_>>()?;

    let mut out = String::new();
    let mut chunk: Vec<Instruction> = Vec::new();
    let mut chunk_start = 0;
    for (i, instr) in program.instructions.iter().enumerate() {
        let instr = relocate(instr, &bases, &extensions)?;
        let synced = (instr.opcode == Opcode::Sync).then(|| instr.operands[0].as_view().cloned()).flatten();
        chunk.push(instr);
        if let Some(view) = synced {
            rt.submit(std::mem::take(&mut chunk)).map_err(|e| renumber(e, chunk_start))?;
            chunk_start = i + 1;
            let name = names.get(&view.base.id).copied().unwrap_or("?");
            out += &show(rt, name, &view)?;
        }
    }
    rt.submit(chunk).map_err(|e| renumber(e, chunk_start))?;
    rt.flush()?;
    Ok(out)
}

/// Ties an error's instruction position in a chunk to its position in the program.
fn renumber(e: Error, offset: usize) -> Error {
    match e {
        Error::InvalidInstruction { index: Some(i), operand, message } => {
            Error::InvalidInstruction { index: Some(i + offset), operand, message }
        }
        e => e,
    }
}

/// The instruction with the program's base ids and extension numbers replaced by the runtime's.
fn relocate(instr: &Instruction, bases: &HashMap<BaseId, Base>, extensions: &[Opcode]) -> Result<Instruction> {
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
        .collect::<Result<Vec<_>>>()?;
    Ok(Instruction::new(opcode, operands))
}

/// The printed form of the synced view `v` of base `name`.
fn show(rt: &mut Runtime, name: &str, v: &View) -> Result<String> {
    let values: Vec<String> = with_dtype!(v.dtype(), T => elements::<T>(rt, v)?);
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
    let mut s = head.clone();
    nest(&mut s, &v.shape, &values, &column_widths(&v.shape, &values), head.len());
    s.push('\n');
    Ok(s)
}

/// The elements of view `v`, row-major, as text.
fn elements<T: Element + std::fmt::Display>(rt: &mut Runtime, v: &View) -> Result<Vec<String>> {
    let data = rt.host_slice::<T>(v.base.id)?;
    let mut idx = vec![0usize; v.ndim()];
    let mut out = Vec::with_capacity(v.nelem());
    for _ in 0..v.nelem() {
        out.push(data[v.offset_of(&idx) as usize].to_string());
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < v.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

/// The width of each column (position along the last dimension) of a 2-d or higher array, so
/// that rows line up; no padding for 0-d and 1-d arrays.
fn column_widths(shape: &[usize], values: &[String]) -> Vec<usize> {
    match shape.last() {
        Some(&n) if shape.len() >= 2 && n > 0 => {
            let mut w = vec![0; n];
            for (k, x) in values.iter().enumerate() {
                w[k % n] = w[k % n].max(x.len());
            }
            w
        }
        _ => Vec::new(),
    }
}

/// Appends `values` (row-major, of `shape`) as nested brackets, column `j` right-aligned to
/// `widths[j]` when given; rows after the first start at column `indent`.
fn nest(s: &mut String, shape: &[usize], values: &[String], widths: &[usize], indent: usize) {
    match shape {
        [] => s.push_str(&values[0]),
        [_] => {
            s.push('[');
            for (k, x) in values.iter().enumerate() {
                if k > 0 {
                    s.push_str(", ");
                }
                let width = widths.get(k).copied().unwrap_or(0);
                let _ = write!(s, "{x:>width$}");
            }
            s.push(']');
        }
        [n, rest @ ..] => {
            let inner: usize = rest.iter().product();
            s.push('[');
            for k in 0..*n {
                if k > 0 {
                    s.push(',');
                    s.push_str(&"\n".repeat(rest.len()));
                    s.push_str(&" ".repeat(indent + 1));
                }
                nest(s, rest, &values[k * inner..(k + 1) * inner], widths, indent + 1);
            }
            s.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(shape: &[usize], values: &[&str]) -> String {
        let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        let mut s = String::from("x: f64[..] = ");
        let indent = s.len();
        nest(&mut s, shape, &values, &column_widths(shape, &values), indent);
        s
    }

    #[test]
    fn nested_brackets_align() {
        assert_eq!(shown(&[], &["10"]), "x: f64[..] = 10");
        assert_eq!(shown(&[3], &["1", "2.5", "3"]), "x: f64[..] = [1, 2.5, 3]");
        assert_eq!(shown(&[2, 2], &["1", "20", "3.5", "4"]), "x: f64[..] = [[  1, 20],\n              [3.5,  4]]");
        assert_eq!(shown(&[2, 1, 1], &["1", "2"]), "x: f64[..] = [[[1]],\n\n              [[2]]]");
        assert_eq!(shown(&[0], &[]), "x: f64[..] = []");
    }
}
