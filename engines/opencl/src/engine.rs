//! The `opencl` component: device memory per base, the program cache, kernel launches and the
//! hand-off to the fallback child.

use crate::codegen::{self, KERNEL_NAME, Source};
use crate::device::{self, DeviceInfo};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use vm_core::kernel::{self, Step};
use vm_core::{Base, BaseId, Component, ComponentInfo, Error, HostMemory, Instruction, Opcode, Result, Settings};

/// The engine's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Platform: empty, an index, or a name substring.
    pub platform: String,
    /// Device: empty, an index, or a name substring.
    pub device: String,
    /// `any`, `gpu` or `cpu`.
    pub device_type: String,
    /// Work-group size; 0 lets the driver choose.
    pub work_group_size: usize,
    /// The most instructions fused into one kernel.
    pub max_kernel: usize,
    /// The component's table name.
    pub table: String,
}

impl Config {
    /// Reads the settings.
    pub fn from_settings(s: &Settings) -> Result<Config> {
        Ok(Config {
            platform: s.string("platform", "")?,
            device: s.string("device", "")?,
            device_type: s.string("device_type", "any")?,
            work_group_size: s.usize("work_group_size", 0)?,
            max_kernel: s.usize("max_kernel", 256)?,
            table: if s.component.is_empty() { "opencl".into() } else { s.component.clone() },
        })
    }
}

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
    /// Kernels launched on the device.
    pub launches: u64,
    /// Programs built (cache misses).
    pub builds: u64,
    /// Instructions run by the fallback child.
    pub fallback_instructions: u64,
    /// Host-to-device copies.
    pub uploads: u64,
    /// Device-to-host copies.
    pub downloads: u64,
}

/// The OpenCL engine.
pub struct OpenClEngine {
    config: Config,
    devices: Vec<DeviceInfo>,
    chosen: DeviceInfo,
    context: Context,
    queue: CommandQueue,
    cache: HashMap<u64, Kernel>,
    bases: HashMap<BaseId, DeviceBase>,
    child: Option<Box<dyn Component>>,
    stats: Stats,
}

// SAFETY: the OpenCL handles (context, queue, kernels, buffers) are thread-safe objects per the
// OpenCL specification (except clSetKernelArg, which only runs through &mut self here).
unsafe impl Send for OpenClEngine {}

impl OpenClEngine {
    /// Finds the device the settings name and opens a context and queue on it.
    pub fn new(config: Config, child: Option<Box<dyn Component>>) -> Result<OpenClEngine> {
        let _guard = device::INIT.lock().unwrap_or_else(|e| e.into_inner());
        let devices = device::discover()?;
        let chosen = device::choose(&devices, &config.platform, &config.device, &config.device_type)?;
        let context = Context::from_device(&chosen.device)
            .map_err(|e| Error::Device(format!("creating an OpenCL context on `{}`: error {}", chosen.name, e.0)))?;
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&context, 0)
            .map_err(|e| Error::Device(format!("creating an OpenCL queue on `{}`: error {}", chosen.name, e.0)))?;
        Ok(OpenClEngine {
            config,
            devices,
            chosen,
            context,
            queue,
            cache: HashMap::new(),
            bases: HashMap::new(),
            child,
            stats: Stats::default(),
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

    /// Copies a device-newer base to the host.
    fn download(&mut self, base: &Base, mem: &mut HostMemory) -> Result<()> {
        let Some(db) = self.bases.get_mut(&base.id) else { return Ok(()) };
        if !db.device_newer || db.base != *base {
            return Ok(());
        }
        let host = mem.ensure(base)?;
        let n = host.nbytes();
        if n > 0 {
            // SAFETY: host is a live buffer of n bytes, borrowed exclusively; the read blocks.
            let slice = unsafe { std::slice::from_raw_parts_mut(host.as_mut_ptr(), n) };
            // SAFETY: the device buffer holds at least n bytes; the read is blocking.
            unsafe { self.queue.enqueue_read_buffer(&db.buf, CL_BLOCKING, 0, slice, &[]) }
                .map_err(|e| Error::Device(format!("reading base {} from the device: error {}", base.id, e.0)))?;
        }
        db.device_newer = false;
        self.stats.downloads += 1;
        Ok(())
    }

    /// Makes sure `base` has a current device copy.
    fn upload(&mut self, base: &Base, mem: &HostMemory) -> Result<()> {
        match self.bases.get(&base.id) {
            Some(db) if db.base == *base => return Ok(()),
            Some(_) => {
                self.bases.remove(&base.id);
            }
            None => {}
        }
        let n = base.nbytes().max(1);
        // SAFETY: no host pointer is passed; the size is nonzero.
        let mut buf = unsafe { Buffer::<u8>::create(&self.context, CL_MEM_READ_WRITE, n, std::ptr::null_mut()) }
            .map_err(|e| match e.0 {
                -4 | -5 | -6 | -61 => Error::OutOfMemory(format!(
                    "device `{}` cannot hold base {} ({} bytes): OpenCL error {}",
                    self.chosen.name, base.id, n, e.0
                )),
                c => Error::Device(format!("allocating base {} on the device: error {c}", base.id)),
            })?;
        let zeros;
        let data: &[u8] = match mem.get(base.id) {
            Some(h) => h.bytes(),
            None => {
                zeros = vec![0u8; n];
                &zeros
            }
        };
        if !data.is_empty() {
            // SAFETY: data is a live host slice no longer than the buffer; the write blocks.
            unsafe { self.queue.enqueue_write_buffer(&mut buf, CL_BLOCKING, 0, data, &[]) }
                .map_err(|e| Error::Device(format!("writing base {} to the device: error {}", base.id, e.0)))?;
        }
        self.stats.uploads += 1;
        self.bases.insert(base.id, DeviceBase { base: *base, buf, device_newer: false });
        Ok(())
    }

    /// The built kernel for `src`, from the cache or built now.
    fn kernel(&mut self, src: &Source) -> Result<u64> {
        let mut h = DefaultHasher::new();
        src.text.hash(&mut h);
        let key = h.finish();
        if !self.cache.contains_key(&key) {
            let program = Program::create_and_build_from_source(
                &self.context,
                &src.text,
                "-cl-fp32-correctly-rounded-divide-sqrt",
            )
            .map_err(|log| {
                Error::Device(format!("building OpenCL kernel {key:016x} ({:?}) failed:\n{log}", src.opcodes))
            })?;
            let k = Kernel::create(&program, KERNEL_NAME)
                .map_err(|e| Error::Device(format!("creating OpenCL kernel {key:016x}: error {}", e.0)))?;
            self.stats.builds += 1;
            self.cache.insert(key, k);
        }
        Ok(key)
    }

    /// Runs a generated kernel over `n` positions.
    fn launch(&mut self, src: &Source, n: usize, mem: &HostMemory) -> Result<()> {
        for b in &src.args {
            self.upload(b, mem)?;
        }
        if n > 0 {
            let wg = self.config.work_group_size;
            let key = self.kernel(src)?;
            let mut exec = ExecuteKernel::new(&self.cache[&key]);
            for b in &src.args {
                // SAFETY: argument k is a __global pointer and gets a live buffer of its base.
                unsafe { exec.set_arg(&self.bases[&b.id].buf) };
            }
            let n64 = n as u64;
            // SAFETY: the last argument is a ulong.
            unsafe { exec.set_arg(&n64) };
            if wg > 0 {
                exec.set_global_work_size(n.div_ceil(wg) * wg).set_local_work_size(wg);
            } else {
                exec.set_global_work_size(n);
            }
            // SAFETY: every argument is set; indices stay inside the views, which were validated
            // against their bases, and each base's buffer holds the whole base.
            unsafe { exec.enqueue_nd_range(&self.queue) }.map_err(|e| {
                Error::Device(format!(
                    "launching OpenCL kernel {key:016x} ({:?}) over {n} positions: error {}",
                    src.opcodes, e.0
                ))
            })?;
            self.queue.finish().map_err(|e| {
                Error::Device(format!("OpenCL kernel {key:016x} ({:?}) failed: error {}", src.opcodes, e.0))
            })?;
            self.stats.launches += 1;
        }
        for id in &src.written {
            if let Some(db) = self.bases.get_mut(id) {
                db.device_newer = true;
            }
        }
        Ok(())
    }

    /// Runs instructions on the fallback child: their bases are brought to the host first and
    /// their outputs' device copies dropped after.
    fn fallback(&mut self, instrs: Vec<Instruction>, mem: &mut HostMemory) -> Result<()> {
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
            return Err(Error::Unsupported(format!("the opencl engine cannot run {ops:?} and has no fallback child")));
        };
        self.stats.fallback_instructions += instrs.len() as u64;
        let outputs: HashSet<BaseId> = instrs.iter().filter_map(|i| i.output()).map(|v| v.base.id).collect();
        child.execute(&instrs, mem)?;
        for id in outputs {
            self.bases.remove(&id);
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
            Opcode::Discard => {
                self.bases.remove(&view.base.id);
            }
            Opcode::Free => {
                self.bases.remove(&view.base.id);
                mem.free(view.base.id);
            }
            _ => {}
        }
        Ok(())
    }

    fn step(&mut self, step: &Step, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        match step {
            Step::System(i) => self.system(&batch[*i], mem),
            Step::Single(i) => self.fallback(vec![batch[*i].clone()], mem),
            Step::Kernel(k) => {
                let isolated = k.instrs.len() == 1 && kernel::needs_isolation(&batch[k.instrs[0]]);
                let first = &batch[k.instrs[0]];
                let (src, n) = if k.instrs.len() == 1 && first.opcode.kind() == vm_core::Kind::Reduce {
                    let n = first.output().map_or(0, |v| v.nelem());
                    (codegen::generate_reduce(first, self.chosen.fp64), n)
                } else {
                    (codegen::generate(batch, k, self.chosen.fp64), k.shape.iter().product())
                };
                match src.filter(|_| !isolated) {
                    Some(src) => self.launch(&src, n, mem)?,
                    None => self.fallback(k.instrs.iter().map(|&i| batch[i].clone()).collect(), mem)?,
                }
                for &i in &k.after {
                    self.system(&batch[i], mem)?;
                }
                Ok(())
            }
        }
    }
}

impl Component for OpenClEngine {
    fn name(&self) -> &str {
        "opencl"
    }

    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        vm_core::instr::validate_batch(batch)?;
        let opts = kernel::Options { max_instructions: self.config.max_kernel };
        for step in kernel::partition(batch, &opts) {
            self.step(&step, batch, mem)?;
        }
        Ok(())
    }

    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        match &mut self.child {
            Some(child) => child.register_extension(name, opcode),
            None => Ok(false),
        }
    }

    fn describe(&self) -> Vec<ComponentInfo> {
        let mut notes = vec![format!("using {}", self.chosen.describe())];
        notes.extend(self.devices.iter().map(|d| format!("found {}", d.describe())));
        let s = self.stats;
        notes.push(format!(
            "{} programs built, {} launches, {} instructions on the fallback, {} uploads, {} downloads",
            s.builds, s.launches, s.fallback_instructions, s.uploads, s.downloads
        ));
        let settings = vec![
            ("platform".into(), format!("{:?}", self.config.platform)),
            ("device".into(), format!("{:?}", self.config.device)),
            ("device_type".into(), format!("{:?}", self.config.device_type)),
            ("work_group_size".into(), self.config.work_group_size.to_string()),
            ("max_kernel".into(), self.config.max_kernel.to_string()),
        ];
        let mut all =
            vec![ComponentInfo { name: self.config.table.clone(), implementation: "opencl".into(), settings, notes }];
        if let Some(child) = &self.child {
            all.extend(child.describe());
        }
        all
    }

    fn shutdown(&mut self) -> Result<()> {
        self.bases.clear();
        match &mut self.child {
            Some(child) => child.shutdown(),
            None => Ok(()),
        }
    }
}
