//! # vm-bridge-c: the C ABI of the vector VM
//!
//! This crate builds `libvm.so` (library name `vm`): the `extern "C"` functions of [`exports`],
//! over the `#[repr(C)]` types of [`abi`], declared by the header `include/vm.h`, which
//! [`header`] renders from the Rust tables. It also registers the engines compiled into the
//! library ([`engines`]) and provides the `vm` command-line tool (`src/bin/vm.rs`).
//!
//! Rules at the boundary: every exported function returns a status code (`VM_OK` or
//! `VM_ERR_*`, see [`errors`]) and records a per-thread last-error message; no panic crosses it
//! ([`errors::guard`]); every pointer from C is checked for null before use; contexts are tokens
//! looked up in a table of live ones ([`context`]), so a stale context is an error, not a crash.
//!
//! The reference for C programmers is `docs/c-abi.md`.

/// mimalloc for every Rust allocation of `libvm.so` and of what links this crate (vmnp's
/// extension, `vm-bench`, the `vm` tool): a program's operations make and drop many small
/// objects (instructions, views, kernels' bindings, short-lived arrays), which glibc's allocator
/// serves at several times the cost. Its dynamic-TLS build: the libraries are loaded with
/// `dlopen` (Python extensions, plugins' hosts), where the static TLS block has no room for it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tells mimalloc to keep freed pages for a second before returning them to the system (its
/// default is 10 ms): a loop of batches frees and allocates buffers of the same sizes over and
/// over, and pages given back are zeroed by the kernel again at their next use (measured: 15%
/// of a loop storing rows of a large array). Buffers from 64 MiB come from the system
/// allocator and go back at once. Once per process, when the first context is made.
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

/// The `#[repr(C)]` types of `vm.h` (the crate `vm-abi`).
pub use vm_abi as abi;
pub mod context;
pub mod engines;
pub mod errors;
pub mod exports;
pub mod header;
pub mod plugin;
pub mod run;
