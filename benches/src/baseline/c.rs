//! The C and C++ users' paths: the programs `benches/c/<benchmark>.c` (vm.h) and
//! `benches/c/<benchmark>.cpp` (vm.hpp) that exist, compiled against `libvm.so` and the headers
//! of `bridge-c/include` when the harness runs, then run on each measured stack. Each takes
//! `SIZE DTYPE WARMUP REPS [CONFIG|-] [STACK|-]` and prints `RESULT <seconds> <checksum>` per
//! timed repetition (see `benches/c/heat_equation.c`).

use super::{bench_dir, repetitions, run_command, stack_env};
use crate::size::Size;
use crate::stacks::StackSpec;
use crate::{Measured, Precision};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A language of the compiled baselines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// C11 against `vm.h`.
    C,
    /// C++17 against `vm.hpp`.
    Cpp,
}

impl Lang {
    /// The row label's prefix (`c:<stack>`, `cpp:<stack>`) and the file extension.
    pub fn name(self) -> &'static str {
        match self {
            Lang::C => "c",
            Lang::Cpp => "cpp",
        }
    }

    /// The compiler: `CC` or `cc` for C, `CXX` or `c++` for C++.
    pub fn compiler(self) -> String {
        let (var, default) = match self {
            Lang::C => ("CC", "cc"),
            Lang::Cpp => ("CXX", "c++"),
        };
        std::env::var(var).ok().filter(|c| !c.is_empty()).unwrap_or_else(|| default.into())
    }

    /// The source file of `benchmark` in this language, when the suite has one.
    pub fn source(self, benchmark: &str) -> Option<PathBuf> {
        Some(bench_dir().join("c").join(format!("{benchmark}.{}", self.name()))).filter(|p| p.is_file())
    }

    fn standard(self) -> &'static str {
        match self {
            Lang::C => "-std=c11",
            Lang::Cpp => "-std=c++17",
        }
    }
}

/// Where `libvm.so` is looked for, in order: `VM_BENCH_LIBVM` (the file or its directory), the
/// directory of this executable and its `deps/`, then the workspace's `target/release` and
/// `target/debug`.
pub fn libvm_candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(p) = std::env::var_os("VM_BENCH_LIBVM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return vec![p];
        }
        dirs.push(p);
    }
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        dirs.push(exe_dir.join("deps"));
        dirs.push(exe_dir.clone());
        if let Some(up) = exe_dir.parent() {
            dirs.push(up.to_path_buf());
        }
    }
    let root = bench_dir().join("..");
    dirs.push(root.join("target").join("release"));
    dirs.push(root.join("target").join("debug"));
    dirs.into_iter().map(|d| d.join("libvm.so")).collect()
}

/// The first `libvm.so` of [`libvm_candidates`] that exists.
pub fn find_libvm() -> Option<PathBuf> {
    libvm_candidates().into_iter().find(|p| p.is_file())
}

/// A compiled benchmark program. Its directory is removed when it is dropped.
#[derive(Debug)]
pub struct CProgram {
    /// The benchmark it runs.
    pub benchmark: &'static str,
    /// Its language.
    pub lang: Lang,
    /// The executable.
    pub exe: PathBuf,
    /// The `libvm.so` it is linked against.
    pub libvm: PathBuf,
    dir: PathBuf,
}

impl Drop for CProgram {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Compiles `benches/c/<benchmark>.c` or `.cpp` (which must exist: [`Lang::source`]); an error
/// says why it cannot be (no compiler, no `libvm.so`, a compile error).
pub fn build(benchmark: &'static str, lang: Lang) -> Result<CProgram, String> {
    let (cc, what) = (lang.compiler(), lang.name());
    if Command::new(&cc).arg("--version").output().is_err() {
        return Err(format!("no {what} baseline: the compiler `{cc}` is not installed"));
    }
    let libvm = find_libvm().ok_or_else(|| {
        format!(
            "no {what} baseline: libvm.so not found (build it with `cargo build --release -p vm-bridge-c`, or set VM_BENCH_LIBVM)"
        )
    })?;
    let lib_dir = libvm.parent().map(Path::to_path_buf).unwrap_or_default();
    let include = bench_dir().join("..").join("bridge-c").join("include");
    if !include.join("vm.h").is_file() {
        return Err(format!("no {what} baseline: {} not found", include.join("vm.h").display()));
    }
    let source = lang.source(benchmark).ok_or_else(|| format!("no {what} baseline of {benchmark}"))?;
    let dir = std::env::temp_dir().join(format!("vm-bench-{what}-{benchmark}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let exe = dir.join(benchmark);
    let mut cmd = Command::new(&cc);
    cmd.args(["-O2", lang.standard(), "-Wall", "-Werror"])
        .arg(&source)
        .arg("-I")
        .arg(&include)
        .arg("-L")
        .arg(&lib_dir)
        .arg("-lvm")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(&exe);
    let program = CProgram { benchmark, lang, exe, libvm, dir };
    run_command(&mut cmd, &format!("{cc} {benchmark}.{what}"))?;
    Ok(program)
}

/// Runs the compiled benchmark at `size` on the stack `spec` (its config file and stack name), with
/// `threads` (when given) as the `threads` setting of each component that has one.
pub fn run(
    program: &CProgram,
    size: &Size,
    precision: Precision,
    warmup: usize,
    reps: usize,
    spec: &StackSpec,
    threads: Option<usize>,
) -> Result<Vec<Measured>, String> {
    let config = spec.config.as_ref().map_or_else(|| "-".to_string(), |p| p.display().to_string());
    let stack = spec.stack.clone().unwrap_or_else(|| "-".into());
    let mut cmd = Command::new(&program.exe);
    cmd.arg(size.to_string())
        .arg(precision.as_str())
        .arg(warmup.to_string())
        .arg(reps.to_string())
        .arg(config)
        .arg(stack);
    cmd.envs(stack_env(spec, threads));
    let what = format!("{}/{}", program.lang.name(), program.benchmark);
    let stdout = run_command(&mut cmd, &what)?;
    repetitions(&stdout, &what, reps)
}
