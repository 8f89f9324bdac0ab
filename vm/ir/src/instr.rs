//! Instructions, operands and batches, and the validation every instruction passes before an
//! engine sees it.

use crate::dtype::DType;
use crate::opcode::{Kind, Opcode, TypeRule};
use crate::scalar::Scalar;
use crate::view::{Overlap, View};
use crate::{Error, Result, ensure_valid};
use smallvec::SmallVec;

/// The most operands one instruction may have (extension methods included).
pub const MAX_OPERANDS: usize = 6;

/// An instruction operand: a view of a base, or a constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A view.
    View(View),
    /// A constant, broadcast to the iteration shape where used as data.
    Const(Scalar),
}

impl Operand {
    /// The operand's dtype.
    #[inline]
    pub fn dtype(&self) -> DType {
        match self {
            Operand::View(v) => v.dtype(),
            Operand::Const(s) => s.dtype(),
        }
    }

    /// The view, if the operand is one.
    #[inline]
    pub fn as_view(&self) -> Option<&View> {
        match self {
            Operand::View(v) => Some(v),
            Operand::Const(_) => None,
        }
    }

    /// The constant, if the operand is one.
    pub fn as_const(&self) -> Option<Scalar> {
        match self {
            Operand::View(_) => None,
            Operand::Const(s) => Some(*s),
        }
    }
}

impl From<View> for Operand {
    fn from(v: View) -> Operand {
        Operand::View(v)
    }
}

impl From<Scalar> for Operand {
    fn from(s: Scalar) -> Operand {
        Operand::Const(s)
    }
}

/// One bytecode instruction: an opcode and its operands (operand 0 is the output).
#[derive(Debug, Clone, PartialEq)]
pub struct Instruction {
    /// What to do.
    pub opcode: Opcode,
    /// Operands: outputs first, then inputs, then parameter constants (see [`Kind::arity`]).
    pub operands: SmallVec<[Operand; 3]>,
}

/// A batch of instructions, executed in order.
pub type Batch = Vec<Instruction>;

impl Instruction {
    /// An instruction from its parts (not validated; see [`Instruction::validate`]).
    pub fn new(opcode: Opcode, operands: impl IntoIterator<Item = Operand>) -> Instruction {
        Instruction { opcode, operands: operands.into_iter().collect() }
    }

    /// An instruction of `opcode` without operands yet (cheaper than `new` with none: a slot to
    /// fill in place).
    #[inline]
    pub fn empty(opcode: Opcode) -> Instruction {
        Instruction { opcode, operands: SmallVec::new() }
    }

    /// The output view (operand 0) of an instruction that writes one.
    #[inline]
    pub fn output(&self) -> Option<&View> {
        if self.opcode.kind().writes_output() || self.opcode.kind() == Kind::Extension {
            self.operands.first().and_then(Operand::as_view)
        } else {
            None
        }
    }

    /// The data inputs: operands after the output, before the parameters.
    #[inline]
    pub fn inputs(&self) -> &[Operand] {
        let n = match self.opcode.kind().arity() {
            Some((n, _)) => n,
            None => self.operands.len(),
        };
        if self.opcode.kind().writes_output() || self.opcode.kind() == Kind::Extension {
            &self.operands[1.min(n)..n.min(self.operands.len())]
        } else {
            &self.operands[..n.min(self.operands.len())]
        }
    }

    /// The axis parameter, for [`Kind::Reduce`], [`Kind::Accumulate`] and [`Kind::Sort`].
    pub fn axis(&self) -> Option<usize> {
        match self.opcode.kind() {
            Kind::Reduce | Kind::Accumulate | Kind::Sort => {
                self.operands.get(2)?.as_const().map(|s| s.as_i64() as usize)
            }
            _ => None,
        }
    }

    /// Every view the instruction reads or writes.
    pub fn views(&self) -> impl Iterator<Item = &View> {
        self.operands.iter().filter_map(Operand::as_view)
    }

    /// Checks arity, operand kinds, dtypes, shapes and bounds. Errors name the operand; the
    /// caller ties them to a batch position with [`Error::at_instruction`].
    pub fn validate(&self) -> Result<()> {
        let op = self.opcode;
        let kind = op.kind();
        ensure_valid!(
            self.operands.len() <= MAX_OPERANDS,
            None,
            "{op} has {} operands; at most {MAX_OPERANDS}",
            self.operands.len()
        );
        for (i, v) in self.operands.iter().enumerate() {
            if let Operand::View(v) = v {
                v.validate().map_err(|e| retag(e, i))?;
            }
        }
        let Some((ndata, params)) = kind.arity() else {
            return Ok(()); // extension methods validate their own operands
        };
        ensure_valid!(
            self.operands.len() == ndata + params.len(),
            None,
            "{op} takes {} operands, got {}",
            ndata + params.len(),
            self.operands.len()
        );
        for (k, &want) in params.iter().enumerate() {
            let i = ndata + k;
            let ok = matches!(self.operands[i], Operand::Const(s) if s.dtype() == want);
            ensure_valid!(ok, Some(i), "{op} expects a {want} constant here");
        }
        if ndata == 0 {
            return Ok(());
        }
        if kind.writes_output() {
            let Operand::View(out) = &self.operands[0] else {
                return Err(Error::invalid(Some(0), format!("the output of {op} must be a view, not a constant")));
            };
            ensure_valid!(
                visits_each_element_once(out),
                Some(0),
                "output view {out} visits some element more than once"
            );
        }
        if kind == Kind::System {
            ensure_valid!(self.operands[0].as_view().is_some(), Some(0), "{op} takes a view");
            return Ok(());
        }
        self.validate_dtypes()?;
        self.validate_shapes()
    }

    fn validate_dtypes(&self) -> Result<()> {
        let op = self.opcode;
        let out = self.operands[0].dtype();
        let inputs = self.inputs();
        let same_inputs = |first: usize| -> Result<()> {
            for (k, x) in inputs.iter().enumerate().skip(first) {
                ensure_valid!(
                    x.dtype() == inputs[first].dtype(),
                    Some(k + 1),
                    "{op} needs inputs of one dtype; this is {}, operand {} is {}",
                    x.dtype(),
                    first + 1,
                    inputs[first].dtype()
                );
            }
            Ok(())
        };
        let first_input_in = |set: crate::opcode::DTypeSet| -> Result<()> {
            ensure_valid!(
                set.contains(inputs[0].dtype()),
                Some(1),
                "{op} needs {}, got {}",
                set.describe(),
                inputs[0].dtype()
            );
            Ok(())
        };
        match op.type_rule() {
            TypeRule::Same(set) => {
                ensure_valid!(set.contains(out), Some(0), "{op} needs {}, got {out}", set.describe());
                for (k, x) in inputs.iter().enumerate() {
                    ensure_valid!(
                        x.dtype() == out,
                        Some(k + 1),
                        "{op}: dtype mismatch, output is {out} but this is {}",
                        x.dtype()
                    );
                }
            }
            TypeRule::ToBool(set) => {
                ensure_valid!(out == DType::Bool, Some(0), "{op} writes bool, got {out}");
                first_input_in(set)?;
                same_inputs(0)?;
            }
            TypeRule::ToPosition(set) => {
                ensure_valid!(out == DType::I64, Some(0), "{op} writes i64 positions, got {out}");
                first_input_in(set)?;
                if op.kind() == Kind::Search {
                    same_inputs(0)?;
                }
            }
            TypeRule::Cast | TypeRule::Any => {}
            TypeRule::Generate(set) => {
                ensure_valid!(set.contains(out), Some(0), "{op} needs {}, got {out}", set.describe());
            }
            TypeRule::Select => {
                ensure_valid!(
                    inputs[0].dtype() == DType::Bool,
                    Some(1),
                    "select's condition must be bool, got {}",
                    inputs[0].dtype()
                );
                for (k, x) in inputs.iter().enumerate().skip(1) {
                    ensure_valid!(
                        x.dtype() == out,
                        Some(k + 1),
                        "select: dtype mismatch, output is {out} but this is {}",
                        x.dtype()
                    );
                }
            }
            TypeRule::Indexed => {
                let (data, index) = (&self.operands[1], &self.operands[2]);
                ensure_valid!(
                    data.dtype() == out,
                    Some(1),
                    "{op}: dtype mismatch, operand 0 is {out} but this is {}",
                    data.dtype()
                );
                ensure_valid!(
                    index.dtype().is_integer(),
                    Some(2),
                    "{op}'s index must be an integer dtype, got {}",
                    index.dtype()
                );
            }
        }
        Ok(())
    }

    fn validate_shapes(&self) -> Result<()> {
        let op = self.opcode;
        let Some(out) = self.operands[0].as_view() else { return Ok(()) };
        match op.kind() {
            Kind::Unary | Kind::Binary | Kind::Select => {
                for (k, x) in self.inputs().iter().enumerate() {
                    if let Operand::View(v) = x {
                        ensure_valid!(
                            crate::view::same_shape(&v.shape, &out.shape),
                            Some(k + 1),
                            "{op}: shape {:?} differs from the output's {:?} (broadcast with stride-0 views)",
                            &v.shape[..],
                            &out.shape[..]
                        );
                    }
                }
            }
            Kind::Reduce | Kind::Accumulate | Kind::Sort => {
                let Some(input) = self.operands[1].as_view() else {
                    return Err(Error::invalid(Some(1), format!("{op} takes a view along the axis, not a constant")));
                };
                let axis = self.operands[2].as_const().map(Scalar::as_i64).unwrap_or(-1);
                ensure_valid!(
                    axis >= 0 && (axis as usize) < input.ndim(),
                    Some(2),
                    "{op}: axis {axis} out of range for a {}-d input",
                    input.ndim()
                );
                // NumPy: "attempt to get argmax of an empty sequence"; there is no identity.
                ensure_valid!(
                    !op.is_arg_reduce() || input.shape[axis as usize] > 0,
                    Some(1),
                    "{op}: attempt to get the {} of an empty sequence (axis {axis} of the input's shape {:?} is empty)",
                    if op == Opcode::ArgminReduce { "argmin" } else { "argmax" },
                    &input.shape[..]
                );
                let mut want = input.shape.clone();
                if op.kind() == Kind::Reduce {
                    want.remove(axis as usize);
                }
                ensure_valid!(
                    out.shape == want,
                    Some(0),
                    "{op}: output shape {:?}, expected {:?}",
                    &out.shape[..],
                    &want[..]
                );
            }
            Kind::Search => {
                let (Some(sorted), Some(keys)) = (self.operands[1].as_view(), self.operands[2].as_view()) else {
                    return Err(Error::invalid(Some(1), format!("{op} searches views, not constants")));
                };
                ensure_valid!(sorted.ndim() == 1, Some(1), "{op} searches a 1-d view, this one is {}-d", sorted.ndim());
                ensure_valid!(
                    keys.shape == out.shape,
                    Some(2),
                    "{op}: keys' shape {:?} differs from the output's {:?}",
                    &keys.shape[..],
                    &out.shape[..]
                );
            }
            Kind::Gather | Kind::Scatter => {
                let (data, index) = (&self.operands[1], &self.operands[2]);
                let Some(index) = index.as_view() else {
                    return Err(Error::invalid(Some(2), format!("{op}'s index must be a view")));
                };
                if op.kind() == Kind::Gather {
                    ensure_valid!(data.as_view().is_some(), Some(1), "gather's source must be a view");
                    ensure_valid!(
                        index.shape == out.shape,
                        Some(2),
                        "gather: index shape {:?} differs from the output's {:?}",
                        &index.shape[..],
                        &out.shape[..]
                    );
                } else if let Operand::View(src) = data {
                    ensure_valid!(
                        src.shape == index.shape,
                        Some(1),
                        "scatter: source shape {:?} differs from the index's {:?}",
                        &src.shape[..],
                        &index.shape[..]
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// True when some input view shares elements with the output without being identical to it:
    /// an engine must then read that input in full before writing (see the opcode module doc).
    pub fn output_partially_overlaps_input(&self) -> bool {
        let Some(out) = self.output() else { return false };
        self.inputs().iter().filter_map(Operand::as_view).any(|v| out.overlap(v) == Overlap::Partial)
    }
}

fn retag(e: Error, operand: usize) -> Error {
    match e {
        Error::InvalidInstruction { index, message, .. } => {
            Error::InvalidInstruction { index, operand: Some(operand), message }
        }
        e => e,
    }
}

/// True when the view visits no element twice. Sufficient test: with dims ordered by |stride|,
/// each stride exceeds the reach of all smaller dims. Views that fail it are rejected as
/// outputs even in the rare cases where they would in fact be injective.
pub fn visits_each_element_once(v: &View) -> bool {
    if let ([n], [s]) = (&v.shape[..], &v.stride[..]) {
        return *n <= 1 || *s != 0;
    }
    if v.is_contiguous() {
        return true; // (most outputs: a new array)
    }
    let mut dims: SmallVec<[(u64, u64); 8]> =
        v.shape.iter().zip(&v.stride).filter(|&(&n, _)| n > 1).map(|(&n, &s)| (s.unsigned_abs(), n as u64)).collect();
    if v.nelem() == 0 {
        return true;
    }
    dims.sort_unstable();
    let mut reach: u64 = 0;
    for (s, n) in dims {
        if s <= reach {
            return false;
        }
        reach = match s.checked_mul(n - 1).and_then(|r| r.checked_add(reach)) {
            Some(r) => r,
            None => return false,
        };
    }
    true
}

/// Validates every instruction of a batch, naming the position of the first bad one.
pub fn validate_batch(batch: &[Instruction]) -> Result<()> {
    for (i, instr) in batch.iter().enumerate() {
        instr.validate().map_err(|e| e.at_instruction(i))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Base, BaseId};

    fn view(id: u64, dtype: DType, n: usize) -> Operand {
        Operand::View(View::of_base(Base { id: BaseId(id), dtype, nelem: n as u64 }))
    }

    #[test]
    fn good_instructions_validate() {
        let add =
            Instruction::new(Opcode::Add, [view(1, DType::F64, 8), view(2, DType::F64, 8), Scalar::F64(1.0).into()]);
        add.validate().unwrap();
        let sum = Instruction::new(
            Opcode::AddReduce,
            [
                Operand::View(View::new(Base { id: BaseId(3), dtype: DType::I32, nelem: 4 }, 0, &[], &[]).unwrap()),
                view(4, DType::I32, 4),
                Scalar::I64(0).into(),
            ],
        );
        sum.validate().unwrap();
        Instruction::new(Opcode::Random, [view(1, DType::F32, 8), Scalar::U64(7).into(), Scalar::U64(0).into()])
            .validate()
            .unwrap();
    }

    #[test]
    fn errors_name_the_operand() {
        let bad =
            Instruction::new(Opcode::Add, [view(1, DType::F64, 8), view(2, DType::F32, 8), view(3, DType::F64, 8)]);
        let e = bad.validate().unwrap_err().at_instruction(4);
        assert!(matches!(e, Error::InvalidInstruction { index: Some(4), operand: Some(1), .. }), "{e}");
        assert!(e.to_string().contains("dtype mismatch"), "{e}");

        let arity = Instruction::new(Opcode::Sqrt, [view(1, DType::F64, 8)]);
        assert!(arity.validate().unwrap_err().to_string().contains("takes 2 operands"));

        let shape =
            Instruction::new(Opcode::Add, [view(1, DType::F64, 8), view(2, DType::F64, 7), view(3, DType::F64, 8)]);
        assert!(shape.validate().unwrap_err().to_string().contains("shape"));

        let int_divide =
            Instruction::new(Opcode::Divide, [view(1, DType::I64, 8), view(2, DType::I64, 8), view(3, DType::I64, 8)]);
        assert!(int_divide.validate().unwrap_err().to_string().contains("float"));

        let axis = Instruction::new(
            Opcode::AddReduce,
            [view(1, DType::F64, 1), view(2, DType::F64, 8), Scalar::I64(1).into()],
        );
        assert!(axis.validate().unwrap_err().to_string().contains("axis 1 out of range"));

        let const_out = Instruction::new(Opcode::Sqrt, [Scalar::F64(1.0).into(), view(2, DType::F64, 8)]);
        assert!(const_out.validate().is_err());
    }

    #[test]
    fn reductions_to_a_position_write_i64_and_refuse_an_empty_axis() {
        let b = |id, dtype, shape: &[usize]| {
            let base = Base { id: BaseId(id), dtype, nelem: shape.iter().product::<usize>() as u64 };
            Operand::View(View::contiguous(base, 0, shape).unwrap())
        };
        for op in [Opcode::ArgmaxReduce, Opcode::ArgminReduce] {
            for d in DType::ALL {
                let i = Instruction::new(op, [b(1, DType::I64, &[3]), b(2, d, &[3, 4]), Scalar::I64(1).into()]);
                i.validate().unwrap_or_else(|e| panic!("{op} of {d}: {e}"));
            }
            let wrong =
                Instruction::new(op, [b(1, DType::F64, &[3]), b(2, DType::F64, &[3, 4]), Scalar::I64(1).into()]);
            let e = wrong.validate().unwrap_err();
            assert!(matches!(e, Error::InvalidInstruction { operand: Some(0), .. }), "{e}");
            let empty = Instruction::new(op, [b(1, DType::I64, &[3]), b(2, DType::U8, &[3, 0]), Scalar::I64(1).into()]);
            let e = empty.validate().unwrap_err().at_instruction(2);
            assert!(matches!(e, Error::InvalidInstruction { index: Some(2), operand: Some(1), .. }), "{e}");
            assert!(e.to_string().contains(&format!("{op}: attempt to get the")), "{e}");
            assert!(e.to_string().contains("empty sequence"), "{e}");
            // Empty along another axis: an empty output, which is fine.
            let other = Instruction::new(op, [b(1, DType::I64, &[0]), b(2, DType::U8, &[0, 4]), Scalar::I64(1).into()]);
            other.validate().unwrap();
        }
    }

    #[test]
    fn broadcast_outputs_are_rejected() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 8 };
        let out = View::new(b, 0, &[4], &[0]).unwrap();
        let i = Instruction::new(Opcode::Identity, [Operand::View(out), view(2, DType::F64, 4)]);
        assert!(i.validate().unwrap_err().to_string().contains("more than once"));
        assert!(visits_each_element_once(&View::new(b, 0, &[2, 2], &[1, 2]).unwrap()));
        assert!(!visits_each_element_once(&View::new(b, 0, &[3, 3], &[2, 1]).unwrap()));
        for (n, s, once) in [(1, 0, true), (0, 0, true), (2, 0, false), (4, -2, true), (8, 1, true)] {
            let start = if s < 0 { 7 } else { 0 };
            assert_eq!(visits_each_element_once(&View::new(b, start, &[n], &[s]).unwrap()), once, "{n} x {s}");
        }
    }
}
