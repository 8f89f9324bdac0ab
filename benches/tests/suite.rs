//! Every benchmark at its tiny sizes on every stack this build can run, in f64 and f32: the
//! checksums must agree with the interp stack's (correctness, not timing). The hand baseline
//! draws the VM's random numbers, so it must agree too, compiled for the binary's target (`hand`)
//! and for the machine's widest vectors (`hand-native`). Then the binary end to end.

use std::process::Command;
use vm_bench::benchmarks::hand_kit::{native, thread_count};
use vm_bench::check::{Tolerance, compare};
use vm_bench::size::SizeName;
use vm_bench::stacks::{self, StackSpec};
use vm_bench::{Precision, benchmarks};

/// The stacks to check besides the eager reference: every stack of the config in effect that
/// plans with the engines compiled in (cpu once registered; opencl and cluster later).
fn stacks_under_test() -> Vec<StackSpec> {
    let names = stacks::available(None).expect("the config in effect parses");
    names.iter().filter(|n| *n != "interp").map(|n| StackSpec::new(None, Some(n))).collect()
}

#[test]
fn every_benchmark_agrees_with_interp_on_every_stack() {
    let stacks = stacks_under_test();
    eprintln!("stacks under test besides interp: {:?}", stacks.iter().map(|s| &s.label).collect::<Vec<_>>());
    let mut failures = Vec::new();
    for precision in [Precision::F64, Precision::F32] {
        for def in benchmarks::all() {
            let tol = if def.exact { Tolerance::EXACT } else { Tolerance::for_precision(precision) };
            for size in def.sizes(SizeName::Tiny) {
                let at = format!("{} {size} {}", def.name, precision.as_str());
                let (vm, _) = StackSpec::eager().build(None).expect("the eager stack builds");
                let reference = (def.vm)(&vm, size.dims(), precision).unwrap_or_else(|e| panic!("{at} on interp: {e}"));
                let again = (def.vm)(&vm, size.dims(), precision).unwrap();
                assert_eq!(
                    reference.checksum.to_bits(),
                    again.checksum.to_bits(),
                    "{at}: interp repeats itself exactly"
                );
                vm.shutdown().unwrap();
                let hand = (def.hand)(size.dims(), precision, thread_count(2));
                let c = compare(reference.checksum, hand.checksum, tol);
                if c.failed() {
                    failures.push(format!("{at} hand: {:?}", c.note));
                }
                let hand_native = (def.hand_native)(size.dims(), precision, thread_count(2), native());
                let c = compare(reference.checksum, hand_native.checksum, tol);
                if c.failed() {
                    failures.push(format!("{at} hand-native ({}): {:?}", native().name(), c.note));
                }
                for spec in &stacks {
                    let (vm, _) = match spec.build(None) {
                        Ok(v) => v,
                        Err(e) => {
                            failures.push(format!("{at} {}: cannot build: {e}", spec.label));
                            continue;
                        }
                    };
                    match (def.vm)(&vm, size.dims(), precision) {
                        Ok(m) => {
                            let c = compare(reference.checksum, m.checksum, tol);
                            if c.failed() {
                                failures.push(format!("{at} {}: {:?}", spec.label, c.note));
                            }
                        }
                        Err(e) => failures.push(format!("{at} {}: {e}", spec.label)),
                    }
                    if let Err(e) = vm.shutdown() {
                        failures.push(format!("{at} {}: shutdown: {e}", spec.label));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_binary_runs_a_tiny_suite_and_writes_json_and_svg() {
    let dir = std::env::temp_dir().join(format!("vm-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("r.json"), dir.join("r.svg"));
    let out = Command::new(env!("CARGO_BIN_EXE_vm-bench"))
        .args(["--size", "tiny", "-b", "heat_equation,montecarlo_pi,overhead", "-q", "--reps", "2", "--warmup", "0"])
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("heat_equation 20*30*5") && stdout.contains("all checksums agree"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "hand-native: the same loops compiled for this machine's widest vectors, chosen at run time: {}",
            vm_bench::benchmarks::hand_kit::native_target()
        )),
        "{stdout}"
    );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4, "heat_equation, montecarlo_pi and overhead's two tiny sizes");
    for g in groups {
        let rows = g["rows"].as_array().unwrap();
        assert_eq!(rows[0]["implementation"], "eager");
        assert_eq!(rows[0]["check"]["verdict"], "reference");
        for hand in ["hand", "hand-native"] {
            assert!(rows.iter().any(|r| r["implementation"] == hand && r["check"]["verdict"] == "agrees"), "{hand}");
        }
        let ratio = rows.iter().find(|r| r["kind"] == "hand_native").unwrap()["ratio_to_hand"].as_f64();
        assert!(ratio.is_some_and(|x| x > 0.0), "hand-native's x hand is its median over hand's");
        for r in rows {
            // The baselines outside this process may be missing (no cc, no NumPy); the python
            // rows appear only when vmnp is installed, and must then run.
            assert!(r["error"].is_null() || r["kind"] == "c" || r["kind"] == "numpy", "{r}");
            assert_ne!(r["check"]["verdict"], "differs", "{r}");
            if r["kind"] == "python" && g["benchmark"] == "heat_equation" {
                assert_eq!(r["check"]["verdict"], "agrees", "{r}");
            }
            assert_eq!(r["times"].as_array().map_or(0, Vec::len), if r["error"].is_null() { 2 } else { 0 });
        }
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("heat_equation"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_peers_agree_with_numpy_and_the_vm_on_the_tiny_suite() {
    let installed: Vec<&str> =
        vm_bench::baseline::peers::Peer::ALL.into_iter().filter(|p| p.available().is_ok()).map(|p| p.name()).collect();
    if installed.is_empty() {
        eprintln!("no peer installed (scripts/setup.sh installs them): nothing to check");
        return;
    }
    let science = "heat_equation,shallow_water,black_scholes,montecarlo_pi,leibnitz_pi,nbody,knn,equation_of_state";
    let json = std::env::temp_dir().join(format!("vm-bench-peers-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_vm-bench"))
        .args(["--size", "tiny", "-b", science, "-s", "cpu", "--no-hand", "--no-python", "--no-c", "-q"])
        .args(["--reps", "1", "--warmup", "1", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    for g in v["groups"].as_array().unwrap() {
        let peers: Vec<&serde_json::Value> =
            g["rows"].as_array().unwrap().iter().filter(|r| r["kind"] == "peer").collect();
        assert_eq!(peers.len(), installed.len(), "{}: {peers:?}", g["benchmark"]);
        for r in peers {
            assert!(r["error"].is_null(), "{r}");
            // Compared with the VM (deterministic inputs) or with NumPy (its random inputs),
            // unless the peer draws its own random numbers.
            let own = g["benchmark"] == "montecarlo_pi" && r["implementation"] != "numexpr";
            let want = if own { "not_compared" } else { "agrees" };
            assert_eq!(r["check"]["verdict"], want, "{}: {r}", g["benchmark"]);
        }
    }
}

#[test]
fn usage_errors_exit_with_status_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_vm-bench")).args(["-b", "no_such_benchmark"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no benchmark `no_such_benchmark`"));
}

/// The benchmark suite at its tiny sizes on stacks with engine plugins: the C example plugin
/// (built here with `cc`) above cpu, and the cpu engine loaded as a plugin
/// (`libvm_cpu_plugin.so`, built by cargo as a dev-dependency): every checksum agrees with interp.
#[test]
fn the_tiny_suite_agrees_with_interp_on_plugin_stacks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let dir = std::env::temp_dir().join(format!("vm-bench-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let built = Command::new("cc")
        .args(["-std=c11", "-O2", "-shared", "-fPIC", "-I"])
        .arg(root.join("bridge-c/include"))
        .arg(root.join("bridge-c/examples/plugins/c-engine/c_engine.c"))
        .arg("-o")
        .arg(dir.join("libc_engine.so"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let exe = std::env::current_exe().unwrap();
    let cpu_plugin = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join("libvm_cpu_plugin.so"))
        .find(|p| p.is_file())
        .expect("cargo builds libvm_cpu_plugin.so beside the tests");
    let config = dir.join("plugins.toml");
    std::fs::write(
        &config,
        format!(
            "[c_engine]\nlibrary = \"libc_engine.so\"\n[cpu_plugin]\nlibrary = \"{}\"\n[stacks]\n\
             c_plugin = [\"node\", \"c_engine\", \"cpu\"]\ncpu_plugin = [\"node\", \"cpu_plugin\", \"interp\"]\n",
            cpu_plugin.display()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_vm-bench"))
            .args(["-q", "--reps", "1", "--warmup", "0", "--no-hand", "--no-numpy", "--no-python", "--no-c"])
            .args(args)
            .arg("-c")
            .arg(&config)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("all checksums agree") && stdout.contains("cpu_plugin"), "{stdout}");
    };
    run(&["--size", "tiny", "-s", "c_plugin,cpu_plugin"]);
    // Kernels long enough for the engine's own bases (versions of deferred arrays) to appear in
    // small kernels that the plugin's child would run the first time: it must not see them.
    run(&["-b", "overhead", "--size", "1*1000*3", "-s", "cpu_plugin"]);
    let _ = std::fs::remove_dir_all(&dir);
}
