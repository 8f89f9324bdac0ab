//! Renders `vm_component.h`, the C header of the component ABI, from [`vm_abi::component`]: its
//! constants come from the Rust constants and its structs mirror the `#[repr(C)]` types, which a
//! test checks by compiling the header and comparing every size and offset. Running
//! `vm component-header`, its output redirected to `bridge-c/include/vm_component.h`, regenerates
//! the committed file; a test fails when the two differ.

use std::fmt::Write as _;
use vm_abi::component::{
    BASE_DATA_EXISTING, BASE_DATA_OVERWRITTEN, BASE_DATA_ZEROED, COMPONENT_ABI_VERSION, ENTRY_SYMBOL,
    REDUCTION_REASSOCIATED, REDUCTION_SEQUENTIAL, SETTING_BOOLEAN, SETTING_INTEGER, SETTING_STRING,
};

/// The header's constants: name, value, meaning.
pub fn constants() -> Vec<(&'static str, i64, &'static str)> {
    vec![
        (
            "VM_COMPONENT_ABI_VERSION",
            i64::from(COMPONENT_ABI_VERSION),
            "the component ABI this header describes; a plugin built for another is refused",
        ),
        ("VM_SETTING_INTEGER", i64::from(SETTING_INTEGER), "a setting whose values are TOML integers"),
        ("VM_SETTING_BOOLEAN", i64::from(SETTING_BOOLEAN), "a setting whose values are true or false"),
        ("VM_SETTING_STRING", i64::from(SETTING_STRING), "a setting whose values are TOML strings"),
        (
            "VM_REDUCTION_SEQUENTIAL",
            i64::from(REDUCTION_SEQUENTIAL),
            "float reductions combine left to right, as the reference engine does",
        ),
        ("VM_REDUCTION_REASSOCIATED", i64::from(REDUCTION_REASSOCIATED), "float reductions may combine in any order"),
        ("VM_BASE_DATA_EXISTING", i64::from(BASE_DATA_EXISTING), "base_data: the data the base has, NULL while none"),
        ("VM_BASE_DATA_ZEROED", i64::from(BASE_DATA_ZEROED), "base_data: allocated zero-filled on first use"),
        (
            "VM_BASE_DATA_OVERWRITTEN",
            i64::from(BASE_DATA_OVERWRITTEN),
            "base_data: allocated on first use, not zeroed (the plugin writes all of it first)",
        ),
    ]
}

const PREAMBLE: &str = r#"/*
 * vm_component.h: the component ABI of the vector VM: what an engine plugin (a shared library
 * named by a config table's `library` key) exports, and what the VM hands it.
 *
 * A plugin exports one function, vm_component_entry(), returning its vm_component_api: its name,
 * its settings, and the functions the VM calls (create, execute, register_extension,
 * reduction_order, describe, destroy). Every call gets the host's services (vm_host_api) and an
 * opaque vm_host valid for that call only: the dtype and host data of the batch's bases, and its
 * child, the next component of the stack, to hand down what the plugin does not run.
 * Batches are the POD instructions of vm.h. Errors: return a VM_ERR_* status after
 * api->fail(host, status, "message"); the VM reports it naming the plugin.
 *
 * Generated from the Rust side (bridge-c/src/plugin); regenerate with
 * `cargo run -p vm-bridge-c --bin vm -- component-header > bridge-c/include/vm_component.h`.
 * The guide is docs/plugins.md.
 */
#ifndef VM_COMPONENT_H
#define VM_COMPONENT_H

#include "vm.h"

#ifdef __cplusplus
extern "C" {
#endif
"#;

const TYPES: &str = r#"
/* ---- Types ---------------------------------------------------------------------------------- */

/** The host side of one call into the plugin. Opaque; valid only during that call. */
typedef struct vm_host vm_host;

/** What a base is: its dtype (VM_DTYPE_*), its number of elements, its host data or NULL. */
typedef struct vm_base_info {
    uint32_t dtype;
    uint64_t nelem;
    void *data; /* as base_data gives it, without allocating: NULL while the base has none */
} vm_base_info;

/** One effective setting: strings without quotes, integers and booleans as TOML writes them. */
typedef struct vm_setting {
    const char *key;
    const char *value;
} vm_setting;

/** A setting the plugin accepts (checked and defaulted by the VM like a built-in engine's). */
typedef struct vm_setting_spec {
    const char *key;
    uint32_t kind;             /* VM_SETTING_* */
    const char *default_value; /* TOML text: "4", "true", "\"fast\"" */
    const char *doc;           /* what it means (vm info prints it) */
    int64_t min, max;          /* integers: the range accepted; min > max accepts any */
} vm_setting_spec;

/**
 * The host's services. Functions returning int return VM_OK or a VM_ERR_* status. Host data
 * pointers stay valid until the base is freed or the call returns.
 */
typedef struct vm_host_api {
    uint32_t abi_version;
    /** The dtype, size and host data (NULL while none) of base, a base of the batch being run. */
    int (*base_info)(vm_host *host, vm_base base, vm_base_info *out);
    /**
     * The host data of base: nelem elements of its dtype, 64-byte aligned. allocate is one of
     * VM_BASE_DATA_*: ZEROED allocates it zero-filled on first use, OVERWRITTEN without zeroing
     * (the plugin writes every element before reading any), EXISTING (0) leaves *data NULL while
     * the base has none.
     */
    int (*base_data)(vm_host *host, vm_base base, int allocate, void **data);
    /** Releases the host data of base (what a FREE does on the host). */
    void (*base_free)(vm_host *host, vm_base base);
    /**
     * Executes n instructions on the child. Afterwards every base they SYNC is current in host
     * memory; SYNC what the plugin will read itself, DISCARD what it wrote that the child saw.
     */
    int (*child_execute)(vm_host *host, const vm_instruction *instrs, size_t n);
    /** Announces extension method name under opcode to the child; *implemented says if it runs it. */
    int (*child_register_extension)(vm_host *host, const char *name, uint32_t opcode, int *implemented);
    /** Records the message of the error about to be returned; returns status. */
    int (*fail)(vm_host *host, int status, const char *message);
} vm_host_api;

/** What a plugin provides. Its strings and arrays must stay valid while the library is loaded. */
typedef struct vm_component_api {
    uint32_t abi_version;           /* VM_COMPONENT_ABI_VERSION */
    const char *name;               /* the implementation's name: letters, digits, '_' and '-' */
    const char *summary;            /* one line saying what it is */
    const vm_setting_spec *settings;
    size_t nsettings;
    int needs_child;                /* nonzero for a manager; an engine may still get a child */
    /** A new instance from its settings, or NULL after api->fail. has_child: the stack gave it one. */
    void *(*create)(const vm_setting *settings, size_t nsettings, int has_child, vm_host *host,
                    const vm_host_api *api);
    /** Executes a validated batch of n instructions in order (SYNC, DISCARD, FREE included). */
    int (*execute)(void *component, const vm_instruction *batch, size_t n, vm_host *host,
                   const vm_host_api *api);
    /** Announces extension method name under opcode; sets *implemented. NULL: the child answers. */
    int (*register_extension)(void *component, const char *name, uint32_t opcode, int *implemented,
                              vm_host *host, const vm_host_api *api);
    /** VM_REDUCTION_SEQUENTIAL or VM_REDUCTION_REASSOCIATED. NULL: sequential. */
    int (*reduction_order)(void *component);
    /** A line about the instance for vm info, at most cap bytes with the NUL. NULL: none. */
    void (*describe)(void *component, char *buf, size_t cap);
    /** Releases the instance. */
    void (*destroy)(void *component);
} vm_component_api;

/** The function every plugin exports (the VM looks it up by this name). */
const vm_component_api *vm_component_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* VM_COMPONENT_H */
"#;

/// The text of `vm_component.h`.
pub fn render() -> String {
    let mut out = String::from(PREAMBLE);
    let _ = writeln!(out, "\n/* ---- Constants */");
    let width = constants().iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    for (name, value, doc) in constants() {
        let value = if name == "VM_COMPONENT_ABI_VERSION" { format!("{value}u") } else { value.to_string() };
        let _ = writeln!(out, "#define {name:width$} {value:<4} /* {doc} */");
    }
    debug_assert!(TYPES.contains(ENTRY_SYMBOL));
    out.push_str(TYPES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn committed_path() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include").join("vm_component.h")
    }

    #[test]
    fn committed_header_is_the_rendered_one() {
        let rendered = render();
        if std::env::var_os("VM_BLESS").is_some() {
            std::fs::write(committed_path(), &rendered).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(committed_path()).unwrap_or_default();
        assert!(
            committed == rendered,
            "bridge-c/include/vm_component.h is stale: regenerate it with `cargo run -p vm-bridge-c --bin vm -- \
             component-header > bridge-c/include/vm_component.h` (or run this test with VM_BLESS=1)"
        );
    }

    /// The C compiler's sizes and offsets of the header's types equal Rust's.
    #[test]
    fn c_compiler_agrees_on_constants_sizes_and_offsets() {
        let mut src =
            String::from("#include <stdio.h>\n#include <stddef.h>\n#include \"vm_component.h\"\nint main(void) {\n");
        let mut want = String::new();
        for (name, value, _) in constants() {
            let _ = writeln!(src, "    printf(\"%s %lld\\n\", \"{name}\", (long long)({name}));");
            let _ = writeln!(want, "{name} {value}");
        }
        for (what, n) in vm_abi::component::layout() {
            let _ = writeln!(src, "    printf(\"%s %lld\\n\", \"{what}\", (long long)({what}));");
            let _ = writeln!(want, "{what} {n}");
        }
        src.push_str("    return 0;\n}\n");
        assert_eq!(crate::header::tests::compile_and_run("cc", "-std=c11", "c", &src), want);
    }
}
