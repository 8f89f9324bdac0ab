//! # vm-host: the composition root of the vector VM
//!
//! What every program that runs the VM in-process shares, whatever its frontend (the C ABI of
//! `vm-bridge-c`, vmnp, `vm-bench`, the `vm` tool):
//!
//! - [`engines`]: the implementations compiled in, and the embedded default configuration;
//! - [`plugin`]: engine plugins loaded from shared libraries through the component ABI;
//! - [`stack`]: choosing, planning and building a stack ([`StackChoice`] says who chooses);
//! - [`context`]: the process-wide table of live contexts, which C and Python share;
//! - [`last_error`]: the per-thread last error message, which C and Python share too;
//! - the allocator: mimalloc for every Rust allocation, tuned by [`tune_allocator`].

pub mod context;
pub mod engines;
pub mod last_error;
pub mod plugin;
pub mod stack;

pub use vm_runtime::StackChoice;

/// mimalloc for every Rust allocation of what links this crate (`libvm.so`, vmnp's extension,
/// `vm-bench`, the `vm` tool): a program's operations make and drop many small objects
/// (instructions, views, kernels' bindings, short-lived arrays), which glibc's allocator serves
/// at several times the cost. Its dynamic-TLS build: the libraries are loaded with `dlopen`
/// (Python extensions, plugins' hosts), where the static TLS block has no room for it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tells mimalloc to keep freed pages for a second before returning them to the system (its
/// default is 10 ms): a loop of batches frees and allocates buffers of the same sizes over and
/// over, and pages given back are zeroed by the kernel again at their next use (measured: 15%
/// of a loop storing rows of a large array). Buffers from 64 MiB come from the system
/// allocator and go back at once. Once per process; [`stack::build_runtime`] calls it.
pub fn tune_allocator() {
    /// `mi_option_purge_delay` of mimalloc's `mi_option_t` (the same in its versions 2 and 3).
    const PURGE_DELAY: std::ffi::c_int = 15;
    const PURGE_DELAY_MS: std::ffi::c_long = 1000;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: mimalloc's own setter of one of its options, with a value it documents; options
    // may be set at any time.
    ONCE.call_once(|| unsafe { mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) });
}
