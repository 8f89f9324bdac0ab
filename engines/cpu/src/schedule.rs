//! The schedule of a kernel's loop body: segments of inline operations separated by calls of
//! block routines, and the scratch buffers that carry values across them.
//!
//! Values computed inline live in registers within their segment. A value needs a scratch
//! buffer (one chunk long) when a call produces it, when a call consumes it, or when a later
//! segment reads it. Inputs of a call that are not values (memory, constants) are staged into
//! scratch at the end of the segment before the call; results of a call that go to memory are
//! flushed at the start of the segment after it.

use crate::calls;
use crate::program::{Dst, Op, Program, Src};
use std::collections::HashMap;
use vm_ir::{DType, Kind};

/// One thing a segment's loop body does per element.
#[derive(Debug, Clone, Copy)]
pub enum Item {
    /// An inline operation.
    Op(usize),
    /// Store the result of a call (in scratch) to its memory slot.
    Flush(usize),
    /// Put a non-value input of the next call into scratch buffer `s`.
    Stage(Src, usize),
}

/// The schedule of a program: segments of inline work separated by block calls.
pub struct Plan {
    /// Per segment, what its loop body does per element (one more segment than calls).
    pub segments: Vec<Vec<Item>>,
    /// Per call: (op index, scratch buffers of its inputs).
    pub calls: Vec<(usize, Vec<usize>)>,
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
    // Where each value is produced: Ok(segment) for inline ops, Err(call) for calls.
    let mut at: Vec<std::result::Result<usize, usize>> = Vec::new();
    let mut ncalls = 0;
    for op in &p.ops {
        if is_call(op) {
            at.push(Err(ncalls));
            ncalls += 1;
        } else {
            at.push(Ok(ncalls));
        }
    }
    let mut pl = Plan {
        segments: vec![Vec::new(); ncalls + 1],
        calls: Vec::new(),
        scratch_of: HashMap::new(),
        scratch: Vec::new(),
    };
    let need = |v: usize, pl: &mut Plan| {
        if !pl.scratch_of.contains_key(&v) {
            pl.scratch.push(p.ops[v].dtype);
            pl.scratch_of.insert(v, pl.scratch.len() - 1);
        }
    };
    for (k, op) in p.ops.iter().enumerate() {
        if let Err(_c) = at[k] {
            need(k, &mut pl);
        }
        for s in &op.srcs {
            if let Src::Val(v) = *s {
                let v = v as usize;
                let used_in_later = match (at[v], at[k]) {
                    (Ok(sv), Ok(sk)) => sk > sv,
                    (Ok(_), Err(_)) => true,
                    (Err(_), _) => true,
                };
                if used_in_later {
                    need(v, &mut pl);
                }
            }
        }
    }
    for (k, op) in p.ops.iter().enumerate() {
        match at[k] {
            Ok(s) => pl.segments[s].push(Item::Op(k)),
            Err(c) => {
                let mut ins = Vec::new();
                if op.opcode.kind() != Kind::Random {
                    for s in &op.srcs {
                        match *s {
                            Src::Val(v) => ins.push(pl.scratch_of[&(v as usize)]),
                            src => {
                                pl.scratch.push(op.dtype);
                                let b = pl.scratch.len() - 1;
                                pl.segments[c].push(Item::Stage(src, b));
                                ins.push(b);
                            }
                        }
                    }
                }
                if let Dst::Store(_) = op.dst {
                    pl.segments[c + 1].push(Item::Flush(k));
                }
                pl.calls.push((k, ins));
            }
        }
    }
    pl
}
