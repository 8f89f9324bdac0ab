//! What every VM program is built from (each benchmark's `vm.rs`): the element types
//! ([`Elem`]), the read-back of a checksum ([`read`]) and the timed region ([`timed`]).

use super::real::Real;
use crate::Measured;
use std::time::Instant;
use vm_frontend::{Array, Float, Vm};
use vm_ir::Result;

/// The element types the suite runs in: the frontend's floats with [`Real`]'s helpers, and the
/// constant-on-the-left operators that generic code cannot name otherwise.
pub trait Elem: Float + Real {
    /// `self - a`, one `subtract` instruction with a constant first operand.
    fn minus(self, a: &Array<Self>) -> Array<Self>;
    /// `self / a`, one `divide` instruction with a constant first operand.
    fn over(self, a: &Array<Self>) -> Array<Self>;
}

impl Elem for f64 {
    fn minus(self, a: &Array<f64>) -> Array<f64> {
        self - a
    }
    fn over(self, a: &Array<f64>) -> Array<f64> {
        self / a
    }
}

impl Elem for f32 {
    fn minus(self, a: &Array<f32>) -> Array<f32> {
        self - a
    }
    fn over(self, a: &Array<f32>) -> Array<f32> {
        self / a
    }
}

/// Reads a 0-d (or one-element) array back as `f64`: runs all recorded work.
pub fn read<T: Elem>(a: &Array<T>) -> Result<f64> {
    Ok(a.to_scalar()?.to_f64())
}

/// Times `body` after flushing the setup recorded so far; `body` returns the checksum. While the
/// trace records, the timed region is a span of category [`crate::split::TIMED`].
pub fn timed(vm: &Vm, body: impl FnOnce() -> Result<f64>) -> Result<Measured> {
    vm.flush()?;
    let start = Instant::now();
    let checksum = body()?;
    let seconds = start.elapsed().as_secs_f64();
    vm_runtime::trace::record(start, crate::split::TIMED, || "timed region", Vec::new);
    Ok(Measured { seconds, checksum })
}
