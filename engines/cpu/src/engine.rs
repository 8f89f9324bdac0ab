//! The `cpu` component: batch in, kernels and native instructions out, in batch order.

use crate::Config;
use crate::compile::cache::{Cache, KernelFn, Slot, Tiers};
use crate::compile::program::{Program, Recipe};
use crate::profile::Profile;
use crate::run::exec::{self, ExecConfig};
use crate::run::groups;
use crate::run::pool::Pool;
use crate::{
    compile::program, routines::calls, routines::gemm, routines::native, routines::positions, routines::views,
    run::rows,
};
use rustc_hash::FxHashMap as HashMap;
use std::time::Instant;
use vm_fusion::{Kernel, PartitionCache, Step};
use vm_ir::{Base, BaseId, DType, Error, Instruction, Kind, Opcode, Operand, Overlap, Result, View, with_dtype};
use vm_passes::{Pipeline, Rewritten, Stage};
use vm_runtime::{Component, ComponentInfo, HostMemory, ReductionOrder, Statistics};

/// The Cranelift JIT engine (see the crate documentation).
pub struct CpuEngine {
    /// The component's config table name.
    table: String,
    config: Config,
    child: Option<Box<dyn Component>>,
    cache: Cache,
    /// Kernel formation of batch structures seen before.
    plans: PartitionCache,
    pool: Pool,
    profile: Profile,
    /// The batch optimizer's passes and their state (spare buffers, copy-back partners, pure
    /// bases and their recipes, loop invariants kept across batches).
    passes: Pipeline,
    /// Kernels built before, by batch structure: bound to a new batch without building again.
    replays: HashMap<ReplayKey, Replay>,
    /// The opcode of the `matmul` extension method, once registered.
    matmul: Option<Opcode>,
    /// The opcodes of the `partition` and `argpartition` extension methods, once registered.
    partition: [Option<Opcode>; 2],
    /// Runs of small batches by structure hash ([`CHILD_BATCH_WORK`]).
    small_batches: HashMap<u64, u32>,
    /// True when the child is the built-in interpreter (it takes the engine's own bases).
    child_is_interp: bool,
    shut_down: bool,
}

/// A kernel of a batch structure: the partition-cache entry, the kernel's first position, and
/// its contracted temporaries by their numbers in the batch (lazy deferral adds some, depending
/// on history, and each changes the program).
type ReplayKey = (u64, usize, Vec<u32>);

/// A kernel bound to a batch and compiled, ready to run (a member of a row-blocked group).
struct Bound {
    prog: Program,
    f: KernelFn,
    bind: program::Binding,
    /// Where to keep it for the next batch of the same structure, when it was built anew.
    replay: Option<ToKeep>,
}

/// What a kernel built anew leaves for the next batch of the same structure ([`Replay`]).
struct ToKeep {
    key: ReplayKey,
    recipe: Recipe,
    /// The code is final (see [`Replay::final_code`]).
    final_code: bool,
    slot: Slot,
}

impl groups::Bound for Bound {
    fn program(&self) -> &Program {
        &self.prog
    }

    fn binding(&self) -> &program::Binding {
        &self.bind
    }
}

/// A kernel's program, compiled code and binding recipe.
struct Replay {
    program: Program,
    f: KernelFn,
    /// `f` is final (else the cache is asked again, so that a hot kernel is promoted).
    final_code: bool,
    /// Where the cache keeps `f`.
    slot: Slot,
    recipe: Recipe,
}

/// The work of running `prog` on `bind`: positions times operations (what decides whether a
/// kernel deserves the good compilation tier at once).
fn work(prog: &Program, bind: &program::Binding) -> u64 {
    (bind.nelem() as u64).saturating_mul(prog.ops.len() as u64)
}

/// Positions up to which a kernel seen for one of the first [`CHILD_RUNS`] times is run by the
/// child instead of being compiled. Compiling costs about 0.15 ms plus some 8 us per operation
/// of the kernel (Cranelift and the row routine), the reference interpreter about 1 us per
/// operation plus a nanosecond or two per position: below a few thousand positions the child
/// runs a kernel's first times faster than compiling it, however long the kernel (a loop of
/// column updates fused into one kernel of hundreds of operations, a test suite or a table of
/// dtype combinations that is thousands of small kernels each run once or twice).
const CHILD_RUNS_POSITIONS: usize = 4096;

/// Runs of a small kernel on the child before it is compiled.
const CHILD_RUNS: u32 = 2;

/// Element operations (positions of every instruction together) up to which a whole batch of
/// a structure seen for one of the first [`CHILD_RUNS`] times runs on the child, without
/// kernel formation, which costs tens of microseconds per instruction for a batch structure
/// not seen before (a loop of writes to a small board that never repeats its pattern:
/// every instruction checked for overlap against the ones set aside), where the reference
/// interpreter runs a small instruction in about one. Once the structure keeps coming, its
/// kernels are formed and compiled once, and then run faster than the child.
const CHILD_BATCH_WORK: u64 = 1 << 14;

/// True when `instrs` name only the frontend's bases, none of the engine's own (what a child
/// behind the component ABI knows).
fn frontend_bases_only<'a>(mut instrs: impl Iterator<Item = &'a Instruction>) -> bool {
    instrs.all(|i| i.views().all(|v| !vm_passes::bases::is_synthetic(v.base.id)))
}

/// Structures of small batches counted before the counts start over.
const MAX_SMALL_STRUCTURES: usize = 4096;

/// The element operations of `batch`: the positions each blockable instruction iterates over,
/// and the elements of the others' operands, which they read or write at least once (a
/// matrix-vector product's output is a small part of its work).
fn batch_work(batch: &[Instruction]) -> u64 {
    batch
        .iter()
        .filter(|i| !i.opcode.is_system())
        .map(|i| match vm_fusion::iteration_shape(i) {
            Some(shape) => shape.iter().map(|&n| n as u64).fold(1u64, u64::saturating_mul),
            None => i.views().map(|v| v.nelem() as u64).fold(0u64, u64::saturating_add),
        })
        .fold(0u64, u64::saturating_add)
}

/// True when `prog` gives bit for bit what the reference interpreter gives (every operation
/// does: the opcode tests hold them to exact agreement) because it reduces nothing (partial
/// sums add in another order): a kernel that the child runs the first time and the compiled
/// code later must not change its results in between.
fn runs_alike_on_child(prog: &Program) -> bool {
    prog.partials.is_empty()
}

/// Kernel replays kept before the table starts over: more than the kernels of one full batch
/// ([`vm_runtime::RuntimeOptions::batch_limit`] instructions, a kernel each at worst), or a
/// loop whose batches each form more kernels than the table holds would never replay one.
const MAX_REPLAYS: usize = 8192;

impl CpuEngine {
    /// An engine with `config` and an optional fallback child, named `cpu` (see
    /// [`CpuEngine::named`]).
    pub fn new(config: Config, child: Option<Box<dyn Component>>) -> Result<CpuEngine> {
        CpuEngine::named("cpu", config, child)
    }

    /// An engine for the config table `table`. A setting out of its range (more than
    /// [`crate::MAX_THREADS`] threads, say) is the config error a config file gets when its stack
    /// is planned; a thread the system refuses is [`Error::OutOfMemory`], with every worker
    /// already started stopped again. Cranelift's IR verifier runs on every kernel in debug
    /// builds.
    pub fn named(table: &str, config: Config, child: Option<Box<dyn Component>>) -> Result<CpuEngine> {
        let child_is_interp = child.as_ref().is_some_and(|c| c.info().implementation == "interp");
        config.validate(table)?;
        let threads = match config.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let options =
            vm_passes::Options::with_off_list(&config.passes_off, config.hoist_bytes as u64, config.trace_passes);
        let passes = Pipeline::standard(&options).map_err(|e| match e {
            Error::InvalidArgument(m) => {
                Error::InvalidArgument(format!("[{table}] passes_off = {:?}: {m}", config.passes_off))
            }
            e => e,
        })?;
        let pool = Pool::new(threads)
            .map_err(|e| Error::OutOfMemory(format!("[{table}] threads = {threads}: {e}")).caused_by(e))?;
        Ok(CpuEngine {
            cache: Cache::new(
                &config.opt_level,
                Tiers::named(&config.regalloc)?,
                cfg!(debug_assertions),
                config.dump,
                crate::x86::Isa::named(&config.row_code),
            )?,
            plans: PartitionCache::default(),
            pool,
            table: table.to_string(),
            config,
            child,
            profile: Profile::default(),
            passes,
            replays: HashMap::default(),
            matmul: None,
            partition: [None; 2],
            small_batches: HashMap::default(),
            child_is_interp,
            shut_down: false,
        })
    }

    /// An engine with the default configuration but `threads` threads, and no child.
    pub fn with_threads(threads: usize) -> Result<CpuEngine> {
        CpuEngine::new(Config { threads, ..Config::default() }, None)
    }

    /// The statistics so far.
    pub fn profile(&self) -> Profile {
        let counters = self.passes.counters();
        Profile {
            cache: self.cache.stats,
            deferred: counters.deferred,
            replayed: counters.replayed,
            hoisted: counters.hoisted,
            ..self.profile
        }
    }

    fn exec_config(&self) -> ExecConfig {
        ExecConfig { block: self.config.block_size, min_parallel: self.config.min_parallel }
    }

    /// Runs kernel `k` of `batch`. With `replayable` (`batch` is the one the partition cache
    /// saw last), a kernel of a batch structure seen before is bound from its recipe instead of
    /// being built again (and its code is not looked up again).
    fn run_kernel(&mut self, k: &Kernel, batch: &[Instruction], mem: &mut HostMemory, replayable: bool) -> Result<()> {
        self.count_kernel(k);
        let key = replayable.then(|| self.replay_key(k)).flatten();
        let cfg = self.exec_config();
        if let Some(key) = key.as_ref()
            && let Some((r, bind)) = Self::bind_replay(&mut self.replays, &mut self.cache, key, batch)?
        {
            return Self::run_bound(&r.program, r.f, &bind, mem, &self.pool, &cfg, &mut self.profile);
        }
        let (prog, bind, recipe) = program::build_with_recipe(k, batch)?;
        let observable = prog.ops.iter().any(|op| op.dst != program::Dst::Value);
        if bind.nelem() == 0 || !observable {
            return Ok(());
        }
        if let Some(child) = self.child.as_mut()
            && self.config.first_runs_on_child
            && bind.nelem() <= CHILD_RUNS_POSITIONS
            && runs_alike_on_child(&prog)
            // The child knows the frontend's bases only (it may be behind the plugin ABI).
            && frontend_bases_only(k.instrs.iter().map(|&i| &batch[i]))
            && self.cache.uncompiled_run(&prog, CHILD_RUNS)
        {
            // A small kernel seen for the first times: the child runs its instructions (as
            // fast as compiling would be), and it is compiled if it keeps coming.
            self.profile.first_runs_on_child += 1;
            self.profile.bytes_moved += exec::bytes_moved(&bind);
            let instrs: Vec<Instruction> = k.instrs.iter().map(|&i| batch[i].clone()).collect();
            return child.execute(&instrs, mem);
        }
        let (f, final_code, slot) = self.cache.get(&prog, work(&prog, &bind))?;
        Self::run_bound(&prog, f, &bind, mem, &self.pool, &cfg, &mut self.profile)?;
        self.keep_replay(Bound { prog, f, bind, replay: key.map(|key| ToKeep { key, recipe, final_code, slot }) });
        Ok(())
    }

    /// Counts kernel `k` in the profile (kernels, instructions fused, temporaries contracted).
    fn count_kernel(&mut self, k: &Kernel) {
        self.profile.kernels += 1;
        self.profile.fused_instructions += k.instrs.len() as u64;
        self.profile.contracted += k.temps.len() as u64;
    }

    /// The replay kept under `key`, bound to `batch`, its code asked for again until final;
    /// `None` when none is kept.
    fn bind_replay<'r>(
        replays: &'r mut HashMap<ReplayKey, Replay>,
        cache: &mut Cache,
        key: &ReplayKey,
        batch: &[Instruction],
    ) -> Result<Option<(&'r Replay, program::Binding)>> {
        let Some(r) = replays.get_mut(key) else { return Ok(None) };
        let bind = r.recipe.bind(batch)?;
        if r.final_code {
            cache.stats.hits += 1;
        } else {
            (r.f, r.final_code) = cache.again(r.slot, &r.program, work(&r.program, &bind))?;
        }
        Ok(Some((r, bind)))
    }

    /// Binds kernel `k` of `batch` and compiles it (see [`CpuEngine::run_kernel`] for
    /// `replayable`), without running it; never on the child.
    fn bind_kernel(&mut self, k: &Kernel, batch: &[Instruction], replayable: bool) -> Result<Bound> {
        let key = replayable.then(|| self.replay_key(k)).flatten();
        if let Some(key) = key.as_ref()
            && let Some((r, bind)) = Self::bind_replay(&mut self.replays, &mut self.cache, key, batch)?
        {
            return Ok(Bound { prog: r.program.clone(), f: r.f, bind, replay: None });
        }
        let (prog, bind, recipe) = program::build_with_recipe(k, batch)?;
        let (f, final_code, slot) = self.cache.get(&prog, work(&prog, &bind))?;
        Ok(Bound { prog, f, bind, replay: key.map(|key| ToKeep { key, recipe, final_code, slot }) })
    }

    /// Runs the steps from `i` on as a row-blocked group ([`rows`](crate::run::rows)) when they make one: its
    /// members block by block, then the steps set aside, in batch order. Returns the number
    /// of steps done (0: no group starts at `i`, nothing done). `bound` caches the kernels of
    /// the batch's steps bound so far.
    fn row_group(
        &mut self,
        steps: &[Step],
        i: usize,
        bound: &mut Vec<Option<Bound>>,
        batch: &[Instruction],
        origin: &[usize],
        mem: &mut HostMemory,
    ) -> Result<usize> {
        let min_bytes = self.config.row_group_bytes as u64;
        // A group starts with a kernel moving a good part of what a group must (checked first:
        // this runs for every step of every batch).
        let Step::Kernel(k0) = &steps[i] else { return Ok(0) };
        let positions = k0.shape.iter().map(|&n| n as u64).fold(1u64, u64::saturating_mul);
        if min_bytes == 0 || positions.saturating_mul(8) < min_bytes / 4 || groups::member(&steps[i], batch).is_none() {
            return Ok(0);
        }
        if bound.len() < steps.len() {
            bound.resize_with(steps.len(), || None);
        }
        // Errors name the position in the caller's batch, before any rewrite.
        let first_of = |s: usize| match &steps[i + s] {
            Step::Kernel(k) => k.instrs[0],
            Step::Single(p) | Step::System(p) => *p,
        };
        let tag_at = |e: Error, s: usize| tag(e, origin.get(first_of(s)).copied().unwrap_or(first_of(s)));
        // The kernels ahead, bound once per batch; which of them join depends on the rows.
        let end = steps.len().min(i + 1 + groups::LOOKAHEAD);
        for (s, step) in steps[i..end].iter().enumerate() {
            if matches!(step, Step::Single(_)) {
                break;
            }
            if bound[i + s].is_none()
                && let Some(k) = groups::member(step, batch)
            {
                bound[i + s] = Some(self.bind_kernel(k, batch, true).map_err(|e| tag_at(e, s))?);
            }
        }
        let window = &bound[i..end];
        let Some(first) = window[0].as_ref() else { return Ok(0) };
        if first.bind.nelem() == 0 {
            return Ok(0);
        }
        let Some((rows, group, members)) = groups::best(&steps[i..end], window, batch) else { return Ok(0) };
        let member = |s: usize| window[s].as_ref().expect("a member");
        let moved: u64 = members.iter().map(|&s| exec::bytes_moved(&member(s).bind)).sum();
        if moved < min_bytes {
            return Ok(0);
        }
        let n = members.last().map_or(0, |&s| s + 1); // the steps it spans
        let rows_per_block = group.rows_per_block();
        let locals = groups::scratch_bases(&group, &steps[i..i + n], &members, window, batch, rows_per_block);
        // Run the members block by block.
        let cfg = self.exec_config();
        let t0 = Instant::now();
        let is_local = |id: BaseId| locals.iter().any(|(l, _)| l.base == id);
        let mut launches = Vec::with_capacity(members.len());
        let mut launched = Vec::with_capacity(members.len());
        for &s in &members {
            let b = member(s);
            let block = rows_per_block * (b.bind.nelem() / rows);
            let launch = exec::Launch::new(b.f, &b.prog, &b.bind, mem, &cfg, Some(block), &is_local);
            if let Some(l) = launch.map_err(|e| tag_at(e, s))? {
                launches.push(l);
                launched.push(s);
            }
        }
        debug_assert!(
            launches.iter().all(|l| l.nblocks == rows.div_ceil(rows_per_block)),
            "blocks of the group's rows"
        );
        // SAFETY: the members make a group by the rules of `rows` (checked by `Group::admit`),
        // bound to buffers that stay allocated until the steps set aside run (after this), and
        // the locals are needed by nothing outside the group (`scratch_bases`).
        unsafe { rows::run_blocks(&self.pool, &launches, &locals, rows, rows_per_block, mem.interrupt()) }
            .map_err(|e| tag_at(e, members[0]))?;
        self.profile.row_scratch += locals.len() as u64;
        let mut moved = 0u64;
        for (l, s) in launches.into_iter().zip(launched) {
            moved = moved.saturating_add(l.finish(&member(s).bind, mem).map_err(|e| tag_at(e, s))?);
        }
        self.profile.exec_time += t0.elapsed();
        self.profile.bytes_moved += moved;
        self.profile.row_grouped += members.len() as u64;
        for &s in &members {
            let Step::Kernel(k) = &steps[i + s] else { unreachable!("members are kernels") };
            self.count_kernel(k);
            let b = bound[i + s].take().expect("a member");
            self.keep_replay(b);
        }
        // Then, in batch order, the members' system instructions and the steps set aside.
        for s in 0..n {
            match &steps[i + s] {
                Step::Kernel(k) if members.contains(&s) => {
                    for &a in &k.after {
                        self.system(&batch[a], mem).map_err(|e| tag(e, origin.get(a).copied().unwrap_or(a)))?;
                    }
                }
                step => self.step(step, batch, origin, mem)?,
            }
        }
        Ok(n)
    }

    /// Runs kernel `k`, bound as `b`, then its system instructions (as [`CpuEngine::step`]
    /// does, without binding it again).
    fn run_bound_kernel(
        &mut self,
        k: &Kernel,
        b: Bound,
        batch: &[Instruction],
        origin: &[usize],
        mem: &mut HostMemory,
    ) -> Result<()> {
        let at = |i: usize| origin.get(i).copied().unwrap_or(i);
        self.count_kernel(k);
        let cfg = self.exec_config();
        Self::run_bound(&b.prog, b.f, &b.bind, mem, &self.pool, &cfg, &mut self.profile)
            .map_err(|e| tag(e, at(k.instrs[0])))?;
        self.keep_replay(b);
        for &i in &k.after {
            self.system(&batch[i], mem).map_err(|e| tag(e, at(i)))?;
        }
        Ok(())
    }

    /// Keeps `b`'s program, code and recipe for the next batch of the same structure, when it
    /// was built anew.
    fn keep_replay(&mut self, b: Bound) {
        if let Some(ToKeep { key, recipe, final_code, slot }) = b.replay {
            if self.replays.len() >= MAX_REPLAYS {
                self.replays.clear();
            }
            self.replays.insert(key, Replay { program: b.prog, f: b.f, final_code, slot, recipe });
        }
    }

    /// Runs compiled kernel `f` of `prog` on `bind`; nothing when it has nothing to do.
    fn run_bound(
        prog: &Program,
        f: KernelFn,
        bind: &program::Binding,
        mem: &mut HostMemory,
        pool: &Pool,
        cfg: &ExecConfig,
        profile: &mut Profile,
    ) -> Result<()> {
        let observable = prog.ops.iter().any(|op| op.dst != program::Dst::Value);
        if bind.nelem() == 0 || !observable {
            return Ok(());
        }
        let t0 = Instant::now();
        let begun = vm_runtime::trace::begin();
        let moved = exec::run(f, prog, bind, mem, pool, cfg)?;
        profile.exec_time += t0.elapsed();
        profile.bytes_moved += moved;
        vm_runtime::trace::end(
            begun,
            "kernel",
            || "kernel",
            || vec![("positions", bind.nelem() as u64), ("operations", prog.ops.len() as u64), ("bytes", moved)],
        );
        Ok(())
    }

    /// The replay key of kernel `k` of the batch last partitioned; `None` when a temporary has no
    /// number in it.
    fn replay_key(&self, k: &Kernel) -> Option<ReplayKey> {
        let mut temps = k.temps.iter().map(|&id| self.plans.number_of(id)).collect::<Option<Vec<u32>>>()?;
        temps.sort_unstable();
        Some((self.plans.entry(), *k.instrs.first()?, temps))
    }

    /// The bookkeeping after a batch: the passes keep or release what they made for it (spare
    /// buffers, copy-back partners, kept invariants).
    fn finish(&mut self, succeeded: bool, mem: &mut HostMemory) {
        self.passes.finish(succeeded, mem, &CallCosts);
    }

    /// Runs a kernel that is a matrix product as GEMM ([`gemm`](crate::routines::gemm)).
    fn run_gemm(&mut self, g: &gemm::Gemm, k: &Kernel, mem: &mut HostMemory) -> Result<()> {
        self.count_kernel(k);
        self.profile.matrix_products += 1;
        let t0 = Instant::now();
        let begun = vm_runtime::trace::begin();
        g.run(mem, &self.pool, self.config.min_parallel)?;
        self.profile.exec_time += t0.elapsed();
        self.profile.bytes_moved += g.bytes_moved();
        vm_runtime::trace::end(begun, "kernel", || "matrix product (GEMM)", || vec![("bytes", g.bytes_moved())]);
        Ok(())
    }

    /// Runs step `i`, a large matrix-vector product (the `matmul` extension method), together
    /// with the products after it that read the same matrix and may run before the steps
    /// between (they read nothing those write and write nothing those touch): one pass over
    /// the matrix for all (`r @ A, A @ p`). The others join `ran_early`; false when step `i` is
    /// no such product or none joins it.
    fn matrix_vector_group(
        &mut self,
        steps: &[Step],
        i: usize,
        ran_early: &mut Vec<usize>,
        batch: &[Instruction],
        origin: &[usize],
        mem: &mut HostMemory,
    ) -> Result<bool> {
        // The product of a step, with its position in the batch.
        let product = |step: &Step| match step {
            Step::Single(p) if self.matmul == Some(batch[*p].opcode) => {
                let (out, a, b) = vm_ir::extension::matmul_operands(&batch[*p]).ok()?;
                Some((*p, gemm::of_extension(out, a, b)?.matrix_vector()?))
            }
            _ => None,
        };
        let Some((first_instr, first)) = product(&steps[i]) else { return Ok(false) };
        let touched = |s: usize| {
            let instrs: Vec<usize> = match &steps[s] {
                Step::Kernel(k) => k.instrs.iter().chain(&k.after).copied().collect(),
                Step::Single(p) | Step::System(p) => vec![*p],
            };
            let (mut reads, mut writes) = (Vec::new(), Vec::new());
            for instr in instrs.iter().map(|&p| &batch[p]) {
                let out = instr.output().map(|v| v.base.id);
                writes.extend(out);
                if instr.opcode.kind() == Kind::System && instr.opcode != Opcode::Sync {
                    writes.extend(instr.views().map(|v| v.base.id)); // freed, discarded
                } else {
                    reads.extend(instr.inputs().iter().filter_map(Operand::as_view).map(|v| v.base.id));
                }
            }
            (reads, writes)
        };
        let mut members = vec![(i, first)];
        for (j, step) in steps.iter().enumerate().take(i + 1 + MATRIX_VECTOR_LOOKAHEAD).skip(i + 1) {
            if ran_early.contains(&j) {
                continue;
            }
            let Some((_, next)) = product(step).filter(|(_, p)| p.same_matrix(&members[0].1)) else { continue };
            let (reads, writes) = touched(j);
            let movable = (i..j).filter(|s| !ran_early.contains(s)).all(|s| {
                let (r, w) = touched(s);
                !reads.iter().any(|b| w.contains(b)) && !writes.iter().any(|b| r.contains(b) || w.contains(b))
            });
            if movable {
                members.push((j, next));
            }
        }
        if members.len() < 2 {
            return Ok(false);
        }
        self.profile.native += members.len() as u64;
        self.profile.matrix_products += members.len() as u64;
        self.profile.shared_matrix += members.len() as u64;
        ran_early.extend(members[1..].iter().map(|&(j, _)| j));
        let group: Vec<gemm::MatrixVector> = members.into_iter().map(|(_, p)| p).collect();
        let begun = vm_runtime::trace::begin();
        gemm::run_matrix_vector_group(&group, mem, &self.pool, self.config.min_parallel)
            .map_err(|e| tag(e, origin.get(first_instr).copied().unwrap_or(first_instr)))?;
        let n = group.len() as u64;
        vm_runtime::trace::end(begun, "kernel", || "matrix-vector products sharing a matrix", || vec![("products", n)]);
        Ok(true)
    }

    /// Runs an element-wise instruction whose output partially overlaps an input: such inputs
    /// are copied first, so every input is read in full before the output is written.
    fn run_isolated(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        let out =
            instr.output().cloned().ok_or_else(|| Error::Internal("isolated instruction without output".into()))?;
        let mut copy = instr.clone();
        let mut snapshots = Vec::new();
        for (i, o) in instr.operands.iter().enumerate().skip(1) {
            let Operand::View(v) = o else { continue };
            if v.overlap(&out) != Overlap::Partial {
                continue;
            }
            let id = BaseId(vm_passes::bases::SNAPSHOT - snapshots.len() as u64);
            let base = Base { id, dtype: v.dtype(), nelem: v.nelem() as u64 };
            let snap = View::contiguous(base, 0, &v.shape)?;
            with_dtype!(v.dtype(), T => {
                let data = views::read::<T>(mem, v)?;
                views::write::<T>(mem, &snap, &data)?;
            });
            copy.operands[i] = Operand::View(snap);
            snapshots.push(id);
        }
        let k = Kernel { instrs: vec![0], shape: out.shape.clone(), temps: Vec::new(), after: Vec::new() };
        let r = self.run_kernel(&k, std::slice::from_ref(&copy), mem, false);
        for id in snapshots {
            mem.free(id);
        }
        r
    }

    fn system(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        let Some(v) = instr.operands.first().and_then(Operand::as_view) else { return Ok(()) };
        match instr.opcode {
            // Host memory is current once the kernels before have run; a base never written
            // reads as zeros, so make sure it exists for whoever reads it after the sync.
            Opcode::Sync => mem.ensure(&v.base).map(|_| ()),
            Opcode::Free => {
                if !self.passes.keeps(v.base.id) {
                    mem.free(v.base.id);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn single(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        if Some(instr.opcode) == self.matmul {
            let (out, a, b) = vm_ir::extension::matmul_operands(instr)?;
            if let Some(g) = gemm::of_extension(out, a, b) {
                self.profile.native += 1;
                self.profile.matrix_products += 1;
                return g.run(mem, &self.pool, self.config.min_parallel);
            }
        }
        if let Some(positions) = self.partition.iter().position(|&op| op == Some(instr.opcode)) {
            self.profile.native += 1;
            return native::partition(instr, positions == 1, mem, &self.pool);
        }
        if instr.opcode.kind() == Kind::Extension {
            self.profile.fallback += 1;
            return match &mut self.child {
                Some(child) => child.execute(std::slice::from_ref(instr), mem),
                None => Err(Error::Unsupported(format!(
                    "the cpu engine does not implement extension method {} (opcode {}) and has no fallback",
                    instr.opcode,
                    instr.opcode.id()
                ))),
            };
        }
        self.profile.native += 1;
        if instr.opcode.is_arg_reduce() {
            return positions::execute(instr, mem, &self.pool, &self.exec_config());
        }
        native::execute(instr, mem, &self.pool)
    }

    fn step(&mut self, step: &Step, batch: &[Instruction], origin: &[usize], mem: &mut HostMemory) -> Result<()> {
        // Errors name the position in the caller's batch, before any rewrite.
        let tag = |e: Error, i: usize| tag(e, origin.get(i).copied().unwrap_or(i));
        match step {
            Step::Kernel(k) => {
                let first = k.instrs[0];
                let r = if k.instrs.len() == 1 && vm_fusion::needs_isolation(&batch[first]) {
                    self.run_isolated(&batch[first], mem)
                } else if let Some(g) = gemm::recognise(k, batch) {
                    self.run_gemm(&g, k, mem)
                } else {
                    self.run_kernel(k, batch, mem, true)
                };
                r.map_err(|e| tag(e, first))?;
                for &i in &k.after {
                    self.system(&batch[i], mem).map_err(|e| tag(e, i))?;
                }
                Ok(())
            }
            Step::Single(i) => {
                let begun = vm_runtime::trace::begin();
                let r = self.single(&batch[*i], mem).map_err(|e| tag(e, *i));
                vm_runtime::trace::end(begun, "kernel", || batch[*i].opcode.name(), Vec::new);
                r
            }
            Step::System(i) => self.system(&batch[*i], mem).map_err(|e| tag(e, *i)),
        }
    }
}

/// Steps after a large matrix-vector product looked at for products reading its matrix.
const MATRIX_VECTOR_LOOKAHEAD: usize = 8;

/// The engine's costs for the passes: an operation is costly where the generated code calls a
/// block routine for it ([`crate::routines::calls::block_fn`]).
struct CallCosts;

impl vm_passes::Costs for CallCosts {
    fn calls_out(&self, opcode: Opcode, dtype: DType) -> bool {
        calls::block_fn(opcode, dtype).is_some()
    }
}

fn tag(e: Error, i: usize) -> Error {
    match e {
        Error::Execution(m) => Error::Execution(format!("instruction {i}: {m}")),
        e => e.at_instruction(i),
    }
}

impl Component for CpuEngine {
    fn name(&self) -> &str {
        "cpu"
    }

    /// Relies on the batch being valid, as the [`Component`] contract says (the runtime
    /// validates every instruction it accepts): the hot path of small arrays does not check twice.
    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        self.profile.batches += 1;
        let formation = vm_runtime::trace::begin();
        let opts = vm_fusion::Options { max_instructions: self.config.max_kernel, ordered_float_products: true };
        let mut work = Rewritten::new(batch);
        self.passes.run(Stage::Batch, &mut work, &[], mem, &CallCosts);
        // A small batch of a structure met for one of the first times runs on the child
        // ([`CHILD_BATCH_WORK`]).
        let small = self.child.is_some()
            && self.config.first_runs_on_child
            && batch_work(work.batch()) <= CHILD_BATCH_WORK
            // The child knows the frontend's bases only, unless it is the built-in interpreter
            // (a plugin behind the component ABI).
            && (self.child_is_interp || frontend_bases_only(work.batch().iter()));
        let runs = &mut self.small_batches;
        let analyse = |hash: u64| {
            if !small {
                return true;
            }
            if runs.len() >= MAX_SMALL_STRUCTURES {
                runs.clear();
            }
            let n = runs.entry(hash).or_insert(0);
            *n = n.saturating_add(1);
            *n > CHILD_RUNS
        };
        let partitioned = self.plans.partition_if(work.batch(), &opts, analyse);
        let n = batch.len() as u64;
        vm_runtime::trace::end(
            formation,
            "fusion",
            || "kernel formation",
            || vec![("instructions", n), ("steps", partitioned.as_ref().map_or(0, |s| s.len() as u64))],
        );
        let Some(mut steps) = partitioned else {
            // What the child computes is recorded like a batch without kernels (nothing is
            // deferred).
            self.profile.batches_on_child += 1;
            self.passes.record(work.batch(), &mut [], mem);
            let child = self.child.as_mut().expect("small batches go to a child");
            let begun = vm_runtime::trace::begin();
            let result = child.execute(work.batch(), mem);
            let n = work.batch().len() as u64;
            vm_runtime::trace::end(begun, "kernel", || "small batch on the child", || vec![("instructions", n)]);
            self.finish(result.is_ok(), mem);
            return result;
        };
        self.passes.run(Stage::Kernels, &mut work, &steps, mem, &CallCosts);
        self.passes.record(work.batch(), &mut steps, mem);
        let mut result = Ok(());
        let mut bound: Vec<Option<Bound>> = Vec::new(); // kernels bound while looking for groups
        let mut i = 0;
        let mut ran_early: Vec<usize> = Vec::new(); // steps run with a group of products before
        while i < steps.len() {
            if !ran_early.is_empty() && ran_early.contains(&i) {
                i += 1;
                continue;
            }
            let grouped = mem.interrupt().check().and_then(|()| {
                if self.matrix_vector_group(&steps, i, &mut ran_early, work.batch(), work.origin(), mem)? {
                    return Ok(1);
                }
                self.row_group(&steps, i, &mut bound, work.batch(), work.origin(), mem)
            });
            result = match grouped {
                Ok(0) => match (&steps[i], bound.get_mut(i).and_then(Option::take)) {
                    // Bound already when looking for a group: run as bound.
                    (Step::Kernel(k), Some(b)) => self.run_bound_kernel(k, b, work.batch(), work.origin(), mem),
                    (step, _) => self.step(step, work.batch(), work.origin(), mem),
                }
                .map(|()| 1),
                done => done,
            }
            .map(|done| i += done);
            if result.is_err() {
                break;
            }
        }
        self.finish(result.is_ok(), mem);
        result
    }

    /// Implements `matmul` for floats (as GEMM), `partition` and `argpartition`; integer
    /// products and the other methods go to the child (without one, they are
    /// [`Error::Unsupported`]).
    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        use vm_ir::extension::{ARGPARTITION, MATMUL, PARTITION};
        let below = vm_runtime::component::forward_extension(self, name, opcode)?;
        match name {
            MATMUL => self.matmul = Some(opcode),
            PARTITION => self.partition[0] = Some(opcode),
            ARGPARTITION => self.partition[1] = Some(opcode),
            _ => return Ok(below),
        }
        Ok(true)
    }

    fn child(&self) -> Option<&(dyn Component + 'static)> {
        self.child.as_deref()
    }

    /// The child's, which computes in the same host memory: a small instruction on operands
    /// current there runs sooner on the interpreter than queued, fused and compiled.
    fn direct(&mut self) -> Option<&mut (dyn Component + 'static)> {
        self.child.as_deref_mut().and_then(|c| c.direct())
    }

    fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
        self.child.as_deref_mut()
    }

    /// Blocks and threads reduce into partials, and full reductions are split by rows.
    fn reduction_order(&self) -> ReductionOrder {
        ReductionOrder::Reassociated
    }

    fn info(&self) -> ComponentInfo {
        ComponentInfo {
            name: self.table.clone(),
            implementation: "cpu".into(),
            settings: self.config.to_pairs(),
            notes: vec![format!("Cranelift JIT, {} threads", self.pool.threads())],
            ..ComponentInfo::default()
        }
    }

    fn statistics(&self) -> Statistics {
        self.profile().statistics()
    }

    fn release(&mut self) -> Result<()> {
        if !self.shut_down && self.config.profile {
            eprintln!("{}", self.profile());
        }
        self.shut_down = true;
        Ok(())
    }
}
