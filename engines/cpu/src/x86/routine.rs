//! Which kernels get a row routine, and assembling one: the prologue, the loop over a row's
//! vectors and its masked tail around the bodies [`super::regalloc`] emits.

use super::encode::*;
use super::regalloc::*;
use crate::compile::program::{Dst, Inner, Op, Program, Src};
use std::sync::OnceLock;
use vm_ir::{BinaryOp, DType, OpClass, Opcode, UnaryOp};

/// The instruction sets the routines are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isa {
    /// 512-bit vectors, 32 registers, masked tails (AVX-512 Foundation, and BMI2 for the mask).
    #[default]
    Avx512,
    /// 256-bit vectors, 16 registers, tails through `vmaskmov` (AVX2).
    Avx2,
}

impl Isa {
    /// True when this CPU runs code of `self`.
    pub fn supported(self) -> bool {
        static FEATURES: OnceLock<(bool, bool)> = OnceLock::new();
        let (avx512, avx2) = *FEATURES.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                (
                    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("bmi2"),
                    is_x86_feature_detected!("avx2"),
                )
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                (false, false)
            }
        });
        match self {
            Isa::Avx512 => avx512,
            Isa::Avx2 => avx2,
        }
    }

    /// The widest this CPU runs, if any.
    pub fn best() -> Option<Isa> {
        [Isa::Avx512, Isa::Avx2].into_iter().find(|i| i.supported())
    }

    /// The instruction set a `row_code` setting names (`"auto"`: [`Isa::best`]), when this CPU
    /// runs it; `None` for `"none"` or one the CPU lacks.
    pub fn named(name: &str) -> Option<Isa> {
        match name {
            "auto" => Isa::best(),
            "avx512" => Some(Isa::Avx512).filter(|i| i.supported()),
            "avx2" => Some(Isa::Avx2).filter(|i| i.supported()),
            _ => None,
        }
    }
}

/// What an operation computes, as the routine emits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arith {
    /// `vaddpd` and friends: the EVEX opcode byte (map 0F).
    Binary(u8),
    Sqrt,
    Negative,
    Absolute,
    Square,
    Reciprocal,
    Copy,
    /// A sum or product into a reduction's partial results (`vaddpd` or `vmulpd`).
    Reduce(u8),
    /// NumPy's `maximum` or `minimum`: the `vcmppd` predicate under which the second input is
    /// taken (where the first is not NaN).
    MaxMin(u8),
}

pub(super) const ADD: u8 = 0x58;
pub(super) const MUL: u8 = 0x59;
pub(super) const SUB: u8 = 0x5C;
pub(super) const DIV: u8 = 0x5E;

pub(super) fn arith(op: &Op) -> Option<Arith> {
    if !matches!(op.dtype, DType::F64 | DType::F32) || op.in_dtype != op.dtype {
        return None;
    }
    Some(match op.opcode.class() {
        OpClass::Binary(BinaryOp::Add) => Arith::Binary(ADD),
        OpClass::Binary(BinaryOp::Subtract) => Arith::Binary(SUB),
        OpClass::Binary(BinaryOp::Multiply) => Arith::Binary(MUL),
        OpClass::Binary(BinaryOp::Divide) => Arith::Binary(DIV),
        OpClass::Binary(BinaryOp::Maximum) => Arith::MaxMin(NOT_GREATER),
        OpClass::Binary(BinaryOp::Minimum) => Arith::MaxMin(NOT_LESS),
        OpClass::Unary(UnaryOp::Sqrt) => Arith::Sqrt,
        OpClass::Unary(UnaryOp::Negative) => Arith::Negative,
        OpClass::Unary(UnaryOp::Absolute) => Arith::Absolute,
        OpClass::Unary(UnaryOp::Square) => Arith::Square,
        OpClass::Unary(UnaryOp::Reciprocal) => Arith::Reciprocal,
        OpClass::Unary(UnaryOp::Identity) => Arith::Copy,
        _ if op.opcode == Opcode::AddReduce => Arith::Reduce(ADD),
        _ => return None,
    })
}

/// True when `p` gets a row routine: f64 arithmetic only (see the module documentation) and
/// sums, every memory operand and partial result contiguous or broadcast along the
/// row, no broadcast one written, no positions. A sum along the row adds its lanes and last
/// positions in the order of Cranelift's code, so the routine's results are bit for bit those
/// of the engine without it; Cranelift's code takes square roots in chunks, which orders such
/// a sum otherwise, so a kernel with both keeps Cranelift's code.
pub fn eligible(p: &Program, isa: Isa) -> bool {
    let arity_ok = |op: &Op| match arith(op) {
        Some(Arith::Binary(_) | Arith::MaxMin(_)) => op.srcs.len() == 2,
        Some(_) => op.srcs.len() == 1,
        None => false,
    };
    let along_row = |q: u16| p.partials.get(usize::from(q)).is_some_and(|i| i.inner == Inner::Broadcast);
    let sums_along_rows = p.ops.iter().any(|op| matches!(op.dst, Dst::Reduce(q) if along_row(q)));
    let sqrt = p.ops.iter().any(|op| arith(op) == Some(Arith::Sqrt));
    let chunked_sums = sums_along_rows && sqrt;
    // Registers left for values past the accumulators of sums along the row (two each with
    // AVX2): at least eight.
    let per_sum = if isa == Isa::Avx2 { 2 } else { 1 };
    let vregs = if isa == Isa::Avx2 { usize::from(AVX2_MASK) } else { 32 };
    let sums = p.partials.iter().filter(|q| q.inner == Inner::Broadcast).count();
    if sums * per_sum + 8 > vregs {
        return false;
    }
    // One element type throughout: f64 or f32.
    let dtype = p.ops.first().map_or(DType::F64, |op| op.dtype);
    !p.ops.is_empty()
        && !chunked_sums
        && p.slots.iter().chain(&p.partials).all(|s| s.dtype == dtype && s.inner != Inner::Strided)
        && p.consts.iter().all(|&c| c == dtype)
        && p.ops.iter().all(|op| {
            op.dtype == dtype
                && arity_ok(op)
                && op.srcs.iter().all(|s| !matches!(s, Src::Index))
                && match (op.dst, arith(op)) {
                    (Dst::Reduce(q), Some(Arith::Reduce(_))) => usize::from(q) < p.partials.len(),
                    (_, Some(Arith::Reduce(_))) | (Dst::Reduce(_), _) => false,
                    (Dst::Value, _) => true,
                    (Dst::Store(m), _) => p.slots[m as usize].inner == Inner::Unit,
                }
        })
}

/// The most stack a routine takes (64 bytes per spilled value and per sum): less than a page,
/// so that lowering the stack pointer by it cannot step over a guard page. A kernel that
/// would spill more keeps Cranelift's code.
pub const MAX_FRAME: i32 = 4096;

/// The row routine of `p` in `isa` (`p` must be [`eligible`] for it), as position-independent
/// machine code with its constant pool; `None` when it would take more than [`MAX_FRAME`] bytes
/// of stack. The address table holds the slots' addresses, then the reductions' partial
/// results'.
pub fn assemble(p: &Program, isa: Isa) -> Option<Vec<u8>> {
    assemble_listed(p, isa).map(|r| r.code)
}

/// A check run on the routines of every kernel compiled (see [`set_audit`]).
pub(super) static AUDIT: OnceLock<fn(&Routine)> = OnceLock::new();

/// Has `check` called with the routines of every kernel the engines of this process compile
/// from now on, in each instruction set the kernel is [`eligible`] for, whether or not this
/// CPU runs it (building a routine needs no CPU feature) and whether or not the engine's
/// setting gives it one: the tests decode them. The first check set stays.
pub fn set_audit(check: fn(&Routine)) {
    let _ = AUDIT.set(check);
}

/// Runs the check of [`set_audit`], if any, on `p`'s routines.
pub(crate) fn audit(p: &Program) {
    if let Some(check) = AUDIT.get() {
        for isa in [Isa::Avx512, Isa::Avx2] {
            if let Some(r) = eligible(p, isa).then(|| assemble_listed(p, isa)).flatten() {
                check(&r);
            }
        }
    }
}

/// [`assemble`], with the instructions the code was assembled from.
pub fn assemble_listed(p: &Program, isa: Isa) -> Option<Routine> {
    let mut a = Asm { isa, f32: p.ops.first().is_some_and(|op| op.dtype == DType::F32), ..Asm::default() };
    for r in SAVED {
        a.push(r);
    }
    // sub rsp, frame (patched once the spills are known)
    let frame_at = a.listing.len();
    a.emit(Emitted::RegImm32 { ext: 5, reg: RSP, imm: 0 });
    for (k, &r) in SLOT_REGS.iter().enumerate().take(p.slots.len() + p.partials.len()) {
        a.mov_load(r, RDI, k as i32 * 8);
    }
    let mut body = Body::new(p, &a);
    let accs = body.accs.clone();
    let combiner = |q: u16| {
        p.ops.iter().find_map(|op| match (op.dst, arith(op)) {
            (Dst::Reduce(r), Some(Arith::Reduce(opc))) if r == q => Some(opc),
            _ => None,
        })
    };
    // Sums along the row take Cranelift's vector loop's lanes: one AVX-512 vector, two AVX2 ones
    // (so a step is two vectors then).
    let halves: u8 = if a.isa == Isa::Avx2 && !accs.is_empty() { 2 } else { 1 };
    let step = a.lanes() * halves;
    // Accumulators from the sum's identity (float products run in order outside kernels).
    for &(_, lo, hi) in &accs {
        a.broadcast(lo, Mem::Pool(ZERO));
        a.broadcast(hi, Mem::Pool(ZERO));
    }
    a.emit(Emitted::Zero32(RCX)); // xor ecx, ecx
    a.rex_rr(0x89, RDX, RAX); // mov rax, rdx
    a.reg_imm8(SUB_IMM8, RAX, step); // sub rax, step
    a.rex_rr(0x39, RAX, RCX); // cmp rcx, rax
    let to_tail = a.jcc(JG);
    let main = a.code.len();
    for half in 0..halves {
        body.emit(&mut a, 0, half);
    }
    a.reg_imm8(ADD_IMM8, RCX, step); // add rcx, step
    a.rex_rr(0x39, RAX, RCX); // cmp rcx, rax
    let back = a.jcc(JLE);
    a.patch(back, main);
    let tail = a.code.len();
    a.patch(to_tail, tail);
    // A sum along the row: the partial result, then lane 0, 1, ... of the accumulators, one at a
    // time (in the low lane of the first register from here on).
    for (i, &(q, lo, hi)) in accs.iter().enumerate() {
        let opc = combiner(q).unwrap_or(ADD);
        a.store(Mem::At(RSP, Body::acc_stack(i)), lo, 0);
        if halves == 2 {
            a.store(Mem::At(RSP, Body::acc_stack(i) + a.vbytes()), hi, 0);
        }
        let base = body.slot_base(&mut a, body.partial_entry(q));
        a.scalar(0x10, lo, 0, Rm::Mem(Mem::At(base, 0)));
        for lane in 0..i32::from(step) {
            a.scalar(opc, lo, lo, Rm::Mem(Mem::At(RSP, Body::acc_stack(i) + a.esize() * lane)));
        }
    }
    // The last positions, under a mask of rax lanes (at most a vector's).
    let set_mask = |a: &mut Asm| {
        if a.isa == Isa::Avx2 {
            // ymm15 = the 32 bytes of the mask table at 32 - rem * esize: rem lanes of ones.
            a.emit(Emitted::LeaPool { dst: R11, entry: TAIL_MASKS }); // lea r11, [rip + masks]
            a.reg_imm8(SHL_IMM8, RAX, if a.f32 { 2 } else { 3 }); // shl rax, log2(esize)
            a.rex_rr(0x29, RAX, R11); // sub r11, rax
            a.load(AVX2_MASK, Mem::At(R11, 32), 0);
        } else {
            a.emit(Emitted::MovImm32 { reg: R11, imm: 0xffff }); // mov r11d, 0xffff
            a.emit(Emitted::Bzhi { dst: RAX, src: R11, index: RAX }); // bzhi eax, r11d, eax
            a.emit(Emitted::Kmovw { k: 1, src: RAX }); // kmovw k1, eax
        }
    };
    let remaining = |a: &mut Asm| {
        a.rex_rr(0x89, RDX, RAX); // mov rax, rdx
        a.rex_rr(0x29, RCX, RAX); // sub rax, rcx
    };
    remaining(&mut a);
    let to_done = a.jcc(JLE);
    let lanes = a.lanes();
    let mut to_chain = None;
    if halves == 2 {
        // The first vector: min(rem, lanes) positions.
        a.reg_imm8(CMP_IMM8, RAX, lanes); // cmp rax, lanes
        let short = a.jcc(JLE);
        a.emit(Emitted::MovImm32 { reg: RAX, imm: u32::from(lanes) }); // mov eax, lanes
        let at = a.code.len();
        a.patch(short, at);
    }
    set_mask(&mut a);
    body.emit(&mut a, 1, 0);
    if halves == 2 {
        // The second: rem - lanes positions, if any.
        remaining(&mut a);
        a.reg_imm8(CMP_IMM8, RAX, lanes); // cmp rax, lanes
        to_chain = Some(a.jcc(JLE));
        a.reg_imm8(SUB_IMM8, RAX, lanes); // sub rax, lanes
        set_mask(&mut a);
        body.emit(&mut a, 1, 1);
    }
    if let Some(at) = to_chain {
        let here = a.code.len();
        a.patch(at, here);
    }
    if !accs.is_empty() {
        remaining(&mut a);
    }
    // The last positions' values, one at a time.
    for (i, &(q, lo, _)) in accs.iter().enumerate() {
        let opc = combiner(q).unwrap_or(ADD);
        let mut ends = Vec::new();
        for lane in 0..step - 1 {
            a.reg_imm8(CMP_IMM8, RAX, lane); // cmp rax, lane
            ends.push(a.jcc(JLE));
            let at = Body::acc_stack(i) + a.esize() * i32::from(lane);
            a.scalar(opc, lo, lo, Rm::Mem(Mem::At(RSP, at)));
        }
        let end = a.code.len();
        for at in ends {
            a.patch(at, end);
        }
    }
    let done = a.code.len();
    a.patch(to_done, done);
    for &(q, lo, _) in &accs {
        let base = body.slot_base(&mut a, body.partial_entry(q));
        a.scalar(0x11, lo, 0, Rm::Mem(Mem::At(base, 0)));
    }
    let frame = 64 * (accs.len() + body.spill.len()) as i32;
    if frame > MAX_FRAME {
        return None;
    }
    a.set_imm32(frame_at, frame);
    a.emit(Emitted::RegImm32 { ext: 0, reg: RSP, imm: frame }); // add rsp, frame
    for r in SAVED.iter().rev() {
        a.pop(*r);
    }
    a.emit(Emitted::Vzeroupper);
    a.emit(Emitted::Ret);
    Some(a.finish())
}
