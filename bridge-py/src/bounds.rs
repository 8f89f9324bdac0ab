//! Known ranges of integer bases' values, so that indexing with an array whose range is known
//! (`x[perm[i:i + b]]` with `perm` a permutation, `x[np.arange(...)]`) checks its bounds without
//! computing the index array: a check of unknown values must run the queue (a sync per access,
//! which also cuts the batch).
//!
//! The functions that know their results' range record it for the result's base
//! (`_set_bounds`); every write to a base forgets it: each instruction queued forgets its first
//! operand's base (the output of every instruction that writes), and so do host stores and the
//! freeing of the base. The range is a promise about values, used only to skip an eager check:
//! the engines check every gather's positions again when they run it.

use crate::array::NdArray;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use vm_ir::BaseId;

/// The ranges known, by base.
static KNOWN: LazyLock<Mutex<HashMap<BaseId, (i64, i64)>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// True when a range may be known (so that forgetting costs nothing until one is).
static ANY: AtomicBool = AtomicBool::new(false);

/// The most ranges kept: past it the oldest are dropped (they only save checks).
const MAX_KNOWN: usize = 4096;

fn known() -> std::sync::MutexGuard<'static, HashMap<BaseId, (i64, i64)>> {
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Forgets the range of base `id` (it is written or freed).
pub fn forget(id: BaseId) {
    if ANY.load(Ordering::Relaxed) {
        known().remove(&id);
    }
}

/// Records that every value of `a`'s base lies in `lo..=hi` (only for an array that is all of
/// its base: a part says nothing about the rest).
#[pyfunction]
fn _set_bounds(a: &Bound<'_, NdArray>, lo: i64, hi: i64) {
    let v = &a.get().view();
    if v.is_whole_base() && v.dtype().is_integer() {
        record(v.base.id, lo, hi);
    }
}

/// Records that every value of integer base `id` lies in `lo..=hi`.
pub fn record(id: BaseId, lo: i64, hi: i64) {
    let mut k = known();
    if k.len() >= MAX_KNOWN {
        k.clear();
    }
    k.insert(id, (lo, hi));
    ANY.store(true, Ordering::Relaxed);
}

/// The range known for the values of `a`'s base (so of `a`), if any.
#[pyfunction]
fn _bounds(a: &Bound<'_, NdArray>) -> Option<(i64, i64)> {
    if !ANY.load(Ordering::Relaxed) {
        return None;
    }
    known().get(&a.get().view().base.id).copied()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(_bounds, m)?)?;
    Ok(())
}
