//! # vmnp: the Python frontend of the vector VM
//!
//! The native half of the `vmnp` package (`vmnp._vmnp`). It owns one VM context, built from the
//! configuration exactly as `vm_init` builds it for C programs (the same config file, the same
//! `VM_STACK`) and registered in the same table of live contexts, and it records NumPy
//! operations on [`array::NdArray`]s as instructions of that context's runtime.
//!
//! Everything on the per-operation path is here, in Rust: operand conversion, NumPy 2 type
//! promotion with NEP 50's weak scalars ([`dtypes`]), broadcasting and view arithmetic
//! ([`array`]), recording ([`ops`]), and zero-copy export of synced data ([`buffer`]). The Python part of the package (`python/vmnp`) builds
//! the NumPy namespace on top and supplies the few slow paths (advanced indexing, repr, the
//! fallback to NumPy) as hooks this module calls.
//!
//! May depend on: `vm-ir` (the bytecode), `vm-runtime` and `vm-host` (context table, stack building).

mod absent;
pub mod array;
pub mod bounds;
pub mod buffer;
pub mod dtypes;
pub mod extension;
pub mod ops;
pub mod positions;
pub mod profile;
pub mod scalars;
pub mod session;

use pyo3::prelude::*;

pyo3::create_exception!(vmnp, VMError, pyo3::exceptions::PyRuntimeError, "An error reported by the VM.");

/// The extension module `vmnp._vmnp`.
#[pymodule]
fn _vmnp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VMError", m.py().get_type::<VMError>())?;
    m.add_class::<array::NdArray>()?;
    absent::hide(m.py().get_type::<array::NdArray>().as_any(), "__array_ufunc__")?;
    m.add_class::<array::NativeFirst>()?;
    session::register(m)?;
    bounds::register(m)?;
    ops::register(m)?;
    extension::register(m)?;
    positions::register(m)?;
    profile::register(m)?;
    Ok(())
}
