//! Counters of what the engine did, printed at shutdown when profiling is on.

use crate::compile::cache::CacheStats;
use std::fmt;
use std::time::Duration;
use vm_runtime::Statistics;

/// What the engine did since it started.
#[derive(Debug, Default, Clone, Copy)]
pub struct Profile {
    /// Batches executed.
    pub batches: u64,
    /// Kernels formed and run.
    pub kernels: u64,
    /// Instructions executed inside kernels.
    pub fused_instructions: u64,
    /// Temporaries contracted (never allocated).
    pub contracted: u64,
    /// Instructions run natively (scans, gathers, scatters, reductions to a position, empty
    /// reductions).
    pub native: u64,
    /// Instructions handed to the fallback child.
    pub fallback: u64,
    /// Runs of small kernels seen for the first times, by the child instead of compiled code.
    pub first_runs_on_child: u64,
    /// Small batches run whole by the child (no kernel formation).
    pub batches_on_child: u64,
    /// Pure bases deferred (never written to memory unless replayed).
    pub deferred: u64,
    /// Deferred bases replayed because a later batch referred to them.
    pub replayed: u64,
    /// Loop-invariant results read from a kept base instead of computed again ([`vm_passes::hoist`]).
    pub hoisted: u64,
    /// Kernels run as matrix products ([`crate::routines::gemm`]).
    pub matrix_products: u64,
    /// Matrix-vector products run in one pass over the matrix they share with others.
    pub shared_matrix: u64,
    /// Kernels run in row-blocked groups ([`crate::run::rows`]).
    pub row_grouped: u64,
    /// Temporaries of row-blocked groups kept in per-block scratch memory, never in a buffer.
    pub row_scratch: u64,
    /// Time spent running kernels (binding, blocks, combining partials).
    pub exec_time: Duration,
    /// Bytes read and written by kernels: each memory operand's distinct elements once, and
    /// each reduction's output.
    pub bytes_moved: u64,
    /// Kernel cache statistics.
    pub cache: CacheStats,
}

impl Profile {
    /// The figures every component reports ([`Component::statistics`](vm_runtime::Component::statistics)).
    pub fn statistics(&self) -> Statistics {
        Statistics {
            batches: self.batches,
            kernels: self.kernels,
            fused_instructions: self.fused_instructions,
            contracted: self.contracted,
            cache_hits: Some(self.cache.hits),
            cache_misses: Some(self.cache.misses),
            compile_seconds: Some(self.cache.compile_time.as_secs_f64()),
            bytes_moved: self.bytes_moved,
            fallbacks: self.fallback,
        }
    }
}

/// The profile printed at shutdown: the [`Statistics`] with the engine's own counters.
impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.statistics();
        let secs = self.exec_time.as_secs_f64();
        let rate = if secs > 0.0 { s.bytes_moved as f64 / secs / 1e9 } else { 0.0 };
        let (hits, misses) = (s.cache_hits.unwrap_or(0), s.cache_misses.unwrap_or(0));
        writeln!(f, "vm cpu profile:")?;
        writeln!(f, "  batches              {}", s.batches)?;
        writeln!(
            f,
            "  kernels formed       {} ({} instructions fused, {} temporaries contracted)",
            s.kernels, s.fused_instructions, s.contracted
        )?;
        writeln!(f, "  native / fallback    {} / {}", self.native, s.fallbacks)?;
        writeln!(
            f,
            "  first runs on child  {} (small kernels compiled once they keep coming)",
            self.first_runs_on_child
        )?;
        writeln!(f, "  batches on child     {} (small batches, run whole)", self.batches_on_child)?;
        writeln!(f, "  deferred / replayed  {} / {}", self.deferred, self.replayed)?;
        writeln!(f, "  hoisted              {} (loop-invariant results read, not computed)", self.hoisted)?;
        writeln!(
            f,
            "  matrix products      {} (run as blocked GEMM; {} sharing passes over a matrix)",
            self.matrix_products, self.shared_matrix
        )?;
        writeln!(
            f,
            "  row-blocked          {} (kernels run together by blocks of rows; {} temporaries in scratch)",
            self.row_grouped, self.row_scratch
        )?;
        writeln!(
            f,
            "  compile              {misses} kernels, {} again once hot, in {:.3} ms",
            self.cache.promoted,
            s.compile_seconds.unwrap_or(0.0) * 1e3
        )?;
        writeln!(
            f,
            "  row code             {} kernels (rows in AVX-512 or AVX2 code of the engine's own)",
            self.cache.row_code
        )?;
        writeln!(f, "  cache hits / misses  {hits} / {misses}")?;
        writeln!(f, "  execution            {:.3} ms", secs * 1e3)?;
        write!(f, "  bytes moved          {} ({rate:.2} GB/s)", s.bytes_moved)
    }
}
