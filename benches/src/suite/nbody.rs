//! nbody: O(n^2) Newtonian gravity. Positions uniform in +-lightyear/200, masses
//! `(U + 10) M_sun / 10`, from the VM's RANDOM. Checksum: `sum|x| + sum|y| + sum|z|`.
//!
//! The force is `G m d (1/r)(1/r)(1/r)`, evaluated left to right: `G m d / r^3` without the
//! float32 overflow of `r^3` (about 1e41). The diagonals are set as the seed's program does
//! (`r = 1`, `F = 0`); they hold those values anyway, since `d = 0` there.

use super::{BenchDef, Elem, read, timed};
use crate::Measured;
use vm_frontend::s;
use vm_frontend::{Array, Vm};
use vm_ir::Result;

/// The benchmark.
pub const DEF: BenchDef = BenchDef {
    name: "nbody",
    summary: "O(n^2) Newtonian n-body: broadcast differences, F = G m d / r^3, v += dt sum(F, 0)",
    dims: &["bodies", "steps"],
    default: &[&[2000, 10]],
    paper: Some(&[&[8000, 10]]),
    quick: &[&[500, 5]],
    tiny: &[&[40, 3]],
    min_dims: &[2, 1],
    deterministic: false,
    exact: false,
    numpy_script: "nbody.py",
    vm: run_vm,
    hand: run_hand,
    hand_native: run_hand_native,
};

/// The gravitational constant.
pub const G: f64 = 6.67384e-11;
/// The time step: one year in seconds.
pub const DT: f64 = 60.0 * 60.0 * 24.0 * 365.25;
/// The sun's mass in kg.
pub const M_SUN: f64 = 1.98892e30;
/// A lightyear in metres.
pub const LIGHTYEAR: f64 = 9.4605284e15;
/// The seed of the VM's random stream (masses at counters `0..n`, then x, y, z).
pub const SEED: u64 = 0x9B0D;

/// `(seed, mass scale, position scale)` of the initial galaxy.
pub fn galaxy_constants() -> (u64, f64, f64) {
    (SEED, M_SUN, LIGHTYEAR)
}

/// Sets the diagonal of a contiguous square matrix to `value`.
fn fill_diagonal<T: Elem>(a: &Array<T>, value: T) -> Result<()> {
    let n = a.shape()[0];
    a.reshape(&[n * n])?.slice(s![..; (n + 1) as isize])?.fill(value)
}

fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
    let (n, steps) = (dims[0], dims[1]);
    let one = T::ONE;
    let draw = |k: u64| vm.random_at::<T>(&[n], SEED, k * n as u64);
    let m = ((draw(0)? + T::of(10.0)) * T::of(M_SUN)) / T::of(10.0);
    let mut pos = Vec::with_capacity(3);
    for k in 1..=3 {
        pos.push(((draw(k)? - T::of(0.5)) * T::of(LIGHTYEAR)) / T::of(100.0));
    }
    let mut vel = vec![vm.zeros::<T>(&[n])?, vm.zeros::<T>(&[n])?, vm.zeros::<T>(&[n])?];
    let gm = (&m * T::of(G)).new_axis(1)?;
    let dt = T::of(DT);
    timed(vm, || {
        for _ in 0..steps {
            let mut d = Vec::with_capacity(3);
            for p in &pos {
                d.push(&p.new_axis(1)? - &p.new_axis(0)?);
            }
            let r = (&d[0] * &d[0] + &d[1] * &d[1] + &d[2] * &d[2]).sqrt();
            fill_diagonal(&r, one)?;
            let r = Array::select(&r.lt(one)?, one, &r)?;
            let rinv = one.over(&r);
            for (v, dk) in vel.iter_mut().zip(&d) {
                let f = ((&gm * dk) * &rinv) * &rinv * &rinv;
                fill_diagonal(&f, T::ZERO)?;
                *v += f.sum(0)? * dt;
            }
            for (p, v) in pos.iter_mut().zip(&vel) {
                *p += v * dt;
            }
        }
        let mut total = 0.0;
        for p in &pos {
            total += read(&p.abs().sum_all())?;
        }
        Ok(total)
    })
}

entry_points!(nbody);
