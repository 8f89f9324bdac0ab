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
    let known: HashMap<BaseId, ()> = named.iter().map(|(_, b)| (b.id, ())).collect();
    for v in batch.iter().flat_map(Instruction::views) {
        if !known.contains_key(&v.base.id) && !named.iter().any(|(_, b)| b.id == v.base.id) {
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

/// Runs the case in `text` and returns what its expected part should read.
fn run_case(path: &Path, text: &str) -> String {
    let input = text.split(EXPECTED).next().unwrap_or_default();
    let passes_line = input
        .lines()
        .find_map(|l| l.strip_prefix("# passes:"))
        .unwrap_or_else(|| panic!("{}: no `# passes:` line", path.display()));
    let names: Vec<&str> = passes_line.split(',').map(str::trim).collect();
    let options = Options { hoist_bytes: 1 << 30, ..Options::default() };
    let mut pipeline =
        if names == ["standard"] { Pipeline::standard(&options) } else { Pipeline::of(&names, &options) }
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sections = input.split(NEXT_BATCH);
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
    assert!(!files.is_empty(), "no golden cases found");
    let mut failed = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let got = run_case(&path, &text);
        let expected = text.split_once(EXPECTED).map(|(_, e)| e.trim_start_matches('\n')).unwrap_or_default();
        if expected == got {
            continue;
        }
        if bless {
            let input = text.split(EXPECTED).next().unwrap_or_default().trim_end();
            std::fs::write(&path, format!("{input}\n{EXPECTED}\n{got}"))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        } else {
            failed.push(format!("{}:\n--- expected\n{expected}--- got\n{got}", path.display()));
        }
    }
    assert!(failed.is_empty(), "golden cases differ (BLESS=1 rewrites them):\n{}", failed.join("\n"));
}
