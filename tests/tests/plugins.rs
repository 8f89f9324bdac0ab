//! Engine plugins loaded from shared libraries through `vm_component.h`: the C example plugin
//! (`bridge-c/examples/plugins/c-engine`), built here with `cc` against the header alone, and the
//! cpu engine built as a plugin (`libvm_cpu_plugin.so`, crate `vm-cpu-plugin`), on stacks against
//! interp on random programs and the C programs; the errors of every kind of unusable library;
//! an error in the middle of a batch.

use std::path::{Path, PathBuf};
use std::process::Command;
use vm_host::StackChoice;
use vm_ir::{DType, Error, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::config::Env;
use vm_runtime::{Component, Runtime, RuntimeOptions};
use vm_testkit::{Agree, Data, random_program_count, random_program_failures};
use vm_tests::{Scratch, compile, include_dir, libvm_dir, run, run_with, workspace_root};

/// Compiles the C file `src` into the plugin library `dir/lib<name>.so` with warnings as errors.
fn build_plugin(src: &Path, dir: &Path, name: &str) -> PathBuf {
    let lib = dir.join(format!("lib{name}.so"));
    let out = Command::new("cc")
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-pedantic", "-Werror", "-shared", "-fPIC", "-I"])
        .arg(include_dir())
        .arg(src)
        .arg("-o")
        .arg(&lib)
        .output()
        .expect("cc runs");
    assert!(out.status.success(), "compiling {} failed:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    lib
}

/// Builds `text` as a plugin library named `name` in `dir`.
fn build_plugin_text(text: &str, dir: &Path, name: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, text).unwrap();
    build_plugin(&src, dir, name)
}

const CONFIG: &str = r#"
stack = "plugin"

[c_engine]
library = "libc_engine.so"

[c_engine_alone]
library = "libc_engine.so"

[stacks]
plugin = ["node", "c_engine", "interp"]
plugin_cpu = ["node", "c_engine", "cpu"]
alone = ["node", "c_engine_alone"]
"#;

/// A directory with the C example plugin and a config naming it ([`CONFIG`]).
struct Setup {
    dir: Scratch,
    config: PathBuf,
}

fn setup() -> Setup {
    let dir = Scratch::new("plugin");
    let src = workspace_root().join("bridge-c/examples/plugins/c-engine/c_engine.c");
    build_plugin(&src, &dir.0, "c_engine");
    let config = dir.0.join("vm.toml");
    std::fs::write(&config, CONFIG).unwrap();
    Setup { dir, config }
}

fn build(config: &Path, stack: &str) -> vm_ir::Result<Box<dyn Component>> {
    let (plan, registry) = vm_host::stack::plan(Some(config), &StackChoice::Named(stack.into()), &Env::new())?;
    plan.build(&registry)
}

#[test]
fn random_programs_on_the_c_plugin_agree_with_interp() {
    let s = setup();
    for (stack, agree) in [("plugin", Agree::Exact), ("plugin_cpu", Agree::REORDERED)] {
        let make = || build(&s.config, stack).unwrap();
        let (subject, failures) = random_program_failures(stack, random_program_count(300), Data::Full, agree, make);
        assert!(failures.is_empty(), "{} programs disagree:\n{}", failures.len(), failures[..1].join("\n"));
        let info = subject.describe();
        let plugin = info.iter().find(|c| c.implementation == "c_engine").expect("the plugin is in the stack");
        assert!(plugin.notes.iter().any(|n| n.contains("instructions run here")), "{:?}", plugin.notes);
        assert!(!plugin.notes.iter().any(|n| n.starts_with("0 instructions run here")), "{:?}", plugin.notes);
    }
}

#[test]
fn the_stack_describes_the_plugin_with_its_library_abi_and_settings() {
    let s = setup();
    let top = build(&s.config, "plugin").unwrap();
    let info = top.describe();
    let plugin = &info[1];
    assert_eq!((plugin.name.as_str(), plugin.implementation.as_str()), ("c_engine", "c_engine"));
    let library = s.dir.0.join("libc_engine.so").canonicalize().unwrap();
    let first = &plugin.notes[0];
    assert!(first.contains(&library.display().to_string()) && first.contains("component ABI 1"), "{first}");
    assert!(first.contains("f64 add, subtract, multiply and add_reduce"), "{first}");
    assert_eq!(plugin.settings, vec![("min_elements".to_string(), "0".to_string())]);
    // ... and overridden from the environment like a built-in's.
    let env = Env::new().with_var("VM_C_ENGINE_MIN_ELEMENTS", "16");
    let (plan, registry) = vm_host::stack::plan(Some(&s.config), &StackChoice::Named("plugin".into()), &env).unwrap();
    let overridden = plan.build(&registry).unwrap().describe();
    assert_eq!(overridden[1].settings, vec![("min_elements".to_string(), "16".to_string())]);
    // Settings the plugin declares are checked like a built-in's.
    let bad = s.dir.0.join("bad.toml");
    std::fs::write(&bad, CONFIG.replace("[c_engine]\n", "[c_engine]\nmin_elements = -1\n")).unwrap();
    let e = build(&bad, "plugin").err().expect("a range error").to_string();
    assert!(e.contains("min_elements") && e.contains("-1"), "{e}");
    let typo = s.dir.0.join("typo.toml");
    std::fs::write(&typo, CONFIG.replace("[c_engine]\n", "[c_engine]\nmin_elemnts = 4\n")).unwrap();
    let e = build(&typo, "plugin").err().expect("an unknown key").to_string();
    assert!(e.contains("unknown key `min_elemnts`") && e.contains("min_elements"), "{e}");
}

#[test]
fn c_programs_give_interp_results_on_the_plugin() {
    let s = setup();
    for program in ["heat.c", "basics.c"] {
        let exe = compile(program, &s.dir.0);
        let reference = run(&exe, Some("interp"));
        let config = s.config.to_str().unwrap();
        for stack in ["plugin", "plugin_cpu"] {
            let out = run_with(&[], &exe, &[("VM_CONFIG", config), ("VM_STACK", stack)]);
            assert!(out.status.success(), "{program} on {stack}: {}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&reference.stdout),
                "{program} on {stack}"
            );
        }
    }
}

#[test]
fn the_c_plugin_is_valgrind_clean() {
    let s = setup();
    let exe = compile("heat.c", &s.dir.0);
    let valgrind = ["valgrind", "--error-exitcode=99", "--leak-check=full", "--quiet"];
    let config = s.config.to_str().unwrap();
    let out = run_with(&valgrind, &exe, &[("VM_CONFIG", config), ("VM_STACK", "plugin")]);
    assert!(out.status.success(), "valgrind: {}", String::from_utf8_lossy(&out.stderr));
}

/// The error building `stack` of a config whose plugin table names `library` (written in `dir`).
fn load_error(dir: &Path, library: &str) -> String {
    let config = dir.join(format!("{}.toml", library.replace(['/', '.'], "_")));
    let text = format!(
        "stack = \"p\"\n[p_engine]\nlibrary = \"{library}\"\n[stacks]\np = [\"node\", \"p_engine\", \"interp\"]\n"
    );
    std::fs::write(&config, text).unwrap();
    match build(&config, "p") {
        Ok(_) => panic!("{library} loaded"),
        Err(e) => {
            assert!(matches!(e, Error::Config { .. }), "{e:?}");
            e.to_string()
        }
    }
}

/// A plugin whose entry table is `api` (C initialiser text for a `vm_component_api`).
fn plugin_source(api: &str) -> String {
    format!(
        "#include <stddef.h>\n#include \"vm_component.h\"\n\
         static void *create(const vm_setting *s, size_t n, int c, vm_host *h, const vm_host_api *api) {{\n\
         (void)s; (void)n; (void)c; api->fail(h, VM_ERR_CONFIG, \"no license for this engine\"); return NULL; }}\n\
         static int execute(void *e, const vm_instruction *b, size_t n, vm_host *h, const vm_host_api *a) {{\n\
         (void)e; (void)b; (void)n; (void)h; (void)a; return VM_OK; }}\n\
         static void destroy(void *e) {{ (void)e; }}\n\
         static const vm_component_api API = {api};\n\
         const vm_component_api *vm_component_entry(void) {{ return &API; }}\n"
    )
}

#[test]
fn unusable_libraries_are_config_errors_naming_the_file() {
    let dir = Scratch::new("plugin-errors");
    // a file that is not there
    let e = load_error(&dir.0, "missing/libnothing.so");
    assert!(e.contains("missing/libnothing.so") && e.contains("cannot open"), "{e}");
    // a file that is not a library
    std::fs::write(dir.0.join("libtext.so"), "not a library").unwrap();
    let e = load_error(&dir.0, "libtext.so");
    assert!(e.contains("libtext.so") && e.contains("cannot load"), "{e}");
    // a library without the entry symbol
    build_plugin_text("int vm_something_else;\n", &dir.0, "noentry");
    let e = load_error(&dir.0, "libnoentry.so");
    assert!(e.contains("libnoentry.so") && e.contains("does not export `vm_component_entry`"), "{e}");
    // a library built for another ABI version
    let api = "{ 99, \"old\", \"an old engine\", NULL, 0, 0, create, execute, NULL, NULL, NULL, destroy }";
    build_plugin_text(&plugin_source(api), &dir.0, "old");
    let e = load_error(&dir.0, "libold.so");
    assert!(e.contains("libold.so") && e.contains("version 99") && e.contains("version 1"), "{e}");
    // a plugin that refuses to be created
    let api = "{ VM_COMPONENT_ABI_VERSION, \"refuser\", \"refuses\", NULL, 0, 0, create, execute, NULL, NULL, NULL, destroy }";
    build_plugin_text(&plugin_source(api), &dir.0, "refuser");
    let e = load_error(&dir.0, "librefuser.so");
    assert!(e.contains("librefuser.so") && e.contains("no license for this engine"), "{e}");
    // a plugin calling itself like a built-in
    let api =
        "{ VM_COMPONENT_ABI_VERSION, \"cpu\", \"impostor\", NULL, 0, 0, create, execute, NULL, NULL, NULL, destroy }";
    build_plugin_text(&plugin_source(api), &dir.0, "impostor");
    let e = load_error(&dir.0, "libimpostor.so");
    assert!(e.contains("built-in"), "{e}");
}

fn view(base: vm_ir::Base) -> Operand {
    Operand::View(View::of_base(base))
}

#[test]
fn an_error_mid_batch_leaves_the_runtime_usable_and_other_data_intact() {
    let s = setup();
    let top = build(&s.config, "alone").unwrap();
    let mut rt = Runtime::new(top, RuntimeOptions::default());
    let n = 100u64;
    let a = rt.new_base(DType::F64, n).unwrap();
    let b = rt.new_base(DType::F64, n).unwrap();
    let c = rt.new_base(DType::F64, n).unwrap();
    let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_ne_bytes()).collect();
    rt.write(a.id, 0, &bytes).unwrap();
    // b = a + 1 runs in the plugin; sqrt has no child to go to: the batch fails there.
    let batch = vec![
        Instruction::new(Opcode::Add, [view(b), view(a), Operand::Const(Scalar::F64(1.0))]),
        Instruction::new(Opcode::Sqrt, [view(c), view(a)]),
        Instruction::new(Opcode::Sync, [view(b)]),
    ];
    let e = rt.submit(batch).unwrap_err().to_string();
    assert!(e.contains("plugin `c_engine_alone`") && e.contains("needs a child"), "{e}");
    // The base written by the host is intact, and the runtime runs the next batch.
    rt.sync(a.id).unwrap();
    assert_eq!(rt.host_slice::<f64>(a.id).unwrap(), &values[..]);
    rt.submit(vec![Instruction::new(Opcode::Multiply, [view(b), view(a), Operand::Const(Scalar::F64(2.0))])]).unwrap();
    rt.sync(b.id).unwrap();
    let doubled: Vec<f64> = values.iter().map(|x| x * 2.0).collect();
    assert_eq!(rt.host_slice::<f64>(b.id).unwrap(), &doubled[..]);
}

/// A config with the cpu engine loaded as a plugin (the library cargo built beside libvm.so).
/// A config whose stack `cpu_plugin` runs the cpu engine as a plugin over interp; with
/// `first_runs_on_child`, batches seen for the first time go to interp through the plugin's child.
fn cpu_plugin_config(dir: &Path, first_runs_on_child: bool) -> PathBuf {
    let library = libvm_dir().join("libvm_cpu_plugin.so");
    assert!(library.is_file(), "cargo builds {} as a dependency of these tests", library.display());
    let config = dir.join("cpu_plugin.toml");
    let text = format!(
        "stack = \"cpu_plugin\"\n[cpu_plugin]\nlibrary = \"{}\"\nthreads = 2\nfirst_runs_on_child = {first_runs_on_child}\n[stacks]\ncpu_plugin = [\"node\", \"cpu_plugin\", \"interp\"]\n",
        library.display()
    );
    std::fs::write(&config, text).unwrap();
    config
}

#[test]
fn the_cpu_engine_as_a_plugin_agrees_with_interp() {
    let dir = Scratch::new("cpu-plugin");
    // First sightings on the child: every random program goes to interp through the plugin's
    // child (the host's child_execute) before the engine compiles it.
    let config = cpu_plugin_config(&dir.0, true);
    let make = || build(&config, "cpu_plugin").unwrap();
    let (_, failures) =
        random_program_failures("cpu_plugin", random_program_count(300), Data::Full, Agree::REORDERED, make);
    assert!(failures.is_empty(), "{} programs disagree:\n{}", failures.len(), failures[..1].join("\n"));
    // Without: the engine runs them itself.
    let config = cpu_plugin_config(&dir.0, false);
    let make = || build(&config, "cpu_plugin").unwrap();
    let (subject, failures) =
        random_program_failures("cpu_plugin", random_program_count(300), Data::Full, Agree::REORDERED, make);
    assert!(failures.is_empty(), "{} programs disagree:\n{}", failures.len(), failures[..1].join("\n"));
    let info = subject.describe();
    let plugin = info.iter().find(|c| c.implementation == "cpu_plugin").expect("the plugin is in the stack");
    assert!(plugin.settings.contains(&("threads".to_string(), "2".to_string())), "{:?}", plugin.settings);
    assert!(
        plugin.notes.iter().any(|n| n.contains("Cranelift JIT, 2 threads") && n.contains("kernels")),
        "{:?}",
        plugin.notes
    );
}

#[test]
fn c_programs_give_interp_results_on_the_cpu_plugin() {
    let dir = Scratch::new("cpu-plugin-c");
    let config = cpu_plugin_config(&dir.0, false);
    for program in ["heat.c", "basics.c"] {
        let exe = compile(program, &dir.0);
        let reference = run(&exe, Some("interp"));
        let out = run_with(&[], &exe, &[("VM_CONFIG", config.to_str().unwrap())]);
        assert!(out.status.success(), "{program}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&reference.stdout), "{program}");
    }
}
