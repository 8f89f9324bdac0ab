//! What every `hand` baseline is built from (each benchmark's `hand.rs`): fused Rust loops, one
//! pass over the data per iteration where the algorithm allows, threads over rows
//! (`std::thread::scope`, [`par_ranges`], [`par_rows_mut`]), and inner loops shaped so that the
//! compiler auto-vectorises them ([`lane_sum`], [`LANES`]). The `hand` baseline is the honest
//! "limit" a JIT is measured against (the report gives each stack's time as a ratio to it).
//!
//! Inputs that are random come from the VM's own counter-based stream ([`Real::random`]) with
//! the same seeds and counters as the VM programs, so the hand baseline computes the same
//! numbers as every stack and its checksum is compared with theirs.
//!
//! Each benchmark's `run` is written once, inside `native_copies!`, which also compiles it for
//! the machine's wider vectors: `run_native` picks at run time the best copy the CPU can run
//! ([`native`]), the `hand-native` row. The helpers the loops call per element are
//! `#[inline(always)]`, so that they are compiled into each copy with its target features.

use super::real::Real;
use std::ops::Range;
use std::sync::OnceLock;

/// A set of target features the hand loops are also compiled for (see `native_copies!`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Native {
    /// x86_64 AVX-512 (F, DQ, VL, BW) with AVX2 and FMA.
    Avx512,
    /// x86_64 AVX2 and FMA.
    Avx2Fma,
    /// The binary's own target features (`run` itself).
    Baseline,
}

impl Native {
    /// Every target, widest first.
    pub const ALL: [Native; 3] = [Native::Avx512, Native::Avx2Fma, Native::Baseline];

    /// Its name in the report's note: `avx512`, `avx2+fma`, `baseline`.
    pub fn name(self) -> &'static str {
        match self {
            Native::Avx512 => "avx512",
            Native::Avx2Fma => "avx2+fma",
            Native::Baseline => "baseline",
        }
    }

    /// Whether this machine can run code compiled for it.
    pub fn available(self) -> bool {
        match self {
            Native::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            Native::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512dq")
                    && is_x86_feature_detected!("avx512vl")
                    && is_x86_feature_detected!("avx512bw")
                    && Native::Avx2Fma.available()
            }
            #[cfg(target_arch = "x86_64")]
            Native::Avx2Fma => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// The widest target this machine runs, detected once per process.
pub fn native() -> Native {
    static CHOSEN: OnceLock<Native> = OnceLock::new();
    *CHOSEN.get_or_init(|| Native::ALL.into_iter().find(|t| t.available()).unwrap_or(Native::Baseline))
}

/// The name of [`native`]'s choice, for the report: `avx512`, `avx2+fma` or `baseline`.
pub fn native_target() -> &'static str {
    native().name()
}

/// Wraps a benchmark's `pub fn run<T: Real>(...) -> Measured { .. }` (written once) and emits:
/// - `run` itself, unchanged, compiled for the binary's target features;
/// - on x86_64, private copies of the same body under `#[target_feature]` for AVX-512 (F, DQ,
///   VL, BW, with AVX2 and FMA) and for AVX2 + FMA. Closures written in the body (the work
///   handed to threads) inherit the features; functions it calls get them only when inlined,
///   hence `#[inline(always)]` on the per-element helpers;
/// - `pub fn run_on<T: Real>(target: Native, ...)`, running the copy for `target` (which must
///   be [`Native::available`]);
/// - `pub fn run_native<T: Real>(...)`, `run_on` with [`native`]'s choice.
///
/// No copy contracts multiplies and adds into FMAs (Rust never does on its own), so every copy
/// computes the same numbers as `run`.
macro_rules! native_copies {
    (
        $(#[$meta:meta])*
        pub fn run<$t:ident: $bound:path>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block
    ) => {
        $(#[$meta])*
        pub fn run<$t: $bound>($($arg: $ty),*) -> $ret $body

        /// `run` compiled for AVX-512 (F, DQ, VL, BW) with AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")]
        fn run_avx512<$t: $bound>($($arg: $ty),*) -> $ret $body

        /// `run` compiled for AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn run_avx2_fma<$t: $bound>($($arg: $ty),*) -> $ret $body

        /// `run` compiled for `target`'s features.
        ///
        /// # Panics
        /// When this machine cannot run `target` ([`crate::benchmarks::hand_kit::Native::available`]).
        pub fn run_on<$t: $bound>(target: $crate::benchmarks::hand_kit::Native, $($arg: $ty),*) -> $ret {
            assert!(target.available(), "this CPU cannot run code compiled for {}", target.name());
            match target {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `target.available()` checked at run time that the CPU has every
                // feature the copy is compiled for.
                $crate::benchmarks::hand_kit::Native::Avx512 => unsafe { run_avx512::<$t>($($arg),*) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above, `target.available()` checked AVX2 and FMA.
                $crate::benchmarks::hand_kit::Native::Avx2Fma => unsafe { run_avx2_fma::<$t>($($arg),*) },
                _ => run::<$t>($($arg),*),
            }
        }

        /// `run` compiled for the widest target features this machine has
        /// ([`native`](crate::benchmarks::hand_kit::native)), chosen at run time.
        pub fn run_native<$t: $bound>($($arg: $ty),*) -> $ret {
            run_on::<$t>($crate::benchmarks::hand_kit::native(), $($arg),*)
        }
    };
}
pub(crate) use native_copies;

/// The number of worker threads for `requested` (0: one per core).
pub fn thread_count(requested: usize) -> usize {
    if requested > 0 { requested } else { std::thread::available_parallelism().map_or(1, |n| n.get()) }
}

/// How many threads to use for `items` units of work when each thread should get at least
/// `min_per_thread` of them: tiny problems run on the calling thread.
pub fn threads_for(items: usize, threads: usize, min_per_thread: usize) -> usize {
    (items / min_per_thread.max(1)).clamp(1, threads.max(1))
}

/// Runs `f` over `0..items` split into contiguous ranges, one per thread, and returns the
/// results in range order. Each thread gets at least `min_per_thread` items (so small problems
/// run on the calling thread only).
pub fn par_ranges<R: Send>(
    items: usize,
    threads: usize,
    min_per_thread: usize,
    f: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    let t = threads_for(items, threads, min_per_thread);
    if t <= 1 {
        return vec![f(0..items)];
    }
    let per = items.div_ceil(t);
    let ranges: Vec<Range<usize>> = (0..t).map(|k| (k * per).min(items)..((k + 1) * per).min(items)).collect();
    std::thread::scope(|s| {
        let f = &f;
        let (first, rest) = ranges.split_first().expect("t > 1 ranges");
        let handles: Vec<_> = rest.iter().map(|r| s.spawn(move || f(r.clone()))).collect();
        let mut out = vec![f(first.clone())];
        out.extend(handles.into_iter().map(|h| h.join().expect("a hand-baseline worker panicked")));
        out
    })
}

/// Splits `out` into blocks of whole rows of `row_len` elements, one block per thread, and runs
/// `f(first_row, block)` on each; returns the results in row order. Threads get at least
/// `min_rows` rows each.
pub fn par_rows_mut<T: Send, R: Send>(
    out: &mut [T],
    row_len: usize,
    threads: usize,
    min_rows: usize,
    f: impl Fn(usize, &mut [T]) -> R + Sync,
) -> Vec<R> {
    let rows = out.len().checked_div(row_len).unwrap_or(0);
    let t = threads_for(rows, threads, min_rows);
    if t <= 1 {
        return vec![f(0, out)];
    }
    let per = rows.div_ceil(t);
    std::thread::scope(|s| {
        let f = &f;
        let mut chunks = out.chunks_mut(per * row_len).enumerate();
        let (_, first) = chunks.next().expect("at least one block");
        let handles: Vec<_> = chunks.map(|(k, c)| s.spawn(move || f(k * per, c))).collect();
        let mut results = vec![f(0, first)];
        results.extend(handles.into_iter().map(|h| h.join().expect("a hand-baseline worker panicked")));
        results
    })
}

/// Number of independent accumulators in reductions, so that float sums vectorise (a single
/// accumulator is a dependency chain the compiler may not reorder).
pub const LANES: usize = 8;

/// The sum of `f(i)` for `i` in `range`, in [`LANES`] interleaved partial sums.
#[inline(always)]
pub fn lane_sum<T: Real>(range: Range<usize>, mut f: impl FnMut(usize) -> T) -> T {
    let mut acc = [T::ZERO; LANES];
    let n = range.len();
    let full = n / LANES * LANES;
    let mut i = range.start;
    while i < range.start + full {
        for (l, a) in acc.iter_mut().enumerate() {
            *a += f(i + l);
        }
        i += LANES;
    }
    let mut tail = T::ZERO;
    for k in range.start + full..range.end {
        tail += f(k);
    }
    acc.iter().fold(tail, |s, &a| s + a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_everything_once_in_order() {
        for (items, threads, min) in [(10, 4, 1), (10, 4, 100), (1, 8, 1), (0, 3, 1), (1000, 3, 7)] {
            let parts = par_ranges(items, threads, min, |r| r.collect::<Vec<_>>());
            let all: Vec<usize> = parts.concat();
            assert_eq!(all, (0..items).collect::<Vec<_>>(), "{items} {threads} {min}");
        }
    }

    #[test]
    fn row_blocks_start_where_they_say() {
        let mut data = vec![0usize; 7 * 5];
        let firsts = par_rows_mut(&mut data, 5, 3, 1, |first, block| {
            for (r, row) in block.chunks_mut(5).enumerate() {
                row.fill(first + r);
            }
            first
        });
        assert_eq!(firsts[0], 0);
        for (r, row) in data.chunks(5).enumerate() {
            assert!(row.iter().all(|&x| x == r));
        }
    }

    #[test]
    fn lane_sums_add_every_term() {
        assert_eq!(lane_sum(0..100, |i| i as f64), 4950.0);
        assert_eq!(lane_sum(3..5, |i| i as f64), 7.0);
        assert_eq!(lane_sum(0..0, |i| i as f64), 0.0);
    }

    #[test]
    fn the_native_choice_is_the_widest_available_target() {
        assert!(Native::Baseline.available());
        let chosen = native();
        assert!(chosen.available());
        assert_eq!(native(), chosen, "detected once");
        assert_eq!(native_target(), chosen.name());
        for t in Native::ALL.into_iter().take_while(|t| *t != chosen) {
            assert!(!t.available(), "{} is wider than {} and available", t.name(), chosen.name());
        }
        #[cfg(not(target_arch = "x86_64"))]
        assert_eq!(chosen, Native::Baseline);
    }
}
