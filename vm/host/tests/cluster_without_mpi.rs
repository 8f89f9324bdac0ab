//! Without the `mpi` feature the cluster stack cannot start, and says why, through the registry
//! every tool uses (the C bridge's tests check the same through `vm_init`). (With the feature
//! this path starts an MPI job; `scripts/test-mpi.sh` runs it under `mpirun`.)
#![cfg(not(feature = "mpi"))]

use vm_host::StackChoice;
use vm_host::stack::build_runtime;

#[test]
fn building_the_cluster_stack_reports_the_missing_feature() {
    let e = build_runtime(None, &StackChoice::Named("cluster".into())).err().expect("no MPI: no cluster");
    assert!(e.to_string().contains(vm_cluster::NO_MPI), "{e}");
}
