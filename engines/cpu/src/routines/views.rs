//! Plain-Rust access to views of host memory, for the routines that are not generated code
//! (scans, gathers, scatters, combining reduction partials, snapshots of overlapping inputs).
//!
//! Copies of views ([`read`]) are allocated fallibly: a view's extent comes from the program,
//! and a broadcast view may visit far more elements than its base holds, so routines that only
//! need to look at a view read it in place ([`elements`], [`data`] with [`View::offset_at`]).

use vm_ir::{Element, Error, Result, View};
use vm_runtime::memory::try_collect;
use vm_runtime::{Buffer, HostMemory};

/// Row-major element offsets (in elements, into the base) of every position of `v`.
pub fn offsets(v: &View) -> impl ExactSizeIterator<Item = i64> + '_ {
    let n = v.nelem();
    let nd = v.ndim();
    let mut idx = vec![0usize; nd];
    let mut off = v.start;
    (0..n).map(move |k| {
        if k > 0 {
            // Odometer step.
            let mut d = nd;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                off += v.stride[d];
                if idx[d] < v.shape[d] {
                    break;
                }
                off -= v.stride[d] * v.shape[d] as i64;
                idx[d] = 0;
            }
        }
        off
    })
}

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

/// The elements of `v`, in row-major order, in a copy allocated fallibly (naming `v`'s base).
pub fn read<T: Element>(mem: &mut HostMemory, v: &View) -> Result<Vec<T>> {
    let data = buffer(mem, v)?.as_slice::<T>();
    try_collect(offsets(v).map(|o| data[o as usize]), v.base.id, "a copy of a view of")
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
    Ok(offsets(v).map(move |o| data[o as usize]))
}

/// Writes `values` (row-major) into `v`.
pub fn write<T: Element>(mem: &mut HostMemory, v: &View, values: &[T]) -> Result<()> {
    let data = buffer(mem, v)?.as_mut_slice::<T>();
    for (o, &x) in offsets(v).zip(values) {
        data[o as usize] = x;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::{Base, BaseId, DType};

    #[test]
    fn offsets_walk_row_major() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 12 };
        let v = View::new(b, 11, &[2, 3], &[-6, -2]).unwrap();
        assert_eq!(offsets(&v).collect::<Vec<_>>(), vec![11, 9, 7, 5, 3, 1]);
        let s = View::new(b, 4, &[], &[]).unwrap();
        assert_eq!(offsets(&s).collect::<Vec<_>>(), vec![4]);
        for v in [v, s, View::new(b, 3, &[2, 1, 3], &[0, 5, 4]).unwrap()] {
            let random_access: Vec<i64> = (0..v.nelem()).map(|k| v.offset_at(k)).collect();
            assert_eq!(random_access, offsets(&v).collect::<Vec<_>>(), "{v}");
        }
    }
}
