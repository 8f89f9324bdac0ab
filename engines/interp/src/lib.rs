//! # vm-interp: the reference engine
//!
//! `interp` executes a batch one instruction at a time, straight from the semantics in
//! [`vm_ir::opcode`]: the result is computed element by element into a row-major `Vec` with
//! the per-dtype tables of the `elem` module, reading the inputs where they lie (constants
//! broadcast), and then written into the output view, so every input is read in full before the
//! output is written. An element-wise result goes straight into its output instead when that
//! changes nothing: the output's rows are contiguous and no input reads its base, or the only
//! input that does is the output itself (`x += y`: element `k` is read just before it is
//! written). Reductions of contiguous inputs fold slices, in the same order. It is the test
//! oracle for every other engine, so it is written to be obviously correct first; it is also
//! the stacks' direct executor of small instructions, so its loops over runs are written to be
//! vectorised (for AVX2 too, chosen at run time).
//!
//! Memory: no input is ever copied (a broadcast view may visit far more elements than its base
//! holds), and every allocation whose size comes from the program (bases, results) is fallible:
//! a program asking for more than the machine has gets [`vm_ir::Error::OutOfMemory`] naming
//! the base and the size, and the engine stays usable.
//!
//! A flush stops within milliseconds of an interrupt request ([`vm_runtime::Interrupt`]):
//! inputs are read with polls of the request, and the batch fails with
//! [`vm_ir::Error::Interrupted`] after the instruction that saw it.
//!
//! Host memory is the only memory: bases are allocated lazily (zero-filled) by the first
//! instruction that touches them, `sync` and `discard` have nothing to do, `free` releases the
//! buffer. Of the extension methods it implements `matmul` (see [`MATMUL`]), `partition` and
//! `argpartition` ([`PARTITION`], [`ARGPARTITION`]) and the linear algebra of `cholesky`,
//! `solve`, `det` and `slogdet` ([`CHOLESKY`], [`SOLVE`], [`DET`], [`SLOGDET`]); any other
//! extension goes to the optional child given at construction, the fallback.

mod elem;
mod elementwise;
mod index;
mod iterate;
mod linalg;
mod matmul;
mod reduce;
mod sort;

use std::collections::HashMap;
use vm_ir::{Error, Instruction, Kind, OpClass, Opcode, Result, SystemOp};
use vm_runtime::component::Settings;
use vm_runtime::component::forward_extension;
use vm_runtime::{Component, ComponentInfo, HostMemory, Implementation, Statistics};

/// The name of the `matmul` extension method: `matmul out, a, b` with 2-d views `a` (M x K),
/// `b` (K x N) and `out` (M x N) of one numeric dtype; `out[m, n] = sum_k a[m, k] * b[k, n]`.
pub const MATMUL: &str = matmul::NAME;

/// The name of the `partition` extension method ([`vm_ir::extension::PARTITION`]).
pub const PARTITION: &str = vm_ir::extension::PARTITION;

/// The name of the `argpartition` extension method ([`vm_ir::extension::ARGPARTITION`]).
pub const ARGPARTITION: &str = vm_ir::extension::ARGPARTITION;

/// The name of the `cholesky` extension method ([`vm_ir::extension::CHOLESKY`]).
pub const CHOLESKY: &str = vm_ir::extension::CHOLESKY;

/// The name of the `solve` extension method ([`vm_ir::extension::SOLVE`]).
pub const SOLVE: &str = vm_ir::extension::SOLVE;

/// The name of the `det` extension method ([`vm_ir::extension::DET`]).
pub const DET: &str = vm_ir::extension::DET;

/// The name of the `slogdet` extension method ([`vm_ir::extension::SLOGDET`]).
pub const SLOGDET: &str = vm_ir::extension::SLOGDET;

/// How this engine runs an extension opcode it has been told about.
#[derive(Debug, Clone)]
enum Extension {
    /// The built-in `matmul`.
    Matmul,
    /// The built-in `partition` (`false`) or `argpartition` (`true`).
    Partition(bool),
    /// The built-in `cholesky`.
    Cholesky,
    /// The built-in `solve`.
    Solve,
    /// The built-in `det` (`false`) or `slogdet` (`true`).
    Det(bool),
    /// Some other method, by name: the child's business.
    Other(String),
}

/// The reference engine (see the crate documentation).
pub struct Interp {
    /// The name of the component's config table (`interp` unless the stack names it otherwise).
    table: String,
    /// Fallback for extension methods this engine does not implement.
    child: Option<Box<dyn Component>>,
    /// Extension opcodes announced with `register_extension`.
    extensions: HashMap<Opcode, Extension>,
    /// Batches run and instructions handed to the child.
    statistics: Statistics,
}

impl Interp {
    /// An engine with an optional fallback child for extension methods it does not implement.
    pub fn new(child: Option<Box<dyn Component>>) -> Interp {
        Interp { table: "interp".to_string(), child, extensions: HashMap::new(), statistics: Statistics::default() }
    }

    /// Executes one built-in (non-extension) instruction.
    fn builtin(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        let op = instr.opcode;
        // An output of no elements has nothing to compute (its start may lie past its base's
        // end, as an empty slice's may); its base exists afterwards, as every output's does.
        let computes =
            !matches!(op.class(), OpClass::System(_) | OpClass::Nothing | OpClass::Scatter | OpClass::ScatterAdd);
        if computes && let Some(out) = instr.operands.first().and_then(|o| o.as_view()).filter(|v| v.nelem() == 0) {
            return iterate::buffer(mem, &out.base).map(|_| ());
        }
        match op.class() {
            OpClass::Unary(u) => elementwise::unary(instr, u, mem),
            OpClass::Binary(b) => elementwise::binary(instr, b, mem),
            OpClass::Select => elementwise::select(instr, mem),
            OpClass::Reduce(r) => reduce::reduce(instr, r, mem),
            OpClass::Accumulate(a) => reduce::accumulate(instr, a, mem),
            OpClass::Range => index::range(instr, mem),
            OpClass::Random => index::random(instr, mem),
            OpClass::Gather => index::gather(instr, mem),
            OpClass::Scatter => index::scatter(instr, mem, None),
            OpClass::ScatterAdd => {
                index::scatter(instr, mem, Some(vm_ir::opcode::scatter_add_op(instr.operands[0].dtype())))
            }
            OpClass::Sort => sort::sort(instr, false, mem),
            OpClass::Argsort => sort::sort(instr, true, mem),
            OpClass::SearchLeft => sort::search(instr, false, mem),
            OpClass::SearchRight => sort::search(instr, true, mem),
            OpClass::System(system) => {
                let view = instr
                    .operands
                    .first()
                    .and_then(|o| o.as_view())
                    .ok_or_else(|| Error::invalid(Some(0), format!("{op} takes a view")))?;
                match system {
                    // Host memory is always current; a base never written reads as zeros, so
                    // make sure it exists for whoever reads it after the sync.
                    SystemOp::Sync => iterate::buffer(mem, &view.base).map(|_| ()),
                    SystemOp::Discard => Ok(()),
                    SystemOp::Free => {
                        mem.free(view.base.id);
                        Ok(())
                    }
                }
            }
            OpClass::Nothing => Ok(()),
            OpClass::Extension(_) => Err(Error::Internal("extension routed as a built-in".to_string())),
        }
    }

    /// Runs instruction `i` of a validated batch.
    fn run(&mut self, i: usize, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        mem.interrupt().check()?;
        let op = instr.opcode;
        let done = if op.kind() == Kind::Extension {
            self.extension(instr, mem).map_err(|e| e.at_instruction(i))
        } else {
            self.builtin(instr, mem).map_err(|e| match e {
                Error::Execution(m) => Error::Execution(format!("instruction {i} ({op}): {m}")),
                e => e.at_instruction(i),
            })
        };
        // An instruction that saw a request stopped reading its inputs early: what it computed
        // is not its result.
        mem.interrupt().check()?;
        done
    }

    /// Executes one extension instruction: `matmul` here, anything else in the child.
    fn extension(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        match self.extensions.get(&instr.opcode) {
            Some(Extension::Matmul) => matmul::matmul(instr, mem),
            Some(&Extension::Partition(positions)) => sort::partition(instr, positions, mem),
            Some(Extension::Cholesky) => linalg::cholesky(instr, mem),
            Some(Extension::Solve) => linalg::solve(instr, mem),
            Some(&Extension::Det(log)) => linalg::det(instr, log, mem),
            other => match &mut self.child {
                Some(child) => {
                    self.statistics.fallbacks += 1;
                    child.execute(std::slice::from_ref(instr), mem)
                }
                None => {
                    let name = match other {
                        Some(Extension::Other(name)) => format!("`{name}`"),
                        _ => "(never registered)".to_string(),
                    };
                    Err(Error::Unsupported(format!(
                        "interp does not implement extension method {name} ({}, opcode {}) and has no fallback",
                        instr.opcode,
                        instr.opcode.id()
                    )))
                }
            },
        }
    }
}

impl Default for Interp {
    fn default() -> Interp {
        Interp::new(None)
    }
}

impl Component for Interp {
    fn name(&self) -> &str {
        "interp"
    }

    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        self.statistics.batches += 1;
        vm_ir::instr::validate_batch(batch)?;
        for (i, instr) in batch.iter().enumerate() {
            self.run(i, instr, mem)?;
        }
        Ok(())
    }

    /// One instruction the runtime checked: no second validation (a few hundred instructions
    /// of the machine's, on the path of every small operation).
    fn execute_direct(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        self.statistics.batches += 1;
        self.run(0, instr, mem)
    }

    fn child(&self) -> Option<&(dyn Component + 'static)> {
        self.child.as_deref()
    }

    /// Itself: host memory is its only memory.
    fn direct(&mut self) -> Option<&mut (dyn Component + 'static)> {
        Some(self)
    }

    fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
        self.child.as_deref_mut()
    }

    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        let known = match name {
            MATMUL => Some(Extension::Matmul),
            PARTITION => Some(Extension::Partition(false)),
            ARGPARTITION => Some(Extension::Partition(true)),
            CHOLESKY => Some(Extension::Cholesky),
            SOLVE => Some(Extension::Solve),
            DET => Some(Extension::Det(false)),
            SLOGDET => Some(Extension::Det(true)),
            _ => None,
        };
        if let Some(known) = known {
            self.extensions.insert(opcode, known);
            return Ok(true);
        }
        self.extensions.insert(opcode, Extension::Other(name.to_string()));
        forward_extension(self, name, opcode)
    }

    fn statistics(&self) -> Statistics {
        self.statistics
    }

    fn info(&self) -> ComponentInfo {
        let mut notes = vec!["reference engine: one instruction at a time, host memory".to_string()];
        let mut methods: Vec<String> = self
            .extensions
            .iter()
            .filter_map(|(op, e)| {
                let name = match e {
                    Extension::Matmul => MATMUL,
                    Extension::Partition(false) => PARTITION,
                    Extension::Partition(true) => ARGPARTITION,
                    Extension::Cholesky => CHOLESKY,
                    Extension::Solve => SOLVE,
                    Extension::Det(false) => DET,
                    Extension::Det(true) => SLOGDET,
                    Extension::Other(_) => return None,
                };
                Some(format!("{name} as opcode {}", op.id()))
            })
            .collect();
        methods.sort();
        notes.extend(methods.into_iter().map(|m| format!("extension {m}")));
        ComponentInfo { name: self.table.clone(), implementation: "interp".to_string(), notes, ..Default::default() }
    }
}

/// Builds an `interp` from its (empty) settings and an optional fallback child.
fn construct(settings: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
    let mut interp = Interp::new(child);
    if !settings.component.is_empty() {
        interp.table = settings.component.clone();
    }
    Ok(Box::new(interp))
}

/// The `interp` implementation, for the stack builder: no settings, no child needed; a child,
/// when given, is the fallback for extension methods other than its own.
pub const IMPLEMENTATION: Implementation = Implementation {
    name: "interp",
    summary: "reference engine: executes one instruction at a time, obviously correct and slow; the test oracle",
    needs_child: false,
    settings: &[],
    construct,
};
