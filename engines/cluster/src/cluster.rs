//! The `cluster` component on rank 0 and the serving loop of the other ranks.

use crate::codec::{Command, decode, encode};
use crate::exec::{Executor, Stats};
use crate::transport::{LocalTransport, Transport, local_job};
use std::thread::JoinHandle;
use vm_core::{Component, ComponentInfo, Error, HostMemory, Instruction, Opcode, Result};

/// The cluster manager as rank 0 sees it: a [`Component`] that broadcasts every batch and runs
/// its own part of it. Shutting it down (or dropping it) ends the session on every rank.
pub struct Cluster<T: Transport> {
    exec: Executor<T>,
    table: String,
    settings: Vec<(String, String)>,
    shut: bool,
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
    pub fn new(transport: T, child: Box<dyn Component>) -> Cluster<T> {
        assert_eq!(transport.rank(), 0, "the cluster component lives on rank 0; other ranks serve");
        Cluster {
            exec: Executor::new(transport, child),
            table: "cluster".into(),
            settings: Vec::new(),
            shut: false,
            workers: Vec::new(),
            rank_stats: Vec::new(),
        }
    }

    /// Names the component after its config table and records its settings for `vm info`.
    pub fn with_settings(mut self, settings: &vm_core::Settings) -> Cluster<T> {
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
        self.rank_stats = all.iter().map(|b| Stats::from_bytes(b)).collect();
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
        vm_core::instr::validate_batch(batch)?;
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

    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        self.exec.transport.broadcast(encode(&Command::Register(name.to_string(), opcode)))?;
        self.exec.child.register_extension(name, opcode)
    }

    fn describe(&self) -> Vec<ComponentInfo> {
        let s = self.exec.stats;
        let notes = vec![
            format!("{} ranks; blocks of each base's flat index space, owner computes", self.ranks()),
            format!(
                "rank 0: {} instructions, {} exchanges, {} messages, {} bytes sent, {} bytes copied locally",
                s.instructions, s.exchanges, s.messages, s.bytes_sent, s.bytes_copied
            ),
            format!(
                "rank 0: {:.6} s waiting for messages, {:.6} s of local work overlapped",
                s.wait_seconds, s.overlap_seconds
            ),
        ];
        let mut info = vec![ComponentInfo {
            name: self.table.clone(),
            implementation: crate::IMPLEMENTATION.name.into(),
            settings: self.settings.clone(),
            notes,
        }];
        info.extend(self.exec.child.describe());
        info
    }

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

/// Serves one session on a rank other than 0: executes the batches rank 0 broadcasts until it
/// shuts down, then shuts `child` down and returns this rank's statistics.
pub fn serve_with<T: Transport>(transport: T, child: Box<dyn Component>) -> Result<Stats> {
    let mut exec = Executor::new(transport, child);
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
                let r = exec.child.shutdown();
                exec.transport.gather(exec.stats.to_bytes())?;
                return r.map(|()| exec.stats);
            }
        }
    }
}

/// A cluster of `p` ranks run as threads of this process (no MPI): rank 0's component is
/// returned, ranks `1..p` serve on threads until it shuts down. `make_child` builds each rank's
/// stack. For tests, and to try the distribution without a cluster.
pub fn local_cluster(p: usize, mut make_child: impl FnMut() -> Box<dyn Component>) -> Cluster<LocalTransport> {
    let mut transports = local_job(p).into_iter();
    let root = transports.next().expect("at least one rank");
    let mut cluster = Cluster::new(root, make_child());
    for t in transports {
        let child = make_child();
        cluster.workers.push(std::thread::spawn(move || serve_with(t, child)));
    }
    cluster
}
