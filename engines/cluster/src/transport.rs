//! How ranks talk: the [`Transport`] trait the executor is written against, and
//! [`LocalTransport`], which runs the ranks as threads of one process (tests, and anyone who
//! wants the distribution logic without MPI). The MPI transport is in `mpi_transport`.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Instant;
use vm_core::{Error, Result};

/// Point-to-point and collective messages between the ranks of one job.
pub trait Transport: Send {
    /// This rank (0 runs the program).
    fn rank(&self) -> usize;

    /// Number of ranks.
    fn size(&self) -> usize;

    /// Rank 0 sends `msg` to every rank; every rank returns it.
    fn broadcast(&mut self, msg: Vec<u8>) -> Result<Vec<u8>>;

    /// Starts every send of `sends` (`(dst, bytes)`) and every receive of `recvs` (`(src,
    /// buffer)`, the buffer already of the expected length), runs `overlap` while they are in
    /// flight, then waits for all of them. Returns the seconds spent waiting after `overlap`.
    /// At most one message per pair of ranks per call.
    fn exchange(
        &mut self,
        sends: &[(usize, Vec<u8>)],
        recvs: &mut [(usize, Vec<u8>)],
        overlap: &mut dyn FnMut(),
    ) -> Result<f64>;

    /// Every rank sends `msg` to rank 0, which returns them all by rank (others get nothing).
    fn gather(&mut self, msg: Vec<u8>) -> Result<Vec<Vec<u8>>>;

    /// Rank 0 opened a session (a cluster component exists). Nothing by default.
    fn session_started(&mut self) {}

    /// Rank 0 closed its session (every rank has acknowledged the shutdown). Nothing by default.
    fn session_ended(&mut self) {}
}

/// One rank of a job whose ranks are threads of this process, talking over channels.
pub struct LocalTransport {
    rank: usize,
    to: Vec<Sender<Vec<u8>>>,
    from: Vec<Receiver<Vec<u8>>>,
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

    fn exchange(
        &mut self,
        sends: &[(usize, Vec<u8>)],
        recvs: &mut [(usize, Vec<u8>)],
        overlap: &mut dyn FnMut(),
    ) -> Result<f64> {
        for (dst, msg) in sends {
            self.send(*dst, msg.clone())?;
        }
        overlap();
        let t = Instant::now();
        for (src, buf) in recvs.iter_mut() {
            let msg = self.recv(*src)?;
            if msg.len() != buf.len() {
                return Err(Error::Internal(format!(
                    "cluster: rank {} expected {} bytes from rank {src}, got {}",
                    self.rank,
                    buf.len(),
                    msg.len()
                )));
            }
            *buf = msg;
        }
        Ok(t.elapsed().as_secs_f64())
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
