//! What agreeing with the reference engine means, and the comparison of two memories.
//!
//! Integers and bools always agree exactly. Floats agree as an [`Agree`] rule says: bit for bit
//! where an engine computes exactly what the reference computes (the cluster over `interp`),
//! exactly but for NaN payloads where it computes the same operations on other hardware,
//! within a few ulps where it calls other math routines, within a relative [`Tolerance`] where
//! it adds in another order. [`Agree::for_reduction`] and [`Agree::for_elementwise`] are the
//! per-opcode rules the engines' tests apply.

use vm_ir::{Base, DType, Kind, Opcode, Scalar, View};
use vm_runtime::HostMemory;

/// How far two engines' float results may be apart: relative to `max(1, |a|, |b|)`, per dtype.
/// NaN equals NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// For f64 elements.
    pub f64: f64,
    /// For f32 elements.
    pub f32: f64,
}

impl Tolerance {
    /// Equality of values (NaN equals NaN and 0.0 equals -0.0).
    pub const EXACT: Tolerance = Tolerance { f64: 0.0, f32: 0.0 };
    /// For engines that add in another order (per-block partial sums, tree reductions) or use
    /// other correctly-rounded-within-a-few-ulp math routines: 1e-9 for f64, 1e-4 for f32.
    pub const REORDERED: Tolerance = Tolerance { f64: 1e-9, f32: 1e-4 };

    /// True when `a` and `b`, elements of `dtype`, agree (integers and bools: when equal).
    pub fn agrees(self, dtype: DType, a: Scalar, b: Scalar) -> bool {
        let tol = match dtype {
            DType::F64 => self.f64,
            DType::F32 => self.f32,
            _ => return a == b,
        };
        let (a, b) = (a.as_f64(), b.as_f64());
        a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol * 1f64.max(a.abs()).max(b.abs())
    }
}

/// How an engine's float results must agree with the reference's (integers and bools always
/// exactly).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Agree {
    /// The same bytes: NaN payloads and signs of zero included.
    Bits,
    /// The same bits, except that every NaN equals every NaN.
    Exact,
    /// At most this many units in the last place apart ([`ulps_apart`]; NaN equals NaN only).
    Ulps(u64),
    /// Within a relative tolerance.
    Relative(Tolerance),
}

impl Agree {
    /// [`Agree::Relative`] with [`Tolerance::REORDERED`].
    pub const REORDERED: Agree = Agree::Relative(Tolerance::REORDERED);

    /// The rule for a reduction or scan of an engine that reassociates: float sums and
    /// products within [`Tolerance::REORDERED`], everything else exact.
    pub fn for_reduction(op: Opcode) -> Agree {
        let reassociated = matches!(
            op,
            Opcode::AddReduce | Opcode::MultiplyReduce | Opcode::AddAccumulate | Opcode::MultiplyAccumulate
        );
        if reassociated { Agree::REORDERED } else { Agree::Exact }
    }

    /// The rule for an element-wise opcode on `dtype` of an engine whose own routines for the
    /// opcodes `approximate` names are within `ulps` of the reference's; exact otherwise.
    pub fn for_elementwise(op: Opcode, dtype: DType, approximate: impl Fn(Opcode) -> bool, ulps: u64) -> Agree {
        if dtype.is_float() && matches!(op.kind(), Kind::Unary | Kind::Binary) && approximate(op) {
            Agree::Ulps(ulps)
        } else {
            Agree::Exact
        }
    }

    /// True when elements `a` and `b` of `dtype` agree, each given as its bytes read into a
    /// little-endian `u64` ([`bits_at`]).
    pub fn agrees(self, dtype: DType, a: u64, b: u64) -> bool {
        if a == b {
            return true;
        }
        if !dtype.is_float() {
            return false;
        }
        let (x, y) = (scalar_of(dtype, a), scalar_of(dtype, b));
        let nan = |s: Scalar| s.as_f64().is_nan();
        match self {
            Agree::Bits => false,
            Agree::Exact => nan(x) && nan(y),
            Agree::Ulps(n) => ulps_apart(x, y) <= n,
            Agree::Relative(t) => t.agrees(dtype, x, y),
        }
    }
}

/// The float of `dtype` whose bits are `bits`.
fn scalar_of(dtype: DType, bits: u64) -> Scalar {
    match dtype {
        DType::F32 => Scalar::F32(f32::from_bits(bits as u32)),
        _ => Scalar::F64(f64::from_bits(bits)),
    }
}

/// The bytes of element `i` of `base` in `mem`, read into a little-endian `u64`.
pub fn bits_at(mem: &HostMemory, base: &Base, i: usize) -> Option<u64> {
    let s = base.dtype.size();
    let raw = mem.get(base.id)?.bytes().get(i * s..(i + 1) * s)?;
    let mut w = [0u8; 8];
    w[..s].copy_from_slice(raw);
    Some(u64::from_le_bytes(w))
}

/// Element `i` of `base` in `mem` as a scalar, for messages.
fn shown(mem: &HostMemory, base: &Base, i: usize) -> String {
    match bits_at(mem, base, i) {
        Some(bits) if base.dtype.is_float() => scalar_of(base.dtype, bits).to_string(),
        Some(bits) => Scalar::from_payload(base.dtype, bits).to_string(),
        None => "nothing".into(),
    }
}

/// Units in the last place between two floats of one dtype (0 for two NaNs, `u64::MAX` for a
/// NaN and a number; -0.0 and +0.0 are one apart, so a wrong sign of zero counts). Integers and
/// bools: 0 when equal, else `u64::MAX`.
pub fn ulps_apart(a: Scalar, b: Scalar) -> u64 {
    // Sign-magnitude bits mapped onto a line where neighbouring floats are neighbouring integers.
    let line = |bits: u64, sign: u64| -> i128 {
        let magnitude = (bits & (sign - 1)) as i128;
        if bits & sign != 0 { -magnitude - 1 } else { magnitude }
    };
    let nans = |x: bool, y: bool| if x && y { 0 } else { u64::MAX };
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) if x.is_nan() || y.is_nan() => nans(x.is_nan(), y.is_nan()),
        (Scalar::F64(x), Scalar::F64(y)) if x.is_nan() || y.is_nan() => nans(x.is_nan(), y.is_nan()),
        (Scalar::F32(x), Scalar::F32(y)) => {
            let s = 1 << 31;
            (line(u64::from(x.to_bits()), s) - line(u64::from(y.to_bits()), s)).unsigned_abs() as u64
        }
        (Scalar::F64(x), Scalar::F64(y)) => {
            let s = 1 << 63;
            (line(x.to_bits(), s) - line(y.to_bits(), s)).unsigned_abs().min(u128::from(u64::MAX)) as u64
        }
        (a, b) if a == b => 0,
        _ => u64::MAX,
    }
}

/// Elements `start..start + len` of `base`, the result of case `what`, which must agree as
/// `agree` says.
#[derive(Debug, Clone)]
pub struct Check {
    /// The output base.
    pub base: Base,
    /// The first element.
    pub start: usize,
    /// How many elements.
    pub len: usize,
    /// The case, for failure messages.
    pub what: String,
    /// How the engine's floats must agree with the reference's.
    pub agree: Agree,
}

impl Check {
    /// The check of the elements `view` (a contiguous slice) holds after case `what`.
    pub fn of(view: &View, what: String, agree: Agree) -> Check {
        Check { base: view.base, start: view.start as usize, len: view.nelem(), what, agree }
    }

    /// The check of the whole of `base` after case `what`.
    pub fn whole(base: Base, what: String, agree: Agree) -> Check {
        Check { base, start: 0, len: base.nelem as usize, what, agree }
    }
}

/// Checks `got` (the engine's memory) against `reference` as each of `checks` says. The error
/// names the case, the first element that differs and how many differ.
pub fn check(got: &HostMemory, reference: &HostMemory, checks: &[Check]) -> Result<(), String> {
    for c in checks {
        let b = &c.base;
        if got.get(b.id).is_none() {
            return Err(format!("{}: base {} is missing from the engine's memory", c.what, b.id));
        }
        let differ: Vec<usize> = (c.start..c.start + c.len)
            .filter(|&i| match (bits_at(got, b, i), bits_at(reference, b, i)) {
                (Some(x), Some(y)) => !c.agree.agrees(b.dtype, x, y),
                _ => true,
            })
            .collect();
        if let Some(&i) = differ.first() {
            return Err(format!(
                "{}: base {} element {i} (of {} that differ): engine {}, reference {} ({:?})",
                c.what,
                b.id,
                differ.len(),
                shown(got, b, i),
                shown(reference, b, i),
                c.agree
            ));
        }
    }
    Ok(())
}

/// Compares every base of `bases` in `got` with `reference`. A base the reference holds must be
/// in `got` too; one only `got` holds is fine (the reference freed it), as is one neither holds
/// (freed, or a temporary the engine never allocated). The error names the first element that
/// differs.
pub fn compare(got: &HostMemory, reference: &HostMemory, bases: &[Base], agree: Agree) -> Result<(), String> {
    let checks: Vec<Check> = bases
        .iter()
        .filter(|b| reference.get(b.id).is_some())
        .map(|&b| Check::whole(b, format!("base {}", b.id), agree))
        .collect();
    check(got, reference, &checks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Data, fill};
    use vm_ir::BaseId;

    #[test]
    fn tolerance_is_relative_exact_for_integers_and_nan_equals_nan() {
        let t = Tolerance::REORDERED;
        assert!(t.agrees(DType::F64, Scalar::F64(1e6), Scalar::F64(1e6 + 1e-4)));
        assert!(!t.agrees(DType::F64, Scalar::F64(1.0), Scalar::F64(1.0 + 1e-8)));
        assert!(t.agrees(DType::F32, Scalar::F32(f32::NAN), Scalar::F32(f32::NAN)));
        assert!(!t.agrees(DType::I64, Scalar::I64(5), Scalar::I64(6)));
        assert!(!Tolerance::EXACT.agrees(DType::F64, Scalar::F64(1.0), Scalar::F64(1.0 + f64::EPSILON)));
    }

    #[test]
    fn the_rules_differ_on_nan_payloads_signed_zeros_and_ulps() {
        let f = |x: f64| x.to_bits();
        let (nan, other_nan) = (f(f64::NAN), f(-f64::NAN));
        assert!(!Agree::Bits.agrees(DType::F64, nan, other_nan));
        assert!(Agree::Exact.agrees(DType::F64, nan, other_nan));
        assert!(!Agree::Exact.agrees(DType::F64, f(0.0), f(-0.0)));
        assert!(Agree::Relative(Tolerance::EXACT).agrees(DType::F64, f(0.0), f(-0.0)));
        assert!(Agree::Ulps(2).agrees(DType::F64, f(1.0), f(1.0) + 2));
        assert!(!Agree::Ulps(2).agrees(DType::F64, f(1.0), f(1.0) + 3));
        assert!(!Agree::REORDERED.agrees(DType::I32, 5, 6));
        assert_eq!(Agree::for_reduction(Opcode::AddReduce), Agree::REORDERED);
        assert_eq!(Agree::for_reduction(Opcode::MaximumReduce), Agree::Exact);
        assert_eq!(Agree::for_elementwise(Opcode::Exp, DType::F32, |_| true, 4), Agree::Ulps(4));
        assert_eq!(Agree::for_elementwise(Opcode::Exp, DType::I32, |_| true, 4), Agree::Exact);
    }

    #[test]
    fn ulps_apart_counts_signed_zeros_and_nans() {
        let f = Scalar::F32;
        assert_eq!(ulps_apart(f(1.0), f(1.0)), 0);
        assert_eq!(ulps_apart(f(1.0), f(f32::from_bits(1.0f32.to_bits() - 1))), 1);
        assert_eq!(ulps_apart(f(0.0), f(-0.0)), 1);
        assert_eq!(ulps_apart(f(f32::from_bits(1)), f(-f32::from_bits(1))), 3);
        assert_eq!(ulps_apart(f(f32::NAN), f(-f32::NAN)), 0);
        assert_eq!(ulps_apart(f(f32::NAN), f(1.0)), u64::MAX);
        assert_eq!(ulps_apart(Scalar::F64(-1.0), Scalar::F64(f64::from_bits((-1.0f64).to_bits() + 2))), 2);
        assert_eq!(ulps_apart(Scalar::I32(3), Scalar::I32(4)), u64::MAX);
    }

    #[test]
    fn compare_names_the_first_difference() {
        let b = Base { id: BaseId(1), dtype: DType::I32, nelem: 4 };
        let (mut m1, mut m2) = (HostMemory::new(), HostMemory::new());
        fill(&mut m1, &b, 7, Data::Small).unwrap();
        fill(&mut m2, &b, 7, Data::Small).unwrap();
        assert_eq!(compare(&m1, &m2, &[b], Agree::Exact), Ok(()));
        m1.ensure(&b).unwrap().as_mut_slice::<i32>()[2] += 1;
        let e = compare(&m1, &m2, &[b], Agree::Exact).unwrap_err();
        assert!(e.contains("element 2"), "{e}");
        assert!(compare(&HostMemory::new(), &m2, &[b], Agree::Exact).unwrap_err().contains("missing"));
        assert_eq!(compare(&m1, &HostMemory::new(), &[b], Agree::Exact), Ok(()), "the reference freed it");
    }
}
