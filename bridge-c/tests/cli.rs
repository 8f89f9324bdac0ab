//! The `vm` tool: `vm info`, `vm run`, `vm header`, run as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Runs `vm args...` in the workspace root with no VM_* variables and an empty HOME, so the
/// configuration is the built-in default.
fn vm(args: &[&str], stack: Option<&str>) -> Output {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let home = std::env::temp_dir().join(format!("vm-cli-test-home-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vm"));
    cmd.args(args).current_dir(root()).env("HOME", &home).env("XDG_CONFIG_HOME", home.join(".config"));
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("VM_")) {
            cmd.env_remove(k);
        }
    }
    if let Some(s) = stack {
        cmd.env("VM_STACK", s);
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_dir_all(&home);
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn run_prints_the_synced_arrays_identically_on_every_stack() {
    let default = vm(&["run", "examples/heat.vm"], None);
    assert!(default.status.success(), "{}", text(&default.stderr));
    let out = text(&default.stdout);
    assert!(out.starts_with("grid: f64[6, 6] = [[100,        100,       100,"), "{out}");
    assert!(out.contains("\n                   [  0, 25.5859375,  28.90625,  28.90625, 25.5859375,   0],\n"), "{out}");
    assert!(out.ends_with("total: f64[1] = [724.609375]\n"), "{out}");
    let interp = vm(&["run", "examples/heat.vm", "--stack", "interp"], None);
    assert!(interp.status.success(), "{}", text(&interp.stderr));
    assert_eq!(text(&interp.stdout), out);
    let by_env = vm(&["run", "examples/heat.vm"], Some("interp"));
    assert_eq!(text(&by_env.stdout), out);
    if vm_host::engines::engines_compiled_in().contains(&"cpu") {
        let cpu = vm(&["run", "examples/heat.vm", "--stack", "cpu"], None);
        assert!(cpu.status.success(), "{}", text(&cpu.stderr));
        assert_eq!(text(&cpu.stdout), out, "the cpu stack prints differently");
    }
}

#[test]
fn every_example_runs_identically_on_every_stack() {
    let mut stacks = vec!["interp"];
    if vm_host::engines::engines_compiled_in().contains(&"cpu") {
        stacks.push("cpu");
    }
    for entry in std::fs::read_dir(root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "vm") {
            let file = path.to_str().unwrap();
            let out = vm(&["run", file], None);
            assert!(out.status.success(), "{}: {}", path.display(), text(&out.stderr));
            assert!(!out.stdout.is_empty(), "{} syncs nothing", path.display());
            for stack in &stacks {
                let other = vm(&["run", file, "--stack", stack], None);
                assert!(other.status.success(), "{} on {stack}: {}", path.display(), text(&other.stderr));
                assert_eq!(text(&other.stdout), text(&out.stdout), "{} on {stack}", path.display());
            }
        }
    }
}

#[test]
fn run_reports_errors_with_a_nonzero_status() {
    let dir = std::env::temp_dir().join(format!("vm-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.vm");
    std::fs::write(&bad, ".base a f64 4\nadd a, a\n").unwrap();
    let out = vm(&["run", bad.to_str().unwrap()], None);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert_eq!(err, format!("vm: error: {}:2: `add` takes 3 operands, got 2\n", bad.display()));

    let missing = vm(&["run", "no/such/file.vm"], None);
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("cannot read no/such/file.vm"), "{}", text(&missing.stderr));

    let stack = vm(&["run", "examples/heat.vm", "--stack", "nope"], None);
    assert!(!stack.status.success());
    assert!(text(&stack.stderr).contains("the requested stack `nope`"), "{}", text(&stack.stderr));

    std::fs::write(dir.join("bad.toml"), "stack = 3\n").unwrap();
    let config = vm(&["run", "examples/heat.vm", "--config", dir.join("bad.toml").to_str().unwrap()], None);
    assert!(!config.status.success());
    assert!(text(&config.stderr).contains("bad.toml:1"), "{}", text(&config.stderr));

    let ext = dir.join("ext.vm");
    std::fs::write(&ext, ".base a f64 4\next no_such_method a, a\nsync a\n").unwrap();
    let out = vm(&["run", ext.to_str().unwrap()], None);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no_such_method"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `program` to a file of a fresh directory, runs `vm run` on it and returns the file's
/// path (as the error names it) with the result.
fn run_file(name: &str, program: &str) -> (String, Output) {
    let dir = std::env::temp_dir().join(format!("vm-cli-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.vm"));
    std::fs::write(&file, program).unwrap();
    let out = vm(&["run", file.to_str().unwrap()], None);
    let _ = std::fs::remove_dir_all(&dir);
    (file.display().to_string(), out)
}

#[test]
fn run_errors_name_the_file_and_line() {
    // A parse error: the line the parser stopped on; an unknown suffix is called that.
    let (file, out) = run_file("suffix", ".base a f64 4\n\nadd a, a, 0.25f46\n");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!("vm: error: {file}:3: unknown dtype suffix `f46` in constant `0.25f46`")),
        "{err}"
    );
    assert!(!err.contains("0.25f46i64"), "{err}");
    // An error found at submission (an extension method's operands): the instruction's line,
    // even when earlier instructions and syncs ran fine.
    let program = ".base a f64 4\n.base m f64 4\nrange a\nsync a\nadd a, a, 1f64\next matmul m\nsync m\n";
    let (file, out) = run_file("matmul", program);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "a: f64[4] = [0, 1, 2, 3]\n", "what ran before the error is printed");
    let err = text(&out.stderr);
    assert_eq!(err, format!("vm: error: {file}:6: invalid instruction: matmul takes 3 operands (out, a, b), got 1\n"));
    // An execution error: the line of the sync whose batch failed.
    let program = ".base a f64 4\n.base i i64 1\n.base o f64 1\nidentity i, 9i64\ngather o, a, i\nsync o\n";
    let (file, out) = run_file("gather", program);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with(&format!("vm: error: {file}:6: execution failed: ")), "{err}");
}

/// Peak memory of `vm run` printing a base of 2^26 u8 elements: the output (192 MiB of text)
/// streams; building it in memory first took about 60 bytes per element, 4 GiB here. The
/// child runs under an address-space limit of 1 GiB, which the old way could not live within.
#[test]
fn run_streams_its_output() {
    let n: usize = 1 << 26;
    let dir = std::env::temp_dir().join(format!("vm-cli-test-{}-stream", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.vm");
    std::fs::write(&file, format!(".base big u8 {n}\nrange big\nsync big\n")).unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"ulimit -v 1048576 && exec "$0" run "$1" --stack interp"#)
        .arg(env!("CARGO_BIN_EXE_vm"))
        .arg(&file)
        .current_dir(root())
        .env("HOME", &dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("VM_")) {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.spawn().unwrap();
    // Read the output as it comes, keeping only its length, start and end.
    let mut stdout = child.stdout.take().unwrap();
    let (mut len, mut head, mut tail) = (0usize, Vec::new(), Vec::new());
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let k = std::io::Read::read(&mut stdout, &mut buf).unwrap();
        if k == 0 {
            break;
        }
        if head.len() < 64 {
            head.extend_from_slice(&buf[..k.min(64 - head.len())]);
        }
        tail.extend_from_slice(&buf[..k]);
        let cut = tail.len().saturating_sub(64);
        tail.drain(..cut);
        len += k;
    }
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}: {}", out.status, text(&out.stderr));
    assert!(text(&head).starts_with("big: u8[67108864] = [0, 1, 2, 3, 4,"), "{}", text(&head));
    assert!(text(&tail).ends_with(", 252, 253, 254, 255]\n"), "{}", text(&tail));
    // Each element is its digits and ", " (the last one "]\n"): 0..=255 repeated.
    let per_cycle: usize = (0..256).map(|x: usize| x.to_string().len() + 2).sum();
    assert_eq!(len, "big: u8[67108864] = [".len() + per_cycle * (n / 256));
}

#[test]
fn info_names_config_stack_components_and_engines() {
    let out = vm(&["info"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for want in ["config: <embedded default>", "stack:", "node", "interp", "engines compiled in:", "the stack builds"] {
        assert!(s.contains(want), "`{want}` missing from:\n{s}");
    }
    // The default stack's cpu engine reports its (typed) statistics: nothing run yet.
    assert!(s.contains("statistics: 0 batches, 0 kernels"), "{s}");
    assert!(s.contains("cache hits 0 / misses 0"), "{s}");
    let chosen = vm(&["info", "--stack", "interp"], None);
    assert!(text(&chosen.stdout).contains("stack:  interp"), "{}", text(&chosen.stdout));
    let file = vm(&["info", "--config", "config/examples/interp.toml"], None);
    assert!(file.status.success(), "{}", text(&file.stderr));
    assert!(text(&file.stdout).contains("config: config/examples/interp.toml"), "{}", text(&file.stdout));
}

#[test]
fn header_prints_the_committed_vm_h() {
    let out = vm(&["header"], None);
    assert!(out.status.success());
    let committed = std::fs::read_to_string(root().join("bridge-c/include/vm.h")).unwrap();
    assert_eq!(text(&out.stdout), committed);
}

#[test]
fn component_header_prints_the_committed_vm_component_h() {
    let out = vm(&["component-header"], None);
    assert!(out.status.success());
    let committed = std::fs::read_to_string(root().join("bridge-c/include/vm_component.h")).unwrap();
    assert_eq!(text(&out.stdout), committed);
}

#[test]
fn info_shows_a_plugin_with_its_library_abi_version_and_description() {
    let dir = std::env::temp_dir().join(format!("vm-cli-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let built = Command::new("cc")
        .args(["-std=c11", "-O1", "-Wall", "-Werror", "-shared", "-fPIC", "-I"])
        .arg(root().join("bridge-c/include"))
        .arg(root().join("bridge-c/examples/plugins/c-engine/c_engine.c"))
        .arg("-o")
        .arg(dir.join("libc_engine.so"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built.stderr));
    let config = dir.join("vm.toml");
    std::fs::write(&config, "[c_engine]\nlibrary = \"libc_engine.so\"\nmin_elements = 8\n[stacks]\nplugin = [\"node\", \"c_engine\", \"interp\"]\n")
        .unwrap();
    let out = vm(&["info", "--config", config.to_str().unwrap()], None);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    for want in [
        "c_engine",
        "libc_engine.so",
        "component ABI 1",
        "f64 add, subtract",
        "min_elements",
        "8",
        "instructions run here",
    ] {
        assert!(s.contains(want), "`{want}` missing from:\n{s}");
    }
}

/// `VM_PROFILE=trace.json` writes the engines' spans as a Chrome trace at shutdown; a trace that
/// cannot be written is an error naming the file.
#[test]
fn vm_profile_with_a_json_file_writes_a_trace() {
    if !vm_host::engines::engines_compiled_in().contains(&"cpu") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("vm-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.json");
    let run = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_vm"))
            .args(["run", "examples/heat.vm", "--stack", "cpu"])
            .current_dir(root())
            .env("VM_PROFILE", path)
            .env("VM_CPU_FIRST_RUNS_ON_CHILD", "false")
            .output()
            .unwrap()
    };
    let out = run(&trace);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = std::fs::read_to_string(&trace).unwrap();
    assert!(
        json.starts_with("{\"traceEvents\": [") && json.trim_end().ends_with("\"displayTimeUnit\": \"ms\"}"),
        "{json}"
    );
    assert!(json.contains("\"cat\": \"compile\"") && json.contains("\"cat\": \"kernel\""), "{json}");
    assert!(json.contains("\"positions\": ") && json.contains("\"bytes\": "), "{json}");
    let bad = run(&dir.join("no-such-dir").join("trace.json"));
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("cannot write the trace to"), "{}", text(&bad.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}
