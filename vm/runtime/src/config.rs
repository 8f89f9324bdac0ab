//! The configuration: a TOML file that names stacks of components and gives each component its
//! settings. Errors name the file and the 1-based line of the problem.
//!
//! ```toml
//! stack = "interp"                     # the stack used unless VM_STACK names another
//! [stacks]                             # each stack lists component names, top first
//! interp = ["node", "interp"]
//! opencl = ["node", "gpu0", "cpu"]     # cpu = fallback for what OpenCL cannot run
//! [cpu]                                # a component's settings
//! threads = 0
//! [gpu0]                               # a named component: `impl` says which implementation
//! impl = "opencl"
//! device = 1
//! ```
//!
//! A component name is a table name; its `impl` key picks the implementation (default: the
//! table's own name). A name with no table is the implementation of that name with default
//! settings. Every other top-level table is a component table; any other top-level key is an
//! error.
//!
//! The file is looked up by [`Config::locate`]: the path given to `vm_init`, `$VM_CONFIG`,
//! `./vm.toml`, `$XDG_CONFIG_HOME/vm/config.toml`, `~/.config/vm/config.toml`, then the default
//! text the caller embeds (the C bridge embeds `config/default.toml`). The first one found is the
//! whole configuration (files are not merged).
//!
//! This module checks what can be checked without knowing the implementations (syntax, shape,
//! the default stack, empty stacks, a component twice in a stack). The checks that need the
//! implementations (unknown implementations, unknown keys, a manager at the bottom, integers
//! outside a setting's declared range) and the `VM_<COMPONENT>_<KEY>` overrides are applied by
//! [`crate::stack::StackPlan::new`]. The
//! environment is an [`Env`] value, so tests never touch the process environment.

use crate::settings::SettingValue;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;
use toml::de::{DeTable, DeValue};
use vm_ir::{Error, Result};

/// The source name of the embedded default configuration.
pub const EMBEDDED_SOURCE: &str = "<embedded default>";

/// The source name of settings and choices taken from environment variables. Settings from a
/// variable have the source `<environment> VM_<COMPONENT>_<KEY>`, so errors name the variable.
pub const ENV_SOURCE: &str = "<environment>";

/// The source name of a setting taken from its implementation's default.
pub const DEFAULT_SOURCE: &str = "<default>";

/// The key of a component table that picks its implementation; it is not a setting.
pub const IMPL_KEY: &str = "impl";

/// Environment variables of the VM that are not `VM_<COMPONENT>_<KEY>` overrides.
pub const RESERVED_VARS: &[&str] = &["VM_CONFIG", "VM_STACK", "VM_TRACE", "VM_PROFILE", "VM_DIRECT"];

/// The environment the configuration is read in: variables and the current directory.
///
/// [`Env::process`] snapshots the real process; tests build one with [`Env::new`],
/// [`Env::with_var`] and [`Env::with_cwd`]. A variable set to the empty string counts as unset
/// for `VM_CONFIG`, `VM_STACK`, `XDG_CONFIG_HOME` and `HOME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

impl Env {
    /// An empty environment: no variables, the process's current directory.
    pub fn new() -> Env {
        Env::default()
    }

    /// A snapshot of the process environment (variables that are not valid UTF-8 are left out).
    pub fn process() -> Env {
        let vars = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Env { vars: vars.collect(), cwd: None }
    }

    /// This environment with `name` set to `value`.
    pub fn with_var(mut self, name: impl Into<String>, value: impl Into<String>) -> Env {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// This environment with `dir` as the current directory (where `./vm.toml` is looked for and
    /// relative paths are resolved).
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Env {
        self.cwd = Some(dir.into());
        self
    }

    /// The value of variable `name`, if set.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Every variable, sorted by name.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The current directory, when one was given; `None` means the process's.
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    fn nonempty(&self, name: &str) -> Option<&str> {
        self.var(name).filter(|v| !v.is_empty())
    }

    fn resolve(&self, path: &Path) -> PathBuf {
        match &self.cwd {
            Some(cwd) if path.is_relative() => cwd.join(path),
            _ => path.to_path_buf(),
        }
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Env {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Env {
        Env { vars: iter.into_iter().map(|(k, v)| (k.into(), v.into())).collect(), cwd: None }
    }
}

/// A value and the 1-based line it was written on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Its 1-based line, when it came from a file.
    pub line: Option<usize>,
}

/// One entry of `[stacks]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackDef {
    /// The stack's name (its key in `[stacks]`).
    pub name: String,
    /// The line of its key.
    pub line: Option<usize>,
    /// Its component names, top first; never empty, no name twice.
    pub components: Vec<Located<String>>,
}

/// A component's table: its implementation and its settings as written in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentTable {
    /// The table's name, which stacks list.
    pub name: String,
    /// The line of the table's header (or key).
    pub line: Option<usize>,
    /// The `impl` key, when given.
    pub implementation: Option<Located<String>>,
    /// Every other key, with its value, file and line (not yet checked against the
    /// implementation's settings).
    pub values: BTreeMap<String, SettingValue>,
}

impl ComponentTable {
    /// The implementation name: the `impl` key, or the table's name.
    pub fn implementation(&self) -> &str {
        self.implementation.as_ref().map_or(&self.name, |l| &l.value)
    }
}

/// A parsed configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where it came from: a path, or [`EMBEDDED_SOURCE`].
    pub source: String,
    /// The `stack` key: the default stack (checked to name one of [`Config::stacks`]).
    pub stack: Option<Located<String>>,
    /// The `[stacks]` table, by name.
    pub stacks: BTreeMap<String, StackDef>,
    /// The component tables, by name.
    pub components: BTreeMap<String, ComponentTable>,
}

/// The source name of errors about a stack a caller asked for by name ([`StackChoice::Named`]).
pub const REQUESTED_SOURCE: &str = "<requested stack>";

/// Which stack of a configuration to build: decided once, by [`Config::select_stack`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StackChoice {
    /// The configuration's own: its `stack` key, else its only stack.
    Config,
    /// The stack the `VM_STACK` variable names; the configuration's own when it is unset or empty.
    FromEnv,
    /// The stack a caller names (`vm_init_stack`, `vm --stack`, `vmnp.set_stack`); an empty name
    /// is an error, not the configuration's choice.
    Named(String),
}

impl StackChoice {
    /// The stack `name` when the caller gives one, else the one `VM_STACK` or the configuration
    /// picks: what `vm_init_stack`, `vm --stack` and vmnp ask for.
    pub fn named_or_env(name: Option<&str>) -> StackChoice {
        name.map_or(StackChoice::FromEnv, |n| StackChoice::Named(n.to_string()))
    }
}

/// How the stack of a configuration was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChosenBy {
    /// By the caller, by name.
    Caller,
    /// By the `VM_STACK` variable.
    Environment,
    /// By the file's `stack` key, on this line.
    File(Option<usize>),
    /// The file has no `stack` key but only one stack.
    OnlyStack,
}

/// The stack a configuration builds: its definition and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenStack {
    /// The stack, as `[stacks]` defines it.
    pub def: StackDef,
    /// How it was chosen.
    pub chosen_by: ChosenBy,
}

impl Config {
    /// Parses configuration `text` read from `source` (a path or a name like
    /// [`EMBEDDED_SOURCE`], used in errors). Checks TOML syntax, the top-level shape, that
    /// `stack` names a stack, and that no stack is empty or lists a component twice.
    pub fn parse(text: &str, source: &str) -> Result<Config> {
        let doc = DeTable::parse(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            Error::config(source, line, format!("TOML syntax: {}", e.message())).caused_by(e)
        })?;
        let p = Parser { text, source };
        let mut config =
            Config { source: source.to_string(), stack: None, stacks: BTreeMap::new(), components: BTreeMap::new() };
        for (key, value) in sorted(doc.get_ref()) {
            let name: &str = key.get_ref();
            match (name, value.get_ref()) {
                ("stack", DeValue::String(s)) => {
                    config.stack = Some(Located { value: s.to_string(), line: p.line(value.span()) })
                }
                ("stack", other) => {
                    return Err(p.error(
                        value.span(),
                        format!("`stack` must be a string naming one of the [stacks], got {}", other.type_str()),
                    ));
                }
                ("stacks", DeValue::Table(table)) => {
                    for (k, v) in sorted(table) {
                        let def = p.stack(k, v)?;
                        config.stacks.insert(def.name.clone(), def);
                    }
                }
                ("stacks", other) => {
                    return Err(p.error(
                        value.span(),
                        format!(
                            "`stacks` must be a table of stacks (`name = [\"top\", ..., \"bottom\"]`), got {}",
                            other.type_str()
                        ),
                    ));
                }
                (_, DeValue::Table(table)) => {
                    let t = p.component(name, p.line(key.span()), table)?;
                    config.components.insert(t.name.clone(), t);
                }
                (_, other) => {
                    return Err(p.error(
                        key.span(),
                        format!(
                            "unknown top-level key `{name}` (a {}): the top level holds `stack`, [stacks] and one \
                             table per component",
                            other.type_str()
                        ),
                    ));
                }
            }
        }
        if let Some(stack) = &config.stack
            && !config.stacks.contains_key(&stack.value)
        {
            return Err(Error::config(
                source,
                stack.line,
                format!("`stack = \"{}\"` names no stack; {}", stack.value, config.known_stacks()),
            ));
        }
        Ok(config)
    }

    /// The embedded default configuration `text` (named [`EMBEDDED_SOURCE`] in errors).
    pub fn embedded(text: &str) -> Result<Config> {
        Config::parse(text, EMBEDDED_SOURCE)
    }

    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<Config> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::config(&source, None, format!("cannot read: {e}")).caused_by(e))?;
        Config::parse(&text, &source)
    }

    /// Finds the configuration file: `explicit` (the path given to `vm_init`), `$VM_CONFIG`,
    /// `./vm.toml`, `$XDG_CONFIG_HOME/vm/config.toml`, `~/.config/vm/config.toml`. `None` means
    /// none was found and the embedded default applies. A file named by `explicit` or
    /// `VM_CONFIG` that does not exist is an error, not a reason to look further. An empty
    /// `explicit` path counts as none. Relative paths are resolved against [`Env::cwd`].
    pub fn locate(explicit: Option<&Path>, env: &Env) -> Result<Option<PathBuf>> {
        if let Some(path) = explicit.filter(|p| !p.as_os_str().is_empty()) {
            return must_exist(env.resolve(path), "the path given to vm_init").map(Some);
        }
        if let Some(path) = env.nonempty("VM_CONFIG") {
            return must_exist(env.resolve(Path::new(path)), "named by VM_CONFIG").map(Some);
        }
        let mut candidates = vec![match env.cwd() {
            Some(cwd) => cwd.join("vm.toml"),
            None => PathBuf::from("./vm.toml"),
        }];
        if let Some(xdg) = env.nonempty("XDG_CONFIG_HOME") {
            candidates.push(Path::new(xdg).join("vm").join("config.toml"));
        }
        if let Some(home) = env.nonempty("HOME") {
            candidates.push(Path::new(home).join(".config").join("vm").join("config.toml"));
        }
        Ok(candidates.into_iter().find(|p| p.is_file()))
    }

    /// The configuration in effect: the file [`Config::locate`] finds, or the embedded default
    /// `default_text`.
    pub fn discover(explicit: Option<&Path>, env: &Env, default_text: &str) -> Result<Config> {
        match Config::locate(explicit, env)? {
            Some(path) => Config::load(&path),
            None => Config::embedded(default_text),
        }
    }

    /// The implementation of component `name`: its table's `impl`, or `name` itself.
    pub fn implementation_of<'a>(&'a self, name: &'a str) -> &'a str {
        self.components.get(name).map_or(name, ComponentTable::implementation)
    }

    /// The stack to build for `choice`, `VM_STACK` read from `env`; and how it was chosen.
    /// Errors name who asked for a stack that does not exist: the caller
    /// ([`REQUESTED_SOURCE`]), the variable, or the file's `stack` key.
    pub fn select_stack(&self, choice: &StackChoice, env: &Env) -> Result<ChosenStack> {
        match choice {
            StackChoice::Named(name) if name.is_empty() => Err(Error::config(
                REQUESTED_SOURCE,
                None,
                "the requested stack name is empty: name one of the configuration's [stacks], or pass no name to \
                 build the stack the configuration chooses",
            )),
            StackChoice::Named(name) => match self.stacks.get(name) {
                Some(def) => Ok(ChosenStack { def: def.clone(), chosen_by: ChosenBy::Caller }),
                None => Err(Error::config(
                    REQUESTED_SOURCE,
                    None,
                    format!("the requested stack `{name}` names no stack of {}; {}", self.source, self.known_stacks()),
                )),
            },
            StackChoice::FromEnv => match env.nonempty("VM_STACK") {
                Some(name) => match self.stacks.get(name) {
                    Some(def) => Ok(ChosenStack { def: def.clone(), chosen_by: ChosenBy::Environment }),
                    None => Err(Error::config(
                        format!("{ENV_SOURCE} VM_STACK"),
                        None,
                        format!("VM_STACK={name} names no stack of {}; {}", self.source, self.known_stacks()),
                    )),
                },
                None => self.own_stack(),
            },
            StackChoice::Config => self.own_stack(),
        }
    }

    /// The configuration's own stack: the `stack` key's, else the only stack there is.
    fn own_stack(&self) -> Result<ChosenStack> {
        if let Some(stack) = &self.stack {
            // Parse checked that it names a stack; a hand-built Config may not.
            return match self.stacks.get(&stack.value) {
                Some(def) => Ok(ChosenStack { def: def.clone(), chosen_by: ChosenBy::File(stack.line) }),
                None => Err(Error::config(
                    &self.source,
                    stack.line,
                    format!("`stack = \"{}\"` names no stack; {}", stack.value, self.known_stacks()),
                )),
            };
        }
        match self.stacks.values().collect::<Vec<_>>()[..] {
            [only] => Ok(ChosenStack { def: only.clone(), chosen_by: ChosenBy::OnlyStack }),
            _ => Err(Error::config(
                &self.source,
                None,
                format!("no stack chosen: add `stack = \"<name>\"` or set VM_STACK; {}", self.known_stacks()),
            )),
        }
    }

    fn known_stacks(&self) -> String {
        if self.stacks.is_empty() {
            "the file defines no [stacks]".to_string()
        } else {
            format!("stacks: {}", self.stacks.keys().cloned().collect::<Vec<_>>().join(", "))
        }
    }
}

/// Parses `text` as one TOML value (`4`, `true`, `"x"`, `[1, 2]`); `None` when it is not one.
/// Environment overrides that do not parse are taken as bare strings by the caller.
pub fn parse_value(text: &str) -> Option<toml::Value> {
    let value = DeValue::parse(text).ok()?;
    Parser { text, source: "" }.value(&value).ok()
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

fn must_exist(path: PathBuf, how: &str) -> Result<PathBuf> {
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(Error::config(path.display().to_string(), None, format!("config file ({how}) is not a file"))),
        Err(e) => {
            Err(Error::config(path.display().to_string(), None, format!("config file ({how}) not found: {e}"))
                .caused_by(e))
        }
    }
}

/// The entries of a table in the order they appear in the text.
fn sorted<'a, 'i>(table: &'a DeTable<'i>) -> Vec<(&'a Spanned<std::borrow::Cow<'i, str>>, &'a Spanned<DeValue<'i>>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

struct Parser<'a> {
    text: &'a str,
    source: &'a str,
}

impl Parser<'_> {
    fn line(&self, span: Range<usize>) -> Option<usize> {
        Some(line_of(self.text, span.start))
    }

    fn error(&self, span: Range<usize>, message: impl std::fmt::Display) -> Error {
        Error::config(self.source, self.line(span), message)
    }

    fn stack(&self, key: &Spanned<std::borrow::Cow<'_, str>>, value: &Spanned<DeValue<'_>>) -> Result<StackDef> {
        let name = key.get_ref().to_string();
        let DeValue::Array(items) = value.get_ref() else {
            return Err(self.error(
                value.span(),
                format!(
                    "stack `{name}` must be an array of component names, top first, got {}",
                    value.get_ref().type_str()
                ),
            ));
        };
        if items.is_empty() {
            return Err(self.error(key.span(), format!("stack `{name}` is empty: list its components, top first")));
        }
        let mut components: Vec<Located<String>> = Vec::new();
        for item in items.iter() {
            let DeValue::String(s) = item.get_ref() else {
                return Err(self.error(
                    item.span(),
                    format!("stack `{name}`: components are named by strings, got {}", item.get_ref().type_str()),
                ));
            };
            if let Some(first) = components.iter().find(|c| c.value == *s) {
                let at = first.line.map_or(String::new(), |l| format!(" (first on line {l})"));
                return Err(self.error(
                    item.span(),
                    format!(
                        "stack `{name}` lists component `{s}` twice{at}: a component has one place in a stack, \
                         so this would be a cycle"
                    ),
                ));
            }
            components.push(Located { value: s.to_string(), line: self.line(item.span()) });
        }
        Ok(StackDef { name, line: self.line(key.span()), components })
    }

    fn component(&self, name: &str, line: Option<usize>, table: &DeTable<'_>) -> Result<ComponentTable> {
        let mut t = ComponentTable { name: name.to_string(), line, implementation: None, values: BTreeMap::new() };
        for (key, value) in sorted(table) {
            let k: &str = key.get_ref();
            if k == IMPL_KEY {
                let DeValue::String(s) = value.get_ref() else {
                    return Err(self.error(
                        value.span(),
                        format!(
                            "[{name}] `{IMPL_KEY}` must be a string naming an implementation, got {}",
                            value.get_ref().type_str()
                        ),
                    ));
                };
                t.implementation = Some(Located { value: s.to_string(), line: self.line(value.span()) });
            } else {
                let setting = SettingValue {
                    value: self.value(value)?,
                    source: self.source.to_string(),
                    line: self.line(key.span()),
                };
                t.values.insert(k.to_string(), setting);
            }
        }
        Ok(t)
    }

    fn value(&self, v: &Spanned<DeValue<'_>>) -> Result<toml::Value> {
        Ok(match v.get_ref() {
            DeValue::String(s) => toml::Value::String(s.to_string()),
            DeValue::Integer(i) => toml::Value::Integer(
                i64::from_str_radix(i.as_str(), i.radix())
                    .map_err(|_| self.error(v.span(), format!("integer {i} does not fit in 64 bits")))?,
            ),
            DeValue::Float(f) => toml::Value::Float(
                f.as_str().parse().map_err(|_| self.error(v.span(), format!("float {f} is not a number")))?,
            ),
            DeValue::Boolean(b) => toml::Value::Boolean(*b),
            DeValue::Datetime(d) => toml::Value::Datetime(*d),
            DeValue::Array(a) => toml::Value::Array(a.iter().map(|x| self.value(x)).collect::<Result<_>>()?),
            DeValue::Table(t) => toml::Value::Table(
                t.iter().map(|(k, x)| Ok((k.get_ref().to_string(), self.value(x)?))).collect::<Result<_>>()?,
            ),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The repository's default configuration, as the C bridge embeds it.
    pub(crate) const DEFAULT_TEXT: &str = vm_config::DEFAULT;

    fn parse_err(text: &str) -> Error {
        Config::parse(text, "test.toml").unwrap_err()
    }

    /// Asserts `e` is a config error in `file` at `line` whose message contains every `words`.
    #[track_caller]
    pub(crate) fn assert_config_err(e: &Error, file: &str, line: Option<usize>, words: &[&str]) {
        let Error::Config { file: f, line: l, message } = e.without_cause() else { panic!("not a config error: {e}") };
        assert_eq!((f.as_str(), *l), (file, line), "wrong place in: {e}");
        for w in words {
            assert!(message.contains(w), "`{w}` missing from: {e}");
        }
        let shown = e.to_string();
        assert!(shown.contains(file), "{shown}");
        if let Some(l) = line {
            assert!(shown.contains(&format!("{file}:{l}:")), "{shown}");
        }
    }

    const SAMPLE: &str = r#"# a comment
stack = "opencl"

[stacks]
cpu     = ["node", "cpu"]
opencl  = ["node",
           "gpu0", "cpu"]

[cpu]
threads = 2
mode = "fast"

[gpu0]
impl = "opencl"
device = 0x1
ratio = 1_0.5
list = [1, "a"]
when = 1979-05-27
inline = { a = 1 }
"#;

    #[test]
    fn parses_stacks_tables_values_and_lines() {
        let c = Config::parse(SAMPLE, "vm.toml").unwrap();
        assert_eq!(c.source, "vm.toml");
        assert_eq!(c.stack, Some(Located { value: "opencl".into(), line: Some(2) }));
        let opencl = &c.stacks["opencl"];
        assert_eq!(opencl.line, Some(6));
        let names: Vec<_> = opencl.components.iter().map(|l| (l.value.as_str(), l.line.unwrap())).collect();
        assert_eq!(names, [("node", 6), ("gpu0", 7), ("cpu", 7)]);
        let cpu = &c.components["cpu"];
        assert_eq!(cpu.line, Some(9));
        assert_eq!(cpu.implementation(), "cpu");
        assert_eq!(cpu.values["threads"], SettingValue { value: 2.into(), source: "vm.toml".into(), line: Some(10) });
        assert_eq!(cpu.values["mode"].value, toml::Value::String("fast".into()));
        let gpu = &c.components["gpu0"];
        assert_eq!(gpu.implementation(), "opencl");
        assert_eq!(gpu.implementation.as_ref().unwrap().line, Some(14));
        assert!(!gpu.values.contains_key("impl"));
        assert_eq!(gpu.values["device"].value, toml::Value::Integer(1));
        assert_eq!(gpu.values["ratio"].value, toml::Value::Float(10.5));
        assert_eq!(gpu.values["list"].value, toml::Value::Array(vec![1.into(), "a".into()]));
        assert!(matches!(gpu.values["when"].value, toml::Value::Datetime(_)));
        assert_eq!(gpu.values["inline"].value.get("a"), Some(&toml::Value::Integer(1)));
        assert_eq!(gpu.values["inline"].line, Some(19));
        assert_eq!(c.implementation_of("gpu0"), "opencl");
        assert_eq!(c.implementation_of("node"), "node");
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let e = parse_err("stack = \"cpu\"\n[stacks]\ncpu = [\"node\",, \"cpu\"]\n");
        assert_config_err(&e, "test.toml", Some(3), &["TOML syntax"]);
        assert!(std::error::Error::source(&e).is_some(), "the TOML parser's error is kept: {e:?}");
        let e = parse_err("[cpu]\nthreads = 1\n\n[cpu]\nthreads = 2\n");
        assert_config_err(&e, "test.toml", Some(4), &["TOML syntax", "duplicate"]);
        let e = parse_err("[cpu]\nthreads = \n");
        assert_config_err(&e, "test.toml", Some(2), &["TOML syntax"]);
        let e = parse_err("[cpu]\nthreads = 99999999999999999999\n");
        assert_config_err(&e, "test.toml", Some(2), &["64 bits"]);
    }

    #[test]
    fn unknown_top_level_keys_are_errors() {
        let e = parse_err("stak = \"cpu\"\n[stacks]\ncpu = [\"cpu\"]\n");
        assert_config_err(&e, "test.toml", Some(1), &["unknown top-level key `stak`"]);
        let e = parse_err("\n\nthreads = 4\n");
        assert_config_err(&e, "test.toml", Some(3), &["`threads`"]);
    }

    #[test]
    fn shape_errors_name_the_key() {
        let e = parse_err("\nstack = 3\n");
        assert_config_err(&e, "test.toml", Some(2), &["`stack`", "integer"]);
        let e = parse_err("stacks = [\"a\"]\n");
        assert_config_err(&e, "test.toml", Some(1), &["`stacks`", "array"]);
        let e = parse_err("[stacks]\ncpu = \"cpu\"\n");
        assert_config_err(&e, "test.toml", Some(2), &["stack `cpu`", "array"]);
        let e = parse_err("[stacks]\ncpu = [\"node\",\n 4]\n");
        assert_config_err(&e, "test.toml", Some(3), &["stack `cpu`", "integer"]);
        let e = parse_err("[stacks]\ncpu = [\"cpu\"]\n[gpu]\nimpl = 1\n");
        assert_config_err(&e, "test.toml", Some(4), &["[gpu]", "`impl`"]);
    }

    #[test]
    fn default_stack_must_exist() {
        let e = parse_err("stack = \"gpu\"\n[stacks]\ncpu = [\"node\", \"cpu\"]\ninterp = [\"interp\"]\n");
        assert_config_err(&e, "test.toml", Some(1), &["`stack = \"gpu\"`", "cpu, interp"]);
        let e = parse_err("stack = \"gpu\"\n");
        assert_config_err(&e, "test.toml", Some(1), &["no [stacks]"]);
    }

    #[test]
    fn empty_stacks_and_cycles_are_errors() {
        let e = parse_err("[stacks]\ncpu = [\"cpu\"]\n\nnone = []\n");
        assert_config_err(&e, "test.toml", Some(4), &["stack `none` is empty"]);
        let e = parse_err("[stacks]\nloop = [\"node\",\n  \"cpu\",\n  \"node\"]\n");
        assert_config_err(&e, "test.toml", Some(4), &["stack `loop`", "`node` twice", "line 2", "cycle"]);
    }

    #[test]
    fn stack_selection() {
        let c = Config::parse("stack = \"b\"\n[stacks]\na = [\"x\"]\nb = [\"y\"]\n", "t.toml").unwrap();
        let select = |choice: &StackChoice, env: &Env| c.select_stack(choice, env).map(|s| (s.def.name, s.chosen_by));
        let with_a = Env::new().with_var("VM_STACK", "a");
        assert_eq!(select(&StackChoice::FromEnv, &Env::new()).unwrap(), ("b".into(), ChosenBy::File(Some(1))));
        assert_eq!(select(&StackChoice::FromEnv, &with_a).unwrap(), ("a".into(), ChosenBy::Environment));
        assert_eq!(select(&StackChoice::FromEnv, &Env::new().with_var("VM_STACK", "")).unwrap().0, "b");
        let e = select(&StackChoice::FromEnv, &Env::new().with_var("VM_STACK", "zz")).unwrap_err();
        assert_config_err(&e, "<environment> VM_STACK", None, &["VM_STACK=zz", "t.toml", "a, b"]);
        // The configuration's own choice and a caller's name do not read VM_STACK.
        assert_eq!(select(&StackChoice::Config, &with_a).unwrap(), ("b".into(), ChosenBy::File(Some(1))));
        assert_eq!(select(&StackChoice::Named("b".into()), &with_a).unwrap(), ("b".into(), ChosenBy::Caller));
        let e = select(&StackChoice::Named("zz".into()), &with_a).unwrap_err();
        assert_config_err(&e, REQUESTED_SOURCE, None, &["the requested stack `zz`", "t.toml", "a, b"]);
        assert!(!e.to_string().contains("VM_STACK"), "{e}");
        let e = select(&StackChoice::Named(String::new()), &with_a).unwrap_err();
        assert_config_err(&e, REQUESTED_SOURCE, None, &["the requested stack name is empty"]);
        assert_eq!(StackChoice::named_or_env(None), StackChoice::FromEnv);
        assert_eq!(StackChoice::named_or_env(Some("a")), StackChoice::Named("a".into()));

        let only = Config::parse("[stacks]\na = [\"x\"]\n", "t.toml").unwrap();
        assert_eq!(only.select_stack(&StackChoice::Config, &Env::new()).unwrap().chosen_by, ChosenBy::OnlyStack);
        let two = Config::parse("[stacks]\na = [\"x\"]\nb = [\"y\"]\n", "t.toml").unwrap();
        let e = two.select_stack(&StackChoice::FromEnv, &Env::new()).unwrap_err();
        assert_config_err(&e, "t.toml", None, &["no stack chosen", "VM_STACK", "a, b"]);
    }

    #[test]
    fn embedded_default_parses_and_picks_cpu() {
        let c = Config::embedded(DEFAULT_TEXT).unwrap();
        assert_eq!(c.source, EMBEDDED_SOURCE);
        assert_eq!(c.select_stack(&StackChoice::Config, &Env::new()).unwrap().def.name, "cpu");
        for (name, comps) in [
            ("cpu", &["node", "cpu", "interp"][..]),
            ("interp", &["node", "interp"]),
            ("opencl", &["node", "opencl", "cpu"]),
            ("cluster", &["cluster", "node", "cpu"]),
        ] {
            let got: Vec<_> = c.stacks[name].components.iter().map(|l| l.value.as_str()).collect();
            assert_eq!(got, comps, "stack {name}");
        }
    }

    #[test]
    fn every_file_in_config_dir_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
        let mut files = Vec::new();
        let mut dirs = vec![dir];
        while let Some(d) = dirs.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "toml") && !path.ends_with("Cargo.toml") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() >= 4, "{files:?}");
        for f in files {
            let c = Config::load(&f).unwrap_or_else(|e| panic!("{e}"));
            c.select_stack(&StackChoice::Config, &Env::new()).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn parse_value_reads_toml_values() {
        assert_eq!(parse_value("4"), Some(toml::Value::Integer(4)));
        assert_eq!(parse_value("-0x10"), None);
        assert_eq!(parse_value("true"), Some(toml::Value::Boolean(true)));
        assert_eq!(parse_value("\"x y\""), Some(toml::Value::String("x y".into())));
        assert_eq!(parse_value("1.5"), Some(toml::Value::Float(1.5)));
        assert_eq!(parse_value("[1, 2]"), Some(toml::Value::Array(vec![1.into(), 2.into()])));
        assert_eq!(parse_value("any"), None);
        assert_eq!(parse_value(""), None);
        assert_eq!(parse_value("99999999999999999999"), None);
    }

    #[test]
    fn line_of_counts_from_one() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 4), 3);
        assert_eq!(line_of("a\n", 99), 2);
    }

    /// A fresh directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(pub PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> TempDir {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("vm-config-test-{}-{tag}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }

        pub(crate) fn write(&self, rel: &str, text: &str) -> PathBuf {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn one_stack(name: &str) -> String {
        format!("stack = \"{name}\"\n[stacks]\n{name} = [\"node\", \"interp\"]\n")
    }

    #[test]
    fn lookup_order() {
        let t = TempDir::new("lookup");
        let cwd = t.0.join("cwd");
        let xdg = t.0.join("xdg");
        let home = t.0.join("home");
        std::fs::create_dir_all(&cwd).unwrap();
        let env = Env::new()
            .with_cwd(&cwd)
            .with_var("XDG_CONFIG_HOME", xdg.to_str().unwrap())
            .with_var("HOME", home.to_str().unwrap());
        let stack_of = |explicit: Option<&Path>, env: &Env| {
            let c = Config::discover(explicit, env, DEFAULT_TEXT).unwrap();
            (c.stack.unwrap().value, c.source)
        };

        // Nothing found: the embedded default.
        assert_eq!(Config::locate(None, &env).unwrap(), None);
        assert_eq!(stack_of(None, &env), ("cpu".into(), EMBEDDED_SOURCE.into()));

        // Each candidate beats the ones after it.
        let home_file = t.write("home/.config/vm/config.toml", &one_stack("home"));
        assert_eq!(stack_of(None, &env), ("home".into(), home_file.display().to_string()));
        let xdg_file = t.write("xdg/vm/config.toml", &one_stack("xdg"));
        assert_eq!(stack_of(None, &env), ("xdg".into(), xdg_file.display().to_string()));
        let local = t.write("cwd/vm.toml", &one_stack("local"));
        assert_eq!(stack_of(None, &env), ("local".into(), local.display().to_string()));
        let named = t.write("named.toml", &one_stack("named"));
        let env2 = env.clone().with_var("VM_CONFIG", named.to_str().unwrap());
        assert_eq!(stack_of(None, &env2).0, "named");
        let explicit = t.write("explicit.toml", &one_stack("explicit"));
        assert_eq!(stack_of(Some(&explicit), &env2).0, "explicit");
        // An empty explicit path or VM_CONFIG counts as none.
        assert_eq!(stack_of(Some(Path::new("")), &env2).0, "named");
        assert_eq!(stack_of(None, &env.clone().with_var("VM_CONFIG", "")).0, "local");
        // Relative VM_CONFIG resolves against the current directory.
        t.write("cwd/rel.toml", &one_stack("rel"));
        assert_eq!(stack_of(None, &env.clone().with_var("VM_CONFIG", "rel.toml")).0, "rel");

        // XDG_CONFIG_HOME without the file falls through to HOME.
        std::fs::remove_file(&local).unwrap();
        std::fs::remove_file(&xdg_file).unwrap();
        assert_eq!(stack_of(None, &env).0, "home");
    }

    #[test]
    fn named_files_that_do_not_exist_are_errors() {
        let t = TempDir::new("missing");
        t.write("vm.toml", &one_stack("local"));
        let env = Env::new().with_cwd(&t.0);
        let missing = t.0.join("nope.toml");
        let e = Config::discover(Some(&missing), &env, DEFAULT_TEXT).unwrap_err();
        assert_config_err(&e, &missing.display().to_string(), None, &["vm_init", "not found"]);
        let e = Config::discover(None, &env.clone().with_var("VM_CONFIG", missing.to_str().unwrap()), DEFAULT_TEXT)
            .unwrap_err();
        assert_config_err(&e, &missing.display().to_string(), None, &["VM_CONFIG", "not found"]);
        let e = Config::discover(Some(&t.0), &env, DEFAULT_TEXT).unwrap_err();
        assert_config_err(&e, &t.0.display().to_string(), None, &["not a file"]);
    }

    #[test]
    fn errors_in_a_found_file_name_that_file() {
        let t = TempDir::new("bad");
        let path = t.write("vm.toml", "stack = \"cpu\"\n[stacks]\ncpu = [\"node\", \"cpu\"]\n[cpu]\nthreads = = 1\n");
        let e = Config::discover(None, &Env::new().with_cwd(&t.0), DEFAULT_TEXT).unwrap_err();
        assert_config_err(&e, &path.display().to_string(), Some(5), &["TOML syntax"]);
    }

    #[test]
    fn env_from_iterator_and_process() {
        let env: Env = [("VM_STACK", "cpu")].into_iter().collect();
        assert_eq!(env.var("VM_STACK"), Some("cpu"));
        assert_eq!(env.vars().count(), 1);
        assert_eq!(env.cwd(), None);
        let p = Env::process();
        assert_eq!(p.cwd(), None);
    }
}
