//! heat_equation: Jacobi iteration of the 5-point stencil on an `(h+2) x (w+2)` grid (thesis
//! fig. 2). Checksum: the last delta.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its twins are the NumPy
//! script `benches/numpy/heat_equation.py`, `benches/c/heat_equation.c` (C, against `libvm.so`),
//! `benches/c/heat_equation.cpp` (C++, `vm.hpp`) and `examples/cpp/heat.cpp` (C++ example).

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "heat_equation",
    summary: "5-point Jacobi stencil: work = 0.2*(c+n+s+e+w), delta = sum|work-c|, c = work",
    dims: &["h", "w", "iterations"],
    default: &[&[2000, 2000, 100]],
    paper: None,
    quick: &[&[500, 500, 20]],
    tiny: &[&[20, 30, 5]],
    min_dims: &[1, 1, 1],
    deterministic: true,
    exact: false,
    numpy_script: "heat_equation.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
