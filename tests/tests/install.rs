//! `scripts/install.sh`: the installed tree (library with its SONAME and symlinks, headers,
//! pkg-config file, CMake package, the `vm` tool), and programs built against it the ways a user
//! would, with no path into the source tree: C and C++ through pkg-config, C through CMake's
//! `find_package(vm)`. The programs are `tests/install/`, copied into a scratch directory first.
//!
//! The script installs the `libvm.so` cargo built for this test run (`VM_INSTALL_FROM`, so no
//! nested cargo build). Cargo builds no binaries of a dependency, so that directory usually has no
//! `vm` tool: the script then installs the rest and says so, which is checked too.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use vm_tests::{Scratch, libvm_dir, workspace_root};

/// `sum = 502000`: what every program of `tests/install` prints.
const SUM: &str = "sum = 502000\n";

/// The package version (workspace Cargo.toml) and the C ABI's major version (`ABI_VERSION`).
fn versions() -> (String, u32) {
    (env!("CARGO_PKG_VERSION").to_string(), vm::abi::ABI_VERSION)
}

/// A command with an environment that cannot lead into the source tree or another installed
/// copy: no compiler, linker, pkg-config or CMake search paths, no `VM_*` variables, and `HOME`
/// in `home`.
fn clean(program: &str, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        if k.starts_with("VM_")
            || k.starts_with("PKG_CONFIG")
            || k.starts_with("CMAKE_")
            || ["CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "LD_LIBRARY_PATH", "LD_RUN_PATH"]
                .contains(&k)
        {
            cmd.env_remove(k);
        }
    }
    cmd.env("HOME", home).env("XDG_CONFIG_HOME", home.join(".config"));
    cmd
}

/// Runs `cmd`, asserts that it exits 0, and returns its stdout.
fn ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot start {what} ({cmd:?}): {e}"));
    assert!(out.status.success(), "{what} failed with {}:\n{}", out.status, text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn text(out: &Output) -> String {
    format!("--- stdout\n{}--- stderr\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A scratch directory with a prefix that `scripts/install.sh` installed into, an empty home,
/// and the installer's stdout.
struct Installed {
    scratch: Scratch,
    prefix: PathBuf,
    stdout: String,
}

impl Installed {
    fn new(tag: &str) -> Installed {
        let scratch = Scratch::new(tag);
        let prefix = scratch.0.join("prefix");
        std::fs::create_dir_all(scratch.0.join("home")).expect("create a home directory");
        let stdout = ok(
            clean("bash", &scratch.0.join("home"))
                .arg(workspace_root().join("scripts/install.sh"))
                .arg(&prefix)
                .env("VM_INSTALL_FROM", libvm_dir()),
            "scripts/install.sh",
        );
        Installed { scratch, prefix, stdout }
    }

    fn home(&self) -> PathBuf {
        self.scratch.0.join("home")
    }

    fn lib(&self) -> PathBuf {
        self.prefix.join("lib")
    }

    /// Copies `tests/install/<names>` into a new directory `<scratch>/<dir>`.
    fn sources(&self, dir: &str, names: &[&str]) -> PathBuf {
        let to = self.scratch.0.join(dir);
        std::fs::create_dir_all(&to).expect("create a source directory");
        for name in names {
            let from = workspace_root().join("tests/install").join(name);
            std::fs::copy(&from, to.join(name)).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
        }
        to
    }

    /// Compiles `dir/<src>` with `compiler` and the flags of `pkg-config --cflags --libs vm`
    /// (found through `PKG_CONFIG_PATH=<prefix>/lib/pkgconfig`), as the shell line
    /// `<compiler> <flags> <src> $(pkg-config --cflags --libs vm) -o <exe>` does.
    fn build_with_pkg_config(&self, dir: &Path, compiler: &str, flags: &str, src: &str) -> PathBuf {
        let exe = dir.join(Path::new(src).file_stem().expect("a file name"));
        let line = format!("{compiler} {flags} {src} $(pkg-config --cflags --libs vm) -o {}", exe.display());
        ok(
            clean("sh", &self.home())
                .args(["-c", &line])
                .current_dir(dir)
                .env("PKG_CONFIG_PATH", self.lib().join("pkgconfig")),
            &line,
        );
        exe
    }

    /// Runs `exe` (in an empty directory, with the built-in configuration), with
    /// `LD_LIBRARY_PATH=<prefix>/lib` when `ld_path`; returns its stdout.
    fn run(&self, exe: &Path, ld_path: bool) -> String {
        let mut cmd = clean(exe.to_str().expect("a UTF-8 path"), &self.home());
        cmd.current_dir(self.home());
        if ld_path {
            cmd.env("LD_LIBRARY_PATH", self.lib());
        }
        ok(&mut cmd, &exe.display().to_string())
    }

    /// Asserts that `exe` needs `libvm.so.<major>` and that the loader finds it in the prefix.
    fn assert_loads_the_installed_library(&self, exe: &Path, ld_path: bool) {
        let (_, major) = versions();
        let soname = format!("libvm.so.{major}");
        let dynamic = ok(Command::new("readelf").arg("-d").arg(exe), "readelf -d");
        assert!(
            dynamic.contains(&format!("Shared library: [{soname}]")),
            "{} needs no {soname}:\n{dynamic}",
            exe.display()
        );
        let mut ldd = clean("ldd", &self.home());
        ldd.arg(exe);
        if ld_path {
            ldd.env("LD_LIBRARY_PATH", self.lib());
        }
        let ldd = ok(&mut ldd, "ldd");
        let expected = format!("{soname} => {}", self.lib().join(&soname).display());
        assert!(ldd.contains(&expected), "`{expected}` missing from ldd's output:\n{ldd}");
    }
}

#[test]
fn install_sh_installs_library_headers_pkg_config_and_cmake_package() {
    let inst = Installed::new("install-tree");
    let (version, major) = versions();
    let lib = inst.lib();
    let real = format!("libvm.so.{version}");
    let soname = format!("libvm.so.{major}");

    // The library, its two symlinks, and its SONAME.
    assert!(lib.join(&real).is_file() && !lib.join(&real).is_symlink(), "{real} is not a file");
    assert_eq!(std::fs::read_link(lib.join(&soname)).expect("the SONAME symlink"), Path::new(&real));
    assert_eq!(std::fs::read_link(lib.join("libvm.so")).expect("the libvm.so symlink"), Path::new(&soname));
    let dynamic = ok(Command::new("readelf").arg("-d").arg(lib.join(&real)), "readelf -d");
    assert!(dynamic.contains(&format!("Library soname: [{soname}]")), "no SONAME {soname}:\n{dynamic}");

    // The headers: what the repository has.
    let include = inst.prefix.join("include");
    for h in ["vm.h", "vm_component.h", "vm.hpp"] {
        let src = workspace_root().join("bridge-c/include").join(h);
        if src.exists() || h != "vm.hpp" {
            let installed = std::fs::read(include.join(h)).unwrap_or_else(|e| panic!("{h} not installed: {e}"));
            assert_eq!(installed, std::fs::read(&src).expect("the header"), "{h} differs from the repository's");
        } else {
            assert!(!include.join(h).exists(), "{h} installed, but the repository has none");
        }
    }

    // pkg-config: the prefix's paths only.
    let pc = std::fs::read_to_string(lib.join("pkgconfig/vm.pc")).expect("vm.pc");
    assert!(pc.contains(&format!("\nVersion: {version}\n")), "{pc}");
    let pkg_config = |args: &[&str]| {
        ok(
            clean("pkg-config", &inst.home()).args(args).arg("vm").env("PKG_CONFIG_PATH", lib.join("pkgconfig")),
            "pkg-config",
        )
    };
    assert_eq!(pkg_config(&["--modversion"]).trim(), version);
    let flags = pkg_config(&["--cflags", "--libs"]);
    for expected in [format!("-I{}", include.display()), format!("-L{}", lib.display()), "-lvm".into()] {
        assert!(flags.contains(&expected), "`{expected}` missing from pkg-config's output:\n{flags}");
    }
    assert!(
        !flags.contains(workspace_root().to_str().expect("a UTF-8 path")),
        "pkg-config names the source tree:\n{flags}"
    );

    // The CMake package: paths from the file's location, the version and SONAME.
    let config = std::fs::read_to_string(lib.join("cmake/vm/vmConfig.cmake")).expect("vmConfig.cmake");
    assert!(
        config.contains("CMAKE_CURRENT_LIST_DIR") && !config.contains(inst.prefix.to_str().expect("UTF-8")),
        "{config}"
    );
    assert!(config.contains(&format!("IMPORTED_SONAME \"{soname}\"")), "{config}");
    let version_file =
        std::fs::read_to_string(lib.join("cmake/vm/vmConfigVersion.cmake")).expect("vmConfigVersion.cmake");
    assert!(version_file.contains(&format!("set(PACKAGE_VERSION \"{version}\")")), "{version_file}");

    // The vm tool: installed when the build directory has it, otherwise the script says so.
    let tool = inst.prefix.join("bin/vm");
    if libvm_dir().join("vm").is_file() {
        let out = ok(clean(tool.to_str().expect("UTF-8"), &inst.home()).arg("--help"), "vm --help");
        assert!(out.contains("info"), "{out}");
    } else {
        assert!(!tool.exists(), "a vm tool appeared from nowhere");
        assert!(inst.stdout.contains("no vm tool in"), "the script does not say the tool is missing:\n{}", inst.stdout);
    }

    // The uninstall line it prints removes exactly what it installed.
    let line =
        inst.stdout.lines().find_map(|l| l.strip_prefix("install.sh: to uninstall: ")).expect("an uninstall line");
    ok(clean("sh", &inst.home()).args(["-c", line]), "the uninstall line");
    let mut left = Vec::new();
    let mut stack = vec![inst.prefix.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read a directory") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else {
                left.push(p);
            }
        }
    }
    assert!(left.is_empty(), "left after uninstalling: {left:?}");
}

#[test]
fn c_program_builds_with_pkg_config() {
    let inst = Installed::new("install-c");
    let dir = inst.sources("c", &["hello.c"]);
    let exe = inst.build_with_pkg_config(&dir, "cc", "-std=c11 -Wall -Wextra -pedantic -Werror", "hello.c");
    inst.assert_loads_the_installed_library(&exe, true);
    let out = inst.run(&exe, true);
    assert_eq!(out, format!("abi {}\n{SUM}", versions().1));
}

#[test]
fn cpp_program_builds_with_pkg_config() {
    let inst = Installed::new("install-cpp");
    let dir = inst.sources("cpp", &["hello.cpp"]);
    let exe = inst.build_with_pkg_config(&dir, "c++", "-std=c++17 -Wall -Wextra -pedantic -Werror", "hello.cpp");
    inst.assert_loads_the_installed_library(&exe, true);
    let out = inst.run(&exe, true);
    // With the C++ header in the repository (and so installed), the program uses it too.
    let hpp = if workspace_root().join("bridge-c/include/vm.hpp").exists() {
        format!("vm.hpp: {SUM}")
    } else {
        "vm.hpp: no\n".into()
    };
    assert_eq!(out, format!("{SUM}{hpp}"));
}

#[test]
fn c_plugin_builds_against_the_installed_headers_and_runs_in_a_config() {
    // What docs/plugins.md walks a user through, with the installed headers and library only.
    let inst = Installed::new("install-plugin");
    let dir = inst.sources("plugin", &["hello.c"]);
    let example = workspace_root().join("bridge-c/examples/plugins/c-engine/c_engine.c");
    std::fs::copy(&example, dir.join("c_engine.c")).expect("copy the plugin example");
    let line =
        "cc -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC c_engine.c $(pkg-config --cflags vm) -o libc_engine.so";
    ok(
        clean("sh", &inst.home())
            .args(["-c", line])
            .current_dir(&dir)
            .env("PKG_CONFIG_PATH", inst.lib().join("pkgconfig")),
        line,
    );
    let exe = inst.build_with_pkg_config(&dir, "cc", "-std=c11", "hello.c");
    let config = dir.join("vm.toml");
    std::fs::write(
        &config,
        "[c_engine]\nlibrary = \"libc_engine.so\"\n[stacks]\nplugin = [\"node\", \"c_engine\", \"interp\"]\nalone = [\"c_engine\"]\n",
    )
    .expect("write the config");
    let run = |stack: &str| {
        clean(exe.to_str().expect("a UTF-8 path"), &inst.home())
            .current_dir(inst.home())
            .env("LD_LIBRARY_PATH", inst.lib())
            .env("VM_CONFIG", &config)
            .env("VM_STACK", stack)
            .output()
            .expect("run the program")
    };
    let out = run("plugin");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("abi {}\n{SUM}", versions().1));
    // Without a child the plugin's own code refuses the range: it is the plugin that runs.
    let out = run("alone");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", text(&out));
    let library = dir.join("libc_engine.so");
    assert!(
        stderr.contains(&format!("plugin `c_engine` ({})", library.display())) && stderr.contains("needs a child"),
        "{}",
        text(&out)
    );
}

#[test]
fn cmake_project_finds_the_package() {
    let inst = Installed::new("install-cmake");
    let src = inst.sources("cmake-src", &["CMakeLists.txt", "hello.c"]);

    // Configures and builds `src` against `prefix` in `build`; CMake links the imported target
    // by its full path and gives the program an rpath to the prefix's lib directory.
    let build = |prefix: &Path, build: &str| -> PathBuf {
        let dir = inst.scratch.0.join(build);
        ok(
            clean("cmake", &inst.home())
                .arg("-S")
                .arg(&src)
                .arg("-B")
                .arg(&dir)
                .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
                .arg("-DCMAKE_BUILD_TYPE=Release"),
            "cmake configure",
        );
        ok(clean("cmake", &inst.home()).arg("--build").arg(&dir), "cmake --build");
        dir.join("hello")
    };

    let exe = build(&inst.prefix, "cmake-build");
    inst.assert_loads_the_installed_library(&exe, false);
    assert_eq!(inst.run(&exe, false), format!("abi {}\n{SUM}", versions().1));

    // The package is relocatable: the tree moved elsewhere is found there.
    let moved = inst.scratch.0.join("moved-prefix");
    std::fs::rename(&inst.prefix, &moved).expect("move the installed tree");
    let moved_inst =
        Installed { scratch: Scratch::new("install-cmake-moved"), prefix: moved.clone(), stdout: String::new() };
    std::fs::create_dir_all(moved_inst.home()).expect("create a home directory");
    let exe = build(&moved, "cmake-build-moved");
    moved_inst.assert_loads_the_installed_library(&exe, false);
    assert_eq!(moved_inst.run(&exe, false), format!("abi {}\n{SUM}", versions().1));
}

#[test]
fn cmake_package_refuses_a_newer_version() {
    let inst = Installed::new("install-cmake-version");
    let src = inst.scratch.0.join("newer");
    std::fs::create_dir_all(&src).expect("create a source directory");
    std::fs::write(
        src.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.16)\nproject(newer NONE)\nfind_package(vm 99.0 REQUIRED)\n",
    )
    .expect("write CMakeLists.txt");
    let out = clean("cmake", &inst.home())
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(inst.scratch.0.join("newer-build"))
        .arg(format!("-DCMAKE_PREFIX_PATH={}", inst.prefix.display()))
        .output()
        .expect("run cmake");
    let (version, _) = versions();
    assert!(!out.status.success(), "find_package(vm 99.0) succeeded:\n{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&version), "{}", text(&out));
}

#[test]
fn install_sh_explains_a_missing_build_and_an_unwritable_prefix() {
    let scratch = Scratch::new("install-errors");
    let home = scratch.0.join("home");
    std::fs::create_dir_all(&home).expect("create a home directory");
    let script = workspace_root().join("scripts/install.sh");

    let empty = scratch.0.join("empty");
    std::fs::create_dir_all(&empty).expect("create a directory");
    let out = clean("bash", &home)
        .arg(&script)
        .arg(scratch.0.join("p1"))
        .env("VM_INSTALL_FROM", &empty)
        .output()
        .expect("run");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no libvm.so in VM_INSTALL_FROM"), "{}", text(&out));
    assert!(!scratch.0.join("p1").exists(), "the prefix was created although nothing could be installed");

    // A prefix below a regular file can be created by nobody, root included.
    let file = scratch.0.join("a-file");
    std::fs::write(&file, "").expect("write a file");
    let out = clean("bash", &home)
        .arg(&script)
        .arg(file.join("prefix"))
        .env("VM_INSTALL_FROM", libvm_dir())
        .output()
        .expect("run");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot create"), "{}", text(&out));

    let help = ok(clean("bash", &home).arg(&script).arg("--help"), "install.sh --help");
    assert!(help.contains("Uninstall") && help.contains("VM_INSTALL_FROM"), "{help}");
}
