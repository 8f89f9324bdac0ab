//! End-to-end tests of the Rust frontend on the reference engine (`interp`): the numbers the
//! recorded programs compute, against hand-computed values, NumPy's semantics, and plain Rust
//! loops written the obvious way. The benchmark programs appear here in miniature.

use vm_frontend::s;
use vm_frontend::{Array, NewAxis, Vm};
use vm_interp::Interp;
use vm_ir::random::{FromRandomBits, random_bits};
use vm_ir::{Error, Result};
use vm_runtime::{Runtime, RuntimeOptions};

fn vm_with_limit(batch_limit: usize) -> Vm {
    Vm::new(Runtime::new(Box::new(Interp::default()), RuntimeOptions { batch_limit, ..RuntimeOptions::default() }))
}

fn vm() -> Vm {
    vm_with_limit(4096)
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = rel * w.abs().max(1.0);
        assert!((g - w).abs() <= tol, "element {i}: got {g}, want {w}\n got: {got:?}\nwant: {want:?}");
    }
}

#[test]
fn arithmetic_broadcasts_like_numpy() -> Result<()> {
    let vm = vm();
    let a = vm.from_slice::<f64>(&[3, 1], &[1.0, 2.0, 3.0])?;
    let b = vm.from_slice::<f64>(&[4], &[10.0, 20.0, 30.0, 40.0])?;
    let sum = &a + &b;
    assert_eq!(sum.shape(), [3, 4]);
    assert_eq!(sum.to_vec()?, [11.0, 21.0, 31.0, 41.0, 12.0, 22.0, 32.0, 42.0, 13.0, 23.0, 33.0, 43.0]);
    assert_eq!((&a * &b).slice(s![2])?.to_vec()?, [30.0, 60.0, 90.0, 120.0]);
    assert_eq!((100.0 - &b).to_vec()?, [90.0, 80.0, 70.0, 60.0]);
    assert_eq!((&b / 10.0).to_vec()?, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!((40.0 / &b).to_vec()?, [4.0, 2.0, 40.0 / 30.0, 1.0]);
    assert_eq!((-(&b - 25.0)).abs().to_vec()?, [15.0, 5.0, 5.0, 15.0]);
    assert_eq!(b.maximum(25.0)?.minimum(35.0)?.to_vec()?, [25.0, 25.0, 30.0, 35.0]);
    assert_close(&b.pow(0.5)?.square().to_vec()?, &[10.0, 20.0, 30.0, 40.0], 1e-15);

    let x = vm.from_slice::<i64>(&[4], &[-7, 7, -8, 9])?;
    assert_eq!((&x % 3).to_vec()?, [2, 1, 1, 0], "remainder takes the sign of the divisor");
    assert_eq!(x.fmod(3)?.to_vec()?, [-1, 1, -2, 0]);
    assert_eq!(x.floor_divide(2)?.to_vec()?, [-4, 3, -4, 4]);
    assert_eq!(x.pow(2)?.to_vec()?, [49, 49, 64, 81]);
    assert_eq!((&x & 3).to_vec()?, [1, 3, 0, 1]);
    assert_eq!((&x << 1).to_vec()?, [-14, 14, -16, 18]);
    assert_eq!((&x >> 1).to_vec()?, [-4, 3, -4, 4]);
    assert_eq!((!&x).to_vec()?, [6, -8, 7, -10]);
    assert_eq!((10 - &x).to_vec()?, [17, 3, 18, 1]);
    let m = x.gt(0)?;
    assert_eq!((!&m).to_vec()?, [true, false, true, false]);
    assert_eq!((&m ^ true).to_vec()?, [true, false, true, false]);
    assert_eq!((&m | x.eq(-8)?).to_vec()?, [false, true, true, true]);
    assert_eq!(m.logical_and(x.lt(8)?)?.to_vec()?, [false, true, false, false]);

    let mut acc = vm.zeros::<f64>(&[2, 3])?;
    acc += &vm.from_slice::<f64>(&[3], &[1.0, 2.0, 3.0])?;
    acc *= 2.0;
    let mut row = acc.slice(s![1])?;
    row -= 1.0;
    assert_eq!(acc.to_vec()?, [2.0, 4.0, 6.0, 1.0, 3.0, 5.0]);
    vm.shutdown().unwrap_err(); // arrays are alive
    Ok(())
}

#[test]
fn views_read_and_write_through_like_numpy() -> Result<()> {
    let vm = vm();
    let a = vm.arange::<f64>(12)?.reshape(&[3, 4])?;
    assert_eq!(a.slice(s![..;-1, 1..;2])?.to_vec()?, [9.0, 11.0, 5.0, 7.0, 1.0, 3.0]);
    assert_eq!(a.transpose().slice(s![-1])?.to_vec()?, [3.0, 7.0, 11.0]);
    assert_eq!(a.diagonal()?.to_vec()?, [0.0, 5.0, 10.0]);
    a.slice(s![.., 0])?.fill(-1.0)?;
    a.slice(s![-1, 1..])?.assign(&vm.from_slice::<f64>(&[3], &[7.0, 8.0, 9.0])?)?;
    a.slice(s![0, 1..3])?.assign(a.slice(s![1, 1..3])?.transpose())?;
    assert_eq!(a.to_vec()?, [-1.0, 5.0, 6.0, 3.0, -1.0, 5.0, 6.0, 7.0, -1.0, 7.0, 8.0, 9.0]);

    // Overlapping writes read their input in full first (NumPy >= 1.13).
    let v = vm.arange::<i32>(6)?;
    v.slice(s![1..])?.assign(&v.slice(s![..-1])?)?;
    assert_eq!(v.to_vec()?, [0, 0, 1, 2, 3, 4]);
    v.slice(s![..;-1])?.assign(&v)?;
    assert_eq!(v.to_vec()?, [4, 3, 2, 1, 0, 0]);
    let w = v.copy();
    v.fill(9)?;
    assert_eq!((w.to_vec()?, v.to_vec()?), (vec![4, 3, 2, 1, 0, 0], vec![9; 6]));

    // 0-d arrays and scalars.
    let z = vm.full::<f64>(&[], 2.5)?;
    assert_eq!(((&z * 2.0).to_scalar()?, z.ndim()), (5.0, 0));
    let l = vm.linspace(-1.0f64, 1.0, 5)?;
    assert_eq!(l.to_vec()?, [-1.0, -0.5, 0.0, 0.5, 1.0]);
    Ok(())
}

/// Sum, min, max, product, mean, all, any, scans: against loops over the same data.
#[test]
fn reductions_and_scans() -> Result<()> {
    let vm = vm();
    let data: Vec<f64> = (0..24).map(|i| ((i * 7) % 11) as f64 - 3.0).collect();
    let a = vm.from_slice::<f64>(&[2, 3, 4], &data)?;
    let at = |i: usize, j: usize, k: usize| data[i * 12 + j * 4 + k];
    let mut s1 = vec![0.0; 8];
    let mut mx2 = vec![f64::MIN; 6];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                s1[i * 4 + k] += at(i, j, k);
                mx2[i * 3 + j] = mx2[i * 3 + j].max(at(i, j, k));
            }
        }
    }
    assert_eq!(a.sum(1)?.to_vec()?, s1);
    assert_eq!(a.max(-1)?.to_vec()?, mx2);
    assert_eq!(a.sum_all().to_scalar()?, data.iter().sum::<f64>());
    assert_eq!(a.permute(&[2, 0, 1])?.sum_all().to_scalar()?, data.iter().sum::<f64>());
    assert_eq!(a.slice(s![.., ..;2, 1..])?.min_all().to_scalar()?, -3.0);
    assert_eq!(a.max_all().to_scalar()?, 7.0);
    assert_eq!(a.mean(0)?.to_vec()?, (0..12).map(|i| (data[i] + data[12 + i]) / 2.0).collect::<Vec<_>>());
    assert_eq!(a.mean_all().to_scalar()?, data.iter().sum::<f64>() / 24.0);

    let p = vm.from_slice::<i64>(&[2, 3], &[1, 2, 3, 4, 5, 6])?;
    assert_eq!(p.prod(1)?.to_vec()?, [6, 120]);
    assert_eq!(p.prod_all().to_scalar()?, 720);
    assert_eq!(p.cumsum(1)?.to_vec()?, [1, 3, 6, 4, 9, 15]);
    assert_eq!(p.cumsum(0)?.to_vec()?, [1, 2, 3, 5, 7, 9]);
    assert_eq!(p.cumprod(-1)?.to_vec()?, [1, 2, 6, 4, 20, 120]);
    assert_eq!(p.gt(1)?.all(1)?.to_vec()?, [false, true]);
    assert_eq!(p.gt(5)?.any(0)?.to_vec()?, [false, false, true]);
    assert_eq!((p.gt(0)?.all_all().to_scalar()?, p.gt(6)?.any_all().to_scalar()?), (true, false));
    assert_eq!(p.sum(0)?.sum(0)?.to_scalar()?, 21);
    let empty = vm.zeros::<f64>(&[0, 3])?;
    assert_eq!(empty.sum(0)?.to_vec()?, [0.0; 3]);
    assert_eq!(empty.sum_all().to_scalar()?, 0.0);
    Ok(())
}

#[test]
fn positions_of_extremes_like_numpy_argmax_and_argmin() -> Result<()> {
    let vm = vm();
    let nan = f64::NAN;
    let a = vm.from_slice::<f64>(&[3, 4], &[1.0, 5.0, 5.0, -2.0, nan, 0.0, nan, 9.0, -0.0, 0.0, -1.0, -1.0])?;
    assert_eq!(a.argmax(1)?.to_vec()?, [1, 0, 0]);
    assert_eq!(a.argmin(-1)?.to_vec()?, [3, 0, 2]);
    assert_eq!(a.argmax(0)?.to_vec()?, [1, 0, 1, 1]);
    assert_eq!(a.argmin(0)?.to_vec()?, [1, 1, 1, 0]);
    assert_eq!(a.slice(s![.., ..;-1])?.argmax(1)?.to_vec()?, [1, 1, 2]);
    let b = vm.from_slice::<bool>(&[4], &[false, true, true, false])?;
    assert_eq!((b.argmax(0)?.to_scalar()?, b.argmin(0)?.to_scalar()?), (1, 0));
    let empty = vm.zeros::<i32>(&[2, 0])?;
    assert_eq!(empty.argmax(0)?.shape(), [0]);
    let e = empty.argmin(1).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("argmin of an empty sequence"), "{e}");
    Ok(())
}

#[test]
fn math_functions_comparisons_and_select() -> Result<()> {
    let vm = vm();
    let xs: Vec<f64> = (1..=20).map(|i| i as f64 / 10.0).collect();
    let x = vm.from_slice(&[20], &xs)?;
    let map = |f: fn(f64) -> f64| xs.iter().map(|&v| f(v)).collect::<Vec<f64>>();
    assert_close(&x.sqrt().to_vec()?, &map(f64::sqrt), 1e-15);
    assert_close(&x.exp().to_vec()?, &map(f64::exp), 1e-15);
    assert_close(&x.log().to_vec()?, &map(f64::ln), 1e-15);
    assert_close(&x.sin().to_vec()?, &map(f64::sin), 1e-15);
    assert_close(&x.tanh().to_vec()?, &map(f64::tanh), 1e-15);
    assert_close(&x.floor().to_vec()?, &map(f64::floor), 0.0);
    assert_close(&x.arctan2(0.5)?.to_vec()?, &map(|v| v.atan2(0.5)), 1e-15);
    assert_close(&x.hypot(&x)?.to_vec()?, &map(|v| v.hypot(v)), 1e-15);
    let special = vm.from_slice::<f64>(&[4], &[f64::NAN, f64::INFINITY, -0.0, 1.0])?;
    assert_eq!(special.isnan().to_vec()?, [true, false, false, false]);
    assert_eq!(special.isfinite().to_vec()?, [false, false, true, true]);
    assert_eq!(special.signbit().to_vec()?, [false, false, true, false]);

    let lo = x.lt(0.55)?;
    let clipped = Array::select(&lo, 0.0, &x)?;
    assert_eq!(clipped.to_vec()?, map(|v| if v < 0.55 { 0.0 } else { v }));
    let col = vm.from_slice::<bool>(&[2, 1], &[true, false])?;
    let row = vm.from_slice::<f64>(&[3], &[1.0, 2.0, 3.0])?;
    assert_eq!(Array::select(&col, &row, -1.0)?.to_vec()?, [1.0, 2.0, 3.0, -1.0, -1.0, -1.0]);

    let f = vm.from_slice::<f64>(&[5], &[-2.7, 2.7, f64::NAN, 300.0, 0.0])?;
    assert_eq!(f.cast::<i32>().to_vec()?, [-2, 2, 0, 300, 0]);
    assert_eq!(f.cast::<u8>().to_vec()?, [0, 2, 0, 255, 0]);
    assert_eq!(f.cast::<bool>().to_vec()?, [true, true, true, true, false]);
    assert_eq!(f.cast::<bool>().cast::<f32>().to_vec()?, [1.0, 1.0, 1.0, 1.0, 0.0]);
    Ok(())
}

#[test]
fn random_numbers_continue_each_seeds_stream() -> Result<()> {
    let vm = vm();
    let a = vm.random::<f64>(&[10, 100], 42)?;
    let b = vm.random::<f64>(&[10], 42)?;
    let c = vm.random_at::<f64>(&[1010], 42, 0)?;
    let other = vm.random::<f64>(&[10], 43)?;
    let want: Vec<f64> = (0..1010).map(|i| f64::from_random_bits(random_bits(42, i))).collect();
    assert_eq!(a.to_vec()?, want[..1000]);
    assert_eq!(b.to_vec()?, want[1000..]);
    assert_eq!(c.to_vec()?, want);
    assert!(want.iter().all(|x| (0.0..1.0).contains(x)));
    assert_ne!(other.to_vec()?, b.to_vec()?);
    let bits = vm.random_at::<u32>(&[3], 7, 5)?;
    assert_eq!(bits.to_vec()?, (5..8).map(|i| random_bits(7, i) as u32).collect::<Vec<_>>());
    Ok(())
}

#[test]
fn gather_scatter_and_matmul() -> Result<()> {
    let vm = vm();
    let src = vm.arange::<f64>(10)? * 10.0;
    let idx = vm.from_slice::<i64>(&[3], &[3, 0, 9])?;
    assert_eq!(src.gather(&idx)?.to_vec()?, [30.0, 0.0, 90.0]);
    assert_eq!(src.slice(s![..;-1])?.gather(&idx)?.to_vec()?, [60.0, 90.0, 0.0]);
    let dst = vm.zeros::<f64>(&[10])?;
    let at = vm.from_slice::<u32>(&[2], &[4, 1])?;
    dst.slice(s![..;2])?.scatter(&at, &vm.from_slice::<f64>(&[2], &[7.0, 8.0])?)?;
    dst.scatter(&at, -1.0)?;
    assert_eq!(dst.to_vec()?, [0.0, -1.0, 8.0, 0.0, -1.0, 0.0, 0.0, 0.0, 7.0, 0.0]);

    let bad = vm.from_slice::<i64>(&[1], &[10])?;
    let g = src.gather(&bad)?;
    assert!(matches!(g.to_vec(), Err(Error::Execution(_))));
    assert_eq!(src.slice(s![1])?.to_scalar()?, 10.0, "the VM stays usable");

    let a = vm.from_slice::<f64>(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    let b = vm.from_slice::<f64>(&[3, 2], &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0])?;
    assert_eq!(a.matmul(&b)?.to_vec()?, [58.0, 64.0, 139.0, 154.0]);
    assert_eq!(vm.ones::<f64>(&[3])?.matmul(&b)?.to_vec()?, [27.0, 30.0]);
    assert_eq!(a.matmul(&vm.from_slice::<f64>(&[3], &[1.0, 0.0, 1.0])?)?.to_vec()?, [4.0, 10.0]);
    assert_eq!(a.transpose().matmul(&a)?.diagonal()?.to_vec()?, [17.0, 29.0, 45.0]);
    assert_eq!(b.slice(s![..;-1, ..])?.matmul(&b.transpose())?.slice(s![0])?.to_vec()?, [173.0, 219.0, 265.0]);
    Ok(())
}

/// The heat-equation benchmark (Jacobi 5-point stencil) against plain loops; with a small
/// batch limit too, so that batches are cut inside an iteration.
#[test]
fn heat_equation_matches_loops() -> Result<()> {
    let (h, w, iterations) = (7usize, 9usize, 12);
    let (rows, cols) = (h + 2, w + 2);
    let mut want = vec![0.0f64; rows * cols];
    for r in 0..rows {
        want[r * cols] = -273.15;
        want[r * cols + cols - 1] = -273.15;
    }
    for c in 0..cols {
        want[(rows - 1) * cols + c] = -273.15;
        want[c] = 40.0;
    }
    let mut want_delta = 0.0;
    for _ in 0..iterations {
        let mut next = want.clone();
        want_delta = 0.0;
        for r in 1..=h {
            for c in 1..=w {
                let at = |rr: usize, cc: usize| want[rr * cols + cc];
                let v = 0.2 * (at(r, c) + at(r - 1, c) + at(r + 1, c) + at(r, c + 1) + at(r, c - 1));
                want_delta += (v - at(r, c)).abs();
                next[r * cols + c] = v;
            }
        }
        want = next;
    }

    for limit in [4096, 3] {
        let vm = vm_with_limit(limit);
        let grid = vm.zeros::<f64>(&[rows, cols])?;
        grid.slice(s![.., 0])?.fill(-273.15)?;
        grid.slice(s![.., -1])?.fill(-273.15)?;
        grid.slice(s![-1, ..])?.fill(-273.15)?;
        grid.slice(s![0, ..])?.fill(40.0)?;
        let center = grid.slice(s![1..-1, 1..-1])?;
        let north = grid.slice(s![..-2, 1..-1])?;
        let south = grid.slice(s![2.., 1..-1])?;
        let east = grid.slice(s![1..-1, 2..])?;
        let west = grid.slice(s![1..-1, ..-2])?;
        let live = vm.live_bases();
        let mut delta = vm.zeros::<f64>(&[])?;
        for _ in 0..iterations {
            let work = (&center + &north + &south + &east + &west) * 0.2;
            delta = (&work - &center).abs().sum_all();
            center.assign(&work)?;
        }
        assert_eq!(vm.live_bases(), live + 1, "only `delta` outlives the loop");
        assert_close(&[delta.to_scalar()?], &[want_delta], 1e-12);
        assert_close(&grid.to_vec()?, &want, 1e-12);
        drop((grid, center, north, south, east, west, delta));
        vm.shutdown()?;
    }
    Ok(())
}

/// Monte Carlo pi and Leibnitz pi, exactly as the benchmarks write them.
#[test]
fn pi_two_ways() -> Result<()> {
    let vm = vm();
    let n = 20_000;
    let x = vm.random::<f64>(&[n], 1)?;
    let y = vm.random::<f64>(&[n], 2)?;
    let inside = (&x * &x + &y * &y).sqrt().le(1.0)?.cast::<f64>().sum_all().to_scalar()?;
    let want = (0..n as u64)
        .filter(|&i| {
            let (a, b) = (f64::from_random_bits(random_bits(1, i)), f64::from_random_bits(random_bits(2, i)));
            (a * a + b * b).sqrt() <= 1.0
        })
        .count();
    assert_eq!(inside, want as f64);
    assert!((4.0 * inside / n as f64 - std::f64::consts::PI).abs() < 0.05);

    let k = vm.arange::<f64>(100_000)?;
    let terms = 1.0 / (&k * 4.0 + 1.0) - 1.0 / (&k * 4.0 + 3.0);
    let pi = (terms.sum_all() * 4.0).to_scalar()?;
    let want: f64 =
        4.0 * (0..100_000).map(|k| 1.0 / (4.0 * k as f64 + 1.0) - 1.0 / (4.0 * k as f64 + 3.0)).sum::<f64>();
    assert_close(&[pi], &[want], 1e-12);
    assert!((pi - std::f64::consts::PI).abs() < 1e-4);
    Ok(())
}

/// Black-Scholes with the 5-term polynomial CND, against the same formula on the host.
#[test]
fn black_scholes_matches_the_formula() -> Result<()> {
    fn cnd_host(x: f64) -> f64 {
        let (a1, a2, a3, a4, a5) = (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429);
        let l = x.abs();
        let k = 1.0 / (1.0 + 0.2316419 * l);
        let w = 1.0
            - 1.0 / (2.0 * std::f64::consts::PI).sqrt()
                * (-l * l / 2.0).exp()
                * (a1 * k + a2 * k.powi(2) + a3 * k.powi(3) + a4 * k.powi(4) + a5 * k.powi(5));
        if x < 0.0 { 1.0 - w } else { w }
    }
    fn cnd(x: &Array<f64>) -> Result<Array<f64>> {
        let (a1, a2, a3, a4, a5) = (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429);
        let l = x.abs();
        let k = 1.0 / (&l * 0.2316419 + 1.0);
        let poly = &k * a1 + k.square() * a2 + k.pow(3.0)? * a3 + k.pow(4.0)? * a4 + k.pow(5.0)? * a5;
        let w = 1.0 - (-(&l * &l) / 2.0).exp() * (1.0 / (2.0 * std::f64::consts::PI).sqrt()) * poly;
        Array::select(&x.lt(0.0)?, 1.0 - &w, &w)
    }
    let vm = vm();
    let n = 1000;
    let s = vm.random::<f64>(&[n], 9)? * 4.0 + 58.0;
    let (x, r, v) = (65.0, 0.08, 0.3);
    let host_s: Vec<f64> = (0..n as u64).map(|i| f64::from_random_bits(random_bits(9, i)) * 4.0 + 58.0).collect();
    let mut t = 0.0;
    for _ in 0..3 {
        t += 1.0 / 365.0;
        let d1 = ((&s / x).log() + (r + v * v / 2.0) * t) / (v * f64::sqrt(t));
        let d2 = &d1 - v * f64::sqrt(t);
        let price = &s * &cnd(&d1)? - cnd(&d2)? * (x * (-r * t).exp());
        let mean = price.mean_all().to_scalar()?;
        let want = host_s
            .iter()
            .map(|&s| {
                let d1 = ((s / x).ln() + (r + v * v / 2.0) * t) / (v * t.sqrt());
                let d2 = d1 - v * t.sqrt();
                s * cnd_host(d1) - x * (-r * t).exp() * cnd_host(d2)
            })
            .sum::<f64>()
            / n as f64;
        assert_close(&[mean], &[want], 1e-9);
    }
    Ok(())
}

/// The n-body step: outer differences by broadcasting, the diagonal written through a view,
/// forces summed along an axis, in-place updates; against loops.
#[test]
fn nbody_step_matches_loops() -> Result<()> {
    let vm = vm();
    let n = 6;
    let (g, dt) = (1.0, 0.01);
    let host: Vec<f64> = (0..4 * n as u64).map(|i| f64::from_random_bits(random_bits(5, i))).collect();
    let (mut px, mut py, m) = (host[..n].to_vec(), host[n..2 * n].to_vec(), host[2 * n..3 * n].to_vec());
    let (mut vx, mut vy) = (vec![0.0; n], vec![0.0; n]);
    let mut x = vm.from_slice::<f64>(&[n], &px)?;
    let mut y = vm.from_slice::<f64>(&[n], &py)?;
    let mass = vm.from_slice::<f64>(&[n], &m)?;
    let mut u = vm.zeros::<f64>(&[n])?;
    let mut w = vm.zeros::<f64>(&[n])?;
    for _ in 0..3 {
        let dx = x.slice(s![.., NewAxis])? - x.slice(s![NewAxis, ..])?;
        let dy = y.new_axis(1)? - y.new_axis(0)?;
        let r = (dx.square() + dy.square()).sqrt();
        r.diagonal()?.fill(1.0)?;
        let r = Array::select(&r.lt(0.1)?, 0.1, &r)?;
        let mm = mass.new_axis(1)? * mass.new_axis(0)?;
        let f = &mm * g / (&r * &r * &r);
        f.diagonal()?.fill(0.0)?;
        u -= (&f * &dx).sum(1)? / &mass * dt;
        w -= (&f * &dy).sum(1)? / &mass * dt;
        x += &u * dt;
        y += &w * dt;

        let mut fx = vec![0.0; n];
        let mut fy = vec![0.0; n];
        for i in 0..n {
            for j in 0..n {
                if i == j {
                    continue;
                }
                let (ddx, ddy) = (px[i] - px[j], py[i] - py[j]);
                let r = (ddx * ddx + ddy * ddy).sqrt().max(0.1);
                let f = m[i] * m[j] * g / (r * r * r);
                fx[i] += f * ddx;
                fy[i] += f * ddy;
            }
        }
        for i in 0..n {
            vx[i] -= fx[i] / m[i] * dt;
            vy[i] -= fy[i] / m[i] * dt;
            px[i] += vx[i] * dt;
            py[i] += vy[i] * dt;
        }
    }
    assert_close(&x.to_vec()?, &px, 1e-12);
    assert_close(&y.to_vec()?, &py, 1e-12);
    Ok(())
}

/// kNN: the distance matrix by a 3-d broadcast and a reduction, then k rounds of row minima,
/// each minimum replaced by +inf; against loops.
#[test]
fn knn_matches_loops() -> Result<()> {
    let vm = vm();
    let (n, q, d, k) = (7, 4, 3, 3);
    let e_host: Vec<f64> = (0..(n * d) as u64).map(|i| f64::from_random_bits(random_bits(11, i))).collect();
    let q_host: Vec<f64> = (0..(q * d) as u64).map(|i| f64::from_random_bits(random_bits(12, i))).collect();
    let e = vm.from_slice::<f64>(&[n, d], &e_host)?;
    let qs = vm.from_slice::<f64>(&[q, d], &q_host)?;
    let dist = (qs.slice(s![.., NewAxis, ..])? - e.slice(s![NewAxis, .., ..])?).square().sum(2)?;
    assert_eq!(dist.shape(), [q, n]);
    let mut total = vm.zeros::<f64>(&[])?;
    for _ in 0..k {
        let m = dist.min(1)?;
        total += m.sum_all();
        dist.assign(Array::select(&dist.eq(m.new_axis(1)?)?, f64::INFINITY, &dist)?)?;
    }
    let mut want = 0.0;
    for i in 0..q {
        let mut ds: Vec<f64> =
            (0..n).map(|j| (0..d).map(|c| (q_host[i * d + c] - e_host[j * d + c]).powi(2)).sum::<f64>()).collect();
        ds.sort_by(f64::total_cmp);
        want += ds[..k].iter().sum::<f64>();
    }
    assert_close(&[total.to_scalar()?], &[want], 1e-12);
    Ok(())
}

/// A shallow-water half step: reflecting boundaries written through column/row views with
/// negation, and the Lax-Wendroff x-flux of height and momentum on shifted views; against loops.
#[test]
fn shallow_water_half_step_matches_loops() -> Result<()> {
    let vm = vm();
    let n = 6;
    let (g, dt, dx) = (9.80665, 0.02, 1.0);
    let size = n + 2;
    let h0: Vec<f64> = (0..size * size).map(|i| 1.0 + 0.1 * ((i * 5) % 7) as f64).collect();
    let u0: Vec<f64> = (0..size * size).map(|i| 0.01 * ((i * 3) % 5) as f64).collect();
    let h = vm.from_slice::<f64>(&[size, size], &h0)?;
    let u = vm.from_slice::<f64>(&[size, size], &u0)?;
    h.slice(s![.., 0])?.assign(&h.slice(s![.., 1])?)?;
    u.slice(s![.., 0])?.assign(&-u.slice(s![.., 1])?)?;
    h.slice(s![n + 1, ..])?.assign(&h.slice(s![n, ..])?)?;
    u.slice(s![n + 1, ..])?.assign(&-u.slice(s![n, ..])?)?;
    let hx = vm.zeros::<f64>(&[n + 1, n + 1])?;
    let ux = vm.zeros::<f64>(&[n + 1, n + 1])?;
    let (h1, h0v) = (h.slice(s![1.., 1..-1])?, h.slice(s![..-1, 1..-1])?);
    let (u1, u0v) = (u.slice(s![1.., 1..-1])?, u.slice(s![..-1, 1..-1])?);
    hx.slice(s![.., ..-1])?.assign((&h1 + &h0v) / 2.0 - (&u1 - &u0v) * (dt / (2.0 * dx)))?;
    let flux = |u: &Array<f64>, h: &Array<f64>| u.square() / h + h.square() * (g / 2.0);
    ux.slice(s![.., ..-1])?.assign((&u1 + &u0v) / 2.0 - (flux(&u1, &h1) - flux(&u0v, &h0v)) * (dt / (2.0 * dx)))?;

    let (mut hh, mut uh) = (h0.clone(), u0.clone());
    for r in 0..size {
        hh[r * size] = hh[r * size + 1];
        uh[r * size] = -uh[r * size + 1];
    }
    for c in 0..size {
        hh[(n + 1) * size + c] = hh[n * size + c];
        uh[(n + 1) * size + c] = -uh[n * size + c];
    }
    let (mut hx_want, mut ux_want) = (vec![0.0; (n + 1) * (n + 1)], vec![0.0; (n + 1) * (n + 1)]);
    for r in 0..=n {
        for c in 0..n {
            let (a, b) = ((r + 1) * size + c + 1, r * size + c + 1);
            hx_want[r * (n + 1) + c] = (hh[a] + hh[b]) / 2.0 - (uh[a] - uh[b]) * (dt / (2.0 * dx));
            let f = |i: usize| uh[i] * uh[i] / hh[i] + hh[i] * hh[i] * (g / 2.0);
            ux_want[r * (n + 1) + c] = (uh[a] + uh[b]) / 2.0 - (f(a) - f(b)) * (dt / (2.0 * dx));
        }
    }
    assert_close(&h.to_vec()?, &hh, 0.0);
    assert_close(&u.to_vec()?, &uh, 0.0);
    assert_close(&hx.to_vec()?, &hx_want, 1e-14);
    assert_close(&ux.to_vec()?, &ux_want, 1e-14);
    Ok(())
}

/// Code generic over the element type, run with `f32` and `f64`.
#[test]
fn generic_code_over_float_types() -> Result<()> {
    use vm_frontend::Float;
    fn normalize<T: Float>(a: &Array<T>) -> Result<Array<T>> {
        let shifted = a - &a.min_all();
        shifted.try_div(shifted.max_all())
    }
    let vm = vm();
    let a = vm.from_slice::<f32>(&[4], &[2.0, 4.0, 3.0, 6.0])?;
    assert_eq!(normalize(&a)?.to_vec()?, [0.0, 0.5, 0.25, 1.0]);
    let b = vm.from_slice::<f64>(&[2, 2], &[-1.0, 1.0, 0.0, 3.0])?;
    assert_eq!(normalize(&b)?.to_vec()?, [0.0, 0.5, 0.25, 1.0]);
    Ok(())
}

/// Reading a broadcast view of 2^40 elements (8 TiB as f64) is an out-of-memory error naming
/// the base and the size, not an abort; gathering from it reads it in place, and the VM stays
/// usable.
#[test]
fn huge_broadcasts_cost_no_memory_until_copied() -> Result<()> {
    let vm = vm();
    let one = vm.full::<f64>(&[1], 2.5)?;
    let huge = one.broadcast_to(&[1 << 40])?;
    let e = huge.to_vec().unwrap_err();
    assert!(matches!(e, Error::OutOfMemory(_)), "{e}");
    let want = format!("allocating 8796093022208 bytes for a copy of a view of base {}", one.base().id);
    assert!(e.to_string().contains(&want), "`{want}` missing from: {e}");
    let idx = vm.from_slice::<u64>(&[2], &[0, (1 << 40) - 1])?;
    assert_eq!(huge.gather(&idx)?.to_vec()?, [2.5, 2.5]);
    assert_eq!(one.to_vec()?, [2.5], "the VM stays usable");
    Ok(())
}

#[test]
fn a_host_write_after_queued_reads_leaves_them_the_old_values() -> Result<()> {
    use vm_ir::{DType, Instruction, Opcode, Operand, Scalar, View};
    let mut rt = Runtime::new(Box::new(Interp::default()), RuntimeOptions::default());
    let (a, b) = (rt.new_base(DType::F64, 4)?, rt.new_base(DType::F64, 4)?);
    rt.write(a.id, 0, &[1.0f64, 2.0, 3.0, 4.0].map(f64::to_ne_bytes).concat())?;
    rt.sync(a.id)?;
    // b = a * 10 is queued, then a[1] is written in host memory: the queued read runs first.
    let times_ten = Instruction::new(
        Opcode::Multiply,
        [View::of_base(b).into(), View::of_base(a).into(), Operand::Const(Scalar::F64(10.0))],
    );
    rt.submit(vec![times_ten])?;
    rt.write(a.id, 1, &5.0f64.to_ne_bytes())?;
    rt.sync(b.id)?;
    assert_eq!(rt.host_slice::<f64>(b.id)?, &[10.0, 20.0, 30.0, 40.0]);
    rt.sync(a.id)?;
    assert_eq!(rt.host_slice::<f64>(a.id)?, &[1.0, 5.0, 3.0, 4.0]);
    Ok(())
}
