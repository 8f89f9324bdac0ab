/*
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

/* ---- Constants */
#define VM_COMPONENT_ABI_VERSION  1u   /* the component ABI this header describes; a plugin built for another is refused */
#define VM_SETTING_INTEGER        1    /* a setting whose values are TOML integers */
#define VM_SETTING_BOOLEAN        2    /* a setting whose values are true or false */
#define VM_SETTING_STRING         3    /* a setting whose values are TOML strings */
#define VM_REDUCTION_SEQUENTIAL   0    /* float reductions combine left to right, as the reference engine does */
#define VM_REDUCTION_REASSOCIATED 1    /* float reductions may combine in any order */
#define VM_BASE_DATA_EXISTING     0    /* base_data: the data the base has, NULL while none */
#define VM_BASE_DATA_ZEROED       1    /* base_data: allocated zero-filled on first use */
#define VM_BASE_DATA_OVERWRITTEN  2    /* base_data: allocated on first use, not zeroed (the plugin writes all of it first) */

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
