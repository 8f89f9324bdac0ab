//! Stateless batch rewrites done before kernel formation: the passes `flat-reductions`,
//! `widen-f32-sums`, `subview-fills` and `reciprocals`.
//!
//! A full reduction of a multi-dimensional array reaches the engine as a reduction along axis 0
//! of a flat (1-D, contiguous) view of it, e.g. `delta = sum(abs(work - center))` in the heat
//! equation. That view has another shape than the kernel that computed the array, so the
//! reduction would start a kernel of its own and the array could not be contracted: one more
//! pass over memory. When the same memory was written earlier in the batch through a contiguous
//! view of shape `S` (more than one dimension), the reduction is split into a reduction along
//! the last axis of the `S`-shaped view (which fuses with the producer) into a small partial
//! array, and a reduction of that partial array, flat, along axis 0. Only floating-point
//! reductions whose input and output dtypes agree are split: the result differs from the
//! unsplit one by the reassociation of the sum, as block partials already do.
//!
//! A constant written into a row, a column, a diagonal or one element of an array that the
//! batch has just computed (`fill_diagonal(r, 1)` after `r = sqrt(...)`) writes a view that
//! partially overlaps the array: it cannot join the kernel that computed the array, so the array
//! is written to memory, patched, and read back by whatever follows. [`fold_subview_fills`]
//! rewrites such a write into `a = select(mask, c, a)` over the whole array, `mask` computed
//! element-wise from per-axis position ranges (`i == j` for the main diagonal): the same values,
//! as an element-wise instruction on exactly the array's view, which fuses with the producer
//! and its readers, and lets the array be contracted.
//!
//! A float32 sum is computed in float64 and rounded once ([`widen_float32_reductions`]):
//! per-block partial sums in float32 would drift by dozens of ulp over millions of elements.
//! (Float products are not widened: they run in order, in their own dtype, as NumPy's do.)
//!
//! A division by a constant power of two (`(h1 + h0) / 2`) becomes a multiplication by its
//! reciprocal, which is exact: the same results bit for bit, without the division's cost
//! ([`exact_reciprocals`]).

use crate::{Context, Pass, Rewritten, bases};
use rustc_hash::FxHashMap as HashMap;
use vm_ir::{Base, BaseId, DType, Instruction, Kind, Opcode, Operand, Scalar, View};

/// True when `instr` is a full floating-point reduction of a flat contiguous view.
fn flat_full_reduction(instr: &Instruction) -> Option<&View> {
    // A float product multiplies in order (`vm_fusion::Options::ordered_float_products`).
    if instr.opcode.kind() != Kind::Reduce || instr.axis() != Some(0) || vm_fusion::is_float_product(instr) {
        return None;
    }
    let out = instr.output()?;
    let input = instr.operands.get(1)?.as_view()?;
    let float = matches!(out.dtype(), DType::F32 | DType::F64);
    (float
        && out.dtype() == input.dtype()
        && out.ndim() == 0
        && input.ndim() == 1
        && input.stride[0] == 1
        && input.shape[0] > 1)
        .then_some(input)
}

/// True when `p` writes element-wise through a contiguous multi-dimensional view, the kind of
/// write whose shape a flat reduction of the same memory can be split by.
fn shaped_write(p: &Instruction) -> Option<&View> {
    let w = p.output()?;
    (p.opcode.kind().is_elementwise() && w.ndim() >= 2 && w.shape.last().is_some_and(|&n| n > 1) && w.is_contiguous())
        .then_some(w)
}

/// The batch with full reductions of flat views split as the module doc says, and for each of
/// its instructions the position in `batch` of the instruction it comes from; `None` when
/// nothing is split (the common case costs one pass over the opcodes).
pub fn split_flat_reductions(batch: &[Instruction]) -> Option<(Vec<Instruction>, Vec<usize>)> {
    if !batch.iter().any(|i| flat_full_reduction(i).is_some()) {
        return None;
    }
    // Decide every split before copying anything: most batches with a flat reduction (a 1-d
    // sum, say) have nothing to split, and copying the batch costs more than deciding. One pass:
    // the latest shaped write to each (base, start, size) so far is the producer whose shape
    // a flat reduction of exactly that memory takes.
    let mut latest: HashMap<(BaseId, i64, usize), usize> = HashMap::default();
    let mut splits: Vec<(usize, [Instruction; 3])> = Vec::new();
    for (i, instr) in batch.iter().enumerate() {
        if let Some(flat) = flat_full_reduction(instr)
            && let Some(&p) = latest.get(&(flat.base.id, flat.start, flat.nelem()))
            && let Some(w) = batch[p].output()
            && let Some(three) = split_one(instr, flat, w, splits.len() as u64)
        {
            splits.push((i, three));
        } else if let Some(w) = shaped_write(instr) {
            latest.insert((w.base.id, w.start, w.nelem()), i);
        }
    }
    if splits.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(batch.len() + 2 * splits.len());
    let mut origin = Vec::with_capacity(batch.len() + 2 * splits.len());
    let mut splits = splits.into_iter().peekable();
    for (i, instr) in batch.iter().enumerate() {
        match splits.next_if(|(at, _)| *at == i) {
            Some((_, three)) => {
                out.extend(three);
                origin.extend([i; 3]);
            }
            None => {
                out.push(instr.clone());
                origin.push(i);
            }
        }
    }
    Some((out, origin))
}

/// The three instructions that replace `instr`, a full reduction of the flat view `flat` whose
/// memory `w` (a shaped write) produced; its partial results go to the `next`-th partial base.
fn split_one(instr: &Instruction, flat: &View, w: &View, next: u64) -> Option<[Instruction; 3]> {
    let shaped = View::contiguous(flat.base, flat.start, &w.shape).ok()?;
    let lead = &w.shape[..w.ndim() - 1];
    let m: usize = lead.iter().product();
    let part = Base { id: BaseId(bases::PARTIAL - next), dtype: flat.dtype(), nelem: m as u64 };
    let part_view = View::contiguous(part, 0, lead).ok()?;
    let part_flat = View::contiguous(part, 0, &[m]).ok()?;
    let axis = Scalar::I64(w.ndim() as i64 - 1);
    let first =
        Instruction::new(instr.opcode, [Operand::View(part_view.clone()), Operand::View(shaped), Operand::Const(axis)]);
    let second = Instruction::new(
        instr.opcode,
        [instr.operands[0].clone(), Operand::View(part_flat), Operand::Const(Scalar::I64(0))],
    );
    let free = Instruction::new(Opcode::Free, [Operand::View(part_view)]);
    Some([first, second, free])
}

/// The elements of an array `V` that a write through a view `W` of its memory picks: positions
/// whose index on each axis of `fixed` is the value given, and whose indexes on the axes of
/// `diagonal` are `start + k` (each axis its own start) for one `k` in `0..len`.
#[derive(Debug, PartialEq)]
struct Pattern {
    fixed: Vec<(usize, i64)>,
    diagonal: Vec<(usize, i64)>,
    len: usize,
}

/// The pattern of `w` inside `v` (a contiguous row-major view of the same base), when `w` is a
/// single element or a 1-d walk that steps by one along a set of axes of `v` without wrapping
/// (a row, a column, a diagonal).
fn pattern(v: &View, w: &View) -> Option<Pattern> {
    let rel = w.start.checked_sub(v.start)?;
    let (len, step) = match w.ndim() {
        0 => (1, 0),
        1 if w.shape[0] == 1 => (1, 0),
        1 => (w.shape[0], w.stride[0]),
        _ => return None,
    };
    if len == 0 || step < 0 || rel < 0 {
        return None;
    }
    let mut at = vec![0i64; v.ndim()];
    let mut r = rel;
    for d in (0..v.ndim()).rev() {
        let n = v.shape[d] as i64;
        at[d] = r % n;
        r /= n;
    }
    if r != 0 {
        return None;
    }
    // Row-major dense strides of extents above 1 are super-increasing: a step is a sum of
    // distinct strides in at most one way, found from the outermost axis in.
    let mut rest = step;
    let on: Vec<bool> = v
        .shape
        .iter()
        .zip(&v.stride)
        .map(|(&n, &s)| {
            let take = n > 1 && rest >= s;
            if take {
                rest -= s;
            }
            take
        })
        .collect();
    if rest != 0 || (len > 1 && !on.contains(&true)) {
        return None;
    }
    let mut p = Pattern { fixed: Vec::new(), diagonal: Vec::new(), len };
    for (d, &on) in on.iter().enumerate() {
        if on {
            if at[d] as usize + len > v.shape[d] {
                return None; // the walk wraps into the next row
            }
            p.diagonal.push((d, at[d]));
        } else if v.shape[d] > 1 {
            p.fixed.push((d, at[d]));
        }
    }
    Some(p)
}

/// The constant written by `instr` and the view it writes, when it is a fill.
fn fill(instr: &Instruction) -> Option<(&View, Scalar)> {
    match (instr.opcode, instr.operands.first(), instr.operands.get(1)) {
        (Opcode::Identity, Some(Operand::View(w)), Some(Operand::Const(c))) => Some((w, *c)),
        _ => None,
    }
}

/// How far back (in instructions) a constant write looks for the array it patches.
const FILL_WINDOW: usize = 64;

/// The most constant writes folded into one array in a batch.
const MAX_FOLDS_PER_ARRAY: usize = 4;

/// The array view that the constant write at `i` through `w` patches (within the
/// [`FILL_WINDOW`] instructions before it): the output of the latest
/// earlier element-wise write to the same base, contiguous and larger than the write (earlier
/// fills of the same array that fold are looked through: `found` holds what this function
/// answered for each earlier position, so a loop's thousand stores into one array cost a
/// window each, not a window per store they chain through), with only element-wise or system
/// instructions in between, so that the folded write joins its kernel.
fn patched_array<'b>(batch: &'b [Instruction], found: &[Option<&'b View>], i: usize, w: &View) -> Option<&'b View> {
    for (j, p) in batch[i.saturating_sub(FILL_WINDOW)..i].iter().enumerate().rev() {
        let j = i.saturating_sub(FILL_WINDOW) + j;
        let kind = p.opcode.kind();
        if kind == Kind::System {
            continue;
        }
        let out = p.output()?;
        if !kind.is_elementwise() {
            return None;
        }
        if out.base.id != w.base.id {
            continue;
        }
        if out.is_contiguous() && out.nelem() > w.nelem() {
            return Some(out);
        }
        // An earlier fill of the same array that folds into it patches the same array.
        let (earlier, _) = fill(p)?;
        let v = found[j]?;
        return (pattern(v, earlier).is_some() && v.nelem() > w.nelem()).then_some(v);
    }
    None
}

/// The instructions that replace the constant write of `c` through `w` into `v`: the mask of
/// the pattern from the position ranges `ranges` (1-d, of one dtype, i64 or the array's float
/// type; one for each axis the pattern names), then the select. `fresh` names new temporaries.
fn folded_fill(
    v: &View,
    c: Scalar,
    p: &Pattern,
    ranges: &[Option<Base>],
    fresh: &mut impl FnMut(DType) -> Base,
) -> Vec<Instruction> {
    let along = |d: usize| {
        let mut stride = vec![0i64; v.ndim()];
        stride[d] = 1;
        let range = ranges[d].expect("a range for every axis of the pattern");
        Operand::View(View::new(range, 0, &v.shape, &stride).expect("a range broadcast to v's shape"))
    };
    let mut out = Vec::new();
    let mut temp = |dtype: DType, out: &mut Vec<Instruction>, op: Opcode, inputs: [Operand; 2]| {
        let t = View::row_major(fresh(dtype), &v.shape);
        let [a, b] = inputs;
        out.push(Instruction::new(op, [Operand::View(t.clone()), a, b]));
        t
    };
    // Positions in the ranges' dtype (the array's float type where it holds them exactly, so
    // that the masks vectorise with the array's values).
    let rdt = ranges.iter().flatten().next().map_or(DType::I64, |r| r.dtype);
    let position = |x: i64| Operand::Const(Scalar::I64(x).cast(rdt));
    let mut conds: Vec<View> = Vec::new();
    for &(d, x) in &p.fixed {
        conds.push(temp(DType::Bool, &mut out, Opcode::Equal, [along(d), position(x)]));
    }
    if let Some(&(d0, x0)) = p.diagonal.first() {
        for &(d, x) in &p.diagonal[1..] {
            if x == x0 {
                // The diagonal through the origin of these axes: i == j.
                conds.push(temp(DType::Bool, &mut out, Opcode::Equal, [along(d), along(d0)]));
                continue;
            }
            let diff = temp(rdt, &mut out, Opcode::Subtract, [along(d), along(d0)]);
            conds.push(temp(DType::Bool, &mut out, Opcode::Equal, [Operand::View(diff.clone()), position(x - x0)]));
            out.push(Instruction::new(Opcode::Free, [Operand::View(diff)]));
        }
        if x0 > 0 {
            conds.push(temp(DType::Bool, &mut out, Opcode::GreaterEqual, [along(d0), position(x0)]));
        }
        if (x0 as usize) + p.len < v.shape[d0] {
            conds.push(temp(DType::Bool, &mut out, Opcode::Less, [along(d0), position(x0 + p.len as i64)]));
        }
    }
    if conds.is_empty() {
        // The pattern is all of `v`: never for a write smaller than `v` (`patched_array`).
        return vec![Instruction::new(Opcode::Identity, [Operand::View(v.clone()), Operand::Const(c)])];
    }
    let mut mask = conds.remove(0);
    for c in conds {
        let both =
            temp(DType::Bool, &mut out, Opcode::LogicalAnd, [Operand::View(mask.clone()), Operand::View(c.clone())]);
        out.push(Instruction::new(Opcode::Free, [Operand::View(mask)]));
        out.push(Instruction::new(Opcode::Free, [Operand::View(c)]));
        mask = both;
    }
    out.push(Instruction::new(
        Opcode::Select,
        [
            Operand::View(v.clone()),
            Operand::View(mask.clone()),
            Operand::Const(c.cast(v.dtype())),
            Operand::View(v.clone()),
        ],
    ));
    out.push(Instruction::new(Opcode::Free, [Operand::View(mask)]));
    out
}

/// The synthetic bases of one batch's folded fills: temporaries, and the position ranges (one per
/// extent and dtype, made at the start of the batch, freed at its end).
#[derive(Default)]
struct FillBases {
    made: u64,
    ranges: Vec<Base>,
}

impl FillBases {
    fn fresh(&mut self, dtype: DType, nelem: usize) -> Base {
        self.made += 1;
        Base { id: BaseId(bases::FILL - self.made), dtype, nelem: nelem as u64 }
    }

    fn range(&mut self, n: usize, dtype: DType) -> Base {
        match self.ranges.iter().find(|b| b.nelem == n as u64 && b.dtype == dtype) {
            Some(b) => *b,
            None => {
                let b = self.fresh(dtype, n);
                self.ranges.push(b);
                b
            }
        }
    }
}

/// The batch with every float32 sum (`add_reduce` of f32 into f32) computed in float64 and
/// rounded once at the end, and for each instruction the position in `batch` it comes from; `None` when there is none. Per-block partial sums in float32 lose
/// about one part in 10^5 over a million elements (NumPy's pairwise sum keeps f32 sums to a few
/// ulp, and so does a float64 accumulator). The widening cast
/// fuses into the reduction's kernel (its temporary is contracted), so the reduction reads the
/// same memory. Reductions of broadcast views, which visit more positions than their base has,
/// are left alone.
pub fn widen_float32_reductions(batch: &[Instruction]) -> Option<(Vec<Instruction>, Vec<usize>)> {
    let narrow = |instr: &Instruction| {
        instr.opcode == Opcode::AddReduce
            && instr.operands[0].dtype() == DType::F32
            && instr.operands[1].as_view().is_some_and(|v| {
                v.dtype() == DType::F32 && v.shape.iter().zip(&v.stride).all(|(&n, &s)| n <= 1 || s != 0)
            })
    };
    if !batch.iter().any(narrow) {
        return None;
    }
    let mut out = Vec::with_capacity(batch.len() + 4);
    let mut origin = Vec::with_capacity(batch.len() + 4);
    let mut made = 0u64;
    let mut fresh = |dtype: DType, nelem: usize| {
        made += 1;
        Base { id: BaseId(bases::WIDE - made), dtype, nelem: nelem as u64 }
    };
    for (i, instr) in batch.iter().enumerate() {
        if !narrow(instr) {
            out.push(instr.clone());
            origin.push(i);
            continue;
        }
        let (Some(res), Some(input)) = (instr.operands[0].as_view(), instr.operands[1].as_view()) else {
            unreachable!("a reduction of a view into a view")
        };
        let wide_in = View::row_major(fresh(DType::F64, input.nelem()), &input.shape);
        let wide_out = View::row_major(fresh(DType::F64, res.nelem()), &res.shape);
        let mut sum = instr.clone();
        sum.operands[0] = Operand::View(wide_out.clone());
        sum.operands[1] = Operand::View(wide_in.clone());
        out.extend([
            Instruction::new(Opcode::Identity, [Operand::View(wide_in.clone()), Operand::View(input.clone())]),
            sum,
            Instruction::new(Opcode::Free, [Operand::View(wide_in)]),
            Instruction::new(Opcode::Identity, [Operand::View(res.clone()), Operand::View(wide_out.clone())]),
            Instruction::new(Opcode::Free, [Operand::View(wide_out)]),
        ]);
        origin.extend([i; 5]);
    }
    Some((out, origin))
}

/// The reciprocal of `c` when dividing by `c` and multiplying by the reciprocal give the same
/// result for every dividend: `c` a float power of two (normal), whose reciprocal is exact.
/// Both then round the same exact quotient, so the results are bit-identical, special values
/// and subnormals included.
fn exact_reciprocal(c: Scalar) -> Option<Scalar> {
    match c {
        Scalar::F64(x) if x.is_normal() && x.to_bits() & ((1 << 52) - 1) == 0 => Some(Scalar::F64(1.0 / x)),
        Scalar::F32(x) if x.is_normal() && x.to_bits() & ((1 << 23) - 1) == 0 => Some(Scalar::F32(1.0 / x)),
        _ => None,
    }
}

/// The batch with every division by a constant power of two (`(a + b) / 2`) made a
/// multiplication by its exact reciprocal, position for position; `None` when there is none.
/// A division costs several multiplications' time, and stencils are full of halvings.
pub fn exact_reciprocals(batch: &[Instruction]) -> Option<Vec<Instruction>> {
    let divisor = |instr: &Instruction| match (instr.opcode, instr.operands.get(2)) {
        (Opcode::Divide, Some(&Operand::Const(c))) => exact_reciprocal(c),
        _ => None,
    };
    let first = batch.iter().position(|instr| divisor(instr).is_some())?;
    let mut out = batch.to_vec();
    for instr in &mut out[first..] {
        if let Some(r) = divisor(instr) {
            instr.opcode = Opcode::Multiply;
            instr.operands[2] = Operand::Const(r);
        }
    }
    Some(out)
}

/// The batch with constant writes into rows, columns, diagonals or elements of arrays just
/// computed folded into selects, as the module doc says, and for each of its instructions the
/// position in `batch` it comes from; `None` when there is nothing to fold.
pub fn fold_subview_fills(batch: &[Instruction]) -> Option<(Vec<Instruction>, Vec<usize>)> {
    let mut folds: Vec<(usize, &View, Scalar, Pattern)> = Vec::new();
    let mut found: Vec<Option<&View>> = vec![None; batch.len()];
    for (i, instr) in batch.iter().enumerate() {
        let Some((w, c)) = fill(instr) else { continue };
        found[i] = patched_array(batch, &found, i, w);
        let Some(v) = found[i] else { continue };
        if let Some(p) = pattern(v, w) {
            folds.push((i, v, c, p));
        }
    }
    // Each fold costs a pass over the whole array: a loop storing element by element
    // (`m[i, j] = c`) stays a sequence of stores.
    let mut per_base: HashMap<BaseId, usize> = HashMap::default();
    for (_, v, _, _) in &folds {
        *per_base.entry(v.base.id).or_default() += 1;
    }
    folds.retain(|(_, v, _, _)| per_base[&v.base.id] <= MAX_FOLDS_PER_ARRAY);
    if folds.is_empty() {
        return None;
    }
    let mut bases = FillBases::default();
    let mut replaced: Vec<(usize, Vec<Instruction>)> = Vec::new();
    for (i, v, c, p) in &folds {
        let used = |d: usize| p.fixed.iter().chain(&p.diagonal).any(|&(e, _)| e == d);
        // Integers up to 2^24 (f32) or 2^53 (f64) are exact in the array's float type.
        let exact = match v.dtype() {
            DType::F32 => 1usize << 24,
            DType::F64 => 1usize << 53,
            _ => 0,
        };
        let dtype = if v.shape.iter().all(|&n| n <= exact) { v.dtype() } else { DType::I64 };
        let axes: Vec<Option<Base>> =
            v.shape.iter().enumerate().map(|(d, &n)| used(d).then(|| bases.range(n, dtype))).collect();
        let nelem = v.nelem();
        let code = folded_fill(v, *c, p, &axes, &mut |dtype| bases.fresh(dtype, nelem));
        replaced.push((*i, code));
    }
    let ranges = bases.ranges;
    let mut out =
        Vec::with_capacity(batch.len() + 2 * ranges.len() + replaced.iter().map(|r| r.1.len()).sum::<usize>());
    let mut origin = Vec::with_capacity(out.capacity());
    for r in &ranges {
        out.push(Instruction::new(Opcode::Range, [Operand::View(View::of_base(*r))]));
        origin.push(0);
    }
    let mut replaced = replaced.into_iter().peekable();
    for (i, instr) in batch.iter().enumerate() {
        match replaced.next_if(|(at, _)| *at == i) {
            Some((_, code)) => {
                origin.extend(std::iter::repeat_n(i, code.len()));
                out.extend(code);
            }
            None => {
                out.push(instr.clone());
                origin.push(i);
            }
        }
    }
    for r in &ranges {
        out.push(Instruction::new(Opcode::Free, [Operand::View(View::of_base(*r))]));
        origin.push(batch.len() - 1);
    }
    Some((out, origin))
}

/// The pass `flat-reductions`: [`split_flat_reductions`].
pub struct FlatReductions;

impl Pass for FlatReductions {
    fn name(&self) -> &'static str {
        "flat-reductions"
    }

    fn run(&mut self, work: &mut Rewritten<'_>, _: &mut Context<'_>) {
        work.apply(split_flat_reductions);
    }
}

/// The pass `widen-f32-sums`: [`widen_float32_reductions`].
pub struct WidenFloat32Sums;

impl Pass for WidenFloat32Sums {
    fn name(&self) -> &'static str {
        "widen-f32-sums"
    }

    fn run(&mut self, work: &mut Rewritten<'_>, _: &mut Context<'_>) {
        work.apply(widen_float32_reductions);
    }
}

/// The pass `subview-fills`: [`fold_subview_fills`].
pub struct SubviewFills;

impl Pass for SubviewFills {
    fn name(&self) -> &'static str {
        "subview-fills"
    }

    fn run(&mut self, work: &mut Rewritten<'_>, _: &mut Context<'_>) {
        work.apply(fold_subview_fills);
    }
}

/// The pass `reciprocals`: [`exact_reciprocals`].
pub struct ExactReciprocals;

impl Pass for ExactReciprocals {
    fn name(&self) -> &'static str {
        "reciprocals"
    }

    fn run(&mut self, work: &mut Rewritten<'_>, _: &mut Context<'_>) {
        work.replace(exact_reciprocals);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_of_rows_columns_diagonals_and_elements() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 6 * 7 };
        let v = View::contiguous(b, 0, &[6, 7]).unwrap();
        let w = |start: i64, shape: &[usize], stride: &[i64]| View::new(b, start, shape, stride).unwrap();
        let p = |fixed: &[(usize, i64)], diagonal: &[(usize, i64)], len| Pattern {
            fixed: fixed.to_vec(),
            diagonal: diagonal.to_vec(),
            len,
        };
        assert_eq!(pattern(&v, &w(0, &[6], &[8])), Some(p(&[], &[(0, 0), (1, 0)], 6)));
        assert_eq!(pattern(&v, &w(1, &[5], &[8])), Some(p(&[], &[(0, 0), (1, 1)], 5)));
        assert_eq!(pattern(&v, &w(14, &[7], &[1])), Some(p(&[(0, 2)], &[(1, 0)], 7)));
        assert_eq!(pattern(&v, &w(3, &[6], &[7])), Some(p(&[(1, 3)], &[(0, 0)], 6)));
        assert_eq!(pattern(&v, &w(40, &[], &[])), Some(p(&[(0, 5), (1, 5)], &[], 1)));
        // Wrapping into the next row, steps that are no sum of the axes' strides, 2-d writes.
        assert_eq!(pattern(&v, &w(5, &[3], &[8])), None);
        assert_eq!(pattern(&v, &w(0, &[4], &[2])), None);
        assert_eq!(pattern(&v, &w(8, &[2, 2], &[7, 1])), None);
        assert_eq!(pattern(&v, &w(5, &[2], &[-1])), None);
    }

    #[test]
    fn exact_reciprocals_are_the_powers_of_two() {
        for k in -1022..=1023 {
            let c = 2f64.powi(k);
            for c in [c, -c] {
                let Some(Scalar::F64(r)) = exact_reciprocal(Scalar::F64(c)) else { panic!("2^{k}") };
                for x in [1.0, 3.0, 0.1, -7.5e-300, 5e-324, 1.7e308, f64::MAX, 0.0, -0.0, f64::INFINITY, f64::NAN] {
                    let (q, p) = (x / c, x * r);
                    assert!(q.to_bits() == p.to_bits() || (q.is_nan() && p.is_nan()), "{x} / {c}: {q} vs {p}");
                }
            }
        }
        for k in -126..=127 {
            let c = 2f32.powi(k);
            let Some(Scalar::F32(r)) = exact_reciprocal(Scalar::F32(c)) else { panic!("2^{k}") };
            for x in [1.0f32, 0.3, 1e-45, 3.4e38, -2.5e-40] {
                assert_eq!((x / c).to_bits(), (x * r).to_bits(), "{x} / {c}");
            }
        }
        for c in [3.0, 0.1, 0.0, -0.0, 5e-324, f64::INFINITY, f64::NAN] {
            assert_eq!(exact_reciprocal(Scalar::F64(c)), None, "{c}");
        }
        assert_eq!(exact_reciprocal(Scalar::I64(2)), None);
    }

    #[test]
    fn divisions_by_powers_of_two_become_multiplications() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 4 };
        let v = || Operand::View(View::of_base(b));
        let div = |c: f64| Instruction::new(Opcode::Divide, [v(), v(), Scalar::F64(c).into()]);
        assert!(exact_reciprocals(&[div(3.0), Instruction::new(Opcode::Divide, [v(), v(), v()])]).is_none());
        let out = exact_reciprocals(&[div(3.0), div(2.0), div(-0.25)]).unwrap();
        assert_eq!(out[0], div(3.0));
        assert_eq!(out[1], Instruction::new(Opcode::Multiply, [v(), v(), Scalar::F64(0.5).into()]));
        assert_eq!(out[2], Instruction::new(Opcode::Multiply, [v(), v(), Scalar::F64(-4.0).into()]));
    }

    #[test]
    fn only_a_few_fills_of_an_array_fold() {
        let b = Base { id: BaseId(1), dtype: DType::F64, nelem: 6 * 7 };
        let whole = || Operand::View(View::contiguous(b, 0, &[6, 7]).unwrap());
        let element = |k: i64| Operand::View(View::new(b, k, &[], &[]).unwrap());
        let produce = Instruction::new(Opcode::Sqrt, [whole(), whole()]);
        let fill = |k: i64| Instruction::new(Opcode::Identity, [element(k), Scalar::F64(0.0).into()]);
        let few: Vec<Instruction> =
            std::iter::once(produce.clone()).chain((0..MAX_FOLDS_PER_ARRAY as i64).map(fill)).collect();
        // Each fill looks through the earlier ones to the array: all of them fold.
        let (folded, _) = fold_subview_fills(&few).unwrap();
        assert_eq!(folded.iter().filter(|i| i.opcode == Opcode::Select).count(), MAX_FOLDS_PER_ARRAY);
        // Storing element by element: every store stays a store.
        let many: Vec<Instruction> = std::iter::once(produce).chain((0..20).map(fill)).collect();
        assert!(fold_subview_fills(&many).is_none());
        // A fill too far from the array's producer is not folded.
        let far: Vec<Instruction> = std::iter::once(Instruction::new(Opcode::Sqrt, [whole(), whole()]))
            .chain((0..FILL_WINDOW).map(|_| Instruction::new(Opcode::Sync, [whole()])))
            .chain([fill(3)])
            .collect();
        assert!(fold_subview_fills(&far).is_none());
    }

    #[test]
    fn a_flat_sum_of_a_2d_temporary_is_split() {
        let t = Base { id: BaseId(1), dtype: DType::F64, nelem: 12 };
        let s = Base { id: BaseId(2), dtype: DType::F64, nelem: 1 };
        let batch = vec![
            Instruction::new(
                Opcode::Add,
                [
                    Operand::View(View::contiguous(t, 0, &[3, 4]).unwrap()),
                    Operand::Const(Scalar::F64(1.0)),
                    Operand::Const(Scalar::F64(2.0)),
                ],
            ),
            Instruction::new(
                Opcode::AddReduce,
                [
                    Operand::View(View::new(s, 0, &[], &[]).unwrap()),
                    Operand::View(View::contiguous(t, 0, &[12]).unwrap()),
                    Operand::Const(Scalar::I64(0)),
                ],
            ),
        ];
        let (b, origin) = split_flat_reductions(&batch).expect("split");
        assert_eq!(origin, vec![0, 1, 1, 1]);
        assert_eq!(b[1].operands[1].as_view().unwrap().shape.as_slice(), &[3, 4]);
        assert_eq!(b[1].axis(), Some(1));
        assert_eq!(b[2].operands[1].as_view().unwrap().shape.as_slice(), &[3]);
        assert_eq!(b[3].opcode, Opcode::Free);
        for i in &b {
            i.validate().unwrap();
        }
    }

    #[test]
    fn a_flat_sum_takes_the_shape_of_the_latest_shaped_write_of_its_memory() {
        let t = Base { id: BaseId(1), dtype: DType::F64, nelem: 12 };
        let (s, u) = (Base { id: BaseId(2), dtype: DType::F64, nelem: 1 }, Base { id: BaseId(3), ..t });
        let write = |shape: &[usize]| {
            Instruction::new(
                Opcode::Add,
                [
                    Operand::View(View::contiguous(t, 0, shape).unwrap()),
                    Operand::Const(Scalar::F64(1.0)),
                    Operand::Const(Scalar::F64(2.0)),
                ],
            )
        };
        let sum = |of: Base| {
            Instruction::new(
                Opcode::AddReduce,
                [
                    Operand::View(View::new(s, 0, &[], &[]).unwrap()),
                    Operand::View(View::contiguous(of, 0, &[12]).unwrap()),
                    Operand::Const(Scalar::I64(0)),
                ],
            )
        };
        // A 1-d write after the 2-d ones does not count; the later 2-d one does; a base nothing
        // shaped wrote is left alone.
        let batch = vec![write(&[3, 4]), sum(t), write(&[4, 3]), write(&[12]), sum(t), sum(u)];
        let (b, origin) = split_flat_reductions(&batch).expect("split");
        assert_eq!(origin, vec![0, 1, 1, 1, 2, 3, 4, 4, 4, 5]);
        assert_eq!(b[1].operands[1].as_view().unwrap().shape.as_slice(), &[3, 4]);
        assert_eq!(b[6].operands[1].as_view().unwrap().shape.as_slice(), &[4, 3]);
        assert_ne!(b[1].operands[0].as_view().unwrap().base.id, b[6].operands[0].as_view().unwrap().base.id);
        assert_eq!(b[9].operands[1].as_view().unwrap().base.id, u.id);
        for i in &b {
            i.validate().unwrap();
        }
    }
}
