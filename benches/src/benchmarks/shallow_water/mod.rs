//! shallow_water: the 2-D shallow-water model (Lax-Wendroff, reflecting boundaries) on an
//! `h x w` grid that includes its boundary; two 8x8 droplets at `(h/4, w/4)` and `(h/2, w/2)`.
//! Checksum: `sum(H)`.
//!
//! Its VM program is [`vm`], its hand-written Rust baseline [`hand`]; its twins are the NumPy
//! script `benches/numpy/shallow_water.py` and `examples/cpp/shallow_water.cpp` (C++ example).

pub mod hand;
pub mod vm;

use crate::benchmarks::BenchDef;
use crate::benchmarks::real::Real;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "shallow_water",
    summary: "2-D shallow-water model (Lax-Wendroff), reflecting boundaries, two droplets",
    dims: &["h", "w", "iterations"],
    default: &[&[2000, 2000, 20]],
    paper: Some(&[&[2000, 2000, 10]]),
    quick: &[&[500, 500, 10]],
    tiny: &[&[20, 24, 3]],
    min_dims: &[16, 16, 1],
    deterministic: true,
    exact: false,
    numpy_script: "shallow_water.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// Gravitational acceleration.
pub const G: f64 = 9.80665;
/// Time step.
pub const DT: f64 = 0.02;
/// Grid spacing in x (between rows).
pub const DX: f64 = 1.0;
/// Grid spacing in y (between columns).
pub const DY: f64 = 1.0;

/// The model's constants in the element type.
#[derive(Debug, Clone, Copy)]
pub struct Constants<T> {
    /// `g / 2`.
    pub g2: T,
    /// `dt / (2 dx)`.
    pub c1: T,
    /// `dt / (2 dy)`.
    pub c1y: T,
    /// `dt / dx`.
    pub c2: T,
    /// `dt / dy`.
    pub c2y: T,
}

impl<T: Real> Constants<T> {
    /// The constants, computed in `f64` and rounded to `T` (as NumPy does with Python floats).
    pub fn new() -> Constants<T> {
        Constants {
            g2: T::of(G / 2.0),
            c1: T::of(DT / (2.0 * DX)),
            c1y: T::of(DT / (2.0 * DY)),
            c2: T::of(DT / DX),
            c2y: T::of(DT / DY),
        }
    }
}

impl<T: Real> Default for Constants<T> {
    fn default() -> Self {
        Constants::new()
    }
}

/// The 8x8 droplet `8 * exp(-5 * (x^2 + y^2))` on `linspace(-1, 1, 8)`, row-major.
pub fn droplet<T: Real>() -> Vec<T> {
    let lin: Vec<T> = (0..8).map(|i| T::of(if i == 7 { 1.0 } else { -1.0 + i as f64 * (2.0 / 7.0) })).collect();
    let mut d = Vec::with_capacity(64);
    for &y in &lin {
        for &x in &lin {
            d.push(T::of(8.0) * (T::of(-5.0) * (x * x + y * y)).exp());
        }
    }
    d
}

/// Where the droplets go: their top-left corners.
pub fn droplet_corners(h: usize, w: usize) -> [(usize, usize); 2] {
    [(h / 4, w / 4), (h / 2, w / 2)]
}

/// The initial height: ones plus the two droplets.
pub fn initial_height<T: Real>(h: usize, w: usize) -> Vec<T> {
    let mut field = vec![T::ONE; h * w];
    let d = droplet::<T>();
    for (r, c) in droplet_corners(h, w) {
        for a in 0..8 {
            for b in 0..8 {
                field[(r + a) * w + c + b] += d[a * 8 + b];
            }
        }
    }
    field
}

// `run_vm`, `run_hand` and `run_hand_native`, which `DEF` names.
entry_points!();
