//! # vm-opencl: the OpenCL engine
//!
//! The `opencl` component cuts each batch into kernels with [`vm_core::kernel`] (shared with the
//! cpu engine), turns each kernel into OpenCL C ([`codegen`]), builds it once per source text
//! (an in-memory program cache) and runs one work item per position of the iteration space.
//! Device buffers are kept per base, created lazily, copied to the host only on SYNC (or before
//! the fallback needs them) and to the device only when the host copy is newer.
//!
//! Runs on the device: element-wise arithmetic, comparisons, logical and bitwise operations,
//! casts, select, a few exact float functions, `range` and `random` (Philox, bit-identical to
//! [`vm_core::random`]). f64 only on devices with fp64. Everything else (reductions, scans,
//! gather/scatter, extension methods, transcendental functions, instructions whose output
//! partially overlaps an input) goes to the fallback child with the data moved as needed.
//!
//! libOpenCL is loaded at run time (opencl3's `dynamic` feature): the crate always builds;
//! without a platform, constructing the engine is a clear [`vm_core::Error::Device`].

pub mod codegen;
pub mod device;
mod engine;

pub use engine::{Config, OpenClEngine, Stats};

use vm_core::component::Settings;
use vm_core::{Component, Implementation, Result, SettingSpec};

/// The settings of the `opencl` component.
pub const SETTINGS: &[SettingSpec] = &[
    SettingSpec { key: "platform", default: "\"\"", doc: "platform by index or name substring; empty = any" },
    SettingSpec { key: "device", default: "\"\"", doc: "device by index or name substring; empty = any" },
    SettingSpec { key: "device_type", default: "\"any\"", doc: "any, gpu or cpu" },
    SettingSpec { key: "work_group_size", default: "0", doc: "work-group size; 0 = let the driver choose" },
    SettingSpec { key: "max_kernel", default: "256", doc: "the most instructions fused into one kernel" },
];

fn construct(settings: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
    Ok(Box::new(OpenClEngine::new(Config::from_settings(settings)?, child)?))
}

/// The `opencl` implementation: no child needed; a child, when given, runs what the device
/// code does not implement.
pub const IMPLEMENTATION: Implementation = Implementation {
    name: "opencl",
    summary: "OpenCL engine: fuses instructions into OpenCL C kernels, keeps data on the device",
    needs_child: false,
    settings: SETTINGS,
    construct,
};
