//! Plain-Rust access to views of host memory, for the routines that are not generated code
//! (scans, gathers, scatters, combining reduction partials, snapshots of overlapping inputs).
//!
//! Copies of views ([`read`]) are allocated fallibly: a view's extent comes from the program,
//! and a broadcast view may visit far more elements than its base holds, so routines that only
//! need to look at a view read it in place ([`elements`], [`data`] with [`View::offset_at`] or [`View::offsets`]).

use vm_ir::{Element, Error, Result, View};
use vm_runtime::memory::{try_collect, try_vec};
use vm_runtime::{Buffer, HostMemory};

/// The buffer of `v`'s base, allocated (zero-filled) when absent, checked to hold the view.
pub fn buffer<'m>(mem: &'m mut HostMemory, v: &View) -> Result<&'m mut Buffer> {
    let buf = mem.ensure(&v.base)?;
    if let Some((lo, hi)) = v.extent()
        && (lo < 0 || hi as usize >= buf.nelem())
    {
        return Err(Error::Internal(format!("view {v} outside its buffer of {} elements", buf.nelem())));
    }
    Ok(buf)
}

/// [`buffer`] for an output whose every element of its base the caller writes before anything
/// reads it ([`HostMemory::ensure_overwritten`]: a pooled buffer is not zeroed first).
pub fn buffer_overwritten<'m>(mem: &'m mut HostMemory, v: &View) -> Result<&'m mut Buffer> {
    mem.ensure_overwritten(&v.base)?;
    buffer(mem, v)
}

/// The elements of `v`, in row-major order, in a copy allocated fallibly (naming `v`'s base).
pub fn read<T: Element>(mem: &mut HostMemory, v: &View) -> Result<Vec<T>> {
    let data = buffer(mem, v)?.as_slice::<T>();
    if v.is_contiguous() && v.nelem() > 0 {
        // One run of the base: a copy of the slice.
        let run = &data[v.start as usize..][..v.nelem()];
        let mut copy = try_vec(run.len(), v.base.id, "a copy of a view of")?;
        copy.extend_from_slice(run);
        return Ok(copy);
    }
    try_collect(v.offsets().map(|o| data[o as usize]), v.base.id, "a copy of a view of")
}

/// The data of `v`'s base for reading in place; the base must have been allocated with
/// [`buffer`] (a shared borrow of `mem` cannot allocate).
pub fn data<'m, T: Element>(mem: &'m HostMemory, v: &View) -> Result<&'m [T]> {
    let buf = mem
        .get(v.base.id)
        .ok_or_else(|| Error::Internal(format!("base {} read in place before it was allocated", v.base.id)))?;
    Ok(buf.as_slice::<T>())
}

/// The elements of `v`, in row-major order, read in place (see [`data`]).
pub fn elements<'m, T: Element>(mem: &'m HostMemory, v: &'m View) -> Result<impl ExactSizeIterator<Item = T> + 'm> {
    let data = data::<T>(mem, v)?;
    Ok(v.offsets().map(move |o| data[o as usize]))
}

/// Writes `values` (row-major) into `v`.
pub fn write<T: Element>(mem: &mut HostMemory, v: &View, values: &[T]) -> Result<()> {
    let data = buffer(mem, v)?.as_mut_slice::<T>();
    if v.is_contiguous() && v.nelem() > 0 && values.len() >= v.nelem() {
        data[v.start as usize..][..v.nelem()].copy_from_slice(&values[..v.nelem()]);
        return Ok(());
    }
    for (o, &x) in v.offsets().zip(values) {
        data[o as usize] = x;
    }
    Ok(())
}
