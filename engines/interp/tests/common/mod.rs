//! Test harness: an `Interp` with its host memory, bases filled from Rust values, and views read
//! back with the index formula of `View::offset_of` (independent of the engine's traversal).
#![allow(dead_code)] // each test binary uses part of the harness

use vm_interp::Interp;
use vm_ir::with_dtype;
use vm_ir::{Base, BaseId, DType, Element, Instruction, Opcode, Operand, Result, Scalar, View};
use vm_runtime::{Component, HostMemory};

/// An engine, its memory, and a source of fresh base ids.
pub struct Env {
    pub interp: Interp,
    pub mem: HostMemory,
    next_id: u64,
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        Env { interp: Interp::new(None), mem: HostMemory::new(), next_id: 1 }
    }

    /// A fresh base (not allocated).
    pub fn base(&mut self, dtype: DType, nelem: usize) -> Base {
        self.next_id += 1;
        Base { id: BaseId(self.next_id), dtype, nelem: nelem as u64 }
    }

    /// A fresh unallocated base viewed whole, contiguous, in `shape`.
    pub fn empty(&mut self, dtype: DType, shape: &[usize]) -> View {
        let base = self.base(dtype, shape.iter().product());
        View::contiguous(base, 0, shape).unwrap()
    }

    /// A fresh base holding `data`, viewed whole as a 1-d array.
    pub fn array<T: Element>(&mut self, data: &[T]) -> View {
        let base = self.base(T::DTYPE, data.len());
        self.mem.ensure(&base).unwrap().as_mut_slice::<T>().copy_from_slice(data);
        View::of_base(base)
    }

    /// A fresh base of `dtype` holding `values` (each cast to `dtype`), viewed whole.
    pub fn scalars(&mut self, dtype: DType, values: &[Scalar]) -> View {
        let base = self.base(dtype, values.len());
        let buf = self.mem.ensure(&base).unwrap();
        with_dtype!(dtype, T => {
            let s = buf.as_mut_slice::<T>();
            for (d, v) in s.iter_mut().zip(values) {
                *d = v.get::<T>();
            }
        });
        View::of_base(base)
    }

    /// A fresh base holding `data`, viewed as a contiguous array of `shape`.
    pub fn array_nd<T: Element>(&mut self, data: &[T], shape: &[usize]) -> View {
        let v = self.array(data);
        View::contiguous(v.base, 0, shape).unwrap()
    }

    pub fn run(&mut self, batch: Vec<Instruction>) -> Result<()> {
        self.interp.execute(&batch, &mut self.mem)
    }

    pub fn run1(&mut self, op: Opcode, operands: Vec<Operand>) -> Result<()> {
        self.run(vec![Instruction::new(op, operands)])
    }

    /// The elements of `view` in row-major order, via the index formula.
    pub fn read<T: Element>(&self, view: &View) -> Vec<T> {
        let data = self.mem.get(view.base.id).expect("base not allocated").as_slice::<T>();
        positions(view).into_iter().map(|o| data[o]).collect()
    }

    /// The elements of `view` as scalars, row-major.
    pub fn read_scalars(&self, view: &View) -> Vec<Scalar> {
        with_dtype!(view.dtype(), T => self.read::<T>(view).into_iter().map(Scalar::from).collect())
    }

    /// The whole buffer of a base.
    pub fn base_data<T: Element>(&self, base: &Base) -> Vec<T> {
        self.mem.get(base.id).expect("base not allocated").as_slice::<T>().to_vec()
    }
}

/// Row-major base offsets of a view, by decomposing each flat position.
pub fn positions(view: &View) -> Vec<usize> {
    (0..view.nelem())
        .map(|flat| {
            let mut rem = flat;
            let mut idx = vec![0; view.ndim()];
            for d in (0..view.ndim()).rev() {
                idx[d] = rem % view.shape[d];
                rem /= view.shape[d];
            }
            view.offset_of(&idx) as usize
        })
        .collect()
}

pub fn v(view: &View) -> Operand {
    Operand::View(view.clone())
}

pub fn c(s: impl Into<Scalar>) -> Operand {
    Operand::Const(s.into())
}

/// `axis` as the i64 parameter of reductions and scans.
pub fn axis(a: i64) -> Operand {
    Operand::Const(Scalar::I64(a))
}

/// Equal as data: same dtype; floats equal bit for bit or both NaN.
pub fn same(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// `same`, but +0.0 and -0.0 count as equal.
pub fn same_ignoring_zero_sign(a: Scalar, b: Scalar) -> bool {
    same(a, b) || (a.dtype() == b.dtype() && a.dtype().is_float() && a.as_f64() == 0.0 && b.as_f64() == 0.0)
}
