//! The assembler: EVEX and VEX encodings of the instructions row routines use, general-purpose
//! registers, memory operands, the constant pool, and the listing of what was emitted.

use super::routine::*;

/// General-purpose registers by their encoding.
pub(super) const RAX: u8 = 0;
pub(super) const RCX: u8 = 1;
pub(super) const RDX: u8 = 2;
pub(super) const RBX: u8 = 3;
pub(super) const RSP: u8 = 4;
pub(super) const RBP: u8 = 5;
pub(super) const RSI: u8 = 6;
pub(super) const RDI: u8 = 7;
pub(super) const R8: u8 = 8;
pub(super) const R9: u8 = 9;
pub(super) const R10: u8 = 10;
pub(super) const R11: u8 = 11;
pub(super) const R12: u8 = 12;
pub(super) const R13: u8 = 13;
pub(super) const R14: u8 = 14;
pub(super) const R15: u8 = 15;

/// Registers holding the addresses of the first memory slots (the rest are loaded into r11
/// where used). rdi: the address table, rsi: the constants, rdx: n, rcx: the position, rax:
/// scratch.
pub(super) const SLOT_REGS: [u8; 9] = [R8, R9, R10, RBX, RBP, R12, R13, R14, R15];
/// The callee-saved registers among them, pushed in the prologue.
pub(super) const SAVED: [u8; 6] = [RBX, RBP, R12, R13, R14, R15];

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
pub(super) const SIGN_MASK: usize = 0;
pub(super) const ABS_MASK: usize = 1;
pub(super) const ONE: usize = 2;
pub(super) const ZERO: usize = 3;
pub(super) const TAIL_MASKS: usize = 4;
pub(super) const POOL: [u64; 12] =
    [0x8000_0000_0000_0000, 0x7fff_ffff_ffff_ffff, 0x3ff0_0000_0000_0000, 0, !0, !0, !0, !0, 0, 0, 0, 0];
pub(super) const POOL_F32: [u64; 12] = [0x8000_0000, 0x7fff_ffff, 0x3f80_0000, 0, !0, !0, !0, !0, 0, 0, 0, 0];

/// AVX2's register holding the tail's mask.
pub(super) const AVX2_MASK: u8 = 15;

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
pub(super) struct Asm {
    /// The instruction set.
    pub(super) isa: Isa,
    /// Elements are f32, else f64.
    pub(super) f32: bool,
    pub(super) code: Vec<u8>,
    /// Positions of RIP-relative displacements to the constant pool, with their entries and
    /// the end of their instruction (an immediate may follow the displacement).
    pub(super) pool_refs: Vec<(usize, usize, usize)>,
    /// The instructions emitted, each with its offset.
    pub(super) listing: Vec<(usize, Emitted)>,
}

/// EVEX map selectors.
pub(super) const MAP_0F: u8 = 1;
pub(super) const MAP_0F38: u8 = 2;
pub(super) const MAP_0F3A: u8 = 3;

/// `vcmppd` predicates: "ordered" (neither operand NaN), "not greater" and "not less" (both
/// true where an operand is NaN).
pub(super) const ORDERED: u8 = 7;
pub(super) const NOT_GREATER: u8 = 0x1A;
pub(super) const NOT_LESS: u8 = 0x15;

/// The encodings of `op r64, imm8` (opcode, ModRM.reg extension).
pub(super) const ADD_IMM8: (u8, u8) = (0x83, 0);
pub(super) const SUB_IMM8: (u8, u8) = (0x83, 5);
pub(super) const CMP_IMM8: (u8, u8) = (0x83, 7);
pub(super) const SHL_IMM8: (u8, u8) = (0xC1, 4);

impl Asm {
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.code.extend_from_slice(b);
    }

    /// Bytes of an element.
    pub(super) fn esize(&self) -> i32 {
        if self.f32 { 4 } else { 8 }
    }

    /// Bytes of a vector.
    pub(super) fn vbytes(&self) -> i32 {
        if self.isa == Isa::Avx512 { 64 } else { 32 }
    }

    /// Elements of a vector.
    pub(super) fn lanes(&self) -> u8 {
        (self.vbytes() / self.esize()) as u8
    }

    /// Vector registers.
    pub(super) fn vregs(&self) -> u8 {
        if self.isa == Isa::Avx512 { 32 } else { 16 }
    }

    /// Appends instruction `e` to the code and the listing.
    pub(super) fn emit(&mut self, e: Emitted) {
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
    pub(super) fn modrm_mem(&mut self, reg: u8, m: Mem, n: i32) {
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
    pub(super) fn vop(&mut self, map: u8, opcode: u8, reg: u8, v: u8, rm: Rm, mask: u8, zero: bool, bcst: bool) {
        self.emit(Emitted::Vector { map, opcode, reg, v, rm, mask, zero, bcst, imm: None });
    }

    /// `vcmppd dst, a, b` under `predicate` (`vcmpps`): into opmask `dst` (AVX-512, under
    /// `mask`) or a vector register (AVX2).
    pub(super) fn cmp(&mut self, dst: u8, a: u8, b: u8, mask: u8, predicate: u8) {
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
    pub(super) fn blendv(&mut self, dst: u8, a: u8, b: u8, select: u8) {
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
    pub(super) fn enc_vector(&mut self, map: u8, opcode: u8, reg: u8, v: u8, rm: Rm, mask: u8, zero: bool, bcst: bool) {
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
    pub(super) fn scalar(&mut self, opcode: u8, reg: u8, v: u8, rm: Rm) {
        self.emit(Emitted::Scalar { opcode, reg, v, rm });
    }

    /// A scalar instruction of the element type (`vmovsd`, `vaddsd`, `vmulsd`: F2 and W1;
    /// `vmovss`, `vaddss`, `vmulss`: F3 and W0).
    pub(super) fn enc_scalar(&mut self, opcode: u8, reg: u8, v: u8, rm: Rm) {
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
    pub(super) fn vex(&mut self, map: u8, pp: u8, w: bool, long: bool, opcode: u8, reg: u8, v: u8, rm: Rm) {
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
    pub(super) fn evex_with(
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
    pub(super) fn load(&mut self, dst: u8, mem: Mem, mask: u8) {
        self.emit(Emitted::Load { dst, mem, mask });
    }

    pub(super) fn enc_load(&mut self, dst: u8, m: Mem, mask: u8) {
        if self.isa == Isa::Avx2 && mask != 0 {
            let opcode = if self.f32 { 0x2C } else { 0x2D };
            self.vex(MAP_0F38, 0b01, false, true, opcode, dst, AVX2_MASK, Rm::Mem(m));
            return;
        }
        self.enc_vector(MAP_0F, 0x10, dst, 0, Rm::Mem(m), mask, mask != 0, false);
    }

    /// `vmovupd m{mask}, zmm` (`vmovups`); AVX2: `vmovupd m, ymm`, or under a mask
    /// `vmaskmovpd m, ymm15, ymm` (`vmaskmovps`).
    pub(super) fn store(&mut self, mem: Mem, src: u8, mask: u8) {
        self.emit(Emitted::Store { mem, src, mask });
    }

    pub(super) fn enc_store(&mut self, m: Mem, src: u8, mask: u8) {
        if self.isa == Isa::Avx2 && mask != 0 {
            let opcode = if self.f32 { 0x2E } else { 0x2F };
            self.vex(MAP_0F38, 0b01, false, true, opcode, src, AVX2_MASK, Rm::Mem(m));
            return;
        }
        self.enc_vector(MAP_0F, 0x11, src, 0, Rm::Mem(m), mask, false, false);
    }

    /// `vbroadcastsd zmm, m64` (`vbroadcastss zmm, m32`).
    pub(super) fn broadcast(&mut self, dst: u8, mem: Mem) {
        self.emit(Emitted::Broadcast { dst, mem });
    }

    /// `REX.W`-prefixed instruction with ModRM register `reg` and register r/m `rm`.
    pub(super) fn rex_rr(&mut self, opcode: u8, reg: u8, rm: u8) {
        self.emit(Emitted::RegReg { opcode, reg, rm });
    }

    /// `op r64, imm8` (one of [`ADD_IMM8`], [`SUB_IMM8`], [`CMP_IMM8`], [`SHL_IMM8`]).
    pub(super) fn reg_imm8(&mut self, (opcode, ext): (u8, u8), reg: u8, imm: u8) {
        self.emit(Emitted::RegImm8 { opcode, ext, reg, imm: imm as i8 });
    }

    /// `mov r64, [base + disp]`.
    pub(super) fn mov_load(&mut self, dst: u8, base: u8, disp: i32) {
        self.emit(Emitted::MovLoad { dst, base, disp });
    }

    pub(super) fn push(&mut self, r: u8) {
        self.emit(Emitted::Push(r));
    }

    pub(super) fn pop(&mut self, r: u8) {
        self.emit(Emitted::Pop(r));
    }

    /// A `jcc rel32` (`cc` the condition's low opcode nibble) whose target is patched later.
    pub(super) fn jcc(&mut self, cc: u8) -> usize {
        self.emit(Emitted::Jcc { cc, target: usize::MAX });
        self.code.len() - 4
    }

    /// Points the jump whose rel32 is at `at` to `target`.
    pub(super) fn patch(&mut self, at: usize, target: usize) {
        self.patch_rel(at, target);
        let jump =
            self.listing.iter_mut().rev().find(|(start, e)| *start + 2 == at && matches!(e, Emitted::Jcc { .. }));
        if let Some((_, Emitted::Jcc { target: t, .. })) = jump {
            *t = target;
        }
    }

    /// Points the rel32 at `at` to `target`.
    pub(super) fn patch_rel(&mut self, at: usize, target: usize) {
        let rel = target as i64 - (at as i64 + 4);
        self.code[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
    }

    /// Sets the imm32 of instruction `k` of the listing, a [`Emitted::RegImm32`], to `imm`.
    pub(super) fn set_imm32(&mut self, k: usize, imm: i32) {
        let (start, e) = &mut self.listing[k];
        let Emitted::RegImm32 { imm: old, .. } = e else { unreachable!("an instruction with an imm32") };
        *old = imm;
        // The imm32 follows REX, opcode and ModRM.
        self.code[*start + 3..*start + 7].copy_from_slice(&imm.to_le_bytes());
    }

    /// Appends the constant pool (8-byte aligned) and resolves the references to it.
    pub(super) fn finish(mut self) -> Routine {
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

pub(super) const JG: u8 = 0xF;
pub(super) const JLE: u8 = 0xE;
