//! # vm-plugin: engine plugins written in Rust
//!
//! Exports any [`Implementation`] (a component and its settings, as the VM's own engines
//! register them) through the component ABI of `vm_component.h`, so that a `cdylib` crate of one
//! line is an engine plugin the VM loads from a config table's `library` key:
//!
//! ```ignore
//! vm_plugin::export_component!(MY_ENGINE_IMPLEMENTATION);
//! ```
//!
//! The adapter converts each batch from the C form (looking the bases up with the host's
//! `base_info`), runs it on the component with a [`HostMemory`] whose buffers are the host's own
//! (lent through `base_data`, so nothing is copied), gives the component a child that forwards to
//! the host's `child_execute`, returns the host's buffers on `FREE`, and turns errors and panics
//! into a status with `fail`'s message. No panic crosses the boundary.

use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use vm_abi::VmInstruction;
use vm_abi::component::{
    BASE_DATA_OVERWRITTEN, BASE_DATA_ZEROED, COMPONENT_ABI_VERSION, REDUCTION_REASSOCIATED, REDUCTION_SEQUENTIAL,
    SETTING_BOOLEAN, SETTING_INTEGER, SETTING_STRING, VmBaseInfo, VmHost, VmHostApi, VmSetting, VmSettingSpec,
};
use vm_ir::{Base, BaseId, DType, Error, Instruction, Opcode, Result};
use vm_runtime::memory::Fill;
use vm_runtime::settings::{SettingKind, SettingValue};
use vm_runtime::{Component, ComponentInfo, HostMemory, Implementation, ReductionOrder, Settings};

/// Exports `$implementation` (a `vm_runtime::Implementation`) as this library's
/// `vm_component_entry`.
#[macro_export]
macro_rules! export_component {
    ($implementation:expr) => {
        /// The component ABI's entry point (see `vm_component.h`).
        #[unsafe(no_mangle)]
        pub extern "C" fn vm_component_entry() -> *const $crate::VmComponentApi {
            $crate::component_api(&$implementation)
        }
    };
}

/// The component ABI's function table (`vm_component_api`), which the entry point returns.
pub use vm_abi::component::VmComponentApi;

/// The function table of `implementation`, built on first use (one implementation per library).
pub fn component_api(implementation: &'static Implementation) -> *const VmComponentApi {
    static API: OnceLock<Exported> = OnceLock::new();
    let exported = API.get_or_init(|| Exported::new(implementation));
    &exported.api
}

/// The function table and the C strings it points to.
struct Exported {
    api: VmComponentApi,
    _strings: Vec<CString>,
    _specs: Vec<VmSettingSpec>,
}

// SAFETY: the table and its strings are immutable once built; the raw pointers point into the
// CStrings and specs this struct owns, which live in a static.
unsafe impl Send for Exported {}
// SAFETY: as above.
unsafe impl Sync for Exported {}

static IMPLEMENTATION: OnceLock<&'static Implementation> = OnceLock::new();

/// A string of the implementation's metadata as C (interior NULs cannot occur in the names and
/// docs of `settings!`; one would be replaced by a space).
fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl Exported {
    fn new(implementation: &'static Implementation) -> Exported {
        let _ = IMPLEMENTATION.set(implementation);
        let mut strings = vec![c_string(implementation.name), c_string(implementation.summary)];
        let mut specs = Vec::new();
        for s in implementation.settings {
            let kind = match s.kind {
                SettingKind::Integer => SETTING_INTEGER,
                SettingKind::Boolean => SETTING_BOOLEAN,
                // names or positions are given as text; the component parses them
                SettingKind::String | SettingKind::IndexOrName => SETTING_STRING,
            };
            let default = if s.kind == SettingKind::IndexOrName && !s.default.starts_with('"') {
                format!("\"{}\"", s.default)
            } else {
                s.default.to_string()
            };
            let (key, default, doc) = (c_string(s.key), c_string(&default), c_string(s.doc));
            let (min, max) = s.range.unwrap_or((1, 0));
            specs.push(VmSettingSpec {
                key: key.as_ptr(),
                kind,
                default_value: default.as_ptr(),
                doc: doc.as_ptr(),
                min,
                max,
            });
            strings.extend([key, default, doc]);
        }
        let api = VmComponentApi {
            abi_version: COMPONENT_ABI_VERSION,
            name: strings[0].as_ptr(),
            summary: strings[1].as_ptr(),
            settings: specs.as_ptr(),
            nsettings: specs.len(),
            needs_child: c_int::from(implementation.needs_child),
            create,
            execute,
            register_extension: Some(register_extension),
            reduction_order: Some(reduction_order),
            describe: Some(describe),
            destroy,
        };
        Exported { api, _strings: strings, _specs: specs }
    }
}

/// The host of the call in progress, as the child forwarder and the memory source reach it.
#[derive(Clone, Copy)]
struct HostHandle {
    host: *mut VmHost,
    api: *const VmHostApi,
}

// SAFETY: the handle is only used during the host's call, on the thread that received it (the
// component runs its child and its memory source on that thread).
unsafe impl Send for HostHandle {}

type SharedHost = Arc<Mutex<Option<HostHandle>>>;

fn current(shared: &SharedHost) -> Result<HostHandle> {
    shared
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .ok_or_else(|| Error::Protocol("the host is reachable only during a call from it".into()))
}

/// The outcome of a host service that returned `status`: its error says what the host said.
fn status_result(status: c_int, what: &str) -> Result<()> {
    if status == 0 { Ok(()) } else { Err(Error::Execution(format!("the host's {what} failed with status {status}"))) }
}

/// One instance: the component, its host memory (lent by the host) and the host of the call
/// in progress.
struct Instance {
    component: Box<dyn Component>,
    mem: HostMemory,
    host: SharedHost,
    /// The last batch, decoded: its instructions' storage is reused by the next one.
    batch: Vec<Instruction>,
    /// The bases of the batch in progress (the host's; the component's scratch are not among
    /// them), shared with the memory source that asks the host for their buffers.
    bases: Arc<Mutex<FxHashMap<BaseId, Base>>>,
    /// The bases of the batch in progress that have host data, and where it is.
    lent: Vec<(Base, NonNull<u8>)>,
}

/// The component's child: forwards batches to the host's `child_execute`.
struct HostChild {
    host: SharedHost,
    /// The C form of the last batch, its storage reused by the next.
    c_batch: Vec<VmInstruction>,
}

impl Component for HostChild {
    fn name(&self) -> &str {
        "host child"
    }

    fn execute(&mut self, batch: &[Instruction], _mem: &mut HostMemory) -> Result<()> {
        let h = current(&self.host)?;
        let raw = vm_abi::encode_batch(&mut self.c_batch, batch)?;
        // SAFETY: the host's service, called during its call with a batch valid for it.
        let status = unsafe { ((*h.api).child_execute)(h.host, raw.as_ptr(), raw.len()) };
        status_result(status, "child")
    }

    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        let h = current(&self.host)?;
        let name = CString::new(name).map_err(|_| Error::InvalidArgument("extension name contains NUL".into()))?;
        let mut implemented: c_int = 0;
        // SAFETY: the host's service with arguments valid for the call.
        let status =
            unsafe { ((*h.api).child_register_extension)(h.host, name.as_ptr(), opcode.id(), &raw mut implemented) };
        status_result(status, "child")?;
        Ok(implemented != 0)
    }

    fn info(&self) -> ComponentInfo {
        ComponentInfo { name: "host child".into(), implementation: "host".into(), ..ComponentInfo::default() }
    }
}

/// Runs `f` for the host: errors and panics become a status and `fail`'s message.
fn for_host(host: *mut VmHost, api: *const VmHostApi, f: impl FnOnce() -> Result<()>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::Internal(format!("panic: {text}")))
    });
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            let message = c_string(&e.to_string());
            // SAFETY: the host's services, valid during its call.
            match unsafe { api.as_ref() } {
                // SAFETY: the host's `fail` with its own host pointer and a NUL-terminated message.
                Some(api) => unsafe { (api.fail)(host, e.code(), message.as_ptr()) },
                None => e.code(),
            }
        }
    }
}

/// A setting's text as the TOML value of its declared kind.
fn setting_value(kind: SettingKind, text: &str) -> toml::Value {
    let parsed = match kind {
        SettingKind::Integer => text.parse().ok().map(toml::Value::Integer),
        SettingKind::Boolean => text.parse().ok().map(toml::Value::Boolean),
        SettingKind::IndexOrName => text.parse().ok().map(toml::Value::Integer),
        SettingKind::String => None,
    };
    parsed.unwrap_or_else(|| toml::Value::String(text.to_string()))
}

unsafe extern "C" fn create(
    settings: *const VmSetting,
    n: usize,
    has_child: c_int,
    host: *mut VmHost,
    api: *const VmHostApi,
) -> *mut c_void {
    let mut instance: *mut c_void = std::ptr::null_mut();
    let _ = for_host(host, api, || {
        let imp = IMPLEMENTATION.get().ok_or_else(|| Error::Internal("no implementation exported".into()))?;
        let pairs = if n == 0 {
            &[][..]
        } else {
            // SAFETY: the host passes `n` settings at `settings`.
            unsafe { std::slice::from_raw_parts(settings, n) }
        };
        let mut values = std::collections::BTreeMap::new();
        for p in pairs {
            // SAFETY: the host's NUL-terminated strings, valid during the call.
            let (key, text) =
                unsafe { (CStr::from_ptr(p.key).to_string_lossy(), CStr::from_ptr(p.value).to_string_lossy()) };
            let kind = imp.settings.iter().find(|s| s.key == key).map_or(SettingKind::String, |s| s.kind);
            let value = SettingValue { value: setting_value(kind, &text), source: "<host>".into(), line: None };
            values.insert(key.into_owned(), value);
        }
        let settings = Settings { component: imp.name.to_string(), values };
        let shared: SharedHost = Arc::new(Mutex::new(None));
        let child: Option<Box<dyn Component>> = (has_child != 0)
            .then(|| Box::new(HostChild { host: shared.clone(), c_batch: Vec::new() }) as Box<dyn Component>);
        let component = (imp.construct)(&settings, child)?;
        let boxed = Box::new(Instance {
            component,
            mem: HostMemory::new(),
            host: shared,
            batch: Vec::new(),
            bases: Arc::default(),
            lent: Vec::new(),
        });
        instance = Box::into_raw(boxed).cast();
        Ok(())
    });
    instance
}

/// Runs `f` on the instance with the host of this call reachable, and unreachable again after.
fn with_instance(
    instance: *mut c_void,
    host: *mut VmHost,
    api: *const VmHostApi,
    f: impl FnOnce(&mut Instance) -> Result<()>,
) -> c_int {
    for_host(host, api, || {
        // SAFETY: the instance `create` made, used by one call at a time (the host's contract).
        let inst = unsafe { instance.cast::<Instance>().as_mut() }
            .ok_or_else(|| Error::InvalidArgument("the instance is NULL".into()))?;
        *inst.host.lock().unwrap_or_else(PoisonError::into_inner) = Some(HostHandle { host, api });
        let r = f(inst);
        *inst.host.lock().unwrap_or_else(PoisonError::into_inner) = None;
        r
    })
}

unsafe extern "C" fn execute(
    instance: *mut c_void,
    batch: *const VmInstruction,
    n: usize,
    host: *mut VmHost,
    api: *const VmHostApi,
) -> c_int {
    with_instance(instance, host, api, |inst| {
        let raw = if n == 0 {
            &[][..]
        } else {
            // SAFETY: the host passes `n` instructions at `batch`.
            unsafe { std::slice::from_raw_parts(batch, n) }
        };
        // SAFETY: the host's services, valid during the call.
        let api = unsafe { &*api };
        // Each base once: what it is, and the host's buffer when it has one.
        let shared = inst.bases.clone();
        let mut guard = shared.lock().unwrap_or_else(PoisonError::into_inner);
        guard.clear();
        let bases = RefCell::new(guard);
        let lent = RefCell::new(std::mem::take(&mut inst.lent));
        lent.borrow_mut().clear();
        // The last base found: consecutive operands mostly name the same one.
        let last = std::cell::Cell::new(None::<Base>);
        let base_of = |id: BaseId| -> Option<Base> {
            if let Some(b) = last.get().filter(|b| b.id == id) {
                return Some(b);
            }
            if let Some(b) = bases.borrow().get(&id) {
                last.set(Some(*b));
                return Some(*b);
            }
            let mut info = VmBaseInfo::default();
            // SAFETY: the host's service during its call.
            let status = unsafe { (api.base_info)(host, id.0, &raw mut info) };
            let dtype = DType::from_id(info.dtype).ok().filter(|_| status == 0)?;
            let base = Base { id, dtype, nelem: info.nelem };
            bases.borrow_mut().insert(id, base);
            if let Some(data) = NonNull::new(info.data.cast::<u8>()) {
                lent.borrow_mut().push((base, data));
            }
            last.set(Some(base));
            Some(base)
        };
        // Decoded over the last batch's instructions, reusing their storage.
        let mut instrs = std::mem::take(&mut inst.batch);
        instrs.truncate(n);
        instrs
            .try_reserve(n - instrs.len())
            .map_err(|_| Error::InvalidArgument(format!("a batch of {n} instructions does not fit in memory")))?;
        instrs.resize_with(n, || Instruction::empty(Opcode::None));
        let decoded = raw
            .iter()
            .zip(instrs.iter_mut())
            .enumerate()
            .try_for_each(|(i, (c, slot))| c.decode_into(&base_of, i, slot));
        drop(bases);
        inst.lent = lent.into_inner();
        if let Err(e) = decoded {
            instrs.clear(); // partly decoded: nothing of it may be reused as an instruction
            inst.batch = instrs;
            return Err(e);
        }
        // The host's memory is the only memory: its buffers of the batch's bases, lent for this
        // call (nothing of an earlier call is kept: the host may have freed or replaced them),
        // and new ones allocated by the host when the component first writes a base.
        inst.mem.forget_lent();
        for (base, ptr) in &inst.lent {
            // SAFETY: the host's buffer of the base (aligned, initialised, live for the call).
            unsafe { inst.mem.lend(base, *ptr) };
        }
        let handle = HostHandle { host, api };
        let host_bases = inst.bases.clone();
        inst.mem.set_source(Some(Box::new(move |base: &Base, fill: Fill| {
            if !host_bases.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&base.id) {
                return Ok(None); // the component's own scratch
            }
            let h = handle;
            let mut data: *mut c_void = std::ptr::null_mut();
            let allocate = match fill {
                Fill::Zeroed => BASE_DATA_ZEROED,
                Fill::Overwritten => BASE_DATA_OVERWRITTEN,
            };
            // SAFETY: the host's service during its call; its buffers stay put while the base lives.
            let status = unsafe { ((*h.api).base_data)(h.host, base.id.0, allocate, &raw mut data) };
            status_result(status, "base_data")?;
            NonNull::new(data.cast::<u8>()).map(Some).ok_or_else(|| Error::Internal("base_data gave NULL".into()))
        })));
        let result = inst.component.execute(&instrs, &mut inst.mem);
        inst.mem.set_source(None);
        // A FREE ends the base on the host too (its buffer was lent).
        for instr in instrs.iter().filter(|i| i.opcode == Opcode::Free) {
            for v in instr.views() {
                // SAFETY: the host's service during its call.
                unsafe { (api.base_free)(host, v.base.id.0) };
            }
        }
        inst.mem.forget_lent();
        inst.batch = instrs;
        result
    })
}

unsafe extern "C" fn register_extension(
    instance: *mut c_void,
    name: *const c_char,
    opcode: u32,
    implemented: *mut c_int,
    host: *mut VmHost,
    api: *const VmHostApi,
) -> c_int {
    with_instance(instance, host, api, |inst| {
        // SAFETY: the host's NUL-terminated name.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        let found = inst.component.register_extension(&name, Opcode::from_id(opcode)?)?;
        // SAFETY: the host's pointer to an int.
        if let Some(out) = unsafe { implemented.as_mut() } {
            *out = c_int::from(found);
        }
        Ok(())
    })
}

unsafe extern "C" fn reduction_order(instance: *mut c_void) -> c_int {
    // SAFETY: the instance `create` made.
    let order = unsafe { instance.cast::<Instance>().as_ref() }.map(|i| i.component.reduction_order());
    match order {
        Some(ReductionOrder::Reassociated) => REDUCTION_REASSOCIATED,
        _ => REDUCTION_SEQUENTIAL,
    }
}

unsafe extern "C" fn describe(instance: *mut c_void, buf: *mut c_char, cap: usize) {
    // SAFETY: the instance `create` made.
    let Some(inst) = (unsafe { instance.cast::<Instance>().as_ref() }) else { return };
    if buf.is_null() || cap == 0 {
        return;
    }
    let info = inst.component.info();
    let mut text = info.notes.join("; ");
    let stats = inst.component.statistics();
    if stats != vm_runtime::Statistics::default() {
        text = format!("{text}; {stats}");
    }
    let bytes = text.as_bytes();
    let n = bytes.len().min(cap - 1);
    // SAFETY: the host's buffer holds `cap` bytes; n + 1 <= cap.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

unsafe extern "C" fn destroy(instance: *mut c_void) {
    if !instance.is_null() {
        // SAFETY: the instance `create` made, destroyed once by the host.
        let mut inst = unsafe { Box::from_raw(instance.cast::<Instance>()) };
        let _ = catch_unwind(AssertUnwindSafe(|| inst.component.shutdown()));
    }
}
