//! # vm-abi: the `#[repr(C)]` types of the VM's C ABIs
//!
//! The types of `vm.h` (mirrored exactly; the C bridge renders the header from them) and their
//! conversion to and from vm-ir's [`Instruction`]s, and the types of the component ABI of
//! `vm_component.h` ([`component`]), shared by the host that loads engine plugins and the Rust
//! side of plugins; and the status codes both return ([`status`]).
//!
//! Every struct here is plain old data: C code fills them (usually through the header's static
//! inline helpers) and passes pointers to arrays of them. Conversion reads only the fields the
//! tags select (`kind`, `dtype`, `ndim`, `noperands`), so bytes a C program left uninitialised
//! elsewhere are never read.

pub mod component;
pub mod status;

use vm_ir::instr::MAX_OPERANDS;
use vm_ir::view::{MAX_NDIM, Shape, Strides};
use vm_ir::{Base, BaseId, DType, Error, Instruction, Opcode, Operand, Result, Scalar, View};

/// The version of the C ABI: of the structs' layout, the functions' signatures, and the meaning
/// of the constants. Bumped on any incompatible change; `vm_abi_version()` returns it so that a
/// program can check the library it loaded against the header it was compiled with.
pub const ABI_VERSION: u32 = 1;

/// `VM_OPERAND_VIEW`: the operand is a view (`u.view`). Zero is deliberately not a kind, so that
/// a zero-filled operand is rejected rather than read as something.
pub const OPERAND_VIEW: u32 = 1;
/// `VM_OPERAND_CONSTANT`: the operand is a constant (`u.constant`).
pub const OPERAND_CONSTANT: u32 = 2;

/// `vm_base`: a base handle, as returned by `vm_base_new`. Zero is never a handle.
pub type VmBase = u64;

/// `vm_view`: a strided view of a base. Element `idx` of the view is element
/// `start + sum(idx[d] * stride[d])` of the base; strides are in elements. Only the first `ndim`
/// entries of `shape` and `stride` are read.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VmView {
    /// The base viewed.
    pub base: VmBase,
    /// Offset of element (0, ..., 0) in the base, in elements.
    pub start: i64,
    /// Number of dimensions, `0 ..= VM_MAX_NDIM` (0: one element).
    pub ndim: u32,
    /// Extent of each dimension, outermost first.
    pub shape: [u64; MAX_NDIM],
    /// Stride of each dimension, in elements (0 broadcasts, negative walks backwards).
    pub stride: [i64; MAX_NDIM],
}

/// The value of a `vm_constant`: signed integers in `i`, unsigned integers and bool in `u`,
/// `f32` and `f64` in `f` (as a double). The bits are those of `Scalar::to_payload`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union VmValue {
    /// Signed integers (`i8` ..= `i64`), sign-extended.
    pub i: i64,
    /// Unsigned integers (`u8` ..= `u64`), zero-extended, and `bool` (0 or 1).
    pub u: u64,
    /// `f32` and `f64`, as a double.
    pub f: f64,
}

/// `vm_constant`: a constant operand, its dtype and its value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VmConstant {
    /// One of the `VM_DTYPE_*` ids.
    pub dtype: u32,
    /// The value, in the union member the dtype selects.
    pub value: VmValue,
}

/// The payload of a `vm_operand`: `view` or `constant`, as `kind` says.
#[repr(C)]
#[derive(Clone, Copy)]
pub union VmOperandPayload {
    /// For `VM_OPERAND_VIEW`.
    pub view: VmView,
    /// For `VM_OPERAND_CONSTANT`.
    pub constant: VmConstant,
}

/// `vm_operand`: a view or a constant.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VmOperand {
    /// `VM_OPERAND_VIEW` or `VM_OPERAND_CONSTANT`.
    pub kind: u32,
    /// The operand itself (`u` in C).
    pub u: VmOperandPayload,
}

/// `vm_instruction`: an opcode and its operands (operand 0 is the output). Only the first
/// `noperands` operands are read.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VmInstruction {
    /// A `VM_OP_*` id, or an extension opcode returned by `vm_extension`.
    pub opcode: u32,
    /// Number of operands used, `0 ..= VM_MAX_OPERANDS`.
    pub noperands: u32,
    /// The operands.
    pub operands: [VmOperand; MAX_OPERANDS],
}

/// An [`Error::InvalidInstruction`] at instruction `index`, operand `operand`.
fn invalid(index: usize, operand: Option<usize>, message: impl std::fmt::Display) -> Error {
    Error::invalid(operand, message).at_instruction(index)
}

/// Ties an error about operand `k` of instruction `i` to both (errors already naming an operand
/// keep theirs; other variants pass unchanged).
fn at(e: Error, i: usize, k: usize) -> Error {
    match e {
        Error::InvalidInstruction { operand, message, .. } => {
            Error::InvalidInstruction { index: Some(i), operand: Some(operand.unwrap_or(k)), message }
        }
        e => e,
    }
}

impl VmConstant {
    /// The constant as a [`Scalar`]; `VM_ERR_UNKNOWN_DTYPE` for a bad dtype id, and
    /// `VM_ERR_INVALID_INSTRUCTION` naming the value and the dtype's range for a value the dtype
    /// cannot hold (an i8 of 300, a bool of 2, a finite f32 beyond f32's range): the checks of
    /// [`Scalar::try_from_payload`], which the text form applies to the same constants.
    pub fn to_scalar(&self) -> Result<Scalar> {
        let dtype = DType::from_id(self.dtype)?;
        // SAFETY: every member of the union is 8 bytes of plain integer or float data for which
        // every bit pattern is valid, and `to_payload` defines the value by those bits, so
        // reading `u` is reading the payload whichever member the caller wrote.
        let payload = unsafe { self.value.u };
        Scalar::try_from_payload(dtype, payload).map_err(|m| Error::invalid(None, m))
    }

    /// The C form of a scalar.
    pub fn from_scalar(s: Scalar) -> VmConstant {
        VmConstant { dtype: s.dtype().id(), value: VmValue { u: s.to_payload() } }
    }
}

/// Extent `n` of dimension `d` (operand `k` of instruction `i`) as an address-sized number.
fn extent(n: u64, i: usize, k: usize, d: usize) -> Result<usize> {
    usize::try_from(n).map_err(|_| invalid(i, Some(k), format!("extent {n} of dimension {d} does not fit in memory")))
}

impl VmView {
    /// The view over the base `base_of` knows (the live ones): the base must be known, the
    /// dimension count at most 16 and every extent an address-sized number. Whether the view
    /// lies inside its base is checked where every instruction is checked, by the validation of
    /// the instruction (`Instruction::validate`, which the runtime's submission runs), not twice.
    /// `i` and `k` (instruction and operand) are for error messages.
    pub fn to_view_with(&self, base_of: &dyn Fn(BaseId) -> Option<Base>, i: usize, k: usize) -> Result<View> {
        let base = self.checked_base(base_of, i, k)?;
        let mut shape = Shape::with_capacity(self.ndim as usize);
        self.extents_into(&mut shape, i, k)?;
        Ok(View { base, start: self.start, shape, stride: Strides::from_slice(&self.stride[..self.ndim as usize]) })
    }

    /// [`VmView::to_view_with`], written over `out` (its extents' storage reused).
    fn decode_into(&self, base_of: &dyn Fn(BaseId) -> Option<Base>, i: usize, k: usize, out: &mut View) -> Result<()> {
        out.base = self.checked_base(base_of, i, k)?;
        out.start = self.start;
        let ndim = self.ndim as usize;
        if out.shape.len() == ndim && out.stride.len() == ndim {
            // The common case of a batch like the last: the same rank, overwritten in place.
            for (d, (slot, &n)) in out.shape.iter_mut().zip(&self.shape[..ndim]).enumerate() {
                *slot = extent(n, i, k, d)?;
            }
            out.stride.copy_from_slice(&self.stride[..ndim]);
        } else {
            out.shape.clear();
            self.extents_into(&mut out.shape, i, k)?;
            out.stride.clear();
            out.stride.extend_from_slice(&self.stride[..ndim]);
        }
        Ok(())
    }

    /// The view's base, once its dimension count (at most 16) is checked.
    fn checked_base(&self, base_of: &dyn Fn(BaseId) -> Option<Base>, i: usize, k: usize) -> Result<Base> {
        let ndim = self.ndim as usize;
        if ndim > MAX_NDIM {
            return Err(invalid(i, Some(k), format!("view has {ndim} dimensions; at most {MAX_NDIM} (VM_MAX_NDIM)")));
        }
        base_of(BaseId(self.base)).ok_or_else(|| {
            invalid(i, Some(k), format!("base {} does not exist (never created, or already freed)", self.base))
        })
    }

    /// Appends the extents (`ndim` checked) to `shape`, each an address-sized number.
    fn extents_into(&self, shape: &mut Shape, i: usize, k: usize) -> Result<()> {
        for (d, &n) in self.shape[..self.ndim as usize].iter().enumerate() {
            shape.push(extent(n, i, k, d)?);
        }
        Ok(())
    }

    /// The C form of a view.
    pub fn from_view(v: &View) -> VmView {
        let mut out = VmView {
            base: v.base.id.0,
            start: v.start,
            ndim: v.ndim() as u32,
            shape: [0; MAX_NDIM],
            stride: [0; MAX_NDIM],
        };
        for (d, (&n, &s)) in v.shape.iter().zip(&v.stride).enumerate() {
            out.shape[d] = n as u64;
            out.stride[d] = s;
        }
        out
    }
}

impl VmOperand {
    /// The C form of an operand.
    pub fn from_operand(o: &Operand) -> VmOperand {
        match o {
            Operand::View(v) => VmOperand { kind: OPERAND_VIEW, u: VmOperandPayload { view: VmView::from_view(v) } },
            Operand::Const(s) => {
                VmOperand { kind: OPERAND_CONSTANT, u: VmOperandPayload { constant: VmConstant::from_scalar(*s) } }
            }
        }
    }
}

impl VmInstruction {
    /// Converts instruction `i` of a submission, looking its bases up with `base_of` (the live
    /// ones). Checks what the C form can get wrong that vm-ir's [`Instruction`] cannot express
    /// (operand count and kinds, dtype ids, dimension count, live bases); the runtime's
    /// submission checks the rest.
    pub fn to_instruction_with(&self, base_of: &dyn Fn(BaseId) -> Option<Base>, i: usize) -> Result<Instruction> {
        let mut out = Instruction::empty(Opcode::None);
        self.decode_into(base_of, i, &mut out)?;
        Ok(out)
    }

    /// [`VmInstruction::to_instruction_with`], written over `out` in place: an operand of the
    /// kind `out` already holds at that position is overwritten field by field (its extents'
    /// storage reused), so decoding a batch into the last one's instructions allocates nothing.
    /// On error `out` is unspecified.
    pub fn decode_into(&self, base_of: &dyn Fn(BaseId) -> Option<Base>, i: usize, out: &mut Instruction) -> Result<()> {
        out.opcode = Opcode::from_id(self.opcode)?;
        let n = self.noperands as usize;
        if n > MAX_OPERANDS {
            let opcode = out.opcode;
            return Err(invalid(
                i,
                None,
                format!("{opcode} with {n} operands; at most {MAX_OPERANDS} (VM_MAX_OPERANDS)"),
            ));
        }
        let operands = &mut out.operands;
        operands.truncate(n);
        for (k, op) in self.operands[..n].iter().enumerate() {
            match op.kind {
                OPERAND_VIEW => {
                    // SAFETY: the caller tagged this operand as a view, so `view` is the member
                    // it wrote; its fields are integers (every bit pattern valid), and the
                    // decoding reads only the first `ndim` (checked <= 16) entries of the arrays.
                    let view = unsafe { &op.u.view };
                    match operands.get_mut(k) {
                        Some(Operand::View(v)) => view.decode_into(base_of, i, k, v)?,
                        slot => {
                            let decoded = Operand::View(view.to_view_with(base_of, i, k)?);
                            match slot {
                                Some(slot) => *slot = decoded,
                                None => operands.push(decoded),
                            }
                        }
                    }
                }
                OPERAND_CONSTANT => {
                    // SAFETY: tagged as a constant: `constant` is the member the caller wrote, a
                    // u32 and an 8-byte integer/float union, valid for every bit pattern.
                    let constant = unsafe { &op.u.constant };
                    let decoded = Operand::Const(constant.to_scalar().map_err(|e| match e {
                        Error::UnknownDType(d) => {
                            Error::UnknownDType(format!("{d} (constant operand {k} of instruction {i})"))
                        }
                        e => at(e, i, k),
                    })?);
                    match operands.get_mut(k) {
                        Some(slot) => *slot = decoded,
                        None => operands.push(decoded),
                    }
                }
                other => {
                    return Err(invalid(
                        i,
                        Some(k),
                        format!(
                            "operand kind {other} is neither VM_OPERAND_VIEW ({OPERAND_VIEW}) nor VM_OPERAND_CONSTANT ({OPERAND_CONSTANT})"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// An instruction with no operands (`none`), every field zero.
    pub const ZERO: VmInstruction = VmInstruction {
        opcode: 0,
        noperands: 0,
        operands: [VmOperand {
            kind: 0,
            u: VmOperandPayload {
                view: VmView { base: 0, start: 0, ndim: 0, shape: [0; MAX_NDIM], stride: [0; MAX_NDIM] },
            },
        }; MAX_OPERANDS],
    };

    /// The C form of an instruction (at most [`MAX_OPERANDS`] operands are kept).
    pub fn from_instruction(instr: &Instruction) -> VmInstruction {
        let mut out = VmInstruction::ZERO;
        out.encode(instr);
        out
    }

    /// Overwrites `self` with the C form of `instr`, writing only the fields the tags select
    /// (the operands used, the first `ndim` extents and strides of a view): the rest keeps what
    /// it held, which the C form never reads. For batches that cross the component ABI in a
    /// buffer reused from batch to batch.
    pub fn encode(&mut self, instr: &Instruction) {
        self.opcode = instr.opcode.id();
        let n = instr.operands.len().min(MAX_OPERANDS);
        self.noperands = n as u32;
        for (slot, o) in self.operands.iter_mut().zip(&instr.operands[..n]) {
            match o {
                Operand::View(v) => {
                    slot.kind = OPERAND_VIEW;
                    // SAFETY: every member of the payload is plain data valid for any bits;
                    // writing the view's fields through the union is writing that member.
                    let c = unsafe { &mut slot.u.view };
                    c.base = v.base.id.0;
                    c.start = v.start;
                    c.ndim = v.ndim() as u32;
                    for (d, (&e, &st)) in v.shape.iter().zip(&v.stride).enumerate() {
                        c.shape[d] = e as u64;
                        c.stride[d] = st;
                    }
                }
                Operand::Const(s) => {
                    slot.kind = OPERAND_CONSTANT;
                    slot.u.constant = VmConstant::from_scalar(*s);
                }
            }
        }
    }
}

/// Writes the C form of `batch` into `buffer`, a buffer kept from batch to batch (only the fields
/// the tags select are written: see [`VmInstruction::encode`]), and returns the batch's part of
/// it; `OutOfMemory` when the buffer cannot grow (an instruction is 1.7 KB of C).
pub fn encode_batch<'a>(buffer: &'a mut Vec<VmInstruction>, batch: &[Instruction]) -> Result<&'a [VmInstruction]> {
    if buffer.len() < batch.len() {
        buffer
            .try_reserve(batch.len() - buffer.len())
            .map_err(|_| Error::OutOfMemory(format!("the C form of a batch of {} instructions", batch.len())))?;
        buffer.resize(batch.len(), VmInstruction::ZERO);
    }
    for (c, instr) in buffer.iter_mut().zip(batch) {
        c.encode(instr);
    }
    Ok(&buffer[..batch.len()])
}

/// Sizes and field offsets of the C types, in the order the layout test prints them from C.
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("sizeof(vm_base)", size_of::<VmBase>()),
        ("sizeof(vm_view)", size_of::<VmView>()),
        ("offsetof(vm_view, base)", offset_of!(VmView, base)),
        ("offsetof(vm_view, start)", offset_of!(VmView, start)),
        ("offsetof(vm_view, ndim)", offset_of!(VmView, ndim)),
        ("offsetof(vm_view, shape)", offset_of!(VmView, shape)),
        ("offsetof(vm_view, stride)", offset_of!(VmView, stride)),
        ("sizeof(vm_constant)", size_of::<VmConstant>()),
        ("offsetof(vm_constant, dtype)", offset_of!(VmConstant, dtype)),
        ("offsetof(vm_constant, value)", offset_of!(VmConstant, value)),
        ("sizeof(vm_operand)", size_of::<VmOperand>()),
        ("offsetof(vm_operand, kind)", offset_of!(VmOperand, kind)),
        ("offsetof(vm_operand, u)", offset_of!(VmOperand, u)),
        ("sizeof(vm_instruction)", size_of::<VmInstruction>()),
        ("offsetof(vm_instruction, opcode)", offset_of!(VmInstruction, opcode)),
        ("offsetof(vm_instruction, noperands)", offset_of!(VmInstruction, noperands)),
        ("offsetof(vm_instruction, operands)", offset_of!(VmInstruction, operands)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_round_trip_through_the_c_form() {
        for d in DType::ALL {
            for x in [-3.0f64, 0.0, 1.0, 2.5, 200.0] {
                let s = Scalar::F64(x).cast(d);
                assert_eq!(VmConstant::from_scalar(s).to_scalar().unwrap(), s, "{d} {x}");
            }
        }
        let c = VmConstant { dtype: 99, value: VmValue { u: 0 } };
        assert!(matches!(c.to_scalar(), Err(Error::UnknownDType(_))));
    }

    #[test]
    fn decoding_over_an_earlier_instruction_gives_the_fresh_decoding() {
        let a = Base { id: BaseId(1), dtype: DType::F64, nelem: 24 };
        let b = Base { id: BaseId(2), dtype: DType::F64, nelem: 24 };
        let view = |base, start, shape: &[usize], stride: &[i64]| {
            Operand::View(View::new(base, start, shape, stride).unwrap())
        };
        let half = || Operand::Const(Scalar::F64(0.5));
        // Ranks, operand kinds and operand counts change from one to the next, both ways.
        let program = [
            Instruction::new(
                Opcode::Add,
                [view(a, 0, &[2, 3, 4], &[12, 4, 1]), view(b, 0, &[2, 3, 4], &[12, 4, 1]), half()],
            ),
            Instruction::new(Opcode::Multiply, [view(b, 1, &[23], &[1]), half(), view(a, 0, &[23], &[1])]),
            Instruction::new(Opcode::Add, [view(a, 5, &[3, 2], &[2, 1]), view(b, 0, &[3, 2], &[0, 3]), half()]),
            Instruction::new(Opcode::Free, [Operand::View(View::of_base(b))]),
            Instruction::new(Opcode::Negative, [view(a, 23, &[4, 6], &[-6, -1]), view(a, 0, &[4, 6], &[6, 1])]),
            Instruction::new(
                Opcode::Multiply,
                [view(a, 0, &[4, 6], &[6, 1]), view(b, 0, &[4, 6], &[6, 1]), view(a, 0, &[4, 6], &[6, 1])],
            ),
        ];
        let base_of = |id: BaseId| [a, b].into_iter().find(|x| x.id == id);
        for first in &program {
            for second in &program {
                let mut slot = VmInstruction::from_instruction(first).to_instruction_with(&base_of, 0).unwrap();
                VmInstruction::from_instruction(second).decode_into(&base_of, 1, &mut slot).unwrap();
                assert_eq!(&slot, second, "{first:?} then {second:?}");
            }
        }
    }

    #[test]
    fn signed_values_live_in_i_and_floats_in_f() {
        let c = VmConstant { dtype: DType::I32.id(), value: VmValue { i: -7 } };
        assert_eq!(c.to_scalar().unwrap(), Scalar::I32(-7));
        let c = VmConstant { dtype: DType::F32.id(), value: VmValue { f: 0.5 } };
        assert_eq!(c.to_scalar().unwrap(), Scalar::F32(0.5));
        let c = VmConstant { dtype: DType::Bool.id(), value: VmValue { u: 1 } };
        assert_eq!(c.to_scalar().unwrap(), Scalar::Bool(true));
    }

    #[test]
    fn constants_out_of_their_dtype_are_invalid_not_truncated() {
        let cases = [
            (
                VmConstant { dtype: DType::I8.id(), value: VmValue { i: 300 } },
                "constant 300 is out of range for i8 (-128 to 127)",
            ),
            (
                VmConstant { dtype: DType::U8.id(), value: VmValue { u: (1 << 40) + 7 } },
                "constant 1099511627783 is out of range for u8 (0 to 255)",
            ),
            (VmConstant { dtype: DType::Bool.id(), value: VmValue { u: 2 } }, "constant 2 is out of range for bool"),
            (
                VmConstant { dtype: DType::F32.id(), value: VmValue { f: 1e300 } },
                "constant 1e300 is out of range for f32",
            ),
        ];
        for (c, want) in cases {
            match c.to_scalar() {
                Err(Error::InvalidInstruction { message, .. }) => assert!(message.starts_with(want), "{message}"),
                other => panic!("{want}: got {other:?}"),
            }
        }
        // Infinities, NaN and values that merely round are constants of f32.
        for x in [f64::INFINITY, f64::NAN, 0.1, 1e-300] {
            let c = VmConstant { dtype: DType::F32.id(), value: VmValue { f: x } };
            assert!(c.to_scalar().is_ok(), "{x}");
        }
    }
}
