//! `vmnp.ndarray`: a view of a VM base plus a shared handle that frees the base when the last
//! array viewing it goes away. Operators record instructions; basic indexing is view arithmetic;
//! everything else forwards to the Python layer's hooks.

use crate::dtypes::Weak;
use crate::ops::{self, np_name};
use crate::session::{BaseHandle, hook, host_bytes, index_err, value_err};
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyEllipsis, PyFloat, PyInt, PyList, PySlice, PyString, PyTuple, PyType,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};
use vm_ir::view::{Shape, row_major_strides, same_shape};
use vm_ir::{DType, Opcode, Scalar, View};

/// A NumPy-compatible array whose data lives in the VM.
#[pyclass(module = "vmnp", name = "ndarray", frozen, sequence)]
pub struct NdArray {
    /// The window onto the base (replaced by an assignment to `shape`).
    view: RwLock<View>,
    /// Keeps the base alive; the last clone's drop frees it (replaced with the view by
    /// [`NdArray::become_result`]).
    handle: RwLock<Arc<BaseHandle>>,
    /// NumPy's WRITEABLE flag: writes through a read-only array are refused.
    pub writeable: AtomicBool,
}

impl NdArray {
    /// A writeable array of `view`, owning a share of `handle`.
    pub fn new(view: View, handle: Arc<BaseHandle>) -> NdArray {
        NdArray { view: RwLock::new(view), handle: RwLock::new(handle), writeable: AtomicBool::new(true) }
    }

    /// A share of the base's handle, which keeps it alive.
    pub fn handle(&self) -> Arc<BaseHandle> {
        self.handle.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Makes this array `result` (its view and base): how an in-place operator on a 0-d array,
    /// which stands for an immutable NumPy scalar, rebinds it to a result of another dtype
    /// (`t = x.sum(); t /= 2`, `a[i] /= 2`).
    fn become_result(&self, result: &NdArray) {
        let (view, handle) = (result.view().clone(), result.handle());
        *self.handle.write().unwrap_or_else(PoisonError::into_inner) = handle;
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = view;
    }

    /// The window onto the base.
    pub fn view(&self) -> RwLockReadGuard<'_, View> {
        self.view.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// `ValueError` (NumPy's) unless the array may be written; `what` names the write
    /// ("assignment destination", "output array").
    pub fn check_writeable(&self, what: &str) -> PyResult<()> {
        if self.writeable.load(Ordering::Relaxed) { Ok(()) } else { Err(value_err(format!("{what} is read-only"))) }
    }
}

/// One operand of an operation, after conversion from Python.
#[derive(Debug, Clone)]
pub enum Arg {
    /// An array (or a NumPy scalar or array, copied in as one).
    Arr(View),
    /// A Python scalar (NEP 50 weak).
    Weak(Weak),
    /// A NumPy scalar (`numpy.float32(2)`): typed, so it takes part in promotion like an array.
    Strong(Scalar),
}

/// NumPy's scalar types of the VM's dtypes, looked up by identity (no attribute lookups on the
/// per-operation path).
static NP_SCALAR_TYPES: PyOnceLock<Vec<(Py<PyType>, DType)>> = PyOnceLock::new();

/// True when `obj` is a NumPy scalar of a dtype the VM has (`np.float64(2.0)`, `np.int32(7)`).
pub fn is_numpy_scalar(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let ty = obj.get_type();
    Ok(numpy_scalar_types(obj.py())?.iter().rev().any(|(t, _)| ty.is(t.bind(obj.py()))))
}

/// The VM dtype of NumPy's scalar type `t` (`numpy.float32`); `None` for any other type.
pub fn numpy_scalar_dtype(t: &Bound<'_, PyType>) -> PyResult<Option<DType>> {
    Ok(numpy_scalar_types(t.py())?.iter().rev().find(|(s, _)| t.is(s.bind(t.py()))).map(|&(_, d)| d))
}

static NP_DTYPE_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// NumPy's class `numpy.dtype`.
pub fn numpy_dtype_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    NP_DTYPE_CLASS.import(py, "numpy", "dtype")
}

/// NumPy's scalar types of the VM's dtypes, in [`DType::ALL`]'s order (searched from the end:
/// float64 and float32 first, the scalars programs use most).
fn numpy_scalar_types(py: Python<'_>) -> PyResult<&Vec<(Py<PyType>, DType)>> {
    NP_SCALAR_TYPES.get_or_try_init(py, || -> PyResult<Vec<(Py<PyType>, DType)>> {
        let np = py.import("numpy")?;
        DType::ALL.iter().map(|&d| Ok((np.getattr(np_name(d))?.cast_into::<PyType>()?.unbind(), d))).collect()
    })
}

/// The element `v` (a view of one element) as NumPy's scalar, read from the host copy of its
/// base; `None` when that would run queued work early (see [`session::host_element`]).
fn host_scalar(py: Python<'_>, v: &View) -> PyResult<Option<Py<PyAny>>> {
    let Some(x) = crate::session::host_element(py, v.base.id, v.start as usize, false)? else { return Ok(None) };
    numpy_scalar_of(py, x).map(Some)
}

/// The base and position of the element `key` names in `v` when `key` is one Python int per
/// axis, each in range; `None` for any other key (the general indexing handles it, errors too).
/// The index of every element loop: read through the C API, without references taken.
fn element_at(v: &View, key: &Bound<'_, PyAny>) -> PyResult<Option<(vm_ir::BaseId, usize)>> {
    let offset = match key.cast::<PyTuple>() {
        Ok(t) if t.len() == v.ndim() => (0..v.ndim()).try_fold(v.start, |offset, axis| {
            let i = t.get_borrowed_item(axis).ok()?;
            Some(offset + offset_along(&i, v, axis)?)
        }),
        Ok(_) => None,
        Err(_) if v.ndim() == 1 => offset_along(key, v, 0).map(|d| v.start + d),
        Err(_) => None,
    };
    Ok(offset.map(|offset| (v.base.id, offset as usize)))
}

/// The offset along `axis` of `v` that the Python int `i` indexes (a negative one counts from
/// the end); `None` for anything but an int in range.
#[inline]
fn offset_along(i: &Bound<'_, PyAny>, v: &View, axis: usize) -> Option<i64> {
    if !i.is_exact_instance_of::<PyInt>() {
        return None;
    }
    let mut overflow = 0;
    // SAFETY: `i` is a live int: the call sets no error (a value past a C long sets `overflow`).
    let i: i64 = unsafe { pyo3::ffi::PyLong_AsLongAndOverflow(i.as_ptr(), &mut overflow) };
    let n = v.shape[axis] as i64;
    if overflow != 0 || i < -n || i >= n {
        return None;
    }
    Some(if i < 0 { i + n } else { i } * v.stride[axis])
}

/// The most elements `a[index]` gathers in host memory ([`gather_in_range`]).
const HOST_GATHER_ELEMENTS: usize = 1 << 15;

/// `a[index]` (or `a[(index,)]`) of a vector `a` by a contiguous integer vector `index` whose
/// values are in host memory and in `0..len(a)` (a loop gathering `x[cols]` for slices `cols`
/// of an input): made in host memory when that holds `a` too and the result is small, else the
/// gather recorded at once, without the Python layer's range check; `None` for anything else.
fn gather_in_range(py: Python<'_>, a: &Bound<'_, NdArray>, key: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
    // `a[(index,)]` (np.take's) is `a[index]`.
    let key = match key.cast::<PyTuple>() {
        Ok(t) if t.len() == 1 => t.get_item(0)?,
        _ => key.clone(),
    };
    let Ok(index) = key.cast::<NdArray>() else { return Ok(None) };
    let (av, iv) = (a.get().view().clone(), index.get().view().clone());
    if av.ndim() != 1 || iv.ndim() != 1 || !iv.dtype().is_integer() || !iv.is_contiguous() {
        return Ok(None);
    }
    if iv.nelem() <= HOST_GATHER_ELEMENTS
        && let Some(bytes) = crate::session::gather_in_host(&av, &iv)?
    {
        let (v, h) = ops::new_array(&iv.shape, av.dtype())?;
        ops::write_new(py, v.base.id, &bytes)?;
        return Ok(Some(ops::wrap(py, v, h)?.into_any()));
    }
    let n = av.shape[0] as i64;
    let run = iv.start as usize..iv.start as usize + iv.nelem();
    match crate::session::in_host_within(iv.base.id, run, 0..n)? {
        true => Ok(Some(ops::_gather(py, a, index)?.into_any())),
        false => Ok(None),
    }
}

/// Stores `value` into element `index` of base `id` (of dtype `dt`) in host memory when that is
/// at hand and `value` is a number that converts without a question (a Python float into
/// floats, a Python int into an integer dtype that holds it or into floats, a Python bool into
/// bools, a NumPy scalar of the dtype): the common `a[i, j] = x` of a loop, without the general
/// assignment's checks. False when the general path must do it.
fn store_element(
    py: Python<'_>,
    (id, index, dt): (vm_ir::BaseId, usize, DType),
    value: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let c = if value.is_exact_instance_of::<PyFloat>() && dt.is_float() {
        Scalar::F64(value.extract()?).cast(dt)
    } else if value.is_exact_instance_of::<PyInt>() && (dt.is_integer() || dt.is_float()) {
        // (An int the dtype cannot hold takes the general path, to NumPy's OverflowError.)
        match value.extract::<i64>().ok().and_then(|i| Weak::Int(i).to_scalar(dt)) {
            Some(c) => c,
            None => return Ok(false),
        }
    } else if value.is_exact_instance_of::<PyBool>() && dt == DType::Bool {
        Scalar::Bool(value.extract()?)
    } else {
        match numpy_scalar(value)? {
            Some(c) if c.dtype() == dt => c,
            _ => return Ok(false),
        }
    };
    let bytes = c.to_ne_bytes();
    crate::session::host_store(py, id, index, &bytes[..dt.size()])
}

/// A 0-d result as NumPy's scalar, which is what NumPy returns (`x.sum()`, `u @ v`), when its
/// value is computed already (small instructions run at once on a stack computing in host
/// memory); else the array itself, which stands for the scalar until the value is needed.
pub fn scalar_if_computed(py: Python<'_>, a: Py<NdArray>) -> PyResult<Py<PyAny>> {
    let v = a.get().view().clone();
    if v.ndim() != 0 {
        return Ok(a.into_any());
    }
    match crate::session::computed_element(v.base.id, v.start as usize)? {
        Some(x) => numpy_scalar_of(py, x),
        None => Ok(a.into_any()),
    }
}

/// `x` as NumPy's scalar of its dtype.
pub fn numpy_scalar_of(py: Python<'_>, x: Scalar) -> PyResult<Py<PyAny>> {
    crate::scalars::numpy_scalar_of(py, x)
}

/// [`numpy_scalar_of`] by calling the scalar type on a Python number (where NumPy's C API
/// cannot be used).
pub fn numpy_scalar_by_call(py: Python<'_>, x: Scalar) -> PyResult<Py<PyAny>> {
    let types = numpy_scalar_types(py)?;
    let ty = types.iter().find(|(_, d)| *d == x.dtype()).expect("every dtype has its NumPy scalar type");
    Ok(ty.0.bind(py).call1((python_number(py, x)?,))?.unbind())
}

/// `x` as a Python number (bool, int or float).
fn python_number(py: Python<'_>, x: Scalar) -> PyResult<Bound<'_, PyAny>> {
    Ok(match x {
        Scalar::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Scalar::F32(_) | Scalar::F64(_) => x.as_f64().into_pyobject(py)?.into_any(),
        Scalar::U64(u) => u.into_pyobject(py)?.into_any(),
        _ => x.as_i64().into_pyobject(py)?.into_any(),
    })
}

/// The one element of `a` as a Python number, computing what it depends on now; `None` when `a`
/// does not have exactly one element (the Python layer raises NumPy's error).
fn only_element<'py>(py: Python<'py>, a: &NdArray) -> PyResult<Option<Bound<'py, PyAny>>> {
    let v = &a.view();
    if v.nelem() != 1 {
        return Ok(None);
    }
    crate::session::host_element(py, v.base.id, v.start as usize, true)?.map(|x| python_number(py, x)).transpose()
}

/// A NumPy scalar as a typed constant; `None` when `obj` is not one of a dtype the VM has.
fn numpy_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    let py = obj.py();
    let types = numpy_scalar_types(py)?;
    let ty = obj.get_type();
    let Some(&(_, dt)) = types.iter().rev().find(|(t, _)| ty.is(t.bind(py))) else { return Ok(None) };
    Ok(Some(Scalar::from_ne_bytes(dt, &crate::scalars::numpy_scalar_bytes(obj, dt))))
}

/// `key` as a vmnp bool array of `a`'s shape (at least 1-d): a mask of every axis.
fn full_mask<'py>(a: &Bound<'py, NdArray>, key: &Bound<'py, PyAny>) -> Option<Bound<'py, NdArray>> {
    let mask = key.cast_exact::<NdArray>().ok()?;
    let (m, v) = (mask.get().view(), a.get().view());
    (m.dtype() == DType::Bool && m.ndim() > 0 && same_shape(&m.shape, &v.shape)).then(|| mask.clone())
}

/// Converts a Python operand; `None` for types vmnp does not take. The second element keeps a
/// converted array alive until the caller has recorded its use.
pub fn arg<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<(Arg, Option<Bound<'py, PyAny>>)>> {
    if let Ok(a) = obj.cast::<NdArray>() {
        return Ok(Some((Arg::Arr(a.get().view().clone()), None)));
    }
    if obj.is_exact_instance_of::<PyFloat>() {
        return Ok(Some((Arg::Weak(Weak::Float(obj.extract()?)), None)));
    }
    if obj.is_exact_instance_of::<PyBool>() {
        return Ok(Some((Arg::Weak(Weak::Bool(obj.extract()?)), None)));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        return match (obj.extract::<i64>(), obj.extract::<u64>()) {
            (Ok(i), _) => Ok(Some((Arg::Weak(Weak::Int(i)), None))),
            // Past int64: weak still, held by uint64 and float operands, refused by the others.
            (_, Ok(u)) => Ok(Some((Arg::Weak(Weak::BigUint(u)), None))),
            // Past uint64: NumPy holds it as a float next to float arrays, and refuses it next
            // to integer ones (`to_scalar`).
            _ => Ok(Some((Arg::Weak(Weak::HugeInt(obj.extract()?)), None))),
        };
    }
    if let Some(s) = numpy_scalar(obj)? {
        return Ok(Some((Arg::Strong(s), None)));
    }
    let conv = hook(obj.py(), "convert")?.call1((obj,))?;
    if conv.is_none() {
        return Ok(None);
    }
    let a = conv.cast::<NdArray>()?;
    let view = a.get().view().clone();
    Ok(Some((Arg::Arr(view), Some(conv))))
}

/// A shape as NumPy's errors write it: `(3,)`, `(2,3)`, `()`.
pub fn shape_text(shape: &[usize]) -> String {
    tuple_text(shape).replace(", ", ",")
}

/// Python's text of a shape tuple: `(3,)`, `(2, 3)`, `()` (NumPy's C-level messages write
/// shapes without the spaces: [`shape_text`]).
pub fn tuple_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        s => format!("({})", s.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// The shape the array operands broadcast to (NumPy's rules), or NumPy's `ValueError`.
pub fn broadcast_shapes(args: &[Arg]) -> PyResult<Shape> {
    let mut out = Shape::new();
    let mut first = true;
    for a in args {
        let Arg::Arr(v) = a else { continue };
        if first {
            out = Shape::from_slice(&v.shape);
            first = false;
            continue;
        }
        if same_shape(&v.shape, &out) {
            continue;
        }
        let n = out.len().max(v.ndim());
        let mut s = Shape::from_elem(1, n);
        for i in 0..n {
            let x = if i + out.len() >= n { out[i + out.len() - n] } else { 1 };
            let y = if i + v.ndim() >= n { v.shape[i + v.ndim() - n] } else { 1 };
            s[i] = match (x, y) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => {
                    // NumPy lists every operand, a scalar as `()`.
                    let shapes: Vec<String> = args
                        .iter()
                        .map(|a| if let Arg::Arr(v) = a { shape_text(&v.shape) } else { "()".into() })
                        .collect();
                    return Err(value_err(format!(
                        "operands could not be broadcast together with shapes {} ",
                        shapes.join(" ")
                    )));
                }
            };
        }
        out = s;
    }
    Ok(out)
}

/// `v` stretched to `shape` (which it broadcasts to) with stride-0 axes.
pub fn broadcast_view(v: &View, shape: &[usize]) -> View {
    if same_shape(&v.shape, shape) {
        return v.clone();
    }
    let lead = shape.len() - v.ndim();
    let stride = (0..shape.len())
        .map(|i| if i < lead || (v.shape[i - lead] == 1 && shape[i] != 1) { 0 } else { v.stride[i - lead] })
        .collect();
    View { base: v.base, start: v.start, shape: Shape::from_slice(shape), stride }
}

/// What one entry of an index tuple is.
enum Key<'py> {
    Int(isize),
    Slice(Bound<'py, PySlice>),
    NewAxis,
    Ellipsis,
}

fn is_basic_int(item: &Bound<'_, PyAny>) -> Option<isize> {
    if item.is_instance_of::<PyBool>() {
        return None;
    }
    if item.is_exact_instance_of::<PyInt>() {
        return item.extract().ok();
    }
    if item.is_instance_of::<NdArray>() || item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>() {
        return None;
    }
    // NumPy integer scalars: they have `__index__` and no dimensions.
    if item.hasattr("__index__").unwrap_or(false)
        && item.getattr("ndim").and_then(|n| n.extract::<usize>()).unwrap_or(0) == 0
    {
        return item.call_method0("__index__").and_then(|i| i.extract()).ok();
    }
    None
}

impl NdArray {
    /// The view `key` selects when it is basic (ints, slices, `...`, `None`), and whether it
    /// selects one element by an integer per dimension; `Ok(None)` when it needs advanced
    /// indexing.
    fn basic(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<(View, bool)>> {
        let py = key.py();
        // (Inline room for the common keys: no allocation per subscript.)
        let items: smallvec::SmallVec<[Bound<'_, PyAny>; 4]> = match key.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => smallvec::smallvec![key.clone()],
        };
        let mut keys: smallvec::SmallVec<[Key; 4]> = smallvec::SmallVec::with_capacity(items.len());
        let mut consumed = 0;
        let mut ellipses = 0;
        for item in &items {
            keys.push(if item.is_none() {
                Key::NewAxis
            } else if item.is(PyEllipsis::get(py)) {
                ellipses += 1;
                Key::Ellipsis
            } else if let Ok(s) = item.cast::<PySlice>() {
                consumed += 1;
                Key::Slice(s.clone())
            } else if let Some(i) = is_basic_int(item) {
                consumed += 1;
                Key::Int(i)
            } else {
                return Ok(None);
            });
        }
        if ellipses > 1 {
            return Err(index_err("an index can only have a single ellipsis ('...')"));
        }
        let v = &self.view();
        if consumed > 0 && v.ndim() == 0 {
            // A 0-d array stands for NumPy's scalar (`x.sum()[0]`): its error.
            return Err(index_err("invalid index to scalar variable."));
        }
        if consumed > v.ndim() {
            return Err(index_err(format!(
                "too many indices for array: array is {}-dimensional, but {consumed} were indexed",
                v.ndim()
            )));
        }
        let (mut start, mut shape, mut stride) = (v.start, Shape::new(), vm_ir::view::Strides::new());
        let mut d = 0;
        let mut apply = |k: &Key, d: &mut usize| -> PyResult<()> {
            match k {
                Key::NewAxis => {
                    shape.push(1);
                    stride.push(0);
                }
                Key::Ellipsis => {
                    for _ in 0..v.ndim() - consumed {
                        shape.push(v.shape[*d]);
                        stride.push(v.stride[*d]);
                        *d += 1;
                    }
                }
                Key::Int(i) => {
                    let n = v.shape[*d] as isize;
                    if *i < -n || *i >= n {
                        return Err(index_err(format!("index {i} is out of bounds for axis {d} with size {n}")));
                    }
                    start += i.rem_euclid(n) as i64 * v.stride[*d];
                    *d += 1;
                }
                Key::Slice(s) => {
                    let ind = s.indices(v.shape[*d] as isize)?;
                    if ind.slicelength > 0 {
                        start += ind.start as i64 * v.stride[*d];
                    }
                    shape.push(ind.slicelength);
                    stride.push(v.stride[*d] * ind.step as i64);
                    *d += 1;
                }
            }
            Ok(())
        };
        for k in &keys {
            apply(k, &mut d)?;
        }
        while d < v.ndim() {
            shape.push(v.shape[d]);
            stride.push(v.stride[d]);
            d += 1;
        }
        // Integers for every dimension select an element: NumPy's result is a scalar, a copy.
        let element = consumed == v.ndim() && keys.iter().all(|k| matches!(k, Key::Int(_)));
        Ok(Some((View { base: v.base, start, shape, stride }, element)))
    }

    /// Another view of the same base, as writeable as this array.
    pub fn with_view(&self, py: Python<'_>, view: View) -> PyResult<Py<NdArray>> {
        let writeable = AtomicBool::new(self.writeable.load(Ordering::Relaxed));
        Py::new(py, NdArray { view: RwLock::new(view), handle: RwLock::new(self.handle()), writeable })
    }
}

static DTYPES: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();

fn np_dtype(py: Python<'_>, d: vm_ir::DType) -> PyResult<Py<PyAny>> {
    let all = DTYPES.get_or_try_init(py, || -> PyResult<Vec<Py<PyAny>>> {
        let np = py.import("numpy")?;
        vm_ir::DType::ALL.iter().map(|&d| Ok(np.getattr("dtype")?.call1((np_name(d),))?.unbind())).collect()
    })?;
    Ok(all[d as usize].clone_ref(py))
}

/// `a op= b`: writes into `a`'s view (NumPy's `same_kind` casting rule applies).
fn inplace(slf: &Bound<'_, NdArray>, op: Opcode, other: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = slf.py();
    if slf.get().view().ndim() == 0
        && let Some(r) = ops::binary(py, op, slf.as_any(), other, None)?
        && let Ok(r) = r.bind(py).cast::<NdArray>()
    {
        // A 0-d array stands for a NumPy scalar, which an in-place operator rebinds to the
        // result, whatever its dtype (`t = x.sum(); t /= 2` of integers is a float) and without
        // writing where the scalar was read from (`x = a[3]; x += 1` leaves `a` alone, and
        // `a[3] += 1` stores the result back through `__setitem__`).
        slf.get().become_result(r.get());
        return Ok(());
    }
    match ops::binary(py, op, slf.as_any(), other, Some(slf))? {
        Some(_) => Ok(()),
        // An operand the VM cannot hold: NumPy's ufunc decides (its error, mostly).
        None => hook(py, "inplace_fallback")?.call1((op.name(), slf, other)).map(drop),
    }
}

/// True when `a * seq` (or `seq * a`) is Python's repetition of a sequence: a 0-d array stands
/// for a NumPy scalar, which leaves `[0] * n` to the sequence (`[0, 0, 0]`, not `array([0])`).
fn repeats_sequence(a: &Bound<'_, NdArray>, seq: &Bound<'_, PyAny>) -> bool {
    a.get().view().ndim() == 0
        && (seq.is_instance_of::<PyList>()
            || seq.is_instance_of::<PyTuple>()
            || seq.is_instance_of::<PyString>()
            || seq.is_instance_of::<PyBytes>()
            || seq.is_instance_of::<PyByteArray>())
}

/// `a op b`; an operand the VM cannot hold (`x * 1j`, an array of strings) goes to the Python
/// layer, which runs NumPy's ufunc through the fallback or answers `NotImplemented`.
fn binop(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, op: Opcode) -> PyResult<Py<PyAny>> {
    let py = a.py();
    match ops::binary(py, op, a, b, None)? {
        Some(r) => Ok(r),
        None => Ok(hook(py, "operator_fallback")?.call1((op.name(), a, b))?.unbind()),
    }
}

// The operators are spelled out (not generated by a macro): PyO3's slot methods must be written
// in this crate's edition for their generated wrappers to compile.
#[pymethods]
impl NdArray {
    fn __add__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::Add)
    }

    fn __radd__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::Add)
    }

    fn __iadd__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::Add, other)
    }

    fn __sub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::Subtract)
    }

    fn __rsub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::Subtract)
    }

    fn __isub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::Subtract, other)
    }

    fn __mul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if repeats_sequence(slf, other) {
            return Ok(slf.py().NotImplemented());
        }
        binop(slf.as_any(), other, Opcode::Multiply)
    }

    fn __rmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if repeats_sequence(slf, other) {
            return Ok(slf.py().NotImplemented());
        }
        binop(other, slf.as_any(), Opcode::Multiply)
    }

    fn __imul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::Multiply, other)
    }

    fn __truediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::Divide)
    }

    fn __rtruediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::Divide)
    }

    fn __itruediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::Divide, other)
    }

    fn __floordiv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::FloorDivide)
    }

    fn __rfloordiv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::FloorDivide)
    }

    fn __ifloordiv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::FloorDivide, other)
    }

    fn __mod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::Remainder)
    }

    fn __rmod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::Remainder)
    }

    fn __imod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::Remainder, other)
    }

    fn __and__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::BitwiseAnd)
    }

    fn __rand__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::BitwiseAnd)
    }

    fn __iand__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::BitwiseAnd, other)
    }

    fn __or__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::BitwiseOr)
    }

    fn __ror__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::BitwiseOr)
    }

    fn __ior__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::BitwiseOr, other)
    }

    fn __xor__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::BitwiseXor)
    }

    fn __rxor__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::BitwiseXor)
    }

    fn __ixor__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::BitwiseXor, other)
    }

    fn __lshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::LeftShift)
    }

    fn __rlshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::LeftShift)
    }

    fn __ilshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::LeftShift, other)
    }

    fn __rshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(slf.as_any(), other, Opcode::RightShift)
    }

    fn __rrshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(other, slf.as_any(), Opcode::RightShift)
    }

    fn __irshift__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::RightShift, other)
    }
}

fn forward(
    slf: &Bound<'_, NdArray>,
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let mut all: Vec<Bound<'_, PyAny>> = Vec::with_capacity(args.len() + 1);
    all.push(slf.clone().into_any());
    all.extend(args.iter());
    Ok(hook(py, name)?.call(PyTuple::new(py, all)?, kwargs)?.unbind())
}

/// Methods taking any arguments, each `handler(slf, name, args, kwargs)`; `what` ends their
/// doc comment.
macro_rules! methods_calling {
    ($handler:ident, $what:literal: $($name:ident),* $(,)?) => {
        #[pymethods]
        impl NdArray {
            $(
                #[doc = concat!("NumPy's `ndarray.", stringify!($name), "` ", $what, ".")]
                #[pyo3(signature = (*args, **kwargs))]
                fn $name(slf: &Bound<'_, Self>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
                    $handler(slf, stringify!($name), args, kwargs)
                }
            )*
        }
    };
}

#[pymethods]
impl NdArray {
    /// NumPy's `ndarray.item`: one element as a Python number, read where it lies (synced if
    /// the queue computes it) rather than through a copy of the array. No argument takes the
    /// only element; one int, the element at that row-major position; one int per axis (or a
    /// tuple of them), that element. Other arguments go to the Python layer (NumPy's errors).
    #[pyo3(signature = (*args))]
    fn item(slf: &Bound<'_, Self>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let v = slf.get().view().clone();
        let flat = |k: &Bound<'_, PyAny>| -> Option<i64> {
            let n = v.nelem() as i64;
            let k = k.is_exact_instance_of::<PyInt>().then(|| k.extract::<i64>().ok()).flatten()?;
            (-n..n).contains(&k).then(|| v.offset_at(k.rem_euclid(n.max(1)) as usize))
        };
        let offset = match args.len() {
            0 => (v.nelem() == 1).then_some(v.start),
            1 => match args.get_item(0)?.cast::<PyTuple>() {
                Ok(t) => element_at(&v, t.as_any())?.map(|(_, at)| at as i64),
                Err(_) => flat(&args.get_item(0)?),
            },
            _ => element_at(&v, args.as_any())?.map(|(_, at)| at as i64),
        };
        if let Some(at) = offset
            && let Some(x) = crate::session::host_element(py, v.base.id, at as usize, true)?
        {
            return Ok(python_number(py, x)?.unbind());
        }
        forward(slf, "item", args, None)
    }
}

// The reduction methods, recorded natively when called with at most an axis.
methods_calling!(reduction_method, "(natively with at most an axis)": sum, prod, min, max, any, all);

methods_calling!(forward, "(see the Python layer)":
    mean,
    std,
    var,
    argmin,
    argmax,
    cumsum,
    cumprod,
    swapaxes,
    fill,
    tolist,
    clip,
    nonzero,
    round,
    squeeze,
    diagonal,
    __array__,
    __array_function__,
    __array_namespace__,
    __format__,
    __deepcopy__,
    __reduce__,
    __copy__,
    to_device,
    conj,
    conjugate,
    __round__,
    __trunc__,
    __floor__,
    __ceil__,
    __reversed__,
    __setstate__,
);

/// True when `kwargs` holds nothing.
fn no_keywords(kwargs: Option<&Bound<'_, PyDict>>) -> bool {
    kwargs.is_none_or(|k| k.is_empty())
}

/// The shape a `reshape` call asks for (`reshape(2, -1)`, `reshape((2, -1))`), resolved for
/// `nelem` elements; `None` for anything else (keywords, other types, a shape that does not
/// fit), which the Python layer answers or refuses with NumPy's error.
fn reshape_target(args: &Bound<'_, PyTuple>, nelem: usize) -> Option<Vec<usize>> {
    let ints = |items: Vec<Bound<'_, PyAny>>| -> Option<Vec<i64>> {
        items.iter().map(|x| x.is_exact_instance_of::<PyInt>().then(|| x.extract::<i64>().ok()).flatten()).collect()
    };
    let dims = match args.len() {
        1 => {
            let only = args.get_item(0).ok()?;
            if only.is_exact_instance_of::<PyTuple>() || only.is_exact_instance_of::<PyList>() {
                ints(only.try_iter().ok()?.collect::<PyResult<Vec<_>>>().ok()?)?
            } else {
                ints(vec![only])?
            }
        }
        _ => ints(args.iter().collect())?,
    };
    if dims.len() > vm_ir::view::MAX_NDIM
        || dims.iter().filter(|&&d| d == -1).count() > 1
        || dims.iter().any(|&d| d < -1)
    {
        return None;
    }
    let known: usize = dims.iter().filter(|&&d| d >= 0).try_fold(1usize, |p, &d| p.checked_mul(d as usize))?;
    let shape: Vec<usize> =
        dims.iter()
            .map(|&d| {
                if d >= 0 {
                    Some(d as usize)
                } else {
                    (known > 0 && nelem.is_multiple_of(known)).then(|| nelem / known)
                }
            })
            .collect::<Option<_>>()?;
    (shape.iter().product::<usize>() == nelem).then_some(shape)
}

#[pymethods]
impl NdArray {
    /// NumPy's `ndarray.copy`: a row-major copy recorded here; another order goes to the Python
    /// layer.
    #[pyo3(signature = (*args, **kwargs))]
    fn copy(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if args.is_empty() && no_keywords(kwargs) {
            return Ok(ops::unary(slf.py(), Opcode::Identity, slf.as_any(), None)?.expect("an array operand"));
        }
        forward(slf, "copy", args, kwargs)
    }

    /// NumPy's `ndarray.reshape`: a view of a row-major array made here (shape given as integers
    /// or one tuple or list of them, `-1` for one extent); anything else in the Python layer.
    #[pyo3(signature = (*args, **kwargs))]
    fn reshape(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let v = slf.get().view();
        if no_keywords(kwargs)
            && v.is_contiguous()
            && let Some(shape) = reshape_target(args, v.nelem())
        {
            let view = View {
                base: v.base,
                start: v.start,
                stride: row_major_strides(&shape),
                shape: shape.as_slice().into(),
            };
            drop(v);
            return Ok(slf.get().with_view(slf.py(), view)?.into_any());
        }
        drop(v);
        forward(slf, "reshape", args, kwargs)
    }
}

/// Methods that programs call in loops, recorded here for their common arguments (the
/// Python layer takes any other).
#[pymethods]
impl NdArray {
    /// NumPy's `ndarray.ravel` (order 'C'): a view of a row-major array, else a row-major copy.
    #[pyo3(signature = (*args, **kwargs))]
    fn ravel(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if !args.is_empty() || !no_keywords(kwargs) {
            return forward(slf, "ravel", args, kwargs);
        }
        let v = slf.get().view().clone();
        if v.is_contiguous() {
            return Ok(slf.get().with_view(slf.py(), flat(&v))?.into_any());
        }
        let (copy, h) = ops::cast_view(slf.py(), &v, v.dtype())?;
        Ok(ops::wrap(slf.py(), flat(&copy), h)?.into_any())
    }

    /// NumPy's `ndarray.flatten` (order 'C'): a row-major copy, one-dimensional.
    #[pyo3(signature = (*args, **kwargs))]
    fn flatten(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if !args.is_empty() || !no_keywords(kwargs) {
            return forward(slf, "flatten", args, kwargs);
        }
        let v = slf.get().view().clone();
        let (copy, h) = ops::cast_view(slf.py(), &v, v.dtype())?;
        Ok(ops::wrap(slf.py(), flat(&copy), h)?.into_any())
    }

    /// NumPy's `ndarray.transpose`: with no axes, the view with its axes reversed.
    #[pyo3(signature = (*args, **kwargs))]
    fn transpose(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if !args.is_empty() || !no_keywords(kwargs) {
            return forward(slf, "transpose", args, kwargs);
        }
        let v = slf.get().view().clone();
        let view = View {
            base: v.base,
            start: v.start,
            shape: v.shape.iter().rev().copied().collect(),
            stride: v.stride.iter().rev().copied().collect(),
        };
        Ok(slf.get().with_view(slf.py(), view)?.into_any())
    }

    /// NumPy's `ndarray.astype(dtype)` of a row-major array (order 'K' keeps that layout) into
    /// a plain dtype the VM has.
    #[pyo3(signature = (*args, **kwargs))]
    fn astype(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let v = slf.get().view().clone();
        if args.len() == 1
            && no_keywords(kwargs)
            && (v.ndim() <= 1 || v.is_contiguous())
            && let Some(dtype) = ops::plain_dtype(Some(&args.get_item(0)?))?
        {
            let (copy, h) = ops::cast_view(slf.py(), &v, dtype)?;
            return Ok(ops::wrap(slf.py(), copy, h)?.into_any());
        }
        forward(slf, "astype", args, kwargs)
    }

    /// NumPy's `ndarray.dot(b)`: the product of two vmnp arrays recorded here.
    #[pyo3(signature = (*args, **kwargs))]
    fn dot(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if args.len() == 1
            && no_keywords(kwargs)
            && let Ok(b) = args.get_item(0)?.cast::<NdArray>()
            && let Some(r) = crate::extension::matmul_arrays(slf.py(), slf, b)?
        {
            return Ok(r);
        }
        forward(slf, "dot", args, kwargs)
    }
}

/// The one-dimensional view of the row-major (contiguous) view `v`.
fn flat(v: &View) -> View {
    View { base: v.base, start: v.start, shape: [v.nelem()][..].into(), stride: [1][..].into() }
}

fn call1(slf: &Bound<'_, NdArray>, name: &str, args: impl IntoIterator<Item = Py<PyAny>>) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let mut all: Vec<Py<PyAny>> = vec![slf.clone().into_any().unbind()];
    all.extend(args);
    Ok(hook(py, name)?.call1(PyTuple::new(py, all)?)?.unbind())
}

/// The reduction method `name` (`a.sum()`, `a.max(axis)`, ...): with nothing but an axis (an
/// integer or `None`, by position or keyword) recorded here, without the Python layer (a loop
/// reading `x.max()` each step spends its time in that layer otherwise); any other arguments
/// go to the Python method.
fn reduction_method(
    slf: &Bound<'_, NdArray>,
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    match native_reduction(slf, name, args, kwargs)? {
        Some(r) => Ok(r),
        None => forward(slf, name, args, kwargs),
    }
}

/// Reduction `name` of `a` when `args` and `kwargs` (after the array) give at most an axis: an
/// integer, a tuple of them or `None` ([`ops::reduce_value`]); `None` for anything else.
fn native_reduction(
    a: &Bound<'_, NdArray>,
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Py<PyAny>>> {
    let keyword_axis = match kwargs {
        Some(k) if !k.is_empty() => match k.get_item(pyo3::intern!(a.py(), "axis"))? {
            Some(axis) if k.len() == 1 && args.is_empty() => Some(axis),
            _ => return Ok(None),
        },
        _ => None,
    };
    let axis = match (args.len(), keyword_axis) {
        (0, axis) => axis,
        (1, None) => Some(args.get_item(0)?),
        _ => return Ok(None),
    };
    // An axis is None, an int or a tuple of ints (`axis=(1, 2)`); other objects (lists, NumPy
    // integers) take the Python layer's way, to its errors.
    let int_or_ints = |x: &Bound<'_, PyAny>| match x.cast::<PyTuple>() {
        Ok(t) => t.iter().all(|i| i.is_exact_instance_of::<PyInt>()),
        Err(_) => x.is_instance_of::<PyInt>(),
    };
    match axis {
        Some(x) if !x.is_none() && !int_or_ints(&x) => Ok(None),
        axis => {
            let axis = axis.filter(|x| !x.is_none());
            ops::reduce_value(a.py(), name, a, axis.as_ref()).map(Some)
        }
    }
}

/// `swapaxes(a, i, j)` for two Python ints that name axes of `a`: the view with those axes
/// swapped; `None` for other axes (the Python layer's errors).
fn swapped_axes(a: &Bound<'_, NdArray>, i: &Bound<'_, PyAny>, j: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
    let mut v = a.get().view().clone();
    let nd = v.ndim() as i64;
    let axis = |x: &Bound<'_, PyAny>| -> Option<usize> {
        let x = x.is_exact_instance_of::<PyInt>().then(|| x.extract::<i64>().ok()).flatten()?;
        (-nd..nd).contains(&x).then(|| x.rem_euclid(nd.max(1)) as usize)
    };
    let (Some(i), Some(j)) = (axis(i), axis(j)) else { return Ok(None) };
    v.shape.swap(i, j);
    v.stride.swap(i, j);
    Ok(Some(a.get().with_view(a.py(), v)?.into_any()))
}

/// `ravel(a)`, `transpose(a)`, `squeeze(a)`, `flip(a)` and `copy(a)` (order 'K': a row-major
/// array's copy is row-major) of a vmnp array, views as its methods make them; `None` for a
/// copy in another layout.
fn native_layout_function(a: &Bound<'_, NdArray>, name: &str) -> PyResult<Option<Py<PyAny>>> {
    let none = PyTuple::empty(a.py());
    Ok(Some(match name {
        "ravel" => NdArray::ravel(a, &none, None)?,
        "transpose" => NdArray::transpose(a, &none, None)?,
        "squeeze" => {
            // The axes of extent 1 dropped: a view.
            let v = a.get().view().clone();
            let keep = |(&n, &st): (&usize, &i64)| (n != 1).then_some((n, st));
            let (shape, stride): (Vec<usize>, Vec<i64>) = v.shape.iter().zip(&v.stride).filter_map(keep).unzip();
            let view = View { base: v.base, start: v.start, shape: shape[..].into(), stride: stride[..].into() };
            a.get().with_view(a.py(), view)?.into_any()
        }
        // (A 0-d array's `flip` is NumPy's scalar: the Python layer's.)
        "flip" if a.get().view().ndim() == 0 => return Ok(None),
        "flip" => {
            // Every axis reversed: the view starts at the last element of each.
            let mut v = a.get().view().clone();
            for (&n, s) in v.shape.iter().zip(v.stride.iter_mut()) {
                if n > 0 {
                    v.start += (n as i64 - 1) * *s;
                }
                *s = -*s;
            }
            a.get().with_view(a.py(), v)?.into_any()
        }
        _ => {
            let plain = {
                let v = a.get().view();
                v.ndim() <= 1 || v.is_contiguous()
            };
            if !plain {
                return Ok(None);
            }
            NdArray::copy(a, &none, None)?
        }
    }))
}

/// A NumPy function as programs call it, recorded natively for the common arguments and
/// otherwise by the Python function `slow` (vmnp's, with its fallback to NumPy): `dot` and
/// `matmul` of two vmnp arrays ([`crate::extension::matmul_arrays`]), the reductions `sum
/// prod min max any all` of one vmnp array with at most an axis ([`native_reduction`]), and
/// `empty zeros ones` and their `_like` forms with plain arguments ([`ops::native_creation`]),
/// `arange(n)` ([`ops::native_arange`]), `full(shape, number)`, `concatenate stack (arrays,
/// axis)`,
/// `swapaxes(a, i, j)` ([`swapped_axes`]),
/// `array asarray` of vmnp arrays and of lists of numbers ([`ops::native_from_numbers`]),
/// `reshape(a, shape)`, and `ravel transpose squeeze flip copy` of one array
/// ([`native_layout_function`]).
#[pyclass(frozen, module = "vmnp", name = "_NativeFirst")]
pub struct NativeFirst {
    /// `product` for `dot`/`matmul`, a creation function's name, else the reduction's name for
    /// [`ops::reduce_value`].
    native: String,
    slow: Py<PyAny>,
}

#[pymethods]
impl NativeFirst {
    #[new]
    fn py_new(native: String, slow: Py<PyAny>) -> NativeFirst {
        NativeFirst { native, slow }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let native = match (self.native.as_str(), args.get_item(0)) {
            ("product", Ok(a)) if args.len() == 2 && kwargs.is_none_or(|k| k.is_empty()) => {
                crate::extension::_dot(py, &a, &args.get_item(1)?)?
            }
            ("product", _) => None,
            ("empty" | "zeros" | "ones" | "empty_like" | "zeros_like" | "ones_like", _) => {
                ops::native_creation(py, &self.native, args, kwargs)?
            }
            ("arange", _) => ops::native_arange(py, args, kwargs)?,
            ("full", _) => ops::native_full(py, args, kwargs)?,
            ("swapaxes", Ok(a)) if args.len() == 3 && no_keywords(kwargs) => match a.cast::<NdArray>() {
                Ok(a) => swapped_axes(a, &args.get_item(1)?, &args.get_item(2)?)?,
                Err(_) => None,
            },
            ("concatenate", _) => ops::native_concatenate(py, args, kwargs, false)?,
            ("stack", _) => ops::native_concatenate(py, args, kwargs, true)?,
            ("array" | "asarray", Ok(x)) if args.len() == 1 && no_keywords(kwargs) => match x.cast::<NdArray>() {
                // (`asarray` of a vmnp array is the array; `array` copies it.)
                Ok(a) if self.native == "asarray" => Some(a.clone().into_any().unbind()),
                Ok(a) => native_layout_function(a, "copy")?,
                Err(_) => ops::native_from_numbers(py, &x)?,
            },
            // `reshape(a, shape)`: the method's (a view of a row-major array, made natively).
            ("reshape", Ok(a)) if args.len() == 2 && no_keywords(kwargs) => match a.cast::<NdArray>() {
                Ok(a) => Some(NdArray::reshape(a, &args.get_slice(1, 2), None)?),
                Err(_) => None,
            },
            ("ravel" | "transpose" | "squeeze" | "flip" | "copy", Ok(a)) if args.len() == 1 && no_keywords(kwargs) => {
                match a.cast::<NdArray>() {
                    Ok(a) => native_layout_function(a, &self.native)?,
                    Err(_) => None,
                }
            }
            (name @ ("sum" | "prod" | "min" | "max" | "any" | "all"), Ok(a)) => match a.cast::<NdArray>() {
                Ok(a) => native_reduction(a, name, &args.get_slice(1, args.len()), kwargs)?,
                Err(_) => None,
            },
            _ => None,
        };
        match native {
            Some(r) => Ok(r),
            None => Ok(self.slow.bind(py).call(args, kwargs)?.unbind()),
        }
    }

    /// The Python function's attributes (`__name__`, `__doc__`, ...).
    fn __getattr__(&self, py: Python<'_>, name: &Bound<'_, PyString>) -> PyResult<Py<PyAny>> {
        Ok(self.slow.bind(py).getattr(name)?.unbind())
    }
}

#[pymethods]
impl NdArray {
    fn __matmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Ok(b) = other.cast::<NdArray>()
            && let Some(r) = crate::extension::matmul_arrays(slf.py(), slf, b)?
        {
            return Ok(r);
        }
        call1(slf, "__matmul__", [other.clone().unbind()])
    }

    fn __rmatmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        call1(slf, "__rmatmul__", [other.clone().unbind()])
    }

    fn __divmod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        call1(slf, "__divmod__", [other.clone().unbind()])
    }

    fn __rdivmod__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        call1(slf, "__rdivmod__", [other.clone().unbind()])
    }
}

/// The name Python's error gives an operand's type: NumPy's for a vmnp array (`numpy.ndarray`,
/// or the scalar type a 0-d one stands for), else the type's own.
fn operand_type_name(x: &Bound<'_, PyAny>) -> String {
    match x.cast::<NdArray>() {
        Ok(a) if a.get().view().ndim() == 0 => format!("numpy.{}", np_name(a.get().view().dtype())),
        Ok(_) => "numpy.ndarray".to_string(),
        Err(_) => x.get_type().fully_qualified_name().map_or_else(|_| "object".to_string(), |n| n.to_string()),
    }
}

/// NumPy's arrays and scalars take no modulus in `pow(x, y, m)`: Python's TypeError.
fn pow_modulo_err(x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>, m: &Bound<'_, PyAny>) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!(
        "unsupported operand type(s) for ** or pow(): '{}', '{}', '{}'",
        operand_type_name(x),
        operand_type_name(y),
        operand_type_name(m)
    ))
}

/// Puts in place of `slf`'s view the view of the same base that the Python layer's `hook` makes
/// from `value` (an attribute assignment, `a.shape = s`, naming `what`).
fn replace_view(slf: &Bound<'_, NdArray>, hook_name: &str, value: Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    let made = hook(slf.py(), hook_name)?.call1((slf, value))?;
    let new = made.cast::<NdArray>()?.get().view().clone();
    if new.base.id != slf.get().view().base.id {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("{hook_name} gave a view of another base")));
    }
    let mut view = slf
        .get()
        .view
        .try_write()
        .map_err(|_| value_err(format!("cannot change the {what} of an array while it is being read")))?;
    *view = new;
    Ok(())
}

#[pymethods]
impl NdArray {
    fn __pow__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if !modulo.is_none() {
            return Err(pow_modulo_err(slf.as_any(), other, modulo));
        }
        // NumPy computes `a ** 2` (a Python int) as `square(a)`: the same result but for a
        // bool array, whose square is int8 where the power with a weak 2 is int64. (A 0-d
        // array stands in for NumPy's scalars too, whose `** 2` is the power.)
        let view = slf.get().view();
        if view.dtype() == DType::Bool
            && view.ndim() > 0
            && other.is_exact_instance_of::<pyo3::types::PyInt>()
            && other.extract::<i64>().is_ok_and(|e| e == 2)
        {
            drop(view);
            return Ok(ops::unary(slf.py(), Opcode::Square, slf.as_any(), None)?.expect("an array operand"));
        }
        drop(view);
        binop(slf.as_any(), other, Opcode::Power)
    }

    fn __rpow__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if !modulo.is_none() {
            return Err(pow_modulo_err(other, slf.as_any(), modulo));
        }
        binop(other, slf.as_any(), Opcode::Power)
    }

    fn __ipow__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, _modulo: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, Opcode::Power, other)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        call1(slf, "__repr__", [])?.extract(slf.py())
    }

    fn __str__(slf: &Bound<'_, Self>) -> PyResult<String> {
        call1(slf, "__str__", [])?.extract(slf.py())
    }

    fn __bool__(slf: &Bound<'_, Self>) -> PyResult<bool> {
        match only_element(slf.py(), slf.get())? {
            Some(x) => x.is_truthy(),
            None => call1(slf, "__bool__", [])?.extract(slf.py()),
        }
    }

    fn __float__(slf: &Bound<'_, Self>) -> PyResult<f64> {
        // NumPy 2.4 converts only 0-d arrays (the Python layer says what a version does).
        if slf.get().view().ndim() == 0
            && let Some(x) = only_element(slf.py(), slf.get())?
        {
            return x.extract();
        }
        call1(slf, "__float__", [])?.extract(slf.py())
    }

    fn __int__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        call1(slf, "__int__", [])
    }

    fn __index__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        call1(slf, "__index__", [])
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        call1(slf, "__iter__", [])
    }

    /// Attributes the class lacks: the Python layer supplies NumPy's (`real`, `mT`, and any
    /// other `numpy.ndarray` method through the fallback).
    fn __getattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        call1(slf, "getattr", [name.clone().unbind()])
    }

    fn __contains__(slf: &Bound<'_, Self>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        call1(slf, "__contains__", [item.clone().unbind()])?.extract(slf.py())
    }
}

#[pymethods]
impl NdArray {
    /// `numpy.ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None)`: a
    /// new array, uninitialised without a buffer, else a copy of the buffer's elements (the
    /// Python layer's `ndarray_new` makes it).
    #[new]
    #[pyo3(signature = (shape, dtype=None, buffer=None, offset=None, strides=None, order=None))]
    fn py_new(
        py: Python<'_>,
        shape: Py<PyAny>,
        dtype: Option<Py<PyAny>>,
        buffer: Option<Py<PyAny>>,
        offset: Option<Py<PyAny>>,
        strides: Option<Py<PyAny>>,
        order: Option<Py<PyAny>>,
    ) -> PyResult<NdArray> {
        let made = hook(py, "ndarray_new")?.call1((shape, dtype, buffer, offset, strides, order))?;
        let a = made.cast::<NdArray>()?.get();
        Ok(NdArray::new(a.view().clone(), a.handle()))
    }

    /// The shape, as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.view().shape.iter())
    }

    /// `a.shape = s` reshapes the array in place when `s` views the same elements (NumPy's
    /// errors otherwise: the Python layer's `set_shape` finds the view).
    #[setter]
    fn set_shape(slf: &Bound<'_, Self>, shape: Bound<'_, PyAny>) -> PyResult<()> {
        replace_view(slf, "set_shape", shape, "shape")
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.view().ndim()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.view().nelem()
    }

    /// `a.flat`: the Python layer's object reading and assigning the elements in row-major order.
    #[getter]
    fn flat(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        call1(slf, "flat", [])
    }

    /// `a.flat = v` assigns every element, repeating `v`'s elements as NumPy's does.
    #[setter]
    fn set_flat(slf: &Bound<'_, Self>, value: Bound<'_, PyAny>) -> PyResult<()> {
        call1(slf, "set_flat", [value.unbind()]).map(drop)
    }

    /// The real part: the array itself (vmnp's dtypes are real).
    #[getter]
    fn real(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        call1(slf, "getattr", [pyo3::types::PyString::new(slf.py(), "real").into_any().unbind()])
    }

    /// `a.real = v` assigns every element, as NumPy's does for a real array.
    #[setter]
    fn set_real(slf: &Bound<'_, Self>, value: Bound<'_, PyAny>) -> PyResult<()> {
        call1(slf, "set_real", [value.unbind()]).map(drop)
    }

    /// The imaginary part: zeros (vmnp's dtypes are real).
    #[getter]
    fn imag(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        call1(slf, "getattr", [pyo3::types::PyString::new(slf.py(), "imag").into_any().unbind()])
    }

    /// `a.imag = v`: NumPy's error for a real array.
    #[setter]
    fn set_imag(slf: &Bound<'_, Self>, value: Bound<'_, PyAny>) -> PyResult<()> {
        call1(slf, "set_imag", [value.unbind()]).map(drop)
    }

    /// The element type, as a `numpy.dtype`.
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        np_dtype(py, self.view().dtype())
    }

    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.view().dtype().size()
    }

    /// Bytes of the elements viewed.
    #[getter]
    fn nbytes(&self) -> usize {
        self.view().dtype().size() * self.view().nelem()
    }

    /// Byte strides, as NumPy reports them.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let s = self.view().dtype().size() as i64;
        PyTuple::new(py, self.view().stride.iter().map(|x| x * s))
    }

    /// `a.strides = s` views the same first element with other byte strides (whole elements,
    /// inside the base; NumPy's errors and, from NumPy 2.4, its deprecation warning: the
    /// Python layer's `set_strides` finds the view).
    #[setter]
    fn set_strides(slf: &Bound<'_, Self>, strides: Bound<'_, PyAny>) -> PyResult<()> {
        replace_view(slf, "set_strides", strides, "strides")
    }

    /// Strides in elements (for the Python layer's view arithmetic).
    #[getter]
    fn _strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.view().stride.iter())
    }

    /// Offset of the first element in the base, in elements.
    #[getter]
    fn _start(&self) -> i64 {
        self.view().start
    }

    /// NumPy's WRITEABLE flag.
    #[getter]
    fn _writeable(&self) -> bool {
        self.writeable.load(Ordering::Relaxed)
    }

    /// Sets NumPy's WRITEABLE flag.
    fn _set_writeable(&self, on: bool) {
        self.writeable.store(on, Ordering::Relaxed);
    }

    /// The number of elements of the base the array views.
    #[getter]
    fn _base_nelem(&self) -> u64 {
        self.view().base.nelem
    }

    /// The id of the base the array views (arrays of one base share memory).
    #[getter]
    fn _base_id(&self) -> u64 {
        self.view().base.id.0
    }

    /// True when the view is row-major contiguous.
    #[getter]
    fn _contiguous(&self) -> bool {
        self.view().is_contiguous()
    }

    /// The transpose (a view).
    #[getter(T)]
    fn t(&self, py: Python<'_>) -> PyResult<Py<NdArray>> {
        let mut v = self.view().clone();
        v.shape.reverse();
        v.stride.reverse();
        self.with_view(py, v)
    }

    /// `(data, dtype name, shape)`: the elements in row-major order, after running everything
    /// recorded that they depend on (the GIL is released meanwhile).
    fn _host<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyByteArray>> {
        let v = &self.view();
        let es = v.dtype().size();
        let n = v.nelem();
        // An array larger than memory is NumPy's MemoryError, never an abort.
        let mut out = Vec::new();
        if !n.checked_mul(es).is_some_and(vm_runtime::memory::grantable) || out.try_reserve_exact(n * es).is_err() {
            return Err(ops::allocation_error(&v.shape, v.dtype()));
        }
        out.resize(n * es, 0);
        if n > 0 {
            let dst = &mut out;
            host_bytes(py, v.base.id, |src: &[u8]| copy_view(v, src, dst, es))?;
        }
        Ok(PyByteArray::new(py, &out))
    }

    /// A 0-d array, vmnp's stand-in for a NumPy scalar, hashes as its value; other arrays are
    /// unhashable, as NumPy's are.
    fn __hash__(slf: &Bound<'_, Self>) -> PyResult<isize> {
        if slf.get().view().ndim() != 0 {
            return Err(pyo3::exceptions::PyTypeError::new_err("unhashable type: 'numpy.ndarray'"));
        }
        slf.call_method0("item")?.hash()
    }

    fn __len__(&self) -> PyResult<usize> {
        // A 0-d array stands for NumPy's scalar (`len(x.sum())`): its error.
        self.view().shape.first().copied().ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "object of type 'numpy.{}' has no len()",
                np_name(self.view().dtype())
            ))
        })
    }

    fn __getitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        // One element by Python ints, in host memory: the read of an element loop.
        let at = element_at(&slf.get().view(), key)?;
        if let Some((id, index)) = at
            && let Some(x) = crate::session::computed_numpy_scalar(py, id, index)?
        {
            return Ok(x);
        }
        match slf.get().basic(key)? {
            // NumPy's scalar when the value is at hand; else a 0-d copy stands for it (later
            // writes to the array do not change it), computed with the rest of the queue.
            Some((v, true)) => {
                if let Some(x) = host_scalar(py, &v)? {
                    return Ok(x);
                }
                let element = slf.get().with_view(py, v)?;
                Ok(ops::unary(py, Opcode::Identity, element.bind(py).as_any(), None)?.expect("an array operand"))
            }
            Some((v, false)) => Ok(slf.get().with_view(py, v)?.into_any()),
            None => {
                if let Some(mask) = full_mask(slf, key) {
                    // `x[x > 0]`: the elements where the mask holds, in one call.
                    return Ok(crate::positions::_compress(py, slf, &mask)?.into_any());
                }
                match gather_in_range(py, slf, key)? {
                    Some(r) => Ok(r),
                    None => Ok(hook(py, "getitem")?.call1((slf, key))?.unbind()),
                }
            }
        }
    }

    fn __setitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        // One element by Python ints: the store of an element loop, without building its view.
        let dt = slf.get().view().dtype();
        let at = element_at(&slf.get().view(), key)?;
        if let Some((id, index)) = at {
            slf.get().check_writeable("assignment destination")?;
            if store_element(py, (id, index, dt), value)? {
                return Ok(());
            }
        }
        match slf.get().basic(key)? {
            Some((v, element)) => {
                slf.get().check_writeable("assignment destination")?;
                if let Ok(a) = value.cast::<NdArray>()
                    && *a.get().view() == v
                {
                    return Ok(()); // `x[i, :j] += y` stores the view it updated in place back
                }
                if element && !value.is_instance_of::<PyFloat>() && !value.is_instance_of::<PyInt>() {
                    // One element takes a scalar: NumPy 2.4 no longer unpacks an array of one
                    // element (`a[0] = np.array([5.0])`, `a[0] += a` of one element). Arrays say
                    // their `ndim` (NumPy's scalars 0); asking for it costs far less than for an
                    // array interface, which NumPy's scalars build afresh each time.
                    let ndim = match value.cast::<NdArray>() {
                        Ok(a) => a.get().view().ndim(),
                        Err(_) => value
                            .getattr(pyo3::intern!(py, "ndim"))
                            .ok()
                            .and_then(|n| n.extract::<usize>().ok())
                            .unwrap_or(0),
                    };
                    if ndim > 0 {
                        return Err(value_err("setting an array element with a sequence."));
                    }
                }
                // (An element `element_at` found was offered to `store_element` above.)
                if element && at.is_none() && store_element(py, (v.base.id, v.start as usize, dt), value)? {
                    return Ok(());
                }
                ops::assign_into(py, &NdArray::new(v, slf.get().handle()), value)
            }
            None => {
                // `x[x > 0] = y` of `x`'s dtype, or of a Python number: in one call.
                let plain = value.is_exact_instance_of::<PyFloat>()
                    || value.is_exact_instance_of::<PyInt>()
                    || value.is_exact_instance_of::<PyBool>();
                if let Some(mask) = full_mask(slf, key)
                    && ((plain && ops::_masked_fill(py, slf, &mask, value)?)
                        || (value.is_exact_instance_of::<NdArray>()
                            && crate::positions::_masked_store(py, slf, &mask, value)?))
                {
                    return Ok(());
                }
                hook(py, "setitem")?.call1((slf, key, value)).map(drop)
            }
        }
    }

    fn __neg__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(ops::unary(slf.py(), Opcode::Negative, slf.as_any(), None)?.expect("an array operand"))
    }

    fn __pos__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(ops::identity(slf.py(), "positive", slf.as_any(), None)?.expect("an array operand"))
    }

    fn __abs__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(ops::unary(slf.py(), Opcode::Absolute, slf.as_any(), None)?.expect("an array operand"))
    }

    fn __invert__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let op = if slf.get().view().dtype() == vm_ir::DType::Bool { Opcode::LogicalNot } else { Opcode::Invert };
        Ok(ops::unary(slf.py(), op, slf.as_any(), None)?.expect("an array operand"))
    }

    fn __richcmp__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let op = match op {
            CompareOp::Lt => Opcode::Less,
            CompareOp::Le => Opcode::LessEqual,
            CompareOp::Eq => Opcode::Equal,
            CompareOp::Ne => Opcode::NotEqual,
            CompareOp::Gt => Opcode::Greater,
            CompareOp::Ge => Opcode::GreaterEqual,
        };
        if let Some(r) = ops::binary(py, op, slf.as_any(), other, None)? {
            return Ok(r);
        }
        // A value the VM cannot hold (`a == 1j`): NumPy's comparison, through the fallback.
        let r = hook(py, "operator_fallback")?.call1((op.name(), slf, other))?;
        if !r.is(py.NotImplemented().bind(py)) {
            return Ok(r.unbind());
        }
        if matches!(op, Opcode::Equal | Opcode::NotEqual) {
            // `a == None`, `a != "text"`: NumPy compares element by element, nothing is equal.
            let all = hook(py, "full_like")?;
            return Ok(all.call1((slf, op == Opcode::NotEqual, "bool"))?.unbind());
        }
        Ok(py.NotImplemented())
    }

    /// vmnp arrays have no `__array_ufunc__` (as JAX's and PyTorch's arrays): a NumPy scalar
    /// meeting one in an operator (`np.float64(x) * a`, `s < a`) then gives way at once, by this
    /// priority above NumPy scalars', and the array's reflected operator records it; through
    /// NumPy's ufunc override protocol the same operation cost twice NumPy's whole operation.
    /// Below NumPy arrays' priority: `numpy_array + a` and `numpy_array += a` are NumPy's (`a`
    /// read through `__array__`), the in-place one writing into the NumPy array as it must, and
    /// NumPy's and SciPy's own ufuncs called on vmnp arrays compute NumPy arrays the same way.
    #[classattr]
    fn __array_priority__() -> f64 {
        -1.0
    }
}

/// Copies the elements of `v` (row-major order) out of its base's bytes `src` into `dst`.
pub(crate) fn copy_view(v: &View, src: &[u8], dst: &mut [u8], es: usize) {
    if v.is_contiguous() {
        let s = v.start as usize * es;
        vm_runtime::memory::copy_elements(dst, &src[s..s + dst.len()]);
        return;
    }
    // (A view that is one line, a column, is stepped without an odometer.)
    match v.line_stride() {
        Some(step) => copy_elements_at(src, (0..).map(|k| (v.start + k * step) as usize), dst, es),
        None => copy_elements_at(src, v.offsets().map(|off| off as usize), dst, es),
    }
}

/// Copies the `es`-byte elements of `src` at `offsets` (in elements), in order, into `dst`
/// until it is full: one move of a fixed size each.
pub(crate) fn copy_elements_at(src: &[u8], offsets: impl Iterator<Item = usize>, dst: &mut [u8], es: usize) {
    fn copy<const ES: usize>(src: &[u8], offsets: impl Iterator<Item = usize>, dst: &mut [u8]) {
        for (to, at) in dst.chunks_exact_mut(ES).zip(offsets) {
            to.copy_from_slice(&src[at * ES..at * ES + ES]);
        }
    }
    match es {
        8 => copy::<8>(src, offsets, dst),
        4 => copy::<4>(src, offsets, dst),
        2 => copy::<2>(src, offsets, dst),
        _ => copy::<1>(src, offsets, dst),
    }
}
