//! # vm-node: the node manager (VEM)
//!
//! The `node` component manages one machine. For now it routes: every batch goes to its child,
//! the next component of the stack, and so do extension announcements and the shutdown (the
//! [`Component`] trait's forwarding); `vm info` shows it above its child. Later it is where a node decides which of its children runs what
//! (e.g. an OpenCL engine with a CPU fallback below it).
//!
//! ```toml
//! [stacks]
//! cpu = ["node", "cpu"]   # node routes to cpu
//! ```

use vm_ir::{Error, Instruction, Result};
use vm_runtime::component::Settings;
use vm_runtime::{Component, ComponentInfo, HostMemory, Implementation, ReductionOrder};

/// The node manager: forwards everything to its child (see the crate documentation).
pub struct Node {
    /// The config table naming this component (`node`, or a named one).
    component: String,
    /// Its effective settings, for `vm info`.
    settings: Vec<(String, String)>,
    /// The rest of the stack.
    child: Box<dyn Component>,
}

impl Node {
    /// A node named `node` with default settings above `child`.
    pub fn new(child: Box<dyn Component>) -> Node {
        Node { component: "node".into(), settings: Vec::new(), child }
    }

    /// A node with `settings` (its name in the stack included) above `child`.
    pub fn with_settings(settings: &Settings, child: Box<dyn Component>) -> Result<Node> {
        Ok(Node { component: settings.component.clone(), settings: settings.to_pairs(), child })
    }
}

impl Component for Node {
    fn name(&self) -> &str {
        IMPLEMENTATION.name
    }

    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        self.child.execute(batch, mem)
    }

    fn child(&self) -> Option<&(dyn Component + 'static)> {
        Some(self.child.as_ref())
    }

    fn direct(&mut self) -> Option<&mut (dyn Component + 'static)> {
        self.child.direct()
    }

    fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
        Some(self.child.as_mut())
    }

    fn info(&self) -> ComponentInfo {
        ComponentInfo {
            name: self.component.clone(),
            implementation: IMPLEMENTATION.name.into(),
            settings: self.settings.clone(),
            ..ComponentInfo::default()
        }
    }

    fn reduction_order(&self) -> ReductionOrder {
        self.child.reduction_order()
    }
}

fn construct(settings: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
    let child = child.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "the node manager `{}` needs a component below it in the stack",
            settings.component
        ))
    })?;
    Ok(Box::new(Node::with_settings(settings, child)?))
}

/// The `node` implementation, for the stack builder's registry.
pub const IMPLEMENTATION: Implementation = Implementation {
    name: "node",
    summary: "node manager: routes every batch to the component below it",
    needs_child: true,
    settings: &[],
    construct,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use vm_ir::{Base, BaseId, DType, Opcode, View};

    /// What the mock saw, shared with the test.
    #[derive(Default, Debug)]
    struct Log {
        batches: Vec<Vec<Instruction>>,
        extensions: Vec<(String, Opcode)>,
        shutdowns: usize,
    }

    /// A leaf engine that records every call.
    struct Recorder(Arc<Mutex<Log>>);

    impl Component for Recorder {
        fn name(&self) -> &str {
            "recorder"
        }

        fn execute(&mut self, batch: &[Instruction], _mem: &mut HostMemory) -> Result<()> {
            self.0.lock().unwrap().batches.push(batch.to_vec());
            if batch.iter().any(|i| i.opcode == Opcode::Discard) {
                return Err(Error::Execution("recorder refuses discard".into()));
            }
            Ok(())
        }

        fn register_extension(&mut self, name: &str, opcode: Opcode) -> Result<bool> {
            self.0.lock().unwrap().extensions.push((name.into(), opcode));
            Ok(name == "matmul")
        }

        fn info(&self) -> ComponentInfo {
            ComponentInfo {
                name: "rec".into(),
                implementation: "recorder".into(),
                notes: vec!["a mock".into()],
                ..ComponentInfo::default()
            }
        }

        fn statistics(&self) -> vm_runtime::Statistics {
            vm_runtime::Statistics { batches: self.0.lock().unwrap().batches.len() as u64, ..Default::default() }
        }

        fn reduction_order(&self) -> ReductionOrder {
            ReductionOrder::Reassociated
        }

        fn shutdown(&mut self) -> Result<()> {
            self.0.lock().unwrap().shutdowns += 1;
            Ok(())
        }
    }

    fn recorder() -> (Box<dyn Component>, Arc<Mutex<Log>>) {
        let log = Arc::new(Mutex::new(Log::default()));
        (Box::new(Recorder(log.clone())), log)
    }

    fn sync_of(id: u64) -> Instruction {
        let base = Base { id: BaseId(id), dtype: DType::F64, nelem: 4 };
        Instruction::new(Opcode::Sync, [View::of_base(base).into()])
    }

    #[test]
    fn forwards_batches_in_order_and_errors_unchanged() {
        let (child, log) = recorder();
        let mut node = Node::new(child);
        let mut mem = HostMemory::new();
        node.execute(&[sync_of(1), sync_of(2)], &mut mem).unwrap();
        node.execute(&[], &mut mem).unwrap();
        node.execute(&[sync_of(3)], &mut mem).unwrap();
        let base = Base { id: BaseId(9), dtype: DType::F64, nelem: 4 };
        let discard = Instruction::new(Opcode::Discard, [View::of_base(base).into()]);
        let e = node.execute(&[discard], &mut mem).unwrap_err();
        assert_eq!(e, Error::Execution("recorder refuses discard".into()));
        let log = log.lock().unwrap();
        assert_eq!(log.batches.len(), 4);
        assert_eq!(log.batches[0], [sync_of(1), sync_of(2)]);
        assert!(log.batches[1].is_empty());
        assert_eq!(log.batches[2], [sync_of(3)]);
    }

    #[test]
    fn forwards_extensions_and_their_answer() {
        let (child, log) = recorder();
        let mut node = Node::new(child);
        assert!(node.register_extension("matmul", Opcode::Extension(0)).unwrap());
        assert!(!node.register_extension("fft", Opcode::Extension(1)).unwrap());
        let log = log.lock().unwrap();
        assert_eq!(log.extensions, [("matmul".into(), Opcode::Extension(0)), ("fft".into(), Opcode::Extension(1))]);
    }

    #[test]
    fn describes_itself_then_its_child() {
        let (child, _) = recorder();
        let node = Node::with_settings(&Settings::from_pairs("node0", &[]), child).unwrap();
        let info = node.describe();
        assert_eq!(info.len(), 2);
        assert_eq!((info[0].name.as_str(), info[0].implementation.as_str()), ("node0", "node"));
        assert_eq!((info[1].name.as_str(), info[1].notes.as_slice()), ("rec", &["a mock".to_string()][..]));
        assert_eq!(node.name(), "node");
        assert_eq!(node.child().map(|c| c.name()), Some("recorder"));
        assert_eq!(node.reduction_order(), ReductionOrder::Reassociated, "the child's order");
    }

    #[test]
    fn describe_carries_each_components_statistics() {
        let (child, _) = recorder();
        let mut node = Node::new(child);
        node.execute(&[sync_of(1)], &mut HostMemory::new()).unwrap();
        let info = node.describe();
        assert!(info[0].statistics.is_empty());
        assert_eq!(info[1].statistics.batches, 1);
    }

    #[test]
    fn shutdown_reaches_the_child() {
        let (child, log) = recorder();
        let mut node = Node::new(child);
        node.shutdown().unwrap();
        assert_eq!(log.lock().unwrap().shutdowns, 1);
    }

    #[test]
    fn implementation_builds_above_a_child_and_refuses_none() {
        const { assert!(IMPLEMENTATION.needs_child && IMPLEMENTATION.settings.is_empty()) };
        let settings = Settings::from_pairs("node", &[]);
        let (child, log) = recorder();
        let mut top = (IMPLEMENTATION.construct)(&settings, Some(child)).unwrap();
        top.execute(&[sync_of(5)], &mut HostMemory::new()).unwrap();
        assert_eq!(log.lock().unwrap().batches.len(), 1);
        let e = (IMPLEMENTATION.construct)(&settings, None).err().unwrap();
        assert!(e.to_string().contains("needs a component below it"), "{e}");
    }

    #[test]
    fn builds_through_the_registry() {
        fn leaf(_: &Settings, _: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
            Ok(recorder().0)
        }
        let leaf_impl =
            Implementation { name: "recorder", summary: "mock", needs_child: false, settings: &[], construct: leaf };
        let registry = vm_runtime::Registry::with(&[IMPLEMENTATION, leaf_impl]).unwrap();
        let config = vm_runtime::Config::parse("[stacks]\ns = [\"node\", \"recorder\"]\n", "t.toml").unwrap();
        let env = vm_runtime::Env::new();
        let stack = config.select_stack(&vm_runtime::StackChoice::Config, &env).unwrap();
        let plan = vm_runtime::StackPlan::new(&config, &stack, &registry, &env).unwrap();
        let top = plan.build(&registry).unwrap();
        let names: Vec<_> = top.describe().into_iter().map(|i| i.implementation).collect();
        assert_eq!(names, ["node", "recorder"]);
    }
}
