//! The element types of the suite (`f64`, `f32`) as both sides of a benchmark use them: the
//! VM program (through [`Elem`](super::vm_kit::Elem), which extends [`Real`]) and the hand
//! baseline, and the input generators they share. [`Real::random`] is the VM's own
//! counter-based random stream ([`vm_ir::random::random_bits`]), so that a generator written
//! once draws what the VM program draws, with the same seeds and counters.

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};
use vm_ir::random::FromRandomBits;

/// The float types the suite runs in (`f64`, `f32`), with what the hand baselines and the shared
/// input generators need.
pub trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + FromRandomBits
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// +infinity.
    const INFINITY: Self;
    /// `x` rounded to this type (how the VM turns a host `f64` constant into an operand).
    fn of(x: f64) -> Self;
    /// The value as `f64` (exact).
    fn to_f64(self) -> f64;
    /// |x|.
    fn abs(self) -> Self;
    /// Square root (correctly rounded).
    fn sqrt(self) -> Self;
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// The smaller of two values (the first when they compare equal).
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        if other < self { other } else { self }
    }
    /// The uniform `[0, 1)` number at `counter` of the VM's random stream of `seed`: what
    /// element `counter - offset` of a VM `random out, seed, offset` holds.
    #[inline(always)]
    fn random(seed: u64, counter: u64) -> Self {
        Self::from_random_bits(philox_bits(seed, counter))
    }
}

/// [`vm_ir::random::random_bits`], written here again so that it inlines into the hand loops
/// (a call across crates per number would not be the honest limit); a test checks that the two
/// agree.
#[inline(always)]
pub fn philox_bits(seed: u64, counter: u64) -> u64 {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    let mut c = [counter as u32, (counter >> 32) as u32, 0, 0];
    let mut k = [seed as u32, (seed >> 32) as u32];
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(0x9E37_79B9);
            k[1] = k[1].wrapping_add(0xBB67_AE85);
        }
        let p0 = M0 * u64::from(c[0]);
        let p1 = M1 * u64::from(c[2]);
        c = [((p1 >> 32) as u32) ^ c[1] ^ k[0], p1 as u32, ((p0 >> 32) as u32) ^ c[3] ^ k[1], p0 as u32];
    }
    u64::from(c[0]) | (u64::from(c[1]) << 32)
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const INFINITY: Self = <$t>::INFINITY;
            #[inline(always)]
            fn of(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
        }
    };
}
real!(f64);
real!(f32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_numbers_are_the_vms() {
        use vm_ir::random::random_bits;
        let x = f64::random(7, 3);
        assert!((0.0..1.0).contains(&x));
        assert_eq!(x, f64::from_random_bits(random_bits(7, 3)));
        for (seed, counter) in [(0, 0), (u64::MAX, u64::MAX), (0x314, 123_456_789_012), (42, 1 << 40)] {
            assert_eq!(philox_bits(seed, counter), random_bits(seed, counter), "{seed} {counter}");
        }
    }
}
