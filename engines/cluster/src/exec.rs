//! Executing plans on one rank: packing and sending, receiving and unpacking, and feeding the
//! child stack the local instructions, with the work that needs no remote data run while the
//! messages are in flight (latency hiding, as in DistNumPy).
//!
//! Local instructions are queued and handed to the child in batches: only when elements must
//! be read for sending (or the batch ends) is the queue flushed, so a run of purely local
//! instructions reaches the child as one batch it can fuse.

use crate::dist::Blocks;
use crate::pack::{pack, unpack};
use crate::plan::{Loc, LocalOperand, Plan, Stage, Task, Work, plan};
use crate::transport::Transport;
use std::collections::BTreeMap;
use std::time::Instant;
use vm_core::random::{FromRandomBits, random_bits};
use vm_core::scalar::Cast;
use vm_core::{Base, BaseId, Component, Error, HostMemory, Instruction, Opcode, Operand, Result, View, with_dtype};

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
    /// Seconds spent waiting for messages after the overlapped local work was done.
    pub wait_seconds: f64,
    /// Seconds of local work run while messages were in flight.
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
    /// Whether local work that needs no remote data runs while messages are in flight (latency
    /// hiding); when false, every exchange completes before any queued work runs.
    pub overlap: bool,
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
            transport,
            child,
            local: HostMemory::new(),
            pending: Vec::new(),
            next_temp: 0,
            error: None,
            live: BTreeMap::new(),
            overlap: true,
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
        self.error = None;
        std::mem::take(&mut self.stats)
    }

    /// Runs a validated batch on this rank; `host` is rank 0's host memory (`None` elsewhere).
    /// Transport failures return at once; an execution failure is reported after the batch,
    /// the rank keeping its part of the communication going meanwhile.
    pub fn run_batch(&mut self, batch: &[Instruction], mut host: Option<&mut HostMemory>) -> Result<()> {
        let p = self.transport.size();
        let started = Instant::now();
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
            self.run_plan(&plan(instr, p), host.as_deref_mut())?;
        }
        run_child(self.child.as_mut(), &mut self.local, &mut self.error, &mut self.pending);
        self.stats.batch_seconds += started.elapsed().as_secs_f64();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn run_plan(&mut self, plan: &Plan, mut host: Option<&mut HostMemory>) -> Result<()> {
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
            self.run_stage(stage, &temps, host.as_deref_mut())?;
        }
        for t in temps.iter().flatten() {
            self.pending.push(Instruction::new(Opcode::Free, [View::of_base(*t).into()]));
        }
        if let (Some(id), Some(h)) = (plan.host_free, host) {
            h.free(id);
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

    fn read(
        &mut self,
        loc: &Loc,
        temps: &[Option<Base>],
        host: &mut Option<&mut HostMemory>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let v = self.resolve(loc, temps)?;
        let buf = match (loc, host) {
            (Loc::Host(_), Some(h)) => h.ensure(&v.base)?,
            (Loc::Host(_), None) => return Err(Error::Internal("cluster: host memory off rank 0".into())),
            _ => self.local.ensure(&v.base)?,
        };
        pack(buf, &v, out)
    }

    fn write(
        &mut self,
        loc: &Loc,
        temps: &[Option<Base>],
        host: &mut Option<&mut HostMemory>,
        data: &[u8],
    ) -> Result<()> {
        let v = self.resolve(loc, temps)?;
        match (loc, host) {
            (Loc::Host(_), Some(h)) => unpack(h.ensure(&v.base)?, &v, data),
            (Loc::Temp(_), _) => {
                unpack(self.local.ensure(&v.base)?, &v, data)?;
                self.pending.push(Instruction::new(Opcode::Discard, [View::of_base(v.base).into()]));
                Ok(())
            }
            _ => Err(Error::Internal("cluster: data may only land in temporaries or rank 0's host memory".into())),
        }
    }

    /// Local instructions for this rank's tasks (generating values into temporaries now).
    fn instructions(&mut self, tasks: &[Task], temps: &[Option<Base>]) -> Result<Vec<Instruction>> {
        let me = self.transport.rank();
        let mut out = Vec::new();
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
                    out.push(Instruction::new(*op, ops));
                }
                Work::Generate { opcode, seed_offset, temp, region, shape } => {
                    let base = temps[*temp].ok_or_else(|| Error::Internal("cluster: foreign temporary".into()))?;
                    let rm = vm_core::view::row_major_strides(shape);
                    let origin: i64 = region.lo.iter().zip(&rm).map(|(&l, &s)| l as i64 * s).sum();
                    let positions =
                        View { base, start: origin, shape: region.shape.iter().copied().collect(), stride: rm };
                    let buf = self.local.ensure(&base)?;
                    let (random, (seed, offset)) = (*opcode == Opcode::Random, *seed_offset);
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
                    out.push(Instruction::new(Opcode::Discard, [View::of_base(base).into()]));
                }
            }
        }
        Ok(out)
    }

    fn run_stage(&mut self, stage: &Stage, temps: &[Option<Base>], mut host: Option<&mut HostMemory>) -> Result<()> {
        let me = self.transport.rank();
        // 1. Make what is sent current in host memory: flush queued work, sync what is read.
        let mut syncs: Vec<Base> = Vec::new();
        for part in stage.parts.iter().filter(|x| x.src == me) {
            if !matches!(part.from, Loc::Host(_)) {
                let base = self.resolve(&part.from, temps)?.base;
                if !syncs.contains(&base) {
                    syncs.push(base);
                }
            }
        }
        if !syncs.is_empty() {
            self.pending.extend(syncs.iter().map(|b| Instruction::new(Opcode::Sync, [View::of_base(*b).into()])));
            run_child(self.child.as_mut(), &mut self.local, &mut self.error, &mut self.pending);
        }
        // 2. Pack: one message per destination; parts to this rank itself are copied now.
        let mut sends: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        let mut incoming: BTreeMap<usize, usize> = BTreeMap::new();
        for part in &stage.parts {
            if part.src == me && part.dst == me {
                let mut bytes = Vec::new();
                self.read(&part.from, temps, &mut host, &mut bytes)?;
                self.stats.bytes_copied += bytes.len() as u64;
                self.write(&part.to, temps, &mut host, &bytes)?;
            } else if part.src == me {
                let mut msg = sends.remove(&part.dst).unwrap_or_default();
                self.read(&part.from, temps, &mut host, &mut msg)?;
                sends.insert(part.dst, msg);
            } else if part.dst == me {
                let v = part.to.view();
                *incoming.entry(part.src).or_default() += v.nelem() * v.dtype().size();
            }
        }
        let early = self.instructions(&stage.early, temps)?;
        if sends.is_empty() && incoming.is_empty() {
            self.pending.extend(early);
        } else {
            // 3. Send and receive; run the local work meanwhile.
            let sends: Vec<(usize, Vec<u8>)> = sends.into_iter().collect();
            self.stats.exchanges += 1;
            self.stats.messages += sends.len() as u64;
            self.stats.bytes_sent += sends.iter().map(|(_, m)| m.len() as u64).sum::<u64>();
            let mut recvs: Vec<(usize, Vec<u8>)> = incoming.into_iter().map(|(src, n)| (src, vec![0u8; n])).collect();
            self.pending.extend(early);
            let (child, local, error, pending) = (&mut self.child, &mut self.local, &mut self.error, &mut self.pending);
            let mut overlapped = 0.0;
            let waited = if self.overlap {
                self.transport.exchange(&sends, &mut recvs, &mut || {
                    let t = Instant::now();
                    run_child(child.as_mut(), local, error, pending);
                    overlapped = t.elapsed().as_secs_f64();
                })?
            } else {
                // No latency hiding: the queued work waits for the messages.
                let waited = self.transport.exchange(&sends, &mut recvs, &mut || {})?;
                run_child(child.as_mut(), local, error, pending);
                waited
            };
            self.stats.wait_seconds += waited;
            self.stats.overlap_seconds += overlapped;
            // 4. Unpack, in the order the sender packed.
            let mut at: BTreeMap<usize, usize> = BTreeMap::new();
            for part in stage.parts.iter().filter(|x| x.dst == me && x.src != me) {
                let n = part.to.view().nelem() * part.to.view().dtype().size();
                let off = at.entry(part.src).or_default();
                let msg = &recvs.iter().find(|(s, _)| *s == part.src).expect("posted").1;
                let data = msg[*off..*off + n].to_vec();
                *off += n;
                self.write(&part.to, temps, &mut host, &data)?;
            }
        }
        let late = self.instructions(&stage.late, temps)?;
        self.pending.extend(late);
        Ok(())
    }
}
