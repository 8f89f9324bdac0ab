//! Kernel formation and array contraction, shared by the engines that fuse instructions (the
//! Cranelift CPU engine and the OpenCL engine).
//!
//! A *kernel* is a run of consecutive instructions of a batch that can all be applied to one block
//! of their common iteration space at a time, block after block, without changing the result
//! (cphVB, thesis section 8.4.3). An instruction `N` joins the kernel `A` when
//!
//! 1. every input view of `N` shares no element with an output of `A`, or is exactly the same view
//!    (then, at each position of the iteration space, `N` reads what `A` wrote there);
//! 2. the output view of `N` shares no element with an input or output of `A`, or is exactly the
//!    same view;
//! 3. `N` has the kernel's iteration space (the same shape).
//!
//! Element-wise instructions, `range` and `random` iterate over their output's shape. A reduction
//! iterates over its *input's* shape and becomes a kernel output whose value is only complete after
//! every block ran (engines combine per-block partials and write the output last): so nothing else
//! in the kernel may touch a reduction's output, and a reduction's output may touch nothing the
//! kernel reads or writes. Reductions to a position (`argmin_reduce`, `argmax_reduce`), scans,
//! gathers, scatters and extension methods are not blockable: each runs alone
//! ([`Step::Single`]). System instructions never split a kernel: SYNC, DISCARD, FREE and NONE
//! seen while a kernel is open are carried out after it ([`Kernel::after`]).
//!
//! An element-wise instruction whose output partially overlaps one of its own inputs (`a[1:] =
//! a[:-1] + 1`) forms a kernel by itself; the engine must read such inputs in full before
//! writing (e.g. copy them first).
//!
//! *Array contraction*: a base whose every access in the batch lies inside one kernel, whose first
//! access is an element-wise write, whose every access is exactly that written view, which is
//! freed in the batch and never synced, is a temporary of that kernel ([`Kernel::temps`]): its
//! values live in registers and it is never allocated.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use vm_ir::DType;
use vm_ir::instr::{Instruction, Operand};
use vm_ir::opcode::{Kind, Opcode};
use vm_ir::view::{BaseId, Overlap, Shape, View};

/// Limits of kernel formation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The most instructions one kernel may hold (longer runs are cut; 0 means no limit).
    pub max_instructions: usize,
    /// Float products (`multiply_reduce` of `float32`/`float64`) run alone ([`Step::Single`])
    /// for an engine that multiplies in order, as NumPy does: a running product that overflows
    /// or underflows makes the result depend on the order (`[1e30, 1e30, 0]` in float32 is NaN
    /// left to right and 0 in any order that multiplies the zero first), which per-block
    /// partials would change.
    pub ordered_float_products: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { max_instructions: 256, ordered_float_products: false }
    }
}

/// True for a float product (`multiply_reduce` into a `float32` or `float64` output).
pub fn is_float_product(instr: &Instruction) -> bool {
    instr.opcode == Opcode::MultiplyReduce
        && instr.output().is_some_and(|o| matches!(o.dtype(), DType::F32 | DType::F64))
}

/// A fused run of blockable instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// Positions in the batch of the kernel's instructions, in order.
    pub instrs: Vec<usize>,
    /// The common iteration shape (an element-wise output's shape, a reduction's input's shape).
    pub shape: Shape,
    /// Bases contracted to registers: never allocated, never written to memory.
    pub temps: Vec<BaseId>,
    /// Positions of system instructions met while the kernel was open, to carry out after it.
    pub after: Vec<usize>,
}

/// One thing for an engine to do, in batch order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Run a fused kernel, then its `after` system instructions.
    Kernel(Kernel),
    /// Run one non-blockable instruction (scan, gather, scatter, extension, reduction to a
    /// position, empty reduction).
    Single(usize),
    /// Carry out one system instruction (sync, discard, free, none) met outside any kernel.
    System(usize),
}

/// The iteration shape of a blockable instruction, or `None` when the instruction is not
/// blockable (scans, gathers, scatters, extensions, system instructions, reductions to a
/// position, reductions of nothing).
pub fn iteration_shape(instr: &Instruction) -> Option<Shape> {
    match instr.opcode.kind() {
        Kind::Unary | Kind::Binary | Kind::Select | Kind::Range | Kind::Random => {
            Some(Shape::from_slice(&instr.output()?.shape))
        }
        // A reduction to a position combines (value, position) pairs, which kernels do not
        // carry: engines run `argmin_reduce` and `argmax_reduce` alone.
        Kind::Reduce if instr.opcode.is_arg_reduce() => None,
        Kind::Reduce => {
            let input = instr.operands.get(1)?.as_view()?;
            // A reduction of nothing fills its output with the identity: nothing to iterate over.
            (input.nelem() > 0).then(|| Shape::from_slice(&input.shape))
        }
        _ => None,
    }
}

/// True when the instruction must run in a kernel of its own: an element-wise instruction whose
/// output partially overlaps one of its own inputs.
pub fn needs_isolation(instr: &Instruction) -> bool {
    instr.opcode.kind().is_elementwise() && instr.output_partially_overlaps_input()
}

/// The most distinct views of one base in a kernel. Each instruction joining a kernel is
/// checked against every view of the bases it touches, so a loop storing element by element
/// (`m[i, j] = x`, a view per element) would cost quadratic time in the kernel's length; real
/// kernels (stencils, broadcasts) use a handful of views per base.
const MAX_VIEWS_PER_BASE: usize = 64;

/// What the open kernel reads and writes, by base.
#[derive(Default)]
struct Footprint<'a> {
    /// Per base: (view, access) for every distinct access.
    views: HashMap<BaseId, Vec<(&'a View, Access)>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Access {
    Read,
    Write,
    ReduceOut,
}

impl<'a> Footprint<'a> {
    fn add(&mut self, v: &'a View, a: Access) {
        let list = self.views.entry(v.base.id).or_default();
        if !list.iter().any(|(w, b)| *b == a && *w == v) {
            list.push((v, a));
        }
    }

    /// True when `v` would be one view too many of its base (see [`MAX_VIEWS_PER_BASE`]).
    fn crowded(&self, v: &View) -> bool {
        self.views
            .get(&v.base.id)
            .is_some_and(|list| list.len() >= MAX_VIEWS_PER_BASE && !list.iter().any(|(w, _)| *w == v))
    }

    /// True when `instr` may join a kernel with this footprint (rules 1 and 2).
    fn admits(&self, instr: &Instruction) -> bool {
        let reduce = instr.opcode.kind() == Kind::Reduce;
        if instr.operands.iter().filter_map(Operand::as_view).any(|v| self.crowded(v)) {
            return false;
        }
        for input in instr.inputs().iter().filter_map(|o| o.as_view()) {
            for (w, a) in self.views.get(&input.base.id).into_iter().flatten() {
                // Reads never conflict with reads; a write may be read back only through
                // exactly its own view; a reduction's output not at all.
                let ok = matches!(
                    (a, input.overlap(w)),
                    (_, Overlap::Disjoint) | (Access::Read, _) | (Access::Write, Overlap::Identical)
                );
                if !ok {
                    return false;
                }
            }
        }
        if let Some(out) = instr.output() {
            for (w, a) in self.views.get(&out.base.id).into_iter().flatten() {
                let ok = match out.overlap(w) {
                    Overlap::Disjoint => true,
                    Overlap::Identical => !reduce && *a != Access::ReduceOut,
                    Overlap::Partial => false,
                };
                if !ok {
                    return false;
                }
            }
        }
        true
    }

    /// True when `instr` may not run before the instructions of this footprint: it writes
    /// something they touch or reads something they write.
    fn conflicts(&self, instr: &Instruction) -> bool {
        let touches = |v: &View, only_writes: bool| {
            self.views
                .get(&v.base.id)
                .into_iter()
                .flatten()
                .any(|(w, a)| (!only_writes || *a != Access::Read) && v.overlap(w) != Overlap::Disjoint)
        };
        instr.inputs().iter().filter_map(|o| o.as_view()).any(|v| touches(v, true))
            || instr.output().is_some_and(|o| touches(o, false))
    }

    /// Records a deferred instruction: a system instruction as writing its view.
    fn record_deferred(&mut self, instr: &'a Instruction) {
        if instr.opcode.is_system() {
            instr.views().for_each(|v| self.add(v, Access::Write));
        } else {
            self.record(instr);
        }
    }

    fn record(&mut self, instr: &'a Instruction) {
        for input in instr.inputs().iter().filter_map(|o| o.as_view()) {
            self.add(input, Access::Read);
        }
        if let Some(out) = instr.output() {
            let a = if instr.opcode.kind() == Kind::Reduce { Access::ReduceOut } else { Access::Write };
            self.add(out, a);
        }
    }
}

/// The most instructions kernel formation sets aside, to run after the open kernel, while it
/// looks further for instructions that join it (see [`partition`]).
const DEFER_WINDOW: usize = 64;

/// The most instructions set aside in a row, none joining the open kernel in between, before
/// it closes: a loop whose iterations each form kernels of their own (a product summed into
/// one element of the output per iteration) would otherwise look [`DEFER_WINDOW`] instructions
/// ahead for every kernel, and set each instruction aside that many times.
const DEFER_STALL: usize = 16;

/// How far [`continues`] follows a chain of instructions feeding each other.
const CHAIN: usize = 4;

/// True when the instruction at `i` continues the work of the kernel with footprint `fp`: it
/// reads something the kernel writes, or feeds, through a short chain of the instructions right
/// after it, one that does. While instructions wait, only such instructions move ahead of them:
/// an independent one (a mask of a later time step, say) would be computed early into memory.
fn continues(facts: &Facts<'_>, i: usize, fp: &Footprint<'_>) -> bool {
    let reads_kernel = |instr: &Instruction| {
        instr
            .inputs()
            .iter()
            .filter_map(|o| o.as_view())
            .any(|v| fp.views.get(&v.base.id).is_some_and(|list| list.iter().any(|(_, a)| *a != Access::Read)))
    };
    let mut at = i;
    for _ in 0..CHAIN {
        if reads_kernel(&facts.batch[at]) {
            return true;
        }
        match facts.fed[at] {
            Some(next) => at = next,
            None => return false,
        }
    }
    false
}

/// What kernel formation asks of each instruction of a batch, found once: an instruction set
/// aside is looked at again by every kernel opened while it waits.
struct Facts<'a> {
    batch: &'a [Instruction],
    /// The iteration shape of each instruction that may join a kernel.
    shapes: Vec<Option<Shape>>,
    /// For each instruction, the next one that is not a system instruction, when it reads the
    /// first one's output (the next link of a chain, for [`continues`]).
    fed: Vec<Option<usize>>,
}

impl<'a> Facts<'a> {
    fn new(batch: &'a [Instruction], options: &Options) -> Facts<'a> {
        let shapes = batch
            .iter()
            .map(|instr| {
                let ordered = options.ordered_float_products && is_float_product(instr);
                iteration_shape(instr).filter(|_| !ordered)
            })
            .collect();
        let mut fed = vec![None; batch.len()];
        let mut next: Option<usize> = None;
        for (i, instr) in batch.iter().enumerate().rev() {
            fed[i] = next.filter(|&n| {
                instr.output().is_some_and(|out| {
                    batch[n].inputs().iter().filter_map(|o| o.as_view()).any(|v| v.base.id == out.base.id)
                })
            });
            if !instr.opcode.is_system() {
                next = Some(i);
            }
        }
        Facts { batch, shapes, fed }
    }

    /// The first position after `i`, within `budget` instructions that are not system ones, of
    /// an instruction of iteration shape `shape` that [`continues`] the work of the kernel with
    /// footprint `fp`: what could still join the kernel while instructions wait. Without one,
    /// setting instructions aside only delays them (and costs a look at each again later).
    fn candidate(&self, i: usize, budget: usize, shape: &Shape, fp: &Footprint<'_>) -> Option<usize> {
        (i + 1..self.batch.len())
            .filter(|&j| !self.batch[j].opcode.is_system())
            .take(budget)
            .find(|&j| self.shapes[j].as_ref() == Some(shape) && continues(self, j, fp))
    }
}

/// The kernel being formed, with what it touches and the instructions set aside meanwhile.
struct Open<'a> {
    kernel: Kernel,
    footprint: Footprint<'a>,
    isolated: bool,
    /// What the system instructions carried out after the kernel touch (as writes).
    after_footprint: Footprint<'a>,
    /// Positions set aside (in order) to run after the kernel, and what they touch.
    deferred: Vec<usize>,
    deferred_footprint: Footprint<'a>,
    /// Instructions set aside since the last one joined the kernel (or what runs before it).
    stalled: usize,
    /// Instructions over a broadcast part of the kernel's shape moved ahead of it (see
    /// [`partition`]), formed into kernels of their own that run before it.
    prelude: Vec<Kernel>,
    prelude_footprint: Footprint<'a>,
    /// The position of an instruction ahead that may join the kernel (its shape, and it
    /// [`continues`] the kernel's work), found when the first instruction had to be set aside.
    candidate: Option<usize>,
}

/// True when an instruction of iteration shape `small` works on a part of `big` that a kernel
/// of shape `big` broadcasts (each extent 1 or `big`'s, right-aligned, and fewer elements): a
/// profile of shape `(1, 1, n)` over an `(l, m, n)` grid, or a row's coefficients.
fn broadcast_part(small: &[usize], big: &[usize]) -> bool {
    small.len() <= big.len()
        && small.iter().rev().zip(big.iter().rev()).all(|(&s, &b)| s == 1 || s == b)
        && small.iter().product::<usize>() < big.iter().product::<usize>()
}

/// Cuts `batch` into kernels and single instructions and finds each kernel's contracted
/// temporaries. The batch must be valid ([`vm_ir::instr::validate_batch`]).
///
/// Steps come in execution order. An element-wise instruction that cannot join the open kernel
/// (another iteration shape, or it reads the kernel's reduction) is set aside, up to
/// [`DEFER_WINDOW`] instructions, with the system instructions after it, and later instructions
/// that can join the kernel, may run before everything set aside (they write nothing those touch
/// and read nothing those write) and continue the kernel's work ([`continues`]) still join: the
/// set-aside instructions run after the kernel, in their order. A time step that alternates 2-d work with 1-d updates so forms one 2-d kernel.
/// Nothing is set aside when no instruction within the window ahead could join (of the kernel's
/// shape, continuing its work): a loop whose iterations each form kernels of their own (a
/// convolution over output positions) then looks at each instruction once or twice, not once
/// per kernel opened while it waits.
/// An element-wise instruction over a broadcast part of the open kernel's shape (`(1, 1, n)` of
/// `(l, m, n)`) that reads nothing the kernel, the set-aside instructions or the system
/// instructions after the kernel write, and writes nothing they touch, moves ahead of the
/// kernel instead, into kernels of its own run before it: a profile's terms computed between
/// the grid's operations that read them do not cut the grid's kernel.
/// A non-blockable instruction, a conflict, a full window, [`DEFER_STALL`] instructions set aside
/// in a row or the end of the batch closes the kernel; then the set-aside instructions are
/// formed into steps first.
pub fn partition(batch: &[Instruction], options: &Options) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut open: Option<Open> = None;
    let facts = Facts::new(batch, options);
    let mut todo: std::collections::VecDeque<usize> = (0..batch.len()).collect();
    // Closes the open kernel (after what was moved ahead of it); its set-aside instructions go
    // back to the front of `todo`.
    let close = |open: &mut Option<Open>, steps: &mut Vec<Step>, todo: &mut std::collections::VecDeque<usize>| {
        if let Some(o) = open.take() {
            steps.extend(o.prelude.into_iter().map(Step::Kernel));
            steps.push(Step::Kernel(o.kernel));
            for &i in o.deferred.iter().rev() {
                todo.push_front(i);
            }
        }
    };
    loop {
        let Some(i) = todo.pop_front() else {
            if open.is_none() {
                break;
            }
            close(&mut open, &mut steps, &mut todo);
            continue;
        };
        let instr = &batch[i];
        if instr.opcode.is_system() {
            match &mut open {
                Some(o) if o.deferred.is_empty() => {
                    o.kernel.after.push(i);
                    o.after_footprint.record_deferred(instr);
                }
                Some(o) => {
                    o.deferred.push(i);
                    o.deferred_footprint.record_deferred(instr);
                }
                None => steps.push(Step::System(i)),
            }
            continue;
        }
        let Some(shape) = facts.shapes[i].clone() else {
            // After the open kernel (and what waits on it) has been formed.
            if open.is_some() {
                todo.push_front(i);
                close(&mut open, &mut steps, &mut todo);
            } else {
                steps.push(Step::Single(i));
            }
            continue;
        };
        let isolated = needs_isolation(instr);
        // Work on a broadcast part of the open kernel's shape that needs nothing the kernel,
        // what waits for it or what follows it computes, and changes nothing they touch, runs
        // before the kernel instead of cutting it: a profile's terms (`p * c + d` of shape
        // (1, 1, n)) between the grid's operations that read them.
        if let Some(o) = open.as_mut()
            && !isolated
            && !o.isolated
            && broadcast_part(&shape, &o.kernel.shape)
            && !o.footprint.conflicts(instr)
            && !o.deferred_footprint.conflicts(instr)
            && !o.after_footprint.conflicts(instr)
        {
            let joins_last = o.prelude.last().is_some_and(|k| {
                k.shape == shape
                    && (options.max_instructions == 0 || k.instrs.len() < options.max_instructions)
                    && o.prelude_footprint.admits(instr)
            });
            if !joins_last {
                o.prelude.push(Kernel { instrs: Vec::new(), shape, temps: Vec::new(), after: Vec::new() });
                o.prelude_footprint = Footprint::default();
            }
            o.prelude.last_mut().expect("just ensured").instrs.push(i);
            o.prelude_footprint.record(instr);
            o.stalled = 0;
            continue;
        }
        let (joins, defers) = match &open {
            Some(o) => {
                let fits = !o.isolated
                    && !isolated
                    && o.kernel.shape == shape
                    && (options.max_instructions == 0 || o.kernel.instrs.len() < options.max_instructions)
                    && o.footprint.admits(instr);
                // Checked only for an instruction that fits: the set-aside instructions may be
                // many views of one base, each compared with the instruction's.
                let joins = fits
                    && (o.deferred.is_empty()
                        || (!o.deferred_footprint.conflicts(instr) && continues(&facts, i, &o.footprint)));
                (joins, !joins && !o.isolated && o.deferred.len() < DEFER_WINDOW && o.stalled < DEFER_STALL)
            }
            None => (false, false),
        };
        // Setting aside is worth it only while an instruction ahead may still join.
        let defers = defers && {
            let o = open.as_mut().expect("a kernel is open");
            if o.candidate.is_none_or(|c| c <= i) {
                o.candidate = facts.candidate(i, DEFER_WINDOW - o.deferred.len(), &o.kernel.shape, &o.footprint);
            }
            o.candidate.is_some()
        };
        if defers {
            let o = open.as_mut().expect("a kernel is open");
            o.deferred.push(i);
            o.deferred_footprint.record_deferred(instr);
            o.stalled += 1;
            continue;
        }
        if !joins {
            // A new kernel, once the open one (and what waits on it) has been formed.
            if open.is_some() {
                todo.push_front(i);
                close(&mut open, &mut steps, &mut todo);
                continue;
            }
            let kernel = Kernel { instrs: Vec::new(), shape, temps: Vec::new(), after: Vec::new() };
            open = Some(Open {
                kernel,
                footprint: Footprint::default(),
                isolated,
                after_footprint: Footprint::default(),
                deferred: Vec::new(),
                deferred_footprint: Footprint::default(),
                stalled: 0,
                prelude: Vec::new(),
                prelude_footprint: Footprint::default(),
                candidate: None,
            });
        }
        let o = open.as_mut().expect("a kernel is open");
        o.kernel.instrs.push(i);
        o.footprint.record(instr);
        o.stalled = 0;
        o.candidate = None; // (what may join changed with the footprint)
    }
    contract(batch, &mut steps);
    steps
}

/// Per base: every access in the batch, and whether it is synced or freed.
#[derive(Default)]
struct BaseUse<'a> {
    /// (instruction position, view, written element-wise, written as a reduction).
    accesses: Vec<(usize, &'a View, bool, bool)>,
    synced: bool,
    freed: bool,
}

/// Fills in [`Kernel::temps`]: see the module doc for the rule.
fn contract(batch: &[Instruction], steps: &mut [Step]) {
    let mut uses: HashMap<BaseId, BaseUse> = HashMap::default();
    for (i, instr) in batch.iter().enumerate() {
        match instr.opcode {
            Opcode::Sync | Opcode::Free => {
                if let Some(v) = instr.operands.first().and_then(|o| o.as_view()) {
                    let u = uses.entry(v.base.id).or_default();
                    if instr.opcode == Opcode::Sync {
                        u.synced = true;
                    } else {
                        u.freed = true;
                    }
                }
                continue;
            }
            op if op.is_system() => continue,
            _ => {}
        }
        // Inputs first: an instruction reads before it writes.
        let out = instr.output();
        let first_data = usize::from(out.is_some());
        for v in instr.operands.iter().skip(first_data).filter_map(|o| o.as_view()) {
            uses.entry(v.base.id).or_default().accesses.push((i, v, false, false));
        }
        let reduce = instr.opcode.kind() == Kind::Reduce;
        if let Some(o) = out {
            uses.entry(o.base.id).or_default().accesses.push((i, o, !reduce, reduce));
        }
    }
    for step in steps {
        let Step::Kernel(k) = step else { continue };
        let (Some(&first), Some(&last)) = (k.instrs.first(), k.instrs.last()) else { continue };
        let mut temps: Vec<BaseId> = Vec::new();
        let mut seen: HashSet<BaseId> = HashSet::default();
        for &i in &k.instrs {
            let Some(out) = batch[i].output() else { continue };
            let id = out.base.id;
            if !seen.insert(id) {
                continue;
            }
            let u = &uses[&id];
            let (_, written, elementwise, _) = u.accesses[0];
            let ok = u.freed
                && !u.synced
                && elementwise
                && u.accesses.iter().all(|(j, v, _, red)| {
                    (first..=last).contains(j)
                        && k.instrs.binary_search(j).is_ok()
                        && !red
                        && v.shape == k.shape
                        && v.is_identical(written)
                });
            if ok {
                temps.push(id);
            }
        }
        k.temps = temps;
    }
}

/// Kernel formation with memory: a batch whose structure was partitioned before gets the same
/// steps again without the analysis (iterative programs submit the same batch shape over and
/// over; the per-instruction cost of forming kernels is the weak spot of small arrays).
///
/// The structure is everything [`partition`] reads: opcodes, operand kinds and dtypes, and every
/// view's start, shape and strides with its base numbered by first appearance in the batch. Base
/// ids, sizes and constant values are not part of it; contracted temporaries are remembered by
/// that numbering and renamed to the new batch's bases on a hit.
#[derive(Debug, Default)]
pub struct PartitionCache {
    /// By the hash of their signature: the signature, the entry's number (see
    /// [`PartitionCache::entry`]) and the steps, each kernel's temporaries named `BaseId(k)` for
    /// the `k`-th base of the batch in order of first appearance. Two signatures of one hash
    /// share a place: the later one takes it.
    entries: HashMap<u64, (Vec<u32>, u64, Vec<Step>)>,
    /// The number of the entry the last call used or made; entries are numbered from 1, never
    /// reused.
    entry: u64,
    next_entry: u64,
    /// Words held by the keys of `entries`.
    words: usize,
    /// Scratch: the current batch's signature and its bases in order of first appearance.
    signature: Signature,
    numbering: Numbering,
    /// Batches answered from the cache.
    pub hits: u64,
    /// Batches analysed.
    pub misses: u64,
}

/// `steps` with every kernel's temporaries renamed by `rename`.
fn renamed(steps: &[Step], rename: impl Fn(BaseId) -> BaseId) -> Vec<Step> {
    let mut out = steps.to_vec();
    for step in &mut out {
        if let Step::Kernel(k) = step {
            k.temps.iter_mut().for_each(|t| *t = rename(*t));
        }
    }
    out
}

impl PartitionCache {
    /// Entries kept before the cache starts over.
    const MAX_ENTRIES: usize = 64;
    /// Signature words kept (all keys together) before the cache starts over.
    const MAX_WORDS: usize = 1 << 21;

    /// The steps of [`partition`]`(batch, options)`, from the cache when `batch` has the structure
    /// of a batch partitioned before with the same options.
    pub fn partition(&mut self, batch: &[Instruction], options: &Options) -> Vec<Step> {
        self.partition_if(batch, options, |_| true).expect("analysed when not cached")
    }

    /// [`PartitionCache::partition`] when `batch`'s structure is cached; when it is not, the
    /// analysis only if `analyse`, given the structure's hash, says so (else `None`: nothing
    /// analysed or cached, an engine running the batch another way).
    pub fn partition_if(
        &mut self,
        batch: &[Instruction],
        options: &Options,
        analyse: impl FnOnce(u64) -> bool,
    ) -> Option<Vec<Step>> {
        self.sign(batch, options);
        if let Some((words, entry, cached)) = self.entries.get(&self.signature.hash)
            && *words == self.signature.words
        {
            self.hits += 1;
            self.entry = *entry;
            return Some(renamed(cached, |n| self.numbering.bases[n.0 as usize]));
        }
        if !analyse(self.signature.hash) {
            return None;
        }
        self.misses += 1;
        let steps = partition(batch, options);
        let numbered = renamed(&steps, |id| {
            BaseId(u64::from(self.numbering.get(id).expect("every base of the batch is numbered")))
        });
        if self.entries.len() >= Self::MAX_ENTRIES || self.words + self.signature.words.len() > Self::MAX_WORDS {
            self.entries.clear();
            self.words = 0;
        }
        self.words += self.signature.words.len();
        self.next_entry += 1;
        self.entry = self.next_entry;
        if let Some((old, _, _)) =
            self.entries.insert(self.signature.hash, (self.signature.words.clone(), self.entry, numbered))
        {
            self.words -= old.len();
        }
        Some(steps)
    }

    /// The number of the cache entry of the last batch partitioned: two batches get the same
    /// number exactly when they have the same structure (opcodes, dtypes, view layouts, the
    /// axes of reductions and scans, the pattern of shared bases; not base ids, sizes or the
    /// values of data constants), so an engine may key
    /// its own per-structure work (built kernel programs) on it. 0 before the first call.
    pub fn entry(&self) -> u64 {
        self.entry
    }

    /// The position of `id` among the bases of the last batch partitioned, in order of first
    /// appearance: the name of the base that is the same for batches of one entry.
    pub fn number_of(&self, id: BaseId) -> Option<u32> {
        self.numbering.get(id)
    }

    /// Fills `signature` and `numbering` for `batch`.
    fn sign(&mut self, batch: &[Instruction], options: &Options) {
        self.numbering.start(batch.len());
        let sig = &mut self.signature;
        sig.start(1 + 8 * batch.len());
        sig.push(options.max_instructions as u64);
        sig.push(u64::from(options.ordered_float_products));
        for instr in batch {
            sig.push(u64::from(instr.opcode.id()) << 8 | instr.operands.len() as u64);
            // The axis of a reduction or scan is structure, not data: reductions of a cube along
            // different axes have operands of the same layouts.
            if let Some(axis) = instr.axis() {
                sig.push(axis as u64);
            }
            for o in &instr.operands {
                match o {
                    Operand::Const(s) => sig.push(u64::from(s.dtype().id()) << 1 | 1),
                    Operand::View(v) => {
                        let n = u64::from(self.numbering.number(v.base.id));
                        let ndim = v.ndim();
                        sig.push(n << 17 | u64::from(v.dtype().id()) << 9 | (ndim.min(255) as u64) << 1);
                        if ndim >= 255 {
                            sig.push(ndim as u64);
                        }
                        sig.push(zigzag(v.start));
                        for (&e, &s) in v.shape.iter().zip(&v.stride) {
                            sig.push(e as u64);
                            sig.push(zigzag(s));
                        }
                    }
                }
            }
        }
    }
}

/// `x` as an unsigned number small when `|x|` is small.
fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

/// A batch's structure as 32-bit words, hashed as it is written. A number below `u32::MAX`
/// takes one word; a larger one takes three (`u32::MAX`, then its low and high halves), so
/// equal word sequences mean equal number sequences.
#[derive(Debug, Default)]
struct Signature {
    words: Vec<u32>,
    hash: u64,
}

impl Signature {
    fn start(&mut self, capacity: usize) {
        self.words.clear();
        self.words.reserve(capacity);
        self.hash = 0;
    }

    #[inline]
    fn push(&mut self, x: u64) {
        if x < u64::from(u32::MAX) {
            self.word(x as u32);
        } else {
            self.word(u32::MAX);
            self.word(x as u32);
            self.word((x >> 32) as u32);
        }
    }

    #[inline]
    fn word(&mut self, w: u32) {
        self.words.push(w);
        self.hash = (self.hash.rotate_left(5) ^ u64::from(w)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The bases of one batch numbered by first appearance: an open-addressing table keyed by base
/// id (a multiplicative hash, linear probing), its slots stamped with the batch they belong to so
/// starting a batch clears nothing. The per-view lookup of [`PartitionCache::sign`], on the path
/// of every instruction, costs a multiply and a compare or two.
#[derive(Debug, Default)]
struct Numbering {
    /// `(id, number, stamp)`; a slot belongs to the current batch when its stamp is `stamp`.
    slots: Vec<(u64, u32, u32)>,
    stamp: u32,
    /// The bases in order of first appearance (`bases[n]` is numbered `n`).
    bases: Vec<BaseId>,
}

impl Numbering {
    /// Starts numbering a batch of `len` instructions.
    fn start(&mut self, len: usize) {
        self.bases.clear();
        self.stamp = self.stamp.wrapping_add(1);
        let want = (2 * len + 16).next_power_of_two();
        if self.stamp == 0 || self.slots.len() < want {
            // A wrapped stamp could meet a slot of the batch 2^32 batches ago: start clean.
            self.slots = vec![(0, 0, 0); want.max(self.slots.len())];
            self.stamp = 1;
        }
    }

    fn slot(&self, id: u64) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The number of `id`, numbering it next when it is new to the batch.
    fn number(&mut self, id: BaseId) -> u32 {
        if 2 * (self.bases.len() + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slot(id.0);
        loop {
            let (key, n, stamp) = self.slots[i];
            if stamp != self.stamp {
                let n = self.bases.len() as u32;
                self.slots[i] = (id.0, n, self.stamp);
                self.bases.push(id);
                return n;
            }
            if key == id.0 {
                return n;
            }
            i = (i + 1) & mask;
        }
    }

    /// The number of `id` in the current batch.
    fn get(&self, id: BaseId) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slot(id.0);
        loop {
            let (key, n, stamp) = self.slots[i];
            if stamp != self.stamp {
                return None;
            }
            if key == id.0 {
                return Some(n);
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table, renumbering nothing.
    fn grow(&mut self) {
        let len = (2 * self.slots.len()).max(64);
        self.slots = vec![(0, 0, 0); len];
        self.stamp = 1;
        let bases = std::mem::take(&mut self.bases);
        for &id in &bases {
            self.number(id);
        }
        debug_assert_eq!(self.bases, bases);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::DType;
    use vm_ir::instr::Operand;
    use vm_ir::scalar::Scalar;
    use vm_ir::view::Base;

    fn base(id: u64, n: u64) -> Base {
        Base { id: BaseId(id), dtype: DType::F64, nelem: n }
    }

    fn v(b: Base, start: i64, shape: &[usize], stride: &[i64]) -> Operand {
        Operand::View(View::new(b, start, shape, stride).unwrap())
    }

    fn whole(b: Base) -> Operand {
        Operand::View(View::of_base(b))
    }

    fn ins(op: Opcode, ops: Vec<Operand>) -> Instruction {
        let i = Instruction::new(op, ops);
        i.validate().unwrap();
        i
    }

    fn kernels(steps: &[Step]) -> Vec<Vec<usize>> {
        steps
            .iter()
            .filter_map(|s| match s {
                Step::Kernel(k) => Some(k.instrs.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn element_by_element_stores_form_kernels_of_a_bounded_number_of_views() {
        // m[i] = i for 100 elements: one 0-d view each; kernels stop at the view limit.
        let m = base(1, 100);
        let batch: Vec<Instruction> = (0..100)
            .map(|i| ins(Opcode::Identity, vec![v(m, i, &[], &[]), Operand::Const(Scalar::F64(i as f64))]))
            .collect();
        let ks = kernels(&partition(&batch, &Options::default()));
        assert_eq!(ks.iter().map(Vec::len).sum::<usize>(), 100);
        assert!(ks.iter().all(|k| k.len() <= MAX_VIEWS_PER_BASE), "{:?}", ks.iter().map(Vec::len).collect::<Vec<_>>());
        assert_eq!(ks.len(), 100usize.div_ceil(MAX_VIEWS_PER_BASE));
        // Many instructions through few views still fuse without limit.
        let (a, b) = (base(2, 8), base(3, 8));
        let batch: Vec<Instruction> = (0..100)
            .map(|i| {
                let (src, dst) = if i % 2 == 0 { (a, b) } else { (b, a) };
                ins(Opcode::Add, vec![whole(dst), whole(src), Operand::Const(Scalar::F64(1.0))])
            })
            .collect();
        assert_eq!(kernels(&partition(&batch, &Options::default())), vec![(0..100).collect::<Vec<_>>()]);
    }

    #[test]
    fn numbering_is_by_first_appearance_across_growth_and_batches() {
        let mut n = Numbering::default();
        n.start(1);
        let ids: Vec<u64> = (0..500).map(|i| (i * 7919) % 1013 + (i % 3) * (1 << 40)).collect();
        let mut firsts: Vec<u64> = Vec::new();
        for &id in ids.iter().chain(&ids) {
            let k = n.number(BaseId(id));
            let want = firsts.iter().position(|&f| f == id).unwrap_or_else(|| {
                firsts.push(id);
                firsts.len() - 1
            });
            assert_eq!(k as usize, want, "base {id}");
        }
        assert_eq!(n.bases.iter().map(|b| b.0).collect::<Vec<_>>(), firsts);
        assert_eq!(n.get(BaseId(ids[3])), Some(3));
        // A new batch forgets the last one without clearing the table.
        n.start(1);
        assert_eq!(n.get(BaseId(ids[3])), None);
        assert_eq!(n.number(BaseId(ids[3])), 0);
        assert_eq!(n.number(BaseId(5)), 1);
        assert_eq!(n.get(BaseId(ids[3])), Some(0));
    }

    #[test]
    fn independent_elementwise_instructions_fuse() {
        let (a, b, c, d) = (base(1, 100), base(2, 100), base(3, 100), base(4, 100));
        let batch = vec![
            ins(Opcode::Add, vec![whole(c), whole(a), whole(b)]),
            ins(Opcode::Multiply, vec![whole(d), whole(c), whole(a)]),
            ins(Opcode::Sqrt, vec![whole(a), whole(d)]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1, 2]]);
    }

    #[test]
    fn stencil_shifted_read_of_an_output_splits() {
        // work = center + north; center[:] = work; then read north (shifted by one row) again.
        let grid = base(1, 12 * 12);
        let work = base(2, 100);
        let center = v(grid, 13, &[10, 10], &[12, 1]);
        let north = v(grid, 1, &[10, 10], &[12, 1]);
        let w = v(work, 0, &[10, 10], &[10, 1]);
        let batch = vec![
            ins(Opcode::Add, vec![w.clone(), center.clone(), north.clone()]),
            ins(Opcode::Identity, vec![center.clone(), w.clone()]),
            ins(Opcode::Add, vec![w.clone(), north.clone(), center.clone()]),
        ];
        let steps = partition(&batch, &Options::default());
        // center is written identically to what instr 0 reads, but partially overlaps north,
        // which instr 0 read: so the copy may not join; then instr 2 reads north, which partially
        // overlaps the copy's output.
        assert_eq!(kernels(&steps), vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn identical_views_fuse_and_shapes_must_agree() {
        let (a, b) = (base(1, 100), base(2, 100));
        let batch = vec![
            ins(Opcode::Add, vec![whole(a), whole(a), Scalar::F64(1.0).into()]),
            ins(Opcode::Multiply, vec![whole(b), whole(a), whole(a)]),
            ins(Opcode::Sqrt, vec![v(b, 0, &[10, 10], &[10, 1]), v(a, 0, &[10, 10], &[10, 1])]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn reductions_fuse_as_outputs_and_are_not_read_in_their_kernel() {
        let (a, t, s, u) = (base(1, 100), base(2, 100), base(3, 1), base(4, 1));
        let scalar_s = v(s, 0, &[], &[]);
        let batch = vec![
            ins(Opcode::Multiply, vec![whole(t), whole(a), whole(a)]),
            ins(Opcode::AddReduce, vec![scalar_s.clone(), whole(t), Scalar::I64(0).into()]),
            ins(Opcode::Free, vec![whole(t)]),
            ins(Opcode::MaximumReduce, vec![v(u, 0, &[], &[]), whole(a), Scalar::I64(0).into()]),
            // Reads the reduction's output (broadcast): not before the kernel has finished.
            ins(Opcode::Add, vec![whole(base(6, 100)), whole(a), v(s, 0, &[100], &[0])]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1, 3], vec![4]]);
        let Step::Kernel(k) = &steps[0] else { panic!() };
        assert_eq!(k.temps, vec![BaseId(2)], "t is created, consumed and freed in the kernel");
        assert_eq!(k.after, vec![2]);
    }

    #[test]
    fn instructions_of_another_shape_wait_while_later_ones_join_the_kernel() {
        // A time step: 2-d work reduced along axis 0, a 1-d update that reads the reduction,
        // then more 2-d work from the first: the 2-d work forms one kernel, the 1-d updates run
        // after it.
        let (p, f, g, s1, s2, vel) = (base(1, 100), base(2, 100), base(3, 100), base(4, 10), base(5, 10), base(6, 10));
        let sq = |b| v(b, 0, &[10, 10], &[10, 1]);
        let row = |b| v(b, 0, &[10], &[1]);
        let step = |independent: bool| {
            let second = if independent { sq(p) } else { sq(f) };
            vec![
                ins(Opcode::Multiply, vec![sq(f), sq(p), sq(p)]),
                ins(Opcode::AddReduce, vec![row(s1), sq(f), Scalar::I64(0).into()]),
                ins(Opcode::Add, vec![row(vel), row(vel), row(s1)]),
                ins(Opcode::Add, vec![sq(g), second, sq(p)]),
                ins(Opcode::AddReduce, vec![row(s2), sq(g), Scalar::I64(0).into()]),
                ins(Opcode::Free, vec![whole(f)]),
                ins(Opcode::Free, vec![whole(g)]),
                ins(Opcode::Add, vec![row(vel), row(vel), row(s2)]),
            ]
        };
        let steps = partition(&step(false), &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1, 3, 4], vec![2, 7]]);
        let Step::Kernel(k) = &steps[0] else { panic!() };
        assert_eq!(k.temps, vec![BaseId(2), BaseId(3)], "both 2-d temporaries contracted");
        // Work that does not continue the kernel's (it reads none of its results) does not move
        // ahead of the waiting update: computed early, its results would go to memory.
        let steps = partition(&step(true), &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1], vec![2], vec![3, 4], vec![7]]);
        // A later instruction that reads what a waiting one writes waits too, in order.
        let batch = vec![
            ins(Opcode::Multiply, vec![sq(f), sq(p), sq(p)]),
            ins(Opcode::AddReduce, vec![row(s1), sq(f), Scalar::I64(0).into()]),
            ins(Opcode::Add, vec![row(vel), row(s1), Scalar::F64(1.0).into()]),
            ins(Opcode::Add, vec![sq(g), sq(f), v(vel, 0, &[10, 10], &[0, 1])]),
            ins(Opcode::Sqrt, vec![sq(base(7, 100)), sq(f)]),
            // Writes what the waiting instruction 3 reads: waits after it.
            ins(Opcode::Sqrt, vec![sq(f), sq(p)]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1, 4], vec![2], vec![3, 5]]);
        // ... and one that writes what a waiting one reads.
        let batch = vec![
            ins(Opcode::Multiply, vec![sq(f), sq(p), sq(p)]),
            ins(Opcode::AddReduce, vec![row(s1), sq(f), Scalar::I64(0).into()]),
            ins(Opcode::Add, vec![row(vel), row(s1), row(p)]),
            ins(Opcode::Add, vec![sq(p), sq(p), sq(f)]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1], vec![2], vec![3]]);
    }

    #[test]
    fn work_on_a_broadcast_part_that_needs_nothing_of_the_kernel_runs_before_it() {
        // A grid's work reading a row's terms computed in between (`c = p * 2 + 1` of shape
        // (10,), then `g = f * c[None, :]`): the row's work moves ahead, the grid's stays one
        // kernel.
        let (p, f, g, c, t, vel) = (base(1, 100), base(2, 100), base(3, 100), base(4, 10), base(5, 10), base(6, 10));
        let sq = |b| v(b, 0, &[10, 10], &[10, 1]);
        let row = |b| v(b, 0, &[10], &[1]);
        let rows = |b| v(b, 0, &[10, 10], &[0, 1]);
        let batch = vec![
            ins(Opcode::Multiply, vec![sq(f), sq(p), sq(p)]),
            ins(Opcode::Multiply, vec![row(t), row(vel), Scalar::F64(2.0).into()]),
            ins(Opcode::Add, vec![row(c), row(t), Scalar::F64(1.0).into()]),
            ins(Opcode::Free, vec![whole(t)]),
            ins(Opcode::Multiply, vec![sq(g), sq(f), rows(c)]),
            ins(Opcode::Sqrt, vec![sq(p), sq(g)]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![1, 2], vec![0, 4, 5]]);
        let Step::Kernel(k) = &steps[0] else { panic!() };
        assert_eq!(k.temps, vec![BaseId(5)], "the row's temporary contracted in its own kernel");
        // Row work that reads the grid's (a row of it) or writes what the grid reads waits after
        // the kernel.
        for (row_out, row_in) in [(row(c), row(f)), (row(p), row(vel))] {
            let batch = vec![
                ins(Opcode::Multiply, vec![sq(f), sq(p), sq(p)]),
                ins(Opcode::Add, vec![row_out, row_in, Scalar::F64(1.0).into()]),
                ins(Opcode::Multiply, vec![sq(g), sq(f), sq(f)]),
            ];
            assert_eq!(kernels(&partition(&batch, &Options::default())), vec![vec![0, 2], vec![1]]);
        }
        // Nor does work of a shape that is not a broadcast part of the kernel's.
        let batch = vec![
            ins(Opcode::Multiply, vec![sq(f), sq(p), sq(p)]),
            ins(Opcode::Add, vec![v(c, 0, &[5], &[1]), v(vel, 0, &[5], &[1]), Scalar::F64(1.0).into()]),
            ins(Opcode::Multiply, vec![sq(g), sq(f), sq(f)]),
        ];
        assert_eq!(kernels(&partition(&batch, &Options::default())), vec![vec![0, 2], vec![1]]);
    }

    #[test]
    fn contraction_needs_a_free_and_no_sync_and_no_outside_use() {
        let (a, t1, t2, t3, out) = (base(1, 8), base(2, 8), base(3, 8), base(4, 8), base(5, 8));
        let batch = vec![
            ins(Opcode::Exp, vec![whole(t1), whole(a)]),
            ins(Opcode::Exp, vec![whole(t2), whole(a)]),
            ins(Opcode::Exp, vec![whole(t3), whole(a)]),
            ins(Opcode::Add, vec![whole(out), whole(t1), whole(t2)]),
            ins(Opcode::Add, vec![whole(out), whole(out), whole(t3)]),
            ins(Opcode::Sync, vec![whole(t2)]),
            ins(Opcode::Free, vec![whole(t1)]),
            ins(Opcode::Free, vec![whole(t2)]),
            ins(Opcode::AddAccumulate, vec![whole(a), whole(t3), Scalar::I64(0).into()]),
            ins(Opcode::Free, vec![whole(t3)]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0, 1, 2, 3, 4]]);
        let Step::Kernel(k) = &steps[0] else { panic!() };
        assert_eq!(k.temps, vec![BaseId(2)], "t2 is synced, t3 read by the scan");
        assert_eq!(k.after, vec![5, 6, 7]);
        assert_eq!(&steps[1..], &[Step::Single(8), Step::System(9)]);

        // A temporary whose first access reads it is not contracted.
        let batch = vec![
            ins(Opcode::Add, vec![whole(t1), whole(t1), whole(a)]),
            ins(Opcode::Add, vec![whole(out), whole(t1), whole(a)]),
            ins(Opcode::Free, vec![whole(t1)]),
        ];
        let steps = partition(&batch, &Options::default());
        let Step::Kernel(k) = &steps[0] else { panic!() };
        assert_eq!((k.instrs.len(), k.temps.len()), (2, 0));
    }

    #[test]
    fn self_overlapping_instructions_are_isolated() {
        let a = base(1, 10);
        let batch = vec![
            ins(Opcode::Sqrt, vec![whole(a), whole(a)]),
            ins(Opcode::Add, vec![v(a, 1, &[9], &[1]), v(a, 0, &[9], &[1]), Scalar::F64(1.0).into()]),
            ins(Opcode::Add, vec![v(a, 1, &[9], &[1]), v(a, 1, &[9], &[1]), Scalar::F64(1.0).into()]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(kernels(&steps), vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn non_blockable_instructions_run_alone_and_limits_cut_kernels() {
        let (a, b) = (base(1, 10), base(2, 10));
        let ia = Base { id: BaseId(3), dtype: DType::I64, nelem: 10 };
        let batch = vec![
            ins(Opcode::Add, vec![whole(b), whole(a), whole(a)]),
            ins(Opcode::Gather, vec![whole(b), whole(a), whole(ia)]),
            ins(Opcode::Add, vec![whole(a), whole(b), whole(b)]),
            ins(Opcode::Add, vec![whole(a), whole(a), whole(b)]),
            ins(Opcode::Add, vec![whole(a), whole(a), whole(b)]),
        ];
        let steps = partition(&batch, &Options { max_instructions: 2, ..Options::default() });
        assert_eq!(steps.len(), 4);
        assert_eq!(steps[1], Step::Single(1));
        assert_eq!(kernels(&steps), vec![vec![0], vec![2, 3], vec![4]]);
    }

    #[test]
    fn an_empty_reduction_is_single() {
        let (a, s) = (base(1, 10), base(2, 1));
        let batch = vec![ins(Opcode::AddReduce, vec![v(s, 0, &[], &[]), v(a, 0, &[0], &[1]), Scalar::I64(0).into()])];
        assert_eq!(partition(&batch, &Options::default()), vec![Step::Single(0)]);
    }

    #[test]
    fn a_reduction_to_a_position_runs_alone() {
        let (a, t, s) = (base(1, 10), base(2, 10), Base { id: BaseId(3), dtype: DType::I64, nelem: 1 });
        let batch = vec![
            ins(Opcode::Multiply, vec![whole(t), whole(a), whole(a)]),
            ins(Opcode::ArgmaxReduce, vec![v(s, 0, &[], &[]), whole(t), Scalar::I64(0).into()]),
            ins(Opcode::Free, vec![whole(t)]),
        ];
        let steps = partition(&batch, &Options::default());
        assert_eq!(steps[1..], [Step::Single(1), Step::System(2)]);
        let Step::Kernel(k) = &steps[0] else { panic!("{steps:?}") };
        assert!(k.temps.is_empty(), "the reduction reads t outside the kernel");
    }

    #[test]
    fn the_partition_cache_tells_apart_batches_that_differ_in_a_view_or_a_base() {
        let (a, t, out) = (base(1, 12), base(2, 10), base(3, 10));
        let step = |shift: i64, same_base: bool| {
            let input = v(a, shift, &[10], &[1]);
            let target = if same_base { v(a, 2, &[10], &[1]) } else { whole(out) };
            vec![
                ins(Opcode::Sqrt, vec![whole(t), input]),
                ins(Opcode::Add, vec![target, whole(t), Scalar::F64(1.0).into()]),
                ins(Opcode::Free, vec![whole(t)]),
            ]
        };
        let mut cache = PartitionCache::default();
        let options = Options::default();
        for (shift, same) in [(0, false), (1, false), (0, true), (2, true), (1, true), (0, false)] {
            let batch = step(shift, same);
            assert_eq!(cache.partition(&batch, &options), partition(&batch, &options), "shift {shift}, {same}");
        }
        assert_eq!((cache.hits, cache.misses), (1, 5), "only the repeated batch is a hit");
        // Writing a[2..12] after reading a[1..11] is a partial overlap: two kernels, t not contracted.
        assert_eq!(kernels(&partition(&step(1, true), &options)).len(), 2);
    }
}
