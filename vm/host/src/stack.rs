//! Choosing, planning and building a stack: the configuration in effect, the stack a
//! [`StackChoice`] picks in it (decided once, by [`Config::select_stack`]), the plugins that
//! stack loads, and a runtime over it.

use crate::{engines, plugin};
use std::path::Path;
use vm_ir::Result;
use vm_runtime::config::{Config, Env, StackChoice};
use vm_runtime::stack::{Registry, StackPlan};
use vm_runtime::{Runtime, RuntimeOptions};

/// Plans the stack `choice` picks in the config at `config_path` (or the one the lookup order
/// finds, else the embedded default), with the `VM_<COMPONENT>_<KEY>` overrides of `env`; and
/// returns the registry that builds the plan: the built-in implementations and the plugins the
/// chosen stack loads ([`plugin::register_config_plugins`]).
pub fn plan(config_path: Option<&Path>, choice: &StackChoice, env: &Env) -> Result<(StackPlan, Registry)> {
    let mut config = Config::discover(config_path, env, engines::DEFAULT_CONFIG)?;
    let stack = config.select_stack(choice, env)?;
    let builtins = engines::implementations();
    let plugins = plugin::register_config_plugins(&mut config, &stack.def, &builtins)?;
    let registry = Registry::with(&[builtins, plugins].concat())?;
    Ok((StackPlan::new(&config, &stack, &registry, env)?, registry))
}

/// Plans and builds the stack `choice` picks (see [`plan`]) in the process environment and
/// returns a runtime over it (`VM_TRACE` from the environment) with the plan it was built from.
pub fn build_runtime(config_path: Option<&Path>, choice: &StackChoice) -> Result<(Runtime, StackPlan)> {
    crate::tune_allocator();
    let env = Env::process();
    let (plan, registry) = plan(config_path, choice, &env)?;
    let top = plan.build(&registry)?;
    Ok((Runtime::new(top, RuntimeOptions::from_env(&env)?), plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::Error;
    use vm_runtime::config::{ChosenBy, ENV_SOURCE, REQUESTED_SOURCE};

    /// An environment with no config file to find: the embedded default applies.
    fn bare_env() -> Env {
        Env::new().with_cwd(std::env::temp_dir())
    }

    fn planned(choice: &StackChoice, env: &Env) -> Result<StackPlan> {
        plan(None, choice, env).map(|(plan, _)| plan)
    }

    #[test]
    fn the_configuration_chooses_unless_asked() {
        let own = planned(&StackChoice::Config, &bare_env().with_var("VM_STACK", "interp")).unwrap();
        assert_eq!((own.stack.as_str(), &own.chosen_by), ("cpu", &ChosenBy::File(own_line())));
        assert!(!own.components.is_empty());
        let unset = planned(&StackChoice::FromEnv, &bare_env()).unwrap();
        assert_eq!((unset.stack.as_str(), &unset.chosen_by), ("cpu", &own.chosen_by));
    }

    /// The line of the embedded default's `stack` key.
    fn own_line() -> Option<usize> {
        Config::embedded(engines::DEFAULT_CONFIG).unwrap().stack.unwrap().line
    }

    #[test]
    fn a_stack_is_chosen_by_name_or_by_vm_stack() {
        let named = planned(&StackChoice::Named("interp".into()), &bare_env().with_var("VM_STACK", "cpu")).unwrap();
        assert_eq!((named.stack.as_str(), &named.chosen_by), ("interp", &ChosenBy::Caller));
        assert_eq!(named.components.last().unwrap().implementation, "interp");
        assert!(named.describe().contains("stack:  interp (requested by name)"), "{}", named.describe());
        let from_env = planned(&StackChoice::FromEnv, &bare_env().with_var("VM_STACK", "interp")).unwrap();
        assert_eq!((from_env.stack.as_str(), &from_env.chosen_by), ("interp", &ChosenBy::Environment));
    }

    #[test]
    fn an_unknown_stack_is_an_error_naming_who_asked() {
        let env = bare_env().with_var("VM_STACK", "cpu");
        let e = planned(&StackChoice::Named("nope".into()), &env).unwrap_err();
        let text = e.to_string();
        assert!(matches!(&e, Error::Config { file, .. } if file == REQUESTED_SOURCE), "{e}");
        assert!(text.contains("the requested stack `nope` names no stack") && text.contains("interp"), "{text}");
        assert!(!text.contains("VM_STACK"), "{text}");
        let e = planned(&StackChoice::FromEnv, &bare_env().with_var("VM_STACK", "nope")).unwrap_err();
        assert!(matches!(&e, Error::Config { file, .. } if *file == format!("{ENV_SOURCE} VM_STACK")), "{e}");
        assert!(e.to_string().contains("VM_STACK=nope names no stack"), "{e}");
    }

    #[test]
    fn an_empty_stack_name_is_a_config_error() {
        let e = planned(&StackChoice::Named(String::new()), &bare_env()).unwrap_err();
        assert!(matches!(&e, Error::Config { file, .. } if file == REQUESTED_SOURCE), "{e}");
        assert!(e.to_string().contains("the requested stack name is empty"), "{e}");
        // An empty VM_STACK counts as unset.
        let unset = planned(&StackChoice::FromEnv, &bare_env().with_var("VM_STACK", "")).unwrap();
        assert_eq!(unset.chosen_by, ChosenBy::File(own_line()));
    }

    #[test]
    fn a_built_runtime_runs_the_chosen_stack() {
        let (rt, plan) = build_runtime(None, &StackChoice::Named("interp".into())).unwrap();
        assert_eq!(plan.stack, "interp");
        rt.shutdown().unwrap();
    }
}
