//! 128-bit SIMD for segments whose operands are all contiguous or broadcast along the row and
//! whose operations are float arithmetic of one dtype, or integer arithmetic of one dtype that
//! SSE4.1 has lanes for ([`int_vector_op`]): the segment first runs a vector loop (f64x2,
//! f32x4, i64x2, i32x4, i16x8 or i8x16, unrolled [`UNROLL`] times, [`CHAIN_UNROLL`] times for
//! a plain chain) while that many vectors remain, then (without reductions along the row) one
//! vector at a time, and the scalar loop finishes the row.

use crate::compile::codegen::{Gen, HOISTED_CONSTS, MEM, Ptr};
use crate::compile::emit::{self, ir_type};
use crate::compile::program::{Dst, Inner, Op, Src};
use crate::compile::schedule::Item;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Type, Value, types};
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::HashMap;
use vm_ir::{DType, Kind, Opcode, Result};

/// Vectors per iteration of the vector loop.
pub const UNROLL: i64 = 4;

/// Vectors per iteration of the vector loop of a segment that is one dependent chain (no
/// reduction, at most one value live from one operation to the next: `x = x * a + b`, a
/// thousand times): its copies are the only parallelism the CPU gets, and 8 of them keep both
/// vector units busy through the operations' latency while 16 registers still hold them. A
/// segment holding more values per copy would spill at 8 (measured: n-body, knn and shallow
/// water slower), and the copies of a reduction set its order of summation.
pub const CHAIN_UNROLL: i64 = 8;

/// True when `op` has a vector form (for float `d`).
fn vector_op(op: Opcode) -> bool {
    use Opcode as O;
    matches!(
        op,
        O::Add
            | O::Subtract
            | O::Multiply
            | O::Divide
            | O::Maximum
            | O::Minimum
            | O::Negative
            | O::Absolute
            | O::Sqrt
            | O::Square
            | O::Floor
            | O::Ceil
            | O::Trunc
            | O::Rint
            | O::Identity
            | O::Reciprocal
    )
}

/// True when integer `op` of dtype `d` has a vector form on lanes of `d`: wrapping arithmetic
/// (as the scalar loop's; no byte products, which x86 lacks), bitwise logic, copies, minimum
/// and maximum (of 64-bit lanes signed only, by a comparison: x86 has no unsigned one).
fn int_vector_op(op: Opcode, d: DType) -> bool {
    use Opcode as O;
    int_vector_type(d).is_some()
        && match op {
            O::Add | O::Subtract | O::Negative | O::Identity => true,
            O::BitwiseAnd | O::BitwiseOr | O::BitwiseXor | O::Invert => true,
            O::Multiply | O::Square => d.size() > 1,
            O::Minimum | O::Maximum => d.size() < 8 || d == DType::I64,
            _ => false,
        }
}

/// The vector type of integer dtype `d` (`None` for floats and bools).
fn int_vector_type(d: DType) -> Option<Type> {
    Some(match d {
        DType::I64 | DType::U64 => types::I64X2,
        DType::I32 | DType::U32 => types::I32X4,
        DType::I16 | DType::U16 => types::I16X8,
        DType::I8 | DType::U8 => types::I8X16,
        _ => return None,
    })
}

/// The condition of a float comparison computed as a lane mask in vector loops.
fn vector_cmp(op: Opcode) -> Option<FloatCC> {
    Some(match op {
        Opcode::Equal => FloatCC::Equal,
        Opcode::NotEqual => FloatCC::NotEqual,
        Opcode::Less => FloatCC::LessThan,
        Opcode::LessEqual => FloatCC::LessThanOrEqual,
        Opcode::Greater => FloatCC::GreaterThan,
        Opcode::GreaterEqual => FloatCC::GreaterThanOrEqual,
        _ => return None,
    })
}

/// True for the operations on bools computed on lane masks in vector loops (all their inputs
/// masks: float comparisons or these): logic, and bitwise logic of bools.
fn mask_logic(op: Opcode, dtype: DType) -> bool {
    use Opcode as O;
    dtype == DType::Bool
        && matches!(
            op,
            O::LogicalAnd
                | O::LogicalOr
                | O::LogicalXor
                | O::LogicalNot
                | O::BitwiseAnd
                | O::BitwiseOr
                | O::BitwiseXor
                | O::Invert
        )
}

/// True for the reductions with a vector combiner (floats).
fn vector_reduce(op: Opcode) -> bool {
    matches!(op, Opcode::AddReduce | Opcode::MultiplyReduce | Opcode::MinimumReduce | Opcode::MaximumReduce)
}

/// The combiner of a vector reduction.
fn combine_vec(b: &mut FunctionBuilder, op: Opcode, acc: Value, x: Value) -> Value {
    match op {
        Opcode::AddReduce => b.ins().fadd(acc, x),
        Opcode::MultiplyReduce => b.ins().fmul(acc, x),
        Opcode::MinimumReduce => b.ins().fmin(acc, x),
        _ => b.ins().fmax(acc, x),
    }
}

fn emit_vec(b: &mut FunctionBuilder, op: Opcode, dtype: DType, vty: Type, args: &[Value]) -> Value {
    use Opcode as O;
    let a = args[0];
    if !vty.lane_type().is_float() && dtype != DType::Bool {
        // Integer lanes ([`int_vector_op`]): wrapping, as the scalar loop.
        let signed = dtype.is_signed();
        return match op {
            O::Add => b.ins().iadd(a, args[1]),
            O::Subtract => b.ins().isub(a, args[1]),
            O::Multiply => b.ins().imul(a, args[1]),
            O::Square => b.ins().imul(a, a),
            O::Negative => b.ins().ineg(a),
            O::Minimum | O::Maximum if dtype == DType::I64 => {
                // `a` where it is below (above) `y`, else `y`: the lanes of a signed comparison.
                let (x, y) = if op == O::Minimum { (args[1], a) } else { (a, args[1]) };
                let a_wins = b.ins().icmp(IntCC::SignedGreaterThan, x, y);
                b.ins().bitselect(a_wins, a, args[1])
            }
            O::Minimum if signed => b.ins().smin(a, args[1]),
            O::Minimum => b.ins().umin(a, args[1]),
            O::Maximum if signed => b.ins().smax(a, args[1]),
            O::Maximum => b.ins().umax(a, args[1]),
            O::BitwiseAnd => b.ins().band(a, args[1]),
            O::BitwiseOr => b.ins().bor(a, args[1]),
            O::BitwiseXor => b.ins().bxor(a, args[1]),
            O::Invert => b.ins().bnot(a),
            _ => a, // Identity of one dtype
        };
    }
    if let Some(cc) = vector_cmp(op) {
        // An integer lane mask (all ones where true): for selects, logic, or stored as bools.
        return b.ins().fcmp(cc, a, args[1]);
    }
    match op {
        // Logic on lane masks (see `mask_logic`).
        O::LogicalAnd | O::BitwiseAnd => b.ins().band(a, args[1]),
        O::LogicalOr | O::BitwiseOr => b.ins().bor(a, args[1]),
        O::LogicalXor | O::BitwiseXor => b.ins().bxor(a, args[1]),
        O::LogicalNot | O::Invert => b.ins().bnot(a),
        O::Select => {
            let flags = MemFlagsData::new().with_endianness(Endianness::Little);
            let mask = b.ins().bitcast(vty, flags, a);
            b.ins().bitselect(mask, args[1], args[2])
        }
        O::Add => b.ins().fadd(a, args[1]),
        O::Subtract => b.ins().fsub(a, args[1]),
        O::Multiply => b.ins().fmul(a, args[1]),
        O::Divide => b.ins().fdiv(a, args[1]),
        // NumPy's maximum/minimum: `a` where `a > y` (`<`) or `a` is NaN, else `y` (of equal
        // values the second, as NumPy's); Cranelift's fmax/fmin would order -0.0 below +0.0.
        O::Maximum | O::Minimum => {
            let cc = if op == O::Maximum { FloatCC::GreaterThan } else { FloatCC::LessThan };
            let keep = b.ins().fcmp(cc, a, args[1]);
            let nan = b.ins().fcmp(FloatCC::Unordered, a, a);
            let keep = b.ins().bor(keep, nan);
            let flags = MemFlagsData::new().with_endianness(Endianness::Little);
            let mask = b.ins().bitcast(vty, flags, keep);
            b.ins().bitselect(mask, a, args[1])
        }
        O::Negative => b.ins().fneg(a),
        O::Absolute => b.ins().fabs(a),
        O::Sqrt => b.ins().sqrt(a),
        O::Square => b.ins().fmul(a, a),
        O::Floor => b.ins().floor(a),
        O::Ceil => b.ins().ceil(a),
        O::Trunc => b.ins().trunc(a),
        O::Rint => b.ins().nearest(a),
        O::Reciprocal => {
            let one = if vty.lane_type() == types::F32 { b.ins().f32const(1.0) } else { b.ins().f64const(1.0) };
            let one = b.ins().splat(vty, one);
            b.ins().fdiv(one, a)
        }
        _ => a, // Identity of one dtype
    }
}

impl Gen<'_> {
    /// The vector type for `items`, when every operation and operand allows one.
    pub(crate) fn simd_type(&self, items: &[Item], ptrs: &[Ptr]) -> Option<Type> {
        let mut dtype: Option<DType> = None;
        // One dtype for the segment: a float, or (`int` true: operations with integer lanes and
        // the values they stage) an integer.
        let mut same = |d: DType, int: bool| {
            let ok = (d.is_float() || (int && int_vector_type(d).is_some())) && dtype.is_none_or(|x| x == d);
            dtype = Some(d);
            ok
        };
        let src_ok = |s: &Src| !matches!(s, Src::Index);
        for it in items {
            let ok = match *it {
                // Positions, made a vector lane by lane (as the scalar loop converts them).
                Item::Op(k) if self.p.ops[k].opcode == Opcode::Range => {
                    let op: &Op = &self.p.ops[k];
                    !matches!(op.dst, Dst::Reduce(_)) && same(op.dtype, false)
                }
                Item::Op(k) if vector_cmp(self.p.ops[k].opcode).is_some() => {
                    let op: &Op = &self.p.ops[k];
                    self.is_mask(k) && self.mask_kept(k) && same(op.in_dtype, false) && op.srcs.iter().all(src_ok)
                }
                Item::Op(k) if self.is_mask(k) => {
                    self.mask_kept(k)
                        && self.p.ops[k].srcs.iter().all(|s| matches!(*s, Src::Val(c) if self.mask_kept(c as usize)))
                }
                Item::Op(k) if self.p.ops[k].opcode == Opcode::Select => {
                    let op: &Op = &self.p.ops[k];
                    let mask =
                        matches!(op.srcs[0], Src::Val(c) if self.is_mask(c as usize) && self.mask_kept(c as usize));
                    mask && op.dtype == op.in_dtype
                        && !matches!(op.dst, Dst::Reduce(_))
                        && same(op.dtype, false)
                        && op.srcs[1..].iter().all(src_ok)
                }
                Item::Op(k) if self.widens_f32(k) => same(DType::F64, false),
                Item::Op(k) if int_vector_type(self.p.ops[k].dtype).is_some() => {
                    let op: &Op = &self.p.ops[k];
                    int_vector_op(op.opcode, op.dtype)
                        && !matches!(op.dst, Dst::Reduce(_))
                        && op.dtype == op.in_dtype
                        && same(op.dtype, true)
                        && op.srcs.iter().all(src_ok)
                }
                Item::Op(k) => {
                    let op: &Op = &self.p.ops[k];
                    (vector_op(op.opcode) || vector_reduce(op.opcode))
                        && match op.dst {
                            // Along the row (register accumulators) or across it (a row of
                            // partials, loaded, combined and stored lane by lane).
                            Dst::Reduce(q) => {
                                matches!(self.p.partials[q as usize].inner, Inner::Broadcast | Inner::Unit)
                            }
                            _ => op.opcode.kind() != Kind::Reduce,
                        }
                        && op.dtype == op.in_dtype
                        && same(op.dtype, false)
                        && op.srcs.iter().all(src_ok)
                }
                Item::Flush(k) => same(self.p.ops[k].dtype, false),
                Item::Stage(s, sc) => src_ok(&s) && same(self.plan.scratch[sc], true),
            };
            if !ok {
                return None;
            }
        }
        let inner_ok = ptrs.iter().all(|&p| match p {
            Ptr::Slot(k) => self.p.slots[k].inner != Inner::Strided,
            Ptr::Partial(q) => self.p.partials[q].inner != Inner::Strided,
            Ptr::Scratch(_) => true,
        });
        if !inner_ok {
            return None;
        }
        match dtype? {
            DType::F64 => Some(types::F64X2),
            DType::F32 => Some(types::F32X4),
            d => int_vector_type(d),
        }
    }

    /// True when operation `k` computes bools a vector loop holds as a lane mask: a float
    /// comparison, or logic whose inputs are all such masks.
    fn is_mask(&self, k: usize) -> bool {
        let op = &self.p.ops[k];
        if vector_cmp(op.opcode).is_some() {
            return op.in_dtype.is_float();
        }
        mask_logic(op.opcode, op.dtype)
            && op.srcs.iter().all(|s| matches!(*s, Src::Val(c) if (c as usize) < k && self.is_mask(c as usize)))
    }

    /// True when the mask of operation `k` ([`Gen::is_mask`]) never leaves the vector loop
    /// as anything but bools stored to a contiguous bool operand: it lives in registers (not
    /// in scratch, not reduced) and every use of it is a select's condition or mask logic.
    fn mask_kept(&self, k: usize) -> bool {
        let stored = match self.p.ops[k].dst {
            Dst::Value => true,
            Dst::Store(m) => {
                let slot = &self.p.slots[m as usize];
                slot.dtype == DType::Bool && slot.inner == Inner::Unit
            }
            Dst::Reduce(_) => false,
        };
        stored
            && !self.plan.scratch_of.contains_key(&k)
            && self.p.ops.iter().enumerate().all(|(at, op)| {
                op.srcs.iter().enumerate().all(|(i, s)| match *s {
                    Src::Val(v) if v as usize == k => (op.opcode == Opcode::Select && i == 0) || self.is_mask(at),
                    _ => true,
                })
            })
    }

    /// Bytes per element of pointer `p` in a vector loop of `esize`-byte lanes (bool operands
    /// take the loop's masks as one byte per element).
    fn vector_esize(&self, p: Ptr, esize: i64) -> i64 {
        match p {
            // Bools (masks) and the f32 elements an f64 loop widens are narrower than a lane.
            Ptr::Slot(k) => self.p.slots[k].dtype.size() as i64,
            _ => esize,
        }
    }

    /// True when operation `k` widens f32 elements read from memory to f64 (an f32 sum
    /// accumulates in f64): an f64 loop reads them two at a time and converts.
    fn widens_f32(&self, k: usize) -> bool {
        let op = &self.p.ops[k];
        op.opcode == Opcode::Identity
            && (op.dtype, op.in_dtype) == (DType::F64, DType::F32)
            && !matches!(op.dst, Dst::Reduce(_))
            && op.srcs.iter().all(|s| matches!(*s, Src::Mem(m) if self.p.slots[m as usize].dtype == DType::F32))
    }

    /// Stores the lane masks `masks` (one per unrolled copy, in order, all ones where true) as
    /// bytes of 0 or 1 at `addr`: narrowed pairwise to bytes (two masks of i64 lanes into one of
    /// i32 lanes by a shuffle, then `snarrow`, which keeps all ones all ones) and stored 16
    /// bytes at a time, the last 8, 4 or 2 when the masks hold fewer lanes.
    fn store_masks(&self, b: &mut FunctionBuilder, masks: Vec<Value>, addr: Value) {
        let flags = MemFlagsData::new().with_endianness(Endianness::Little);
        // One byte per lane of every mask: 2 (a single f64x2 mask) to 32.
        let total = masks.len() * b.func.dfg.value_type(masks[0]).lane_count() as usize;
        let mut v = masks;
        if b.func.dfg.value_type(v[0]).lane_type() == types::I64 {
            // [a0 a1] [b0 b1] -> [a0 a1 b0 b1] on the low 32 bits of each lane.
            let pick: [u8; 16] = [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];
            let imm = b.func.dfg.immediates.push(pick.to_vec().into());
            v = v
                .chunks(2)
                .map(|p| {
                    let x = b.ins().bitcast(types::I8X16, flags, p[0]);
                    let y = b.ins().bitcast(types::I8X16, flags, *p.get(1).unwrap_or(&p[0]));
                    let s = b.ins().shuffle(x, y, imm);
                    b.ins().bitcast(types::I32X4, flags, s)
                })
                .collect();
        }
        while b.func.dfg.value_type(v[0]).lane_type() != types::I8 {
            v = v
                .chunks(2)
                .map(|p| {
                    let y = *p.get(1).unwrap_or(&p[0]);
                    b.ins().snarrow(p[0], y)
                })
                .collect();
        }
        let one = b.ins().iconst(types::I8, 1);
        let one = b.ins().splat(types::I8X16, one);
        for (i, x) in v.into_iter().enumerate() {
            let bytes = b.ins().band(x, one);
            let off = (i * 16) as i32;
            // The meaningful bytes of this vector are its first ones: only they are stored.
            let lane = match total.saturating_sub(i * 16).min(16) {
                16 => None,
                8 => Some(types::I64X2),
                4 => Some(types::I32X4),
                _ => Some(types::I16X8),
            };
            match lane {
                None => {
                    b.ins().store(MEM, bytes, addr, off);
                }
                Some(ty) => {
                    let wide = b.ins().bitcast(ty, flags, bytes);
                    let low = b.ins().extractlane(wide, 0);
                    b.ins().store(MEM, low, addr, off);
                }
            }
        }
    }

    fn is_broadcast(&self, p: Ptr) -> bool {
        match p {
            Ptr::Slot(k) => self.p.slots[k].inner == Inner::Broadcast,
            Ptr::Partial(q) => self.p.partials[q].inner == Inner::Broadcast,
            Ptr::Scratch(_) => false,
        }
    }

    /// The inputs item `it` reads.
    fn item_srcs<'a>(&'a self, it: &'a Item) -> &'a [Src] {
        match it {
            Item::Op(k) => &self.p.ops[*k].srcs,
            Item::Stage(s, _) => std::slice::from_ref(s),
            Item::Flush(_) => &[],
        }
    }

    /// The most values of operations of `items` live at once between two items (read by a
    /// later item): 1 for a chain.
    fn max_live(&self, items: &[Item]) -> usize {
        let mut last_use: HashMap<usize, usize> = HashMap::new();
        for (i, it) in items.iter().enumerate() {
            for s in self.item_srcs(it) {
                if let Src::Val(v) = s {
                    last_use.insert(*v as usize, i);
                }
            }
        }
        let defined: Vec<(usize, usize)> = items
            .iter()
            .enumerate()
            .filter_map(|(i, it)| if let Item::Op(k) = it { Some((*k, i)) } else { None })
            .collect();
        (0..items.len())
            .map(|i| defined.iter().filter(|&&(k, at)| at <= i && last_use.get(&k).is_some_and(|&u| u > i)).count())
            .max()
            .unwrap_or(0)
    }

    /// The constants item `it` reads.
    fn item_consts(&self, it: &Item) -> Vec<u16> {
        self.item_srcs(it)
            .iter()
            .filter_map(|s| match s {
                Src::Const(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    /// Emits the vector loop of a segment: runs while `j + lanes * unroll <= n`, advancing `j`
    /// and the pointer variables; the scalar loop that follows finishes the row. `flat` is the
    /// position of the row's element 0 (for `range`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn vector_loop(
        &self,
        b: &mut FunctionBuilder,
        items: &[Item],
        vars: &HashMap<Ptr, Variable>,
        accs: &HashMap<usize, Variable>,
        vty: Type,
        n: Value,
        j: Variable,
        flat: Value,
    ) -> Result<()> {
        let unroll = if accs.is_empty() && self.max_live(items) <= 1 { CHAIN_UNROLL } else { UNROLL };
        // Constants kept in registers splatted once, before the loop (the others where used).
        let mut splats: HashMap<u16, Value> = HashMap::new();
        for it in items {
            for c in self.item_consts(it).into_iter().filter(|&c| usize::from(c) < HOISTED_CONSTS) {
                splats.entry(c).or_insert_with(|| {
                    let x = self.konst(b, c);
                    b.ins().splat(vty, x)
                });
            }
        }
        // Vector accumulators of the reductions, one per unrolled copy, from the identity.
        let mut vaccs: HashMap<(usize, i64), Variable> = HashMap::new();
        for &k in accs.keys() {
            let op = self.p.ops[k].opcode;
            let id = match op {
                Opcode::AddReduce => 0.0,
                Opcode::MultiplyReduce => 1.0,
                Opcode::MinimumReduce => f64::INFINITY,
                _ => f64::NEG_INFINITY,
            };
            let x = if vty.lane_type() == types::F32 { b.ins().f32const(id as f32) } else { b.ins().f64const(id) };
            let x = b.ins().splat(vty, x);
            for u in 0..unroll {
                let v = b.declare_var(vty);
                b.def_var(v, x);
                vaccs.insert((k, u), v);
            }
        }
        // The unrolled loop, then one vector at a time: a short row (a last axis of 8) runs
        // whole vectors rather than the scalar loop. Not with reductions along the row: their
        // order of summation is the unrolled loop's and then the scalar one's (which the row
        // routines of `x86` follow, bit for bit).
        let passes = if accs.is_empty() && unroll > 1 { vec![unroll, 1] } else { vec![unroll] };
        for copies in passes {
            self.vector_pass(b, items, vars, &vaccs, &mut splats, vty, n, j, flat, copies)?;
        }
        // Fold the vector accumulators into the scalar one, copy by copy, lane by lane.
        for (&k, &acc) in accs {
            let op = &self.p.ops[k];
            let mut s = b.use_var(acc);
            for u in 0..unroll {
                let v = b.use_var(vaccs[&(k, u)]);
                for lane in 0..vty.lane_count() {
                    let x = b.ins().extractlane(v, lane as u8);
                    s = emit::combine(b, op.opcode, op.dtype, op.in_dtype, s, x)?;
                }
            }
            b.def_var(acc, s);
        }
        Ok(())
    }

    /// One vector loop of [`Gen::vector_loop`]: `copies` vectors per iteration while that many
    /// remain.
    #[allow(clippy::too_many_arguments)]
    fn vector_pass(
        &self,
        b: &mut FunctionBuilder,
        items: &[Item],
        vars: &HashMap<Ptr, Variable>,
        vaccs: &HashMap<(usize, i64), Variable>,
        splats: &mut HashMap<u16, Value>,
        vty: Type,
        n: Value,
        j: Variable,
        flat: Value,
        copies: i64,
    ) -> Result<()> {
        let lanes = i64::from(vty.lane_count());
        let esize = i64::from(vty.lane_type().bytes());
        let (head, body, exit) = (b.create_block(), b.create_block(), b.create_block());
        b.ins().jump(head, &[]);
        b.switch_to_block(head);
        let jv = b.use_var(j);
        let step = lanes * copies;
        let end = b.ins().iadd_imm_s(jv, step);
        let more = b.ins().icmp(IntCC::SignedLessThanOrEqual, end, n);
        b.ins().brif(more, body, &[], exit, &[]);
        b.switch_to_block(body);
        b.seal_block(body);
        let addrs: HashMap<Ptr, Value> = vars.iter().map(|(&p, &v)| (p, b.use_var(v))).collect();
        // The unrolled copies are emitted interleaved, operation by operation, so that the
        // copies' independent dependency chains sit next to each other in the instruction
        // stream and the CPU overlaps their latencies (a long chain of dependent operations is
        // otherwise bound by latency, not throughput).
        let mut regs: Vec<HashMap<usize, Value>> = vec![HashMap::new(); copies as usize];
        for it in items {
            // Masks stored as bools: gathered from every copy, then narrowed and stored once.
            let mut stored_masks: Vec<Value> = Vec::new();
            // The other constants: loaded and splatted once per iteration, for every copy.
            let local: Vec<u16> = self.item_consts(it).into_iter().filter(|c| !splats.contains_key(c)).collect();
            for &c in &local {
                let x = self.konst(b, c);
                let v = b.ins().splat(vty, x);
                splats.insert(c, v);
            }
            for u in 0..copies {
                let off = (u * lanes * esize) as i32;
                let regs = &mut regs[u as usize];
                match *it {
                    Item::Op(k) if self.p.ops[k].opcode == Opcode::Range => {
                        // Each lane's position converted on its own: exact wherever the scalar
                        // loop's conversion is (f32 above 2^24 included).
                        let first = b.ins().iadd(flat, jv);
                        let mut r = None;
                        for lane in 0..lanes {
                            let i = b.ins().iadd_imm_s(first, u * lanes + lane);
                            let x = b.ins().fcvt_from_sint(vty.lane_type(), i);
                            r = Some(match r {
                                None => b.ins().splat(vty, x),
                                Some(v) => b.ins().insertlane(v, x, lane as u8),
                            });
                        }
                        let r = r.expect("a vector has lanes");
                        regs.insert(k, r);
                        if let Dst::Store(m) = self.p.ops[k].dst {
                            b.ins().store(MEM, r, addrs[&Ptr::Slot(m as usize)], off);
                        }
                        if let Some(&s) = self.plan.scratch_of.get(&k) {
                            b.ins().store(MEM, r, addrs[&Ptr::Scratch(s)], off);
                        }
                    }
                    Item::Op(k) => {
                        let op = &self.p.ops[k];
                        let args: Vec<Value> =
                            op.srcs.iter().map(|&s| self.vread(b, s, vty, &addrs, splats, regs, off)).collect();
                        if let Dst::Reduce(q) = op.dst {
                            if let Some(&v) = vaccs.get(&(k, u)) {
                                let acc = b.use_var(v);
                                let r = combine_vec(b, op.opcode, acc, args[0]);
                                b.def_var(v, r);
                            } else {
                                // A row of partials: each lane combines into its own position,
                                // as the scalar loop does.
                                let a = addrs[&Ptr::Partial(q as usize)];
                                let acc = b.ins().load(vty, MEM, a, off);
                                let r = combine_vec(b, op.opcode, acc, args[0]);
                                b.ins().store(MEM, r, a, off);
                            }
                            continue;
                        }
                        let r = emit_vec(b, op.opcode, op.dtype, vty, &args);
                        regs.insert(k, r);
                        if self.is_mask(k) {
                            if let Dst::Store(_) = op.dst {
                                stored_masks.push(r);
                            }
                            continue;
                        }
                        if let Dst::Store(m) = op.dst {
                            b.ins().store(MEM, r, addrs[&Ptr::Slot(m as usize)], off);
                        }
                        if let Some(&s) = self.plan.scratch_of.get(&k) {
                            b.ins().store(MEM, r, addrs[&Ptr::Scratch(s)], off);
                        }
                    }
                    Item::Flush(k) => {
                        let s = self.plan.scratch_of[&k];
                        let v = b.ins().load(vty, MEM, addrs[&Ptr::Scratch(s)], off);
                        if let Dst::Store(m) = self.p.ops[k].dst {
                            b.ins().store(MEM, v, addrs[&Ptr::Slot(m as usize)], off);
                        }
                    }
                    Item::Stage(src, s) => {
                        let v = self.vread(b, src, vty, &addrs, splats, regs, off);
                        b.ins().store(MEM, v, addrs[&Ptr::Scratch(s)], off);
                    }
                }
            }
            if let (Item::Op(k), false) = (*it, stored_masks.is_empty()) {
                let Dst::Store(m) = self.p.ops[k].dst else { unreachable!("only stored masks are gathered") };
                self.store_masks(b, stored_masks, addrs[&Ptr::Slot(m as usize)]);
            }
            for c in local {
                splats.remove(&c);
            }
        }
        for (&p, &v) in vars {
            if !self.is_broadcast(p) {
                let a = b.ins().iadd_imm_s(addrs[&p], step * self.vector_esize(p, esize));
                b.def_var(v, a);
            }
        }
        let jn = b.ins().iadd_imm_s(jv, step);
        b.def_var(j, jn);
        b.ins().jump(head, &[]);
        b.seal_block(head);
        b.switch_to_block(exit);
        b.seal_block(exit);
        Ok(())
    }

    /// The vector of input `s` at vector offset `off` (bytes).
    #[allow(clippy::too_many_arguments)]
    fn vread(
        &self,
        b: &mut FunctionBuilder,
        s: Src,
        vty: Type,
        addrs: &HashMap<Ptr, Value>,
        splats: &HashMap<u16, Value>,
        regs: &mut HashMap<usize, Value>,
        off: i32,
    ) -> Value {
        match s {
            Src::Mem(m) => {
                let p = Ptr::Slot(m as usize);
                let dtype = self.p.slots[m as usize].dtype;
                let widen = dtype == DType::F32 && vty.lane_type() == types::F64;
                if self.is_broadcast(p) {
                    let x = b.ins().load(ir_type(dtype), MEM, addrs[&p], 0);
                    let x = if widen { b.ins().fpromote(types::F64, x) } else { x };
                    b.ins().splat(vty, x)
                } else if widen {
                    // Two f32 elements (8 bytes, at half the lanes' offset) to f64 lanes.
                    let pair = b.ins().load(types::I64, MEM, addrs[&p], off / 2);
                    let v = b.ins().scalar_to_vector(types::I64X2, pair);
                    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
                    let v = b.ins().bitcast(types::F32X4, flags, v);
                    b.ins().fvpromote_low(v)
                } else {
                    b.ins().load(vty, MEM, addrs[&p], off)
                }
            }
            Src::Const(c) => splats[&c],
            Src::Val(v) => {
                let v = v as usize;
                if let Some(&r) = regs.get(&v) {
                    return r;
                }
                let sc = self.plan.scratch_of[&v];
                let r = b.ins().load(vty, MEM, addrs[&Ptr::Scratch(sc)], off);
                regs.insert(v, r);
                r
            }
            Src::Index => unreachable!("segments reading the index are not vectorised"),
        }
    }
}
