//! # The Rust frontend: a NumPy-like array API that records vector bytecode
//!
//! A [`Vm`] wraps a [`Runtime`]; an [`Array`] is a view of a base that the VM allocates. Every
//! operation on arrays records instructions (nothing runs until a batch is flushed, a result is
//! read with [`Array::to_vec`], or [`Vm::flush`] is called), so a time-stepping loop records one
//! kernel's worth of bytecode per iteration and the engine below fuses it.
//!
//! ```
//! use vm_frontend::Vm;
//! use vm_frontend::s;
//! # fn engine() -> Box<dyn vm_runtime::Component> { Box::new(vm_interp::Interp::default()) }
//!
//! let vm = Vm::from_stack(engine())?; // any stack: here the reference engine, `interp`
//! // The heat equation on a 6 x 6 grid: boundary rows/columns fixed, interior relaxed.
//! let grid = vm.full::<f64>(&[6, 6], -273.15)?;
//! grid.slice(s![0, ..])?.fill(40.0)?;
//! grid.slice(s![1..-1, 1..-1])?.fill(0.0)?;
//! let center = grid.slice(s![1..-1, 1..-1])?;
//! let (north, south) = (grid.slice(s![..-2, 1..-1])?, grid.slice(s![2.., 1..-1])?);
//! let (west, east) = (grid.slice(s![1..-1, ..-2])?, grid.slice(s![1..-1, 2..])?);
//! for _ in 0..10 {
//!     let work = (&center + &north + &south + &east + &west) * 0.2;
//!     center.assign(&work)?; // writes through to `grid`
//! }
//! let total: f64 = grid.sum_all().to_scalar()?;
//! let inner = center.to_vec()?;
//! assert!(inner.iter().all(|&t| -273.15 < t && t < 40.0));
//! println!("{total} {inner:?}");
//! # Ok::<(), vm_ir::Error>(())
//! ```
//!
//! ## Semantics
//!
//! - **Views and copies.** [`Array::slice`], [`Array::transpose`], [`Array::broadcast_to`],
//!   [`Array::reshape`] and `clone()` make new views of the same base: writes through one
//!   ([`Array::assign`], [`Array::fill`], `+=`, [`Array::scatter`]) are seen by all. Every
//!   operation that computes (`&a + &b`, `a.sqrt()`, `a.sum(0)`, `a.cast()`, `a.copy()`) makes a
//!   new temporary base. A base is freed (a `free` instruction) when the last array viewing it
//!   is dropped, so loops leave no growing state behind.
//! - **Broadcasting** follows NumPy: shapes are aligned on the right, and extents of 1 (and
//!   missing leading axes) stretch to the other operand's. The frontend turns stretched axes
//!   into stride-0 views, as the bytecode requires. Constants (`&a * 0.2`) become constant
//!   operands. Operands share the dtype `T`; convert with [`Array::cast`].
//! - **Dtype rules** are in the types: arithmetic needs [`Numeric`] elements, `/` and the math
//!   functions [`Float`], bitwise operations [`Bits`], shifts [`Integer`].
//! - **Axes** are `isize` and may be negative (counted from the end, as in NumPy).
//! - **Division and remainder** are NumPy's: `/` is true division (floats only; cast integers
//!   first, or use [`Array::floor_divide`]), and `%` is NumPy's `remainder`, whose sign follows
//!   the divisor (`-7 % 3 == 2`); [`Array::fmod`] is C's, whose sign follows the dividend.
//!
//! ## Errors: the policy
//!
//! - Methods whose arguments can be wrong (shapes that do not broadcast, an axis or index out
//!   of range, a reshape of a non-contiguous view, a write into a broadcast view, arrays of two
//!   different VMs, a shape too large to allocate) return [`Result`], checked before anything
//!   is recorded.
//! - Operators (`+ - * / %`, `& | ^ << >>`, unary `-` and `!`, and the `op=` forms) cannot
//!   return a `Result`: like `ndarray`, they **panic** with a clear message (at the caller's
//!   line) when operands do not broadcast. Their fallible twins are [`Array::try_add`],
//!   [`Array::try_sub`], [`Array::try_mul`], [`Array::try_div`], [`Array::try_rem`] and the
//!   named methods ([`Array::bitwise_and`], ...).
//! - Element-wise methods of one array (`a.sqrt()`, `a.cast()`, `a.sum_all()`) cannot fail on
//!   their arguments and return the array directly; like `Vec`, they panic only when the result
//!   would exceed the address space.
//! - Errors that arise when recorded work is submitted or executed (an engine failure, a
//!   gather index out of range) happen later, when a batch runs.
//!   They are **deferred**: the VM keeps the first one and reports it at the next
//!   synchronisation point ([`Array::to_vec`], [`Array::to_scalar`], [`Vm::flush`]) or to
//!   [`Vm::take_error`]. Freeing a base on drop never panics; its errors are deferred likewise.
//!
//! ## Random numbers
//!
//! [`Vm::random`] draws from the counter-based Philox stream of a seed. The VM keeps **one
//! counter per seed**: consecutive draws with the same seed continue that seed's stream (the
//! second draw of 1000 numbers gets counters 1000..2000), so they never repeat, and draws with
//! one seed are unaffected by draws with other seeds. [`Vm::random_at`] names the offset
//! explicitly and leaves the counters alone.

mod array;
mod ops;
mod slice;
#[cfg(test)]
mod tests;

pub use array::{Array, ArrayOrScalar, IntoOperand};
pub use slice::{NewAxis, SliceArg};
pub use vm_ir::scalar::ScalarElement;

use array::BaseHandle;
use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use vm_ir::dtype::Element;
use vm_ir::instr::Instruction;
use vm_ir::opcode::Opcode;
use vm_ir::scalar::Scalar;
use vm_ir::view::{BaseId, View};
use vm_ir::{Error, Result};
use vm_runtime::component::Component;
use vm_runtime::runtime::{Runtime, RuntimeOptions, RuntimeStats};

mod sealed {
    /// Keeps the dtype marker traits closed: they describe the VM's dtypes, not user types.
    pub trait Sealed {}
}

/// Element types with arithmetic: every dtype but `bool`.
pub trait Numeric: ScalarElement + sealed::Sealed {}
/// Floating-point element types (`f32`, `f64`): true division and the math functions.
pub trait Float: Numeric {}
/// Integer element types (signed and unsigned): shifts.
pub trait Integer: Numeric + Bits {}
/// Element types with bitwise operations: the integers and `bool`.
pub trait Bits: ScalarElement + sealed::Sealed {}

macro_rules! mark {
    ($tr:path: $($t:ty),*) => { $( impl $tr for $t {} )* };
}
mark!(sealed::Sealed: bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
mark!(Numeric: i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
mark!(Float: f32, f64);
mark!(Integer: i8, i16, i32, i64, u8, u16, u32, u64);
mark!(Bits: bool, i8, i16, i32, i64, u8, u16, u32, u64);

/// A handle to a VM: a runtime and the frontend's bookkeeping. Cloning is cheap (a reference
/// count); every clone and every [`Array`] refers to the same VM. Single-threaded.
#[derive(Clone)]
pub struct Vm {
    inner: Rc<Inner>,
}

struct Inner {
    runtime: RefCell<Runtime>,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// The first deferred error not yet reported.
    error: Option<Error>,
    /// Bases whose last array was dropped while the runtime was busy; freed at the next use.
    deferred_frees: Vec<BaseId>,
    /// The next unused counter of each seed's random stream.
    random_offsets: HashMap<u64, u64>,
}

impl Vm {
    /// A VM driving `runtime`.
    pub fn new(runtime: Runtime) -> Vm {
        Vm { inner: Rc::new(Inner { runtime: RefCell::new(runtime), state: RefCell::default() }) }
    }

    /// A VM over a built stack, with [`RuntimeOptions::from_env`] of the process environment
    /// (an error names a bad `VM_DIRECT`).
    pub fn from_stack(stack: Box<dyn Component>) -> Result<Vm> {
        Ok(Vm::new(Runtime::new(stack, RuntimeOptions::from_env(&vm_runtime::config::Env::process())?)))
    }

    /// An array of `shape` filled with zeros.
    pub fn zeros<T: ScalarElement>(&self, shape: &[usize]) -> Result<Array<T>> {
        self.filled(shape, Scalar::I64(0).cast(T::DTYPE))
    }

    /// An array of `shape` filled with ones (`true` for `bool`).
    pub fn ones<T: ScalarElement>(&self, shape: &[usize]) -> Result<Array<T>> {
        self.filled(shape, Scalar::I64(1).cast(T::DTYPE))
    }

    /// An array of `shape` filled with `value` (`&[]` for a 0-d array).
    pub fn full<T: ScalarElement>(&self, shape: &[usize], value: T) -> Result<Array<T>> {
        self.filled(shape, value.into_scalar())
    }

    fn filled<T: Element>(&self, shape: &[usize], value: Scalar) -> Result<Array<T>> {
        let out = self.alloc::<T>(shape)?;
        self.emit(Instruction::new(Opcode::Identity, [out.view.clone().into(), value.into()]));
        Ok(out)
    }

    /// An array of `shape` holding `data` in row-major order (a host write: pending work is
    /// flushed first, and engines are told to drop copies of their own).
    pub fn from_slice<T: ScalarElement>(&self, shape: &[usize], data: &[T]) -> Result<Array<T>> {
        let out = self.alloc::<T>(shape)?;
        if data.len() != out.len() {
            return Err(Error::InvalidArgument(format!(
                "{} values given for an array of shape {shape:?} ({} elements)",
                data.len(),
                out.len()
            )));
        }
        let bytes = array::to_bytes(data);
        self.rt().write(out.view.base.id, 0, &bytes)?;
        Ok(out)
    }

    /// The 1-d array `[0, 1, ..., n-1]` of `T` (`range`).
    pub fn arange<T: ScalarElement>(&self, n: usize) -> Result<Array<T>> {
        let out = self.alloc::<T>(&[n])?;
        self.emit(Instruction::new(Opcode::Range, [out.view.clone().into()]));
        Ok(out)
    }

    /// `n` evenly spaced values from `start` to `stop`, both included (NumPy's `linspace`:
    /// `start + i * step` with the last value exactly `stop`).
    pub fn linspace<T: Float>(&self, start: T, stop: T, n: usize) -> Result<Array<T>> {
        let range = self.arange::<T>(n)?;
        let (a, b): (f64, f64) = (start.cast(), stop.cast());
        let step = if n > 1 { (b - a) / (n - 1) as f64 } else { 0.0 };
        let out = range.with_const(Opcode::Multiply, Scalar::F64(step)).with_const(Opcode::Add, Scalar::F64(a));
        if n > 1 {
            out.slice([SliceArg::Index(-1)])?.fill(stop)?;
        }
        Ok(out)
    }

    /// An array of `shape` of random numbers from the stream of `seed` (`random`): floats
    /// uniform in [0, 1), integers uniform over their range, `bool` fair coin flips. Continues
    /// the seed's stream where the previous draw with `seed` stopped (see the module doc).
    pub fn random<T: ScalarElement>(&self, shape: &[usize], seed: u64) -> Result<Array<T>> {
        let out = self.alloc::<T>(shape)?;
        let offset = {
            let mut state = self.inner.state.borrow_mut();
            let next = state.random_offsets.entry(seed).or_insert(0);
            let offset = *next;
            *next = next.wrapping_add(out.len() as u64);
            offset
        };
        self.emit_random(&out, seed, offset);
        Ok(out)
    }

    /// An array of `shape` of random numbers from counters `offset..` of the stream of `seed`.
    /// Does not move the seed's counter used by [`Vm::random`].
    pub fn random_at<T: ScalarElement>(&self, shape: &[usize], seed: u64, offset: u64) -> Result<Array<T>> {
        let out = self.alloc::<T>(shape)?;
        self.emit_random(&out, seed, offset);
        Ok(out)
    }

    fn emit_random<T: Element>(&self, out: &Array<T>, seed: u64, offset: u64) {
        let ops = [out.view.clone().into(), Scalar::U64(seed).into(), Scalar::U64(offset).into()];
        self.emit(Instruction::new(Opcode::Random, ops));
    }

    /// Runs all recorded work now. Returns the first deferred error, if one is waiting (see the
    /// module doc), else the error of this flush.
    pub fn flush(&self) -> Result<()> {
        let flushed = self.rt().flush();
        self.check_error()?;
        flushed
    }

    /// Takes the first deferred error (an error of work submitted or executed earlier, or of a
    /// free on drop), if there is one.
    pub fn take_error(&self) -> Option<Error> {
        self.inner.state.borrow_mut().error.take()
    }

    /// Registers the extension method `name` with the stack (see
    /// [`Runtime::register_extension`]). Fails when no component implements it.
    pub fn register_extension(&self, name: &str) -> Result<Opcode> {
        self.rt().register_extension(name)
    }

    /// The runtime, for tests and low-level use. Do not hold the guard across other calls on
    /// this VM or its arrays: they need the runtime too and panic while it is borrowed.
    pub fn runtime(&self) -> RefMut<'_, Runtime> {
        self.rt()
    }

    /// The runtime back, when no other handle of this VM and no array is alive (else the VM).
    /// Frees of dropped arrays are submitted first; pending work is not flushed.
    pub fn into_runtime(self) -> std::result::Result<Runtime, Vm> {
        drop(self.rt());
        match Rc::try_unwrap(self.inner) {
            Ok(inner) => Ok(inner.runtime.into_inner()),
            Err(inner) => Err(Vm { inner }),
        }
    }

    /// Flushes and shuts the stack down. Fails when arrays or other handles of this VM are still
    /// alive, or with the first deferred error.
    pub fn shutdown(self) -> Result<()> {
        let error = self.take_error();
        let runtime = self.into_runtime().map_err(|vm| {
            Error::InvalidArgument(format!(
                "cannot shut the VM down: {} other handles or arrays are alive",
                Rc::strong_count(&vm.inner) - 1
            ))
        })?;
        let shut = runtime.shutdown();
        match error {
            Some(e) => Err(e),
            None => shut,
        }
    }

    /// The runtime's counters.
    pub fn stats(&self) -> RuntimeStats {
        self.rt().stats()
    }

    /// Number of live bases (arrays not yet freed, including those whose free is pending).
    pub fn live_bases(&self) -> usize {
        self.rt().live_bases()
    }

    /// True when `self` and `other` are handles of the same VM.
    pub fn same_vm(&self, other: &Vm) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    // ---- crate-internal machinery ----

    /// The runtime, after submitting frees deferred by drops.
    fn rt(&self) -> RefMut<'_, Runtime> {
        let Ok(mut rt) = self.inner.runtime.try_borrow_mut() else {
            panic!("the VM's runtime is borrowed: a guard from `Vm::runtime()` is still alive");
        };
        let frees = match self.inner.state.try_borrow_mut() {
            Ok(mut s) if !s.deferred_frees.is_empty() => std::mem::take(&mut s.deferred_frees),
            _ => Vec::new(),
        };
        for id in frees {
            if let Err(e) = rt.free(id) {
                self.record(e);
            }
        }
        rt
    }

    /// Keeps `e` as the deferred error unless one is already waiting. Never panics.
    fn record(&self, e: Error) {
        if let Ok(mut s) = self.inner.state.try_borrow_mut() {
            s.error.get_or_insert(e);
        }
    }

    /// Returns the deferred error, if any, taking it.
    fn check_error(&self) -> Result<()> {
        match self.take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Submits one instruction; errors are deferred.
    fn emit(&self, instr: Instruction) {
        let result = {
            let mut rt = self.rt();
            rt.submit_one(instr).and_then(|()| rt.flush_if_wanted())
        };
        if let Err(e) = result {
            self.record(e);
        }
    }

    /// A new base holding a contiguous array of `shape`.
    fn alloc<T: Element>(&self, shape: &[usize]) -> Result<Array<T>> {
        let nelem = shape
            .iter()
            .try_fold(1usize, |n, &e| n.checked_mul(e))
            .ok_or_else(|| Error::InvalidArgument(format!("an array of shape {shape:?} has too many elements")))?;
        if shape.len() > vm_ir::view::MAX_NDIM {
            return Err(Error::InvalidArgument(format!(
                "an array of {} dimensions; at most {} are allowed",
                shape.len(),
                vm_ir::view::MAX_NDIM
            )));
        }
        let base = self.rt().new_base(T::DTYPE, nelem as u64)?;
        let handle = Rc::new(BaseHandle { vm: self.clone(), base });
        let view = View::row_major(base, shape);
        Ok(Array::from_parts(handle, view))
    }

    /// Frees base `id`, now or (when the runtime is busy, or the thread is panicking) at the
    /// next use of the runtime. Called from `Drop`: never panics.
    fn release(&self, id: BaseId) {
        if !std::thread::panicking()
            && let Ok(mut rt) = self.inner.runtime.try_borrow_mut()
        {
            if let Err(e) = rt.free(id) {
                drop(rt);
                self.record(e);
            }
            return;
        }
        if let Ok(mut s) = self.inner.state.try_borrow_mut() {
            s.deferred_frees.push(id);
        }
    }

    /// An error unless `other` is this VM.
    fn ensure_same(&self, other: &Vm) -> Result<()> {
        if self.same_vm(other) {
            Ok(())
        } else {
            Err(Error::InvalidArgument("arrays of two different VMs cannot be combined".to_string()))
        }
    }
}

impl fmt::Debug for Vm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Vm");
        if let Ok(rt) = self.inner.runtime.try_borrow() {
            d.field("live_bases", &rt.live_bases()).field("stats", &rt.stats());
        }
        if let Ok(s) = self.inner.state.try_borrow() {
            d.field("error", &s.error);
        }
        d.finish_non_exhaustive()
    }
}
