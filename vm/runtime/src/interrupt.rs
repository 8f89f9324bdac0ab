//! Stopping a batch part way: a request, made from any thread (or a signal handler), that the
//! engines running a context's flush notice within milliseconds.
//!
//! Each context's [`HostMemory`](crate::HostMemory) carries one [`Interrupt`]; engines poll it
//! between instructions, between kernel blocks and every few tens of thousands of elements inside
//! long loops, and give up with [`Error::Interrupted`]. [`Runtime::flush`](crate::Runtime::flush)
//! withdraws a request left from before it started, so a request stops the flush running when it
//! is made, not one that starts later.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use vm_ir::{Error, Result};

/// A shared request to stop the flush in progress. Cloning shares the request; requesting is
/// one atomic store (async-signal-safe).
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A handle with no request made.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Asks the flush in progress to stop.
    pub fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether a stop has been requested and not withdrawn.
    #[inline]
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Withdraws a request.
    pub fn clear(&self) {
        self.0.store(false, Ordering::Relaxed);
    }

    /// [`Error::Interrupted`] when a stop has been requested.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.is_requested() { Err(Error::Interrupted) } else { Ok(()) }
    }

    /// The flag itself, for code that polls it where a handle cannot go (a kernel's blocks).
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_shared_by_clones_until_cleared() {
        let a = Interrupt::new();
        let b = a.clone();
        assert!(a.check().is_ok());
        b.request();
        assert!(a.is_requested());
        assert!(matches!(a.check(), Err(Error::Interrupted)));
        a.clear();
        assert!(!b.is_requested());
    }
}
