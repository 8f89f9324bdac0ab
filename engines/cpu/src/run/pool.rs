//! A persistent pool of worker threads that run the blocks of a kernel with crossbeam-deque work
//! stealing. The calling thread works too; [`Pool::run`] returns when every block has run, or
//! has been skipped because a block panicked or the flush was interrupted.
//!
//! A panic in a block never leaves the pool: it is caught where it happens (on a worker or on
//! the caller), the remaining blocks are skipped, and `run` returns an error once no thread is
//! inside the job any more, so the job on the caller's stack is never read after `run` returns
//! and the pool stays usable.
//!
//! A worker that has finished a job watches for the next one for [`WATCH_FOR`] before it
//! sleeps: a batch runs its parallel pieces (matrix-vector products, kernels) back to back,
//! often microseconds apart, and waking a sleeping thread takes longer than such a piece runs.
//! (OpenBLAS's and OpenMP's workers do the same.)
//!
//! For tests, [`Pool::inject_panic`] (or `VM_INJECT_PANIC` = `worker` / `caller` when the pool
//! is made) makes the next run panic on that side.

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use vm_ir::{Error, Result};
use vm_runtime::Interrupt;

/// How long a worker that has finished a job watches for the next before it sleeps (yielding
/// to any other thread that wants its core meanwhile).
const WATCH_FOR: Duration = Duration::from_micros(200);

/// One parallel loop: blocks `0..n` of `f`.
struct Job<'a> {
    injector: Injector<usize>,
    remaining: AtomicUsize,
    f: &'a (dyn Fn(usize) + Sync),
    /// Polled before each block: a request skips the blocks not yet started.
    interrupt: &'a Interrupt,
    /// Set when a block panicked or an interrupt was seen: the blocks left are skipped.
    stopped: AtomicBool,
    /// Why the job stopped (the first reason).
    failure: Mutex<Option<Error>>,
}

impl Job<'_> {
    fn stop(&self, why: Error) {
        self.stopped.store(true, Ordering::Relaxed);
        self.failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(why);
    }

    /// Runs block `i` unless the job has stopped, turning a panic into the job's failure.
    fn run_block(&self, i: usize, inject: bool) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        if self.interrupt.is_requested() {
            self.stop(Error::Interrupted);
            return;
        }
        let ran = catch_unwind(AssertUnwindSafe(|| {
            if inject {
                panic!("panic injected into block {i} (VM_INJECT_PANIC)");
            }
            (self.f)(i)
        }));
        if let Err(payload) = ran {
            self.stop(Error::Internal(format!(
                "a kernel block panicked: {}",
                vm_ir::error::panic_message(payload.as_ref())
            )));
        }
    }

    fn into_result(self) -> Result<()> {
        match self.failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A pointer to the current job, published to the workers.
#[derive(Clone, Copy)]
struct JobPtr(*const Job<'static>);

// SAFETY: the job lives on the stack of `Pool::run`, which does not return before every worker
// has stopped using it (see `in_job`), and everything in a Job is Sync.
unsafe impl Send for JobPtr {}

struct State {
    generation: u64,
    job: Option<JobPtr>,
    in_job: usize,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    /// `State::generation` as last published, read by watching workers without the lock (also
    /// raised at shutdown, so that they stop watching).
    published: AtomicU64,
    wake: Condvar,
    idle: Condvar,
    stealers: Vec<Stealer<usize>>,
    /// A panic armed for the next run ([`PanicSite`] as a number; 0 = none).
    inject: AtomicU8,
}

/// Where [`Pool::inject_panic`] makes the next run panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanicSite {
    /// On a worker thread, while the caller waits (the caller takes no block of that run).
    Worker = 1,
    /// On the calling thread, while the workers run the other blocks.
    Caller = 2,
}

/// Why [`Pool::new`] failed: the system refused to start a worker thread.
#[derive(Debug)]
pub struct SpawnError {
    /// The worker that could not be started (1-based; the caller is thread 0).
    pub index: usize,
    /// The threads asked for, the caller included.
    pub threads: usize,
    /// What the system said.
    pub error: std::io::Error,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the system refused worker thread {} of the {} asked for ({}); the {} already started were stopped",
            self.index,
            self.threads,
            self.error,
            self.index - 1
        )
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The worker pool.
pub struct Pool {
    shared: Arc<Shared>,
    local: Worker<usize>,
    handles: Vec<JoinHandle<()>>,
}

fn find_task(local: &Worker<usize>, global: &Injector<usize>, stealers: &[Stealer<usize>]) -> Option<usize> {
    local.pop().or_else(|| {
        std::iter::repeat_with(|| {
            global.steal_batch_and_pop(local).or_else(|| stealers.iter().map(|s| s.steal()).collect::<Steal<usize>>())
        })
        .find(|s| !s.is_retry())
        .and_then(|s| s.success())
    })
}

fn work(job: &Job, local: &Worker<usize>, stealers: &[Stealer<usize>]) {
    while let Some(i) = find_task(local, &job.injector, stealers) {
        job.run_block(i, false);
        job.remaining.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Pool {
    /// A pool of `threads` threads in all, the caller included (so `threads - 1` are spawned).
    ///
    /// When the system refuses a thread (a process or user thread limit, no memory for its
    /// stack), the threads already started are stopped and joined and the error says how many
    /// were asked for and which one failed; nothing is left running.
    pub fn new(threads: usize) -> std::result::Result<Pool, SpawnError> {
        let pool = Pool::start(threads, "vm-cpu", |_| None)?;
        match std::env::var("VM_INJECT_PANIC").as_deref() {
            Ok("worker") => pool.inject_panic(PanicSite::Worker),
            Ok("caller") => pool.inject_panic(PanicSite::Caller),
            _ => {}
        }
        Ok(pool)
    }

    /// Makes the next [`Pool::run`] of more than one block on a pool of more than one thread
    /// panic in one block on `site` (a test hook: the run must return an error and the pool stay
    /// usable). A run of one block, or on one thread, panics on the caller.
    pub fn inject_panic(&self, site: PanicSite) {
        self.shared.inject.store(site as u8, Ordering::Relaxed);
    }

    /// [`Pool::new`] with workers named `{name}-{i}`, where `refuse(i)`, when it returns an
    /// error, stands for the system refusing worker `i` (tests cannot make the system do so
    /// without exhausting the machine's threads for every other process).
    fn start(
        threads: usize,
        name: &str,
        refuse: impl Fn(usize) -> Option<std::io::Error>,
    ) -> std::result::Result<Pool, SpawnError> {
        let threads = threads.max(1);
        let locals: Vec<Worker<usize>> = (0..threads).map(|_| Worker::new_fifo()).collect();
        let stealers = locals.iter().map(Worker::stealer).collect();
        let shared = Arc::new(Shared {
            state: Mutex::new(State { generation: 0, job: None, in_job: 0, shutdown: false }),
            published: AtomicU64::new(0),
            wake: Condvar::new(),
            idle: Condvar::new(),
            stealers,
            inject: AtomicU8::new(0),
        });
        let mut locals = locals.into_iter();
        let local = locals.next().expect("at least one deque");
        // The pool owns the threads from the first spawn on, so that a failure part way drops
        // it, and its Drop stops and joins the workers already running.
        let mut pool = Pool { shared, local, handles: Vec::with_capacity(threads - 1) };
        for (i, local) in locals.enumerate() {
            let shared = Arc::clone(&pool.shared);
            let spawned = match refuse(i + 1) {
                Some(error) => Err(error),
                None => std::thread::Builder::new()
                    .name(format!("{name}-{}", i + 1))
                    .stack_size(8 << 20)
                    .spawn(move || worker_main(&shared, &local)),
            };
            match spawned {
                Ok(handle) => pool.handles.push(handle),
                Err(error) => return Err(SpawnError { index: i + 1, threads, error }),
            }
        }
        Ok(pool)
    }

    /// Number of threads, the caller included.
    pub fn threads(&self) -> usize {
        self.handles.len() + 1
    }

    /// Runs `f(i)` for every `i` in `0..n`, in parallel, and returns when all have run. A block
    /// that panics skips the blocks not yet started and makes this an [`Error::Internal`]
    /// naming the panic; a request on `interrupt` skips them too and makes it
    /// [`Error::Interrupted`]. Either way no thread is inside the job when this returns.
    pub fn run(&self, n: usize, f: &(dyn Fn(usize) + Sync), interrupt: &Interrupt) -> Result<()> {
        self.run_where(n, f, interrupt, false)
    }

    /// [`Pool::run`] with every block on the calling thread, in order: for work too small to
    /// pay for waking the workers (the same blocks, so the same results).
    pub fn run_here(&self, n: usize, f: &(dyn Fn(usize) + Sync), interrupt: &Interrupt) -> Result<()> {
        self.run_where(n, f, interrupt, true)
    }

    fn run_where(&self, n: usize, f: &(dyn Fn(usize) + Sync), interrupt: &Interrupt, here: bool) -> Result<()> {
        if n == 0 {
            return interrupt.check();
        }
        let job = Job {
            injector: Injector::new(),
            remaining: AtomicUsize::new(n),
            f,
            interrupt,
            stopped: AtomicBool::new(false),
            failure: Mutex::new(None),
        };
        let inject = self.shared.inject.swap(0, Ordering::Relaxed);
        if self.handles.is_empty() || n == 1 || here {
            (0..n).for_each(|i| job.run_block(i, inject != 0 && i == 0));
            return job.into_result();
        }
        for i in 0..n {
            job.injector.push(i);
        }
        // SAFETY (of the lifetime erasure): `job` outlives every use by the workers, because this
        // function waits below until no worker is inside the job before returning, and nothing
        // between here and that wait can unwind (blocks run under `catch_unwind`).
        let ptr = JobPtr((&job as *const Job<'_>).cast::<Job<'static>>());
        {
            let mut st = self.shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.generation += 1;
            st.job = Some(ptr);
            self.shared.published.store(st.generation, Ordering::Release);
            if inject == PanicSite::Worker as u8 {
                // Armed again for the first worker that takes the job (see `worker_main`).
                self.shared.inject.store(inject, Ordering::Relaxed);
            }
        }
        self.shared.wake.notify_all();
        if inject == PanicSite::Caller as u8 {
            // The caller's share starts with the injected panic, before it takes any block.
            job.run_block(0, true);
        }
        if inject != PanicSite::Worker as u8 {
            work(&job, &self.local, &self.shared.stealers);
        }
        while job.remaining.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        let mut st = self.shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.job = None;
        while st.in_job != 0 {
            st = self.shared.idle.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        drop(st);
        job.into_result()
    }
}

fn worker_main(shared: &Shared, local: &Worker<usize>) {
    let mut seen = 0;
    loop {
        let watched = Instant::now();
        while shared.published.load(Ordering::Acquire) == seen && watched.elapsed() < WATCH_FOR {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        let job = {
            let mut st = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            while st.generation == seen && !st.shutdown {
                st = shared.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            if st.shutdown {
                return;
            }
            seen = st.generation;
            match st.job {
                Some(j) => {
                    st.in_job += 1;
                    j
                }
                None => continue,
            }
        };
        // SAFETY: `in_job` was raised under the lock while the job was published, so the job
        // stays alive until this worker lowers it again below.
        let job = unsafe { &*job.0 };
        if shared.inject.swap(0, Ordering::Relaxed) == PanicSite::Worker as u8 {
            // The injected panic, before this worker takes any block.
            job.run_block(0, true);
        }
        work(job, local, &shared.stealers);
        let mut st = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.in_job -= 1;
        if st.in_job == 0 {
            shared.idle.notify_all();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner).shutdown = true;
        self.shared.published.fetch_add(1, Ordering::Release);
        self.shared.wake.notify_all();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_runs_once() {
        let pool = Pool::new(3).unwrap();
        for n in [0, 1, 2, 7, 1000] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            pool.run(
                n,
                &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                },
                &Interrupt::new(),
            )
            .unwrap();
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
    }

    /// `run_here` runs every block once, in order, on the calling thread; a panic in one is
    /// that run's error and skips the rest.
    #[test]
    fn run_here_runs_the_blocks_in_order_on_the_caller() {
        let pool = Pool::new(3).unwrap();
        let caller = std::thread::current().id();
        let order = Mutex::new(Vec::new());
        let f = |i: usize| {
            assert_eq!(std::thread::current().id(), caller);
            order.lock().unwrap().push(i);
        };
        pool.run_here(50, &f, &Interrupt::new()).unwrap();
        assert_eq!(*order.lock().unwrap(), (0..50).collect::<Vec<_>>());
        let ran = AtomicUsize::new(0);
        let failing = |i: usize| {
            assert!(i != 3, "block 3 fails");
            ran.fetch_add(1, Ordering::Relaxed);
        };
        match pool.run_here(10, &failing, &Interrupt::new()) {
            Err(Error::Internal(m)) => assert!(m.contains("block 3 fails"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(ran.into_inner(), 3, "the blocks after the panic were skipped");
    }

    /// Runs 1000 blocks that each take a moment and count themselves.
    fn count_blocks(pool: &Pool, interrupt: &Interrupt) -> (Result<()>, usize) {
        let ran = AtomicUsize::new(0);
        let result = pool.run(
            1000,
            &|_| {
                std::thread::sleep(std::time::Duration::from_micros(20));
                ran.fetch_add(1, Ordering::Relaxed);
            },
            interrupt,
        );
        (result, ran.into_inner())
    }

    #[test]
    fn a_panicking_block_is_an_error_of_that_run_and_the_pool_stays_usable() {
        for threads in [1, 2, 4] {
            let pool = Pool::new(threads).unwrap();
            for site in [PanicSite::Worker, PanicSite::Caller] {
                pool.inject_panic(site);
                let (result, ran) = count_blocks(&pool, &Interrupt::new());
                match result {
                    Err(Error::Internal(m)) => assert!(m.contains("a kernel block panicked: panic injected"), "{m}"),
                    other => panic!("{threads} threads, {site:?}: {other:?}"),
                }
                assert!(ran < 1000, "the blocks after the panic were skipped ({ran} ran)");
                let (result, ran) = count_blocks(&pool, &Interrupt::new());
                assert!(result.is_ok() && ran == 1000, "{threads} threads, {site:?}: the next run {result:?}, {ran}");
            }
        }
    }

    #[test]
    fn a_block_panicking_on_a_worker_or_on_the_caller_is_caught_where_it_happens() {
        let pool = Pool::new(3).unwrap();
        let caller = std::thread::current().id();
        for on_caller in [false, true] {
            let result = pool.run(
                1000,
                &|i| {
                    std::thread::sleep(std::time::Duration::from_micros(20));
                    if (std::thread::current().id() == caller) == on_caller && i % 7 == 3 {
                        panic!("block {i} fails");
                    }
                },
                &Interrupt::new(),
            );
            match result {
                Err(Error::Internal(m)) => assert!(m.contains("fails"), "{m}"),
                other => panic!("on the caller: {on_caller}: {other:?}"),
            }
            assert!(count_blocks(&pool, &Interrupt::new()).0.is_ok());
        }
    }

    #[test]
    fn an_interrupt_skips_the_blocks_left() {
        let pool = Pool::new(2).unwrap();
        let interrupt = Interrupt::new();
        interrupt.request();
        let (result, ran) = count_blocks(&pool, &interrupt);
        assert!(matches!(result, Err(Error::Interrupted)) && ran == 0, "{result:?} {ran}");
        // Requested part way: the run stops early.
        let ran = AtomicUsize::new(0);
        let result = pool.run(
            10_000,
            &|_| {
                if ran.fetch_add(1, Ordering::Relaxed) == 100 {
                    interrupt.request();
                }
            },
            &interrupt,
        );
        assert!(matches!(result, Err(Error::Interrupted)), "{result:?}");
        assert!(ran.into_inner() < 10_000);
        interrupt.clear();
        assert!(count_blocks(&pool, &interrupt).0.is_ok());
    }

    /// The names of this process's threads that start with `prefix`, waiting up to a second
    /// for their number to become `count` (a thread names itself once it runs, and a joined
    /// thread leaves the list a moment after the join).
    fn threads_named(prefix: &str, count: usize) -> Vec<String> {
        let mut names = named_now(prefix);
        for _ in 0..100 {
            if names.len() == count {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            names = named_now(prefix);
        }
        names
    }

    fn named_now(prefix: &str) -> Vec<String> {
        let mut names = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            // A thread may end between listing and reading: skip it.
            if let Ok(comm) = std::fs::read_to_string(task.unwrap().path().join("comm"))
                && comm.starts_with(prefix)
            {
                names.push(comm.trim().to_string());
            }
        }
        names
    }

    #[test]
    fn a_refused_thread_stops_the_ones_started_and_is_an_error() {
        let refuse = |i| (i == 5).then(|| std::io::Error::from(std::io::ErrorKind::WouldBlock));
        let e = match Pool::start(8, "vmtest-refuse", refuse) {
            Err(e) => e,
            Ok(_) => panic!("worker 5 was refused, yet the pool started"),
        };
        assert_eq!((e.index, e.threads), (5, 8));
        let text = e.to_string();
        assert!(
            text.contains("worker thread 5 of the 8 asked for") && text.contains("the 4 already started"),
            "{text}"
        );
        // The four workers started before the refusal were stopped and joined, not left behind.
        assert_eq!(threads_named("vmtest-refuse", 0), Vec::<String>::new());
        // Without a refusal the same pool starts and names its workers.
        let pool = Pool::start(3, "vmtest-start", |_| None).unwrap();
        assert_eq!(pool.threads(), 3);
        assert_eq!(threads_named("vmtest-start", 2).len(), 2);
        drop(pool);
        assert_eq!(threads_named("vmtest-start", 0), Vec::<String>::new());
    }
}
