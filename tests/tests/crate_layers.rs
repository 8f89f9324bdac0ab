//! The crate layers and the documented crate map, checked against `cargo metadata`.
//!
//! Every workspace crate has a place in [`LAYERS`], and its normal dependencies (build
//! dependencies count as normal: they are linked into what ships) lie in lower layers only, so
//! the crates of one layer never depend on each other: no engine on another engine, neither
//! bridge on the other. Dev-dependencies are free (an engine's tests may run another engine as
//! the oracle or a fallback), but the test kit is a dev-dependency only.
//!
//! The crate map of `docs/architecture.md` (the table under "The crates") is compared with the
//! same graph, edge by edge, so that the document stays the code's.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use vm_tests::workspace_root;

/// One layer: what its crates are for, and each crate with the folder that holds it.
struct Layer {
    name: &'static str,
    crates: &'static [(&'static str, &'static str)],
}

/// The layers, lowest first. A crate may depend (normally) only on crates of layers before its
/// own. A new crate goes in the lowest layer above every crate it depends on.
const LAYERS: &[Layer] = &[
    // What everything stands on: the bytecode, the float functions both interp and cpu compute
    // with, the embedded default configuration. They depend on no workspace crate.
    Layer { name: "foundations", crates: &[("vm-ir", "vm/ir"), ("vm-math", "vm/math"), ("vm-config", "config")] },
    // Built on the bytecode alone: the C ABIs' types, the fusion rule, running bytecode
    // (components, settings, stacks, the runtime).
    Layer {
        name: "over the bytecode",
        crates: &[("vm-abi", "vm/abi"), ("vm-fusion", "vm/fusion"), ("vm-runtime", "vm/runtime")],
    },
    // Built on the runtime, for engines and hosts: the batch optimizer, the Rust frontend, engine
    // plugins written in Rust.
    Layer {
        name: "over the runtime",
        crates: &[("vm-passes", "vm/passes"), ("vm-frontend", "vm/frontend"), ("vm-plugin", "vm/plugin")],
    },
    // The components a stack is made of. No engine depends on another.
    Layer {
        name: "engines",
        crates: &[
            ("vm-interp", "engines/interp"),
            ("vm-node", "engines/node"),
            ("vm-cpu", "engines/cpu"),
            ("vm-opencl", "engines/opencl"),
            ("vm-cluster", "engines/cluster"),
        ],
    },
    // What puts engines to use: the composition root (every engine, stacks, plugins, the
    // contexts C and Python share; under `vm/`, but above the engines), the cpu engine packaged as
    // a plugin library, and the test kit, which runs interp as the oracle.
    Layer {
        name: "over the engines",
        crates: &[("vm-host", "vm/host"), ("vm-cpu-plugin", "engines/cpu-plugin"), ("vm-testkit", "tests/testkit")],
    },
    // The frontends' bridges, each over vm-host and independent of the other.
    Layer { name: "bridges", crates: &[("vm-bridge-c", "bridge-c"), ("vm-bridge-py", "bridge-py")] },
    // What drives the whole: the benchmark harness and the cross-crate tests.
    Layer { name: "harnesses", crates: &[("vm-bench", "benches"), ("vm-tests", "tests")] },
];

/// The crate every engine's tests share: a dev-dependency only, wherever it is used.
const TEST_SUPPORT: &str = "vm-testkit";

/// The layer of `krate`, as its index in [`LAYERS`] and its name.
fn layer_of(krate: &str) -> Option<(usize, &'static str)> {
    LAYERS.iter().enumerate().find(|(_, l)| l.crates.iter().any(|(c, _)| *c == krate)).map(|(i, l)| (i, l.name))
}

/// A workspace crate as `cargo metadata` describes it.
#[derive(Debug, Default)]
struct Crate {
    /// Its folder, relative to the workspace root.
    folder: String,
    /// Workspace crates it depends on normally or to build.
    normal: BTreeSet<String>,
    /// Crates from outside the workspace it depends on normally or to build.
    external: BTreeSet<String>,
    /// Workspace crates it depends on only for its tests, benchmarks and examples.
    dev_only: BTreeSet<String>,
}

/// The workspace's crates by name, from `cargo metadata --no-deps`.
fn workspace() -> BTreeMap<String, Crate> {
    let manifest = workspace_root().join("Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let root = Path::new(meta["workspace_root"].as_str().expect("workspace_root"));
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<&str> = packages.iter().map(|p| p["name"].as_str().expect("package name")).collect();
    let mut crates = BTreeMap::new();
    for p in packages {
        let manifest = Path::new(p["manifest_path"].as_str().expect("manifest_path"));
        let folder = manifest.parent().and_then(|d| d.strip_prefix(root).ok()).expect("a crate under the root");
        let mut c = Crate { folder: folder.to_string_lossy().into_owned(), ..Crate::default() };
        let mut dev = BTreeSet::new();
        for d in p["dependencies"].as_array().expect("dependencies") {
            let name = d["name"].as_str().expect("dependency name").to_string();
            let internal = names.contains(name.as_str());
            match (d["kind"].as_str(), internal) {
                (Some("dev"), true) => {
                    dev.insert(name);
                }
                (Some("dev"), false) => {}
                (_, true) => {
                    c.normal.insert(name);
                }
                (_, false) => {
                    c.external.insert(name);
                }
            }
        }
        c.dev_only = dev.difference(&c.normal).cloned().collect();
        crates.insert(p["name"].as_str().expect("package name").to_string(), c);
    }
    crates
}

#[test]
fn every_crate_has_a_layer_and_its_folder() {
    let crates = workspace();
    let mut problems = Vec::new();
    for (name, c) in &crates {
        if layer_of(name).is_none() {
            problems.push(format!(
                "{name} ({}) is in no layer: add it to LAYERS in tests/tests/crate_layers.rs, in the lowest \
                 layer above every crate it depends on, and to the crate map of docs/architecture.md",
                c.folder
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (krate, folder) in LAYERS.iter().flat_map(|l| l.crates) {
        if !seen.insert(krate) {
            problems.push(format!("{krate} is in LAYERS twice"));
        }
        match crates.get(*krate) {
            None => problems.push(format!("LAYERS names {krate}, which is no workspace crate: remove it")),
            Some(c) if c.folder != *folder => {
                problems.push(format!("{krate} is in {}, LAYERS says {folder}", c.folder))
            }
            Some(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn normal_dependencies_point_to_lower_layers() {
    let crates = workspace();
    let mut edges = Vec::new();
    for (name, c) in &crates {
        let Some((from, from_layer)) = layer_of(name) else { continue };
        for dep in &c.normal {
            let Some((to, to_layer)) = layer_of(dep) else { continue };
            if to >= from {
                edges.push(format!(
                    "{name} -> {dep}: {name} is in layer {from} ({from_layer}), {dep} in layer {to} ({to_layer})"
                ));
            }
        }
    }
    assert!(
        edges.is_empty(),
        "normal dependencies that do not point to a lower layer (tests/tests/crate_layers.rs, LAYERS):\n{}",
        edges.join("\n")
    );
}

#[test]
fn the_test_kit_is_a_dev_dependency_only() {
    let crates = workspace();
    let users: Vec<&String> = crates.iter().filter(|(_, c)| c.normal.contains(TEST_SUPPORT)).map(|(n, _)| n).collect();
    assert!(
        users.is_empty(),
        "{TEST_SUPPORT} is test support, a dev-dependency only; a normal dependency of {users:?}"
    );
}

#[test]
fn the_python_bridge_does_not_reach_the_c_bridge() {
    let crates = workspace();
    let mut path = vec!["vm-bridge-py".to_string()];
    let mut seen = BTreeSet::new();
    // Depth first over normal dependencies, keeping the path for the message.
    fn walk(crates: &BTreeMap<String, Crate>, path: &mut Vec<String>, seen: &mut BTreeSet<String>) -> bool {
        let here = path.last().expect("a path").clone();
        if here == "vm-bridge-c" {
            return true;
        }
        for dep in crates.get(&here).map(|c| &c.normal).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                path.push(dep.clone());
                if walk(crates, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    assert!(
        !walk(&crates, &mut path, &mut seen),
        "vmnp's extension links the C bridge: {}; what both need belongs in vm-host",
        path.join(" -> ")
    );
}

/// One row of the documented crate map.
#[derive(Debug)]
struct Row {
    krate: String,
    folder: String,
    normal: BTreeSet<String>,
    external: BTreeSet<String>,
    dev_only: BTreeSet<String>,
}

/// The columns of the crate map that are read, as their headers say.
const COLUMNS: [&str; 5] = ["crate", "folder", "depends on", "external", "dev-only"];

/// A cell without code marks and notes in parentheses.
fn plain(cell: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for ch in cell.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '`' => {}
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out.trim().to_string()
}

/// A cell's comma-separated crate names.
fn names(cell: &str) -> BTreeSet<String> {
    plain(cell).split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// The cells of a table line `| a | b |`.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

/// The crate map: the first table of the section "## The crates" of `doc`, in its order.
fn crate_map(doc: &str) -> Result<Vec<Row>, String> {
    let start = doc.find("\n## The crates\n").ok_or("no section \"## The crates\"")?;
    let section = &doc[start + 1..];
    let section = section[1..].find("\n## ").map_or(section, |end| &section[..end + 1]);
    let mut table = section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
    let header = table.next().ok_or("no table in the section \"## The crates\"")?;
    let header = cells(header);
    let mut at = [0; COLUMNS.len()];
    for (i, column) in COLUMNS.iter().enumerate() {
        at[i] = header
            .iter()
            .position(|h| h.eq_ignore_ascii_case(column))
            .ok_or_else(|| format!("the crate map has no column \"{column}\" (its header: {header:?})"))?;
    }
    let mut rows = Vec::new();
    for line in table.skip(1) {
        let c = cells(line);
        let cell = |i: usize| c.get(at[i]).copied().ok_or_else(|| format!("a short row: {line}"));
        rows.push(Row {
            krate: plain(cell(0)?),
            folder: plain(cell(1)?).trim_end_matches('/').to_string(),
            normal: names(cell(2)?),
            external: names(cell(3)?),
            dev_only: names(cell(4)?),
        });
    }
    Ok(rows)
}

/// `what` of `krate` as the map says and as Cargo.toml says, as lines naming each edge.
fn compare(krate: &str, what: &str, documented: &BTreeSet<String>, actual: &BTreeSet<String>, out: &mut Vec<String>) {
    for missing in actual.difference(documented) {
        out.push(format!("missing from the map: {krate} -> {missing} ({what})"));
    }
    for extra in documented.difference(actual) {
        out.push(format!("in the map, not in Cargo.toml: {krate} -> {extra} ({what})"));
    }
}

#[test]
fn the_documented_crate_map_is_the_dependency_graph() {
    let path = workspace_root().join("docs").join("architecture.md");
    let doc = std::fs::read_to_string(&path).expect("docs/architecture.md");
    let rows = crate_map(&doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let crates = workspace();
    let mut problems = Vec::new();
    let mut documented = BTreeSet::new();
    let mut last_layer = 0;
    for row in &rows {
        if !documented.insert(row.krate.clone()) {
            problems.push(format!("{} has two rows", row.krate));
        }
        let Some(c) = crates.get(&row.krate) else {
            problems.push(format!("the map has a row for {}, which is no workspace crate", row.krate));
            continue;
        };
        if row.folder != c.folder {
            problems.push(format!("the map puts {} in {}; it is in {}", row.krate, row.folder, c.folder));
        }
        compare(&row.krate, "depends on", &row.normal, &c.normal, &mut problems);
        compare(&row.krate, "external", &row.external, &c.external, &mut problems);
        compare(&row.krate, "dev-only", &row.dev_only, &c.dev_only, &mut problems);
        if let Some((layer, name)) = layer_of(&row.krate) {
            if layer < last_layer {
                problems.push(format!(
                    "the map's rows go from the lowest layer up, but {} (layer {layer}, {name}) comes after a \
                     crate of layer {last_layer}",
                    row.krate
                ));
            }
            last_layer = last_layer.max(layer);
        }
    }
    for (name, c) in &crates {
        if !documented.contains(name) {
            problems.push(format!("{name} ({}) has no row in the map", c.folder));
        }
    }
    assert!(
        problems.is_empty(),
        "the crate map of docs/architecture.md (\"The crates\") differs from the workspace:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_map_reader_drops_notes_and_code_marks() {
    let doc = "# A\n\n## The crates\n\nText.\n\n| crate | folder | what it is | depends on | external | dev-only |\n\
               |---|---|---|---|---|---|\n\
               | `vm-a` | `a/` | a crate, (with notes) | `vm-b` (for x, y), vm-c | mpi (feature `mpi`) | |\n\
               \nAfter.\n\n## Next\n\n| crate |\n|---|\n| vm-z |\n";
    let rows = crate_map(doc).unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!((row.krate.as_str(), row.folder.as_str()), ("vm-a", "a"));
    assert_eq!(row.normal, BTreeSet::from(["vm-b".to_string(), "vm-c".to_string()]));
    assert_eq!(row.external, BTreeSet::from(["mpi".to_string()]));
    assert!(row.dev_only.is_empty());
    assert!(crate_map("\n## The crates\n\nno table\n").unwrap_err().contains("no table"));
}
