//! The process's VM context and the Python-side hooks.
//!
//! One context per process, created on first use through `vm-host` (the stack is planned from
//! the config file and `VM_STACK`, as for `vm_init`, or named by [`set_stack`] beforehand) and
//! registered in its table of live contexts, which the C ABI shares. Instructions are queued with the GIL held (queueing is cheap); whenever the VM may
//! execute work (a flush, a sync, a host write) the GIL is released first.

use crate::VMError;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use vm_host::StackChoice;
use vm_host::context::{self, Context};
use vm_ir::{Base, BaseId, DType, Error, Instruction, Opcode, Operand, Scalar, View, with_dtype};
use vm_runtime::Runtime;

/// Instructions queued (the runtime's pending batch) after which this module flushes on its
/// own, with the GIL released; below the runtime's batch limit (4096), so the runtime never
/// flushes while the GIL is held.
const FLUSH_AFTER: usize = 4000;

/// The process's VM.
pub struct Vm {
    ctx: Arc<Context>,
    token: usize,
    /// The name of the stack it runs.
    stack: String,
}

static VM: OnceLock<std::result::Result<Vm, String>> = OnceLock::new();

/// Calls of [`Vm::run`] in progress (the VM may be executing work).
static RUNNING: AtomicU32 = AtomicU32::new(0);

/// Starts a thread that reads Python's signal wakeup descriptor `fd` (`signal.set_wakeup_fd`,
/// whose C-level handler writes each signal's number there) and, for each SIGINT, stops the
/// VM's work in progress, if any: the call waiting in [`Vm::run`] then raises
/// `KeyboardInterrupt`. Without work in progress it does nothing, as Python raises
/// `KeyboardInterrupt` itself. The thread needs no GIL, so it sees the signal at once (a Python
/// thread would wait for the GIL and could stop the next flush instead); it owns `fd` and ends
/// when the descriptor is closed.
#[pyfunction]
fn _watch_interrupts(fd: i32) -> PyResult<()> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    const SIGINT: u8 = 2;
    // SAFETY: the caller hands over an open descriptor that nothing else reads or closes.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    std::thread::Builder::new()
        .name("vmnp-interrupt".into())
        .spawn(move || {
            let mut bytes = [0u8; 64];
            while let Ok(n @ 1..) = pipe.read(&mut bytes) {
                if bytes[..n].contains(&SIGINT)
                    && RUNNING.load(Ordering::SeqCst) > 0
                    && let Some(Ok(vm)) = VM.get()
                {
                    vm.ctx.interrupt.request();
                }
            }
        })
        .map(|_| ())
        .map_err(|e| VMError::new_err(format!("cannot start the interrupt watcher: {e}")))
}

/// The process's VM, built on first use; an error to Python when the stack cannot be built.
pub fn vm() -> PyResult<&'static Vm> {
    let v = VM.get_or_init(|| Vm::start(&StackChoice::FromEnv).map_err(|e| e.to_string()));
    v.as_ref().map_err(|e| VMError::new_err(e.clone()))
}

/// Builds the process's VM on the stack `name` of the configuration in effect, instead of the
/// one `VM_STACK` or the configuration picks. Only before the VM exists (it is built by the
/// first operation); an unknown name is an error and leaves the choice to the first operation.
#[pyfunction]
fn set_stack(name: &str) -> PyResult<()> {
    let running = |vm: &Result<Vm, String>| match vm {
        Ok(vm) => VMError::new_err(format!(
            "set_stack(\"{name}\"): the VM of this process runs the stack `{}` already; call set_stack before the \
             first operation",
            vm.stack
        )),
        Err(e) => VMError::new_err(format!("set_stack(\"{name}\"): the VM of this process failed to start: {e}")),
    };
    if let Some(vm) = VM.get() {
        return Err(running(vm));
    }
    let vm = Vm::start(&StackChoice::Named(name.to_string())).map_err(vm_err)?;
    VM.set(Ok(vm)).map_err(|lost| {
        // Another thread built the VM meanwhile: this one goes, theirs stays.
        if let Ok(vm) = &lost {
            let _ = context::shutdown(std::ptr::without_provenance_mut(vm.token));
        }
        VM.get().map_or_else(|| VMError::new_err("set_stack: the VM vanished"), running)
    })
}

/// A VM error as the Python exception `vmnp.VMError` (`MemoryError` when memory ran out, as
/// NumPy's), also recorded as `vm_last_error()`.
pub fn vm_err(e: Error) -> PyErr {
    let text = e.to_string();
    vm_host::last_error::set_last_error(&text);
    match e {
        Error::OutOfMemory(_) => pyo3::exceptions::PyMemoryError::new_err(text),
        _ => VMError::new_err(text),
    }
}

/// What to run after queueing an instruction.
enum NextFlush {
    /// Nothing yet.
    None,
    /// The batch, which is full ([`FLUSH_AFTER`]).
    Full,
    /// The batch, which small work waits for ([`Runtime::flush_wanted`]).
    Wanted,
}

impl NextFlush {
    fn of(rt: &Runtime) -> NextFlush {
        if rt.pending_len() >= FLUSH_AFTER {
            NextFlush::Full
        } else if rt.flush_wanted() {
            NextFlush::Wanted
        } else {
            NextFlush::None
        }
    }
}

impl Vm {
    /// Builds the stack `choice` picks, as `vm_init` does, and registers its context.
    fn start(choice: &StackChoice) -> vm_ir::Result<Vm> {
        let (rt, plan) = vm_host::stack::build_runtime(None, choice)?;
        let token = context::register(Context::new(rt, plan.describe()));
        let ctx = context::lookup(token)?;
        Ok(Vm { ctx, token: token.addr(), stack: plan.stack })
    }

    /// Runs `f` on the runtime with the GIL held (for work that executes nothing).
    pub fn with<T>(&self, f: impl FnOnce(&mut Runtime) -> vm_ir::Result<T>) -> PyResult<T> {
        self.ctx.with(f).map_err(vm_err)
    }

    /// Runs `f` on the runtime with the GIL released (for work that may execute batches). A
    /// flush stopped by Ctrl-C ([`_watch_interrupts`]) is Python's `KeyboardInterrupt`, raised by
    /// running the signal's Python handler now (so it is not raised a second time later).
    /// `cause` names the work for the profile ([`crate::profile`]).
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        cause: &'static str,
        f: impl FnOnce(&mut Runtime) -> vm_ir::Result<T> + Send,
    ) -> PyResult<T> {
        let begun = crate::profile::begin(py);
        RUNNING.fetch_add(1, Ordering::SeqCst);
        let result = py.detach(|| self.ctx.with(f));
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        crate::profile::end(cause, begun);
        result.map_err(|e| match e {
            Error::Interrupted => py.check_signals().err().unwrap_or_else(|| vm_err(e)),
            e => vm_err(e),
        })
    }

    /// Queues one instruction; flushes (GIL released) once [`FLUSH_AFTER`] are queued.
    pub fn submit(&self, py: Python<'_>, instr: Instruction) -> PyResult<()> {
        if let Some(Operand::View(out)) = instr.operands.first() {
            crate::bounds::forget(out.base.id);
            end_streak(out.base.id);
        }
        let next = self.with(|rt| {
            rt.submit_one(instr)?;
            Ok(NextFlush::of(rt))
        })?;
        self.flush_as(py, next)
    }

    /// Runs the flush that queueing asked for ([`NextFlush`]), with the GIL released.
    fn flush_as(&self, py: Python<'_>, next: NextFlush) -> PyResult<()> {
        match next {
            NextFlush::Full => self.run(py, "full batch", |rt| rt.flush_full()),
            NextFlush::Wanted => self.run(py, "batch small work waits for", |rt| rt.flush()),
            NextFlush::None => Ok(()),
        }
    }

    /// Queues `opcode` over `inputs` writing a new row-major array of `shape` and `dtype` (its
    /// view is operand 0): creating the base and queueing take the runtime once, and the
    /// instruction is built in its place in the pending batch, the per-operation path of every
    /// ufunc. The base is freed again when the instruction is refused.
    pub fn submit_new(
        &self,
        py: Python<'_>,
        shape: &[usize],
        dtype: DType,
        opcode: Opcode,
        inputs: &mut SmallVec<[Operand; 3]>,
    ) -> PyResult<(View, Arc<BaseHandle>)> {
        let nelem = crate::ops::element_count(shape, dtype)?;
        let (view, next) = self.with(|rt| {
            let base = rt.new_base(dtype, nelem as u64)?;
            let view = View::row_major(base, shape);
            let queued = rt.submit_in_place(|slot| {
                slot.opcode = opcode;
                slot.operands.push(Operand::View(view.clone()));
                slot.operands.extend(inputs.drain(..));
                Ok(())
            });
            match queued {
                Ok(()) => Ok((view, NextFlush::of(rt))),
                Err(e) => {
                    // The base may have been queued already (a full batch was flushed and failed).
                    let _ = rt.free(base.id);
                    Err(e)
                }
            }
        })?;
        let handle = Arc::new(BaseHandle { base: view.base });
        self.flush_as(py, next)?;
        Ok((view, handle))
    }

    /// A new base of `nelem` elements.
    pub fn new_base(&self, dtype: DType, nelem: usize) -> PyResult<Base> {
        self.with(|rt| rt.new_base(dtype, nelem as u64))
    }
}

/// Owns one base: when the last array viewing it goes away, the base is freed (a FREE is queued),
/// so a long loop's memory stays flat.
#[derive(Debug)]
pub struct BaseHandle {
    /// The base owned.
    pub base: Base,
}

impl Drop for BaseHandle {
    fn drop(&mut self) {
        crate::bounds::forget(self.base.id);
        end_streak(self.base.id);
        if let Some(Ok(vm)) = VM.get() {
            // A failed FREE (the context was shut down) leaves nothing to clean up.
            let _ = vm.ctx.with(|rt| rt.free(self.base.id));
        }
    }
}

static HOOKS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The Python function the package registered under `name` (see `_set_hooks`).
pub fn hook<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let hooks = HOOKS.get(py).ok_or_else(|| PyTypeError::new_err("vmnp is not initialised (import vmnp)"))?;
    hooks.bind(py).get_item(name)?.ok_or_else(|| PyTypeError::new_err(format!("vmnp has no hook {name}")))
}

/// Registers the Python-side hooks (a dict of name -> function); called once by `vmnp`.
#[pyfunction]
fn _set_hooks(py: Python<'_>, hooks: Bound<'_, PyDict>) -> PyResult<()> {
    let _ = HOOKS.set(py, hooks.unbind());
    Ok(())
}

/// Runs every recorded operation now (the GIL is released while the VM works).
#[pyfunction]
fn flush(py: Python<'_>) -> PyResult<()> {
    vm()?.run(py, "vmnp.flush()", |rt| rt.flush())
}

/// The context token this process's VM is registered under (the `vm_context *` C would hold).
#[pyfunction]
fn _context_token() -> PyResult<usize> {
    Ok(vm()?.token)
}

/// Shuts the process's VM down (registered to run at interpreter exit): drops what is still
/// queued (nothing can observe it any more), lets the engines report (`VM_PROFILE`) and ends
/// the session on every rank of a cluster stack. Arrays still alive afterwards refuse to be
/// read; a second call does nothing.
#[pyfunction]
fn _shutdown(py: Python<'_>) -> PyResult<()> {
    let Some(Ok(vm)) = VM.get() else { return Ok(()) };
    let token = vm.token;
    let ptr = std::ptr::without_provenance_mut::<context::VmContext>(token);
    if context::lookup(ptr).is_err() {
        return Ok(()); // shut down already
    }
    vm.with(|rt| {
        rt.discard_pending();
        Ok(())
    })?;
    py.detach(|| context::shutdown(std::ptr::without_provenance_mut(token))).map_err(vm_err)
}

/// The runtime's counters: instructions accepted, batches flushed, instructions run at once.
#[pyfunction]
fn _runtime_stats(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let s = vm()?.with(|rt| Ok(rt.stats()))?;
    let d = PyDict::new(py);
    d.set_item("instructions", s.instructions)?;
    d.set_item("flushes", s.flushes)?;
    d.set_item("direct", s.direct)?;
    Ok(d.unbind())
}

/// Number of live bases of the VM (for memory tests).
#[pyfunction]
fn _live_bases() -> PyResult<usize> {
    vm()?.with(|rt| Ok(rt.live_bases()))
}

/// The plan of the VM's stack, as `vm info` describes it: the config, the stack and how it was
/// chosen, each component with its settings.
#[pyfunction]
fn _describe() -> PyResult<String> {
    Ok(vm()?.ctx.description.clone())
}

/// Bytes of the base as the host sees them after a sync (flushes, GIL released).
pub fn host_bytes(py: Python<'_>, id: BaseId, f: impl FnOnce(&[u8]) + Send) -> PyResult<()> {
    vm()?.run(py, "reading an array", |rt| {
        rt.sync(id)?;
        f(rt.host_data(id)?);
        Ok(())
    })
}

/// Queued instructions up to which reading or storing one element of a stale base syncs the
/// base first (running them): what a loop over elements leaves queued between two of its
/// steps (FREEs, a store, a few scalar operations). Once synced, the base's elements are read
/// and written in memory until something else writes it.
const SYNC_FOR_ELEMENT: usize = 64;

/// True when base `id` may be read or written element by element in host memory now: its host
/// copy is current, or it can be made so by running a short queue that does not compute it
/// (stores of elements and fills may be queued; a queue computing the array waits: an element
/// read in a loop of array operations must not cut the loop's batches).
fn element_access(rt: &mut Runtime, id: BaseId) -> vm_ir::Result<bool> {
    Ok(rt.is_in_host(id)? || (rt.pending_len() <= SYNC_FOR_ELEMENT && !rt.pending_computes(id)))
}

/// Element reads in a row, of one base that nothing queued since writes, after which the base
/// is synced for the next read: a Python loop over the elements of an array still being
/// computed (`for i in range(n): s += x[i]`) reads it from memory after a few lazy copies,
/// rather than queueing one copy per element, while a loop of array operations that reads an
/// element or a few of each step's result keeps its batches whole (each step writes the base
/// again, or makes a new one).
const ELEMENT_LOOP_READS: u32 = 8;

/// The base of the current streak of lazy element reads (its id + 1; 0: none) and their count.
static STREAK_BASE: AtomicU64 = AtomicU64::new(0);
static STREAK_READS: AtomicU32 = AtomicU32::new(0);

/// Ends the streak of reads of base `id` (it is written or freed).
fn end_streak(id: BaseId) {
    if STREAK_BASE.load(Ordering::Relaxed) == id.0.wrapping_add(1) {
        STREAK_BASE.store(0, Ordering::Relaxed);
    }
}

/// Counts a lazy element read of base `id`; true once the streak is long enough to sync it.
fn element_loop(id: BaseId) -> bool {
    let key = id.0.wrapping_add(1);
    let reads =
        if STREAK_BASE.swap(key, Ordering::Relaxed) == key { STREAK_READS.load(Ordering::Relaxed) + 1 } else { 1 };
    STREAK_READS.store(reads, Ordering::Relaxed);
    reads >= ELEMENT_LOOP_READS
}

/// Element `index` of base `id`, read from its host copy (synced first when stale; see
/// [`element_access`]); `None` when the element must be computed with the queue. `observe`: the
/// value is needed now (a conversion to a Python number), so the base is synced whatever is
/// queued.
pub fn host_element(py: Python<'_>, id: BaseId, index: usize, observe: bool) -> PyResult<Option<Scalar>> {
    let vm = vm()?;
    // Held in host memory already: read at once (the common case of an element loop).
    let accessible = match vm.with(|rt| match rt.read_in_host(id, index)? {
        Some(x) => Ok(Err(x)),
        None => Ok(Ok(observe || element_access(rt, id)?)),
    })? {
        Err(x) => return Ok(Some(x)),
        Ok(accessible) => accessible || element_loop(id),
    };
    if !accessible {
        return Ok(None);
    }
    vm.run(py, "reading an element", |rt| rt.sync(id))?;
    vm.with(|rt| rt.read_in_host(id, index))
}

/// True when the integer elements `run` of base `id` are in host memory and all lie in
/// `range` (nothing is run to find out: false when they are not in host memory).
pub fn in_host_within(id: BaseId, run: std::ops::Range<usize>, range: std::ops::Range<i64>) -> PyResult<bool> {
    vm()?.with(|rt| {
        if !rt.is_in_host(id)? {
            return Ok(false);
        }
        rt.sync(id)?; // (runs nothing: host memory holds it)
        let (lo, hi) = (i128::from(range.start), i128::from(range.end));
        // The run's extremes (a loop the compiler vectorises), then their range.
        macro_rules! within {
            ($t:ty) => {{
                let values = rt.host_slice::<$t>(id)?.get(run).unwrap_or_default();
                let (min, max) = values.iter().fold((<$t>::MAX, <$t>::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                values.is_empty() || (lo <= min as i128 && (max as i128) < hi)
            }};
        }
        Ok(match rt.base(id)?.dtype {
            DType::I8 => within!(i8),
            DType::I16 => within!(i16),
            DType::I32 => within!(i32),
            DType::I64 => within!(i64),
            DType::U8 => within!(u8),
            DType::U16 => within!(u16),
            DType::U32 => within!(u32),
            DType::U64 => within!(u64),
            _ => false,
        })
    })
}

/// The integer elements `run` of base `id`, which host memory holds, when all lie in `range`.
fn positions_in_host(
    rt: &mut vm_runtime::Runtime,
    id: BaseId,
    run: std::ops::Range<usize>,
    range: &std::ops::Range<i64>,
) -> vm_ir::Result<Option<Vec<i64>>> {
    rt.sync(id)?; // (runs nothing: host memory holds it)
    with_dtype!(rt.base(id)?.dtype, T => {
        let values = rt.host_slice::<T>(id)?.get(run).unwrap_or_default();
        Ok(values
            .iter()
            .map(|&x| {
                let x = Scalar::from(x);
                let exact = x.dtype().is_integer() && (x.dtype() != DType::U64 || x.as_i64() >= 0);
                exact.then(|| x.as_i64()).filter(|i| range.contains(i))
            })
            .collect())
    })
}

/// The elements of the vector `a` at the positions the contiguous integer vector `index` holds,
/// in order, as bytes, when host memory holds both and every position is in `0..len(a)`; `None`
/// otherwise (nothing is run to find out). `x[cols]` of a loop, without an instruction.
pub fn gather_in_host(a: &View, index: &View) -> PyResult<Option<Vec<u8>>> {
    vm()?.with(|rt| {
        if !rt.is_in_host(index.base.id)? || !rt.is_in_host(a.base.id)? {
            return Ok(None);
        }
        let run = index.start as usize..index.start as usize + index.nelem();
        let Some(positions) = positions_in_host(rt, index.base.id, run, &(0..a.shape[0] as i64))? else {
            return Ok(None);
        };
        rt.sync(a.base.id)?;
        let es = a.dtype().size();
        let mut out = vec![0u8; positions.len() * es];
        let offsets = positions.iter().map(|&i| (a.start + i * a.stride[0]) as usize);
        crate::array::copy_elements_at(rt.host_data(a.base.id)?, offsets, &mut out, es);
        Ok(Some(out))
    })
}

/// Element `index` of base `id` when its host copy is current (nothing is run to make it so).
pub fn computed_element(id: BaseId, index: usize) -> PyResult<Option<Scalar>> {
    vm()?.with(|rt| rt.read_in_host(id, index))
}

/// [`computed_element`] as NumPy's scalar: the element read of a loop (`A[i, j]`).
pub fn computed_numpy_scalar(py: Python<'_>, id: BaseId, index: usize) -> PyResult<Option<Py<PyAny>>> {
    let mut bytes = [0u8; 8];
    match vm()?.with(|rt| rt.read_bytes_in_host(id, index, &mut bytes))? {
        Some(dtype) => crate::scalars::numpy_scalar_from_bytes(py, dtype, bytes).map(Some),
        None => Ok(None),
    }
}

/// Writes `bytes` at element `index` of base `id` in its host copy (see [`element_access`]);
/// false when the store must be queued instead.
pub fn host_store(py: Python<'_>, id: BaseId, index: usize, bytes: &[u8]) -> PyResult<bool> {
    let vm = vm()?;
    crate::bounds::forget(id);
    // Held in host memory and used by nothing queued: the write runs nothing (the GIL stays).
    let stored = vm.with(|rt| {
        if rt.write_in_host(id, index as u64, bytes)? {
            return Ok(Some(true));
        }
        Ok(element_access(rt, id)?.then_some(false))
    })?;
    match stored {
        Some(true) => Ok(true),
        Some(false) => vm.run(py, "writing an element", |rt| rt.write(id, index as u64, bytes)).map(|()| true),
        None => Ok(false),
    }
}

/// `ValueError` with NumPy's text.
pub fn value_err(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// `IndexError` with NumPy's text.
pub fn index_err(msg: impl Into<String>) -> PyErr {
    PyIndexError::new_err(msg.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(flush, m)?)?;
    m.add_function(wrap_pyfunction!(set_stack, m)?)?;
    m.add_function(wrap_pyfunction!(_watch_interrupts, m)?)?;
    m.add_function(wrap_pyfunction!(_context_token, m)?)?;
    m.add_function(wrap_pyfunction!(_live_bases, m)?)?;
    m.add_function(wrap_pyfunction!(_runtime_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(_describe, m)?)?;
    Ok(())
}
