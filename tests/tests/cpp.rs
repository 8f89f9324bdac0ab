//! The C++ frontend `bridge-c/include/vm.hpp`: the examples of `examples/cpp/` and the API test
//! `tests/cpp/api.cpp`, compiled with g++ and clang++ (`-std=c++17 -Wall -Wextra -Werror
//! -pedantic`) against `libvm.so` and run on the `interp` and `cpu` stacks. Each must exit 0 and
//! print the same on both stacks (checksums up to a float tolerance: reductions may associate
//! differently), and the checksums must equal references computed elsewhere: the output of
//! `tests/c/heat.c`, and the Rust benchmark suite (`benches/src/benchmarks/*/`, run with
//! `vm-bench --size tiny` and explicit sizes on the interp stack) for the benchmarks.

use std::path::{Path, PathBuf};
use vm_tests::{Scratch, compile, compile_cpp17, run_args, workspace_root};

/// The examples with a test below; every file in `examples/cpp` must be one of them.
const EXAMPLES: &[&str] = &["heat.cpp", "shallow_water.cpp", "black_scholes.cpp"];

const COMPILERS: &[&str] = &["g++", "clang++"];

/// The stacks the programs run on: `interp` and, when compiled in, `cpu`.
fn stacks() -> Vec<&'static str> {
    vm_tests::stacks().into_iter().flatten().collect()
}

fn example(name: &str) -> PathBuf {
    workspace_root().join("examples").join("cpp").join(name)
}

/// Compiles `src` with every compiler, runs each executable with `args` on every stack, asserts
/// exit 0 and that every run prints the same as the first, numbers on lines containing
/// "checksum" compared with a relative tolerance of 1e-12. Returns the first run's output.
fn check(src: &Path, args: &[&str]) -> String {
    let dir = Scratch::new("cpp");
    let mut first: Option<(String, String)> = None;
    for compiler in COMPILERS {
        let exe = compile_cpp17(src, &dir.0, compiler);
        for stack in stacks() {
            let out = run_args(&exe, args, &[("VM_STACK", stack)]);
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let label = format!("{} built with {compiler} on the {stack} stack", src.display());
            assert!(
                out.status.success(),
                "{label} exited with {}:\n--- stdout\n{stdout}--- stderr\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            match &first {
                None => first = Some((label, stdout)),
                Some((first_label, expected)) => same_output(expected, &stdout, first_label, &label),
            }
        }
    }
    first.map(|(_, s)| s).expect("at least one run")
}

/// Asserts that `a` and `b` have the same lines, equal but for the numbers of checksum lines,
/// which may differ by a relative 1e-12.
fn same_output(a: &str, b: &str, la: &str, lb: &str) {
    let (al, bl): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(al.len(), bl.len(), "{la} and {lb} print different numbers of lines:\n{a}\n---\n{b}");
    for (x, y) in al.iter().zip(&bl) {
        if x.contains("checksum") {
            let (xw, yw): (Vec<&str>, Vec<&str>) = (x.split_whitespace().collect(), y.split_whitespace().collect());
            assert_eq!(xw.len(), yw.len(), "{la}: `{x}`, {lb}: `{y}`");
            for (p, q) in xw.iter().zip(&yw) {
                match (p.trim_end_matches(',').parse::<f64>(), q.trim_end_matches(',').parse::<f64>()) {
                    (Ok(u), Ok(v)) => assert!(close(u, v, 1e-12), "{la}: `{x}`, {lb}: `{y}`"),
                    _ => assert_eq!(p, q, "{la}: `{x}`, {lb}: `{y}`"),
                }
            }
        } else {
            assert_eq!(x, y, "{la} and {lb} differ");
        }
    }
}

fn close(a: f64, b: f64, rtol: f64) -> bool {
    (a - b).abs() <= rtol * a.abs().max(b.abs())
}

/// The number after `prefix` on the line starting with it.
fn value(out: &str, prefix: &str) -> f64 {
    let line = out.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` line in:\n{out}"));
    line[prefix.len()..].trim().parse().unwrap_or_else(|e| panic!("`{line}`: {e}"))
}

/// Asserts that the checksum printed after `prefix` is `want` up to a relative 1e-12.
fn assert_checksum(out: &str, prefix: &str, want: f64) {
    let got = value(out, prefix);
    assert!(close(got, want, 1e-12), "{prefix} {got:?}, expected {want:?} (the Rust suite's), in:\n{out}");
}

#[test]
fn heat_matches_heat_c_the_loop_and_the_rust_suite() {
    let out = check(&example("heat.cpp"), &[]);
    assert!(out.contains("\nmax |vm - c loop| = 0\n"), "{out}");
    assert!(out.contains("heat_equation max |vm - c loop| = 0\n"), "{out}");
    assert!(out.contains("heat_equation delta agrees with the loop: yes\n"), "{out}");
    // tests/c/heat.c computes the same grid through the C ABI: the same checksum line
    let dir = Scratch::new("heat-c");
    let heat_c = compile("heat.c", &dir.0);
    let c_out = String::from_utf8_lossy(&run_args(&heat_c, &[], &[("VM_STACK", "interp")]).stdout).into_owned();
    let line = |s: &str| s.lines().find(|l| l.starts_with("checksum ")).map(str::to_owned);
    let c_line = line(&c_out).unwrap_or_else(|| panic!("heat.c printed no checksum:\n{c_out}"));
    assert_eq!(line(&out), Some(c_line.clone()), "heat.cpp and heat.c disagree");
    assert!(c_line.starts_with("checksum 8607.42509636"), "{c_line}");
    // vm-bench -b heat_equation --size tiny (20*30*5), the eager (interp) row
    assert_checksum(&out, "heat_equation checksum", 2027.979071999999);
}

#[test]
fn heat_equation_at_another_size_matches_the_rust_suite() {
    let out = check(&example("heat.cpp"), &["64", "80", "10"]);
    assert!(out.contains("heat_equation 64*80*10\n") && out.contains("heat_equation max |vm - c loop| = 0\n"), "{out}");
    assert_checksum(&out, "heat_equation checksum", 4492.0150421811495);
}

#[test]
fn shallow_water_matches_the_loop_and_the_rust_suite() {
    let out = check(&example("shallow_water.cpp"), &[]);
    assert!(out.contains("shallow_water max |vm - c loop| = 0\n"), "{out}");
    assert!(out.contains("shallow_water checksum agrees with the loop: yes\n"), "{out}");
    assert_checksum(&out, "shallow_water checksum", 603.1066486292987);
    let out = check(&example("shallow_water.cpp"), &["40", "50", "5"]);
    assert!(out.contains("shallow_water max |vm - c loop| = 0\n"), "{out}");
    assert_checksum(&out, "shallow_water checksum", 2123.103975795546);
}

#[test]
fn black_scholes_matches_the_loop_and_the_rust_suite() {
    let out = check(&example("black_scholes.cpp"), &[]);
    assert!(out.contains("agree with the loop (1e-9): yes\n"), "{out}");
    assert_checksum(&out, "black_scholes checksum", 0.006295268626515183);
    let out = check(&example("black_scholes.cpp"), &["5000", "4"]);
    assert!(out.contains("agree with the loop (1e-9): yes\n"), "{out}");
    assert_checksum(&out, "black_scholes checksum", 0.01780277720968394);
}

#[test]
fn the_api_works_as_documented() {
    let out = check(&workspace_root().join("tests").join("cpp").join("api.cpp"), &[]);
    for group in
        ["creation", "slicing", "broadcasting", "element-wise", "where", "reductions", "scans", "astype", "assignment"]
    {
        assert!(out.contains(&format!("{group} ok\n")), "`{group} ok` missing from:\n{out}");
    }
    for case in [
        "ok shape mismatch: vm: shapes (4, 5) and (4,) do not broadcast together\n",
        "ok index out of range: vm: index 4 out of range for axis 0 of extent 4\n",
        "ok zero step: vm: a slice step of 0",
        "ok assignment that does not broadcast: vm: shape (3,) does not broadcast to (4,)\n",
        "ok sqrt of integers (the VM refuses): vm_submit: VM_ERR_INVALID_INSTRUCTION:",
        "ok unknown stack: vm_init_stack: VM_ERR_CONFIG:",
    ] {
        assert!(out.contains(case), "`{case}` missing from:\n{out}");
    }
    assert!(out.ends_with("errors ok\napi ok\n"), "{out}");
}

#[test]
fn every_example_is_tested() {
    for entry in std::fs::read_dir(workspace_root().join("examples").join("cpp")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".cpp") {
            assert!(EXAMPLES.contains(&name.as_str()), "examples/cpp/{name} has no test in tests/tests/cpp.rs");
        }
    }
}

#[test]
fn the_documented_example_runs_and_is_in_the_docs_verbatim() {
    let path = workspace_root().join("tests").join("cpp").join("doc_example.cpp");
    let out = check(&path, &[]);
    assert_eq!(out, "min -0.100, max 0.100, 590 of 998 clipped\nfirst three: 0.469 -0.005 0.062\n");
    let example = std::fs::read_to_string(&path).unwrap();
    let docs = std::fs::read_to_string(workspace_root().join("docs").join("cpp.md")).unwrap();
    assert!(
        docs.contains(&format!("```cpp\n{example}```")),
        "docs/cpp.md must contain tests/cpp/doc_example.cpp verbatim, in a ```cpp block"
    );
    assert!(docs.contains("min -0.100, max 0.100, 590 of 998 clipped\n"), "docs/cpp.md must show its output");
}

#[test]
fn the_docs_show_code_of_an_example() {
    // docs/cpp.md shows examples/cpp/black_scholes.cpp's cnd() verbatim
    let docs = std::fs::read_to_string(workspace_root().join("docs").join("cpp.md")).unwrap();
    let src = std::fs::read_to_string(example("black_scholes.cpp")).unwrap();
    let start = src.find("vm::array<double> cnd(").expect("cnd in black_scholes.cpp");
    let end = start + src[start..].find("\n}\n").expect("the end of cnd") + 3;
    assert!(docs.contains(&src[start..end]), "docs/cpp.md must show cnd() of examples/cpp/black_scholes.cpp verbatim");
}
