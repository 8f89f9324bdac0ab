//! Register allocation and the loop body: values in vector registers allocated in one pass
//! over the operations, spilling the one needed furthest ahead.

use super::encode::*;
use super::routine::*;
use crate::compile::program::{Dst, Inner, Program, Src};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A value the body computes or reads: an operation's result, a memory slot's element, or a
/// constant (in a register only where an instruction cannot read it from memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Val {
    Op(u32),
    Slot(u16),
    Const(u16),
    /// An entry of the constant pool (AVX2's sign and absolute-value masks).
    Pool(usize),
}

/// Emits the body of the loop: one vector of positions (under `mask` when not 0).
pub(super) struct Body<'p> {
    pub(super) p: &'p Program,
    /// Per value, the operations using it, in order.
    pub(super) uses: HashMap<Val, Vec<usize>>,
    /// Stack slots of spilled results (their count sizes the frame), the same in each body.
    pub(super) spill: HashMap<u32, i32>,
    /// Registers allocated to values: the first `nregs` (the others accumulate sums along the
    /// row).
    pub(super) nregs: u8,
    /// Per reduction along the row, its accumulator registers (two with AVX2: the lanes of
    /// Cranelift's order are two of its vectors; one with AVX-512) and its 64 bytes of stack
    /// (at `64 * index`), where the spills start after.
    pub(super) accs: Vec<(u16, u8, u8)>,
    /// Which vector of a step the body computes (AVX2 with sums along the row takes two
    /// vectors a step): its positions are `half * vector` on.
    pub(super) half: u8,
}

/// The register state while emitting one body.
pub(super) struct Regs {
    pub(super) holder: [Option<Val>; 32],
    pub(super) of: HashMap<Val, u8>,
    /// Results stored in their stack slots in this body (a step's values, not an earlier one's).
    pub(super) stored: HashSet<u32>,
}

impl<'p> Body<'p> {
    pub(super) fn new(p: &'p Program, a: &Asm) -> Body<'p> {
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
    pub(super) fn row_disp(&self, a: &Asm) -> i32 {
        i32::from(self.half) * a.vbytes()
    }

    /// Index in the address table of reduction `q`'s partial results.
    pub(super) fn partial_entry(&self, q: u16) -> u16 {
        self.p.slots.len() as u16 + q
    }

    /// Stack offset of the `i`th accumulator's 64 bytes.
    pub(super) fn acc_stack(i: usize) -> i32 {
        64 * i as i32
    }

    /// The first use of `v` after operation `k` (`usize::MAX`: none).
    pub(super) fn next_use(&self, v: Val, k: usize) -> usize {
        let list = self.uses.get(&v).map_or(&[][..], Vec::as_slice);
        let i = list.partition_point(|&u| u <= k);
        list.get(i).copied().unwrap_or(usize::MAX)
    }

    /// Address of slot `m` at the current position: its register, or r11 loaded from the table.
    pub(super) fn slot_base(&self, a: &mut Asm, m: u16) -> u8 {
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
    pub(super) fn alloc(&mut self, a: &mut Asm, regs: &mut Regs, k: usize, pinned: &[u8]) -> u8 {
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
    pub(super) fn get(&mut self, a: &mut Asm, regs: &mut Regs, v: Val, k: usize, mask: u8, pinned: &[u8]) -> u8 {
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
    pub(super) fn release(&self, regs: &mut Regs, vals: &[Val], k: usize) {
        for &v in vals {
            if self.next_use(v, k) == usize::MAX
                && let Some(r) = regs.of.remove(&v)
            {
                regs.holder[r as usize] = None;
            }
        }
    }

    /// Emits the body computing vector `half` of a step (see [`Body::half`]).
    pub(super) fn emit(&mut self, a: &mut Asm, mask: u8, half: u8) {
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
