//! Where a repetition's time goes on a VM stack, from the trace's spans ([`vm_runtime::trace`]):
//! one more repetition after the timed ones runs with the recorder on, and its timed region
//! (marked by [`crate::benchmarks::vm_kit::timed`] as a span of category [`TIMED`]) is cut into recording,
//! flushing, compiling and running kernels. `--plot` draws it beside the speedups.

use serde::Serialize;
use vm_runtime::trace::Span;

/// The category of the span that marks a repetition's timed region.
pub const TIMED: &str = "timed";

/// Seconds of one repetition's timed region by what the VM did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimeSplit {
    /// The timed region.
    pub total: f64,
    /// The frontend building and submitting instructions, the runtime checking and queueing
    /// them, and reading results: everything outside the runtime's batches and the instructions
    /// it ran at once.
    pub recording: f64,
    /// Inside batches, neither compiling nor running kernels: fusion, the engine's passes,
    /// scheduling, memory management.
    pub flush: f64,
    /// Compiling kernels.
    pub compile: f64,
    /// Running kernels (matrix products and instructions run at once included).
    pub kernels: f64,
}

impl TimeSplit {
    /// The parts in the order they are drawn, with their names.
    pub fn parts(&self) -> [(&'static str, f64); 4] {
        [("recording", self.recording), ("flush", self.flush), ("compile", self.compile), ("kernels", self.kernels)]
    }

    /// The split of the timed region among `spans` (the last span of category [`TIMED`]); `None`
    /// without one.
    pub fn of(spans: &[Span]) -> Option<TimeSplit> {
        let region = spans.iter().rev().find(|s| s.cat == TIMED)?;
        let (start, end) = (region.start, region.start + region.seconds);
        let sum = |cat: &str| -> f64 {
            spans
                .iter()
                .filter(|s| s.cat == cat && s.start >= start && s.start + s.seconds <= end)
                .fold(0.0, |sum, s| sum + s.seconds)
        };
        let total = region.seconds;
        let (batches, direct) = (sum("batch"), sum("direct"));
        // A background compilation overlaps other work: no part exceeds the region.
        let compile = sum("compile").min(total);
        let kernels = (sum("kernel") + direct).min(total - compile);
        Some(TimeSplit {
            total,
            recording: (total - batches - direct).max(0.0),
            flush: (batches - compile - (kernels - direct)).max(0.0),
            compile,
            kernels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(cat: &'static str, start: f64, seconds: f64) -> Span {
        Span { name: cat.into(), cat, start, seconds, args: Vec::new() }
    }

    /// Batches hold compilations and kernels; what is outside batches and direct runs is
    /// recording; spans outside the timed region (the setup's) count for nothing.
    #[test]
    fn the_timed_region_is_cut_by_the_spans_inside_it() {
        let spans = [
            span("batch", 0.0, 5.0), // setup, before the region
            span("kernel", 1.0, 3.0),
            span("direct", 10.5, 0.5),
            span("compile", 12.0, 1.0),
            span("kernel", 13.0, 2.0),
            span("batch", 11.5, 4.0),
            span(TIMED, 10.0, 10.0),
        ];
        let s = TimeSplit::of(&spans).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(s.total, 10.0) && close(s.compile, 1.0) && close(s.kernels, 2.5), "{s:?}");
        assert!(close(s.flush, 1.0) && close(s.recording, 5.5), "{s:?}");
        let sum: f64 = s.parts().iter().map(|p| p.1).sum();
        assert!(close(sum, s.total), "{s:?}");
        assert_eq!(TimeSplit::of(&spans[..6]), None, "no timed region");
    }
}
