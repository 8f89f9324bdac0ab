//! Component settings: what an implementation accepts ([`SettingSpec`]), the values a planned
//! stack gives one component ([`Settings`]), and the [`settings!`](crate::settings!) macro that
//! declares a component's settings once, as a typed struct.
//!
//! A setting is declared in one place, a field of the component's settings struct:
//!
//! ```
//! vm_runtime::settings! {
//!     /// The settings of a `demo` engine.
//!     pub struct DemoSettings {
//!         /// worker threads; 0 = one per core
//!         #[range(0, 64)]
//!         threads: usize = 0,
//!         /// how hard to optimise
//!         #[choice("none", "speed")]
//!         opt_level: String = "none",
//!         /// print statistics at shutdown
//!         #[env_switch("VM_PROFILE")]
//!         profile: bool = false,
//!     }
//! }
//! use vm_runtime::settings::{SettingKind, Settings};
//!
//! assert_eq!(DemoSettings::SPECS[0].key, "threads");
//! assert_eq!(DemoSettings::SPECS[0].kind, SettingKind::Integer);
//! assert_eq!(DemoSettings::SPECS[1].default, "\"none\"");
//! assert_eq!(DemoSettings::SPECS[2].doc, "print statistics at shutdown");
//! let s = DemoSettings::from_settings(&Settings::from_pairs("demo", &[("threads", 4.into())])).unwrap();
//! assert_eq!(s, DemoSettings { threads: 4, ..DemoSettings::default() });
//! assert_eq!(s.to_pairs()[1], ("opt_level".to_string(), "\"none\"".to_string()));
//! ```
//!
//! From that one declaration come the keys a config table accepts and their types, ranges and
//! defaults ([`SettingSpec`]s, which the stack planner checks and `vm info` prints), the
//! `VM_<COMPONENT>_<KEY>` environment overrides (derived from the keys by
//! [`crate::stack::StackPlan::new`]), the struct's `Default`, and reading it from a planned
//! component's [`Settings`].

use std::collections::BTreeMap;
use vm_ir::{Error, Result};

/// The type of a setting's values, as a config file writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// An integer (`threads = 4`).
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A string (`opt_level = "speed"`).
    String,
    /// One of several things picked by position or by name: a non-negative integer or a
    /// string (`device = 1`, `device = "A100"`).
    IndexOrName,
}

impl SettingKind {
    /// Whether a value of this kind may be written as `value`. (Ranges and choices are checked
    /// separately.)
    pub fn accepts(self, value: &toml::Value) -> bool {
        matches!(
            (self, value),
            (SettingKind::Integer, toml::Value::Integer(_))
                | (SettingKind::Boolean, toml::Value::Boolean(_))
                | (SettingKind::String | SettingKind::IndexOrName, toml::Value::String(_))
                | (SettingKind::IndexOrName, toml::Value::Integer(0..))
        )
    }
}

/// One setting an implementation accepts. Settings structs declared with
/// [`settings!`](crate::settings!) make these; a component without settings declares none.
#[derive(Debug, Clone, Copy)]
pub struct SettingSpec {
    /// The key in the component's TOML table.
    pub key: &'static str,
    /// The type of its values.
    pub kind: SettingKind,
    /// Its default, as TOML text (`0`, `"any"`, `true`).
    pub default: &'static str,
    /// What it means, as `vm info` prints it.
    pub doc: &'static str,
    /// For a setting that takes integers, the least and the greatest value accepted (both
    /// included). [`crate::stack::StackPlan::new`] rejects an integer outside it, naming the key
    /// and the limits, so that a setting cannot ask for more than the machine or the engine can
    /// give (a million threads, say) and fail later, half-built.
    pub range: Option<(i64, i64)>,
    /// For a string setting, the values accepted (empty: any string).
    pub choices: &'static [&'static str],
    /// For a boolean setting, a process-wide variable (`VM_PROFILE`) that, set and not `0`,
    /// turns the setting on in every component of the stack that declares it; or a variable
    /// and a word (`VM_TRACE=passes`): the variable, a comma-separated list, names the word.
    pub env_switch: Option<&'static str>,
}

impl SettingSpec {
    /// True when this setting's [`SettingSpec::env_switch`] is on in `env`.
    pub fn switched_on(&self, env: &crate::config::Env) -> bool {
        let Some(switch) = self.env_switch else { return false };
        match switch.split_once('=') {
            Some((var, word)) => env.var(var).is_some_and(|v| v.split(',').any(|w| w.trim() == word)),
            None => env.var(switch).is_some_and(|v| !v.is_empty() && v != "0"),
        }
    }

    /// A setting with no range, no choices and no switch.
    pub const fn new(key: &'static str, kind: SettingKind, default: &'static str, doc: &'static str) -> SettingSpec {
        SettingSpec { key, kind, default, doc, range: None, choices: &[], env_switch: None }
    }

    /// This setting accepting integers from `lo` to `hi` (both included).
    pub const fn with_range(self, lo: i64, hi: i64) -> SettingSpec {
        SettingSpec { range: Some((lo, hi)), ..self }
    }

    /// The accepted values of [`SettingSpec::range`] in words: `0 to 1024`, `1 or more`.
    pub fn range_text(&self) -> Option<String> {
        self.range.map(|(lo, hi)| match (lo, hi) {
            (lo, i64::MAX) => format!("{lo} or more"),
            (i64::MIN, hi) => format!("{hi} or less"),
            (lo, hi) => format!("{lo} to {hi}"),
        })
    }

    /// Checks `value` against [`SettingSpec::range`]: `Err` with the accepted values in words
    /// when it is an integer outside the range. Values of other types are left to the typed
    /// getters ([`Settings::usize`], [`Settings::string`], ...).
    pub fn check_range(&self, value: &toml::Value) -> std::result::Result<(), String> {
        match (self.range, value) {
            (Some((lo, hi)), toml::Value::Integer(i)) if *i < lo || *i > hi => {
                Err(self.range_text().unwrap_or_default())
            }
            _ => Ok(()),
        }
    }

    /// The default as a TOML value; `None` when [`SettingSpec::default`] is not TOML value text
    /// (a bug the stack builder's registry reports).
    pub fn default_value(&self) -> Option<toml::Value> {
        crate::config::parse_value(self.default)
    }
}

/// A setting's value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingValue {
    /// The value.
    pub value: toml::Value,
    /// The file (or `<environment>`) that set it.
    pub source: String,
    /// Its 1-based line, when from a file.
    pub line: Option<usize>,
}

/// The effective settings of one component: its config table, overridden by `VM_<NAME>_<KEY>`,
/// filled in with the implementation's defaults. Only declared keys are present.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// The component's name in the stack (its config table).
    pub component: String,
    /// The values by key.
    pub values: BTreeMap<String, SettingValue>,
}

impl Settings {
    /// Settings of `component` from plain key/values (tests and programmatic stacks).
    pub fn from_pairs(component: &str, pairs: &[(&str, toml::Value)]) -> Settings {
        let values = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), SettingValue { value: v.clone(), source: "<code>".into(), line: None }))
            .collect();
        Settings { component: component.into(), values }
    }

    fn wrong(&self, key: &str, want: &str) -> Error {
        let v = &self.values[key];
        Error::config(v.source.clone(), v.line, format!("[{}] {key} must be {want}, got {}", self.component, v.value))
    }

    /// Checks the value of `spec.key`, when present, against `spec`'s range: the error names the
    /// component, the key, the value, where it was set (file and line, or the variable) and the
    /// values accepted.
    pub fn check_range(&self, spec: &SettingSpec) -> Result<()> {
        let Some(v) = self.values.get(spec.key) else { return Ok(()) };
        spec.check_range(&v.value).map_err(|accepted| {
            Error::config(
                &v.source,
                v.line,
                format!("[{}] {} = {} is out of range: accepted are {accepted}", self.component, spec.key, v.value),
            )
        })
    }

    /// An integer setting, or `default` when absent.
    pub fn int(&self, key: &str, default: i64) -> Result<i64> {
        match self.values.get(key).map(|v| &v.value) {
            None => Ok(default),
            Some(toml::Value::Integer(i)) => Ok(*i),
            Some(_) => Err(self.wrong(key, "an integer")),
        }
    }

    /// A non-negative integer setting, or `default` when absent.
    pub fn usize(&self, key: &str, default: usize) -> Result<usize> {
        let i = self.int(key, default as i64)?;
        usize::try_from(i).map_err(|_| self.wrong(key, "a non-negative integer"))
    }

    /// A boolean setting, or `default` when absent.
    pub fn bool(&self, key: &str, default: bool) -> Result<bool> {
        match self.values.get(key).map(|v| &v.value) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(_) => Err(self.wrong(key, "true or false")),
        }
    }

    /// A string setting, or `default` when absent.
    pub fn string(&self, key: &str, default: &str) -> Result<String> {
        match self.values.get(key).map(|v| &v.value) {
            None => Ok(default.to_string()),
            Some(toml::Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    /// A setting that picks one of several things by position or by name (an OpenCL device,
    /// say), or `default` when absent: an integer, which must not be negative, comes back as its
    /// decimal text; a string comes back as written, for the caller to read as an index when it
    /// is all digits and as a name otherwise. Users write `device = 1` as readily as
    /// `device = "1"` or `device = "Tesla"`, so both types are accepted.
    pub fn index_or_name(&self, key: &str, default: &str) -> Result<String> {
        match self.values.get(key).map(|v| &v.value) {
            None => Ok(default.to_string()),
            Some(toml::Value::String(s)) => Ok(s.clone()),
            Some(toml::Value::Integer(i)) if *i >= 0 => Ok(i.to_string()),
            Some(_) => Err(self.wrong(key, "an index (an integer, 0 or more) or a name (a string)")),
        }
    }

    /// A string setting that must be one of `allowed`, or `default` when absent.
    pub fn choice(&self, key: &str, default: &str, allowed: &[&str]) -> Result<String> {
        let v = self.string(key, default)?;
        if allowed.contains(&v.as_str()) {
            return Ok(v);
        }
        Err(self.wrong(
            key,
            &format!("one of {}", allowed.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ")),
        ))
    }

    /// The settings as text pairs, for [`crate::ComponentInfo`].
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        self.values.iter().map(|(k, v)| (k.clone(), v.value.to_string())).collect()
    }
}

/// A Rust type a field of a settings struct may have: how its default is written, how it is
/// read from [`Settings`], and how `vm info` shows it.
pub trait SettingType: Sized {
    /// The type of the literal the struct writes the default as (`0`, `false`, `"none"`).
    type Literal;
    /// The type of its values in a config file.
    const KIND: SettingKind;
    /// The value of a default literal.
    fn from_literal(literal: Self::Literal) -> Self;
    /// The value of `spec.key` in `settings`, or `default` when absent; an error names the file
    /// and line (or the variable) when the value has the wrong type or is not one of
    /// `spec.choices`.
    fn read(settings: &Settings, spec: &SettingSpec, default: Self) -> Result<Self>;
    /// The value as TOML, for `vm info`.
    fn to_toml(&self) -> toml::Value;
}

impl SettingType for usize {
    type Literal = usize;
    const KIND: SettingKind = SettingKind::Integer;
    fn from_literal(literal: usize) -> usize {
        literal
    }
    fn read(settings: &Settings, spec: &SettingSpec, default: usize) -> Result<usize> {
        settings.usize(spec.key, default)
    }
    fn to_toml(&self) -> toml::Value {
        toml::Value::Integer(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl SettingType for bool {
    type Literal = bool;
    const KIND: SettingKind = SettingKind::Boolean;
    fn from_literal(literal: bool) -> bool {
        literal
    }
    fn read(settings: &Settings, spec: &SettingSpec, default: bool) -> Result<bool> {
        settings.bool(spec.key, default)
    }
    fn to_toml(&self) -> toml::Value {
        toml::Value::Boolean(*self)
    }
}

impl SettingType for String {
    type Literal = &'static str;
    const KIND: SettingKind = SettingKind::String;
    fn from_literal(literal: &'static str) -> String {
        literal.to_string()
    }
    fn read(settings: &Settings, spec: &SettingSpec, default: String) -> Result<String> {
        if spec.choices.is_empty() {
            settings.string(spec.key, &default)
        } else {
            settings.choice(spec.key, &default, spec.choices)
        }
    }
    fn to_toml(&self) -> toml::Value {
        toml::Value::String(self.clone())
    }
}

/// The value of an [`SettingKind::IndexOrName`] setting: an index, as its decimal text, or a
/// name; empty when the setting picks nothing in particular. Reads as the text (`&str`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexOrName(pub String);

impl std::ops::Deref for IndexOrName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl SettingType for IndexOrName {
    type Literal = &'static str;
    const KIND: SettingKind = SettingKind::IndexOrName;
    fn from_literal(literal: &'static str) -> IndexOrName {
        IndexOrName(literal.to_string())
    }
    fn read(settings: &Settings, spec: &SettingSpec, default: IndexOrName) -> Result<IndexOrName> {
        settings.index_or_name(spec.key, &default.0).map(IndexOrName)
    }
    fn to_toml(&self) -> toml::Value {
        toml::Value::String(self.0.clone())
    }
}

/// The declared setting `key` of `specs` (a settings struct's own list, so it is always there).
#[doc(hidden)]
pub fn spec<'a>(specs: &'a [SettingSpec], key: &str) -> &'a SettingSpec {
    specs.iter().find(|s| s.key == key).expect("a settings struct declares each of its fields")
}

/// A doc comment's text as one line: the lines of `/// text` come as ` text` each.
#[doc(hidden)]
pub const fn doc_line(doc: &'static str) -> &'static str {
    doc.trim_ascii()
}

/// Declares the settings of a component as a struct, once: each field is a setting, its doc
/// comment what `vm info` says about it, its type the values it takes ([`SettingType`]: `usize`,
/// `bool`, `String`, [`IndexOrName`]) and the literal after `=` its default. Optional attributes
/// after the doc comment, in this order: `#[range(lo, hi)]` (integers accepted, both included),
/// `#[choice("a", "b")]` (strings accepted), `#[env_switch("VM_PROFILE")]` (a variable that turns
/// a boolean on).
///
/// The struct gets public fields, `Debug`, `Clone`, `PartialEq`, a `Default` of the declared
/// defaults, and:
/// - `SPECS: &[SettingSpec]`, for [`crate::Implementation::settings`];
/// - `from_settings(&Settings) -> Result<Self>`, which checks ranges and types and fills in the
///   defaults of absent keys;
/// - `to_pairs(&self) -> Vec<(String, String)>`, the values as `vm info` shows them.
///
/// See the [module documentation](mod@crate::settings) for an example.
#[macro_export]
macro_rules! settings {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[range($lo:expr, $hi:expr)])?
                $(#[choice($($choice:literal),+ $(,)?)])?
                $(#[env_switch($switch:literal)])?
                $field:ident : $ty:ty = $default:literal
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $name {
            $(
                $(#[doc = $doc])*
                pub $field: $ty,
            )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                $name {
                    $( $field: <$ty as $crate::settings::SettingType>::from_literal($default), )*
                }
            }
        }

        impl $name {
            /// The settings this struct declares, for the stack builder and `vm info`.
            pub const SPECS: &'static [$crate::settings::SettingSpec] = &[
                $(
                    $crate::settings::SettingSpec {
                        key: stringify!($field),
                        kind: <$ty as $crate::settings::SettingType>::KIND,
                        default: stringify!($default),
                        doc: $crate::settings::doc_line(concat!($($doc),*)),
                        range: $crate::__setting_range!($($lo, $hi)?),
                        choices: &[$($($choice),+)?],
                        env_switch: $crate::__setting_switch!($($switch)?),
                    },
                )*
            ];

            /// Reads the settings of a planned component (absent keys take their defaults);
            /// a value of the wrong type, out of range or not among the choices is an error
            /// naming where it was set.
            pub fn from_settings(settings: &$crate::settings::Settings) -> ::vm_ir::Result<Self> {
                for spec in Self::SPECS {
                    settings.check_range(spec)?;
                }
                let defaults = Self::default();
                Ok($name {
                    $(
                        $field: <$ty as $crate::settings::SettingType>::read(
                            settings,
                            $crate::settings::spec(Self::SPECS, stringify!($field)),
                            defaults.$field,
                        )?,
                    )*
                })
            }

            /// Checks values set in code (not read from a config) as a config's are: a value out
            /// of its range or not among its choices is the error [`Self::from_settings`] gives,
            /// naming `component`.
            pub fn validate(&self, component: &str) -> ::vm_ir::Result<()> {
                let pairs = [$((stringify!($field), $crate::settings::SettingType::to_toml(&self.$field)),)*];
                Self::from_settings(&$crate::settings::Settings::from_pairs(component, &pairs)).map(|_| ())
            }

            /// The values, key and TOML text, as `vm info` shows them.
            pub fn to_pairs(&self) -> ::std::vec::Vec<(::std::string::String, ::std::string::String)> {
                ::std::vec![
                    $(
                        (
                            stringify!($field).to_string(),
                            $crate::settings::SettingType::to_toml(&self.$field).to_string(),
                        ),
                    )*
                ]
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __setting_range {
    () => {
        None
    };
    ($lo:expr, $hi:expr) => {
        Some(($lo as i64, $hi as i64))
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __setting_switch {
    () => {
        None
    };
    ($var:literal) => {
        Some($var)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_is_a_variable_set_and_not_0_or_a_word_in_a_variable_s_list() {
        use crate::config::Env;
        let plain =
            SettingSpec { env_switch: Some("VM_PROFILE"), ..SettingSpec::new("p", SettingKind::Boolean, "false", "") };
        let word = SettingSpec {
            env_switch: Some("VM_TRACE=passes"),
            ..SettingSpec::new("t", SettingKind::Boolean, "false", "")
        };
        let env = |v: &str| Env::new().with_var("VM_PROFILE", v).with_var("VM_TRACE", v);
        for (value, plain_on, word_on) in [
            ("1", true, false),
            ("0", false, false),
            ("", false, false),
            ("passes", true, true),
            ("1, passes", true, true),
        ] {
            assert_eq!(plain.switched_on(&env(value)), plain_on, "VM_PROFILE={value:?}");
            assert_eq!(word.switched_on(&env(value)), word_on, "VM_TRACE={value:?}");
        }
        assert!(
            !word.switched_on(&Env::new())
                && !SettingSpec::new("x", SettingKind::Boolean, "false", "").switched_on(&env("1"))
        );
    }

    crate::settings! {
        /// A component's settings, one of each kind.
        struct Demo {
            /// worker
            /// threads
            #[range(0, 8)]
            threads: usize = 2,
            /// the level
            #[choice("none", "speed")]
            level: String = "none",
            /// a device
            device: IndexOrName = "",
            /// statistics
            #[env_switch("VM_PROFILE")]
            profile: bool = false,
        }
    }

    #[test]
    fn the_struct_gives_specs_defaults_and_values() {
        let specs = Demo::SPECS;
        let keys: Vec<_> = specs.iter().map(|s| (s.key, s.kind, s.default, s.doc)).collect();
        assert_eq!(
            keys,
            [
                ("threads", SettingKind::Integer, "2", "worker threads"),
                ("level", SettingKind::String, "\"none\"", "the level"),
                ("device", SettingKind::IndexOrName, "\"\"", "a device"),
                ("profile", SettingKind::Boolean, "false", "statistics"),
            ]
        );
        assert_eq!(specs[0].range, Some((0, 8)));
        assert_eq!(specs[1].choices, ["none", "speed"]);
        assert_eq!((specs[2].range, specs[2].choices.len(), specs[2].env_switch), (None, 0, None));
        assert_eq!(specs[3].env_switch, Some("VM_PROFILE"));
        for s in specs {
            assert!(s.kind.accepts(&s.default_value().unwrap()), "{}", s.key);
        }
        let d = Demo::default();
        assert_eq!(d, Demo { threads: 2, level: "none".into(), device: IndexOrName::default(), profile: false });
        assert_eq!(Demo::from_settings(&Settings::default()).unwrap(), d);
        let s = Settings::from_pairs("demo", &[("device", 3.into()), ("level", "speed".into())]);
        let got = Demo::from_settings(&s).unwrap();
        assert_eq!((&*got.device, got.level.as_str()), ("3", "speed"));
        let pairs = got.to_pairs();
        assert_eq!(pairs[0], ("threads".into(), "2".into()));
        assert_eq!(pairs[2], ("device".into(), "\"3\"".into()));
    }

    #[test]
    fn reading_checks_types_choices_and_ranges() {
        let read = |k: &str, v: toml::Value| Demo::from_settings(&Settings::from_pairs("demo", &[(k, v)]));
        let e = read("threads", 9.into()).unwrap_err().to_string();
        assert_eq!(e, "config <code>: [demo] threads = 9 is out of range: accepted are 0 to 8");
        let e = read("threads", "many".into()).unwrap_err().to_string();
        assert!(e.contains("[demo] threads must be an integer"), "{e}");
        let e = read("level", "fast".into()).unwrap_err().to_string();
        assert!(e.contains("[demo] level must be one of \"none\", \"speed\", got \"fast\""), "{e}");
        let e = read("device", (-1).into()).unwrap_err().to_string();
        assert!(e.contains("[demo] device must be an index"), "{e}");
    }

    #[test]
    fn values_set_in_code_are_checked_as_a_config_s() {
        assert!(Demo::default().validate("demo").is_ok());
        let e = Demo { threads: 9, ..Demo::default() }.validate("demo").unwrap_err().to_string();
        assert!(e.contains("[demo] threads = 9 is out of range: accepted are 0 to 8"), "{e}");
        let e = Demo { level: "fast".into(), ..Demo::default() }.validate("demo").unwrap_err().to_string();
        assert!(e.contains("[demo] level"), "{e}");
    }

    #[test]
    fn kinds_accept_their_values() {
        use toml::Value;
        assert!(SettingKind::Integer.accepts(&Value::Integer(-3)));
        assert!(!SettingKind::Integer.accepts(&Value::String("3".into())));
        assert!(SettingKind::IndexOrName.accepts(&Value::Integer(0)));
        assert!(!SettingKind::IndexOrName.accepts(&Value::Integer(-1)));
        assert!(SettingKind::IndexOrName.accepts(&Value::String("A100".into())));
        assert!(SettingKind::Boolean.accepts(&Value::Boolean(true)));
        assert!(!SettingKind::String.accepts(&Value::Boolean(true)));
    }

    #[test]
    fn typed_getters_report_wrong_types_with_location() {
        let mut s = Settings::from_pairs("cpu", &[("threads", toml::Value::String("many".into()))]);
        s.values.get_mut("threads").unwrap().line = Some(7);
        s.values.get_mut("threads").unwrap().source = "vm.toml".into();
        let e = s.int("threads", 0).unwrap_err();
        assert_eq!(e.to_string(), "config vm.toml:7: [cpu] threads must be an integer, got \"many\"");
        assert!(s.bool("verbose", true).unwrap());
    }

    #[test]
    fn index_or_name_takes_integers_and_strings() {
        let s = Settings::from_pairs(
            "gpu1",
            &[
                ("device", toml::Value::Integer(1)),
                ("platform", toml::Value::String("pocl".into())),
                ("negative", toml::Value::Integer(-1)),
                ("flag", toml::Value::Boolean(true)),
            ],
        );
        assert_eq!(s.index_or_name("device", "").unwrap(), "1");
        assert_eq!(s.index_or_name("platform", "").unwrap(), "pocl");
        assert_eq!(s.index_or_name("absent", "any").unwrap(), "any");
        for key in ["negative", "flag"] {
            let e = s.index_or_name(key, "").unwrap_err().to_string();
            assert!(e.contains(&format!("[gpu1] {key} must be an index (an integer, 0 or more) or a name")), "{e}");
        }
    }

    #[test]
    fn ranges_in_words_and_checks() {
        let spec = |range: Option<(i64, i64)>| {
            let s = SettingSpec::new("k", SettingKind::Integer, "0", "");
            match range {
                Some((lo, hi)) => s.with_range(lo, hi),
                None => s,
            }
        };
        assert_eq!(spec(Some((0, 1024))).range_text().as_deref(), Some("0 to 1024"));
        assert_eq!(spec(Some((1, i64::MAX))).range_text().as_deref(), Some("1 or more"));
        assert_eq!(spec(None).range_text(), None);
        let s = spec(Some((0, 1024)));
        assert!(s.check_range(&toml::Value::Integer(1024)).is_ok());
        assert!(s.check_range(&toml::Value::Integer(0)).is_ok());
        assert_eq!(s.check_range(&toml::Value::Integer(1025)), Err("0 to 1024".to_string()));
        assert!(s.check_range(&toml::Value::Integer(-1)).is_err());
        assert!(s.check_range(&toml::Value::String("many".into())).is_ok());
    }
}
