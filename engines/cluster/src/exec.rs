//! Executing a batch on one rank: the plans of all its instructions become one list of this
//! rank's steps in program order (local instructions, messages to send, messages to receive),
//! which is then scheduled so that the child sees few, large batches (which its kernel fusion
//! needs) and no rank blocks on a message before it needs the data (latency hiding, as in
//! DistNumPy). Steps are ordered by the local bases they read and write.
//!
//! - Receives are posted when the walk through the list reaches them and are not waited for
//!   there; a message lands (is unpacked into its fresh temporaries, announced to the child by
//!   `Discard`) as soon as it is seen complete.
//! - A send needs its elements current. When some queued step must run first, the child runs,
//!   in one call, every queued step that needs no message still in flight, plus the frees (even
//!   later in the batch) of the bases whose every other use is done, so that the temporaries
//!   the call uses last can be fused away; if what the send needs depends on a missing message,
//!   that message is waited for first. A call syncs what it writes that is sent later, so a
//!   send whose elements are current needs no call of its own.
//! - At the end of the batch everything left runs: first what needs no missing message, then
//!   the rest as the messages land.
//!
//! Every wait polls the transport, which drives MPI's progress. With `overlap` off, every
//! message in flight is waited for before each child call (nothing overlaps).

use crate::dist::Blocks;
use crate::fuse::{Unit, plan_group, units};
use crate::pack::{pack, unpack};
use crate::plan::{Loc, LocalOperand, Plan, Task, Work, plan};
use crate::split::Region;
use crate::transport::{Ticket, Transport};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;
use vm_ir::random::{FromRandomBits, random_bits};
use vm_ir::scalar::Cast;
use vm_ir::{Base, BaseId, Error, Instruction, Opcode, Operand, Result, View, with_dtype};
use vm_runtime::{Component, HostMemory, ReductionOrder};

/// Ids of local temporaries start here (far above any id a runtime hands out).
pub const TEMP_IDS: u64 = 1 << 62;

/// What one rank did, for profiles and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Global instructions executed.
    pub instructions: u64,
    /// Rounds of communication this rank took part in with messages.
    pub exchanges: u64,
    /// Messages sent to other ranks.
    pub messages: u64,
    /// Bytes sent to other ranks.
    pub bytes_sent: u64,
    /// Bytes copied locally into temporaries (inputs this rank owns that had to be copied).
    pub bytes_copied: u64,
    /// Batches of local work handed to the child stack (fewer, larger ones fuse better).
    pub child_calls: u64,
    /// Seconds spent blocked waiting for messages (to arrive, or sends to complete).
    pub wait_seconds: f64,
    /// Seconds of local work (child calls) run while messages were in flight.
    pub overlap_seconds: f64,
    /// Seconds spent executing batches (local work, packing and waiting included).
    pub batch_seconds: f64,
}

impl Stats {
    /// The statistics as bytes (for gathering them on rank 0).
    pub fn to_bytes(&self) -> Vec<u8> {
        let ints = [self.instructions, self.exchanges, self.messages, self.bytes_sent, self.bytes_copied];
        let mut out: Vec<u8> = ints.iter().flat_map(|x| x.to_ne_bytes()).collect();
        out.extend(self.wait_seconds.to_ne_bytes());
        out.extend(self.overlap_seconds.to_ne_bytes());
        out.extend(self.batch_seconds.to_ne_bytes());
        out.extend(self.child_calls.to_ne_bytes());
        out
    }

    /// The share of the batch time spent waiting for messages (0 when no batch ran).
    pub fn wait_fraction(&self) -> f64 {
        if self.batch_seconds > 0.0 { self.wait_seconds / self.batch_seconds } else { 0.0 }
    }

    /// The sum of two ranks' (or two sessions') statistics.
    pub fn add(&self, o: &Stats) -> Stats {
        Stats {
            instructions: self.instructions + o.instructions,
            exchanges: self.exchanges + o.exchanges,
            messages: self.messages + o.messages,
            bytes_sent: self.bytes_sent + o.bytes_sent,
            bytes_copied: self.bytes_copied + o.bytes_copied,
            child_calls: self.child_calls + o.child_calls,
            wait_seconds: self.wait_seconds + o.wait_seconds,
            overlap_seconds: self.overlap_seconds + o.overlap_seconds,
            batch_seconds: self.batch_seconds + o.batch_seconds,
        }
    }

    /// The inverse of [`Stats::to_bytes`] (zeros for malformed input).
    pub fn from_bytes(b: &[u8]) -> Stats {
        let w = |i: usize| b.get(i * 8..i * 8 + 8).map_or(0, |s| u64::from_ne_bytes(s.try_into().expect("8")));
        Stats {
            instructions: w(0),
            exchanges: w(1),
            messages: w(2),
            bytes_sent: w(3),
            bytes_copied: w(4),
            wait_seconds: f64::from_bits(w(5)),
            overlap_seconds: f64::from_bits(w(6)),
            batch_seconds: f64::from_bits(w(7)),
            child_calls: w(8),
        }
    }
}

/// Where the bytes of a message part come from on this rank.
#[derive(Debug, Clone)]
enum Src {
    /// A view of this rank's blocks or temporaries.
    Local(View),
    /// A view of rank 0's host memory.
    Host(View),
}

/// Where the bytes of a message part land on this rank.
#[derive(Debug, Clone)]
enum Dest {
    /// A view of a temporary.
    Temp(View),
    /// A view of rank 0's host memory.
    Host(View),
}

/// One step of this rank's part of a batch.
#[derive(Debug)]
enum Entry {
    /// A local instruction for the child.
    Instr(Instruction),
    /// Values generated into a temporary, which the child then gets as a `Discard`.
    Generate { opcode: Opcode, seed_offset: (u64, u64), base: Base, region: Region, shape: Vec<usize> },
    /// A message from rank `src`: where its parts land, in the order the sender packed them.
    Recv { src: usize, to: Vec<Dest>, len: usize, ticket: Option<Ticket> },
    /// A message to rank `dst`: the parts it packs.
    Send { dst: usize, from: Vec<Src> },
    /// A copy on this rank to or from rank 0's host memory.
    HostCopy { from: Src, to: Dest },
    /// Rank 0's host memory releases a base.
    HostFree(BaseId),
}

/// An entry with the local bases it reads and writes (what orders it against the others).
#[derive(Debug)]
struct Step {
    entry: Entry,
    reads: Vec<u64>,
    writes: Vec<u64>,
    done: bool,
}

impl Step {
    fn new(entry: Entry) -> Step {
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        match &entry {
            Entry::Instr(i) => {
                let out = i.output().map(|v| v.base.id.0);
                match out {
                    Some(o) => {
                        writes.push(o);
                        reads.extend(i.operands[1..].iter().filter_map(Operand::as_view).map(|v| v.base.id.0));
                    }
                    // Sync, discard, free: they act on their base.
                    None => writes.extend(i.views().map(|v| v.base.id.0)),
                }
            }
            Entry::Generate { base, .. } => writes.push(base.id.0),
            Entry::Recv { to, .. } => writes.extend(to.iter().filter_map(|d| match d {
                Dest::Temp(v) => Some(v.base.id.0),
                Dest::Host(_) => None,
            })),
            Entry::Send { from, .. } => reads.extend(from.iter().filter_map(|s| match s {
                Src::Local(v) => Some(v.base.id.0),
                Src::Host(_) => None,
            })),
            Entry::HostCopy { from, to } => {
                if let Src::Local(v) = from {
                    reads.push(v.base.id.0);
                }
                if let Dest::Temp(v) = to {
                    writes.push(v.base.id.0);
                }
            }
            Entry::HostFree(_) => {}
        }
        Step { entry, reads, writes, done: false }
    }

    /// Whether this step must stay after a step that reads `r` and writes `w`.
    fn conflicts(&self, r: &HashSet<u64>, w: &HashSet<u64>) -> bool {
        self.writes.iter().any(|b| r.contains(b) || w.contains(b)) || self.reads.iter().any(|b| w.contains(b))
    }
}

/// This rank's part of one batch, being executed.
#[derive(Debug, Default)]
struct Schedule {
    steps: Vec<Step>,
    /// Steps before this one are all done.
    first: usize,
    /// Per base, the steps that touch it.
    refs: HashMap<u64, Vec<usize>>,
    /// Per base, the step that frees it with `Free`.
    frees: HashMap<u64, usize>,
    /// Sends posted and not yet completed.
    sends: Vec<Ticket>,
    /// Temporaries landed since the last child call, to `Discard` to the child.
    landed: Vec<Base>,
}

impl Schedule {
    fn push(&mut self, entry: Entry) {
        let step = Step::new(entry);
        let k = self.steps.len();
        for &b in step.reads.iter().chain(&step.writes) {
            let r = self.refs.entry(b).or_default();
            if r.last() != Some(&k) {
                r.push(k);
            }
        }
        if let Entry::Instr(i) = &step.entry
            && i.opcode == Opcode::Free
        {
            for v in i.views() {
                self.frees.insert(v.base.id.0, k);
            }
        }
        self.steps.push(step);
    }

    /// Receives posted before `end` and not landed yet.
    fn missing(&self, end: usize) -> Vec<usize> {
        (self.first..end)
            .filter(|&k| !self.steps[k].done && matches!(self.steps[k].entry, Entry::Recv { ticket: Some(_), .. }))
            .collect()
    }

    /// The steps before `end` a send reading `seeds` at `end` needs run first (transitively).
    fn needed(&self, end: usize, seeds: &[u64]) -> Vec<usize> {
        let (mut r, mut w) = (HashSet::new(), HashSet::new());
        r.extend(seeds.iter().copied());
        let mut out = Vec::new();
        for k in (self.first..end).rev() {
            let s = &self.steps[k];
            if !s.done && s.conflicts(&r, &w) {
                r.extend(s.reads.iter().copied());
                w.extend(s.writes.iter().copied());
                out.push(k);
            }
        }
        out
    }

    /// The local steps before `end` that need no message still in flight, in order, plus the
    /// later frees of the bases they use whose every other use is done or among them.
    fn ready(&self, end: usize) -> Vec<usize> {
        let (mut r, mut w) = (HashSet::new(), HashSet::new());
        let mut out = Vec::new();
        for k in self.first..end {
            let s = &self.steps[k];
            if s.done {
                continue;
            }
            let runnable = matches!(s.entry, Entry::Instr(_) | Entry::Generate { .. });
            if runnable && !s.conflicts(&r, &w) {
                out.push(k);
            } else {
                r.extend(s.reads.iter().copied());
                w.extend(s.writes.iter().copied());
            }
        }
        self.with_frees(out)
    }

    /// `ks` (in order) plus the frees of the bases they use whose every other use is done or
    /// among them (a free may move up past steps that do not touch its base).
    fn with_frees(&self, mut ks: Vec<usize>) -> Vec<usize> {
        if ks.is_empty() {
            return ks;
        }
        let chosen: HashSet<usize> = ks.iter().copied().collect();
        let mut hoisted = Vec::new();
        let mut seen = HashSet::new();
        for &k in &ks {
            for &b in self.steps[k].reads.iter().chain(&self.steps[k].writes) {
                if !seen.insert(b) {
                    continue;
                }
                let Some(&f) = self.frees.get(&b) else { continue };
                if chosen.contains(&f) || self.steps[f].done || self.steps[f].writes.len() != 1 {
                    continue;
                }
                if self.refs[&b].iter().all(|&j| j == f || self.steps[j].done || chosen.contains(&j)) {
                    hoisted.push(f);
                }
            }
        }
        ks.extend(hoisted);
        ks.sort_unstable();
        ks
    }

    fn advance(&mut self) {
        while self.first < self.steps.len() && self.steps[self.first].done {
            self.first += 1;
        }
    }
}

/// One rank's executor: its transport, its child stack and the memory of its blocks.
pub struct Executor<T> {
    /// How this rank talks to the others.
    pub transport: T,
    /// The rank's own stack (`node -> cpu`).
    pub child: Box<dyn Component>,
    local: HostMemory,
    pending: Vec<Instruction>,
    next_temp: u64,
    error: Option<Error>,
    /// Global bases this rank has seen and not seen freed (to release at the end of a session).
    live: BTreeMap<BaseId, Base>,
    /// Local bases whose host memory is current (synced, not written since).
    fresh: HashSet<u64>,
    /// Whether local work runs while messages are in flight (latency hiding); when false, every
    /// message in flight is waited for before the child runs anything.
    pub overlap: bool,
    /// Whether runs of element-wise instructions are planned together ([`crate::fuse`]).
    pub fuse: bool,
    /// How the child combines reductions (every rank's child is built from one config).
    reduction: ReductionOrder,
    /// What this rank did so far.
    pub stats: Stats,
}

/// Hands `batch` to the child (unless an earlier error stopped it) and empties it.
fn run_child(
    child: &mut dyn Component,
    local: &mut HostMemory,
    error: &mut Option<Error>,
    batch: &mut Vec<Instruction>,
) {
    if batch.is_empty() {
        return;
    }
    if error.is_some() {
        for i in batch.iter().filter(|i| i.opcode == Opcode::Free) {
            i.views().for_each(|v| local.free(v.base.id));
        }
    } else if let Err(e) = child.execute(batch, local) {
        *error = Some(e);
    }
    batch.clear();
}

impl<T: Transport> Executor<T> {
    /// An executor over `transport` running local work on `child`.
    pub fn new(transport: T, child: Box<dyn Component>) -> Executor<T> {
        Executor {
            reduction: child.reduction_order(),
            transport,
            child,
            local: HostMemory::new(),
            pending: Vec::new(),
            next_temp: 0,
            error: None,
            live: BTreeMap::new(),
            fresh: HashSet::new(),
            overlap: true,
            fuse: true,
            stats: Stats::default(),
        }
    }

    /// Ends a session on a rank that goes on serving: frees this rank's blocks of every base the
    /// session left alive, and starts the statistics afresh. Returns the session's statistics.
    pub fn end_session(&mut self) -> Stats {
        let (me, p) = (self.transport.rank(), self.transport.size());
        for base in std::mem::take(&mut self.live).into_values() {
            let blocks = Blocks::new(base.nelem, p);
            if blocks.len(me) > 0 {
                let local = blocks.local_base(&base, me);
                self.pending.push(Instruction::new(Opcode::Free, [View::of_base(local).into()]));
            }
        }
        run_child(self.child.as_mut(), &mut self.local, &mut self.error, &mut self.pending);
        self.local = HostMemory::new();
        self.fresh.clear();
        self.error = None;
        std::mem::take(&mut self.stats)
    }

    /// Runs a validated batch on this rank; `host` is rank 0's host memory (`None` elsewhere).
    /// Transport failures return at once; an execution failure is reported after the batch,
    /// the rank keeping its part of the communication going meanwhile.
    pub fn run_batch(&mut self, batch: &[Instruction], mut host: Option<&mut HostMemory>) -> Result<()> {
        let p = self.transport.size();
        let started = Instant::now();
        let mut sched = Schedule::default();
        for instr in batch {
            self.stats.instructions += 1;
            if instr.opcode == Opcode::Free {
                instr.views().for_each(|v| {
                    self.live.remove(&v.base.id);
                });
            } else {
                for v in instr.views() {
                    self.live.insert(v.base.id, v.base);
                }
            }
        }
        let units =
            if self.fuse { units(batch, p, self.reduction) } else { (0..batch.len()).map(Unit::Single).collect() };
        for unit in units {
            let plan = match &unit {
                Unit::Group(group) => plan_group(batch, group, p),
                Unit::Single(i) => plan(&batch[*i], p, self.reduction),
            };
            self.add_plan(&plan, &mut sched, host.as_deref_mut())?;
        }
        let r = self.execute(&mut sched, host);
        self.stats.batch_seconds += started.elapsed().as_secs_f64();
        r?;
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Appends this rank's steps of `plan` to `sched`.
    fn add_plan(&mut self, plan: &Plan, sched: &mut Schedule, mut host: Option<&mut HostMemory>) -> Result<()> {
        let me = self.transport.rank();
        let mut temps = Vec::with_capacity(plan.temps.len());
        for t in &plan.temps {
            temps.push((t.rank == me).then(|| {
                self.next_temp += 1;
                Base { id: BaseId(TEMP_IDS + self.next_temp), dtype: t.dtype, nelem: t.nelem }
            }));
        }
        if let (Some(b), Some(h)) = (plan.host_ensure, host.as_deref_mut()) {
            h.ensure(&b)?;
        }
        for stage in &plan.stages {
            let mut sends: BTreeMap<usize, Vec<Src>> = BTreeMap::new();
            let mut recvs: BTreeMap<usize, (Vec<Dest>, usize)> = BTreeMap::new();
            let mut copies = Vec::new();
            for part in &stage.parts {
                if part.src != me && part.dst != me {
                    continue;
                }
                let from = |exec: &Self| -> Result<Src> {
                    Ok(match &part.from {
                        Loc::Host(v) => Src::Host(v.clone()),
                        loc => Src::Local(exec.resolve(loc, &temps)?),
                    })
                };
                let to = |exec: &Self| -> Result<Dest> {
                    Ok(match &part.to {
                        Loc::Host(v) => Dest::Host(v.clone()),
                        loc => Dest::Temp(exec.resolve(loc, &temps)?),
                    })
                };
                let bytes = part.to.view().nelem() * part.to.view().dtype().size();
                if part.src == me && part.dst == me {
                    self.stats.bytes_copied += bytes as u64;
                    copies.push(match (from(self)?, to(self)?) {
                        (Src::Local(f), Dest::Temp(t)) => {
                            Entry::Instr(Instruction::new(Opcode::Identity, [t.into(), f.into()]))
                        }
                        (from, to) => Entry::HostCopy { from, to },
                    });
                } else if part.src == me {
                    sends.entry(part.dst).or_default().push(from(self)?);
                } else {
                    let r = recvs.entry(part.src).or_default();
                    r.0.push(to(self)?);
                    r.1 += bytes;
                }
            }
            if !sends.is_empty() || !recvs.is_empty() {
                self.stats.exchanges += 1;
            }
            for (dst, from) in sends {
                sched.push(Entry::Send { dst, from });
            }
            for c in copies {
                sched.push(c);
            }
            for (src, (to, len)) in recvs {
                sched.push(Entry::Recv { src, to, len, ticket: None });
            }
            self.entries(&stage.early, &temps, sched)?;
            self.entries(&stage.late, &temps, sched)?;
        }
        for t in temps.iter().flatten() {
            sched.push(Entry::Instr(Instruction::new(Opcode::Free, [View::of_base(*t).into()])));
        }
        if let (Some(id), Some(_)) = (plan.host_free, host) {
            sched.push(Entry::HostFree(id));
        }
        Ok(())
    }

    /// The local view a location names on this rank.
    fn resolve(&self, loc: &Loc, temps: &[Option<Base>]) -> Result<View> {
        Ok(match loc {
            Loc::Block(v) => Blocks::new(v.base.nelem, self.transport.size()).localize(v, self.transport.rank()),
            Loc::Temp(v) => {
                let base = temps
                    .get(v.base.id.0 as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| Error::Internal("cluster: a temporary of another rank".into()))?;
                View { base, ..v.clone() }
            }
            Loc::Host(v) => v.clone(),
        })
    }

    /// Steps for this rank's tasks.
    fn entries(&mut self, tasks: &[Task], temps: &[Option<Base>], sched: &mut Schedule) -> Result<()> {
        let me = self.transport.rank();
        for task in tasks.iter().filter(|t| t.rank == me) {
            match &task.work {
                Work::Child(op, operands) => {
                    let mut ops = Vec::with_capacity(operands.len());
                    for o in operands {
                        ops.push(match o {
                            LocalOperand::View(loc) => Operand::View(self.resolve(loc, temps)?),
                            LocalOperand::Const(c) => Operand::Const(*c),
                        });
                    }
                    sched.push(Entry::Instr(Instruction::new(*op, ops)));
                }
                Work::Generate { opcode, seed_offset, temp, region, shape } => {
                    let base = temps[*temp].ok_or_else(|| Error::Internal("cluster: foreign temporary".into()))?;
                    sched.push(Entry::Generate {
                        opcode: *opcode,
                        seed_offset: *seed_offset,
                        base,
                        region: region.clone(),
                        shape: shape.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Fills temporary `base` with the values of the box `region` of an output of `shape`.
    fn generate(
        &mut self,
        opcode: Opcode,
        (seed, offset): (u64, u64),
        base: Base,
        region: &Region,
        shape: &[usize],
    ) -> Result<()> {
        let rm = vm_ir::view::row_major_strides(shape);
        let origin: i64 = region.lo.iter().zip(&rm).map(|(&l, &s)| l as i64 * s).sum();
        let positions = View { base, start: origin, shape: region.shape.iter().copied().collect(), stride: rm };
        let buf = self.local.ensure(&base)?;
        let random = opcode == Opcode::Random;
        with_dtype!(base.dtype, E => {
            let data = buf.as_mut_slice::<E>();
            let mut k = 0;
            crate::split::for_each_index(&positions.shape, |idx| {
                let pos = positions.offset_of(idx) as u64;
                data[k] = if random {
                    E::from_random_bits(random_bits(seed, offset.wrapping_add(pos)))
                } else {
                    Cast::<E>::cast(pos)
                };
                k += 1;
            });
        });
        Ok(())
    }

    /// Walks the steps in order: posts receives, sends as soon as the elements are current,
    /// then runs what is left.
    fn execute(&mut self, sched: &mut Schedule, mut host: Option<&mut HostMemory>) -> Result<()> {
        for k in 0..sched.steps.len() {
            match &sched.steps[k].entry {
                Entry::Instr(_) | Entry::Generate { .. } => {}
                Entry::Recv { src, len, .. } => {
                    let t = self.transport.post_recv(*src, *len)?;
                    if let Entry::Recv { ticket, .. } = &mut sched.steps[k].entry {
                        *ticket = Some(t);
                    }
                }
                Entry::Send { .. } | Entry::HostCopy { .. } | Entry::HostFree(_) => {
                    let seeds = sched.steps[k].reads.clone();
                    if !seeds.is_empty() {
                        self.flush_for(sched, k, &seeds, &mut host)?;
                    }
                    let reads_host = match &sched.steps[k].entry {
                        Entry::Send { from, .. } => from.iter().any(|s| matches!(s, Src::Host(_))),
                        Entry::HostCopy { from, .. } => matches!(from, Src::Host(_)),
                        _ => true,
                    };
                    if reads_host {
                        // What lands in rank 0's host memory lands before it is read or freed.
                        for r in sched.missing(k) {
                            if matches!(&sched.steps[r].entry, Entry::Recv { to, .. } if to.iter().any(|d| matches!(d, Dest::Host(_))))
                            {
                                self.land(sched, r, true, &mut host)?;
                            }
                        }
                    }
                    self.communicate(sched, k, &mut host)?;
                    sched.steps[k].done = true;
                }
            }
            sched.advance();
        }
        // What is left: first what needs no missing message, then the rest as messages land.
        let end = sched.steps.len();
        loop {
            self.poll(sched, end, &mut host)?;
            if !self.overlap {
                for r in sched.missing(end) {
                    self.land(sched, r, true, &mut host)?;
                }
            }
            let ready = sched.ready(end);
            self.run(sched, &ready, &[])?;
            sched.advance();
            match sched.missing(end).first() {
                Some(&r) => self.land(sched, r, true, &mut host)?,
                None => break,
            }
        }
        for t in std::mem::take(&mut sched.sends) {
            let w = Instant::now();
            self.transport.wait(t)?;
            self.stats.wait_seconds += w.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// Makes current the local bases `seeds` that step `end` reads: runs every step before it
    /// that needs no missing message (waiting for the messages those it depends on need).
    fn flush_for(
        &mut self,
        sched: &mut Schedule,
        end: usize,
        seeds: &[u64],
        host: &mut Option<&mut HostMemory>,
    ) -> Result<()> {
        self.poll(sched, end, host)?;
        let needed = sched.needed(end, seeds);
        let waits: Vec<usize> = if self.overlap {
            needed.iter().rev().copied().filter(|&k| matches!(sched.steps[k].entry, Entry::Recv { .. })).collect()
        } else {
            sched.missing(end)
        };
        for r in waits {
            self.land(sched, r, true, host)?;
        }
        // Nothing to run for the send: leave the queued work to grow (it fuses better later).
        let ready = if needed.is_empty() { Vec::new() } else { sched.ready(end) };
        self.run(sched, &ready, seeds)
    }

    /// Lands every receive before `end` that has completed (driving the transport's progress).
    fn poll(&mut self, sched: &mut Schedule, end: usize, host: &mut Option<&mut HostMemory>) -> Result<()> {
        for r in sched.missing(end) {
            self.land(sched, r, false, host)?;
        }
        Ok(())
    }

    /// Unpacks receive `r` if it has completed (or, with `block`, once it has).
    fn land(&mut self, sched: &mut Schedule, r: usize, block: bool, host: &mut Option<&mut HostMemory>) -> Result<()> {
        let Entry::Recv { src, to, ticket: Some(ticket), .. } = &sched.steps[r].entry else { return Ok(()) };
        let (src, ticket) = (*src, *ticket);
        if sched.steps[r].done {
            return Ok(());
        }
        if !block && !self.transport.test(ticket)? {
            return Ok(());
        }
        let w = Instant::now();
        let msg = self.transport.wait(ticket)?;
        self.stats.wait_seconds += w.elapsed().as_secs_f64();
        let mut at = 0;
        for d in to.clone() {
            let v = match &d {
                Dest::Temp(v) | Dest::Host(v) => v,
            };
            let n = v.nelem() * v.dtype().size();
            let data = msg
                .get(at..at + n)
                .ok_or_else(|| Error::Internal(format!("cluster: a short message from rank {src}")))?;
            at += n;
            match &d {
                Dest::Temp(v) => {
                    unpack(self.local.ensure(&v.base)?, v, data)?;
                    self.fresh.remove(&v.base.id.0);
                    if !sched.landed.contains(&v.base) {
                        sched.landed.push(v.base);
                    }
                }
                Dest::Host(v) => match host {
                    Some(h) => unpack(h.ensure(&v.base)?, v, data)?,
                    None => return Err(Error::Internal("cluster: host memory off rank 0".into())),
                },
            }
        }
        sched.steps[r].done = true;
        Ok(())
    }

    /// Runs steps `ks` (in order) in one child call, then syncs the bases `seeds` not current.
    fn run(&mut self, sched: &mut Schedule, ks: &[usize], seeds: &[u64]) -> Result<()> {
        // Landed temporaries are announced to the child with the first work that may read them.
        let mut batch: Vec<Instruction> = if ks.is_empty() {
            Vec::new()
        } else {
            sched.landed.drain(..).map(|b| Instruction::new(Opcode::Discard, [View::of_base(b).into()])).collect()
        };
        for &k in ks {
            for w in &sched.steps[k].writes {
                self.fresh.remove(w);
            }
            match &sched.steps[k].entry {
                Entry::Instr(i) => batch.push(i.clone()),
                Entry::Generate { opcode, seed_offset, base, region, shape } => {
                    let (opcode, seed_offset, base) = (*opcode, *seed_offset, *base);
                    let (region, shape) = (region.clone(), shape.clone());
                    self.generate(opcode, seed_offset, base, &region, &shape)?;
                    batch.push(Instruction::new(Opcode::Discard, [View::of_base(base).into()]));
                }
                _ => return Err(Error::Internal("cluster: only local steps run in the child".into())),
            }
            sched.steps[k].done = true;
        }
        // Sync what is sent now, and what this call writes that a later step sends (so that
        // sending it needs no call of its own).
        let mut sync: Vec<u64> = seeds.to_vec();
        for &k in ks {
            for &b in &sched.steps[k].writes {
                let sent_later = sched.refs[&b].iter().any(|&j| {
                    j > k
                        && !sched.steps[j].done
                        && matches!(sched.steps[j].entry, Entry::Send { .. } | Entry::HostCopy { .. })
                        && sched.steps[j].reads.contains(&b)
                });
                if sent_later && !sync.contains(&b) {
                    sync.push(b);
                }
            }
        }
        for b in sync {
            if self.fresh.insert(b) {
                let base = self.base_of(sched, b)?;
                batch.push(Instruction::new(Opcode::Sync, [View::of_base(base).into()]));
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        if !self.overlap {
            for t in std::mem::take(&mut sched.sends) {
                let w = Instant::now();
                self.transport.wait(t)?;
                self.stats.wait_seconds += w.elapsed().as_secs_f64();
            }
        }
        let in_flight = !sched.sends.is_empty() || !sched.missing(sched.steps.len()).is_empty();
        let t = Instant::now();
        self.stats.child_calls += 1;
        run_child(self.child.as_mut(), &mut self.local, &mut self.error, &mut batch);
        if in_flight {
            self.stats.overlap_seconds += t.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// The local base with id `b` as some step of `sched` names it.
    fn base_of(&self, sched: &Schedule, b: u64) -> Result<Base> {
        for &k in sched.refs.get(&b).into_iter().flatten() {
            let found = match &sched.steps[k].entry {
                Entry::Send { from, .. } => from.iter().find_map(|s| match s {
                    Src::Local(v) if v.base.id.0 == b => Some(v.base),
                    _ => None,
                }),
                Entry::HostCopy { from: Src::Local(v), .. } if v.base.id.0 == b => Some(v.base),
                _ => None,
            };
            if let Some(base) = found {
                return Ok(base);
            }
        }
        Err(Error::Internal("cluster: a base to sync that no step reads".into()))
    }

    /// Performs step `k`, a send or a copy involving rank 0's host memory, whose inputs are
    /// current.
    fn communicate(&mut self, sched: &mut Schedule, k: usize, host: &mut Option<&mut HostMemory>) -> Result<()> {
        match &sched.steps[k].entry {
            Entry::Send { dst, from } => {
                let mut msg = Vec::new();
                for s in from {
                    self.read(s, host, &mut msg)?;
                }
                self.stats.messages += 1;
                self.stats.bytes_sent += msg.len() as u64;
                let t = self.transport.post_send(*dst, msg)?;
                sched.sends.push(t);
            }
            Entry::HostCopy { from, to } => {
                let mut bytes = Vec::new();
                self.read(from, host, &mut bytes)?;
                match to {
                    Dest::Temp(v) => {
                        unpack(self.local.ensure(&v.base)?, v, &bytes)?;
                        self.fresh.remove(&v.base.id.0);
                        sched.landed.push(v.base);
                    }
                    Dest::Host(v) => match host {
                        Some(h) => unpack(h.ensure(&v.base)?, v, &bytes)?,
                        None => return Err(Error::Internal("cluster: host memory off rank 0".into())),
                    },
                }
            }
            Entry::HostFree(id) => {
                if let Some(h) = host {
                    h.free(*id);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn read(&mut self, src: &Src, host: &mut Option<&mut HostMemory>, out: &mut Vec<u8>) -> Result<()> {
        match src {
            Src::Local(v) => pack(self.local.ensure(&v.base)?, v, out),
            Src::Host(v) => match host {
                Some(h) => pack(h.ensure(&v.base)?, v, out),
                None => Err(Error::Internal("cluster: host memory off rank 0".into())),
            },
        }
    }
}
