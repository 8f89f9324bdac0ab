//! The peers: the suite written for numba, JAX and numexpr (`benches/peers/peer_<tool>.py`), the
//! tools a user would pick instead of the VM, each run with the project's Python when it can
//! import the tool. A peer reuses the NumPy baseline's inputs and driver, so its checksum is
//! compared with NumPy's where the VM's is not comparable (NumPy's random inputs), unless the peer
//! draws random numbers of its own (it says so: an `INPUTS own` line).

use super::{bench_dir, numpy, repetitions, stdout_of};
use crate::size::Size;
use crate::{Measured, Precision};
use std::process::Command;

/// A peer tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// numba: `@njit(parallel=True)` fused loops.
    Numba,
    /// JAX: `jax.jit` with `lax.fori_loop`, 64-bit.
    Jax,
    /// numexpr: `numexpr.evaluate` per expression.
    Numexpr,
}

impl Peer {
    /// Every peer, in the order of the report.
    pub const ALL: [Peer; 3] = [Peer::Numba, Peer::Jax, Peer::Numexpr];

    /// The row's label and the Python module's name.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Numba => "numba",
            Peer::Jax => "jax",
            Peer::Numexpr => "numexpr",
        }
    }

    /// The peer's version, or why its rows cannot run.
    pub fn available(self) -> Result<String, String> {
        numpy::module_version(self.name(), &format!("no {} rows", self.name()), self.name())
    }
}

/// What one peer run measured.
pub struct PeerRun {
    /// The timed repetitions.
    pub runs: Vec<Measured>,
    /// Whether it computed from NumPy's inputs (no random numbers of its own).
    pub numpy_inputs: bool,
}

/// Exit status of a peer script without a version of the benchmark.
const NO_VERSION: i32 = 3;

/// Runs `peer`'s version of `benchmark` at `size`; `Ok(None)` when it has none.
pub fn run(
    peer: Peer,
    benchmark: &str,
    size: &Size,
    precision: Precision,
    warmup: usize,
    reps: usize,
) -> Result<Option<PeerRun>, String> {
    let script = bench_dir().join("peers").join(format!("peer_{}.py", peer.name()));
    let mut cmd = Command::new(numpy::python());
    cmd.arg(&script)
        .arg(benchmark)
        .args(["--size", &size.to_string(), "--dtype", precision.as_str()])
        .args(["--warmup", &warmup.to_string(), "--reps", &reps.to_string()])
        .current_dir(bench_dir().join("peers"));
    let what = format!("{} {benchmark}", script.display());
    let out = cmd.output().map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.code() == Some(NO_VERSION) {
        return Ok(None);
    }
    let stdout = stdout_of(&out, &what)?;
    let numpy_inputs = !stdout.lines().any(|l| l.trim() == "INPUTS own");
    Ok(Some(PeerRun { runs: repetitions(&stdout, &what, reps)?, numpy_inputs }))
}
