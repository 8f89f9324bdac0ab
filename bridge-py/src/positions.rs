//! Positions of a boolean array's true elements: what a mask's index (`x[mask]`,
//! `x[mask] = v`), `nonzero`, `flatnonzero` and `argwhere` need. Their result's size depends on
//! the mask's values, so the mask is computed (one flush) and scanned in host memory; the
//! positions then index the data on the VM (a `gather` or `scatter`), which never leaves it.

use crate::array::NdArray;
use crate::ops::{cast_view, new_array, wrap};
use crate::session::{value_err, vm};
use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use vm_ir::DType;

/// The row-major positions of the true elements of `mask` (a contiguous run of bool bytes).
fn true_positions(mask: &[u8]) -> Result<Vec<i64>, std::collections::TryReserveError> {
    /// The high bit of each byte of `w` set when the byte is nonzero (the rest clear).
    fn nonzero_bytes(w: u64) -> u64 {
        const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        (((w & LOW7) + LOW7) | w) & !LOW7
    }
    let word = |w: &[u8]| nonzero_bytes(u64::from_le_bytes(w.try_into().expect("chunks of 8")));
    let words = mask.chunks_exact(8);
    let tail = words.remainder();
    // Counted first (a popcount per 8 elements), so that the positions are allocated once.
    let count =
        words.clone().map(|w| word(w).count_ones() as usize).sum::<usize>() + tail.iter().filter(|&&b| b != 0).count();
    let mut out: Vec<i64> = Vec::new();
    out.try_reserve_exact(count)?;
    let mut push = |at: usize| out.push(at as i64);
    for (w, bytes) in words.enumerate() {
        // One test per 8 elements: sparse masks (a bin of a histogram) are mostly zero words.
        let mut bits = word(bytes);
        while bits != 0 {
            push(w * 8 + bits.trailing_zeros() as usize / 8);
            bits &= bits - 1;
        }
    }
    let done = mask.len() - tail.len();
    for (j, &b) in tail.iter().enumerate() {
        if b != 0 {
            push(done + j);
        }
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
    // A view in another order is copied into row-major order first (with the rest of the queue).
    let (v, _copy) = if v.is_contiguous() {
        (v, None)
    } else {
        let (c, h) = cast_view(py, &v, DType::Bool)?;
        (c, Some(h))
    };
    let (start, n, id) = (v.start as usize, v.nelem(), v.base.id);
    let mut scanned = None;
    crate::session::host_bytes(py, id, |bytes| scanned = Some(true_positions(&bytes[start..start + n])))?;
    let positions = scanned
        .expect("host_bytes calls its closure")
        .map_err(|_| PyMemoryError::new_err(format!("cannot allocate the positions of {n} mask elements")))?;
    let count = positions.len();
    let (out, h) = new_array(&[count], DType::I64)?;
    if count > 0 {
        let id = out.base.id;
        // SAFETY: the bytes of initialised int64s, read as bytes (no alignment or validity
        // requirement), while the vector lives.
        let bytes = unsafe { std::slice::from_raw_parts(positions.as_ptr().cast::<u8>(), count * 8) };
        vm()?.run(py, move |rt| rt.write(id, 0, bytes))?;
        crate::bounds::record(id, 0, n as i64 - 1);
    }
    wrap(py, out, h)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_true_positions, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::true_positions;

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
}
