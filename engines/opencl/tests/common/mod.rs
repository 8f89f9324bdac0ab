//! The opencl engine's test fixtures: an opencl engine (interp as fallback) or a skip note, and
//! the comparison with interp under the test kit's rules ([`Agree`], [`Check`]).

#![allow(dead_code, unused_imports)]

use vm_ir::{Base, BaseId, Error, Instruction};
use vm_opencl::{Config, OpenClEngine};
use vm_runtime::{Component, HostMemory, Settings};

pub use vm_testkit::agree::{Agree, Check};
pub use vm_testkit::data::{Data, bytes, fill};
pub use vm_testkit::fixtures::{base, slices, whole};
pub use vm_testkit::rng::Rng;

/// An opencl engine over the first device with interp as its fallback child, or `None` (after
/// printing a note) when this machine has no OpenCL platform.
pub fn engine() -> Option<OpenClEngine> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("POCL_CACHE_DIR").is_none() {
            // SAFETY: every test thread passes this Once before touching OpenCL (or the
            // environment), so nothing reads the environment while it is written.
            unsafe { std::env::set_var("POCL_CACHE_DIR", std::env::temp_dir().join("vm-opencl-pocl-cache")) };
        }
    });
    let config = Config::from_settings(&Settings::default()).unwrap();
    match OpenClEngine::new(config, Some(Box::new(vm_interp::Interp::new(None)))) {
        Ok(e) => Some(e),
        Err(Error::Device(m)) => {
            eprintln!("skipping: no usable OpenCL device ({m})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Two host memories with the same `inputs` of [`Data::Wild`] values (any bits), from `seed`.
pub fn twin(inputs: &[Base], seed: u64) -> (HostMemory, HostMemory) {
    vm_testkit::data::twin(inputs, seed, Data::Wild)
}

/// [`compare_within`] with [`Agree::Exact`].
pub fn compare(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    outputs: &[Base],
    what: &str,
) {
    compare_within(cl, batch, a, b, outputs, what, Agree::Exact)
}

/// Runs `batch` on opencl (memory `a`) and interp (memory `b`), then syncs `outputs` in both
/// and asserts their contents agree as `agree` says; `what` names the case. Both failing with
/// the same error code counts as agreeing.
pub fn compare_within(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    outputs: &[Base],
    what: &str,
    agree: Agree,
) {
    let checks: Vec<Check> = outputs.iter().map(|&o| Check::whole(o, what.into(), agree)).collect();
    run_and_compare(cl, batch, a, b, &checks, true)
}

/// Runs `batch` on opencl (memory `a`) and interp (memory `b`), both of which must succeed,
/// then syncs the bases of `checks` in both and asserts each check's elements agree.
pub fn compare_checks(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    checks: &[Check],
) {
    run_and_compare(cl, batch, a, b, checks, false)
}

/// [`compare_checks`], where both engines failing with the same error code counts as agreeing
/// when `both_may_fail`.
fn run_and_compare(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    checks: &[Check],
    both_may_fail: bool,
) {
    let mut batch = batch.to_vec();
    let mut synced: Vec<BaseId> = Vec::new();
    for c in checks {
        if !synced.contains(&c.base.id) {
            synced.push(c.base.id);
            batch.push(Instruction::new(vm_ir::Opcode::Sync, [whole(c.base)]));
        }
    }
    let mut interp = vm_interp::Interp::new(None);
    let want = interp.execute(&batch, b);
    let got = cl.execute(&batch, a);
    let what = || checks.first().map_or("", |c| c.what.as_str());
    match (&want, &got) {
        (Ok(()), Ok(())) => {}
        (Err(x), Err(y)) if both_may_fail && x.code() == y.code() => return,
        _ => panic!("{}: interp {want:?}, opencl {got:?}", what()),
    }
    if let Err(e) = vm_testkit::agree::check(a, b, checks) {
        panic!("{e}");
    }
}

/// Frees `bases` in the engine, as a frontend would before reusing their ids.
pub fn release(cl: &mut OpenClEngine, mem: &mut HostMemory, bases: &[Base]) {
    let frees: Vec<Instruction> = bases.iter().map(|b| Instruction::new(vm_ir::Opcode::Free, [whole(*b)])).collect();
    cl.execute(&frees, mem).unwrap();
}
