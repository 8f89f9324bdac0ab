//! Contexts: what a `vm_context *` stands for, and the table of live ones.
//!
//! The pointer a C program holds is an opaque token, never dereferenced: every call looks it up
//! in a process-wide table of live contexts. Tokens are never reused, so a null pointer, a
//! pointer that never came from `vm_init`, and a context already shut down are all reported as
//! `VM_ERR_INVALID_ARGUMENT` instead of being undefined behaviour. A call holds its own reference
//! to the context while it runs, so `vm_shutdown` on another thread cannot free it underneath.

use rustc_hash::FxHashMap as HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use vm_ir::{Error, Result};
use vm_runtime::{Interrupt, Runtime};

/// `vm_context`: the opaque type C programs hold pointers to. It has no fields and is never
/// instantiated; pointers to it are tokens of the table of live contexts.
#[repr(C)]
pub struct VmContext {
    _opaque: [u8; 0],
}

/// One VM instance: a runtime over a stack, and a description of how the stack was chosen.
pub struct Context {
    runtime: Mutex<Option<Runtime>>,
    /// What `vm info` would print about this context's configuration and stack.
    pub description: String,
    /// The runtime's interrupt request, reachable without the lock a running flush holds.
    pub interrupt: Interrupt,
}

impl Context {
    /// A context driving `runtime`.
    pub fn new(runtime: Runtime, description: String) -> Context {
        let interrupt = runtime.interrupt_handle();
        Context { runtime: Mutex::new(Some(runtime)), description, interrupt }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Option<Runtime>>> {
        self.runtime.lock().map_err(|_| {
            Error::Internal(
                "an earlier call on this context panicked while using it; its state is unknown, so it refuses \
                 further work (vm_shutdown it)"
                    .into(),
            )
        })
    }

    /// Runs `f` on the runtime, holding the context's lock.
    /// A panic inside `f` is an internal error (it unwinds through the lock, which then refuses
    /// later calls), so no caller (C, Python) ever sees it unwind.
    pub fn with<T>(&self, f: impl FnOnce(&mut Runtime) -> Result<T>) -> Result<T> {
        catch_unwind(AssertUnwindSafe(|| {
            let mut guard = self.lock()?;
            let rt = guard.as_mut().ok_or_else(|| Error::InvalidArgument("the context has been shut down".into()))?;
            f(rt)
        }))
        .unwrap_or_else(|payload| {
            Err(Error::Internal(format!("panic: {}", vm_ir::error::panic_message(payload.as_ref()))))
        })
    }

    /// Takes the runtime out (for shutdown), even after a panic poisoned the lock.
    fn take(&self) -> Option<Runtime> {
        self.runtime.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

fn live() -> MutexGuard<'static, HashMap<usize, Arc<Context>>> {
    static LIVE: LazyLock<Mutex<HashMap<usize, Arc<Context>>>> = LazyLock::new(Mutex::default);
    // The table is only ever inserted into or removed from; a panic cannot leave it half-done.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Adds `ctx` to the table of live contexts and returns its token.
pub fn register(ctx: Context) -> *mut VmContext {
    // Tokens are multiples of 16 starting at 16: non-null, aligned like a real pointer, never
    // reused within a process.
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let token = NEXT.fetch_add(1, Ordering::Relaxed) * 16;
    live().insert(token, Arc::new(ctx));
    std::ptr::without_provenance_mut(token)
}

fn not_live(ptr: *const VmContext) -> Error {
    if ptr.is_null() {
        Error::InvalidArgument("the context is NULL".into())
    } else {
        Error::InvalidArgument(format!(
            "context {ptr:p} is not a live context: it was shut down, or never came from vm_init"
        ))
    }
}

/// The live context `ptr` stands for.
pub fn lookup(ptr: *const VmContext) -> Result<Arc<Context>> {
    live().get(&ptr.addr()).cloned().ok_or_else(|| not_live(ptr))
}

/// Removes context `ptr` from the table and shuts its runtime down.
pub fn shutdown(ptr: *mut VmContext) -> Result<()> {
    let ctx = {
        let mut live = live();
        let ctx = live.remove(&ptr.addr()).ok_or_else(|| not_live(ptr))?;
        if live.is_empty() {
            // Give the table's storage back once no context is left, so a program that shuts
            // down every context ends with nothing of the library's allocated: leak checkers
            // (valgrind reports the table's interior pointer as "possibly lost") stay quiet.
            *live = HashMap::default();
        }
        ctx
    };
    match ctx.take() {
        Some(rt) => rt.shutdown(),
        None => Ok(()),
    }
}

/// Number of live contexts (for tests and diagnostics).
pub fn live_contexts() -> usize {
    live().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic while the runtime is in use comes back as an internal error, and the context
    /// refuses further work instead of running on a state it cannot trust.
    #[test]
    fn a_panic_inside_is_an_error_and_the_context_refuses_after() {
        let interp = crate::StackChoice::Named("interp".into());
        let (rt, _) = crate::stack::build_runtime(None, &interp).expect("the interp stack");
        let ctx = Context::new(rt, String::new());
        let panicked = ctx.with(|_| -> Result<()> { panic!("deliberately") }).unwrap_err();
        assert!(matches!(&panicked, Error::Internal(m) if m.contains("panic: deliberately")), "{panicked}");
        let after = ctx.with(|_| Ok(())).unwrap_err();
        assert!(after.to_string().contains("refuses further work"), "{after}");
    }
}
