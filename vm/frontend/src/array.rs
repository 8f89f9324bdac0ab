//! [`Array`]: a view of a base plus a shared handle that frees the base with its last array;
//! reading data back, and the view operations (slice, broadcast, reshape, transpose), which
//! record nothing.

use super::slice::{self, SliceArg};
use super::{ScalarElement, Vm, ops};
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;
use vm_ir::dtype::{DType, Element};
use vm_ir::instr::{Instruction, visits_each_element_once};
use vm_ir::opcode::Opcode;
use vm_ir::view::{Base, Shape, Strides, View, row_major_strides};
use vm_ir::{Error, Result};

/// Owns one base: dropping the last handle frees it (a `free` instruction).
pub(super) struct BaseHandle {
    pub(super) vm: Vm,
    pub(super) base: Base,
}

impl Drop for BaseHandle {
    fn drop(&mut self) {
        self.vm.release(self.base.id);
    }
}

/// An n-dimensional array of `T`: a view (start, shape, strides) of a base owned by a [`Vm`].
///
/// Cloning makes another view of the same data (a reference count), not a copy; use
/// [`Array::copy`] for a copy. The base is freed when its last array is dropped. See the
/// [module documentation](super) for the semantics and the error policy.
pub struct Array<T: Element> {
    pub(super) handle: Rc<BaseHandle>,
    pub(super) view: View,
    _elem: PhantomData<T>,
}

impl<T: Element> Clone for Array<T> {
    fn clone(&self) -> Self {
        Array { handle: Rc::clone(&self.handle), view: self.view.clone(), _elem: PhantomData }
    }
}

impl<T: Element> fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Array")
            .field("dtype", &T::DTYPE)
            .field("shape", &&self.view.shape[..])
            .field("view", &format_args!("{}", self.view))
            .finish()
    }
}

/// An operand of an element-wise operation: an array, or a constant broadcast to any shape.
#[derive(Debug, Clone)]
pub enum ArrayOrScalar<T: Element> {
    /// An array (broadcast to the operation's shape).
    Array(Array<T>),
    /// A constant.
    Scalar(T),
}

/// What binary methods accept on the right: `&Array<T>`, `Array<T>`, or a value of `T`.
pub trait IntoOperand<T: Element> {
    /// The operand.
    fn into_operand(self) -> ArrayOrScalar<T>;
}

impl<T: Element> IntoOperand<T> for Array<T> {
    fn into_operand(self) -> ArrayOrScalar<T> {
        ArrayOrScalar::Array(self)
    }
}

impl<T: Element> IntoOperand<T> for &Array<T> {
    fn into_operand(self) -> ArrayOrScalar<T> {
        ArrayOrScalar::Array(self.clone())
    }
}

impl<T: Element> IntoOperand<T> for ArrayOrScalar<T> {
    fn into_operand(self) -> ArrayOrScalar<T> {
        self
    }
}

impl<T: ScalarElement> IntoOperand<T> for T {
    fn into_operand(self) -> ArrayOrScalar<T> {
        ArrayOrScalar::Scalar(self)
    }
}

/// The native-endian bytes of `data`, for a host write.
pub(super) fn to_bytes<T: ScalarElement>(data: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(data));
    for &x in data {
        let x = x.into_scalar();
        out.extend_from_slice(&x.to_ne_bytes()[..x.dtype().size()]);
    }
    out
}

/// The elements of `view` in row-major order, read from the base's host data `data`, in a
/// `Vec` allocated fallibly: a broadcast view may hold far more elements than its base.
pub(super) fn gather_view<T: Copy>(data: &[T], view: &View) -> Result<Vec<T>> {
    let n = view.nelem();
    let mut out = vm_runtime::memory::try_vec(n, view.base.id, "a copy of a view of")?;
    if n == 0 {
        return Ok(out);
    }
    if view.is_contiguous() {
        let s = view.start as usize;
        out.extend_from_slice(&data[s..s + n]);
        return Ok(out);
    }
    out.extend(view.offsets().map(|o| data[o as usize]));
    Ok(out)
}

/// `axis` (negative counts from the end) as an index below `ndim`.
pub(super) fn normalize_axis(axis: isize, ndim: usize) -> Result<usize> {
    let a = if axis < 0 { axis + ndim as isize } else { axis };
    if a < 0 || a as usize >= ndim {
        return Err(Error::InvalidArgument(format!("axis {axis} is out of range for a {ndim}-d array")));
    }
    Ok(a as usize)
}

/// `view` stretched to `shape` by NumPy's broadcasting rules (stride 0 on stretched axes).
pub(super) fn broadcast_view(view: &View, shape: &[usize]) -> Result<View> {
    if view.shape[..] == *shape {
        return Ok(view.clone());
    }
    let bad = || {
        Error::InvalidArgument(format!("cannot broadcast an array of shape {:?} to shape {shape:?}", &view.shape[..]))
    };
    if view.ndim() > shape.len() {
        return Err(bad());
    }
    let lead = shape.len() - view.ndim();
    let mut stride = Strides::from_elem(0, shape.len());
    for (d, (&n, &s)) in view.shape.iter().zip(&view.stride).enumerate() {
        let want = shape[lead + d];
        if n == want {
            stride[lead + d] = s;
        } else if n != 1 {
            return Err(bad());
        }
    }
    View::new(view.base, view.start, shape, &stride)
}

/// The shape all `shapes` broadcast to (NumPy's rules), or an error naming them.
pub(super) fn broadcast_shapes<'a>(shapes: impl Iterator<Item = &'a [usize]> + Clone) -> Result<Shape> {
    let ndim = shapes.clone().map(<[usize]>::len).max().unwrap_or(0);
    let mut out = Shape::from_elem(1, ndim);
    for s in shapes.clone() {
        let lead = ndim - s.len();
        for (d, &n) in s.iter().enumerate() {
            let o = &mut out[lead + d];
            if *o == 1 {
                *o = n;
            } else if n != 1 && n != *o {
                let all: Vec<&[usize]> = shapes.collect();
                return Err(Error::InvalidArgument(format!(
                    "operands could not be broadcast together with shapes {}",
                    all.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    Ok(out)
}

impl<T: Element> Array<T> {
    pub(super) fn from_parts(handle: Rc<BaseHandle>, view: View) -> Array<T> {
        debug_assert_eq!(view.base, handle.base);
        Array { handle, view, _elem: PhantomData }
    }

    /// Another view of the same base.
    pub(super) fn with_view(&self, view: View) -> Array<T> {
        Array::from_parts(Rc::clone(&self.handle), view)
    }

    /// The VM this array belongs to.
    pub fn vm(&self) -> &Vm {
        &self.handle.vm
    }

    /// Extent of each dimension, outermost first (empty for a 0-d array).
    pub fn shape(&self) -> &[usize] {
        &self.view.shape
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.view.ndim()
    }

    /// Number of elements (the product of the shape; 1 for a 0-d array). Note: NumPy's `len`
    /// is the first extent; this is its `size`.
    pub fn len(&self) -> usize {
        self.view.nelem()
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The view of the base this array is (for building instructions by hand).
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The base this array views.
    pub fn base(&self) -> Base {
        self.view.base
    }

    /// True when the array is a contiguous row-major run of its base.
    pub fn is_contiguous(&self) -> bool {
        self.view.is_contiguous()
    }

    /// The elements in row-major order. Makes the base's host copy current first (a `sync`,
    /// which runs all recorded work), unless it already is. Reports a deferred error first.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let vm = self.vm();
        vm.check_error()?;
        let mut rt = vm.rt();
        let id = self.view.base.id;
        if rt.host_slice::<T>(id).is_err() {
            rt.sync(id)?;
        }
        gather_view(rt.host_slice::<T>(id)?, &self.view)
    }

    /// The one element of a 0-d (or one-element) array; see [`Array::to_vec`].
    pub fn to_scalar(&self) -> Result<T> {
        if self.len() != 1 {
            return Err(Error::InvalidArgument(format!(
                "to_scalar needs an array of one element, this one has shape {:?}",
                self.shape()
            )));
        }
        Ok(self.to_vec()?[0])
    }

    /// A view selected by one [`SliceArg`] per leading axis, as NumPy's basic indexing: ranges
    /// with steps (negative steps walk backwards; negative bounds count from the end; bounds
    /// are clipped), integer indices (which drop the axis; out of range is an error), and
    /// [`NewAxis`](super::NewAxis). Axes not named are taken whole. Use the [`s!`](crate::s)
    /// macro: `a.slice(s![1..-1, ..;2, 3])`.
    pub fn slice(&self, args: impl AsRef<[SliceArg]>) -> Result<Array<T>> {
        Ok(self.with_view(slice::slice_view(&self.view, args.as_ref())?))
    }

    /// The (n-1)-d view at `index` along `axis` (both may be negative).
    pub fn index_axis(&self, axis: isize, index: isize) -> Result<Array<T>> {
        let axis = normalize_axis(axis, self.ndim())?;
        let mut args = vec![SliceArg::ALL; axis];
        args.push(SliceArg::Index(index));
        self.slice(args)
    }

    /// A view stretched to `shape` by NumPy's broadcasting rules (stride 0 on stretched axes).
    /// Such a view cannot be written.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array<T>> {
        Ok(self.with_view(broadcast_view(&self.view, shape)?))
    }

    /// A view of the same elements with another shape of as many elements. Only contiguous
    /// arrays can be reshaped (reshape a [`copy`](Array::copy) otherwise).
    pub fn reshape(&self, shape: &[usize]) -> Result<Array<T>> {
        let n = shape.iter().try_fold(1usize, |n, &e| n.checked_mul(e));
        if n != Some(self.len()) {
            return Err(Error::InvalidArgument(format!(
                "cannot reshape an array of shape {:?} ({} elements) into shape {shape:?}",
                self.shape(),
                self.len()
            )));
        }
        if !self.is_contiguous() {
            return Err(Error::InvalidArgument(format!(
                "cannot reshape a non-contiguous view ({}); reshape a copy",
                self.view
            )));
        }
        let view = View::new(self.view.base, self.view.start, shape, &row_major_strides(shape))?;
        Ok(self.with_view(view))
    }

    /// The view with its axes reversed (a matrix transpose for 2-d arrays).
    pub fn transpose(&self) -> Array<T> {
        let mut view = self.view.clone();
        view.shape.reverse();
        view.stride.reverse();
        self.with_view(view)
    }

    /// The view with its axes permuted: axis `i` of the result is axis `axes[i]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<Array<T>> {
        let nd = self.ndim();
        let mut seen = vec![false; nd];
        if axes.len() != nd || axes.iter().any(|&a| a >= nd || std::mem::replace(&mut seen[a], true)) {
            return Err(Error::InvalidArgument(format!("{axes:?} is not a permutation of the axes of a {nd}-d array")));
        }
        let mut view = self.view.clone();
        view.shape = axes.iter().map(|&a| self.view.shape[a]).collect();
        view.stride = axes.iter().map(|&a| self.view.stride[a]).collect();
        Ok(self.with_view(view))
    }

    /// The view with a new axis of extent 1 inserted at position `axis` (`0..=ndim`; negative
    /// counts from the end, `-1` appending, as NumPy's `expand_dims`).
    pub fn new_axis(&self, axis: isize) -> Result<Array<T>> {
        let nd = self.ndim();
        let pos = normalize_axis(axis, nd + 1)?;
        if nd + 1 > vm_ir::view::MAX_NDIM {
            return Err(Error::InvalidArgument(format!("at most {} dimensions", vm_ir::view::MAX_NDIM)));
        }
        let mut view = self.view.clone();
        view.shape.insert(pos, 1);
        view.stride.insert(pos, 0);
        Ok(self.with_view(view))
    }

    /// The main diagonal of a 2-d array, as a 1-d view of the same base (so it can be written:
    /// `r.diagonal()?.fill(1.0)?`).
    pub fn diagonal(&self) -> Result<Array<T>> {
        if self.ndim() != 2 {
            return Err(Error::InvalidArgument(format!("diagonal needs a 2-d array, not shape {:?}", self.shape())));
        }
        let n = self.shape()[0].min(self.shape()[1]);
        let view = View::new(self.view.base, self.view.start, &[n], &[self.view.stride[0] + self.view.stride[1]])?;
        Ok(self.with_view(view))
    }

    /// An error unless this view can be written (it visits no element twice).
    pub(super) fn ensure_writable(&self) -> Result<()> {
        if visits_each_element_once(&self.view) {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "cannot write into view {}: it visits some element more than once (a broadcast view)",
                self.view
            )))
        }
    }

    /// This array as an input of an element-wise operation.
    pub(super) fn src(&self) -> ops::Src<'_> {
        ops::Src::View(&self.view)
    }

    /// A converted copy of the data as `U` (`identity`, with the VM's cast rules: integers
    /// wrap, floats truncate toward zero and saturate, NaN becomes 0, `x != 0` for `bool`).
    pub fn cast<U: Element>(&self) -> Array<U> {
        ops::must(ops::elementwise(self.vm(), Opcode::Identity, &[self.src()]), "cast")
    }

    /// A copy of the data in a new, contiguous base.
    pub fn copy(&self) -> Array<T> {
        self.cast::<T>()
    }
}

impl<T: ScalarElement> Array<T> {
    /// Writes `src` (an array broadcast to this view's shape, or a value) into this view, and
    /// so into its base (`identity`): how `center[:] = work` is written. Fails when `src` does
    /// not broadcast to this shape, or when this view is a broadcast view.
    pub fn assign(&self, src: impl IntoOperand<T>) -> Result<()> {
        self.ensure_writable()?;
        let src = src.into_operand();
        let input = match &src {
            ArrayOrScalar::Array(a) => {
                self.vm().ensure_same(a.vm())?;
                broadcast_view(&a.view, self.shape())?.into()
            }
            ArrayOrScalar::Scalar(x) => x.into_scalar().into(),
        };
        self.vm().emit(Instruction::new(Opcode::Identity, [self.view.clone().into(), input]));
        Ok(())
    }

    /// Writes `value` into every element of this view (see [`Array::assign`]).
    pub fn fill(&self, value: T) -> Result<()> {
        self.assign(ArrayOrScalar::Scalar(value))
    }
}
