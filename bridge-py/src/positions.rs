//! Positions of a boolean array's true elements: what a mask's index (`x[mask]`,
//! `x[mask] = v`), `nonzero`, `flatnonzero` and `argwhere` need. Their result's size depends on
//! the mask's values, so the mask is computed (one flush) and scanned in host memory; the
//! positions then index the data on the VM (a `gather` or `scatter`), which never leaves it,
//! or, for `x[mask]` of data in host memory anyway, select the elements there.

use crate::array::NdArray;
use crate::ops::{cast_view, new_array, wrap};
use crate::session::{BaseHandle, value_err, vm};
use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use std::collections::TryReserveError;
use std::sync::Arc;
use vm_ir::view::same_shape;
use vm_ir::{DType, Instruction, Opcode, Operand, Scalar, View};

/// How many bytes of `mask` (a contiguous run of bool bytes) are true: a popcount per 8.
fn count_true(mask: &[u8]) -> usize {
    let words = mask.chunks_exact(8);
    let tail = words.remainder();
    words.map(|w| nonzero_bytes(w).count_ones() as usize).sum::<usize>() + tail.iter().filter(|&&b| b != 0).count()
}

/// The high bit of each of the 8 bytes of `w` set when the byte is nonzero (the rest clear).
#[inline(always)]
fn nonzero_bytes(w: &[u8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let w = u64::from_le_bytes(w.try_into().expect("chunks of 8"));
    (((w & LOW7) + LOW7) | w) & !LOW7
}

/// Calls `f` with the position of each true byte of `mask`, in order.
#[inline(always)]
fn for_each_true(mask: &[u8], mut f: impl FnMut(usize)) {
    let words = mask.chunks_exact(8);
    let tail = words.remainder();
    for (w, bytes) in words.enumerate() {
        // One test per 8 elements: sparse masks (a bin of a histogram) are mostly zero words.
        let mut bits = nonzero_bytes(bytes);
        while bits != 0 {
            f(w * 8 + bits.trailing_zeros() as usize / 8);
            bits &= bits - 1;
        }
    }
    let done = mask.len() - tail.len();
    for (j, &b) in tail.iter().enumerate() {
        if b != 0 {
            f(done + j);
        }
    }
}

/// The row-major positions of the true elements of `mask` (a contiguous run of bool bytes),
/// counted first so that they are allocated once.
fn true_positions(mask: &[u8]) -> Result<Vec<i64>, TryReserveError> {
    let n = count_true(mask);
    let mut out: Vec<i64> = Vec::new();
    // One slot more than the positions: every byte of a word with a true one writes its
    // position at the next slot, which only a true byte keeps (no branch to mispredict on a
    // random mask); words of false bytes are skipped whole.
    out.try_reserve_exact(n + 1)?;
    out.resize(n + 1, 0);
    let mut k = 0;
    let words = mask.chunks_exact(8);
    let tail = words.remainder();
    for (w, bytes) in words.enumerate() {
        if nonzero_bytes(bytes) == 0 {
            continue;
        }
        for (j, &b) in bytes.iter().enumerate() {
            out[k] = (w * 8 + j) as i64;
            k += usize::from(b != 0);
        }
    }
    let done = mask.len() - tail.len();
    for (j, &b) in tail.iter().enumerate() {
        out[k] = (done + j) as i64;
        k += usize::from(b != 0);
    }
    out.truncate(n);
    Ok(out)
}

/// The bytes of the elements of `width` bytes where `mask` is true, of the run of as many
/// elements starting at element `start` of `data`, in order: `x[mask]` in one pass over the
/// mask, without its positions.
fn compress_bytes(mask: &[u8], data: &[u8], start: usize, width: usize) -> Result<Vec<u8>, TryReserveError> {
    /// The copy loop, inlined into each arm below so that a constant width becomes one load
    /// and store per element.
    #[inline(always)]
    fn copy(mask: &[u8], data: &[u8], start: usize, width: usize, out: &mut [u8]) {
        let mut dst = out.chunks_exact_mut(width);
        for_each_true(mask, |at| {
            let src = (start + at) * width;
            dst.next().expect("one element per true byte").copy_from_slice(&data[src..src + width]);
        });
    }
    let n = count_true(mask) * width;
    let mut out = Vec::new();
    out.try_reserve_exact(n)?;
    out.resize(n, 0);
    match width {
        1 => copy(mask, data, start, 1, &mut out),
        2 => copy(mask, data, start, 2, &mut out),
        4 => copy(mask, data, start, 4, &mut out),
        8 => copy(mask, data, start, 8, &mut out),
        _ => copy(mask, data, start, width, &mut out),
    }
    Ok(out)
}

/// The row-major positions of the true elements of bool array `mask`, as a new int64 vector
/// (its values' range recorded, so indexing with it checks nothing again). Computes the mask.
#[pyfunction]
fn _true_positions(py: Python<'_>, mask: &Bound<'_, NdArray>) -> PyResult<Py<NdArray>> {
    let v = mask.get().view().clone();
    if v.dtype() != DType::Bool {
        return Err(value_err(format!("positions of a {} array; a bool one was expected", v.dtype())));
    }
    let n = v.nelem();
    let (out, h) = positions_array(py, mask_positions(py, v)?, n)?;
    wrap(py, out, h)
}

/// The number of true elements of bool array `mask` (computed: one flush; a strided view in a
/// row-major copy), counted in host memory as a popcount per 8 elements
/// (`np.count_nonzero(mask)`: a NumPy int64).
#[pyfunction]
fn _count_true(py: Python<'_>, mask: &Bound<'_, NdArray>) -> PyResult<Py<PyAny>> {
    let v = mask.get().view().clone();
    if v.dtype() != DType::Bool {
        return Err(value_err(format!("a count of true elements of a {} array; a bool one was expected", v.dtype())));
    }
    let mut count = 0;
    if v.nelem() > 0 {
        let (v, _copy) = row_major(py, v)?;
        let (start, n) = (v.start as usize, v.nelem());
        crate::session::host_bytes(py, v.base.id, |bytes| count = count_true(&bytes[start..start + n]))?;
    }
    crate::array::numpy_scalar_of(py, Scalar::I64(count as i64))
}

/// The row-major positions of the true elements of bool view `mask` (computed: one flush).
fn mask_positions(py: Python<'_>, mask: View) -> PyResult<Vec<i64>> {
    let (mask, _copy) = row_major(py, mask)?;
    let (start, n, id) = (mask.start as usize, mask.nelem(), mask.base.id);
    let mut scanned = None;
    crate::session::host_bytes(py, id, |bytes| scanned = Some(true_positions(&bytes[start..start + n])))?;
    scanned.expect("host_bytes calls its closure").map_err(|_| no_memory(n))
}

/// `a[mask] = values` for a bool `mask` of `a`'s shape over a row-major `a`, with `values` a
/// vmnp array of `a`'s dtype, at most 1-d, holding one value per true element or one for all:
/// the mask's positions (computing the mask: one flush) scatter the values, in one call.
/// `False`, with nothing done, for anything else (the caller's general path: casts, NumPy's
/// errors).
#[pyfunction]
pub(crate) fn _masked_store(
    py: Python<'_>,
    a: &Bound<'_, NdArray>,
    mask: &Bound<'_, NdArray>,
    values: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let (dst, m) = (a.get().view().clone(), mask.get().view().clone());
    let Ok(values) = values.cast::<NdArray>() else { return Ok(false) };
    let v = values.get().view().clone();
    let fits = m.dtype() == DType::Bool && same_shape(&m.shape, &dst.shape) && dst.is_contiguous();
    if !fits || v.dtype() != dst.dtype() || v.ndim() > 1 {
        return Ok(false);
    }
    a.get().check_writeable("assignment destination")?;
    let n = m.nelem();
    let positions = mask_positions(py, m)?;
    let count = positions.len();
    if v.nelem() != count && v.nelem() != 1 {
        return Ok(false); // NumPy's error, from the general path
    }
    if count == 0 {
        return Ok(true);
    }
    let (index, _h) = positions_array(py, positions, n)?;
    let view = |base, start, n, stride| View::new(base, start, &[n], &[stride]).map_err(|e| value_err(e.to_string()));
    let flat = view(dst.base, dst.start, n, 1)?;
    // One value for all: read `count` times (stride 0).
    let stride = if v.nelem() == count { v.stride.first().copied().unwrap_or(0) } else { 0 };
    let src = view(v.base, v.start, count, stride)?;
    let instr = Instruction::new(Opcode::Scatter, [Operand::View(flat), Operand::View(src), Operand::View(index)]);
    vm()?.submit(py, instr)?;
    Ok(true)
}

/// The error for positions or elements of `n` mask elements that memory cannot hold.
fn no_memory(n: usize) -> PyErr {
    PyMemoryError::new_err(format!("cannot allocate the positions of {n} mask elements"))
}

/// `v` itself when its elements are a contiguous run in row-major order, else a row-major copy
/// (queued with the rest) and the copy's handle.
fn row_major(py: Python<'_>, v: View) -> PyResult<(View, Option<Arc<BaseHandle>>)> {
    if v.is_contiguous() {
        return Ok((v, None));
    }
    let (c, h) = cast_view(py, &v, v.dtype())?;
    Ok((c, Some(h)))
}

/// A new int64 vector holding `positions` (of elements of an array of `n`), its values' range
/// recorded, so indexing with it checks nothing again.
fn positions_array(py: Python<'_>, positions: Vec<i64>, n: usize) -> PyResult<(View, Arc<BaseHandle>)> {
    let count = positions.len();
    let (out, h) = new_array(&[count], DType::I64)?;
    if count > 0 {
        let id = out.base.id;
        // SAFETY: the bytes of initialised int64s, read as bytes (no alignment or validity
        // requirement), while the vector lives.
        let bytes = unsafe { std::slice::from_raw_parts(positions.as_ptr().cast::<u8>(), count * 8) };
        vm()?.run(py, "writing host data", move |rt| rt.write(id, 0, bytes))?;
        crate::bounds::record(id, 0, n as i64 - 1);
    }
    Ok((out, h))
}

/// What `_compress` found in host memory: the selected elements' bytes (the data was there), or
/// the mask's positions to gather the data with where it lies.
enum Scanned {
    Values(Result<Vec<u8>, TryReserveError>),
    Positions(Result<Vec<i64>, TryReserveError>),
}

/// `a[mask]` for a bool `mask` of `a`'s shape: `a`'s elements where the mask is true, in
/// row-major order, as a new 1-d array. Computes the mask (one flush). Where `a`'s data is in
/// host memory (always, on a stack computing there) the elements are copied out of it in one
/// pass; elsewhere (a device's memory) their positions are gathered on the VM.
#[pyfunction]
pub(crate) fn _compress(py: Python<'_>, a: &Bound<'_, NdArray>, mask: &Bound<'_, NdArray>) -> PyResult<Py<NdArray>> {
    let (a, mask) = (a.get().view().clone(), mask.get().view().clone());
    if mask.dtype() != DType::Bool || mask.shape != a.shape {
        return Err(value_err(format!(
            "a mask of shape {:?} and dtype {} cannot select from an array of shape {:?}",
            mask.shape,
            mask.dtype(),
            a.shape
        )));
    }
    let (mask, _mask_copy) = row_major(py, mask)?;
    let (a, _a_copy) = row_major(py, a)?;
    let (n, width) = (a.nelem(), a.dtype().size());
    let mut scanned = None;
    vm()?.run(py, "computing a mask", |rt| {
        rt.sync(mask.base.id)?;
        let start = mask.start as usize;
        scanned = Some(if rt.is_in_host(a.base.id)? {
            rt.sync(a.base.id)?;
            let (mask_bytes, data) = rt.host_data_pair(mask.base.id, a.base.id)?;
            Scanned::Values(compress_bytes(&mask_bytes[start..start + n], data, a.start as usize, width))
        } else {
            Scanned::Positions(true_positions(&rt.host_data(mask.base.id)?[start..start + n]))
        });
        Ok(())
    })?;
    let values = match scanned.expect("run calls its closure") {
        Scanned::Values(values) => values.map_err(|_| no_memory(n))?,
        Scanned::Positions(positions) => {
            // Gathered where the data lie.
            let (index, _index_handle) = positions_array(py, positions.map_err(|_| no_memory(n))?, n)?;
            let (out, h) = new_array(&index.shape, a.dtype())?;
            let gather = [Operand::View(out.clone()), Operand::View(a), Operand::View(index)];
            vm()?.submit(py, Instruction::new(Opcode::Gather, gather))?;
            return wrap(py, out, h);
        }
    };
    let (out, h) = new_array(&[values.len() / width], a.dtype())?;
    if !values.is_empty() {
        let id = out.base.id;
        vm()?.run(py, "writing host data", move |rt| rt.write(id, 0, &values))?;
    }
    wrap(py, out, h)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_true_positions, m)?)?;
    m.add_function(wrap_pyfunction!(_count_true, m)?)?;
    m.add_function(wrap_pyfunction!(_compress, m)?)?;
    m.add_function(wrap_pyfunction!(_masked_store, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{compress_bytes, true_positions};

    fn positions(mask: &[u8]) -> Vec<i64> {
        true_positions(mask).unwrap()
    }

    #[test]
    fn finds_every_true_element_in_order() {
        assert_eq!(positions(&[]), Vec::<i64>::new());
        assert_eq!(positions(&[0; 17]), Vec::<i64>::new());
        let mut mask = vec![0u8; 21];
        for i in [0, 7, 8, 15, 16, 20] {
            mask[i] = 1;
        }
        assert_eq!(positions(&mask), vec![0, 7, 8, 15, 16, 20]);
        assert_eq!(positions(&[1; 10]), (0..10).collect::<Vec<_>>());
        // Any nonzero byte is true, in every position of a word.
        let bytes: Vec<u8> = (0..64).map(|i| if i % 3 == 0 { [1, 0x80, 0x7f, 0xff][i % 4] } else { 0 }).collect();
        assert_eq!(positions(&bytes), (0..64).filter(|i| i % 3 == 0).collect::<Vec<_>>());
    }

    #[test]
    fn compress_copies_the_elements_at_the_true_positions() {
        for len in [0, 1, 7, 8, 9, 23, 64] {
            let mask: Vec<u8> = (0..len).map(|i| u8::from(i % 3 != 1 && i % 5 != 0)).collect();
            for width in [1, 2, 4, 8, 3] {
                let start = 2;
                let data: Vec<u8> = (0..(start + len) * width).map(|b| (b * 7 % 251) as u8).collect();
                let want: Vec<u8> = positions(&mask)
                    .iter()
                    .flat_map(|&p| data[(start + p as usize) * width..][..width].to_vec())
                    .collect();
                assert_eq!(compress_bytes(&mask, &data, start, width).unwrap(), want, "len {len}, width {width}");
            }
        }
    }
}
