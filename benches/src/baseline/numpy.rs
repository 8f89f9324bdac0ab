//! The NumPy baseline: `benches/numpy/<benchmark>.py`, run with the project's Python (see
//! [`python`]) when it can `import numpy`.

use super::{bench_dir, repetitions, run_command};
use crate::size::Size;
use crate::{Measured, Precision};
use std::process::Command;

/// The Python interpreter: `VM_BENCH_PYTHON`, else the project's environment `.venv` that
/// `scripts/setup.sh` creates (Debian's own `python3` refuses `pip install`, PEP 668), else
/// `python3`.
pub fn python() -> String {
    if let Some(p) = std::env::var("VM_BENCH_PYTHON").ok().filter(|p| !p.is_empty()) {
        return p;
    }
    let venv = bench_dir().join("..").join(".venv").join("bin").join("python");
    if venv.is_file() { venv.to_string_lossy().into_owned() } else { "python3".into() }
}

/// NumPy's version, or why NumPy cannot be used (no python3, or no numpy module).
pub fn available() -> Result<String, String> {
    module_version("numpy", "no NumPy baseline", "NumPy")
}

/// The `__version__` of Python module `module` in [`python`], or why it cannot be imported:
/// `what` (`no NumPy baseline`) says what is lost, `installs` what scripts/setup.sh installs.
pub fn module_version(module: &str, what: &str, installs: &str) -> Result<String, String> {
    let py = python();
    let out = Command::new(&py)
        .args(["-c", &format!("import {module}; print({module}.__version__)")])
        .output()
        .map_err(|e| format!("{what}: `{py}` cannot be run ({e})"))?;
    if !out.status.success() {
        return Err(format!(
            "{what}: `{py} -c 'import {module}'` fails (run scripts/setup.sh, which installs {installs} into .venv)"
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `script` at `size`: `warmup` untimed and `reps` timed repetitions in one process.
pub fn run(
    script: &str,
    size: &Size,
    precision: Precision,
    warmup: usize,
    reps: usize,
) -> Result<Vec<Measured>, String> {
    let mut cmd = Command::new(python());
    script_args(&mut cmd, script, size, precision, warmup, reps)?;
    let what = format!("numpy/{script}");
    let stdout = run_command(&mut cmd, &what)?;
    repetitions(&stdout, &what, reps)
}

/// Appends `benches/numpy/<name>` and its arguments to `cmd` (a Python command line), run in
/// that directory; an error when the script does not exist.
pub fn script_args(
    cmd: &mut Command,
    name: &str,
    size: &Size,
    precision: Precision,
    warmup: usize,
    reps: usize,
) -> Result<(), String> {
    let dir = bench_dir().join("numpy");
    let path = dir.join(name);
    if !path.is_file() {
        return Err(format!("no NumPy script {}", path.display()));
    }
    cmd.arg(&path)
        .args(["--size", &size.to_string(), "--dtype", precision.as_str()])
        .args(["--warmup", &warmup.to_string(), "--reps", &reps.to_string()])
        .current_dir(&dir);
    Ok(())
}
