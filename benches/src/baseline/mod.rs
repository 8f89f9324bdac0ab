//! Implementations that run outside this process: the NumPy scripts ([`numpy`]), the same
//! scripts under the Python frontend ([`python`]), the C program against `libvm.so` ([`c`]) and
//! the peers, the suite for numba, JAX and numexpr ([`peers`]).
//! Each prints one line per timed repetition in the fixed format `RESULT <seconds> <checksum>`,
//! read by [`parse_results`].

pub mod c;
pub mod numpy;
pub mod peers;
pub mod python;

use crate::Measured;
use crate::stacks::StackSpec;
use std::path::PathBuf;
use std::process::Command;

/// The directory of this crate's sources (`benches/`), where `numpy/` and `c/` live. Taken
/// from `VM_BENCH_DIR` when set (for a binary moved away from its checkout).
pub fn bench_dir() -> PathBuf {
    match std::env::var_os("VM_BENCH_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

/// Reads the `RESULT <seconds> <checksum>` lines of a baseline's output (other lines are
/// ignored). Fails when a RESULT line is malformed or there is none.
pub fn parse_results(stdout: &str) -> Result<Vec<Measured>, String> {
    let mut out = Vec::new();
    for line in stdout.lines() {
        let mut parts = line.split_whitespace();
        if parts.next() != Some("RESULT") {
            continue;
        }
        let (Some(t), Some(c), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("malformed result line `{line}`"));
        };
        let seconds: f64 = t.parse().map_err(|_| format!("bad time in `{line}`"))?;
        let checksum: f64 = c.parse().map_err(|_| format!("bad checksum in `{line}`"))?;
        out.push(Measured { seconds, checksum });
    }
    if out.is_empty() {
        return Err("no RESULT line in the output".to_string());
    }
    Ok(out)
}

/// `name` as in `VM_<COMPONENT>_<KEY>` variables: upper case, `-` and `.` as `_`.
fn env_form(name: &str) -> String {
    name.chars().map(|c| if c == '-' || c == '.' { '_' } else { c.to_ascii_uppercase() }).collect()
}

/// The environment that gives each component of `spec` with a `threads` setting `threads`
/// threads (`VM_<COMPONENT>_THREADS`), for a program that builds the stack itself; empty when
/// `threads` is `None`.
pub fn stack_env(spec: &StackSpec, threads: Option<usize>) -> Vec<(String, String)> {
    let (Some(n), Ok((plan, _))) = (threads, spec.plan(None)) else { return Vec::new() };
    plan.components
        .iter()
        .filter(|c| c.settings.values.contains_key("threads"))
        .map(|c| (format!("VM_{}_THREADS", env_form(&c.name)), n.to_string()))
        .collect()
}

/// The `reps` measurements in the output of `what` (`numpy/heat_equation.py`): an error when
/// a line is malformed or the count differs.
pub fn repetitions(stdout: &str, what: &str, reps: usize) -> Result<Vec<Measured>, String> {
    let results = parse_results(stdout).map_err(|e| format!("{what}: {e}"))?;
    if results.len() != reps {
        return Err(format!("{what}: {} results for {reps} repetitions", results.len()));
    }
    Ok(results)
}

/// Runs `cmd`, returning its stdout, or an error with the end of its stderr.
pub fn run_command(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {what}: {e}"))?;
    stdout_of(&out, what)
}

/// The stdout of a finished command, or an error with the end of its stderr when it failed.
pub fn stdout_of(out: &std::process::Output, what: &str) -> Result<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{what} failed ({}): {}", out.status, tail.join(" | ")));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_parse_and_noise_is_ignored() {
        let out = "warming up\nRESULT 0.5 3.25\nRESULT 1e-3 -2.5e10\n";
        let r = parse_results(out).unwrap();
        assert_eq!(r, vec![Measured { seconds: 0.5, checksum: 3.25 }, Measured { seconds: 1e-3, checksum: -2.5e10 }]);
        assert!(parse_results("RESULT 0.5 nan\n").unwrap()[0].checksum.is_nan());
    }

    #[test]
    fn malformed_results_are_errors() {
        assert!(parse_results("").unwrap_err().contains("no RESULT"));
        assert!(parse_results("RESULT 0.5\n").unwrap_err().contains("malformed"));
        assert!(parse_results("RESULT x 1\n").unwrap_err().contains("bad time"));
        assert!(parse_results("RESULT 1 2 3\n").unwrap_err().contains("malformed"));
    }

    #[test]
    fn the_scripts_are_where_the_harness_looks() {
        assert!(bench_dir().join("numpy").join("_common.py").is_file());
        for peer in peers::Peer::ALL {
            assert!(bench_dir().join("peers").join(format!("peer_{}.py", peer.name())).is_file());
        }
        assert!(bench_dir().join("c").join("heat_equation.c").is_file());
        assert!(bench_dir().join("c").join("heat_equation.cpp").is_file());
        assert!(bench_dir().join("c").join("overhead.cpp").is_file());
    }
}
