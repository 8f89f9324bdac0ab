//! The C and C++ programs of `tests/c/`, compiled against `libvm.so` and run on every stack
//! (see [`vm_tests::check_program`]): each must exit 0 and print the same on every stack.

use vm_tests::{Scratch, c_dir, check_program, compile, run, run_args, stacks, workspace_root};

/// The programs with a test below; every program in `tests/c` must be one of them.
const PROGRAMS: &[&str] =
    &["heat.c", "basics.c", "errors.c", "out_of_memory.c", "faults.c", "doc_example.c", "cxx_smoke.cpp", "trace.c"];

#[test]
fn heat_stencil_matches_the_c_loop() {
    let out = check_program("heat.c");
    assert!(out.contains("max |vm - c loop| = 0\n"), "{out}");
}

#[test]
fn basics() {
    let out = check_program("basics.c");
    assert!(out.contains("odd: 1 3 5 7 9 11 13 15 17 19\n"), "{out}");
    assert!(out.contains("argmax of rows 1 0 0, argmin of columns 1 1 1 0, argmax of a reversed row 1\n"), "{out}");
    assert!(out.ends_with("basics ok\n"), "{out}");
}

#[test]
fn bad_input_gives_clear_errors() {
    let out = check_program("errors.c");
    for case in [
        "ok null context: VM_ERR_INVALID_ARGUMENT",
        "ok unknown opcode: VM_ERR_UNKNOWN_OPCODE",
        "ok view out of bounds: VM_ERR_INVALID_INSTRUCTION",
        "ok dtype mismatch: VM_ERR_INVALID_INSTRUCTION",
        "ok use after free: VM_ERR_INVALID_INSTRUCTION",
        "ok sync after free: VM_ERR_UNKNOWN_BASE",
        "ok config syntax error: VM_ERR_CONFIG",
        "ok empty stack name: VM_ERR_CONFIG",
        "ok too many threads: VM_ERR_CONFIG",
        "ok too many threads names the limit: VM_ERR_CONFIG",
        "ok unknown dtype: VM_ERR_UNKNOWN_DTYPE",
        "ok i8 constant 300: VM_ERR_INVALID_INSTRUCTION",
        "ok i8 constant -129: VM_ERR_INVALID_INSTRUCTION",
        "ok u8 constant 2^40+7: VM_ERR_INVALID_INSTRUCTION",
        "ok bool constant 2: VM_ERR_INVALID_INSTRUCTION",
        "ok f32 constant 1e300: VM_ERR_INVALID_INSTRUCTION",
        "ok f32 constants that round or are infinite pass\n",
        "ok use after shutdown: VM_ERR_INVALID_ARGUMENT",
        "ok matmul with one operand: VM_ERR_INVALID_INSTRUCTION",
        "ok matmul with a constant: VM_ERR_INVALID_INSTRUCTION",
        "ok argmax of an empty axis: VM_ERR_INVALID_INSTRUCTION",
        "ok argmin of an empty axis: VM_ERR_INVALID_INSTRUCTION",
    ] {
        assert!(out.contains(case), "`{case}` missing from:\n{out}");
    }
    assert!(out.ends_with("errors ok\n"), "{out}");
}

#[test]
fn allocation_failures_are_errors_not_aborts() {
    let out = check_program("out_of_memory.c");
    for case in [
        "ok gather from broadcasts of extent 2^40 and 2^64-1\n",
        "ok gather from a 2^40 base: VM_ERR_OUT_OF_MEMORY\n",
        "ok scatter of 6 values into a 2^40 base: VM_ERR_OUT_OF_MEMORY\n",
        "ok add_reduce of a 2^40 x 2 broadcast: VM_ERR_OUT_OF_MEMORY\n",
        "ok add_accumulate of a 2^40 broadcast: VM_ERR_OUT_OF_MEMORY\n",
        "ok range over 2^61 i16: VM_ERR_OUT_OF_MEMORY\n",
    ] {
        assert!(out.contains(case), "`{case}` missing from:\n{out}");
    }
    assert!(out.ends_with("out_of_memory ok\n"), "{out}");
}

#[test]
fn interrupts_and_kernel_panics_leave_the_context_usable() {
    let out = check_program("faults.c");
    for case in [
        "ok interrupted flush: VM_ERR_INTERRUPTED\n",
        "ok the context computes after an interrupt\n",
        "ok a panic on the worker leaves the context usable\n",
        "ok a panic on the caller leaves the context usable\n",
    ] {
        assert!(out.contains(case), "`{case}` missing from:\n{out}");
    }
    assert!(out.ends_with("faults ok\n"), "{out}");
    // The panics were injected, and reported, where the cpu engine ran the kernels.
    let dir = Scratch::new("faults");
    let exe = compile("faults.c", &dir.0);
    for stack in stacks().into_iter().filter(|s| *s != Some("interp")) {
        let run = run(&exe, stack);
        let stderr = String::from_utf8_lossy(&run.stderr);
        for site in ["worker", "caller"] {
            let line = format!(
                "panic on the {site}: VM_ERR_INTERNAL: internal error (a bug in the VM): a kernel block panicked"
            );
            assert!(stderr.contains(&line), "{stack:?}: `{line}` missing from:\n{stderr}");
        }
    }
}

#[test]
fn the_documented_example_runs() {
    let out = check_program("doc_example.c");
    assert!(out.contains("y[7] = 13.25\n") && out.ends_with("sum = 43\n"), "{out}");
}

#[test]
fn the_header_works_from_cpp() {
    let out = check_program("cxx_smoke.cpp");
    assert_eq!(out, "sum of squares below 100: 328350\n");
}

#[test]
fn every_program_in_tests_c_is_tested() {
    for entry in std::fs::read_dir(c_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".c") || name.ends_with(".cpp") {
            assert!(PROGRAMS.contains(&name.as_str()), "tests/c/{name} has no test in c_programs.rs");
        }
    }
}

#[test]
fn the_docs_contain_the_example_verbatim() {
    let example = std::fs::read_to_string(c_dir().join("doc_example.c")).unwrap();
    let docs = std::fs::read_to_string(workspace_root().join("docs").join("c-abi.md")).unwrap();
    assert!(
        docs.contains(&format!("```c\n{example}```")),
        "docs/c-abi.md must contain tests/c/doc_example.c verbatim, in a ```c block"
    );
}

#[test]
fn the_docs_list_every_status_and_the_struct_sizes() {
    let docs = std::fs::read_to_string(workspace_root().join("docs").join("c-abi.md")).unwrap();
    for s in vm::errors::statuses() {
        let row = format!("| `{}` | {} | {} |", s.name.to_str().unwrap(), s.code, s.doc);
        assert!(docs.contains(&row), "docs/c-abi.md lacks the status row {row}");
    }
    let sizes: std::collections::HashMap<_, _> = vm::abi::layout().into_iter().collect();
    for (ty, word) in [("vm_view", "is"), ("vm_operand", ""), ("vm_instruction", "")] {
        let size = sizes[format!("sizeof({ty})").as_str()];
        let text =
            if word.is_empty() { format!("`sizeof({ty})` {size}") } else { format!("`sizeof({ty})` {word} {size}") };
        assert!(docs.contains(&text), "docs/c-abi.md should say {text}");
    }
}

/// `vm_trace_start`/`vm_trace_stop` write a Chrome trace of the program's batches, its small
/// steps run at once and its host write on every stack, and the cpu engine's kernel formation,
/// compilations and kernels;
/// an unwritable file is a clear error.
#[test]
fn the_c_abi_writes_a_trace() {
    let dir = Scratch::new("trace");
    let exe = compile("trace.c", &dir.0);
    for stack in stacks() {
        let label = stack.unwrap_or("default");
        let path = dir.0.join(format!("trace-{label}.json"));
        let vars: Vec<(&str, &str)> = stack.map(|s| ("VM_STACK", s)).into_iter().collect();
        let out = run_args(&exe, &[path.to_str().unwrap()], &vars);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && out.stdout.ends_with(b"trace ok\n"), "{label}: {stderr}");
        let json = std::fs::read_to_string(&path).unwrap();
        assert!(json.starts_with("{\"traceEvents\": ["), "{label}: {json}");
        for want in ["\"cat\": \"batch\"", "\"cat\": \"direct\"", "\"cat\": \"copy\"", "\"bytes\": 128"] {
            assert!(json.contains(want), "{label}: no {want} in {json}");
        }
        if stack == Some("cpu") {
            for want in ["compile", "kernel", "fusion"] {
                assert!(json.contains(&format!("\"cat\": \"{want}\"")), "cpu: no {want} span in {json}");
            }
        }
    }
}
