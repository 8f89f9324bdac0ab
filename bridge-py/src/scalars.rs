//! NumPy scalars (`numpy.float64(2.5)`, `numpy.int32(7)`) made as NumPy makes them when it
//! reads an element: by copying the element's bytes into a new scalar of the dtype
//! (`PyArray_Scalar` of NumPy's C API), not by calling the scalar type on a Python number,
//! which parses arguments and costs several times as much. Every element read of a vmnp array
//! (`A[i, j]` in a loop) returns one.
//!
//! NumPy's C API is a table of function pointers that NumPy exports as the capsule
//! `numpy._core._multiarray_umath._ARRAY_API`; an entry keeps its position across NumPy versions
//! (`PyArray_Scalar` is entry 60 since NumPy 1.0). The table is used only when its ABI version
//! (entry 0) is one this module knows; otherwise scalars are made by calling their type.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::ffi::{c_uint, c_void};
use vm_ir::{DType, Scalar};

/// `PyArray_GetNDArrayCVersion`: the ABI version of the table.
const ABI_VERSION_ENTRY: usize = 0;
/// `PyArray_Scalar(data, descr, base)`: a new scalar of `descr` holding a copy of `*data`.
const SCALAR_ENTRY: usize = 60;
/// The ABI versions whose table this module reads: NumPy 1.x and 2.x (`NPY_ABI_VERSION`).
const KNOWN_ABI_VERSIONS: [c_uint; 2] = [0x0100_0009, 0x0200_0000];

type MakeScalar = unsafe extern "C" fn(*mut c_void, *mut ffi::PyObject, *mut ffi::PyObject) -> *mut ffi::PyObject;

/// NumPy's `PyArray_Scalar` and the dtype object (a `PyArray_Descr`) of each VM dtype.
struct Maker {
    make: MakeScalar,
    descrs: Vec<(DType, Py<PyAny>)>,
}

static MAKER: PyOnceLock<Option<Maker>> = PyOnceLock::new();

fn maker(py: Python<'_>) -> PyResult<Option<&Maker>> {
    MAKER
        .get_or_try_init(py, || -> PyResult<Option<Maker>> {
            // `numpy._core` since NumPy 2, `numpy.core` before; without either, the slow path.
            let module =
                py.import("numpy._core._multiarray_umath").or_else(|_| py.import("numpy.core._multiarray_umath"));
            let Ok(capsule) = module.and_then(|m| m.getattr("_ARRAY_API")) else { return Ok(None) };
            // SAFETY: a capsule object; a NULL result (another kind of object) is checked.
            let table =
                unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), std::ptr::null()) } as *const *const c_void;
            if table.is_null() {
                ffi_error_clear(py);
                return Ok(None);
            }
            // SAFETY: NumPy's table starts with `unsigned int PyArray_GetNDArrayCVersion(void)`
            // in every version; its entries are function pointers NumPy keeps alive while loaded
            // (the module is imported for good).
            let version = unsafe {
                let f: unsafe extern "C" fn() -> c_uint = std::mem::transmute(*table.add(ABI_VERSION_ENTRY));
                f()
            };
            if !KNOWN_ABI_VERSIONS.contains(&version) {
                return Ok(None);
            }
            // SAFETY: entry 60 of a table of a known ABI version is `PyArray_Scalar`.
            let make: MakeScalar = unsafe { std::mem::transmute(*table.add(SCALAR_ENTRY)) };
            let np = py.import("numpy")?;
            let dtype = np.getattr("dtype")?;
            let descrs = DType::ALL
                .iter()
                .map(|&d| Ok((d, dtype.call1((crate::ops::np_name(d),))?.unbind())))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(Some(Maker { make, descrs }))
        })
        .map(Option::as_ref)
}

/// Drops a Python error NumPy's capsule lookup may have set.
fn ffi_error_clear(py: Python<'_>) {
    let _ = PyErr::take(py);
}

/// `x` as NumPy's scalar of its dtype.
pub fn numpy_scalar_of(py: Python<'_>, x: Scalar) -> PyResult<Py<PyAny>> {
    numpy_scalar_from_bytes(py, x.dtype(), x.to_ne_bytes())
}

/// NumPy's scalar of `dtype` holding the element whose native bytes start `bytes`
/// ([`Scalar::to_ne_bytes`]): an element read turned into NumPy's scalar without a [`Scalar`]
/// on the way.
pub fn numpy_scalar_from_bytes(py: Python<'_>, dtype: DType, mut bytes: [u8; 8]) -> PyResult<Py<PyAny>> {
    let Some(maker) = maker(py)? else {
        return crate::array::numpy_scalar_by_call(py, Scalar::from_ne_bytes(dtype, &bytes));
    };
    // (From the end: float64 and float32 first.)
    let descr = &maker.descrs.iter().rev().find(|(d, _)| *d == dtype).expect("every dtype has a NumPy dtype").1;
    // SAFETY: `bytes` holds one element of the dtype `descr` describes, in native order (the
    // scalar copies it); `descr` is a live dtype object, borrowed for the call (NumPy takes its
    // own reference); a NULL base is allowed for every dtype but `void`.
    let made = unsafe { (maker.make)(bytes.as_mut_ptr().cast(), descr.as_ptr(), std::ptr::null_mut()) };
    // SAFETY: a new reference, or NULL with a Python error set.
    unsafe { Bound::from_owned_ptr_or_err(py, made) }.map(Bound::unbind)
}

/// The native bytes of the value of `scalar`, a NumPy scalar whose exact type is that of
/// `dtype` (the caller checked), read where NumPy keeps it: right after the object's header
/// (`PyArrayScalar_VAL` of NumPy's C API: `struct { PyObject_HEAD; T obval; }` for every numeric
/// scalar type), without making a Python number on the way.
pub fn numpy_scalar_bytes(scalar: &Bound<'_, PyAny>, dtype: DType) -> [u8; 8] {
    let mut bytes = [0u8; 8];
    let size = dtype.size();
    assert!(size <= bytes.len(), "a dtype of at most 8 bytes");
    // SAFETY: `scalar` is a live NumPy scalar of `dtype`'s exact type: its value, `size` bytes,
    // follows the object header (NumPy's documented layout of its scalar objects).
    unsafe {
        let value = scalar.as_ptr().cast::<u8>().add(std::mem::size_of::<ffi::PyObject>());
        std::ptr::copy_nonoverlapping(value, bytes.as_mut_ptr(), size);
    }
    bytes
}
