//! Gives `libvm.so` the SONAME `libvm.so.<ABI major>`, the major being `ABI_VERSION` of
//! `vm/abi/src/lib.rs` (the one place it is defined; `vm.h`'s `VM_ABI_VERSION` is rendered from
//! it). A program linked with `-lvm` then records `libvm.so.<major>` as the library it needs, so
//! an installed `libvm.so.<major>` of a later, compatible release satisfies it and an
//! incompatible one (another major) never does (`scripts/install.sh` installs the symlinks).
//!
//! Cargo still writes the library as `target/<profile>/libvm.so` (and `deps/libvm.so`), the name
//! the tests and vm-bench link against. So that programs linked there find `libvm.so.<major>` at
//! run time, this script also puts the symlink `libvm.so.<major> -> libvm.so` in both output
//! directories (it dangles until the library is linked, moments later).

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let abi_src = manifest.join("../vm/abi/src/lib.rs");
    println!("cargo:rerun-if-changed={}", abi_src.display());
    println!("cargo:rerun-if-changed=build.rs");

    let major = abi_major(&abi_src);
    let soname = format!("libvm.so.{major}");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
        link_soname_beside_outputs(&soname);
    }
}

/// The value of `pub const ABI_VERSION: u32 = N;` in `path`.
fn abi_major(path: &Path) -> u32 {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .find_map(|line| {
            let rest = line.trim().strip_prefix("pub const ABI_VERSION: u32 =")?;
            rest.trim().trim_end_matches(';').trim().parse().ok()
        })
        .unwrap_or_else(|| panic!("no `pub const ABI_VERSION: u32 = N;` in {}", path.display()))
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
