//! Rows of float arithmetic at the machine's full vector width (AVX-512 or AVX2), in machine
//! code the engine writes itself.
//!
//! Cranelift's vectors are 128-bit on x86-64: two f64 per instruction, where an AVX-512 machine
//! computes eight and an AVX2 one four. The kernels of stencils and fluxes (shallow_water: a
//! hundred additions, multiplications and divisions per cell) are bound by the number of
//! instructions, so this module assembles their rows itself: a kernel whose operations are all
//! f64 (or all f32) additions, subtractions, multiplications, divisions, square roots,
//! negations, absolute values, squares, reciprocals, copies, maxima and minima (NumPy's, NaNs
//! winning) and sums, on operands contiguous or broadcast along the row, gets a row
//! routine in AVX-512 (or AVX2) code, and its Cranelift function calls it for each row. Every
//! one of those operations is correctly rounded (IEEE 754) at any width, and sums are combined
//! in the order of Cranelift's vector loop, so the results are bit for bit those of the engine
//! without routines. Anything else keeps Cranelift's code.
//!
//! The routine, `row(ptrs, consts, n)`, computes positions `0..n` of a row: `ptrs[k]` is memory
//! slot `k`'s address at position 0 (then the reductions' partial results), `consts` the
//! kernel's constant words. Its loop takes a vector of positions a step (eight f64 or sixteen
//! f32 with AVX-512, half as many with AVX2) and the rest under a mask. Values live in the
//! vector registers (32, or 15 with AVX2: the 16th holds the tail's mask), allocated in one
//! pass over the operations (a value needed again later when none is free is stored on the
//! stack, the one needed furthest ahead first; a memory operand or a constant is read again
//! rather than stored). Memory operations keep the operations' order, as in Cranelift's code:
//! the fusion rules (a written view is read back only through itself) make that correct at any
//! width. A sum along the row keeps Cranelift's order of lanes (eight f64 or sixteen f32): one
//! AVX-512 accumulator, two AVX2 ones (a step then computes two vectors).

use crate::program::{Dst, Inner, Op, Program, Src};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
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
enum Arith {
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

const ADD: u8 = 0x58;
const MUL: u8 = 0x59;
const SUB: u8 = 0x5C;
const DIV: u8 = 0x5E;

fn arith(op: &Op) -> Option<Arith> {
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

// ---- the assembler -------------------------------------------------------------------------

/// General-purpose registers by their encoding.
const RAX: u8 = 0;
const RCX: u8 = 1;
const RDX: u8 = 2;
const RBX: u8 = 3;
const RSP: u8 = 4;
const RBP: u8 = 5;
const RSI: u8 = 6;
const RDI: u8 = 7;
const R8: u8 = 8;
const R9: u8 = 9;
const R10: u8 = 10;
const R11: u8 = 11;
const R12: u8 = 12;
const R13: u8 = 13;
const R14: u8 = 14;
const R15: u8 = 15;

/// Registers holding the addresses of the first memory slots (the rest are loaded into r11
/// where used). rdi: the address table, rsi: the constants, rdx: n, rcx: the position, rax:
/// scratch.
const SLOT_REGS: [u8; 9] = [R8, R9, R10, RBX, RBP, R12, R13, R14, R15];
/// The callee-saved registers among them, pushed in the prologue.
const SAVED: [u8; 6] = [RBX, RBP, R12, R13, R14, R15];

/// A memory operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mem {
    /// `[base + rcx*esize + disp]`: the current position of a contiguous row (and `disp` bytes
    /// on).
    Row(u8, i32),
    /// `[base + disp]`.
    At(u8, i32),
    /// An entry of the routine's constant pool (RIP-relative).
    Pool(usize),
}

/// The r/m operand of a vector instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rm {
    /// A vector register.
    Reg(u8),
    /// Memory.
    Mem(Mem),
}

/// Constant pool entries (8 bytes each; an f32 one in the low half), then AVX2's table of tail
/// masks: 32 bytes of ones and 32 of zeros, read from `32 - rem * esize`.
const SIGN_MASK: usize = 0;
const ABS_MASK: usize = 1;
const ONE: usize = 2;
const ZERO: usize = 3;
const TAIL_MASKS: usize = 4;
const POOL: [u64; 12] =
    [0x8000_0000_0000_0000, 0x7fff_ffff_ffff_ffff, 0x3ff0_0000_0000_0000, 0, !0, !0, !0, !0, 0, 0, 0, 0];
const POOL_F32: [u64; 12] = [0x8000_0000, 0x7fff_ffff, 0x3f80_0000, 0, !0, !0, !0, !0, 0, 0, 0, 0];

/// AVX2's register holding the tail's mask.
const AVX2_MASK: u8 = 15;

/// One instruction as the assembler was asked for it: the arguments of the encoder, not its
/// bytes. A routine keeps the list of its instructions (a few hundred at most), so that a
/// decoder can read the bytes back and compare them with what was meant (the tests do, with
/// an x86 decoder of its own), and [`replay`] encodes any such list again. Registers are by
/// their encoding (vector 0-31, general-purpose 0-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emitted {
    /// A full-width vector instruction of the element type (see `Asm::vop`): EVEX map
    /// selector and opcode byte, the ModRM.reg register, the second source `v` (vvvv), the
    /// r/m operand, the opmask (0: none), zeroing masking, an element broadcast from memory,
    /// and the immediate byte of `vcmppd` or `vblendvpd`.
    #[allow(missing_docs)]
    Vector { map: u8, opcode: u8, reg: u8, v: u8, rm: Rm, mask: u8, zero: bool, bcst: bool, imm: Option<u8> },
    /// A scalar instruction of the element type (`vmovsd`, `vaddsd`, `vmulsd`, or the `ss`
    /// forms), 0F opcode byte, registers and r/m as for `Vector`.
    #[allow(missing_docs)]
    Scalar { opcode: u8, reg: u8, v: u8, rm: Rm },
    /// A vector loaded from memory (under the tail's mask when `mask` is not 0).
    #[allow(missing_docs)]
    Load { dst: u8, mem: Mem, mask: u8 },
    /// A vector stored to memory (under the tail's mask when `mask` is not 0).
    #[allow(missing_docs)]
    Store { mem: Mem, src: u8, mask: u8 },
    /// An element of memory broadcast to every lane.
    #[allow(missing_docs)]
    Broadcast { dst: u8, mem: Mem },
    /// `op rm, reg` on 64-bit registers (opcode 0x89 `mov`, 0x29 `sub`, 0x39 `cmp`).
    #[allow(missing_docs)]
    RegReg { opcode: u8, reg: u8, rm: u8 },
    /// `op r64, imm8`: opcode 0x83 with ModRM.reg extension `ext` (0 `add`, 5 `sub`, 7 `cmp`)
    /// or 0xC1 /4 (`shl`).
    #[allow(missing_docs)]
    RegImm8 { opcode: u8, ext: u8, reg: u8, imm: i8 },
    /// `op r64, imm32`: opcode 0x81 with extension `ext` (0 `add`, 5 `sub`).
    #[allow(missing_docs)]
    RegImm32 { ext: u8, reg: u8, imm: i32 },
    /// `mov r32, imm32`.
    #[allow(missing_docs)]
    MovImm32 { reg: u8, imm: u32 },
    /// `xor r32, r32` of a register with itself.
    Zero32(u8),
    /// `mov r64, [base + disp]`.
    #[allow(missing_docs)]
    MovLoad { dst: u8, base: u8, disp: i32 },
    /// `lea r64, [rip + ...]` of a constant pool entry.
    #[allow(missing_docs)]
    LeaPool { dst: u8, entry: usize },
    /// `bzhi dst, src, index` on 32-bit registers.
    #[allow(missing_docs)]
    Bzhi { dst: u8, src: u8, index: u8 },
    /// `kmovw k, r32`.
    #[allow(missing_docs)]
    Kmovw { k: u8, src: u8 },
    /// `push r64`.
    Push(u8),
    /// `pop r64`.
    Pop(u8),
    /// `jcc rel32` (`cc` the condition's low opcode nibble) to code offset `target`.
    #[allow(missing_docs)]
    Jcc { cc: u8, target: usize },
    /// `vzeroupper`.
    Vzeroupper,
    /// `ret`.
    Ret,
}

/// A routine's machine code and the instructions it was assembled from.
#[derive(Debug, Clone)]
pub struct Routine {
    /// The instruction set.
    pub isa: Isa,
    /// Elements are f32, else f64.
    pub f32: bool,
    /// The code: the instructions, `int3` up to 8-byte alignment, then the constant pool.
    pub code: Vec<u8>,
    /// Each instruction with the offset of its first byte, in order.
    pub listing: Vec<(usize, Emitted)>,
    /// Offset of the constant pool.
    pub pool: usize,
}

impl Routine {
    /// The constant pool's 8-byte entries.
    pub fn pool_entries(&self) -> &'static [u64] {
        if self.f32 { &POOL_F32 } else { &POOL }
    }
}

/// Bytes of machine code under construction.
#[derive(Default)]
struct Asm {
    /// The instruction set.
    isa: Isa,
    /// Elements are f32, else f64.
    f32: bool,
    code: Vec<u8>,
    /// Positions of RIP-relative displacements to the constant pool, with their entries and
    /// the end of their instruction (an immediate may follow the displacement).
    pool_refs: Vec<(usize, usize, usize)>,
    /// The instructions emitted, each with its offset.
    listing: Vec<(usize, Emitted)>,
}

/// EVEX map selectors.
const MAP_0F: u8 = 1;
const MAP_0F38: u8 = 2;
const MAP_0F3A: u8 = 3;

/// `vcmppd` predicates: "ordered" (neither operand NaN), "not greater" and "not less" (both
/// true where an operand is NaN).
const ORDERED: u8 = 7;
const NOT_GREATER: u8 = 0x1A;
const NOT_LESS: u8 = 0x15;

/// The encodings of `op r64, imm8` (opcode, ModRM.reg extension).
const ADD_IMM8: (u8, u8) = (0x83, 0);
const SUB_IMM8: (u8, u8) = (0x83, 5);
const CMP_IMM8: (u8, u8) = (0x83, 7);
const SHL_IMM8: (u8, u8) = (0xC1, 4);

impl Asm {
    fn bytes(&mut self, b: &[u8]) {
        self.code.extend_from_slice(b);
    }

    /// Bytes of an element.
    fn esize(&self) -> i32 {
        if self.f32 { 4 } else { 8 }
    }

    /// Bytes of a vector.
    fn vbytes(&self) -> i32 {
        if self.isa == Isa::Avx512 { 64 } else { 32 }
    }

    /// Elements of a vector.
    fn lanes(&self) -> u8 {
        (self.vbytes() / self.esize()) as u8
    }

    /// Vector registers.
    fn vregs(&self) -> u8 {
        if self.isa == Isa::Avx512 { 32 } else { 16 }
    }

    /// Appends instruction `e` to the code and the listing.
    fn emit(&mut self, e: Emitted) {
        self.listing.push((self.code.len(), e));
        let refs = self.pool_refs.len();
        match e {
            Emitted::Vector { map, opcode, reg, v, rm, mask, zero, bcst, imm } => {
                self.enc_vector(map, opcode, reg, v, rm, mask, zero, bcst);
                self.code.extend(imm);
            }
            Emitted::Scalar { opcode, reg, v, rm } => self.enc_scalar(opcode, reg, v, rm),
            Emitted::Load { dst, mem, mask } => self.enc_load(dst, mem, mask),
            Emitted::Store { mem, src, mask } => self.enc_store(mem, src, mask),
            Emitted::Broadcast { dst, mem } => {
                let opcode = if self.f32 { 0x18 } else { 0x19 };
                self.enc_vector(MAP_0F38, opcode, dst, 0, Rm::Mem(mem), 0, false, false);
            }
            Emitted::RegReg { opcode, reg, rm } => {
                self.code.push(0x48 | ((reg >> 3) << 2) | (rm >> 3));
                self.code.push(opcode);
                self.code.push(0xC0 | ((reg & 7) << 3) | (rm & 7));
            }
            Emitted::RegImm8 { opcode, ext, reg, imm } => {
                self.bytes(&[0x48 | (reg >> 3), opcode, 0xC0 | (ext << 3) | (reg & 7), imm as u8]);
            }
            Emitted::RegImm32 { ext, reg, imm } => {
                self.bytes(&[0x48 | (reg >> 3), 0x81, 0xC0 | (ext << 3) | (reg & 7)]);
                self.bytes(&imm.to_le_bytes());
            }
            Emitted::MovImm32 { reg, imm } => {
                if reg >= 8 {
                    self.code.push(0x41);
                }
                self.code.push(0xB8 | (reg & 7));
                self.bytes(&imm.to_le_bytes());
            }
            Emitted::Zero32(r) => {
                if r >= 8 {
                    self.code.push(0x45);
                }
                self.bytes(&[0x31, 0xC0 | ((r & 7) << 3) | (r & 7)]);
            }
            Emitted::MovLoad { dst, base, disp } => {
                self.code.push(0x48 | ((dst >> 3) << 2) | (base >> 3));
                self.code.push(0x8B);
                self.modrm_mem(dst, Mem::At(base, disp), 0);
            }
            Emitted::LeaPool { dst, entry } => {
                self.bytes(&[0x48 | ((dst >> 3) << 2), 0x8D]);
                self.modrm_mem(dst, Mem::Pool(entry), 0);
            }
            Emitted::Bzhi { dst, src, index } => self.vex(MAP_0F38, 0b00, false, false, 0xF5, dst, index, Rm::Reg(src)),
            Emitted::Kmovw { k, src } => self.vex(MAP_0F, 0b00, false, false, 0x92, k, 0, Rm::Reg(src)),
            Emitted::Push(r) => {
                if r >= 8 {
                    self.code.push(0x41);
                }
                self.code.push(0x50 | (r & 7));
            }
            Emitted::Pop(r) => {
                if r >= 8 {
                    self.code.push(0x41);
                }
                self.code.push(0x58 | (r & 7));
            }
            Emitted::Jcc { cc, target } => {
                self.bytes(&[0x0F, 0x80 | cc, 0, 0, 0, 0]);
                if target != usize::MAX {
                    self.patch_rel(self.code.len() - 4, target);
                }
            }
            Emitted::Vzeroupper => self.bytes(&[0xC5, 0xF8, 0x77]),
            Emitted::Ret => self.code.push(0xC3),
        }
        let end = self.code.len();
        for r in &mut self.pool_refs[refs..] {
            r.2 = end;
        }
    }

    /// A ModRM (and SIB, displacement) for register field `reg` and memory `m`; `n` is the
    /// EVEX compressed displacement's scale (0 for legacy encodings).
    fn modrm_mem(&mut self, reg: u8, m: Mem, n: i32) {
        let reg = (reg & 7) << 3;
        // The mode and bytes of a displacement from a base whose low bits are `rm`.
        let displacement = |disp: i32, rm: u8| -> (u8, Vec<u8>) {
            if disp == 0 && rm != RBP {
                (0, vec![])
            } else if n > 0 && disp % n == 0 && i8::try_from(disp / n).is_ok() {
                (1, vec![(disp / n) as i8 as u8])
            } else if n == 0 && i8::try_from(disp).is_ok() {
                (1, vec![disp as i8 as u8])
            } else {
                (2, disp.to_le_bytes().to_vec())
            }
        };
        match m {
            Mem::Row(base, disp) => {
                // SIB with index rcx scaled by the element size (rbp/r13 as base take a
                // displacement, if only 0).
                let scale = if self.f32 { 2 } else { 3 };
                let (mode, disp_bytes) = displacement(disp, base & 7);
                self.bytes(&[(mode << 6) | reg | 0b100, (scale << 6) | (RCX << 3) | (base & 7)]);
                self.bytes(&disp_bytes);
            }
            Mem::At(base, disp) => {
                let rm = base & 7;
                let (mode, disp_bytes) = displacement(disp, rm);
                self.code.push((mode << 6) | reg | rm);
                if rm == RSP {
                    self.code.push(0x24);
                }
                self.bytes(&disp_bytes);
            }
            Mem::Pool(k) => {
                self.code.push(reg | 0b101);
                self.pool_refs.push((self.code.len(), k, self.code.len() + 4));
                self.bytes(&[0; 4]);
            }
        }
    }

    /// A full-width vector instruction of the element type (see [`Emitted::Vector`]).
    #[allow(clippy::too_many_arguments)]
    fn vop(&mut self, map: u8, opcode: u8, reg: u8, v: u8, rm: Rm, mask: u8, zero: bool, bcst: bool) {
        self.emit(Emitted::Vector { map, opcode, reg, v, rm, mask, zero, bcst, imm: None });
    }

    /// `vcmppd dst, a, b` under `predicate` (`vcmpps`): into opmask `dst` (AVX-512, under
    /// `mask`) or a vector register (AVX2).
    fn cmp(&mut self, dst: u8, a: u8, b: u8, mask: u8, predicate: u8) {
        let rm = Rm::Reg(b);
        self.emit(Emitted::Vector {
            map: MAP_0F,
            opcode: 0xC2,
            reg: dst,
            v: a,
            rm,
            mask,
            zero: false,
            bcst: false,
            imm: Some(predicate),
        });
    }

    /// AVX2's `vblendvpd dst, a, b, select` (`vblendvps`): `b` where `select`'s lanes have the
    /// sign bit, else `a`.
    fn blendv(&mut self, dst: u8, a: u8, b: u8, select: u8) {
        let opcode = if self.f32 { 0x4A } else { 0x4B };
        let rm = Rm::Reg(b);
        self.emit(Emitted::Vector {
            map: MAP_0F3A,
            opcode,
            reg: dst,
            v: a,
            rm,
            mask: 0,
            zero: false,
            bcst: false,
            imm: Some(select << 4),
        });
    }

    /// A full-width vector instruction of the element type (the `pd` form with the 66 prefix,
    /// or the `ps` form with none; the integer `vpxor`/`vpand` and the 0F38 broadcasts keep 66):
    /// EVEX-encoded with W1 for f64 (W0 for f32), or VEX-encoded for AVX2. `reg` is the
    /// ModRM.reg register, `v` the second source (0 when unused), `rm` the r/m operand, `mask`
    /// the opmask (0 = none), `zero` zeroing masking, `bcst` an element in memory broadcast to
    /// every lane (the last three AVX-512's only).
    #[allow(clippy::too_many_arguments)]
    fn enc_vector(&mut self, map: u8, opcode: u8, reg: u8, v: u8, rm: Rm, mask: u8, zero: bool, bcst: bool) {
        let pp = if self.f32 && map == MAP_0F && !matches!(opcode, 0xEF | 0xDB) { 0b00 } else { 0b01 };
        if self.isa == Isa::Avx2 {
            debug_assert!(mask == 0 && !zero && !bcst, "AVX2 has no masks or broadcast operands");
            // The 0F38 broadcasts are W0 in VEX; the rest ignore W.
            self.vex(map, pp, false, true, opcode, reg, v, rm);
            return;
        }
        // The compressed displacement's scale: an element for broadcasts (an operand's or
        // `vbroadcastsd`'s), the vector for the rest.
        let n = if bcst || (map == MAP_0F38 && matches!(opcode, 0x18 | 0x19)) { self.esize() } else { 64 };
        self.evex_with(map, pp, !self.f32, 0b10, opcode, reg, v, rm, mask, zero, bcst, n);
    }

    /// A scalar instruction of the element type (see [`Emitted::Scalar`]).
    fn scalar(&mut self, opcode: u8, reg: u8, v: u8, rm: Rm) {
        self.emit(Emitted::Scalar { opcode, reg, v, rm });
    }

    /// A scalar instruction of the element type (`vmovsd`, `vaddsd`, `vmulsd`: F2 and W1;
    /// `vmovss`, `vaddss`, `vmulss`: F3 and W0).
    fn enc_scalar(&mut self, opcode: u8, reg: u8, v: u8, rm: Rm) {
        let (pp, esize) = if self.f32 { (0b10, 4) } else { (0b11, 8) };
        if self.isa == Isa::Avx2 {
            self.vex(MAP_0F, pp, false, false, opcode, reg, v, rm);
            return;
        }
        self.evex_with(MAP_0F, pp, !self.f32, 0b00, opcode, reg, v, rm, 0, false, false, esize);
    }

    /// A VEX-encoded instruction (the three-byte form) with prefix `pp`, W `w`, 256-bit when
    /// `long`; registers 0-15.
    #[allow(clippy::too_many_arguments)]
    fn vex(&mut self, map: u8, pp: u8, w: bool, long: bool, opcode: u8, reg: u8, v: u8, rm: Rm) {
        let b = match rm {
            Rm::Reg(r) => (r >> 3) & 1,
            Rm::Mem(Mem::Row(base, _) | Mem::At(base, _)) => (base >> 3) & 1,
            Rm::Mem(Mem::Pool(_)) => 0,
        };
        let r = (reg >> 3) & 1;
        let b1 = ((r ^ 1) << 7) | (1 << 6) | ((b ^ 1) << 5) | map;
        let b2 = (u8::from(w) << 7) | ((!v & 0xF) << 3) | (u8::from(long) << 2) | pp;
        self.bytes(&[0xC4, b1, b2, opcode]);
        match rm {
            Rm::Reg(r) => self.code.push(0xC0 | ((reg & 7) << 3) | (r & 7)),
            Rm::Mem(m) => self.modrm_mem(reg, m, 0),
        }
    }

    /// An EVEX-encoded instruction with prefix `pp`, W `w`, vector length `ll` and compressed
    /// displacements scaled by `n`.
    #[allow(clippy::too_many_arguments)]
    fn evex_with(
        &mut self,
        map: u8,
        pp: u8,
        w: bool,
        ll: u8,
        opcode: u8,
        reg: u8,
        v: u8,
        rm: Rm,
        mask: u8,
        zero: bool,
        bcst: bool,
        n: i32,
    ) {
        let (b, x) = match rm {
            Rm::Reg(r) => ((r >> 3) & 1, (r >> 4) & 1),
            Rm::Mem(Mem::Row(base, _) | Mem::At(base, _)) => ((base >> 3) & 1, 0),
            Rm::Mem(Mem::Pool(_)) => (0, 0),
        };
        let (r, r2) = ((reg >> 3) & 1, (reg >> 4) & 1);
        let p0 = ((r ^ 1) << 7) | ((x ^ 1) << 6) | ((b ^ 1) << 5) | ((r2 ^ 1) << 4) | map;
        let p1 = (u8::from(w) << 7) | ((!v & 0xF) << 3) | (1 << 2) | pp;
        let p2 = (u8::from(zero) << 7) | (ll << 5) | (u8::from(bcst) << 4) | ((((v >> 4) & 1) ^ 1) << 3) | mask;
        self.bytes(&[0x62, p0, p1, p2, opcode]);
        match rm {
            Rm::Reg(r) => self.code.push(0xC0 | ((reg & 7) << 3) | (r & 7)),
            Rm::Mem(m) => self.modrm_mem(reg, m, n),
        }
    }

    /// `vmovupd zmm{mask}{z}, m` (`vmovups`); AVX2: `vmovupd ymm, m`, or under a mask
    /// `vmaskmovpd ymm, ymm15, m` (`vmaskmovps`).
    fn load(&mut self, dst: u8, mem: Mem, mask: u8) {
        self.emit(Emitted::Load { dst, mem, mask });
    }

    fn enc_load(&mut self, dst: u8, m: Mem, mask: u8) {
        if self.isa == Isa::Avx2 && mask != 0 {
            let opcode = if self.f32 { 0x2C } else { 0x2D };
            self.vex(MAP_0F38, 0b01, false, true, opcode, dst, AVX2_MASK, Rm::Mem(m));
            return;
        }
        self.enc_vector(MAP_0F, 0x10, dst, 0, Rm::Mem(m), mask, mask != 0, false);
    }

    /// `vmovupd m{mask}, zmm` (`vmovups`); AVX2: `vmovupd m, ymm`, or under a mask
    /// `vmaskmovpd m, ymm15, ymm` (`vmaskmovps`).
    fn store(&mut self, mem: Mem, src: u8, mask: u8) {
        self.emit(Emitted::Store { mem, src, mask });
    }

    fn enc_store(&mut self, m: Mem, src: u8, mask: u8) {
        if self.isa == Isa::Avx2 && mask != 0 {
            let opcode = if self.f32 { 0x2E } else { 0x2F };
            self.vex(MAP_0F38, 0b01, false, true, opcode, src, AVX2_MASK, Rm::Mem(m));
            return;
        }
        self.enc_vector(MAP_0F, 0x11, src, 0, Rm::Mem(m), mask, false, false);
    }

    /// `vbroadcastsd zmm, m64` (`vbroadcastss zmm, m32`).
    fn broadcast(&mut self, dst: u8, mem: Mem) {
        self.emit(Emitted::Broadcast { dst, mem });
    }

    /// `REX.W`-prefixed instruction with ModRM register `reg` and register r/m `rm`.
    fn rex_rr(&mut self, opcode: u8, reg: u8, rm: u8) {
        self.emit(Emitted::RegReg { opcode, reg, rm });
    }

    /// `op r64, imm8` (one of [`ADD_IMM8`], [`SUB_IMM8`], [`CMP_IMM8`], [`SHL_IMM8`]).
    fn reg_imm8(&mut self, (opcode, ext): (u8, u8), reg: u8, imm: u8) {
        self.emit(Emitted::RegImm8 { opcode, ext, reg, imm: imm as i8 });
    }

    /// `mov r64, [base + disp]`.
    fn mov_load(&mut self, dst: u8, base: u8, disp: i32) {
        self.emit(Emitted::MovLoad { dst, base, disp });
    }

    fn push(&mut self, r: u8) {
        self.emit(Emitted::Push(r));
    }

    fn pop(&mut self, r: u8) {
        self.emit(Emitted::Pop(r));
    }

    /// A `jcc rel32` (`cc` the condition's low opcode nibble) whose target is patched later.
    fn jcc(&mut self, cc: u8) -> usize {
        self.emit(Emitted::Jcc { cc, target: usize::MAX });
        self.code.len() - 4
    }

    /// Points the jump whose rel32 is at `at` to `target`.
    fn patch(&mut self, at: usize, target: usize) {
        self.patch_rel(at, target);
        let jump =
            self.listing.iter_mut().rev().find(|(start, e)| *start + 2 == at && matches!(e, Emitted::Jcc { .. }));
        if let Some((_, Emitted::Jcc { target: t, .. })) = jump {
            *t = target;
        }
    }

    /// Points the rel32 at `at` to `target`.
    fn patch_rel(&mut self, at: usize, target: usize) {
        let rel = target as i64 - (at as i64 + 4);
        self.code[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
    }

    /// Sets the imm32 of instruction `k` of the listing, a [`Emitted::RegImm32`], to `imm`.
    fn set_imm32(&mut self, k: usize, imm: i32) {
        let (start, e) = &mut self.listing[k];
        let Emitted::RegImm32 { imm: old, .. } = e else { unreachable!("an instruction with an imm32") };
        *old = imm;
        // The imm32 follows REX, opcode and ModRM.
        self.code[*start + 3..*start + 7].copy_from_slice(&imm.to_le_bytes());
    }

    /// Appends the constant pool (8-byte aligned) and resolves the references to it.
    fn finish(mut self) -> Routine {
        while !self.code.len().is_multiple_of(8) {
            self.code.push(0xCC);
        }
        let pool = self.code.len();
        for c in if self.f32 { POOL_F32 } else { POOL } {
            self.bytes(&c.to_le_bytes());
        }
        for (at, k, end) in std::mem::take(&mut self.pool_refs) {
            let rel = (pool + 8 * k) as i64 - end as i64;
            self.code[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
        }
        Routine { isa: self.isa, f32: self.f32, code: self.code, listing: self.listing, pool }
    }
}

/// The routine of instructions `list` in `isa` for elements of f32 (else f64), encoded as
/// [`assemble`] encodes them: for tests that encode any instruction the assembler can.
pub fn replay(isa: Isa, f32: bool, list: &[Emitted]) -> Routine {
    let mut a = Asm { isa, f32, ..Asm::default() };
    for &e in list {
        a.emit(e);
    }
    a.finish()
}

const JG: u8 = 0xF;
const JLE: u8 = 0xE;

// ---- register allocation and the body ------------------------------------------------------

/// A value the body computes or reads: an operation's result, a memory slot's element, or a
/// constant (in a register only where an instruction cannot read it from memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Val {
    Op(u32),
    Slot(u16),
    Const(u16),
    /// An entry of the constant pool (AVX2's sign and absolute-value masks).
    Pool(usize),
}

/// Emits the body of the loop: one vector of positions (under `mask` when not 0).
struct Body<'p> {
    p: &'p Program,
    /// Per value, the operations using it, in order.
    uses: HashMap<Val, Vec<usize>>,
    /// Stack slots of spilled results (their count sizes the frame), the same in each body.
    spill: HashMap<u32, i32>,
    /// Registers allocated to values: the first `nregs` (the others accumulate sums along the
    /// row).
    nregs: u8,
    /// Per reduction along the row, its accumulator registers (two with AVX2: the lanes of
    /// Cranelift's order are two of its vectors; one with AVX-512) and its 64 bytes of stack
    /// (at `64 * index`), where the spills start after.
    accs: Vec<(u16, u8, u8)>,
    /// Which vector of a step the body computes (AVX2 with sums along the row takes two
    /// vectors a step): its positions are `half * vector` on.
    half: u8,
}

/// The register state while emitting one body.
struct Regs {
    holder: [Option<Val>; 32],
    of: HashMap<Val, u8>,
    /// Results stored in their stack slots in this body (a step's values, not an earlier one's).
    stored: HashSet<u32>,
}

impl<'p> Body<'p> {
    fn new(p: &'p Program, a: &Asm) -> Body<'p> {
        let mut uses: HashMap<Val, Vec<usize>> = HashMap::default();
        for (k, op) in p.ops.iter().enumerate() {
            for s in &op.srcs {
                let v = match *s {
                    Src::Val(v) => Val::Op(v),
                    Src::Mem(m) => Val::Slot(m),
                    Src::Const(c) => Val::Const(c),
                    Src::Index => continue,
                };
                let list = uses.entry(v).or_default();
                if list.last() != Some(&k) {
                    list.push(k);
                }
            }
        }
        // The registers past the values': AVX2's mask, then the accumulators from the top.
        let top = if a.isa == Isa::Avx2 { AVX2_MASK } else { a.vregs() };
        let per = if a.isa == Isa::Avx2 { 2 } else { 1 };
        let mut next = top;
        let accs: Vec<(u16, u8, u8)> = (0..p.partials.len() as u16)
            .filter(|&q| p.partials[usize::from(q)].inner == Inner::Broadcast)
            .map(|q| {
                next -= per;
                (q, next, next + per - 1)
            })
            .collect();
        Body { p, uses, spill: HashMap::default(), nregs: next, accs, half: 0 }
    }

    /// Bytes from a row's current position to the vector this body computes.
    fn row_disp(&self, a: &Asm) -> i32 {
        i32::from(self.half) * a.vbytes()
    }

    /// Index in the address table of reduction `q`'s partial results.
    fn partial_entry(&self, q: u16) -> u16 {
        self.p.slots.len() as u16 + q
    }

    /// Stack offset of the `i`th accumulator's 64 bytes.
    fn acc_stack(i: usize) -> i32 {
        64 * i as i32
    }

    /// The first use of `v` after operation `k` (`usize::MAX`: none).
    fn next_use(&self, v: Val, k: usize) -> usize {
        let list = self.uses.get(&v).map_or(&[][..], Vec::as_slice);
        let i = list.partition_point(|&u| u <= k);
        list.get(i).copied().unwrap_or(usize::MAX)
    }

    /// Address of slot `m` at the current position: its register, or r11 loaded from the table.
    fn slot_base(&self, a: &mut Asm, m: u16) -> u8 {
        match SLOT_REGS.get(usize::from(m)) {
            Some(&r) => r,
            None => {
                a.mov_load(R11, RDI, i32::from(m) * 8);
                R11
            }
        }
    }

    /// A free register for a value wanted at operation `k`, storing or dropping the value
    /// needed furthest ahead when none is free (never one of `pinned`).
    fn alloc(&mut self, a: &mut Asm, regs: &mut Regs, k: usize, pinned: &[u8]) -> u8 {
        if let Some(r) = (0..self.nregs).find(|&r| regs.holder[r as usize].is_none()) {
            return r;
        }
        let (r, v) = (0..self.nregs)
            .filter(|r| !pinned.contains(r))
            .filter_map(|r| regs.holder[r as usize].map(|v| (r, v)))
            .max_by_key(|&(_, v)| self.next_use(v, k.saturating_sub(1)))
            .expect("at most three registers are pinned");
        if let Val::Op(j) = v
            && !regs.stored.contains(&j)
        {
            let next = 64 * (self.accs.len() + self.spill.len()) as i32;
            let at = *self.spill.entry(j).or_insert(next);
            a.store(Mem::At(RSP, at), r, 0);
            regs.stored.insert(j);
        }
        regs.of.remove(&v);
        regs.holder[r as usize] = None;
        r
    }

    /// The register holding `v` at operation `k`, loading it when it is not in one.
    fn get(&mut self, a: &mut Asm, regs: &mut Regs, v: Val, k: usize, mask: u8, pinned: &[u8]) -> u8 {
        if let Some(&r) = regs.of.get(&v) {
            return r;
        }
        let r = self.alloc(a, regs, k, pinned);
        match v {
            Val::Slot(m) => {
                let base = self.slot_base(a, m);
                match self.p.slots[m as usize].inner {
                    Inner::Broadcast => a.broadcast(r, Mem::At(base, 0)),
                    _ => a.load(r, Mem::Row(base, self.row_disp(a)), mask),
                }
            }
            Val::Op(j) => {
                let at = self.spill[&j];
                a.load(r, Mem::At(RSP, at), 0);
            }
            Val::Const(c) => a.broadcast(r, Mem::At(RSI, i32::from(c) * 8)),
            Val::Pool(k) => a.broadcast(r, Mem::Pool(k)),
        }
        regs.holder[r as usize] = Some(v);
        regs.of.insert(v, r);
        r
    }

    /// Frees the registers of values not used after operation `k`.
    fn release(&self, regs: &mut Regs, vals: &[Val], k: usize) {
        for &v in vals {
            if self.next_use(v, k) == usize::MAX
                && let Some(r) = regs.of.remove(&v)
            {
                regs.holder[r as usize] = None;
            }
        }
    }

    /// Emits the body computing vector `half` of a step (see [`Body::half`]).
    fn emit(&mut self, a: &mut Asm, mask: u8, half: u8) {
        self.half = half;
        let mut regs = Regs { holder: [None; 32], of: HashMap::default(), stored: HashSet::default() };
        let p = self.p;
        for (k, op) in p.ops.iter().enumerate() {
            let kind = arith(op).expect("eligible programs only");
            let val = |s: Src| match s {
                Src::Val(v) => Val::Op(v),
                Src::Mem(m) => Val::Slot(m),
                Src::Const(c) => Val::Const(c),
                Src::Index => unreachable!("eligible programs read no positions"),
            };
            let mut pinned: Vec<u8> = Vec::with_capacity(3);
            // The first input, in a register.
            let a0 = self.get(a, &mut regs, val(op.srcs[0]), k, mask, &pinned);
            pinned.push(a0);
            // The second, in a register, or broadcast from the constants when not in one.
            let a1 = op.srcs.get(1).map(|&s| match (val(s), s) {
                (v, Src::Const(c))
                    if !regs.of.contains_key(&v) && a.isa == Isa::Avx512 && !matches!(kind, Arith::MaxMin(_)) =>
                {
                    Rm::Mem(Mem::At(RSI, i32::from(c) * 8))
                }
                (v, _) => Rm::Reg(self.get(a, &mut regs, v, k, mask, &pinned)),
            });
            if let Some(Rm::Reg(r)) = a1 {
                pinned.push(r);
            }
            // AVX2's sign or absolute-value mask, in a register (kept there while one is free).
            let bits = match kind {
                Arith::Negative if a.isa == Isa::Avx2 => Some(SIGN_MASK),
                Arith::Absolute if a.isa == Isa::Avx2 => Some(ABS_MASK),
                _ => None,
            };
            let bits = bits.map(|b| self.get(a, &mut regs, Val::Pool(b), k, mask, &pinned));
            if let Some(r) = bits {
                pinned.push(r);
            }
            let inputs: Vec<Val> = op.srcs.iter().map(|&s| val(s)).collect();
            // AVX2's NaN mask of `maximum` and `minimum`: a register of its own.
            let nan_mask = (matches!(kind, Arith::MaxMin(_)) && a.isa == Isa::Avx2).then(|| {
                let mut temp = || {
                    let r = self.alloc(a, &mut regs, k, &pinned);
                    regs.holder[r as usize] = Some(Val::Pool(usize::MAX)); // taken until the op's end
                    pinned.push(r);
                    r
                };
                (temp(), temp())
            });
            let dst = if matches!(kind, Arith::Reciprocal | Arith::Reduce(_) | Arith::MaxMin(_)) {
                // Written before the input is read (1 to divide, partial results to combine
                // with): another register.
                self.alloc(a, &mut regs, k, &pinned)
            } else {
                // Reusing an input's register is fine: the result is written last.
                self.release(&mut regs, &inputs, k);
                self.alloc(a, &mut regs, k, &pinned)
            };
            match kind {
                Arith::Binary(opc) => {
                    let (rm, bcst) = match a1.expect("binary") {
                        Rm::Mem(m) => (Rm::Mem(m), true),
                        r => (r, false),
                    };
                    a.vop(MAP_0F, opc, dst, a0, rm, 0, false, bcst);
                }
                Arith::Sqrt => a.vop(MAP_0F, 0x51, dst, 0, Rm::Reg(a0), 0, false, false),
                // NumPy's: the second input where the first is not NaN and not >= (<=) it,
                // else the first (ties and NaNs in the first keep the first).
                Arith::MaxMin(predicate) => {
                    let Some(Rm::Reg(y)) = a1 else { unreachable!("the second input is in a register") };
                    match nan_mask {
                        Some((t1, t2)) => {
                            // t1 = a0 ordered & predicate(a0, y); dst = t1 ? y : a0
                            a.cmp(t1, a0, a0, 0, ORDERED);
                            a.cmp(t2, a0, y, 0, predicate);
                            a.vop(MAP_0F, 0x54, t1, t1, Rm::Reg(t2), 0, false, false);
                            a.blendv(dst, a0, y, t1);
                            regs.holder[t1 as usize] = None;
                            regs.holder[t2 as usize] = None;
                        }
                        None => {
                            // k2 = a0 ordered; k2 &= predicate(a0, y); vblendmpd dst {k2}, a0, y
                            a.cmp(2, a0, a0, 0, ORDERED);
                            a.cmp(2, a0, y, 2, predicate);
                            a.vop(MAP_0F38, 0x65, dst, a0, Rm::Reg(y), 2, false, false);
                        }
                    }
                    self.release(&mut regs, &inputs, k);
                }
                // vxorpd / vandpd with the mask in a register (AVX2), vpxorq / vpandq with it
                // broadcast from the pool (AVX-512 Foundation has no vxorpd).
                Arith::Negative | Arith::Absolute if a.isa == Isa::Avx2 => {
                    let opc = if kind == Arith::Negative { 0x57 } else { 0x54 };
                    a.vop(MAP_0F, opc, dst, a0, Rm::Reg(bits.expect("loaded above")), 0, false, false);
                }
                Arith::Negative => a.vop(MAP_0F, 0xEF, dst, a0, Rm::Mem(Mem::Pool(SIGN_MASK)), 0, false, true),
                Arith::Absolute => a.vop(MAP_0F, 0xDB, dst, a0, Rm::Mem(Mem::Pool(ABS_MASK)), 0, false, true),
                Arith::Square => a.vop(MAP_0F, MUL, dst, a0, Rm::Reg(a0), 0, false, false),
                Arith::Reciprocal => {
                    a.broadcast(dst, Mem::Pool(ONE));
                    a.vop(MAP_0F, DIV, dst, dst, Rm::Reg(a0), 0, false, false);
                    self.release(&mut regs, &inputs, k);
                }
                Arith::Reduce(opc) => {
                    let Dst::Reduce(q) = op.dst else { unreachable!("eligible: reductions reduce") };
                    let disp = self.row_disp(a);
                    match self.accs.iter().position(|&(r, _, _)| r == q) {
                        // Along the row: into the accumulator; the last positions' values are
                        // kept for the sequential sum after the lanes'.
                        Some(i) if mask == 0 => {
                            let acc = if half == 0 { self.accs[i].1 } else { self.accs[i].2 };
                            a.vop(MAP_0F, opc, acc, acc, Rm::Reg(a0), 0, false, false);
                        }
                        Some(i) => a.store(Mem::At(RSP, Self::acc_stack(i) + disp), a0, 0),
                        // Across rows: each position into its own partial result.
                        None => {
                            let base = self.slot_base(a, self.partial_entry(q));
                            a.load(dst, Mem::Row(base, disp), mask);
                            a.vop(MAP_0F, opc, dst, dst, Rm::Reg(a0), 0, false, false);
                            let base = self.slot_base(a, self.partial_entry(q));
                            a.store(Mem::Row(base, disp), dst, mask);
                        }
                    }
                    self.release(&mut regs, &inputs, k);
                }
                // vmovapd
                Arith::Copy => {
                    if dst != a0 {
                        a.vop(MAP_0F, 0x28, dst, 0, Rm::Reg(a0), 0, false, false);
                    }
                }
            }
            let result = Val::Op(k as u32);
            if let Dst::Store(m) = op.dst {
                let base = self.slot_base(a, m);
                a.store(Mem::Row(base, self.row_disp(a)), dst, mask);
                // The slot's element read earlier is stale now.
                if let Some(r) = regs.of.remove(&Val::Slot(m)) {
                    regs.holder[r as usize] = None;
                }
            }
            // A result used later keeps its register; one only stored leaves it free.
            if self.next_use(result, k) != usize::MAX {
                regs.holder[dst as usize] = Some(result);
                regs.of.insert(result, dst);
            }
        }
    }
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
static AUDIT: OnceLock<fn(&Routine)> = OnceLock::new();

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `f` assembles for `isa` and elements of f32 (else f64).
    fn encode(isa: Isa, f32: bool, f: &dyn Fn(&mut Asm)) -> Vec<u8> {
        let mut a = Asm { isa, f32, ..Asm::default() };
        f(&mut a);
        a.code
    }

    /// Encodings checked against an assembler's (llvm-mc, GNU as).
    #[test]
    fn instructions_encode_as_an_assembler_does() {
        let enc = |f: &dyn Fn(&mut Asm)| encode(Isa::Avx512, false, f);
        // vaddpd zmm1, zmm2, zmm3
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, ADD, 1, 2, Rm::Reg(3), 0, false, false)),
            [0x62, 0xF1, 0xED, 0x48, 0x58, 0xCB]
        );
        // vdivpd zmm17, zmm30, zmm9
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, DIV, 17, 30, Rm::Reg(9), 0, false, false)),
            [0x62, 0xC1, 0x8D, 0x40, 0x5E, 0xC9]
        );
        // vsubpd zmm25, zmm3, zmm20
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, SUB, 25, 3, Rm::Reg(20), 0, false, false)),
            [0x62, 0x21, 0xE5, 0x48, 0x5C, 0xCC]
        );
        // vmulpd zmm4, zmm5, qword ptr [rsi + 24]{1to8}
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, MUL, 4, 5, Rm::Mem(Mem::At(RSI, 24)), 0, false, true)),
            [0x62, 0xF1, 0xD5, 0x58, 0x59, 0x66, 0x03]
        );
        // vmovupd zmm7 {k1} {z}, zmmword ptr [r13 + 8*rcx]
        assert_eq!(enc(&|a| a.load(7, Mem::Row(R13, 0), 1)), [0x62, 0xD1, 0xFD, 0xC9, 0x10, 0x7C, 0xCD, 0x00]);
        // vmovupd zmmword ptr [r8 + 8*rcx] {k1}, zmm22
        assert_eq!(enc(&|a| a.store(Mem::Row(R8, 0), 22, 1)), [0x62, 0xC1, 0xFD, 0x49, 0x11, 0x34, 0xC8]);
        // vmovupd zmmword ptr [rsp + 128], zmm3
        assert_eq!(enc(&|a| a.store(Mem::At(RSP, 128), 3, 0)), [0x62, 0xF1, 0xFD, 0x48, 0x11, 0x5C, 0x24, 0x02]);
        // vbroadcastsd zmm30, qword ptr [rsi + 2000]
        assert_eq!(
            enc(&|a| a.broadcast(30, Mem::At(RSI, 2000))),
            [0x62, 0x62, 0xFD, 0x48, 0x19, 0xB6, 0xD0, 0x07, 0x00, 0x00]
        );
        // vsqrtpd zmm2, zmm18
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, 0x51, 2, 0, Rm::Reg(18), 0, false, false)),
            [0x62, 0xB1, 0xFD, 0x48, 0x51, 0xD2]
        );
        // vpandq zmm1, zmm2, qword ptr [rsi]{1to8}
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, 0xDB, 1, 2, Rm::Mem(Mem::At(RSI, 0)), 0, false, true)),
            [0x62, 0xF1, 0xED, 0x58, 0xDB, 0x0E]
        );
        // vmovapd zmm5, zmm21
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, 0x28, 5, 0, Rm::Reg(21), 0, false, false)),
            [0x62, 0xB1, 0xFD, 0x48, 0x28, 0xED]
        );
        // vmovupd zmm0, zmmword ptr [rbp + 8*rcx]
        assert_eq!(enc(&|a| a.load(0, Mem::Row(RBP, 0), 0)), [0x62, 0xF1, 0xFD, 0x48, 0x10, 0x44, 0xCD, 0x00]);
        // vbroadcastsd zmm3, qword ptr [r11] / [rbp] / [r12]
        assert_eq!(enc(&|a| a.broadcast(3, Mem::At(R11, 0))), [0x62, 0xD2, 0xFD, 0x48, 0x19, 0x1B]);
        assert_eq!(enc(&|a| a.broadcast(3, Mem::At(RBP, 0))), [0x62, 0xF2, 0xFD, 0x48, 0x19, 0x5D, 0x00]);
        assert_eq!(enc(&|a| a.broadcast(3, Mem::At(R12, 0))), [0x62, 0xD2, 0xFD, 0x48, 0x19, 0x1C, 0x24]);
        // vpxorq zmm1, zmm2, qword ptr [rip + 16]{1to8}, the pool 16 bytes past the instruction
        let mut a = Asm::default();
        a.vop(MAP_0F, 0xEF, 1, 2, Rm::Mem(Mem::Pool(SIGN_MASK)), 0, false, true);
        a.bytes(&[0xCC; 6]);
        let code = a.finish().code;
        assert_eq!(code[..10], [0x62, 0xF1, 0xED, 0x58, 0xEF, 0x0D, 0x06, 0x00, 0x00, 0x00]);
        assert_eq!(code[16..24], 0x8000_0000_0000_0000u64.to_le_bytes());
        // mov rax, rdx; sub rax, rcx; cmp rcx, rax
        assert_eq!(enc(&|a| a.rex_rr(0x89, RDX, RAX)), [0x48, 0x89, 0xD0]);
        assert_eq!(enc(&|a| a.rex_rr(0x29, RCX, RAX)), [0x48, 0x29, 0xC8]);
        assert_eq!(enc(&|a| a.rex_rr(0x39, RAX, RCX)), [0x48, 0x39, 0xC1]);
        // vmovsd xmm31, qword ptr [r8]; vaddsd xmm31, xmm31, qword ptr [rsp + 72]
        assert_eq!(enc(&|a| a.scalar(0x10, 31, 0, Rm::Mem(Mem::At(R8, 0)))), [0x62, 0x41, 0xFF, 0x08, 0x10, 0x38]);
        assert_eq!(
            enc(&|a| a.scalar(ADD, 31, 31, Rm::Mem(Mem::At(RSP, 72)))),
            [0x62, 0x61, 0x87, 0x00, 0x58, 0x7C, 0x24, 0x09]
        );
        // vmulsd xmm30, xmm30, qword ptr [rsp + 8]; vmovsd qword ptr [rbx], xmm31
        assert_eq!(
            enc(&|a| a.scalar(MUL, 30, 30, Rm::Mem(Mem::At(RSP, 8)))),
            [0x62, 0x61, 0x8F, 0x00, 0x59, 0x74, 0x24, 0x01]
        );
        assert_eq!(enc(&|a| a.scalar(0x11, 31, 0, Rm::Mem(Mem::At(RBX, 0)))), [0x62, 0x61, 0xFF, 0x08, 0x11, 0x3B]);
        // f32: vaddps zmm1, zmm2, zmm3; vdivps zmm17, zmm30, dword ptr [rsi + 24]{1to16}
        let enc32 = |f: &dyn Fn(&mut Asm)| encode(Isa::Avx512, true, f);
        assert_eq!(
            enc32(&|a| a.vop(MAP_0F, ADD, 1, 2, Rm::Reg(3), 0, false, false)),
            [0x62, 0xF1, 0x6C, 0x48, 0x58, 0xCB]
        );
        assert_eq!(
            enc32(&|a| a.vop(MAP_0F, DIV, 17, 30, Rm::Mem(Mem::At(RSI, 24)), 0, false, true)),
            [0x62, 0xE1, 0x0C, 0x50, 0x5E, 0x4E, 0x06]
        );
        // vmovups zmm7 {k1} {z}, zmmword ptr [r13 + 4*rcx]; vmovups zmmword ptr [r8 + 4*rcx] {k1}, zmm22
        assert_eq!(enc32(&|a| a.load(7, Mem::Row(R13, 0), 1)), [0x62, 0xD1, 0x7C, 0xC9, 0x10, 0x7C, 0x8D, 0x00]);
        assert_eq!(enc32(&|a| a.store(Mem::Row(R8, 0), 22, 1)), [0x62, 0xC1, 0x7C, 0x49, 0x11, 0x34, 0x88]);
        // vbroadcastss zmm30, dword ptr [rsi + 2000]; vsqrtps zmm2, zmm18
        assert_eq!(
            enc32(&|a| a.broadcast(30, Mem::At(RSI, 2000))),
            [0x62, 0x62, 0x7D, 0x48, 0x18, 0xB6, 0xD0, 0x07, 0x00, 0x00]
        );
        assert_eq!(
            enc32(&|a| a.vop(MAP_0F, 0x51, 2, 0, Rm::Reg(18), 0, false, false)),
            [0x62, 0xB1, 0x7C, 0x48, 0x51, 0xD2]
        );
        // vpandd zmm1, zmm2, dword ptr [rsi]{1to16}; vmovaps zmm5, zmm21
        assert_eq!(
            enc32(&|a| a.vop(MAP_0F, 0xDB, 1, 2, Rm::Mem(Mem::At(RSI, 0)), 0, false, true)),
            [0x62, 0xF1, 0x6D, 0x58, 0xDB, 0x0E]
        );
        assert_eq!(
            enc32(&|a| a.vop(MAP_0F, 0x28, 5, 0, Rm::Reg(21), 0, false, false)),
            [0x62, 0xB1, 0x7C, 0x48, 0x28, 0xED]
        );
        // vmovss xmm31, dword ptr [r8]; vaddss xmm31, xmm31, dword ptr [rsp + 72]; vmovss dword ptr [rbx], xmm31
        assert_eq!(enc32(&|a| a.scalar(0x10, 31, 0, Rm::Mem(Mem::At(R8, 0)))), [0x62, 0x41, 0x7E, 0x08, 0x10, 0x38]);
        assert_eq!(
            enc32(&|a| a.scalar(ADD, 31, 31, Rm::Mem(Mem::At(RSP, 72)))),
            [0x62, 0x61, 0x06, 0x00, 0x58, 0x7C, 0x24, 0x12]
        );
        assert_eq!(enc32(&|a| a.scalar(0x11, 31, 0, Rm::Mem(Mem::At(RBX, 0)))), [0x62, 0x61, 0x7E, 0x08, 0x11, 0x3B]);
        // AVX2, in the three-byte VEX form ({vex3} to the assembler)
        let enc2 = |f32: bool, f: &dyn Fn(&mut Asm)| encode(Isa::Avx2, f32, f);
        type Case<'a> = (bool, &'a dyn Fn(&mut Asm), &'a [u8]);
        let cases: [Case; 12] = [
            // vaddpd ymm1, ymm2, ymm3; vdivpd ymm9, ymm14, ymm10
            (false, &|a| a.vop(MAP_0F, ADD, 1, 2, Rm::Reg(3), 0, false, false), &[0xC4, 0xE1, 0x6D, 0x58, 0xCB]),
            (false, &|a| a.vop(MAP_0F, DIV, 9, 14, Rm::Reg(10), 0, false, false), &[0xC4, 0x41, 0x0D, 0x5E, 0xCA]),
            // vmaskmovpd ymm7, ymm15, [r13 + 8*rcx]; vmaskmovpd [r8 + 8*rcx], ymm15, ymm12
            (false, &|a| a.load(7, Mem::Row(R13, 0), 1), &[0xC4, 0xC2, 0x05, 0x2D, 0x7C, 0xCD, 0x00]),
            (false, &|a| a.store(Mem::Row(R8, 0), 12, 1), &[0xC4, 0x42, 0x05, 0x2F, 0x24, 0xC8]),
            // vbroadcastsd ymm3, [rsi + 16]; vxorpd ymm1, ymm2, ymm14
            (false, &|a| a.broadcast(3, Mem::At(RSI, 16)), &[0xC4, 0xE2, 0x7D, 0x19, 0x5E, 0x10]),
            (false, &|a| a.vop(MAP_0F, 0x57, 1, 2, Rm::Reg(14), 0, false, false), &[0xC4, 0xC1, 0x6D, 0x57, 0xCE]),
            // vmovupd ymm15, [r11 + 32]; vmovupd [rsp + 128], ymm3
            (false, &|a| a.load(15, Mem::At(R11, 32), 0), &[0xC4, 0x41, 0x7D, 0x10, 0x7B, 0x20]),
            (false, &|a| a.store(Mem::At(RSP, 128), 3, 0), &[0xC4, 0xE1, 0x7D, 0x11, 0x9C, 0x24, 0x80, 0, 0, 0]),
            // vsqrtpd ymm2, ymm11
            (false, &|a| a.vop(MAP_0F, 0x51, 2, 0, Rm::Reg(11), 0, false, false), &[0xC4, 0xC1, 0x7D, 0x51, 0xD3]),
            // f32: vmaskmovps ymm7, ymm15, [rbx + 4*rcx]; vandps ymm1, ymm2, ymm14; vbroadcastss ymm3, [rsi + 16]
            (true, &|a| a.load(7, Mem::Row(RBX, 0), 1), &[0xC4, 0xE2, 0x05, 0x2C, 0x3C, 0x8B]),
            (true, &|a| a.vop(MAP_0F, 0x54, 1, 2, Rm::Reg(14), 0, false, false), &[0xC4, 0xC1, 0x6C, 0x54, 0xCE]),
            (true, &|a| a.broadcast(3, Mem::At(RSI, 16)), &[0xC4, 0xE2, 0x7D, 0x18, 0x5E, 0x10]),
        ];
        for (i, (f32, f, want)) in cases.into_iter().enumerate() {
            assert_eq!(enc2(f32, f), want, "AVX2 case {i}");
        }
        // vcmppd k2, zmm1, zmm1 and vcmppd k2 {k2}, zmm1, zmm3 (the predicate byte follows);
        // vblendmpd zmm0 {k2}, zmm1, zmm3; vblendmps; vcmpps k2 {k2}, zmm17, zmm3
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, 0xC2, 2, 1, Rm::Reg(1), 0, false, false)),
            [0x62, 0xF1, 0xF5, 0x48, 0xC2, 0xD1]
        );
        assert_eq!(
            enc(&|a| a.vop(MAP_0F, 0xC2, 2, 1, Rm::Reg(3), 2, false, false)),
            [0x62, 0xF1, 0xF5, 0x4A, 0xC2, 0xD3]
        );
        assert_eq!(
            enc(&|a| a.vop(MAP_0F38, 0x65, 0, 1, Rm::Reg(3), 2, false, false)),
            [0x62, 0xF2, 0xF5, 0x4A, 0x65, 0xC3]
        );
        assert_eq!(
            enc32(&|a| a.vop(MAP_0F38, 0x65, 0, 1, Rm::Reg(3), 2, false, false)),
            [0x62, 0xF2, 0x75, 0x4A, 0x65, 0xC3]
        );
        assert_eq!(
            enc32(&|a| a.vop(MAP_0F, 0xC2, 2, 17, Rm::Reg(3), 2, false, false)),
            [0x62, 0xF1, 0x74, 0x42, 0xC2, 0xD3]
        );
        // AVX2: vandpd ymm4, ymm4, ymm6; vblendvpd ymm0, ymm1, ymm3 (ymm4 in the last byte)
        assert_eq!(
            enc2(false, &|a| a.vop(MAP_0F, 0x54, 4, 4, Rm::Reg(6), 0, false, false)),
            [0xC4, 0xE1, 0x5D, 0x54, 0xE6]
        );
        assert_eq!(
            enc2(false, &|a| a.vop(MAP_0F3A, 0x4B, 0, 1, Rm::Reg(3), 0, false, false)),
            [0xC4, 0xE3, 0x75, 0x4B, 0xC3]
        );
        // mov r12, qword ptr [rdi + 40]
        assert_eq!(enc(&|a| a.mov_load(R12, RDI, 40)), [0x4C, 0x8B, 0x67, 0x28]);
        // mov r11, qword ptr [rdi + 4000]
        assert_eq!(enc(&|a| a.mov_load(R11, RDI, 4000)), [0x4C, 0x8B, 0x9F, 0xA0, 0x0F, 0x00, 0x00]);
        // push r13; pop rbx
        assert_eq!(enc(&|a| a.push(R13)), [0x41, 0x55]);
        assert_eq!(enc(&|a| a.pop(RBX)), [0x5B]);
    }

    /// A program of `n` products of memory slots, all live until a chain of subtractions takes
    /// them from the last.
    fn live(n: u16) -> Program {
        use crate::program::{Op, SlotInfo};
        let f = |opcode, srcs: &[Src], dst| Op {
            opcode,
            dtype: DType::F64,
            in_dtype: DType::F64,
            srcs: srcs.iter().copied().collect(),
            dst,
        };
        let mut ops: Vec<Op> =
            (0..n).map(|k| f(vm_ir::Opcode::Multiply, &[Src::Mem(k), Src::Const(0)], Dst::Value)).collect();
        let mut acc = u32::from(n) - 1;
        for k in (0..n - 1).rev() {
            let dst = if k == 0 { Dst::Store(n) } else { Dst::Value };
            ops.push(f(vm_ir::Opcode::Subtract, &[Src::Val(u32::from(k)), Src::Val(acc)], dst));
            acc = ops.len() as u32 - 1;
        }
        let unit = SlotInfo { dtype: DType::F64, inner: Inner::Unit };
        Program { ndim: 1, slots: vec![unit; usize::from(n) + 1], partials: vec![], consts: vec![DType::F64], ops }
    }

    /// The stack frame of a routine: the `sub rsp, imm32` after the six pushes (10 bytes).
    fn frame(code: &[u8]) -> i32 {
        assert_eq!(code[10..13], [0x48, 0x81, 0xEC]);
        i32::from_le_bytes(code[13..17].try_into().unwrap())
    }

    #[test]
    fn values_beyond_the_registers_are_spilled_and_the_rest_are_not() {
        assert!(eligible(&live(30), Isa::Avx512) && eligible(&live(48), Isa::Avx2));
        let routine = |n, isa| assemble(&live(n), isa).expect("a frame under a page");
        assert_eq!(frame(&routine(30, Isa::Avx512)), 0);
        // 48 values live at once in 32 registers: at least 16 stored, 64 bytes each.
        assert!(frame(&routine(48, Isa::Avx512)) >= 16 * 64);
        // AVX2: 15 registers.
        assert_eq!(frame(&routine(13, Isa::Avx2)), 0);
        assert!(frame(&routine(30, Isa::Avx2)) >= 15 * 64);
        // 150 values live at once: more than a page of spills, no routine.
        assert!(eligible(&live(150), Isa::Avx512) && assemble(&live(150), Isa::Avx512).is_none());
    }
}
