//! The stacks a run compares: named stacks of the config in effect, stacks of config files given
//! with `--config`, and the `eager` baseline (`node -> interp`, built from a config of its own so
//! that it exists whatever the user's config says). Also reads JIT statistics from what the
//! engines report in [`ComponentInfo`] notes.

use serde::Serialize;
use std::path::{Path, PathBuf};
use vm_core::component::{ComponentInfo, SettingValue};
use vm_core::config::{Config, Env};
use vm_core::frontend::Vm;
use vm_core::stack::StackPlan;
use vm_core::{Result, Runtime, RuntimeOptions};

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
    pub fn plan(&self, threads: Option<usize>) -> Result<StackPlan> {
        let registry = vm::engines::registry()?;
        let env = Env::process();
        let mut plan = if self.eager {
            let env = env.with_var("VM_STACK", "interp");
            StackPlan::new(&Config::parse(EAGER_CONFIG, EAGER_SOURCE)?, &registry, &env)?
        } else {
            vm::engines::plan(self.config.as_deref(), self.stack.as_deref(), &env)?
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
        Ok(plan)
    }

    /// Builds the stack (see [`StackSpec::plan`]) and returns a VM over it, with the plan.
    pub fn build(&self, threads: Option<usize>) -> Result<(Vm, StackPlan)> {
        let plan = self.plan(threads)?;
        let top = plan.build(&vm::engines::registry()?)?;
        Ok((Vm::new(Runtime::new(top, RuntimeOptions::from_env(&Env::process()))), plan))
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
    Ok(Config::discover(config, &Env::process())?.stacks.keys().cloned().collect())
}

/// Why stack `name` of `config` cannot be built here, or `None` when it can.
pub fn unavailable(config: Option<&Path>, name: &str) -> Option<String> {
    match StackSpec::new(config, Some(name)).build(None) {
        Ok((vm, _)) => vm.shutdown().err().map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    }
}

/// JIT statistics an engine reports, totals over the life of one VM.
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
    /// True when nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.compile_ms.is_none() && self.cache_hits.is_none() && self.cache_misses.is_none()
    }

    fn add(&mut self, other: EngineStats) {
        fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        }
        self.compile_ms = sum(self.compile_ms, other.compile_ms);
        self.cache_hits = sum(self.cache_hits, other.cache_hits);
        self.cache_misses = sum(self.cache_misses, other.cache_misses);
    }
}

/// A duration with its unit (`0.4ms`, `350us`, `1.2 s`) in milliseconds.
fn duration_ms(number: f64, unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(number / 1e6),
        "us" | "µs" => Some(number / 1e3),
        "ms" => Some(number),
        "s" | "sec" | "secs" => Some(number * 1e3),
        _ => None,
    }
}

/// Splits `"12.5ms"` into `(12.5, "ms")`.
fn split_number(token: &str) -> Option<(f64, &str)> {
    let end = token.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(token.len());
    let n = token[..end].parse().ok()?;
    Some((n, &token[end..]))
}

/// Reads JIT statistics from one note. Understands `key=value` / `key: value` pairs
/// (`hits=12`, `misses=3`, `compiled=3`, `compile_ms=1.5`, `compile_time=1.5ms`) and prose such
/// as `12 hits`, `3 misses`, `3 compiled`, `compile 1.5 ms`, in any order; notes that do not
/// mention the kernel cache or compiling are ignored.
pub fn parse_note(note: &str) -> EngineStats {
    let lower = note.to_lowercase();
    if !(lower.contains("cache") || lower.contains("compil") || lower.contains("kernel")) {
        return EngineStats::default();
    }
    let tokens: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '=' | ':'))
        .filter(|t| !t.is_empty())
        .collect();
    let mut stats = EngineStats::default();
    let is_hits = |w: &str| w == "hit" || w == "hits" || w.ends_with("_hits");
    let is_misses =
        |w: &str| matches!(w, "miss" | "misses" | "compiled" | "compiles" | "compilations") || w.ends_with("_misses");
    let is_time = |w: &str| w.starts_with("compile") && !is_misses(w);
    for (i, tok) in tokens.iter().enumerate() {
        let Some((n, unit)) = split_number(tok) else { continue };
        let prev = i.checked_sub(1).map(|p| tokens[p]);
        let next = tokens.get(i + 1).copied();
        // A unit may follow as its own token ("1.5 ms").
        let (unit, after) = if unit.is_empty() && next.is_some_and(|u| duration_ms(1.0, u).is_some()) {
            (next.unwrap_or(""), tokens.get(i + 2).copied())
        } else {
            (unit, next)
        };
        let key_ms = prev.is_some_and(|p| p.ends_with("_ms"));
        let timed = duration_ms(n, unit).or(if key_ms { Some(n) } else { None });
        if let Some(ms) = timed {
            if prev.is_some_and(is_time) || lower.contains("compile") && stats.compile_ms.is_none() {
                stats.compile_ms = Some(ms);
            }
            continue;
        }
        // "hits=120" (a key before wins), then "120 hits" or "120 cache hits".
        let later = [after, tokens.get(i + 2).copied()];
        let later_is = |f: &dyn Fn(&str) -> bool| later.iter().flatten().any(|w| f(w));
        if prev.is_some_and(is_hits) || !prev.is_some_and(is_misses) && later_is(&is_hits) {
            stats.cache_hits = Some(n as u64);
        } else if prev.is_some_and(is_misses) || later_is(&is_misses) {
            stats.cache_misses = Some(n as u64);
        }
    }
    stats
}

/// The JIT statistics of a stack: the sum over its components' notes.
pub fn engine_stats(infos: &[ComponentInfo]) -> EngineStats {
    let mut total = EngineStats::default();
    for info in infos {
        for note in &info.notes {
            total.add(parse_note(note));
        }
    }
    total
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
        let eager = StackSpec::eager().plan(None).unwrap();
        let imps: Vec<&str> = eager.components.iter().map(|c| c.implementation.as_str()).collect();
        assert_eq!(imps, ["node", "interp"]);
        let cpu = StackSpec::new(None, Some("cpu")).plan(Some(3)).unwrap();
        let c = cpu.components.iter().find(|c| c.implementation == "cpu").unwrap();
        assert_eq!(c.settings.values["threads"].value, toml::Value::Integer(3));
    }

    #[test]
    fn notes_in_several_styles_give_the_statistics() {
        let s = parse_note("kernel cache: hits=120 misses=4 compile_ms=1.25");
        assert_eq!(s, EngineStats { compile_ms: Some(1.25), cache_hits: Some(120), cache_misses: Some(4) });
        let s = parse_note("kernels: 4 compiled in 0.9 ms, 120 cache hits");
        assert_eq!(s, EngineStats { compile_ms: Some(0.9), cache_hits: Some(120), cache_misses: Some(4) });
        let s = parse_note("compile time: 350us; cache hits: 7");
        assert_eq!(s.compile_ms, Some(0.35));
        assert_eq!(s.cache_hits, Some(7));
        // The cpu engine's note as of this writing.
        let s = parse_note("12 kernels compiled, cache hits 340 / misses 12");
        assert_eq!(s, EngineStats { compile_ms: None, cache_hits: Some(340), cache_misses: Some(12) });
        let s = parse_note("cache hits 340 / misses 12, compile 3.5 ms");
        assert_eq!(s.compile_ms, Some(3.5));
        assert!(parse_note("Cranelift JIT, 2 threads").is_empty());
        assert!(parse_note("reference engine: one instruction at a time, host memory").is_empty());
        assert!(parse_note("threads=2").is_empty());
    }

    #[test]
    fn statistics_add_up_over_components() {
        let info = |notes: &[&str]| ComponentInfo {
            name: "x".into(),
            implementation: "x".into(),
            settings: vec![],
            notes: notes.iter().map(|s| s.to_string()).collect(),
        };
        let s = engine_stats(&[info(&["cache hits=2"]), info(&["cache hits=3 misses=1"])]);
        assert_eq!(s.cache_hits, Some(5));
        assert_eq!(s.cache_misses, Some(1));
        assert_eq!(s.compile_ms, None);
    }
}
