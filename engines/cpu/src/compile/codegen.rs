//! Code generation: one Cranelift function per [`Program`], looping over a range `[lo, hi)` of
//! row-major positions of the collapsed iteration space.
//!
//! ```text
//! kernel(args, partials, lo, hi):
//!     idx = unravel(lo); remaining = hi - lo
//!     loop over rows:                       # odometer over the outer dimensions
//!         n_row = min(shape[-1] - idx[-1], remaining); row pointers from idx
//!         loop over chunks of the row:      # CHUNK elements; a single chunk when no calls
//!             segment 0: loop j: loads, inline ops, stores, stage call inputs in scratch
//!             calls of layer 0 (block routines over the chunk)
//!             segment 1: loop j: ...
//! ```
//!
//! The argument words (`args`) are laid out by [`ArgLayout`]: per memory slot its address and
//! byte strides, per reduction its byte strides, the shape, the constants. `partials` holds, per
//! reduction, the address of element 0 of this call's partial buffer. View extents are checked by
//! the caller once per kernel, never in the loops.

use crate::compile::emit::{self, ir_type};
use crate::compile::program::{Dst, Inner, Op, Program, Src};
use crate::compile::schedule::{Call, CallInput, Item, Plan, plan};
use crate::routines::calls::{self, BlockFn};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, Block, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind, Value, types,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::HashMap;
use vm_ir::{DType, Kind, Result};

/// Elements per chunk when a kernel calls block routines (scratch buffers hold one chunk).
pub const CHUNK: i64 = 256;

/// Constants loaded once in the function's entry, each kept in a register through the loops;
/// the rest are loaded from the argument words where they are used. A long chain of operations
/// on constants (`x = x * a + b`, a thousand times) would otherwise keep hundreds of values
/// live across the loop: spilled everywhere, and the register allocator's time grows
/// quadratically in the kernel's length.
pub(crate) const HOISTED_CONSTS: usize = 8;

/// The word offsets of a program's arguments.
#[derive(Debug, Clone, Copy)]
pub struct ArgLayout {
    nd: usize,
    nslots: usize,
    npartials: usize,
}

impl ArgLayout {
    /// The layout for `p`.
    pub fn of(p: &Program) -> ArgLayout {
        ArgLayout { nd: p.ndim, nslots: p.slots.len(), npartials: p.partials.len() }
    }
    /// Word of slot `k`'s address.
    pub fn slot_ptr(&self, k: usize) -> usize {
        k * (1 + self.nd)
    }
    /// Word of slot `k`'s byte stride in dimension `d`.
    pub fn slot_stride(&self, k: usize, d: usize) -> usize {
        k * (1 + self.nd) + 1 + d
    }
    /// Word of reduction `p`'s byte stride in dimension `d`.
    pub fn partial_stride(&self, p: usize, d: usize) -> usize {
        self.nslots * (1 + self.nd) + p * self.nd + d
    }
    /// Word of the extent of dimension `d`.
    pub fn shape(&self, d: usize) -> usize {
        (self.nslots + self.npartials) * (1 + self.nd) - self.npartials + d
    }
    /// Word of constant `c`.
    pub fn konst(&self, c: usize) -> usize {
        self.shape(self.nd) + c
    }
    /// Number of words for `nconsts` constants.
    pub fn words(&self, nconsts: usize) -> usize {
        self.konst(nconsts)
    }
}

/// Where a pointer walked by a segment points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Ptr {
    Slot(usize),
    Partial(usize),
    Scratch(usize),
}

/// Value of `x` at `word` of `base` (an argument array).
fn word(b: &mut FunctionBuilder, base: Value, word: usize) -> Value {
    b.ins().load(types::I64, MemFlagsData::trusted().with_readonly(), base, (word * 8) as i32)
}

/// Generator state shared by the loop levels.
pub(crate) struct Gen<'p> {
    pub(crate) p: &'p Program,
    pub(crate) plan: Plan,
    lay: ArgLayout,
    /// Per slot and partial: base address (slots only) and byte strides, loaded in the entry.
    slot_ptr: Vec<Value>,
    slot_stride: Vec<Vec<Value>>,
    part_ptr: Vec<Value>,
    part_stride: Vec<Vec<Value>>,
    shape: Vec<Value>,
    /// The argument words (for constants past [`HOISTED_CONSTS`]).
    args: Value,
    /// The constants loaded in the entry (the first [`HOISTED_CONSTS`]).
    consts: Vec<Value>,
    scratch_slots: Vec<cranelift_codegen::ir::StackSlot>,
    call_sig: Option<cranelift_codegen::ir::SigRef>,
}

/// Flags of element loads and stores: element-aligned only, never trapping.
pub(crate) const MEM: MemFlagsData = MemFlagsData::new().with_notrap();

impl Gen<'_> {
    fn inner_stride(&self, b: &mut FunctionBuilder, ptr: Ptr) -> Option<Value> {
        let nd = self.p.ndim;
        let (info, s) = match ptr {
            Ptr::Slot(k) => (self.p.slots[k], self.slot_stride[k][nd - 1]),
            Ptr::Partial(q) => (self.p.partials[q], self.part_stride[q][nd - 1]),
            Ptr::Scratch(s) => return Some(b.ins().iconst(types::I64, self.plan.scratch[s].size() as i64)),
        };
        match info.inner {
            Inner::Broadcast => None,
            Inner::Unit => Some(b.ins().iconst(types::I64, info.dtype.size() as i64)),
            Inner::Strided => Some(s),
        }
    }

    fn scratch_addr(&self, b: &mut FunctionBuilder, s: usize) -> Value {
        b.ins().stack_addr(types::I64, self.scratch_slots[s], 0)
    }

    /// Emits one segment's loop over `n` elements. `chunk` holds the chunk-start address of every
    /// slot and partial; `flat` is the position of element 0 of the chunk.
    fn segment(
        &self,
        b: &mut FunctionBuilder,
        items: &[Item],
        chunk: &HashMap<Ptr, Variable>,
        n: Value,
        flat: Value,
    ) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        // Pointers walked by this segment.
        let mut ptrs: Vec<Ptr> = Vec::new();
        let mut add = |p: Ptr| {
            if !ptrs.contains(&p) {
                ptrs.push(p);
            }
        };
        let needs_val = |v: u32, add: &mut dyn FnMut(Ptr)| {
            if let Some(&s) = self.plan.scratch_of.get(&(v as usize)) {
                add(Ptr::Scratch(s));
            }
        };
        for it in items {
            match *it {
                Item::Op(k) => {
                    let op = &self.p.ops[k];
                    for s in &op.srcs {
                        match *s {
                            Src::Mem(m) => add(Ptr::Slot(m as usize)),
                            Src::Val(v) => needs_val(v, &mut add),
                            _ => {}
                        }
                    }
                    match op.dst {
                        Dst::Store(m) => add(Ptr::Slot(m as usize)),
                        Dst::Reduce(q) => add(Ptr::Partial(q as usize)),
                        Dst::Value => {}
                    }
                    if let Some(&s) = self.plan.scratch_of.get(&k) {
                        add(Ptr::Scratch(s));
                    }
                }
                Item::Flush(k) => {
                    add(Ptr::Scratch(self.plan.scratch_of[&k]));
                    if let Dst::Store(m) = self.p.ops[k].dst {
                        add(Ptr::Slot(m as usize));
                    }
                }
                Item::Stage(src, s) => {
                    add(Ptr::Scratch(s));
                    match src {
                        Src::Mem(m) => add(Ptr::Slot(m as usize)),
                        Src::Val(v) => needs_val(v, &mut add),
                        _ => {}
                    }
                }
            }
        }
        let mut vars: HashMap<Ptr, Variable> = HashMap::new();
        let mut strides: HashMap<Ptr, Option<Value>> = HashMap::new();
        for &p in &ptrs {
            let start = match p {
                Ptr::Scratch(s) => self.scratch_addr(b, s),
                _ => b.use_var(chunk[&p]),
            };
            let var = b.declare_var(types::I64);
            b.def_var(var, start);
            vars.insert(p, var);
            let st = self.inner_stride(b, p);
            strides.insert(p, st);
        }
        let j = b.declare_var(types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        b.def_var(j, zero);
        // Reductions along the row (partial stride 0) accumulate in a register.
        let mut accs: HashMap<usize, Variable> = HashMap::new();
        for it in items {
            if let Item::Op(k) = *it
                && let Dst::Reduce(q) = self.p.ops[k].dst
                && self.p.partials[q as usize].inner == Inner::Broadcast
            {
                let a = b.use_var(vars[&Ptr::Partial(q as usize)]);
                let v = b.declare_var(ir_type(self.p.ops[k].dtype));
                let x = b.ins().load(ir_type(self.p.ops[k].dtype), MEM, a, 0);
                b.def_var(v, x);
                accs.insert(k, v);
            }
        }
        if let Some(vty) = self.simd_type(items, &ptrs) {
            self.vector_loop(b, items, &vars, &accs, vty, n, j, flat)?;
        }
        let (head, body, exit) = (b.create_block(), b.create_block(), b.create_block());
        b.ins().jump(head, &[]);
        b.switch_to_block(head);
        let jv = b.use_var(j);
        let more = b.ins().icmp(IntCC::SignedLessThan, jv, n);
        b.ins().brif(more, body, &[], exit, &[]);
        b.switch_to_block(body);
        b.seal_block(body);
        let jv = b.use_var(j);
        let mut regs: HashMap<usize, Value> = HashMap::new();
        let addr = |b: &mut FunctionBuilder, p: Ptr| b.use_var(vars[&p]);
        for it in items {
            match *it {
                Item::Op(k) => {
                    let op = &self.p.ops[k];
                    let mut args = Vec::with_capacity(op.srcs.len());
                    for s in &op.srcs {
                        args.push(self.read(b, *s, op, &mut regs, &vars, jv, flat));
                    }
                    match op.dst {
                        Dst::Reduce(q) => {
                            if let Some(&v) = accs.get(&k) {
                                let acc = b.use_var(v);
                                let r = emit::combine(b, op.opcode, op.dtype, op.in_dtype, acc, args[0])?;
                                b.def_var(v, r);
                            } else {
                                let a = addr(b, Ptr::Partial(q as usize));
                                let ty = ir_type(op.dtype);
                                let acc = b.ins().load(ty, MEM, a, 0);
                                let r = emit::combine(b, op.opcode, op.dtype, op.in_dtype, acc, args[0])?;
                                b.ins().store(MEM, r, a, 0);
                            }
                        }
                        dst => {
                            let r = match op.opcode.kind() {
                                Kind::Range => {
                                    let i = b.ins().iadd(flat, jv);
                                    emit::cast(b, DType::U64, op.dtype, i)
                                }
                                _ => emit::emit(b, op.opcode, op.dtype, op.in_dtype, &args)?,
                            };
                            regs.insert(k, r);
                            if let Dst::Store(m) = dst {
                                let a = addr(b, Ptr::Slot(m as usize));
                                b.ins().store(MEM, r, a, 0);
                            }
                            if let Some(&s) = self.plan.scratch_of.get(&k) {
                                let a = addr(b, Ptr::Scratch(s));
                                b.ins().store(MEM, r, a, 0);
                            }
                        }
                    }
                }
                Item::Flush(k) => {
                    let a = addr(b, Ptr::Scratch(self.plan.scratch_of[&k]));
                    let v = b.ins().load(ir_type(self.p.ops[k].dtype), MEM, a, 0);
                    if let Dst::Store(m) = self.p.ops[k].dst {
                        let a = addr(b, Ptr::Slot(m as usize));
                        b.ins().store(MEM, v, a, 0);
                    }
                }
                Item::Stage(src, s) => {
                    let dtype = self.plan.scratch[s];
                    let fake = Op {
                        opcode: vm_ir::Opcode::Identity,
                        dtype,
                        in_dtype: dtype,
                        srcs: [src].into_iter().collect(),
                        dst: Dst::Value,
                    };
                    let v = self.read(b, src, &fake, &mut regs, &vars, jv, flat);
                    let a = addr(b, Ptr::Scratch(s));
                    b.ins().store(MEM, v, a, 0);
                }
            }
        }
        for &p in &ptrs {
            if let Some(st) = strides[&p] {
                let v = b.use_var(vars[&p]);
                let v = b.ins().iadd(v, st);
                b.def_var(vars[&p], v);
            }
        }
        let jn = b.ins().iadd_imm_s(jv, 1);
        b.def_var(j, jn);
        b.ins().jump(head, &[]);
        b.seal_block(head);
        b.switch_to_block(exit);
        b.seal_block(exit);
        for (&k, &v) in &accs {
            if let Dst::Reduce(q) = self.p.ops[k].dst {
                let a = b.use_var(vars[&Ptr::Partial(q as usize)]);
                let x = b.use_var(v);
                b.ins().store(MEM, x, a, 0);
            }
        }
        Ok(())
    }

    /// The value of input `s` of `op` at the current element.
    #[allow(clippy::too_many_arguments)]
    fn read(
        &self,
        b: &mut FunctionBuilder,
        s: Src,
        op: &Op,
        regs: &mut HashMap<usize, Value>,
        vars: &HashMap<Ptr, Variable>,
        j: Value,
        flat: Value,
    ) -> Value {
        match s {
            Src::Mem(m) => {
                let a = b.use_var(vars[&Ptr::Slot(m as usize)]);
                b.ins().load(ir_type(self.p.slots[m as usize].dtype), MEM, a, 0)
            }
            Src::Const(c) => self.konst(b, c),
            Src::Index => {
                let i = b.ins().iadd(flat, j);
                emit::cast(b, DType::U64, op.dtype, i)
            }
            Src::Val(v) => {
                let v = v as usize;
                if let Some(&r) = regs.get(&v) {
                    return r;
                }
                let sc = self.plan.scratch_of[&v];
                let a = b.use_var(vars[&Ptr::Scratch(sc)]);
                let r = b.ins().load(ir_type(self.p.ops[v].dtype), MEM, a, 0);
                regs.insert(v, r);
                r
            }
        }
    }

    /// Constant `c`: its register when it was loaded in the entry, else a load of its word here.
    pub(crate) fn konst(&self, b: &mut FunctionBuilder, c: u16) -> Value {
        let c = usize::from(c);
        if let Some(&v) = self.consts.get(c) {
            return v;
        }
        // Not marked read-only, so that it is not hoisted back out of the loop.
        b.ins().load(ir_type(self.p.consts[c]), MemFlagsData::trusted(), self.args, (self.lay.konst(c) * 8) as i32)
    }

    /// Emits the block call `call` over `n` elements; `chunk` holds the chunk-start address of
    /// every slot (for inputs read in place).
    fn call(&self, b: &mut FunctionBuilder, call: &Call, chunk: &HashMap<Ptr, Variable>, n: Value, flat: Value) {
        let op = &self.p.ops[call.op];
        let f: BlockFn = calls::block_fn(op.opcode, op.dtype).expect("planned calls have a routine");
        let callee = b.ins().iconst(types::I64, f as usize as i64);
        let dst = self.scratch_addr(b, self.plan.scratch_of[&call.op]);
        let (a, c) = if op.opcode.kind() == Kind::Random {
            let seed = match op.srcs[0] {
                Src::Const(c) => self.konst(b, c),
                _ => b.ins().iconst(types::I64, 0),
            };
            let off = match op.srcs[1] {
                Src::Const(c) => self.konst(b, c),
                _ => b.ins().iconst(types::I64, 0),
            };
            (seed, b.ins().iadd(off, flat))
        } else {
            let mut addr = |input: CallInput| match input {
                CallInput::Scratch(s) => self.scratch_addr(b, s),
                CallInput::Slot(m) => b.use_var(chunk[&Ptr::Slot(m)]),
            };
            let a = addr(call.inputs[0]);
            let c = match call.inputs.get(1) {
                Some(&input) => addr(input),
                None => b.ins().iconst(types::I64, 0),
            };
            (a, c)
        };
        b.ins().call_indirect(self.call_sig.expect("signature imported"), callee, &[n, dst, a, c]);
    }
}

/// Builds the IR of `p` into `b`'s function (signature `(i64 args, i64 partials, i64 lo, i64 hi)`).
/// With `row`, the address of `p`'s row routine ([`crate::x86`]), the function calls it for
/// each row of at least [`ROW_ROUTINE_MIN`] positions.
pub fn build(b: &mut FunctionBuilder, p: &Program, call_conv: CallConv, row: Option<usize>) -> Result<()> {
    let nd = p.ndim;
    let lay = ArgLayout::of(p);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let params = b.block_params(entry).to_vec();
    let (args, partials, lo, hi) = (params[0], params[1], params[2], params[3]);
    let plan = plan(p);
    let mut g = Gen {
        p,
        lay,
        slot_ptr: Vec::new(),
        slot_stride: Vec::new(),
        part_ptr: Vec::new(),
        part_stride: Vec::new(),
        shape: Vec::new(),
        args,
        consts: Vec::new(),
        scratch_slots: Vec::new(),
        call_sig: None,
        plan,
    };
    for k in 0..p.slots.len() {
        let ptr = word(b, args, g.lay.slot_ptr(k));
        g.slot_ptr.push(ptr);
        let s = (0..nd).map(|d| word(b, args, g.lay.slot_stride(k, d))).collect();
        g.slot_stride.push(s);
    }
    for q in 0..p.partials.len() {
        let ptr = word(b, partials, q);
        g.part_ptr.push(ptr);
        let s = (0..nd).map(|d| word(b, args, g.lay.partial_stride(q, d))).collect();
        g.part_stride.push(s);
    }
    g.shape = (0..nd).map(|d| word(b, args, g.lay.shape(d))).collect();
    for (c, &dt) in p.consts.iter().enumerate().take(HOISTED_CONSTS) {
        let v = b.ins().load(ir_type(dt), MemFlagsData::trusted().with_readonly(), args, (g.lay.konst(c) * 8) as i32);
        g.consts.push(v);
    }
    for &dt in &g.plan.scratch {
        let size = (CHUNK as u32) * dt.size() as u32;
        g.scratch_slots.push(b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, size, 4)));
    }
    if !g.plan.calls.is_empty() {
        let mut sig = Signature::new(call_conv);
        for _ in 0..4 {
            sig.params.push(AbiParam::new(types::I64));
        }
        g.call_sig = Some(b.import_signature(sig));
    }

    // Unravel lo into the index variables.
    let idx: Vec<Variable> = (0..nd).map(|_| b.declare_var(types::I64)).collect();
    let mut rem = lo;
    for d in (0..nd).rev() {
        let i = b.ins().urem(rem, g.shape[d]);
        b.def_var(idx[d], i);
        rem = b.ins().udiv(rem, g.shape[d]);
    }
    let remaining = b.declare_var(types::I64);
    let n0 = b.ins().isub(hi, lo);
    b.def_var(remaining, n0);
    let flat = b.declare_var(types::I64);
    b.def_var(flat, lo);

    // The address of each slot's and partial's row: computed from the indices once, then
    // moved by the odometer (`back`), so that a short row (a last axis of 8) does not pay a
    // multiplication per axis and operand.
    let targets: Vec<Ptr> = (0..p.slots.len()).map(Ptr::Slot).chain((0..p.partials.len()).map(Ptr::Partial)).collect();
    let strides_of = |t: Ptr| match t {
        Ptr::Slot(k) => (g.slot_ptr[k], g.slot_stride[k].clone()),
        Ptr::Partial(q) => (g.part_ptr[q], g.part_stride[q].clone()),
        Ptr::Scratch(_) => unreachable!("rows are of slots and partials"),
    };
    let mut row_ptr: Vec<Variable> = Vec::with_capacity(targets.len());
    // back[t][d]: how far the row of target t moves when axis d steps and the axes after it
    // (but the last) return to 0.
    let mut back: Vec<Vec<Value>> = Vec::with_capacity(targets.len());
    for &t in &targets {
        let (mut a, strides) = strides_of(t);
        for (d, &s) in strides.iter().enumerate().take(nd - 1) {
            let i = b.use_var(idx[d]);
            let off = b.ins().imul(i, s);
            a = b.ins().iadd(a, off);
        }
        let v = b.declare_var(types::I64);
        b.def_var(v, a);
        row_ptr.push(v);
        let mut steps = vec![a; nd.saturating_sub(1)];
        let mut after = b.ins().iconst(types::I64, 0);
        for d in (0..nd.saturating_sub(1)).rev() {
            steps[d] = b.ins().isub(strides[d], after);
            let extent = b.ins().iadd_imm_s(g.shape[d], -1);
            let span = b.ins().imul(extent, strides[d]);
            after = b.ins().iadd(after, span);
        }
        back.push(steps);
    }

    let (row_head, exit) = (b.create_block(), b.create_block());
    let has_work = b.ins().icmp(IntCC::SignedGreaterThan, hi, lo);
    b.ins().brif(has_work, row_head, &[], exit, &[]);

    // ---- one row ----
    b.switch_to_block(row_head);
    let last = b.use_var(idx[nd - 1]);
    let left_in_row = b.ins().isub(g.shape[nd - 1], last);
    let rem_v = b.use_var(remaining);
    let row_n = b.ins().smin(left_in_row, rem_v);
    let mut chunk: HashMap<Ptr, Variable> = HashMap::new();
    for (k, &t) in targets.iter().enumerate() {
        let (_, strides) = strides_of(t);
        let a = b.use_var(row_ptr[k]);
        let off = b.ins().imul(last, strides[nd - 1]);
        let a = b.ins().iadd(a, off);
        let v = b.declare_var(types::I64);
        b.def_var(v, a);
        chunk.insert(t, v);
    }
    let row_flat = b.use_var(flat);
    let join = row.map(|routine| {
        // Long rows call the routine; short ones run the inline code below (a call per row of a
        // few vectors costs more than it gains).
        let (long, short, join) = (b.create_block(), b.create_block(), b.create_block());
        let is_long = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, row_n, ROW_ROUTINE_MIN);
        b.ins().brif(is_long, long, &[], short, &[]);
        b.switch_to_block(long);
        b.seal_block(long);
        call_row(b, &g, &chunk, call_conv, routine, row_n);
        b.ins().jump(join, &[]);
        b.switch_to_block(short);
        b.seal_block(short);
        join
    });
    if g.plan.calls.is_empty() {
        g.segment(b, &g.plan.segments[0].clone(), &chunk, row_n, row_flat)?;
    } else {
        emit_chunks(b, &g, &chunk, &targets, row_n, row_flat)?;
    }
    if let Some(join) = join {
        b.ins().jump(join, &[]);
        b.switch_to_block(join);
        b.seal_block(join);
    }
    // Advance to the next row.
    let rem_v = b.use_var(remaining);
    let rem_v = b.ins().isub(rem_v, row_n);
    b.def_var(remaining, rem_v);
    let f = b.use_var(flat);
    let f = b.ins().iadd(f, row_n);
    b.def_var(flat, f);
    let odometer = b.create_block();
    b.ins().brif(rem_v, odometer, &[], exit, &[]);
    b.switch_to_block(odometer);
    b.seal_block(odometer);
    let zero = b.ins().iconst(types::I64, 0);
    b.def_var(idx[nd - 1], zero);
    for d in (0..nd.saturating_sub(1)).rev() {
        let i = b.use_var(idx[d]);
        let i1 = b.ins().iadd_imm_s(i, 1);
        let wrap = b.ins().icmp(IntCC::Equal, i1, g.shape[d]);
        let zero = b.ins().iconst(types::I64, 0);
        let next = b.ins().select(wrap, zero, i1);
        b.def_var(idx[d], next);
        let (step, carry) = (b.create_block(), b.create_block());
        b.ins().brif(wrap, carry, &[], step, &[]);
        b.switch_to_block(step);
        b.seal_block(step);
        for (k, v) in row_ptr.iter().enumerate() {
            let a = b.use_var(*v);
            let a = b.ins().iadd(a, back[k][d]);
            b.def_var(*v, a);
        }
        b.ins().jump(row_head, &[]);
        b.switch_to_block(carry);
        b.seal_block(carry);
    }
    b.ins().jump(row_head, &[]);
    b.seal_block(row_head);
    b.switch_to_block(exit);
    b.seal_block(exit);
    b.ins().return_(&[]);
    Ok(())
}

/// Positions of a row from which a kernel with a row routine calls it.
pub const ROW_ROUTINE_MIN: i64 = 64;

/// Emits the call of the row routine at `routine` on the row at `chunk` (`row_n`
/// positions): the slots' and partial results' addresses go in a table on the stack.
fn call_row(
    b: &mut FunctionBuilder,
    g: &Gen,
    chunk: &HashMap<Ptr, Variable>,
    call_conv: CallConv,
    routine: usize,
    row_n: Value,
) {
    let entries: Vec<Ptr> =
        (0..g.p.slots.len()).map(Ptr::Slot).chain((0..g.p.partials.len()).map(Ptr::Partial)).collect();
    let table =
        b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, (8 * entries.len()) as u32, 3));
    for (k, e) in entries.iter().enumerate() {
        let a = b.use_var(chunk[e]);
        b.ins().stack_store(types::I64, a, table, (8 * k) as i32);
    }
    let ptrs = b.ins().stack_addr(types::I64, table, 0);
    let consts = b.ins().iadd_imm_s(g.args, (g.lay.konst(0) * 8) as i64);
    let mut sig = Signature::new(call_conv);
    for _ in 0..3 {
        sig.params.push(AbiParam::new(types::I64));
    }
    let sig = b.import_signature(sig);
    let callee = b.ins().iconst(types::I64, routine as i64);
    b.ins().call_indirect(sig, callee, &[ptrs, consts, row_n]);
}

/// Emits the chunk loop of a row for programs with block calls.
fn emit_chunks(
    b: &mut FunctionBuilder,
    g: &Gen,
    chunk: &HashMap<Ptr, Variable>,
    targets: &[Ptr],
    row_n: Value,
    row_flat: Value,
) -> Result<()> {
    let left = b.declare_var(types::I64);
    b.def_var(left, row_n);
    let cflat = b.declare_var(types::I64);
    b.def_var(cflat, row_flat);
    let (head, body, done): (Block, Block, Block) = (b.create_block(), b.create_block(), b.create_block());
    b.ins().jump(head, &[]);
    b.switch_to_block(head);
    let l = b.use_var(left);
    b.ins().brif(l, body, &[], done, &[]);
    b.switch_to_block(body);
    b.seal_block(body);
    let l = b.use_var(left);
    let cap = b.ins().iconst(types::I64, CHUNK);
    let n = b.ins().smin(l, cap);
    let fl = b.use_var(cflat);
    for (c, seg) in g.plan.segments.iter().enumerate() {
        g.segment(b, seg, chunk, n, fl)?;
        for call in g.plan.calls.iter().filter(|call| call.after == c) {
            g.call(b, call, chunk, n, fl);
        }
    }
    for &t in targets {
        if let Some(st) = g.inner_stride(b, t) {
            let a = b.use_var(chunk[&t]);
            let step = b.ins().imul(n, st);
            let a = b.ins().iadd(a, step);
            b.def_var(chunk[&t], a);
        }
    }
    let fl2 = b.ins().iadd(fl, n);
    b.def_var(cflat, fl2);
    let l2 = b.ins().isub(l, n);
    b.def_var(left, l2);
    b.ins().jump(head, &[]);
    b.seal_block(head);
    b.switch_to_block(done);
    b.seal_block(done);
    Ok(())
}
