//! Every configuration file shipped under `config/` plans and builds with the implementations
//! of this build, stack by stack, and so do the settings `config/default.toml` shows commented
//! out: examples and hints cannot drift from what the code accepts.
//!
//! A stack with the `cluster` manager is only planned (building it needs `mpirun` and a build
//! with the `mpi` feature; `scripts/test-mpi.sh` covers that). A stack with an OpenCL engine is
//! built when an OpenCL platform with a device is present (PoCL, installed by
//! `scripts/setup.sh`, provides one on any machine), else only planned.

use std::path::{Path, PathBuf};
use vm_host::{StackChoice, engines};
use vm_runtime::config::{Config, Env};
use vm_runtime::stack::{Registry, StackPlan};

fn config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

/// Every `.toml` file under `dir`, recursively, sorted (but the crate's manifest, `Cargo.toml`).
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") && !path.ends_with("Cargo.toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Plans the stack `choice` picks in `config`.
fn plan_stack(config: &Config, choice: &StackChoice, registry: &Registry, env: &Env) -> vm_ir::Result<StackPlan> {
    StackPlan::new(config, &config.select_stack(choice, env)?, registry, env)
}

fn opencl_available() -> bool {
    vm_opencl::device::all_devices().is_ok_and(|d| !d.is_empty())
}

/// Plans every stack of `config` in `env` and builds those that can be built here; returns
/// the names of the stacks built. Panics naming `what` and the stack on any failure.
fn plan_and_build_every_stack(config: &Config, env: &Env, what: &str) -> Vec<String> {
    let registry = engines::registry().unwrap();
    let opencl = opencl_available();
    let mut built = Vec::new();
    assert!(!config.stacks.is_empty(), "{what} defines no stack");
    for name in config.stacks.keys() {
        let plan = plan_stack(config, &StackChoice::Named(name.clone()), &registry, env)
            .unwrap_or_else(|e| panic!("{what}, stack {name}: {e}"));
        let uses = |imp: &str| plan.components.iter().any(|c| c.implementation == imp);
        if uses("cluster") || (uses("opencl") && !opencl) {
            continue;
        }
        let mut top = plan.build(&registry).unwrap_or_else(|e| panic!("{what}, stack {name} does not build: {e}"));
        top.shutdown().unwrap_or_else(|e| panic!("{what}, stack {name} does not shut down: {e}"));
        built.push(name.clone());
    }
    built
}

/// An environment with no configuration of the machine's: the current directory and home are
/// an empty scratch directory.
fn clean_env(tag: &str) -> (Env, PathBuf) {
    let dir = std::env::temp_dir().join(format!("vm-config-files-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env = Env::new().with_cwd(&dir).with_var("HOME", dir.to_str().unwrap());
    (env, dir)
}

#[test]
fn every_config_file_plans_and_builds() {
    let files = toml_files(&config_dir());
    assert!(files.iter().any(|f| f.ends_with("default.toml")), "{files:?}");
    assert!(files.iter().any(|f| f.ends_with("examples/opencl-gpu.toml")), "{files:?}");
    let (env, dir) = clean_env("files");
    let mut built = 0;
    for file in &files {
        let config = Config::load(file).unwrap_or_else(|e| panic!("{e}"));
        built += plan_and_build_every_stack(&config, &env, &file.display().to_string()).len();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(built >= files.len(), "only {built} stacks built from {} files", files.len());
}

/// `config/default.toml` with its commented-out settings uncommented: `# [table]` and
/// `# key = value` lines lose their `# `, prose comments stay.
fn default_with_hints() -> String {
    let text = std::fs::read_to_string(config_dir().join("default.toml")).unwrap();
    let is_hint = |l: &str| {
        let Some(rest) = l.strip_prefix("# ") else { return false };
        rest.starts_with('[')
            || rest
                .split_once(" = ")
                .is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
    };
    let lines: Vec<&str> = text.lines().map(|l| if is_hint(l) { &l[2..] } else { l }).collect();
    lines.join("\n") + "\n"
}

#[test]
fn the_settings_hinted_in_the_default_config_are_accepted() {
    let text = default_with_hints();
    for hint in ["\n[opencl]", "\ndevice = ", "\ncache_dir = ", "\n[cpu]", "\nthreads = 0", "\n[gpu1]"] {
        assert!(text.contains(hint), "`{}` is no longer a hint of config/default.toml", hint.trim());
    }
    let config = Config::parse(&text, "default.toml with its hints").unwrap_or_else(|e| panic!("{e}"));
    // Build with a cache directory in the scratch directory, not the default's (none).
    let (env, dir) = clean_env("hints");
    let env = env.with_var("VM_OPENCL_CACHE_DIR", dir.join("cache").to_str().unwrap());
    let built = plan_and_build_every_stack(&config, &env, "config/default.toml with its hints");
    assert!(built.contains(&"cpu".to_string()), "{built:?}");
    if opencl_available() {
        assert!(built.contains(&"opencl".to_string()), "{built:?}");
    }
    // The named component of the hints, in a stack of its own, plans (its device may not exist).
    let with_gpu1 = text.replace("[stacks]\n", "[stacks]\ngpu1 = [\"node\", \"gpu1\", \"cpu\"]\n");
    let config = Config::parse(&with_gpu1, "default.toml with gpu1").unwrap();
    let registry = engines::registry().unwrap();
    plan_stack(&config, &StackChoice::Named("gpu1".into()), &registry, &env).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The settings `config/default.toml` shows commented out are settings of their implementation,
/// and in a table named after an implementation they show its default: the comments are checked
/// against the settings structs, so they cannot drift from the code.
#[test]
fn the_settings_hinted_in_the_default_config_show_the_defaults() {
    let config = Config::parse(&default_with_hints(), "config/default.toml").unwrap_or_else(|e| panic!("{e}"));
    let registry = engines::registry().unwrap();
    let mut checked = 0;
    for table in config.components.values() {
        let imp = registry.get(table.implementation()).unwrap_or_else(|| panic!("[{}]: no implementation", table.name));
        for (key, v) in &table.values {
            let at = format!("config/default.toml:{}: `{key} = {}` in [{}]", v.line.unwrap(), v.value, table.name);
            let spec = imp.settings.iter().find(|s| s.key == key).unwrap_or_else(|| panic!("{at}: no such setting"));
            assert!(spec.kind.accepts(&v.value), "{at}: a {:?} setting", spec.kind);
            if table.implementation.is_none() {
                assert_eq!(Some(&v.value), spec.default_value().as_ref(), "{at}: the default is {}", spec.default);
            }
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} hinted settings");
}

#[test]
fn opencl_device_takes_an_index_or_a_name() {
    let registry = engines::registry().unwrap();
    let (env, dir) = clean_env("device");
    let plan_with = |device: &str| {
        let text = format!("[stacks]\ng = [\"node\", \"g\", \"cpu\"]\n[g]\nimpl = \"opencl\"\ndevice = {device}\n");
        let config = Config::parse(&text, "g.toml").unwrap();
        plan_stack(&config, &StackChoice::Config, &registry, &env)
    };
    for device in ["0", "\"0\"", "\"\""] {
        plan_with(device).unwrap_or_else(|e| panic!("device = {device}: {e}"));
    }
    let e = plan_with("-1").unwrap_err().to_string();
    assert!(e.contains("g.toml:5") && e.contains("[g] device = -1 is out of range"), "{e}");
    let bad = plan_with("true").unwrap().build(&registry).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(bad.contains("[g] device must be an index (an integer, 0 or more) or a name (a string)"), "{bad}");
    if opencl_available() {
        let first = vm_opencl::device::all_devices().unwrap().remove(0);
        // By index, by a part of its name in any case; and a name no device has is an error
        // naming the devices found.
        let part = first.name.split_whitespace().next().unwrap().to_uppercase();
        for device in ["0".to_string(), format!("\"{part}\"")] {
            let mut top = plan_with(&device).unwrap().build(&registry).unwrap_or_else(|e| panic!("{device}: {e}"));
            top.shutdown().unwrap();
        }
        let e = plan_with("\"no such device\"").unwrap().build(&registry).err().unwrap().to_string();
        assert!(e.contains("no OpenCL device matches") && e.contains(&first.name), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
