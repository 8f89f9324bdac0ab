//! Operations that record instructions: element-wise methods and operators (with NumPy
//! broadcasting), select, reductions and scans, gather/scatter, and matmul.

use super::array::{ArrayOrScalar, IntoOperand, broadcast_shapes, broadcast_view, normalize_axis};
use super::{Array, Bits, Float, Integer, Numeric, ScalarElement, Vm};
use smallvec::SmallVec;
use std::ops;
use vm_ir::dtype::Element;
use vm_ir::instr::{Instruction, Operand};
use vm_ir::opcode::Opcode;
use vm_ir::scalar::Scalar;
use vm_ir::view::View;
use vm_ir::{Error, Result};

/// An input of an element-wise instruction: a view (broadcast as needed) or a constant.
pub(super) enum Src<'a> {
    View(&'a View),
    Const(Scalar),
}

/// Records `out = op(inputs...)` for the broadcast shape of the inputs' views, into a new base.
pub(super) fn elementwise<U: Element>(vm: &Vm, op: Opcode, inputs: &[Src<'_>]) -> Result<Array<U>> {
    let views = inputs.iter().filter_map(|s| match s {
        Src::View(v) => Some(&v.shape[..]),
        Src::Const(_) => None,
    });
    let shape = broadcast_shapes(views)?;
    let out = vm.alloc::<U>(&shape)?;
    let mut operands: SmallVec<[Operand; 3]> = SmallVec::with_capacity(inputs.len() + 1);
    operands.push(out.view.clone().into());
    for s in inputs {
        operands.push(match s {
            Src::View(v) => broadcast_view(v, &shape)?.into(),
            Src::Const(c) => (*c).into(),
        });
    }
    vm.emit(Instruction { opcode: op, operands });
    Ok(out)
}

/// The value of an operation that can only fail when its result is too large to allocate.
#[track_caller]
pub(super) fn must<U: Element>(r: Result<Array<U>>, what: &str) -> Array<U> {
    match r {
        Ok(a) => a,
        Err(e) => panic!("{what}: {e}"),
    }
}

impl<T: ScalarElement> ArrayOrScalar<T> {
    /// As an input of an operation of `vm`.
    fn src(&self, vm: &Vm) -> Result<Src<'_>> {
        match self {
            ArrayOrScalar::Array(a) => {
                vm.ensure_same(a.vm())?;
                Ok(Src::View(&a.view))
            }
            ArrayOrScalar::Scalar(x) => Ok(Src::Const(x.into_scalar())),
        }
    }
}

impl<T: Element> Array<T> {
    /// `out = op(self)` along `axis`, a reduction (axis dropped) or a scan (shape kept).
    fn along<U: Element>(&self, op: Opcode, axis: isize) -> Result<Array<U>> {
        let ax = normalize_axis(axis, self.ndim())?;
        let mut shape = self.view.shape.clone();
        if op.kind() == vm_ir::opcode::Kind::Reduce {
            shape.remove(ax);
        }
        let out = self.vm().alloc::<U>(&shape)?;
        let ops = [out.view.clone().into(), self.view.clone().into(), Scalar::I64(ax as i64).into()];
        self.vm().emit(Instruction::new(op, ops));
        Ok(out)
    }

    /// Reduces every axis with `op`: one reduction of a flattened view when this view is
    /// contiguous or 1-d, else the last axis first and then the (contiguous) rest.
    fn reduce_all<U: Element>(&self, op: Opcode) -> Array<U> {
        if self.ndim() == 1 {
            return must(self.along(op, 0), op.name());
        }
        if self.is_contiguous() {
            let flat = self.reshape(&[self.len()]).expect("contiguous arrays reshape");
            return must(flat.along(op, 0), op.name());
        }
        let partial: Array<U> = must(self.along(op, -1), op.name());
        let flat_partial = partial.reshape(&[partial.len()]).expect("new arrays are contiguous");
        must(flat_partial.along(op, 0), op.name())
    }
}

impl<T: ScalarElement> Array<T> {
    /// `out = op(self)`.
    fn unary<U: Element>(&self, op: Opcode) -> Array<U> {
        must(elementwise(self.vm(), op, &[self.src()]), op.name())
    }

    /// `out = op(self, rhs)`, broadcast.
    fn binary<U: Element>(&self, op: Opcode, rhs: impl IntoOperand<T>) -> Result<Array<U>> {
        let rhs = rhs.into_operand();
        elementwise(self.vm(), op, &[self.src(), rhs.src(self.vm())?])
    }

    /// `out = op(lhs, self)` for a constant `lhs`.
    fn binary_rev<U: Element>(&self, op: Opcode, lhs: T) -> Array<U> {
        must(elementwise(self.vm(), op, &[Src::Const(lhs.into_scalar()), self.src()]), op.name())
    }

    /// `self = op(self, rhs)`, in place: `rhs` is broadcast to this view's shape.
    fn update(&self, op: Opcode, rhs: impl IntoOperand<T>) -> Result<()> {
        self.ensure_writable()?;
        let rhs = rhs.into_operand();
        let input: Operand = match rhs.src(self.vm())? {
            Src::View(v) => broadcast_view(v, self.shape())?.into(),
            Src::Const(c) => c.into(),
        };
        let out: Operand = self.view.clone().into();
        self.vm().emit(Instruction::new(op, [out.clone(), out, input]));
        Ok(())
    }

    /// `out = op(self, c)` for a constant of any dtype (already cast to `T`'s).
    pub(super) fn with_const(&self, op: Opcode, c: Scalar) -> Array<T> {
        must(elementwise(self.vm(), op, &[self.src(), Src::Const(c.cast(T::DTYPE))]), op.name())
    }

    /// `cond ? a : b` element-wise, all three broadcast together (`select`).
    pub fn select(cond: &Array<bool>, a: impl IntoOperand<T>, b: impl IntoOperand<T>) -> Result<Array<T>> {
        let vm = cond.vm();
        let (a, b) = (a.into_operand(), b.into_operand());
        elementwise(vm, Opcode::Select, &[cond.src(), a.src(vm)?, b.src(vm)?])
    }

    /// `out.flat[i] = self.flat[index.flat[i]]`: the elements at row-major positions `index` of
    /// this view, in `index`'s shape (`gather`). An index out of range is an execution error
    /// (deferred, see the module doc).
    pub fn gather<I: Integer>(&self, index: &Array<I>) -> Result<Array<T>> {
        self.vm().ensure_same(index.vm())?;
        let out = self.vm().alloc::<T>(index.shape())?;
        let ops = [out.view.clone().into(), self.view.clone().into(), index.view.clone().into()];
        self.vm().emit(Instruction::new(Opcode::Gather, ops));
        Ok(out)
    }

    /// `self.flat[index.flat[i]] = src.flat[i]`, writing into this view (`scatter`); `src` is
    /// broadcast to `index`'s shape. When an index repeats, the last one wins.
    pub fn scatter<I: Integer>(&self, index: &Array<I>, src: impl IntoOperand<T>) -> Result<()> {
        let vm = self.vm();
        self.ensure_writable()?;
        vm.ensure_same(index.vm())?;
        let src = src.into_operand();
        let data: Operand = match src.src(vm)? {
            Src::View(v) => broadcast_view(v, index.shape())?.into(),
            Src::Const(c) => c.into(),
        };
        let ops = [self.view.clone().into(), data, index.view.clone().into()];
        vm.emit(Instruction::new(Opcode::Scatter, ops));
        Ok(())
    }

    /// True where `self` and `rhs` are both true (nonzero), broadcast (`logical_and`).
    pub fn logical_and(&self, rhs: impl IntoOperand<T>) -> Result<Array<bool>> {
        self.binary(Opcode::LogicalAnd, rhs)
    }

    /// True where either of `self` and `rhs` is true (nonzero), broadcast (`logical_or`).
    pub fn logical_or(&self, rhs: impl IntoOperand<T>) -> Result<Array<bool>> {
        self.binary(Opcode::LogicalOr, rhs)
    }

    /// True where exactly one of `self` and `rhs` is true (nonzero), broadcast (`logical_xor`).
    pub fn logical_xor(&self, rhs: impl IntoOperand<T>) -> Result<Array<bool>> {
        self.binary(Opcode::LogicalXor, rhs)
    }

    /// True where `self` is false (zero) (`logical_not`).
    pub fn logical_not(&self) -> Array<bool> {
        self.unary(Opcode::LogicalNot)
    }

    /// Whether all elements along `axis` are true (nonzero) (`logical_and_reduce`).
    pub fn all(&self, axis: isize) -> Result<Array<bool>> {
        self.along(Opcode::LogicalAndReduce, axis)
    }

    /// Whether any element along `axis` is true (nonzero) (`logical_or_reduce`).
    pub fn any(&self, axis: isize) -> Result<Array<bool>> {
        self.along(Opcode::LogicalOrReduce, axis)
    }

    /// Whether all elements are true (nonzero), as a 0-d array.
    pub fn all_all(&self) -> Array<bool> {
        self.reduce_all(Opcode::LogicalAndReduce)
    }

    /// Whether any element is true (nonzero), as a 0-d array.
    pub fn any_all(&self) -> Array<bool> {
        self.reduce_all(Opcode::LogicalOrReduce)
    }

    /// The position along `axis` (dropped) of the first largest element, or of the first NaN
    /// (`argmax_reduce`, NumPy's `argmax`). An empty axis is an error, as in NumPy.
    pub fn argmax(&self, axis: isize) -> Result<Array<i64>> {
        self.position_along(Opcode::ArgmaxReduce, axis)
    }

    /// The position along `axis` (dropped) of the first smallest element, or of the first NaN
    /// (`argmin_reduce`, NumPy's `argmin`). An empty axis is an error, as in NumPy.
    pub fn argmin(&self, axis: isize) -> Result<Array<i64>> {
        self.position_along(Opcode::ArgminReduce, axis)
    }

    fn position_along(&self, op: Opcode, axis: isize) -> Result<Array<i64>> {
        let ax = normalize_axis(axis, self.ndim())?;
        if self.view.shape[ax] == 0 {
            let what = if op == Opcode::ArgmaxReduce { "argmax" } else { "argmin" };
            return Err(Error::InvalidArgument(format!(
                "attempt to get {what} of an empty sequence (axis {ax} of shape {:?})",
                self.shape()
            )));
        }
        self.along(op, axis)
    }
}

macro_rules! comparisons {
    ($($(#[$doc:meta])* $name:ident = $op:ident;)*) => {
        impl<T: ScalarElement> Array<T> { $(
            $(#[$doc])*
            pub fn $name(&self, rhs: impl IntoOperand<T>) -> Result<Array<bool>> {
                self.binary(Opcode::$op, rhs)
            }
        )* }
    };
}
comparisons! {
    /// `self < rhs` element-wise, broadcast (`less`).
    lt = Less;
    /// `self <= rhs` element-wise, broadcast (`less_equal`).
    le = LessEqual;
    /// `self > rhs` element-wise, broadcast (`greater`).
    gt = Greater;
    /// `self >= rhs` element-wise, broadcast (`greater_equal`).
    ge = GreaterEqual;
    /// `self == rhs` element-wise, broadcast (`equal`).
    eq = Equal;
    /// `self != rhs` element-wise, broadcast (`not_equal`).
    ne = NotEqual;
}

macro_rules! unary_methods {
    ($bound:ident -> $out:ty; $($name:ident = $op:ident,)*) => {
        impl<T: $bound> Array<T> { $(
            #[doc = concat!("Element-wise `", stringify!($name), "`: see [`Opcode::", stringify!($op), "`].")]
            pub fn $name(&self) -> Array<$out> {
                self.unary(Opcode::$op)
            }
        )* }
    };
}
unary_methods!(Numeric -> T; negative = Negative, abs = Absolute, sign = Sign, square = Square,);
unary_methods!(Float -> T;
    reciprocal = Reciprocal, sqrt = Sqrt, cbrt = Cbrt, exp = Exp, exp2 = Exp2, expm1 = Expm1, log = Log,
    log2 = Log2, log10 = Log10, log1p = Log1p, sin = Sin, cos = Cos, tan = Tan, arcsin = Arcsin,
    arccos = Arccos, arctan = Arctan, sinh = Sinh, cosh = Cosh, tanh = Tanh, arcsinh = Arcsinh,
    arccosh = Arccosh, arctanh = Arctanh, deg2rad = Deg2rad, rad2deg = Rad2deg, floor = Floor,
    ceil = Ceil, trunc = Trunc, rint = Rint,
);
unary_methods!(Float -> bool; isnan = Isnan, isinf = Isinf, isfinite = Isfinite, signbit = Signbit,);
unary_methods!(Bits -> T; invert = Invert,);

macro_rules! binary_methods {
    ($bound:ident; $($name:ident = $op:ident,)*) => {
        impl<T: $bound> Array<T> { $(
            #[doc = concat!(
                "`", stringify!($name), "(self, rhs)` element-wise, broadcast: see [`Opcode::",
                stringify!($op), "`]. Fails when the shapes do not broadcast."
            )]
            pub fn $name(&self, rhs: impl IntoOperand<T>) -> Result<Array<T>> {
                self.binary(Opcode::$op, rhs)
            }
        )* }
    };
}
binary_methods!(Numeric;
    try_add = Add, try_sub = Subtract, try_mul = Multiply, try_rem = Remainder, floor_divide = FloorDivide,
    fmod = Fmod, pow = Power, maximum = Maximum, minimum = Minimum,
);
binary_methods!(Float; try_div = Divide, fmax = Fmax, fmin = Fmin, arctan2 = Arctan2, hypot = Hypot, copysign = Copysign, logaddexp = Logaddexp, logaddexp2 = Logaddexp2,);
binary_methods!(Bits; bitwise_and = BitwiseAnd, bitwise_or = BitwiseOr, bitwise_xor = BitwiseXor,);
binary_methods!(Integer; left_shift = LeftShift, right_shift = RightShift,);

macro_rules! reductions {
    ($($(#[$doc:meta])* $name:ident, $all:ident = $op:ident;)*) => {
        impl<T: Numeric> Array<T> { $(
            $(#[$doc])*
            pub fn $name(&self, axis: isize) -> Result<Array<T>> {
                self.along(Opcode::$op, axis)
            }

            #[doc = concat!("[`", stringify!($name), "`](Array::", stringify!($name), ") over every axis, as a 0-d array.")]
            pub fn $all(&self) -> Array<T> {
                self.reduce_all(Opcode::$op)
            }
        )* }
    };
}
reductions! {
    /// The sum along `axis`, which is dropped (`add_reduce`; integers wrap).
    sum, sum_all = AddReduce;
    /// The product along `axis`, which is dropped (`multiply_reduce`).
    prod, prod_all = MultiplyReduce;
    /// The minimum along `axis`, which is dropped (`minimum_reduce`; NaN if any is NaN).
    min, min_all = MinimumReduce;
    /// The maximum along `axis`, which is dropped (`maximum_reduce`; NaN if any is NaN).
    max, max_all = MaximumReduce;
}

impl<T: Numeric> Array<T> {
    /// The running sum along `axis` (`add_accumulate`).
    pub fn cumsum(&self, axis: isize) -> Result<Array<T>> {
        self.along(Opcode::AddAccumulate, axis)
    }

    /// The running product along `axis` (`multiply_accumulate`).
    pub fn cumprod(&self, axis: isize) -> Result<Array<T>> {
        self.along(Opcode::MultiplyAccumulate, axis)
    }

    /// The matrix product (the extension method `matmul`, registered on first use): `(m, k)` by
    /// `(k, n)` gives `(m, n)`; a 1-d operand is a row (left) or column (right) vector whose
    /// axis is dropped from the result, as in NumPy. Fails when the shapes do not fit or no
    /// engine of the stack implements `matmul`.
    pub fn matmul(&self, rhs: &Array<T>) -> Result<Array<T>> {
        let vm = self.vm();
        vm.ensure_same(rhs.vm())?;
        let (a, b) = match (self.ndim(), rhs.ndim()) {
            (1, 1) | (1, 2) | (2, 1) | (2, 2) => {
                let a = if self.ndim() == 1 { self.new_axis(0)? } else { self.clone() };
                let b = if rhs.ndim() == 1 { rhs.new_axis(1)? } else { rhs.clone() };
                (a, b)
            }
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "matmul takes 1-d or 2-d arrays, got shapes {:?} and {:?}",
                    self.shape(),
                    rhs.shape()
                )));
            }
        };
        if a.shape()[1] != b.shape()[0] {
            return Err(Error::InvalidArgument(format!(
                "matmul: shapes {:?} and {:?} do not fit (inner extents {} and {})",
                self.shape(),
                rhs.shape(),
                a.shape()[1],
                b.shape()[0]
            )));
        }
        let opcode = vm.register_extension("matmul")?;
        let out = vm.alloc::<T>(&[a.shape()[0], b.shape()[1]])?;
        let ops = [out.view.clone().into(), a.view.clone().into(), b.view.clone().into()];
        vm.emit(Instruction::new(opcode, ops));
        match (self.ndim(), rhs.ndim()) {
            (2, 2) => Ok(out),
            (1, 2) => out.index_axis(0, 0),
            (2, 1) => out.index_axis(1, 0),
            _ => out.reshape(&[]),
        }
    }
}

impl<T: Float> Array<T> {
    /// The mean along `axis`, which is dropped (NaN for an empty axis).
    pub fn mean(&self, axis: isize) -> Result<Array<T>> {
        let n = self.shape()[normalize_axis(axis, self.ndim())?];
        Ok(self.sum(axis)?.with_const(Opcode::Divide, Scalar::F64(n as f64)))
    }

    /// The mean of all elements, as a 0-d array (NaN for an empty array).
    pub fn mean_all(&self) -> Array<T> {
        self.sum_all().with_const(Opcode::Divide, Scalar::F64(self.len() as f64))
    }
}

// ---- operators ----

/// `a op b` for an operator: panics (at the caller's line) when the shapes do not broadcast.
#[track_caller]
fn operator<T: ScalarElement>(a: &Array<T>, op: Opcode, b: ArrayOrScalar<T>, sym: &str) -> Array<T> {
    match a.binary(op, b) {
        Ok(out) => out,
        Err(e) => panic!("array operator `{sym}`: {e}"),
    }
}

/// `a op= b` for an operator: panics (at the caller's line) when `b` does not broadcast to
/// `a`'s shape or `a` cannot be written.
#[track_caller]
fn operator_assign<T: ScalarElement>(a: &Array<T>, op: Opcode, b: ArrayOrScalar<T>, sym: &str) {
    if let Err(e) = a.update(op, b) {
        panic!("array operator `{sym}=`: {e}");
    }
}

macro_rules! binary_operator {
    ($Trait:ident, $method:ident, $Assign:ident, $assign:ident, $bound:ident, $op:ident, $sym:literal) => {
        impl<T: $bound> ops::$Trait<&Array<T>> for &Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $method(self, rhs: &Array<T>) -> Array<T> {
                operator(self, Opcode::$op, rhs.into_operand(), $sym)
            }
        }
        impl<T: $bound> ops::$Trait<Array<T>> for &Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $method(self, rhs: Array<T>) -> Array<T> {
                operator(self, Opcode::$op, rhs.into_operand(), $sym)
            }
        }
        impl<T: $bound> ops::$Trait<&Array<T>> for Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $method(self, rhs: &Array<T>) -> Array<T> {
                operator(&self, Opcode::$op, rhs.into_operand(), $sym)
            }
        }
        impl<T: $bound> ops::$Trait<Array<T>> for Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $method(self, rhs: Array<T>) -> Array<T> {
                operator(&self, Opcode::$op, rhs.into_operand(), $sym)
            }
        }
        impl<T: $bound> ops::$Trait<T> for &Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $method(self, rhs: T) -> Array<T> {
                operator(self, Opcode::$op, ArrayOrScalar::Scalar(rhs), $sym)
            }
        }
        impl<T: $bound> ops::$Trait<T> for Array<T> {
            type Output = Array<T>;
            #[track_caller]
            fn $method(self, rhs: T) -> Array<T> {
                operator(&self, Opcode::$op, ArrayOrScalar::Scalar(rhs), $sym)
            }
        }
        impl<T: $bound> ops::$Assign<&Array<T>> for Array<T> {
            #[track_caller]
            fn $assign(&mut self, rhs: &Array<T>) {
                operator_assign(self, Opcode::$op, rhs.into_operand(), $sym)
            }
        }
        impl<T: $bound> ops::$Assign<Array<T>> for Array<T> {
            #[track_caller]
            fn $assign(&mut self, rhs: Array<T>) {
                operator_assign(self, Opcode::$op, rhs.into_operand(), $sym)
            }
        }
        impl<T: $bound> ops::$Assign<T> for Array<T> {
            #[track_caller]
            fn $assign(&mut self, rhs: T) {
                operator_assign(self, Opcode::$op, ArrayOrScalar::Scalar(rhs), $sym)
            }
        }
    };
}
binary_operator!(Add, add, AddAssign, add_assign, Numeric, Add, "+");
binary_operator!(Sub, sub, SubAssign, sub_assign, Numeric, Subtract, "-");
binary_operator!(Mul, mul, MulAssign, mul_assign, Numeric, Multiply, "*");
binary_operator!(Div, div, DivAssign, div_assign, Float, Divide, "/");
binary_operator!(Rem, rem, RemAssign, rem_assign, Numeric, Remainder, "%");
binary_operator!(BitAnd, bitand, BitAndAssign, bitand_assign, Bits, BitwiseAnd, "&");
binary_operator!(BitOr, bitor, BitOrAssign, bitor_assign, Bits, BitwiseOr, "|");
binary_operator!(BitXor, bitxor, BitXorAssign, bitxor_assign, Bits, BitwiseXor, "^");
binary_operator!(Shl, shl, ShlAssign, shl_assign, Integer, LeftShift, "<<");
binary_operator!(Shr, shr, ShrAssign, shr_assign, Integer, RightShift, ">>");

macro_rules! scalar_lhs_operator {
    ($Trait:ident, $method:ident, $op:ident; $($t:ty),*) => { $(
        impl ops::$Trait<&Array<$t>> for $t {
            type Output = Array<$t>;
            fn $method(self, rhs: &Array<$t>) -> Array<$t> {
                rhs.binary_rev(Opcode::$op, self)
            }
        }
        impl ops::$Trait<Array<$t>> for $t {
            type Output = Array<$t>;
            fn $method(self, rhs: Array<$t>) -> Array<$t> {
                rhs.binary_rev(Opcode::$op, self)
            }
        }
    )* };
}
scalar_lhs_operator!(Add, add, Add; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
scalar_lhs_operator!(Sub, sub, Subtract; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
scalar_lhs_operator!(Mul, mul, Multiply; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
scalar_lhs_operator!(Div, div, Divide; f32, f64);
scalar_lhs_operator!(Rem, rem, Remainder; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
scalar_lhs_operator!(BitAnd, bitand, BitwiseAnd; bool, i8, i16, i32, i64, u8, u16, u32, u64);
scalar_lhs_operator!(BitOr, bitor, BitwiseOr; bool, i8, i16, i32, i64, u8, u16, u32, u64);
scalar_lhs_operator!(BitXor, bitxor, BitwiseXor; bool, i8, i16, i32, i64, u8, u16, u32, u64);

impl<T: Numeric> ops::Neg for &Array<T> {
    type Output = Array<T>;
    fn neg(self) -> Array<T> {
        self.negative()
    }
}

impl<T: Numeric> ops::Neg for Array<T> {
    type Output = Array<T>;
    fn neg(self) -> Array<T> {
        self.negative()
    }
}

impl<T: Bits> ops::Not for &Array<T> {
    type Output = Array<T>;
    fn not(self) -> Array<T> {
        self.invert()
    }
}

impl<T: Bits> ops::Not for Array<T> {
    type Output = Array<T>;
    fn not(self) -> Array<T> {
        self.invert()
    }
}
