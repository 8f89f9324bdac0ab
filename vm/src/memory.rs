//! Host memory: the host-side data of every base, allocated lazily and zero-filled.
//!
//! One [`HostMemory`] per runtime is handed down the stack with every batch. Host engines
//! compute in it directly; device engines copy to and from it on SYNC and host writes.

use crate::dtype::{DType, Element};
use crate::view::{Base, BaseId};
use crate::{Error, Result};
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::HashMap;
use std::ptr::NonNull;

/// Alignment of every host buffer (a cache line; enough for any SIMD load).
pub const BUFFER_ALIGN: usize = 64;

/// The host data of one base: `nelem` elements of `dtype`, 64-byte aligned, zero-initialised.
///
/// A buffer never moves or resizes while its base lives: frontends (the C ABI's `vm_data`) may
/// hold a pointer into it between a sync and the next write or free of the base.
#[derive(Debug)]
pub struct Buffer {
    ptr: NonNull<u8>,
    nbytes: usize,
    dtype: DType,
}

// SAFETY: a Buffer owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for Buffer {}
// SAFETY: shared access only hands out shared slices; mutation needs &mut or raw pointers whose
// users (engines) guarantee disjoint writes.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// A zero-filled buffer for `base`.
    pub fn new(base: &Base) -> Result<Buffer> {
        let nbytes = (base.nelem as usize)
            .checked_mul(base.dtype.size())
            .ok_or_else(|| Error::OutOfMemory(format!("base {} of {} {} elements", base.id, base.nelem, base.dtype)))?;
        let layout = Layout::from_size_align(nbytes.max(1), BUFFER_ALIGN)
            .map_err(|_| Error::OutOfMemory(format!("base {} of {nbytes} bytes", base.id)))?;
        // SAFETY: the layout has a nonzero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr)
            .ok_or_else(|| Error::OutOfMemory(format!("allocating {nbytes} bytes for base {}", base.id)))?;
        Ok(Buffer { ptr, nbytes, dtype: base.dtype })
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Number of elements.
    pub fn nelem(&self) -> usize {
        self.nbytes / self.dtype.size()
    }

    /// Start of the data.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Start of the data, for writing.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The data as raw bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: ptr is valid for nbytes initialised (zeroed at allocation) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.nbytes) }
    }

    /// The data as elements of `T`. Panics if `T` is not the buffer's element type.
    pub fn as_slice<T: Element>(&self) -> &[T] {
        assert_eq!(T::DTYPE, self.dtype, "buffer of {} read as {}", self.dtype, T::DTYPE);
        // SAFETY: allocation is aligned for every element type and holds nelem initialised
        // elements; bool buffers hold only 0 and 1 because every writer stores valid bools
        // (host writes are normalised by `write_bytes`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<T>(), self.nelem()) }
    }

    /// The data as mutable elements of `T`. Panics if `T` is not the buffer's element type.
    pub fn as_mut_slice<T: Element>(&mut self) -> &mut [T] {
        assert_eq!(T::DTYPE, self.dtype, "buffer of {} written as {}", self.dtype, T::DTYPE);
        // SAFETY: as in as_slice, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<T>(), self.nelem()) }
    }

    /// Overwrites bytes `[offset, offset + src.len())` of the data from host bytes. Bytes of a
    /// bool buffer are normalised to 0 or 1.
    pub fn write_bytes(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        if offset.checked_add(src.len()).is_none_or(|end| end > self.nbytes) {
            return Err(Error::InvalidArgument(format!(
                "writing bytes {offset}..{} of a base of {} bytes",
                offset.saturating_add(src.len()),
                self.nbytes
            )));
        }
        // SAFETY: the range was checked to lie inside the allocation; src is a shared borrow and
        // self is borrowed exclusively, so they cannot overlap.
        let dst = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(offset), src.len()) };
        if self.dtype == DType::Bool {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = u8::from(*s != 0);
            }
        } else {
            dst.copy_from_slice(src);
        }
        Ok(())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.nbytes.max(1), BUFFER_ALIGN)) }
    }
}

/// The host buffers of all bases that have one.
#[derive(Debug, Default)]
pub struct HostMemory {
    buffers: HashMap<BaseId, Buffer>,
}

impl HostMemory {
    /// Empty memory.
    pub fn new() -> HostMemory {
        HostMemory::default()
    }

    /// The buffer of `id`, if allocated.
    pub fn get(&self, id: BaseId) -> Option<&Buffer> {
        self.buffers.get(&id)
    }

    /// The buffer of `id` for writing, if allocated.
    pub fn get_mut(&mut self, id: BaseId) -> Option<&mut Buffer> {
        self.buffers.get_mut(&id)
    }

    /// The buffer of `base`, allocated (zero-filled) on first use.
    pub fn ensure(&mut self, base: &Base) -> Result<&mut Buffer> {
        use std::collections::hash_map::Entry;
        match self.buffers.entry(base.id) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => Ok(e.insert(Buffer::new(base)?)),
        }
    }

    /// Allocates every base in `bases` that has no buffer yet.
    pub fn ensure_all<'a>(&mut self, bases: impl IntoIterator<Item = &'a Base>) -> Result<()> {
        for b in bases {
            self.ensure(b)?;
        }
        Ok(())
    }

    /// Releases the buffer of `id` (nothing if none).
    pub fn free(&mut self, id: BaseId) {
        self.buffers.remove(&id);
    }

    /// True when `id` has a buffer.
    pub fn is_allocated(&self, id: BaseId) -> bool {
        self.buffers.contains_key(&id)
    }

    /// Total bytes allocated.
    pub fn allocated_bytes(&self) -> usize {
        self.buffers.values().map(Buffer::nbytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_lazy_zeroed_and_aligned() {
        let base = Base { id: BaseId(9), dtype: DType::F64, nelem: 5 };
        let mut mem = HostMemory::new();
        assert!(!mem.is_allocated(base.id));
        let buf = mem.ensure(&base).unwrap();
        assert_eq!(buf.as_ptr() as usize % BUFFER_ALIGN, 0);
        assert_eq!(buf.as_slice::<f64>(), &[0.0; 5]);
        buf.as_mut_slice::<f64>()[2] = 1.5;
        assert_eq!(mem.get(base.id).unwrap().as_slice::<f64>()[2], 1.5);
        assert_eq!(mem.allocated_bytes(), 40);
        mem.free(base.id);
        assert!(!mem.is_allocated(base.id));
    }

    #[test]
    fn bool_writes_are_normalised() {
        let base = Base { id: BaseId(1), dtype: DType::Bool, nelem: 3 };
        let mut buf = Buffer::new(&base).unwrap();
        buf.write_bytes(0, &[0, 7, 1]).unwrap();
        assert_eq!(buf.as_slice::<bool>(), &[false, true, true]);
        assert!(buf.write_bytes(2, &[0; 2]).is_err());
        buf.write_bytes(2, &[0]).unwrap();
        assert_eq!(buf.as_slice::<bool>(), &[false, true, false]);
    }
}
