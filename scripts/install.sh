#!/usr/bin/env bash
# Builds libvm.so and the vm tool and installs them, with the headers, a pkg-config file and a
# CMake package, under a prefix. Run `scripts/install.sh --help` for the details.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/install.sh [--features LIST] [PREFIX]

Builds the C library and the vm tool (cargo build --release -p vm-bridge-c) and installs under
PREFIX (default /usr/local):

  PREFIX/lib/libvm.so.<version>            the library, SONAME libvm.so.<ABI major>
  PREFIX/lib/libvm.so.<ABI major>          symlink (what programs load at run time)
  PREFIX/lib/libvm.so                      symlink (what -lvm finds at link time)
  PREFIX/include/vm.h, vm_component.h      the C headers (and vm.hpp, the C++ header, when present)
  PREFIX/lib/pkgconfig/vm.pc               cc prog.c $(pkg-config --cflags --libs vm)
  PREFIX/lib/cmake/vm/vmConfig.cmake       find_package(vm REQUIRED) -> target vm::vm
  PREFIX/lib/cmake/vm/vmConfigVersion.cmake
  PREFIX/bin/vm                            the vm tool (vm info, vm run prog.vmasm)

Options:
  --features LIST   cargo features of vm-bridge-c, e.g. --features mpi (the cluster manager's
                    MPI transport; links libmpi)
  -h, --help        this text

Environment:
  VM_INSTALL_FROM=DIR  install the libvm.so (and vm, when DIR has it) already built in DIR
                       instead of running cargo; without a vm in DIR the tool is not installed
                       (the script says so)
  CARGO_TARGET_DIR     where cargo builds (default: target/ of the workspace)
  CARGO                the cargo to run (default: cargo)

Uninstall (the same PREFIX):
  rm -f  PREFIX/lib/libvm.so PREFIX/lib/libvm.so.<ABI major> PREFIX/lib/libvm.so.<version> \
         PREFIX/include/vm.h PREFIX/include/vm_component.h PREFIX/include/vm.hpp \
         PREFIX/lib/pkgconfig/vm.pc PREFIX/bin/vm
  rm -rf PREFIX/lib/cmake/vm
The script prints the exact command for the prefix it installed to.
EOF
}

die() {
    echo "install.sh: error: $*" >&2
    exit 1
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# --- arguments ----------------------------------------------------------------------------
prefix=""
features=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --features)
            [ $# -ge 2 ] || die "--features needs a list, e.g. --features mpi"
            features="$2"
            shift 2
            ;;
        --features=*)
            features="${1#--features=}"
            shift
            ;;
        -*)
            die "unknown option $1 (see --help)"
            ;;
        *)
            [ -z "$prefix" ] || die "more than one prefix: $prefix and $1 (see --help)"
            prefix="$1"
            shift
            ;;
    esac
done
prefix="${prefix:-/usr/local}"
case "$prefix" in
    /*) ;;
    *) prefix="$PWD/$prefix" ;;
esac
prefix="${prefix%/}"
[ -n "$prefix" ] || prefix="/"

# --- versions: the package's (workspace Cargo.toml) and the C ABI's (vm-abi's ABI_VERSION) ---
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' "$root/Cargo.toml")"
[ -n "$version" ] || die "no version in [workspace.package] of $root/Cargo.toml"
abi_major="$(sed -n 's/^pub const ABI_VERSION: u32 = \([0-9][0-9]*\);.*/\1/p' "$root/vm/abi/src/lib.rs")"
[ -n "$abi_major" ] || die "no ABI_VERSION in $root/vm/abi/src/lib.rs"
soname="libvm.so.$abi_major"
real="libvm.so.$version"

# --- the built files -------------------------------------------------------------------
if [ -n "${VM_INSTALL_FROM:-}" ]; then
    from="$VM_INSTALL_FROM"
    [ -d "$from" ] || die "VM_INSTALL_FROM=$from is not a directory"
    [ -f "$from/libvm.so" ] ||
        die "no libvm.so in VM_INSTALL_FROM=$from (build it with: cargo build --release -p vm-bridge-c)"
    [ -z "$features" ] || echo "install.sh: note: --features $features is ignored with VM_INSTALL_FROM"
else
    command -v "${CARGO:-cargo}" >/dev/null ||
        die "cargo not found; install the Rust toolchain (see README.md) or set VM_INSTALL_FROM"
    target_dir="${CARGO_TARGET_DIR:-$root/target}"
    case "$target_dir" in
        /*) ;;
        *) target_dir="$PWD/$target_dir" ;;
    esac
    build=("${CARGO:-cargo}" build --release -p vm-bridge-c --manifest-path "$root/Cargo.toml")
    [ -z "$features" ] || build+=(--features "$features")
    echo "install.sh: ${build[*]}"
    CARGO_TARGET_DIR="$target_dir" "${build[@]}" || die "the build failed (see cargo's output above)"
    from="$target_dir/release"
    [ -f "$from/libvm.so" ] || die "cargo built no $from/libvm.so"
fi

# The library must carry the SONAME the symlinks and the CMake package promise (bridge-c/build.rs
# sets it; a library built before it has none).
lib_soname=""
if command -v readelf >/dev/null; then
    lib_soname="$(readelf -d "$from/libvm.so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')"
elif command -v objdump >/dev/null; then
    lib_soname="$(objdump -p "$from/libvm.so" | awk '$1 == "SONAME" { print $2 }')"
else
    echo "install.sh: note: neither readelf nor objdump found; the SONAME of $from/libvm.so is not checked"
    lib_soname="$soname"
fi
[ "$lib_soname" = "$soname" ] ||
    die "$from/libvm.so has SONAME '${lib_soname:-none}', expected $soname (rebuild: cargo build --release -p vm-bridge-c)"

# --- the prefix ----------------------------------------------------------------------------
mkdir -p "$prefix" 2>/dev/null || die "cannot create $prefix (choose a writable prefix, e.g. scripts/install.sh \$HOME/.local, or run as root)"
for d in "$prefix" "$prefix/lib" "$prefix/include" "$prefix/bin"; do
    if [ -e "$d" ] && [ ! -w "$d" ]; then
        die "$d is not writable (choose a writable prefix, e.g. scripts/install.sh \$HOME/.local, or run as root)"
    fi
done

libdir="$prefix/lib"
includedir="$prefix/include"
bindir="$prefix/bin"
pcdir="$libdir/pkgconfig"
cmakedir="$libdir/cmake/vm"
install -d "$libdir" "$includedir" "$pcdir" "$cmakedir"

# --- library and symlinks ----------------------------------------------------------------
install -m 755 "$from/libvm.so" "$libdir/$real"
ln -sfn "$real" "$libdir/$soname"
ln -sfn "$soname" "$libdir/libvm.so"

# --- headers -------------------------------------------------------------------------------
headers=(vm.h vm_component.h)
[ -f "$root/bridge-c/include/vm.hpp" ] && headers+=(vm.hpp)
for h in "${headers[@]}"; do
    install -m 644 "$root/bridge-c/include/$h" "$includedir/$h"
done

# --- pkg-config ----------------------------------------------------------------------------
cat >"$pcdir/vm.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: vm
Description: A JIT-compiling vector virtual machine (C ABI $abi_major)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lvm
EOF
chmod 644 "$pcdir/vm.pc"

# --- CMake package -------------------------------------------------------------------------
cat >"$cmakedir/vmConfig.cmake" <<EOF
# The vector VM's C library, libvm $version (C ABI $abi_major), installed by scripts/install.sh.
#   find_package(vm REQUIRED)
#   target_link_libraries(prog PRIVATE vm::vm)
# Paths are computed from this file's location (PREFIX/lib/cmake/vm), so the installed tree
# may be moved as a whole.

get_filename_component(_vm_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

set(vm_ABI_VERSION $abi_major)
set(vm_INCLUDE_DIRS "\${_vm_prefix}/include")
set(vm_LIBRARIES vm::vm)

if(NOT EXISTS "\${_vm_prefix}/lib/$real" OR NOT EXISTS "\${_vm_prefix}/include/vm.h")
  set(vm_FOUND FALSE)
  set(vm_NOT_FOUND_MESSAGE "vmConfig.cmake in \${CMAKE_CURRENT_LIST_DIR} finds no \${_vm_prefix}/lib/$real or \${_vm_prefix}/include/vm.h; reinstall with scripts/install.sh")
  unset(_vm_prefix)
  return()
endif()

if(NOT TARGET vm::vm)
  add_library(vm::vm SHARED IMPORTED)
  set_target_properties(vm::vm PROPERTIES
    IMPORTED_LOCATION "\${_vm_prefix}/lib/$real"
    IMPORTED_SONAME "$soname"
    INTERFACE_INCLUDE_DIRECTORIES "\${_vm_prefix}/include")
endif()

unset(_vm_prefix)
EOF

IFS=. read -r v_major v_minor _ <<<"$version"
cat >"$cmakedir/vmConfigVersion.cmake" <<EOF
# Version $version of the vm package. A request is compatible when it is not newer and names the
# same major version (and, while the major is 0, the same minor version). 64-bit only.
set(PACKAGE_VERSION "$version")

if(DEFINED CMAKE_SIZEOF_VOID_P AND NOT "\${CMAKE_SIZEOF_VOID_P}" STREQUAL ""
   AND NOT "\${CMAKE_SIZEOF_VOID_P}" EQUAL 8)
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
  return()
endif()

if("\${PACKAGE_FIND_VERSION}" STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(NOT "\${PACKAGE_FIND_VERSION_MAJOR}" EQUAL $v_major)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif($v_major EQUAL 0 AND NOT "\${PACKAGE_FIND_VERSION_MINOR}" EQUAL $v_minor)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
chmod 644 "$cmakedir/vmConfig.cmake" "$cmakedir/vmConfigVersion.cmake"

# --- the vm tool ---------------------------------------------------------------------------
installed_tool=""
if [ -f "$from/vm" ]; then
    install -d "$bindir"
    install -m 755 "$from/vm" "$bindir/vm"
    installed_tool="$bindir/vm"
else
    echo "install.sh: note: no vm tool in $from; $bindir/vm not installed (build it with: cargo build --release -p vm-bridge-c --bin vm)"
fi

# --- summary -------------------------------------------------------------------------------
echo "install.sh: installed libvm $version (SONAME $soname) under $prefix:"
echo "  $libdir/$real, $libdir/$soname -> $real, $libdir/libvm.so -> $soname"
echo "  $includedir/{$(IFS=,; echo "${headers[*]}")}"
echo "  $pcdir/vm.pc"
echo "  $cmakedir/vmConfig.cmake, vmConfigVersion.cmake"
[ -z "$installed_tool" ] || echo "  $installed_tool"
uninstall="rm -f $libdir/libvm.so $libdir/$soname $libdir/$real"
for h in "${headers[@]}"; do uninstall+=" $includedir/$h"; done
uninstall+=" $pcdir/vm.pc"
[ -z "$installed_tool" ] || uninstall+=" $installed_tool"
uninstall+=" && rm -rf $cmakedir"
echo "install.sh: to uninstall: $uninstall"
