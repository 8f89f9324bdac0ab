//! The block routine of `random`: [`vm_ir::random`]'s Philox-4x32-10 stream, computed for
//! [`LANES`] consecutive counters at once with AVX-512 or AVX2 (32x32->64-bit multiplies of
//! eight or four counters per instruction) where the CPU has them, one counter at a time
//! otherwise; chosen once at run time. Every element is bit-identical to
//! `FromRandomBits::from_random_bits(random_bits(seed, counter))`.

use crate::routines::calls::BlockFn;
use std::sync::OnceLock;
use vm_ir::random::FromRandomBits;
use vm_ir::{DType, with_dtype};

/// Counters computed together.
pub const LANES: usize = 16;

const M0: u64 = 0xD251_1F53;
const M1: u64 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The 64 random bits of counters `counter .. counter + LANES` of the stream keyed by `seed`
/// (the first two words of Philox-4x32-10 of `[lo, hi, 0, 0]`, as `random_bits`), one counter
/// at a time.
#[inline(always)]
fn bits_scalar(seed: u64, counter: u64) -> [u64; LANES] {
    std::array::from_fn(|i| vm_ir::random::random_bits(seed, counter.wrapping_add(i as u64)))
}

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// AVX2 registers per word of [`LANES`] counters.
#[cfg(target_arch = "x86_64")]
const H: usize = LANES / 4;

/// The first two output words of Philox-4x32-10 for counters `counter .. counter + LANES`, with
/// AVX2: each 32-bit word in the low half of a 64-bit lane, four counters per register, several
/// registers interleaved to hide the multiplies' latency, so that the multiplies are `vpmuludq`
/// and a product's halves need no shuffles.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn words_avx2(seed: u64, counter: u64) -> ([__m256i; H], [__m256i; H]) {
    // SAFETY: the loads and stores are unaligned ones of whole local arrays.
    unsafe {
        let lo = _mm256_set1_epi64x(0xFFFF_FFFF);
        let (m0, m1) = (_mm256_set1_epi64x(M0 as i64), _mm256_set1_epi64x(M1 as i64));
        let c: [u64; LANES] = std::array::from_fn(|i| counter.wrapping_add(i as u64));
        let c: [__m256i; H] = std::array::from_fn(|h| _mm256_loadu_si256(c.as_ptr().add(4 * h).cast()));
        let mut x0: [__m256i; H] = std::array::from_fn(|h| _mm256_and_si256(c[h], lo));
        let mut x1: [__m256i; H] = std::array::from_fn(|h| _mm256_srli_epi64::<32>(c[h]));
        let mut x2 = [_mm256_setzero_si256(); H];
        let mut x3 = [_mm256_setzero_si256(); H];
        let (mut k0, mut k1) = (seed as u32, (seed >> 32) as u32);
        for round in 0..10 {
            if round > 0 {
                k0 = k0.wrapping_add(W0);
                k1 = k1.wrapping_add(W1);
            }
            let (vk0, vk1) = (_mm256_set1_epi64x(i64::from(k0)), _mm256_set1_epi64x(i64::from(k1)));
            for h in 0..H {
                let p0 = _mm256_mul_epu32(m0, x0[h]);
                let p1 = _mm256_mul_epu32(m1, x2[h]);
                x0[h] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64::<32>(p1), x1[h]), vk0);
                x1[h] = _mm256_and_si256(p1, lo);
                x2[h] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64::<32>(p0), x3[h]), vk1);
                x3[h] = _mm256_and_si256(p0, lo);
            }
        }
        (x0, x1)
    }
}

/// [`bits_scalar`] with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn bits_avx2(seed: u64, counter: u64) -> [u64; LANES] {
    let (x0, x1) = words_avx2(seed, counter);
    let mut out = [0u64; LANES];
    for h in 0..H {
        let v = _mm256_or_si256(x0[h], _mm256_slli_epi64::<32>(x1[h]));
        // SAFETY: an unaligned store of four words into the local array.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(4 * h).cast(), v) };
    }
    out
}

/// The f64 elements of counters `counter .. counter + LANES` with AVX2: `(bits >> 11) * 2^-53`
/// as `high * 2^21 + (low >> 11)` of the two 32-bit words, each converted exactly through the
/// 2^52 exponent trick, so every step is exact and the result equals the scalar conversion.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn f64_avx2(seed: u64, counter: u64) -> [f64; LANES] {
    let (x0, x1) = words_avx2(seed, counter);
    let magic = _mm256_set1_epi64x(0x4330_0000_0000_0000);
    let two52 = _mm256_set1_pd(4_503_599_627_370_496.0);
    let two21 = _mm256_set1_pd(2_097_152.0);
    let scale = _mm256_set1_pd(1.0 / (1u64 << 53) as f64);
    let mut out = [0f64; LANES];
    for h in 0..H {
        let hi = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x1[h], magic)), two52);
        let lo = _mm256_srli_epi64::<11>(x0[h]);
        let lo = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(lo, magic)), two52);
        let v = _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(hi, two21), lo), scale);
        // SAFETY: an unaligned store of four doubles into the local array.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr().add(4 * h), v) };
    }
    out
}

/// 512-bit registers per word of [`LANES`] counters.
#[cfg(target_arch = "x86_64")]
const Z: usize = LANES / 8;

/// [`words_avx2`] with AVX-512: eight counters per register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn words_avx512(seed: u64, counter: u64) -> ([__m512i; Z], [__m512i; Z]) {
    let lo = _mm512_set1_epi64(0xFFFF_FFFF);
    let (m0, m1) = (_mm512_set1_epi64(M0 as i64), _mm512_set1_epi64(M1 as i64));
    let steps = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    let c: [__m512i; Z] =
        std::array::from_fn(|z| _mm512_add_epi64(_mm512_set1_epi64(counter.wrapping_add(8 * z as u64) as i64), steps));
    let mut x0: [__m512i; Z] = std::array::from_fn(|z| _mm512_and_si512(c[z], lo));
    let mut x1: [__m512i; Z] = std::array::from_fn(|z| _mm512_srli_epi64::<32>(c[z]));
    let mut x2 = [_mm512_setzero_si512(); Z];
    let mut x3 = [_mm512_setzero_si512(); Z];
    let (mut k0, mut k1) = (seed as u32, (seed >> 32) as u32);
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let (vk0, vk1) = (_mm512_set1_epi64(i64::from(k0)), _mm512_set1_epi64(i64::from(k1)));
        for z in 0..Z {
            let p0 = _mm512_mul_epu32(m0, x0[z]);
            let p1 = _mm512_mul_epu32(m1, x2[z]);
            x0[z] = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64::<32>(p1), x1[z]), vk0);
            x1[z] = _mm512_and_si512(p1, lo);
            x2[z] = _mm512_xor_si512(_mm512_xor_si512(_mm512_srli_epi64::<32>(p0), x3[z]), vk1);
            x3[z] = _mm512_and_si512(p0, lo);
        }
    }
    (x0, x1)
}

/// [`bits_scalar`] with AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn bits_avx512(seed: u64, counter: u64) -> [u64; LANES] {
    let (x0, x1) = words_avx512(seed, counter);
    let mut out = [0u64; LANES];
    for z in 0..Z {
        let v = _mm512_or_si512(x0[z], _mm512_slli_epi64::<32>(x1[z]));
        // SAFETY: an unaligned store of eight words into the local array.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(8 * z).cast(), v) };
    }
    out
}

/// [`f64_avx2`] with AVX-512 (DQ's exact 64-bit integer conversion: `bits >> 11` < 2^53).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
fn f64_avx512(seed: u64, counter: u64) -> [f64; LANES] {
    let (x0, x1) = words_avx512(seed, counter);
    let scale = _mm512_set1_pd(1.0 / (1u64 << 53) as f64);
    let mut out = [0f64; LANES];
    for z in 0..Z {
        let bits = _mm512_or_si512(x0[z], _mm512_slli_epi64::<32>(x1[z]));
        let v = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64::<11>(bits)), scale);
        // SAFETY: an unaligned store of eight doubles into the local array.
        unsafe { _mm512_storeu_pd(out.as_mut_ptr().add(8 * z), v) };
    }
    out
}

/// Fills `d` with the elements of counters `counter ..` of stream `seed`.
#[inline(always)]
fn fill<T: Copy>(d: &mut [T], seed: u64, counter: u64, elements: impl Fn(u64, u64) -> [T; LANES]) {
    let mut chunks = d.chunks_exact_mut(LANES);
    let mut c = counter;
    for chunk in &mut chunks {
        chunk.copy_from_slice(&elements(seed, c));
        c = c.wrapping_add(LANES as u64);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let n = rest.len();
        rest.copy_from_slice(&elements(seed, c)[..n]);
    }
}

macro_rules! variants {
    ($($name:ident: $t:ty),*) => { $(
        mod $name {
            use super::*;
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            pub(super) fn avx2(d: &mut [$t], seed: u64, counter: u64) {
                fill(d, seed, counter, |s, c| bits_avx2(s, c).map(<$t>::from_random_bits))
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512dq")]
            pub(super) fn avx512(d: &mut [$t], seed: u64, counter: u64) {
                fill(d, seed, counter, |s, c| bits_avx512(s, c).map(<$t>::from_random_bits))
            }
            pub(super) fn base(d: &mut [$t], seed: u64, counter: u64) {
                fill(d, seed, counter, |s, c| bits_scalar(s, c).map(<$t>::from_random_bits))
            }
        }
    )* };
}
variants!(f32v: f32, i8v: i8, i16v: i16, i32v: i32, i64v: i64, u8v: u8, u16v: u16, u32v: u32, u64v: u64, bv: bool);

/// The f64 variants: the AVX2 one converts in registers.
mod f64v {
    use super::*;
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(super) fn avx2(d: &mut [f64], seed: u64, counter: u64) {
        fill(d, seed, counter, |s, c| f64_avx2(s, c))
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) fn avx512(d: &mut [f64], seed: u64, counter: u64) {
        fill(d, seed, counter, |s, c| f64_avx512(s, c))
    }
    pub(super) fn base(d: &mut [f64], seed: u64, counter: u64) {
        fill(d, seed, counter, |s, c| bits_scalar(s, c).map(f64::from_random_bits))
    }
}

/// The widest variant this CPU runs (checked once).
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Base,
    Avx2,
    Avx512,
}

fn variant() -> Variant {
    static VARIANT: OnceLock<Variant> = OnceLock::new();
    *VARIANT.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq") {
                return Variant::Avx512;
            }
            if is_x86_feature_detected!("avx2") {
                return Variant::Avx2;
            }
        }
        Variant::Base
    })
}

/// Element types with a `random` block routine.
trait Fill: FromRandomBits {
    /// Fills `d` from counter `counter` of stream `seed` with the best variant for this CPU.
    fn fill(d: &mut [Self], seed: u64, counter: u64);
}

macro_rules! fill_impl {
    ($($t:ty => $m:ident),*) => { $(
        impl Fill for $t {
            fn fill(d: &mut [$t], seed: u64, counter: u64) {
                match variant() {
                    // SAFETY: AVX-512 F and DQ were detected on this CPU.
                    #[cfg(target_arch = "x86_64")]
                    Variant::Avx512 => unsafe { $m::avx512(d, seed, counter) },
                    // SAFETY: AVX2 was detected on this CPU.
                    #[cfg(target_arch = "x86_64")]
                    Variant::Avx2 => unsafe { $m::avx2(d, seed, counter) },
                    _ => $m::base(d, seed, counter),
                }
            }
        }
    )* };
}
fill_impl!(f64 => f64v, f32 => f32v, i8 => i8v, i16 => i16v, i32 => i32v, i64 => i64v, u8 => u8v, u16 => u16v,
    u32 => u32v, u64 => u64v, bool => bv);

/// # Safety
/// `dst` must be valid for `n` writable elements of `T`; `seed` and `counter` are integers.
unsafe extern "C" fn random_block<T: Fill>(n: i64, dst: *mut u8, seed: *const u8, counter: *const u8) {
    // SAFETY: the generated code passes scratch memory valid for n elements of T.
    let d = unsafe { std::slice::from_raw_parts_mut(dst.cast::<T>(), n as usize) };
    T::fill(d, seed as u64, counter as u64);
}

/// The block routine of `random` with result dtype `dtype`: `(n, dst, seed, counter)`.
pub fn block_fn(dtype: DType) -> BlockFn {
    with_dtype!(dtype, T => random_block::<T> as BlockFn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_ir::random::random_bits;

    fn check<T: Fill + PartialEq + std::fmt::Debug>(seed: u64, counter: u64, n: usize) {
        let mut d: Vec<T> = (0..n).map(|_| T::from_random_bits(0)).collect();
        T::fill(&mut d, seed, counter);
        for (i, x) in d.iter().enumerate() {
            let want = T::from_random_bits(random_bits(seed, counter.wrapping_add(i as u64)));
            assert_eq!(*x, want, "seed {seed:#x} counter {counter:#x} + {i}");
        }
    }

    #[test]
    fn blocks_are_bit_identical_to_the_scalar_stream() {
        for (seed, counter) in [(0, 0), (42, 1000), (u64::MAX, u64::MAX - 5), (0x314, (1 << 32) - 3)] {
            for n in [0, 1, 7, 8, 9, 100, 256] {
                check::<f64>(seed, counter, n);
                check::<f32>(seed, counter, n);
                check::<u64>(seed, counter, n);
                check::<i8>(seed, counter, n);
                check::<bool>(seed, counter, n);
            }
        }
        // Every variant this CPU runs, not only the widest.
        type Variants = Vec<(&'static str, fn(&mut [u64], u64, u64), fn(&mut [f64], u64, u64))>;
        let mut variants: Variants = vec![("base", u64v::base, f64v::base)];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                variants.push((
                    "avx2",
                    // SAFETY: AVX2 was detected on this CPU.
                    |d, s, c| unsafe { u64v::avx2(d, s, c) },
                    // SAFETY: as above.
                    |d, s, c| unsafe { f64v::avx2(d, s, c) },
                ));
            }
            if variant() == Variant::Avx512 {
                variants.push((
                    "avx512",
                    // SAFETY: AVX-512 F and DQ were detected on this CPU.
                    |d, s, c| unsafe { u64v::avx512(d, s, c) },
                    // SAFETY: as above.
                    |d, s, c| unsafe { f64v::avx512(d, s, c) },
                ));
            }
        }
        for (name, bits, floats) in variants {
            let (mut u, mut f) = (vec![0u64; 37], vec![0f64; 37]);
            bits(&mut u, 7, u64::MAX - 20);
            floats(&mut f, 7, u64::MAX - 20);
            for i in 0..37 {
                let want = random_bits(7, (u64::MAX - 20).wrapping_add(i as u64));
                assert_eq!(u[i], want, "{name} bits {i}");
                assert_eq!(f[i], f64::from_random_bits(want), "{name} f64 {i}");
            }
        }
    }
}
