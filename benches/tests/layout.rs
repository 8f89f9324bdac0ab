//! The layout of `src/benchmarks/` keeps its dependencies one-directional: a benchmark's `vm.rs`
//! and `hand.rs` use their folder's `mod.rs` and the kits (`real.rs`, `vm_kit.rs`,
//! `hand_kit.rs`), never each other or another benchmark, and the kits use no benchmark nor
//! the registry that lists them. Read from the source text: comments and string literals are
//! dropped, the rest is cut into identifiers and `::`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The modules every benchmark may use besides its own `mod.rs`.
const KITS: &[&str] = &["real", "vm_kit", "hand_kit"];

/// What the kits must not name as a path segment: the registry's items.
const REGISTRY: &[&str] = &["all", "find", "BenchDef", "DEF", "entry_points"];

fn benchmarks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join("benchmarks")
}

/// The benchmark folders under `src/benchmarks/`, by name.
fn benchmark_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(benchmarks_dir())
        .expect("src/benchmarks is readable")
        .map(|e| e.expect("a directory entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().into_string().expect("a UTF-8 folder name"))
        .collect();
    names.sort();
    names
}

/// A token of Rust source that a path is made of.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Other,
}

/// Cuts `source` into identifiers, `::` and single other characters, without comments, string
/// and character literals (a lifetime's quote is kept as `Other`).
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
        } else if c == '\'' && next == Some('\\') {
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token::Other);
            }
            i += 1;
        }
    }
    out
}

/// The identifiers of `source` that are in `names`.
fn names_used<'a>(source: &str, names: &'a [&'a str]) -> BTreeSet<&'a str> {
    let found: BTreeSet<String> =
        tokens(source).into_iter().filter_map(|t| if let Token::Ident(s) = t { Some(s) } else { None }).collect();
    names.iter().copied().filter(|n| found.contains(*n)).collect()
}

/// The identifiers of `source` right after a `::` that are in `names`.
fn path_segments_used<'a>(source: &str, names: &'a [&'a str]) -> BTreeSet<&'a str> {
    let t = tokens(source);
    let after_sep: BTreeSet<&str> = t
        .windows(2)
        .filter_map(|w| match w {
            [Token::PathSep, Token::Ident(s)] => Some(s.as_str()),
            _ => None,
        })
        .collect();
    names.iter().copied().filter(|n| after_sep.contains(*n)).collect()
}

/// What `file` of benchmark `own` (`vm.rs` or `hand.rs`) names that it must not: the other side
/// of its benchmark, and every other benchmark.
fn forbidden_in_side(own: &str, file: &str, source: &str, benchmarks: &[&str]) -> BTreeSet<String> {
    let other_side: &[&str] = match file {
        "vm.rs" => &["hand"],
        "hand.rs" => &["vm", "vm_kit", "vm_frontend"],
        _ => panic!("{file} is not a side of a benchmark"),
    };
    let others: Vec<&str> = benchmarks.iter().copied().filter(|b| *b != own).collect();
    names_used(source, other_side).into_iter().chain(names_used(source, &others)).map(str::to_owned).collect()
}

/// What a kit names that it must not: any benchmark, and the registry's items.
fn forbidden_in_kit(source: &str, benchmarks: &[&str]) -> BTreeSet<String> {
    names_used(source, benchmarks).into_iter().chain(path_segments_used(source, REGISTRY)).map(str::to_owned).collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn no_side_of_a_benchmark_uses_the_other_or_another_benchmark() {
    let names = benchmark_names();
    assert!(names.len() >= 9, "the benchmarks of BENCHMARKS.md are folders under src/benchmarks: {names:?}");
    let benchmarks: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut failures = Vec::new();
    for own in &benchmarks {
        let dir = benchmarks_dir().join(own);
        assert!(dir.join("mod.rs").is_file(), "{own}/mod.rs");
        for file in ["vm.rs", "hand.rs"] {
            let path = dir.join(file);
            let bad = forbidden_in_side(own, file, &read(&path), &benchmarks);
            if !bad.is_empty() {
                failures.push(format!("{own}/{file} names {bad:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_kits_use_no_benchmark() {
    let names = benchmark_names();
    let benchmarks: Vec<&str> = names.iter().map(String::as_str).collect();
    for kit in KITS {
        let path = benchmarks_dir().join(format!("{kit}.rs"));
        let bad = forbidden_in_kit(&read(&path), &benchmarks);
        assert!(bad.is_empty(), "{kit}.rs names {bad:?}");
    }
}

/// The checks above catch what they are for: the imports that made the old cycle.
#[test]
fn the_checks_catch_an_import_of_the_other_side() {
    let benchmarks = ["black_scholes", "knn"];
    let vm =
        "//! Uses the hand baseline's order.\nuse super::{SEED, hand::cnd};\nfn f() -> &'static str { \"hand::x\" }\n";
    assert_eq!(forbidden_in_side("black_scholes", "vm.rs", vm, &benchmarks), BTreeSet::from(["hand".to_owned()]));
    let hand = "use crate::benchmarks::black_scholes::vm::program;\nuse crate::benchmarks::knn::points;\n";
    assert_eq!(
        forbidden_in_side("black_scholes", "hand.rs", hand, &benchmarks),
        BTreeSet::from(["vm".to_owned(), "knn".to_owned()])
    );
    let clean = "// the vm and the hand side\nuse super::{A, SEED};\nuse vm_ir::Result;\nlet c = 'v';\n";
    assert!(forbidden_in_side("black_scholes", "hand.rs", clean, &benchmarks).is_empty());
    let kit = "fn t() { for def in crate::benchmarks::all() {} let ok = xs.iter().all(|x| *x); }\n";
    assert_eq!(forbidden_in_kit(kit, &benchmarks), BTreeSet::from(["all".to_owned()]));
    assert_eq!(forbidden_in_kit("use super::knn::points;", &benchmarks), BTreeSet::from(["knn".to_owned()]));
}
