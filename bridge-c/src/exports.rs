//! The `extern "C"` functions of `libvm.so`, declared in `vm.h`. Each one runs its body inside
//! [`guard`], so it returns a status, sets the thread's last error, and never lets a panic out.
//! Every pointer argument is checked for null before it is read or written.

use crate::abi::{ABI_VERSION, VmBase, VmInstruction};
use crate::context::{self, Context, VmContext};
use crate::errors::{guard, last_error_ptr, status_name};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::Path;
use vm_host::StackChoice;
use vm_host::stack::build_runtime;
use vm_ir::{BaseId, DType, Error, Result};

/// Fails with [`Error::InvalidArgument`] naming `what` when `ptr` is null or not aligned for
/// `T` (a C compiler never produces a misaligned pointer to a typed object, but a cast can).
fn non_null<T>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        Err(Error::InvalidArgument(format!("{what} is NULL")))
    } else if !ptr.is_aligned() {
        Err(Error::InvalidArgument(format!("{what} ({ptr:p}) is not aligned to {} bytes", std::mem::align_of::<T>())))
    } else {
        Ok(())
    }
}

/// The text of the C string `ptr` (`None` when null).
///
/// # Safety
/// A non-null `ptr` must point at a NUL-terminated string that stays alive during the call.
unsafe fn optional_str<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null (checked above) and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str().map(Some).map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

/// `uint32_t vm_abi_version(void)`: the ABI version of this library (`VM_ABI_VERSION`).
#[unsafe(no_mangle)]
pub extern "C" fn vm_abi_version() -> u32 {
    ABI_VERSION
}

/// `int vm_init(const char *config_path, vm_context **out)`: see [`vm_init_stack`].
///
/// # Safety
/// As for [`vm_init_stack`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_init(config_path: *const c_char, out: *mut *mut VmContext) -> c_int {
    // SAFETY: the same contract, with no stack name.
    unsafe { vm_init_stack(config_path, std::ptr::null(), out) }
}

/// `int vm_init_stack(const char *config_path, const char *stack, vm_context **out)`: builds the
/// stack named `stack` (or the configuration's) from the config file `config_path` (or the one
/// the lookup order finds) and stores a new context in `*out` (set to NULL on failure). An
/// empty `stack` is `VM_ERR_CONFIG`, not the configuration's choice.
///
/// # Safety
/// `config_path` and `stack` are NULL or NUL-terminated strings; `out` is NULL or valid for
/// writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_init_stack(
    config_path: *const c_char,
    stack: *const c_char,
    out: *mut *mut VmContext,
) -> c_int {
    guard(|| {
        non_null(out, "out (where to store the context)")?;
        // SAFETY: `out` is non-null and aligned (checked above) and valid for writes by contract.
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: NULL or NUL-terminated by contract.
        let path = unsafe { optional_str(config_path, "config_path")? };
        // SAFETY: NULL or NUL-terminated by contract.
        let stack = unsafe { optional_str(stack, "stack")? };
        let (runtime, plan) = build_runtime(path.map(Path::new), &StackChoice::named_or_env(stack))?;
        let token = context::register(Context::new(runtime, plan.describe()));
        // SAFETY: as above.
        unsafe { out.write(token) };
        Ok(())
    })
}

/// `int vm_shutdown(vm_context *ctx)`: runs pending work, shuts the stack down, ends the context.
///
/// # Safety
/// None beyond the C signature: `ctx` is looked up, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_shutdown(ctx: *mut VmContext) -> c_int {
    guard(|| context::shutdown(ctx))
}

/// `int vm_base_new(vm_context *ctx, uint32_t dtype, uint64_t nelem, vm_base *out)`.
///
/// # Safety
/// `out` is NULL or valid for writing a `vm_base`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_base_new(ctx: *mut VmContext, dtype: u32, nelem: u64, out: *mut VmBase) -> c_int {
    guard(|| {
        let ctx = context::lookup(ctx)?;
        non_null(out, "out (where to store the base)")?;
        let dtype = DType::from_id(dtype)?;
        let base = ctx.with(|rt| rt.new_base(dtype, nelem))?;
        // SAFETY: `out` is non-null and aligned (checked above) and valid for writes by contract.
        unsafe { out.write(base.id.0) };
        Ok(())
    })
}

/// `int vm_base_free(vm_context *ctx, vm_base base)`: queues a FREE of the base.
///
/// # Safety
/// None beyond the C signature.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_base_free(ctx: *mut VmContext, base: VmBase) -> c_int {
    guard(|| context::lookup(ctx)?.with(|rt| rt.free(BaseId(base))))
}

/// `int vm_submit(vm_context *ctx, const vm_instruction *instrs, size_t n)`: converts and
/// queues `n` instructions; on error none is queued.
///
/// # Safety
/// `instrs` is NULL (allowed only when `n` is 0) or points at `n` readable `vm_instruction`s
/// whose first `noperands` operands are initialised as their `kind` says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_submit(ctx: *mut VmContext, instrs: *const VmInstruction, n: usize) -> c_int {
    guard(|| {
        let ctx = context::lookup(ctx)?;
        if n == 0 {
            return Ok(());
        }
        non_null(instrs, "instrs")?;
        if n > isize::MAX as usize / std::mem::size_of::<VmInstruction>() {
            return Err(Error::InvalidArgument(format!("{n} instructions cannot be in memory")));
        }
        // SAFETY: non-null and aligned (checked above), and by contract valid for reading `n`
        // instructions (whose size in bytes fits in isize, checked above). They are read through
        // references to their fields, only those the tags select.
        let instrs = unsafe { std::slice::from_raw_parts(instrs, n) };
        ctx.with(|rt| {
            rt.submit_with(n, |i, base_of, slot| instrs[i].decode_into(base_of, i, slot))?;
            rt.flush_if_wanted()
        })
    })
}

/// `int vm_flush(vm_context *ctx)`: runs every queued instruction.
///
/// # Safety
/// None beyond the C signature.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_flush(ctx: *mut VmContext) -> c_int {
    guard(|| context::lookup(ctx)?.with(|rt| rt.flush()))
}

/// `int vm_interrupt(vm_context *ctx)`: asks the flush running on `ctx` to stop (it returns
/// `VM_ERR_INTERRUPTED`); does not take the context's lock, so it returns at once while another
/// thread's flush holds it.
///
/// # Safety
/// None beyond the C signature.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_interrupt(ctx: *mut VmContext) -> c_int {
    guard(|| {
        context::lookup(ctx)?.interrupt.request();
        Ok(())
    })
}

/// `int vm_sync(vm_context *ctx, vm_base base)`: makes the host copy of `base` current.
///
/// # Safety
/// None beyond the C signature.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_sync(ctx: *mut VmContext, base: VmBase) -> c_int {
    guard(|| context::lookup(ctx)?.with(|rt| rt.sync(BaseId(base))))
}

/// `int vm_data(vm_context *ctx, vm_base base, const void **data, size_t *nbytes)`: the host
/// data of a synced base. `*data` stays valid until the base is next written or freed.
///
/// # Safety
/// `data` and `nbytes` are NULL or valid for writing a pointer and a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_data(
    ctx: *mut VmContext,
    base: VmBase,
    data: *mut *const c_void,
    nbytes: *mut usize,
) -> c_int {
    guard(|| {
        let ctx = context::lookup(ctx)?;
        non_null(data, "data (where to store the pointer)")?;
        non_null(nbytes, "nbytes (where to store the size)")?;
        let (ptr, len) = ctx.with(|rt| {
            let bytes = rt.host_data(BaseId(base))?;
            Ok((bytes.as_ptr(), bytes.len()))
        })?;
        // SAFETY: both are non-null and aligned (checked above) and valid for writes by contract. The
        // pointer is to the base's host buffer, which lives (at a fixed address) until the base
        // is freed or the context shut down.
        unsafe {
            data.write(ptr.cast());
            nbytes.write(len);
        }
        Ok(())
    })
}

/// `int vm_write(vm_context *ctx, vm_base base, uint64_t elem_offset, const void *src, size_t
/// nbytes)`: writes host data into a base.
///
/// # Safety
/// `src` is NULL (allowed only when `nbytes` is 0) or valid for reading `nbytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_write(
    ctx: *mut VmContext,
    base: VmBase,
    elem_offset: u64,
    src: *const c_void,
    nbytes: usize,
) -> c_int {
    guard(|| {
        let ctx = context::lookup(ctx)?;
        let bytes: &[u8] = if nbytes == 0 {
            &[]
        } else {
            non_null(src, "src")?;
            if nbytes > isize::MAX as usize {
                return Err(Error::InvalidArgument(format!("{nbytes} bytes cannot be in memory")));
            }
            // SAFETY: non-null (checked above), at most isize::MAX bytes (checked above), and
            // readable for `nbytes` bytes by contract; u8 has no alignment or validity needs.
            unsafe { std::slice::from_raw_parts(src.cast::<u8>(), nbytes) }
        };
        ctx.with(|rt| rt.write(BaseId(base), elem_offset, bytes))
    })
}

/// `int vm_extension(vm_context *ctx, const char *name, uint32_t *opcode)`: registers an
/// extension method by name and returns its opcode.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opcode` is NULL or valid for writing a `u32`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_extension(ctx: *mut VmContext, name: *const c_char, opcode: *mut u32) -> c_int {
    guard(|| {
        let ctx = context::lookup(ctx)?;
        non_null(name, "name")?;
        non_null(opcode, "opcode (where to store the opcode)")?;
        // SAFETY: non-null (checked above) and NUL-terminated by contract.
        let name = unsafe { optional_str(name, "name")? }.unwrap_or_default();
        if name.is_empty() {
            return Err(Error::InvalidArgument("the extension name is empty".into()));
        }
        let op = ctx.with(|rt| rt.register_extension(name))?;
        // SAFETY: non-null and aligned (checked above) and valid for writes by contract.
        unsafe { opcode.write(op.id()) };
        Ok(())
    })
}

/// `int vm_trace_start(void)`: starts recording the engines' spans (batches, instructions run at
/// once, kernels compiled and run, matrix products, host-device copies) for every context of
/// the process, dropping what was recorded before ([`vm_runtime::trace`]).
#[unsafe(no_mangle)]
pub extern "C" fn vm_trace_start() -> c_int {
    guard(|| {
        vm_runtime::trace::start();
        Ok(())
    })
}

/// `int vm_trace_stop(const char *path)`: stops recording and writes the spans recorded since
/// [`vm_trace_start`] to `path` as a Chrome trace-event file (NULL: drops them). A file that
/// cannot be written is `VM_ERR_INVALID_ARGUMENT` naming it; recording has stopped either way.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vm_trace_stop(path: *const c_char) -> c_int {
    guard(|| {
        let (spans, _dropped) = vm_runtime::trace::stop();
        // SAFETY: NULL or NUL-terminated by contract.
        let Some(path) = (unsafe { optional_str(path, "path")? }) else { return Ok(()) };
        vm_runtime::trace::write_chrome_trace(Path::new(path), &spans).map_err(|e| {
            Error::InvalidArgument(format!("vm_trace_stop: cannot write the trace to {path}: {e}")).caused_by(e)
        })
    })
}

/// `const char *vm_last_error(void)`: why the last call on this thread failed ("" after a
/// success); never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn vm_last_error() -> *const c_char {
    last_error_ptr()
}

/// `const char *vm_status_name(int status)`: the `VM_*` name of a status; never NULL, static.
#[unsafe(no_mangle)]
pub extern "C" fn vm_status_name(status: c_int) -> *const c_char {
    status_name(status).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::VmInstruction;
    use crate::errors::last_error;
    use vm_ir::{Instruction, Opcode, Scalar, View};
    use vm_runtime::{Component, ComponentInfo, HostMemory, Runtime, RuntimeOptions};

    /// A component with a bug: it panics on every batch.
    struct Panicky;

    impl Component for Panicky {
        fn name(&self) -> &str {
            "panicky"
        }
        fn execute(&mut self, _: &[Instruction], _: &mut HostMemory) -> Result<()> {
            panic!("engine bug: this component always panics")
        }
        fn info(&self) -> ComponentInfo {
            ComponentInfo::default()
        }
    }

    /// The repository's default configuration, so that tests do not depend on the machine's.
    fn default_config() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/default.toml")
    }

    fn context_over(component: impl Component + 'static) -> *mut VmContext {
        context::register(Context::new(Runtime::new(Box::new(component), RuntimeOptions::default()), String::new()))
    }

    #[test]
    fn a_panic_inside_is_caught_and_the_context_then_refuses_work() {
        let ctx = context_over(Panicky);
        let mut b: VmBase = 0;
        // SAFETY: `b` is a valid place for a base handle.
        assert_eq!(unsafe { vm_base_new(ctx, DType::F64.id(), 4, &mut b) }, 0);
        let base = context::lookup(ctx).unwrap().with(|rt| rt.base(BaseId(b))).unwrap();
        let range = VmInstruction::from_instruction(&Instruction::new(Opcode::Range, [View::of_base(base).into()]));
        // SAFETY: one valid instruction.
        assert_eq!(unsafe { vm_submit(ctx, &range, 1) }, 0);
        // SAFETY: no pointers.
        let status = unsafe { vm_flush(ctx) };
        assert_eq!(status_name(status), c"VM_ERR_INTERNAL");
        assert!(last_error().contains("panic: engine bug"), "{}", last_error());
        // SAFETY: no pointers.
        let status = unsafe { vm_sync(ctx, b) };
        assert_eq!(status_name(status), c"VM_ERR_INTERNAL");
        assert!(last_error().contains("panicked"), "{}", last_error());
        // SAFETY: no pointers.
        assert_eq!(unsafe { vm_shutdown(ctx) }, 0, "{}", last_error());
    }

    #[test]
    fn instructions_survive_the_c_form() {
        let (rt, _) = build_runtime(Some(&default_config()), &StackChoice::Named("interp".into())).unwrap();
        let ctx = context::register(Context::new(rt, String::new()));
        let c = context::lookup(ctx).unwrap();
        let (a, s) = c.with(|rt| Ok((rt.new_base(DType::I32, 24)?, rt.new_base(DType::I32, 1)?))).unwrap();
        let grid = View::new(a, 23, &[2, 3, 4], &[-12, -4, -1]).unwrap();
        let batch = vec![
            Instruction::new(Opcode::Range, [View::of_base(a).into()]),
            Instruction::new(Opcode::Multiply, [grid.clone().into(), grid.clone().into(), Scalar::I32(-3).into()]),
            Instruction::new(
                Opcode::AddReduce,
                [View::new(s, 0, &[], &[]).unwrap().into(), View::of_base(a).into(), Scalar::I64(0).into()],
            ),
            Instruction::new(Opcode::Sync, [View::of_base(s).into()]),
        ];
        let c_form: Vec<VmInstruction> = batch.iter().map(VmInstruction::from_instruction).collect();
        let back: Vec<Instruction> = c
            .with(|rt| {
                c_form.iter().enumerate().map(|(i, x)| x.to_instruction_with(&|id| rt.base(id).ok(), i)).collect()
            })
            .unwrap();
        assert_eq!(back, batch);
        // SAFETY: a valid array of four instructions.
        assert_eq!(unsafe { vm_submit(ctx, c_form.as_ptr(), c_form.len()) }, 0, "{}", last_error());
        let mut data: *const c_void = std::ptr::null();
        let mut n = 0usize;
        // SAFETY: valid places for a pointer and a size.
        assert_eq!(unsafe { vm_data(ctx, s.id.0, &mut data, &mut n) }, 0, "{}", last_error());
        assert_eq!(n, 4);
        // SAFETY: vm_data returned a pointer to the 4 bytes of the synced i32 base.
        let total = unsafe { data.cast::<i32>().read() };
        assert_eq!(total, -3 * (0..24).sum::<i32>());
        // SAFETY: no pointers.
        assert_eq!(unsafe { vm_shutdown(ctx) }, 0);
    }

    #[test]
    fn init_reports_through_out_and_last_error() {
        let mut ctx: *mut VmContext = std::ptr::null_mut();
        let config = std::ffi::CString::new(default_config().to_str().unwrap()).unwrap();
        // SAFETY: NUL-terminated strings and a valid place for the context.
        let status = unsafe { vm_init_stack(config.as_ptr(), c"interp".as_ptr(), &mut ctx) };
        assert_eq!(status, 0, "{}", last_error());
        assert!(!ctx.is_null());
        let described = context::lookup(ctx).unwrap().description.clone();
        assert!(described.contains("interp"), "{described}");
        // SAFETY: no pointers.
        assert_eq!(unsafe { vm_shutdown(ctx) }, 0);
        // SAFETY: as above.
        let status = unsafe { vm_init_stack(config.as_ptr(), c"no such stack".as_ptr(), &mut ctx) };
        assert_eq!(status_name(status), c"VM_ERR_CONFIG");
        assert!(ctx.is_null());
        assert_eq!(vm_abi_version(), ABI_VERSION);
        // SAFETY: vm_last_error never returns NULL and its text is NUL-terminated.
        let text = unsafe { CStr::from_ptr(vm_last_error()) };
        assert!(text.to_str().unwrap().contains("no such stack"));
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(vm_status_name(6)) }, c"VM_ERR_CONFIG");
    }

    #[test]
    fn one_context_serves_several_threads() {
        let config = std::ffi::CString::new(default_config().to_str().unwrap()).unwrap();
        let mut ctx: *mut VmContext = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings and a valid place for the context.
        assert_eq!(unsafe { vm_init_stack(config.as_ptr(), c"interp".as_ptr(), &mut ctx) }, 0);
        let token = ctx.addr();
        let workers: Vec<_> = (0..8i64)
            .map(|k| {
                std::thread::spawn(move || {
                    let ctx: *mut VmContext = std::ptr::without_provenance_mut(token);
                    for round in 0..20i64 {
                        let mut b: VmBase = 0;
                        // SAFETY: a valid place for the handle.
                        assert_eq!(unsafe { vm_base_new(ctx, DType::I64.id(), 100, &mut b) }, 0);
                        let base = context::lookup(ctx).unwrap().with(|rt| rt.base(BaseId(b))).unwrap();
                        let v = View::of_base(base);
                        let prog = [
                            Instruction::new(Opcode::Range, [v.clone().into()]),
                            Instruction::new(Opcode::Add, [v.clone().into(), v.into(), Scalar::I64(k * round).into()]),
                        ]
                        .iter()
                        .map(VmInstruction::from_instruction)
                        .collect::<Vec<_>>();
                        // SAFETY: two valid instructions.
                        assert_eq!(unsafe { vm_submit(ctx, prog.as_ptr(), prog.len()) }, 0, "{}", last_error());
                        // SAFETY: no pointers.
                        assert_eq!(unsafe { vm_sync(ctx, b) }, 0);
                        let (mut data, mut n) = (std::ptr::null(), 0usize);
                        // SAFETY: valid places for a pointer and a size.
                        assert_eq!(unsafe { vm_data(ctx, b, &mut data, &mut n) }, 0);
                        // SAFETY: vm_data returned the 800 bytes of the synced i64 base; no other
                        // thread writes this base, and it is freed only after this read.
                        let x = unsafe { std::slice::from_raw_parts(data.cast::<i64>(), n / 8) };
                        assert_eq!(x[99], 99 + k * round);
                        // SAFETY: no pointers.
                        assert_eq!(unsafe { vm_base_free(ctx, b) }, 0);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        // SAFETY: no pointers.
        assert_eq!(unsafe { vm_shutdown(ctx) }, 0);
    }
}
