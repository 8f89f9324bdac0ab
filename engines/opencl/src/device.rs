//! Finding OpenCL platforms and devices and choosing one from the settings.

use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU, Device};
use opencl3::platform::{Platform, get_platforms};
use vm_ir::{Error, Result};

/// What the engine knows about one device.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Platform index.
    pub platform_index: usize,
    /// Platform name.
    pub platform: String,
    /// Device index within its platform.
    pub index: usize,
    /// Device name.
    pub name: String,
    /// `gpu`, `cpu` or `other`.
    pub kind: &'static str,
    /// Global memory in bytes.
    pub memory: u64,
    /// Compute units.
    pub compute_units: u32,
    /// Whether the device computes in f64 (`cl_khr_fp64` or a nonzero double config).
    pub fp64: bool,
    /// Driver version text.
    pub driver: String,
    /// Platform version text (`OpenCL 3.0 PoCL ...`).
    pub platform_version: String,
    /// The largest single buffer the device can allocate, in bytes.
    pub max_alloc: u64,
    /// The largest `__constant` buffer argument, in bytes.
    pub max_constant: u64,
    /// The largest work group the device runs.
    pub max_work_group: usize,
    /// The device handle.
    pub device: Device,
}

impl DeviceInfo {
    /// One line for `vm info`.
    pub fn describe(&self) -> String {
        format!(
            "platform {} `{}` device {} `{}` ({}): {} MiB, max buffer {} MiB, {} compute units, fp64 {}, driver {}",
            self.platform_index,
            self.platform,
            self.index,
            self.name,
            self.kind,
            self.memory >> 20,
            self.max_alloc >> 20,
            self.compute_units,
            if self.fp64 { "yes" } else { "no" },
            self.driver
        )
    }
}

fn cl_error(what: &str, code: i32) -> Error {
    if code == -1001 {
        Error::Device(format!(
            "no OpenCL platform found ({what}: CL_PLATFORM_NOT_FOUND_KHR, -1001); install an OpenCL driver (e.g. pocl-opencl-icd) or use another stack"
        ))
    } else {
        Error::Device(format!("{what} failed with OpenCL error {code}"))
    }
}

/// Serialises platform discovery and context creation in this process: some drivers (PoCL)
/// initialise lazily and crash when two threads enumerate devices at once.
pub static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Every device of every platform. Errors when libOpenCL is missing or there is no platform.
pub fn all_devices() -> Result<Vec<DeviceInfo>> {
    let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
    discover()
}

/// One line per OpenCL device of every platform (memory, largest buffer, compute units, fp64,
/// driver), for `vm info`; a single line saying why when there is no OpenCL platform or
/// libOpenCL is missing.
pub fn describe_platforms() -> Vec<String> {
    match all_devices() {
        Ok(all) if all.is_empty() => vec!["OpenCL platforms found, but no devices".into()],
        Ok(all) => all.iter().map(DeviceInfo::describe).collect(),
        Err(e) => vec![e.to_string()],
    }
}

/// [`all_devices`] for a caller that holds [`INIT`].
pub(crate) fn discover() -> Result<Vec<DeviceInfo>> {
    let platforms: Vec<Platform> = get_platforms().map_err(|e| cl_error("clGetPlatformIDs", e.0))?;
    if platforms.is_empty() {
        return Err(cl_error("clGetPlatformIDs", -1001));
    }
    let mut all = Vec::new();
    for (pi, p) in platforms.iter().enumerate() {
        let pname = p.name().unwrap_or_default();
        let pversion = p.version().unwrap_or_default();
        let ids = p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default();
        for (di, id) in ids.into_iter().enumerate() {
            let d = Device::new(id);
            let ty = d.dev_type().unwrap_or(0);
            let kind = if ty & CL_DEVICE_TYPE_GPU != 0 {
                "gpu"
            } else if ty & CL_DEVICE_TYPE_CPU != 0 {
                "cpu"
            } else {
                "other"
            };
            let fp64 = d.extensions().unwrap_or_default().split_whitespace().any(|e| e == "cl_khr_fp64")
                || d.double_fp_config().unwrap_or(0) != 0;
            all.push(DeviceInfo {
                platform_index: pi,
                platform: pname.trim().to_string(),
                index: di,
                name: d.name().unwrap_or_default().trim().to_string(),
                kind,
                memory: d.global_mem_size().unwrap_or(0),
                compute_units: d.max_compute_units().unwrap_or(0),
                fp64,
                driver: d.driver_version().unwrap_or_default().trim().to_string(),
                platform_version: pversion.trim().to_string(),
                max_alloc: d.max_mem_alloc_size().unwrap_or(0),
                max_constant: d.max_constant_buffer_size().unwrap_or(0),
                max_work_group: d.max_work_group_size().unwrap_or(1),
                device: d,
            });
        }
    }
    Ok(all)
}

/// True when `want` (empty, an index, or a case-insensitive name substring) picks `(index, name)`.
fn matches(want: &str, index: usize, name: &str) -> bool {
    let want = want.trim();
    if want.is_empty() {
        return true;
    }
    match want.parse::<usize>() {
        Ok(i) => i == index,
        Err(_) => name.to_lowercase().contains(&want.to_lowercase()),
    }
}

/// The first device matching the `platform`, `device` and `device_type` (`gpu`, `cpu`, `any`)
/// settings.
pub fn choose(all: &[DeviceInfo], platform: &str, device: &str, device_type: &str) -> Result<DeviceInfo> {
    if !vm_runtime::settings::spec(crate::Config::SPECS, "device_type").choices.contains(&device_type) {
        return Err(Error::InvalidArgument(format!("opencl device_type must be any, gpu or cpu, got `{device_type}`")));
    }
    all.iter()
        .find(|d| {
            matches(platform, d.platform_index, &d.platform)
                && matches(device, d.index, &d.name)
                && (device_type == "any" || d.kind == device_type)
        })
        .cloned()
        .ok_or_else(|| {
            let list: Vec<String> = all.iter().map(DeviceInfo::describe).collect();
            Error::Device(format!(
                "no OpenCL device matches platform `{platform}`, device `{device}`, type {device_type}; found: {}",
                list.join("; ")
            ))
        })
}
