//! The MPI transport (cargo feature `mpi`): rsmpi over `MPI_COMM_WORLD`. MPI is initialised
//! once per process, on first use, and finalised when the process exits.
//!
//! The end of the job: ranks other than 0 serve every session until rank 0's process exits. At
//! its exit (an `atexit` hook) rank 0 closes a session still open (the program exited without
//! shutting the VM down), broadcasts [`Command::Exit`], and finalises MPI; the other ranks then
//! shut their stacks down and exit with status 0. If rank 0 dies instead (a signal, an abort),
//! `mpirun` sees a process end without finalising MPI and aborts the whole job with its message.

use crate::codec::{Command, encode};
use crate::transport::{Ticket, Transport};
use mpi::environment::Universe;
use mpi::ffi;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use vm_ir::{Error, Result};

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
                let mut t = MpiTransport { rank: 0, size: world.size() as usize, next: 0, inflight: BTreeMap::new() };
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
pub struct MpiTransport {
    rank: usize,
    size: usize,
    next: Ticket,
    /// Messages posted and not yet waited for, with their buffers.
    inflight: BTreeMap<Ticket, InFlight>,
}

/// An MPI request handle (a pointer in OpenMPI).
struct RequestCell(ffi::MPI_Request);

// SAFETY: requests are only used by the thread that owns the transport (MPI is initialised
// with serialized threading; the transport moves between threads only as a whole).
unsafe impl Send for RequestCell {}

/// A posted message: its request and the buffer MPI reads or writes until it completes.
struct InFlight {
    request: RequestCell,
    buf: Vec<u8>,
    done: bool,
}

fn null_request() -> RequestCell {
    // SAFETY: reads a constant the MPI shim initialises at load time.
    RequestCell(unsafe { ffi::RSMPI_REQUEST_NULL })
}

fn count(len: usize) -> Result<i32> {
    i32::try_from(len).map_err(|_| Error::Device(format!("cluster: a message of {len} bytes is too long for MPI")))
}

impl std::fmt::Debug for MpiTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiTransport").field("rank", &self.rank).field("size", &self.size).finish()
    }
}

impl MpiTransport {
    fn track(&mut self, request: RequestCell, buf: Vec<u8>) -> Ticket {
        self.next += 1;
        self.inflight.insert(self.next, InFlight { request, buf, done: false });
        self.next
    }
}

impl MpiTransport {
    /// The transport of this process (initialises MPI if needed).
    pub fn new() -> Result<MpiTransport> {
        let (rank, size) = init()?;
        Ok(MpiTransport { rank, size, next: 0, inflight: BTreeMap::new() })
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

    fn post_send(&mut self, dst: usize, msg: Vec<u8>) -> Result<Ticket> {
        let mut request = null_request();
        // SAFETY: the message's heap buffer moves into `self.inflight` with the request and is
        // neither touched nor freed until the request has completed (`test` or `wait`).
        unsafe {
            ffi::MPI_Isend(
                msg.as_ptr().cast(),
                count(msg.len())?,
                ffi::RSMPI_UINT8_T,
                dst as i32,
                TAG_DATA,
                ffi::RSMPI_COMM_WORLD,
                &mut request.0,
            );
        }
        Ok(self.track(request, msg))
    }

    fn post_recv(&mut self, src: usize, len: usize) -> Result<Ticket> {
        let mut buf = vec![0u8; len];
        let mut request = null_request();
        // SAFETY: as for sends: the buffer lives in `self.inflight` until the request completes.
        unsafe {
            ffi::MPI_Irecv(
                buf.as_mut_ptr().cast(),
                count(len)?,
                ffi::RSMPI_UINT8_T,
                src as i32,
                TAG_DATA,
                ffi::RSMPI_COMM_WORLD,
                &mut request.0,
            );
        }
        Ok(self.track(request, buf))
    }

    fn test(&mut self, ticket: Ticket) -> Result<bool> {
        for m in self.inflight.values_mut().filter(|m| !m.done) {
            let mut flag = 0;
            // SAFETY: an active request of this process; MPI sets it to the null request when
            // it completes.
            unsafe { ffi::MPI_Test(&mut m.request.0, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
            m.done = flag != 0;
        }
        Ok(self.inflight.get(&ticket).is_some_and(|m| m.done))
    }

    fn wait(&mut self, ticket: Ticket) -> Result<Vec<u8>> {
        let mut m = self
            .inflight
            .remove(&ticket)
            .ok_or_else(|| Error::Internal("cluster: waiting for an unknown message".into()))?;
        if !m.done {
            // SAFETY: an active request of this process; its buffer is `m.buf`.
            unsafe { ffi::MPI_Wait(&mut m.request.0, ffi::RSMPI_STATUS_IGNORE) };
        }
        Ok(m.buf)
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
