//! From a [`Config`] to a running stack: the [`Registry`] of implementations, the checked
//! [`StackPlan`] (every component's implementation and effective settings), and
//! [`StackPlan::build`], which constructs the chain bottom-up.
//!
//! ```text
//! Config::discover(path, env, default) ─► config.select_stack(choice, env) ─►
//!      file or embedded                   which stack, and who chose it
//! StackPlan::new(config, stack, registry, env) ─► plan.build(registry)
//!      checks, defaults, VM_<COMPONENT>_<KEY>      Box<dyn Component>
//! ```

use crate::component::{Component, Implementation};
use crate::config::{
    ChosenBy, ChosenStack, Config, DEFAULT_SOURCE, ENV_SOURCE, Env, IMPL_KEY, Located, RESERVED_VARS, StackChoice,
    parse_value,
};
use crate::settings::{SettingKind, SettingValue, Settings};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use vm_ir::{Error, Result};

/// The implementations a build knows, by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    implementations: BTreeMap<&'static str, Implementation>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// A registry of `implementations` (see [`Registry::register`] for the checks).
    pub fn with(implementations: &[Implementation]) -> Result<Registry> {
        let mut r = Registry::new();
        for imp in implementations {
            r.register(*imp)?;
        }
        Ok(r)
    }

    /// Adds `imp`. Fails with [`Error::Internal`] (a bug in the implementation, not in a config)
    /// when the name is taken, a setting key is declared twice or is `impl`, or a default is not
    /// TOML value text.
    pub fn register(&mut self, imp: Implementation) -> Result<()> {
        if self.implementations.contains_key(imp.name) {
            return Err(Error::Internal(format!("implementation `{}` registered twice", imp.name)));
        }
        let mut keys = BTreeSet::new();
        for spec in imp.settings {
            let bug = |what: String| Err(Error::Internal(format!("implementation `{}`: {what}", imp.name)));
            if spec.key == IMPL_KEY || !keys.insert(spec.key) {
                return bug(format!("setting `{}` is declared twice or is the reserved key `{IMPL_KEY}`", spec.key));
            }
            let Some(default) = spec.default_value() else {
                return bug(format!("default of `{}` is not a TOML value: {}", spec.key, spec.default));
            };
            if !spec.kind.accepts(&default) {
                return bug(format!("default of `{}` ({}) is not of its kind {:?}", spec.key, spec.default, spec.kind));
            }
            if let Err(accepted) = spec.check_range(&default) {
                return bug(format!(
                    "default of `{}` ({}) is outside its own range ({accepted})",
                    spec.key, spec.default
                ));
            }
            if !spec.choices.is_empty() && !default.as_str().is_some_and(|d| spec.choices.contains(&d)) {
                return bug(format!("default of `{}` ({}) is not one of its choices", spec.key, spec.default));
            }
            if spec.env_switch.is_some() && spec.kind != SettingKind::Boolean {
                return bug(format!("`{}` has a switch variable but is not a boolean", spec.key));
            }
        }
        self.implementations.insert(imp.name, imp);
        Ok(())
    }

    /// The implementation called `name`.
    pub fn get(&self, name: &str) -> Option<&Implementation> {
        self.implementations.get(name)
    }

    /// Every implementation name, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        self.implementations.keys().copied().collect()
    }

    /// Every implementation, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Implementation> {
        self.implementations.values()
    }

    fn known(&self) -> String {
        if self.implementations.is_empty() {
            "none are registered".to_string()
        } else {
            format!("known: {}", self.names().join(", "))
        }
    }
}

/// One component of a [`StackPlan`].
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedComponent {
    /// Its name in the stack (a config table name, or an implementation name).
    pub name: String,
    /// The implementation that builds it.
    pub implementation: String,
    /// The implementation's one-line summary.
    pub summary: &'static str,
    /// What each setting means, by key (from the implementation's [`SettingSpec`]s).
    ///
    /// [`SettingSpec`]: crate::component::SettingSpec
    pub docs: BTreeMap<&'static str, &'static str>,
    /// Effective settings: every setting the implementation declares, from the environment, the
    /// config table, or the default, in that order of precedence.
    pub settings: Settings,
    /// The line of its entry in the stack, when from a file.
    pub line: Option<usize>,
}

/// A checked stack, ready to build: which stack, from which config, and each component with its
/// implementation and effective settings, top first.
#[derive(Debug, Clone, PartialEq)]
pub struct StackPlan {
    /// The stack's name.
    pub stack: String,
    /// The config it comes from (a path, or `<embedded default>`).
    pub source: String,
    /// How the stack was chosen.
    pub chosen_by: ChosenBy,
    /// The components, top first.
    pub components: Vec<PlannedComponent>,
}

impl StackPlan {
    /// Plans `stack` of `config` (as [`Config::select_stack`] chose it) with the implementations
    /// of `registry` and the `VM_<COMPONENT>_<KEY>` overrides of `env`.
    ///
    /// Errors: a component of the selected stack whose implementation is unknown (components of
    /// other stacks may be unknown: a config may list an `opencl` stack in a build without
    /// OpenCL); an unknown key in any table of a known implementation; a table no stack uses
    /// that names no known implementation (a typo); a manager (`needs_child`) at the bottom; an
    /// override of an undeclared key of a component in the stack; an integer outside the range
    /// its [`SettingSpec`] declares (in the file or from the environment). Value types are
    /// checked by the constructors through the [`Settings`] getters, whose errors name file and
    /// line.
    ///
    /// [`SettingSpec`]: crate::component::SettingSpec
    pub fn new(config: &Config, stack: &ChosenStack, registry: &Registry, env: &Env) -> Result<StackPlan> {
        let def = &stack.def;
        let file_err = |line: Option<usize>, msg: String| Error::config(&config.source, line, msg);

        let mut resolved: Vec<(&Located<String>, &Implementation)> = Vec::new();
        for entry in &def.components {
            let name = entry.value.as_str();
            let table = config.components.get(name);
            let explicit = table.and_then(|t| t.implementation.as_ref());
            let imp_name = config.implementation_of(name);
            let Some(imp) = registry.get(imp_name) else {
                return Err(match explicit {
                    Some(i) => file_err(
                        i.line,
                        format!(
                            "[{name}] `{IMPL_KEY} = \"{imp_name}\"`: this build has no implementation `{imp_name}` \
                             (stack `{}`; {})",
                            def.name,
                            registry.known()
                        ),
                    ),
                    None => file_err(
                        entry.line,
                        format!(
                            "stack `{}`: `{name}` is not an implementation in this build ({}), and no [{name}] table \
                             with an `{IMPL_KEY}` key names one",
                            def.name,
                            registry.known()
                        ),
                    ),
                });
            };
            resolved.push((entry, imp));
        }

        let used: BTreeSet<&str> =
            config.stacks.values().flat_map(|s| s.components.iter().map(|c| c.value.as_str())).collect();
        let mut tables: Vec<_> = config.components.values().collect();
        tables.sort_by_key(|t| t.line);
        for t in tables {
            match registry.get(t.implementation()) {
                Some(imp) => {
                    let mut entries: Vec<_> = t.values.iter().collect();
                    entries.sort_by_key(|(_, v)| v.line);
                    for (key, v) in entries {
                        if !imp.settings.iter().any(|s| s.key == key) {
                            return Err(Error::config(
                                &v.source,
                                v.line,
                                format!("[{}] unknown key `{key}`; {}", t.name, accepted(imp)),
                            ));
                        }
                    }
                }
                None if !used.contains(t.name.as_str()) => {
                    return Err(file_err(
                        t.line,
                        format!(
                            "[{}] is used by no stack and its implementation `{}` is not in this build ({})",
                            t.name,
                            t.implementation(),
                            registry.known()
                        ),
                    ));
                }
                None => {}
            }
        }

        if let Some((entry, imp)) = resolved.last()
            && imp.needs_child
        {
            return Err(file_err(
                entry.line,
                format!(
                    "stack `{}`: `{}` ({}) is a manager and needs a component below it, but it is at the bottom",
                    def.name, entry.value, imp.name
                ),
            ));
        }

        let mut components: Vec<PlannedComponent> = Vec::new();
        for (entry, imp) in &resolved {
            let name = entry.value.clone();
            let mut values = BTreeMap::new();
            for spec in imp.settings {
                let value = spec.default_value().ok_or_else(|| {
                    Error::Internal(format!("default of `{}` in `{}` is not a TOML value", spec.key, imp.name))
                })?;
                values.insert(spec.key.to_string(), SettingValue { value, source: DEFAULT_SOURCE.into(), line: None });
            }
            if let Some(t) = config.components.get(&name) {
                values.extend(t.values.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            components.push(PlannedComponent {
                name: name.clone(),
                implementation: imp.name.to_string(),
                summary: imp.summary,
                docs: imp.settings.iter().map(|s| (s.key, s.doc)).collect(),
                settings: Settings { component: name, values },
                line: entry.line,
            });
        }
        apply_env(&mut components, &resolved, env)?;
        for (c, (_, imp)) in components.iter().zip(&resolved) {
            check_ranges(c, imp)?;
        }

        Ok(StackPlan {
            stack: def.name.clone(),
            source: config.source.clone(),
            chosen_by: stack.chosen_by.clone(),
            components,
        })
    }

    /// Finds the config ([`Config::discover`], `default_text` when no file is found) and plans
    /// the stack `choice` selects ([`Config::select_stack`], [`StackPlan::new`]).
    pub fn discover(
        explicit: Option<&Path>,
        default_text: &str,
        choice: &StackChoice,
        registry: &Registry,
        env: &Env,
    ) -> Result<StackPlan> {
        let config = Config::discover(explicit, env, default_text)?;
        StackPlan::new(&config, &config.select_stack(choice, env)?, registry, env)
    }

    /// Constructs the stack bottom-up, each constructor receiving the component built below it,
    /// and returns the top. A component whose implementation is missing from `registry` (a
    /// different registry than the plan's) is a config error.
    pub fn build(&self, registry: &Registry) -> Result<Box<dyn Component>> {
        let mut child: Option<Box<dyn Component>> = None;
        for c in self.components.iter().rev() {
            let imp = registry.get(&c.implementation).ok_or_else(|| {
                Error::config(
                    &self.source,
                    c.line,
                    format!("stack `{}`: no implementation `{}` ({})", self.stack, c.implementation, registry.known()),
                )
            })?;
            if imp.needs_child && child.is_none() {
                return Err(Error::config(
                    &self.source,
                    c.line,
                    format!("stack `{}`: `{}` is a manager and needs a component below it", self.stack, c.name),
                ));
            }
            child = Some((imp.construct)(&c.settings, child)?);
        }
        child.ok_or_else(|| Error::config(&self.source, None, format!("stack `{}` is empty", self.stack)))
    }

    /// The plan as text, for `vm info`: the config, the stack and how it was chosen, and each
    /// component with its implementation and every setting with where its value came from.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "config: {}", self.source);
        let how = match &self.chosen_by {
            ChosenBy::Caller => "requested by name".to_string(),
            ChosenBy::Environment => "chosen by VM_STACK".to_string(),
            ChosenBy::File(Some(l)) => format!("chosen by `stack` on line {l}"),
            ChosenBy::File(None) => "chosen by `stack`".to_string(),
            ChosenBy::OnlyStack => "the only stack".to_string(),
        };
        let _ = writeln!(s, "stack:  {} ({how}), top first:", self.stack);
        let width = self.components.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for (i, c) in self.components.iter().enumerate() {
            let _ = writeln!(s, "  {}. {:width$}  impl {}: {}", i + 1, c.name, c.implementation, c.summary);
            let kw = c.settings.values.keys().map(String::len).max().unwrap_or(0);
            for (k, v) in &c.settings.values {
                let text = format!("{k:kw$} = {}", v.value);
                let from = match v.line {
                    Some(l) => format!("{}:{l}", v.source),
                    None => v.source.clone(),
                };
                let doc = c.docs.get(k.as_str()).copied().unwrap_or_default();
                let _ = writeln!(s, "       {text:24}  # {doc} [{from}]");
            }
        }
        s
    }
}

/// Checks every setting of `c` that `imp` declares a range for (see [`Settings::check_range`]).
fn check_ranges(c: &PlannedComponent, imp: &Implementation) -> Result<()> {
    imp.settings.iter().try_for_each(|spec| c.settings.check_range(spec))
}

fn accepted(imp: &Implementation) -> String {
    let mut keys = vec![IMPL_KEY];
    keys.extend(imp.settings.iter().map(|s| s.key));
    format!("implementation `{}` accepts: {}", imp.name, keys.join(", "))
}

/// `name` as it appears in environment variable names: upper case, `-` and `.` as `_`.
fn env_form(name: &str) -> String {
    name.chars().map(|c| if c == '-' || c == '.' { '_' } else { c.to_ascii_uppercase() }).collect()
}

/// Applies the `VM_<COMPONENT>_<KEY>=value` variables of `env` to the components of the stack.
/// A variable belongs to the component whose name gives the longest matching prefix; variables
/// for components not in the stack, and the reserved ones, are left alone. Then a switch
/// variable ([`SettingSpec::env_switch`](crate::settings::SettingSpec::env_switch), e.g.
/// `VM_PROFILE=1`) that is set and not `0` turns its setting on in every component declaring it.
fn apply_env(
    components: &mut [PlannedComponent],
    resolved: &[(&Located<String>, &Implementation)],
    env: &Env,
) -> Result<()> {
    let prefixes: Vec<String> = components.iter().map(|c| format!("VM_{}_", env_form(&c.name))).collect();
    for (var, text) in env.vars() {
        if RESERVED_VARS.contains(&var) {
            continue;
        }
        let Some(i) =
            (0..components.len()).filter(|&i| var.starts_with(&prefixes[i])).max_by_key(|&i| prefixes[i].len())
        else {
            continue;
        };
        let rest = &var[prefixes[i].len()..];
        let imp = resolved[i].1;
        let source = format!("{ENV_SOURCE} {var}");
        let Some(spec) = imp.settings.iter().find(|s| env_form(s.key).eq_ignore_ascii_case(rest)) else {
            let vars: Vec<_> = imp.settings.iter().map(|s| format!("{}{}", prefixes[i], env_form(s.key))).collect();
            let accepts = if vars.is_empty() { "it has no settings".to_string() } else { vars.join(", ") };
            return Err(Error::config(
                source,
                None,
                format!(
                    "component `{}` (implementation `{}`) has no setting `{}`; accepted: {accepts}",
                    components[i].name,
                    imp.name,
                    rest.to_ascii_lowercase()
                ),
            ));
        };
        let value = match (spec.kind, text) {
            // As switches like VM_PROFILE=1 are written.
            (SettingKind::Boolean, "1") => toml::Value::Boolean(true),
            (SettingKind::Boolean, "0") => toml::Value::Boolean(false),
            _ => parse_value(text).unwrap_or_else(|| toml::Value::String(text.to_string())),
        };
        components[i].settings.values.insert(spec.key.to_string(), SettingValue { value, source, line: None });
    }
    for (c, (_, imp)) in components.iter_mut().zip(resolved) {
        for spec in imp.settings {
            let Some(var) = spec.env_switch else { continue };
            if spec.switched_on(env) {
                let value = SettingValue { value: true.into(), source: format!("{ENV_SOURCE} {var}"), line: None };
                c.settings.values.insert(spec.key.to_string(), value);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::ComponentInfo;
    use crate::config::tests::{DEFAULT_TEXT, TempDir, assert_config_err};
    use crate::memory::HostMemory;
    use crate::settings::SettingKind::{Boolean, IndexOrName, Integer, String as Text};
    use crate::settings::SettingSpec;
    use vm_ir::instr::Instruction;

    /// A component that records its construction settings, its child and the batches it sees.
    struct Mock {
        implementation: &'static str,
        settings: Settings,
        child: Option<Box<dyn Component>>,
    }

    impl Component for Mock {
        fn name(&self) -> &str {
            self.implementation
        }

        fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
            match &mut self.child {
                Some(c) => c.execute(batch, mem),
                None => Ok(()),
            }
        }

        fn child(&self) -> Option<&(dyn Component + 'static)> {
            self.child.as_deref()
        }

        fn child_mut(&mut self) -> Option<&mut (dyn Component + 'static)> {
            self.child.as_deref_mut()
        }

        fn info(&self) -> ComponentInfo {
            ComponentInfo {
                name: self.settings.component.clone(),
                implementation: self.implementation.to_string(),
                settings: self.settings.to_pairs(),
                ..ComponentInfo::default()
            }
        }
    }

    const NAMES: [&str; 5] = ["node", "interp", "cpu", "opencl", "cluster"];

    fn construct<const I: usize>(s: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
        // Engines read their settings in their constructors; type errors surface here.
        if I == 2 {
            s.usize("threads", 0)?;
            s.bool("verbose", false)?;
        }
        if I == 3 {
            s.int("device", 0)?;
        }
        Ok(Box::new(Mock { implementation: NAMES[I], settings: s.clone(), child }))
    }

    const CPU_SETTINGS: &[SettingSpec] = &[
        SettingSpec::new("threads", Integer, "0", "worker threads").with_range(0, 64),
        SettingSpec { env_switch: Some("VM_PROFILE"), ..SettingSpec::new("verbose", Boolean, "false", "talk") },
        SettingSpec::new("block_size", Integer, "4096", "elements per block").with_range(1, i64::MAX),
    ];
    const OPENCL_SETTINGS: &[SettingSpec] = &[
        SettingSpec::new("device", IndexOrName, "0", "device index").with_range(0, i64::MAX),
        SettingSpec::new("platform", Text, "\"any\"", "platform name"),
    ];

    fn imp(i: usize) -> Implementation {
        let (needs_child, settings, construct): (bool, &'static [SettingSpec], crate::component::Constructor) = match i
        {
            0 => (true, &[], construct::<0>),
            1 => (false, &[], construct::<1>),
            2 => (false, CPU_SETTINGS, construct::<2>),
            3 => (false, OPENCL_SETTINGS, construct::<3>),
            _ => (true, &[], construct::<4>),
        };
        Implementation { name: NAMES[i], summary: "mock", needs_child, settings, construct }
    }

    /// Every mock implementation but OpenCL (as in a build without it).
    fn registry() -> Registry {
        Registry::with(&[imp(0), imp(1), imp(2), imp(4)]).unwrap()
    }

    fn registry_with_opencl() -> Registry {
        let mut r = registry();
        r.register(imp(3)).unwrap();
        r
    }

    /// Plans the stack `VM_STACK` of `env` or `config` chooses.
    fn plan_in(config: &Config, registry: &Registry, env: &Env) -> Result<StackPlan> {
        StackPlan::new(config, &config.select_stack(&StackChoice::FromEnv, env)?, registry, env)
    }

    fn plan(text: &str, env: &Env) -> Result<StackPlan> {
        plan_in(&Config::parse(text, "vm.toml")?, &registry_with_opencl(), env)
    }

    fn plan_err(text: &str, env: &Env) -> Error {
        plan(text, env).unwrap_err()
    }

    const CONFIG: &str = r#"stack = "cpu"
[stacks]
cpu    = ["node", "cpu"]
interp = ["node", "interp"]
gpu    = ["node", "gpu0", "cpu"]
nocl   = ["node", "opencl"]
[cpu]
threads = 2
[gpu0]
impl = "opencl"
device = 1
"#;

    fn value(p: &StackPlan, comp: usize, key: &str) -> (toml::Value, String, Option<usize>) {
        let v = &p.components[comp].settings.values[key];
        (v.value.clone(), v.source.clone(), v.line)
    }

    #[test]
    fn registry_register_get_names() {
        let r = registry_with_opencl();
        assert_eq!(r.names(), ["cluster", "cpu", "interp", "node", "opencl"]);
        assert!(r.get("cpu").is_some_and(|i| !i.needs_child));
        assert!(r.get("gpu").is_none());
        assert_eq!(r.iter().count(), 5);
        let mut r = registry();
        assert!(matches!(r.register(imp(2)), Err(Error::Internal(_))));
        let bad =
            Implementation { name: "bad", settings: const { &[SettingSpec::new("mode", Text, "fast", "")] }, ..imp(1) };
        assert!(matches!(r.register(bad), Err(Error::Internal(m)) if m.contains("mode")));
        let reserved =
            Implementation { name: "res", settings: const { &[SettingSpec::new("impl", Integer, "1", "")] }, ..imp(1) };
        assert!(r.register(reserved).is_err());
        let twice = Implementation {
            name: "twice",
            settings: const { &[SettingSpec::new("a", Integer, "1", ""), SettingSpec::new("a", Integer, "2", "")] },
            ..imp(1)
        };
        assert!(r.register(twice).is_err());
        let outside = Implementation {
            name: "outside",
            settings: const { &[SettingSpec::new("n", Integer, "9", "").with_range(0, 8)] },
            ..imp(1)
        };
        assert!(matches!(r.register(outside), Err(Error::Internal(m)) if m.contains("`n`") && m.contains("0 to 8")));
        let wrong_kind =
            Implementation { name: "kind", settings: const { &[SettingSpec::new("n", Boolean, "1", "")] }, ..imp(1) };
        assert!(matches!(r.register(wrong_kind), Err(Error::Internal(m)) if m.contains("kind")));
        let choices = Implementation {
            name: "choice",
            settings: const { &[SettingSpec { choices: &["a", "b"], ..SettingSpec::new("c", Text, "\"z\"", "") }] },
            ..imp(1)
        };
        assert!(matches!(r.register(choices), Err(Error::Internal(m)) if m.contains("choices")));
        let switch = Implementation {
            name: "switch",
            settings: const { &[SettingSpec { env_switch: Some("VM_X"), ..SettingSpec::new("n", Integer, "1", "") }] },
            ..imp(1)
        };
        assert!(matches!(r.register(switch), Err(Error::Internal(m)) if m.contains("switch")));
    }

    #[test]
    fn plan_has_defaults_file_values_and_order() {
        let p = plan(CONFIG, &Env::new()).unwrap();
        assert_eq!((p.stack.as_str(), p.source.as_str(), &p.chosen_by), ("cpu", "vm.toml", &ChosenBy::File(Some(1))));
        let names: Vec<_> = p.components.iter().map(|c| (c.name.as_str(), c.implementation.as_str())).collect();
        assert_eq!(names, [("node", "node"), ("cpu", "cpu")]);
        assert!(p.components[0].settings.values.is_empty());
        assert_eq!(p.components[1].settings.component, "cpu");
        assert_eq!(value(&p, 1, "threads"), (2.into(), "vm.toml".into(), Some(8)));
        assert_eq!(value(&p, 1, "verbose"), (false.into(), DEFAULT_SOURCE.into(), None));
        assert_eq!(value(&p, 1, "block_size"), (4096.into(), DEFAULT_SOURCE.into(), None));
        assert_eq!(p.components[1].line, Some(3));
    }

    #[test]
    fn named_components_use_their_impl() {
        let p = plan(CONFIG, &Env::new().with_var("VM_STACK", "gpu")).unwrap();
        assert_eq!(p.chosen_by, ChosenBy::Environment);
        let names: Vec<_> = p.components.iter().map(|c| (c.name.as_str(), c.implementation.as_str())).collect();
        assert_eq!(names, [("node", "node"), ("gpu0", "opencl"), ("cpu", "cpu")]);
        assert_eq!(value(&p, 1, "device"), (1.into(), "vm.toml".into(), Some(11)));
        assert_eq!(value(&p, 1, "platform").0, toml::Value::String("any".into()));
        assert_eq!(p.components[1].settings.component, "gpu0");
    }

    #[test]
    fn build_wires_children_bottom_up() {
        let r = registry_with_opencl();
        let p = plan(CONFIG, &Env::new().with_var("VM_STACK", "gpu")).unwrap();
        let top = p.build(&r).unwrap();
        assert_eq!(top.name(), "node");
        let info = top.describe();
        let got: Vec<_> = info.iter().map(|i| (i.name.as_str(), i.implementation.as_str())).collect();
        assert_eq!(got, [("node", "node"), ("gpu0", "opencl"), ("cpu", "cpu")]);
        assert!(info[1].settings.contains(&("device".into(), "1".into())));
        assert!(info[2].settings.contains(&("threads".into(), "2".into())));
        let mut top = top;
        top.execute(&[], &mut HostMemory::new()).unwrap();
    }

    #[test]
    fn build_with_a_registry_that_lacks_an_implementation_fails() {
        let p = plan(CONFIG, &Env::new().with_var("VM_STACK", "gpu")).unwrap();
        let e = p.build(&registry()).err().unwrap();
        assert_config_err(&e, "vm.toml", Some(5), &["opencl", "known: cluster, cpu, interp, node"]);
    }

    #[test]
    fn unknown_implementation_in_selected_stack_is_an_error() {
        let text = CONFIG.replace("stack = \"cpu\"", "stack = \"gpu\"");
        let r = registry();
        let e = plan_in(&Config::parse(&text, "vm.toml").unwrap(), &r, &Env::new()).unwrap_err();
        assert_config_err(&e, "vm.toml", Some(10), &["[gpu0]", "opencl", "known: cluster, cpu, interp, node"]);
        let e = plan_in(&Config::parse(&text, "vm.toml").unwrap(), &r, &Env::new().with_var("VM_STACK", "nocl"))
            .unwrap_err();
        assert_config_err(
            &e,
            "vm.toml",
            Some(6),
            &["stack `nocl`", "`opencl` is not an implementation", "known: cluster, cpu"],
        );
    }

    #[test]
    fn unknown_implementation_in_other_stacks_is_fine() {
        let c = Config::parse(CONFIG, "vm.toml").unwrap();
        let p = plan_in(&c, &registry(), &Env::new()).unwrap();
        assert_eq!(p.stack, "cpu");
    }

    #[test]
    fn unknown_keys_are_errors_in_any_table_of_a_known_implementation() {
        let text = format!("{CONFIG}\n[interp]\nthreads = 4\n");
        let e = plan_err(&text, &Env::new());
        assert_config_err(&e, "vm.toml", Some(14), &["[interp] unknown key `threads`", "accepts: impl"]);
        let text = CONFIG.replace("threads = 2", "threads = 2\nthraeds = 3");
        let e = plan_err(&text, &Env::new());
        assert_config_err(&e, "vm.toml", Some(9), &["[cpu]", "`thraeds`", "impl, threads, verbose, block_size"]);
        // A named component of a stack that is not selected is still checked.
        let text = CONFIG.replace("device = 1", "device = 1\ndevcie = 2");
        let e = plan_err(&text, &Env::new());
        assert_config_err(&e, "vm.toml", Some(12), &["[gpu0]", "`devcie`", "`opencl` accepts: impl, device, platform"]);
        // ... but not when its implementation is not in the build.
        let c = Config::parse(&text, "vm.toml").unwrap();
        assert!(plan_in(&c, &registry(), &Env::new()).is_ok());
    }

    #[test]
    fn unused_tables_of_unknown_implementations_are_typos() {
        let text = format!("{CONFIG}[cpuu]\nthreads = 4\n");
        let e = plan_err(&text, &Env::new());
        assert_config_err(&e, "vm.toml", Some(12), &["[cpuu] is used by no stack", "known: cluster"]);
    }

    #[test]
    fn a_manager_at_the_bottom_is_an_error() {
        let text = "stack = \"s\"\n[stacks]\ns = [\"cluster\",\n  \"node\"]\n";
        let e = plan_err(text, &Env::new());
        assert_config_err(&e, "vm.toml", Some(4), &["stack `s`", "`node`", "manager", "bottom"]);
        // An engine above another (as its fallback child) is fine.
        let p = plan("[stacks]\ns = [\"cpu\", \"interp\"]\n", &Env::new()).unwrap();
        assert_eq!(p.chosen_by, ChosenBy::OnlyStack);
        let top = p.build(&registry()).unwrap();
        assert_eq!(top.describe().len(), 2);
    }

    #[test]
    fn a_stack_of_implementations_with_no_tables_gets_defaults() {
        let p = plan("[stacks]\nc = [\"cluster\", \"node\", \"cpu\"]\n", &Env::new()).unwrap();
        assert_eq!(value(&p, 2, "threads"), (0.into(), DEFAULT_SOURCE.into(), None));
        let top = p.build(&registry()).unwrap();
        let got: Vec<_> = top.describe().into_iter().map(|i| i.implementation).collect();
        assert_eq!(got, ["cluster", "node", "cpu"]);
    }

    #[test]
    fn env_overrides_settings() {
        let env = Env::new()
            .with_var("VM_CPU_THREADS", "8")
            .with_var("VM_CPU_VERBOSE", "true")
            .with_var("VM_CPU_BLOCK_SIZE", "128")
            .with_var("VM_GPU0_DEVICE", "3") // gpu0 is not in the cpu stack: left alone
            .with_var("VM_TRACE", "1")
            .with_var("VM_PROFILE", "1")
            .with_var("VM_CONFIG", "")
            .with_var("HOME", "/nowhere");
        let p = plan(CONFIG, &env).unwrap();
        assert_eq!(value(&p, 1, "threads"), (8.into(), "<environment> VM_CPU_THREADS".into(), None));
        assert_eq!(value(&p, 1, "verbose").0, true.into());
        assert_eq!(value(&p, 1, "block_size").0, 128.into());
        let top = p.build(&registry()).unwrap();
        assert!(top.describe()[1].settings.contains(&("threads".into(), "8".into())));

        let p = plan(CONFIG, &env.clone().with_var("VM_STACK", "gpu")).unwrap();
        assert_eq!(value(&p, 1, "device"), (3.into(), "<environment> VM_GPU0_DEVICE".into(), None));
        // Bare text is a string.
        let p = plan(CONFIG, &env.with_var("VM_STACK", "gpu").with_var("VM_GPU0_PLATFORM", "pocl")).unwrap();
        assert_eq!(value(&p, 1, "platform").0, toml::Value::String("pocl".into()));
    }

    #[test]
    fn a_switch_variable_turns_its_setting_on() {
        let on = plan(CONFIG, &Env::new().with_var("VM_PROFILE", "1")).unwrap();
        assert_eq!(value(&on, 1, "verbose"), (true.into(), "<environment> VM_PROFILE".into(), None));
        // It turns a setting on, never off; unset, empty or 0 leaves it alone.
        let text = CONFIG.replace("threads = 2", "threads = 2\nverbose = true");
        for v in ["0", ""] {
            let p = plan(&text, &Env::new().with_var("VM_PROFILE", v)).unwrap();
            assert_eq!(value(&p, 1, "verbose"), (true.into(), "vm.toml".into(), Some(9)));
            let p = plan(CONFIG, &Env::new().with_var("VM_PROFILE", v)).unwrap();
            assert_eq!(value(&p, 1, "verbose").0, false.into());
        }
        let p = plan(CONFIG, &Env::new().with_var("VM_PROFILE", "1").with_var("VM_CPU_VERBOSE", "false")).unwrap();
        assert_eq!(value(&p, 1, "verbose").0, true.into());
    }

    #[test]
    fn a_boolean_override_may_be_written_1_or_0() {
        for (text, on) in [("1", true), ("0", false), ("true", true), ("false", false)] {
            let p = plan(CONFIG, &Env::new().with_var("VM_CPU_VERBOSE", text)).unwrap();
            assert_eq!(value(&p, 1, "verbose").0, on.into(), "VM_CPU_VERBOSE={text}");
        }
        // Other numbers stay numbers, refused by the boolean setting.
        let p = plan(CONFIG, &Env::new().with_var("VM_CPU_VERBOSE", "2")).unwrap();
        let e = p.build(&registry()).err().unwrap();
        assert_config_err(&e, "<environment> VM_CPU_VERBOSE", None, &["[cpu] verbose", "true or false"]);
    }

    #[test]
    fn env_override_of_unknown_key_is_an_error() {
        let e = plan_err(CONFIG, &Env::new().with_var("VM_CPU_THRAEDS", "8"));
        assert_config_err(
            &e,
            "<environment> VM_CPU_THRAEDS",
            None,
            &["`cpu`", "`thraeds`", "VM_CPU_THREADS, VM_CPU_VERBOSE, VM_CPU_BLOCK_SIZE"],
        );
        let e = plan_err(CONFIG, &Env::new().with_var("VM_NODE_X", "1"));
        assert_config_err(&e, "<environment> VM_NODE_X", None, &["`node`", "no settings"]);
    }

    #[test]
    fn env_override_type_errors_name_the_variable() {
        let p = plan(CONFIG, &Env::new().with_var("VM_CPU_THREADS", "many")).unwrap();
        let e = p.build(&registry()).err().unwrap();
        assert_config_err(&e, "<environment> VM_CPU_THREADS", None, &["[cpu] threads", "integer", "\"many\""]);
        // A negative count is outside the declared range: caught when planning.
        let e = plan_err(CONFIG, &Env::new().with_var("VM_CPU_THREADS", "-1"));
        assert_config_err(&e, "<environment> VM_CPU_THREADS", None, &["threads = -1", "0 to 64"]);
    }

    #[test]
    fn integers_outside_a_declared_range_are_errors_when_planning() {
        // In the file: the error names the file, the line, the key, the value and the limits.
        let text = CONFIG.replace("threads = 2", "threads = 100000");
        let e = plan_err(&text, &Env::new());
        assert_config_err(&e, "vm.toml", Some(8), &["[cpu] threads = 100000 is out of range", "0 to 64"]);
        let text = CONFIG.replace("threads = 2", "threads = 2\nblock_size = 0");
        let e = plan_err(&text, &Env::new());
        assert_config_err(&e, "vm.toml", Some(9), &["[cpu] block_size = 0", "1 or more"]);
        // In the environment: the error names the variable.
        let e = plan_err(CONFIG, &Env::new().with_var("VM_CPU_THREADS", "65"));
        assert_config_err(&e, "<environment> VM_CPU_THREADS", None, &["[cpu] threads = 65", "0 to 64"]);
        // Of a named component.
        let e = plan_err(CONFIG, &Env::new().with_var("VM_STACK", "gpu").with_var("VM_GPU0_DEVICE", "-1"));
        assert_config_err(&e, "<environment> VM_GPU0_DEVICE", None, &["[gpu0] device = -1", "0 or more"]);
        // The limits themselves are accepted, and values of other types are the getters' business.
        assert!(plan(CONFIG, &Env::new().with_var("VM_CPU_THREADS", "64")).is_ok());
        assert!(plan(CONFIG, &Env::new().with_var("VM_CPU_THREADS", "0")).is_ok());
        assert!(plan(CONFIG, &Env::new().with_var("VM_CPU_THREADS", "many")).is_ok());
    }

    #[test]
    fn file_type_errors_name_file_and_line() {
        let text = CONFIG.replace("threads = 2", "threads = \"two\"");
        let p = plan(&text, &Env::new()).unwrap();
        let e = p.build(&registry()).err().unwrap();
        assert_config_err(&e, "vm.toml", Some(8), &["[cpu] threads", "integer"]);
        let text = CONFIG.replace("device = 1", "device = true");
        let p = plan(&text, &Env::new().with_var("VM_STACK", "gpu")).unwrap();
        let e = p.build(&registry_with_opencl()).err().unwrap();
        assert_config_err(&e, "vm.toml", Some(11), &["[gpu0] device", "integer"]);
    }

    #[test]
    fn env_prefix_matching_prefers_the_longest_component_name() {
        let text = "[stacks]\ns = [\"node\", \"gpu\", \"gpu-0\"]\n[gpu]\nimpl = \"opencl\"\n[gpu-0]\nimpl = \"cpu\"\n";
        let env = Env::new().with_var("VM_GPU_0_THREADS", "5").with_var("VM_GPU_DEVICE", "2");
        let p = plan(text, &env).unwrap();
        assert_eq!(value(&p, 1, "device").0, 2.into());
        assert_eq!(value(&p, 2, "threads").0, 5.into());
    }

    #[test]
    fn errors_from_select_stack_propagate() {
        let e = plan_err(CONFIG, &Env::new().with_var("VM_STACK", "nope"));
        assert_config_err(&e, "<environment> VM_STACK", None, &["nope", "cpu, gpu, interp, nocl"]);
    }

    #[test]
    fn describe_lists_config_stack_components_and_settings() {
        let p = plan(CONFIG, &Env::new().with_var("VM_CPU_VERBOSE", "true")).unwrap();
        let d = p.describe();
        assert!(d.starts_with("config: vm.toml\nstack:  cpu (chosen by `stack` on line 1), top first:\n"), "{d}");
        assert!(d.contains("1. node  impl node: mock\n"), "{d}");
        assert!(d.contains("2. cpu   impl cpu: mock\n"), "{d}");
        assert!(d.contains("threads    = 2"), "{d}");
        assert!(d.contains("# worker threads [vm.toml:8]"), "{d}");
        assert!(d.contains("[<environment> VM_CPU_VERBOSE]"), "{d}");
        assert!(d.contains("block_size = 4096") && d.contains("# elements per block [<default>]"), "{d}");
    }

    #[test]
    fn discover_plans_the_found_file() {
        let t = TempDir::new("plan");
        t.write("vm.toml", CONFIG);
        let env = Env::new().with_cwd(&t.0);
        let p = StackPlan::discover(None, DEFAULT_TEXT, &StackChoice::FromEnv, &registry_with_opencl(), &env).unwrap();
        assert_eq!(p.source, t.0.join("vm.toml").display().to_string());
        // Nothing found: the embedded default, whose stack is cpu.
        let p = StackPlan::discover(
            None,
            DEFAULT_TEXT,
            &StackChoice::FromEnv,
            &registry(),
            &Env::new().with_cwd(t.0.join("empty")),
        )
        .unwrap();
        assert_eq!((p.stack.as_str(), p.source.as_str()), ("cpu", "<embedded default>"));
        assert!(p.build(&registry()).is_ok());
    }

    #[test]
    fn every_stack_of_the_embedded_default_plans_with_the_mocks() {
        let c = Config::embedded(DEFAULT_TEXT).unwrap();
        for name in c.stacks.keys() {
            let p = plan_in(&c, &registry_with_opencl(), &Env::new().with_var("VM_STACK", name.as_str()))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            p.build(&registry_with_opencl()).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// A random stack over the mock engines plans and builds with the components in
            /// order, or fails with a config error naming vm.toml (manager at the bottom).
            #[test]
            fn random_stacks_build_in_order(picks in proptest::collection::vec(0usize..5, 1..6)) {
                let mut names: Vec<String> = Vec::new();
                let mut tables = String::new();
                for (k, &i) in picks.iter().enumerate() {
                    let n = format!("c{k}");
                    tables += &format!("[{n}]\nimpl = \"{}\"\n", NAMES[i]);
                    names.push(n);
                }
                let list: Vec<_> = names.iter().map(|n| format!("\"{n}\"")).collect();
                let text = format!("[stacks]\ns = [{}]\n{tables}", list.join(", "));
                let r = registry_with_opencl();
                let result = plan_in(&Config::parse(&text, "vm.toml").unwrap(), &r, &Env::new());
                let bottom_is_manager = matches!(*picks.last().unwrap(), 0 | 4);
                match result {
                    Err(e) => {
                        prop_assert!(bottom_is_manager, "{}", e);
                        assert_config_err(&e, "vm.toml", Some(2), &["bottom"]);
                    }
                    Ok(p) => {
                        prop_assert!(!bottom_is_manager);
                        let info = p.build(&r).unwrap().describe();
                        let got: Vec<_> = info.iter().map(|i| (i.name.clone(), i.implementation.clone())).collect();
                        let want: Vec<_> = picks.iter().enumerate()
                            .map(|(k, &i)| (format!("c{k}"), NAMES[i].to_string())).collect();
                        prop_assert_eq!(got, want);
                    }
                }
            }

            /// Any text parses or fails with a config error; never a panic.
            #[test]
            fn arbitrary_text_never_panics(text in "[a-z\\[\\]=\" \n0-9,]{0,80}") {
                if let Err(e) = Config::parse(&text, "f.toml") {
                    prop_assert!(matches!(e.without_cause(), Error::Config { .. }), "{}", e);
                }
            }
        }
    }
}
