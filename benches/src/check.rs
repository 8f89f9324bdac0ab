//! Checksum comparison. Every stack's checksum must agree with the `interp` stack's (the
//! reference): within a relative float tolerance (default 1e-9 for f64, 1e-4 for f32; reductions
//! of different engines add in different orders), or exactly for benchmarks whose checksum comes
//! from counts (`montecarlo_pi`). The baselines are compared too where their inputs are the
//! VM's: `hand` always (it draws the VM's random stream), NumPy and the C program only for
//! deterministic benchmarks.

use crate::Precision;
use serde::Serialize;

/// How close two checksums must be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Largest allowed `|a - b| / max(|a|, |b|)`; 0 means exact.
    pub relative: f64,
}

impl Tolerance {
    /// Bit-for-bit equality (up to `0.0 == -0.0`).
    pub const EXACT: Tolerance = Tolerance { relative: 0.0 };

    /// The default tolerance of a precision: 1e-9 for f64, 1e-4 for f32.
    pub fn for_precision(p: Precision) -> Tolerance {
        match p {
            Precision::F64 => Tolerance { relative: 1e-9 },
            Precision::F32 => Tolerance { relative: 1e-4 },
        }
    }

    /// Whether `a` and `b` agree: equal (NaN agrees with NaN, an infinity with itself), or
    /// finite and within the relative tolerance.
    pub fn agrees(&self, a: f64, b: f64) -> bool {
        if a == b || (a.is_nan() && b.is_nan()) {
            return true;
        }
        relative_error(a, b) <= self.relative
    }
}

/// `|a - b| / max(|a|, |b|)`: 0 when equal, infinite when one is not finite and they differ.
pub fn relative_error(a: f64, b: f64) -> f64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0.0;
    }
    if !a.is_finite() || !b.is_finite() {
        return f64::INFINITY;
    }
    (a - b).abs() / a.abs().max(b.abs())
}

/// The outcome of comparing one checksum with the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// This is the reference (`interp`).
    Reference,
    /// Within tolerance of the reference.
    Agrees,
    /// Outside tolerance: a bug somewhere. Makes the run fail.
    Differs,
    /// Not compared (different inputs, or no reference); see the reason.
    NotCompared,
}

/// A checksum's comparison with the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The verdict.
    pub verdict: Verdict,
    /// The relative error, when compared.
    pub relative_error: Option<f64>,
    /// Why it was not compared, or what differs.
    pub note: Option<String>,
}

impl Comparison {
    /// The reference itself.
    pub fn reference() -> Comparison {
        Comparison { verdict: Verdict::Reference, relative_error: None, note: None }
    }

    /// Not compared, because of `why`.
    pub fn skipped(why: impl Into<String>) -> Comparison {
        Comparison { verdict: Verdict::NotCompared, relative_error: None, note: Some(why.into()) }
    }

    /// True when this comparison fails the run.
    pub fn failed(&self) -> bool {
        self.verdict == Verdict::Differs
    }
}

/// Compares `value` with `reference` under `tol`.
pub fn compare(reference: f64, value: f64, tol: Tolerance) -> Comparison {
    let err = relative_error(reference, value);
    if tol.agrees(reference, value) {
        Comparison { verdict: Verdict::Agrees, relative_error: Some(err), note: None }
    } else {
        Comparison {
            verdict: Verdict::Differs,
            relative_error: Some(err),
            note: Some(format!(
                "checksum {value:e} differs from interp's {reference:e} (relative error {err:.1e} > {:.0e})",
                tol.relative
            )),
        }
    }
}

/// Checks that the checksums of the repetitions of one implementation agree with each other
/// (the first is the one reported); returns a message for the first that does not.
pub fn repetitions_agree(checksums: &[f64], tol: Tolerance) -> Result<(), String> {
    let Some(&first) = checksums.first() else { return Ok(()) };
    for (i, &c) in checksums.iter().enumerate().skip(1) {
        if !tol.agrees(first, c) {
            return Err(format!(
                "repetition {} computed {c:e} but repetition 1 computed {first:e} (relative error {:.1e})",
                i + 1,
                relative_error(first, c)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_by_precision() {
        let t = Tolerance::for_precision(Precision::F64);
        assert!(t.agrees(1.0, 1.0 + 1e-12));
        assert!(!t.agrees(1.0, 1.0 + 1e-6));
        let t = Tolerance::for_precision(Precision::F32);
        assert!(t.agrees(1.23456, 1.23457));
        assert!(!t.agrees(2.71, 2.72));
        assert!(!Tolerance::EXACT.agrees(1.0, 1.0 + f64::EPSILON));
        assert!(Tolerance::EXACT.agrees(0.0, -0.0));
    }

    #[test]
    fn special_values() {
        let t = Tolerance::for_precision(Precision::F64);
        assert!(t.agrees(f64::NAN, f64::NAN));
        assert!(t.agrees(f64::INFINITY, f64::INFINITY));
        assert!(!t.agrees(f64::INFINITY, f64::NEG_INFINITY));
        assert!(!t.agrees(1.0, f64::NAN));
        assert!(!t.agrees(0.0, 1e-300), "relative, so zero agrees only with zero");
        assert_eq!(relative_error(2.0, 1.0), 0.5);
        assert_eq!(relative_error(1.0, f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn comparisons_say_what_differs() {
        let tol = Tolerance::for_precision(Precision::F64);
        let ok = compare(2.0, 2.0 * (1.0 + 1e-12), tol);
        assert_eq!(ok.verdict, Verdict::Agrees);
        assert!(!ok.failed());
        let bad = compare(2.0, 2.5, tol);
        assert_eq!(bad.verdict, Verdict::Differs);
        assert!(bad.failed());
        assert!(bad.note.as_ref().unwrap().contains("differs from interp"), "{bad:?}");
        assert_eq!(bad.relative_error, Some(0.2));
        assert!(!Comparison::skipped("numpy uses its own generator").failed());
        assert_eq!(Comparison::reference().verdict, Verdict::Reference);
    }

    #[test]
    fn repetitions_must_agree() {
        let tol = Tolerance::for_precision(Precision::F64);
        assert!(repetitions_agree(&[], tol).is_ok());
        assert!(repetitions_agree(&[1.0, 1.0, 1.0 + 1e-15], tol).is_ok());
        let e = repetitions_agree(&[1.0, 1.0, 1.5], tol).unwrap_err();
        assert!(e.contains("repetition 3"), "{e}");
    }
}
