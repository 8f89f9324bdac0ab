//! Reads a routine's machine code back with iced-x86 and compares it, instruction by
//! instruction, with what the assembler was asked for (its listing, [`Emitted`]): mnemonic,
//! operands (registers, memory base, index, scale and displacement, immediates, branch
//! targets), opmask, zeroing, broadcast, the instructions' offsets and lengths, and the CPU
//! features each needs. What an `Emitted` means is written here, apart from the encoder.

use iced_x86::{
    CpuidFeature, Decoder, DecoderOptions, Formatter, Instruction, IntelFormatter, Mnemonic, OpKind, Register,
};
use vm_cpu::x86::{Emitted, Isa, Mem, Rm, Routine};

/// An operand as compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operand {
    Reg(Register),
    Mem { base: Register, index: Register, scale: u32, disp: u64 },
    Imm(u64),
    Branch(u64),
}

/// An instruction as compared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meaning {
    mnemonic: Mnemonic,
    operands: Vec<Operand>,
    mask: Register,
    zero: bool,
    bcst: bool,
}

/// The register of `class` numbered `n`.
fn reg(class: fn(Register) -> bool, n: u8) -> Register {
    Register::values().find(|&r| class(r) && r.number() == usize::from(n)).unwrap_or_else(|| panic!("no register {n}"))
}

fn gpr64(n: u8) -> Operand {
    Operand::Reg(reg(Register::is_gpr64, n))
}

fn gpr32(n: u8) -> Operand {
    Operand::Reg(reg(Register::is_gpr32, n))
}

fn k(n: u8) -> Operand {
    Operand::Reg(reg(Register::is_k, n))
}

fn xmm(n: u8) -> Operand {
    Operand::Reg(reg(Register::is_xmm, n))
}

/// The opmask register `n`, `None` for 0.
fn mask(n: u8) -> Register {
    if n == 0 { Register::None } else { reg(Register::is_k, n) }
}

/// What the assembler of `r` meant by `e`.
fn meaning(r: &Routine, e: Emitted) -> Meaning {
    use Mnemonic as M;
    let avx512 = r.isa == Isa::Avx512;
    let esize: u32 = if r.f32 { 4 } else { 8 };
    let pd = |d: Mnemonic, s: Mnemonic| if r.f32 { s } else { d };
    let vec = |n: u8| Operand::Reg(if avx512 { reg(Register::is_zmm, n) } else { reg(Register::is_ymm, n) });
    let mem = |m: Mem| match m {
        Mem::Row(base, disp) => Operand::Mem {
            base: reg(Register::is_gpr64, base),
            index: Register::RCX,
            scale: esize,
            disp: i64::from(disp) as u64,
        },
        Mem::At(base, disp) => Operand::Mem {
            base: reg(Register::is_gpr64, base),
            index: Register::None,
            scale: 1,
            disp: i64::from(disp) as u64,
        },
        Mem::Pool(k) => {
            Operand::Mem { base: Register::RIP, index: Register::None, scale: 1, disp: (r.pool + 8 * k) as u64 }
        }
    };
    let plain = |mnemonic, operands| Meaning { mnemonic, operands, mask: Register::None, zero: false, bcst: false };
    match e {
        Emitted::Vector { map, opcode, reg: dst, v, rm, mask: m, zero, bcst, imm } => {
            let rm = match rm {
                Rm::Reg(x) => vec(x),
                Rm::Mem(x) => mem(x),
            };
            let (mnemonic, operands) = match (map, opcode) {
                (1, 0x58) => (pd(M::Vaddpd, M::Vaddps), vec![vec(dst), vec(v), rm]),
                (1, 0x59) => (pd(M::Vmulpd, M::Vmulps), vec![vec(dst), vec(v), rm]),
                (1, 0x5C) => (pd(M::Vsubpd, M::Vsubps), vec![vec(dst), vec(v), rm]),
                (1, 0x5E) => (pd(M::Vdivpd, M::Vdivps), vec![vec(dst), vec(v), rm]),
                (1, 0x51) => (pd(M::Vsqrtpd, M::Vsqrtps), vec![vec(dst), rm]),
                (1, 0x28) => (pd(M::Vmovapd, M::Vmovaps), vec![vec(dst), rm]),
                (1, 0x54) => (pd(M::Vandpd, M::Vandps), vec![vec(dst), vec(v), rm]),
                (1, 0x57) => (pd(M::Vxorpd, M::Vxorps), vec![vec(dst), vec(v), rm]),
                (1, 0xEF) if avx512 => (pd(M::Vpxorq, M::Vpxord), vec![vec(dst), vec(v), rm]),
                (1, 0xDB) if avx512 => (pd(M::Vpandq, M::Vpandd), vec![vec(dst), vec(v), rm]),
                (1, 0xC2) => {
                    let first = if avx512 { k(dst) } else { vec(dst) };
                    (
                        pd(M::Vcmppd, M::Vcmpps),
                        vec![first, vec(v), rm, Operand::Imm(u64::from(imm.expect("a predicate")))],
                    )
                }
                (2, 0x65) if avx512 => (pd(M::Vblendmpd, M::Vblendmps), vec![vec(dst), vec(v), rm]),
                (3, 0x4B | 0x4A) if !avx512 => {
                    let select = vec(imm.expect("a selector") >> 4);
                    (if opcode == 0x4A { M::Vblendvps } else { M::Vblendvpd }, vec![vec(dst), vec(v), rm, select])
                }
                _ => panic!("no meaning for {e:?} in {:?}", r.isa),
            };
            Meaning { mnemonic, operands, mask: mask(m), zero, bcst }
        }
        Emitted::Scalar { opcode, reg: dst, v, rm } => {
            let rm = match rm {
                Rm::Reg(x) => xmm(x),
                Rm::Mem(x) => mem(x),
            };
            let sd = |d: Mnemonic, s: Mnemonic| if r.f32 { s } else { d };
            match opcode {
                0x10 => plain(sd(M::Vmovsd, M::Vmovss), vec![xmm(dst), rm]),
                0x11 => plain(sd(M::Vmovsd, M::Vmovss), vec![rm, xmm(dst)]),
                0x58 => plain(sd(M::Vaddsd, M::Vaddss), vec![xmm(dst), xmm(v), rm]),
                0x59 => plain(sd(M::Vmulsd, M::Vmulss), vec![xmm(dst), xmm(v), rm]),
                _ => panic!("no meaning for {e:?}"),
            }
        }
        Emitted::Load { dst, mem: m, mask: k } if !avx512 && k != 0 => {
            plain(pd(M::Vmaskmovpd, M::Vmaskmovps), vec![vec(dst), vec(15), mem(m)])
        }
        Emitted::Load { dst, mem: m, mask: k } => Meaning {
            mnemonic: pd(M::Vmovupd, M::Vmovups),
            operands: vec![vec(dst), mem(m)],
            mask: mask(k),
            zero: k != 0,
            bcst: false,
        },
        Emitted::Store { mem: m, src, mask: k } if !avx512 && k != 0 => {
            plain(pd(M::Vmaskmovpd, M::Vmaskmovps), vec![mem(m), vec(15), vec(src)])
        }
        Emitted::Store { mem: m, src, mask: k } => Meaning {
            mnemonic: pd(M::Vmovupd, M::Vmovups),
            operands: vec![mem(m), vec(src)],
            mask: mask(k),
            zero: false,
            bcst: false,
        },
        Emitted::Broadcast { dst, mem: m } => plain(pd(M::Vbroadcastsd, M::Vbroadcastss), vec![vec(dst), mem(m)]),
        Emitted::RegReg { opcode, reg: src, rm } => {
            let mnemonic = match opcode {
                0x89 => M::Mov,
                0x29 => M::Sub,
                0x39 => M::Cmp,
                _ => panic!("no meaning for {e:?}"),
            };
            plain(mnemonic, vec![gpr64(rm), gpr64(src)])
        }
        Emitted::RegImm8 { opcode, ext, reg: dst, imm } => {
            let (mnemonic, value) = match (opcode, ext) {
                (0x83, 0) => (M::Add, i64::from(imm) as u64),
                (0x83, 5) => (M::Sub, i64::from(imm) as u64),
                (0x83, 7) => (M::Cmp, i64::from(imm) as u64),
                (0xC1, 4) => (M::Shl, u64::from(imm as u8)),
                _ => panic!("no meaning for {e:?}"),
            };
            plain(mnemonic, vec![gpr64(dst), Operand::Imm(value)])
        }
        Emitted::RegImm32 { ext, reg: dst, imm } => {
            let mnemonic = match ext {
                0 => M::Add,
                5 => M::Sub,
                _ => panic!("no meaning for {e:?}"),
            };
            plain(mnemonic, vec![gpr64(dst), Operand::Imm(i64::from(imm) as u64)])
        }
        Emitted::MovImm32 { reg: dst, imm } => plain(M::Mov, vec![gpr32(dst), Operand::Imm(u64::from(imm))]),
        Emitted::Zero32(x) => plain(M::Xor, vec![gpr32(x), gpr32(x)]),
        Emitted::MovLoad { dst, base, disp } => plain(M::Mov, vec![gpr64(dst), mem(Mem::At(base, disp))]),
        Emitted::LeaPool { dst, entry } => plain(M::Lea, vec![gpr64(dst), mem(Mem::Pool(entry))]),
        Emitted::Bzhi { dst, src, index } => plain(M::Bzhi, vec![gpr32(dst), gpr32(src), gpr32(index)]),
        Emitted::Kmovw { k: dst, src } => plain(M::Kmovw, vec![k(dst), gpr32(src)]),
        Emitted::Push(x) => plain(M::Push, vec![gpr64(x)]),
        Emitted::Pop(x) => plain(M::Pop, vec![gpr64(x)]),
        Emitted::Jcc { cc, target } => {
            let mnemonic = match cc {
                0xF => M::Jg,
                0xE => M::Jle,
                _ => panic!("no meaning for {e:?}"),
            };
            plain(mnemonic, vec![Operand::Branch(target as u64)])
        }
        Emitted::Vzeroupper => plain(M::Vzeroupper, vec![]),
        Emitted::Ret => plain(M::Ret, vec![]),
    }
}

/// What the decoder read.
fn decoded(i: &Instruction) -> Meaning {
    let operands = (0..i.op_count())
        .map(|n| match i.op_kind(n) {
            OpKind::Register => Operand::Reg(i.op_register(n)),
            OpKind::Memory => Operand::Mem {
                base: i.memory_base(),
                index: i.memory_index(),
                scale: i.memory_index_scale(),
                disp: i.memory_displacement64(),
            },
            OpKind::NearBranch64 => Operand::Branch(i.near_branch_target()),
            _ => Operand::Imm(i.immediate(n)),
        })
        .collect();
    Meaning { mnemonic: i.mnemonic(), operands, mask: i.op_mask(), zero: i.zeroing_masking(), bcst: i.is_broadcast() }
}

/// The CPU features a routine of `isa` may use.
fn allowed(isa: Isa) -> &'static [CpuidFeature] {
    use CpuidFeature as F;
    match isa {
        Isa::Avx512 => &[F::INTEL8086, F::INTEL386, F::X64, F::AVX, F::AVX512F, F::BMI2],
        Isa::Avx2 => &[F::INTEL8086, F::INTEL386, F::X64, F::AVX, F::AVX2],
    }
}

/// Checks `r`'s code against its listing: every instruction decodes, at the offset where the
/// listing has it and with its meaning, using only the features of `r.isa`; the lengths add
/// up to the padding before the constant pool, which follows intact.
pub fn check(r: &Routine) -> Result<(), String> {
    // The instructions, then int3 up to the pool.
    let end = r.pool;
    let mut decoder = Decoder::with_ip(64, &r.code[..end], 0, DecoderOptions::NONE);
    let mut formatter = IntelFormatter::new();
    let text = |i: &Instruction, f: &mut IntelFormatter| {
        let mut s = String::new();
        f.format(i, &mut s);
        s
    };
    let mut at = 0usize;
    for (k, &(start, e)) in r.listing.iter().enumerate() {
        if !decoder.can_decode() {
            return Err(format!("instruction {k} ({e:?}) at {start}: the code ends at {at}"));
        }
        let i = decoder.decode();
        let bytes = &r.code[at..(at + i.len()).min(end)];
        if i.is_invalid() {
            return Err(format!("instruction {k} ({e:?}) at {at}: invalid, bytes {bytes:02x?}"));
        }
        if i.ip() as usize != start {
            return Err(format!(
                "instruction {k} ({e:?}) should start at {start}, the decoder reads `{}` at {} ({bytes:02x?})",
                text(&i, &mut formatter),
                i.ip()
            ));
        }
        let (want, got) = (meaning(r, e), decoded(&i));
        if want != got {
            return Err(format!(
                "{:?} {} instruction {k} at {start}: meant {e:?} = {want:?}, decoded `{}` = {got:?} from {bytes:02x?}",
                r.isa,
                if r.f32 { "f32" } else { "f64" },
                text(&i, &mut formatter)
            ));
        }
        if let Some(f) = i.cpuid_features().iter().find(|f| !allowed(r.isa).contains(f)) {
            return Err(format!("instruction {k} `{}` needs {f:?}, not in {:?}", text(&i, &mut formatter), r.isa));
        }
        at += i.len();
    }
    if r.code[at..r.pool].iter().any(|&b| b != 0xCC) || r.pool - at >= 8 {
        return Err(format!(
            "after the last instruction at {at}: {:02x?}, not padding to {}",
            &r.code[at..r.pool],
            r.pool
        ));
    }
    let pool: Vec<u8> = r.pool_entries().iter().flat_map(|c| c.to_le_bytes()).collect();
    if r.code[r.pool..] != pool[..] {
        return Err("the constant pool is not intact".into());
    }
    Ok(())
}
