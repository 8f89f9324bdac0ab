//! # vm-ir: the vector bytecode
//!
//! The language every engine and frontend speaks, and nothing about running it:
//!
//! - [`dtype`], [`scalar`]: element types and constants, with the cast rules;
//! - [`view`]: bases, views, and exact overlap analysis;
//! - [`opcode`]: THE opcode table (ids are ABI);
//! - [`instr`]: instructions and batches, and their validation;
//! - [`extension`]: the operand rules of the extension methods the VM knows;
//! - [`asm`]: the text form of bytecode (parse, print, exact round trip);
//! - [`random`]: the counter-based random stream all engines share;
//! - [`semantics`]: element semantics shared by host engines (NumPy's division family, ...);
//! - [`error`]: the VM's one error type.
//!
//! The runtime and the component contract are `vm-runtime`; the fusion rule is `vm-fusion`.

// The opcode table is sorted by kind with a token muncher, one step per opcode.
#![recursion_limit = "512"]

pub mod asm;
pub mod dtype;
pub mod error;
pub mod extension;
pub mod instr;
pub mod opcode;
pub mod random;
pub mod scalar;
pub mod semantics;
pub mod view;

pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use instr::{Batch, Instruction, Operand};
pub use opcode::{AccumulateOp, BinaryOp, Kind, OpClass, Opcode, ReduceOp, SystemOp, TypeRule, UnaryOp};
pub use scalar::{Cast, Scalar};
pub use view::{Base, BaseId, Overlap, View};
