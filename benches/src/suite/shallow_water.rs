//! shallow_water: the 2-D shallow-water model (Lax-Wendroff, reflecting boundaries) on an
//! `h x w` grid that includes its boundary; two 8x8 droplets at `(h/4, w/4)` and `(h/2, w/2)`.
//! Checksum: `sum(H)`.

use super::{BenchDef, Elem, read, timed};
use crate::Measured;
use crate::hand::Real;
use vm_frontend::s;
use vm_frontend::{Array, Vm};
use vm_ir::Result;

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

/// `A = (p*q)/h + g2*(h*h)`-style flux terms.
fn momentum<T: Elem>(p: &Array<T>, q: &Array<T>, h: &Array<T>) -> Array<T> {
    &(p * q) / h
}

fn pressure<T: Elem>(p: &Array<T>, h: &Array<T>, g2: T) -> Array<T> {
    momentum(p, p, h) + (h * h) * g2
}

/// The two neighbours of the half-step along an axis: `(upper, lower)`.
type Pair<T> = (Array<T>, Array<T>);

fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (h, w, iterations) = (dims[0], dims[1], dims[2]);
    let c = Constants::<T>::new();
    let two = T::of(2.0);
    let hh = vm.ones::<T>(&[h, w])?;
    let uu = vm.zeros::<T>(&[h, w])?;
    let vv = vm.zeros::<T>(&[h, w])?;
    let drop = vm.from_slice::<T>(&[8, 8], &droplet::<T>())?;
    for (r, col) in droplet_corners(h, w) {
        let (r, col) = (r as isize, col as isize);
        let mut spot = hh.slice(s![r..r + 8, col..col + 8])?;
        spot += &drop;
    }
    let x_pair = |a: &Array<T>| -> Result<Pair<T>> { Ok((a.slice(s![1.., 1..-1])?, a.slice(s![..-1, 1..-1])?)) };
    let y_pair = |a: &Array<T>| -> Result<Pair<T>> { Ok((a.slice(s![1..-1, 1..])?, a.slice(s![1..-1, ..-1])?)) };
    let inner = |a: &Array<T>| a.slice(s![1..-1, 1..-1]);
    timed(vm, || {
        for _ in 0..iterations {
            // reflecting boundary: columns, then rows
            for (to, from) in [(0isize, 1isize), (-1, -2)] {
                hh.slice(s![.., to])?.assign(&hh.slice(s![.., from])?)?;
                uu.slice(s![.., to])?.assign(&uu.slice(s![.., from])?)?;
                vv.slice(s![.., to])?.assign(&-&vv.slice(s![.., from])?)?;
            }
            for (to, from) in [(0isize, 1isize), (-1, -2)] {
                hh.slice(s![to, ..])?.assign(&hh.slice(s![from, ..])?)?;
                uu.slice(s![to, ..])?.assign(&-&uu.slice(s![from, ..])?)?;
                vv.slice(s![to, ..])?.assign(&vv.slice(s![from, ..])?)?;
            }
            // first half step, x direction
            let ((h1, h0), (u1, u0), (v1, v0)) = (x_pair(&hh)?, x_pair(&uu)?, x_pair(&vv)?);
            let hx = (&h1 + &h0) / two - (&u1 - &u0) * c.c1;
            let ux = (&u1 + &u0) / two - (pressure(&u1, &h1, c.g2) - pressure(&u0, &h0, c.g2)) * c.c1;
            let vx = (&v1 + &v0) / two - (momentum(&u1, &v1, &h1) - momentum(&u0, &v0, &h0)) * c.c1;
            // first half step, y direction
            let ((h1, h0), (u1, u0), (v1, v0)) = (y_pair(&hh)?, y_pair(&uu)?, y_pair(&vv)?);
            let hy = (&h1 + &h0) / two - (&v1 - &v0) * c.c1y;
            let uy = (&u1 + &u0) / two - (momentum(&v1, &u1, &h1) - momentum(&v0, &u0, &h0)) * c.c1y;
            let vy = (&v1 + &v0) / two - (pressure(&v1, &h1, c.g2) - pressure(&v0, &h0, c.g2)) * c.c1y;
            // second half step
            let xs = |a: &Array<T>| -> Result<Pair<T>> { Ok((a.slice(s![1.., ..])?, a.slice(s![..-1, ..])?)) };
            let ys = |a: &Array<T>| -> Result<Pair<T>> { Ok((a.slice(s![.., 1..])?, a.slice(s![.., ..-1])?)) };
            let ((hx1, hx0), (ux1, ux0), (vx1, vx0)) = (xs(&hx)?, xs(&ux)?, xs(&vx)?);
            let ((hy1, hy0), (uy1, uy0), (vy1, vy0)) = (ys(&hy)?, ys(&uy)?, ys(&vy)?);
            let mut h_in = inner(&hh)?;
            h_in -= (&ux1 - &ux0) * c.c2 + (&vy1 - &vy0) * c.c2y;
            let mut u_in = inner(&uu)?;
            u_in -= (pressure(&ux1, &hx1, c.g2) - pressure(&ux0, &hx0, c.g2)) * c.c2
                + (momentum(&vy1, &uy1, &hy1) - momentum(&vy0, &uy0, &hy0)) * c.c2y;
            let mut v_in = inner(&vv)?;
            v_in -= (momentum(&ux1, &vx1, &hx1) - momentum(&ux0, &vx0, &hx0)) * c.c2
                + (pressure(&vy1, &hy1, c.g2) - pressure(&vy0, &hy0, c.g2)) * c.c2y;
        }
        read(&hh.sum_all())
    })
}

entry_points!(shallow_water);
