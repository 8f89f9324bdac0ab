//! What the compiled code calls and what runs without compiled code: block routines for the
//! operations Cranelift has no instruction for ([`calls`], [`fastmath`], [`wide`], [`philox`]),
//! instructions run as plain Rust ([`native`]: scans, gathers, scatters, sorts, searches;
//! [`positions`]: reductions to a position), matrix products ([`gemm`]), reading and writing
//! views ([`views`]) and combining reduction partials ([`reduce`]).

pub mod calls;
pub mod fastmath;
pub mod gemm;
pub mod native;
pub mod philox;
pub mod positions;
pub mod reduce;
pub mod views;
pub mod wide;
