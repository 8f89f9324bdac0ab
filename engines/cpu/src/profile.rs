//! Counters of what the engine did, printed at shutdown when profiling is on.

use crate::cache::CacheStats;
use std::fmt;
use std::time::Duration;

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
    /// Pure bases deferred (never written to memory unless replayed).
    pub deferred: u64,
    /// Deferred bases replayed because a later batch referred to them.
    pub replayed: u64,
    /// Time spent running kernels (binding, blocks, combining partials).
    pub exec_time: Duration,
    /// Bytes read and written by kernels.
    pub bytes_moved: u64,
    /// Kernel cache statistics.
    pub cache: CacheStats,
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.exec_time.as_secs_f64();
        let rate = if secs > 0.0 { self.bytes_moved as f64 / secs / 1e9 } else { 0.0 };
        writeln!(f, "vm cpu profile:")?;
        writeln!(f, "  batches              {}", self.batches)?;
        writeln!(
            f,
            "  kernels formed       {} ({} instructions fused, {} temporaries contracted)",
            self.kernels, self.fused_instructions, self.contracted
        )?;
        writeln!(f, "  native / fallback    {} / {}", self.native, self.fallback)?;
        writeln!(f, "  deferred / replayed  {} / {}", self.deferred, self.replayed)?;
        writeln!(
            f,
            "  compile              {} kernels in {:.3} ms",
            self.cache.misses,
            self.cache.compile_time.as_secs_f64() * 1e3
        )?;
        writeln!(f, "  cache hits / misses  {} / {}", self.cache.hits, self.cache.misses)?;
        writeln!(f, "  execution            {:.3} ms", secs * 1e3)?;
        write!(f, "  bytes moved          {} ({rate:.2} GB/s)", self.bytes_moved)
    }
}
