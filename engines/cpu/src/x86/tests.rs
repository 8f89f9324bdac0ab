//! Tests of the encoder, the register allocator and the routines.

use super::encode::*;
use super::routine::*;
use crate::compile::program::{Dst, Inner, Program, Src};
use vm_ir::DType;

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
    assert_eq!(enc(&|a| a.vop(MAP_0F, ADD, 1, 2, Rm::Reg(3), 0, false, false)), [0x62, 0xF1, 0xED, 0x48, 0x58, 0xCB]);
    // vdivpd zmm17, zmm30, zmm9
    assert_eq!(enc(&|a| a.vop(MAP_0F, DIV, 17, 30, Rm::Reg(9), 0, false, false)), [0x62, 0xC1, 0x8D, 0x40, 0x5E, 0xC9]);
    // vsubpd zmm25, zmm3, zmm20
    assert_eq!(enc(&|a| a.vop(MAP_0F, SUB, 25, 3, Rm::Reg(20), 0, false, false)), [0x62, 0x21, 0xE5, 0x48, 0x5C, 0xCC]);
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
    assert_eq!(enc(&|a| a.vop(MAP_0F, 0x51, 2, 0, Rm::Reg(18), 0, false, false)), [0x62, 0xB1, 0xFD, 0x48, 0x51, 0xD2]);
    // vpandq zmm1, zmm2, qword ptr [rsi]{1to8}
    assert_eq!(
        enc(&|a| a.vop(MAP_0F, 0xDB, 1, 2, Rm::Mem(Mem::At(RSI, 0)), 0, false, true)),
        [0x62, 0xF1, 0xED, 0x58, 0xDB, 0x0E]
    );
    // vmovapd zmm5, zmm21
    assert_eq!(enc(&|a| a.vop(MAP_0F, 0x28, 5, 0, Rm::Reg(21), 0, false, false)), [0x62, 0xB1, 0xFD, 0x48, 0x28, 0xED]);
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
    assert_eq!(enc32(&|a| a.vop(MAP_0F, ADD, 1, 2, Rm::Reg(3), 0, false, false)), [0x62, 0xF1, 0x6C, 0x48, 0x58, 0xCB]);
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
    assert_eq!(enc(&|a| a.vop(MAP_0F, 0xC2, 2, 1, Rm::Reg(1), 0, false, false)), [0x62, 0xF1, 0xF5, 0x48, 0xC2, 0xD1]);
    assert_eq!(enc(&|a| a.vop(MAP_0F, 0xC2, 2, 1, Rm::Reg(3), 2, false, false)), [0x62, 0xF1, 0xF5, 0x4A, 0xC2, 0xD3]);
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
    use crate::compile::program::{Op, SlotInfo};
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
