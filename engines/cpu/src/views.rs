//! Plain-Rust access to views of host memory, for the routines that are not generated code
//! (scans, gathers, scatters, combining reduction partials, snapshots of overlapping inputs).

use vm_core::{Buffer, Element, Error, HostMemory, Result, View};

/// Row-major element offsets (in elements, into the base) of every position of `v`.
pub fn offsets(v: &View) -> impl Iterator<Item = i64> + '_ {
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

/// The elements of `v`, in row-major order.
pub fn read<T: Element>(mem: &mut HostMemory, v: &View) -> Result<Vec<T>> {
    let data = buffer(mem, v)?.as_slice::<T>();
    Ok(offsets(v).map(|o| data[o as usize]).collect())
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
    use vm_core::{Base, BaseId, DType};

    #[test]
    fn offsets_walk_row_major() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 12 };
        let v = View::new(b, 11, &[2, 3], &[-6, -2]).unwrap();
        assert_eq!(offsets(&v).collect::<Vec<_>>(), vec![11, 9, 7, 5, 3, 1]);
        let s = View::new(b, 4, &[], &[]).unwrap();
        assert_eq!(offsets(&s).collect::<Vec<_>>(), vec![4]);
    }
}
