//! Packing the elements of a strided view into a message and unpacking them into another view,
//! both in row-major order of the view. Inner runs of stride 1 are copied as whole slices.

use crate::split::for_each_index;
use vm_ir::{Error, Result, View};
use vm_runtime::Buffer;

/// Calls `f(byte_offset, run_bytes)` for every run of the view's elements: a run is one row of
/// the innermost dimension when its stride is 1, else one element.
fn runs(v: &View, mut f: impl FnMut(usize, usize)) {
    let size = v.dtype().size();
    if v.nelem() == 0 {
        return;
    }
    let nd = v.ndim();
    if nd == 0 {
        f(v.start as usize * size, size);
        return;
    }
    let (inner, inner_stride) = (v.shape[nd - 1], v.stride[nd - 1]);
    if inner_stride == 1 {
        let outer = &v.shape[..nd - 1];
        for_each_index(outer, |idx| {
            let off = v.start + idx.iter().zip(&v.stride).map(|(&i, &s)| i as i64 * s).sum::<i64>();
            f(off as usize * size, inner * size);
        });
    } else {
        for_each_index(&v.shape, |idx| f(v.offset_of(idx) as usize * size, size));
    }
}

fn check(buf: &Buffer, v: &View) -> Result<()> {
    if let Some((lo, hi)) = v.extent()
        && (lo < 0 || hi as usize >= buf.nelem() || buf.dtype() != v.dtype())
    {
        return Err(Error::Internal(format!("cluster: view {v} does not fit a local buffer of {}", buf.nelem())));
    }
    Ok(())
}

/// Appends the bytes of the elements of `v` (a view of `buf`) to `out`.
pub fn pack(buf: &Buffer, v: &View, out: &mut Vec<u8>) -> Result<()> {
    check(buf, v)?;
    let bytes = buf.bytes();
    runs(v, |off, len| out.extend_from_slice(&bytes[off..off + len]));
    Ok(())
}

/// Writes `data` (as many bytes as `v` has elements) into the elements of `v`, a view of `buf`.
pub fn unpack(buf: &mut Buffer, v: &View, data: &[u8]) -> Result<()> {
    check(buf, v)?;
    let want = v.nelem() * v.dtype().size();
    if data.len() != want {
        return Err(Error::Internal(format!("cluster: {} bytes arrived for a view of {want}", data.len())));
    }
    let mut at = 0;
    let mut result = Ok(());
    runs(v, |off, len| {
        if result.is_ok() {
            result = buf.write_bytes(off, &data[at..at + len]);
        }
        at += len;
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::{Base, BaseId, DType};

    #[test]
    fn round_trip_through_strided_views() {
        let base = Base { id: BaseId(1), dtype: DType::I32, nelem: 12 };
        let mut src = Buffer::new(&base).unwrap();
        src.as_mut_slice::<i32>().iter_mut().enumerate().for_each(|(i, x)| *x = i as i32);
        let col = View::new(base, 1, &[3, 2], &[4, 2]).unwrap(); // elements 1 3 5 7 9 11
        let mut msg = Vec::new();
        pack(&src, &col, &mut msg).unwrap();
        let rev = View::new(base, 11, &[2, 3], &[-3, -1]).unwrap(); // 11 10 9 8 7 6
        pack(&src, &rev, &mut msg).unwrap();
        let mut dst = Buffer::new(&base).unwrap();
        let whole = View::contiguous(base, 0, &[12]).unwrap();
        unpack(&mut dst, &whole, &msg).unwrap();
        assert_eq!(dst.as_slice::<i32>(), &[1, 3, 5, 7, 9, 11, 11, 10, 9, 8, 7, 6]);
        assert!(unpack(&mut dst, &whole, &msg[4..]).is_err());
        let scalar = View::new(base, 5, &[], &[]).unwrap();
        let mut one = Vec::new();
        pack(&dst, &scalar, &mut one).unwrap();
        assert_eq!(one, 11i32.to_ne_bytes());
    }
}
