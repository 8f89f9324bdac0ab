use super::*;
use crate::instr::visits_each_element_once;
use crate::opcode::{DTypeSet, Kind, TypeRule};
use proptest::prelude::*;

const EXAMPLE: &str = "\
# a comment; blank lines ignored

.base a f64 1000            # declare base `a`: dtype, number of elements
.base s f64 1
.base b f64 1000
.base c f64 1000
range a
add a, a, 1.5f64            # whole base `a` as a contiguous 1-d view
multiply a[0:500], a[0:500], a[500:1000:1]     # 1-d slices start:stop[:step], step > 0
add_reduce s{start=0 shape=[] stride=[]}, a, 0i64     # explicit form: any view
sqrt a{start=999 shape=[10] stride=[-1]}, a{start=0 shape=[10] stride=[0]}
ext matmul c, a, b          # extension method by name
sync s
";

const EXAMPLE_CANONICAL: &str = "\
.base a f64 1000
.base s f64 1
.base b f64 1000
.base c f64 1000
range a
add a, a, 1.5f64
multiply a[0:500], a[0:500], a[500:1000]
add_reduce s{start=0 shape=[] stride=[]}, a, 0i64
sqrt a{start=999 shape=[10] stride=[-1]}, a{start=0 shape=[10] stride=[0]}
ext matmul c, a, b
sync s
";

fn view(base: Base, start: i64, shape: &[usize], stride: &[i64]) -> Operand {
    Operand::View(View::new(base, start, shape, stride).unwrap())
}

fn parse_err(text: &str) -> (usize, String) {
    match parse(text) {
        Err(Error::Parse { line, message }) => (line, message),
        other => panic!("expected a parse error for {text:?}, got {other:?}"),
    }
}

/// Asserts that `text` fails on `line` with a message containing `needle`.
#[track_caller]
fn assert_err(text: &str, line: usize, needle: &str) {
    let (l, m) = parse_err(text);
    assert_eq!(l, line, "line of {m:?} for {text:?}");
    assert!(m.contains(needle), "message {m:?} lacks {needle:?} for {text:?}");
}

#[test]
fn the_example_parses_to_what_it_says() {
    let p = parse(EXAMPLE).unwrap();
    let a = Base { id: BaseId(1), dtype: DType::F64, nelem: 1000 };
    let s = Base { id: BaseId(2), dtype: DType::F64, nelem: 1 };
    assert_eq!(p.bases[0], ("a".to_string(), a));
    assert_eq!(p.bases[3].1.id, BaseId(4));
    assert_eq!(p.base("s"), Some(s));
    assert_eq!(p.extensions, ["matmul"]);
    let (same, lines) = parse_with_lines(EXAMPLE).unwrap();
    assert_eq!(same, p);
    assert_eq!(lines, [7, 8, 9, 10, 11, 12, 13]);
    let whole = Operand::View(View::of_base(a));
    let i = &p.instructions;
    assert_eq!(i.len(), 7);
    assert_eq!(i[0], Instruction::new(Opcode::Range, [whole.clone()]));
    assert_eq!(i[1], Instruction::new(Opcode::Add, [whole.clone(), whole.clone(), Scalar::F64(1.5).into()]));
    let (lo, hi) = (view(a, 0, &[500], &[1]), view(a, 500, &[500], &[1]));
    assert_eq!(i[2], Instruction::new(Opcode::Multiply, [lo.clone(), lo, hi]));
    assert_eq!(i[3], Instruction::new(Opcode::AddReduce, [view(s, 0, &[], &[]), whole, Scalar::I64(0).into()]));
    assert_eq!(i[4].operands[0], view(a, 999, &[10], &[-1]));
    assert_eq!(i[4].operands[1], view(a, 0, &[10], &[0]));
    assert_eq!(i[5].opcode, Opcode::Extension(0));
    assert_eq!(i[5].operands.len(), 3);
    assert_eq!(i[6], Instruction::new(Opcode::Sync, [Operand::View(View::of_base(s))]));
    assert_eq!(print(&p), EXAMPLE_CANONICAL);
    assert_eq!(parse(EXAMPLE_CANONICAL).unwrap(), p);
}

#[test]
fn views_print_in_the_shortest_form() {
    let a = Base { id: BaseId(1), dtype: DType::I32, nelem: 10 };
    let cases: &[(i64, &[usize], &[i64], &str)] = &[
        (0, &[10], &[1], "a"),
        (0, &[9], &[1], "a[0:9]"),
        (3, &[2], &[1], "a[3:5]"),
        (0, &[4], &[3], "a[0:10:3]"),
        (1, &[1], &[7], "a[1:2:7]"),
        (4, &[0], &[1], "a[4:4]"),
        (12, &[0], &[2], "a[12:12:2]"),
        (-3, &[0], &[1], "a{start=-3 shape=[0] stride=[1]}"),
        (9, &[10], &[-1], "a{start=9 shape=[10] stride=[-1]}"),
        (2, &[5], &[0], "a{start=2 shape=[5] stride=[0]}"),
        (0, &[10, 1], &[1, 1], "a{start=0 shape=[10, 1] stride=[1, 1]}"),
        (0, &[2, 5], &[5, 1], "a{start=0 shape=[2, 5] stride=[5, 1]}"),
        (7, &[], &[], "a{start=7 shape=[] stride=[]}"),
    ];
    for &(start, shape, stride, text) in cases {
        let p = Program {
            bases: vec![("a".into(), a)],
            extensions: vec![],
            instructions: vec![Instruction::new(Opcode::Sync, [view(a, start, shape, stride)])],
        };
        let printed = print(&p);
        assert_eq!(printed, format!(".base a i32 10\nsync {text}\n"));
        assert_eq!(parse(&printed).unwrap(), p, "{text}");
    }
}

#[test]
fn slices_and_explicit_views_are_read_leniently() {
    let t = ".base a u8 10\nsync a[0:10:3]\nsync a[0:11:3]\nsync a[ 2 : 4 : 1 ]\nsync a[0:10]\n\
             sync a{ stride=[ 2 , 1 ] start=0 shape=[2,2] }\nsync a{start=+1 shape=[] stride=[]}";
    let p = parse(t).unwrap();
    let views: Vec<_> = p.instructions.iter().map(|i| i.operands[0].as_view().unwrap().clone()).collect();
    let b = p.bases[0].1;
    assert_eq!(views[0], View::new(b, 0, &[4], &[3]).unwrap());
    assert_eq!(views[1], views[0]);
    assert_eq!(views[2], View::new(b, 2, &[2], &[1]).unwrap());
    assert_eq!(views[3], View::of_base(b));
    assert_eq!(views[4], View::new(b, 0, &[2, 2], &[2, 1]).unwrap());
    assert_eq!(views[5], View::new(b, 1, &[], &[]).unwrap());
    assert_eq!(
        print(&p),
        ".base a u8 10\nsync a[0:10:3]\nsync a[0:10:3]\nsync a[2:4]\nsync a\n\
         sync a{start=0 shape=[2, 2] stride=[2, 1]}\nsync a{start=1 shape=[] stride=[]}\n"
    );
}

#[test]
fn constants_of_every_dtype_read_back_bit_for_bit() {
    let consts = [
        ("true", Scalar::Bool(true)),
        ("false", Scalar::Bool(false)),
        ("-128i8", Scalar::I8(-128)),
        ("-32768i16", Scalar::I16(i16::MIN)),
        ("-3i32", Scalar::I32(-3)),
        ("9223372036854775807i64", Scalar::I64(i64::MAX)),
        ("255u8", Scalar::U8(255)),
        ("65535u16", Scalar::U16(65535)),
        ("7u32", Scalar::U32(7)),
        ("18446744073709551615u64", Scalar::U64(u64::MAX)),
        ("2.5f64", Scalar::F64(2.5)),
        ("0.1f64", Scalar::F64(0.1)),
        ("-0.0f64", Scalar::F64(-0.0)),
        ("0.0f32", Scalar::F32(0.0)),
        ("1e-7f64", Scalar::F64(1e-7)),
        ("1e16f64", Scalar::F64(1e16)),
        ("5e-324f64", Scalar::F64(5e-324)),
        ("1.1754944e-38f32", Scalar::F32(f32::MIN_POSITIVE)),
        ("3.4028235e38f32", Scalar::F32(f32::MAX)),
        ("0.1f32", Scalar::F32(0.1)),
        ("-inff32", Scalar::F32(f32::NEG_INFINITY)),
        ("NaNf64", Scalar::F64(f64::NAN)),
        ("NaNf32", Scalar::F32(f32::NAN)),
        ("inff32", Scalar::F32(f32::INFINITY)),
        ("-inff64", Scalar::F64(f64::NEG_INFINITY)),
        ("NaN(0xfff8000000000000)f64", Scalar::F64(-f64::NAN)),
        ("NaN(0x7ff0000000000001)f64", Scalar::F64(f64::from_bits(0x7ff0_0000_0000_0001))),
        ("NaN(0x7fa00000)f32", Scalar::F32(f32::from_bits(0x7fa0_0000))),
    ];
    for (text, want) in consts {
        let d = want.dtype();
        let src = format!(".base x {d} 1\n.base y bool 1\nnot_equal y, x, {text}\n");
        let p = parse(&src).unwrap_or_else(|e| panic!("{text}: {e}"));
        let got = p.instructions[0].operands[2].as_const().unwrap();
        assert!(same_scalar(got, want), "{text}: {got:?} != {want:?}");
        assert_eq!(print(&p), src, "{text}");
    }
    // A literal below f32's smallest subnormal rounds to zero, as any rounding: not an error.
    let p = parse(".base x f32 1\nidentity x, 1e-300f32\n").unwrap();
    assert_eq!(p.instructions[0].operands[1].as_const(), Some(Scalar::F32(0.0)));
    // Leniency: a sign on NaN/infinities, `+`, lower-case `nan` and `infinity`.
    let p = parse(".base x f64 1\nadd x, -NaNf64, +1f64").unwrap();
    assert_eq!(p.instructions[0].operands[1].as_const().unwrap().as_f64().to_bits(), (-f64::NAN).to_bits());
    assert_eq!(print(&p), ".base x f64 1\nadd x, NaN(0xfff8000000000000)f64, 1.0f64\n");
}

#[test]
fn print_batch_names_bases_by_id() {
    let x = Base { id: BaseId(7), dtype: DType::F32, nelem: 4 };
    let y = Base { id: BaseId(3), dtype: DType::Bool, nelem: 4 };
    let batch = vec![
        Instruction::new(Opcode::Isnan, [View::of_base(y).into(), View::of_base(x).into()]),
        Instruction::new(Opcode::Extension(2), [View::of_base(x).into(), Scalar::F32(1.0).into()]),
        Instruction::new(Opcode::None, []),
        Instruction::new(Opcode::Free, [view(x, 1, &[2], &[2])]),
    ];
    let text = print_batch(&batch);
    assert_eq!(
        text,
        ".base b3 bool 4\n.base b7 f32 4\nisnan b3, b7\next extension#2 b7, 1.0f32\nnone\nfree b7[1:4:2]\n"
    );
    // Without extensions it parses back (with fresh ids).
    let p = parse(&print_batch(&[batch[0].clone(), batch[3].clone()])).unwrap();
    assert_eq!(p.bases.iter().map(|b| b.0.as_str()).collect::<Vec<_>>(), ["b3", "b7"]);
    assert_eq!(print_batch(&[]), "");
}

#[test]
fn errors_name_the_line_and_the_problem() {
    let decl = ".base a f64 10\n.base i i64 10\n";
    // unknown mnemonic, with suggestions
    assert_err("\n\nad a, a, a", 3, "unknown mnemonic `ad` (did you mean `add`?)");
    assert_err("sqr a, a", 1, "did you mean `sqrt`?");
    assert_err("addreduce a, a, 0i64", 1, "did you mean `add_reduce`?");
    assert_err("frobnicate a", 1, "unknown mnemonic `frobnicate`");
    assert!(!parse_err("frobnicate a").1.contains("did you mean"));
    assert_err("3add a", 1, "expected a mnemonic or `.base`, found `3add`");
    assert_err("ext 3", 1, "expected an extension method name after `ext`");
    // declarations
    assert_err(".base a f64 10\n\n.base a i32 3", 3, "base `a` is already declared (on line 1)");
    assert_err(".bass a f64 1", 1, "unknown directive `.bass`");
    assert_err(".base a f16 1", 1, "unknown dtype `f16` for base `a` (one of bool, i8");
    assert_err(".base a", 1, "missing dtype for base `a`");
    assert_err(".base a f64 -1", 1, "bad number of elements `-1` for base `a`");
    assert_err(".base a f64 1 2", 1, "unexpected `2` after the declaration of base `a`");
    assert_err(".base 1a f64 1", 1, "bad base name `1a`");
    assert_err(".base", 1, "`.base` needs a name");
    assert_err(".base inff64 f64 1", 1, "`inff64` is a constant and cannot name a base");
    // undeclared base
    assert_err(".base a f64 4\nadd a, a, b", 2, "undeclared base `b`");
    // bad view syntax
    let at = |s: &str| format!("{decl}{s}");
    assert_err(&at("sync a[1]"), 3, "expected `:` in the slice of `a`, found `]`");
    assert_err(&at("sync a[1:2"), 3, "expected `]` to close the slice of `a`, found end of line");
    assert_err(&at("sync a[0:4:0]"), 3, "slice `a[0:4:0]` has step 0");
    assert_err(&at("sync a[0:4:-1]"), 3, "slice step of `a` is negative");
    assert_err(&at("sync a[-1:4]"), 3, "slice start of `a` is negative");
    assert_err(&at("sync a[x:4]"), 3, "bad slice start of `a` `x`");
    assert_err(&at("sync a[5:3]"), 3, "slice `a[5:3]` stops before it starts");
    assert_err(&at("sync a{start=0 shape=[1]}"), 3, "view `a{start=0 shape=[1]}` lacks `stride=`");
    assert_err(&at("sync a{start=0 start=1}"), 3, "view field `start` given twice");
    assert_err(&at("sync a{begin=0}"), 3, "unknown view field `begin`");
    assert_err(&at("sync a{start 0}"), 3, "expected `=` after `start`");
    assert_err(&at("sync a{start=0 shape=[1 2] stride=[1]}"), 3, "expected `,` or `]` in a list of extents");
    assert_err(&at("sync a{start=0 shape=[-1] stride=[1]}"), 3, "bad extent `-1`");
    assert_err(&at("sync a{start=0 shape=[2] stride=[1, 1]}"), 3, "view has 1 dimensions but 2 strides");
    assert_err(&at("sync a{start=0 shape=[2]"), 3, "expected `start=`, `shape=`, `stride=` or `}`");
    let deep = format!("sync a{{start=0 shape=[{}] stride=[{}]}}", ["1"; 17].join(", "), ["0"; 17].join(", "));
    assert_err(&at(&deep), 3, "17 dimensions; at most 16");
    // views outside their base
    assert_err(&at("sync a[0:11]"), 3, "view `a[0:11]` reaches elements 0..=10, outside base `a` of 10 elements");
    assert_err(&at("sync a{start=5 shape=[3] stride=[3]}"), 3, "reaches elements 5..=11, outside");
    assert_err(&at("sync a{start=4 shape=[7] stride=[-1]}"), 3, "reaches elements -2..=4, outside base `a`");
    assert_err(&at("sync a{start=0 shape=[3] stride=[9223372036854775807]}"), 3, "overflows 64-bit offsets");
    // bad constants
    assert_err(&at("add a, a, 1.5"), 3, "constant `1.5` lacks a dtype suffix");
    assert_err(&at("add i, i, 1.5i64"), 3, "bad i64 constant `1.5i64`");
    assert_err(&at("add i, i, 300u8"), 3, "constant `300u8` is out of range for u8");
    assert_err(&at("add i, i, -1u64"), 3, "constant `-1u64` is out of range for u64 (0 to 18446744073709551615)");
    assert_err(&at("add a, a, 0.25f46"), 3, "unknown dtype suffix `f46` in constant `0.25f46` (the suffixes are i16");
    assert_err(&at("add a, a, 3x"), 3, "unknown dtype suffix `x`");
    assert_err(&at("add a, a, 1e5"), 3, "constant `1e5` lacks a dtype suffix (write e.g. `1e5i64`");
    assert_err(&at("add a, a, -inf"), 3, "constant `-inf` lacks a dtype suffix");
    assert_err(&at("add a, a, 1e400f64"), 3, "constant `1e400f64` is out of range for f64");
    assert_err(&at("add i, i, 300i8"), 3, "constant `300i8` is out of range for i8 (-128 to 127)");
    assert_err(&at("identity a, 1e300f32"), 3, "constant `1e300f32` is out of range for f32 (finite values");
    assert_err(&at("identity a, -3.5e38f32"), 3, "constant `-3.5e38f32` is out of range for f32");
    assert_err(&at("add a, a, 1.2.3f64"), 3, "bad f64 constant `1.2.3f64`");
    assert_err(&at("add a, a, NaN(0x1)f64"), 3, "bad NaN constant `NaN(0x1)f64`");
    assert_err(&at("add a, a, NaN(0x7ff8000000000000)f32"), 3, "bad NaN constant");
    assert_err(&at("add a, a, @"), 3, "expected an operand (a view or a constant), found `@`");
    // wrong operand count and separators
    assert_err(&at("add a, a"), 3, "`add` takes 3 operands, got 2");
    assert_err(&at("none a"), 3, "`none` takes 0 operands, got 1");
    assert_err(&at("add_reduce a, a"), 3, "`add_reduce` takes 3 operands, got 2");
    assert_err(&at("ext f a, a, a, a, a, a, a"), 3, "`ext f` has 7 operands; at most 6");
    assert_err(&at("add a, a, a,"), 3, "expected an operand (a view or a constant), found end of line");
    assert_err(&at("add a a, a"), 3, "expected `,` or end of line after operand 0, found `a,`");
    // validation errors, with the line
    assert_err(&at("add a, a, i"), 3, "invalid instruction, operand 2: add: dtype mismatch");
    assert_err(&at("add a{start=0 shape=[2] stride=[0]}, 1f64, 1f64"), 3, "visits some element more than once");
    assert_err(&at("add_reduce a, a, 1i64"), 3, "axis 1 out of range");
    assert_err(&at("random a, 1u64, 2i64"), 3, "random expects a u64 constant here");
}

#[test]
fn names_and_extensions() {
    let t = ".base _x9 f64 3\n.base NaN f64 3\next f _x9\next g NaN\next f _x9, NaN, 1.0f64\next none\n";
    let p = parse(t).unwrap();
    assert_eq!(p.extensions, ["f", "g", "none"]);
    let ops: Vec<_> = p.instructions.iter().map(|i| i.opcode).collect();
    assert_eq!(ops, [Opcode::Extension(0), Opcode::Extension(1), Opcode::Extension(0), Opcode::Extension(2)]);
    assert_eq!(print(&p), t);
    let mut q = p.clone();
    q.extensions.clear();
    q.bases.pop();
    assert_eq!(print(&q).lines().nth(2), Some("ext extension#1 undeclared_b2"));
}

// ---- random valid programs ----

fn same_scalar(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => x.to_bits() == y.to_bits(),
        (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits(),
        (a, b) => a == b,
    }
}

/// Equality with constants compared by bits (so NaN equals itself).
fn same_program(a: &Program, b: &Program) -> bool {
    let same_operand = |x: &Operand, y: &Operand| match (x, y) {
        (Operand::Const(x), Operand::Const(y)) => same_scalar(*x, *y),
        (x, y) => x == y,
    };
    a.bases == b.bases
        && a.extensions == b.extensions
        && a.instructions.len() == b.instructions.len()
        && a.instructions.iter().zip(&b.instructions).all(|(x, y)| {
            x.opcode == y.opcode
                && x.operands.len() == y.operands.len()
                && x.operands.iter().zip(&y.operands).all(|(p, q)| same_operand(p, q))
        })
}

/// Builds random valid programs from a seed (splitmix64), covering every kind of opcode.
struct Gen {
    state: u64,
    program: Program,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen { state: seed, program: Program::default() }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    fn dtype_in(&mut self, set: DTypeSet) -> DType {
        let all: Vec<_> = set.dtypes().collect();
        all[self.below(all.len() as u64) as usize]
    }

    fn shape(&mut self, min_ndim: usize) -> Vec<usize> {
        let ndim = min_ndim + self.below(4 - min_ndim as u64) as usize;
        (0..ndim).map(|_| if self.chance(12) { 0 } else { 1 + self.below(4) as usize }).collect()
    }

    fn name(&mut self) -> String {
        const FIRST: &[u8] = b"abcxyzABZ_";
        const REST: &[u8] = b"abz09_QN";
        loop {
            let mut s = String::from(FIRST[self.below(FIRST.len() as u64) as usize] as char);
            for _ in 0..self.below(4) {
                s.push(REST[self.below(REST.len() as u64) as usize] as char);
            }
            if !RESERVED.contains(&s.as_str()) && self.program.base(&s).is_none() {
                return s;
            }
        }
    }

    /// A base of `dtype` with at least `need` elements: an existing one or a new one.
    fn base(&mut self, dtype: DType, need: u64, exact: bool) -> Base {
        let fits: Vec<Base> = (self.program.bases.iter())
            .map(|b| b.1)
            .filter(|b| b.dtype == dtype && if exact { b.nelem == need } else { b.nelem >= need })
            .collect();
        if !fits.is_empty() && !self.chance(3) {
            return fits[self.below(fits.len() as u64) as usize];
        }
        let nelem = if exact { need } else { need + self.below(3) };
        let base = Base { id: BaseId(self.program.bases.len() as u64 + 1), dtype, nelem };
        let name = self.name();
        self.program.bases.push((name, base));
        base
    }

    /// A valid view of `shape`; an output visits no element twice.
    fn view(&mut self, dtype: DType, shape: &[usize], output: bool) -> View {
        let n: usize = shape.iter().product();
        if shape.len() == 1 && self.chance(3) {
            return View::of_base(self.base(dtype, n as u64, true));
        }
        let mut stride = vec![0i64; shape.len()];
        if output || self.chance(2) {
            // A permuted row-major layout with gaps and random signs: visits each element once.
            let mut order: Vec<usize> = (0..shape.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, self.below(i as u64 + 1) as usize);
            }
            let mut acc = 1i64;
            for &d in &order {
                let (sign, gap) = (if self.chance(3) { -1 } else { 1 }, 1 + self.below(2) as i64);
                stride[d] = sign * acc * gap;
                acc = acc * gap * shape[d].max(1) as i64 + self.below(2) as i64;
            }
            for (s, &e) in stride.iter_mut().zip(shape) {
                if e <= 1 && self.chance(2) {
                    *s = self.below(7) as i64 - 3;
                }
            }
        } else {
            for s in &mut stride {
                *s = self.below(11) as i64 - 5;
            }
        }
        let (mut lo, mut hi) = (0i64, 0i64);
        for (&e, &s) in shape.iter().zip(&stride) {
            let reach = (e.max(1) as i64 - 1) * s;
            if reach < 0 { lo += reach } else { hi += reach }
        }
        let slack = self.below(3) as i64;
        let start = if n == 0 && self.chance(2) { self.below(20) as i64 - 10 } else { slack - lo };
        let need = if n == 0 { 0 } else { (start + hi + 1) as u64 };
        let base = self.base(dtype, need, false);
        let v = View { base, start, shape: shape.into(), stride: stride.into() };
        v.validate().unwrap();
        assert!(!output || visits_each_element_once(&v), "{v}");
        v
    }

    fn scalar(&mut self, dtype: DType) -> Scalar {
        const F64S: [f64; 12] =
            [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 0.1, 1e16, 1e-7, 5e-324, f64::MAX, f64::MIN, 2.5];
        let bits = self.next();
        let (special, nan) = (self.chance(2), self.chance(3));
        let f = F64S[self.below(F64S.len() as u64) as usize];
        match dtype {
            DType::F64 if special => Scalar::F64(f),
            DType::F32 if special => Scalar::F32(f as f32),
            DType::F64 if nan => Scalar::F64(f64::from_bits(bits | 0x7ff0_0000_0000_0001)),
            DType::F32 if nan => Scalar::F32(f32::from_bits(bits as u32 | 0x7f80_0001)),
            DType::F64 => Scalar::F64(f64::from_bits(bits)),
            DType::F32 => Scalar::F32(f32::from_bits(bits as u32)),
            d => Scalar::U64(bits >> self.below(64)).cast(d),
        }
    }

    fn operand(&mut self, dtype: DType, shape: &[usize]) -> Operand {
        if self.chance(4) { Operand::Const(self.scalar(dtype)) } else { Operand::View(self.view(dtype, shape, false)) }
    }

    fn instruction(&mut self, op: Opcode) -> Instruction {
        let (out_dtype, in_dtype) = match op.type_rule() {
            TypeRule::Same(set) => {
                let d = self.dtype_in(set);
                (d, d)
            }
            TypeRule::ToBool(set) => (DType::Bool, self.dtype_in(set)),
            TypeRule::ToPosition(set) => (DType::I64, self.dtype_in(set)),
            _ => (self.dtype_in(DTypeSet::ALL), self.dtype_in(DTypeSet::ALL)),
        };
        let ops: Vec<Operand> = match op.kind() {
            Kind::Unary | Kind::Binary | Kind::Select => {
                let shape = self.shape(0);
                let mut ops = vec![Operand::View(self.view(out_dtype, &shape, true))];
                let n = op.kind().arity().unwrap().0;
                for k in 1..n {
                    let d =
                        if op.kind() == Kind::Select { [DType::Bool, out_dtype, out_dtype][k - 1] } else { in_dtype };
                    ops.push(self.operand(d, &shape));
                }
                ops
            }
            Kind::Reduce | Kind::Accumulate | Kind::Sort => {
                let mut shape = self.shape(1);
                let axis = self.below(shape.len() as u64) as usize;
                if op.is_arg_reduce() {
                    shape[axis] = shape[axis].max(1); // a position of nothing is invalid
                }
                let mut out_shape = shape.clone();
                if op.kind() == Kind::Reduce {
                    out_shape.remove(axis);
                }
                let out = self.view(out_dtype, &out_shape, true).into();
                vec![out, self.view(in_dtype, &shape, false).into(), Scalar::I64(axis as i64).into()]
            }
            Kind::Range => {
                let shape = self.shape(0);
                vec![self.view(out_dtype, &shape, true).into()]
            }
            Kind::Random => {
                let shape = self.shape(0);
                let out = self.view(out_dtype, &shape, true).into();
                vec![out, Scalar::U64(self.next()).into(), Scalar::U64(self.next()).into()]
            }
            Kind::Search => {
                let (keys, sorted) = (self.shape(0), self.shape(1)[..1].to_vec());
                let out = self.view(out_dtype, &keys, true).into();
                vec![out, self.view(in_dtype, &sorted, false).into(), self.view(in_dtype, &keys, false).into()]
            }
            Kind::Gather | Kind::Scatter => {
                let (outer, inner) = (self.shape(0), self.shape(0));
                let index_dtype = self.dtype_in(DTypeSet::INTEGER);
                let gather = op.kind() == Kind::Gather;
                let out = self.view(out_dtype, if gather { &inner } else { &outer }, true).into();
                let data =
                    if gather { self.view(out_dtype, &outer, false).into() } else { self.operand(out_dtype, &inner) };
                vec![out, data, self.view(index_dtype, &inner, false).into()]
            }
            Kind::System => {
                let shape = self.shape(0);
                vec![self.view(out_dtype, &shape, false).into()]
            }
            Kind::Nothing => vec![],
            Kind::Extension => unreachable!("built-in opcodes only"),
        };
        let instr = Instruction::new(op, ops);
        instr.validate().unwrap_or_else(|e| panic!("generated {op}: {e}"));
        instr
    }

    fn extension(&mut self) -> Instruction {
        const NAMES: [&str; 4] = ["matmul", "fft", "none", "_x1"];
        let name = NAMES[self.below(4) as usize];
        let exts = &mut self.program.extensions;
        let n = exts.iter().position(|e| e == name).unwrap_or_else(|| {
            exts.push(name.to_string());
            exts.len() - 1
        });
        let ops: Vec<Operand> = (0..self.below(MAX_OPERANDS as u64 + 1))
            .map(|_| {
                let (d, shape) = (self.dtype_in(DTypeSet::ALL), self.shape(0));
                self.operand(d, &shape)
            })
            .collect();
        Instruction::new(Opcode::Extension(n as u32), ops)
    }

    fn program(mut self, len: usize) -> Program {
        for _ in 0..len {
            let instr = if self.chance(10) {
                self.extension()
            } else {
                let op = Opcode::ALL[self.below(Opcode::ALL.len() as u64) as usize];
                self.instruction(op)
            };
            self.program.instructions.push(instr);
        }
        self.program
    }
}

#[track_caller]
fn assert_round_trip(p: &Program) {
    let text = print(p);
    let q = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(same_program(p, &q), "round trip changed the program:\n{text}\n{p:#?}\n{q:#?}");
    assert_eq!(print(&q), text);
}

#[test]
fn every_opcode_round_trips() {
    for (i, &op) in Opcode::ALL.iter().enumerate() {
        for seed in 0..40 {
            let mut g = Gen::new((i as u64) << 32 | seed);
            let instr = g.instruction(op);
            g.program.instructions.push(instr);
            assert_round_trip(&g.program);
        }
    }
}

proptest! {
    #[test]
    fn random_programs_round_trip(seed in any::<u64>(), len in 0usize..16) {
        let p = Gen::new(seed).program(len);
        let text = print(&p);
        let q = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(same_program(&p, &q), "round trip changed the program:\n{}", text);
        prop_assert_eq!(print(&q), text);
        // The trace form parses too when there are no extensions, naming the same layouts.
        let plain: Vec<_> = p.instructions.iter().filter(|i| i.opcode.kind() != Kind::Extension).cloned().collect();
        let r = parse(&print_batch(&plain)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(r.instructions.len(), plain.len());
    }

    #[test]
    fn any_float_constant_round_trips(bits in any::<u64>(), nan in any::<bool>(), wide in any::<bool>()) {
        let bits = if nan { bits | 0x7ff0_0000_0000_0001 | 0x7f80_0001 } else { bits };
        let s = if wide { Scalar::F64(f64::from_bits(bits)) } else { Scalar::F32(f32::from_bits(bits as u32)) };
        let x = Base { id: BaseId(1), dtype: s.dtype(), nelem: 1 };
        let p = Program {
            bases: vec![("x".into(), x)],
            extensions: vec![],
            instructions: vec![Instruction::new(Opcode::Add, [View::of_base(x).into(), s.into(), s.into()])],
        };
        assert_round_trip(&p);
    }
}
