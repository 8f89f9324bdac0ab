//! Gives `libvm.so` the SONAME `libvm.so.<ABI major>`, the major being `vm_abi::ABI_VERSION`
//! (the one place it is defined; `vm.h`'s `VM_ABI_VERSION` is rendered from it). A program
//! linked with `-lvm` then records `libvm.so.<major>` as the library it needs, so an installed
//! `libvm.so.<major>` of a later, compatible release satisfies it and an incompatible one
//! (another major) never does (`scripts/install.sh` installs the symlinks).
//!
//! Cargo still writes the library as `target/<profile>/libvm.so` (and `deps/libvm.so`), the name
//! the tests and vm-bench link against. So that programs linked there find `libvm.so.<major>` at
//! run time, this script also puts the symlink `libvm.so.<major> -> libvm.so` in both output
//! directories (it dangles until the library is linked, moments later).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let soname = format!("libvm.so.{}", vm_abi::ABI_VERSION);
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
        link_soname_beside_outputs(&soname);
    }
}

/// Creates `<profile dir>/<soname>` and `<profile dir>/deps/<soname>`, symlinks to `libvm.so`.
/// `OUT_DIR` is `<profile dir>/build/vm-bridge-c-<hash>/out`, for any target dir and profile.
fn link_soname_beside_outputs(soname: &str) {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let Some(profile_dir) = out.ancestors().nth(3) else { return };
    for dir in [profile_dir.to_path_buf(), profile_dir.join("deps")] {
        if !dir.is_dir() {
            continue;
        }
        let link = dir.join(soname);
        if std::fs::read_link(&link).is_ok_and(|t| t == Path::new("libvm.so")) {
            continue;
        }
        let _ = std::fs::remove_file(&link);
        #[cfg(unix)]
        if let Err(e) = std::os::unix::fs::symlink("libvm.so", &link) {
            println!("cargo:warning=cannot create {}: {e}", link.display());
        }
    }
}
