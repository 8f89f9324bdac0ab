//! View traversal and the two ways the engine touches memory: reading a whole operand into a
//! row-major `Vec`, and writing a row-major `Vec` into a view. Every instruction reads all its
//! inputs this way before it writes anything, which gives the opcode table's "inputs are read
//! in full first" semantics for overlapping operands without further thought.

use crate::elem::Elem;
use vm_core::{Base, Buffer, Error, HostMemory, Operand, Result, View};

/// The base offsets of a view's elements in row-major order of the view's index space (the
/// last dimension varies fastest). A 0-d view yields its one element; a view with an extent 0
/// yields nothing.
pub struct Offsets<'a> {
    shape: &'a [usize],
    stride: &'a [i64],
    idx: Vec<usize>,
    offset: i64,
    remaining: usize,
}

/// The base offsets of `view`'s elements, row-major. The view must lie inside its base
/// ([`View::validate`]).
pub fn offsets(view: &View) -> Offsets<'_> {
    Offsets {
        shape: &view.shape,
        stride: &view.stride,
        idx: vec![0; view.ndim()],
        offset: view.start,
        remaining: view.nelem(),
    }
}

impl Iterator for Offsets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let here = self.offset;
        if self.remaining > 0 {
            // Odometer step: bump the last dimension, carrying into earlier ones.
            for d in (0..self.shape.len()).rev() {
                self.idx[d] += 1;
                self.offset += self.stride[d];
                if self.idx[d] < self.shape[d] {
                    break;
                }
                self.offset -= self.stride[d] * self.shape[d] as i64;
                self.idx[d] = 0;
            }
        }
        Some(here as usize)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets<'_> {}

/// The host buffer of `base`, allocated (zero-filled) if it has none yet, checked to match the
/// base's dtype and size.
pub fn buffer<'m>(mem: &'m mut HostMemory, base: &Base) -> Result<&'m mut Buffer> {
    let buf = mem.ensure(base)?;
    if buf.dtype() != base.dtype || buf.nelem() as u64 != base.nelem {
        return Err(Error::invalid(
            None,
            format!(
                "base {} is used as {} {} elements but its buffer holds {} {} elements",
                base.id,
                base.nelem,
                base.dtype,
                buf.nelem(),
                buf.dtype()
            ),
        ));
    }
    Ok(buf)
}

/// Checks that the element type `T` is the dtype of `view` (a bug in the engine otherwise).
fn check_type<T: Elem>(view: &View) -> Result<()> {
    if view.dtype() != T::DTYPE {
        return Err(Error::Internal(format!("interp accessed a view of {} as {}", view.dtype(), T::DTYPE)));
    }
    Ok(())
}

/// The elements of `view`, row-major. A base with no buffer yet reads as zeros.
pub fn read_view<T: Elem>(mem: &mut HostMemory, view: &View) -> Result<Vec<T>> {
    check_type::<T>(view)?;
    let data = buffer(mem, &view.base)?.as_slice::<T>();
    Ok(offsets(view).map(|o| data[o]).collect())
}

/// The elements of a data operand, row-major, as an array of `shape`: a view (which must have
/// that shape) or a constant (broadcast to it).
pub fn read_operand<T: Elem>(mem: &mut HostMemory, operand: &Operand, shape: &[usize]) -> Result<Vec<T>> {
    match operand {
        Operand::View(v) => {
            if v.shape[..] != *shape {
                return Err(Error::invalid(
                    None,
                    format!("input shape {:?} differs from the expected {:?}", &v.shape[..], shape),
                ));
            }
            read_view(mem, v)
        }
        Operand::Const(s) => {
            if s.dtype() != T::DTYPE {
                return Err(Error::Internal(format!("interp read a {} constant as {}", s.dtype(), T::DTYPE)));
            }
            Ok(vec![T::from_scalar(*s); shape.iter().product()])
        }
    }
}

/// Writes `values` (row-major) into `view`, allocating its base if needed.
pub fn write_view<T: Elem>(mem: &mut HostMemory, view: &View, values: &[T]) -> Result<()> {
    check_type::<T>(view)?;
    if values.len() != view.nelem() {
        return Err(Error::Internal(format!(
            "interp computed {} values for an output of {} elements",
            values.len(),
            view.nelem()
        )));
    }
    let data = buffer(mem, &view.base)?.as_mut_slice::<T>();
    for (o, &v) in offsets(view).zip(values) {
        data[o] = v;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_core::{BaseId, DType};

    /// Row-major offsets the slow way: decompose each flat position into a multi-index.
    fn by_division(v: &View) -> Vec<usize> {
        (0..v.nelem())
            .map(|flat| {
                let mut rem = flat;
                let mut idx = vec![0; v.ndim()];
                for d in (0..v.ndim()).rev() {
                    idx[d] = rem % v.shape[d];
                    rem /= v.shape[d];
                }
                v.offset_of(&idx) as usize
            })
            .collect()
    }

    #[test]
    fn offsets_match_the_index_formula() {
        let base = Base { id: BaseId(1), dtype: DType::F64, nelem: 200 };
        let views = [
            View::new(base, 0, &[], &[]).unwrap(),
            View::new(base, 7, &[5], &[3]).unwrap(),
            View::new(base, 199, &[4, 5], &[-20, -2]).unwrap(),
            View::new(base, 50, &[3, 4, 5], &[0, 10, -1]).unwrap(),
            View::new(base, 3, &[2, 0, 5], &[1, 1, 1]).unwrap(),
            View::new(base, 3, &[1, 1, 7, 1], &[9, 9, 2, 9]).unwrap(),
        ];
        for v in &views {
            let fast: Vec<usize> = offsets(v).collect();
            assert_eq!(fast, by_division(v), "{v}");
            assert_eq!(offsets(v).len(), v.nelem());
        }
    }
}
