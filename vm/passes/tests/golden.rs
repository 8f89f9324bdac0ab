//! Golden tests of the optimizer: each file under `tests/golden/` holds batches in the text form
//! and what the named passes make of them, so that a change in what a pass does, in the kernels
//! formed or in what they contract shows as a diff of text.
//!
//! A file:
//!
//! ```text
//! # passes: flat-reductions            (the passes to run, in order; or `standard`)
//! # a comment saying what the case shows
//! .base a f64 12                       (bases shared by every batch)
//! multiply a, a, 2.0f64
//! ...
//! === batch                            (optional: another batch, run after the one before)
//! ...
//! === expected
//! (for each batch: the batch after the passes, its kernels and their contracted bases)
//! ```
//!
//! `BLESS=1 cargo test -p vm-passes --test golden` writes what the passes make now in place of
//! each file's expected part (review the diff before committing it).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use vm_fusion::Step;
use vm_ir::asm::{self, Program};
use vm_ir::{BaseId, DType, Instruction, Opcode, Operand};
use vm_passes::{Costs, Options, Pipeline, Rewritten, Stage, bases};
use vm_runtime::HostMemory;

const EXPECTED: &str = "=== expected";
const NEXT_BATCH: &str = "=== batch";

/// Costs of an engine that calls out for the transcendental functions.
struct Transcendental;

impl Costs for Transcendental {
    fn calls_out(&self, opcode: Opcode, dtype: DType) -> bool {
        dtype.is_float()
            && matches!(opcode.name(), "exp" | "log" | "sin" | "cos" | "tan" | "tanh" | "power" | "arctan2")
    }
}

/// The name a synthetic base prints as: its kind and its place in its range (`partial1`).
fn synthetic_name(id: BaseId) -> String {
    let ranges = [
        ("snapshot", bases::SNAPSHOT),
        ("partial", bases::PARTIAL),
        ("fill", bases::FILL),
        ("partner", bases::PARTNER),
        ("spare", bases::SPARE),
        ("wide", bases::WIDE),
        ("version", bases::VERSION),
    ];
    // The range with the lowest first id at or above `id`.
    let (kind, top) = ranges.iter().rev().find(|&&(_, top)| id.0 <= top).copied().unwrap_or(("synthetic", u64::MAX));
    format!("{kind}{}", top - id.0)
}

/// `batch` as text, with the bases of `program` by their names and synthetic ones by kind, and
/// its kernels, `steps`.
fn print(program: &Program, batch: &[Instruction], steps: &[Step]) -> String {
    let mut named: Vec<(String, vm_ir::Base)> = program.bases.clone();
    for v in batch.iter().flat_map(Instruction::views) {
        if !named.iter().any(|(_, b)| b.id == v.base.id) {
            named.push((synthetic_name(v.base.id), v.base));
        }
    }
    let names: HashMap<BaseId, String> = named.iter().map(|(n, b)| (b.id, n.clone())).collect();
    let shown = Program { bases: named, extensions: program.extensions.clone(), instructions: batch.to_vec() };
    let text = asm::print(&shown);
    // The declarations of the program's own bases are the file's; print the synthetic ones only.
    let own = program.bases.len();
    let mut out: String = text.lines().skip(own).map(|l| format!("{l}\n")).collect();
    let name = |id: &BaseId| names.get(id).cloned().unwrap_or_else(|| format!("b{}", id.0));
    for step in steps {
        match step {
            Step::Kernel(k) => {
                let instrs: Vec<String> = k.instrs.iter().map(usize::to_string).collect();
                let _ = write!(out, "## kernel {} shape {:?}", instrs.join(" "), k.shape.as_slice());
                if !k.temps.is_empty() {
                    let temps: Vec<String> = k.temps.iter().map(name).collect();
                    let _ = write!(out, " contracts {}", temps.join(" "));
                }
                out.push('\n');
            }
            Step::Single(i) => {
                let _ = writeln!(out, "## single {i}");
            }
            Step::System(_) => {}
        }
    }
    out
}

/// The kernels of `batch` as the `cpu` engine forms them.
fn kernels(batch: &[Instruction]) -> Vec<Step> {
    vm_fusion::partition(batch, &vm_fusion::Options { max_instructions: 512, ordered_float_products: true })
}

/// The passes a case's `# passes:` line names (`standard`: every pass, in the standard order).
fn named_passes(path: &Path, text: &str) -> Vec<String> {
    let line = input_part(text)
        .lines()
        .find_map(|l| l.strip_prefix("# passes:"))
        .unwrap_or_else(|| panic!("{}: no `# passes:` line", path.display()));
    let names: Vec<String> = line.split(',').map(|n| n.trim().to_string()).collect();
    if names == ["standard"] { vm_passes::STANDARD.iter().map(|n| n.to_string()).collect() } else { names }
}

/// True when the case says its passes leave the batch as it is (a `# unchanged` line).
fn expects_unchanged(text: &str) -> bool {
    input_part(text).lines().any(|l| l.trim() == "# unchanged")
}

/// The case's batches: everything before its expected part.
fn input_part(text: &str) -> &str {
    text.split(EXPECTED).next().unwrap_or_default()
}

/// Runs the batches of the case in `text` through `passes` and returns what its expected part
/// should read.
fn run_case(path: &Path, text: &str, passes: &[String]) -> String {
    let names: Vec<&str> = passes.iter().map(String::as_str).collect();
    let options = Options { hoist_bytes: 1 << 30, ..Options::default() };
    let mut pipeline = Pipeline::of(&names, &options).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sections = input_part(text).split(NEXT_BATCH);
    let first = sections.next().unwrap_or_default();
    let declarations: String =
        first.lines().filter(|l| l.trim_start().starts_with(".base")).map(|l| format!("{l}\n")).collect();
    let mut mem = HostMemory::new();
    let mut out = String::new();
    for (n, section) in std::iter::once(first).chain(sections).enumerate() {
        let body: String =
            section.lines().filter(|l| !l.trim_start().starts_with(".base")).map(|l| format!("{l}\n")).collect();
        let program = asm::parse(&format!("{declarations}{body}"))
            .unwrap_or_else(|e| panic!("{}: batch {n}: {e}", path.display()));
        let mut work = Rewritten::new(&program.instructions);
        pipeline.run(Stage::Batch, &mut work, &[], &mut mem, &Transcendental);
        let mut steps = kernels(work.batch());
        pipeline.run(Stage::Kernels, &mut work, &steps, &mut mem, &Transcendental);
        pipeline.record(work.batch(), &mut steps, &mut mem);
        if n > 0 {
            out.push_str(NEXT_BATCH);
            out.push('\n');
        }
        out.push_str(&print(&program, work.batch(), &steps));
        execute(work.batch(), &steps, &pipeline, &mut mem);
        pipeline.finish(true, &mut mem, &Transcendental);
    }
    out
}

/// The case at `path`: its text and its expected part.
fn read_case(path: &Path) -> (String, String) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected = text.split_once(EXPECTED).map(|(_, e)| e.trim_start_matches('\n')).unwrap_or_default().to_string();
    (text, expected)
}

/// What running `batch` leaves in memory, values aside: every base written gets a buffer (but
/// those `steps` contract), and FREE releases it (but a buffer a pass keeps).
fn execute(batch: &[Instruction], steps: &[Step], pipeline: &Pipeline, mem: &mut HostMemory) {
    let contracted: Vec<BaseId> = steps
        .iter()
        .filter_map(|s| if let Step::Kernel(k) = s { Some(k.temps.iter().copied()) } else { None })
        .flatten()
        .collect();
    for instr in batch {
        let first = instr.operands.first().and_then(Operand::as_view);
        match (instr.opcode, first) {
            (Opcode::Free, Some(v)) if !pipeline.keeps(v.base.id) => mem.free(v.base.id),
            (op, Some(v)) if !op.is_system() && !contracted.contains(&v.base.id) => {
                mem.ensure(&v.base).expect("a small buffer");
            }
            _ => {}
        }
    }
}

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "vmpass"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_golden_case_gives_its_expected_text() {
    let bless = std::env::var_os("BLESS").is_some_and(|v| v != "0");
    let files = cases();
    assert!(files.len() >= 20, "{} golden cases: the optimizer has at least 20", files.len());
    let mut failed = Vec::new();
    for path in files {
        let (text, expected) = read_case(&path);
        let got = run_case(&path, &text, &named_passes(&path, &text));
        if expected == got {
            continue;
        }
        if bless {
            // (Written beside and renamed over, so that the other test never reads half a case.)
            let fresh = path.with_extension("vmpass.blessed");
            std::fs::write(&fresh, format!("{}\n{EXPECTED}\n{got}", input_part(&text).trim_end()))
                .and_then(|()| std::fs::rename(&fresh, &path))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        } else {
            failed.push(format!("{}:\n--- expected\n{expected}--- got\n{got}", path.display()));
        }
    }
    assert!(failed.is_empty(), "golden cases differ (BLESS=1 rewrites them):\n{}", failed.join("\n"));
}

/// Each case shows what its passes do: without any one of them (a `standard` case: without all
/// of them) its expected text is not what the batches give, so a pass that stops working fails
/// a case; a case marked `# unchanged` gives what no pass at all gives.
#[test]
fn every_golden_case_depends_on_each_of_its_passes() {
    let mut failed = Vec::new();
    for path in cases() {
        let (text, expected) = read_case(&path);
        let passes = named_passes(&path, &text);
        if expects_unchanged(&text) {
            let bare = run_case(&path, &text, &[]);
            if bare != expected {
                failed.push(format!("{}: marked `# unchanged`, but without its passes:\n{bare}", path.display()));
            }
            continue;
        }
        if passes == vm_passes::STANDARD {
            // The standard pipeline's cases show the passes together: without all of them.
            if run_case(&path, &text, &[]) == expected {
                failed.push(format!("{}: gives its expected text without any pass", path.display()));
            }
            continue;
        }
        for (i, pass) in passes.iter().enumerate() {
            let mut without = passes.clone();
            without.remove(i);
            if run_case(&path, &text, &without) == expected {
                failed.push(format!("{}: gives its expected text without `{pass}`", path.display()));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
