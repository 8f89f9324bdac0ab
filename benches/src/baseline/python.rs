//! The Python users' path: the same `benches/numpy/<benchmark>.py` scripts as the NumPy
//! baseline, run unchanged under `python -m vmnp` (the Python frontend, `bridge-py/`) on each
//! measured stack, so NumPy's code is recorded as VM bytecode.

use super::{numpy, repetitions, run_command, stack_env};
use crate::size::Size;
use crate::stacks::StackSpec;
use crate::{Measured, Precision};
use std::process::Command;

/// vmnp's version, or why the rows cannot run (no Python, or vmnp not installed in it).
pub fn available() -> Result<String, String> {
    numpy::module_version("vmnp", "no python rows", "vmnp")
}

/// Runs `script` at `size` under `python -m vmnp` on the stack `spec` (`VM_CONFIG`,
/// `VM_STACK`), with `threads` (when given) as the `threads` setting of each component that has
/// one. A fallback to NumPy is an error (`VMNP_FALLBACK=error`): the row measures the VM only.
pub fn run(
    script: &str,
    size: &Size,
    precision: Precision,
    warmup: usize,
    reps: usize,
    spec: &StackSpec,
    threads: Option<usize>,
) -> Result<Vec<Measured>, String> {
    let mut cmd = Command::new(numpy::python());
    cmd.args(["-m", "vmnp"]).env("VMNP_FALLBACK", "error");
    if let Some(config) = &spec.config {
        cmd.env("VM_CONFIG", config);
    }
    if let Some(stack) = &spec.stack {
        cmd.env("VM_STACK", stack);
    }
    cmd.envs(stack_env(spec, threads));
    let what = format!("python -m vmnp numpy/{script}");
    numpy::script_args(&mut cmd, script, size, precision, warmup, reps)?;
    let stdout = run_command(&mut cmd, &what)?;
    repetitions(&stdout, &what, reps)
}
