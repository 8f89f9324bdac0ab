//! # vm-cpu-plugin: the cpu engine as an engine plugin
//!
//! `libvm_cpu_plugin.so` exports the Cranelift engine of `vm-cpu` through the component ABI
//! (`vm_component.h`), with the same settings, under the name `cpu_plugin`. A config loads it like
//! any plugin:
//!
//! ```toml
//! [cpu_plugin]
//! library = "/path/to/libvm_cpu_plugin.so"
//! [stacks]
//! cpu_plugin = ["node", "cpu_plugin", "interp"]
//! ```
//!
//! It shows that the ABI carries what a full engine needs (batches, host memory without copies,
//! a child for what it lacks, settings, statistics), and measures what crossing it costs.

use vm_runtime::Implementation;

/// The cpu engine's implementation, renamed: a plugin may not take a built-in's name.
pub static IMPLEMENTATION: Implementation = Implementation {
    name: "cpu_plugin",
    summary: "the Cranelift JIT engine of vm-cpu, loaded as a plugin",
    ..vm_cpu::IMPLEMENTATION
};

vm_plugin::export_component!(IMPLEMENTATION);
