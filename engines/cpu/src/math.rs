//! Element semantics of the operations computed by block routines and by the reduction combiner:
//! float math (the platform's correctly-rounded-or-nearly libm, as `std` exposes it), NumPy's
//! division family for floats and integers, integer powers. Written from the opcode table's doc
//! comments.

/// Float element types and the math functions block routines apply.
#[allow(missing_docs)] // each method is the std function of the same name
pub trait Float: Copy + PartialOrd + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    const HALF: Self;
    fn cbrt(self) -> Self;
    fn exp(self) -> Self;
    fn exp2(self) -> Self;
    fn exp_m1(self) -> Self;
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn ln_1p(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn tanh(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn powf(self, y: Self) -> Self;
    fn atan2(self, y: Self) -> Self;
    fn hypot(self, y: Self) -> Self;
    /// C `fmod` (Rust's `%`).
    fn fmod(self, y: Self) -> Self;
    fn div(self, y: Self) -> Self;
    fn floor(self) -> Self;
    fn copysign(self, y: Self) -> Self;
}

macro_rules! float_impl {
    ($($t:ty),*) => { $(
        impl Float for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const HALF: $t = 0.5;
            #[inline(always)] fn cbrt(self) -> $t { <$t>::cbrt(self) }
            #[inline(always)] fn exp(self) -> $t { <$t>::exp(self) }
            #[inline(always)] fn exp2(self) -> $t { <$t>::exp2(self) }
            #[inline(always)] fn exp_m1(self) -> $t { <$t>::exp_m1(self) }
            #[inline(always)] fn ln(self) -> $t { <$t>::ln(self) }
            #[inline(always)] fn log2(self) -> $t { <$t>::log2(self) }
            #[inline(always)] fn log10(self) -> $t { <$t>::log10(self) }
            #[inline(always)] fn ln_1p(self) -> $t { <$t>::ln_1p(self) }
            #[inline(always)] fn sin(self) -> $t { <$t>::sin(self) }
            #[inline(always)] fn cos(self) -> $t { <$t>::cos(self) }
            #[inline(always)] fn tan(self) -> $t { <$t>::tan(self) }
            #[inline(always)] fn asin(self) -> $t { <$t>::asin(self) }
            #[inline(always)] fn acos(self) -> $t { <$t>::acos(self) }
            #[inline(always)] fn atan(self) -> $t { <$t>::atan(self) }
            #[inline(always)] fn sinh(self) -> $t { <$t>::sinh(self) }
            #[inline(always)] fn cosh(self) -> $t { <$t>::cosh(self) }
            #[inline(always)] fn tanh(self) -> $t { <$t>::tanh(self) }
            #[inline(always)] fn asinh(self) -> $t { <$t>::asinh(self) }
            #[inline(always)] fn acosh(self) -> $t { <$t>::acosh(self) }
            #[inline(always)] fn atanh(self) -> $t { <$t>::atanh(self) }
            #[inline(always)] fn powf(self, y: $t) -> $t { <$t>::powf(self, y) }
            #[inline(always)] fn atan2(self, y: $t) -> $t { <$t>::atan2(self, y) }
            #[inline(always)] fn hypot(self, y: $t) -> $t { <$t>::hypot(self, y) }
            #[inline(always)] fn fmod(self, y: $t) -> $t { self % y }
            #[inline(always)] fn div(self, y: $t) -> $t { self / y }
            #[inline(always)] fn floor(self) -> $t { <$t>::floor(self) }
            #[inline(always)] fn copysign(self, y: $t) -> $t { <$t>::copysign(self, y) }
        }
    )* };
}
float_impl!(f32, f64);

/// NumPy's `divmod` for a nonzero divisor: the quotient rounded so that `a == q * b + r` as
/// nearly as rounding allows, the remainder with the sign of `b` (a zero remainder is
/// `copysign(0, b)`), a zero quotient with the sign of `a / b`.
#[inline(always)]
fn divmod<T: Float>(a: T, b: T) -> (T, T) {
    let mut m = a.fmod(b);
    let mut div = (a - m).div(b);
    if m != T::ZERO {
        if (b < T::ZERO) != (m < T::ZERO) {
            m = m + b;
            div = div - T::ONE;
        }
    } else {
        m = T::ZERO.copysign(b);
    }
    let q = if div != T::ZERO {
        let mut q = div.floor();
        if div - q > T::HALF {
            q = q + T::ONE;
        }
        q
    } else {
        T::ZERO.copysign(a.div(b))
    };
    (q, m)
}

/// `floor(a / b)` for floats, NumPy style; `a / b` when `b` is zero.
#[inline(always)]
pub fn float_floor_divide<T: Float>(a: T, b: T) -> T {
    if b == T::ZERO { a.div(b) } else { divmod(a, b).0 }
}

/// `a mod b` with the sign of `b` for floats, NumPy style; `fmod(a, 0)` (NaN) when `b` is zero.
#[inline(always)]
pub fn float_remainder<T: Float>(a: T, b: T) -> T {
    if b == T::ZERO { a.fmod(b) } else { divmod(a, b).1 }
}

/// Integer element types and the primitives the integer semantics are written in.
pub trait Int: Copy + Eq + Ord {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// True for signed types.
    const SIGNED: bool;
    /// Wrapping `+`.
    fn wadd(self, b: Self) -> Self;
    /// Wrapping `-`.
    fn wsub(self, b: Self) -> Self;
    /// Wrapping `*`.
    fn wmul(self, b: Self) -> Self;
    /// Truncating division, wrapping (`MIN / -1 == MIN`); `b != 0`.
    fn wdiv(self, b: Self) -> Self;
    /// Remainder with the sign of `self` (`MIN % -1 == 0`); `b != 0`.
    fn wrem(self, b: Self) -> Self;
    /// The value as an `i128`.
    fn wide(self) -> i128;
}

macro_rules! int_impl {
    ($($t:ty),*) => { $(
        impl Int for $t {
            const ZERO: $t = 0;
            const ONE: $t = 1;
            const SIGNED: bool = <$t>::MIN != 0;
            #[inline(always)] fn wadd(self, b: $t) -> $t { self.wrapping_add(b) }
            #[inline(always)] fn wsub(self, b: $t) -> $t { self.wrapping_sub(b) }
            #[inline(always)] fn wmul(self, b: $t) -> $t { self.wrapping_mul(b) }
            #[inline(always)] fn wdiv(self, b: $t) -> $t { self.wrapping_div(b) }
            #[inline(always)] fn wrem(self, b: $t) -> $t { self.wrapping_rem(b) }
            #[inline(always)] fn wide(self) -> i128 { self as i128 }
        }
    )* };
}
int_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

#[inline(always)]
fn neg<T: Int>(x: T) -> bool {
    T::SIGNED && x.wide() < 0
}

/// `floor(a / b)`; 0 when `b` is 0; `MIN // -1 == MIN`.
#[inline(always)]
pub fn int_floor_divide<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO {
        return T::ZERO;
    }
    let q = a.wdiv(b);
    if a.wrem(b) != T::ZERO && neg(a) != neg(b) { q.wsub(T::ONE) } else { q }
}

/// `a mod b` with the sign of `b`; 0 when `b` is 0.
#[inline(always)]
pub fn int_remainder<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO {
        return T::ZERO;
    }
    let r = a.wrem(b);
    if r != T::ZERO && neg(r) != neg(b) { r.wadd(b) } else { r }
}

/// `a mod b` with the sign of `a`; 0 when `b` is 0.
#[inline(always)]
pub fn int_fmod<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO { T::ZERO } else { a.wrem(b) }
}

/// `a ** b` by repeated squaring, wrapping; a negative exponent gives 0, except 1 for base 1 and
/// +-1 for base -1.
#[inline(always)]
pub fn int_power<T: Int>(a: T, b: T) -> T {
    if neg(b) {
        return match a.wide() {
            1 => T::ONE,
            -1 if b.wide() % 2 != 0 => a,
            -1 => T::ONE,
            _ => T::ZERO,
        };
    }
    let (mut e, mut sq, mut r) = (b.wide() as u128, a, T::ONE);
    while e != 0 {
        if e & 1 == 1 {
            r = r.wmul(sq);
        }
        sq = sq.wmul(sq);
        e >>= 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_family_follows_numpy() {
        assert_eq!(int_floor_divide(-7i64, 2), -4);
        assert_eq!(int_remainder(-7i64, 2), 1);
        assert_eq!(int_remainder(7i64, -2), -1);
        assert_eq!(int_fmod(-7i64, 2), -1);
        assert_eq!(int_floor_divide(5u8, 0), 0);
        assert_eq!(int_floor_divide(i8::MIN, -1), i8::MIN);
        assert_eq!(int_power(-1i32, -3), -1);
        assert_eq!(int_power(2i32, -3), 0);
        assert_eq!(int_power(3u64, 4), 81);
    }

    #[test]
    fn float_division_family_follows_numpy() {
        assert_eq!(float_floor_divide(7.0f64, -2.0), -4.0);
        assert_eq!(float_remainder(-7.0f64, 2.0), 1.0);
        assert!(float_remainder(1.0f64, 0.0).is_nan());
        assert_eq!(float_floor_divide(1.0f64, 0.0), f64::INFINITY);
    }
}
