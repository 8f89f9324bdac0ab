//! The JIT and the kernel cache: compiled functions keyed by [`Program`] (opcodes, dtypes,
//! operand sources, layout classes), never by addresses, sizes or constant values, so a loop
//! that runs the same structure again and again compiles it once.

use crate::codegen;
use crate::program::Program;
use cranelift_codegen::ir::{AbiParam, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Module, ModuleError, default_libcall_names};
use rustc_hash::FxHashMap as HashMap;
use std::time::{Duration, Instant};
use vm_ir::{Error, Result};

/// A compiled kernel: `(args, partials, lo, hi)`, see [`codegen`].
pub type KernelFn = unsafe extern "C" fn(args: *const i64, partials: *const i64, lo: i64, hi: i64);

/// Cache statistics.
#[derive(Debug, Default, Clone, Copy)]
pub struct CacheStats {
    /// Kernels compiled.
    pub misses: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Total time spent compiling.
    pub compile_time: Duration,
}

/// The JIT module and the compiled kernels.
pub struct Cache {
    module: JITModule,
    ctx: cranelift_codegen::Context,
    fctx: FunctionBuilderContext,
    kernels: HashMap<Program, KernelFn>,
    /// Print each compiled kernel to stderr.
    dump: bool,
    /// Statistics since creation.
    pub stats: CacheStats,
}

// SAFETY: the JIT module owns its code memory and is only used through `&mut Cache`; the
// function pointers it hands out point into memory that lives as long as the module, and the
// engine (which owns the cache) never runs kernels after dropping it.
unsafe impl Send for Cache {}

impl Cache {
    /// A fresh JIT for the host CPU at Cranelift optimisation level `opt_level` (`"none"` or
    /// `"speed"`). `verify` turns on Cranelift's IR verifier; `dump` prints every kernel compiled
    /// (program, IR, machine code) to stderr.
    pub fn new(opt_level: &str, verify: bool, dump: bool) -> Result<Cache> {
        let mut flags = settings::builder();
        let set = |f: &mut settings::Builder, k: &str, v: &str| {
            f.set(k, v).map_err(|e| Error::Internal(format!("cranelift setting {k}={v}: {e}")).caused_by(e))
        };
        set(&mut flags, "opt_level", opt_level)?;
        set(&mut flags, "enable_verifier", if verify { "true" } else { "false" })?;
        set(&mut flags, "use_colocated_libcalls", "false")?;
        set(&mut flags, "is_pic", "false")?;
        let isa = cranelift_native::builder()
            .map_err(|e| Error::Device(format!("Cranelift does not support this CPU: {e}")))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| Error::Internal(format!("Cranelift ISA: {e}")).caused_by(e))?;
        let module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let ctx = module.make_context();
        Ok(Cache {
            module,
            ctx,
            fctx: FunctionBuilderContext::new(),
            kernels: HashMap::default(),
            dump,
            stats: CacheStats::default(),
        })
    }

    /// The compiled kernel of `p`, compiling it on a miss.
    pub fn get(&mut self, p: &Program) -> Result<KernelFn> {
        if let Some(&f) = self.kernels.get(p) {
            self.stats.hits += 1;
            return Ok(f);
        }
        let t0 = Instant::now();
        let f = self.compile(p)?;
        self.stats.compile_time += t0.elapsed();
        self.stats.misses += 1;
        self.kernels.insert(p.clone(), f);
        Ok(f)
    }

    /// Number of distinct kernels compiled.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// True when nothing was compiled yet.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    fn compile(&mut self, p: &Program) -> Result<KernelFn> {
        let cc = self.module.isa().default_call_conv();
        self.module.clear_context(&mut self.ctx);
        let sig = &mut self.ctx.func.signature;
        sig.call_conv = cc;
        for _ in 0..4 {
            sig.params.push(AbiParam::new(types::I64));
        }
        let tc = self.module.target_config();
        {
            let mut b = FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx);
            codegen::build(&mut b, p, cc)?;
            b.finalize(tc);
        }
        // The text says what failed (with the function's IR when defining it fails); the module's
        // error is the source.
        let failed = |text: String, e: ModuleError| Error::Internal(format!("compiling a kernel: {text}")).caused_by(e);
        let id =
            self.module.declare_anonymous_function(&self.ctx.func.signature).map_err(|e| failed(e.to_string(), e))?;
        let dump = self.dump;
        self.ctx.set_disasm(dump);
        self.module.define_function(id, &mut self.ctx).map_err(|e| failed(format!("{e:?}\n{}", self.ctx.func), e))?;
        if dump {
            // Debugging aid: the kernel's IR and machine code.
            let code = self.ctx.compiled_code().and_then(|c| c.vcode.clone()).unwrap_or_default();
            eprintln!("---- kernel {p:?}\n{}\n{code}", self.ctx.func);
        }
        self.module.clear_context(&mut self.ctx);
        self.module.finalize_definitions().map_err(|e| failed(e.to_string(), e))?;
        let code = self.module.get_finalized_function(id);
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
        let Err(e) = Cache::new("fast", false, false) else { panic!("opt_level = fast is not a Cranelift level") };
        assert!(e.to_string().contains("cranelift setting opt_level=fast"), "{e}");
        assert!(matches!(e.without_cause(), Error::Internal(_)), "{e:?}");
        let source = std::error::Error::source(&e).expect("a source");
        assert!(source.downcast_ref::<settings::SetError>().is_some(), "{source:?}");
    }
}
