//! The stacks a run compares: named stacks of the config in effect, stacks of config files given
//! with `--config`, and the `eager` baseline (`node -> interp`, built from a config of its own so
//! that it exists whatever the user's config says). Also sums the JIT statistics the engines
//! report ([`Statistics`] in each [`ComponentInfo`]).

use serde::Serialize;
use std::path::{Path, PathBuf};
use vm_frontend::Vm;
use vm_host::{StackChoice, engines};
use vm_ir::Result;
use vm_runtime::component::{ComponentInfo, SettingValue};
use vm_runtime::config::{Config, Env};
use vm_runtime::stack::{Registry, StackPlan};
use vm_runtime::{Runtime, RuntimeOptions, Statistics};

/// The config of the `eager` baseline: the reference interpreter under the node manager.
pub const EAGER_CONFIG: &str = "stack = \"interp\"\n[stacks]\ninterp = [\"node\", \"interp\"]\n";

/// The source name of [`EAGER_CONFIG`] in errors.
pub const EAGER_SOURCE: &str = "<vm-bench eager baseline>";

/// One stack to measure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackSpec {
    /// How reports name it: the stack's name, prefixed by the config file's stem when one was
    /// given (`myconf:cpu`), or `eager` for the baseline.
    pub label: String,
    /// The config file; `None`: the lookup order (`VM_CONFIG`, `./vm.toml`, ..., embedded).
    pub config: Option<PathBuf>,
    /// The stack's name; `None`: the config's choice (`VM_STACK`, its `stack` key).
    pub stack: Option<String>,
    /// True for the `eager` baseline.
    pub eager: bool,
}

impl StackSpec {
    /// The `eager` baseline.
    pub fn eager() -> StackSpec {
        StackSpec { label: "eager".into(), config: None, stack: Some("interp".into()), eager: true }
    }

    /// Stack `stack` of `config` (either may be `None`, see the fields).
    pub fn new(config: Option<&Path>, stack: Option<&str>) -> StackSpec {
        let name = stack.map(str::to_string);
        let label = match (config, &name) {
            (None, Some(s)) => s.clone(),
            (None, None) => "default".into(),
            (Some(c), s) => {
                let stem = c.file_stem().map_or_else(|| c.display().to_string(), |s| s.to_string_lossy().into_owned());
                match s {
                    Some(s) => format!("{stem}:{s}"),
                    None => stem,
                }
            }
        };
        StackSpec { label, config: config.map(Path::to_path_buf), stack: name, eager: false }
    }

    /// Plans the stack in the process environment, with `threads` (when given) as the
    /// `threads` setting of every component that has one.
    pub fn plan(&self, threads: Option<usize>) -> Result<(StackPlan, Registry)> {
        let env = Env::process();
        let (mut plan, registry) = if self.eager {
            let registry = engines::registry()?;
            let config = Config::parse(EAGER_CONFIG, EAGER_SOURCE)?;
            let stack = config.select_stack(&StackChoice::Config, &env)?;
            (StackPlan::new(&config, &stack, &registry, &env)?, registry)
        } else {
            vm_host::stack::plan(self.config.as_deref(), &StackChoice::named_or_env(self.stack.as_deref()), &env)?
        };
        if let Some(n) = threads {
            for c in &mut plan.components {
                if let Some(v) = c.settings.values.get_mut("threads") {
                    *v = SettingValue {
                        value: toml::Value::Integer(n as i64),
                        source: "vm-bench --threads".into(),
                        line: None,
                    };
                }
            }
        }
        Ok((plan, registry))
    }

    /// Builds the stack (see [`StackSpec::plan`]) and returns a VM over it, with the plan.
    pub fn build(&self, threads: Option<usize>) -> Result<(Vm, StackPlan)> {
        self.build_with(threads, RuntimeOptions::from_env(&Env::process())?)
    }

    /// [`StackSpec::build`] with a runtime run by `options` instead of the environment's.
    pub fn build_with(&self, threads: Option<usize>, options: RuntimeOptions) -> Result<(Vm, StackPlan)> {
        let (plan, registry) = self.plan(threads)?;
        let top = plan.build(&registry)?;
        Ok((Vm::new(Runtime::new(top, options)), plan))
    }
}

/// The stacks of `config` (or of the config in effect) that can be built here, sorted by name:
/// their engines are compiled into this binary and their devices and libraries are present
/// (each is built once and shut down to find out).
pub fn available(config: Option<&Path>) -> Result<Vec<String>> {
    Ok(stack_names(config)?.into_iter().filter(|s| unavailable(config, s).is_none()).collect())
}

/// Every stack `config` (or the config in effect) names, sorted.
pub fn stack_names(config: Option<&Path>) -> Result<Vec<String>> {
    Ok(Config::discover(config, &Env::process(), engines::DEFAULT_CONFIG)?.stacks.keys().cloned().collect())
}

/// Why stack `name` of `config` cannot be built here, or `None` when it can.
pub fn unavailable(config: Option<&Path>, name: &str) -> Option<String> {
    match StackSpec::new(config, Some(name)).build(None) {
        Ok((vm, _)) => vm.shutdown().err().map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    }
}

/// JIT statistics the engines of a stack report, totals over the life of one VM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct EngineStats {
    /// Milliseconds spent compiling kernels.
    pub compile_ms: Option<f64>,
    /// Kernels found in the cache.
    pub cache_hits: Option<u64>,
    /// Kernels compiled (cache misses).
    pub cache_misses: Option<u64>,
}

impl EngineStats {
    /// True when nothing was reported (no component of the stack has a kernel cache).
    pub fn is_empty(&self) -> bool {
        self.compile_ms.is_none() && self.cache_hits.is_none() && self.cache_misses.is_none()
    }
}

impl From<Statistics> for EngineStats {
    fn from(s: Statistics) -> EngineStats {
        EngineStats {
            compile_ms: s.compile_seconds.map(|s| s * 1e3),
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
        }
    }
}

/// The JIT statistics of a stack: the sum of its components' [`Statistics`].
pub fn engine_stats(infos: &[ComponentInfo]) -> EngineStats {
    infos.iter().map(|i| i.statistics).sum::<Statistics>().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_config_and_the_stack() {
        assert_eq!(StackSpec::new(None, Some("cpu")).label, "cpu");
        assert_eq!(StackSpec::new(None, None).label, "default");
        assert_eq!(StackSpec::new(Some(Path::new("/x/fast.toml")), None).label, "fast");
        assert_eq!(StackSpec::new(Some(Path::new("fast.toml")), Some("cpu")).label, "fast:cpu");
        assert!(StackSpec::eager().eager);
    }

    #[test]
    fn eager_is_node_over_interp_and_threads_override_the_setting() {
        let (eager, _) = StackSpec::eager().plan(None).unwrap();
        let imps: Vec<&str> = eager.components.iter().map(|c| c.implementation.as_str()).collect();
        assert_eq!(imps, ["node", "interp"]);
        let (cpu, _) = StackSpec::new(None, Some("cpu")).plan(Some(3)).unwrap();
        let c = cpu.components.iter().find(|c| c.implementation == "cpu").unwrap();
        assert_eq!(c.settings.values["threads"].value, toml::Value::Integer(3));
    }

    #[test]
    fn statistics_add_up_over_components() {
        let info = |statistics: Statistics| ComponentInfo { statistics, ..ComponentInfo::default() };
        let hits = |h, m| Statistics { cache_hits: Some(h), cache_misses: Some(m), ..Statistics::default() };
        let s = engine_stats(&[info(Statistics::default()), info(hits(2, 0)), info(hits(3, 1))]);
        assert_eq!(s, EngineStats { compile_ms: None, cache_hits: Some(5), cache_misses: Some(1) });
        let timed = Statistics { compile_seconds: Some(0.0015), ..hits(1, 1) };
        assert_eq!(engine_stats(&[info(timed)]).compile_ms, Some(1.5));
        assert!(engine_stats(&[info(Statistics { batches: 3, ..Statistics::default() })]).is_empty());
    }
}
