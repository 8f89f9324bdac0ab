//! The contract every manager (VEM) and engine (VE) of a stack implements, and the settings and
//! constructor each one registers under its implementation name.

use crate::memory::HostMemory;
pub use crate::settings::{SettingSpec, SettingValue, Settings};
use crate::statistics::Statistics;
use vm_ir::Result;
use vm_ir::instr::Instruction;
use vm_ir::opcode::Opcode;

/// A manager or engine in a stack. The top of the stack receives every batch; a component may
/// hold a child (the next component of its stack) to route work to, or to fall back on for
/// instructions it cannot run.
///
/// What goes down the stack is written once, in the provided methods: announcing extension
/// methods, describing the stack and shutting it down reach the child through
/// [`Component::child_mut`] / [`Component::child`], so a component with a child says which it
/// is and implements only what it does itself ([`Component::info`], [`Component::statistics`],
/// [`Component::release`]).
pub trait Component: Send {
    /// The implementation name (`node`, `interp`, `cpu`, ...).
    fn name(&self) -> &str;

    /// Executes a validated batch, in order, reading and writing host data in `mem`. After it
    /// returns, every base synced by the batch is current in `mem`.
    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()>;

    /// The component below this one (a manager's, or an engine's fallback), if any. A
    /// component holding a child must return it: the provided methods reach the rest of the
    /// stack through it.
    fn child(&self) -> Option<&(dyn Component + 'static)> {
        None
    }

    /// [`Component::child`], mutably.
    fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
        None
    }

    /// The component that runs an instruction at once, in the host memory every batch gets
    /// ([`Component::execute`]'s `mem`), when its operands are current there and the pending
    /// batch does not touch them: the runtime's direct execution of small instructions
    /// ([`crate::Runtime::submit`]). A stack computing in host memory offers its interpreter;
    /// `None` (the default) where the data live elsewhere (a device, other ranks) or behind a
    /// plugin boundary. A component whose state depends on bases (copies, recipes, cached
    /// values) is told of every base the runtime writes this way by a DISCARD before the next
    /// batch that names it.
    fn direct(&mut self) -> Option<&mut (dyn Component + 'static)> {
        None
    }

    /// Runs one instruction the runtime checked, as the direct executor ([`Component::direct`]):
    /// the same as [`Component::execute`] of a batch of it, which is the default. A component
    /// may skip what the runtime has done already (validation).
    fn execute_direct(&mut self, instr: &Instruction, mem: &mut HostMemory) -> Result<()> {
        self.execute(std::slice::from_ref(instr), mem)
    }

    /// Announces the extension method `name` under `opcode`. Returns true when this component or
    /// one below it implements the method. By default the child answers ([`forward_extension`]);
    /// a component that implements methods itself overrides this and forwards the others.
    fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
        forward_extension(self, name, opcode)
    }

    /// What `vm info` prints about this component alone (its
    /// [`statistics`](ComponentInfo::statistics) are filled in by [`Component::describe`]).
    fn info(&self) -> ComponentInfo;

    /// What this component alone did since it was built.
    fn statistics(&self) -> Statistics {
        Statistics::default()
    }

    /// This component and those below it, top first, each with its statistics, for `vm info`,
    /// profiles and benchmarks.
    fn describe(&self) -> Vec<ComponentInfo> {
        let mut all = vec![ComponentInfo { statistics: self.statistics(), ..self.info() }];
        if let Some(child) = self.child() {
            all.extend(child.describe());
        }
        all
    }

    /// The order in which this component (with those below it) combines the elements of a
    /// floating-point reduction. A manager that splits reductions (the cluster) keeps the
    /// reference order only when its child does.
    fn reduction_order(&self) -> ReductionOrder {
        ReductionOrder::Sequential
    }

    /// Releases this component's own resources (and prints its profile, when asked to);
    /// [`Component::shutdown`] calls it before shutting the child down.
    fn release(&mut self) -> Result<()> {
        Ok(())
    }

    /// Shuts this component and those below it down; called once, before the stack is
    /// dropped. Errors are reported (the first one), but the rest of the stack is still shut
    /// down.
    fn shutdown(&mut self) -> Result<()> {
        let mine = self.release();
        let below = self.child_mut().map_or(Ok(()), |c| c.shutdown());
        mine.and(below)
    }
}

/// The child's answer to [`Component::register_extension`], or `false` without a child: the
/// default of that method, for the overrides to forward what they do not implement themselves.
pub fn forward_extension<C: Component + ?Sized>(component: &mut C, name: &str, opcode: Opcode) -> Result<bool> {
    component.child_mut().map_or(Ok(false), |c| c.register_extension(name, opcode))
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
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ComponentInfo {
    /// The config table naming this component (`node`, `gpu0`, ...).
    pub name: String,
    /// The implementation (`node`, `opencl`, ...).
    pub implementation: String,
    /// Effective settings, key and value as text.
    pub settings: Vec<(String, String)>,
    /// Free-form facts worth printing (devices found, threads started).
    pub notes: Vec<String>,
    /// What it did ([`Component::statistics`]).
    pub statistics: Statistics,
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
