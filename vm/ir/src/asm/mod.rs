//! The text form of the bytecode, used by tests, by the `VM_TRACE=1` trace and by `vm run FILE`.
//!
//! ```text
//! # a comment; blank lines are ignored
//! .base a f64 1000                  # declare base `a`: dtype, number of elements
//! .base s f64 1
//! range a
//! add a, a, 1.5f64                  # `a`: the whole base as a contiguous 1-d view
//! multiply a[0:500], a[0:500], a[500:1000:1]   # 1-d slices start:stop[:step], step > 0
//! add_reduce s{start=0 shape=[] stride=[]}, a, 0i64   # explicit form: any view
//! ext matmul c, a, b                # an extension method, by name
//! sync s
//! ```
//!
//! Constants are written as [`Scalar`]'s `Display` prints them (`true`, `-3i32`, `2.5f64`,
//! `NaNf64`, `-inff32`, `-0.0f64`); a NaN other than the standard quiet NaN is written with its
//! bits, `NaN(0x7ff4000000000000)f64`, so that [`print()`] then [`parse`] gives back every bit.
//! Names are `[A-Za-z_][A-Za-z0-9_]*`; `true`, `false`, `NaNf32`, `NaNf64`, `inff32` and
//! `inff64` are constants, not names.

use crate::dtype::DType;
use crate::instr::{Instruction, MAX_OPERANDS, Operand};
use crate::opcode::Opcode;
use crate::scalar::Scalar;
use crate::view::{Base, BaseId, Shape, Strides, View};
use crate::{Error, Result};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;
use std::str::FromStr;

#[cfg(test)]
mod tests;

/// A parsed text program: declared bases, extension method names, and instructions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Program {
    /// Declared bases in declaration order; the i-th (from 0) has id `BaseId(i + 1)`.
    pub bases: Vec<(String, Base)>,
    /// Extension method names in order of first use: `Opcode::Extension(n)` in
    /// [`Program::instructions`] is `extensions[n]` (a frontend remaps these numbers when it
    /// registers the names with a runtime).
    pub extensions: Vec<String>,
    /// The instructions, each valid by [`Instruction::validate`].
    pub instructions: Vec<Instruction>,
}

impl Program {
    /// The base declared as `name`.
    pub fn base(&self, name: &str) -> Option<Base> {
        self.bases.iter().find(|(n, _)| n == name).map(|&(_, b)| b)
    }
}

/// Words that read as constants where an operand is expected, so cannot name bases.
const RESERVED: [&str; 6] = ["true", "false", "NaNf32", "NaNf64", "inff32", "inff64"];

/// Parses the text form. Errors are [`Error::Parse`] with the 1-based line.
pub fn parse(text: &str) -> Result<Program> {
    parse_with_lines(text).map(|(program, _)| program)
}

/// [`parse`], also returning the 1-based line of each instruction (`lines[i]` is the line of
/// `program.instructions[i]`), so that a runner can place errors found later, at submission or
/// execution, in the source.
pub fn parse_with_lines(text: &str) -> Result<(Program, Vec<usize>)> {
    let mut p = Parser::default();
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let code = raw.split_once('#').map_or(raw, |(code, _)| code);
        let mut c = Cursor { s: code, pos: 0, line: i + 1 };
        c.skip_ws();
        if c.at_end() {
            continue;
        }
        if c.eat('.') {
            p.directive(&mut c)?;
        } else {
            let instr = p.instruction(&mut c)?;
            p.program.instructions.push(instr);
            lines.push(i + 1);
        }
    }
    Ok((p.program, lines))
}

#[derive(Default)]
struct Parser {
    /// Declared bases by name, with the line of the declaration.
    bases: HashMap<String, (Base, usize)>,
    program: Program,
}

impl Parser {
    /// `.base NAME DTYPE NELEM` (the `.` already eaten).
    fn directive(&mut self, c: &mut Cursor) -> Result<()> {
        let word = c.word();
        if word != "base" {
            return Err(c.err(format!("unknown directive `.{word}` (the only one is `.base`)")));
        }
        c.skip_ws();
        let name = c.word();
        if name.is_empty() {
            return Err(c.err("`.base` needs a name, a dtype and a number of elements, e.g. `.base a f64 1000`"));
        }
        if !is_name(name) {
            return Err(c.err(format!("bad base name `{name}` (names are [A-Za-z_][A-Za-z0-9_]*)")));
        }
        if RESERVED.contains(&name) {
            return Err(c.err(format!("`{name}` is a constant and cannot name a base")));
        }
        if let Some((_, line)) = self.bases.get(name) {
            return Err(c.err(format!("base `{name}` is already declared (on line {line})")));
        }
        c.skip_ws();
        let dtype = c.word();
        let dtype = DType::from_name(dtype).map_err(|_| {
            let all: Vec<_> = DType::ALL.iter().map(|d| d.name()).collect();
            let what = if dtype.is_empty() { "missing dtype".to_string() } else { format!("unknown dtype `{dtype}`") };
            c.err(format!("{what} for base `{name}` (one of {})", all.join(", ")))
        })?;
        c.skip_ws();
        let count = c.word();
        let nelem = count.parse::<u64>().map_err(|_| {
            c.err(format!("bad number of elements `{count}` for base `{name}` (a non-negative integer)"))
        })?;
        c.skip_ws();
        if !c.at_end() {
            return Err(c.err(format!("unexpected {} after the declaration of base `{name}`", c.found())));
        }
        let base = Base { id: BaseId(self.program.bases.len() as u64 + 1), dtype, nelem };
        self.bases.insert(name.to_string(), (base, c.line));
        self.program.bases.push((name.to_string(), base));
        Ok(())
    }

    /// `MNEMONIC [OPERAND {, OPERAND}]` or `ext NAME [OPERAND {, OPERAND}]`.
    fn instruction(&mut self, c: &mut Cursor) -> Result<Instruction> {
        let Some(mnemonic) = c.ident() else {
            return Err(c.err(format!("expected a mnemonic or `.base`, found {}", c.found())));
        };
        let (opcode, shown) = if mnemonic == "ext" {
            c.skip_ws();
            let Some(name) = c.ident() else {
                return Err(c.err(format!("expected an extension method name after `ext`, found {}", c.found())));
            };
            let exts = &mut self.program.extensions;
            let n = exts.iter().position(|e| e == name).unwrap_or_else(|| {
                exts.push(name.to_string());
                exts.len() - 1
            });
            (Opcode::Extension(n as u32), format!("ext {name}"))
        } else {
            let op = Opcode::from_name(mnemonic).ok_or_else(|| c.err(unknown_mnemonic(mnemonic)))?;
            (op, mnemonic.to_string())
        };
        let mut operands: SmallVec<[Operand; 3]> = SmallVec::new();
        c.skip_ws();
        if !c.at_end() {
            loop {
                operands.push(self.operand(c)?);
                c.skip_ws();
                if c.at_end() {
                    break;
                }
                if !c.eat(',') {
                    return Err(c.err(format!(
                        "expected `,` or end of line after operand {}, found {}",
                        operands.len() - 1,
                        c.found()
                    )));
                }
            }
        }
        match opcode.kind().arity() {
            Some((n, params)) if operands.len() != n + params.len() => {
                return Err(c.err(format!("`{shown}` takes {} operands, got {}", n + params.len(), operands.len())));
            }
            None if operands.len() > MAX_OPERANDS => {
                return Err(c.err(format!("`{shown}` has {} operands; at most {MAX_OPERANDS}", operands.len())));
            }
            _ => {}
        }
        let instr = Instruction { opcode, operands };
        instr.validate().map_err(|e| c.err(e.to_string()))?;
        Ok(instr)
    }

    /// A constant or a view.
    fn operand(&self, c: &mut Cursor) -> Result<Operand> {
        c.skip_ws();
        let from = c.pos;
        match c.peek() {
            Some(ch) if ch.is_ascii_alphabetic() || ch == '_' => {
                let word = c.ident().unwrap_or_default();
                match word {
                    "true" => Ok(Operand::Const(Scalar::Bool(true))),
                    "false" => Ok(Operand::Const(Scalar::Bool(false))),
                    "NaN" if c.peek() == Some('(') => nan_with_bits(c, from).map(Operand::Const),
                    _ if RESERVED.contains(&word) => parse_const(word).map(Operand::Const).map_err(|m| c.err(m)),
                    _ => self.view(c, word, from).map(Operand::View),
                }
            }
            Some(ch) if ch.is_ascii_digit() || matches!(ch, '-' | '+' | '.') => {
                let tok = c.take_while(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '+' | '-'));
                parse_const(tok).map(Operand::Const).map_err(|m| c.err(m))
            }
            _ => Err(c.err(format!("expected an operand (a view or a constant), found {}", c.found()))),
        }
    }

    /// `name`, `name[start:stop]`, `name[start:stop:step]` or `name{start=.. shape=[..] stride=[..]}`.
    fn view(&self, c: &mut Cursor, name: &str, from: usize) -> Result<View> {
        let Some(&(base, _)) = self.bases.get(name) else {
            return Err(c.err(format!("undeclared base `{name}` (declare it with `.base {name} DTYPE COUNT`)")));
        };
        let view = if c.eat('[') {
            let start: u64 = c.slice_number(name, "start")?;
            c.expect(':', &format!("in the slice of `{name}`"))?;
            let stop: u64 = c.slice_number(name, "stop")?;
            c.skip_ws();
            let step: u64 = if c.eat(':') { c.slice_number(name, "step")? } else { 1 };
            c.expect(']', &format!("to close the slice of `{name}`"))?;
            let text = &c.s[from..c.pos];
            if step == 0 {
                return Err(c.err(format!("slice `{text}` has step 0; the step must be positive")));
            }
            if stop < start {
                return Err(c.err(format!("slice `{text}` stops before it starts")));
            }
            let (Ok(start), Ok(stride)) = (i64::try_from(start), i64::try_from(step)) else {
                return Err(c.err(format!("slice `{text}` overflows 64-bit offsets")));
            };
            let n = (stop - start as u64).div_ceil(step);
            View { base, start, shape: Shape::from_slice(&[n as usize]), stride: Strides::from_slice(&[stride]) }
        } else if c.eat('{') {
            let (mut start, mut shape, mut stride) = (None, None, None);
            loop {
                c.skip_ws();
                if c.eat('}') {
                    break;
                }
                let Some(key) = c.ident() else {
                    return Err(c.err(format!(
                        "expected `start=`, `shape=`, `stride=` or `}}` in the view of `{name}`, found {}",
                        c.found()
                    )));
                };
                c.expect('=', &format!("after `{key}` in the view of `{name}`"))?;
                let dup = match key {
                    "start" => start.replace(c.number::<i64>("view start")?).is_some(),
                    "shape" => shape.replace(c.list::<usize>("extent")?).is_some(),
                    "stride" => stride.replace(c.list::<i64>("stride")?).is_some(),
                    _ => {
                        return Err(c.err(format!(
                            "unknown view field `{key}` in the view of `{name}` (fields: start, shape, stride)"
                        )));
                    }
                };
                if dup {
                    return Err(c.err(format!("view field `{key}` given twice in the view of `{name}`")));
                }
            }
            let missing = [("start", start.is_none()), ("shape", shape.is_none()), ("stride", stride.is_none())];
            if let Some((key, _)) = missing.iter().find(|m| m.1) {
                return Err(c.err(format!("view `{}` lacks `{key}=`", &c.s[from..c.pos])));
            }
            View {
                base,
                start: start.unwrap_or(0),
                shape: shape.unwrap_or_default(),
                stride: stride.unwrap_or_default(),
            }
        } else {
            View::of_base(base)
        };
        let text = &c.s[from..c.pos];
        view.validate().map_err(|e| {
            match (view.shape.len() == view.stride.len(), view.nelem() > 0, view.extent()) {
                (true, true, Some((lo, hi))) if lo < 0 || hi as u64 >= base.nelem => c.err(format!(
                    "view `{text}` reaches elements {lo}..={hi}, outside base `{name}` of {} elements",
                    base.nelem
                )),
                _ => c.err(format!("bad view `{text}`: {}", message_of(e))),
            }
        })?;
        Ok(view)
    }
}

/// The message of an error, without the "invalid instruction" prefix.
fn message_of(e: Error) -> String {
    match e {
        Error::InvalidInstruction { message, .. } => message,
        e => e.to_string(),
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The message for an unknown mnemonic, suggesting the closest known ones.
fn unknown_mnemonic(word: &str) -> String {
    let names = Opcode::ALL.iter().map(|op| op.name()).chain(["ext"]);
    let scored: Vec<(usize, &str)> = names.map(|n| (edit_distance(word, n), n)).collect();
    let best = scored.iter().map(|s| s.0).min().unwrap_or(usize::MAX);
    let close: Vec<String> = scored
        .iter()
        .filter(|s| s.0 == best && best <= 1 + word.len() / 4)
        .take(3)
        .map(|s| format!("`{}`", s.1))
        .collect();
    if close.is_empty() {
        format!("unknown mnemonic `{word}`")
    } else {
        format!("unknown mnemonic `{word}` (did you mean {}?)", close.join(" or "))
    }
}

/// Levenshtein distance over bytes (mnemonics are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.as_bytes().iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Dtype suffixes of constants; the three-letter ones first so `1i16` is not read as `1i1` + `6`.
const SUFFIXES: [(&str, DType); 10] = [
    ("i16", DType::I16),
    ("i32", DType::I32),
    ("i64", DType::I64),
    ("u16", DType::U16),
    ("u32", DType::U32),
    ("u64", DType::U64),
    ("f32", DType::F32),
    ("f64", DType::F64),
    ("i8", DType::I8),
    ("u8", DType::U8),
];

/// A suffixed numeric constant such as `-3i32`, `2.5f64`, `-inff32` or `NaNf64`. The range of
/// each dtype is [`Scalar::from_int`]'s and [`Scalar::from_float`]'s, the checks the C ABI
/// applies to the same constants.
fn parse_const(tok: &str) -> std::result::Result<Scalar, String> {
    let Some((num, dtype)) = SUFFIXES.iter().find_map(|&(s, d)| tok.strip_suffix(s).map(|n| (n, d))) else {
        return Err(match unknown_suffix(tok) {
            Some(suffix) => format!(
                "unknown dtype suffix `{suffix}` in constant `{tok}` (the suffixes are {}; bool constants are \
                 `true` and `false`)",
                SUFFIXES.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(", ")
            ),
            None => format!("constant `{tok}` lacks a dtype suffix (write e.g. `{tok}i64` or `{tok}f64`)"),
        });
    };
    let bad = || format!("bad {dtype} constant `{tok}`");
    let range = |why: String| format!("constant `{tok}` is {why}");
    // Literals with digits are numbers; `inf` and `NaN` are the only ways to write the others.
    let finite_literal = num.bytes().any(|b| b.is_ascii_digit());
    match dtype {
        DType::F32 => {
            // The value is the literal rounded once, to f32 (rounding through f64 first could
            // round twice); the range is checked on the f64 reading, which still has the
            // magnitude of a literal too large for f32.
            let x: f32 = num.parse().map_err(|_| bad())?;
            let wide: f64 = num.parse().map_err(|_| bad())?;
            if finite_literal && wide.is_infinite() {
                return Err(range(format!("out of range for f32 ({})", Scalar::accepted(DType::F32))));
            }
            Scalar::from_float(DType::F32, wide).map_err(range)?;
            Ok(Scalar::F32(x))
        }
        DType::F64 => {
            let x: f64 = num.parse().map_err(|_| bad())?;
            if finite_literal && x.is_infinite() {
                return Err(range(format!("out of range for f64 ({})", Scalar::accepted(DType::F64))));
            }
            Ok(Scalar::F64(x))
        }
        DType::Bool => unreachable!("bool constants are `true` and `false`"),
        d => Scalar::from_int(d, num.parse::<i128>().map_err(|_| bad())?).map_err(range),
    }
}

/// The dtype-like suffix of a constant that has none of the known ones: the letters (and digits
/// after them) that end a token starting like a number, as in `0.25f46`, `3x` or `7i`. An
/// exponent (`1e5`) is not a suffix, nor is a token without a number before its letters
/// (`-inf`).
fn unknown_suffix(tok: &str) -> Option<&str> {
    let digits = tok.len() - tok.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let letters_end = tok.len() - digits;
    let letters =
        tok[..letters_end].len() - tok[..letters_end].trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let start = letters_end - letters;
    let before = tok[..start].chars().next_back();
    let is_exponent = matches!(&tok[start..letters_end], "e" | "E") && digits > 0;
    (letters > 0 && before.is_some_and(|c| c.is_ascii_digit() || c == '.') && !is_exponent).then(|| &tok[start..])
}

/// `NaN(0xBITS)f32` or `NaN(0xBITS)f64`, the cursor just after `NaN`.
fn nan_with_bits(c: &mut Cursor, from: usize) -> Result<Scalar> {
    c.eat('(');
    let hex = c.take_while(|ch| ch.is_ascii_alphanumeric());
    let closed = c.eat(')');
    let suffix = c.ident().unwrap_or_default();
    let text = &c.s[from..c.pos];
    let bits = hex.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok()).filter(|_| closed);
    let value = match (bits, suffix) {
        (Some(b), "f64") => Some(Scalar::F64(f64::from_bits(b))).filter(|_| f64::from_bits(b).is_nan()),
        (Some(b), "f32") => u32::try_from(b).ok().map(f32::from_bits).filter(|x| x.is_nan()).map(Scalar::F32),
        _ => None,
    };
    value.ok_or_else(|| c.err(format!("bad NaN constant `{text}` (write e.g. `NaN(0x7ff4000000000000)f64`)")))
}

/// A cursor over one line (its comment already stripped).
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Cursor<'a> {
    fn err(&self, message: impl Into<String>) -> Error {
        Error::Parse { line: self.line, message: message.into() }
    }

    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    fn skip_ws(&mut self) {
        self.take_while(char::is_whitespace);
    }

    fn at_end(&self) -> bool {
        self.pos == self.s.len()
    }

    fn eat(&mut self, ch: char) -> bool {
        let hit = self.peek() == Some(ch);
        if hit {
            self.pos += ch.len_utf8();
        }
        hit
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let rest = &self.s[self.pos..];
        let n = rest.find(|ch| !f(ch)).unwrap_or(rest.len());
        self.pos += n;
        &rest[..n]
    }

    /// The next run of non-whitespace.
    fn word(&mut self) -> &'a str {
        self.take_while(|ch| !ch.is_whitespace())
    }

    /// A name, if one starts here.
    fn ident(&mut self) -> Option<&'a str> {
        if !self.peek().is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_') {
            return None;
        }
        Some(self.take_while(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
    }

    /// Describes what is at the cursor, for error messages.
    fn found(&self) -> String {
        match self.s[self.pos..].split_whitespace().next() {
            None => "end of line".to_string(),
            Some(w) => format!("`{w}`"),
        }
    }

    fn expect(&mut self, ch: char, context: &str) -> Result<()> {
        self.skip_ws();
        if self.eat(ch) { Ok(()) } else { Err(self.err(format!("expected `{ch}` {context}, found {}", self.found()))) }
    }

    /// An integer such as `-12`.
    fn number<T: FromStr>(&mut self, what: &str) -> Result<T> {
        self.skip_ws();
        let tok = self.take_while(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '+' | '_' | '.'));
        if tok.is_empty() {
            return Err(self.err(format!("expected {what}, found {}", self.found())));
        }
        tok.parse().map_err(|_| self.err(format!("bad {what} `{tok}`")))
    }

    /// A slice bound or step: a non-negative integer.
    fn slice_number(&mut self, name: &str, what: &str) -> Result<u64> {
        self.skip_ws();
        if self.peek() == Some('-') {
            return Err(self.err(format!(
                "slice {what} of `{name}` is negative; slices take non-negative bounds and steps \
                 (write `{name}{{start=.. shape=[..] stride=[..]}}` for other views)"
            )));
        }
        self.number(&format!("slice {what} of `{name}`"))
    }

    /// `[x, y, ...]`.
    fn list<T: FromStr>(&mut self, what: &str) -> Result<SmallVec<[T; 4]>> {
        self.expect('[', &format!("to open a list of {what}s"))?;
        let mut out = SmallVec::new();
        self.skip_ws();
        if self.eat(']') {
            return Ok(out);
        }
        loop {
            out.push(self.number(what)?);
            self.skip_ws();
            if self.eat(']') {
                return Ok(out);
            }
            self.expect(',', &format!("or `]` in a list of {what}s"))?;
        }
    }
}

/// The canonical text of a program: its `.base` lines, then one line per instruction, each line
/// ending in `\n`; `parse(&print(&p))` gives back `p` exactly (constants bit for bit). A view
/// prints as the bare base name when it is the whole base, contiguous and 1-d; as `name[start:stop]`
/// or `name[start:stop:step]` when it is 1-d with a non-negative start and a positive stride
/// (`stop` one past its last element); else as `name{start=S shape=[..] stride=[..]}`.
///
/// A view of a base missing from `program.bases` prints as `undeclared_b<id>`, an extension
/// number missing from `program.extensions` as `ext extension#<n>`; neither parses back.
pub fn print(program: &Program) -> String {
    let names: HashMap<BaseId, String> = program.bases.iter().map(|(n, b)| (b.id, n.clone())).collect();
    let mut out = String::new();
    for (name, b) in &program.bases {
        let _ = writeln!(out, ".base {name} {} {}", b.dtype, b.nelem);
    }
    for instr in &program.instructions {
        write_instruction(&mut out, instr, &names, &program.extensions);
    }
    out
}

/// A batch as text for the trace: `.base b<id> DTYPE COUNT` for every base referenced (in order
/// of first reference), then the instructions. Extension opcodes print as `ext extension#<n>`,
/// which does not parse back.
pub fn print_batch(batch: &[Instruction]) -> String {
    let mut names = HashMap::new();
    let mut out = String::new();
    for v in batch.iter().flat_map(Instruction::views) {
        if let Entry::Vacant(slot) = names.entry(v.base.id) {
            slot.insert(format!("b{}", v.base.id.0));
            let _ = writeln!(out, ".base b{} {} {}", v.base.id.0, v.base.dtype, v.base.nelem);
        }
    }
    for instr in batch {
        write_instruction(&mut out, instr, &names, &[]);
    }
    out
}

fn write_instruction(out: &mut String, instr: &Instruction, names: &HashMap<BaseId, String>, exts: &[String]) {
    match instr.opcode {
        Opcode::Extension(n) => match exts.get(n as usize) {
            Some(name) => {
                let _ = write!(out, "ext {name}");
            }
            None => {
                let _ = write!(out, "ext {}", instr.opcode);
            }
        },
        op => out.push_str(op.name()),
    }
    for (i, operand) in instr.operands.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        match operand {
            Operand::Const(s) => write_scalar(out, *s),
            Operand::View(v) => match names.get(&v.base.id) {
                Some(name) => write_view(out, name, v),
                None => write_view(out, &format!("undeclared_b{}", v.base.id.0), v),
            },
        }
    }
    out.push('\n');
}

fn write_scalar(out: &mut String, s: Scalar) {
    let _ = match s {
        Scalar::F64(x) if x.is_nan() && x.to_bits() != f64::NAN.to_bits() => {
            write!(out, "NaN(0x{:016x})f64", x.to_bits())
        }
        Scalar::F32(x) if x.is_nan() && x.to_bits() != f32::NAN.to_bits() => {
            write!(out, "NaN(0x{:08x})f32", x.to_bits())
        }
        s => write!(out, "{s}"),
    };
}

fn write_view(out: &mut String, name: &str, v: &View) {
    let _ = if v.start == 0 && v.shape[..] == [v.base.nelem as usize] && v.stride[..] == [1] {
        write!(out, "{name}")
    } else if let Some((start, stop, step)) = as_slice(v) {
        if step == 1 { write!(out, "{name}[{start}:{stop}]") } else { write!(out, "{name}[{start}:{stop}:{step}]") }
    } else {
        write!(out, "{name}{{start={} shape={:?} stride={:?}}}", v.start, &v.shape[..], &v.stride[..])
    };
}

/// `(start, stop, step)` of a 1-d view with a non-negative start and a positive stride; `stop` is
/// one past the last element, so the slice reads back as the same view.
fn as_slice(v: &View) -> Option<(u64, u64, u64)> {
    if v.ndim() != 1 || v.start < 0 || v.stride[0] < 1 {
        return None;
    }
    let (start, n, step) = (v.start as u64, v.shape[0] as u64, v.stride[0] as u64);
    let stop = if n == 0 { start } else { (n - 1).checked_mul(step)?.checked_add(start)?.checked_add(1)? };
    Some((start, stop, step))
}
