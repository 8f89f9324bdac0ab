//! The kernel compiler: a kernel of the batch becomes a [`program::Program`] (its structure, the
//! cache key) and a [`program::Binding`] (addresses, sizes, strides, constants); the program is
//! compiled once with Cranelift ([`codegen`], its loops and vectors [`simd`] and [`schedule`],
//! each operation [`emit`]) and kept by structure ([`cache`], with its tiers), its code named for
//! profilers ([`perfmap`]).

pub mod cache;
pub mod codegen;
pub mod emit;
pub mod perfmap;
pub mod program;
pub mod schedule;
pub mod simd;
