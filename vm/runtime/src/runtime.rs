//! The runtime: the table of live bases, the pending batch and its flush policy, the ownership
//! protocol between host and engines, and the extension-method registry. One runtime drives one
//! stack; frontends (the C ABI, the Rust frontend `vm-frontend`) talk to it.
//!
//! Ownership protocol (cphVB's): the host may read a base's data only after a SYNC of it has
//! executed and before anything writes it again ([`Runtime::host_data`] enforces this). A host
//! write first flushes pending work, writes the host copy, and queues a DISCARD so that engines
//! drop copies of their own. FREE ends a base: any later use of its handle is an error.

use crate::component::{Component, ComponentInfo};
use crate::config::Env;
use crate::memory::HostMemory;
use rustc_hash::FxHashMap as HashMap;
use vm_ir::dtype::{DType, Element};
use vm_ir::extension::ExtensionRule;
use vm_ir::instr::{Instruction, Operand};
use vm_ir::opcode::{Kind, Opcode};
use vm_ir::view::{Base, BaseId, View};
use vm_ir::{Error, Result, Scalar};

/// How a runtime batches and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeOptions {
    /// Flush when this many instructions are pending.
    pub batch_limit: usize,
    /// Print every batch to stderr before executing it (`VM_TRACE=1`).
    pub trace: bool,
    /// The most elements an instruction may touch to run at once on the stack's direct
    /// executor instead of being queued ([`Runtime::submit`]); 0: every instruction is queued
    /// (`VM_DIRECT`).
    pub direct_elements: u64,
}

/// [`RuntimeOptions::direct_elements`] by default: up to here an instruction costs less run at
/// once, a row at a time, than queued, fused and compiled with others (recording, kernel
/// formation and a kernel's launch cost microseconds whatever the size; 4096 float64 elements
/// are 32 KiB, whose temporaries stay in the caches). A reduction's input and a matrix
/// product's multiply-adds, which the direct executor sums one after another, are bounded by
/// the same number.
pub const DIRECT_ELEMENTS: u64 = 4096;

/// Bases up to this size that a flushed batch writes are synced with it on stacks with a direct
/// executor ([`Runtime::flush`]).
pub const SYNC_WITH_BATCH_BYTES: u64 = 64 << 10;

/// The most instructions a pending batch may hold for a small instruction that waits for it
/// (it reads what the batch computes) to ask for the batch to run ([`Runtime::flush_wanted`]),
/// with SYNCs of its bases: a loop of small operations after a few large ones (`out = c * (y1 +
/// y2)`, then a loop over `out`'s rows) then runs at once after its first step, instead of
/// queued behind them, while a long batch (a loop of large operations) keeps what it would
/// fuse.
pub const FLUSH_FOR_DIRECT: usize = 32;

/// How many times [`RuntimeOptions::direct_elements`] an instruction may touch to run at once
/// while the program's batches do not repeat ([`APERIODIC_SPAN`]): a loop whose steps change
/// shape (`y[:k] += alpha * y[k-1::-1]` for a growing `k`) gets none of the caches that make a
/// queued instruction cheap (partitions, compiled kernels, replays are all keyed on the batch's
/// structure), so each of its instructions costs about twice as much queued as run at once on
/// the direct executor, up to arrays of this many times the usual limit.
pub const APERIODIC_DIRECT_FACTOR: u64 = 4;

/// For how many batches' worth of instructions ([`RuntimeOptions::batch_limit`]) a full batch
/// that did not repeat widens direct execution ([`APERIODIC_DIRECT_FACTOR`]); then instructions
/// queue as usual again, so that a later loop that does repeat (a stencil whose steps fuse and
/// replay) is queued and found repeating.
pub const APERIODIC_SPAN: u64 = 4;

/// How many times [`RuntimeOptions::direct_elements`] a fill with a constant may write to run at
/// once (32,768 elements by default: 256 KiB of float64, written in tens of microseconds).
pub const DIRECT_FILL_FACTOR: u64 = 8;

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions { batch_limit: 4096, trace: false, direct_elements: DIRECT_ELEMENTS }
    }
}

impl RuntimeOptions {
    /// Defaults, with `trace` from `VM_TRACE` in `env` (a comma-separated list naming anything
    /// but `0` and `passes`, which asks for the optimizer's trace only) and `direct_elements`
    /// from `VM_DIRECT` (a number of elements; `0` turns direct execution off).
    pub fn from_env(env: &Env) -> Result<RuntimeOptions> {
        let trace = env
            .var("VM_TRACE")
            .is_some_and(|v| v.split(',').map(str::trim).any(|w| !w.is_empty() && w != "0" && w != "passes"));
        let direct_elements = match env.var("VM_DIRECT") {
            None => DIRECT_ELEMENTS,
            Some(v) => v.trim().parse().map_err(|_| {
                Error::InvalidArgument(format!(
                    "VM_DIRECT={v}: expected the most elements an instruction run at once may touch (0 = off)"
                ))
            })?,
        };
        Ok(RuntimeOptions { trace, direct_elements, ..RuntimeOptions::default() })
    }
}

#[derive(Debug, Clone, Copy)]
struct BaseState {
    base: Base,
    /// The host copy is current: a SYNC executed and nothing has written the base since.
    host_current: bool,
    /// Host memory holds the base's current value (a sync would run nothing): `host_current`,
    /// or written by a direct run since, which the host may read after a [`Runtime::sync`]
    /// (the ownership protocol asks for one whatever ran the write). A new base on a stack with
    /// a direct executor is in host memory (nothing has written it: its value is the zeros its
    /// buffer gets, allocated when first touched), so that partial writes of a fresh array
    /// (`v = np.empty(n); v[0] = 1.0`, `y = np.empty_like(x)` then a loop storing its columns)
    /// run at once, whatever its size.
    in_host: bool,
    /// A SYNC is pending in the batch after the last pending write.
    sync_pending: bool,
    /// One more than the number of the last instruction queued that names the base (0: none
    /// yet); DISCARDs do not count. The base is used by the pending batch while this is above
    /// `Runtime::left_queue`.
    used_until: u64,
    /// One more than the number of the last DISCARD of the base queued (0: none).
    discarded_until: u64,
    /// The stack has been (or will be, by the pending batch) told of the base: a write the
    /// runtime makes itself must queue a DISCARD so that components drop what they hold of it.
    /// A base the stack never heard of is freed by the runtime alone.
    known: bool,
    /// The runtime wrote the base in host memory before the stack heard of it: the stack is
    /// told (a DISCARD: host memory holds its value) when an instruction that names it is
    /// queued ([`Runtime::pay_owed_discards`]). One freed first costs the stack nothing.
    discard_owed: bool,
}

impl BaseState {
    /// A base no queued instruction (other than DISCARDs) names.
    fn unused_by(&self, left_queue: u64) -> bool {
        self.used_until <= left_queue
    }

    /// The state of a base nothing has written yet (in host memory on a stack with a direct
    /// executor: see `in_host`).
    fn fresh(base: Base, direct: bool) -> BaseState {
        BaseState {
            base,
            host_current: false,
            in_host: direct,
            sync_pending: false,
            used_until: 0,
            discarded_until: 0,
            known: false,
            discard_owed: false,
        }
    }
}

/// The id of the one-element base [`Runtime::compute_element`] computes into (never a live
/// base's: ids count up from 1).
const SCRATCH_BASE: BaseId = BaseId(u64::MAX);

/// Counters a runtime keeps about itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Instructions accepted.
    pub instructions: u64,
    /// Batches handed to the stack.
    pub flushes: u64,
    /// Instructions run at once on the direct executor ([`Runtime::submit`]).
    pub direct: u64,
}

/// Drives one stack: see the module documentation.
pub struct Runtime {
    stack: Box<dyn Component>,
    memory: HostMemory,
    bases: HashMap<BaseId, BaseState>,
    /// Live bases whose contents are unspecified, with the error that made them so: a batch
    /// that failed wrote them, or read such a base to compute them. Reading one is that error,
    /// until a host write replaces all of it.
    failed: HashMap<BaseId, Error>,
    next_base: u64,
    pending: Vec<Instruction>,
    /// See [`Runtime::flush_wanted`].
    flush_wanted: bool,
    /// Bases a SYNC of the pending batch makes current once it has run.
    syncs: Vec<BaseId>,
    /// Of `syncs`, the bases synced along with the ones asked for (`sync_small_outputs`).
    synced_along: Vec<BaseId>,
    /// Instructions that left the queue so far (run or dropped): `pending[i]` is the
    /// instruction numbered `left_queue + i` since the runtime began.
    left_queue: u64,
    /// Registered extension methods by opcode number: the name, and the operand rule when the
    /// VM knows the method ([`vm_ir::extension::rule`]).
    extensions: Vec<(String, Option<&'static ExtensionRule>)>,
    /// How many live bases have `discard_owed` set (none: queueing looks for no DISCARD to pay).
    owed_discards: usize,
    options: RuntimeOptions,
    /// The stack has a direct executor ([`Component::direct`]) and direct execution is on.
    direct: bool,
    /// Until the runtime has taken this many instructions ([`RuntimeStats::instructions`]),
    /// direct execution takes instructions [`APERIODIC_DIRECT_FACTOR`] times larger: the last
    /// full batch did not repeat ([`Runtime::flush_full`]).
    wide_direct_until: u64,
    stats: RuntimeStats,
    /// The trace file to write at shutdown (`VM_PROFILE=trace.json`, [`crate::trace`]).
    trace_file: Option<std::path::PathBuf>,
}

impl Runtime {
    /// A runtime over a built stack.
    pub fn new(mut stack: Box<dyn Component>, options: RuntimeOptions) -> Runtime {
        let direct = options.direct_elements > 0 && stack.direct().is_some();
        let trace_file = crate::trace::file_from_env();
        if trace_file.is_some() && !crate::trace::enabled() {
            crate::trace::start();
        }
        Runtime {
            trace_file,
            direct,
            stack,
            memory: HostMemory::new(),
            bases: HashMap::default(),
            failed: HashMap::default(),
            next_base: 1,
            pending: Vec::new(),
            flush_wanted: false,
            syncs: Vec::new(),
            synced_along: Vec::new(),
            left_queue: 0,
            extensions: Vec::new(),
            owed_discards: 0,
            options,
            wide_direct_until: 0,
            stats: RuntimeStats::default(),
        }
    }

    /// Creates a base of `nelem` elements of `dtype`. Its memory is allocated lazily, by
    /// whichever component first writes it.
    pub fn new_base(&mut self, dtype: DType, nelem: u64) -> Result<Base> {
        if nelem.checked_mul(dtype.size() as u64).is_none_or(|n| n > isize::MAX as u64) {
            return Err(Error::InvalidArgument(format!("a base of {nelem} {dtype} elements is too large")));
        }
        let base = Base { id: BaseId(self.next_base), dtype, nelem };
        self.next_base += 1;
        self.bases.insert(base.id, BaseState::fresh(base, self.direct));
        Ok(base)
    }

    /// The live base with handle `id`.
    pub fn base(&self, id: BaseId) -> Result<Base> {
        self.bases.get(&id).map(|s| s.base).ok_or_else(|| Error::UnknownBase(id.0))
    }

    /// A handle on the request to stop this runtime's flush in progress: [`Interrupt::request`]
    /// from another thread (or a signal handler) makes the running flush end with
    /// [`Error::Interrupted`] within milliseconds. A request made while no flush runs is
    /// withdrawn when the next one starts.
    pub fn interrupt_handle(&self) -> crate::Interrupt {
        self.memory.interrupt().clone()
    }

    /// Number of live bases.
    pub fn live_bases(&self) -> usize {
        self.bases.len()
    }

    /// Number of instructions queued and not yet run (the pending batch).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Validates `instructions` as a whole and appends them to the pending batch (a lone small
    /// one may run at once instead: see [`Runtime::submit_in_place`]); flushes when one of them
    /// is a SYNC or the batch is full. On error nothing is appended and the error
    /// names the instruction's position in `instructions`.
    pub fn submit(&mut self, instructions: Vec<Instruction>) -> Result<()> {
        let mut instructions = instructions.into_iter();
        self.submit_with(instructions.len(), |_, _, slot| {
            *slot = instructions.next().expect("submit_with asks for exactly len() instructions");
            Ok(())
        })
    }

    /// [`Runtime::submit`] of `n` instructions (one may run at once, as for
    /// [`Runtime::submit_in_place`]) that `make(i, base_of, slot)` writes one at a time
    /// into their place in the pending batch (`slot` holds a `none` instruction), looking bases
    /// up with `base_of` (the live ones): the C ABI's path, which converts each instruction
    /// where it will stay instead of building a batch to move. On error (from `make` or from
    /// validation) nothing is appended.
    pub fn submit_with(
        &mut self,
        n: usize,
        mut make: impl FnMut(usize, &dyn Fn(BaseId) -> Option<Base>, &mut Instruction) -> Result<()>,
    ) -> Result<()> {
        let start = self.pending.len();
        self.pending
            .try_reserve(n)
            .map_err(|_| Error::InvalidArgument(format!("{n} instructions cannot be queued: out of memory")))?;
        // A base FREEd by the batch leaves the table at once, so that later instructions of the
        // batch cannot use it; it comes back if the batch is refused.
        let mut freed: Vec<BaseState> = Vec::new();
        for i in 0..n {
            self.pending.push(Instruction::empty(Opcode::None));
            let slot = self.pending.last_mut().expect("just pushed");
            let made = make(i, &|id| self.bases.get(&id).map(|s| s.base), slot);
            let instr = &self.pending[start + i];
            if let Err(e) = made.and_then(|()| self.check(instr)) {
                self.pending.truncate(start);
                self.bases.extend(freed.into_iter().map(|s| (s.base.id, s)));
                return Err(e.at_instruction(i));
            }
            if instr.opcode == Opcode::Free {
                freed.extend(instr.views().filter_map(|v| self.bases.remove(&v.base.id)));
            }
        }
        if n == 1 && self.direct && self.runs_direct(&self.pending[start], false) {
            self.stats.instructions += 1;
            return self.run_direct_last();
        }
        let start = if self.owed_discards > 0 {
            // (A base the batch frees has left the table already.)
            let freed_owed: Vec<Base> = freed.iter().filter(|s| s.discard_owed).map(|s| s.base).collect();
            self.owed_discards -= freed_owed.len();
            self.pay_owed_discards(start, freed_owed)
        } else {
            start
        };
        let mut flush = false;
        for i in start..self.pending.len() {
            let number = self.left_queue + i as u64;
            flush |= track(&mut self.bases, &mut self.memory, &mut self.syncs, &self.pending[i], number);
        }
        self.stats.instructions += n as u64;
        if n == 1 && !flush {
            self.want_flush_for_last();
        }
        self.queued(flush)
    }

    /// [`Runtime::submit`] of one instruction (no batch to allocate).
    pub fn submit_one(&mut self, instr: Instruction) -> Result<()> {
        self.submit_in_place(|slot| {
            *slot = instr;
            Ok(())
        })
    }

    /// [`Runtime::submit`] of one instruction that `fill` writes in place at the end of the
    /// pending batch (`slot` holds a `none` instruction without operands): the frontends' path,
    /// which builds an instruction where it will stay instead of moving it there (an instruction
    /// is a few hundred bytes). On error (from `fill` or from validation) nothing is appended.
    ///
    /// A small instruction whose inputs are current in host memory, and whose output the
    /// pending batch does not use, runs at once on the stack's direct executor
    /// ([`Component::direct`]) instead of being queued: its output is then current in host
    /// memory. Up to [`RuntimeOptions::direct_elements`] elements a lone instruction costs less
    /// that way than queued, fused and compiled; a loop of small operations that reads a value
    /// each step (`if err < tol`, `x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]`) never waits
    /// for a flush. An error of a direct run is this call's, and leaves the output's contents
    /// unspecified (reading it is that error, as for a failed batch).
    pub fn submit_in_place(&mut self, fill: impl FnOnce(&mut Instruction) -> Result<()>) -> Result<()> {
        let i = self.pending.len();
        self.pending.push(Instruction::empty(Opcode::None));
        if let Err(e) = fill(&mut self.pending[i]).and_then(|()| self.check(&self.pending[i])) {
            self.pending.truncate(i);
            return Err(e.at_instruction(0));
        }
        self.stats.instructions += 1;
        if self.direct && self.runs_direct(&self.pending[i], false) {
            return self.run_direct_last();
        }
        let i = if self.owed_discards > 0 { self.pay_owed_discards(i, Vec::new()) } else { i };
        let number = self.left_queue + i as u64;
        let flush = track(&mut self.bases, &mut self.memory, &mut self.syncs, &self.pending[i], number);
        if !flush {
            self.want_flush_for_last();
        }
        self.queued(flush)
    }

    /// Asks for a flush ([`Runtime::flush_wanted`]) when the instruction just queued last is
    /// small and waits for a short batch ([`FLUSH_FOR_DIRECT`]) to compute a large array it
    /// reads part of (a row of a matrix the batch computes: more of its rows are likely to
    /// follow), queueing SYNCs of its bases. One reading a small result (a sum) stays queued:
    /// what follows it may well be large work the batch can still join.
    fn want_flush_for_last(&mut self) {
        let i = self.pending.len() - 1;
        if !self.direct || i > FLUSH_FOR_DIRECT {
            return;
        }
        let instr = &self.pending[i];
        let reads_part_of_large = instr.operands[1..].iter().filter_map(Operand::as_view).any(|v| {
            v.base.nelem > self.direct_elements() && self.bases.get(&v.base.id).is_some_and(|state| !state.in_host)
        });
        if reads_part_of_large && self.runs_direct(instr, true) {
            self.sync_bases_of_last();
            self.flush_wanted = true;
        }
    }

    /// True when the pending batch is short and ends with a small instruction that waited for
    /// it, followed by SYNCs of that instruction's bases ([`FLUSH_FOR_DIRECT`]): running it now
    /// ([`Runtime::flush`]) lets the small instructions that follow run at once. The runtime
    /// leaves the flush to the frontend (which may release a lock first, as Python's GIL).
    pub fn flush_wanted(&self) -> bool {
        self.flush_wanted
    }

    /// [`Runtime::flush`] when [`Runtime::flush_wanted`]: what a frontend without a lock to
    /// release calls after queueing.
    pub fn flush_if_wanted(&mut self) -> Result<()> {
        if self.flush_wanted { self.flush() } else { Ok(()) }
    }

    /// Queues a SYNC of each base of the last pending instruction, without flushing: its
    /// inputs, which the batch computes, and its output are in host memory after the batch.
    fn sync_bases_of_last(&mut self) {
        let last = self.pending.last().expect("an instruction is pending");
        let mut bases: Vec<Base> = Vec::new();
        for v in last.views() {
            if !bases.contains(&v.base) {
                bases.push(v.base);
            }
        }
        for base in bases {
            let number = self.left_queue + self.pending.len() as u64;
            self.pending.push(Instruction::new(Opcode::Sync, [Operand::View(View::of_base(base))]));
            let sync = self.pending.last().expect("just pushed");
            track(&mut self.bases, &mut self.memory, &mut self.syncs, sync, number);
        }
    }

    /// True when checked instruction `instr` may run at once ([`Runtime::submit_in_place`]): an
    /// element-wise, reduction, scan, range, random, gather or scatter instruction touching at
    /// most [`RuntimeOptions::direct_elements`] elements per operand, whose inputs are current
    /// in host memory (nothing queued writes them), and whose output base nothing queued uses
    /// and is current too, unless the instruction writes all of it. With `once_synced`, what
    /// the pending batch computes counts as current (it would be after running it).
    fn runs_direct(&self, instr: &Instruction, once_synced: bool) -> bool {
        let kind = instr.opcode.kind();
        if matches!(kind, Kind::System | Kind::Nothing) || instr.output().is_none() {
            return false;
        }
        if kind == Kind::Extension {
            // Of the extension methods, those the interpreter implements: the matrix product
            // when small in multiply-adds too (`m * n * k`), the partial sorts.
            use vm_ir::extension::{ARGPARTITION, MATMUL, PARTITION};
            let small = match self.extension_name(instr.opcode) {
                Some(MATMUL) => vm_ir::extension::matmul_operands(instr).is_ok_and(|(out, a, _)| {
                    (out.nelem() as u64).saturating_mul(a.shape[1] as u64) <= self.direct_elements()
                }),
                Some(PARTITION | ARGPARTITION) => true,
                _ => false,
            };
            if !small {
                return false;
            }
        }
        // A gather reads, and a scatter writes, only the elements its index points at: its
        // source or destination may be large.
        let indexed = match kind {
            Kind::Gather => Some(1),
            Kind::Scatter => Some(0),
            _ => None,
        };
        // A fill with a constant (`zeros`, `full`, `x[:] = 0`) writes each element once and
        // reads nothing: up to [`DIRECT_FILL_FACTOR`] times larger. Queued, it would leave the
        // array out of host memory, and every small operation on it after would wait for a
        // flush (`Q = zeros_like(A)` before a loop over Q's columns).
        let fill = instr.opcode == Opcode::Identity && matches!(instr.operands.get(1), Some(Operand::Const(_)));
        instr.operands.iter().enumerate().all(|(k, operand)| {
            let Operand::View(v) = operand else { return true };
            let Some(state) = self.bases.get(&v.base.id) else { return false };
            let limit = if fill { self.direct_fill_elements() } else { self.direct_elements() };
            if v.nelem() as u64 > limit && indexed != Some(k) {
                return false;
            }
            let failed = !self.failed.is_empty() && self.failed.contains_key(&v.base.id);
            let in_host = state.in_host || once_synced;
            if k > 0 {
                return in_host && !failed;
            }
            let whole = v.is_whole_base() && kind != Kind::Scatter;
            (state.unused_by(self.left_queue) || once_synced) && (whole || (in_host && !failed))
        })
    }

    /// The most elements an instruction may touch to run at once now: the options' limit,
    /// widened while the batches do not repeat ([`APERIODIC_DIRECT_FACTOR`]).
    fn direct_elements(&self) -> u64 {
        let limit = self.options.direct_elements;
        if self.stats.instructions < self.wide_direct_until {
            limit.saturating_mul(APERIODIC_DIRECT_FACTOR)
        } else {
            limit
        }
    }

    /// The most elements a fill with a constant may write to run at once ([`DIRECT_FILL_FACTOR`]).
    fn direct_fill_elements(&self) -> u64 {
        self.direct_elements().saturating_mul(DIRECT_FILL_FACTOR)
    }

    /// Runs the last pending instruction on the direct executor ([`Runtime::submit_in_place`])
    /// where it lies, then drops it from the batch.
    fn run_direct_last(&mut self) -> Result<()> {
        let i = self.pending.len() - 1;
        let instr = &self.pending[i];
        if self.options.trace {
            eprintln!("--- VM_TRACE direct ---\n{}", vm_ir::asm::print_batch(std::slice::from_ref(instr)));
        }
        self.memory.interrupt().clear();
        let out = instr.output().expect("runs_direct checked it").base;
        let executor = self.stack.direct().expect("the runtime runs direct only with an executor");
        let begun = crate::trace::begin();
        let result = executor.execute_direct(instr, &mut self.memory);
        crate::trace::end(begun, "direct", || instr.opcode.name(), || vec![("elements", out.nelem)]);
        if matches!(result, Err(Error::Unsupported(_))) && instr.opcode.kind() == Kind::Extension {
            // An extension method the executor lacks (it refuses before writing): the stack's.
            let i = if self.owed_discards > 0 { self.pay_owed_discards(i, Vec::new()) } else { i };
            let number = self.left_queue + i as u64;
            let flush = track(&mut self.bases, &mut self.memory, &mut self.syncs, &self.pending[i], number);
            return self.queued(flush);
        }
        self.pending.truncate(i);
        self.stats.direct += 1;
        let state = self.bases.get_mut(&out.id).expect("runs_direct checked it");
        if let Err(e) = result {
            (state.host_current, state.in_host) = (false, false);
            self.failed.insert(out.id, e.clone());
            return Err(e);
        }
        (state.host_current, state.in_host) = (false, true);
        let known = state.known;
        self.forget_failure(out.id); // (written whole)
        if known {
            self.queue_discard(out.id);
            return self.queued(false);
        }
        Ok(())
    }

    /// Queues a DISCARD of base `id`, which the runtime wrote in host memory, unless one queued
    /// already follows every queued use of it (a loop writing element after element). For a
    /// base the stack never heard of, the DISCARD is owed until an instruction queued names the
    /// base: a base only host writes and direct runs touch (a mask's positions, a small
    /// literal) costs the stack nothing, not even its FREE.
    fn queue_discard(&mut self, id: BaseId) {
        let number = self.left_queue + self.pending.len() as u64;
        let state = self.bases.get_mut(&id).expect("a live base");
        if !state.known {
            if !state.discard_owed {
                state.discard_owed = true;
                self.owed_discards += 1;
            }
            return;
        }
        if state.discarded_until > self.left_queue && state.discarded_until > state.used_until {
            return;
        }
        state.discarded_until = number + 1;
        self.pending.push(Instruction::new(Opcode::Discard, [Operand::View(View::of_base(state.base))]));
    }

    /// Queues the DISCARDs owed ([`BaseState::discard_owed`]) of the bases that the
    /// instructions `pending[at..]`, not yet tracked, name, and of `owed` (bases they free);
    /// returns where those instructions now start. The DISCARDs go first in the pending batch:
    /// nothing queued before names those bases, so it is where the host's writes stand, and a
    /// run of element-wise instructions reading host data stays one run for kernel formation.
    fn pay_owed_discards(&mut self, at: usize, mut owed: Vec<Base>) -> usize {
        for instr in &self.pending[at..] {
            for v in instr.views() {
                if let Some(state) = self.bases.get_mut(&v.base.id)
                    && state.discard_owed
                {
                    state.discard_owed = false;
                    self.owed_discards -= 1;
                    owed.push(v.base);
                }
            }
        }
        let discards = owed.iter().map(|&b| Instruction::new(Opcode::Discard, [Operand::View(View::of_base(b))]));
        self.pending.splice(0..0, discards);
        for k in 0..owed.len() {
            let number = self.left_queue + k as u64;
            track(&mut self.bases, &mut self.memory, &mut self.syncs, &self.pending[k], number);
        }
        at + owed.len()
    }

    /// Flushes after instructions joined the pending batch when one was a SYNC (`sync`) or the
    /// batch is full.
    fn queued(&mut self, sync: bool) -> Result<()> {
        if sync {
            self.flush()
        } else if self.pending.len() >= self.options.batch_limit {
            self.flush_full()
        } else {
            Ok(())
        }
    }

    /// Drops the pending batch without running it, for a frontend whose process is ending:
    /// nothing can observe what it would compute any more (and a program that recorded more
    /// than memory holds and never looked must not fail on its way out). The bases it would
    /// have written are stale, not freed.
    pub fn discard_pending(&mut self) {
        self.left_queue += self.pending.len() as u64;
        self.pending.clear();
        self.syncs.clear();
        self.synced_along.clear();
    }

    /// Flushes a batch that is full (rather than observed): when it ends in a repeating
    /// pattern (a loop never observed), only whole periods of it run and the rest stays
    /// pending, so that the loop's batches all have the same structure (see [`crate::periods`]).
    /// A frontend that flushes on its own when enough is queued calls this instead of
    /// [`Runtime::flush`].
    ///
    /// A full batch that does not repeat widens direct execution for a while
    /// ([`APERIODIC_DIRECT_FACTOR`], [`APERIODIC_SPAN`]).
    pub fn flush_full(&mut self) -> Result<()> {
        let keep = match crate::periods::leftover(&self.pending) {
            None => {
                let span = APERIODIC_SPAN.saturating_mul(self.options.batch_limit as u64);
                self.wide_direct_until = self.stats.instructions.saturating_add(span);
                if self.direct {
                    // What the loop's next steps read is then in host memory for them to run at
                    // once.
                    self.sync_small_outputs();
                }
                0
            }
            Some(keep) => keep,
        };
        if keep == 0 {
            return self.flush();
        }
        // A full batch holds no SYNC (a SYNC flushes at once), so what stays pending changes
        // nothing that flushing updates.
        let rest = self.pending.split_off(self.pending.len() - keep);
        let result = self.flush();
        self.pending.extend(rest);
        result
    }

    fn check(&self, instr: &Instruction) -> Result<()> {
        for (k, operand) in instr.operands.iter().enumerate() {
            let Operand::View(v) = operand else { continue };
            let Some(state) = self.bases.get(&v.base.id) else {
                return Err(Error::invalid(
                    Some(k),
                    format!("base {} does not exist (never created, or freed)", v.base.id.0),
                ));
            };
            if state.base != v.base {
                return Err(Error::invalid(
                    Some(k),
                    format!(
                        "base {} is {} x {}, but the view says {} x {}",
                        v.base.id.0, state.base.nelem, state.base.dtype, v.base.nelem, v.base.dtype
                    ),
                ));
            }
        }
        let rule = match instr.opcode {
            Opcode::Extension(n) => match self.extensions.get(n as usize) {
                Some((_, rule)) => *rule,
                None => return Err(Error::UnknownOpcode(instr.opcode.id())),
            },
            _ => None,
        };
        instr.validate()?;
        // Known extension methods are checked here, like opcodes, so that a mistake is reported
        // by the call that made it rather than by the flush that runs it.
        match rule {
            Some(rule) => (rule.validate)(instr),
            None => Ok(()),
        }
    }

    /// Executes the pending batch. On error the batch is dropped (bases it wrote are in an
    /// unspecified state) and the runtime stays usable.
    pub fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.direct && !self.syncs.is_empty() {
            self.sync_small_outputs();
        }
        self.flush_wanted = false;
        let mut batch = std::mem::take(&mut self.pending);
        self.left_queue += batch.len() as u64;
        if self.options.trace {
            eprintln!("--- VM_TRACE batch of {} ---\n{}", batch.len(), vm_ir::asm::print_batch(&batch));
        }
        self.stats.flushes += 1;
        // A request made before this flush was meant for an earlier one.
        self.memory.interrupt().clear();
        let begun = crate::trace::begin();
        let result = self.stack.execute(&batch, &mut self.memory);
        self.memory.end_batch();
        let n = batch.len() as u64;
        crate::trace::end(begun, "batch", || format!("batch of {n} instructions"), || vec![("instructions", n)]);
        self.mark_failed(&batch, result.as_ref().err());
        // The next batch reuses the allocation (batches of small arrays are flushed often).
        batch.clear();
        self.pending = batch;
        // A SYNC is only as good as the batch that carried it.
        for id in self.syncs.drain(..) {
            if let Some(state) = self.bases.get_mut(&id)
                && state.sync_pending
            {
                state.sync_pending = false;
                state.host_current = result.is_ok();
                state.in_host = result.is_ok();
            }
        }
        // Synced along with the one asked for: in host memory, but the ownership protocol
        // still wants their own sync (which then runs nothing) before their data are lent.
        for id in self.synced_along.drain(..) {
            if let Some(state) = self.bases.get_mut(&id) {
                state.host_current = false;
            }
        }
        result
    }

    /// Adds to the pending batch, which a SYNC is about to flush, a SYNC of every base of at
    /// most [`SYNC_WITH_BATCH_BYTES`] it writes and leaves alive, so that they are in host
    /// memory afterwards: small operations on them then run at once instead of waiting for the
    /// next flush. A loop that reads a value each step (`alpha = -(r[k] + r[:k] @ y[:k]) /
    /// beta; y[:k] += alpha * y[:k][::-1]`) would otherwise flush once per step for every array
    /// a large operation wrote. Only on stacks with a direct executor (their engines compute
    /// in host memory: a sync costs nothing more than computing the value).
    fn sync_small_outputs(&mut self) {
        let mut extra: Vec<Base> = Vec::new();
        for instr in &self.pending {
            let Some(out) = instr.output() else { continue };
            if instr.opcode.kind() == Kind::System {
                continue;
            }
            let Some(state) = self.bases.get_mut(&out.base.id) else { continue }; // freed since
            if !state.sync_pending && !state.in_host && out.base.nbytes() as u64 <= SYNC_WITH_BATCH_BYTES {
                state.sync_pending = true; // (set again by `track`; marks it taken here)
                extra.push(out.base);
            }
        }
        for base in extra {
            self.synced_along.push(base.id);
            let number = self.left_queue + self.pending.len() as u64;
            self.pending.push(Instruction::new(Opcode::Sync, [Operand::View(View::of_base(base))]));
            let last = self.pending.last().expect("just pushed");
            track(&mut self.bases, &mut self.memory, &mut self.syncs, last, number);
        }
    }

    /// Records which live bases `batch` left unspecified: every base it wrote when it failed
    /// with `error`, else those it computed from such bases. A FREE in the batch ends a base's
    /// record, and so does an instruction of a batch that ran writing all of the base from
    /// specified inputs.
    fn mark_failed(&mut self, batch: &[Instruction], error: Option<&Error>) {
        if error.is_none() && self.failed.is_empty() {
            return;
        }
        for instr in batch {
            if instr.opcode == Opcode::Free {
                instr.views().for_each(|v| _ = self.failed.remove(&v.base.id));
                continue;
            }
            let Some(out) = instr.output() else { continue };
            if instr.opcode.kind() == vm_ir::Kind::System {
                continue;
            }
            let cause = error.or_else(|| instr.views().skip(1).find_map(|v| self.failed.get(&v.base.id)));
            match cause.cloned() {
                Some(cause) if self.bases.contains_key(&out.base.id) => _ = self.failed.insert(out.base.id, cause),
                // (A scatter writes only where its index points.)
                None if out.is_whole_base() && instr.opcode.kind() != vm_ir::Kind::Scatter => {
                    _ = self.failed.remove(&out.base.id)
                }
                _ => {}
            }
        }
    }

    /// The error that left base `id` unspecified, if one did ([`Runtime::flush`]).
    /// Drops the error a failed batch left on base `id` (it was written whole, or freed).
    fn forget_failure(&mut self, id: BaseId) {
        if !self.failed.is_empty() {
            self.failed.remove(&id);
        }
    }

    fn check_failed(&self, id: BaseId) -> Result<()> {
        match self.failed.get(&id) {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Makes the host copy of base `id` current (queues a SYNC of the whole base and flushes).
    /// A base a failed batch wrote (or that was computed from one) stays that batch's error.
    pub fn sync(&mut self, id: BaseId) -> Result<()> {
        self.sync_unchecked(id)?;
        self.check_failed(id)
    }

    /// [`Runtime::sync`] of a base whose contents may be unspecified.
    fn sync_unchecked(&mut self, id: BaseId) -> Result<()> {
        let base = self.base(id)?;
        let state = self.bases.get_mut(&id).expect("looked up above");
        if state.in_host {
            state.host_current = true; // synced, or computed here, since the last write
            return Ok(());
        }
        self.submit(vec![Instruction::new(Opcode::Sync, [Operand::View(View::of_base(base))])])
    }

    /// Ends base `id` (queues a FREE). The handle is invalid from now on.
    pub fn free(&mut self, id: BaseId) -> Result<()> {
        // The FREE of a live base's whole view is valid by construction: no check needed.
        let state = self.bases.remove(&id).ok_or_else(|| Error::UnknownBase(id.0))?;
        self.forget_failure(id);
        self.memory.unpin(id);
        self.stats.instructions += 1;
        if !state.known {
            // Only the runtime ever held it (host writes, direct execution): nothing to tell
            // the stack.
            self.owed_discards -= usize::from(state.discard_owed);
            self.memory.free(id);
            return Ok(());
        }
        // Built where it stays: an instruction is a few hundred bytes, a FREE follows every
        // temporary.
        self.pending.push(Instruction::empty(Opcode::Free));
        let slot = self.pending.last_mut().expect("just pushed");
        slot.operands.push(Operand::View(View::of_base(state.base)));
        self.queued(false)
    }

    /// Element `index` of base `id` when host memory holds the base's value, which the host
    /// may then read as after a sync that runs nothing (this read counts as that sync); `None`
    /// when it does not (a sync would run queued work). The frontends' element read.
    pub fn read_in_host(&mut self, id: BaseId, index: usize) -> Result<Option<vm_ir::Scalar>> {
        let mut bytes = [0u8; 8];
        Ok(self.read_bytes_in_host(id, index, &mut bytes)?.map(|dtype| vm_ir::Scalar::from_ne_bytes(dtype, &bytes)))
    }

    /// [`Runtime::read_in_host`] as the element's bytes (its dtype's size of them, native
    /// order), copied to the start of `out`; returns the dtype. The element read of a loop,
    /// without building a [`vm_ir::Scalar`] on its way to a frontend's own scalar.
    pub fn read_bytes_in_host(&mut self, id: BaseId, index: usize, out: &mut [u8; 8]) -> Result<Option<DType>> {
        let state = self.bases.get_mut(&id).ok_or_else(|| Error::UnknownBase(id.0))?;
        if !state.in_host {
            return Ok(None);
        }
        state.host_current = true;
        let base = state.base;
        if !self.failed.is_empty() {
            self.check_failed(id)?;
        }
        let size = base.dtype.size();
        let bytes = self.memory.ensure(&base)?.bytes();
        let element = index.checked_mul(size).and_then(|at| bytes.get(at..at + size)).ok_or_else(|| {
            Error::InvalidArgument(format!("element {index} of base {} which has {}", id.0, base.nelem))
        })?;
        out[..size].copy_from_slice(element);
        Ok(Some(base.dtype))
    }

    /// The one element that `opcode` computes from `inputs` (an output of one element comes
    /// first in its operands, row-major of `shape`), computed at once on the direct executor
    /// into scratch memory when the instruction may run at once ([`Runtime::submit_in_place`]);
    /// `Err(inputs)`, given back, when it may not (the caller records it). No base is made and
    /// nothing is queued: a loop reading the value of a small dot product or sum each step
    /// (`x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]`) gets it at the cost of the computation and
    /// a check.
    pub fn compute_element<const N: usize>(
        &mut self,
        opcode: Opcode,
        dtype: DType,
        shape: &[usize],
        inputs: [Operand; N],
    ) -> Result<std::result::Result<Scalar, [Operand; N]>> {
        if !self.direct || shape.iter().product::<usize>() != 1 {
            return Ok(Err(inputs));
        }
        let scratch = Base { id: SCRATCH_BASE, dtype, nelem: 1 };
        let mut instr = Instruction::empty(opcode);
        instr.operands.push(Operand::View(View::row_major(scratch, shape)));
        instr.operands.extend(inputs);
        let give_back = |instr: Instruction| -> [Operand; N] {
            let mut operands = instr.operands.into_iter().skip(1);
            std::array::from_fn(|_| operands.next().expect("the inputs follow the output"))
        };
        // The scratch base is not in the table: checked as if it were a fresh one.
        self.bases.insert(SCRATCH_BASE, BaseState::fresh(scratch, true));
        let direct = self.check(&instr).is_ok() && self.runs_direct(&instr, false);
        self.bases.remove(&SCRATCH_BASE);
        if !direct {
            return Ok(Err(give_back(instr)));
        }
        self.stats.instructions += 1;
        self.stats.direct += 1;
        let executor = self.stack.direct().expect("runs_direct: the runtime has an executor");
        self.memory.interrupt().clear();
        let result = executor.execute_direct(&instr, &mut self.memory).and_then(|()| {
            let buffer = self.memory.get(SCRATCH_BASE).ok_or_else(|| Error::Internal("no scratch buffer".into()))?;
            Ok(vm_ir::with_dtype!(dtype, T => Scalar::from(buffer.as_slice::<T>()[0])))
        });
        self.memory.free(SCRATCH_BASE);
        match result {
            Err(Error::Unsupported(_)) => Ok(Err(give_back(instr))),
            result => result.map(Ok),
        }
    }

    /// The dot product of two vectors of one float dtype and length whose bases host memory
    /// holds, computed in place in the summation order of [`vm_math::dot`]: the bits the direct
    /// executor's `matmul` of them gives, without an instruction, a scratch base or a check.
    /// `None` when direct execution is off, an operand's base is not in host memory (or failed)
    /// or the vectors are longer than an instruction run at once may touch: the caller goes on
    /// to [`Runtime::compute_element`] or records the product. The small dot product of a loop
    /// (`A[i, j] -= A[i, :j] @ A[j, :j]`) costs its multiply-adds and two base lookups.
    pub fn dot_in_host(&mut self, a: &View, b: &View) -> Result<Option<Scalar>> {
        let (k, dtype) = (a.nelem(), a.dtype());
        let vectors = a.ndim() == 1 && b.ndim() == 1 && b.shape[0] == k && b.dtype() == dtype;
        if !self.direct || !vectors || !matches!(dtype, DType::F32 | DType::F64) || k as u64 > self.direct_elements() {
            return Ok(None);
        }
        for v in [a, b] {
            let Some(state) = self.bases.get(&v.base.id) else { return Ok(None) };
            let failed = !self.failed.is_empty() && self.failed.contains_key(&v.base.id);
            if state.base != v.base || !state.in_host || failed {
                return Ok(None);
            }
        }
        self.memory.ensure(&a.base)?;
        self.memory.ensure(&b.base)?;
        let buffer = |id| self.memory.get(id).ok_or_else(|| Error::Internal(format!("no buffer of base {}", id.0)));
        let (x, y) = (buffer(a.base.id)?, buffer(b.base.id)?);
        let (ra, rb) = ((a.start, a.stride[0]), (b.start, b.stride[0]));
        let value = match dtype {
            DType::F64 => {
                vm_math::dot::strided_dot(x.as_slice::<f64>(), ra, y.as_slice::<f64>(), rb, k).map(Scalar::from)
            }
            _ => vm_math::dot::strided_dot(x.as_slice::<f32>(), ra, y.as_slice::<f32>(), rb, k).map(Scalar::from),
        };
        if value.is_some() {
            self.stats.instructions += 1;
            self.stats.direct += 1;
        }
        Ok(value)
    }

    /// True when an instruction of the pending batch (other than a DISCARD) names base `id`.
    pub fn is_queued(&self, id: BaseId) -> Result<bool> {
        self.bases.get(&id).map(|s| !s.unused_by(self.left_queue)).ok_or_else(|| Error::UnknownBase(id.0))
    }

    /// True when host memory holds the current value of base `id` ([`Runtime::sync`] of it
    /// runs nothing).
    pub fn is_in_host(&self, id: BaseId) -> Result<bool> {
        self.bases.get(&id).map(|s| s.in_host).ok_or_else(|| Error::UnknownBase(id.0))
    }

    /// True when the host copy of base `id` is current (a SYNC of it executed and nothing has
    /// written it since): [`Runtime::host_data`] may read it.
    pub fn is_host_current(&self, id: BaseId) -> Result<bool> {
        self.bases.get(&id).map(|s| s.host_current).ok_or_else(|| Error::UnknownBase(id.0))
    }

    /// True when an instruction of the pending batch computes more than one element of base `id`
    /// (writes other than stores of single elements and fills with a constant).
    pub fn pending_computes(&self, id: BaseId) -> bool {
        self.pending.iter().any(|i| {
            let fill = i.opcode == Opcode::Identity && matches!(i.operands.get(1), Some(Operand::Const(_)));
            i.output().is_some_and(|v| v.base.id == id && v.nelem() > 1 && !fill)
        })
    }

    /// The host bytes of base `id`, which must be synced and not written since.
    pub fn host_data(&mut self, id: BaseId) -> Result<&[u8]> {
        let state = *self.bases.get(&id).ok_or_else(|| Error::UnknownBase(id.0))?;
        self.check_failed(id)?;
        if !state.host_current {
            return Err(Error::Protocol(format!(
                "base {} is not synced: its host data may be stale (sync it first; writes since the last sync invalidate it)",
                id.0
            )));
        }
        Ok(self.memory.ensure(&state.base)?.bytes())
    }

    /// [`Runtime::host_data`] of two bases at once (a mask and the data it selects from).
    pub fn host_data_pair(&mut self, a: BaseId, b: BaseId) -> Result<(&[u8], &[u8])> {
        self.host_data(a)?;
        self.host_data(b)?;
        let bytes = |id: BaseId| {
            self.memory.get(id).map(|b| b.bytes()).ok_or_else(|| Error::Internal(format!("no buffer of base {}", id.0)))
        };
        Ok((bytes(a)?, bytes(b)?))
    }

    /// [`Runtime::host_data`], with the buffer pinned: it stays allocated at the same address
    /// until the base is freed, whatever runs meanwhile (its contents are current only after
    /// a sync). For frontends that lend the memory out without knowing for how long.
    pub fn pinned_host_data(&mut self, id: BaseId) -> Result<&[u8]> {
        self.host_data(id)?;
        self.memory.pin(id);
        Ok(self.memory.get(id).expect("allocated by host_data").bytes())
    }

    /// The host data of base `id` as elements of `T` (see [`Runtime::host_data`]).
    pub fn host_slice<T: Element>(&mut self, id: BaseId) -> Result<&[T]> {
        let base = self.base(id)?;
        if base.dtype != T::DTYPE {
            return Err(Error::InvalidArgument(format!("base {} holds {}, not {}", id.0, base.dtype, T::DTYPE)));
        }
        self.host_data(id)?;
        Ok(self.memory.get(id).expect("allocated by host_data").as_slice())
    }

    /// Overwrites elements `[offset, offset + len)` of base `id` from host bytes (`len` given by
    /// `bytes.len()`). Pending work runs first; engines are told to drop their copies.
    pub fn write(&mut self, id: BaseId, offset: u64, bytes: &[u8]) -> Result<()> {
        if self.write_in_host(id, offset, bytes)? {
            return Ok(());
        }
        let state = *self.bases.get(&id).ok_or_else(|| Error::UnknownBase(id.0))?;
        let len = written_elements(&state.base, offset, bytes)?;
        let whole = offset == 0 && len == state.base.nelem;
        // Queued instructions that use the base run first, so that they see what it held
        // before (a DISCARD of it may wait: it only drops engines' copies). Writing all of a
        // base that nothing queued uses runs nothing: `np.array([x[1], y.sum(), 0.5])` stores
        // its NumPy scalar into a new base without running the instructions computing the rest.
        let used = !state.unused_by(self.left_queue);
        if used && (whole || state.in_host) {
            self.flush()?;
        } else if !whole && !state.in_host {
            self.sync_unchecked(id)?;
        }
        self.write_host_bytes(&state.base, offset, bytes)?;
        if whole {
            self.forget_failure(id);
        }
        // One DISCARD stands for a run of writes (a loop storing element by element).
        self.queue_discard(id);
        let state = self.bases.get_mut(&id).expect("looked up above");
        (state.host_current, state.in_host) = (true, true);
        Ok(())
    }

    /// [`Runtime::write`] when host memory holds base `id` and nothing queued uses it (the
    /// element stores of a Python loop): the bytes are written at once, with one table lookup
    /// before the write; false, with nothing done, for any other base.
    pub fn write_in_host(&mut self, id: BaseId, offset: u64, bytes: &[u8]) -> Result<bool> {
        let state = self.bases.get(&id).ok_or_else(|| Error::UnknownBase(id.0))?;
        if !state.in_host || !state.unused_by(self.left_queue) {
            return Ok(false);
        }
        let base = state.base;
        let len = written_elements(&base, offset, bytes)?;
        self.write_host_bytes(&base, offset, bytes)?;
        if offset == 0 && len == base.nelem {
            self.forget_failure(id);
        }
        self.queue_discard(id);
        self.bases.get_mut(&id).expect("looked up above").host_current = true;
        Ok(true)
    }

    /// Copies `bytes` into host memory of `base` from element `offset` on (a "copy" span of the
    /// trace); a base without a buffer that the bytes fill is not zeroed first.
    fn write_host_bytes(&mut self, base: &Base, offset: u64, bytes: &[u8]) -> Result<()> {
        let begun = crate::trace::begin();
        let whole = offset == 0 && bytes.len() as u64 == base.nelem.saturating_mul(base.dtype.size() as u64);
        let buffer = if whole { self.memory.ensure_overwritten(base)? } else { self.memory.ensure(base)? };
        buffer.write_bytes(offset as usize * base.dtype.size(), bytes)?;
        let id = base.id;
        crate::trace::end(begun, "copy", || format!("host write to base {id}"), || vec![("bytes", bytes.len() as u64)]);
        Ok(())
    }

    /// Registers the extension method `name` with the stack and returns its opcode. Registering
    /// a name twice returns the same opcode. Fails when no component implements it. Instructions
    /// calling a method of [`vm_ir::extension::RULES`] are checked by its rule when submitted.
    pub fn register_extension(&mut self, name: &str) -> Result<Opcode> {
        if let Some(n) = self.extensions.iter().position(|(e, _)| e == name) {
            return Ok(Opcode::Extension(n as u32));
        }
        let opcode = Opcode::Extension(self.extensions.len() as u32);
        if !self.stack.register_extension(name, opcode)? {
            return Err(Error::Unsupported(format!(
                "no component of this stack implements the extension method `{name}`"
            )));
        }
        self.extensions.push((name.to_string(), vm_ir::extension::rule(name)));
        Ok(opcode)
    }

    /// The name of a registered extension opcode.
    pub fn extension_name(&self, opcode: Opcode) -> Option<&str> {
        match opcode {
            Opcode::Extension(n) => self.extensions.get(n as usize).map(|(name, _)| name.as_str()),
            _ => None,
        }
    }

    /// The stack's components, top first.
    pub fn describe(&self) -> Vec<ComponentInfo> {
        self.stack.describe()
    }

    /// Counters.
    pub fn stats(&self) -> RuntimeStats {
        self.stats
    }

    /// Flushes pending work and shuts the stack down; with `VM_PROFILE=trace.json`, writes the
    /// trace of the process's spans so far ([`crate::trace`]).
    pub fn shutdown(mut self) -> Result<()> {
        let flushed = self.flush();
        let shut = self.stack.shutdown();
        let Some(path) = &self.trace_file else { return flushed.and(shut) };
        let written = crate::trace::write_chrome_trace(path, &crate::trace::snapshot()).map_err(|e| {
            Error::InvalidArgument(format!("VM_PROFILE: cannot write the trace to {}: {e}", path.display()))
                .caused_by(e)
        });
        flushed.and(shut).and(written)
    }
}

/// Updates the bases' states for checked instruction number `number`, which joined the pending
/// batch; true when it is a SYNC (the batch must be flushed; the bases it syncs join `syncs`). A
/// base a later FREE of the batch ended is no longer in the table: nothing is left to update
/// about it.
/// The number of elements `bytes` holds when written at element `offset` of `base`; an error
/// when they are not whole elements or reach past its end.
fn written_elements(base: &Base, offset: u64, bytes: &[u8]) -> Result<u64> {
    let size = base.dtype.size();
    if !bytes.len().is_multiple_of(size) {
        return Err(Error::InvalidArgument(format!(
            "{} bytes is not a whole number of {} elements",
            bytes.len(),
            base.dtype
        )));
    }
    let len = (bytes.len() / size) as u64;
    if offset.checked_add(len).is_none_or(|end| end > base.nelem) {
        return Err(Error::InvalidArgument(format!(
            "writing elements {offset}..{} of base {} which has {}",
            offset.saturating_add(len),
            base.id.0,
            base.nelem
        )));
    }
    Ok(len)
}

fn track(
    bases: &mut HashMap<BaseId, BaseState>,
    memory: &mut HostMemory,
    syncs: &mut Vec<BaseId>,
    instr: &Instruction,
    number: u64,
) -> bool {
    if let Some(state) = instr.output().and_then(|out| bases.get_mut(&out.base.id)) {
        (state.host_current, state.in_host) = (false, false);
        state.sync_pending = false;
    }
    let discard = instr.opcode == Opcode::Discard;
    for v in instr.views() {
        if let Some(state) = bases.get_mut(&v.base.id) {
            state.known = true;
            if discard {
                state.discarded_until = number + 1;
            } else {
                state.used_until = number + 1;
            }
        }
    }
    match instr.opcode {
        Opcode::Sync => {
            for v in instr.views() {
                if let Some(state) = bases.get_mut(&v.base.id) {
                    state.sync_pending = true;
                    syncs.push(v.base.id);
                }
            }
            true
        }
        Opcode::Free => {
            for v in instr.views() {
                bases.remove(&v.base.id);
                memory.unpin(v.base.id);
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::scalar::Scalar;

    /// A stack that records what it is given and fills every output with 7; a batch holding a
    /// `sqrt` fails after writing the outputs before it.
    struct Fill7 {
        batches: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl Component for Fill7 {
        fn name(&self) -> &str {
            "fill7"
        }
        fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
            self.batches.lock().unwrap().push(batch.len());
            for i in batch {
                if i.opcode == Opcode::Sqrt {
                    return Err(Error::Execution("sqrt refused".into()));
                }
                if let Some(out) = i.output() {
                    let buf = mem.ensure(&out.base)?;
                    buf.as_mut_slice::<f64>().fill(7.0);
                }
                if i.opcode == Opcode::Free {
                    mem.free(i.operands[0].as_view().unwrap().base.id);
                }
            }
            Ok(())
        }
        fn register_extension(&mut self, name: &str, _: Opcode) -> Result<bool> {
            Ok(name == "known" || name == vm_ir::extension::MATMUL)
        }
        fn info(&self) -> ComponentInfo {
            ComponentInfo::default()
        }
    }

    /// A stack of [`Fill7`] whose direct executor writes 9 into outputs (and fails on `sqrt`),
    /// recording the batches the stack gets as text.
    struct WithDirect {
        stack: Fill7,
        direct: Direct9,
        seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    }

    struct Direct9;

    impl Component for Direct9 {
        fn name(&self) -> &str {
            "direct9"
        }
        fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
            for i in batch {
                if i.opcode == Opcode::Sqrt {
                    return Err(Error::Execution("sqrt refused".into()));
                }
                let out = i.output().expect("direct instructions write");
                if matches!(i.opcode, Opcode::Extension(_)) && out.nelem() == 1 {
                    return Err(Error::Unsupported("no dot products here".into()));
                }
                mem.ensure(&out.base)?.as_mut_slice::<f64>().fill(9.0);
            }
            Ok(())
        }
        fn info(&self) -> ComponentInfo {
            ComponentInfo::default()
        }
    }

    impl Component for WithDirect {
        fn name(&self) -> &str {
            "with-direct"
        }
        fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
            self.seen.lock().unwrap().push(vm_ir::asm::print_batch(batch));
            self.stack.execute(batch, mem)
        }
        fn direct(&mut self) -> Option<&mut (dyn Component + 'static)> {
            Some(&mut self.direct)
        }
        fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
            self.stack.register_extension(name, opcode)
        }
        fn info(&self) -> ComponentInfo {
            ComponentInfo::default()
        }
    }

    /// A runtime over [`WithDirect`] running instructions of up to 4 elements at once.
    fn direct_runtime() -> (Runtime, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        direct_runtime_of(4)
    }

    /// A runtime over [`WithDirect`] running instructions of up to `elements` at once.
    fn direct_runtime_of(elements: u64) -> (Runtime, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        let seen = std::sync::Arc::default();
        let stack = WithDirect {
            stack: Fill7 { batches: std::sync::Arc::default() },
            direct: Direct9,
            seen: std::sync::Arc::clone(&seen),
        };
        (Runtime::new(Box::new(stack), RuntimeOptions { direct_elements: elements, ..RuntimeOptions::default() }), seen)
    }

    fn add_into(out: Base, x: Base) -> Instruction {
        Instruction::new(Opcode::Add, [View::of_base(out).into(), View::of_base(x).into(), Scalar::F64(1.0).into()])
    }

    /// A full batch that does not repeat (a loop whose steps change shape) lets instructions up
    /// to [`APERIODIC_DIRECT_FACTOR`] times larger run at once, for [`APERIODIC_SPAN`] batches'
    /// worth of instructions; a full batch that repeats does not.
    #[test]
    fn a_full_batch_that_does_not_repeat_widens_direct_execution_for_a_while() {
        for repeating in [false, true] {
            let (mut rt, _) = direct_runtime_of(4);
            rt.options.batch_limit = 256;
            let add = |rt: &mut Runtime, n: u64| {
                let [out, x] = [(); 2].map(|()| rt.new_base(DType::F64, n).unwrap());
                rt.submit_one(add_into(out, x)).unwrap();
            };
            // Steps of 17 elements and more (too large to run at once) until the batch is full.
            let mut k = 0;
            while rt.stats().flushes == 0 {
                add(&mut rt, if repeating { 20 } else { 17 + k });
                k += 1;
            }
            let direct = rt.stats().direct;
            add(&mut rt, 8);
            assert_eq!(rt.stats().direct, direct + u64::from(!repeating), "repeating {repeating}");
            if repeating {
                continue;
            }
            // Small steps run at once meanwhile; past the span the usual limit holds again.
            for _ in 0..APERIODIC_SPAN * 256 {
                add(&mut rt, 2);
            }
            let direct = rt.stats().direct;
            add(&mut rt, 8);
            assert_eq!(rt.stats().direct, direct, "queued again after the span");
        }
    }

    #[test]
    fn a_write_in_host_memory_runs_nothing_and_a_queued_base_is_left_to_write() {
        let (mut rt, seen) = direct_runtime_of(4);
        let [a, b] = [(); 2].map(|()| rt.new_base(DType::F64, 8).unwrap());
        // A fresh base is in host memory: written at once, and no engine holds a copy to
        // discard (the stack never saw it).
        assert!(rt.write_in_host(a.id, 3, &2.5f64.to_ne_bytes()).unwrap());
        assert!(rt.write_in_host(a.id, 4, &1.5f64.to_ne_bytes()).unwrap());
        assert_eq!(rt.read_in_host(a.id, 3).unwrap(), Some(Scalar::F64(2.5)));
        assert_eq!(rt.pending_len(), 0, "nothing queued");
        // The element's bytes, of a dtype narrower than the buffer they are copied to.
        let small = rt.new_base(DType::I16, 3).unwrap();
        assert!(rt.write_in_host(small.id, 2, &(-300i16).to_ne_bytes()).unwrap());
        let mut bytes = [0xffu8; 8];
        assert_eq!(rt.read_bytes_in_host(small.id, 2, &mut bytes).unwrap(), Some(DType::I16));
        assert_eq!(&bytes[..2], &(-300i16).to_ne_bytes());
        assert!(rt.read_bytes_in_host(small.id, 3, &mut bytes).is_err(), "past the end");
        // Bad writes are errors, with nothing written.
        assert!(rt.write_in_host(a.id, 8, &1.0f64.to_ne_bytes()).is_err());
        assert!(rt.write_in_host(a.id, 0, &[0u8; 3]).is_err());
        // A base a queued instruction uses is not written here (the general write runs the
        // queue first).
        rt.submit_one(add_into(b, a)).unwrap();
        assert!(!rt.write_in_host(b.id, 0, &1.0f64.to_ne_bytes()).unwrap());
        rt.write(b.id, 0, &1.0f64.to_ne_bytes()).unwrap();
        assert!(!seen.lock().unwrap().is_empty(), "the queued add ran before the write");
        rt.sync(b.id).unwrap();
        assert_eq!(rt.read_in_host(b.id, 0).unwrap(), Some(Scalar::F64(1.0)));
        // A base the stack has seen: its engines' copies are discarded, one DISCARD for a run
        // of writes.
        rt.flush().unwrap();
        assert!(rt.write_in_host(b.id, 1, &3.0f64.to_ne_bytes()).unwrap());
        assert!(rt.write_in_host(b.id, 2, &4.0f64.to_ne_bytes()).unwrap());
        assert_eq!(rt.pending_len(), 1, "one DISCARD");
    }

    #[test]
    fn a_sync_brings_the_small_outputs_of_its_batch_into_host_memory() {
        for direct in [4, 0] {
            let (mut rt, seen) = direct_runtime_of(direct);
            let [a, b, c] = [(); 3].map(|()| rt.new_base(DType::F64, 8).unwrap());
            rt.write(a.id, 0, &[0u8; 64]).unwrap();
            // Larger than direct execution takes: both queued.
            rt.submit_one(add_into(b, a)).unwrap();
            rt.submit_one(add_into(c, a)).unwrap();
            rt.sync(c.id).unwrap();
            let batch = seen.lock().unwrap().last().cloned().unwrap();
            // With direct execution, b is synced with c: a small operation on it runs at once.
            assert_eq!(rt.is_in_host(b.id).unwrap(), direct > 0, "{batch}");
            // The protocol still asks for b's own sync before its data (which runs nothing).
            assert!(rt.host_data(b.id).is_err());
            assert_eq!(batch.matches("sync").count(), if direct > 0 { 2 } else { 1 }, "{batch}");
            assert!(rt.is_in_host(c.id).unwrap());
        }
    }

    #[test]
    fn fills_with_a_constant_run_at_once_up_to_a_larger_size() {
        let (mut rt, _) = direct_runtime_of(4);
        let fits = 4 * DIRECT_FILL_FACTOR;
        let [a, b] = [fits, fits + 1].map(|n| rt.new_base(DType::F64, n).unwrap());
        let fill = |x: Base| Instruction::new(Opcode::Identity, [View::of_base(x).into(), Scalar::F64(0.0).into()]);
        rt.submit_one(fill(a)).unwrap();
        assert_eq!((rt.stats().direct, rt.is_in_host(a.id).unwrap()), (1, true));
        rt.submit_one(fill(b)).unwrap();
        assert_eq!((rt.stats().direct, rt.is_in_host(b.id).unwrap()), (1, false), "past the fill limit: queued");
        // Other instructions of that size are queued.
        let c = rt.new_base(DType::F64, fits).unwrap();
        rt.submit_one(add_into(c, a)).unwrap();
        assert_eq!(rt.stats().direct, 1);
    }

    #[test]
    fn a_fresh_base_is_in_host_memory_on_a_direct_stack() {
        for direct in [4, 0] {
            let (mut rt, _) = direct_runtime_of(direct);
            let [a, b] = [(); 2].map(|()| rt.new_base(DType::F64, 8).unwrap());
            assert_eq!(rt.is_in_host(a.id).unwrap(), direct > 0);
            // Of any size: a small write of part of it runs at once, allocating it.
            let large = rt.new_base(DType::F64, 1 << 20).unwrap();
            assert_eq!(rt.is_in_host(large.id).unwrap(), direct > 0);
            let direct_before = rt.stats().direct;
            let part = View::new(large, 1000, &[3], &[1]).unwrap();
            rt.submit_one(Instruction::new(Opcode::Identity, [part.into(), Scalar::F64(5.0).into()])).unwrap();
            assert_eq!(rt.stats().direct - direct_before, u64::from(direct > 0));
            rt.sync(large.id).unwrap();
            let written = if direct > 0 { 9.0 } else { 7.0 }; // by Direct9 or Fill7, as below
            assert_eq!(rt.host_slice::<f64>(large.id).unwrap()[1000], written);
            // A write of part of a base nothing has written (`v = np.empty(8); v[2:4] = ...`).
            let part = View::new(a, 2, &[2], &[1]).unwrap();
            rt.submit_one(Instruction::new(Opcode::Identity, [part.into(), Scalar::F64(5.0).into()])).unwrap();
            assert_eq!(rt.stats().direct, 2 * u64::from(direct > 0));
            rt.submit_one(add_into(b, a)).unwrap(); // larger than direct execution takes
            rt.sync(b.id).unwrap();
            rt.sync(a.id).unwrap();
            // Run at once (Direct9 fills the base with 9s), or queued (Fill7's 7s).
            let want = if direct > 0 { 9.0 } else { 7.0 };
            assert_eq!(rt.host_slice::<f64>(a.id).unwrap(), &[want; 8]);
        }
    }

    #[test]
    fn small_instructions_on_current_operands_run_at_once() {
        let (mut rt, seen) = direct_runtime();
        let [a, b, c] = [(); 3].map(|()| rt.new_base(DType::F64, 4).unwrap());
        rt.write(a.id, 0, &[0u8; 32]).unwrap();
        // a is current: b = a + 1 runs at once, then c = b + 1 too; nothing reaches the stack,
        // and b's value is readable without a sync.
        rt.submit_one(add_into(b, a)).unwrap();
        rt.submit_one(add_into(c, b)).unwrap();
        assert_eq!(rt.stats().direct, 2);
        // The ownership protocol still asks for a sync (which runs nothing).
        assert!(rt.host_data(c.id).is_err());
        assert!(rt.is_in_host(c.id).unwrap());
        rt.sync(c.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(c.id).unwrap(), &[9.0; 4]);
        assert_eq!(rt.pending_len(), 0);
        // Temporaries the stack never heard of are freed by the runtime alone.
        rt.free(b.id).unwrap();
        rt.free(c.id).unwrap();
        rt.flush().unwrap();
        assert!(seen.lock().unwrap().is_empty(), "the stack heard of nothing");
    }

    #[test]
    fn one_element_computed_at_once_makes_no_base_and_queues_nothing() {
        let (mut rt, seen) = direct_runtime();
        let a = rt.new_base(DType::F64, 4).unwrap();
        rt.write(a.id, 0, &[0u8; 32]).unwrap();
        let sum_of = |x: Base| -> [Operand; 2] { [View::of_base(x).into(), Scalar::I64(0).into()] };
        let live = rt.bases.len();
        // Direct9 writes 9s: its value, from scratch memory.
        let got = rt.compute_element(Opcode::AddReduce, DType::F64, &[], sum_of(a)).unwrap();
        assert_eq!(got, Ok(Scalar::F64(9.0)));
        assert_eq!((rt.bases.len(), rt.stats().direct), (live, 1));
        assert!(rt.memory.get(SCRATCH_BASE).is_none(), "the scratch buffer is released");
        // An input the queue computes, an output of several elements, an operation the
        // executor refuses: the inputs given back as they were, and nothing is queued or run.
        let big = rt.new_base(DType::F64, 8).unwrap();
        rt.write(big.id, 0, &[0u8; 64]).unwrap();
        rt.submit_one(add_into(big, big)).unwrap(); // too large to run at once: queued
        let pending = rt.pending_len();
        let evens = View::new(big, 0, &[4], &[2]).unwrap();
        let sum_of_evens: [Operand; 2] = [evens.into(), Scalar::I64(0).into()];
        assert_eq!(
            rt.compute_element(Opcode::AddReduce, DType::F64, &[], sum_of_evens.clone()).unwrap(),
            Err(sum_of_evens)
        );
        let whole: [Operand; 1] = [View::of_base(a).into()];
        assert_eq!(rt.compute_element(Opcode::Negative, DType::F64, &[4], whole.clone()).unwrap(), Err(whole));
        assert_eq!(
            rt.compute_element(Opcode::Sqrt, DType::F64, &[], [View::new(a, 0, &[], &[]).unwrap().into()]),
            Err(Error::Execution("sqrt refused".into()))
        );
        assert_eq!((rt.pending_len(), rt.stats().direct), (pending, 2), "the refused sqrt ran");
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn what_the_pending_batch_touches_is_queued_behind_it() {
        let (mut rt, seen) = direct_runtime();
        let [a, b, c, d, e, g] = [(); 6].map(|()| rt.new_base(DType::F64, 4).unwrap());
        let big = rt.new_base(DType::F64, 8).unwrap();
        for x in [a, d] {
            rt.write(x.id, 0, &[0u8; 32]).unwrap();
        }
        rt.write(big.id, 0, &[0u8; 64]).unwrap();
        let evens = View::new(big, 0, &[4], &[2]).unwrap();
        let add = |out: Base, x: Operand, y: Operand| Instruction::new(Opcode::Add, [View::of_base(out).into(), x, y]);
        // Too large to run at once: queued (more than a small instruction runs to run after).
        for _ in 0..=FLUSH_FOR_DIRECT {
            rt.submit_one(add(big, View::of_base(big).into(), Scalar::F64(1.0).into())).unwrap();
        }
        // Reading what the queue computes (read after write): queued, and so is what reads that.
        rt.submit_one(add(b, evens.clone().into(), Scalar::F64(1.0).into())).unwrap();
        rt.submit_one(add_into(c, b)).unwrap();
        assert_eq!(rt.stats().direct, 0);
        // Beside the queue, on current bases nothing queued uses: at once.
        rt.submit_one(add_into(e, a)).unwrap();
        assert_eq!(rt.stats().direct, 1);
        // A queued instruction reads a; writing a now would change what it reads (write after
        // read): queued behind it.
        rt.submit_one(add(g, View::of_base(a).into(), evens.into())).unwrap();
        rt.submit_one(add_into(a, d)).unwrap();
        assert_eq!(rt.stats().direct, 1);
        rt.sync(a.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(a.id).unwrap(), &[7.0; 4], "the stack ran it");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].matches("\nadd").count(), 5 + FLUSH_FOR_DIRECT, "{}", seen[0]);
    }

    #[test]
    fn a_small_instruction_waiting_for_a_short_batch_asks_for_a_flush_and_what_follows_runs_at_once() {
        let (mut rt, seen) = direct_runtime();
        let [b, c] = [(); 2].map(|()| rt.new_base(DType::F64, 4).unwrap());
        let big = rt.new_base(DType::F64, 8).unwrap();
        rt.write(big.id, 0, &[0u8; 64]).unwrap();
        let evens = View::new(big, 0, &[4], &[2]).unwrap();
        let add = |out: Base, x: Operand| {
            Instruction::new(Opcode::Add, [View::of_base(out).into(), x, Scalar::F64(1.0).into()])
        };
        rt.submit_one(add(big, View::of_base(big).into())).unwrap();
        assert_eq!((rt.stats().direct, seen.lock().unwrap().len()), (0, 0), "too large: queued");
        // It reads what the queue computes: queued, with SYNCs of its bases, and a flush wanted.
        rt.submit_one(add(b, evens.into())).unwrap();
        assert!(rt.flush_wanted());
        rt.flush().unwrap();
        assert!(!rt.flush_wanted());
        // What reads its output (or the batch's) runs at once.
        rt.submit_one(add_into(c, b)).unwrap();
        assert_eq!(rt.stats().direct, 1);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].matches("\nadd").count(), seen[0].matches("\nsync").count()), (2, 2), "{}", seen[0]);
    }

    #[test]
    fn a_direct_write_to_a_base_the_stack_knows_queues_one_discard() {
        let (mut rt, seen) = direct_runtime();
        let [a, b] = [(); 2].map(|()| rt.new_base(DType::F64, 4).unwrap());
        rt.write(a.id, 0, &[0u8; 32]).unwrap();
        rt.submit(vec![add_into(b, a), add_into(b, b)]).unwrap(); // a batch of two: queued
        rt.sync(b.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &[7.0; 4]);
        for _ in 0..3 {
            rt.submit_one(add_into(b, a)).unwrap();
        }
        assert_eq!(rt.stats().direct, 3);
        rt.sync(b.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &[9.0; 4]);
        rt.flush().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.last().unwrap().matches("discard").count(), 1, "{}", seen.last().unwrap());
    }

    #[test]
    fn a_direct_error_is_the_calls_and_the_outputs() {
        let (mut rt, _) = direct_runtime();
        let [a, b] = [(); 2].map(|()| rt.new_base(DType::F64, 4).unwrap());
        rt.write(a.id, 0, &[0u8; 32]).unwrap();
        let sqrt = Instruction::new(Opcode::Sqrt, [View::of_base(b).into(), View::of_base(a).into()]);
        assert_eq!(rt.submit_one(sqrt), Err(Error::Execution("sqrt refused".into())));
        assert_eq!(rt.sync(b.id), Err(Error::Execution("sqrt refused".into())));
        // Written whole again: usable.
        rt.submit_one(add_into(b, a)).unwrap();
        rt.sync(b.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &[9.0; 4]);
    }

    #[test]
    fn a_host_written_base_is_discarded_once_the_stack_hears_of_it() {
        let (mut rt, seen) = direct_runtime_of(2);
        let [a, b, c, d] = [(); 4].map(|()| rt.new_base(DType::F64, 4).unwrap());
        for x in [a, b, c] {
            rt.write(x.id, 0, &[0u8; 32]).unwrap();
        }
        assert_eq!(rt.pending_len(), 0, "three DISCARDs owed, none queued");
        // Too large to run at once: queued after a's DISCARD.
        rt.submit_one(add_into(d, a)).unwrap();
        // A batch that reads b and frees it: b's DISCARD comes first.
        let free_b = Instruction::new(Opcode::Free, [View::of_base(b).into()]);
        rt.submit(vec![add_into(d, b), free_b]).unwrap();
        // c is freed unused: neither its DISCARD nor its FREE reach the stack.
        rt.free(c.id).unwrap();
        rt.sync(d.id).unwrap();
        let seen = seen.lock().unwrap();
        let ops: Vec<&str> = seen
            .iter()
            .flat_map(|b| b.lines())
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| *w != ".base")
            .collect();
        // (The DISCARDs go first: nothing queued before names their bases.)
        assert_eq!(ops, ["discard", "discard", "add", "add", "free", "sync"], "{seen:?}");
        let text = seen.join("\n");
        assert!(
            text.contains(&format!("discard b{}", a.id.0)) && text.contains(&format!("discard b{}", b.id.0)),
            "{text}"
        );
        assert!(!text.contains(&format!("b{}", c.id.0)), "{text}");
    }

    #[test]
    fn small_matrix_products_run_at_once_where_the_executor_has_them() {
        let (mut rt, _) = direct_runtime_of(8);
        let matmul = rt.register_extension(vm_ir::extension::MATMUL).unwrap();
        let [a, c] = [(); 2].map(|()| rt.new_base(DType::F64, 4).unwrap());
        let dot = rt.new_base(DType::F64, 1).unwrap();
        rt.write(a.id, 0, &[0u8; 32]).unwrap();
        let square = |x: Base| View::new(x, 0, &[2, 2], &[2, 1]).unwrap().into();
        rt.submit_one(Instruction::new(matmul, [square(c), square(a), square(a)])).unwrap();
        assert_eq!(rt.stats().direct, 1);
        // Refused by the executor (an extension it lacks): queued for the stack instead.
        let row = View::new(a, 0, &[1, 4], &[4, 1]).unwrap().into();
        let column = View::new(a, 0, &[4, 1], &[1, 4]).unwrap().into();
        let one = View::new(dot, 0, &[1, 1], &[1, 1]).unwrap().into();
        rt.submit_one(Instruction::new(matmul, [one, row, column])).unwrap();
        assert_eq!((rt.stats().direct, rt.pending_len()), (1, 2), "a's DISCARD, owed since its write, and the product");
        rt.sync(dot.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(dot.id).unwrap(), &[7.0]);
        // Views of at most 512 elements, but more multiply-adds than 512: queued.
        let (mut rt, _) = direct_runtime_of(512);
        let matmul = rt.register_extension(vm_ir::extension::MATMUL).unwrap();
        let [x, y] = [(); 2].map(|()| rt.new_base(DType::F64, 256).unwrap());
        for b in [x, y] {
            rt.write(b.id, 0, &[0u8; 2048]).unwrap();
        }
        let of = |b: Base, n: usize| View::new(b, 0, &[n, n], &[n as i64, 1]).unwrap().into();
        rt.submit_one(Instruction::new(matmul, [of(y, 8), of(x, 8), of(x, 8)])).unwrap();
        assert_eq!(rt.stats().direct, 1, "8 x 8 x 8");
        rt.submit_one(Instruction::new(matmul, [of(y, 16), of(x, 16), of(x, 16)])).unwrap();
        assert_eq!(rt.stats().direct, 1, "16 x 16 x 16");
    }

    #[test]
    fn vm_trace_prints_batches_unless_it_names_only_the_passes() {
        let trace =
            |v: &str| RuntimeOptions::from_env(&crate::config::Env::new().with_var("VM_TRACE", v)).unwrap().trace;
        for (value, on) in [("1", true), ("0", false), ("", false), ("passes", false), ("passes,1", true)] {
            assert_eq!(trace(value), on, "VM_TRACE={value:?}");
        }
    }

    #[test]
    fn direct_execution_is_off_at_zero_and_from_the_environment() {
        let env = |v: &str| crate::config::Env::new().with_var("VM_DIRECT", v);
        assert_eq!(RuntimeOptions::from_env(&env("0")).unwrap().direct_elements, 0);
        assert_eq!(RuntimeOptions::from_env(&env("64")).unwrap().direct_elements, 64);
        let e = RuntimeOptions::from_env(&env("lots")).unwrap_err();
        assert!(e.to_string().contains("VM_DIRECT=lots"), "{e}");
        let seen = std::sync::Arc::default();
        let stack = WithDirect { stack: Fill7 { batches: std::sync::Arc::default() }, direct: Direct9, seen };
        let mut rt = Runtime::new(Box::new(stack), RuntimeOptions { direct_elements: 0, ..RuntimeOptions::default() });
        let [a, b] = [(); 2].map(|()| rt.new_base(DType::F64, 4).unwrap());
        rt.write(a.id, 0, &[0u8; 32]).unwrap();
        rt.submit_one(add_into(b, a)).unwrap();
        assert_eq!(rt.stats().direct, 0);
    }

    fn runtime() -> (Runtime, std::sync::Arc<std::sync::Mutex<Vec<usize>>>) {
        let batches = std::sync::Arc::default();
        let rt = Runtime::new(
            Box::new(Fill7 { batches: std::sync::Arc::clone(&batches) }),
            RuntimeOptions { batch_limit: 3, ..RuntimeOptions::default() },
        );
        (rt, batches)
    }

    fn add_one(b: Base) -> Instruction {
        let v = View::of_base(b);
        Instruction::new(Opcode::Add, [v.clone().into(), v.into(), Scalar::F64(1.0).into()])
    }

    #[test]
    fn host_reads_need_a_sync_and_writes_invalidate_it() {
        let (mut rt, batches) = runtime();
        let b = rt.new_base(DType::F64, 4).unwrap();
        rt.submit(vec![add_one(b)]).unwrap();
        assert!(matches!(rt.host_data(b.id), Err(Error::Protocol(_))));
        rt.sync(b.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &[7.0; 4]);
        assert_eq!(*batches.lock().unwrap(), vec![2], "add and sync in one batch");
        rt.submit(vec![add_one(b)]).unwrap();
        assert!(rt.host_data(b.id).is_err(), "a pending write makes the host copy stale");
    }

    #[test]
    fn what_a_failed_batch_wrote_is_its_error_until_written_whole() {
        let (mut rt, _) = runtime();
        let [a, b, c, d] = [(); 4].map(|()| rt.new_base(DType::F64, 4).unwrap());
        let op = |opcode, out: Base, x: Base| {
            Instruction::new(opcode, [View::of_base(out).into(), View::of_base(x).into(), Scalar::F64(1.0).into()])
        };
        let sqrt =
            |out: Base, x: Base| Instruction::new(Opcode::Sqrt, [View::of_base(out).into(), View::of_base(x).into()]);
        rt.submit(vec![add_one(a)]).unwrap();
        rt.flush().unwrap();
        rt.submit(vec![op(Opcode::Add, b, a), sqrt(c, a)]).unwrap();
        rt.flush().unwrap_err();
        // The batch wrote b before it failed and would have written c: both are its error.
        for x in [b, c] {
            assert_eq!(rt.sync(x.id), Err(Error::Execution("sqrt refused".into())));
            assert!(rt.host_data(x.id).is_err());
        }
        rt.sync(a.id).unwrap();
        assert_eq!(rt.host_slice::<f64>(a.id).unwrap(), &[7.0; 4], "a was written by a batch that ran");
        // Computed from a failed base by a batch that runs: failed too; from good ones: fine.
        rt.submit(vec![op(Opcode::Add, d, b)]).unwrap();
        assert!(rt.sync(d.id).is_err());
        rt.submit(vec![op(Opcode::Add, d, a)]).unwrap();
        rt.sync(d.id).unwrap();
        // A partial host write leaves the rest unspecified; a whole one replaces it.
        rt.write(b.id, 0, &1.0f64.to_ne_bytes()).unwrap();
        assert!(rt.sync(b.id).is_err());
        rt.write(b.id, 0, &[0u8; 32]).unwrap();
        rt.sync(b.id).unwrap();
        // A freed base's record goes with it.
        rt.free(c.id).unwrap();
        rt.flush().unwrap();
        assert!(rt.failed.is_empty() || !rt.failed.contains_key(&c.id));
    }

    #[test]
    fn batches_flush_at_the_limit() {
        let (mut rt, batches) = runtime();
        let b = rt.new_base(DType::F64, 4).unwrap();
        rt.submit(vec![add_one(b), add_one(b)]).unwrap();
        assert!(batches.lock().unwrap().is_empty());
        rt.submit(vec![add_one(b)]).unwrap();
        assert_eq!(*batches.lock().unwrap(), vec![3]);
    }

    #[test]
    fn a_loop_never_observed_reaches_the_stack_in_batches_of_whole_periods() {
        // x = x * 2 + 1 on fresh arrays, never synced: a period of 4 instructions (two
        // operations, two FREEs), batches full at 1002.
        let batches = std::sync::Arc::default();
        let stack = Box::new(Fill7 { batches: std::sync::Arc::clone(&batches) });
        let mut rt = Runtime::new(stack, RuntimeOptions { batch_limit: 1002, ..RuntimeOptions::default() });
        let mut x = rt.new_base(DType::F64, 8).unwrap();
        for i in 0..1500 {
            let y = rt.new_base(DType::F64, 8).unwrap();
            let (opcode, c) = if i % 2 == 0 { (Opcode::Multiply, 2.0) } else { (Opcode::Add, 1.0) };
            let (vx, vy) = (View::of_base(x), View::of_base(y));
            rt.submit(vec![Instruction::new(opcode, [vy.into(), vx.into(), Scalar::F64(c).into()])]).unwrap();
            rt.free(x.id).unwrap();
            x = y;
        }
        // Each full batch runs 250 periods and leaves 2 instructions pending: every batch starts
        // at the same point of the loop's body.
        let sizes = batches.lock().unwrap().clone();
        assert_eq!(sizes, vec![1000; 2], "{sizes:?}");
        assert_eq!(rt.pending_len(), 3000 - 2000);
        rt.flush().unwrap();
        assert_eq!(batches.lock().unwrap().iter().sum::<usize>(), 3000);
    }

    #[test]
    fn bad_submissions_are_rejected_whole() {
        let (mut rt, _) = runtime();
        let b = rt.new_base(DType::F64, 4).unwrap();
        let f = rt.new_base(DType::F32, 4).unwrap();
        let bad =
            Instruction::new(Opcode::Add, [View::of_base(b).into(), View::of_base(f).into(), Scalar::F64(1.0).into()]);
        let e = rt.submit(vec![add_one(b), bad]).unwrap_err();
        assert!(matches!(e, Error::InvalidInstruction { index: Some(1), operand: Some(1), .. }), "{e}");
        assert_eq!(rt.stats().instructions, 0);
    }

    #[test]
    fn use_after_free_is_an_error() {
        let (mut rt, _) = runtime();
        let b = rt.new_base(DType::F64, 4).unwrap();
        rt.free(b.id).unwrap();
        let e = rt.submit(vec![add_one(b)]).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(matches!(rt.sync(b.id), Err(Error::UnknownBase(_))));
        let c = rt.new_base(DType::F64, 4).unwrap();
        let free_then_use = vec![Instruction::new(Opcode::Free, [View::of_base(c).into()]), add_one(c)];
        let e = rt.submit(free_then_use).unwrap_err();
        assert!(e.to_string().contains("instruction 1"), "{e}");
        // The refused batch freed nothing: its base is still live and usable.
        assert_eq!(rt.live_bases(), 1);
        rt.submit(vec![add_one(c), add_one(c)]).unwrap();
        rt.sync(c.id).unwrap();
        // Writing, syncing and freeing a base in one batch ends it.
        let free = Instruction::new(Opcode::Free, [View::of_base(c).into()]);
        let sync = Instruction::new(Opcode::Sync, [View::of_base(c).into()]);
        rt.submit(vec![add_one(c), sync, free]).unwrap();
        assert_eq!(rt.live_bases(), 0);
        assert!(matches!(rt.sync(c.id), Err(Error::UnknownBase(_))));
    }

    #[test]
    fn host_writes_make_the_base_current_and_partial_writes_keep_the_rest() {
        let (mut rt, _) = runtime();
        let b = rt.new_base(DType::F64, 4).unwrap();
        let bytes: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_ne_bytes()).collect();
        rt.write(b.id, 0, &bytes).unwrap();
        assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &[1.0, 2.0, 3.0, 4.0]);
        rt.write(b.id, 1, &9.0f64.to_ne_bytes()).unwrap();
        assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &[1.0, 9.0, 3.0, 4.0]);
        assert!(rt.write(b.id, 4, &9.0f64.to_ne_bytes()).is_err());
        assert!(rt.write(b.id, 0, &[0u8; 3]).is_err());
    }

    #[test]
    fn a_whole_write_runs_only_queued_work_that_uses_the_base() {
        let (mut rt, batches) = runtime();
        let (a, b) = (rt.new_base(DType::F64, 4).unwrap(), rt.new_base(DType::F64, 4).unwrap());
        let bytes: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_ne_bytes()).collect();
        rt.submit(vec![add_one(a)]).unwrap();
        // Nothing queued uses b: its write runs nothing, and a's work stays queued.
        rt.write(b.id, 0, &bytes).unwrap();
        assert!(batches.lock().unwrap().is_empty());
        assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &[1.0, 2.0, 3.0, 4.0]);
        // The queued add of a reads a before the write: it runs first.
        rt.write(a.id, 0, &bytes).unwrap();
        assert_eq!(batches.lock().unwrap().len(), 1);
        assert_eq!(rt.host_slice::<f64>(a.id).unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn extensions_must_be_implemented() {
        let (mut rt, _) = runtime();
        assert_eq!(rt.register_extension("known").unwrap(), Opcode::Extension(0));
        assert_eq!(rt.register_extension("known").unwrap(), Opcode::Extension(0));
        assert!(matches!(rt.register_extension("unknown"), Err(Error::Unsupported(_))));
        let b = rt.new_base(DType::F64, 4).unwrap();
        let e = rt.submit(vec![Instruction::new(Opcode::Extension(5), [View::of_base(b).into()])]).unwrap_err();
        assert!(matches!(e, Error::UnknownOpcode(_)));
    }

    #[test]
    fn known_extensions_are_checked_at_submit() {
        let (mut rt, batches) = runtime();
        let matmul = rt.register_extension(vm_ir::extension::MATMUL).unwrap();
        let known = rt.register_extension("known").unwrap();
        let b = rt.new_base(DType::F64, 4).unwrap();
        let square = View::new(b, 0, &[2, 2], &[2, 1]).unwrap();
        // One operand: rejected by the submit, with the instruction's position, and nothing queued.
        let e = rt.submit(vec![add_one(b), Instruction::new(matmul, [square.clone().into()])]).unwrap_err();
        assert!(matches!(e, Error::InvalidInstruction { index: Some(1), .. }), "{e}");
        assert!(e.to_string().contains("matmul takes 3 operands (out, a, b), got 1"), "{e}");
        let e = rt.submit_one(Instruction::new(matmul, [square.clone().into(), square.clone().into()])).unwrap_err();
        assert!(e.to_string().contains("got 2"), "{e}");
        assert_eq!(rt.stats().instructions, 0);
        // A valid call is queued; a method the VM has no rule for is left to its engine.
        let ok = Instruction::new(matmul, [square.clone().into(), square.clone().into(), square.into()]);
        rt.submit(vec![ok]).unwrap();
        rt.submit_one(Instruction::new(known, [View::of_base(b).into()])).unwrap();
        rt.flush().unwrap();
        assert_eq!(*batches.lock().unwrap(), vec![2]);
    }
}
