//! The contract every manager (VEM) and engine (VE) of a stack implements, and the settings and
//! constructor each one registers under its implementation name.

use crate::Result;
use crate::instr::Instruction;
use crate::memory::HostMemory;
use crate::opcode::Opcode;
pub use crate::settings::{SettingSpec, SettingValue, Settings};

/// A manager or engine in a stack. The top of the stack receives every batch; a component may
/// hold a child (the next component of its stack) to route work to, or to fall back on for
/// instructions it cannot run.
pub trait Component: Send {
    /// The implementation name (`node`, `interp`, `cpu`, ...).
    fn name(&self) -> &str;

    /// Executes a validated batch, in order, reading and writing host data in `mem`. After it
    /// returns, every base synced by the batch is current in `mem`.
    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()>;

    /// Announces the extension method `name` under `opcode`. Returns true when this component or
    /// one below it implements the method.
    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool>;

    /// This component and those below it, top first, for `vm info` and profiles.
    fn describe(&self) -> Vec<ComponentInfo>;

    /// The order in which this component (with those below it) combines the elements of a
    /// floating-point reduction. A manager that splits reductions (the cluster) keeps the
    /// reference order only when its child does.
    fn reduction_order(&self) -> ReductionOrder {
        ReductionOrder::Sequential
    }

    /// Releases resources; called once, before the component is dropped. Errors are reported,
    /// but shutdown of the rest of the stack continues.
    fn shutdown(&mut self) -> Result<()> {
        Ok(())
    }
}

/// How a component combines the elements of a floating-point reduction (integer and logical
/// reductions are exact in any order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReductionOrder {
    /// Left to right along the axis, as the reference engine does: results are bit for bit
    /// the reference's.
    Sequential,
    /// In any order (block partials, threads, work-group trees): results may differ from the
    /// reference's by the reassociation of the sum or product.
    Reassociated,
}

/// What `vm info` prints about one component.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentInfo {
    /// The config table naming this component (`node`, `gpu0`, ...).
    pub name: String,
    /// The implementation (`node`, `opencl`, ...).
    pub implementation: String,
    /// Effective settings, key and value as text.
    pub settings: Vec<(String, String)>,
    /// Free-form facts worth printing (devices found, statistics).
    pub notes: Vec<String>,
}

/// Builds a component from its settings and its child (the rest of the stack below it, if any).
pub type Constructor = fn(&Settings, Option<Box<dyn Component>>) -> Result<Box<dyn Component>>;

/// A component implementation, as registered with the stack builder.
#[derive(Debug, Clone, Copy)]
pub struct Implementation {
    /// The name stacks use (`impl` key or table name).
    pub name: &'static str,
    /// One line saying what it is.
    pub summary: &'static str,
    /// Whether it needs a child (managers do; engines do not, but may take one as fallback).
    pub needs_child: bool,
    /// The settings it accepts; any other key is a config error.
    pub settings: &'static [SettingSpec],
    /// Its constructor.
    pub construct: Constructor,
}
