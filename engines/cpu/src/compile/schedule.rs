//! The schedule of a kernel's loop body: segments of inline operations separated by layers of
//! block-routine calls, and the scratch buffers that carry values across them.
//!
//! An operation goes into the earliest segment where its inputs are ready: a call runs after
//! the segment where its last input is computed, and every call whose inputs are ready there
//! runs there too (a kernel with eight independent divisions has two segments and one layer
//! of eight calls between them, not nine segments). Memory keeps program order per slot: a
//! read of a slot never moves before an earlier store to it, nor a store before an earlier
//! read or store (slots of one kernel are identical views or disjoint, see `vm_fusion`).
//!
//! Values computed inline live in registers within their segment. A value needs a scratch
//! buffer (one chunk long) when a call produces it, when a call consumes it, or when a later
//! segment reads it. A call reads a contiguous memory operand in place; other inputs that are
//! not values (strided or broadcast memory, constants) are staged into scratch at the end of
//! the segment before the call; results of a call that go to memory are flushed in the segment
//! after it.

use crate::compile::program::{Dst, Inner, Op, Program, Src};
use crate::routines::calls;
use std::collections::HashMap;
use vm_ir::{DType, Kind};

/// One thing a segment's loop body does per element.
#[derive(Debug, Clone, Copy)]
pub enum Item {
    /// An inline operation.
    Op(usize),
    /// Store the result of a call (in scratch) to its memory slot.
    Flush(usize),
    /// Put a non-value input of a call into scratch buffer `s`.
    Stage(Src, usize),
}

/// Where a call reads one of its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallInput {
    /// A scratch buffer (a value, or a staged operand).
    Scratch(usize),
    /// A contiguous memory slot, in place.
    Slot(usize),
}

/// One block call of a kernel.
#[derive(Debug, Clone)]
pub struct Call {
    /// The operation it computes.
    pub op: usize,
    /// Where it reads its inputs.
    pub inputs: Vec<CallInput>,
    /// The segment it runs after (and before the next one).
    pub after: usize,
}

/// The schedule of a program: segments of inline work separated by layers of block calls.
pub struct Plan {
    /// Per segment, what its loop body does per element.
    pub segments: Vec<Vec<Item>>,
    /// The calls, by segment they follow, then in program order.
    pub calls: Vec<Call>,
    /// Scratch buffer of each value that needs one.
    pub scratch_of: HashMap<usize, usize>,
    /// Dtype of each scratch buffer.
    pub scratch: Vec<DType>,
}

/// True when `op` is computed by a block routine.
pub fn is_call(op: &Op) -> bool {
    op.opcode.kind() != Kind::Reduce && calls::block_fn(op.opcode, op.dtype).is_some()
}

/// The schedule of `p`.
pub fn plan(p: &Program) -> Plan {
    let call: Vec<bool> = p.ops.iter().map(is_call).collect();
    // seg[k]: the segment of an inline operation, or the segment a call runs after.
    let mut seg: Vec<usize> = Vec::with_capacity(p.ops.len());
    let ready = |seg: &[usize], v: usize| if call[v] { seg[v] + 1 } else { seg[v] };
    // Per slot: the segment of its last store, and of its last access (a call's reads and
    // flushes count as the segment after it).
    let mut stored = vec![0usize; p.slots.len()];
    let mut accessed = vec![0usize; p.slots.len()];
    for (k, op) in p.ops.iter().enumerate() {
        let mut s = 0;
        for src in &op.srcs {
            match *src {
                Src::Val(v) => s = s.max(ready(&seg, v as usize)),
                Src::Mem(m) => s = s.max(stored[m as usize]),
                _ => {}
            }
        }
        if let Dst::Store(m) = op.dst {
            s = s.max(accessed[m as usize]);
        }
        seg.push(s);
        let at = if call[k] { s + 1 } else { s };
        for src in &op.srcs {
            if let Src::Mem(m) = *src {
                accessed[m as usize] = accessed[m as usize].max(at);
            }
        }
        if let Dst::Store(m) = op.dst {
            stored[m as usize] = at;
            accessed[m as usize] = at;
        }
    }
    let nseg = (0..p.ops.len()).map(|k| ready(&seg, k)).max().unwrap_or(0) + 1;
    // Then every inline operation moves as late as its consumers and memory order allow: a
    // value computed in the segment that uses it stays in a register.
    let mut first_read = vec![usize::MAX; p.slots.len()];
    let mut first_store = vec![usize::MAX; p.slots.len()];
    let mut latest = vec![nseg - 1; p.ops.len()];
    for (k, op) in p.ops.iter().enumerate().rev() {
        if !call[k] {
            let mut s = latest[k];
            for src in &op.srcs {
                if let Src::Mem(m) = *src {
                    s = s.min(first_store[m as usize]);
                }
            }
            if let Dst::Store(m) = op.dst {
                s = s.min(first_read[m as usize]).min(first_store[m as usize]);
            }
            seg[k] = seg[k].max(s);
        }
        // A call reads after the segment it follows and flushes in the next one.
        let stored_at = if call[k] { seg[k] + 1 } else { seg[k] };
        for src in &op.srcs {
            if let Src::Mem(m) = *src {
                first_read[m as usize] = first_read[m as usize].min(seg[k]);
            }
        }
        if let Dst::Store(m) = op.dst {
            first_store[m as usize] = first_store[m as usize].min(stored_at);
        }
        // Its inputs are needed here.
        let here = seg[k];
        for src in &op.srcs {
            if let Src::Val(v) = *src {
                latest[v as usize] = latest[v as usize].min(here);
            }
        }
    }
    let mut pl =
        Plan { segments: vec![Vec::new(); nseg], calls: Vec::new(), scratch_of: HashMap::new(), scratch: Vec::new() };
    let need = |v: usize, pl: &mut Plan| {
        if !pl.scratch_of.contains_key(&v) {
            pl.scratch.push(p.ops[v].dtype);
            pl.scratch_of.insert(v, pl.scratch.len() - 1);
        }
    };
    for (k, op) in p.ops.iter().enumerate() {
        if call[k] {
            need(k, &mut pl);
        }
        for s in &op.srcs {
            if let Src::Val(v) = *s {
                let v = v as usize;
                if call[v] || call[k] || seg[k] > seg[v] {
                    need(v, &mut pl);
                }
            }
        }
    }
    for (k, op) in p.ops.iter().enumerate() {
        let s = seg[k];
        if !call[k] {
            pl.segments[s].push(Item::Op(k));
            continue;
        }
        let mut inputs = Vec::new();
        if op.opcode.kind() != Kind::Random {
            for src in &op.srcs {
                match *src {
                    Src::Val(v) => inputs.push(CallInput::Scratch(pl.scratch_of[&(v as usize)])),
                    Src::Mem(m) if p.slots[m as usize].inner == Inner::Unit => inputs.push(CallInput::Slot(m as usize)),
                    src => {
                        pl.scratch.push(op.dtype);
                        let b = pl.scratch.len() - 1;
                        pl.segments[s].push(Item::Stage(src, b));
                        inputs.push(CallInput::Scratch(b));
                    }
                }
            }
        }
        if let Dst::Store(_) = op.dst {
            pl.segments[s + 1].push(Item::Flush(k));
        }
        pl.calls.push(Call { op: k, inputs, after: s });
    }
    pl.calls.sort_by_key(|c| c.after);
    pl
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::program::SlotInfo;
    use vm_ir::Opcode;

    fn op(opcode: Opcode, srcs: &[Src], dst: Dst) -> Op {
        Op { opcode, dtype: DType::F64, in_dtype: DType::F64, srcs: srcs.iter().copied().collect(), dst }
    }

    fn program(slots: usize, ops: Vec<Op>) -> Program {
        let slot = SlotInfo { dtype: DType::F64, inner: Inner::Unit };
        Program { ndim: 1, slots: vec![slot; slots], partials: vec![], consts: vec![], ops }
    }

    /// The segment of each inline operation, and the segment each call follows.
    fn placement(pl: &Plan, nops: usize) -> Vec<usize> {
        let mut at = vec![usize::MAX; nops];
        for (s, items) in pl.segments.iter().enumerate() {
            for it in items {
                if let Item::Op(k) = *it {
                    at[k] = s;
                }
            }
        }
        for c in &pl.calls {
            at[c.op] = c.after;
        }
        at
    }

    #[test]
    fn independent_calls_share_a_layer_and_values_move_to_their_use() {
        use Src::{Mem, Val};
        // out = exp(a * a) + log(b) + b * 2 (as b * b): two calls, one layer; `a * a` feeds a
        // call (segment 0, scratch), `b * b` is only used after the calls (segment 1).
        let p = program(
            3,
            vec![
                op(Opcode::Multiply, &[Mem(0), Mem(0)], Dst::Value),
                op(Opcode::Exp, &[Val(0)], Dst::Value),
                op(Opcode::Log, &[Mem(1)], Dst::Value),
                op(Opcode::Multiply, &[Mem(1), Mem(1)], Dst::Value),
                op(Opcode::Add, &[Val(1), Val(2)], Dst::Value),
                op(Opcode::Add, &[Val(4), Val(3)], Dst::Store(2)),
            ],
        );
        let pl = plan(&p);
        assert_eq!(pl.segments.len(), 2);
        assert_eq!(placement(&pl, 6), vec![0, 0, 0, 1, 1, 1]);
        assert!(pl.scratch_of.contains_key(&0) && !pl.scratch_of.contains_key(&3));
        // The contiguous operand of log is read in place, not staged.
        let log = pl.calls.iter().find(|c| c.op == 2).unwrap();
        assert_eq!(log.inputs, vec![CallInput::Slot(1)]);
    }

    #[test]
    fn memory_keeps_program_order_per_slot() {
        use Src::{Mem, Val};
        // s0 = exp(s1); s1 = s0 + 1 (as s0 * s0); s2 = s1 * s1: the store to s1 may not move
        // before the call reading s1, and the read of s0 not before the flush of s0.
        let p = program(
            3,
            vec![
                op(Opcode::Exp, &[Mem(1)], Dst::Store(0)),
                op(Opcode::Multiply, &[Mem(0), Mem(0)], Dst::Store(1)),
                op(Opcode::Multiply, &[Mem(1), Mem(1)], Dst::Store(2)),
                op(Opcode::Exp, &[Val(2)], Dst::Value),
            ],
        );
        let pl = plan(&p);
        let at = placement(&pl, 4);
        assert_eq!(at[0], 0, "the first call runs after segment 0");
        assert!(at[1] >= 1, "reads s0 after its flush in segment 1");
        assert!(at[2] >= at[1] && at[3] >= at[2]);
        assert_eq!(pl.segments.len(), at[3] + 2);
    }
}
