//! The extension methods whose operand rules the VM knows, so that an instruction calling one is
//! checked when it is submitted (`Runtime::submit` in vm-runtime), like an opcode's, and not only
//! when an engine runs it at the next flush, long after the call that made the mistake has
//! returned `VM_OK`.
//!
//! A stack may implement methods this table lacks (a component of its own); they register by
//! name as any other, and the engine that runs them checks their operands.

use crate::instr::{Instruction, visits_each_element_once};
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

/// Every extension method the VM knows the rules of.
pub const RULES: &[ExtensionRule] = &[ExtensionRule { name: MATMUL, operands: "out, a, b", validate: validate_matmul }];

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
}
