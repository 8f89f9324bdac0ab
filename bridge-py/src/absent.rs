//! Class attributes that read as absent, cheaply: NumPy's binary operators look up
//! `__array_ufunc__` on the type of their other operand (`np.float64(x) * a`, `numpy_array + a`,
//! `np.sin(a)`), and on Python 3.11 a lookup that finds nothing formats an `AttributeError`
//! message, then clears it: about 2,500 machine instructions, a third of what NumPy spends on
//! a whole small operation. An attribute whose `__get__` raises a bare `AttributeError` (no
//! message, no exception object) reads as absent to `getattr`, `hasattr` and NumPy alike, so
//! vmnp arrays keep the semantics of having no `__array_ufunc__` (see
//! `NdArray::__array_priority__`) at a fraction of the cost. Python 3.12 and later look
//! attributes up without formatting a message: there nothing is installed.

use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::c_void;

/// `__get__` of an absent attribute: a bare `AttributeError`.
unsafe extern "C" fn absent_get(
    _descriptor: *mut ffi::PyObject,
    _instance: *mut ffi::PyObject,
    _owner: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: called by the interpreter with the GIL held; sets the error indicator only.
    unsafe { ffi::PyErr_SetNone(ffi::PyExc_AttributeError) };
    std::ptr::null_mut()
}

/// A new instance of the descriptor type whose `__get__` is [`absent_get`].
fn absent_descriptor(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let mut slots = [
        ffi::PyType_Slot { slot: ffi::Py_tp_descr_get, pfunc: absent_get as *mut c_void },
        ffi::PyType_Slot { slot: 0, pfunc: std::ptr::null_mut() },
    ];
    let mut spec = ffi::PyType_Spec {
        name: c"vmnp._vmnp.Absent".as_ptr(),
        basicsize: 0,
        itemsize: 0,
        flags: ffi::Py_TPFLAGS_DEFAULT as _,
        slots: slots.as_mut_ptr(),
    };
    // SAFETY: the spec and its slots outlive the call, which copies what it keeps (the name
    // is static); the result is a new reference or null with an error set.
    let ty = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpec(&mut spec))? };
    ty.call0()
}

/// Makes `name` on `class` read as absent where a missing attribute is costly to look up
/// (Python before 3.12); elsewhere leaves `class` as it is.
pub fn hide(class: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    let py = class.py();
    if py.version_info() >= (3, 12) {
        return Ok(());
    }
    class.setattr(name, absent_descriptor(py)?)
}
