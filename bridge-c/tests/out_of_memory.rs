//! `vm run` of a program that needs more memory than the machine has: an error naming the base
//! and the size, with a nonzero status, not an abort of the process.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `vm run <program text> --stack <stack>` with no VM_* variables and an empty HOME, so the
/// configuration is the built-in default.
fn run(name: &str, program: &str, stack: &str) -> Output {
    let dir: PathBuf = std::env::temp_dir().join(format!("vm-oom-test-{}-{name}-{stack}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.vm"));
    std::fs::write(&file, program).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vm"));
    cmd.arg("run").arg(&file).args(["--stack", stack]);
    cmd.current_dir(&dir).env("HOME", &dir).env("XDG_CONFIG_HOME", dir.join(".config"));
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("VM_")) {
            cmd.env_remove(k);
        }
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn stacks() -> Vec<&'static str> {
    let mut stacks = vec!["interp"];
    if vm_host::engines::engines_compiled_in().contains(&"cpu") {
        stacks.push("cpu");
    }
    stacks
}

#[test]
fn range_over_a_base_of_2_pow_61_i16_is_out_of_memory() {
    // 2^61 i16 elements are 4 EiB: no machine grants that, even lazily.
    let program = ".base acc i16 2305843009213693952\nrange acc\nsync acc\n";
    for stack in stacks() {
        let out = run("range", program, stack);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stack}: {}\n{err}", out.status);
        assert!(
            err.starts_with("vm: error: ")
                && err.contains(
                    "range.vm:3: out of memory: allocating 4611686018427387904 bytes for base #1 (2305843009213693952 i16 elements)"
                ),
            "{stack}: {err}"
        );
    }
}

#[test]
fn huge_broadcasts_and_bases_in_text_programs() {
    // Gathering from a broadcast of any extent reads it in place; scattering into a base of 2^40
    // f64 elements (8 TiB) needs the base.
    let gather = ".base one f64 1\n.base idx i64 3\n.base out f64 3\nidentity one, 2.5f64\nrange idx\n\
                  gather out, one{start=0 shape=[18446744073709551615] stride=[0]}, idx\nsync out\n";
    let scatter = ".base dst f64 1099511627776\n.base idx i64 6\n.base val f64 6\nrange idx\nrange val\n\
                   scatter dst, val, idx\nsync idx\n";
    for stack in stacks() {
        let out = run("gather", gather, stack);
        assert!(out.status.success(), "{stack}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out: f64[3] = [2.5, 2.5, 2.5]\n", "{stack}");
        let out = run("scatter", scatter, stack);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stack}: {}\n{err}", out.status);
        assert!(err.contains("out of memory: allocating 8796093022208 bytes for base #1 "), "{stack}: {err}");
    }
}
