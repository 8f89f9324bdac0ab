//! # vm-tests: cross-crate tests
//!
//! Helpers for the tests in `tests/tests/`: finding `libvm.so` and the header, compiling the C
//! and C++ programs of `tests/c/` against them as a user would (`cc ... -lvm`), and running them
//! on several stacks in a clean environment.
//!
//! `libvm.so` is built by cargo itself: this crate depends on `vm-bridge-c`, whose `cdylib` output
//! cargo therefore builds before the tests, next to the test executables. (Running a nested
//! `cargo build` from a test would wait forever on the build directory lock.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ lies in the workspace").to_path_buf()
}

/// The directory of the C test programs, `tests/c`.
pub fn c_dir() -> PathBuf {
    workspace_root().join("tests").join("c")
}

/// The directory holding `vm.h`.
pub fn include_dir() -> PathBuf {
    workspace_root().join("bridge-c").join("include")
}

/// The directory holding the `libvm.so` cargo built for this test run: the test executable
/// lives in `<target>/<profile>/deps/`, and cargo puts the library there (as a dependency) and,
/// when it was also built as a root, in `<target>/<profile>/`. Works for any `CARGO_TARGET_DIR`
/// and profile.
pub fn libvm_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the executable lies in a directory").to_path_buf();
    let candidates = [deps.clone(), deps.parent().map(Path::to_path_buf).unwrap_or_default()];
    candidates
        .iter()
        .find(|d| d.join("libvm.so").is_file())
        .cloned()
        .unwrap_or_else(|| panic!("libvm.so is in none of {candidates:?}; cargo should have built it (vm-bridge-c)"))
}

/// A fresh directory under the system temp dir, removed on drop (kept when `VM_KEEP_SCRATCH`
/// is set, for debugging).
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new empty scratch directory whose name contains `tag`.
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("vm-tests-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create a scratch directory");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("VM_KEEP_SCRATCH").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Compiles `tests/c/<name>` (C with `cc -std=c11`, or C++ with `c++ -std=c++11` for `.cpp`)
/// with all warnings as errors, linked against `libvm.so` with an rpath, into `dir`. Returns the
/// executable's path; panics with the compiler's output on failure.
pub fn compile(name: &str, dir: &Path) -> PathBuf {
    let stem = Path::new(name).file_stem().and_then(|s| s.to_str()).expect("a file name");
    let (compiler, std) = if name.ends_with(".cpp") { ("c++", "-std=c++11") } else { ("cc", "-std=c11") };
    compile_with(compiler, std, &c_dir().join(name), &dir.join(stem))
}

/// Compiles `src` with `compiler` and the language standard `std`, all warnings as errors,
/// against the headers of `bridge-c/include` and `tests/c`, linked against `libvm.so` with an
/// rpath, into `exe`; panics with the compiler's output on failure.
fn compile_with(compiler: &str, std: &str, src: &Path, exe: &Path) -> PathBuf {
    let lib = libvm_dir();
    let out = Command::new(compiler)
        .args([std, "-O1", "-Wall", "-Wextra", "-pedantic", "-Werror"])
        .arg("-I")
        .arg(include_dir())
        .arg("-I")
        .arg(c_dir())
        .arg(src)
        .arg("-o")
        .arg(exe)
        .arg("-L")
        .arg(&lib)
        .arg("-lvm")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lm")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler} (scripts/setup.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "compiling {} with {compiler} failed:\n{}{}",
        src.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe.to_path_buf()
}

/// The stacks every C program runs on: the default one (what the configuration picks when
/// nothing is set) and `interp` (the reference), plus `cpu` when it is compiled in.
pub fn stacks() -> Vec<Option<&'static str>> {
    let mut s = vec![None, Some("interp")];
    if vm_host::engines::engines_compiled_in().contains(&"cpu") {
        s.push(Some("cpu"));
    }
    s
}

/// Runs `exe` in a fresh scratch directory with a clean VM environment: no `VM_*` variables
/// but `VM_STACK=<stack>` when given, and `HOME` and `XDG_CONFIG_HOME` pointing at empty
/// directories, so that the configuration is the built-in default whatever the machine has.
/// `LD_LIBRARY_PATH` names the directory of `libvm.so`.
pub fn run(exe: &Path, stack: Option<&str>) -> Output {
    run_under(&[], exe, stack)
}

/// [`run`], with `exe` started by the command line `wrapper` (e.g. `valgrind` and its options)
/// when that is not empty.
pub fn run_under(wrapper: &[&str], exe: &Path, stack: Option<&str>) -> Output {
    let vars: Vec<(&str, &str)> = stack.map(|s| ("VM_STACK", s)).into_iter().collect();
    run_with(wrapper, exe, &vars)
}

/// [`run_under`] with the `VM_*` variables `vars` (e.g. `VM_CONFIG` and `VM_STACK`) instead of
/// just a stack.
pub fn run_with(wrapper: &[&str], exe: &Path, vars: &[(&str, &str)]) -> Output {
    run_command(wrapper, exe, &[], vars)
}

/// [`run_with`] without a wrapper, passing `args` to `exe`.
pub fn run_args(exe: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    run_command(&[], exe, args, vars)
}

/// Runs `exe args...` (under `wrapper` when not empty) as [`run_with`] describes.
fn run_command(wrapper: &[&str], exe: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let dir = Scratch::new("run");
    let home = dir.0.join("home");
    std::fs::create_dir_all(&home).expect("create a home directory");
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut cmd = Command::new(program);
            cmd.args(args).arg(exe);
            cmd
        }
        None => Command::new(exe),
    };
    cmd.args(args).current_dir(&dir.0);
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("VM_")) {
            cmd.env_remove(k);
        }
    }
    cmd.env("HOME", &home).env("XDG_CONFIG_HOME", home.join(".config")).env("LD_LIBRARY_PATH", libvm_dir());
    cmd.envs(vars.iter().copied());
    cmd.output().unwrap_or_else(|e| panic!("cannot run {} {}: {e}", wrapper.join(" "), exe.display()))
}

/// Compiles `tests/c/<name>`, runs it on every stack of [`stacks`], asserts that each run exits
/// 0 and that all print the same, and returns what they print.
pub fn check_program(name: &str) -> String {
    let dir = Scratch::new("build");
    let exe = compile(name, &dir.0);
    let mut first: Option<(Option<&str>, String)> = None;
    for stack in stacks() {
        let out = run(&exe, stack);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let label = stack.unwrap_or("default");
        assert!(
            out.status.success(),
            "{name} on the {label} stack exited with {}:\n--- stdout\n{stdout}--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        match &first {
            None => first = Some((stack, stdout)),
            Some((s, expected)) => assert_eq!(
                &stdout,
                expected,
                "{name} prints differently on the {label} stack than on the {} stack",
                s.unwrap_or("default")
            ),
        }
    }
    first.map(|(_, s)| s).unwrap_or_default()
}

/// Compiles the C++17 source `src` (anywhere, e.g. `examples/cpp/heat.cpp`) with `compiler`
/// (`g++`, `clang++`) and `-std=c++17 -Wall -Wextra -Werror -pedantic`, against `vm.h`/`vm.hpp`
/// and `libvm.so` (with an rpath), into `dir`; the executable is named after the source and
/// the compiler. Panics with the compiler's output on failure.
pub fn compile_cpp17(src: &Path, dir: &Path, compiler: &str) -> PathBuf {
    let stem = src.file_stem().and_then(|s| s.to_str()).expect("a file name");
    compile_with(compiler, "-std=c++17", src, &dir.join(format!("{stem}-{compiler}")))
}
