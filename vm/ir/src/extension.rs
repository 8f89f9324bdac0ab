//! The extension methods whose operand rules the VM knows, so that an instruction calling one is
//! checked when it is submitted (`Runtime::submit` in vm-runtime), like an opcode's, and not only
//! when an engine runs it at the next flush, long after the call that made the mistake has
//! returned `VM_OK`.
//!
//! A stack may implement methods this table lacks (a component of its own); they register by
//! name as any other, and the engine that runs them checks their operands.

use crate::dtype::DType;
use crate::instr::{Instruction, Operand, visits_each_element_once};
use crate::scalar::Scalar;
use crate::view::View;
use crate::{Error, Result};

/// One extension method the VM knows: its name and its operand check.
#[derive(Debug, Clone, Copy)]
pub struct ExtensionRule {
    /// The name it is registered under (`vm_extension`, `ext NAME` in the text form).
    pub name: &'static str,
    /// Its operands, for messages and documentation (`out, a, b`).
    pub operands: &'static str,
    /// Checks an instruction calling the method: arity, operand kinds, dtypes, shapes, and
    /// that the output visits each element once. Errors are [`Error::InvalidInstruction`]
    /// naming the operand.
    pub validate: fn(&Instruction) -> Result<()>,
}

/// The name of the matrix product: `matmul out, a, b` with 2-d views `a` (M x K), `b` (K x N)
/// and `out` (M x N) of one numeric dtype; `out[m, n] = sum_k a[m, k] * b[k, n]`.
pub const MATMUL: &str = "matmul";

/// The name of the partial sort: `partition out, a, lo, hi` with views `out` and `a` of one
/// shape (at least 1-d) and dtype and `i64` constants `0 <= lo <= hi < n`, `n` the last extent.
/// Each line along the last axis of `out` holds the values of `a`'s line with positions
/// `lo..=hi` as `sort` orders them, every value before those at most, every value after at
/// least the value at that end ([`crate::semantics::partition_line`]; NumPy's `partition`
/// with `kth` in `lo..=hi`). `a` is read whole before `out` is written (`out` may be `a`).
pub const PARTITION: &str = "partition";

/// The name of [`PARTITION`]'s positions: `argpartition out, a, lo, hi` with `out` of `i64`:
/// each line of `out` holds positions along the line that order it as `partition` orders its
/// values, positions `lo..=hi` those a stable `argsort` puts there
/// ([`crate::semantics::argpartition_line`]).
pub const ARGPARTITION: &str = "argpartition";

/// The name of the Cholesky factorisation: `cholesky out, a` with views `out` and `a` of one
/// float dtype and one shape `(..., n, n)`. Each matrix of `out` is the lower-triangular `L`
/// with `L @ L.T == A` for the symmetric `A` that `a`'s matrix holds in its lower triangle
/// (the upper triangle is not read), zero above the diagonal; a matrix that is not positive
/// definite (a pivot not above zero, or NaN) gives a matrix of NaN, as NumPy's
/// `linalg.cholesky` computes it before raising `LinAlgError`. `a` is read whole before `out`
/// is written (`out` may be `a`).
pub const CHOLESKY: &str = "cholesky";

/// The name of the linear solve: `solve out, a, b` with views of one float dtype, `a` of shape
/// `(..., n, n)`, `b` and `out` of shape `(..., n, k)` (the same `...`). Each matrix of `out` is
/// the `x` with `A @ x == B` for the matrices `A` of `a` and `B` of `b`, by LU decomposition with
/// partial pivoting; a singular `A` (a pivot exactly zero) gives a matrix of NaN, as NumPy's
/// `linalg.solve` computes it before raising `LinAlgError`. The inputs are read whole before
/// `out` is written.
pub const SOLVE: &str = "solve";

/// The name of the determinant: `det out, a` with views of one float dtype, `a` of shape `(...,
/// n, n)` and `out` of shape `(...)`: each element of `out` the determinant of `a`'s matrix, the
/// product of the pivots of its LU decomposition with partial pivoting (negated for an odd
/// number of row exchanges; 1 for `n = 0`), as NumPy's `linalg.det`.
pub const DET: &str = "det";

/// The name of the determinant's sign and logarithm: `slogdet out, a` with views of one float
/// dtype, `a` of shape `(..., n, n)` and `out` of shape `(..., 2)`: for each matrix of `a`,
/// the sign of its determinant (-1, 0 or 1) and the natural logarithm of its absolute value,
/// from the pivots of its LU decomposition with partial pivoting (the sum of their
/// logarithms, which does not overflow where their product would); 0 and -inf for a singular
/// matrix, 1 and 0 for `n = 0`, as NumPy's `linalg.slogdet`.
pub const SLOGDET: &str = "slogdet";

/// Every extension method the VM knows the rules of.
pub const RULES: &[ExtensionRule] = &[
    ExtensionRule { name: MATMUL, operands: "out, a, b", validate: validate_matmul },
    ExtensionRule { name: PARTITION, operands: "out, a, lo, hi", validate: validate_partition },
    ExtensionRule { name: ARGPARTITION, operands: "out, a, lo, hi", validate: validate_argpartition },
    ExtensionRule { name: CHOLESKY, operands: "out, a", validate: validate_cholesky },
    ExtensionRule { name: SOLVE, operands: "out, a, b", validate: validate_solve },
    ExtensionRule { name: DET, operands: "out, a", validate: validate_det },
    ExtensionRule { name: SLOGDET, operands: "out, a", validate: validate_slogdet },
];

/// The rule of the extension method called `name`, when the VM knows it.
pub fn rule(name: &str) -> Option<&'static ExtensionRule> {
    RULES.iter().find(|r| r.name == name)
}

/// Checks a `matmul` instruction (see [`MATMUL`]).
pub fn validate_matmul(instr: &Instruction) -> Result<()> {
    matmul_operands(instr).map(|_| ())
}

/// The operands of a valid `matmul` instruction, as `(out, a, b)`; the errors of
/// [`validate_matmul`] otherwise.
pub fn matmul_operands(instr: &Instruction) -> Result<(&View, &View, &View)> {
    if instr.operands.len() != 3 {
        return Err(Error::invalid(None, format!("matmul takes 3 operands (out, a, b), got {}", instr.operands.len())));
    }
    let mut views = Vec::with_capacity(3);
    for (i, o) in instr.operands.iter().enumerate() {
        let v = o.as_view().ok_or_else(|| Error::invalid(Some(i), "matmul's operands must be views, not constants"))?;
        if v.ndim() != 2 {
            return Err(Error::invalid(Some(i), format!("matmul needs 2-d views, this one is {}-d", v.ndim())));
        }
        views.push(v);
    }
    let (out, a, b) = (views[0], views[1], views[2]);
    let dt = out.dtype();
    if !(dt.is_float() || dt.is_integer()) {
        return Err(Error::invalid(Some(0), format!("matmul needs a numeric dtype (not bool), got {dt}")));
    }
    for (i, v) in [(1, a), (2, b)] {
        if v.dtype() != dt {
            return Err(Error::invalid(
                Some(i),
                format!("matmul: dtype mismatch, output is {dt} but this is {}", v.dtype()),
            ));
        }
    }
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    if b.shape[0] != k {
        return Err(Error::invalid(
            Some(2),
            format!("matmul: a is {m}x{k} but b is {}x{n}; inner extents differ", b.shape[0]),
        ));
    }
    if out.shape[..] != [m, n] {
        return Err(Error::invalid(
            Some(0),
            format!("matmul: output is {}x{}, expected {m}x{n}", out.shape[0], out.shape[1]),
        ));
    }
    if !visits_each_element_once(out) {
        return Err(Error::invalid(Some(0), format!("output view {out} visits some element more than once")));
    }
    Ok((out, a, b))
}

/// Checks a `partition` instruction (see [`PARTITION`]).
pub fn validate_partition(instr: &Instruction) -> Result<()> {
    partition_operands(instr, false).map(|_| ())
}

/// Checks an `argpartition` instruction (see [`ARGPARTITION`]).
pub fn validate_argpartition(instr: &Instruction) -> Result<()> {
    partition_operands(instr, true).map(|_| ())
}

/// The operands of a valid `partition` (`positions` false) or `argpartition` instruction, as
/// `(out, a, lo, hi)`; the errors of [`validate_partition`] otherwise.
pub fn partition_operands(instr: &Instruction, positions: bool) -> Result<(&View, &View, usize, usize)> {
    let name = if positions { ARGPARTITION } else { PARTITION };
    if instr.operands.len() != 4 {
        return Err(Error::invalid(
            None,
            format!("{name} takes 4 operands (out, a, lo, hi), got {}", instr.operands.len()),
        ));
    }
    let view = |i: usize| {
        instr.operands[i].as_view().ok_or_else(|| Error::invalid(Some(i), format!("{name}'s out and a are views")))
    };
    let (out, a) = (view(0)?, view(1)?);
    if a.ndim() == 0 {
        return Err(Error::invalid(Some(1), format!("{name} needs a view of at least one dimension")));
    }
    if out.shape != a.shape {
        return Err(Error::invalid(
            Some(0),
            format!("{name}: output shape {:?} is not the input's {:?}", &out.shape[..], &a.shape[..]),
        ));
    }
    let want = if positions { DType::I64 } else { a.dtype() };
    if out.dtype() != want {
        return Err(Error::invalid(Some(0), format!("{name} writes {want}, the output is {}", out.dtype())));
    }
    let n = a.shape[a.ndim() - 1];
    let bound = |i: usize| match instr.operands[i] {
        Operand::Const(Scalar::I64(k)) if k >= 0 && (k as u64) < n as u64 => Ok(k as usize),
        Operand::Const(Scalar::I64(k)) => {
            Err(Error::invalid(Some(i), format!("{name}: position {k} is outside the lines of {n}")))
        }
        _ => Err(Error::invalid(Some(i), format!("{name}'s lo and hi are i64 constants"))),
    };
    let (lo, hi) = (bound(2)?, bound(3)?);
    if lo > hi {
        return Err(Error::invalid(Some(3), format!("{name}: hi ({hi}) is below lo ({lo})")));
    }
    if !visits_each_element_once(out) {
        return Err(Error::invalid(Some(0), format!("output view {out} visits some element more than once")));
    }
    Ok((out, a, lo, hi))
}

/// Checks a `cholesky` instruction (see [`CHOLESKY`]).
pub fn validate_cholesky(instr: &Instruction) -> Result<()> {
    cholesky_operands(instr).map(|_| ())
}

/// The operands of a valid `cholesky` instruction, as `(out, a)`; the errors of
/// [`validate_cholesky`] otherwise.
pub fn cholesky_operands(instr: &Instruction) -> Result<(&View, &View)> {
    let [out, a] = linalg_views(instr, CHOLESKY, "out, a")?;
    if out.shape != a.shape {
        return Err(shape_error(CHOLESKY, 0, out, &a.shape));
    }
    checked_output(CHOLESKY, out)?;
    Ok((out, a))
}

/// Checks a `solve` instruction (see [`SOLVE`]).
pub fn validate_solve(instr: &Instruction) -> Result<()> {
    solve_operands(instr).map(|_| ())
}

/// The operands of a valid `solve` instruction, as `(out, a, b)`; the errors of
/// [`validate_solve`] otherwise.
pub fn solve_operands(instr: &Instruction) -> Result<(&View, &View, &View)> {
    let [out, a, b] = linalg_views(instr, SOLVE, "out, a, b")?;
    let d = a.ndim();
    if b.ndim() != d || b.shape[..d - 1] != a.shape[..d - 1] {
        let want = format!("{:?} with any last extent", &a.shape[..d - 1]);
        return Err(Error::invalid(
            Some(2),
            format!("solve: b's shape {:?} does not start with a's {want}", &b.shape[..]),
        ));
    }
    if out.shape != b.shape {
        return Err(shape_error(SOLVE, 0, out, &b.shape));
    }
    checked_output(SOLVE, out)?;
    Ok((out, a, b))
}

/// Checks a `det` instruction (see [`DET`]).
pub fn validate_det(instr: &Instruction) -> Result<()> {
    det_operands(instr).map(|_| ())
}

/// The operands of a valid `det` instruction, as `(out, a)`; the errors of [`validate_det`]
/// otherwise.
pub fn det_operands(instr: &Instruction) -> Result<(&View, &View)> {
    let [out, a] = linalg_views(instr, DET, "out, a")?;
    if out.shape[..] != a.shape[..a.ndim() - 2] {
        return Err(shape_error(DET, 0, out, &a.shape[..a.ndim() - 2]));
    }
    checked_output(DET, out)?;
    Ok((out, a))
}

/// Checks a `slogdet` instruction (see [`SLOGDET`]).
pub fn validate_slogdet(instr: &Instruction) -> Result<()> {
    slogdet_operands(instr).map(|_| ())
}

/// The operands of a valid `slogdet` instruction, as `(out, a)`; the errors of
/// [`validate_slogdet`] otherwise.
pub fn slogdet_operands(instr: &Instruction) -> Result<(&View, &View)> {
    let [out, a] = linalg_views(instr, SLOGDET, "out, a")?;
    let want: Vec<usize> = a.shape[..a.ndim() - 2].iter().copied().chain([2]).collect();
    if out.shape[..] != want[..] {
        return Err(shape_error(SLOGDET, 0, out, &want));
    }
    checked_output(SLOGDET, out)?;
    Ok((out, a))
}

/// The `N` view operands of linear algebra method `name` (`operands` names them), of one float
/// dtype, operand 1 a stack of square matrices.
fn linalg_views<'i, const N: usize>(instr: &'i Instruction, name: &str, operands: &str) -> Result<[&'i View; N]> {
    if instr.operands.len() != N {
        return Err(Error::invalid(
            None,
            format!("{name} takes {N} operands ({operands}), got {}", instr.operands.len()),
        ));
    }
    let mut views = [None; N];
    for (i, (o, v)) in instr.operands.iter().zip(&mut views).enumerate() {
        *v = Some(o.as_view().ok_or_else(|| Error::invalid(Some(i), format!("{name}'s operands are views")))?);
    }
    let views = views.map(|v| v.expect("every operand was read"));
    let a = views[1];
    let d = a.ndim();
    if d < 2 || a.shape[d - 1] != a.shape[d - 2] {
        return Err(Error::invalid(
            Some(1),
            format!("{name} needs square matrices (shape (..., n, n)), got shape {:?}", &a.shape[..]),
        ));
    }
    if !a.dtype().is_float() {
        return Err(Error::invalid(Some(1), format!("{name} needs a float dtype, got {}", a.dtype())));
    }
    if let Some(i) = views.iter().position(|v| v.dtype() != a.dtype()) {
        return Err(Error::invalid(
            Some(i),
            format!("{name}: dtype mismatch, operand 1 is {} but this is {}", a.dtype(), views[i].dtype()),
        ));
    }
    Ok(views)
}

/// The error for output `out` of method `name` whose shape is not `want`.
fn shape_error(name: &str, i: usize, out: &View, want: &[usize]) -> Error {
    Error::invalid(Some(i), format!("{name}: the output's shape {:?} is not {want:?}", &out.shape[..]))
}

/// An error unless output `out` of method `name` visits each element once.
fn checked_output(name: &str, out: &View) -> Result<()> {
    if !visits_each_element_once(out) {
        return Err(Error::invalid(Some(0), format!("{name}: output view {out} visits some element more than once")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::opcode::Opcode;
    use crate::scalar::Scalar;
    use crate::view::{Base, BaseId};

    fn view(id: u64, dtype: DType, rows: usize, cols: usize) -> View {
        let base = Base { id: BaseId(id), dtype, nelem: (rows * cols) as u64 };
        View::new(base, 0, &[rows, cols], &[cols as i64, 1]).unwrap()
    }

    fn matmul(operands: Vec<crate::instr::Operand>) -> Result<()> {
        validate_matmul(&Instruction::new(Opcode::Extension(0), operands))
    }

    #[track_caller]
    fn assert_invalid(r: Result<()>, operand: Option<usize>, words: &str) {
        match r {
            Err(Error::InvalidInstruction { operand: o, message, .. }) => {
                assert_eq!(o, operand, "{message}");
                assert!(message.contains(words), "`{words}` missing from {message}");
            }
            other => panic!("expected an invalid instruction, got {other:?}"),
        }
    }

    #[test]
    fn matmul_rules() {
        let f = DType::F64;
        let (out, a, b) = (view(1, f, 2, 4), view(2, f, 2, 3), view(3, f, 3, 4));
        assert!(matmul(vec![out.clone().into(), a.clone().into(), b.clone().into()]).is_ok());
        assert_invalid(matmul(vec![out.clone().into()]), None, "matmul takes 3 operands (out, a, b), got 1");
        assert_invalid(
            matmul(vec![out.clone().into(), Scalar::F64(1.0).into(), b.clone().into()]),
            Some(1),
            "views, not constants",
        );
        let flat = View::of_base(Base { id: BaseId(4), dtype: f, nelem: 6 });
        assert_invalid(matmul(vec![out.clone().into(), flat.into(), b.clone().into()]), Some(1), "2-d views");
        let i = view(5, DType::I32, 3, 4);
        assert_invalid(matmul(vec![out.clone().into(), a.clone().into(), i.into()]), Some(2), "dtype mismatch");
        let bools = (view(6, DType::Bool, 2, 4), view(7, DType::Bool, 2, 3), view(8, DType::Bool, 3, 4));
        assert_invalid(matmul(vec![bools.0.into(), bools.1.into(), bools.2.into()]), Some(0), "numeric dtype");
        assert_invalid(matmul(vec![out.clone().into(), a.clone().into(), a.clone().into()]), Some(2), "inner extents");
        assert_invalid(matmul(vec![a.clone().into(), a.into(), b.into()]), Some(0), "expected 2x4");
        assert!(rule("matmul").is_some_and(|r| r.operands == "out, a, b"));
        assert!(rule("warp_drive").is_none());
    }

    #[test]
    fn cholesky_rules() {
        let f = DType::F64;
        let check = |ops: Vec<crate::instr::Operand>| validate_cholesky(&Instruction::new(Opcode::Extension(0), ops));
        assert!(check(vec![view(1, f, 3, 3).into(), view(2, f, 3, 3).into()]).is_ok());
        assert_invalid(check(vec![view(1, f, 3, 3).into()]), None, "takes 2 operands");
        assert_invalid(check(vec![view(1, f, 3, 3).into(), Scalar::F64(1.0).into()]), Some(1), "operands are views");
        assert_invalid(check(vec![view(1, f, 2, 3).into(), view(2, f, 2, 3).into()]), Some(1), "square matrices");
        let ints = (view(3, DType::I64, 3, 3), view(4, DType::I64, 3, 3));
        assert_invalid(check(vec![ints.0.into(), ints.1.into()]), Some(1), "float dtype");
        assert_invalid(
            check(vec![view(5, DType::F32, 3, 3).into(), view(2, f, 3, 3).into()]),
            Some(0),
            "dtype mismatch",
        );
        assert_invalid(check(vec![view(5, f, 3, 1).into(), view(2, f, 3, 3).into()]), Some(0), "is not [3, 3]");
        let base = Base { id: BaseId(6), dtype: f, nelem: 3 };
        let repeated = View::new(base, 0, &[3, 3], &[1, 0]).unwrap();
        assert_invalid(check(vec![repeated.into(), view(2, f, 3, 3).into()]), Some(0), "more than once");
        assert!(rule("cholesky").is_some_and(|r| r.operands == "out, a"));
    }

    #[test]
    fn solve_and_det_rules() {
        let f = DType::F64;
        let solve = |ops: Vec<crate::instr::Operand>| validate_solve(&Instruction::new(Opcode::Extension(0), ops));
        let det = |ops: Vec<crate::instr::Operand>| validate_det(&Instruction::new(Opcode::Extension(0), ops));
        assert!(solve(vec![view(1, f, 3, 2).into(), view(2, f, 3, 3).into(), view(3, f, 3, 2).into()]).is_ok());
        assert_invalid(solve(vec![view(1, f, 3, 2).into(), view(2, f, 3, 3).into()]), None, "takes 3 operands");
        assert_invalid(
            solve(vec![view(1, f, 2, 2).into(), view(2, f, 3, 3).into(), view(3, f, 2, 2).into()]),
            Some(2),
            "does not start with",
        );
        assert_invalid(
            solve(vec![view(1, f, 3, 1).into(), view(2, f, 3, 3).into(), view(3, f, 3, 2).into()]),
            Some(0),
            "is not [3, 2]",
        );
        let out = View::of_base(Base { id: BaseId(4), dtype: f, nelem: 1 });
        let scalar = View::new(out.base, 0, &[], &[]).unwrap();
        assert!(det(vec![scalar.clone().into(), view(2, f, 3, 3).into()]).is_ok());
        assert_invalid(det(vec![out.into(), view(2, f, 3, 3).into()]), Some(0), "is not []");
        assert_invalid(det(vec![scalar.clone().into(), view(2, f, 3, 2).into()]), Some(1), "square matrices");
        let slogdet = |ops: Vec<crate::instr::Operand>| validate_slogdet(&Instruction::new(Opcode::Extension(0), ops));
        let pair = View::of_base(Base { id: BaseId(5), dtype: f, nelem: 2 });
        assert!(slogdet(vec![pair.into(), view(2, f, 3, 3).into()]).is_ok());
        assert_invalid(slogdet(vec![scalar.into(), view(2, f, 3, 3).into()]), Some(0), "is not [2]");
    }

    #[test]
    fn partition_rules() {
        let (f, i) = (DType::F64, DType::I64);
        let check = |positions: bool, ops: Vec<crate::instr::Operand>| {
            partition_operands(&Instruction::new(Opcode::Extension(0), ops), positions).map(|_| ())
        };
        let k = |v: i64| crate::instr::Operand::Const(Scalar::I64(v));
        let (out, a, at) = (view(1, f, 2, 5), view(2, f, 2, 5), view(3, i, 2, 5));
        assert!(check(false, vec![out.clone().into(), a.clone().into(), k(1), k(3)]).is_ok());
        assert!(check(true, vec![at.clone().into(), a.clone().into(), k(4), k(4)]).is_ok());
        assert_invalid(check(false, vec![out.clone().into(), a.clone().into(), k(1)]), None, "takes 4 operands");
        assert_invalid(check(true, vec![out.clone().into(), a.clone().into(), k(0), k(0)]), Some(0), "writes i64");
        assert_invalid(check(false, vec![at.clone().into(), a.clone().into(), k(0), k(0)]), Some(0), "writes f64");
        assert_invalid(check(false, vec![out.clone().into(), a.clone().into(), k(0), k(5)]), Some(3), "outside");
        assert_invalid(check(false, vec![out.clone().into(), a.clone().into(), k(-1), k(2)]), Some(2), "outside");
        assert_invalid(check(false, vec![out.clone().into(), a.clone().into(), k(3), k(2)]), Some(3), "below lo");
        let f32k = crate::instr::Operand::Const(Scalar::F32(1.0));
        assert_invalid(check(false, vec![out.clone().into(), a.clone().into(), f32k, k(2)]), Some(2), "i64 constants");
        let other = view(4, f, 5, 2);
        assert_invalid(check(false, vec![other.into(), a.clone().into(), k(0), k(1)]), Some(0), "shape");
        let scalar = View::new(Base { id: BaseId(5), dtype: f, nelem: 1 }, 0, &[], &[]).unwrap();
        assert_invalid(check(false, vec![scalar.clone().into(), scalar.into(), k(0), k(0)]), Some(1), "one dimension");
        let repeated = View::new(Base { id: BaseId(6), dtype: f, nelem: 5 }, 0, &[2, 5], &[0, 1]).unwrap();
        assert_invalid(check(false, vec![repeated.into(), a.into(), k(0), k(0)]), Some(0), "more than once");
        assert!(rule("partition").is_some() && rule("argpartition").is_some());
    }
}
