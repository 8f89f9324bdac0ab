//! Every C and C++ program of `tests/c/` under valgrind's memcheck, on every stack of
//! [`vm_tests::stacks`]: no invalid read or write, no use of uninitialised memory, and nothing
//! definitely or possibly lost once the program has shut down each context it made. A C program
//! that links `libvm.so` must be able to run its own leak checks with `--error-exitcode=1`.
//!
//! valgrind is installed by `scripts/setup.sh`; without it this test fails and says so.

use std::path::PathBuf;
use std::process::Command;
use vm_tests::{Scratch, c_dir, compile, run_under, stacks};

/// Memcheck with leak checking; any error (leaks of the kinds it counts by default, definite
/// and possible, included) makes the program exit with status 99. Fair scheduling: valgrind runs
/// one thread at a time, and with its default lock a thread that waits by yielding (the cpu
/// engine's caller waiting for a worker's last block) can take the lock back at once, forever,
/// while the worker it waits for never runs (seen as a hang of `faults.c` now and then).
const VALGRIND: &[&str] =
    &["valgrind", "--error-exitcode=99", "--leak-check=full", "--track-origins=yes", "--fair-sched=yes", "--quiet"];

fn programs() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(c_dir())
        .expect("tests/c exists")
        .map(|e| e.expect("a directory entry").file_name().into_string().expect("a UTF-8 file name"))
        .filter(|n| n.ends_with(".c") || n.ends_with(".cpp"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_c_program_is_valgrind_clean_on_every_stack() {
    let found = Command::new("valgrind").arg("--version").output();
    assert!(
        found.as_ref().is_ok_and(|o| o.status.success()),
        "valgrind is needed for this test; scripts/setup.sh installs it ({found:?})"
    );
    let dir = Scratch::new("valgrind");
    let programs = programs();
    assert!(programs.len() >= 5, "expected the C programs of tests/c, found {programs:?}");
    let exes: Vec<(String, PathBuf)> = programs.iter().map(|name| (name.clone(), compile(name, &dir.0))).collect();
    let mut failures = Vec::new();
    for (name, exe) in &exes {
        for stack in stacks() {
            let out = run_under(VALGRIND, exe, stack);
            if !out.status.success() {
                failures.push(format!(
                    "{name} on the {} stack exited with {} under valgrind:\n{}",
                    stack.unwrap_or("default"),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
