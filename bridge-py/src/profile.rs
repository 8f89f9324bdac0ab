//! Where a Python program makes the VM run. While profiling is on ([`_profile_start`], used by
//! `vmnp.profile` and `python -m vmnp --profile`), every piece of work the frontend starts with
//! the GIL released ([`Vm::run`](crate::session::Vm::run): a flush, a sync before reading an
//! array or an element, a host write) is recorded with its cause, its duration, and the file
//! and line of the program that caused it: the innermost Python frame outside the vmnp package.
//! Operations small enough to run at once, as they are queued, are not recorded.

use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use vm_runtime::trace;

/// Whether work is recorded.
static ON: AtomicBool = AtomicBool::new(false);

/// The most events kept (a loop flushing every iteration makes one per iteration); the later
/// ones are counted as dropped.
const MAX_EVENTS: usize = 1 << 20;

/// One piece of work: its cause, the program's file and line, start and duration (seconds
/// since profiling started).
struct Event {
    cause: &'static str,
    file: String,
    line: u32,
    start: f64,
    seconds: f64,
}

#[derive(Default)]
struct Record {
    events: Vec<Event>,
    dropped: u64,
    /// The vmnp package's directory: frames there are vmnp's, not the program's.
    package: String,
}

static RECORD: Mutex<Record> = Mutex::new(Record { events: Vec::new(), dropped: 0, package: String::new() });

fn record() -> std::sync::MutexGuard<'static, Record> {
    RECORD.lock().unwrap_or_else(|e| e.into_inner())
}

/// The program's location of work about to start, when profiling is on (else `None`, at the
/// cost of one atomic load).
pub fn begin(py: Python<'_>) -> Option<(String, u32, f64, Instant)> {
    if !ON.load(Ordering::Relaxed) {
        return None;
    }
    let (file, line) = caller(py).unwrap_or_else(|| ("<unknown>".into(), 0));
    Some((file, line, trace::clock(), Instant::now()))
}

/// Records work started at [`begin`].
pub fn end(cause: &'static str, begun: Option<(String, u32, f64, Instant)>) {
    let Some((file, line, start, t0)) = begun else { return };
    let seconds = t0.elapsed().as_secs_f64();
    let mut r = record();
    if r.events.len() < MAX_EVENTS {
        r.events.push(Event { cause, file, line, start, seconds });
    } else {
        r.dropped += 1;
    }
}

/// The innermost frame outside the vmnp package: its file and line.
fn caller(py: Python<'_>) -> Option<(String, u32)> {
    let package = record().package.clone();
    let mut frame = py.import("sys").ok()?.call_method1("_getframe", (0,)).ok()?;
    loop {
        let code = frame.getattr("f_code").ok()?;
        let file: String = code.getattr("co_filename").ok()?.extract().ok()?;
        if package.is_empty() || !file.starts_with(&package) {
            return Some((file, frame.getattr("f_lineno").ok()?.extract().ok()?));
        }
        frame = frame.getattr("f_back").ok().filter(|f| !f.is_none())?;
    }
}

/// Starts recording (dropping what was recorded before); `package` is the vmnp package's
/// directory.
#[pyfunction]
fn _profile_start(package: String) {
    let mut r = record();
    *r = Record { package, ..Record::default() };
    trace::start();
    ON.store(true, Ordering::Relaxed);
}

/// The events of the program, the engines' spans and what was dropped past the limits.
type Stopped = (Py<PyList>, Py<PyList>, u64);

/// Stops recording: the program's events as `(cause, file, line, start, seconds)` tuples, the
/// engines' spans ([`vm_runtime::trace`]) as `(name, category, start, seconds, {arg: number})`
/// tuples (start in seconds on [`trace::clock`]), and the count of both dropped past their
/// limits.
#[pyfunction]
fn _profile_stop(py: Python<'_>) -> PyResult<Stopped> {
    ON.store(false, Ordering::Relaxed);
    let r = std::mem::take(&mut *record());
    let (spans, spans_dropped) = trace::stop();
    let events = PyList::empty(py);
    for e in r.events {
        events.append((e.cause, e.file, e.line, e.start, e.seconds))?;
    }
    let engine = PyList::empty(py);
    for s in spans {
        let args = pyo3::types::PyDict::new(py);
        for (k, v) in s.args {
            args.set_item(k, v)?;
        }
        engine.append((s.name.as_ref(), s.cat, s.start, s.seconds, args))?;
    }
    Ok((events.unbind(), engine.unbind(), r.dropped + spans_dropped))
}

/// The program's file and line calling into vmnp now (the innermost frame outside the package),
/// for the Python layer's own events (fallbacks).
#[pyfunction]
fn _profile_caller(py: Python<'_>) -> (String, u32) {
    caller(py).unwrap_or_else(|| ("<unknown>".into(), 0))
}

/// Seconds on the timeline of every event ([`trace::clock`]), for the Python layer's own spans.
#[pyfunction]
fn _profile_clock() -> f64 {
    trace::clock()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_profile_start, m)?)?;
    m.add_function(wrap_pyfunction!(_profile_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_profile_clock, m)?)?;
    m.add_function(wrap_pyfunction!(_profile_caller, m)?)?;
    Ok(())
}
