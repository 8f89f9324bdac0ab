//! # vm-testkit: what the engines' tests share
//!
//! Every engine is tested against the reference engine `interp` on the same bytecode. This
//! crate is that bytecode's one source and the one definition of "agrees". It is a
//! dev-dependency only (`publish = false`): no production crate depends on it, and it depends
//! on nothing but the VM's own crates (`vm-ir`, `vm-runtime`, `vm-fusion`) and the oracle
//! `vm-interp`, so every engine's tests may use it. It lives under `tests/`, beside the
//! cross-crate tests, rather than among the runtime crates of `vm/`: it sits above the engine
//! it runs as the oracle, and only tests reach it.
//!
//! - [`rng`]: the small deterministic generator behind every draw;
//! - [`data`]: input data (small, full-range, arbitrary-bit, tie-rich and moderate values) and
//!   the special float values;
//! - [`generate`]: random programs drawn from the opcode table ([`generate::random_program`]),
//!   over roomy bases or bases of uneven sizes, in one batch or several with host writes;
//! - [`runs`]: random programs shaped like a frontend's runs of element-wise instructions over
//!   temporaries freed as soon as they are dead;
//! - [`per_opcode`]: one small program per built-in opcode;
//! - [`program`]: a program's bases and steps, running it on a component, and the differential
//!   run of a subject against the reference;
//! - [`agree`]: what agreeing with the reference means (bit for bit, exact, within ulps,
//!   within a relative tolerance) and the comparison of two memories;
//! - [`special`]: one batch applying every float element-wise opcode to every special value;
//! - [`fixtures`]: bases, views, the layouts of a shape, output slices.

pub mod agree;
pub mod data;
pub mod fixtures;
pub mod generate;
pub mod per_opcode;
pub mod program;
pub mod rng;
pub mod runs;
pub mod special;

pub use agree::{Agree, Check, Tolerance, compare};
pub use data::Data;
pub use generate::{Bases, ProgramSpec, random_program};
pub use program::{Program, Step, differential, random_program_count, random_program_failures, run};
pub use rng::Rng;
pub use special::SpecialValues;
