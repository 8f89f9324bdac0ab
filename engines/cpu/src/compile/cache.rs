//! The JIT and the kernel cache: compiled functions keyed by [`Program`] (opcodes, dtypes,
//! operand sources, layout classes), never by addresses, sizes or constant values, so a loop
//! that runs the same structure again and again compiles it once.

use crate::compile::codegen;
use crate::compile::program::Program;
use crate::x86::{self, Isa};
use cranelift_codegen::ir::{AbiParam, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, ModuleError, default_libcall_names};
use rustc_hash::FxHashMap as HashMap;
use std::time::{Duration, Instant};
use vm_ir::{Error, Result};

/// A compiled kernel: `(args, partials, lo, hi)`, see [`codegen`].
pub type KernelFn = unsafe extern "C" fn(args: *const i64, partials: *const i64, lo: i64, hi: i64);

/// Cache statistics.
#[derive(Debug, Default, Clone, Copy)]
pub struct CacheStats {
    /// Kernels compiled (a structure not seen before).
    pub misses: u64,
    /// Hot kernels compiled again by the good tier (also counted as hits).
    pub promoted: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Total time spent compiling (promotions included).
    pub compile_time: Duration,
    /// Kernels compiled with a row routine of the engine's own ([`crate::x86`]).
    pub row_code: u64,
}

/// How kernels are compiled: the register allocator of each compilation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tiers {
    /// A kernel is compiled first with Cranelift's single-pass register allocator (several
    /// times faster to compile, slower code), and again with the backtracking one once it is
    /// hot (see [`Cache::get`]): a program whose kernels are all different (a long loop cut
    /// into batches at varying places) pays little to compile, a loop running the same kernel
    /// again and again gets the good code.
    Tiered,
    /// Every kernel with the single-pass allocator only.
    SinglePass,
    /// Every kernel with the backtracking allocator only.
    Backtracking,
}

impl Tiers {
    /// The tiers a `regalloc` setting names (`"tiered"`, `"single_pass"`, `"backtracking"`).
    pub fn named(name: &str) -> Result<Tiers> {
        match name {
            "tiered" => Ok(Tiers::Tiered),
            "single_pass" => Ok(Tiers::SinglePass),
            "backtracking" => Ok(Tiers::Backtracking),
            other => Err(Error::Internal(format!(
                "regalloc = \"{other}\": expected \"tiered\", \"single_pass\" or \"backtracking\""
            ))),
        }
    }
}

/// Work (positions times instructions) of all a kernel's runs together past which a kernel
/// compiled by the fast tier is compiled again by the good one: about a millisecond of running,
/// as long as compiling it again takes. A program of many small kernels each run a few times
/// (a test suite, a table of dtype combinations) compiles each once; a short kernel whose
/// first run alone does that much work is compiled by the good tier from the start
/// ([`GOOD_FIRST_MAX_OPS`]; the fast tier's code ran softmax's first call at a third of the
/// speed).
pub const PROMOTE_WORK: u64 = 1 << 21;

/// The most operations of a kernel that the good tier compiles at once when its first run
/// passes [`PROMOTE_WORK`]: its compile time grows faster than the kernel (a 300-operation
/// expression took seconds), so a long kernel still starts on the fast tier.
pub const GOOD_FIRST_MAX_OPS: usize = 32;

/// A compiled kernel and how it was compiled.
#[derive(Clone, Copy)]
struct Compiled {
    f: KernelFn,
    /// Compiled by the good tier (nothing left to promote).
    good: bool,
    /// Work of its runs so far (positions times instructions).
    work: u64,
}

/// Where the kernel of a program lies in the [`Cache`]: [`Cache::again`] by it hashes nothing
/// (hashing a program costs more than running a small kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot(usize);

/// A JIT module with one register allocator.
struct Jit {
    module: JITModule,
    ctx: cranelift_codegen::Context,
}

/// The JIT modules and the compiled kernels.
pub struct Cache {
    /// Compiles the first tier (single-pass allocation); `None` when every kernel gets `good`.
    fast: Option<Jit>,
    /// Compiles the good tier (backtracking allocation); `None` when every kernel gets `fast`.
    good: Option<Jit>,
    fctx: FunctionBuilderContext,
    /// Each program compiled, with where its kernel lies in `compiled`.
    kernels: HashMap<Program, Slot>,
    compiled: Vec<Compiled>,
    /// Programs run without being compiled, with the number of runs (see [`Cache::uncompiled_run`]).
    seen: HashMap<Program, u32>,
    /// Print each compiled kernel to stderr.
    dump: bool,
    /// The instruction set of the row routines eligible kernels get, if any.
    row_code: Option<Isa>,
    /// Statistics since creation.
    pub stats: CacheStats,
}

// SAFETY: the JIT modules own their code memory and are only used through `&mut Cache`; the
// function pointers they hand out point into memory that lives as long as the modules, and the
// engine (which owns the cache) never runs kernels after dropping it. A kernel compiled again
// by the good tier keeps its first code alive too (JIT modules free nothing before they drop).
unsafe impl Send for Cache {}

impl Drop for Cache {
    /// Returns the modules' code memory to the system: a process that makes and drops engines
    /// (a context per task, a test per program) would otherwise keep every kernel's pages
    /// mapped until it runs out of mappings.
    fn drop(&mut self) {
        for jit in [self.fast.take(), self.good.take()].into_iter().flatten() {
            // SAFETY: the kernels compiled here are run only by the engine that owns this cache,
            // inside its `execute`, never after dropping it (its replays and bound kernels, the
            // only other holders of the function pointers, drop with it).
            unsafe { jit.module.free_memory() };
        }
    }
}

impl Jit {
    fn new(opt_level: &str, regalloc: &str, verify: bool) -> Result<Jit> {
        let mut flags = settings::builder();
        let set = |f: &mut settings::Builder, k: &str, v: &str| {
            f.set(k, v).map_err(|e| Error::Internal(format!("cranelift setting {k}={v}: {e}")).caused_by(e))
        };
        set(&mut flags, "opt_level", opt_level)?;
        set(&mut flags, "regalloc_algorithm", regalloc)?;
        set(&mut flags, "enable_verifier", if verify { "true" } else { "false" })?;
        set(&mut flags, "use_colocated_libcalls", "false")?;
        set(&mut flags, "is_pic", "false")?;
        let isa = cranelift_native::builder()
            .map_err(|e| Error::Device(format!("Cranelift does not support this CPU: {e}")))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| Error::Internal(format!("Cranelift ISA: {e}")).caused_by(e))?;
        let module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let ctx = module.make_context();
        Ok(Jit { module, ctx })
    }
}

impl Cache {
    /// A fresh JIT for the host CPU at Cranelift optimisation level `opt_level` (`"none"` or
    /// `"speed"`) with register allocation `tiers`. `verify` turns on Cranelift's IR verifier;
    /// `dump` prints every kernel compiled (program, IR, machine code) to stderr; `row_code`
    /// gives the kernels that can have one a row routine in that instruction set.
    pub fn new(opt_level: &str, tiers: Tiers, verify: bool, dump: bool, row_code: Option<Isa>) -> Result<Cache> {
        let fast = match tiers {
            Tiers::Backtracking => None,
            _ => Some(Jit::new(opt_level, "single_pass", verify)?),
        };
        let good = match tiers {
            Tiers::SinglePass => None,
            _ => Some(Jit::new(opt_level, "backtracking", verify)?),
        };
        Ok(Cache {
            fast,
            good,
            fctx: FunctionBuilderContext::new(),
            kernels: HashMap::default(),
            compiled: Vec::new(),
            seen: HashMap::default(),
            dump,
            row_code: row_code.filter(|i| i.supported()),
            stats: CacheStats::default(),
        })
    }

    /// The compiled kernel of `p` for a run of `work` positions times instructions, compiling
    /// it on a miss (by the fast tier, unless the run alone reaches [`PROMOTE_WORK`] and the
    /// kernel is short, [`GOOD_FIRST_MAX_OPS`]: the good tier takes several times longer to
    /// compile a long kernel, sometimes seconds, more than a single run of it gains) and
    /// compiling it again by the good tier once its runs reach [`PROMOTE_WORK`].
    /// The flag says that the code is final (asking again returns the same function); the slot
    /// is where to ask again ([`Cache::again`]).
    pub fn get(&mut self, p: &Program, work: u64) -> Result<(KernelFn, bool, Slot)> {
        match self.kernels.get(p) {
            Some(&slot) => self.again(slot, p, work).map(|(f, final_code)| (f, final_code, slot)),
            None => {
                // A short kernel's first run past the promotion threshold (over millions of
                // elements) gets the good tier at once: its first run is where the time goes.
                let big_first_run = work >= PROMOTE_WORK && p.ops.len() <= GOOD_FIRST_MAX_OPS;
                let good = self.fast.is_none() || big_first_run;
                let f = self.compile_timed(p, good)?;
                self.stats.misses += 1;
                let slot = Slot(self.compiled.len());
                let good = good || !self.tiered();
                self.compiled.push(Compiled { f, good, work });
                self.kernels.insert(p.clone(), slot);
                Ok((f, good, slot))
            }
        }
    }

    /// [`Cache::get`] of program `p` again, by the slot it returned for `p`: one more run of
    /// `work`, which may promote the kernel to the good tier.
    pub fn again(&mut self, slot: Slot, p: &Program, work: u64) -> Result<(KernelFn, bool)> {
        let tiered = self.tiered();
        let c = &mut self.compiled[slot.0];
        c.work = c.work.saturating_add(work);
        self.stats.hits += 1;
        if c.good || !tiered || c.work < PROMOTE_WORK {
            return Ok((c.f, c.good || !tiered));
        }
        // A kernel with a row routine is compiled again too: the routine is the same at every
        // tier, but rows too short for it (a last axis of 8) run the compiled loop.
        let f = self.compile_timed(p, true)?;
        self.stats.promoted += 1;
        let c = &mut self.compiled[slot.0];
        (c.f, c.good) = (f, true);
        Ok((f, true))
    }

    /// Both tiers are at hand: kernels start on the fast one.
    fn tiered(&self) -> bool {
        self.fast.is_some() && self.good.is_some()
    }

    /// [`Cache::compile`], timed into the statistics and the trace.
    fn compile_timed(&mut self, p: &Program, good: bool) -> Result<KernelFn> {
        let t0 = Instant::now();
        let begun = vm_runtime::trace::begin();
        let f = self.compile(p, good)?;
        self.stats.compile_time += t0.elapsed();
        let name = if good { "compile kernel (optimising)" } else { "compile kernel" };
        vm_runtime::trace::end(begun, "compile", || name, || vec![("operations", p.ops.len() as u64)]);
        Ok(f)
    }

    /// True when `p` was never compiled and has run fewer than `limit` times some other way:
    /// the caller runs it some other way once more (counted), and compiles it after that.
    pub fn uncompiled_run(&mut self, p: &Program, limit: u32) -> bool {
        if self.kernels.contains_key(p) {
            return false;
        }
        match self.seen.get_mut(p) {
            Some(n) if *n >= limit => false,
            Some(n) => {
                *n += 1;
                true
            }
            None => {
                self.seen.insert(p.clone(), 1);
                limit > 0
            }
        }
    }

    /// Number of distinct kernels compiled.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// True when nothing was compiled yet.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// Compiles `p` (its rows running a routine of [`x86`] where it has one).
    fn compile(&mut self, p: &Program, good: bool) -> Result<KernelFn> {
        let jit =
            if good { self.good.as_mut().or(self.fast.as_mut()) } else { self.fast.as_mut().or(self.good.as_mut()) };
        let Jit { module, ctx } = jit.expect("a cache has at least one tier");
        let cc = module.isa().default_call_conv();
        // The text says what failed (with the function's IR when defining it fails); the module's
        // error is the source.
        let failed = |text: String, e: ModuleError| Error::Internal(format!("compiling a kernel: {text}")).caused_by(e);
        // The routines take their arguments as the System V ABI passes them.
        let system_v = cc == cranelift_codegen::isa::CallConv::SystemV;
        x86::audit(p);
        let routine =
            self.row_code.filter(|&i| system_v && x86::eligible(p, i)).and_then(|i| Some((i, x86::assemble(p, i)?)));
        let row = if let Some((isa, code)) = routine {
            let mut sig = module.make_signature();
            sig.call_conv = cc;
            for _ in 0..3 {
                sig.params.push(AbiParam::new(types::I64));
            }
            let name = crate::compile::perfmap::unique(crate::compile::perfmap::routine_name(p, isa));
            let id = module.declare_function(&name, Linkage::Local, &sig).map_err(|e| failed(e.to_string(), e))?;
            module.define_function_bytes(id, 64, &code, &[]).map_err(|e| failed(e.to_string(), e))?;
            module.finalize_definitions().map_err(|e| failed(e.to_string(), e))?;
            if self.dump {
                let hex: Vec<String> = code.iter().map(|b| format!("{b:02x}")).collect();
                eprintln!("---- {isa:?} row routine ({} bytes) of {p:?}\n{}", code.len(), hex.join(" "));
            }
            self.stats.row_code += 1;
            let start = module.get_finalized_function(id) as usize;
            crate::compile::perfmap::record(start, code.len(), || name);
            Some(start)
        } else {
            None
        };
        module.clear_context(ctx);
        let sig = &mut ctx.func.signature;
        sig.call_conv = cc;
        for _ in 0..4 {
            sig.params.push(AbiParam::new(types::I64));
        }
        let tc = module.target_config();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut self.fctx);
            codegen::build(&mut b, p, cc, row)?;
            b.finalize(tc);
        }
        let name = crate::compile::perfmap::unique(crate::compile::perfmap::kernel_name(p, good));
        let id = module
            .declare_function(&name, Linkage::Local, &ctx.func.signature)
            .map_err(|e| failed(e.to_string(), e))?;
        ctx.set_disasm(self.dump);
        module.define_function(id, ctx).map_err(|e| failed(format!("{e:?}\n{}", ctx.func), e))?;
        let size = ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
        if self.dump {
            // Debugging aid: the kernel's IR and machine code.
            let code = ctx.compiled_code().and_then(|c| c.vcode.clone()).unwrap_or_default();
            let tier = if good { "backtracking" } else { "single-pass" };
            eprintln!("---- kernel ({tier} allocation) {p:?}\n{}\n{code}", ctx.func);
        }
        module.clear_context(ctx);
        module.finalize_definitions().map_err(|e| failed(e.to_string(), e))?;
        let code = module.get_finalized_function(id);
        crate::compile::perfmap::record(code as usize, size, || name);
        // SAFETY: the function was built with exactly this signature (four i64 parameters, no
        // results, the platform's C calling convention).
        Ok(unsafe { std::mem::transmute::<*const u8, KernelFn>(code) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cranelift_errors_are_kept_as_the_source() {
        let Err(e) = Cache::new("fast", Tiers::Tiered, false, false, None) else {
            panic!("opt_level = fast is not a Cranelift level")
        };
        assert!(e.to_string().contains("cranelift setting opt_level=fast"), "{e}");
        assert!(matches!(e.without_cause(), Error::Internal(_)), "{e:?}");
        let source = std::error::Error::source(&e).expect("a source");
        assert!(source.downcast_ref::<settings::SetError>().is_some(), "{source:?}");
    }
}
