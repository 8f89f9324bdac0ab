//! The implementations compiled into this build, and the embedded default configuration.

use vm_ir::Result;
use vm_runtime::Implementation;
use vm_runtime::stack::Registry;

/// Every OpenCL platform with its devices, one line each (`vm info` lists them).
pub use vm_opencl::device::describe_platforms;

/// The built-in configuration (`config/default.toml`), used when no config file is found.
pub const DEFAULT_CONFIG: &str = vm_config::DEFAULT;

/// True when the cluster manager has its MPI transport (the cargo feature `mpi`).
pub const MPI_COMPILED_IN: bool = cfg!(feature = "mpi");

/// Every component implementation compiled into this build, sorted by name. (`cluster` is
/// always registered; without the `mpi` feature building it reports that MPI is missing.)
pub fn implementations() -> Vec<Implementation> {
    let mut all = vec![
        vm_node::IMPLEMENTATION,
        vm_interp::IMPLEMENTATION,
        vm_cpu::IMPLEMENTATION,
        vm_cluster::IMPLEMENTATION,
        vm_opencl::IMPLEMENTATION,
    ];
    all.sort_by_key(|i| i.name);
    all
}

/// The registry of [`implementations`].
pub fn registry() -> Result<Registry> {
    Registry::with(&implementations())
}

/// Names of the implementations compiled in, sorted (`vm info` lists them).
pub fn engines_compiled_in() -> Vec<&'static str> {
    implementations().iter().map(|i| i.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_holds_the_engines_compiled_in() {
        let r = registry().unwrap();
        assert_eq!(r.names(), engines_compiled_in());
        assert!(engines_compiled_in().contains(&"interp"));
        assert!(engines_compiled_in().contains(&"node"));
    }
}
