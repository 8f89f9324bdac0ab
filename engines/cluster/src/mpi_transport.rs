//! The MPI transport (cargo feature `mpi`): rsmpi over `MPI_COMM_WORLD`. MPI is initialised
//! once per process, on first use, and finalised when the process exits.
//!
//! The end of the job: ranks other than 0 serve every session until rank 0's process exits. At
//! its exit (an `atexit` hook) rank 0 closes a session still open (the program exited without
//! shutting the VM down), broadcasts [`Command::Exit`], and finalises MPI; the other ranks then
//! shut their stacks down and exit with status 0. If rank 0 dies instead (a signal, an abort),
//! `mpirun` sees a process end without finalising MPI and aborts the whole job with its message.

use crate::codec::{Command, encode};
use crate::transport::Transport;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use vm_core::{Error, Result};

const TAG_DATA: i32 = 11;
const TAG_GATHER: i32 = 12;

/// The process's MPI universe; dropping it finalises MPI.
static UNIVERSE: Mutex<Option<Universe>> = Mutex::new(None);

/// On rank 0: a cluster session is open (a cluster component exists that has not shut down).
static SESSION_OPEN: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    /// The C library's `atexit`.
    fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
}

extern "C" fn finalize_at_exit() {
    if let Ok(mut u) = UNIVERSE.lock() {
        if u.is_some() {
            let world = SimpleCommunicator::world();
            if world.rank() == 0 && world.size() > 1 {
                let mut t = MpiTransport { rank: 0, size: world.size() as usize };
                if SESSION_OPEN.swap(false, Ordering::SeqCst) {
                    // The program exited inside a session: close it as a shutdown would.
                    let _ = t.broadcast(encode(&Command::Shutdown));
                    let _ = t.gather(Vec::new());
                }
                let _ = t.broadcast(encode(&Command::Exit));
            }
        }
        drop(u.take());
    }
}

/// Initialises MPI (once per process) and returns `(rank, size)` in `MPI_COMM_WORLD`.
pub fn init() -> Result<(usize, usize)> {
    let mut u = UNIVERSE.lock().map_err(|_| Error::Internal("cluster: MPI state poisoned".into()))?;
    if u.is_none() && !mpi::environment::is_initialized() {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or_else(|| Error::Device("the cluster manager could not initialise MPI".into()))?;
        *u = Some(universe);
        // SAFETY: `atexit` only stores the pointer of a function that lives as long as the
        // program; the callback takes the universe out of its mutex and finalises MPI once.
        unsafe { atexit(finalize_at_exit) };
    }
    let world = SimpleCommunicator::world();
    Ok((world.rank() as usize, world.size() as usize))
}

/// This process's rank in `MPI_COMM_WORLD` over MPI.
#[derive(Debug)]
pub struct MpiTransport {
    rank: usize,
    size: usize,
}

impl MpiTransport {
    /// The transport of this process (initialises MPI if needed).
    pub fn new() -> Result<MpiTransport> {
        let (rank, size) = init()?;
        Ok(MpiTransport { rank, size })
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn broadcast(&mut self, msg: Vec<u8>) -> Result<Vec<u8>> {
        let world = SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        let mut len = msg.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.rank == 0 { msg } else { vec![0u8; len as usize] };
        root.broadcast_into(&mut buf[..]);
        Ok(buf)
    }

    fn exchange(
        &mut self,
        sends: &[(usize, Vec<u8>)],
        recvs: &mut [(usize, Vec<u8>)],
        overlap: &mut dyn FnMut(),
    ) -> Result<f64> {
        let world = SimpleCommunicator::world();
        let waited = mpi::request::scope(|scope| {
            let sent: Vec<_> = sends
                .iter()
                .map(|(dst, msg)| world.process_at_rank(*dst as i32).immediate_send_with_tag(scope, &msg[..], TAG_DATA))
                .collect();
            let received: Vec<_> = recvs
                .iter_mut()
                .map(|(src, buf)| {
                    world.process_at_rank(*src as i32).immediate_receive_into_with_tag(scope, &mut buf[..], TAG_DATA)
                })
                .collect();
            overlap();
            let t = Instant::now();
            for r in received {
                r.wait();
            }
            for s in sent {
                s.wait();
            }
            t.elapsed().as_secs_f64()
        });
        Ok(waited)
    }

    fn session_started(&mut self) {
        SESSION_OPEN.store(true, Ordering::SeqCst);
    }

    fn session_ended(&mut self) {
        SESSION_OPEN.store(false, Ordering::SeqCst);
    }

    fn gather(&mut self, msg: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let world = SimpleCommunicator::world();
        if self.rank == 0 {
            let mut all = vec![msg];
            for src in 1..self.size {
                let (v, _) = world.process_at_rank(src as i32).receive_vec_with_tag::<u8>(TAG_GATHER);
                all.push(v);
            }
            Ok(all)
        } else {
            world.process_at_rank(0).send_with_tag(&msg[..], TAG_GATHER);
            Ok(Vec::new())
        }
    }
}
