//! nbody on the VM: its program, written once against the Rust frontend, so that the same program
//! runs on every stack.

use super::{DT, G, LIGHTYEAR, M_SUN, SEED};
use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::s;
use vm_frontend::{Array, Vm};
use vm_ir::Result;

/// Sets the diagonal of a contiguous square matrix to `value`.
fn fill_diagonal<T: Elem>(a: &Array<T>, value: T) -> Result<()> {
    let n = a.shape()[0];
    a.reshape(&[n * n])?.slice(s![..; (n + 1) as isize])?.fill(value)
}

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
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
