//! shallow_water on the VM: its program, written once against the Rust frontend, so that the same
//! program runs on every stack.

use super::{Constants, droplet, droplet_corners};
use crate::Measured;
use crate::benchmarks::vm_kit::{Elem, read, timed};
use vm_frontend::s;
use vm_frontend::{Array, Vm};
use vm_ir::Result;

/// `A = (p*q)/h + g2*(h*h)`-style flux terms.
fn momentum<T: Elem>(p: &Array<T>, q: &Array<T>, h: &Array<T>) -> Array<T> {
    &(p * q) / h
}

fn pressure<T: Elem>(p: &Array<T>, h: &Array<T>, g2: T) -> Array<T> {
    momentum(p, p, h) + (h * h) * g2
}

/// The two neighbours of the half-step along an axis: `(upper, lower)`.
type Pair<T> = (Array<T>, Array<T>);

/// One repetition at `dims` (the form [`DEF`](super::DEF) names): the setup, then the timed
/// iterations and the read-back of the checksum.
pub fn program<T: Elem>(vm: &Vm, dims: &[usize]) -> Result<Measured> {
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
