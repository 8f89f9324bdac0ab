//! Fusion regression guard: what the cpu engine forms for knn, nbody and heat_equation at their
//! tiny sizes (kernels run, instructions fused, temporaries contracted, bytes moved) must stay
//! at the values below, and the long expression of equation_of_state must read its inputs and
//! write its result about once. Not a timing: a change to kernel formation, contraction or the engine's
//! batch rewriting that loses fusion changes these counts and fails here; a change that improves
//! them updates the table with the new, better figures.

use vm_bench::size::SizeName;
use vm_bench::stacks::StackSpec;
use vm_bench::{Precision, benchmarks};
use vm_runtime::{RuntimeOptions, Statistics};

/// (benchmark, kernels, fused instructions, contracted temporaries, bytes moved) at the first
/// tiny size, f64, one run on a fresh cpu stack.
const EXPECTED: &[(&str, u64, u64, u64, u64)] =
    &[("knn", 14, 21, 8, 33_608), ("nbody", 10, 188, 135, 24_344), ("heat_equation", 21, 72, 43, 200_568)];

/// The cpu stack with every batch formed into kernels: at tiny sizes the engine would run
/// small batches of new structures on its child instead (`first_runs_on_child`).
const CONFIG: &str =
    "stack = \"cpu\"\n[stacks]\ncpu = [\"node\", \"cpu\", \"interp\"]\n[cpu]\nfirst_runs_on_child = false\n";

fn fusion_of(name: &str, config: &std::path::Path) -> Statistics {
    let def = benchmarks::find(name).unwrap_or_else(|| panic!("no benchmark {name}"));
    let size = def.sizes(SizeName::Tiny).into_iter().next().expect("a tiny size");
    fusion_at(name, size.dims(), config)
}

fn fusion_at(name: &str, dims: &[usize], config: &std::path::Path) -> Statistics {
    let def = benchmarks::find(name).unwrap_or_else(|| panic!("no benchmark {name}"));
    // Every instruction queued for the engine: none run at once on its interpreter.
    let options = RuntimeOptions { direct_elements: 0, ..RuntimeOptions::default() };
    let (vm, _) = StackSpec::new(Some(config), Some("cpu")).build_with(None, options).expect("the cpu stack builds");
    (def.vm)(&vm, dims, Precision::F64).unwrap_or_else(|e| panic!("{name}: {e}"));
    let stats = vm.runtime().describe().iter().map(|i| i.statistics).sum::<Statistics>();
    vm.shutdown().unwrap();
    stats
}

#[test]
fn knn_nbody_and_heat_keep_their_fusion() {
    let config = std::env::temp_dir().join(format!("vm-fusion-guard-{}.toml", std::process::id()));
    std::fs::write(&config, CONFIG).expect("a temporary config");
    let mut failures = Vec::new();
    for name in ["knn", "nbody", "heat_equation"] {
        let s = fusion_of(name, &config);
        let got = (name, s.kernels, s.fused_instructions, s.contracted, s.bytes_moved);
        match EXPECTED.iter().find(|e| e.0 == name) {
            Some(want) if *want == got => {}
            want => failures.push(format!("{name}: got {got:?}, want {want:?}")),
        }
    }
    let _ = std::fs::remove_file(&config);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// 300 element-wise operations over a 3-d grid with a `(1, 1, nz)` profile: the batch moves at
/// most 1.5x the bytes of its inputs (`t`, `s`, the profile) and outputs (the final `t`, which
/// the program holds, and its mean).
#[test]
fn a_long_expression_reads_its_inputs_about_once() {
    let config = std::env::temp_dir().join(format!("vm-fusion-guard-eos-{}.toml", std::process::id()));
    std::fs::write(&config, CONFIG).expect("a temporary config");
    let (nx, ny, nz, rounds) = (16, 16, 32, 14);
    let s = fusion_at("equation_of_state", &[nx, ny, nz, rounds], &config);
    let _ = std::fs::remove_file(&config);
    let n = (nx * ny * nz) as u64;
    let essential = (3 * n + nz as u64 + 1) * 8;
    assert!(
        s.bytes_moved * 2 <= essential * 3,
        "moved {} bytes for {essential} of inputs and outputs ({} kernels, {} instructions fused)",
        s.bytes_moved,
        s.kernels,
        s.fused_instructions
    );
}
