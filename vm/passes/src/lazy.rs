//! Deferred materialisation of *pure* arrays.
//!
//! A program often keeps arrays alive past the batch that computes them without ever reading them
//! again: `k = arange(n); terms = 1/(4k+1) - 1/(4k+3); total += sum(terms)` holds `k` and `terms`
//! until the next iteration frees them, so they reach the engine live at the sync that ends the
//! batch and cannot be contracted: two more passes over memory per iteration, for nothing.
//!
//! An array is *pure* when its current contents are a function of constants alone: it was last
//! written in full (a contiguous view of the whole base) by an element-wise instruction, `range`
//! or `random` whose inputs are constants or pure arrays. The engine keeps, per pure base, its
//! *recipe*: the instructions that compute it from constants, each writing a fresh synthetic
//! *version* base. A pure base whose every access in the batch lies inside one kernel, through the
//! view that wrote it, and that the batch does not sync, free or discard, is contracted like a
//! temporary and *deferred*: it gets no memory. When a later batch refers to a deferred base
//! first by anything but FREE or DISCARD (a read, a partial write, a SYNC), the recipe is replayed
//! at the start of that batch (intermediate versions are freed in it, so they contract), and that
//! base is never deferred again; nor is what that batch computes from it (else `v = v * c` in a
//! loop would replay, batch after batch, a recipe one step longer). FREE and DISCARD (the host
//! wrote all of it) simply drop it.
//! Host memory of a base is only guaranteed current after a SYNC, as for device engines.

use crate::{Context, Pass, Rewritten, bases};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smallvec::SmallVec;
use std::sync::Arc;
use vm_fusion::{Step, needs_isolation};
use vm_ir::{Base, BaseId, Instruction, Kind, Opcode, Operand, View};
use vm_runtime::HostMemory;

/// The most instructions of a recipe (longer chains are not pure).
const MAX_RECIPE: usize = 128;

/// One pure write: the instruction with its output and inputs renamed to versions.
pub(crate) struct Node {
    /// The version base this instruction writes.
    version: Base,
    /// The instruction, writing `version`, reading the versions of `inputs`.
    pub(crate) instr: Instruction,
    /// The recipes of the pure inputs.
    pub(crate) inputs: SmallVec<[Arc<Node>; 2]>,
    /// Instructions in the recipe (shared ones counted again: an upper bound).
    len: usize,
    /// The hash of the recipe's structure ([`crate::hoist::structure_hash`]): equal recipes
    /// (which compute equal values) hash alike.
    pub(crate) hash: u64,
}

/// The engine's pure and deferred bases.
pub struct Lazy {
    /// Pure bases that qualify are deferred (else only their recipes are kept, for [`crate::hoist`]).
    defer: bool,
    recipes: HashMap<BaseId, Arc<Node>>,
    /// Deferred bases: contracted, never given memory, replayed on demand.
    deferred: HashMap<BaseId, Base>,
    /// Bases replayed once: materialised from then on.
    replayed: HashSet<BaseId>,
    /// Bases replayed at the start of the current batch: what the batch computes from them is
    /// not pure (`v = v * c` in a loop would else replay a recipe one step longer each batch).
    replayed_now: HashSet<BaseId>,
    next: u64,
    /// Bases deferred so far.
    pub deferred_count: u64,
    /// Bases replayed so far.
    pub replayed_count: u64,
}

/// The pass `lazy`: replays the recipes of the deferred bases a batch refers to
/// ([`Lazy::prepare`]).
pub struct Replay;

impl Pass for Replay {
    fn name(&self) -> &'static str {
        "lazy"
    }

    fn run(&mut self, work: &mut Rewritten<'_>, cx: &mut Context<'_>) {
        work.apply(|b| cx.lazy.prepare(b));
    }
}

/// A base's accesses in a batch: (position, view, element-wise write).
type Accesses<'a> = Vec<(usize, &'a View, bool)>;

fn views(instr: &Instruction) -> impl Iterator<Item = &View> {
    instr.operands.iter().filter_map(Operand::as_view)
}

fn with_base(v: &View, base: Base) -> View {
    let mut w = v.clone();
    w.base = base;
    w
}

/// When `instr` is a pure write (element-wise, `range` or `random`, writing all of its output,
/// every view input with a recipe from `recipe_of`, at most [`MAX_RECIPE`] instructions in
/// all): the recipes of its view inputs, in order, and the length of its own.
fn pure_inputs(
    instr: &Instruction,
    recipe_of: impl Fn(BaseId) -> Option<Arc<Node>>,
) -> Option<(SmallVec<[Arc<Node>; 2]>, usize)> {
    let kind = instr.opcode.kind();
    if !(kind.is_elementwise() || matches!(kind, Kind::Range | Kind::Random)) || !instr.output()?.is_whole_base() {
        return None;
    }
    let mut inputs: SmallVec<[Arc<Node>; 2]> = SmallVec::new();
    let mut len = 1;
    for v in instr.inputs().iter().filter_map(Operand::as_view) {
        let n = recipe_of(v.base.id)?;
        len += n.len;
        inputs.push(n);
    }
    (len <= MAX_RECIPE).then_some((inputs, len))
}

/// Appends the recipe of `node` to `out` in dependency order, each version once.
fn flatten<'a>(node: &'a Arc<Node>, seen: &mut HashSet<BaseId>, out: &mut Vec<&'a Node>) {
    if !seen.insert(node.version.id) {
        return;
    }
    for i in &node.inputs {
        flatten(i, seen, out);
    }
    out.push(node);
}

impl Lazy {
    /// No pure bases yet; with `defer`, [`Lazy::record`] defers those that qualify.
    pub fn new(defer: bool) -> Lazy {
        Lazy {
            defer,
            recipes: HashMap::default(),
            deferred: HashMap::default(),
            replayed: HashSet::default(),
            replayed_now: HashSet::default(),
            next: 0,
            deferred_count: 0,
            replayed_count: 0,
        }
    }

    /// The batch with the recipes of the deferred bases it refers to prepended, and for each of
    /// its instructions the position in `batch` it stands for; `None` when nothing is replayed.
    pub fn prepare(&mut self, batch: &[Instruction]) -> Option<(Vec<Instruction>, Vec<usize>)> {
        self.replayed_now.clear();
        if self.deferred.is_empty() {
            return None;
        }
        let mut seen: HashSet<BaseId> = HashSet::default();
        let mut replay: Vec<(BaseId, usize)> = Vec::new();
        for (i, instr) in batch.iter().enumerate() {
            for v in views(instr) {
                let id = v.base.id;
                if !self.deferred.contains_key(&id) || !seen.insert(id) {
                    continue;
                }
                match instr.opcode {
                    Opcode::Free | Opcode::Discard => {
                        self.deferred.remove(&id);
                    }
                    _ => replay.push((id, i)),
                }
            }
        }
        if replay.is_empty() {
            return None;
        }
        // One replay for all of them: recipes share versions (a deferred base can be an input of
        // another's recipe), and each version is computed once. A version that is a replayed
        // base's value is written into that base (its readers in the replay read it there);
        // the other versions are freed after it, so they contract.
        let mut nodes = Vec::new();
        let mut seen: HashSet<BaseId> = HashSet::default();
        let mut into: HashMap<BaseId, Base> = HashMap::default();
        let mut at_of = Vec::new();
        for (id, at) in replay {
            let base = self.deferred.remove(&id).expect("deferred");
            let node = self.recipes.get(&id).expect("deferred bases are pure");
            into.insert(node.version.id, base);
            let before = nodes.len();
            flatten(node, &mut seen, &mut nodes);
            at_of.extend(std::iter::repeat_n(at, nodes.len() - before));
            self.replayed.insert(id);
            self.replayed_now.insert(id);
            self.replayed_count += 1;
        }
        // Sources first (ranges, random draws, fills: no inputs, so they may move up): a
        // source of another shape between two steps of the recipe would cut its kernel.
        let mut order: Vec<usize> = (0..nodes.len()).collect();
        order.sort_by_key(|&k| !nodes[k].inputs.is_empty());
        let mut out = Vec::with_capacity(batch.len() + 2 * nodes.len());
        let mut origin = Vec::with_capacity(out.capacity());
        for &k in &order {
            let mut instr = nodes[k].instr.clone();
            for o in instr.operands.iter_mut() {
                if let Operand::View(v) = o
                    && let Some(&base) = into.get(&v.base.id)
                {
                    v.base = base;
                }
            }
            out.push(instr);
            origin.push(at_of[k]);
        }
        for (n, &at) in nodes.iter().zip(&at_of) {
            if !into.contains_key(&n.version.id) {
                out.push(Instruction::new(Opcode::Free, [Operand::View(View::of_base(n.version))]));
                origin.push(at);
            }
        }
        out.extend(batch.iter().cloned());
        origin.extend(0..batch.len());
        Some((out, origin))
    }

    /// The recipe of base `id`, when it is pure.
    pub(crate) fn recipe(&self, id: BaseId) -> Option<&Arc<Node>> {
        self.recipes.get(&id)
    }

    /// The recipe `instr` would give its output when it is a pure write, its inputs' recipes
    /// from `recipe_of`; for comparison only: its version is not one of this engine's.
    pub(crate) fn candidate(instr: &Instruction, recipe_of: impl Fn(BaseId) -> Option<Arc<Node>>) -> Option<Arc<Node>> {
        let (inputs, len) = pure_inputs(instr, recipe_of)?;
        let hash = crate::hoist::structure_hash(instr, inputs.iter().map(|n| n.hash));
        Some(Arc::new(Node { version: instr.output()?.base, instr: instr.clone(), inputs, len, hash }))
    }

    /// Allocates a synthetic base id (from the versions' range).
    pub(crate) fn synthetic_id(&mut self) -> BaseId {
        self.next += 1;
        BaseId(bases::VERSION - self.next)
    }

    /// True when base `id` is deferred: its values are a recipe, not in memory.
    pub fn defers(&self, id: BaseId) -> bool {
        self.deferred.contains_key(&id)
    }

    /// True when the current batch starts with the replay of base `id`.
    pub fn replayed_now(&self, id: BaseId) -> bool {
        self.replayed_now.contains(&id)
    }

    /// Forgets base `id`: its memory holds its values (another rewrite put them there), so it
    /// is neither pure nor deferred any more.
    pub fn forget(&mut self, id: BaseId) {
        self.recipes.remove(&id);
        self.deferred.remove(&id);
    }

    /// The recipe of `instr`'s output when the write is pure (see the module doc).
    fn pure(&mut self, instr: &Instruction) -> Option<Arc<Node>> {
        let (inputs, len) =
            pure_inputs(
                instr,
                |id| {
                    if self.replayed_now.contains(&id) { None } else { self.recipes.get(&id).cloned() }
                },
            )?;
        let out = instr.output()?;
        self.next += 1;
        let version = Base { id: BaseId(bases::VERSION - self.next), ..out.base };
        let mut renamed = instr.clone();
        let mut k = 0;
        for (i, o) in renamed.operands.iter_mut().enumerate() {
            let Operand::View(v) = o else { continue };
            if i == 0 {
                *v = with_base(v, version);
            } else {
                *v = with_base(v, inputs[k].version);
                k += 1;
            }
        }
        let hash = crate::hoist::structure_hash(instr, inputs.iter().map(|n| n.hash));
        Some(Arc::new(Node { version, instr: renamed, inputs, len, hash }))
    }

    /// Follows `batch` (as it will run, cut into `steps`): updates the recipes, and defers the
    /// pure bases that qualify by making them temporaries of their kernel (freeing any memory
    /// they had).
    pub fn record(&mut self, batch: &[Instruction], steps: &mut [Step], mem: &mut HostMemory) {
        let mut written: HashMap<usize, Arc<Node>> = HashMap::default();
        for (i, instr) in batch.iter().enumerate() {
            match instr.opcode {
                Opcode::Free => {
                    for v in views(instr) {
                        self.recipes.remove(&v.base.id);
                        self.replayed.remove(&v.base.id);
                    }
                    continue;
                }
                Opcode::Discard => {
                    for v in views(instr) {
                        self.recipes.remove(&v.base.id);
                    }
                    continue;
                }
                op if op.is_system() => continue,
                _ => {}
            }
            if instr.opcode.kind() == Kind::Extension {
                for v in views(instr) {
                    self.recipes.remove(&v.base.id);
                }
                continue;
            }
            let Some(out) = instr.output() else { continue };
            let id = out.base.id;
            match self.pure(instr) {
                Some(n) => {
                    self.recipes.insert(id, n.clone());
                    written.insert(i, n);
                }
                None => {
                    self.recipes.remove(&id);
                }
            }
        }
        if written.is_empty() || !self.defer {
            return;
        }
        // Candidates: bases whose last write in the batch is pure.
        let mut candidates: HashMap<BaseId, usize> = HashMap::default();
        for (&i, n) in &written {
            let id = batch[i].output().expect("a write").base.id;
            let last = self.recipes.get(&id).is_some_and(|r| Arc::ptr_eq(r, n));
            if last && !bases::is_synthetic(id) && !self.replayed.contains(&id) {
                candidates.insert(id, i);
            }
        }
        // Every access of a candidate: (position, view, element-wise write); None once it is
        // synced (or otherwise unfit).
        let mut uses: HashMap<BaseId, Option<Accesses>> = HashMap::default();
        for (i, instr) in batch.iter().enumerate() {
            let out = instr.output();
            let write =
                instr.opcode.kind().is_elementwise() || matches!(instr.opcode.kind(), Kind::Range | Kind::Random);
            // Inputs first: an instruction reads before it writes.
            let ops = instr.operands.iter().enumerate().filter_map(|(k, o)| o.as_view().map(|v| (k, v)));
            let mut accesses: SmallVec<[(&View, bool); 4]> = SmallVec::new();
            for (k, v) in ops {
                let is_out = k == 0 && out.is_some();
                if !is_out {
                    accesses.push((v, false));
                }
            }
            if let Some(o) = out {
                accesses.push((o, write));
            }
            for (v, w) in accesses {
                if !candidates.contains_key(&v.base.id) {
                    continue;
                }
                let e = uses.entry(v.base.id).or_insert_with(|| Some(Vec::new()));
                match (instr.opcode.is_system(), e.as_mut()) {
                    (true, _) | (_, None) => *e = None,
                    (false, Some(list)) => list.push((i, v, w)),
                }
            }
        }
        for step in steps.iter_mut() {
            let Step::Kernel(k) = step else { continue };
            if k.instrs.len() == 1 && needs_isolation(&batch[k.instrs[0]]) {
                continue;
            }
            for &i in &k.instrs {
                let Some(out) = batch[i].output() else { continue };
                let id = out.base.id;
                if candidates.get(&id) != Some(&i) || k.temps.contains(&id) {
                    continue;
                }
                let Some(Some(list)) = uses.get(&id) else { continue };
                let ok = list.first().is_some_and(|&(_, _, w)| w)
                    && list.iter().all(|&(j, v, _)| {
                        k.instrs.binary_search(&j).is_ok() && v.shape == k.shape && v.is_identical(out)
                    });
                if ok {
                    k.temps.push(id);
                    self.deferred.insert(id, out.base);
                    self.deferred_count += 1;
                    mem.free(id);
                }
            }
        }
    }
}
