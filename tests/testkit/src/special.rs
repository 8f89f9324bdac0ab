//! Special values: one batch applying every float element-wise opcode of the table to every
//! [`special_values`] value (and pair), and the check of an engine's results against the
//! reference's that is exact where the answer is special and allows a few ulps elsewhere for
//! the opcodes an engine computes with routines of its own.

use crate::agree::ulps_apart;
use crate::data::special_values;
use crate::fixtures::{base, slices, whole};
use vm_ir::opcode::{Kind, TypeRule};
use vm_ir::{Base, DType, Instruction, Opcode, Operand, Scalar, View, with_dtype};
use vm_runtime::HostMemory;

/// One batch applying every element-wise opcode of the table that takes float operands
/// (every [`Kind::Unary`] and [`Kind::Binary`] opcode whose type rule admits the dtype, and
/// `identity` to every dtype) to every [`special_values`] of one float dtype, unary opcodes to
/// each value and binary ones to each pair. New opcodes of those kinds join by themselves.
///
/// Inputs `x` and `y` hold the pairs (row-major over the value list); each instruction writes its
/// own slice of one output base per output dtype, so the whole batch is one kernel for the fusing
/// engines. The batch ends by syncing the outputs.
#[derive(Debug, Clone)]
pub struct SpecialValues {
    /// The float dtype of the inputs.
    pub dtype: DType,
    /// The instructions, then a `sync` of every output base.
    pub batch: Vec<Instruction>,
    /// The two inputs (to [`SpecialValues::fill`]) and the output bases.
    pub bases: Vec<Base>,
    values: Vec<Scalar>,
    /// Each instruction's opcode and output slice.
    cases: Vec<(Opcode, View)>,
}

impl SpecialValues {
    /// The batch for float dtype `d`.
    pub fn new(d: DType) -> SpecialValues {
        let values = special_values(d);
        let n = values.len() * values.len();
        let (x, y) = (base(1, d, n), base(2, d, n));
        // (opcode, output dtype, binary)
        let mut wanted: Vec<(Opcode, DType, bool)> = Vec::new();
        for &op in Opcode::ALL {
            let binary = match op.kind() {
                Kind::Unary => false,
                Kind::Binary => true,
                _ => continue,
            };
            match op.type_rule() {
                TypeRule::Same(set) if set.contains(d) => wanted.push((op, d, binary)),
                TypeRule::ToBool(set) if set.contains(d) => wanted.push((op, DType::Bool, binary)),
                TypeRule::Cast => wanted.extend(DType::ALL.iter().map(|&to| (op, to, binary))),
                _ => {}
            }
        }
        let to: Vec<DType> = wanted.iter().map(|w| w.1).collect();
        let (outputs, views) = slices(&to, n, 10);
        let mut batch = Vec::new();
        let mut cases = Vec::new();
        for ((op, _, binary), out) in wanted.into_iter().zip(views) {
            let mut operands = vec![Operand::View(out.clone()), whole(x)];
            if binary {
                operands.push(whole(y));
            }
            batch.push(Instruction::new(op, operands));
            cases.push((op, out));
        }
        batch.extend(outputs.iter().map(|&b| Instruction::new(Opcode::Sync, [whole(b)])));
        let mut bases = vec![x, y];
        bases.extend(outputs);
        SpecialValues { dtype: d, batch, bases, values, cases }
    }

    /// The opcodes the batch applies, in order (`identity` once per output dtype).
    pub fn opcodes(&self) -> impl Iterator<Item = Opcode> + '_ {
        self.cases.iter().map(|c| c.0)
    }

    /// Writes the inputs into `mem`.
    pub fn fill(&self, mem: &mut HostMemory) -> vm_ir::Result<()> {
        let k = self.values.len();
        for (b, pick) in [(self.bases[0], 0), (self.bases[1], 1)] {
            let buf = mem.ensure(&b)?;
            with_dtype!(b.dtype, T => {
                for (i, e) in buf.as_mut_slice::<T>().iter_mut().enumerate() {
                    let v = if pick == 0 { self.values[i / k] } else { self.values[i % k] };
                    *e = v.get::<T>();
                }
            });
        }
        Ok(())
    }

    /// Compares an engine's results (`got`) with the reference engine's, element by element:
    /// the same bits (NaN equals NaN, but -0.0 is not +0.0), except that where `approximate`
    /// says an opcode's float results may be a few ulp off, they may be up to `ulps` apart,
    /// unless an input is infinite, NaN or zero, or the reference result is, or the reference
    /// result is an input (`log1p`, `sin`, `tanh` ... of a subnormal): those must be exact. The
    /// error lists the first differences, each with its opcode and inputs.
    pub fn check(
        &self,
        got: &HostMemory,
        reference: &HostMemory,
        approximate: &dyn Fn(Opcode) -> bool,
        ulps: u64,
    ) -> Result<(), String> {
        let k = self.values.len();
        let special = |s: Scalar| s.dtype().is_float() && (!s.as_f64().is_finite() || s.as_f64() == 0.0);
        let mut wrong = Vec::new();
        let mut count = 0;
        for (op, out) in &self.cases {
            let (Some(have), Some(want)) = (got.get(out.base.id), reference.get(out.base.id)) else {
                return Err(format!("base {} of {op} is missing", out.base.id));
            };
            let binary = op.kind() == Kind::Binary;
            for i in 0..k * k {
                if !binary && i % k != 0 {
                    // A unary opcode sees each value k times; one is enough to look at.
                    continue;
                }
                let at = out.start as usize + i;
                let (e, r) = with_dtype!(out.base.dtype, T => (
                    Scalar::from(have.as_slice::<T>()[at]),
                    Scalar::from(want.as_slice::<T>()[at]),
                ));
                let inputs: Vec<Scalar> =
                    if binary { vec![self.values[i / k], self.values[i % k]] } else { vec![self.values[i / k]] };
                let bits = |s: Scalar| s.to_payload();
                // A zero argument of logaddexp is an ordinary point of it (the answer is the
                // other argument's softplus), not a special value with an exact answer.
                let zero_is_ordinary = matches!(op, Opcode::Logaddexp | Opcode::Logaddexp2);
                let special_input = |v: Scalar| special(v) && !(zero_is_ordinary && v.as_f64() == 0.0);
                let exact = !approximate(*op)
                    || !out.base.dtype.is_float()
                    || inputs.iter().any(|&v| special_input(v))
                    || special(r)
                    || inputs.iter().any(|&v| bits(v) == bits(r));
                let apart = ulps_apart(e, r);
                if apart == 0 || (!exact && apart <= ulps) {
                    continue;
                }
                count += 1;
                if wrong.len() < 24 {
                    let args: Vec<String> = inputs.iter().map(|v| v.to_string()).collect();
                    wrong.push(format!("{op}({}) -> {}: engine {e}, reference {r}", args.join(", "), out.base.dtype));
                }
            }
        }
        if count == 0 {
            return Ok(());
        }
        Err(format!("{count} results differ on {}, among them:\n  {}", self.dtype, wrong.join("\n  ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Data, fill};
    use std::collections::HashSet;
    use vm_ir::BaseId;

    #[test]
    fn special_values_cover_every_float_elementwise_opcode_in_one_kernel() {
        for d in [DType::F32, DType::F64] {
            let p = SpecialValues::new(d);
            vm_ir::instr::validate_batch(&p.batch).unwrap();
            let ops: HashSet<Opcode> = p.opcodes().collect();
            for &op in Opcode::ALL {
                let takes_floats = match op.type_rule() {
                    TypeRule::Same(s) | TypeRule::ToBool(s) => s.contains(d),
                    TypeRule::Cast => true,
                    _ => false,
                };
                let elementwise = matches!(op.kind(), Kind::Unary | Kind::Binary);
                assert_eq!(ops.contains(&op), elementwise && takes_floats, "{op} on {d}");
            }
            assert_eq!(p.opcodes().filter(|&o| o == Opcode::Identity).count(), DType::ALL.len());
            let steps = vm_fusion::partition(&p.batch, &vm_fusion::Options::default());
            let kernels = steps.iter().filter(|s| matches!(s, vm_fusion::Step::Kernel(_))).count();
            assert_eq!(kernels, 1, "{steps:?}");
            let v = special_values(d);
            assert!(v.iter().any(|s| s.as_f64() == 0.0 && s.as_f64().is_sign_negative()));
            assert!(v.iter().any(|s| s.as_f64().is_nan()) && v.iter().any(|s| s.as_f64() == f64::NEG_INFINITY));
            let subnormal = |s: &Scalar| match *s {
                Scalar::F32(x) => x.is_subnormal(),
                Scalar::F64(x) => x.is_subnormal(),
                _ => false,
            };
            assert_eq!(v.iter().filter(|s| subnormal(s)).count(), 4, "{v:?}");
        }
        assert!(special_values(DType::I32).is_empty());
    }

    /// The slot of `op` (its first with `to` output) at inputs `x` (and `y`) in `p`'s outputs.
    fn slot(p: &SpecialValues, op: Opcode, x: Scalar, y: Option<Scalar>) -> (BaseId, usize) {
        let v = &p.values;
        let k = v.len();
        let find = |s: Scalar| v.iter().position(|&w| w.to_payload() == s.to_payload()).unwrap();
        let (_, out) = p.cases.iter().find(|c| c.0 == op).unwrap();
        (out.base.id, out.start as usize + find(x) * k + y.map_or(0, find))
    }

    #[test]
    fn special_value_checks_are_exact_where_the_answer_is_special() {
        let p = SpecialValues::new(DType::F32);
        let mut reference = HostMemory::new();
        p.fill(&mut reference).unwrap();
        for b in &p.bases[2..] {
            fill(&mut reference, b, 3, Data::Full).unwrap();
        }
        let set = |mem: &mut HostMemory, (id, at): (BaseId, usize), x: f32| {
            mem.get_mut(id).unwrap().as_mut_slice::<f32>()[at] = x;
        };
        let below_one = f32::from_bits(1.0f32.to_bits() - 1);
        let approximate = |op: Opcode| matches!(op, Opcode::Tanh | Opcode::Log1p | Opcode::Power);
        let tanh_inf = slot(&p, Opcode::Tanh, Scalar::F32(f32::INFINITY), None);
        let tanh_seven = slot(&p, Opcode::Tanh, Scalar::F32(7.0), None);
        let tiny = Scalar::F32(f32::from_bits(1));
        let log1p_tiny = slot(&p, Opcode::Log1p, tiny, None);
        let pow = slot(&p, Opcode::Power, Scalar::F32(2.5), Some(Scalar::F32(-3.0)));
        set(&mut reference, tanh_inf, 1.0);
        set(&mut reference, tanh_seven, 7f32.tanh());
        set(&mut reference, log1p_tiny, f32::from_bits(1));
        set(&mut reference, pow, 2.5f32.powf(-3.0));
        let same = |mem: &HostMemory| p.check(mem, &reference, &approximate, 4);
        assert_eq!(same(&reference), Ok(()));
        let off = |slot, x: f32| {
            let mut got = HostMemory::new();
            for b in &p.bases {
                got.ensure(b).unwrap().write_bytes(0, reference.get(b.id).unwrap().bytes()).unwrap();
            }
            set(&mut got, slot, x);
            same(&got)
        };
        // A few ulp off is fine for approximate functions at ordinary values.
        assert_eq!(off(tanh_seven, f32::from_bits(7f32.tanh().to_bits() - 2)), Ok(()));
        assert_eq!(off(pow, f32::from_bits(2.5f32.powf(-3.0).to_bits() + 3)), Ok(()));
        assert!(off(pow, f32::from_bits(2.5f32.powf(-3.0).to_bits() + 5)).is_err());
        // One ulp off is wrong at an infinite input, and for a result that is the input.
        let e = off(tanh_inf, below_one).unwrap_err();
        assert!(e.contains("tanh(inff32)") && e.starts_with("1 results differ"), "{e}");
        assert!(off(log1p_tiny, 0.0).unwrap_err().contains("log1p(1e-45f32)"));
        assert!(off(slot(&p, Opcode::Sqrt, Scalar::F32(7.0), None), 2.0).is_err());
    }
}
