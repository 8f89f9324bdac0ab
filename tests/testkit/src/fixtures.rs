//! Small things every engine's tests build: bases and views by hand, the layouts a view of a
//! shape may have, output slices that keep a batch one kernel, and data filled by the program.

use vm_ir::view::row_major_strides;
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};

/// A base of `nelem` elements of `dtype`.
pub fn base(id: u64, dtype: DType, nelem: usize) -> Base {
    Base { id: BaseId(id), dtype, nelem: nelem as u64 }
}

/// The whole base as a 1-d view operand.
pub fn whole(b: Base) -> Operand {
    Operand::View(View::of_base(b))
}

/// A view operand.
pub fn view(b: Base, start: i64, shape: &[usize], stride: &[i64]) -> Operand {
    Operand::View(View::new(b, start, shape, stride).expect("a view inside the base"))
}

/// `random` filling the whole of `b` from `seed` (on the engine: data a program makes itself).
pub fn random_fill(b: Base, seed: u64) -> Instruction {
    Instruction::new(Opcode::Random, [View::of_base(b).into(), Scalar::U64(seed).into(), Scalar::U64(0).into()])
}

/// The layouts of `shape` that fit a base of `n` elements, as (name, start, strides):
/// contiguous, strided, reversed, transposed (the first axis innermost), and broadcast (stride
/// 0) along each axis in turn.
pub fn layouts(shape: &[usize], n: usize) -> Vec<(String, i64, Vec<i64>)> {
    let c = row_major_strides(shape).to_vec();
    let reach: i64 = shape.iter().zip(&c).map(|(&e, &s)| (e as i64 - 1) * s).sum();
    let mut out = vec![
        ("contiguous".to_string(), 0, c.clone()),
        ("strided".to_string(), 1, c.iter().map(|s| 2 * s).collect()),
        ("reversed".to_string(), reach, c.iter().map(|s| -s).collect()),
        ("transposed".to_string(), 0, {
            // Strides of the reversed shape, so the first axis is the innermost in memory.
            let r: Vec<usize> = shape.iter().rev().copied().collect();
            let mut t = row_major_strides(&r).to_vec();
            t.reverse();
            t
        }),
    ];
    for d in 0..shape.len() {
        let mut b = c.clone();
        b[d] = 0;
        out.push((format!("broadcast along {d}"), 2, b));
    }
    out.retain(|(_, start, s)| {
        let hi: i64 = start + shape.iter().zip(s).map(|(&e, &s)| (e as i64 - 1) * s.max(0)).sum::<i64>();
        hi < n as i64
    });
    out
}

/// Output slices of `n` elements for a batch that gives each instruction its own output (so
/// that the whole batch fuses into one kernel): one base per dtype of `dtypes` (id `first` plus
/// the dtype's id), and the slice of each entry of `dtypes`, in order.
pub fn slices(dtypes: &[DType], n: usize, first: u64) -> (Vec<Base>, Vec<View>) {
    let mut bases: Vec<Base> = Vec::new();
    for &d in dtypes {
        if !bases.iter().any(|b| b.dtype == d) {
            let count = dtypes.iter().filter(|&&e| e == d).count();
            bases.push(base(first + u64::from(d.id()), d, count * n));
        }
    }
    let mut used = vec![0usize; bases.len()];
    let views = dtypes
        .iter()
        .map(|&d| {
            let k = bases.iter().position(|b| b.dtype == d).expect("a base of every dtype");
            used[k] += 1;
            View::contiguous(bases[k], ((used[k] - 1) * n) as i64, &[n]).expect("a slice inside the base")
        })
        .collect();
    (bases, views)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_fit_and_name_what_they_are() {
        let all = layouts(&[3, 4], 30);
        let names: Vec<&str> = all.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(
            names,
            ["contiguous", "strided", "reversed", "transposed", "broadcast along 0", "broadcast along 1"]
        );
        for (name, start, s) in &all {
            View::new(base(1, DType::I8, 30), *start, &[3, 4], s).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert_eq!(layouts(&[3, 4], 12).len(), 5, "strided needs room");
    }

    #[test]
    fn slices_share_one_base_per_dtype() {
        let (bases, views) = slices(&[DType::F32, DType::Bool, DType::F32], 5, 10);
        assert_eq!(bases, [base(10 + u64::from(DType::F32.id()), DType::F32, 10), base(10, DType::Bool, 5)]);
        assert_eq!([views[0].start, views[1].start, views[2].start], [0, 0, 5]);
    }
}
