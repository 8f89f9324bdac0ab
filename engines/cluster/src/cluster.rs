//! The `cluster` component on rank 0 and the serving loop of the other ranks.

use crate::codec::{Command, decode, encode};
use crate::exec::{Executor, Stats};
use crate::transport::{LocalTransport, Transport, local_job};
use std::thread::JoinHandle;
use vm_ir::{Error, Instruction, Opcode, Result};
use vm_runtime::component::forward_extension;
use vm_runtime::{Component, ComponentInfo, HostMemory, ReductionOrder, Settings};

vm_runtime::settings! {
    /// The `cluster` component's settings.
    #[derive(Copy, Eq)]
    pub struct Options {
        /// latency hiding: run local work while messages are in flight (false: wait first, then
        /// compute)
        overlap: bool = true,
        /// plan runs of element-wise instructions together so the child fuses them (false: one
        /// at a time)
        fuse: bool = true,
        /// at each shutdown, print every rank's instructions, traffic, batch time and time
        /// waiting
        profile: bool = false,
    }
}

/// One line per rank and a total: instructions, traffic, time in batches, time waiting.
pub fn profile_report(stats: &[Stats]) -> String {
    let mut out = String::from("cluster profile (per rank):\n");
    let line = |who: &str, s: &Stats| {
        format!(
            "  {who:>5}: {:>8} instructions {:>7} child calls {:>7} exchanges {:>7} messages {:>12} bytes sent; {:.6} s in batches, {:.6} s waiting ({:.1} %), {:.6} s overlapped\n",
            s.instructions,
            s.child_calls,
            s.exchanges,
            s.messages,
            s.bytes_sent,
            s.batch_seconds,
            s.wait_seconds,
            100.0 * s.wait_fraction(),
            s.overlap_seconds
        )
    };
    for (r, s) in stats.iter().enumerate() {
        out += &line(&format!("{r}"), s);
    }
    let total = stats.iter().fold(Stats::default(), |a, s| a.add(s));
    out += &line("all", &total);
    out
}

/// The cluster manager as rank 0 sees it: a [`Component`] that broadcasts every batch and runs
/// its own part of it. Shutting it down (or dropping it) ends the session on every rank.
pub struct Cluster<T: Transport> {
    exec: Executor<T>,
    table: String,
    settings: Vec<(String, String)>,
    shut: bool,
    profile: bool,
    workers: Vec<JoinHandle<Result<Stats>>>,
    rank_stats: Vec<Stats>,
}

fn status_bytes(r: &Result<()>) -> Vec<u8> {
    match r {
        Ok(()) => Vec::new(),
        Err(e) => e.to_string().into_bytes(),
    }
}

impl<T: Transport> Cluster<T> {
    /// Rank 0's manager over `transport` (whose rank must be 0), running its part on `child`.
    pub fn new(mut transport: T, child: Box<dyn Component>) -> Cluster<T> {
        assert_eq!(transport.rank(), 0, "the cluster component lives on rank 0; other ranks serve");
        transport.session_started();
        Cluster {
            exec: Executor::new(transport, child),
            table: "cluster".into(),
            settings: Vec::new(),
            shut: false,
            profile: false,
            workers: Vec::new(),
            rank_stats: Vec::new(),
        }
    }

    /// Applies `options` on this rank (the other ranks apply their own, from the same config).
    pub fn with_options(mut self, options: Options) -> Cluster<T> {
        self.exec.overlap = options.overlap;
        self.exec.fuse = options.fuse;
        self.profile = options.profile;
        self
    }

    /// Names the component after its config table and records its settings for `vm info`.
    pub fn with_settings(mut self, settings: &Settings) -> Cluster<T> {
        if !settings.component.is_empty() {
            self.table = settings.component.clone();
        }
        self.settings = settings.to_pairs();
        self
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.exec.transport.size()
    }

    /// Rank 0's statistics so far.
    pub fn stats(&self) -> Stats {
        self.exec.stats
    }

    /// Every rank's statistics, by rank, as reported at shutdown (empty before).
    pub fn rank_stats(&self) -> &[Stats] {
        &self.rank_stats
    }

    fn end_session(&mut self) -> Result<()> {
        if self.shut {
            return Ok(());
        }
        self.shut = true;
        self.exec.transport.broadcast(encode(&Command::Shutdown))?;
        let child = self.exec.child.shutdown();
        let all = self.exec.transport.gather(self.exec.stats.to_bytes())?;
        self.exec.transport.session_ended();
        self.rank_stats = all.iter().map(|b| Stats::from_bytes(b)).collect();
        if self.profile {
            eprint!("{}", profile_report(&self.rank_stats));
        }
        for w in self.workers.drain(..) {
            w.join().map_err(|_| Error::Internal("cluster: a rank thread panicked".into()))??;
        }
        child
    }
}

impl<T: Transport> Component for Cluster<T> {
    fn name(&self) -> &str {
        crate::IMPLEMENTATION.name
    }

    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        if self.shut {
            return Err(Error::Protocol("the cluster session has been shut down".into()));
        }
        vm_ir::instr::validate_batch(batch)?;
        self.exec.transport.broadcast(encode(&Command::Batch(batch.to_vec())))?;
        let mine = self.exec.run_batch(batch, Some(mem));
        let statuses = self.exec.transport.gather(status_bytes(&mine))?;
        mine?;
        for (rank, s) in statuses.iter().enumerate().skip(1) {
            if !s.is_empty() {
                return Err(Error::Execution(format!("on rank {rank}: {}", String::from_utf8_lossy(s))));
            }
        }
        Ok(())
    }

    fn child(&self) -> Option<&(dyn Component + 'static)> {
        Some(self.exec.child.as_ref())
    }

    fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
        Some(self.exec.child.as_mut())
    }

    /// Every rank's child hears of the method; rank 0's answers for all.
    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        self.exec.transport.broadcast(encode(&Command::Register(name.to_string(), opcode)))?;
        forward_extension(self, name, opcode)
    }

    /// Reductions across ranks keep the reference order exactly when the ranks' children do.
    fn reduction_order(&self) -> ReductionOrder {
        self.exec.child.reduction_order()
    }

    fn info(&self) -> ComponentInfo {
        let s = self.exec.stats;
        let notes = vec![
            format!("{} ranks; blocks of each base's flat index space, owner computes", self.ranks()),
            format!(
                "rank 0: {} instructions, {} child calls, {} exchanges, {} messages, {} bytes sent, {} bytes copied locally",
                s.instructions, s.child_calls, s.exchanges, s.messages, s.bytes_sent, s.bytes_copied
            ),
            format!(
                "rank 0: {:.6} s in batches, {:.6} s waiting for messages, {:.6} s of local work overlapped",
                s.batch_seconds, s.wait_seconds, s.overlap_seconds
            ),
            format!("latency hiding {}", if self.exec.overlap { "on" } else { "off" }),
        ];
        ComponentInfo {
            name: self.table.clone(),
            implementation: crate::IMPLEMENTATION.name.into(),
            settings: self.settings.clone(),
            notes,
            ..ComponentInfo::default()
        }
    }

    /// Ends the session on every rank: the other ranks shut their children down while rank 0
    /// does, and report their statistics.
    fn shutdown(&mut self) -> Result<()> {
        self.end_session()
    }
}

impl<T: Transport> Drop for Cluster<T> {
    fn drop(&mut self) {
        // Unblocks the other ranks when rank 0 drops the stack without a shutdown (or unwinds).
        let _ = self.end_session();
    }
}

/// How a session ended on a serving rank.
enum Ended {
    /// Rank 0 shut its stack down; another session may follow.
    Session(Stats),
    /// Rank 0's process is exiting.
    Job,
}

/// Serves commands until the session or the job ends.
fn serve_session<T: Transport>(exec: &mut Executor<T>) -> Result<Ended> {
    loop {
        let msg = exec.transport.broadcast(Vec::new())?;
        match decode(&msg)? {
            Command::Batch(batch) => {
                let r = exec.run_batch(&batch, None);
                exec.transport.gather(status_bytes(&r))?;
            }
            Command::Register(name, op) => {
                // Rank 0's child answers for all: every rank runs the same stack.
                let _ = exec.child.register_extension(&name, op);
            }
            Command::Shutdown => {
                let stats = exec.end_session();
                exec.transport.gather(stats.to_bytes())?;
                return Ok(Ended::Session(stats));
            }
            Command::Exit => return Ok(Ended::Job),
        }
    }
}

/// Serves one session with `exec`, then shuts its child down; returns the session's statistics.
fn serve_once<T: Transport>(mut exec: Executor<T>) -> Result<Stats> {
    let ended = serve_session(&mut exec);
    let shut = exec.child.shutdown();
    match ended? {
        Ended::Session(stats) => shut.map(|()| stats),
        Ended::Job => shut.map(|()| Stats::default()),
    }
}

/// Serves one session on a rank other than 0: executes the batches rank 0 broadcasts until it
/// shuts down, then shuts `child` down and returns this rank's statistics.
pub fn serve_with<T: Transport>(transport: T, child: Box<dyn Component>) -> Result<Stats> {
    serve_once(Executor::new(transport, child))
}

/// Serves every session of the job on a rank other than 0, on one `child` stack, until rank 0's
/// process exits (rank 0 then broadcasts [`Command::Exit`]); then shuts `child` down. Each
/// session starts with empty memory. Returns the statistics of every session.
pub fn serve_job<T: Transport>(transport: T, child: Box<dyn Component>, options: Options) -> Result<Vec<Stats>> {
    let mut exec = Executor::new(transport, child);
    exec.overlap = options.overlap;
    exec.fuse = options.fuse;
    let mut sessions = Vec::new();
    loop {
        match serve_session(&mut exec) {
            Ok(Ended::Session(stats)) => sessions.push(stats),
            Ok(Ended::Job) => return exec.child.shutdown().map(|()| sessions),
            Err(e) => {
                let _ = exec.child.shutdown();
                return Err(e);
            }
        }
    }
}

/// A cluster of `p` ranks run as threads of this process (no MPI): rank 0's component is
/// returned, ranks `1..p` serve on threads until it shuts down. `make_child` builds each rank's
/// stack. For tests, and to try the distribution without a cluster.
pub fn local_cluster(p: usize, make_child: impl FnMut() -> Box<dyn Component>) -> Cluster<LocalTransport> {
    local_cluster_with(p, Options::default(), make_child)
}

/// [`local_cluster`] with `options` on every rank.
pub fn local_cluster_with(
    p: usize,
    options: Options,
    mut make_child: impl FnMut() -> Box<dyn Component>,
) -> Cluster<LocalTransport> {
    let mut transports = local_job(p).into_iter();
    let root = transports.next().expect("at least one rank");
    let mut cluster = Cluster::new(root, make_child()).with_options(options);
    for t in transports {
        let child = make_child();
        let mut exec = Executor::new(t, child);
        exec.overlap = options.overlap;
        exec.fuse = options.fuse;
        exec.fuse = options.fuse;
        cluster.workers.push(std::thread::spawn(move || serve_once(exec)));
    }
    cluster
}
