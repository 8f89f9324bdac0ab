//! NumPy's basic indexing: [`SliceArg`], the [`s!`](crate::s) macro, and the arithmetic that turns
//! them into a view.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};
use vm_ir::view::{Shape, Strides, View};
use vm_ir::{Error, Result};

/// What to take along one axis; see [`Array::slice`](super::Array::slice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SliceArg {
    /// Python's `start:stop:step`: `None` bounds are the ends (which end depends on the sign of
    /// `step`), negative bounds count from the end, bounds outside the axis are clipped. `step`
    /// is not 0; a negative step walks backwards.
    Range {
        /// First index taken.
        start: Option<isize>,
        /// Index where the range stops (not taken).
        stop: Option<isize>,
        /// Distance between taken indices.
        step: isize,
    },
    /// A single index (negative counts from the end); the axis is dropped.
    Index(isize),
    /// A new axis of extent 1 (consumes no axis of the array).
    NewAxis,
}

/// Inserts an axis of extent 1 in [`s!`](crate::s): `s![.., NewAxis]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NewAxis;

impl SliceArg {
    /// The whole axis, `:`.
    pub const ALL: SliceArg = SliceArg::Range { start: None, stop: None, step: 1 };

    /// `start:stop:step`.
    pub fn range(start: Option<isize>, stop: Option<isize>, step: isize) -> SliceArg {
        SliceArg::Range { start, stop, step }
    }

    /// This range with step `step` (what `s![a..b;step]` writes).
    ///
    /// # Panics
    /// When `self` is not a range: a step makes no sense for an index or a new axis.
    pub fn with_step(self, step: isize) -> SliceArg {
        match self {
            SliceArg::Range { start, stop, .. } => SliceArg::Range { start, stop, step },
            other => panic!("a step ({step}) applies to a range, not to {other:?}"),
        }
    }
}

impl From<NewAxis> for SliceArg {
    fn from(_: NewAxis) -> SliceArg {
        SliceArg::NewAxis
    }
}

impl From<RangeFull> for SliceArg {
    fn from(_: RangeFull) -> SliceArg {
        SliceArg::ALL
    }
}

macro_rules! slice_from_int {
    ($($t:ty),*) => { $(
        impl From<$t> for SliceArg {
            fn from(i: $t) -> SliceArg {
                SliceArg::Index(to_isize(i))
            }
        }
        impl From<Range<$t>> for SliceArg {
            fn from(r: Range<$t>) -> SliceArg {
                SliceArg::range(Some(to_isize(r.start)), Some(to_isize(r.end)), 1)
            }
        }
        impl From<RangeFrom<$t>> for SliceArg {
            fn from(r: RangeFrom<$t>) -> SliceArg {
                SliceArg::range(Some(to_isize(r.start)), None, 1)
            }
        }
        impl From<RangeTo<$t>> for SliceArg {
            fn from(r: RangeTo<$t>) -> SliceArg {
                SliceArg::range(None, Some(to_isize(r.end)), 1)
            }
        }
        impl From<RangeInclusive<$t>> for SliceArg {
            fn from(r: RangeInclusive<$t>) -> SliceArg {
                SliceArg::range(Some(to_isize(*r.start())), inclusive_stop(to_isize(*r.end())), 1)
            }
        }
        impl From<RangeToInclusive<$t>> for SliceArg {
            fn from(r: RangeToInclusive<$t>) -> SliceArg {
                SliceArg::range(None, inclusive_stop(to_isize(r.end)), 1)
            }
        }
    )* };
}
slice_from_int!(i32, i64, isize, usize);

fn to_isize<T: TryInto<isize> + PartialOrd + Default>(x: T) -> isize {
    let negative = x < T::default();
    x.try_into().unwrap_or(if negative { isize::MIN } else { isize::MAX })
}

/// The exclusive stop of an inclusive range ending at `end` (`..=-1` runs to the end).
fn inclusive_stop(end: isize) -> Option<isize> {
    if end == -1 { None } else { Some(end.saturating_add(1)) }
}

/// A list of [`SliceArg`]s for [`Array::slice`](crate::Array::slice), in NumPy's
/// notation with Rust ranges: `s![1..-1, ..;2, 3, ..;-1, NewAxis]` is NumPy's
/// `[1:-1, ::2, 3, ::-1, np.newaxis]`. Each item is a range (`a..b`, `a..`, `..b`, `..`,
/// `a..=b`), optionally followed by `;step`, an integer index, or [`NewAxis`].
///
/// ```
/// use vm_frontend::{NewAxis, SliceArg};
/// use vm_frontend::s;
/// let args = s![1..-1, ..;-1, 2, NewAxis];
/// assert_eq!(args[1], SliceArg::range(None, None, -1));
/// assert_eq!(args[2], SliceArg::Index(2));
/// assert_eq!(args[3], SliceArg::NewAxis);
/// ```
#[macro_export]
macro_rules! s {
    () => { [$crate::SliceArg::ALL; 0] };
    (@acc [$($acc:expr,)*]) => {{
        // `1..-1` is a fine slice but an empty Rust range, which clippy would flag.
        #[allow(clippy::reversed_empty_ranges)]
        let args = [$($acc,)*];
        args
    }};
    (@acc [$($acc:expr,)*] $r:expr ; $step:expr) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::from($r).with_step($step),])
    };
    (@acc [$($acc:expr,)*] $r:expr ; $step:expr , $($rest:tt)*) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::from($r).with_step($step),] $($rest)*)
    };
    (@acc [$($acc:expr,)*] $r:expr) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::from($r),])
    };
    (@acc [$($acc:expr,)*] $r:expr , $($rest:tt)*) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::from($r),] $($rest)*)
    };
    ($($t:tt)+) => { $crate::s!(@acc [] $($t)+) };
}

/// Python's `slice.indices` + length: the first index and the number of indices taken by
/// `start:stop:step` on an axis of extent `n`.
pub(super) fn range_indices(
    start: Option<isize>,
    stop: Option<isize>,
    step: isize,
    n: usize,
) -> Result<(isize, usize)> {
    if step == 0 {
        return Err(Error::InvalidArgument("slice step cannot be zero".to_string()));
    }
    let n = n as isize;
    let (lower, upper) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let adjust = |i: isize| {
        if i < 0 { (i.saturating_add(n)).max(lower) } else { i.min(upper) }
    };
    let start = start.map_or(if step > 0 { lower } else { upper }, adjust);
    let stop = stop.map_or(if step > 0 { upper } else { lower }, adjust);
    let len = if step > 0 && start < stop {
        (stop - start - 1) / step + 1
    } else if step < 0 && stop < start {
        (start - stop - 1) / (-step) + 1
    } else {
        0
    };
    Ok((start, len as usize))
}

/// The view `args` select from `view` (see [`Array::slice`](super::Array::slice)).
pub(super) fn slice_view(view: &View, args: &[SliceArg]) -> Result<View> {
    let consumed = args.iter().filter(|a| **a != SliceArg::NewAxis).count();
    if consumed > view.ndim() {
        return Err(Error::InvalidArgument(format!(
            "too many indices: the array is {}-d but {consumed} were given",
            view.ndim()
        )));
    }
    let mut start = view.start;
    let mut shape = Shape::new();
    let mut stride = Strides::new();
    let mut d = 0;
    for &arg in args {
        match arg {
            SliceArg::NewAxis => {
                shape.push(1);
                stride.push(0);
            }
            SliceArg::Index(i) => {
                let n = view.shape[d];
                let j = if i < 0 { i.saturating_add(n as isize) } else { i };
                if j < 0 || j as usize >= n {
                    return Err(Error::InvalidArgument(format!(
                        "index {i} is out of range for axis {d} of extent {n}"
                    )));
                }
                start += j as i64 * view.stride[d];
                d += 1;
            }
            SliceArg::Range { start: s, stop: e, step } => {
                let (first, len) = range_indices(s, e, step, view.shape[d])?;
                if len > 0 {
                    start += first as i64 * view.stride[d];
                }
                shape.push(len);
                stride.push(view.stride[d] * step as i64);
                d += 1;
            }
        }
    }
    shape.extend_from_slice(&view.shape[d..]);
    stride.extend_from_slice(&view.stride[d..]);
    View::new(view.base, start, &shape, &stride)
}
