//! # vm-cpu: the Cranelift JIT engine
//!
//! The `cpu` component executes a batch by
//!
//! 0. running it through the optimizer's passes ([`vm_passes`]: setting `passes_off`,
//!    `VM_TRACE=passes`);
//! 1. cutting it into kernels of blockable instructions and contracting temporaries
//!    ([`vm_fusion`], shared with the OpenCL engine);
//! 2. turning each kernel into a [`crate::compile::program::Program`] (its structure, the cache key) and a
//!    [`crate::compile::program::Binding`] (addresses, sizes, strides, constants);
//! 3. compiling the program once with Cranelift ([`cache`](crate::compile::cache), [`codegen`](crate::compile::codegen), [`emit`](crate::compile::emit)); operations
//!    Cranelift has no instruction for are block routines in Rust ([`calls`](crate::routines::calls), [`fastmath`](crate::routines::fastmath)),
//!    applying `std`, [`vm_ir::semantics`] and [`vm_math`] (the interpreter's functions);
//!    on a CPU with AVX-512 or AVX2, a kernel of float arithmetic, sums and products gets a row
//!    routine the engine assembles itself at the machine's full width ([`x86`]: Cranelift's
//!    vectors are 128-bit), which the compiled function calls for each row;
//! 4. running it over cache-sized blocks of the iteration space on a persistent pool of threads
//!    with work stealing ([`exec`](crate::run::exec), [`pool`](crate::run::pool)); reductions combine per-block partials in block
//!    order ([`reduce`](crate::routines::reduce)), so results do not depend on the number of threads.
//!
//! Arrays computed from constants alone (`range`, `random` and what follows from them) that a
//! batch leaves alive but does not read again are not written to memory: their recipe is kept
//! and replayed only if a later batch refers to them ([`vm_passes::lazy`]); host memory of a base is
//! current after a SYNC of it.
//!
//! A costly value a loop computes the same way in batch after batch (`log(s / X)` where only a
//! time step moves) is kept in a base of the engine's the second time and read from there
//! afterwards ([`vm_passes::hoist`], bounded by the setting `hoist_bytes`).
//!
//! Consecutive kernels over the same rows that touch what they write row by row (a distance
//! matrix, its row minima, the matrix masked by them) run together one block of rows at a time,
//! so that what one writes is still in the cache when the next reads it ([`rows`](crate::run::rows), setting
//! `row_group_bytes`).
//!
//! A small batch (at most 2^14 element operations) of a structure met for one of the first
//! two times runs whole on the fallback child, without kernel formation, which costs tens of
//! microseconds per instruction for a structure not seen before; once it keeps coming, its
//! kernels are formed and compiled once. So does a kernel of at most 4096 positions, however
//! many operations it fuses: the child runs its first two times faster than it compiles.
//!
//! Scans, gathers and scatters run as plain Rust ([`native`](crate::routines::native)), and so do the reductions to a
//! position, `argmin_reduce` and `argmax_reduce`, on the pool ([`positions`](crate::routines::positions)). Matrix products
//! (a kernel of a product summed over its middle axis, and the `matmul` extension method of
//! floats) run as blocked GEMM ([`gemm`](crate::routines::gemm)). Extension
//! methods go to the fallback child, when there is one; without one they are
//! [`vm_ir::Error::Unsupported`].
//!
//! Memory: every allocation whose size comes from the program (bases, copies of views, staged
//! gather and scatter values, reduction partials) is fallible, and failing is
//! [`vm_ir::Error::OutOfMemory`] naming the base and the size, never an abort. Views are read
//! in place wherever a copy is not needed (a broadcast view can visit more elements than memory
//! has bytes), and a kernel is cut into at most 2^20 blocks, so that its bookkeeping stays small
//! however many positions it has.
//!
//! Kernels compile at Cranelift's `opt_level = "none"` by default, in two tiers
//! ([`crate::compile::cache::Tiers`]): first with the single-pass register allocator, and again with the
//! backtracking one once a kernel is hot (its runs together reach 2^21 positions times
//! operations, about a millisecond). A kernel of at most [`crate::compile::cache::GOOD_FIRST_MAX_OPS`]
//! operations whose first run alone reaches that gets the backtracking code at once (softmax's
//! first call: 35 ms on single-pass code, 9 ms; NumPy 17 ms); a longer one never does, however
//! large the first run (a 300-operation expression over 4M elements ran its first call in
//! 0.29 s on single-pass code and 0.57 s when compiled by the backtracking allocator first).
//! The backtracking allocator's code is up to 2.7 times faster (knn), but it compiles several times slower, which a program
//! whose kernels are all different pays for every kernel: a loop of a thousand element-wise
//! operations that is never read until the end reaches the engine as batches cut at varying
//! places, so hardly a kernel repeats (measured: 2.1 s compiling where NumPy takes 0.07 s, 0.3
//! s in tiers). Constants past the eighth of a
//! kernel are loaded where used rather than held in registers ([`crate::compile::codegen::HOISTED_CONSTS`]).
//! Vector loops are unrolled [`crate::compile::simd::UNROLL`] times ([`crate::compile::simd::CHAIN_UNROLL`] for a plain chain)
//! and the copies emitted interleaved, operation by operation, so that a long chain of dependent
//! operations (a fused kernel of hundreds of element-wise instructions) runs as independent
//! chains the CPU overlaps; then one vector at a time, so that a short row (a last axis of 8:
//! the channels of a convolution, the 3 of xyz) runs vectors too, and the scalar loop last.
//! Row addresses move with the odometer rather than being multiplied out per row and operand,
//! and f32 inputs widened to f64 (f32 sums) are read two at a time and converted in the vector
//! loop (measured: NPBench's conv2d_bias at preset M, a multiply and an f32 sum over rows of 8
//! per output pixel, 1,460M -> 816M instructions per call; NumPy 811M). A hot kernel with a row
//! routine is compiled again too: its short rows run the compiled loop. At `"speed"`, Cranelift's e-graph pass
//! re-places every pure instruction depth-first from its uses, which undoes the interleaving:
//! measured on the overhead benchmark (1000 dependent operations on 64K elements) it makes the
//! kernels 2.4 times slower, while the kernels gain little from its other rewrites because the
//! code generator already hoists constants and addresses out of loops.
//!
//! Settings (`[cpu]` table): see [`Config`]. `VM_PROFILE=1` or `profile = true` prints kernel,
//! compile and cache statistics to stderr at shutdown. `VM_PERF_MAP=1` names the JIT's code for
//! `perf` in `/tmp/perf-<pid>.map` ([`perfmap`](crate::compile::perfmap)).

pub mod compile;
mod engine;
pub mod profile;
pub mod routines;
pub mod run;
pub mod x86;

pub use engine::CpuEngine;

use vm_ir::Result;
use vm_runtime::component::Settings;
use vm_runtime::{Component, Implementation};

/// The most worker threads a `cpu` component may have (the `threads` setting's limit). Far
/// more than any machine this engine runs on has cores: beyond the core count threads only
/// contend, and asking for hundreds of thousands exhausts the process's thread limit.
pub const MAX_THREADS: usize = 1024;

vm_runtime::settings! {
    /// The engine's configuration: the settings of the `cpu` component (its config table).
    pub struct Config {
        /// worker threads, the caller included; 0 = one per core; at most 1024
        #[range(0, MAX_THREADS)]
        threads: usize = 0,
        /// print kernel, compile and cache statistics at shutdown (also turned on by VM_PROFILE=1)
        #[env_switch("VM_PROFILE")]
        profile: bool = false,
        /// positions of a kernel's iteration space per block (the unit of parallel work)
        #[range(1, i64::MAX)]
        block_size: usize = 32768,
        /// kernels with at most this much work (positions times operations) run as one block
        /// on the calling thread
        #[range(0, i64::MAX)]
        min_parallel: usize = 131072,
        /// the most instructions fused into one kernel; 0 = no limit
        #[range(0, i64::MAX)]
        max_kernel: usize = 512,
        /// Cranelift optimisation level, "none" or "speed" (see the crate documentation)
        #[choice("none", "speed")]
        opt_level: String = "none",
        /// Cranelift register allocation: "tiered" (single-pass first, backtracking once a
        /// kernel is hot or for a short kernel's large first run), "single_pass" or
        /// "backtracking" for every kernel
        #[choice("tiered", "single_pass", "backtracking")]
        regalloc: String = "tiered",
        /// print every kernel compiled (program, Cranelift IR, machine code) to stderr
        dump: bool = false,
        /// a kernel of at most 4096 positions seen for the first or second time runs on the
        /// child (when there is one) and is compiled only if it keeps coming (not kernels whose
        /// results the child would round differently: reductions, the engine's own exp and
        /// log); so does a whole small batch of a structure seen for the first or second time
        first_runs_on_child: bool = true,
        /// bytes of loop-invariant results kept across batches and read instead of computed
        /// again (a costly value a loop computes the same way every time); 0 = off
        #[range(0, i64::MAX)]
        hoist_bytes: usize = 268435456,
        /// consecutive kernels sharing rows run together a block of rows at a time when they
        /// move at least this many bytes together (see the `rows` module); 0 = never
        #[range(0, i64::MAX)]
        row_group_bytes: usize = 4194304,
        /// kernels of f64 or f32 arithmetic (add, subtract, multiply, divide, sqrt, negative,
        /// absolute, square, reciprocal, copies, maximum, minimum, sums) on rows
        /// contiguous or broadcast
        /// compute their rows in code the engine assembles itself at the CPU's full vector
        /// width (Cranelift's vectors are 128-bit): "auto" (the widest the CPU has), "avx512",
        /// "avx2" (when the CPU has it), or "none" (Cranelift's code for every kernel)
        #[choice("auto", "avx512", "avx2", "none")]
        row_code: String = "auto",
        /// optimizer passes not to run, by name, comma-separated (see the crate vm-passes:
        /// lazy, hoist, flat-reductions, widen-f32-sums, subview-fills, copyback, reciprocals,
        /// recycle)
        passes_off: String = "",
        /// print the batch after every optimizer pass that changed it (also turned on by
        /// VM_TRACE=passes)
        #[env_switch("VM_TRACE=passes")]
        trace_passes: bool = false,
    }
}

fn construct(settings: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
    let table = if settings.component.is_empty() { IMPLEMENTATION.name } else { &settings.component };
    Ok(Box::new(CpuEngine::named(table, Config::from_settings(settings)?, child)?))
}

/// The `cpu` implementation, for the stack builder: no child needed; a child, when given, is
/// the fallback for extension methods.
pub const IMPLEMENTATION: Implementation = Implementation {
    name: "cpu",
    summary: "Cranelift JIT engine: fuses instructions into kernels, compiles each once, runs blocks on all cores",
    needs_child: false,
    settings: Config::SPECS,
    construct,
};
