//! A kernel as the code generator sees it: its structure ([`Program`], the cache key: opcodes,
//! dtypes, where each operand comes from, the layout class of each memory operand) separated from
//! its run-time values ([`Binding`]: addresses, sizes, strides, constants).
//!
//! Building a program forwards values inside the kernel: an input that is exactly a view written
//! earlier in the kernel (or a contracted temporary) reads the value computed there, not memory.
//! The iteration space is squeezed (extent-1 dimensions dropped) and collapsed (adjacent dimensions
//! merged where every operand walks them as one), so most kernels become 1-d or 2-d.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smallvec::SmallVec;
use vm_fusion::Kernel;
use vm_ir::view::row_major_strides;
use vm_ir::{Base, BaseId, DType, Error, Instruction, Kind, Opcode, Operand, Result, Scalar, View};

/// Where an operation's input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Src {
    /// Memory slot `k` (a view read at the current position).
    Mem(u16),
    /// Constant `k` (an argument of the kernel call).
    Const(u16),
    /// The value computed by operation `k` of the program.
    Val(u32),
    /// The row-major position in the iteration space (`range`).
    Index,
}

/// Where an operation's result goes (besides being available to later operations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dst {
    /// Nowhere: a contracted temporary.
    Value,
    /// Memory slot `k`.
    Store(u16),
    /// Combined into the partial results of reduction `k`.
    Reduce(u16),
}

/// The layout class of a memory operand in the innermost (collapsed) dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Inner {
    /// Stride 0: the same element along the row.
    Broadcast,
    /// Stride 1: contiguous.
    Unit,
    /// Any other stride (negative included).
    Strided,
}

/// A memory operand's structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotInfo {
    /// Element type.
    pub dtype: DType,
    /// Innermost stride class.
    pub inner: Inner,
}

/// One operation of a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Op {
    /// The instruction's opcode.
    pub opcode: Opcode,
    /// Result dtype.
    pub dtype: DType,
    /// Dtype of the (last) data inputs: differs from `dtype` for casts, comparisons, logical ops.
    pub in_dtype: DType,
    /// The inputs, in operand order (for `random`: seed and offset constants).
    pub srcs: SmallVec<[Src; 3]>,
    /// Where the result goes.
    pub dst: Dst,
}

/// The structure of a kernel: everything the generated code depends on, nothing it does not.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Program {
    /// Number of (collapsed) dimensions, at least 1.
    pub ndim: usize,
    /// Memory operands.
    pub slots: Vec<SlotInfo>,
    /// Reduction outputs (partial buffers).
    pub partials: Vec<SlotInfo>,
    /// Constant dtypes.
    pub consts: Vec<DType>,
    /// The operations, in order; operation `k` defines value `k`.
    pub ops: Vec<Op>,
}

/// A memory operand's run-time layout.
#[derive(Debug, Clone)]
pub struct SlotBinding {
    /// The view as given (for its base and start).
    pub view: View,
    /// Strides over the collapsed iteration space, in elements.
    pub strides: Vec<i64>,
    /// True when the kernel writes it.
    pub written: bool,
}

/// A reduction's run-time data.
#[derive(Debug, Clone)]
pub struct PartialBinding {
    /// The reduction opcode.
    pub opcode: Opcode,
    /// The reduction's output view.
    pub out: View,
    /// Strides of the row-major partial buffer over the collapsed iteration space, in elements.
    pub strides: Vec<i64>,
}

/// The run-time values of one execution of a program.
#[derive(Debug, Clone)]
pub struct Binding {
    /// Collapsed iteration shape.
    pub shape: Vec<usize>,
    /// Memory operands, as `Program::slots`.
    pub slots: Vec<SlotBinding>,
    /// Reductions, as `Program::partials`.
    pub partials: Vec<PartialBinding>,
    /// Constant values, as `Program::consts`.
    pub consts: Vec<Scalar>,
}

impl Binding {
    /// Number of positions in the iteration space.
    pub fn nelem(&self) -> usize {
        self.shape.iter().product()
    }
}

/// How to make the [`Binding`] of a kernel from any batch of the same structure (the same
/// partition-cache entry) without building its program again: where each memory operand,
/// reduction output and constant comes from, and the collapsed layout, which the structure fixes.
#[derive(Debug, Clone)]
pub struct Recipe {
    shape: Vec<usize>,
    /// (position in the batch, operand index, collapsed strides, written)
    slots: Vec<(usize, usize, Vec<i64>, bool)>,
    /// (position of the reduction, its opcode, collapsed strides)
    partials: Vec<(usize, Opcode, Vec<i64>)>,
    /// (position, operand index)
    consts: Vec<(usize, usize)>,
}

impl Recipe {
    /// The binding for `batch`, which must have the structure of the batch the recipe was
    /// made from (else an internal error, never a wrong binding of another shape).
    pub fn bind(&self, batch: &[Instruction]) -> Result<Binding> {
        let mismatch = || Error::Internal("a kernel recipe applied to a batch of another structure".into());
        let operand = |pos: usize, k: usize| batch.get(pos).and_then(|i| i.operands.get(k)).ok_or_else(mismatch);
        let slots = self
            .slots
            .iter()
            .map(|(pos, k, strides, written)| {
                let view = operand(*pos, *k)?.as_view().ok_or_else(mismatch)?.clone();
                Ok(SlotBinding { view, strides: strides.clone(), written: *written })
            })
            .collect::<Result<_>>()?;
        let partials = self
            .partials
            .iter()
            .map(|(pos, opcode, strides)| {
                let out = operand(*pos, 0)?.as_view().ok_or_else(mismatch)?.clone();
                Ok(PartialBinding { opcode: *opcode, out, strides: strides.clone() })
            })
            .collect::<Result<_>>()?;
        let consts = self
            .consts
            .iter()
            .map(|&(pos, k)| match operand(pos, k)? {
                Operand::Const(c) => Ok(*c),
                Operand::View(_) => Err(mismatch()),
            })
            .collect::<Result<_>>()?;
        Ok(Binding { shape: self.shape.clone(), slots, partials, consts })
    }
}

struct Builder {
    slots: Vec<(View, bool)>,
    /// Where each slot, partial and constant was first met: (position, operand index).
    slot_from: Vec<(usize, usize)>,
    partial_from: Vec<usize>,
    const_from: Vec<(usize, usize)>,
    partials: Vec<(Opcode, View, usize)>, // (opcode, out, axis)
    consts: Vec<Scalar>,
    ops: Vec<Op>,
    /// Latest value written to each slot.
    latest: HashMap<u16, u32>,
    /// The kernel's contracted temporaries.
    contracted: HashSet<BaseId>,
    /// The latest value of each contracted temporary (kernel formation guarantees that every
    /// access of one is exactly the view that first wrote it).
    temps: HashMap<BaseId, u32>,
}

impl Builder {
    fn slot(&mut self, v: &View, from: (usize, usize)) -> u16 {
        let found = self.slots.iter().position(|(w, _)| w.is_identical(v));
        match found {
            Some(k) => k as u16,
            None => {
                self.slots.push((v.clone(), false));
                self.slot_from.push(from);
                (self.slots.len() - 1) as u16
            }
        }
    }

    /// The source of operand `k` of the instruction at `pos`.
    fn src(&mut self, pos: usize, k: usize, o: &Operand) -> Result<Src> {
        match o {
            Operand::Const(s) => {
                self.consts.push(*s);
                self.const_from.push((pos, k));
                Ok(Src::Const((self.consts.len() - 1) as u16))
            }
            Operand::View(v) if self.contracted.contains(&v.base.id) => self
                .temps
                .get(&v.base.id)
                .map(|&val| Src::Val(val))
                .ok_or_else(|| Error::Internal(format!("contracted temporary {} read before written", v.base.id))),
            Operand::View(v) => {
                let k = self.slot(v, (pos, k));
                Ok(match self.latest.get(&k) {
                    Some(&val) => Src::Val(val),
                    None => Src::Mem(k),
                })
            }
        }
    }

    fn add(&mut self, pos: usize, instr: &Instruction) -> Result<()> {
        let out = instr.output().ok_or_else(|| Error::Internal(format!("{} in a kernel", instr.opcode)))?;
        let kind = instr.opcode.kind();
        let srcs: SmallVec<[Src; 3]> = match kind {
            Kind::Range => SmallVec::from_slice(&[Src::Index]),
            Kind::Random => {
                let mut s = SmallVec::new();
                for (k, o) in instr.operands.iter().enumerate().take(3).skip(1) {
                    s.push(self.src(pos, k, o)?);
                }
                s
            }
            // The inputs are the operands after the output.
            _ => instr.inputs().iter().enumerate().map(|(k, o)| self.src(pos, k + 1, o)).collect::<Result<_>>()?,
        };
        let in_dtype = instr.inputs().last().map(Operand::dtype).unwrap_or(out.dtype());
        let val = self.ops.len() as u32;
        let dst = if kind == Kind::Reduce {
            let axis = instr.axis().ok_or_else(|| Error::Internal("reduction without axis".into()))?;
            self.partials.push((instr.opcode, out.clone(), axis));
            self.partial_from.push(pos);
            Dst::Reduce((self.partials.len() - 1) as u16)
        } else if self.contracted.contains(&out.base.id) {
            self.temps.insert(out.base.id, val);
            Dst::Value
        } else {
            let k = self.slot(out, (pos, 0));
            self.slots[k as usize].1 = true;
            self.latest.insert(k, val);
            Dst::Store(k)
        };
        self.ops.push(Op { opcode: instr.opcode, dtype: out.dtype(), in_dtype, srcs, dst });
        Ok(())
    }
}

/// Squeezes and collapses `shape` for operands with the given strides (in elements, one vector
/// per operand). Returns the collapsed shape and strides (at least one dimension).
pub fn collapse(shape: &[usize], strides: &[Vec<i64>]) -> (Vec<usize>, Vec<Vec<i64>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
    let mut cshape: Vec<usize> = Vec::new();
    let mut cstrides: Vec<Vec<i64>> = vec![Vec::new(); strides.len()];
    for &d in &keep {
        let mergeable = !cshape.is_empty()
            && strides.iter().zip(&cstrides).all(|(s, c)| *c.last().unwrap() == s[d] * shape[d] as i64);
        if mergeable {
            *cshape.last_mut().unwrap() *= shape[d];
            for (s, c) in strides.iter().zip(cstrides.iter_mut()) {
                *c.last_mut().unwrap() = s[d];
            }
        } else {
            cshape.push(shape[d]);
            for (s, c) in strides.iter().zip(cstrides.iter_mut()) {
                c.push(s[d]);
            }
        }
    }
    if cshape.is_empty() {
        cshape.push(1);
        for c in &mut cstrides {
            c.push(0);
        }
    }
    (cshape, cstrides)
}

fn inner_class(stride: i64) -> Inner {
    match stride {
        0 => Inner::Broadcast,
        1 => Inner::Unit,
        _ => Inner::Strided,
    }
}

/// Builds the program and binding of `kernel` (positions into `batch`).
pub fn build(kernel: &Kernel, batch: &[Instruction]) -> Result<(Program, Binding)> {
    build_with_recipe(kernel, batch).map(|(p, b, _)| (p, b))
}

/// [`build`], with the [`Recipe`] that binds the program to later batches of the same structure.
pub fn build_with_recipe(kernel: &Kernel, batch: &[Instruction]) -> Result<(Program, Binding, Recipe)> {
    let mut b = Builder {
        slots: Vec::new(),
        slot_from: Vec::new(),
        partial_from: Vec::new(),
        const_from: Vec::new(),
        partials: Vec::new(),
        consts: Vec::new(),
        ops: Vec::new(),
        latest: HashMap::default(),
        contracted: kernel.temps.iter().copied().collect(),
        temps: HashMap::default(),
    };
    for &i in &kernel.instrs {
        b.add(i, &batch[i]).map_err(|e| e.at_instruction(i))?;
    }
    // Dead stores: a slot written again later in the kernel needs only its last store (every
    // read after the first write is forwarded from a value, never from memory).
    let mut stored_later: Vec<u16> = Vec::new();
    for op in b.ops.iter_mut().rev() {
        if let Dst::Store(k) = op.dst {
            if stored_later.contains(&k) {
                op.dst = Dst::Value;
            } else {
                stored_later.push(k);
            }
        }
    }
    let shape: Vec<usize> = kernel.shape.to_vec();
    let mut strides: Vec<Vec<i64>> = b.slots.iter().map(|(v, _)| v.stride.to_vec()).collect();
    for (_, out, axis) in &b.partials {
        let mut s = row_major_strides(&out.shape).to_vec();
        s.insert(*axis, 0);
        strides.push(s);
    }
    let (cshape, cstrides) = collapse(&shape, &strides);
    let ndim = cshape.len();
    let nslots = b.slots.len();
    let info = |dtype: DType, s: &[i64]| SlotInfo { dtype, inner: inner_class(s[ndim - 1]) };
    let program = Program {
        ndim,
        slots: b.slots.iter().zip(&cstrides).map(|((v, _), s)| info(v.dtype(), s)).collect(),
        partials: b.partials.iter().zip(&cstrides[nslots..]).map(|((_, o, _), s)| info(o.dtype(), s)).collect(),
        consts: b.consts.iter().map(|s| s.dtype()).collect(),
        ops: b.ops,
    };
    let binding = Binding {
        shape: cshape,
        slots: b
            .slots
            .into_iter()
            .zip(cstrides.iter())
            .map(|((view, written), s)| SlotBinding { view, strides: s.clone(), written })
            .collect(),
        partials: b
            .partials
            .into_iter()
            .zip(cstrides[nslots..].iter())
            .map(|((opcode, out, _), s)| PartialBinding { opcode, out, strides: s.clone() })
            .collect(),
        consts: b.consts,
    };
    let recipe = Recipe {
        shape: binding.shape.clone(),
        slots: b
            .slot_from
            .iter()
            .zip(&binding.slots)
            .map(|(&(pos, k), s)| (pos, k, s.strides.clone(), s.written))
            .collect(),
        partials: b
            .partial_from
            .iter()
            .zip(&binding.partials)
            .map(|(&pos, p)| (pos, p.opcode, p.strides.clone()))
            .collect(),
        consts: b.const_from,
    };
    Ok((program, binding, recipe))
}

/// The bases a binding touches in memory (for allocation), without duplicates.
pub fn bases(binding: &Binding) -> Vec<Base> {
    let mut out: Vec<Base> = Vec::new();
    let views = binding.slots.iter().map(|s| &s.view).chain(binding.partials.iter().map(|p| &p.out));
    for v in views {
        if !out.iter().any(|b| b.id == v.base.id) {
            out.push(v.base);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_merges_contiguous_and_drops_unit_dims() {
        let (s, st) = collapse(&[4, 1, 5], &[vec![5, 99, 1], vec![0, 0, 0]]);
        assert_eq!(s, vec![20]);
        assert_eq!(st, vec![vec![1], vec![0]]);
        let (s, st) = collapse(&[4, 5], &[vec![6, 1], vec![5, 1]]);
        assert_eq!(s, vec![4, 5]);
        assert_eq!(st, vec![vec![6, 1], vec![5, 1]]);
        let (s, st) = collapse(&[], &[vec![]]);
        assert_eq!((s, st), (vec![1], vec![vec![0]]));
        let (s, _) = collapse(&[3, 4], &[vec![-4, -1]]);
        assert_eq!(s, vec![12]);
    }
}
