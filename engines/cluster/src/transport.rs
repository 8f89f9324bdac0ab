//! How ranks talk: the [`Transport`] trait the executor is written against, and
//! [`LocalTransport`], which runs the ranks as threads of one process (tests, and anyone who
//! wants the distribution logic without MPI). The MPI transport is in `mpi_transport`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use vm_ir::{Error, Result};

/// Point-to-point and collective messages between the ranks of one job.
pub trait Transport: Send {
    /// This rank (0 runs the program).
    fn rank(&self) -> usize;

    /// Number of ranks.
    fn size(&self) -> usize;

    /// Rank 0 sends `msg` to every rank; every rank returns it.
    fn broadcast(&mut self, msg: Vec<u8>) -> Result<Vec<u8>>;

    /// Starts sending `msg` to rank `dst` and returns its ticket. The messages of one rank to
    /// another match that rank's receives from the first in the order both were posted.
    fn post_send(&mut self, dst: usize, msg: Vec<u8>) -> Result<Ticket>;

    /// Starts receiving a message of exactly `len` bytes from rank `src`; returns its ticket.
    fn post_recv(&mut self, src: usize, len: usize) -> Result<Ticket>;

    /// Drives the progress of every message in flight without blocking; true once the message
    /// of `ticket` (posted and not yet waited for) has completed.
    fn test(&mut self, ticket: Ticket) -> Result<bool>;

    /// Blocks until the message of `ticket` has completed and spends the ticket: a receive's
    /// bytes, or nothing for a send.
    fn wait(&mut self, ticket: Ticket) -> Result<Vec<u8>>;

    /// Every rank sends `msg` to rank 0, which returns them all by rank (others get nothing).
    fn gather(&mut self, msg: Vec<u8>) -> Result<Vec<Vec<u8>>>;

    /// Rank 0 opened a session (a cluster component exists). Nothing by default.
    fn session_started(&mut self) {}

    /// Rank 0 closed its session (every rank has acknowledged the shutdown). Nothing by default.
    fn session_ended(&mut self) {}
}

/// Names a posted message until it is waited for.
pub type Ticket = u64;

/// One rank of a job whose ranks are threads of this process, talking over channels.
pub struct LocalTransport {
    rank: usize,
    to: Vec<Sender<Vec<u8>>>,
    from: Vec<Receiver<Vec<u8>>>,
    next: Ticket,
    /// Per source, the receives posted and not yet matched, in order: (ticket, length).
    posted: Vec<VecDeque<(Ticket, usize)>>,
    /// Matched receives not yet waited for, and sends (which complete at once).
    done: BTreeMap<Ticket, Vec<u8>>,
}

/// The transports of a job of `p` ranks run as threads: hand element `r` to the thread of rank `r`.
pub fn local_job(p: usize) -> Vec<LocalTransport> {
    let mut senders: Vec<Vec<Option<Sender<Vec<u8>>>>> = (0..p).map(|_| (0..p).map(|_| None).collect()).collect();
    let mut receivers: Vec<Vec<Option<Receiver<Vec<u8>>>>> = (0..p).map(|_| (0..p).map(|_| None).collect()).collect();
    for src in 0..p {
        for dst in 0..p {
            let (s, r) = channel();
            senders[src][dst] = Some(s);
            receivers[dst][src] = Some(r);
        }
    }
    senders
        .into_iter()
        .zip(receivers)
        .enumerate()
        .map(|(rank, (to, from))| LocalTransport {
            rank,
            to: to.into_iter().map(|s| s.expect("made")).collect(),
            from: from.into_iter().map(|r| r.expect("made")).collect(),
            next: 0,
            posted: (0..p).map(|_| VecDeque::new()).collect(),
            done: BTreeMap::new(),
        })
        .collect()
}

impl LocalTransport {
    fn send(&self, dst: usize, msg: Vec<u8>) -> Result<()> {
        self.to[dst].send(msg).map_err(|_| Error::Device(format!("cluster: rank {dst} is gone")))
    }

    fn recv(&self, src: usize) -> Result<Vec<u8>> {
        self.from[src].recv().map_err(|_| Error::Device(format!("cluster: rank {src} is gone")))
    }

    /// Matches a message that arrived from `src` with the first receive posted for it.
    fn deliver(&mut self, src: usize, msg: Vec<u8>) -> Result<()> {
        let (ticket, len) = self.posted[src]
            .pop_front()
            .ok_or_else(|| Error::Internal(format!("cluster: rank {} got an unexpected message", self.rank)))?;
        if msg.len() != len {
            return Err(Error::Internal(format!(
                "cluster: rank {} expected {len} bytes from rank {src}, got {}",
                self.rank,
                msg.len()
            )));
        }
        self.done.insert(ticket, msg);
        Ok(())
    }

    fn ticket(&mut self) -> Ticket {
        self.next += 1;
        self.next
    }
}

impl Transport for LocalTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.to.len()
    }

    fn broadcast(&mut self, msg: Vec<u8>) -> Result<Vec<u8>> {
        if self.rank == 0 {
            for dst in 1..self.size() {
                self.send(dst, msg.clone())?;
            }
            Ok(msg)
        } else {
            self.recv(0)
        }
    }

    fn post_send(&mut self, dst: usize, msg: Vec<u8>) -> Result<Ticket> {
        self.send(dst, msg)?;
        let t = self.ticket();
        self.done.insert(t, Vec::new());
        Ok(t)
    }

    fn post_recv(&mut self, src: usize, len: usize) -> Result<Ticket> {
        let t = self.ticket();
        self.posted[src].push_back((t, len));
        Ok(t)
    }

    fn test(&mut self, ticket: Ticket) -> Result<bool> {
        for src in 0..self.size() {
            while !self.posted[src].is_empty() {
                match self.from[src].try_recv() {
                    Ok(msg) => self.deliver(src, msg)?,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        return Err(Error::Device(format!("cluster: rank {src} is gone")));
                    }
                }
            }
        }
        Ok(self.done.contains_key(&ticket))
    }

    fn wait(&mut self, ticket: Ticket) -> Result<Vec<u8>> {
        loop {
            if let Some(msg) = self.done.remove(&ticket) {
                return Ok(msg);
            }
            let src = (0..self.size())
                .find(|&s| self.posted[s].iter().any(|&(t, _)| t == ticket))
                .ok_or_else(|| Error::Internal(format!("cluster: rank {} waits for an unknown message", self.rank)))?;
            let msg = self.recv(src)?;
            self.deliver(src, msg)?;
        }
    }

    fn gather(&mut self, msg: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        if self.rank == 0 {
            let mut all = vec![msg];
            for src in 1..self.size() {
                all.push(self.recv(src)?);
            }
            Ok(all)
        } else {
            self.send(0, msg)?;
            Ok(Vec::new())
        }
    }
}
