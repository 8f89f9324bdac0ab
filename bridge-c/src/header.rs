//! Renders `vm.h`, the C header of the ABI, from the Rust tables: status codes from
//! [`crate::errors::statuses`], dtypes from [`DType::ALL`], opcodes from [`Opcode::ALL`], the
//! struct layouts of [`crate::abi`]. `vm header > bridge-c/include/vm.h` regenerates the committed
//! file; a test fails when the two differ, and another compiles the header with `cc` and checks
//! every constant, size and offset against Rust.

use crate::abi::{ABI_VERSION, OPERAND_CONSTANT, OPERAND_VIEW};
use crate::errors::statuses;
use std::fmt::Write as _;
use vm_ir::instr::MAX_OPERANDS;
use vm_ir::opcode::EXTENSION_BASE;
use vm_ir::view::MAX_NDIM;
use vm_ir::{DType, Opcode};

/// A `#define` of the header: name, value, and a one-line comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constant {
    /// The macro's name.
    pub name: String,
    /// Its value.
    pub value: i64,
    /// What it means.
    pub doc: String,
}

/// A group of constants under one heading.
#[derive(Debug, Clone)]
pub struct ConstantGroup {
    /// The heading comment.
    pub heading: &'static str,
    /// The constants.
    pub constants: Vec<Constant>,
}

fn c(name: impl Into<String>, value: i64, doc: impl Into<String>) -> Constant {
    Constant { name: name.into(), value, doc: doc.into() }
}

/// The C type of an element of `d`.
pub fn c_type(d: DType) -> &'static str {
    match d {
        DType::Bool => "uint8_t",
        DType::I8 => "int8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int32_t",
        DType::I64 => "int64_t",
        DType::U8 => "uint8_t",
        DType::U16 => "uint16_t",
        DType::U32 => "uint32_t",
        DType::U64 => "uint64_t",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

/// Every constant of the header, by group, in the order they are printed.
pub fn constant_groups() -> Vec<ConstantGroup> {
    let limits = vec![
        c(
            "VM_ABI_VERSION",
            ABI_VERSION as i64,
            "the ABI this header describes; vm_abi_version() returns the library's",
        ),
        c("VM_MAX_NDIM", MAX_NDIM as i64, "the most dimensions a view may have"),
        c("VM_MAX_OPERANDS", MAX_OPERANDS as i64, "the most operands an instruction may have"),
    ];
    let status = statuses().iter().map(|s| c(s.name.to_str().expect("ASCII names"), s.code as i64, s.doc)).collect();
    let dtypes = DType::ALL
        .iter()
        .map(|&d| {
            let what = format!("{}: {} byte(s), elements are {}", d.name(), d.size(), c_type(d));
            let what = if d == DType::Bool { what + " holding 0 or 1" } else { what };
            c(format!("VM_DTYPE_{}", d.name().to_uppercase()), d.id() as i64, what)
        })
        .collect();
    let kinds = vec![
        c("VM_OPERAND_VIEW", OPERAND_VIEW as i64, "the operand is u.view"),
        c("VM_OPERAND_CONSTANT", OPERAND_CONSTANT as i64, "the operand is u.constant"),
    ];
    let mut opcodes: Vec<Constant> = Opcode::ALL
        .iter()
        .map(|&op| c(format!("VM_OP_{}", op.name().to_uppercase()), op.id() as i64, op.summary()))
        .collect();
    opcodes.push(c(
        "VM_OP_EXTENSION_BASE",
        EXTENSION_BASE as i64,
        "opcodes from here on are extension methods; vm_extension() returns them",
    ));
    vec![
        ConstantGroup { heading: "Version and limits", constants: limits },
        ConstantGroup {
            heading: "Status codes: every function returning int returns one of these; vm_last_error() says more",
            constants: status,
        },
        ConstantGroup { heading: "Element types (vm_base_new, vm_constant.dtype)", constants: dtypes },
        ConstantGroup {
            heading: "Operand kinds (vm_operand.kind); 0 is none, so zeroed operands are rejected",
            constants: kinds,
        },
        ConstantGroup {
            heading: "Opcodes (vm_instruction.opcode): the opcode table of vm-ir; ids are stable. Operand 0 is the output",
            constants: opcodes,
        },
    ]
}

/// Makes `text` safe inside a C block comment (and drops the Markdown backticks of the Rust
/// docs it comes from).
fn comment(text: &str) -> String {
    text.replace("*/", "* /").replace('\n', " ").replace('`', "")
}

/// The per-dtype constant helpers: `vm_operand_<dtype>(value)`.
fn operand_helpers(out: &mut String) {
    for d in DType::ALL {
        let (param, member, value) = match d {
            DType::Bool => ("int", "u", "x != 0"),
            d if d.is_float() => (c_type(d), "f", "x"),
            d if d.is_signed() => (c_type(d), "i", "x"),
            d => (c_type(d), "u", "x"),
        };
        let _ = writeln!(
            out,
            "/** A constant operand of dtype {name}. */\n\
             static inline vm_operand vm_operand_{name}({param} x) {{\n    \
             vm_operand o;\n    \
             memset(&o, 0, sizeof o);\n    \
             o.kind = VM_OPERAND_CONSTANT;\n    \
             o.u.constant.dtype = VM_DTYPE_{upper};\n    \
             o.u.constant.value.{member} = {value};\n    \
             return o;\n\
             }}\n",
            name = d.name(),
            upper = d.name().to_uppercase(),
        );
    }
}

const PREAMBLE: &str = r#"/*
 * vm.h: the C ABI of the vector VM (libvm.so). C99/C11 and C++ compatible.
 *
 * GENERATED from the Rust tables by `vm header` (bridge-c/src/header.rs): do not edit by hand;
 * regenerate with `cargo run -p vm-bridge-c --bin vm -- header > bridge-c/include/vm.h`.
 * A test fails when this file and the Rust tables disagree.
 *
 * Reference and a complete example: docs/c-abi.md. In short:
 *   - vm_init() builds the stack the configuration names and returns a context;
 *   - vm_base_new() creates a base (a flat typed array); views are strided windows onto bases;
 *   - vm_submit() queues instructions (an opcode and views/constants); a SYNC runs the batch;
 *   - vm_sync() + vm_data() read results; vm_write() writes host data into a base;
 *   - every function returns VM_OK or a VM_ERR_* status, and vm_last_error() says why.
 *
 * Link with -lvm (e.g. cc prog.c -I bridge-c/include -L target/release -lvm -Wl,-rpath,...).
 */
#ifndef VM_H
#define VM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
"#;

const TYPES: &str = r#"/* ---- Types ---------------------------------------------------------------------------------- */

/** A VM instance: one stack built from a configuration. Opaque; from vm_init, ended by vm_shutdown. */
typedef struct vm_context vm_context;

/** A base: a flat array of one dtype. A handle from vm_base_new; 0 is never a handle. */
typedef uint64_t vm_base;

/**
 * A strided view of a base. Element idx of the view is element start + sum(idx[d] * stride[d])
 * of the base (strides in elements, not bytes; 0 broadcasts, negative walks backwards). Only the
 * first ndim entries of shape and stride are read; ndim 0 is a single element (element start).
 */
typedef struct vm_view {
    vm_base base;
    int64_t start;
    uint32_t ndim;
    uint64_t shape[VM_MAX_NDIM];
    int64_t stride[VM_MAX_NDIM];
} vm_view;

/**
 * A constant. The value lives in the union member its dtype selects: signed integers in i,
 * unsigned integers and bool in u, f32 and f64 in f (as a double). vm_submit rejects a value
 * its dtype cannot hold (an i8 of 300, a bool of 2, a finite f32 beyond +-3.4e38) with
 * VM_ERR_INVALID_INSTRUCTION; infinities and NaN are constants of f32 and f64.
 */
typedef struct vm_constant {
    uint32_t dtype;
    union {
        int64_t i;
        uint64_t u;
        double f;
    } value;
} vm_constant;

/** An operand: a view (kind VM_OPERAND_VIEW) or a constant (kind VM_OPERAND_CONSTANT). */
typedef struct vm_operand {
    uint32_t kind;
    union {
        vm_view view;
        vm_constant constant;
    } u;
} vm_operand;

/**
 * One instruction: an opcode and its operands; operand 0 is the output (see the opcode table).
 * Only the first noperands operands are read. Plain data: build it with the helpers below.
 */
typedef struct vm_instruction {
    uint32_t opcode;
    uint32_t noperands;
    vm_operand operands[VM_MAX_OPERANDS];
} vm_instruction;

/* ---- Functions ------------------------------------------------------------------------------ */
/* Every function returning int returns VM_OK or a VM_ERR_* status and sets vm_last_error().    */
/* Pointers must be valid for the sizes given; NULL where a pointer is required is an error.      */
/* A context may be used from several threads; calls on one context are serialised.             */

/** The ABI version of the loaded library; compare with VM_ABI_VERSION. */
uint32_t vm_abi_version(void);

/**
 * Builds the stack the configuration names and returns a new context in *out.
 * config_path: a TOML file, or NULL to look it up ($VM_CONFIG, ./vm.toml,
 * $XDG_CONFIG_HOME/vm/config.toml, ~/.config/vm/config.toml, then the built-in default).
 * The stack is the file's `stack`, unless $VM_STACK names another; VM_<COMPONENT>_<KEY>=value
 * overrides one setting; VM_TRACE=1 prints every batch to stderr.
 */
int vm_init(const char *config_path, vm_context **out);

/**
 * Like vm_init, but stack (when not NULL) names the stack to build, as VM_STACK would; an empty
 * name is VM_ERR_CONFIG.
 */
int vm_init_stack(const char *config_path, const char *stack, vm_context **out);

/** Runs pending work, shuts the stack down and frees the context (even when it reports an error). */
int vm_shutdown(vm_context *ctx);

/** Creates a base of nelem elements of dtype (a VM_DTYPE_*), returned in *out. */
int vm_base_new(vm_context *ctx, uint32_t dtype, uint64_t nelem, vm_base *out);

/** Ends a base (queues a FREE): its handle is invalid from now on, its data pointer too. */
int vm_base_free(vm_context *ctx, vm_base base);

/**
 * Validates n instructions and queues them; a batch runs when it holds a SYNC, when it is full,
 * or at vm_flush. On error nothing is queued and vm_last_error() names the instruction and
 * operand at fault. Work already queued may also fail here, when this call runs it.
 */
int vm_submit(vm_context *ctx, const vm_instruction *instrs, size_t n);

/** Runs all queued instructions. */
int vm_flush(vm_context *ctx);

/**
 * Asks the flush running on ctx (in another thread's vm_flush, vm_sync, vm_write or vm_submit)
 * to stop: it returns VM_ERR_INTERRUPTED within milliseconds, the bases its batch wrote are in
 * an unspecified state, and the context stays usable. Returns at once and never waits for the
 * context's lock; a request made while no flush runs is dropped when the next one starts.
 */
int vm_interrupt(vm_context *ctx);

/** Makes the host copy of base current: queues a SYNC of the whole base and runs the batch. */
int vm_sync(vm_context *ctx, vm_base base);

/**
 * The host data of a synced base: *data points at its nbytes bytes (elements in the C type of
 * its dtype, contiguous, 64-byte aligned). Fails with VM_ERR_PROTOCOL unless a SYNC of the base
 * has run and nothing has written it since. The pointer stays valid until the base is next
 * written (by an instruction or vm_write) or freed, or the context shut down. Read only.
 */
int vm_data(vm_context *ctx, vm_base base, const void **data, size_t *nbytes);

/**
 * Writes nbytes bytes from src into base, starting at element elem_offset (nbytes must be a
 * whole number of elements, all inside the base). Queued work runs first; afterwards the host
 * copy is current (vm_data works without a sync) and engines drop copies of their own.
 */
int vm_write(vm_context *ctx, vm_base base, uint64_t elem_offset, const void *src, size_t nbytes);

/**
 * Registers the extension method name (e.g. "matmul") with the stack and returns its opcode in
 * *opcode (>= VM_OP_EXTENSION_BASE). VM_ERR_UNSUPPORTED when no component implements it.
 */
int vm_extension(vm_context *ctx, const char *name, uint32_t *opcode);

/**
 * Starts recording what the engines do (batches, instructions run at once, kernels compiled and
 * run, matrix products, host-device copies, with their sizes) for every context of the process,
 * dropping what was recorded before. Not recording, each span costs one atomic load.
 */
int vm_trace_start(void);

/**
 * Stops recording and writes what was recorded since vm_trace_start to path as a Chrome
 * trace-event file (JSON; it opens in Perfetto and chrome://tracing); NULL drops it. A file that
 * cannot be written is VM_ERR_INVALID_ARGUMENT naming it. (VM_PROFILE=trace.json in the
 * environment records from the first context on and writes the file at each vm_shutdown.)
 */
int vm_trace_stop(const char *path);

/**
 * Why the last call on this thread failed; "" after a success. Never NULL. The text stays
 * valid until the next call of this API on the same thread.
 */
const char *vm_last_error(void);

/** The name of a status code ("VM_OK", "VM_ERR_UNKNOWN_BASE", ...). Never NULL; static. */
const char *vm_status_name(int status);

/* ---- Helpers -------------------------------------------------------------------------------- */

/** A 1-d view: n elements of base from element start, stride elements apart. */
static inline vm_view vm_view_1d(vm_base base, int64_t start, uint64_t n, int64_t stride) {
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = start;
    v.ndim = 1;
    v.shape[0] = n;
    v.stride[0] = stride;
    return v;
}

/** A 2-d view: rows x cols elements from element start, strides in elements. */
static inline vm_view vm_view_2d(vm_base base, int64_t start, uint64_t rows, uint64_t cols, int64_t row_stride,
                                 int64_t col_stride) {
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = start;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.stride[0] = row_stride;
    v.stride[1] = col_stride;
    return v;
}

/** An n-d view (shape and stride hold ndim entries; more than VM_MAX_NDIM is refused on submit). */
static inline vm_view vm_view_nd(vm_base base, int64_t start, uint32_t ndim, const uint64_t *shape,
                                 const int64_t *stride) {
    uint32_t d;
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = start;
    v.ndim = ndim;
    for (d = 0; d < ndim && d < VM_MAX_NDIM; d++) {
        v.shape[d] = shape[d];
        v.stride[d] = stride[d];
    }
    return v;
}

/** A 0-d view: the single element `offset` of base (e.g. the output of a full reduction). */
static inline vm_view vm_view_scalar(vm_base base, int64_t offset) {
    vm_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.start = offset;
    v.ndim = 0;
    return v;
}

/** A view operand. */
static inline vm_operand vm_operand_view(vm_view view) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_VIEW;
    o.u.view = view;
    return o;
}

/** A 1-d contiguous view operand: elements [start, start + n) of base. */
static inline vm_operand vm_operand_range(vm_base base, int64_t start, uint64_t n) {
    return vm_operand_view(vm_view_1d(base, start, n, 1));
}

"#;

const INSTRUCTION_HELPERS: &str = r#"/** An instruction of n operands (copied from operands; n > VM_MAX_OPERANDS is refused on submit). */
static inline vm_instruction vm_instr(uint32_t opcode, uint32_t n, const vm_operand *operands) {
    uint32_t k;
    vm_instruction in;
    memset(&in, 0, sizeof in);
    in.opcode = opcode;
    in.noperands = n;
    for (k = 0; k < n && k < VM_MAX_OPERANDS; k++) {
        in.operands[k] = operands[k];
    }
    return in;
}

/** An instruction of one operand (sync, discard, free, range). */
static inline vm_instruction vm_instr1(uint32_t opcode, vm_operand a) {
    return vm_instr(opcode, 1, &a);
}

/** An instruction of two operands (unary element-wise: out, in). */
static inline vm_instruction vm_instr2(uint32_t opcode, vm_operand a, vm_operand b) {
    vm_operand ops[2];
    ops[0] = a;
    ops[1] = b;
    return vm_instr(opcode, 2, ops);
}

/** An instruction of three operands (binary element-wise: out, a, b; reductions: out, in, axis). */
static inline vm_instruction vm_instr3(uint32_t opcode, vm_operand a, vm_operand b, vm_operand c) {
    vm_operand ops[3];
    ops[0] = a;
    ops[1] = b;
    ops[2] = c;
    return vm_instr(opcode, 3, ops);
}

/** An instruction of four operands (select: out, cond, a, b). */
static inline vm_instruction vm_instr4(uint32_t opcode, vm_operand a, vm_operand b, vm_operand c, vm_operand d) {
    vm_operand ops[4];
    ops[0] = a;
    ops[1] = b;
    ops[2] = c;
    ops[3] = d;
    return vm_instr(opcode, 4, ops);
}

#ifdef __cplusplus
}
#endif

#endif /* VM_H */
"#;

/// The text of `vm.h`.
pub fn render() -> String {
    let mut out = String::from(PREAMBLE);
    for group in constant_groups() {
        let _ = writeln!(out, "\n/* ---- {} */", comment(group.heading));
        let width = group.constants.iter().map(|k| k.name.len()).max().unwrap_or(0);
        for k in &group.constants {
            let value = if k.name == "VM_ABI_VERSION" { format!("{}u", k.value) } else { k.value.to_string() };
            let _ = writeln!(out, "#define {:width$} {value:<4} /* {} */", k.name, comment(&k.doc));
        }
    }
    out.push('\n');
    out.push_str(TYPES);
    operand_helpers(&mut out);
    out.push_str(INSTRUCTION_HELPERS);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    fn committed_path() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include").join("vm.h")
    }

    #[test]
    fn committed_header_is_the_rendered_one() {
        let rendered = render();
        let committed = std::fs::read_to_string(committed_path()).unwrap_or_default();
        if std::env::var_os("VM_BLESS").is_some() {
            std::fs::write(committed_path(), &rendered).unwrap();
            return;
        }
        assert!(
            committed == rendered,
            "bridge-c/include/vm.h is stale: regenerate it with `cargo run -p vm-bridge-c --bin vm -- header > \
             bridge-c/include/vm.h` (or run this test with VM_BLESS=1)"
        );
    }

    #[test]
    fn names_are_unique_and_comments_are_safe() {
        let mut seen = std::collections::HashSet::new();
        for g in constant_groups() {
            for k in g.constants {
                assert!(seen.insert(k.name.clone()), "duplicate {}", k.name);
                assert!(
                    k.name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                    "{}",
                    k.name
                );
            }
        }
        assert!(seen.contains("VM_OP_ADD") && seen.contains("VM_DTYPE_F64") && seen.contains("VM_ERR_INTERNAL"));
        assert_eq!(render().matches("/*").count(), render().matches("*/").count());
    }

    /// A scratch directory for compiled C, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("vm-bridge-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Scratch(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Compiles `source` against the committed header with `compiler` and returns what it prints.
    pub(crate) fn compile_and_run(compiler: &str, std: &str, ext: &str, source: &str) -> String {
        let dir = Scratch::new(&format!("layout-{compiler}"));
        let src = dir.0.join(format!("layout.{ext}"));
        let exe = dir.0.join("layout");
        std::fs::write(&src, source).unwrap();
        let include = committed_path().parent().unwrap().to_path_buf();
        let out = Command::new(compiler)
            .args([std, "-Wall", "-Wextra", "-pedantic", "-Werror", "-I"])
            .arg(&include)
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
        assert!(out.status.success(), "{compiler} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let run = Command::new(&exe).output().unwrap();
        assert!(run.status.success());
        String::from_utf8(run.stdout).unwrap()
    }

    /// A C program printing every constant and every size and offset, one `name value` a line.
    fn probe_program() -> String {
        let mut s = String::from("#include <stdio.h>\n#include <stddef.h>\n#include \"vm.h\"\nint main(void) {\n");
        for g in constant_groups() {
            for k in g.constants {
                let _ = writeln!(s, "    printf(\"%s %lld\\n\", \"{0}\", (long long)({0}));", k.name);
            }
        }
        for (what, _) in crate::abi::layout() {
            let _ = writeln!(s, "    printf(\"%s %lld\\n\", \"{what}\", (long long)({what}));");
        }
        s.push_str("    return 0;\n}\n");
        s
    }

    fn expected() -> String {
        let mut s = String::new();
        for g in constant_groups() {
            for k in g.constants {
                let _ = writeln!(s, "{} {}", k.name, k.value);
            }
        }
        for (what, n) in crate::abi::layout() {
            let _ = writeln!(s, "{what} {n}");
        }
        s
    }

    #[test]
    fn c_compiler_agrees_on_constants_sizes_and_offsets() {
        assert_eq!(compile_and_run("cc", "-std=c11", "c", &probe_program()), expected());
    }

    #[test]
    fn header_compiles_as_cpp_and_agrees() {
        assert_eq!(compile_and_run("c++", "-std=c++11", "cpp", &probe_program()), expected());
    }

    #[test]
    fn header_compiles_as_c99() {
        compile_and_run("cc", "-std=c99", "c", &probe_program());
    }
}
