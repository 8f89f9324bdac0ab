//! # vm-opencl: the OpenCL engine
//!
//! The `opencl` component cuts each batch into kernels with [`vm_fusion`] (shared with the
//! cpu engine), turns each into OpenCL C ([`codegen`]) and builds each source text once. The text
//! is structural: view starts and strides, sizes and constants are read from a parameter buffer
//! at run time and temporaries are named by position, so the iterations of an iterative program
//! share their programs. The new programs a batch needs are compiled together, as one OpenCL
//! program with a namespace per source, because a device compiler's cost is mostly per program
//! (about 80 ms each on PoCL). Built programs are cached in memory by their source text and,
//! when the `cache_dir` setting names a directory, their binaries are kept there too (one
//! program per file, so then each is compiled alone; [`cache`], keyed by a hash of the source,
//! the build options, the device name, the driver version and the platform version) so a later
//! process loads them instead of compiling (a damaged file is rebuilt from source). `vm info` reports the cache's hits, misses and build time.
//!
//! Device buffers are kept per base, created lazily (from the host data, or zero-filled on the
//! device when the host holds none), copied to the host only on SYNC (or before the fallback
//! needs them) and to the device only when the host copy is newer (after DISCARD); FREE and
//! DISCARD release them, and a few released buffers are kept for reuse by a later base or scratch
//! buffer of the same size. Work is queued in order and waited for once per batch. A base larger
//! than the device's largest buffer, or an allocation the device refuses, is
//! [`vm_ir::Error::OutOfMemory`].
//!
//! Runs on the device:
//! - every element-wise opcode on every dtype: arithmetic, NumPy's integer division family and
//!   integer powers and shifts (exactly [`vm_ir::semantics`]), comparisons, logical and bitwise
//!   operations, casts, `select`, NumPy's float `floor_divide`/`remainder`, and the math
//!   functions through the OpenCL C built-ins (exactly rounded where OpenCL requires it: `sqrt`,
//!   `fmod`, rounding, `copysign`, min/max; transcendental functions and `pow` within the
//!   built-ins' documented few-ulp bounds, see [`codegen::is_approximate`]);
//! - `range` and `random` (Philox, bit-identical to [`vm_ir::random`]);
//! - reductions along any axis: one work item per output element for axes up to
//!   [`codegen::SERIAL_REDUCE_MAX`] long (bit-identical to the reference engine), deterministic
//!   parallel tree reductions in work-group local memory otherwise (in two stages when few output
//!   elements are left to spread over the device), fused kernels with reductions being run as
//!   their element-wise runs and reductions in order;
//! - the reductions to a position, `argmin_reduce` and `argmax_reduce`, alone (not fused): the
//!   same two forms over (value, position) pairs, combined so that the result is always the
//!   reference engine's;
//! - scans (one work item per line, in order), gather and scatter (an index check first; where
//!   scatter indices repeat the last write wins, as in the reference engine).
//!
//! f64 runs only on devices with `cl_khr_fp64`; elsewhere instructions using f64 go to the
//! fallback (never computed in f32). Goes to the fallback child, with the data moved as needed:
//! extension methods, reductions of empty axes, instructions whose output partially overlaps an
//! input, gather/scatter whose output shares a base with an input, and gather/scatter with an
//! index out of range (the fallback reports the error). Without a child these are
//! [`vm_ir::Error::Unsupported`].
//!
//! libOpenCL is loaded at run time (opencl3's `dynamic` feature): the crate always builds;
//! without a platform, constructing the engine is a clear [`vm_ir::Error::Device`], and
//! [`device::describe_platforms`] says so for `vm info`.

pub mod cache;
pub mod codegen;
pub mod device;
mod engine;

pub use engine::{OpenClEngine, Stats};

use vm_ir::Result;
use vm_runtime::component::Settings;
use vm_runtime::settings::IndexOrName;
use vm_runtime::{Component, Implementation};

/// The largest `work_group_size` setting accepted: more than any OpenCL device runs in one work
/// group (their limits are in the hundreds or thousands), and small enough that rounding a launch
/// up to whole groups cannot overflow.
pub const MAX_WORK_GROUP_SIZE: usize = 1 << 16;

vm_runtime::settings! {
    /// The engine's configuration: the settings of the `opencl` component (its config table).
    pub struct Config {
        /// platform by index (an integer) or name substring (a string); empty = any
        #[range(0, i64::MAX)]
        platform: IndexOrName = "",
        /// device by index within its platform (an integer) or name substring (a string);
        /// empty = any
        #[range(0, i64::MAX)]
        device: IndexOrName = "",
        /// any, gpu or cpu
        #[choice("any", "gpu", "cpu")]
        device_type: String = "any",
        /// work-group size; 0 = the engine's choice: 256 (or the device maximum) on a GPU and
        /// for tree reductions, the driver's choice for element-wise kernels on other devices
        #[range(0, MAX_WORK_GROUP_SIZE)]
        work_group_size: usize = 0,
        /// directory for compiled program binaries, reused by later runs; empty = cache in
        /// memory only
        cache_dir: String = "",
        /// the most instructions fused into one kernel; 0 = no limit
        #[range(0, i64::MAX)]
        max_kernel: usize = 256,
        /// print kernel launches, programs built, copies between host and device and the time
        /// waiting for the device at shutdown (also turned on by VM_PROFILE=1)
        #[env_switch("VM_PROFILE")]
        profile: bool = false,
    }
}

fn construct(settings: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
    let table = if settings.component.is_empty() { IMPLEMENTATION.name } else { &settings.component };
    Ok(Box::new(OpenClEngine::named(table, Config::from_settings(settings)?, child)?))
}

/// The `opencl` implementation: no child needed; a child, when given, runs what the device
/// code does not implement.
pub const IMPLEMENTATION: Implementation = Implementation {
    name: "opencl",
    summary: "OpenCL engine: fuses instructions into OpenCL C kernels, keeps data on the device",
    needs_child: false,
    settings: Config::SPECS,
    construct,
};
