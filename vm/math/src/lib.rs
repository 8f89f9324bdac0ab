//! The float functions the host engines share, so that an operation gives the same bits on the
//! interpreter (small arrays, run at once) and in the cpu engine's kernels (large ones): `exp`
//! and `log` as branch-free scalar code that the Rust compiler vectorises, compiled three times
//! (AVX-512, AVX2+FMA, baseline; the same bits from each: every step is an IEEE operation or a
//! fused multiply-add) and chosen once at run time. Accuracy (tested against `std` over the
//! whole domain): within 1 ulp for f64 normal results; f32 goes through f64 and is correctly
//! rounded in practice. Float dot products sum in one order everywhere ([`dot`]).

// The constants are fdlibm's, written as published.
#![allow(clippy::excessive_precision)]

use std::sync::OnceLock;

pub mod dot;

const LOG2E: f64 = std::f64::consts::LOG2_E;
/// 2^52 + 2^51: adding it to an integer-valued f64 of magnitude below 2^51 puts the integer in
/// the low mantissa bits (a conversion that vectorises without AVX-512).
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// `k as i64` for an integer-valued `k` with `|k| < 2^51`.
#[inline(always)]
fn to_int(k: f64) -> i64 {
    (k + MAGIC).to_bits() as i64 - MAGIC.to_bits() as i64
}

/// `k as f64` for `|k| < 2^51`.
#[inline(always)]
fn to_float(k: i64) -> f64 {
    f64::from_bits((k + MAGIC.to_bits() as i64) as u64) - MAGIC
}

const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;

/// `e^x`: `x = k ln2 + r`, `|r| <= ln2 / 2`, a degree-13 Taylor polynomial for `e^r`, and a
/// scaling by `2^k` in two exact steps (so subnormal results come out right).
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    let xc = x.clamp(-746.0, 710.0);
    let k = (xc * LOG2E).round_ties_even();
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, xc));
    let mut p: f64 = 1.0 / 6_227_020_800.0;
    for c in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p.mul_add(r, c);
    }
    let ki = to_int(k);
    let k1 = ki >> 1;
    let k2 = ki - k1;
    let s1 = f64::from_bits(((k1 + 1023) as u64) << 52);
    let s2 = f64::from_bits(((k2 + 1023) as u64) << 52);
    let y = p * s1 * s2;
    let y = if x > 709.782_712_893_384 { f64::INFINITY } else { y };
    let y = if x < -745.133_219_101_941_2 { 0.0 } else { y };
    if x.is_nan() { x } else { y }
}

const LG: [f64; 7] = [
    6.666_666_666_666_735_130e-01,
    3.999_999_999_940_941_908e-01,
    2.857_142_874_366_239_149e-01,
    2.222_219_843_214_978_396e-01,
    1.818_357_216_161_805_012e-01,
    1.531_383_769_920_937_332e-01,
    1.479_819_860_511_658_591e-01,
];

/// The NaN of an invalid operation, as libm's `log` returns it for a negative input
/// (`(x - x) / (x - x)`): the hardware's default NaN, whose sign is set on x86, which `copysign`
/// and `signbit` show.
const INVALID: f64 = if cfg!(any(target_arch = "x86_64", target_arch = "x86")) { -f64::NAN } else { f64::NAN };

/// `ln(x)`, fdlibm's method: `x = 2^k m`, `m` in `[sqrt(2)/2, sqrt(2))`, `f = m - 1`,
/// `s = f / (2 + f)`, and a degree-14 odd polynomial in `s`.
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * 18_014_398_509_481_984.0 } else { x }; // 2^54
    let bits = xs.to_bits();
    let mut k = ((bits >> 52) & 0x7ff) as i64 - 1023 - if sub { 54 } else { 0 };
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let big = m > std::f64::consts::SQRT_2;
    m = if big { m * 0.5 } else { m };
    k += i64::from(big);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * LG[5].mul_add(w, LG[3]).mul_add(w, LG[1]);
    let t2 = z * LG[6].mul_add(w, LG[4]).mul_add(w, LG[2]).mul_add(w, LG[0]);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = to_float(k);
    let y = dk * LN2_HI - ((hfsq - s.mul_add(hfsq + r, dk * LN2_LO)) - f);
    let y = if x == 0.0 { f64::NEG_INFINITY } else { y };
    let y = if x < 0.0 { INVALID } else { y };
    if x.is_nan() || x == f64::INFINITY { x } else { y }
}

macro_rules! variants {
    ($name:ident, $t:ty, $f:expr) => {
        mod $name {
            #[inline(always)]
            fn body(d: &mut [$t], a: &[$t]) {
                for (d, &a) in d.iter_mut().zip(a) {
                    *d = $f(a);
                }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
            pub(super) fn avx512(d: &mut [$t], a: &[$t]) {
                body(d, a)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            pub(super) fn avx2(d: &mut [$t], a: &[$t]) {
                body(d, a)
            }
            pub(super) fn base(d: &mut [$t], a: &[$t]) {
                body(d, a)
            }
        }
    };
}

variants!(exp64, f64, super::exp_f64);
variants!(exp32, f32, |x: f32| super::exp_f64(f64::from(x)) as f32);
variants!(ln64, f64, super::ln_f64);
variants!(ln32, f32, |x: f32| super::ln_f64(f64::from(x)) as f32);

type SliceFn<T> = unsafe fn(&mut [T], &[T]);

/// The routines for this CPU, chosen once.
struct Table {
    exp64: SliceFn<f64>,
    exp32: SliceFn<f32>,
    ln64: SliceFn<f64>,
    ln32: SliceFn<f32>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("fma")
            {
                return Table { exp64: exp64::avx512, exp32: exp32::avx512, ln64: ln64::avx512, ln32: ln32::avx512 };
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Table { exp64: exp64::avx2, exp32: exp32::avx2, ln64: ln64::avx2, ln32: ln32::avx2 };
            }
        }
        Table { exp64: exp64::base, exp32: exp32::base, ln64: ln64::base, ln32: ln32::base }
    })
}

macro_rules! slice_fn {
    ($(#[$doc:meta])* $name:ident, $t:ty, $field:ident) => {
        $(#[$doc])*
        /// `dst` and `src` must have the same length.
        pub fn $name(dst: &mut [$t], src: &[$t]) {
            assert_eq!(dst.len(), src.len(), "{}: slices of different lengths", stringify!($name));
            // SAFETY: the variant in the table was chosen for features this CPU has.
            unsafe { (table().$field)(dst, src) }
        }
    };
}

slice_fn!(
    /// `dst[i] = e^src[i]` ([`exp_f64`]).
    exp_f64s, f64, exp64
);
slice_fn!(
    /// `dst[i] = e^src[i]` through f64 ([`exp_f64`]).
    exp_f32s, f32, exp32
);
slice_fn!(
    /// `dst[i] = ln(src[i])` ([`ln_f64`]).
    ln_f64s, f64, ln64
);
slice_fn!(
    /// `dst[i] = ln(src[i])` through f64 ([`ln_f64`]).
    ln_f32s, f32, ln32
);

/// `e^x` of an f32, through f64 ([`exp_f64`]): element by element, what [`exp_f32s`] computes.
#[inline]
pub fn exp_f32(x: f32) -> f32 {
    exp_f64(f64::from(x)) as f32
}

/// `ln(x)` of an f32, through f64 ([`ln_f64`]): element by element, what [`ln_f32s`] computes.
#[inline]
pub fn ln_f32(x: f32) -> f32 {
    ln_f64(f64::from(x)) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f64, b: f64) -> u64 {
        if a == b || (a.is_nan() && b.is_nan() && a.is_sign_negative() == b.is_sign_negative()) {
            return 0;
        }
        let key = |x: f64| {
            let i = x.to_bits() as i64;
            if i < 0 { i64::MIN - i } else { i }
        };
        key(a).abs_diff(key(b))
    }

    fn run(f: fn(&mut [f64], &[f64]), xs: &[f64]) -> Vec<f64> {
        let mut d = vec![0.0; xs.len()];
        f(&mut d, xs);
        d
    }

    fn sample(lo: f64, hi: f64, n: usize) -> Vec<f64> {
        let mut s = 0x1234_5678_9abc_def1u64;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
            })
            .collect()
    }

    #[test]
    fn exp_is_within_one_ulp_of_std() {
        let mut xs = sample(-745.2, 709.8, 200_000);
        xs.extend(sample(-1.0, 1.0, 100_000));
        xs.extend([0.0, -0.0, 1e-300, -1e-300, 709.78, 709.8, -745.0, -745.2, -708.5, f64::INFINITY]);
        xs.extend([f64::NEG_INFINITY, f64::NAN, 1000.0, -1000.0]);
        let got = run(exp_f64s, &xs);
        for (&x, &y) in xs.iter().zip(&got) {
            let want = x.exp();
            let tol = if want < f64::MIN_POSITIVE { 2 } else { 1 };
            assert!(ulps(y, want) <= tol, "exp({x:e}) = {y:e}, std {want:e}");
        }
    }

    #[test]
    fn log_is_within_one_ulp_of_std() {
        let mut xs: Vec<f64> = sample(-300.0, 300.0, 200_000).into_iter().map(|e| 10f64.powf(e)).collect();
        xs.extend(sample(0.5, 2.0, 100_000));
        xs.extend([0.0, -0.0, -1.0, 1.0, 5e-324, 2.2e-308, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
        let got = run(ln_f64s, &xs);
        for (&x, &y) in xs.iter().zip(&got) {
            assert!(ulps(y, x.ln()) <= 1, "ln({x:e}) = {y:e}, std {:e}", x.ln());
        }
    }

    #[test]
    fn every_variant_this_cpu_runs_gives_the_same_bits() {
        let mut xs = sample(-750.0, 750.0, 50_000);
        xs.extend([0.0, -0.0, 5e-324, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 709.78, -745.1]);
        let ys: Vec<f64> = xs.iter().map(|x| x.abs() * 1e-3).chain([0.0, -0.0, -1.0, 5e-324]).collect();
        let mut variants: Vec<(SliceFn<f64>, SliceFn<f64>)> = vec![(exp64::base, ln64::base)];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                variants.push((exp64::avx2, ln64::avx2));
            }
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("fma")
            {
                variants.push((exp64::avx512, ln64::avx512));
            }
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (mut e0, mut l0) = (vec![0.0; xs.len()], vec![0.0; ys.len()]);
        exp64::base(&mut e0, &xs);
        ln64::base(&mut l0, &ys);
        for (e, l) in variants {
            let (mut d, mut g) = (vec![0.0; xs.len()], vec![0.0; ys.len()]);
            // SAFETY: the variant's features were detected (or it is the baseline).
            unsafe { (e(&mut d, &xs), l(&mut g, &ys)) };
            assert_eq!(bits(&d), bits(&e0));
            assert_eq!(bits(&g), bits(&l0));
            for i in 0..xs.len() {
                assert!(ulps(d[i], xs[i].exp()) <= 2, "exp at {}", xs[i]);
            }
            // One at a time, as an engine computes an element off a run.
            assert!(xs.iter().zip(&d).all(|(&x, &y)| exp_f64(x).to_bits() == y.to_bits()));
        }
    }

    #[test]
    fn f32_variants_round_like_std() {
        let xs: Vec<f32> = sample(-104.0, 89.0, 100_000).into_iter().map(|x| x as f32).collect();
        let mut d = vec![0f32; xs.len()];
        exp_f32s(&mut d, &xs);
        for (&x, &y) in xs.iter().zip(&d) {
            let want = x.exp();
            let u = (y.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
            assert!(y == want || u <= 1, "expf({x:e}) = {y:e}, std {want:e}");
        }
    }
}
