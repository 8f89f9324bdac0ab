//! overhead: many dependent element-wise operations on a small array, each one instruction
//! (alternately `x * 0.9999` and `x + 0.0001`, a new array each, as a user writes them), and a
//! read of `sum(x)` after each loop: the per-instruction cost, the weak spot of lazy array
//! systems. Checksum: the last sum.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its twins are the NumPy
//! script `benches/numpy/overhead.py` and `benches/c/overhead.cpp` (C++, `vm.hpp`).

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "overhead",
    summary: "1000 dependent element-wise ops on 1, 1K and 64K elements, 100 loops, sum per loop",
    dims: &["elements", "ops", "loops"],
    default: &[&[1, 1000, 100], &[1024, 1000, 100], &[65536, 1000, 100]],
    paper: None,
    quick: &[&[1, 1000, 10], &[1024, 1000, 10], &[65536, 1000, 10]],
    tiny: &[&[1, 20, 3], &[100, 20, 3]],
    min_dims: &[1, 1, 1],
    deterministic: true,
    exact: false,
    numpy_script: "overhead.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The multiplier of the even operations.
pub const MUL: f64 = 0.9999;
/// The addend of the odd operations.
pub const ADD: f64 = 0.0001;

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
