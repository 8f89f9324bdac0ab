//! # vm-core: the vector VM's language and contracts
//!
//! Everything every engine and frontend agrees on, and nothing engine-specific:
//!
//! - [`dtype`], [`scalar`]: element types and constants, with the cast rules;
//! - [`view`]: bases, views, and exact overlap analysis;
//! - [`opcode`]: THE opcode table (ids are ABI);
//! - [`instr`]: instructions and batches, and their validation;
//! - [`asm`]: the text form of bytecode (parse, print, exact round trip);
//! - [`random`]: the counter-based random stream all engines share;
//! - [`semantics`]: element semantics shared by host engines (NumPy's division family, ...);
//! - [`memory`]: host buffers, allocated lazily;
//! - [`component`]: the trait every manager and engine implements;
//! - [`settings`](mod@settings): component settings, declared once per component with [`settings!`];
//! - [`statistics`]: what a component did, as numbers;
//! - [`runtime`]: live bases, batching, the sync/discard/free protocol, extensions;
//!
//! This crate depends on no engine; engines depend on it.

pub mod asm;
pub mod component;
pub mod config;
pub mod dtype;
pub mod error;
pub mod extension;
pub mod frontend;
pub mod instr;
pub mod kernel;
pub mod memory;
pub mod opcode;
pub mod random;
pub mod runtime;
pub mod scalar;
pub mod semantics;
pub mod settings;
pub mod stack;
pub mod statistics;
pub mod view;

pub use component::{Component, ComponentInfo, Implementation, ReductionOrder, SettingSpec, Settings};
pub use config::{Config, Env};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use instr::{Batch, Instruction, Operand};
pub use memory::{Buffer, HostMemory};
pub use opcode::{Kind, Opcode, TypeRule};
pub use runtime::{Runtime, RuntimeOptions};
pub use scalar::{Cast, Scalar};
pub use stack::{PlannedComponent, Registry, StackPlan};
pub use statistics::Statistics;
pub use view::{Base, BaseId, Overlap, View};
