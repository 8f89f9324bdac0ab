//! Without the `mpi` feature the cluster stack cannot start, and says why, through `vm_init`
//! (the C ABI; vm-host's tests check the same through the registry every tool uses). (With the
//! feature this path starts an MPI job; `scripts/test-mpi.sh` runs it under `mpirun`.)
#![cfg(not(feature = "mpi"))]

use std::ffi::{CStr, CString};

#[test]
fn vm_init_with_the_cluster_stack_reports_the_missing_feature() {
    let stack = CString::new("cluster").unwrap();
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a null config path asks for the lookup order; `stack` is a valid C string and
    // `ctx` a valid place for the context pointer.
    let status = unsafe { vm::exports::vm_init_stack(std::ptr::null(), stack.as_ptr(), &mut ctx) };
    assert_ne!(status, 0, "the cluster stack must not start without MPI");
    assert!(ctx.is_null());
    // SAFETY: vm_last_error returns this thread's last message, a valid C string.
    let msg = unsafe { CStr::from_ptr(vm::exports::vm_last_error()) }.to_string_lossy().into_owned();
    assert!(msg.contains("--features mpi") && msg.contains("mpirun"), "{msg}");
}
