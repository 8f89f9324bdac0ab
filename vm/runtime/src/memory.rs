//! Host memory: the host-side data of every base, allocated lazily and zero-filled.
//!
//! One [`HostMemory`] per runtime is handed down the stack with every batch. Host engines
//! compute in it directly; device engines copy to and from it on SYNC and host writes.
//!
//! Buffers are pooled: the buffer of a freed base of at least [`POOL_MIN_BYTES`] is kept and
//! handed to the next base of the same size class ([`capacity_for`]), zeroed again unless that
//! base is to be overwritten whole ([`HostMemory::ensure_overwritten`]). A loop that makes and drops
//! arrays of one size each iteration then reuses memory that is already mapped, instead of paying
//! the system allocator's fresh pages (a page fault and a page clear per 4 KiB) every time, so
//! its speed does not depend on whether the allocator returns memory to the system (glibc's
//! `M_TRIM_THRESHOLD`, `M_MMAP_THRESHOLD` and their `GLIBC_TUNABLES`). The pool holds at most as
//! many bytes as the live buffers (at least [`POOL_FLOOR_BYTES`]) in at most [`POOL_MAX_BUFFERS`]
//! buffers, and releases a buffer that no base took within [`POOL_MAX_AGE`] batches.

use crate::interrupt::Interrupt;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::alloc::{GlobalAlloc, Layout, System, alloc_zeroed, dealloc};
use std::ptr::NonNull;
use vm_ir::dtype::{DType, Element};
use vm_ir::view::{Base, BaseId};
use vm_ir::{Error, Result};

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
    /// Bytes allocated ([`capacity_for`] of the first base's size; `nbytes` when lent), which
    /// a pooled buffer may serve to a base of another size of the same class.
    capacity: usize,
    dtype: DType,
    /// Allocated by this buffer (freed on drop), or lent by a [`MemorySource`].
    owned: bool,
}

// SAFETY: a Buffer owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for Buffer {}
// SAFETY: shared access only hands out shared slices; mutation needs &mut or raw pointers whose
// users (engines) guarantee disjoint writes.
unsafe impl Sync for Buffer {}

/// Buffers of at least this many bytes come from the system allocator ([`Buffer::new`]).
pub const SYSTEM_BYTES: usize = 64 << 20;

/// Buffers of at least this many bytes ask the kernel for transparent huge pages, as NumPy's
/// allocations of 4 MiB and more do: a fresh buffer's first touch then faults once per 2 MiB
/// instead of once per 4 KiB (a 300-operation expression over 4M elements whose inputs are
/// kept across calls spent a third of its time in page faults).
pub const HUGE_PAGE_BYTES: usize = 4 << 20;

/// Advises the kernel to back the 2 MiB-aligned part of `nbytes` at `ptr` with transparent
/// huge pages (Linux, where they are enabled for `madvise`; elsewhere nothing). Advice only:
/// a refusal changes nothing.
fn advise_huge_pages(ptr: NonNull<u8>, nbytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE_PAGE: usize = 2 << 20;
        const MADV_HUGEPAGE: std::ffi::c_int = 14;
        unsafe extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
        }
        if nbytes < HUGE_PAGE_BYTES {
            return;
        }
        let start = ptr.as_ptr().addr();
        let (first, end) = (start.next_multiple_of(HUGE_PAGE), (start + nbytes) / HUGE_PAGE * HUGE_PAGE);
        if first < end {
            // SAFETY: `first..end` lies inside the allocation just made (rounded inwards to
            // huge-page boundaries); MADV_HUGEPAGE changes how its pages are backed, never
            // their contents.
            unsafe { madvise(ptr.as_ptr().with_addr(first).cast(), end - first, MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, nbytes);
}

/// Fresh zero pages straight from the system for a buffer of at least [`SYSTEM_BYTES`]: on
/// Linux an anonymous mapping, advised to huge pages before any page is touched (the C
/// library's allocation of an alignment above 16 bytes clears every page itself, in 4 KiB
/// pages: a 240 MB input took 58,000 page faults and a clear of its own before its copy);
/// elsewhere the system allocator's zeroed memory.
mod system_pages {
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    use super::{GlobalAlloc, System};
    use super::{Layout, NonNull};

    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    unsafe extern "C" {
        fn mmap(
            addr: *mut std::ffi::c_void,
            len: usize,
            prot: std::ffi::c_int,
            flags: std::ffi::c_int,
            fd: std::ffi::c_int,
            offset: i64,
        ) -> *mut std::ffi::c_void;
        fn munmap(addr: *mut std::ffi::c_void, len: usize) -> std::ffi::c_int;
    }

    /// Zeroed memory of `layout` (whose alignment is at most a page), or `None` when the system
    /// refuses it.
    pub fn map(layout: Layout) -> Option<NonNull<u8>> {
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        {
            const PROT_READ_WRITE: std::ffi::c_int = 0x1 | 0x2;
            const MAP_PRIVATE_ANONYMOUS: std::ffi::c_int = 0x02 | 0x20;
            // SAFETY: a fresh private anonymous mapping, touching no existing memory.
            let ptr =
                unsafe { mmap(std::ptr::null_mut(), layout.size(), PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0) };
            if ptr.is_null() || ptr.addr() == usize::MAX {
                return None; // MAP_FAILED
            }
            let ptr = NonNull::new(ptr.cast::<u8>())?;
            super::advise_huge_pages(ptr, layout.size());
            Some(ptr)
        }
        #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
        // SAFETY: the layout has a nonzero size.
        NonNull::new(unsafe { System.alloc_zeroed(layout) })
    }

    /// Returns memory from [`map`] of the same `layout` to the system.
    ///
    /// # Safety
    /// `ptr` came from [`map`] with `layout` and is not used afterwards.
    pub unsafe fn unmap(ptr: NonNull<u8>, layout: Layout) {
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        // SAFETY: the caller's contract: the whole mapping `map` made.
        unsafe {
            munmap(ptr.as_ptr().cast(), layout.size());
        }
        #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
        // SAFETY: the caller's contract: allocated by `System` with this layout.
        unsafe {
            System.dealloc(ptr.as_ptr(), layout)
        }
    }
}

/// The bytes allocated for a buffer of `nbytes`: below [`SYSTEM_BYTES`], rounded up to one of
/// eight sizes per power of two (at most an eighth more, and a multiple of [`BUFFER_ALIGN`]), so
/// that a pooled buffer serves the next base of a nearby size: a loop over `x[:k]` for growing
/// `k` (a triangular solve, a recurrence) makes a temporary of another size every iteration,
/// which an exact match would never find in the pool.
pub fn capacity_for(nbytes: usize) -> usize {
    if nbytes >= SYSTEM_BYTES {
        return nbytes;
    }
    let n = nbytes.max(1);
    let floor_power = 1usize << (usize::BITS - 1 - n.leading_zeros());
    n.next_multiple_of((floor_power / 8).max(BUFFER_ALIGN))
}

impl Buffer {
    /// A zero-filled buffer for `base`, or [`Error::OutOfMemory`] naming the base and its size.
    ///
    /// A large buffer (from [`SYSTEM_BYTES`]) comes zeroed straight from the system (fresh pages,
    /// `system_pages`), so a request that cannot be met fails here without touching any memory,
    /// whatever global allocator the program installed (some reserve address space for any
    /// request and fail only when the pages are touched); smaller ones from the global one.
    pub fn new(base: &Base) -> Result<Buffer> {
        let fail = || {
            Error::OutOfMemory(format!(
                "allocating {} for base {} ({} {} elements)",
                bytes_of(base.nelem, base.dtype.size()),
                base.id,
                base.nelem,
                base.dtype
            ))
        };
        let nbytes =
            usize::try_from(base.nelem).ok().and_then(|n| n.checked_mul(base.dtype.size())).ok_or_else(fail)?;
        let capacity = capacity_for(nbytes);
        let layout = Layout::from_size_align(capacity, BUFFER_ALIGN).map_err(|_| fail())?;
        let ptr = if capacity >= SYSTEM_BYTES {
            system_pages::map(layout)
        } else {
            // SAFETY: the layout has a nonzero size.
            let ptr = NonNull::new(unsafe { alloc_zeroed(layout) });
            if let Some(ptr) = ptr {
                advise_huge_pages(ptr, capacity);
            }
            ptr
        };
        Ok(Buffer { ptr: ptr.ok_or_else(fail)?, nbytes, capacity, dtype: base.dtype, owned: true })
    }

    /// A buffer over memory someone else owns (an engine plugin's host), never freed by it.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `base`'s bytes, aligned to [`BUFFER_ALIGN`],
    /// initialised (bools 0 or 1), and stay so until the buffer is dropped.
    pub unsafe fn lent(ptr: NonNull<u8>, base: &Base) -> Buffer {
        Buffer { ptr, nbytes: base.nbytes(), capacity: base.nbytes(), dtype: base.dtype, owned: false }
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
            copy_elements(dst, src);
        }
        Ok(())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: allocated in `new` with this very layout, by the allocator its size picks.
            unsafe {
                let layout = Layout::from_size_align_unchecked(self.capacity, BUFFER_ALIGN);
                if self.capacity >= SYSTEM_BYTES {
                    system_pages::unmap(self.ptr, layout)
                } else {
                    dealloc(self.ptr.as_ptr(), layout)
                }
            }
        }
    }
}

/// Copies of fewer bytes than this are made in pieces of [`COPY_PIECE_BYTES`]; larger ones in
/// one `memcpy` (whose non-temporal stores then spare the caches).
pub const COPY_PIECED_BELOW: usize = 4 << 20;

/// The piece of a [`copy_elements`]: small enough that the C library copies it with vector
/// loads and stores. (From about 2 KiB glibc copies with `rep movsb`, which on some AMD
/// processors runs 15-30x slower when destination and source lie a few bytes apart modulo 64:
/// a row copied into a slice one element in, `B[1:-1] = t`.)
pub const COPY_PIECE_BYTES: usize = 1 << 10;

/// Copies `src` into `dst` (of equal length): the engines' and frontends' copy of a run of
/// elements, at the same speed whatever the two addresses (see [`COPY_PIECE_BYTES`]).
pub fn copy_elements<T: Copy>(dst: &mut [T], src: &[T]) {
    let bytes = std::mem::size_of_val(src);
    if bytes >= COPY_PIECED_BELOW || bytes <= COPY_PIECE_BYTES {
        dst.copy_from_slice(src);
        return;
    }
    let piece = (COPY_PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    assert_eq!(dst.len(), src.len(), "copy_elements of slices of different lengths");
    for (d, s) in dst.chunks_mut(piece).zip(src.chunks(piece)) {
        d.copy_from_slice(s);
    }
}

/// Where [`HostMemory::ensure`] takes the memory of a base that has no buffer yet, instead of
/// allocating it: the host of an engine plugin lends its own buffers. The memory returned must
/// meet the contract of [`Buffer::lent`] for as long as the base lives; `None` means the base is
/// not the lender's (an engine's scratch base) and is allocated as usual.
pub type MemorySource = Box<dyn FnMut(&Base, Fill) -> Result<Option<NonNull<u8>>> + Send>;

/// What a new buffer must hold before its first write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Zeros (what a base nobody wrote reads as).
    Zeroed,
    /// Anything: its user writes every element before reading any.
    Overwritten,
}

/// `n` elements of `size` bytes, in words: "N bytes" (exact, whatever the product).
fn bytes_of(n: u64, size: usize) -> String {
    format!("{} bytes", u128::from(n) * size as u128)
}

/// The error for a failed allocation of `len` elements of `T` for `what`, on behalf of `base`.
fn scratch_error<T>(len: usize, base: BaseId, what: &str) -> Error {
    Error::OutOfMemory(format!(
        "allocating {} for {what} base {base} ({len} elements of {} bytes)",
        bytes_of(len as u64, std::mem::size_of::<T>()),
        std::mem::size_of::<T>()
    ))
}

/// An empty `Vec` with room for `len` elements, for `what` (engine scratch memory: staged
/// results, copies, partial sums) on behalf of `base`; [`Error::OutOfMemory`] naming the base
/// and the size when the allocation fails. `what` ends where the base's name follows, as in
/// "a copy of a view of" (base #3).
///
/// Every engine allocation whose size comes from user input (a view's extent, a base's size)
/// goes through this function or [`try_collect`] rather than `Vec::with_capacity`, `vec![..]` or
/// `collect`, which abort the process when the allocator says no. Nothing is written to the
/// memory here, so a request the system would only grant lazily costs nothing until used.
pub fn try_vec<T>(len: usize, base: BaseId, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    let bytes = len.checked_mul(std::mem::size_of::<T>());
    if !bytes.is_some_and(grantable) {
        return Err(scratch_error::<T>(len, base, what));
    }
    v.try_reserve_exact(len).map_err(|_| scratch_error::<T>(len, base, what))?;
    Ok(v)
}

/// True when an allocation of `bytes` may be made: below [`SYSTEM_BYTES`] always; from there
/// only when the system allocator grants it now (asked, and given back at once). The global
/// allocator a program installs may reserve address space for any request (mimalloc does) and
/// fail only when the pages are touched, which kills the process instead of reporting
/// [`Error::OutOfMemory`]; the system's refuses what memory cannot hold.
pub fn grantable(bytes: usize) -> bool {
    if bytes < SYSTEM_BYTES {
        return true;
    }
    let Ok(layout) = Layout::from_size_align(bytes, BUFFER_ALIGN) else { return false };
    // SAFETY: the layout has a nonzero size; the memory is released at once, untouched.
    unsafe {
        let ptr = System.alloc(layout);
        if ptr.is_null() {
            return false;
        }
        System.dealloc(ptr, layout);
    }
    true
}

/// The items of `iter` in a `Vec` allocated by [`try_vec`] (once: the iterator's length is
/// exact).
pub fn try_collect<I: ExactSizeIterator>(iter: I, base: BaseId, what: &str) -> Result<Vec<I::Item>> {
    let mut v = try_vec(iter.len(), base, what)?;
    v.extend(iter);
    Ok(v)
}

/// Freed buffers at least this large go to the pool; smaller ones back to the allocator.
/// Pooling reaches down to a cache line because a pooled buffer comes back without being
/// cleared when its new base is written whole before it is read
/// ([`HostMemory::ensure_overwritten`]), and without the allocator's path for aligned
/// requests (mimalloc's costs about a thousand instructions for a 64-byte-aligned block): a
/// loop of element-wise operations on rows or columns of a few hundred elements otherwise
/// allocates and clears every temporary it makes. (And glibc maps blocks from
/// 128 KiB up afresh, or returns them to the system when they top its heap: a loop over 300x300
/// float64 arrays, 720 KB each, ran 2.2x slower in its first second while the allocator's
/// thresholds adapted.)
pub const POOL_MIN_BYTES: usize = 64;

/// The pool holds at most this many buffers (the oldest go first), so that looking one up
/// stays cheap.
pub const POOL_MAX_BUFFERS: usize = 128;

/// The pool may hold this many bytes even when fewer are live.
pub const POOL_FLOOR_BYTES: usize = 64 << 20;

/// Batches a pooled buffer waits for a base of its size before it is released.
pub const POOL_MAX_AGE: u64 = 2;

/// Freed buffers waiting for a base of their size (see the module documentation).
#[derive(Debug, Default)]
struct Pool {
    /// Buffers with the batch count at which they were freed, oldest first.
    buffers: Vec<(Buffer, u64)>,
    bytes: usize,
    /// Batches ended so far ([`HostMemory::end_batch`]).
    batch: u64,
}

impl Pool {
    /// A pooled buffer of `nbytes` bytes (of the capacity a new one would have) as `dtype`,
    /// zeroed when `zero` (else holding what its last base left there).
    fn take(&mut self, nbytes: usize, dtype: DType, zero: bool) -> Option<Buffer> {
        let capacity = capacity_for(nbytes);
        let i = self.buffers.iter().rposition(|(b, _)| b.capacity == capacity)?;
        let (mut buffer, _) = self.buffers.remove(i);
        self.bytes -= capacity;
        buffer.nbytes = nbytes;
        if zero {
            // SAFETY: the buffer owns capacity >= nbytes writable bytes; zero is a valid value of
            // every dtype.
            unsafe { std::ptr::write_bytes(buffer.as_mut_ptr(), 0, nbytes) };
        }
        buffer.dtype = dtype;
        Some(buffer)
    }

    /// Keeps `buffer`, then releases the oldest buffers past `limit` bytes.
    fn put(&mut self, buffer: Buffer, limit: usize) {
        self.bytes += buffer.capacity;
        self.buffers.push((buffer, self.batch));
        self.trim(limit);
    }

    fn trim(&mut self, limit: usize) {
        let mut drop = self.buffers.len().saturating_sub(POOL_MAX_BUFFERS);
        let mut bytes = self.bytes - self.buffers[..drop].iter().map(|(b, _)| b.capacity).sum::<usize>();
        while bytes > limit && drop < self.buffers.len() {
            bytes -= self.buffers[drop].0.capacity;
            drop += 1;
        }
        self.buffers.drain(..drop);
        self.bytes = bytes;
    }

    /// Ends a batch: releases the buffers older than [`POOL_MAX_AGE`] batches.
    fn end_batch(&mut self) {
        self.batch += 1;
        let batch = self.batch;
        let stale = self.buffers.iter().take_while(|(_, at)| batch - at > POOL_MAX_AGE).count();
        for (b, _) in self.buffers.drain(..stale) {
            self.bytes -= b.capacity;
        }
    }
}

/// The host buffers of all bases that have one.
#[derive(Default)]
pub struct HostMemory {
    buffers: HashMap<BaseId, Buffer>,
    /// Bytes of the buffers in `buffers` that this memory allocated (lent ones are not counted).
    owned_bytes: usize,
    /// Freed large buffers, for reuse.
    pool: Pool,
    /// Lends the memory of new buffers, when set ([`HostMemory::set_source`]).
    source: Option<MemorySource>,
    /// Bases whose buffer a frontend lent out for as long as it likes (a NumPy array viewing it):
    /// [`HostMemory::free`] keeps their buffers until [`HostMemory::unpin`].
    pinned: HashSet<BaseId>,
    /// The request to stop the flush in progress, which engines poll ([`crate::interrupt`]).
    interrupt: Interrupt,
}

impl std::fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostMemory")
            .field("buffers", &self.buffers)
            .field("pinned", &self.pinned)
            .field("lent", &self.source.is_some())
            .field("pooled_bytes", &self.pool.bytes)
            .finish()
    }
}

impl HostMemory {
    /// Empty memory.
    pub fn new() -> HostMemory {
        HostMemory::default()
    }

    /// The request to stop the flush running over this memory: engines poll it in long loops
    /// and between kernels, and stop with [`vm_ir::Error::Interrupted`].
    pub fn interrupt(&self) -> &Interrupt {
        &self.interrupt
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
        self.ensure_zeroed(base, true)
    }

    /// [`HostMemory::ensure`] for a base whose every element the caller writes before anything
    /// reads it: a buffer taken from the pool of freed ones is not zeroed first. (Its old
    /// contents are this process's own data, and every bit pattern is a valid value of the
    /// numeric dtypes; a `bool` base must be overwritten before it is read, as the name says.)
    pub fn ensure_overwritten(&mut self, base: &Base) -> Result<&mut Buffer> {
        self.ensure_zeroed(base, false)
    }

    fn ensure_zeroed(&mut self, base: &Base, zero: bool) -> Result<&mut Buffer> {
        use std::collections::hash_map::Entry;
        match self.buffers.entry(base.id) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let lent = match self.source.as_mut() {
                    Some(source) => source(base, if zero { Fill::Zeroed } else { Fill::Overwritten })?,
                    None => None,
                };
                let buffer = match lent {
                    // SAFETY: the source's contract (see MemorySource) is Buffer::lent's.
                    Some(ptr) => unsafe { Buffer::lent(ptr, base) },
                    None => {
                        let nbytes = usize::try_from(base.nelem).ok().and_then(|n| n.checked_mul(base.dtype.size()));
                        let pooled =
                            nbytes.filter(|&n| n >= POOL_MIN_BYTES).and_then(|n| self.pool.take(n, base.dtype, zero));
                        let buffer = match pooled {
                            Some(b) => b,
                            None => Buffer::new(base)?,
                        };
                        self.owned_bytes += buffer.capacity;
                        buffer
                    }
                };
                Ok(e.insert(buffer))
            }
        }
    }

    /// Adds the buffer of `base` over memory lent by someone else (see [`Buffer::lent`]),
    /// replacing any buffer it had.
    ///
    /// # Safety
    /// As [`Buffer::lent`].
    pub unsafe fn lend(&mut self, base: &Base, ptr: NonNull<u8>) {
        // SAFETY: the caller's contract is Buffer::lent's.
        let old = self.buffers.insert(base.id, unsafe { Buffer::lent(ptr, base) });
        if let Some(old) = old {
            self.release(old);
        }
    }

    /// Forgets every lent buffer (its owner keeps the memory); allocated ones stay.
    pub fn forget_lent(&mut self) {
        self.buffers.retain(|_, b| b.owned);
    }

    /// Takes the memory of new buffers from `source` from now on (`None`: allocate them).
    pub fn set_source(&mut self, source: Option<MemorySource>) {
        self.source = source;
    }

    /// Allocates every base in `bases` that has no buffer yet.
    pub fn ensure_all<'a>(&mut self, bases: impl IntoIterator<Item = &'a Base>) -> Result<()> {
        for b in bases {
            self.ensure(b)?;
        }
        Ok(())
    }

    /// Releases the buffer of `id` (nothing if none, or if it is pinned: an engine that drops
    /// the host copy of a live base, e.g. to defer recomputing it, finds the same buffer again
    /// with [`HostMemory::ensure`]).
    pub fn free(&mut self, id: BaseId) {
        if (self.pinned.is_empty() || !self.pinned.contains(&id))
            && let Some(buffer) = self.buffers.remove(&id)
        {
            self.release(buffer);
        }
    }

    /// A buffer no base holds any more: to the pool when it is ours and large, else dropped.
    fn release(&mut self, buffer: Buffer) {
        if !buffer.owned {
            return;
        }
        self.owned_bytes -= buffer.capacity;
        if buffer.nbytes >= POOL_MIN_BYTES {
            self.pool.put(buffer, self.owned_bytes.max(POOL_FLOOR_BYTES));
        }
    }

    /// Ends a batch (the runtime calls it after every batch): pooled buffers that waited more
    /// than [`POOL_MAX_AGE`] batches for a base of their size are released.
    pub fn end_batch(&mut self) {
        if !self.pool.buffers.is_empty() {
            self.pool.end_batch();
        }
    }

    /// Bytes held by the pool of freed buffers.
    pub fn pooled_bytes(&self) -> usize {
        self.pool.bytes
    }

    /// Keeps the buffer of `id` at its address until [`HostMemory::unpin`], whatever engines
    /// free in the meantime: a frontend lends it out without knowing when it is given back.
    pub fn pin(&mut self, id: BaseId) {
        self.pinned.insert(id);
    }

    /// Ends [`HostMemory::pin`]: the next [`HostMemory::free`] releases the buffer.
    pub fn unpin(&mut self, id: BaseId) {
        if !self.pinned.is_empty() {
            self.pinned.remove(&id);
        }
    }

    /// True when a frontend holds the buffer of `id` ([`HostMemory::pin`]): it must stay where
    /// it is.
    pub fn is_pinned(&self, id: BaseId) -> bool {
        !self.pinned.is_empty() && self.pinned.contains(&id)
    }

    /// Exchanges the buffers of `a` and `b` (of one dtype and size): what `a` held is `b`'s and
    /// the other way round (a base without a buffer gets none). Neither may be pinned.
    pub fn swap(&mut self, a: &Base, b: &Base) {
        debug_assert!(a.dtype == b.dtype && a.nelem == b.nelem, "swapping {a:?} with {b:?}");
        debug_assert!(!self.is_pinned(a.id) && !self.is_pinned(b.id), "a pinned buffer stays put");
        let x = self.buffers.remove(&a.id);
        let y = self.buffers.remove(&b.id);
        if let Some(y) = y {
            self.buffers.insert(a.id, y);
        }
        if let Some(x) = x {
            self.buffers.insert(b.id, x);
        }
    }

    /// True when `id` has a buffer.
    pub fn is_allocated(&self, id: BaseId) -> bool {
        self.buffers.contains_key(&id)
    }

    /// Total bytes of the bases' data (each allocation may be up to an eighth larger:
    /// [`capacity_for`]).
    pub fn allocated_bytes(&self) -> usize {
        self.buffers.values().map(Buffer::nbytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_buffers_use_the_lenders_memory_and_are_forgotten_not_freed() {
        let lent_base = Base { id: BaseId(1), dtype: DType::F64, nelem: 4 };
        let own_base = Base { id: BaseId(2), dtype: DType::F64, nelem: 4 };
        let mut lender = Buffer::new(&lent_base).unwrap();
        let ptr = NonNull::new(lender.as_mut_ptr()).unwrap();
        let addr = ptr.as_ptr().expose_provenance();
        let mut mem = HostMemory::new();
        mem.set_source(Some(Box::new(move |b: &Base, _| {
            Ok((b.id == BaseId(1)).then(|| NonNull::new(std::ptr::with_exposed_provenance_mut(addr)).unwrap()))
        })));
        mem.ensure(&lent_base).unwrap().as_mut_slice::<f64>()[2] = 7.5;
        assert_eq!(lender.as_slice::<f64>()[2], 7.5, "writes land in the lender's memory");
        let own = mem.ensure(&own_base).unwrap().as_ptr();
        assert_ne!(own, lender.as_ptr());
        mem.forget_lent();
        assert!(!mem.is_allocated(lent_base.id) && mem.is_allocated(own_base.id));
        assert_eq!(lender.as_slice::<f64>()[2], 7.5, "the lender's memory outlives the buffer");
        mem.set_source(None);
        // SAFETY: the lender's buffer is live, aligned and initialised.
        unsafe { mem.lend(&lent_base, ptr) };
        assert_eq!(mem.get(lent_base.id).unwrap().as_slice::<f64>()[2], 7.5);
        mem.free(lent_base.id);
        assert_eq!(lender.as_slice::<f64>()[2], 7.5);
    }

    #[test]
    fn the_source_learns_whether_a_new_buffer_must_be_zeroed() {
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = asked.clone();
        let mut mem = HostMemory::new();
        mem.set_source(Some(Box::new(move |b: &Base, fill| {
            log.lock().unwrap().push((b.id, fill));
            Ok(None)
        })));
        let a = Base { id: BaseId(5), dtype: DType::F64, nelem: 8 };
        let b = Base { id: BaseId(6), dtype: DType::I32, nelem: 16 };
        mem.ensure(&a).unwrap();
        mem.ensure_overwritten(&b).unwrap();
        mem.ensure_overwritten(&a).unwrap(); // has a buffer: the source is not asked again
        assert_eq!(*asked.lock().unwrap(), vec![(a.id, Fill::Zeroed), (b.id, Fill::Overwritten)]);
    }

    #[test]
    fn a_pinned_buffer_survives_free_until_unpinned() {
        let base = Base { id: BaseId(3), dtype: DType::I32, nelem: 4 };
        let mut mem = HostMemory::new();
        let ptr = mem.ensure(&base).unwrap().as_ptr();
        mem.pin(base.id);
        mem.free(base.id);
        assert!(mem.is_allocated(base.id));
        assert_eq!(mem.ensure(&base).unwrap().as_ptr(), ptr);
        mem.unpin(base.id);
        mem.free(base.id);
        assert!(!mem.is_allocated(base.id));
    }

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
    fn buffers_advised_to_huge_pages_are_zeroed_and_hold_what_is_written() {
        // Past the huge-page threshold and not a multiple of 2 MiB: the advised range is the
        // aligned inside of the buffer, the rest stays as allocated.
        let n = (HUGE_PAGE_BYTES + (3 << 20) + 24) / 8;
        let base = Base { id: BaseId(4), dtype: DType::F64, nelem: n as u64 };
        let mut mem = HostMemory::new();
        let buf = mem.ensure(&base).unwrap();
        assert!(buf.as_slice::<f64>().iter().all(|&x| x == 0.0));
        for (k, x) in buf.as_mut_slice::<f64>().iter_mut().enumerate() {
            *x = k as f64;
        }
        let read = mem.get(base.id).unwrap().as_slice::<f64>();
        assert!(read.iter().enumerate().all(|(k, &x)| x == k as f64));
    }

    #[test]
    fn buffers_from_the_system_are_zeroed_aligned_and_returned() {
        // Fresh pages of the system, not a multiple of a page; twice, the first returned.
        for id in [5, 6] {
            let n = (SYSTEM_BYTES + 4096 + 40) / 8;
            let base = Base { id: BaseId(id), dtype: DType::F64, nelem: n as u64 };
            let mut buf = Buffer::new(&base).unwrap();
            assert_eq!(buf.as_ptr().addr() % BUFFER_ALIGN, 0);
            let data = buf.as_mut_slice::<f64>();
            assert!(data.iter().all(|&x| x == 0.0));
            (data[0], data[n - 1]) = (1.0, 2.0);
            assert_eq!((data[0], data[n - 1]), (1.0, 2.0));
            drop(buf);
        }
    }

    #[test]
    fn large_freed_buffers_are_reused_zeroed_and_released_when_stale() {
        let n = (POOL_MIN_BYTES / 8) as u64;
        let a = Base { id: BaseId(1), dtype: DType::F64, nelem: n };
        let b = Base { id: BaseId(2), dtype: DType::I64, nelem: n };
        let mut mem = HostMemory::new();
        let buf = mem.ensure(&a).unwrap();
        buf.as_mut_slice::<f64>().fill(2.5);
        let ptr = buf.as_ptr();
        mem.free(a.id);
        assert_eq!(mem.pooled_bytes(), POOL_MIN_BYTES);
        assert_eq!(mem.allocated_bytes(), 0);
        // Same byte size, another dtype: the pooled buffer, zeroed, typed for the new base.
        let buf = mem.ensure(&b).unwrap();
        assert_eq!(buf.as_ptr(), ptr);
        assert!(buf.as_slice::<i64>().iter().all(|&x| x == 0));
        assert_eq!(mem.pooled_bytes(), 0);
        // Another size is not served from the pool.
        mem.free(b.id);
        let c = Base { id: BaseId(3), dtype: DType::F64, nelem: n + 1 };
        assert_ne!(mem.ensure(&c).unwrap().as_ptr(), ptr);
        assert_eq!(mem.pooled_bytes(), POOL_MIN_BYTES);
        for _ in 0..POOL_MAX_AGE {
            mem.end_batch();
        }
        assert_eq!(mem.pooled_bytes(), POOL_MIN_BYTES, "kept for {POOL_MAX_AGE} batches");
        mem.end_batch();
        assert_eq!(mem.pooled_bytes(), 0, "released after");
    }

    #[test]
    fn a_freed_buffer_serves_a_base_of_a_nearby_size_of_its_class() {
        let mut mem = HostMemory::new();
        let (a, b) = (
            Base { id: BaseId(1), dtype: DType::F64, nelem: 1000 },
            Base { id: BaseId(2), dtype: DType::F64, nelem: 1010 },
        );
        let buf = mem.ensure(&a).unwrap();
        buf.as_mut_slice::<f64>().fill(1.5);
        let ptr = buf.as_ptr();
        mem.free(a.id);
        assert_eq!(mem.pooled_bytes(), capacity_for(8000));
        // Ten elements more: the same buffer, its elements as the base sees them all zero.
        let buf = mem.ensure(&b).unwrap();
        assert_eq!((buf.as_ptr(), buf.nelem()), (ptr, 1010));
        assert!(buf.as_slice::<f64>().iter().all(|&x| x == 0.0));
        assert_eq!(mem.allocated_bytes(), 8080);
    }

    #[test]
    fn size_classes_waste_at_most_an_eighth_and_keep_large_sizes() {
        for n in [0, 1, 63, 64, 65, 100, 1000, 4096, 4097, 8000, 65_537, 1 << 20, SYSTEM_BYTES - 1] {
            let c = capacity_for(n);
            assert!(c >= n.max(1) && c.is_multiple_of(BUFFER_ALIGN), "{n} -> {c}");
            assert!(c <= (n + n / 8).max(BUFFER_ALIGN).next_multiple_of(BUFFER_ALIGN), "{n} -> {c}");
        }
        assert_eq!(capacity_for(SYSTEM_BYTES + 3), SYSTEM_BYTES + 3);
        // A row growing by an element at a time stays in one class for many steps.
        assert_eq!(capacity_for(6000 * 8), capacity_for(6100 * 8));
    }

    #[test]
    fn the_pool_holds_no_more_than_the_live_buffers_or_the_floor() {
        let size = POOL_FLOOR_BYTES / (POOL_MAX_BUFFERS / 2);
        let n = (size / 8) as u64;
        let mut mem = HostMemory::new();
        let count = POOL_FLOOR_BYTES / size + 8;
        let bases: Vec<Base> =
            (0..count as u64).map(|i| Base { id: BaseId(i + 1), dtype: DType::F64, nelem: n }).collect();
        for b in &bases {
            mem.ensure(b).unwrap();
        }
        for b in &bases {
            mem.free(b.id);
            assert!(mem.pooled_bytes() <= mem.allocated_bytes().max(POOL_FLOOR_BYTES));
        }
        assert_eq!(mem.pooled_bytes(), POOL_FLOOR_BYTES);
        // Buffers smaller than a cache line never go to the pool.
        let small = Base { id: BaseId(1000), dtype: DType::U8, nelem: POOL_MIN_BYTES as u64 - 1 };
        mem.ensure(&small).unwrap();
        mem.free(small.id);
        assert_eq!(mem.pooled_bytes(), POOL_FLOOR_BYTES);
    }

    #[test]
    fn the_pool_holds_at_most_its_count_of_buffers_the_newest() {
        let n = (POOL_MIN_BYTES / 8) as u64;
        let mut mem = HostMemory::new();
        let bases: Vec<Base> =
            (0..2 * POOL_MAX_BUFFERS as u64).map(|i| Base { id: BaseId(i + 1), dtype: DType::F64, nelem: n }).collect();
        for b in &bases {
            mem.ensure(b).unwrap().as_mut_slice::<f64>()[0] = b.id.0 as f64;
        }
        for b in &bases {
            mem.free(b.id);
        }
        assert_eq!(mem.pooled_bytes(), POOL_MAX_BUFFERS * POOL_MIN_BYTES);
        // Overwritten: the newest freed buffer as it was left, not cleared.
        let next = Base { id: BaseId(9999), dtype: DType::F64, nelem: n };
        assert_eq!(mem.ensure_overwritten(&next).unwrap().as_slice::<f64>()[0], bases.len() as f64);
    }

    #[test]
    fn impossible_allocations_are_errors_naming_base_and_size() {
        // 2^40 f64 elements: 8 TiB, more than any machine running the tests can map.
        let huge = Base { id: BaseId(7), dtype: DType::F64, nelem: 1 << 40 };
        let e = Buffer::new(&huge).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory(_)), "{e}");
        assert!(e.to_string().contains("base #7") && e.to_string().contains("8796093022208 bytes"), "{e}");
        let e = try_vec::<f64>(1 << 40, BaseId(3), "a copy of").unwrap_err();
        assert_eq!(
            e.to_string(),
            "out of memory: allocating 8796093022208 bytes for a copy of base #3 (1099511627776 elements of 8 bytes)"
        );
        // A size past the address space is the same error, with the exact byte count.
        let e = try_collect(std::iter::repeat_n(0u64, usize::MAX), BaseId(4), "values for").unwrap_err();
        assert!(e.to_string().contains("147573952589676412920 bytes") && e.to_string().contains("base #4"), "{e}");
        assert_eq!(try_collect([1, 2, 3].into_iter(), BaseId(1), "x").unwrap(), vec![1, 2, 3]);
        // Past what memory holds, refused up front (whatever the global allocator would do).
        assert!(!grantable(1 << 60));
        assert!(try_vec::<u64>(1 << 57, BaseId(2), "x").is_err());
        assert!(grantable(SYSTEM_BYTES) && grantable(100));
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
