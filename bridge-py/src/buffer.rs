//! Zero-copy export of an array's synced data: the buffer protocol (`memoryview(x)`) and
//! `__array_interface__`, so `numpy.asarray(x)` views the VM's host memory instead of copying.
//!
//! Exporting syncs the base (running what it depends on, GIL released) and pins its host buffer
//! (`Runtime::pinned_host_data`): the buffer then stays at its address until the base is freed,
//! and the consumer keeps the array, hence the base, alive. Exports are read-only: a write
//! through them would bypass the VM, which could hold a newer copy elsewhere (a device) and
//! would never know. The data is current as of the export; later operations on the array are
//! seen once they run (after a flush or another export).

use crate::array::NdArray;
use crate::session::vm;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::{CStr, c_int, c_void};
use vm_ir::{DType, View};

/// The struct-module format character of a dtype (PEP 3118).
fn format(d: DType) -> &'static CStr {
    match d {
        DType::Bool => c"?",
        DType::I8 => c"b",
        DType::U8 => c"B",
        DType::I16 => c"h",
        DType::U16 => c"H",
        DType::I32 => c"i",
        DType::U32 => c"I",
        // NumPy's int64 is C `long` where that is 64 bits (format `l`), else `long long`.
        DType::I64 if std::mem::size_of::<std::ffi::c_long>() == 8 => c"l",
        DType::U64 if std::mem::size_of::<std::ffi::c_long>() == 8 => c"L",
        DType::I64 => c"q",
        DType::U64 => c"Q",
        DType::F32 => c"f",
        DType::F64 => c"d",
    }
}

/// NumPy's array-interface type string of a dtype (little-endian, as the VM stores data).
fn typestr(d: DType) -> String {
    let kind = match d {
        DType::Bool => 'b',
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => 'i',
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => 'u',
        DType::F32 | DType::F64 => 'f',
    };
    let order = if d.size() == 1 { '|' } else { '<' };
    format!("{order}{kind}{}", d.size())
}

/// The address of element (0, ..., 0) of `view` in its base's synced, pinned host buffer.
fn element_zero(py: Python<'_>, view: &View) -> PyResult<usize> {
    let id = view.base.id;
    // A base that a failed batch left unspecified is that batch's error here, every time (the
    // runtime keeps it): NumPy's `asarray`, which clears a buffer-protocol error and tries
    // `__array_interface__` next, never receives data that was not computed.
    let base_addr = vm()?.run(py, "exporting an array (buffer protocol)", |rt| {
        rt.sync(id)?;
        Ok(rt.pinned_host_data(id)?.as_ptr() as usize)
    })?;
    Ok(base_addr + view.start as usize * view.dtype().size())
}

/// Byte strides of `view`, or `None` when it is C-contiguous.
fn byte_strides(view: &View) -> Option<Vec<isize>> {
    let es = view.dtype().size() as isize;
    (!view.is_contiguous()).then(|| view.stride.iter().map(|&s| s as isize * es).collect())
}

/// Shape and strides lent to a buffer consumer; owned by `Py_buffer::internal` until release.
struct Lent {
    shape: Vec<ffi::Py_ssize_t>,
    strides: Vec<ffi::Py_ssize_t>,
}

#[pymethods]
impl NdArray {
    /// NumPy's array interface (version 3) of the synced data, read-only.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let v = &self.view();
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, v.shape.iter())?)?;
        d.set_item("typestr", typestr(v.dtype()))?;
        // NumPy's description of the fields: one, unnamed, of the element type.
        d.set_item("descr", vec![("", typestr(v.dtype()))])?;
        d.set_item("data", (element_zero(py, v)?, true))?;
        match byte_strides(v) {
            Some(s) => d.set_item("strides", PyTuple::new(py, s)?)?,
            None => d.set_item("strides", py.None())?,
        }
        Ok(d)
    }

    /// The buffer protocol: a read-only, possibly strided view of the synced data.
    ///
    /// # Safety
    /// Called by Python with a valid `Py_buffer` to fill.
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no Py_buffer to fill"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err(
                "vmnp arrays export read-only buffers (write through the array, or copy with numpy.array(x))",
            ));
        }
        let v = &slf.get().view().clone();
        let strided = byte_strides(v);
        if strided.is_some() && flags & ffi::PyBUF_STRIDES != ffi::PyBUF_STRIDES {
            return Err(PyBufferError::new_err("the array is not C-contiguous and the consumer does not take strides"));
        }
        let es = v.dtype().size() as ffi::Py_ssize_t;
        let buf = element_zero(slf.py(), v)?;
        let lent = Box::new(Lent {
            shape: v.shape.iter().map(|&n| n as ffi::Py_ssize_t).collect(),
            strides: strided
                .unwrap_or_else(|| vm_ir::view::row_major_strides(&v.shape).iter().map(|&s| s as isize * es).collect()),
        });
        // SAFETY: `view` is the caller's Py_buffer (checked non-null); every pointer stored in it
        // stays valid until __releasebuffer__: `buf` points into a pinned host buffer kept alive
        // by the reference to `slf` stored in `obj`, and shape/strides live in `lent`, which
        // `internal` owns.
        unsafe {
            (*view).buf = buf as *mut c_void;
            (*view).len = v.nelem() as ffi::Py_ssize_t * es;
            (*view).readonly = 1;
            (*view).itemsize = es;
            (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
                format(v.dtype()).as_ptr() as *mut _
            } else {
                std::ptr::null_mut()
            };
            // Without PyBUF_ND the consumer sees plain bytes: one dimension, no shape.
            let nd = flags & ffi::PyBUF_ND == ffi::PyBUF_ND;
            (*view).ndim = if nd { v.ndim() as c_int } else { 1 };
            (*view).shape = if nd { lent.shape.as_ptr() as *mut _ } else { std::ptr::null_mut() };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                lent.strides.as_ptr() as *mut _
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = Box::into_raw(lent) as *mut c_void;
            (*view).obj = slf.into_any().into_ptr();
        }
        Ok(())
    }

    /// Frees what [`NdArray::__getbuffer__`] lent.
    ///
    /// # Safety
    /// Called by Python with a `Py_buffer` filled by `__getbuffer__`.
    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: `internal` was set by __getbuffer__ from Box::into_raw and is released once.
        unsafe {
            let internal = (*view).internal as *mut Lent;
            if !internal.is_null() {
                drop(Box::from_raw(internal));
                (*view).internal = std::ptr::null_mut();
            }
        }
    }
}
