//! # vm-runtime: running bytecode on a stack of components
//!
//! What sits between a frontend and the engines, over the bytecode of `vm-ir`:
//!
//! - [`memory`]: host buffers, allocated lazily;
//! - [`interrupt`]: stopping a flush part way;
//! - [`component`]: the trait every manager and engine implements;
//! - [`settings`](mod@settings): component settings, declared once per component with [`settings!`];
//! - [`statistics`]: what a component did, as numbers;
//! - [`config`]: the configuration file (stacks and component tables) and the environment;
//! - [`stack`]: the registry of implementations and the planning and building of a stack;
//! - [`runtime`]: live bases, batching, the sync/discard/free protocol, extensions.
//!
//! This crate depends on no engine; engines depend on it.

pub mod component;
pub mod config;
pub mod interrupt;
pub mod memory;
pub mod periods;
pub mod runtime;
pub mod settings;
pub mod stack;
pub mod statistics;
pub mod trace;

pub use component::{Component, ComponentInfo, Implementation, ReductionOrder, SettingSpec, Settings};
pub use config::{Config, Env, StackChoice};
pub use interrupt::Interrupt;
pub use memory::{Buffer, HostMemory};
pub use runtime::{Runtime, RuntimeOptions};
pub use stack::{PlannedComponent, Registry, StackPlan};
pub use statistics::Statistics;
