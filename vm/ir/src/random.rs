//! The VM's counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11). Element `i` of
//! a `random out, seed, offset` instruction is a pure function of `(seed, offset + i)`, so every
//! engine, every block decomposition and every number of ranks draws identical numbers.

use crate::dtype::Element;

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The Philox-4x32 block function with 10 rounds.
pub fn philox4x32_10(mut ctr: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            key[0] = key[0].wrapping_add(W0);
            key[1] = key[1].wrapping_add(W1);
        }
        let p0 = u64::from(M0) * u64::from(ctr[0]);
        let p1 = u64::from(M1) * u64::from(ctr[2]);
        ctr = [((p1 >> 32) as u32) ^ ctr[1] ^ key[0], p1 as u32, ((p0 >> 32) as u32) ^ ctr[3] ^ key[1], p0 as u32];
    }
    ctr
}

/// The 64 random bits at `counter` of the stream keyed by `seed`.
#[inline]
pub fn random_bits(seed: u64, counter: u64) -> u64 {
    let r = philox4x32_10([counter as u32, (counter >> 32) as u32, 0, 0], [seed as u32, (seed >> 32) as u32]);
    u64::from(r[0]) | (u64::from(r[1]) << 32)
}

/// Element types that random bits convert to: floats uniform in [0, 1) (53 or 24 bits),
/// integers the low bits, `bool` the lowest bit.
pub trait FromRandomBits: Element {
    /// Converts 64 random bits.
    fn from_random_bits(bits: u64) -> Self;
}

impl FromRandomBits for f64 {
    fn from_random_bits(bits: u64) -> f64 {
        (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

impl FromRandomBits for f32 {
    fn from_random_bits(bits: u64) -> f32 {
        (bits >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
    }
}

impl FromRandomBits for bool {
    fn from_random_bits(bits: u64) -> bool {
        bits & 1 == 1
    }
}

macro_rules! from_bits_int {
    ($($t:ty),*) => { $( impl FromRandomBits for $t {
        fn from_random_bits(bits: u64) -> $t { bits as $t }
    } )* };
}
from_bits_int!(i8, i16, i32, i64, u8, u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors of the Random123 distribution (kat_vectors, philox4x32_10).
    #[test]
    fn philox_known_answers() {
        assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
        assert_eq!(philox4x32_10([u32::MAX; 4], [u32::MAX; 2]), [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]);
        assert_eq!(
            philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn uniform_floats_are_in_unit_interval_with_sane_mean() {
        let n = 100_000;
        let mut sum = 0.0;
        for i in 0..n {
            let x = f64::from_random_bits(random_bits(42, i));
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        assert!((sum / n as f64 - 0.5).abs() < 0.01);
        assert_ne!(random_bits(1, 0), random_bits(2, 0));
    }
}
