//! The `opencl` component: device memory per base (with spare buffers for reuse), the program
//! cache (in memory and on disk), parameter buffers, kernel launches and the hand-off to the
//! fallback child.
//!
//! Generated source texts are structural (see [`crate::codegen`]): the in-memory cache is keyed
//! by the text itself, and each built program keeps a parameter buffer into which a run writes
//! its parameters (view layouts, extents, counts, constants) when they differ from the last
//! run's. A batch is planned in full before it runs ([`Action`]), so that the sources it needs
//! and the cache lacks are compiled in one go.

use crate::Config;
use crate::cache::{self, DiskCache};
use crate::codegen::{self, ReducePlan, Source, Target};
use crate::device::{self, DeviceInfo};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::error_codes::ClError;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use vm_fusion::{PartitionCache, Step};
use vm_ir::{Base, BaseId, Error, Instruction, Kind, Opcode, Result};
use vm_passes::{Pipeline, Rewritten, Stage};
use vm_runtime::{Component, ComponentInfo, HostMemory, ReductionOrder, Statistics};

/// The optimizer passes this engine runs: the stateless rewrites. (The others keep buffers of
/// host memory between batches, or defer writing arrays to host memory, which this engine's
/// device copies would not follow.)
const DEVICE_PASSES: &[&str] = &["flat-reductions", "subview-fills", "reciprocals"];

/// The device's costs for the passes: it computes every function inline.
struct DeviceCosts;

impl vm_passes::Costs for DeviceCosts {
    fn calls_out(&self, _: Opcode, _: vm_ir::DType) -> bool {
        false
    }
}

/// The most parameters a program reads from `__constant` memory (32 KiB; fewer when the
/// device's constant buffer is smaller).
const CONSTANT_PARAMS: usize = 4096;

/// The most programs a failed wait for the device names.
const UNFINISHED_NAMED: usize = 8;

/// The most device buffers kept for reuse after their base was freed (or a run's scratch).
const SPARE_BUFFERS: usize = 16;

/// Options every program is built with.
const BUILD_OPTIONS: &str = "-cl-fp32-correctly-rounded-divide-sqrt";

/// The device copy of one base.
struct DeviceBase {
    /// The base the buffer was made for (a reused id with another dtype or size gets a new one).
    base: Base,
    buf: Buffer<u8>,
    /// The device holds data the host does not have yet.
    device_newer: bool,
}

/// Counters for `vm info` and tests.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Batches executed.
    pub batches: u64,
    /// Kernels launched on the device.
    pub launches: u64,
    /// Runs whose program was already built in this engine (hits of the in-memory cache).
    pub hits: u64,
    /// Programs built from source (misses of both caches).
    pub builds: u64,
    /// Runs of the device compiler on source: one for all the new programs of a batch built
    /// together, one for each program built alone.
    pub compilations: u64,
    /// Programs loaded from binaries in the disk cache.
    pub disk_hits: u64,
    /// Program binaries written to the disk cache.
    pub disk_stores: u64,
    /// Time spent making programs: building from source and loading binaries from the disk
    /// cache (with creating their kernels).
    pub build_time: Duration,
    /// Instructions run by the fallback child.
    pub fallback_instructions: u64,
    /// Host-to-device copies.
    pub uploads: u64,
    /// Device-to-host copies.
    pub downloads: u64,
    /// Bytes copied to the device.
    pub upload_bytes: u64,
    /// Bytes copied to the host.
    pub download_bytes: u64,
    /// Time in [`Component::execute`], from a batch's arrival to its last kernel's end.
    pub exec_time: Duration,
    /// The part of `exec_time` spent waiting for the device to finish a batch's kernels (the
    /// kernels still running once everything is enqueued).
    pub wait_time: Duration,
}

impl Stats {
    /// The figures every component reports: kernel launches, the program cache (a program
    /// loaded from the disk cache is a miss of the in-memory one), the time making programs,
    /// and the instructions run by the fallback.
    pub fn statistics(&self) -> Statistics {
        Statistics {
            batches: self.batches,
            kernels: self.launches,
            cache_hits: Some(self.hits),
            cache_misses: Some(self.builds + self.disk_hits),
            compile_seconds: Some(self.build_time.as_secs_f64()),
            fallbacks: self.fallback_instructions,
            bytes_moved: self.upload_bytes + self.download_bytes,
            ..Statistics::default()
        }
    }
}

/// The profile printed at shutdown (`profile = true` or `VM_PROFILE=1`): kernels, programs,
/// copies between host and device, and where the time went.
impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(f, "vm opencl profile:")?;
        writeln!(f, "  batches              {}", self.batches)?;
        writeln!(f, "  kernel launches      {}", self.launches)?;
        writeln!(
            f,
            "  programs             {} built in {} compilations, {} from the disk cache, {} stored there; {} runs of built ones",
            self.builds, self.compilations, self.disk_hits, self.disk_stores, self.hits
        )?;
        writeln!(f, "  building programs    {:.3} ms", ms(self.build_time))?;
        writeln!(f, "  fallback             {} instructions (run by the child)", self.fallback_instructions)?;
        writeln!(f, "  uploads              {} ({} bytes)", self.uploads, self.upload_bytes)?;
        writeln!(f, "  downloads            {} ({} bytes)", self.downloads, self.download_bytes)?;
        write!(
            f,
            "  execution            {:.3} ms ({:.3} ms of it waiting for the device)",
            ms(self.exec_time),
            ms(self.wait_time)
        )
    }
}

/// The work-group size the engine picks when the settings leave it to the engine, on a GPU.
const AUTO_GROUP_SIZE: usize = 256;

/// The work-group size of launches that do not require one: the setting when it is nonzero;
/// else [`AUTO_GROUP_SIZE`] (at most the device's largest group) on a GPU, whose driver, left to
/// choose, picks small groups dividing an extent like 1998 (shallow water on an H200 ran 4.6x
/// slower so); else 0, the driver's choice (PoCL's CPU device ran heat equation 2.5x slower in
/// groups of 256).
/// Nonzero sizes pad launches to whole groups, so the code skips work items past the end.
fn element_group_size(setting: usize, device: &DeviceInfo) -> usize {
    match setting {
        0 if device.kind == "gpu" => AUTO_GROUP_SIZE.min(device.max_work_group.max(1)),
        n => n,
    }
}

/// The local sizes of a two-dimensional launch of `items` x `rows` work items in groups of at
/// most `group` work items: as many of a row's items as there are (up to a power of two), the
/// rest of the group down the rows, so short rows still fill a group.
fn local_sizes(group: usize, items: usize, rows: usize) -> [usize; 2] {
    let across = group.min(items.next_power_of_two()).max(1);
    let down = (group / across).min(rows.next_power_of_two()).max(1);
    [across, down]
}

/// A built program: its kernels by entry point, and its parameter buffer (made on its first run)
/// with the values last written there.
struct Built {
    kernels: HashMap<&'static str, Kernel>,
    params: Option<Buffer<u64>>,
    values: Vec<u64>,
    /// Built ahead of its first run (with the rest of its batch's new programs): that run is
    /// not a cache hit.
    fresh: bool,
}

/// One thing [`OpenClEngine::execute`] does, decided before anything runs so that the programs
/// of the whole batch can be built together.
enum Action {
    /// Carry out the system instruction at this position.
    System(usize),
    /// Run the instructions at these positions: on the device by the source when there is one
    /// (and its check passes), else on the fallback.
    Run(Option<Source>, Vec<usize>),
}

/// The OpenCL engine.
pub struct OpenClEngine {
    /// The component's config table name.
    table: String,
    config: Config,
    devices: Vec<DeviceInfo>,
    chosen: DeviceInfo,
    context: Context,
    queue: CommandQueue,
    /// Built programs by source text.
    cache: HashMap<String, Built>,
    /// The work-group size of launches that do not require one ([`element_group_size`]).
    group_size: usize,
    /// What generated code may assume.
    target: Target,
    disk: Option<DiskCache>,
    bases: HashMap<BaseId, DeviceBase>,
    /// Buffers of released bases and scratch with their sizes in bytes, oldest first, reused for
    /// a buffer of the same size before allocating (a fresh allocation faults in every page
    /// on first use, on CPU devices); at most [`SPARE_BUFFERS`] and [`OpenClEngine::spare_cap`]
    /// bytes.
    spare: Vec<(usize, Buffer<u8>)>,
    child: Option<Box<dyn Component>>,
    stats: Stats,
    /// Kernel formation of batch structures seen before.
    plans: PartitionCache,
    /// The batch optimizer's passes that hold on a device ([`DEVICE_PASSES`]).
    passes: Pipeline,
    /// The programs launched since the last wait for the device (the first few), named in the
    /// error when that wait fails.
    unfinished: Vec<String>,
    /// Released once: the profile is printed the first time only.
    shut_down: bool,
}

// SAFETY: the OpenCL handles (context, queue, kernels, buffers) are thread-safe objects per the
// OpenCL specification (except clSetKernelArg, which only runs through &mut self here).
unsafe impl Send for OpenClEngine {}

impl OpenClEngine {
    /// Finds the device the settings name and opens a context and queue on it; the component
    /// is named `opencl` (see [`OpenClEngine::named`]).
    pub fn new(config: Config, child: Option<Box<dyn Component>>) -> Result<OpenClEngine> {
        OpenClEngine::named("opencl", config, child)
    }

    /// [`OpenClEngine::new`] for the config table `table`.
    pub fn named(table: &str, config: Config, child: Option<Box<dyn Component>>) -> Result<OpenClEngine> {
        let _guard = device::INIT.lock().unwrap_or_else(|e| e.into_inner());
        let devices = device::discover()?;
        let chosen = device::choose(&devices, &config.platform, &config.device, &config.device_type)?;
        let context = Context::from_device(&chosen.device).map_err(|e| {
            Error::Device(format!("creating an OpenCL context on `{}`: error {}", chosen.name, e.0)).caused_by(e)
        })?;
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&context, 0).map_err(|e| {
            Error::Device(format!("creating an OpenCL queue on `{}`: error {}", chosen.name, e.0)).caused_by(e)
        })?;
        let disk = match config.cache_dir.trim() {
            "" => None,
            dir => Some(DiskCache::new(std::path::Path::new(dir)).map_err(|e| {
                Error::InvalidArgument(format!("opencl cache_dir `{dir}` cannot be used: {e}")).caused_by(e)
            })?),
        };
        let group_size = element_group_size(config.work_group_size, &chosen);
        let target = Target {
            fp64: chosen.fp64,
            padded: group_size > 0,
            constant_params: CONSTANT_PARAMS.min(usize::try_from(chosen.max_constant / 8).unwrap_or(usize::MAX)),
        };
        Ok(OpenClEngine {
            group_size,
            target,
            disk,
            table: table.to_string(),
            config,
            devices,
            chosen,
            context,
            queue,
            cache: HashMap::new(),
            bases: HashMap::new(),
            spare: Vec::new(),
            child,
            stats: Stats::default(),
            plans: PartitionCache::default(),
            passes: Pipeline::of(DEVICE_PASSES, &vm_passes::Options::default())?,
            unfinished: Vec::new(),
            shut_down: false,
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The chosen device.
    pub fn device(&self) -> &DeviceInfo {
        &self.chosen
    }

    /// The error of a failed OpenCL call, with the OpenCL error as its cause: running out of
    /// device memory or resources is [`Error::OutOfMemory`], anything else [`Error::Device`].
    fn cl_fail(&self, what: String, e: ClError) -> Error {
        let code = e.0;
        let name = match code {
            -4 => Some("CL_MEM_OBJECT_ALLOCATION_FAILURE"),
            -5 => Some("CL_OUT_OF_RESOURCES"),
            -6 => Some("CL_OUT_OF_HOST_MEMORY"),
            -61 => Some("CL_INVALID_BUFFER_SIZE"),
            _ => None,
        };
        let error = match name {
            Some(n) => {
                Error::OutOfMemory(format!("{what} on `{}`: out of device memory ({n}, {code})", self.chosen.name))
            }
            None => Error::Device(format!("{what} on `{}` failed with OpenCL error {code}", self.chosen.name)),
        };
        error.caused_by(e)
    }

    /// Copies a device-newer base to the host.
    fn download(&mut self, base: &Base, mem: &mut HostMemory) -> Result<()> {
        let Some(db) = self.bases.get(&base.id) else { return Ok(()) };
        if !db.device_newer || db.base != *base {
            return Ok(());
        }
        let begun = vm_runtime::trace::begin();
        let host = mem.ensure(base)?;
        let n = host.nbytes();
        if n > 0 {
            // SAFETY: host is a live buffer of n bytes, borrowed exclusively; the read blocks.
            let slice = unsafe { std::slice::from_raw_parts_mut(host.as_mut_ptr(), n) };
            // SAFETY: the device buffer holds at least n bytes; the read is blocking.
            unsafe { self.queue.enqueue_read_buffer(&db.buf, CL_BLOCKING, 0, slice, &[]) }
                .map_err(|e| self.cl_fail(format!("reading base {} ({n} bytes) from the device", base.id), e))?;
        }
        if let Some(db) = self.bases.get_mut(&base.id) {
            db.device_newer = false;
        }
        self.stats.downloads += 1;
        self.stats.download_bytes += n as u64;
        vm_runtime::trace::end(begun, "copy", || format!("download of base {}", base.id), || vec![("bytes", n as u64)]);
        Ok(())
    }

    /// The most bytes the spare buffers may hold: an eighth of the device memory, at most 1 GiB.
    fn spare_cap(&self) -> usize {
        usize::try_from(self.chosen.memory / 8).unwrap_or(usize::MAX).min(1 << 30)
    }

    /// Keeps `buf` (of `n` bytes, no longer used by any base or queued command) for reuse.
    fn recycle(&mut self, n: usize, buf: Buffer<u8>) {
        self.spare.push((n, buf));
        let cap = self.spare_cap();
        while self.spare.len() > SPARE_BUFFERS || self.spare.iter().map(|(n, _)| n).sum::<usize>() > cap {
            self.spare.remove(0);
        }
    }

    /// Drops `id`'s device copy, keeping its buffer for reuse.
    fn release(&mut self, id: BaseId) {
        if let Some(db) = self.bases.remove(&id) {
            self.recycle(db.base.nbytes().max(1), db.buf);
        }
    }

    /// A device buffer of `n` bytes (at least one), every byte `fill` (unless `None`: the caller
    /// writes every byte before any kernel reads them): a spare one of that size,
    /// or a new one (when the device refuses, the spare buffers are released and it is asked
    /// again).
    fn buffer(&mut self, n: usize, fill: Option<u8>, what: &str) -> Result<Buffer<u8>> {
        let n = n.max(1);
        if self.chosen.max_alloc > 0 && n as u64 > self.chosen.max_alloc {
            return Err(Error::OutOfMemory(format!(
                "{what} needs {n} bytes, but device `{}` allocates at most {} bytes in one buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
                self.chosen.name, self.chosen.max_alloc
            )));
        }
        // SAFETY: no host pointer is passed; the size is nonzero.
        let create = |e: &Self| unsafe { Buffer::<u8>::create(&e.context, CL_MEM_READ_WRITE, n, std::ptr::null_mut()) };
        let mut buf = match self.spare.iter().rposition(|(size, _)| *size == n) {
            Some(k) => self.spare.remove(k).1,
            None => match create(self) {
                Ok(buf) => buf,
                Err(_) if !self.spare.is_empty() => {
                    self.spare.clear();
                    create(self).map_err(|e| self.cl_fail(format!("allocating {what} ({n} bytes)"), e))?
                }
                Err(e) => return Err(self.cl_fail(format!("allocating {what} ({n} bytes)"), e)),
            },
        };
        if let Some(fill) = fill {
            // SAFETY: the pattern is one byte and the range lies inside the buffer.
            unsafe { self.queue.enqueue_fill_buffer(&mut buf, &[fill], 0, n, &[]) }
                .map_err(|e| self.cl_fail(format!("filling {what} ({n} bytes)"), e))?;
        }
        Ok(buf)
    }

    /// Makes sure `base` has a current device copy: made lazily, from the host data when the
    /// host holds the base, zero-filled on the device otherwise.
    fn upload(&mut self, base: &Base, mem: &HostMemory) -> Result<()> {
        match self.bases.get(&base.id) {
            Some(db) if db.base == *base => return Ok(()),
            Some(_) => self.release(base.id),
            None => {}
        }
        let what = format!("base {}", base.id);
        let host = mem.get(base.id).filter(|h| h.nbytes() > 0);
        let whole = host.is_some_and(|h| h.nbytes() == base.nbytes());
        let mut buf = self.buffer(base.nbytes(), if whole { None } else { Some(0) }, &what)?;
        if let Some(h) = host {
            let begun = vm_runtime::trace::begin();
            // SAFETY: the host slice is live and no longer than the buffer; the write blocks.
            unsafe { self.queue.enqueue_write_buffer(&mut buf, CL_BLOCKING, 0, h.bytes(), &[]) }
                .map_err(|e| self.cl_fail(format!("writing {what} to the device"), e))?;
            self.stats.uploads += 1;
            self.stats.upload_bytes += h.nbytes() as u64;
            vm_runtime::trace::end(
                begun,
                "copy",
                || format!("upload of {what}"),
                || vec![("bytes", h.nbytes() as u64)],
            );
        }
        self.bases.insert(base.id, DeviceBase { base: *base, buf, device_newer: false });
        Ok(())
    }

    /// A program for `src` from the disk cache's binary, when there is a good one.
    fn program_from_disk(&mut self, key: u64, src: &Source) -> Option<Program> {
        let bin = self.disk.as_ref()?.load(key, &src.text)?;
        // SAFETY: the context's devices are the devices the program is made for.
        let mut program =
            unsafe { Program::create_from_binary(&self.context, self.context.devices(), &[&bin]) }.ok()?;
        program.build(self.context.devices(), BUILD_OPTIONS).ok()?;
        Some(program)
    }

    /// Makes sure `src`'s program is in the in-memory cache: built (or loaded from the disk
    /// cache) when new.
    fn program(&mut self, src: &Source) -> Result<()> {
        if let Some(built) = self.cache.get_mut(src.text.as_str()) {
            if built.fresh {
                built.fresh = false;
            } else {
                self.stats.hits += 1;
            }
            return Ok(());
        }
        let started = Instant::now();
        let key = cache::key(&src.text, BUILD_OPTIONS, &self.chosen);
        let program = match self.program_from_disk(key, src) {
            Some(p) => {
                self.stats.disk_hits += 1;
                p
            }
            None => {
                let p =
                    Program::create_and_build_from_source(&self.context, &src.text, BUILD_OPTIONS).map_err(|log| {
                        Error::Device(format!(
                            "building OpenCL program {key:016x} for {} on `{}` failed: {log}\nsource:\n{}",
                            src.describe(),
                            self.chosen.name,
                            src.text
                        ))
                    })?;
                self.stats.builds += 1;
                self.stats.compilations += 1;
                if let Some(disk) = &self.disk
                    && let Ok(bins) = p.get_binaries()
                    && let Some(bin) = bins.first().filter(|b| !b.is_empty())
                    && disk.store(key, &src.text, bin).is_ok()
                {
                    self.stats.disk_stores += 1;
                }
                p
            }
        };
        let mut kernels = HashMap::new();
        for l in &src.launches {
            let k = Kernel::create(&program, l.name).map_err(|e| {
                Error::Device(format!("creating OpenCL kernel `{}` of {}: error {}", l.name, src.describe(), e.0))
                    .caused_by(e)
            })?;
            kernels.insert(l.name, k);
        }
        self.cache.insert(src.text.clone(), Built { kernels, params: None, values: Vec::new(), fresh: false });
        self.stats.build_time += started.elapsed();
        vm_runtime::trace::record(started, "compile", || format!("OpenCL program of {}", src.describe()), Vec::new);
        Ok(())
    }

    /// Builds the programs of `actions` that are not in the cache as one OpenCL program, each
    /// source's identifiers in a namespace of its own ([`codegen::namespaced`]): a device
    /// compiler's cost is mostly per program (PoCL: about 80 ms each, against a few for one
    /// more kernel in a program), and a batch often needs several new ones. Each source still
    /// gets a cache entry of its own, with its own kernels and parameter buffer. With a disk
    /// cache, whose files hold one source's binary each, and when the combined build fails (so
    /// that [`OpenClEngine::program`] builds each alone and names the one that fails), nothing
    /// is built here.
    fn build_together(&mut self, actions: &[Action]) {
        let mut new: Vec<&Source> = Vec::new();
        for a in actions {
            if let Action::Run(Some(src), _) = a
                && !self.cache.contains_key(src.text.as_str())
                && !new.iter().any(|n| n.text == src.text)
            {
                new.push(src);
            }
        }
        if new.len() < 2 || self.disk.is_some() {
            return;
        }
        let started = Instant::now();
        let text: String = new.iter().enumerate().map(|(j, src)| codegen::namespaced(&src.text, j)).collect();
        let Ok(program) = Program::create_and_build_from_source(&self.context, &text, BUILD_OPTIONS) else { return };
        let mut built = Vec::with_capacity(new.len());
        for (j, src) in new.iter().enumerate() {
            let mut kernels = HashMap::new();
            for l in &src.launches {
                let Ok(k) = Kernel::create(&program, &codegen::namespaced(l.name, j)) else { return };
                kernels.insert(l.name, k);
            }
            built.push((src.text.clone(), Built { kernels, params: None, values: Vec::new(), fresh: true }));
        }
        self.stats.builds += built.len() as u64;
        self.stats.compilations += 1;
        let programs = built.len() as u64;
        self.cache.extend(built);
        self.stats.build_time += started.elapsed();
        vm_runtime::trace::record(
            started,
            "compile",
            || "OpenCL programs built together",
            || vec![("programs", programs)],
        );
    }

    /// Makes the parameter buffer of `src`'s (built) program hold `src.params`, writing them only
    /// when they differ from its last run's: the programs of an iterative program mostly see
    /// the same views and constants every iteration.
    fn upload_params(&mut self, src: &Source) -> Result<()> {
        let Some(built) = self.cache.get(src.text.as_str()) else { return Ok(()) };
        if built.params.is_some() && built.values == src.params {
            return Ok(());
        }
        if built.params.is_none() {
            // Equal texts read equally many parameters, so the size is the program's.
            let len = src.params.len().max(1);
            // SAFETY: no host pointer is passed; the size is nonzero.
            let buf = unsafe { Buffer::<u64>::create(&self.context, CL_MEM_READ_ONLY, len, std::ptr::null_mut()) }
                .map_err(|e| self.cl_fail(format!("allocating the parameter buffer of {}", src.describe()), e))?;
            if let Some(built) = self.cache.get_mut(src.text.as_str()) {
                built.params = Some(buf);
            }
        }
        let Some(built) = self.cache.get_mut(src.text.as_str()) else { return Ok(()) };
        if let Some(buf) = built.params.as_mut()
            && !src.params.is_empty()
        {
            // SAFETY: the buffer holds `src.params.len()` elements; the write blocks, so the
            // kernels of earlier runs (in order on this queue) have read the old values.
            let written = unsafe { self.queue.enqueue_write_buffer(buf, CL_BLOCKING, 0, &src.params, &[]) };
            if let Err(e) = written {
                return Err(self.cl_fail(format!("writing the parameters of {}", src.describe()), e));
            }
        }
        built.values.clone_from(&src.params);
        Ok(())
    }

    /// Runs `src` on the device. False when its check launch found that the instruction cannot
    /// run on the device as it stands (it then goes to the fallback).
    fn run(&mut self, src: &Source, mem: &HostMemory) -> Result<bool> {
        for b in &src.args {
            self.upload(b, mem)?;
        }
        self.program(src)?;
        self.upload_params(src)?;
        let mut scratch = Vec::new();
        for (k, s) in src.scratch.iter().enumerate() {
            scratch.push(self.buffer(s.bytes, s.fill, &format!("scratch buffer {k} of {}", src.describe()))?);
        }
        let mut launches = 0;
        for (i, l) in src.launches.iter().enumerate() {
            if l.items == 0 || l.rows == 0 {
                continue;
            }
            let built = &self.cache[src.text.as_str()];
            let kernel = &built.kernels[l.name];
            let mut exec = ExecuteKernel::new(kernel);
            for b in &src.args {
                // SAFETY: argument k is a __global pointer and gets a live buffer of its base.
                unsafe { exec.set_arg(&self.bases[&b.id].buf) };
            }
            for buf in &scratch {
                // SAFETY: the scratch arguments follow the bases, each a __global pointer.
                unsafe { exec.set_arg(buf) };
            }
            if let Some(buf) = &built.params {
                // SAFETY: the last argument is the parameter buffer, a `ulong` pointer.
                unsafe { exec.set_arg(buf) };
            }
            match (l.group, l.rows, self.group_size) {
                (Some(wg), rows, _) => {
                    let items = l.items.div_ceil(wg) * wg;
                    exec.set_global_work_sizes(&[items, rows]).set_local_work_sizes(&[wg, 1])
                }
                (None, 1, 0) => exec.set_global_work_size(l.items),
                (None, rows, 0) => exec.set_global_work_sizes(&[l.items, rows]),
                (None, rows, wg) => {
                    let local = local_sizes(wg, l.items, rows);
                    let global = [l.items.div_ceil(local[0]) * local[0], rows.div_ceil(local[1]) * local[1]];
                    exec.set_global_work_sizes(&global).set_local_work_sizes(&local)
                }
            };
            let fail = |e: ClError| {
                self.cl_fail(
                    format!(
                        "launching OpenCL kernel `{}` of {} over {} x {} work items",
                        l.name,
                        src.describe(),
                        l.items,
                        l.rows
                    ),
                    e,
                )
            };
            // SAFETY: every argument is set; indices stay inside the views, which were validated
            // against their bases (gather and scatter indices are checked by the first launch),
            // and each base's buffer holds the whole base.
            unsafe { exec.enqueue_nd_range(&self.queue) }.map_err(fail)?;
            launches += 1;
            if i == 0 && src.check_first {
                let mut flag = [0u8; 4];
                // SAFETY: scratch 0 holds at least 4 bytes; the read blocks.
                unsafe { self.queue.enqueue_read_buffer(&scratch[0], CL_BLOCKING, 0, &mut flag, &[]) }.map_err(fail)?;
                if flag != [0; 4] {
                    self.stats.launches += launches;
                    // The blocking read waited for the one launch so far.
                    for (s, buf) in src.scratch.iter().zip(scratch) {
                        self.recycle(s.bytes.max(1), buf);
                    }
                    return Ok(false);
                }
            }
        }
        self.stats.launches += launches;
        if launches > 0 && self.unfinished.len() < UNFINISHED_NAMED {
            let name = src.describe();
            if !self.unfinished.contains(&name) {
                self.unfinished.push(name);
            }
        }
        // No wait here: the queue is in order, every host access to device data blocks, and
        // `execute` waits for the batch's work at its end. Buffers recycled or released now are
        // reused or freed only after the commands already queued.
        for (s, buf) in src.scratch.iter().zip(scratch) {
            self.recycle(s.bytes.max(1), buf);
        }
        for id in &src.written {
            if let Some(db) = self.bases.get_mut(id) {
                db.device_newer = true;
            }
        }
        Ok(true)
    }

    /// How tree reductions are laid out on this device.
    fn reduce_plan(&self) -> ReducePlan {
        let want = if self.config.work_group_size > 0 { self.config.work_group_size } else { AUTO_GROUP_SIZE };
        let cap = want.min(self.chosen.max_work_group.max(1));
        let group = if cap >= 2 { 1 << (usize::BITS - 1 - cap.leading_zeros()) } else { 1 };
        ReducePlan { group, target_groups: (4 * self.chosen.compute_units as usize).max(8) }
    }

    /// Runs `src` when there is one and its check passes, else hands the instructions at
    /// `positions` of `batch` to the fallback.
    fn run_or_fallback(
        &mut self,
        src: Option<&Source>,
        batch: &[Instruction],
        positions: &[usize],
        mem: &mut HostMemory,
    ) -> Result<()> {
        if let Some(src) = src
            && self.run(src, mem)?
        {
            return Ok(());
        }
        self.fallback(batch, positions, mem)
    }

    /// Runs the instructions at `positions` of `batch` on the fallback child: their bases are
    /// brought to the host first and their outputs' device copies dropped after. The child's
    /// errors name the instruction by its position in `batch`, as every engine's do.
    fn fallback(&mut self, batch: &[Instruction], positions: &[usize], mem: &mut HostMemory) -> Result<()> {
        let instrs: Vec<Instruction> = positions.iter().map(|&i| batch[i].clone()).collect();
        let mut bases: Vec<Base> = Vec::new();
        for v in instrs.iter().flat_map(|i| i.views()) {
            if !bases.iter().any(|b| b.id == v.base.id) {
                bases.push(v.base);
            }
        }
        for b in &bases {
            self.download(b, mem)?;
        }
        let Some(child) = self.child.as_mut() else {
            let ops: Vec<Opcode> = instrs.iter().map(|i| i.opcode).collect();
            let why = if self.chosen.fp64 { "" } else { " (the device has no cl_khr_fp64: f64 cannot run on it)" };
            return Err(Error::Unsupported(format!(
                "the opencl engine cannot run {ops:?} on `{}`{why} and has no fallback child",
                self.chosen.name
            )));
        };
        self.stats.fallback_instructions += instrs.len() as u64;
        let outputs: HashSet<BaseId> = instrs.iter().filter_map(|i| i.output()).map(|v| v.base.id).collect();
        child.execute(&instrs, mem).map_err(|e| renumber(e, positions))?;
        for id in outputs {
            self.release(id);
        }
        Ok(())
    }

    /// Carries out a system instruction.
    fn system(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        let Some(view) = instr.operands.first().and_then(|o| o.as_view()) else { return Ok(()) };
        match instr.opcode {
            Opcode::Sync => {
                self.download(&view.base, mem)?;
                mem.ensure(&view.base)?;
            }
            Opcode::Discard => self.release(view.base.id),
            Opcode::Free => {
                self.release(view.base.id);
                mem.free(view.base.id);
            }
            _ => {}
        }
        Ok(())
    }

    /// What to do with the non-blockable instruction at `position` of `batch`: scans, gather,
    /// scatter and reductions to a position on the device, the rest (extension methods, sorts,
    /// reductions of nothing) on the fallback.
    fn plan_single(&self, batch: &[Instruction], position: usize, actions: &mut Vec<Action>) {
        let instr = &batch[position];
        let target = self.target;
        let src = match instr.opcode.kind() {
            Kind::Reduce => codegen::generate_arg_reduce(instr, target, self.reduce_plan()),
            Kind::Accumulate => codegen::generate_accumulate(instr, target),
            Kind::Gather => codegen::generate_gather(instr, target),
            Kind::Scatter => codegen::generate_scatter(instr, target),
            _ => None,
        };
        actions.push(Action::Run(src, vec![position]));
    }

    /// What to do with a fused kernel. One without reductions is one program. One with
    /// reductions runs in order as runs of element-wise instructions (one program each) and
    /// reductions (one program each); a contracted temporary used by more than one of those
    /// pieces, or read by a reduction, gets a device buffer (it never reaches the host unless
    /// the fallback needs it).
    fn plan_kernel(&self, batch: &[Instruction], k: &vm_fusion::Kernel, actions: &mut Vec<Action>) {
        let target = self.target;
        if k.instrs.len() == 1 && vm_fusion::needs_isolation(&batch[k.instrs[0]]) {
            actions.push(Action::Run(None, k.instrs.clone()));
            return;
        }
        let is_reduce = |i: usize| batch[i].opcode.kind() == Kind::Reduce;
        if !k.instrs.iter().any(|&i| is_reduce(i)) {
            actions.push(Action::Run(codegen::generate(batch, k, target), k.instrs.clone()));
            return;
        }
        let mut pieces: Vec<Vec<usize>> = Vec::new();
        for &i in &k.instrs {
            match pieces.last_mut() {
                Some(p) if !is_reduce(i) && !is_reduce(p[0]) => p.push(i),
                _ => pieces.push(vec![i]),
            }
        }
        let touches = |p: &[usize], id: BaseId| p.iter().any(|&i| batch[i].views().any(|v| v.base.id == id));
        for p in &pieces {
            if is_reduce(p[0]) {
                actions
                    .push(Action::Run(codegen::generate_reduce(&batch[p[0]], target, self.reduce_plan()), p.clone()));
                continue;
            }
            let temps = k
                .temps
                .iter()
                .copied()
                .filter(|&t| touches(p, t) && pieces.iter().filter(|q| touches(q, t)).count() == 1)
                .collect();
            let sub = vm_fusion::Kernel { instrs: p.clone(), shape: k.shape.clone(), temps, after: Vec::new() };
            actions.push(Action::Run(codegen::generate(batch, &sub, target), p.clone()));
        }
    }

    /// Everything the steps of `batch` do, in order.
    fn plan(&self, steps: &[Step], batch: &[Instruction]) -> Vec<Action> {
        let mut actions = Vec::with_capacity(steps.len());
        for step in steps {
            match step {
                Step::System(i) => actions.push(Action::System(*i)),
                Step::Single(i) => self.plan_single(batch, *i, &mut actions),
                Step::Kernel(k) => {
                    self.plan_kernel(batch, k, &mut actions);
                    actions.extend(k.after.iter().map(|&i| Action::System(i)));
                }
            }
        }
        actions
    }
}

/// The error `e` of the fallback child, which ran the instructions at `positions` of a batch as
/// a batch of their own, naming the instruction by its position in the whole batch: the child's
/// `instruction K` (the start of the reference engine's and the cpu engine's execution errors)
/// becomes `instruction positions[K]`; a message without it gets one when a single instruction
/// ran.
fn renumber(e: Error, positions: &[usize]) -> Error {
    match e {
        Error::InvalidInstruction { index: Some(k), operand, message } => {
            Error::InvalidInstruction { index: Some(positions.get(k).copied().unwrap_or(k)), operand, message }
        }
        Error::Execution(m) => {
            let rest = m.strip_prefix("instruction ");
            let digits = rest.map_or(0, |r| r.bytes().take_while(u8::is_ascii_digit).count());
            let position = rest.and_then(|r| r[..digits].parse::<usize>().ok()).and_then(|k| positions.get(k));
            match (position, rest) {
                (Some(p), Some(r)) => Error::Execution(format!("instruction {p}{}", &r[digits..])),
                _ if positions.len() == 1 => Error::Execution(format!("instruction {}: {m}", positions[0])),
                _ => Error::Execution(m),
            }
        }
        e => e,
    }
}

impl OpenClEngine {
    /// [`Component::execute`] without the timing around it.
    fn execute_timed(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        self.stats.batches += 1;
        let opts = vm_fusion::Options { max_instructions: self.config.max_kernel, ..vm_fusion::Options::default() };
        self.unfinished.clear();
        let steps = self.plans.partition(batch, &opts);
        let actions = self.plan(&steps, batch);
        self.build_together(&actions);
        let mut interrupted = false;
        for action in &actions {
            // A stop request ends the batch between kernels (those enqueued still finish).
            if mem.interrupt().is_requested() {
                interrupted = true;
                break;
            }
            match action {
                Action::System(i) => self.system(&batch[*i], mem)?,
                Action::Run(src, positions) => {
                    let begun = vm_runtime::trace::begin();
                    self.run_or_fallback(src.as_ref(), batch, positions, mem)?;
                    let name =
                        || src.as_ref().map_or_else(|| "instructions run by the fallback".into(), |s| s.describe());
                    vm_runtime::trace::end(begun, "launch", name, || vec![("instructions", positions.len() as u64)]);
                }
            }
        }
        let waited = Instant::now();
        let finished = self.queue.finish();
        self.stats.wait_time += waited.elapsed();
        vm_runtime::trace::record(
            waited,
            "kernel",
            || "waiting for the device",
            || vec![("programs", self.unfinished.len() as u64)],
        );
        let programs = std::mem::take(&mut self.unfinished);
        finished
            .map_err(|e| self.cl_fail(format!("running the batch's OpenCL programs ({})", programs.join(", ")), e))?;
        if interrupted { Err(vm_ir::Error::Interrupted) } else { Ok(()) }
    }
}

impl Component for OpenClEngine {
    fn name(&self) -> &str {
        "opencl"
    }

    /// Relies on the batch being valid, as the [`Component`] contract says (the runtime
    /// validates every instruction it accepts).
    /// Errors name the position in the batch as submitted, before the passes rewrote it.
    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        let start = Instant::now();
        let mut work = Rewritten::new(batch);
        self.passes.run(Stage::Batch, &mut work, &[], mem, &DeviceCosts);
        let mut result = self.execute_timed(work.batch(), mem);
        if !work.origin().is_empty() {
            result = result.map_err(|e| renumber(e, work.origin()));
        }
        self.stats.exec_time += start.elapsed();
        result
    }

    fn child(&self) -> Option<&(dyn Component + 'static)> {
        self.child.as_deref()
    }

    fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
        self.child.as_deref_mut()
    }

    /// Long axes are reduced by work-group trees.
    fn reduction_order(&self) -> ReductionOrder {
        ReductionOrder::Reassociated
    }

    fn info(&self) -> ComponentInfo {
        let mut notes = vec![format!("using {}", self.chosen.describe())];
        notes.extend(self.devices.iter().map(|d| format!("found {}", d.describe())));
        let s = self.stats;
        notes.push(format!(
            "{} programs built in {} compilations, {} loaded from the disk cache, {} stored there, {} uploads, {} downloads",
            s.builds, s.compilations, s.disk_hits, s.disk_stores, s.uploads, s.downloads
        ));
        let settings = self.config.to_pairs();
        ComponentInfo {
            name: self.table.clone(),
            implementation: "opencl".into(),
            settings,
            notes,
            ..Default::default()
        }
    }

    fn statistics(&self) -> Statistics {
        self.stats.statistics()
    }

    fn release(&mut self) -> Result<()> {
        if !self.shut_down && self.config.profile {
            eprintln!("{}", self.stats);
        }
        self.shut_down = true;
        self.bases.clear();
        self.spare.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_sizes_fill_a_group_down_the_rows_when_rows_are_short() {
        assert_eq!(local_sizes(256, 2000, 2000), [256, 1]);
        assert_eq!(local_sizes(256, 3, 1000), [4, 64]);
        assert_eq!(local_sizes(256, 3, 2), [4, 2]);
        assert_eq!(local_sizes(64, 13, 7), [16, 4]);
        assert_eq!(local_sizes(100, 1000, 5), [100, 1]);
        assert_eq!(local_sizes(256, 1, 1), [1, 1]);
    }

    #[test]
    fn fallback_errors_name_positions_in_the_whole_batch() {
        let positions = [4, 7, 9];
        let exec = |m: &str| renumber(Error::Execution(m.into()), &positions).to_string();
        assert_eq!(exec("instruction 1 (gather): index 3"), "execution failed: instruction 7 (gather): index 3");
        assert_eq!(exec("instruction 2: index 3"), "execution failed: instruction 9: index 3");
        // Not a position of the child's batch, or no position at all: left as it is.
        assert_eq!(exec("instruction 3: x"), "execution failed: instruction 3: x");
        assert_eq!(exec("no position"), "execution failed: no position");
        let one = renumber(Error::Execution("no position".into()), &[12]);
        assert_eq!(one.to_string(), "execution failed: instruction 12: no position");
        let invalid = Error::InvalidInstruction { index: Some(2), operand: Some(1), message: "bad".into() };
        assert_eq!(renumber(invalid, &positions).to_string(), "invalid instruction 9, operand 1: bad");
        assert_eq!(renumber(Error::Device("d".into()), &positions), Error::Device("d".into()));
    }
}
