//! # vm-bridge-c: the C ABI of the vector VM
//!
//! This crate builds `libvm.so` (library name `vm`): the `extern "C"` functions of [`exports`],
//! over the `#[repr(C)]` types of [`abi`], declared by the header `include/vm.h`, which
//! [`header`] renders from the Rust tables ([`component_header`] renders `vm_component.h`, the
//! header of engine plugins). It also provides the `vm` command-line tool (`src/bin/vm.rs`).
//! Choosing and building stacks, plugins, the table of contexts and the allocator are
//! `vm-host`'s; this crate adds only the C boundary.
//!
//! Rules at the boundary: every exported function returns a status code (`VM_OK` or
//! `VM_ERR_*`, see [`errors`]) and records a per-thread last-error message; no panic crosses it
//! ([`errors::guard`]); every pointer from C is checked for null before use; contexts are tokens
//! looked up in a table of live ones ([`context`]), so a stale context is an error, not a crash.
//!
//! The reference for C programmers is `docs/c-abi.md`.

/// The `#[repr(C)]` types of `vm.h` (the crate `vm-abi`).
pub use vm_abi as abi;
/// The table of live contexts the exported functions look `vm_context *` tokens up in.
pub use vm_host::context;
pub mod component_header;
pub mod errors;
pub mod exports;
pub mod header;
pub mod run;
