//! Input data: what the host writes into a program's bases before it runs, drawn from a seed.
//!
//! Which values a test wants depends on what it looks for ([`Data`]): small integers for
//! arithmetic that must not overflow, full-range values with the odd NaN and infinity for the
//! element semantics, arbitrary bit patterns (subnormals, NaN payloads) for code generators,
//! values from a handful for the ties of reductions to a position, values near one for long
//! sums and products. [`special_values`] are the float values where math routines go wrong.

use crate::rng::Rng;
use vm_ir::{Base, DType, Scalar, with_dtype};
use vm_runtime::HostMemory;

/// A distribution of input values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Floats in [-8, 8) with zeros and ones now and then; integers in [-5, 5]; bools.
    Small,
    /// [`Data::Small`]'s floats with NaN and infinity now and then; integers over their whole
    /// range; bools.
    Full,
    /// Anything: arbitrary bit patterns (NaN payloads and subnormals included), float
    /// specials, small integers.
    Wild,
    /// Values from a handful, so that lines have ties: integers in [-2, 2], floats among a few
    /// values with both zeros and infinities, and NaN rarely.
    Ties,
    /// Values that sum and multiply without overflow: floats in [0.9, 1.1) (a fifth of them
    /// negative), integers and bools over their whole range.
    Moderate,
}

impl Data {
    /// `Small` when `small`, else `Full`.
    pub fn small_if(small: bool) -> Data {
        if small { Data::Small } else { Data::Full }
    }

    /// The next value of `d` from `r`.
    pub fn value(self, r: &mut Rng, d: DType) -> Scalar {
        match self {
            Data::Small | Data::Full => value(d, r.next_u64(), self == Data::Small),
            Data::Wild => {
                let specials =
                    [0.0, -0.0, 0.5, -1.5, 2.5, 1e30, -1e30, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 3.0, 1e-40];
                match r.below(4) {
                    0 => Scalar::from_payload(d, r.next_u64()),
                    1 if d == DType::F32 => Scalar::F32(f32::from_bits(r.next_u64() as u32)),
                    1 if d == DType::F64 => Scalar::F64(f64::from_bits(r.next_u64())),
                    2 if d.is_float() => Scalar::F64(r.pick(&specials)).cast(d),
                    _ => Scalar::I64(r.below(9) as i64 - 4).cast(d),
                }
            }
            Data::Ties => {
                let floats = [0.0, -0.0, 1.0, -1.0, 2.0, 2.0, -3.0, f64::INFINITY, f64::NEG_INFINITY, 0.5];
                let k = r.below(1000);
                if d.is_float() {
                    Scalar::F64(if k == 0 { f64::NAN } else { floats[k % floats.len()] }).cast(d)
                } else {
                    Scalar::I64((k % 5) as i64 - 2).cast(d)
                }
            }
            Data::Moderate => {
                let bits = r.next_u64();
                if d.is_float() {
                    let x = 0.9 + (bits >> 11) as f64 / (1u64 << 53) as f64 * 0.2;
                    Scalar::F64(if bits.is_multiple_of(5) { -x } else { x }).cast(d)
                } else {
                    Scalar::from_payload(d, bits)
                }
            }
        }
    }
}

/// A pseudo-random value of `d` from 64 random bits: floats in [-8, 8) with zeros, ones and (unless
/// `small`) NaN and infinity now and then; integers over their whole range, or in [-5, 5] when
/// `small`; bools.
pub fn value(d: DType, bits: u64, small: bool) -> Scalar {
    let s = if d.is_float() {
        let x = (bits >> 11) as f64 / (1u64 << 53) as f64 * 16.0 - 8.0;
        let x = match bits % 97 {
            0 => 0.0,
            1 => -0.0,
            2 if !small => f64::NAN,
            3 if !small => f64::INFINITY,
            4 => 1.0,
            _ => x,
        };
        Scalar::F64(x)
    } else if small || d == DType::Bool {
        Scalar::I64((bits % 11) as i64 - 5)
    } else {
        Scalar::U64(bits)
    };
    s.cast(d)
}

/// Allocates `base` in `mem` and fills it with values of `data` drawn from `seed`.
pub fn fill(mem: &mut HostMemory, base: &Base, seed: u64, data: Data) -> vm_ir::Result<()> {
    let buf = mem.ensure(base)?;
    let mut r = Rng::new(seed);
    with_dtype!(base.dtype, T => {
        for x in buf.as_mut_slice::<T>() {
            *x = data.value(&mut r, base.dtype).get::<T>();
        }
    });
    Ok(())
}

/// Two host memories holding the same `inputs`, base `i` filled from seed `seed + i`.
pub fn twin(inputs: &[Base], seed: u64, data: Data) -> (HostMemory, HostMemory) {
    let (mut a, mut b) = (HostMemory::new(), HostMemory::new());
    for (i, x) in inputs.iter().enumerate() {
        let s = seed.wrapping_add(i as u64);
        fill(&mut a, x, s, data).expect("test inputs fit in memory");
        fill(&mut b, x, s, data).expect("test inputs fit in memory");
    }
    (a, b)
}

/// The bytes of a scalar in its dtype, as host memory holds them.
pub fn bytes(s: Scalar) -> Vec<u8> {
    let v: Vec<u8> = match s {
        Scalar::F32(x) => x.to_le_bytes().to_vec(),
        Scalar::F64(x) => x.to_le_bytes().to_vec(),
        s => s.to_payload().to_le_bytes().to_vec(),
    };
    v[..s.dtype().size()].to_vec()
}

/// Float values where math routines most often go wrong: signed zeros, infinities, NaN of both
/// signs, the smallest and largest subnormals, the smallest normal and the largest finite values
/// (each with both signs), and ordinary values that binary opcodes meet them with (some of them
/// overflow or underflow `exp` in one float dtype and not the other). Empty for other dtypes.
pub fn special_values(d: DType) -> Vec<Scalar> {
    let ordinary = [1.0, -1.0, 0.5, 0.1, 2.5, -2.5, 7.0, -7.0, -3.0, 100.0, -100.0, 1000.0, 1e30, -1e-30];
    macro_rules! values {
        ($t:ident, $s:ident) => {{
            let tiny = $t::from_bits(1);
            let subnormal_max = $t::from_bits(($t::MIN_POSITIVE.to_bits()) - 1);
            let mut v = vec![0.0, -0.0, $t::INFINITY, $t::NEG_INFINITY, $t::NAN, -$t::NAN];
            v.extend([tiny, -tiny, subnormal_max, -subnormal_max, $t::MIN_POSITIVE, -$t::MIN_POSITIVE]);
            v.extend([$t::MAX, $t::MIN]);
            v.extend(ordinary.map(|x| x as $t));
            v.into_iter().map(Scalar::$s).collect()
        }};
    }
    match d {
        DType::F32 => values!(f32, F32),
        DType::F64 => values!(f64, F64),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_distribution_is_deterministic_and_has_its_character() {
        for data in [Data::Small, Data::Full, Data::Wild, Data::Ties, Data::Moderate] {
            for d in DType::ALL {
                let draw = |seed| {
                    let mut r = Rng::new(seed);
                    (0..2000).map(|_| data.value(&mut r, d).to_payload()).collect::<Vec<_>>()
                };
                assert_eq!(draw(3), draw(3), "{data:?} {d}");
            }
        }
        let mut r = Rng::new(1);
        let ties: Vec<i64> = (0..500).map(|_| Data::Ties.value(&mut r, DType::I32).as_i64()).collect();
        assert!(ties.iter().all(|x| (-2..=2).contains(x)));
        let moderate: Vec<f64> = (0..500).map(|_| Data::Moderate.value(&mut r, DType::F64).as_f64()).collect();
        assert!(moderate.iter().all(|x| (0.9..1.1).contains(&x.abs())));
        let small: Vec<f64> = (0..5000).map(|_| Data::Small.value(&mut r, DType::F64).as_f64()).collect();
        assert!(small.iter().all(|x| x.is_finite()));
        let full: Vec<f64> = (0..5000).map(|_| Data::Full.value(&mut r, DType::F64).as_f64()).collect();
        assert!(full.iter().any(|x| x.is_nan()) && full.iter().any(|x| x.is_infinite()));
    }

    #[test]
    fn bytes_are_the_host_layout() {
        assert_eq!(bytes(Scalar::I16(-2)), (-2i16).to_le_bytes());
        assert_eq!(bytes(Scalar::F32(1.5)), 1.5f32.to_le_bytes());
        assert_eq!(bytes(Scalar::Bool(true)), [1]);
    }
}
