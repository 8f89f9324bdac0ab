//! The `#[repr(C)]` types of the component ABI, mirrored exactly by `vm_component.h` (the C
//! bridge renders it from them): what an engine plugin exports ([`VmComponentApi`], returned by its entry
//! symbol [`ENTRY_SYMBOL`]) and what the host hands it on every call ([`VmHostApi`] with an opaque
//! [`VmHost`]). Batches cross as the POD instructions of `vm.h` ([`crate::VmInstruction`]).

use crate::{VmBase, VmInstruction};
use std::ffi::{c_char, c_int, c_void};

/// The version of the component ABI (the structs below and their meaning). A plugin states the
/// version it was built for in [`VmComponentApi::abi_version`]; the host refuses any other.
pub const COMPONENT_ABI_VERSION: u32 = 1;

/// The symbol every plugin library exports: `const vm_component_api *vm_component_entry(void)`.
pub const ENTRY_SYMBOL: &str = "vm_component_entry";

/// `VM_SETTING_INTEGER`: a setting whose values are TOML integers.
pub const SETTING_INTEGER: u32 = 1;
/// `VM_SETTING_BOOLEAN`: a setting whose values are `true` or `false`.
pub const SETTING_BOOLEAN: u32 = 2;
/// `VM_SETTING_STRING`: a setting whose values are TOML strings.
pub const SETTING_STRING: u32 = 3;

/// `VM_REDUCTION_SEQUENTIAL`: float reductions combine left to right (the reference's bits).
pub const REDUCTION_SEQUENTIAL: c_int = 0;
/// `VM_REDUCTION_REASSOCIATED`: float reductions may combine in any order.
pub const REDUCTION_REASSOCIATED: c_int = 1;
/// `VM_BASE_DATA_EXISTING`: `base_data` gives the data the base has, NULL while none.
pub const BASE_DATA_EXISTING: c_int = 0;
/// `VM_BASE_DATA_ZEROED`: `base_data` allocates the data zero-filled on first use.
pub const BASE_DATA_ZEROED: c_int = 1;
/// `VM_BASE_DATA_OVERWRITTEN`: `base_data` allocates the data on first use without zeroing it:
/// the caller writes every element before anything reads it.
pub const BASE_DATA_OVERWRITTEN: c_int = 2;

/// `vm_host`: the host side of one call into the plugin. Opaque to the plugin; valid only during
/// the call it was passed to.
#[repr(C)]
pub struct VmHost {
    _private: [u8; 0],
}

/// `vm_base_info`: what a base is, and its host data if it has any.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VmBaseInfo {
    /// Its dtype (`VM_DTYPE_*`).
    pub dtype: u32,
    /// Its number of elements.
    pub nelem: u64,
    /// Its host data (as `base_data` gives it), or NULL while it has none.
    pub data: *mut c_void,
}

impl Default for VmBaseInfo {
    fn default() -> VmBaseInfo {
        VmBaseInfo { dtype: 0, nelem: 0, data: std::ptr::null_mut() }
    }
}

/// `vm_setting`: one effective setting of the component, as text (strings without quotes;
/// integers and booleans as TOML writes them).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VmSetting {
    /// The key.
    pub key: *const c_char,
    /// The value.
    pub value: *const c_char,
}

/// `vm_setting_spec`: a setting the plugin accepts, declared like a built-in engine's.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VmSettingSpec {
    /// The key in the component's TOML table.
    pub key: *const c_char,
    /// `VM_SETTING_INTEGER`, `VM_SETTING_BOOLEAN` or `VM_SETTING_STRING`.
    pub kind: u32,
    /// The default, as TOML text (`4`, `true`, `"fast"`).
    pub default_value: *const c_char,
    /// What it means (`vm info` prints it).
    pub doc: *const c_char,
    /// For integers: the least and the greatest value accepted; `min > max` accepts any.
    pub min: i64,
    /// See `min`.
    pub max: i64,
}

/// `vm_host_api`: the host's services, valid during the call they are passed to. Every function
/// takes the call's `vm_host` first; those returning `int` return `VM_OK` or a `VM_ERR_*` status.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VmHostApi {
    /// `COMPONENT_ABI_VERSION` of the host.
    pub abi_version: u32,
    /// The dtype and size of `base` (a base of the batch being executed), and its host data
    /// when it has some (without allocating).
    pub base_info: unsafe extern "C" fn(host: *mut VmHost, base: VmBase, out: *mut VmBaseInfo) -> c_int,
    /// The host data of `base`: `nelem` elements of its dtype, 64-byte aligned. `allocate`:
    /// `BASE_DATA_ZEROED` allocates it zero-filled on first use, `BASE_DATA_OVERWRITTEN` without
    /// zeroing (the caller writes all of it first), `BASE_DATA_EXISTING` (0) leaves `*data`
    /// NULL while the base has none. The pointer stays valid until the base is freed or the call
    /// returns.
    pub base_data:
        unsafe extern "C" fn(host: *mut VmHost, base: VmBase, allocate: c_int, data: *mut *mut c_void) -> c_int,
    /// Releases the host data of `base` (what a FREE does on the host).
    pub base_free: unsafe extern "C" fn(host: *mut VmHost, base: VmBase),
    /// Executes `n` instructions on the component's child (the next one of the stack). After it
    /// returns, every base those instructions SYNC is current in host memory.
    pub child_execute: unsafe extern "C" fn(host: *mut VmHost, instrs: *const VmInstruction, n: usize) -> c_int,
    /// Announces extension method `name` under `opcode` to the child; `*implemented` says
    /// whether the child (or one below it) implements it.
    pub child_register_extension:
        unsafe extern "C" fn(host: *mut VmHost, name: *const c_char, opcode: u32, implemented: *mut c_int) -> c_int,
    /// Records the message of the error the plugin is about to return (copied); returns
    /// `status` for `return api->fail(host, VM_ERR_..., "...")`.
    pub fail: unsafe extern "C" fn(host: *mut VmHost, status: c_int, message: *const c_char) -> c_int,
}

/// `vm_component_api`: what a plugin library provides, returned by its entry symbol. Strings and
/// arrays are the plugin's and must stay valid while the library is loaded.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VmComponentApi {
    /// The component ABI version the plugin was built for (`VM_COMPONENT_ABI_VERSION`).
    pub abi_version: u32,
    /// The implementation's name (as `vm info` shows it).
    pub name: *const c_char,
    /// One line saying what it is.
    pub summary: *const c_char,
    /// The settings it accepts (`nsettings` of them).
    pub settings: *const VmSettingSpec,
    /// The number of `settings`.
    pub nsettings: usize,
    /// Nonzero when it needs a child (a manager); engines may still use one as a fallback.
    pub needs_child: c_int,
    /// Creates an instance from its effective settings; returns NULL after `api->fail` on error.
    /// `host` answers `child_*` only when the stack gives the component a child.
    pub create: unsafe extern "C" fn(
        settings: *const VmSetting,
        nsettings: usize,
        has_child: c_int,
        host: *mut VmHost,
        api: *const VmHostApi,
    ) -> *mut c_void,
    /// Executes a validated batch of `n` instructions in order. SYNC, DISCARD and FREE come in
    /// the batch like the other instructions.
    pub execute: unsafe extern "C" fn(
        component: *mut c_void,
        batch: *const VmInstruction,
        n: usize,
        host: *mut VmHost,
        api: *const VmHostApi,
    ) -> c_int,
    /// Announces extension method `name` under `opcode`; sets `*implemented`. NULL: the child
    /// answers.
    pub register_extension: Option<
        unsafe extern "C" fn(
            component: *mut c_void,
            name: *const c_char,
            opcode: u32,
            implemented: *mut c_int,
            host: *mut VmHost,
            api: *const VmHostApi,
        ) -> c_int,
    >,
    /// `VM_REDUCTION_SEQUENTIAL` or `VM_REDUCTION_REASSOCIATED`. NULL: sequential.
    pub reduction_order: Option<unsafe extern "C" fn(component: *mut c_void) -> c_int>,
    /// Writes a line about the instance (devices, threads) for `vm info` into `buf` (at most
    /// `cap` bytes with the NUL). NULL: nothing to say.
    pub describe: Option<unsafe extern "C" fn(component: *mut c_void, buf: *mut c_char, cap: usize)>,
    /// Releases the instance.
    pub destroy: unsafe extern "C" fn(component: *mut c_void),
}

/// Sizes and field offsets of the component ABI's types, in the order the layout test prints
/// them from C.
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("sizeof(vm_base_info)", size_of::<VmBaseInfo>()),
        ("offsetof(vm_base_info, nelem)", offset_of!(VmBaseInfo, nelem)),
        ("offsetof(vm_base_info, data)", offset_of!(VmBaseInfo, data)),
        ("sizeof(vm_setting)", size_of::<VmSetting>()),
        ("sizeof(vm_setting_spec)", size_of::<VmSettingSpec>()),
        ("offsetof(vm_setting_spec, kind)", offset_of!(VmSettingSpec, kind)),
        ("offsetof(vm_setting_spec, default_value)", offset_of!(VmSettingSpec, default_value)),
        ("offsetof(vm_setting_spec, doc)", offset_of!(VmSettingSpec, doc)),
        ("offsetof(vm_setting_spec, min)", offset_of!(VmSettingSpec, min)),
        ("offsetof(vm_setting_spec, max)", offset_of!(VmSettingSpec, max)),
        ("sizeof(vm_host_api)", size_of::<VmHostApi>()),
        ("offsetof(vm_host_api, base_info)", offset_of!(VmHostApi, base_info)),
        ("offsetof(vm_host_api, child_execute)", offset_of!(VmHostApi, child_execute)),
        ("offsetof(vm_host_api, fail)", offset_of!(VmHostApi, fail)),
        ("sizeof(vm_component_api)", size_of::<VmComponentApi>()),
        ("offsetof(vm_component_api, name)", offset_of!(VmComponentApi, name)),
        ("offsetof(vm_component_api, settings)", offset_of!(VmComponentApi, settings)),
        ("offsetof(vm_component_api, needs_child)", offset_of!(VmComponentApi, needs_child)),
        ("offsetof(vm_component_api, create)", offset_of!(VmComponentApi, create)),
        ("offsetof(vm_component_api, execute)", offset_of!(VmComponentApi, execute)),
        ("offsetof(vm_component_api, destroy)", offset_of!(VmComponentApi, destroy)),
    ]
}
