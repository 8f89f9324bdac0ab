//! The implementations built into this library, and building a runtime from a configuration.

use crate::plugin;
use std::path::Path;
use vm_ir::{Error, Result};
use vm_runtime::config::{Config, Env};
use vm_runtime::stack::{Registry, StackPlan};
use vm_runtime::{Implementation, Runtime, RuntimeOptions};

/// The built-in configuration (`config/default.toml`), used when no config file is found.
pub const DEFAULT_CONFIG: &str = vm_config::DEFAULT;

/// Every component implementation compiled into this build, sorted by name. (`cluster` is
/// always registered; without the `mpi` feature building it reports that MPI is missing.)
pub fn implementations() -> Vec<Implementation> {
    let mut all = vec![
        vm_node::IMPLEMENTATION,
        vm_interp::IMPLEMENTATION,
        vm_cpu::IMPLEMENTATION,
        vm_cluster::IMPLEMENTATION,
        vm_opencl::IMPLEMENTATION,
    ];
    all.sort_by_key(|i| i.name);
    all
}

/// The registry of [`implementations`].
pub fn registry() -> Result<Registry> {
    Registry::with(&implementations())
}

/// Names of the implementations compiled in, sorted (`vm info` lists them).
pub fn engines_compiled_in() -> Vec<&'static str> {
    implementations().iter().map(|i| i.name).collect()
}

/// Plans the stack: the config at `config_path` (or the one found by the lookup order), the
/// stack named `stack` (or the one `VM_STACK` or the config picks), with the
/// `VM_<COMPONENT>_<KEY>` overrides of `env`.
pub fn plan(config_path: Option<&Path>, stack: Option<&str>, env: &Env) -> Result<StackPlan> {
    plan_with_registry(config_path, stack, env).map(|(plan, _)| plan)
}

/// [`plan`], with the registry that builds the plan: the built-in implementations and the
/// plugins the chosen stack loads ([`plugin::register_config_plugins`]).
pub fn plan_with_registry(config_path: Option<&Path>, stack: Option<&str>, env: &Env) -> Result<(StackPlan, Registry)> {
    let Some(stack) = stack else {
        return plan_config(config_path, env);
    };
    // An empty name would read as an unset VM_STACK below and quietly build the configuration's
    // own choice; a caller who names a stack means one.
    if stack.is_empty() {
        return Err(Error::Config {
            file: REQUESTED_STACK.into(),
            line: None,
            message: "the requested stack name is empty: name one of the configuration's [stacks], or pass no \
                      name (NULL) to build the stack the configuration chooses"
                .into(),
        });
    }
    // A stack asked for by name is chosen exactly as `VM_STACK` would choose it; errors about
    // the choice then say who asked.
    let env = env.clone().with_var("VM_STACK", stack);
    plan_config(config_path, &env).map_err(|e| match e {
        Error::Config { file, line, message } if file.ends_with("VM_STACK") => Error::Config {
            file: REQUESTED_STACK.into(),
            line,
            message: message.replace(&format!("VM_STACK={stack}"), &format!("the requested stack `{stack}`")),
        },
        e => e,
    })
}

/// Finds the config, loads the plugins of the stack it chooses and plans that stack.
fn plan_config(config_path: Option<&Path>, env: &Env) -> Result<(StackPlan, Registry)> {
    let mut config = Config::discover(config_path, env, DEFAULT_CONFIG)?;
    let builtins = implementations();
    let plugins = plugin::register_config_plugins(&mut config, &builtins, env)?;
    let registry = Registry::with(&[builtins, plugins].concat())?;
    Ok((StackPlan::new(&config, &registry, env)?, registry))
}

/// The source named in errors about a stack asked for by name (`vm_init_stack`, `--stack`).
pub const REQUESTED_STACK: &str = "<requested stack>";

/// Plans and builds the stack (see [`plan`]) in the process environment and returns a runtime
/// over it (`VM_TRACE` from the environment) with the plan it was built from.
pub fn build_runtime(config_path: Option<&Path>, stack: Option<&str>) -> Result<(Runtime, StackPlan)> {
    crate::tune_allocator();
    let env = Env::process();
    let (plan, registry) = plan_with_registry(config_path, stack, &env)?;
    let top = plan.build(&registry)?;
    Ok((Runtime::new(top, RuntimeOptions::from_env(&env)?), plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_holds_the_engines_compiled_in() {
        let r = registry().unwrap();
        assert_eq!(r.names(), engines_compiled_in());
        assert!(engines_compiled_in().contains(&"interp"));
        assert!(engines_compiled_in().contains(&"node"));
    }

    #[test]
    fn the_embedded_default_plans() {
        let plan = plan(None, None, &Env::new().with_cwd(std::env::temp_dir())).unwrap();
        assert!(!plan.components.is_empty());
        let interp = super::plan(None, Some("interp"), &Env::new().with_cwd(std::env::temp_dir())).unwrap();
        assert_eq!(interp.stack, "interp");
        assert_eq!(interp.components.last().unwrap().implementation, "interp");
        let e = super::plan(None, Some("nope"), &Env::new().with_cwd(std::env::temp_dir())).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(REQUESTED_STACK) && text.contains("the requested stack `nope`"), "{text}");
        assert!(!text.contains("VM_STACK="), "{text}");
    }

    #[test]
    fn an_empty_stack_name_is_a_config_error() {
        let e = plan(None, Some(""), &Env::new().with_cwd(std::env::temp_dir())).unwrap_err();
        assert!(matches!(&e, Error::Config { file, .. } if file == REQUESTED_STACK), "{e}");
        assert!(e.to_string().contains("the requested stack name is empty"), "{e}");
    }
}
