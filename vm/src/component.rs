//! The contract every manager (VEM) and engine (VE) of a stack implements, and the settings and
//! constructor each one registers under its implementation name.

use crate::instr::Instruction;
use crate::memory::HostMemory;
use crate::opcode::Opcode;
use crate::{Error, Result};
use std::collections::BTreeMap;

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

/// One setting an implementation accepts.
#[derive(Debug, Clone, Copy)]
pub struct SettingSpec {
    /// The key in the component's TOML table.
    pub key: &'static str,
    /// Its default, as TOML text (`0`, `"any"`, `true`).
    pub default: &'static str,
    /// What it means.
    pub doc: &'static str,
    /// For a setting that takes integers, the least and the greatest value accepted (both
    /// included). [`crate::stack::StackPlan::new`] rejects an integer outside it, naming the key
    /// and the limits, so that a setting cannot ask for more than the machine or the engine can
    /// give (a million threads, say) and fail later, half-built. Values of other types are left
    /// to the constructor's typed getters ([`Settings::usize`], [`Settings::string`], ...).
    pub range: Option<(i64, i64)>,
}

impl SettingSpec {
    /// The accepted values of [`SettingSpec::range`] in words: `0 to 1024`, `1 or more`.
    pub fn range_text(&self) -> Option<String> {
        self.range.map(|(lo, hi)| match (lo, hi) {
            (lo, i64::MAX) => format!("{lo} or more"),
            (i64::MIN, hi) => format!("{hi} or less"),
            (lo, hi) => format!("{lo} to {hi}"),
        })
    }

    /// Checks `value` against [`SettingSpec::range`]: `Err` with the accepted values in words
    /// when it is an integer outside the range.
    pub fn check_range(&self, value: &toml::Value) -> std::result::Result<(), String> {
        match (self.range, value) {
            (Some((lo, hi)), toml::Value::Integer(i)) if *i < lo || *i > hi => {
                Err(self.range_text().unwrap_or_default())
            }
            _ => Ok(()),
        }
    }
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

    /// The settings as text pairs, for [`ComponentInfo`].
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        self.values.iter().map(|(k, v)| (k.clone(), v.value.to_string())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let spec = |range| SettingSpec { key: "k", default: "0", doc: "", range };
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
