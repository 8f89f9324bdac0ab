//! Engine plugins: components loaded from shared libraries through the component ABI of
//! `vm_component.h` ([`abi`]; the C bridge renders the header from it).
//!
//! A config table with a `library` key names a plugin instead of a built-in implementation:
//!
//! ```toml
//! [myengine]
//! library = "plugins/libmy_engine.so"   # relative to the config file, or absolute
//! threads = 2                           # a setting the plugin declares
//! [stacks]
//! mine = ["node", "myengine", "cpu"]
//! ```
//!
//! [`register_config_plugins`] loads every such library before the stack is planned (a library
//! is loaded once per process and never unloaded), checks its ABI version and registers it as an
//! [`Implementation`] whose settings are the ones the plugin declares plus `library`; the stack
//! is then planned and built as for built-ins (defaults, `VM_<COMPONENT>_<KEY>` overrides, range
//! checks). A [`PluginComponent`] forwards the [`Component`] calls through the plugin's function
//! table, handing it the host's services ([`abi::VmHostApi`]) for the duration of each call.
//! Errors a plugin returns surface as errors naming the plugin and its library.

/// The `#[repr(C)]` types of `vm_component.h` (from the crate `vm-abi`).
pub use vm_abi::component as abi;

use abi::{
    COMPONENT_ABI_VERSION, ENTRY_SYMBOL, REDUCTION_REASSOCIATED, SETTING_BOOLEAN, SETTING_INTEGER, SETTING_STRING,
    VmBaseInfo, VmComponentApi, VmHost, VmHostApi, VmSetting, VmSettingSpec,
};
use rustc_hash::FxHashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use vm_abi::status::{OK, error_of_status, status_name};
use vm_abi::{VmBase, VmInstruction};
use vm_ir::{Base, BaseId, Error, Instruction, Opcode, Result};
use vm_runtime::config::{Config, Located, StackDef};
use vm_runtime::settings::SettingKind;
use vm_runtime::settings::SettingValue;
use vm_runtime::{
    Component, ComponentInfo, HostMemory, Implementation, ReductionOrder, SettingSpec, Settings, Statistics,
};

/// The config key that names a plugin library.
pub const LIBRARY_KEY: &str = "library";

/// A loaded plugin library: its function table and the implementation registered for it.
pub struct Plugin {
    /// The library's path, as loaded (absolute when the config named a relative one).
    pub path: PathBuf,
    /// The function table its entry symbol returned.
    api: &'static VmComponentApi,
    /// The library, kept loaded for the life of the process.
    _library: &'static libloading::Library,
    /// The implementation planning and building use.
    pub implementation: Implementation,
    /// The plugin's one-line summary.
    pub summary: &'static str,
}

// SAFETY: the function table is immutable data of a library that is never unloaded; the plugin
// contract (docs/plugins.md) requires its functions to be callable from any thread, one call
// per instance at a time, which the host guarantees (a component is used by one thread at a time).
unsafe impl Send for Plugin {}
// SAFETY: as above: shared access only reads the immutable function table.
unsafe impl Sync for Plugin {}

/// Loaded plugins, by canonical path (loaded once per process, never unloaded: code of a
/// library must not go away while a component built from it might still run). A list, not a
/// hash table: memory checkers see the plugins as reachable from it.
fn loaded() -> std::sync::MutexGuard<'static, Vec<&'static Plugin>> {
    static LOADED: OnceLock<Mutex<Vec<&'static Plugin>>> = OnceLock::new();
    LOADED.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// Leaks `s` (plugin metadata lives as long as the process, like the library).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A string of the plugin's, or an error naming `what`.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid while the library is loaded.
unsafe fn plugin_str(p: *const c_char, what: &str) -> std::result::Result<&'static str, String> {
    if p.is_null() {
        return Err(format!("its {what} is NULL"));
    }
    // SAFETY: non-null, and NUL-terminated and static by the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| format!("its {what} is not UTF-8"))
}

/// The error of a library that cannot be used, naming the file.
fn load_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::config(path.display().to_string(), None, format!("plugin library: {message}"))
}

/// Loads the plugin library at `path` (once per process) and checks its entry table: the entry
/// symbol, the ABI version, its name, summary and settings. Errors are config errors naming the
/// file.
pub fn load(path: &Path) -> Result<&'static Plugin> {
    let canonical = path.canonicalize().map_err(|e| load_error(path, format!("cannot open it: {e}")))?;
    let mut table = loaded();
    if let Some(p) = table.iter().find(|p| p.path == canonical) {
        return Ok(p);
    }
    // SAFETY: loading a library runs its initialisers; naming a library in the config is the
    // user's statement that it is a VM plugin, as for any plugin system.
    let library = unsafe { libloading::Library::new(&canonical) }
        .map_err(|e| load_error(path, format!("cannot load it: {e}")))?;
    let library: &'static libloading::Library = Box::leak(Box::new(library));
    // SAFETY: the entry symbol's type is fixed by vm_component.h.
    let entry = unsafe { library.get::<unsafe extern "C" fn() -> *const VmComponentApi>(ENTRY_SYMBOL.as_bytes()) }
        .map_err(|e| load_error(path, format!("it does not export `{ENTRY_SYMBOL}` ({e})")))?;
    // SAFETY: calling the plugin's entry point, declared by the header as taking nothing.
    let api = unsafe { entry() };
    if api.is_null() {
        return Err(load_error(path, format!("`{ENTRY_SYMBOL}` returned NULL")));
    }
    // SAFETY: non-null; the table is the plugin's static data (header contract).
    let api: &'static VmComponentApi = unsafe { &*api };
    if api.abi_version != COMPONENT_ABI_VERSION {
        return Err(load_error(
            path,
            format!(
                "it was built for component ABI version {}, but this libvm speaks version {COMPONENT_ABI_VERSION}: \
                 rebuild it against this vm_component.h",
                api.abi_version
            ),
        ));
    }
    let bad = |m: String| load_error(path, m);
    // SAFETY: the table's strings are static NUL-terminated data of the library (header contract).
    let (name, summary) =
        unsafe { (plugin_str(api.name, "name").map_err(bad)?, plugin_str(api.summary, "summary").map_err(bad)?) };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Err(load_error(path, format!("its name `{name}` is not a plain identifier")));
    }
    let mut settings = vec![SettingSpec::new(
        LIBRARY_KEY,
        SettingKind::String,
        "\"\"",
        "the plugin library (a path, relative to the config file or absolute)",
    )];
    let specs: &[VmSettingSpec] = if api.nsettings == 0 {
        &[]
    } else if api.settings.is_null() {
        return Err(load_error(path, "it declares settings but their array is NULL"));
    } else {
        // SAFETY: the plugin declares `nsettings` specs at `settings`, static data (header contract).
        unsafe { std::slice::from_raw_parts(api.settings, api.nsettings) }
    };
    for (i, s) in specs.iter().enumerate() {
        let what = |field: &str| format!("setting {i}'s {field}");
        // SAFETY: as above, static NUL-terminated strings of the library.
        let (key, default, doc) = unsafe {
            (
                plugin_str(s.key, &what("key")).map_err(bad)?,
                plugin_str(s.default_value, &what("default")).map_err(bad)?,
                plugin_str(s.doc, &what("doc")).map_err(bad)?,
            )
        };
        let kind = match s.kind {
            SETTING_INTEGER => SettingKind::Integer,
            SETTING_BOOLEAN => SettingKind::Boolean,
            SETTING_STRING => SettingKind::String,
            k => return Err(load_error(path, format!("setting `{key}` has kind {k}, which is none of VM_SETTING_*"))),
        };
        if key == LIBRARY_KEY {
            return Err(load_error(path, format!("it declares the setting `{LIBRARY_KEY}`, which the host reserves")));
        }
        let mut spec = SettingSpec::new(key, kind, default, doc);
        if kind == SettingKind::Integer && s.min <= s.max {
            spec = spec.with_range(s.min, s.max);
        }
        settings.push(spec);
    }
    let described = leak(format!("plugin {}: {summary}", canonical.display()));
    let plugin: &'static Plugin = Box::leak(Box::new(Plugin {
        path: canonical,
        api,
        _library: library,
        implementation: Implementation {
            name,
            summary: described,
            needs_child: api.needs_child != 0,
            settings: Box::leak(settings.into_boxed_slice()),
            construct: construct_plugin,
        },
        summary,
    }));
    table.push(plugin);
    Ok(plugin)
}

/// Loads the plugins that `stack`, the stack chosen from `config`, names (tables with a
/// `library` key), resolving relative paths against the config file's folder and writing them
/// back absolute, and points each such table at its plugin's implementation. Returns the
/// implementations to register beside the built-ins. Only the chosen stack's plugins are
/// loaded: a config may list a stack whose plugin is not built on this machine.
pub fn register_config_plugins(
    config: &mut Config,
    stack: &StackDef,
    builtins: &[Implementation],
) -> Result<Vec<Implementation>> {
    let dir = Path::new(&config.source).parent().map(Path::to_path_buf).unwrap_or_default();
    let mut found: Vec<Implementation> = Vec::new();
    let mut names: Vec<String> = stack.components.iter().map(|c| c.value.clone()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let Some(table) = config.components.get_mut(&name) else { continue };
        let Some(value) = table.values.get_mut(LIBRARY_KEY) else { continue };
        let toml::Value::String(written) = &value.value else {
            return Err(Error::config(
                &value.source,
                value.line,
                format!("[{name}] `{LIBRARY_KEY}` must be a path string"),
            ));
        };
        let path = if Path::new(written).is_absolute() { PathBuf::from(written) } else { dir.join(written) };
        let plugin = load(&path).map_err(|e| match e {
            Error::Config { message, .. } => Error::Config {
                file: value.source.clone(),
                line: value.line,
                message: format!("[{name}] `{LIBRARY_KEY} = \"{written}\"`: {message} ({})", path.display()),
            },
            e => e,
        })?;
        let imp = plugin.implementation;
        if let Some(b) = builtins.iter().find(|b| b.name == imp.name) {
            return Err(Error::config(
                &value.source,
                value.line,
                format!(
                    "[{name}] the plugin {} calls itself `{}`, a built-in implementation",
                    plugin.path.display(),
                    b.name
                ),
            ));
        }
        if let Some(other) = found.iter().find(|f| f.name == imp.name && f.summary != imp.summary) {
            return Err(Error::config(
                &value.source,
                value.line,
                format!("[{name}] two plugin libraries call themselves `{}` ({})", imp.name, other.summary),
            ));
        }
        value.value = toml::Value::String(plugin.path.display().to_string());
        table.implementation = Some(Located { value: imp.name.to_string(), line: value.line });
        if !found.iter().any(|f| f.name == imp.name) {
            found.push(imp);
        }
    }
    Ok(found)
}

/// The constructor of every plugin implementation: finds the plugin by its `library` setting
/// and creates an instance with the other settings.
fn construct_plugin(settings: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
    let path = settings.string(LIBRARY_KEY, "")?;
    if path.is_empty() {
        return Err(Error::config(
            "<stack>",
            None,
            format!("[{}] a plugin needs `{LIBRARY_KEY} = \"path/to/lib.so\"`", settings.component),
        ));
    }
    let plugin = load(Path::new(&path))?;
    PluginComponent::new(plugin, settings, child).map(|c| Box::new(c) as Box<dyn Component>)
}

/// The host side of one call into a plugin (what `vm_host *` points to).
struct HostCall<'a> {
    /// Host memory, while the host executes a batch (creation has none).
    mem: Option<&'a mut HostMemory>,
    /// The bases the plugin may name: those of the batch being executed.
    bases: FxHashMap<BaseId, Base>,
    child: Option<&'a mut (dyn Component + 'static)>,
    /// The message the plugin recorded with `fail`, or the error a host service returned.
    error: Option<Error>,
}

impl HostCall<'_> {
    fn from_raw<'b>(host: *mut VmHost) -> Option<&'b mut HostCall<'b>> {
        // SAFETY: `host` is the pointer the host passed for this call (a live `HostCall`), or
        // NULL from a misbehaving plugin.
        unsafe { host.cast::<HostCall<'b>>().as_mut() }
    }

    /// Records `e` as the call's error (the first one wins) and returns its status.
    fn fail(&mut self, e: Error) -> c_int {
        let code = e.code();
        self.error.get_or_insert(e);
        code
    }
}

/// Runs a host service for the plugin: no panic crosses into C; a null host is an error status.
fn service(host: *mut VmHost, f: impl FnOnce(&mut HostCall<'_>) -> Result<()>) -> c_int {
    let Some(call) = HostCall::from_raw(host) else { return Error::InvalidArgument(String::new()).code() };
    match catch_unwind(AssertUnwindSafe(|| f(call))) {
        Ok(Ok(())) => OK,
        Ok(Err(e)) => call.fail(e),
        Err(_) => call.fail(Error::Internal("a host service panicked".into())),
    }
}

fn base_of(call: &HostCall<'_>, base: VmBase) -> Result<Base> {
    call.bases
        .get(&BaseId(base))
        .copied()
        .ok_or_else(|| Error::InvalidArgument(format!("base {base} is not a base of the batch being executed")))
}

unsafe extern "C" fn host_base_info(host: *mut VmHost, base: VmBase, out: *mut VmBaseInfo) -> c_int {
    service(host, |call| {
        let b = base_of(call, base)?;
        // SAFETY: `out` is the plugin's pointer to a vm_base_info, or NULL (checked).
        let out = unsafe { out.as_mut() }.ok_or_else(|| Error::InvalidArgument("base_info: out is NULL".into()))?;
        let data = call
            .mem
            .as_deref_mut()
            .and_then(|m| m.get_mut(b.id))
            .map_or(std::ptr::null_mut(), |buf| buf.as_mut_ptr().cast());
        *out = VmBaseInfo { dtype: b.dtype.id(), nelem: b.nelem, data };
        Ok(())
    })
}

unsafe extern "C" fn host_base_data(host: *mut VmHost, base: VmBase, allocate: c_int, data: *mut *mut c_void) -> c_int {
    service(host, |call| {
        let b = base_of(call, base)?;
        // SAFETY: `data` is the plugin's pointer to a pointer, or NULL (checked).
        let data = unsafe { data.as_mut() }.ok_or_else(|| Error::InvalidArgument("base_data: data is NULL".into()))?;
        let mem = call.mem.as_deref_mut().ok_or_else(|| Error::Protocol("base_data outside execute".into()))?;
        *data = match allocate {
            abi::BASE_DATA_EXISTING => mem.get_mut(b.id).map_or(std::ptr::null_mut(), |buf| buf.as_mut_ptr().cast()),
            abi::BASE_DATA_OVERWRITTEN => mem.ensure_overwritten(&b)?.as_mut_ptr().cast(),
            _ => mem.ensure(&b)?.as_mut_ptr().cast(),
        };
        Ok(())
    })
}

unsafe extern "C" fn host_base_free(host: *mut VmHost, base: VmBase) {
    let _ = service(host, |call| {
        if let Some(mem) = call.mem.as_deref_mut() {
            mem.free(BaseId(base));
        }
        Ok(())
    });
}

unsafe extern "C" fn host_child_execute(host: *mut VmHost, instrs: *const VmInstruction, n: usize) -> c_int {
    service(host, |call| {
        if n == 0 {
            return Ok(());
        }
        if instrs.is_null() {
            return Err(Error::InvalidArgument("child_execute: instrs is NULL".into()));
        }
        // SAFETY: the plugin passes `n` instructions at `instrs` (header contract).
        let raw = unsafe { std::slice::from_raw_parts(instrs, n) };
        let bases = &call.bases;
        let batch: Vec<Instruction> = raw
            .iter()
            .enumerate()
            .map(|(i, c)| c.to_instruction_with(&|id| bases.get(&id).copied(), i))
            .collect::<Result<_>>()?;
        vm_ir::instr::validate_batch(&batch)?;
        let child = call
            .child
            .as_deref_mut()
            .ok_or_else(|| Error::Protocol("child_execute: the component has no child".into()))?;
        let mem = call.mem.as_deref_mut().ok_or_else(|| Error::Protocol("child_execute outside execute".into()))?;
        child.execute(&batch, mem)
    })
}

unsafe extern "C" fn host_child_register_extension(
    host: *mut VmHost,
    name: *const c_char,
    opcode: u32,
    implemented: *mut c_int,
) -> c_int {
    service(host, |call| {
        // SAFETY: the plugin's NUL-terminated name, or NULL (checked by plugin_str).
        let name = unsafe { plugin_str(name, "extension name") }.map_err(Error::InvalidArgument)?;
        let found = match call.child.as_deref_mut() {
            Some(child) => child.register_extension(name, Opcode::from_id(opcode)?)?,
            None => false,
        };
        // SAFETY: the plugin's pointer to an int, or NULL (then the answer is not wanted).
        if let Some(out) = unsafe { implemented.as_mut() } {
            *out = c_int::from(found);
        }
        Ok(())
    })
}

unsafe extern "C" fn host_fail(host: *mut VmHost, status: c_int, message: *const c_char) -> c_int {
    let Some(call) = HostCall::from_raw(host) else { return status };
    let text = if message.is_null() {
        String::new()
    } else {
        // SAFETY: the plugin's NUL-terminated message (checked non-null).
        unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
    };
    let e = error_of_status(status, text);
    call.error.get_or_insert(e);
    status
}

/// The host's services, the same for every call.
static HOST_API: VmHostApi = VmHostApi {
    abi_version: COMPONENT_ABI_VERSION,
    base_info: host_base_info,
    base_data: host_base_data,
    base_free: host_base_free,
    child_execute: host_child_execute,
    child_register_extension: host_child_register_extension,
    fail: host_fail,
};

/// A component built by a plugin: forwards every call through the plugin's function table.
pub struct PluginComponent {
    plugin: &'static Plugin,
    table: String,
    instance: *mut c_void,
    child: Option<Box<dyn Component>>,
    settings: Vec<(String, String)>,
    statistics: Statistics,
    /// Scratch of `execute`, kept from batch to batch: the batch's C form and its bases.
    c_batch: Vec<VmInstruction>,
    bases: FxHashMap<BaseId, Base>,
}

// SAFETY: the plugin contract requires an instance to be usable from any thread, one call at a
// time; `&mut self` on every call that touches it gives exactly that.
unsafe impl Send for PluginComponent {}

/// A setting's value as the plugin reads it: strings bare, other values as TOML writes them.
fn setting_text(v: &SettingValue) -> String {
    match &v.value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl PluginComponent {
    /// Creates an instance of `plugin` with `settings` (all but `library` are handed over).
    pub fn new(
        plugin: &'static Plugin,
        settings: &Settings,
        mut child: Option<Box<dyn Component>>,
    ) -> Result<PluginComponent> {
        let pairs: Vec<(String, String)> = settings
            .values
            .iter()
            .filter(|(k, _)| *k != LIBRARY_KEY)
            .map(|(k, v)| (k.clone(), setting_text(v)))
            .collect();
        let c_pairs: Vec<(CString, CString)> = pairs
            .iter()
            .map(|(k, v)| Ok((CString::new(k.as_str())?, CString::new(v.as_str())?)))
            .collect::<std::result::Result<_, std::ffi::NulError>>()
            .map_err(|_| Error::config(&settings.component, None, "a plugin setting contains a NUL character"))?;
        let raw: Vec<VmSetting> =
            c_pairs.iter().map(|(k, v)| VmSetting { key: k.as_ptr(), value: v.as_ptr() }).collect();
        let has_child = child.is_some();
        let mut call = HostCall { mem: None, bases: FxHashMap::default(), child: child.as_deref_mut(), error: None };
        let host = (&raw mut call).cast::<VmHost>();
        // SAFETY: the plugin's create function with settings valid for the call and the host's
        // services; a panic cannot come back from C code.
        let instance = unsafe { (plugin.api.create)(raw.as_ptr(), raw.len(), c_int::from(has_child), host, &HOST_API) };
        let error = call.error.take();
        if instance.is_null() {
            let e = error.unwrap_or_else(|| Error::Internal("create returned NULL without an error message".into()));
            return Err(Self::named_error(plugin, &settings.component, e));
        }
        Ok(PluginComponent {
            plugin,
            table: settings.component.clone(),
            instance,
            child,
            settings: pairs,
            statistics: Statistics::default(),
            c_batch: Vec::new(),
            bases: FxHashMap::default(),
        })
    }

    /// `e` as an error naming the plugin and its library.
    fn named_error(plugin: &Plugin, table: &str, e: Error) -> Error {
        let what = format!("plugin `{table}` ({})", plugin.path.display());
        match e {
            Error::Execution(m) => Error::Execution(format!("{what}: {m}")),
            Error::Unsupported(m) => Error::Unsupported(format!("{what}: {m}")),
            Error::Internal(m) => Error::Internal(format!("{what}: {m}")),
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("{what}: {m}")),
            Error::OutOfMemory(m) => Error::OutOfMemory(format!("{what}: {m}")),
            Error::Device(m) => Error::Device(format!("{what}: {m}")),
            Error::Protocol(m) => Error::Protocol(format!("{what}: {m}")),
            Error::Config { file, line, message } => {
                Error::Config { file, line, message: format!("{what}: {message}") }
            }
            e => e,
        }
    }

    /// The outcome of a call that returned `status`.
    fn outcome(&self, status: c_int, error: Option<Error>) -> Result<()> {
        if status == OK {
            return Ok(());
        }
        let e = error.unwrap_or_else(|| {
            error_of_status(status, format!("returned {} without a message", status_name(status).to_string_lossy()))
        });
        Err(Self::named_error(self.plugin, &self.table, e))
    }
}

impl Component for PluginComponent {
    fn name(&self) -> &str {
        self.plugin.implementation.name
    }

    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        vm_abi::encode_batch(&mut self.c_batch, batch)?;
        let mut bases = std::mem::take(&mut self.bases);
        bases.clear();
        // Consecutive operands mostly name the same base (an instruction's output is the next
        // one's input): each run of one base is inserted once.
        let mut last = None;
        for base in batch.iter().flat_map(|i| i.views().map(|v| v.base)) {
            if last != Some(base.id) {
                last = Some(base.id);
                bases.insert(base.id, base);
            }
        }
        let mut call = HostCall { mem: Some(mem), bases, child: self.child.as_deref_mut(), error: None };
        let host = (&raw mut call).cast::<VmHost>();
        // SAFETY: the plugin's execute on its own instance, with a batch valid for the call.
        let status =
            unsafe { (self.plugin.api.execute)(self.instance, self.c_batch.as_ptr(), batch.len(), host, &HOST_API) };
        let error = call.error.take();
        self.bases = std::mem::take(&mut call.bases);
        self.statistics.batches += 1;
        self.outcome(status, error)
    }

    fn child(&self) -> Option<&(dyn Component + 'static)> {
        self.child.as_deref()
    }

    fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
        self.child.as_deref_mut()
    }

    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        let Some(register) = self.plugin.api.register_extension else {
            return vm_runtime::component::forward_extension(self, name, opcode);
        };
        let c_name = CString::new(name).map_err(|_| Error::InvalidArgument("extension name contains NUL".into()))?;
        let mut implemented: c_int = 0;
        let mut call =
            HostCall { mem: None, bases: FxHashMap::default(), child: self.child.as_deref_mut(), error: None };
        let host = (&raw mut call).cast::<VmHost>();
        // SAFETY: the plugin's function on its instance, with arguments valid for the call.
        let status =
            unsafe { register(self.instance, c_name.as_ptr(), opcode.id(), &raw mut implemented, host, &HOST_API) };
        let error = call.error.take();
        self.outcome(status, error)?;
        Ok(implemented != 0)
    }

    fn info(&self) -> ComponentInfo {
        let mut notes = vec![format!(
            "plugin {} (component ABI {COMPONENT_ABI_VERSION}): {}",
            self.plugin.path.display(),
            self.plugin.summary
        )];
        if let Some(describe) = self.plugin.api.describe {
            let mut buf = vec![0u8; 1024];
            // SAFETY: the plugin writes at most `cap` bytes, NUL included, into the buffer.
            unsafe { describe(self.instance, buf.as_mut_ptr().cast(), buf.len()) };
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            let text = String::from_utf8_lossy(&buf[..end]).into_owned();
            if !text.is_empty() {
                notes.push(text);
            }
        }
        ComponentInfo {
            name: self.table.clone(),
            implementation: self.plugin.implementation.name.into(),
            settings: self.settings.clone(),
            notes,
            ..ComponentInfo::default()
        }
    }

    fn statistics(&self) -> Statistics {
        self.statistics
    }

    fn reduction_order(&self) -> ReductionOrder {
        match self.plugin.api.reduction_order {
            // SAFETY: the plugin's function on its instance.
            Some(f) if unsafe { f(self.instance) } == REDUCTION_REASSOCIATED => ReductionOrder::Reassociated,
            _ => ReductionOrder::Sequential,
        }
    }
}

impl Drop for PluginComponent {
    fn drop(&mut self) {
        // SAFETY: the instance the plugin created, destroyed once.
        unsafe { (self.plugin.api.destroy)(self.instance) };
    }
}
