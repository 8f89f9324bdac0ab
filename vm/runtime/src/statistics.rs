//! What a component did, as numbers: the statistics `vm info`, the engines' profiles and the
//! benchmark harness read, instead of parsing them out of prose.

use std::fmt;

/// What one component did since it was built ([`crate::Component::statistics`]).
///
/// Plain numbers, owned, no pointers: a C ABI can copy it out as it is. A count the component
/// does not keep stays 0; the kernel-cache figures are `None` in a component without a kernel
/// cache, so that "no cache" and "a cache that was never used" read differently.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Statistics {
    /// Batches executed.
    pub batches: u64,
    /// Kernels run: formed from a batch and run (cpu), launched on the device (opencl).
    pub kernels: u64,
    /// Instructions run inside kernels, fused with others.
    pub fused_instructions: u64,
    /// Temporaries contracted: arrays a kernel computes and consumes without storing them.
    pub contracted: u64,
    /// Kernels found ready in the component's cache.
    pub cache_hits: Option<u64>,
    /// Kernels the cache lacked, so compiled (or loaded from a cache on disk).
    pub cache_misses: Option<u64>,
    /// Seconds spent making kernels: compiling them, or loading them from a cache on disk.
    pub compile_seconds: Option<f64>,
    /// Bytes kernels read and wrote (each operand's distinct elements once).
    pub bytes_moved: u64,
    /// Instructions handed to the child because this component does not run them (its
    /// fallback).
    pub fallbacks: u64,
}

/// The statistics of two components together (a stack's totals): counts add, and a cache
/// figure is `None` only when it is `None` in both.
impl std::ops::Add for Statistics {
    type Output = Statistics;

    fn add(self, other: Statistics) -> Statistics {
        fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        }
        Statistics {
            batches: self.batches + other.batches,
            kernels: self.kernels + other.kernels,
            fused_instructions: self.fused_instructions + other.fused_instructions,
            contracted: self.contracted + other.contracted,
            cache_hits: sum(self.cache_hits, other.cache_hits),
            cache_misses: sum(self.cache_misses, other.cache_misses),
            compile_seconds: sum(self.compile_seconds, other.compile_seconds),
            bytes_moved: self.bytes_moved + other.bytes_moved,
            fallbacks: self.fallbacks + other.fallbacks,
        }
    }
}

impl Statistics {
    /// True when the component reports nothing (every count 0, no cache).
    pub fn is_empty(&self) -> bool {
        *self == Statistics::default()
    }
}

impl std::iter::Sum for Statistics {
    fn sum<I: Iterator<Item = Statistics>>(iter: I) -> Statistics {
        iter.fold(Statistics::default(), |a, b| a + b)
    }
}

/// One line: `3 batches, 4 kernels (10 instructions fused, 2 temporaries contracted), cache hits
/// 3 / misses 1, compile 1.250 ms, 4096 bytes moved, 0 fallbacks`; the cache and compile parts
/// only when the component has a cache.
impl fmt::Display for Statistics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} batches, {} kernels ({} instructions fused, {} temporaries contracted)",
            self.batches, self.kernels, self.fused_instructions, self.contracted
        )?;
        if self.cache_hits.is_some() || self.cache_misses.is_some() {
            let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
            write!(f, ", cache hits {} / misses {}", n(self.cache_hits), n(self.cache_misses))?;
        }
        if let Some(s) = self.compile_seconds {
            write!(f, ", compile {:.3} ms", s * 1e3)?;
        }
        write!(f, ", {} bytes moved, {} fallbacks", self.bytes_moved, self.fallbacks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_add_up_and_print() {
        let cpu = Statistics {
            batches: 2,
            kernels: 3,
            fused_instructions: 7,
            contracted: 1,
            cache_hits: Some(2),
            cache_misses: Some(1),
            compile_seconds: Some(0.00125),
            bytes_moved: 4096,
            fallbacks: 1,
        };
        let interp = Statistics { batches: 1, ..Statistics::default() };
        assert!(Statistics::default().is_empty() && !interp.is_empty());
        let total: Statistics = [cpu, interp].into_iter().sum();
        assert_eq!(total, Statistics { batches: 3, ..cpu });
        assert_eq!((interp + interp).cache_hits, None);
        assert_eq!(
            cpu.to_string(),
            "2 batches, 3 kernels (7 instructions fused, 1 temporaries contracted), cache hits 2 / misses 1, \
             compile 1.250 ms, 4096 bytes moved, 1 fallbacks"
        );
        assert_eq!(
            interp.to_string(),
            "1 batches, 0 kernels (0 instructions fused, 0 temporaries contracted), 0 bytes moved, 0 fallbacks"
        );
    }
}
