//! Names of the JIT's code for profilers. With `VM_PERF_MAP=1` in the environment, every kernel
//! Cranelift compiles and every row routine ([`crate::x86`]) is written to
//! `/tmp/perf-<pid>.map` as a line `<start> <size> <name>` (hexadecimal address and length: the
//! JIT map format `perf report` and `perf top` read), so that a profile shows
//! `vm-kernel-<hash>-<dtype>-<opcodes>.<n>` and `vm-rowcode-<hash>-<isa>.<n>` instead of bare
//! addresses (the hash is the kernel's structure's, the same for a kernel and its routine; `n`
//! counts the JIT's functions). The functions are declared under these names in their JIT
//! module, and Cranelift's JIT writes the same map by itself while `perf record` runs (it sets
//! `PERF_BUILDID_DIR`), so a recorded profile names them even without the variable. Lines are
//! appended, each flushed at once, by one writer behind a lock; the variable is read once. Code
//! of a dropped engine is unmapped and its addresses may be reused: a later line for the same
//! range names the code there now.

use crate::compile::program::Program;
use std::fs::{File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The map's file, once opened; `None` when no map is written (or it cannot be opened).
static MAP: OnceLock<Option<Mutex<File>>> = OnceLock::new();

/// The map's file: `/tmp/perf-<pid>.map` when `VM_PERF_MAP=1`, else none.
fn map() -> Option<&'static Mutex<File>> {
    MAP.get_or_init(|| {
        let on = std::env::var("VM_PERF_MAP").is_ok_and(|v| v == "1");
        on.then(|| open(format!("/tmp/perf-{}.map", std::process::id()).into())).flatten()
    })
    .as_ref()
}

fn open(path: PathBuf) -> Option<Mutex<File>> {
    match OpenOptions::new().create(true).append(true).open(&path) {
        Ok(f) => Some(Mutex::new(f)),
        Err(e) => {
            eprintln!("VM_PERF_MAP: cannot open {}: {e}", path.display());
            None
        }
    }
}

/// True when a map is written.
pub fn enabled() -> bool {
    map().is_some()
}

/// Adds `size` bytes of code at `start` named `name` (computed only when a map is written).
pub fn record(start: usize, size: usize, name: impl FnOnce() -> String) {
    if let Some(m) = map() {
        let line = format!("{start:x} {size:x} {}\n", name());
        let mut f = m.lock().unwrap_or_else(|e| e.into_inner());
        // A profiler's aid: a failed write loses a name, not a result.
        let _ = f.write_all(line.as_bytes()).and_then(|()| f.flush());
    }
}

/// Numbers making the names of the JIT's functions unique.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// `stem` made unique in the process (`<stem>.<n>`): the name a function is declared with in
/// its JIT module, which writes it into the map too while `perf record` runs.
pub fn unique(stem: String) -> String {
    format!("{stem}.{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The hash naming `p`'s code (stable within a process).
fn hash(p: &Program) -> u32 {
    let mut h = rustc_hash::FxHasher::default();
    p.hash(&mut h);
    h.finish() as u32
}

/// The name of `p`'s kernel (before [`unique`]): its hash, element type and opcodes (the first few), and the tier.
pub fn kernel_name(p: &Program, good: bool) -> String {
    let mut name = format!("vm-kernel-{:08x}", hash(p));
    if let Some(op) = p.ops.first() {
        name += &format!("-{}", op.dtype.name());
    }
    for op in p.ops.iter().take(6) {
        name += &format!("-{}", op.opcode.name());
    }
    if p.ops.len() > 6 {
        name += &format!("-and-{}-more", p.ops.len() - 6);
    }
    name + if good { "" } else { "-fast" }
}

/// The name of `p`'s row routine in instruction set `isa` (before [`unique`]).
pub fn routine_name(p: &Program, isa: crate::x86::Isa) -> String {
    format!("vm-rowcode-{:08x}-{}", hash(p), format!("{isa:?}").to_lowercase())
}
