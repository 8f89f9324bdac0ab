//! The element semantics of the opcodes that need more than one std call: NumPy's integer
//! division family, integer powers, shifts, NumPy's float `divmod`, NaN-propagating min/max,
//! `asinh` and `acosh` that stay finite at the largest finite values.
//! Written once, here, for every engine that computes on the host (the reference interpreter and
//! the block routines of the JIT engine); each function works on one or two elements and is meant
//! to be checked by eye against the opcode table's doc comments.

/// The integer primitives the generic integer semantics below are written in.
pub trait Int: Copy + Eq + Ord {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Width in bits.
    const BITS: u32;
    /// `self + b`, wrapping.
    fn wrapping_add(self, b: Self) -> Self;
    /// `self - b`, wrapping.
    fn wrapping_sub(self, b: Self) -> Self;
    /// `self * b`, wrapping.
    fn wrapping_mul(self, b: Self) -> Self;
    /// `self / b` truncated toward zero, wrapping (`MIN / -1 == MIN`); `b != 0`.
    fn wrapping_div(self, b: Self) -> Self;
    /// `self % b` with the sign of `self` (`MIN % -1 == 0`); `b != 0`.
    fn wrapping_rem(self, b: Self) -> Self;
    /// `self << n` for `n < BITS` (bits shifted out are lost).
    fn shl(self, n: u32) -> Self;
    /// `self >> n` for `n < BITS`, arithmetic for signed types.
    fn shr(self, n: u32) -> Self;
    /// The value, exactly, as an `i128`.
    fn to_i128(self) -> i128;

    /// True when the value is below zero.
    fn is_negative(self) -> bool {
        self.to_i128() < 0
    }
}

macro_rules! int_impl {
    ($($t:ty),*) => { $(
        impl Int for $t {
            const ZERO: $t = 0;
            const ONE: $t = 1;
            const BITS: u32 = <$t>::BITS;
            fn wrapping_add(self, b: $t) -> $t { <$t>::wrapping_add(self, b) }
            fn wrapping_sub(self, b: $t) -> $t { <$t>::wrapping_sub(self, b) }
            fn wrapping_mul(self, b: $t) -> $t { <$t>::wrapping_mul(self, b) }
            fn wrapping_div(self, b: $t) -> $t { <$t>::wrapping_div(self, b) }
            fn wrapping_rem(self, b: $t) -> $t { <$t>::wrapping_rem(self, b) }
            fn shl(self, n: u32) -> $t { self << n }
            fn shr(self, n: u32) -> $t { self >> n }
            fn to_i128(self) -> i128 { self as i128 }
        }
    )* };
}
int_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

/// -1 of a signed type (wraps to the maximum for unsigned types, where it is never used).
fn minus_one<T: Int>() -> T {
    T::ZERO.wrapping_sub(T::ONE)
}

/// `floor(a / b)`; 0 when `b == 0` (NumPy); `MIN // -1 == MIN` (wraps).
pub fn floor_divide<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO {
        return T::ZERO;
    }
    let q = a.wrapping_div(b);
    let inexact = a.wrapping_rem(b) != T::ZERO;
    if inexact && a.is_negative() != b.is_negative() { q.wrapping_sub(T::ONE) } else { q }
}

/// `a mod b` with the sign of `b` (NumPy `remainder`); 0 when `b == 0`.
pub fn remainder<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO {
        return T::ZERO;
    }
    let r = a.wrapping_rem(b);
    if r != T::ZERO && r.is_negative() != b.is_negative() { r.wrapping_add(b) } else { r }
}

/// `a mod b` with the sign of `a` (C `fmod`); 0 when `b == 0`.
pub fn fmod<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO { T::ZERO } else { a.wrapping_rem(b) }
}

/// `base ** exp` by repeated squaring, wrapping. A negative exponent gives 0, except for base 1
/// (1) and base -1 (-1 for odd exponents, 1 for even ones).
pub fn power<T: Int>(base: T, exp: T) -> T {
    if exp.is_negative() {
        return if base == T::ONE {
            T::ONE
        } else if base.to_i128() == -1 {
            if exp.to_i128() % 2 != 0 { minus_one() } else { T::ONE }
        } else {
            T::ZERO
        };
    }
    let mut e = exp.to_i128() as u128;
    let mut square = base;
    let mut result = T::ONE;
    while e != 0 {
        if e & 1 == 1 {
            result = result.wrapping_mul(square);
        }
        square = square.wrapping_mul(square);
        e >>= 1;
    }
    result
}

/// `a << b`; a shift by the width or more, or by a negative amount, gives 0.
pub fn left_shift<T: Int>(a: T, b: T) -> T {
    let n = b.to_i128();
    if n < 0 || n >= i128::from(T::BITS) { T::ZERO } else { a.shl(n as u32) }
}

/// `a >> b` (arithmetic for signed types); a shift by the width or more, or by a negative
/// amount, gives 0, or -1 for negative `a`.
pub fn right_shift<T: Int>(a: T, b: T) -> T {
    let n = b.to_i128();
    if n < 0 || n >= i128::from(T::BITS) {
        if a.is_negative() { minus_one() } else { T::ZERO }
    } else {
        a.shr(n as u32)
    }
}

/// `|a|`; the minimum signed value stays itself (NumPy).
pub fn absolute<T: Int>(a: T) -> T {
    if a.is_negative() { T::ZERO.wrapping_sub(a) } else { a }
}

/// -1, 0 or 1 by the sign of `a`.
pub fn sign<T: Int>(a: T) -> T {
    if a.is_negative() {
        minus_one()
    } else if a == T::ZERO {
        T::ZERO
    } else {
        T::ONE
    }
}

/// The float primitives NumPy's `divmod` is written in.
pub trait Float:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
{
    /// +0.0.
    const ZERO: Self;
    /// 1.0.
    const ONE: Self;
    /// 0.5.
    const HALF: Self;
    /// Largest integer `<= self`.
    fn floor(self) -> Self;
    /// `|self|` with the sign of `sign`.
    fn copysign(self, sign: Self) -> Self;
    /// True for NaN.
    fn is_nan(self) -> bool;
    /// 2^28: above it, `sqrt(x * x + 1)` and `sqrt(x * x - 1)` are `x` to far below the last bit.
    const ASYMPTOTIC: Self;
    /// ln 2.
    const LN_2: Self;
    /// `|self|`.
    fn abs(self) -> Self;
    /// The natural logarithm (libm's).
    fn ln(self) -> Self;
    /// `std`'s inverse hyperbolic sine.
    fn std_asinh(self) -> Self;
    /// Not a number.
    const NAN: Self;
    /// `std`'s inverse hyperbolic tangent.
    fn std_atanh(self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// log2(e).
    const LOG2_E: Self;
    /// e ** self (libm's).
    fn exp(self) -> Self;
    /// 2 ** self (libm's).
    fn exp2(self) -> Self;
    /// ln(1 + self), accurate near 0 (libm's).
    fn ln_1p(self) -> Self;
    /// 180 / pi, divided in the type from its own rounded pi, as NumPy's `rad2deg` loop does
    /// (for f32 one ulp from Rust's `to_degrees`, which rounds 180 / pi once).
    const DEGREES_PER_RADIAN: Self;
    /// pi / 180, divided in the type (NumPy's `deg2rad` factor; Rust's `to_radians` too).
    const RADIANS_PER_DEGREE: Self;
}

macro_rules! float_impl {
    ($($t:ty),*) => { $(
        impl Float for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const HALF: $t = 0.5;
            fn floor(self) -> $t { <$t>::floor(self) }
            fn copysign(self, sign: $t) -> $t { <$t>::copysign(self, sign) }
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
            const ASYMPTOTIC: $t = 268_435_456.0;
            // Rounded from f64, which is f32::consts::LN_2 for f32.
            const LN_2: $t = std::f64::consts::LN_2 as $t;
            fn abs(self) -> $t { <$t>::abs(self) }
            fn ln(self) -> $t { <$t>::ln(self) }
            fn std_asinh(self) -> $t { <$t>::asinh(self) }
            const NAN: $t = <$t>::NAN;
            fn std_atanh(self) -> $t { <$t>::atanh(self) }
            fn sqrt(self) -> $t { <$t>::sqrt(self) }
            const LOG2_E: $t = std::f64::consts::LOG2_E as $t;
            fn exp(self) -> $t { <$t>::exp(self) }
            fn exp2(self) -> $t { <$t>::exp2(self) }
            fn ln_1p(self) -> $t { <$t>::ln_1p(self) }
            const DEGREES_PER_RADIAN: $t = 180.0 / (std::f64::consts::PI as $t);
            const RADIANS_PER_DEGREE: $t = (std::f64::consts::PI as $t) / 180.0;
        }
    )* };
}
float_impl!(f32, f64);

/// `rad2deg`: `a` times [`Float::DEGREES_PER_RADIAN`].
pub fn rad2deg<T: Float>(a: T) -> T {
    a * T::DEGREES_PER_RADIAN
}

/// `deg2rad`: `a` times [`Float::RADIANS_PER_DEGREE`].
pub fn deg2rad<T: Float>(a: T) -> T {
    a * T::RADIANS_PER_DEGREE
}

/// NumPy's `npy_divmod` for a nonzero `b`: `(floor_divide(a, b), remainder(a, b))`, computed as
/// NumPy (and CPython) do so that `a == q * b + r` as nearly as rounding allows, the remainder
/// has the sign of `b` (a zero remainder is `copysign(0, b)`), and a zero quotient carries the
/// sign of `a / b`.
fn divmod_nonzero<T: Float>(a: T, b: T) -> (T, T) {
    let mut m = a % b; // C fmod
    let mut div = (a - m) / b;
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
        T::ZERO.copysign(a / b)
    };
    (q, m)
}

/// NumPy `logaddexp` (`npy_logaddexp`): `ln(e^a + e^b)` as the larger plus `log1p(e^-|a-b|)`;
/// equal arguments (infinities of one sign included) give `a + ln 2`, a NaN difference gives it.
pub fn float_logaddexp<T: Float>(a: T, b: T) -> T {
    if a == b {
        return a + T::LN_2;
    }
    let d = a - b;
    if d > T::ZERO {
        a + (T::ZERO - d).exp().ln_1p()
    } else if d <= T::ZERO {
        b + d.exp().ln_1p()
    } else {
        d
    }
}

/// NumPy `logaddexp2` (`npy_logaddexp2`): [`float_logaddexp`] in base 2.
pub fn float_logaddexp2<T: Float>(a: T, b: T) -> T {
    if a == b {
        return a + T::ONE;
    }
    let d = a - b;
    if d > T::ZERO {
        a + T::LOG2_E * (T::ZERO - d).exp2().ln_1p()
    } else if d <= T::ZERO {
        b + T::LOG2_E * d.exp2().ln_1p()
    } else {
        d
    }
}

/// NumPy `floor_divide` for floats: `a / b` when `b == 0` (an infinity or NaN).
pub fn float_floor_divide<T: Float>(a: T, b: T) -> T {
    if b == T::ZERO { a / b } else { divmod_nonzero(a, b).0 }
}

/// NumPy `remainder` for floats: `fmod(a, 0)` (NaN) when `b == 0`.
pub fn float_remainder<T: Float>(a: T, b: T) -> T {
    if b == T::ZERO { a % b } else { divmod_nonzero(a, b).1 }
}

/// NumPy `maximum`: NaN when either is NaN; of two equal values the second, as NumPy's
/// (x86's `maxpd`), so `maximum(0.0, -0.0)` is `-0.0` and `maximum(-0.0, 0.0)` is `0.0`.
pub fn float_maximum<T: Float>(a: T, b: T) -> T {
    if a > b || a.is_nan() { a } else { b }
}

/// NumPy `minimum`: NaN when either is NaN; of two equal values the second, as NumPy's.
pub fn float_minimum<T: Float>(a: T, b: T) -> T {
    if a < b || a.is_nan() { a } else { b }
}

/// NumPy `fmax`: the other operand when one is NaN (NaN only when both are).
pub fn float_fmax<T: Float>(a: T, b: T) -> T {
    if a >= b || b.is_nan() { a } else { b }
}

/// NumPy `fmin`: the other operand when one is NaN (NaN only when both are).
pub fn float_fmin<T: Float>(a: T, b: T) -> T {
    if a <= b || b.is_nan() { a } else { b }
}

/// NumPy `sign` for floats: -1, 0 or 1, NaN for NaN (`sign(-0.0) == 0.0`).
pub fn float_sign<T: Float>(a: T) -> T {
    if a > T::ZERO {
        T::ONE
    } else if a < T::ZERO {
        T::ZERO - T::ONE
    } else if a == T::ZERO {
        T::ZERO
    } else {
        a // NaN
    }
}

/// `asinh`. `std`'s overflows to infinity near the largest finite values (it adds about `|a|` to
/// `|a|`), where the answer is about 710 (89 for f32); above 2^28 this is `ln|a| + ln 2`, as libm
/// computes it.
pub fn float_asinh<T: Float>(a: T) -> T {
    if a.abs() > T::ASYMPTOTIC { (a.abs().ln() + T::LN_2).copysign(a) } else { a.std_asinh() }
}

/// `acosh`, as libm computes it: `ln a + ln 2` above 2^28 (`std`'s overflows to infinity near
/// the largest finite values), `ln(2a - 1 / (a + sqrt(a^2 - 1)))` from 2, and
/// `ln_1p(t + sqrt(2t + t^2))` with `t = a - 1` below, where `std`'s `ln(a + sqrt(a^2 - 1))`
/// loses up to 11 units in the last place as `a` nears 1. NaN below 1.
pub fn float_acosh<T: Float>(a: T) -> T {
    let two = T::ONE + T::ONE;
    if a < T::ONE {
        return T::NAN; // also for -inf
    }
    if a > T::ASYMPTOTIC {
        a.ln() + T::LN_2
    } else if a >= two {
        (two * a - T::ONE / (a + (a * a - T::ONE).sqrt())).ln()
    } else {
        let t = a - T::ONE;
        (t + (two * t + t * t).sqrt()).ln_1p()
    }
}

/// `atanh`, odd by construction: `std`'s `ln_1p(2a / (1 - a)) / 2` loses up to 60 units in the
/// last place for `a` near -1 (the argument of `ln_1p` nears -1), and is accurate for `|a|`.
pub fn float_atanh<T: Float>(a: T) -> T {
    a.abs().std_atanh().copysign(a)
}

/// True when `x`, met after `best` along an axis, takes `best`'s place as the position that
/// `argmax_reduce` (`max`) or `argmin_reduce` (`!max`) reports, as NumPy's `argmax`/`argmin`
/// decide: a NaN beats every number and the first NaN stays; otherwise only a strictly greater
/// (smaller) value wins, so equal values (-0.0 and 0.0 among them) keep the first position.
/// `bool` orders `false` before `true`.
#[inline]
pub fn arg_replaces<T: PartialOrd>(max: bool, best: T, x: T) -> bool {
    let nan = |v: &T| v.partial_cmp(v).is_none();
    if nan(&best) {
        false
    } else if nan(&x) {
        true
    } else if max {
        x > best
    } else {
        x < best
    }
}

/// The winner of two partial results `(value, position)` of `argmax_reduce` (`max`) or
/// `argmin_reduce`, in either order: the value [`arg_replaces`] prefers, the smaller position
/// between equals. Partials of any split of an axis, combined this way in any grouping, give
/// the position a walk along the whole axis gives: results do not depend on the blocking.
#[inline]
pub fn arg_combine<T: PartialOrd + Copy>(max: bool, a: (T, i64), b: (T, i64)) -> (T, i64) {
    let (first, second) = if a.1 <= b.1 { (a, b) } else { (b, a) };
    if arg_replaces(max, first.0, second.0) { second } else { first }
}

/// A value's place in the order `sort` and `argsort` give (NumPy's sort order): ascending,
/// `false` before `true`, NaNs after every number, as an unsigned key that orders as the values
/// do.
pub trait SortKey: Copy {
    /// The key of a value that is not NaN, `-0.0` before `0.0` (the order of their bits).
    fn key(self) -> u64;
    /// True for NaN.
    fn is_nan_value(self) -> bool {
        false
    }
    /// The key `argsort` compares: [`SortKey::key`] with `-0.0` equal to `0.0`, NaNs all equal
    /// and after every number.
    fn position_key(self) -> u64 {
        self.key()
    }
}

macro_rules! sort_key_ints {
    ($($t:ty => $k:expr),* $(,)?) => {$(
        impl SortKey for $t {
            #[inline]
            fn key(self) -> u64 {
                let f: fn($t) -> u64 = $k;
                f(self)
            }
        }
    )*};
}

sort_key_ints! {
    bool => |v| v as u64,
    u8 => |v| v as u64,
    u16 => |v| v as u64,
    u32 => |v| v as u64,
    u64 => |v| v,
    i8 => |v| (v as i64 as u64) ^ (1 << 63),
    i16 => |v| (v as i64 as u64) ^ (1 << 63),
    i32 => |v| (v as i64 as u64) ^ (1 << 63),
    i64 => |v| (v as u64) ^ (1 << 63),
}

macro_rules! sort_key_floats {
    ($($t:ty, $bits:ty);*) => {$(
        impl SortKey for $t {
            #[inline]
            fn key(self) -> u64 {
                // Negative values: all bits flipped (larger magnitudes first); others: the sign
                // bit set (above every negative one).
                let bits = self.to_bits();
                let sign = 1 << (<$bits>::BITS - 1);
                (if bits & sign != 0 { !bits } else { bits | sign }) as u64
            }
            #[inline]
            fn is_nan_value(self) -> bool {
                self.is_nan()
            }
            #[inline]
            fn position_key(self) -> u64 {
                if self.is_nan() { u64::MAX } else { (self + 0.0).key() }
            }
        }
    )*};
}

sort_key_floats!(f32, u32; f64, u64);

/// Slices at least this long are sorted by radix ([`sort_by_key`]).
const RADIX_FROM: usize = 1024;

/// Slices at least this long are first split into places of about [`PLACE_LEN`] values by
/// sampled key bounds ([`sort_by_key`]).
const SPLIT_FROM: usize = 1 << 16;

/// About how many values a place of a long slice holds ([`sort_by_key`]): its radix passes
/// stay in cache.
const PLACE_LEN: usize = 1 << 15;

/// Sorts `values` by `key`, stably: a comparison sort for short slices, else a radix sort of
/// the keys' bytes (one counting pass for all eight, then one pass per byte on which the keys
/// differ): a few passes over the data instead of `log2 n` comparisons per value. A long slice
/// is first split into places by key ([`split_by_key`]), each then sorted alone while it stays
/// in cache: a radix pass over all of a long slice scatters its values to 256 places far
/// apart, and waits on memory. (Bytes, not wider digits: 2048 places, fewer passes, measured
/// slower.)
pub fn sort_by_key<T: Copy>(values: &mut [T], key: impl Fn(&T) -> u64) {
    let n = values.len();
    if n < RADIX_FROM {
        values.sort_by_key(key);
        return;
    }
    let mut scratch: Vec<T> = values.to_vec();
    if n < SPLIT_FROM {
        radix_sort(values, &mut scratch, &key);
        return;
    }
    let mut from = 0;
    for count in split_by_key(values, &mut scratch, n.div_ceil(PLACE_LEN), &key) {
        let place = from..from + count;
        radix_sort(&mut scratch[place.clone()], &mut values[place], &key);
        from += count;
    }
    values.copy_from_slice(&scratch);
}

/// Bits per radix digit: a byte.
const BITS: usize = 8;
/// Digits per key.
const DIGITS: usize = 64usize.div_ceil(BITS);
/// One digit's mask.
const MASK: u64 = (1 << BITS) - 1;
/// How many keys hold each value of each digit.
type DigitCounts = [[usize; 1 << BITS]; DIGITS];

/// [`DigitCounts`] of the keys of `values`, in one pass.
fn digit_counts<T>(values: &[T], key: &impl Fn(&T) -> u64) -> DigitCounts {
    let mut counts = [[0usize; 1 << BITS]; DIGITS];
    for v in values {
        let k = key(v);
        for (digit, count) in counts.iter_mut().enumerate() {
            count[((k >> (BITS * digit)) & MASK) as usize] += 1;
        }
    }
    counts
}

/// Where the places of digit `digit` start, in order.
fn place_starts(counts: &DigitCounts, digit: usize) -> [usize; 1 << BITS] {
    let mut next = [0usize; 1 << BITS];
    let mut sum = 0;
    for (slot, &c) in next.iter_mut().zip(&counts[digit]) {
        *slot = sum;
        sum += c;
    }
    next
}

/// Copies `values` into `scratch` split stably by digit `digit` of their keys.
fn scatter_by_digit<T: Copy>(
    values: &[T],
    scratch: &mut [T],
    key: &impl Fn(&T) -> u64,
    counts: &DigitCounts,
    digit: usize,
) {
    let mut next = place_starts(counts, digit);
    for v in values {
        let d = ((key(v) >> (BITS * digit)) & MASK) as usize;
        scratch[next[d]] = *v;
        next[d] += 1;
    }
}

/// Keys sampled per place by [`split_by_key`] to choose where places end.
const SAMPLES_PER_PLACE: usize = 64;

/// The most places [`split_by_key`] makes (a byte numbers them).
const MAX_PLACES: usize = 256;

/// The first step of [`sort_by_key`] on a long slice, and of a parallel sort: `values` copied
/// into `scratch` (as long) in up to `places` (at most 256) places by key, stably: every key of a place below every key of the next (equal
/// keys share a place), the bounds chosen from an evenly spaced sample of the keys so that the
/// places hold about as many values each, whatever their distribution. Returns the places'
/// lengths, in order; each place then sorted by `key` apart (in parallel, say) leaves `scratch`
/// as [`sort_by_key`] leaves `values`.
pub fn split_by_key<T: Copy>(values: &[T], scratch: &mut [T], places: usize, key: impl Fn(&T) -> u64) -> Vec<usize> {
    let (n, places) = (values.len(), places.clamp(1, MAX_PLACES));
    let samples = (places * SAMPLES_PER_PLACE).clamp(1, n.max(1));
    let mut sample: Vec<u64> = (0..samples).map(|i| key(&values[i * n / samples])).collect();
    sample.sort_unstable();
    // A place ends before each bound; a key equal to a bound goes after it.
    let mut bounds: Vec<u64> = (1..places).map(|p| sample[p * samples / places]).collect();
    bounds.dedup();
    // Each value's place (a binary search without branches: nothing to mispredict), counted.
    let mut counts = vec![0usize; bounds.len() + 1];
    let mut place_of: Vec<u8> = Vec::with_capacity(n);
    for v in values {
        let k = key(v);
        let (mut lo, mut size) = (0, bounds.len());
        while size > 0 {
            let half = size / 2;
            let after = bounds[lo + half] <= k;
            lo = if after { lo + half + 1 } else { lo };
            size = if after { size - half - 1 } else { half };
        }
        counts[lo] += 1;
        place_of.push(lo as u8);
    }
    let mut next: Vec<usize> = counts
        .iter()
        .scan(0, |sum, &c| {
            *sum += c;
            Some(*sum - c)
        })
        .collect();
    for (v, &p) in values.iter().zip(&place_of) {
        scratch[next[p as usize]] = *v;
        next[p as usize] += 1;
    }
    counts
}

/// The radix sort of [`sort_by_key`]: `values` by `key`, with `scratch` (as long, contents
/// unspecified) to work in; the result ends in `values`.
fn radix_sort<T: Copy, K: Fn(&T) -> u64>(values: &mut [T], scratch: &mut [T], key: &K) {
    let n = values.len();
    if n < RADIX_FROM {
        values.sort_by_key(key);
        return;
    }
    let counts = digit_counts(values, key);
    let mut in_scratch = false;
    {
        let (mut from, mut to): (&mut [T], &mut [T]) = (&mut *values, &mut *scratch);
        for digit in (0..DIGITS).filter(|&d| !counts[d].contains(&n)) {
            scatter_by_digit(from, to, key, &counts, digit);
            std::mem::swap(&mut from, &mut to);
            in_scratch = !in_scratch;
        }
    }
    if in_scratch {
        values.copy_from_slice(scratch);
    }
}

/// The order [`sort_lines`] puts values in, as a key: numbers by [`SortKey::key`], then the
/// NaNs, equal to each other (so they keep their order). (No number of a float dtype has the
/// NaNs' key; an integer dtype has no NaNs.)
#[inline]
pub fn sorted_order<T: SortKey>(v: &T) -> u64 {
    if v.is_nan_value() { u64::MAX } else { v.key() }
}

/// Moves the NaNs of `line` after its numbers, each part in its order (`nans` holds them on
/// the way); returns how many numbers there are. What [`sort_lines`] does before it sorts the
/// numbers by [`SortKey::key`].
pub fn nans_last<T: SortKey>(line: &mut [T], nans: &mut Vec<T>) -> usize {
    nans.clear();
    let mut numbers = 0;
    for k in 0..line.len() {
        if line[k].is_nan_value() {
            nans.push(line[k]);
        } else {
            line[numbers] = line[k];
            numbers += 1;
        }
    }
    line[numbers..].copy_from_slice(nans);
    numbers
}

/// Sorts each line along `axis` of `values` (row-major, of `shape`): what `sort` computes. The
/// numbers ascend (`-0.0` before `0.0`), the NaNs follow in their order.
pub fn sort_lines<T: SortKey>(values: &mut [T], shape: &[usize], axis: usize) {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let mut nans: Vec<T> = Vec::new();
    let mut sort = |line: &mut [T]| {
        let numbers = nans_last(line, &mut nans);
        sort_by_key(&mut line[..numbers], |v| v.key());
    };
    if inner == 1 {
        values.chunks_exact_mut(len.max(1)).for_each(sort);
        return;
    }
    let mut line = Vec::with_capacity(len);
    for start in line_starts(values.len(), len, inner) {
        line.clear();
        line.extend((0..len).map(|k| values[start + k * inner]));
        sort(&mut line);
        for (k, &v) in line.iter().enumerate() {
            values[start + k * inner] = v;
        }
    }
}

/// Into `positions` (of `values`' length), for each line along `axis` of `values` (row-major, of
/// `shape`), the positions along the axis that sort the line, equal values (`-0.0` and `0.0`
/// among them, and every NaN, all last) in their order: what `argsort` computes (NumPy's stable
/// `argsort`).
pub fn argsort_lines<T: SortKey>(values: &[T], shape: &[usize], axis: usize, positions: &mut [i64]) {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let mut keyed: Vec<(u64, i64)> = Vec::with_capacity(len);
    for start in line_starts(values.len(), len, inner) {
        keyed.clear();
        keyed.extend((0..len).map(|k| (values[start + k * inner].position_key(), k as i64)));
        // In order of the keys, equal keys in order of their positions.
        sort_by_key(&mut keyed, |&(key, _)| key);
        for (k, &(_, p)) in keyed.iter().enumerate() {
            positions[start + k * inner] = p;
        }
    }
}

/// Reorders `items` so that positions `lo..=hi` (`lo <= hi < items.len()`) hold the items an
/// ascending sort by `key` puts there, every item before them with a key at most `lo`'s and
/// every item after with a key at least `hi`'s: two selections (NumPy's introselect's job) and
/// a sort of what lies between. The order elsewhere is unspecified but fixed: the same input
/// gives the same output on every engine.
pub fn select_range<E: Copy, K: Ord>(items: &mut [E], lo: usize, hi: usize, key: impl Fn(&E) -> K) {
    let (_, _, after) = items.select_nth_unstable_by_key(lo, &key);
    if hi > lo {
        after.select_nth_unstable_by_key(hi - lo - 1, &key);
        items[lo + 1..hi].sort_unstable_by_key(&key);
    }
}

/// What `partition` makes of a line: its values with positions `lo..=hi` as [`sort_lines`]
/// orders them (numbers ascending, `-0.0` before `0.0`, NaNs last), the values before them at
/// most and those after at least their neighbour in that order.
pub fn partition_line<T: SortKey>(line: &mut [T], lo: usize, hi: usize) {
    select_range(line, lo, hi, sorted_order);
}

/// What `argpartition` makes of a line: into `positions` (of its length) positions along the
/// line that order it as [`partition_line`] orders its values, those at `lo..=hi` the ones
/// [`argsort_lines`] puts there (equal values, `-0.0` and `0.0` among them, by position).
pub fn argpartition_line<T: SortKey>(line: &[T], lo: usize, hi: usize, positions: &mut [i64]) {
    let mut keyed: Vec<(u64, i64)> = line.iter().enumerate().map(|(p, v)| (v.position_key(), p as i64)).collect();
    select_range(&mut keyed, lo, hi, |&pair| pair);
    positions.iter_mut().zip(&keyed).for_each(|(p, &(_, q))| *p = q);
}

/// Into `out` (of `keys`' length), for each key in turn, its position in `sorted`: before the
/// values equal to it (`right` false) or after them (`right` true), in the order of
/// [`SortKey::position_key`] (NaNs last, `-0.0` equal to `0.0`): what `searchsorted_left` and
/// `searchsorted_right` compute (see [`SearchTable`]).
pub fn search_sorted<T: SortKey>(sorted: &[T], keys: &[T], right: bool, out: &mut [i64]) {
    if keys.len().saturating_mul(FEW_KEYS) <= sorted.len() {
        // Few keys: their searches read fewer values than the table's keys would.
        numpy_search(sorted.len(), |i| sorted[i].position_key(), keys, right, out);
    } else {
        SearchTable::new(sorted).search(keys, right, out);
    }
}

/// Values per key from which [`search_sorted`] searches the values as they are (at most one
/// key per this many values): a table costs a few passes over all values, a search about
/// `log2` of their number steps.
pub const FEW_KEYS: usize = 32;

/// NumPy's binary search of each key among `n` values whose keys `at` gives, step for step:
/// each search starts from the bounds the previous key left where the keys ascend, so that
/// values out of order give NumPy's positions too.
fn numpy_search<T: SortKey>(n: usize, at: impl Fn(usize) -> u64, keys: &[T], right: bool, out: &mut [i64]) {
    let goes_after = |value: u64, key: u64| if right { value <= key } else { value < key };
    let Some(first) = keys.first() else { return };
    let (mut lo, mut hi) = (0, n);
    let mut last = first.position_key();
    for (key, slot) in keys.iter().zip(out) {
        let key = key.position_key();
        if goes_after(last, key) {
            hi = n;
        } else {
            lo = 0;
            hi = if hi < n { hi + 1 } else { n };
        }
        last = key;
        while lo < hi {
            let mid = lo + ((hi - lo) >> 1);
            if goes_after(at(mid), key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        *slot = lo as i64;
    }
}

/// The values a search looks in, as their order's keys. NumPy's binary search step for step:
/// each search starts from the bounds the previous key left where the keys ascend, so that
/// unsorted values give NumPy's positions too. On sorted values every binary search finds the
/// one answer, so a branchless one stands for it (its steps a conditional move each, nothing to
/// mispredict on random keys), and the keys may be searched in parts, in parallel.
pub struct SearchTable {
    order: Vec<u64>,
    sorted: bool,
}

impl SearchTable {
    /// The table of `values`.
    pub fn new<T: SortKey>(values: &[T]) -> SearchTable {
        let order: Vec<u64> = values.iter().map(|v| v.position_key()).collect();
        let sorted = order.windows(2).all(|w| w[0] <= w[1]);
        SearchTable { order, sorted }
    }

    /// True when the values ascend: searches of parts of the keys then give the positions a
    /// search of all of them gives.
    pub fn is_sorted(&self) -> bool {
        self.sorted
    }

    /// Into `out` (of `keys`' length), each key's position (see [`search_sorted`]).
    pub fn search<T: SortKey>(&self, keys: &[T], right: bool, out: &mut [i64]) {
        let (order, n) = (&self.order, self.order.len());
        let goes_after = |value: u64, key: u64| if right { value <= key } else { value < key };
        if self.sorted {
            for (key, slot) in keys.iter().zip(out) {
                let key = key.position_key();
                let (mut lo, mut size) = (0, n);
                while size > 0 {
                    let half = size / 2;
                    let after = goes_after(order[lo + half], key);
                    lo = if after { lo + half + 1 } else { lo };
                    size = if after { size - half - 1 } else { half };
                }
                *slot = lo as i64;
            }
            return;
        }
        numpy_search(n, |i| order[i], keys, right, out);
    }
}

/// The first positions of the lines of `n` row-major elements along an axis of extent `len`
/// with `inner` elements after it: `o * len * inner + i`.
fn line_starts(n: usize, len: usize, inner: usize) -> impl Iterator<Item = usize> {
    let lines = n.checked_div(len * inner).unwrap_or(0);
    (0..lines).flat_map(move |o| (0..inner).map(move |i| o * len * inner + i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angle_factors_are_numpys() {
        // np.degrees(np.float32(1)), np.radians(np.float32(1)), np.degrees(1.0), np.radians(1.0)
        assert_eq!(rad2deg(1f32).to_bits(), 57.295_776_f32.to_bits());
        assert_eq!(deg2rad(1f32).to_bits(), 0.017_453_292_f32.to_bits());
        assert_eq!(rad2deg(1f64), 57.29577951308232);
        assert_eq!(deg2rad(1f64), 0.017453292519943295);
    }

    /// The position a walk along `xs` reports.
    fn walk<T: PartialOrd + Copy>(max: bool, xs: &[T]) -> i64 {
        let mut best = 0;
        for (k, &x) in xs.iter().enumerate().skip(1) {
            if arg_replaces(max, xs[best], x) {
                best = k;
            }
        }
        best as i64
    }

    #[test]
    fn positions_follow_numpy_argmax_and_argmin() {
        let nan = f64::NAN;
        assert_eq!(walk(true, &[1.0, 3.0, 3.0, 2.0]), 1, "ties: the first");
        assert_eq!(walk(false, &[1.0, 0.5, 0.5]), 1);
        assert_eq!(walk(true, &[1.0, nan, 5.0, nan]), 1, "the first NaN");
        assert_eq!(walk(false, &[1.0, -5.0, nan, nan]), 2);
        assert_eq!(walk(true, &[-0.0, 0.0]), 0, "-0.0 equals 0.0");
        assert_eq!(walk(false, &[0.0, -0.0]), 0);
        assert_eq!(walk(true, &[f64::NEG_INFINITY, f64::NEG_INFINITY]), 0);
        assert_eq!(walk(true, &[false, true, true]), 1);
        assert_eq!(walk(false, &[true, true, false]), 2);
        assert_eq!(walk(true, &[i8::MIN, i8::MAX, 0]), 1);
        assert_eq!(walk(false, &[u64::MAX, 0, 0]), 1);
    }

    #[test]
    fn combined_partials_give_the_walk_whatever_the_split() {
        let nan = f32::NAN;
        let xs = [2.0f32, -0.0, 7.0, 0.0, 7.0, nan, -3.0, nan, 7.0, -3.0];
        for max in [true, false] {
            let want = walk(max, &xs);
            for cut in 1..xs.len() {
                let part = |lo: usize, hi: usize| {
                    let k = lo + walk(max, &xs[lo..hi]) as usize;
                    (xs[k], k as i64)
                };
                let (a, b) = (part(0, cut), part(cut, xs.len()));
                assert_eq!(arg_combine(max, a, b).1, want, "max {max}, cut {cut}");
                assert_eq!(arg_combine(max, b, a).1, want, "max {max}, cut {cut}, swapped");
            }
            let finite = [2.0f32, -0.0, 7.0, 0.0, 7.0, -3.0];
            let want = walk(max, &finite);
            for cut in 1..finite.len() {
                let k = cut + walk(max, &finite[cut..]) as usize;
                let j = walk(max, &finite[..cut]) as usize;
                let got = arg_combine(max, (finite[j], j as i64), (finite[k], k as i64));
                assert_eq!(got.1, want, "max {max}, cut {cut} without NaN");
            }
        }
    }

    #[test]
    fn integer_division_family_follows_numpy() {
        assert_eq!(floor_divide(-7i64, 2), -4);
        assert_eq!(remainder(-7i64, 2), 1);
        assert_eq!(remainder(7i64, -2), -1);
        assert_eq!(fmod(-7i64, 2), -1);
        assert_eq!(floor_divide(5u8, 0), 0);
        assert_eq!(floor_divide(i8::MIN, -1), i8::MIN);
        assert_eq!(power(-1i32, -3), -1);
        assert_eq!(power(2i32, -3), 0);
        assert_eq!(power(3u64, 4), 81);
    }

    #[test]
    fn float_division_family_follows_numpy() {
        assert_eq!(float_floor_divide(7.0f64, -2.0), -4.0);
        assert_eq!(float_remainder(-7.0f64, 2.0), 1.0);
        assert!(float_remainder(1.0f64, 0.0).is_nan());
        assert_eq!(float_floor_divide(1.0f64, 0.0), f64::INFINITY);
    }

    /// Distance in units in the last place between two finite f64 of one sign.
    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn inverse_hyperbolic_functions_are_accurate_near_their_poles() {
        // libm's values (glibc atanh, acosh, as NumPy computes them), within one ulp.
        for (x, want) in [
            (-0.9991785321550495, -3.8985770626950953),
            (0.9991785321550495, 3.8985770626950953),
            (-0.9999999999, -11.859499013855018),
            (-0.5, -0.5493061443340549),
            (-1e-300, -1e-300),
        ] {
            assert!(ulps(float_atanh(x), want) <= 1, "atanh({x}) = {} not {want}", float_atanh(x));
        }
        for (x, want) in [
            (1.0000001, 0.0004472135919037347),
            (1.0000000000002, 6.32553853893005e-07),
            (1.5, 0.9624236501192069),
            (2.0, 1.3169578969248168),
            (3.7, 1.9826969446812033),
            (1e5, 12.206072645505174),
        ] {
            assert!(ulps(float_acosh(x), want) <= 1, "acosh({x}) = {} not {want}", float_acosh(x));
        }
        assert_eq!(float_atanh(-1.0f64), f64::NEG_INFINITY);
        assert_eq!(float_atanh(-0.0f64).to_bits(), (-0.0f64).to_bits());
        assert!(float_atanh(1.5f64).is_nan() && float_atanh(f64::NAN).is_nan());
        assert_eq!(float_acosh(1.0f64), 0.0);
        for x in [-3.0f64, -2.0, -1.5, -1.0, 0.0, 0.5, f64::NEG_INFINITY, -1e300, f64::NAN] {
            assert!(float_acosh(x).is_nan() && float_acosh(x as f32).is_nan(), "acosh({x})");
        }
    }

    #[test]
    fn inverse_hyperbolic_functions_stay_finite_at_the_largest_values() {
        // libm's values (glibc asinh, asinhf, acosh, acoshf).
        assert_eq!(float_asinh(f64::MAX), 710.475_860_073_943_9);
        assert_eq!(float_asinh(f64::MIN), -710.475_860_073_943_9);
        assert_eq!(float_acosh(f64::MAX), 710.475_860_073_943_9);
        assert_eq!(float_asinh(f32::MAX), 89.415_985);
        assert_eq!(float_acosh(f32::MAX), 89.415_985);
        assert_eq!(float_asinh(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(float_acosh(f32::INFINITY), f32::INFINITY);
        assert!(float_asinh(f32::NAN).is_nan() && float_acosh(0.5f64).is_nan());
        assert_eq!(float_asinh(-0.0f64).to_bits(), (-0.0f64).to_bits());
        assert_eq!(float_asinh(2.5f64), 2.5f64.asinh());
        // The asymptotic form continues std's within an ulp or two.
        let (below, above) = (268_435_456.0f64, f64::from_bits(268_435_456.0f64.to_bits() + 1));
        assert!((float_asinh(above) - float_asinh(below)).abs() < 1e-14);
        assert!((float_acosh(above) - float_acosh(below)).abs() < 1e-14);
    }
    /// Values drawn from `pool` by a small linear congruential generator.
    fn drawn<T: Copy>(pool: &[T], n: usize, mut seed: u64) -> Vec<T> {
        (0..n)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                pool[(seed >> 33) as usize % pool.len()]
            })
            .collect()
    }

    /// Sorts and argsorts lines, short and long, against `sort_by` with the order the opcodes
    /// document.
    fn check_sorting<T: SortKey + PartialOrd + std::fmt::Debug>(pool: &[T]) {
        let nan = |v: &T| v.partial_cmp(v).is_none();
        for (n, seed) in [(37, 1), (2053, 2), (6000, 3), (70_001, 4)] {
            let xs = drawn(pool, n, seed);
            // sort: the numbers ascending (zeros of both signs equal), -0.0 before 0.0, the NaNs
            // after them in their order.
            let mut want: Vec<T> = xs.iter().copied().filter(|v| !nan(v)).collect();
            want.sort_by(|a, b| a.partial_cmp(b).expect("numbers"));
            want.extend(xs.iter().copied().filter(nan));
            let mut got = xs.clone();
            sort_lines(&mut got, &[n], 0);
            assert!(got.iter().zip(&want).all(|(g, w)| g == w || (nan(g) && nan(w))), "sort of {n}");
            let text: Vec<String> = got.iter().map(|x| format!("{x:?}")).collect();
            assert!(!text.windows(2).any(|w| w[0] == "0.0" && w[1] == "-0.0"), "sort of {n}: 0.0 before -0.0");
            // argsort: stable, -0.0 equal to 0.0, NaNs equal and last.
            let mut positions: Vec<usize> = (0..n).collect();
            positions.sort_by(|&i, &j| match (nan(&xs[i]), nan(&xs[j])) {
                (false, false) => xs[i].partial_cmp(&xs[j]).expect("numbers"),
                (a, b) => a.cmp(&b),
            });
            let mut got = vec![0i64; n];
            argsort_lines(&xs, &[n], 0, &mut got);
            assert_eq!(got, positions.iter().map(|&p| p as i64).collect::<Vec<_>>(), "argsort of {n}");
            // Split into places by sampled bounds, each place sorted apart: the same values,
            // and of (key, position) pairs the same positions.
            for places in [1, 2, 7, 16] {
                let mut numbers = xs.clone();
                let count = nans_last(&mut numbers, &mut Vec::new());
                let mut split = numbers.clone();
                let lengths = split_by_key(&numbers[..count], &mut split[..count], places, |v| v.key());
                assert!(lengths.len() <= places && lengths.iter().sum::<usize>() == count, "places of {n}");
                let mut from = 0;
                for c in lengths {
                    sort_by_key(&mut split[from..from + c], |v| v.key());
                    from += c;
                }
                assert!(split.iter().zip(&want).all(|(g, w)| g == w || (nan(g) && nan(w))), "split sort of {n}");
                let keyed: Vec<(u64, i64)> = xs.iter().enumerate().map(|(p, v)| (v.position_key(), p as i64)).collect();
                let mut split = keyed.clone();
                let mut from = 0;
                for c in split_by_key(&keyed, &mut split, places, |&(k, _)| k) {
                    sort_by_key(&mut split[from..from + c], |&(k, _)| k);
                    from += c;
                }
                assert!(split.iter().map(|&(_, p)| p).eq(got.iter().copied()), "split argsort of {n}");
            }
            // Partitions around lo..=hi: the sorted values (positions) there, the order's
            // neighbours on each side, the same values as the input.
            let key = |v: &T| sorted_order(v);
            for (lo, hi) in [(0, 0), (n / 2, n / 2), (n / 3, n / 2 + 1), (n - 1, n - 1), (0, n - 1), (n / 5, n - 2)] {
                let mut parted = xs.clone();
                partition_line(&mut parted, lo, hi);
                let same = |g: &T, w: &T| g == w || (nan(g) && nan(w));
                assert!(parted[lo..=hi].iter().zip(&want[lo..=hi]).all(|(g, w)| same(g, w)), "partition of {n}");
                assert!(parted[..lo].iter().all(|v| key(v) <= key(&parted[lo])), "before {lo} of {n}");
                assert!(parted[hi + 1..].iter().all(|v| key(v) >= key(&parted[hi])), "after {hi} of {n}");
                let mut again = parted.clone();
                sort_lines(&mut again, &[n], 0);
                assert!(again.iter().zip(&want).all(|(g, w)| same(g, w)), "partition of {n} keeps the values");
                let mut at = vec![0i64; n];
                argpartition_line(&xs, lo, hi, &mut at);
                assert_eq!(at[lo..=hi], got[lo..=hi], "argpartition of {n} around {lo}..={hi}");
                let pkey = |p: &i64| (xs[*p as usize].position_key(), *p);
                assert!(at[..lo].iter().all(|p| pkey(p) < pkey(&at[lo])), "positions before {lo} of {n}");
                assert!(at[hi + 1..].iter().all(|p| pkey(p) > pkey(&at[hi])), "positions after {hi} of {n}");
                let mut seen = at.clone();
                seen.sort_unstable();
                assert!(seen.iter().enumerate().all(|(i, &p)| p == i as i64), "argpartition of {n} is a permutation");
            }
        }
    }

    #[test]
    fn radix_sorts_are_stable_sorts_by_key() {
        // Many distinct keys (places split off whole, then sorted by comparison or radix) and
        // few (places sorted by radix), at lengths on both sides of the split: as std's sort.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state ^ (state >> 29)
        };
        for (n, spread) in [(70_000, u64::MAX), (300_000, u64::MAX), (300_000, 1 << 20), (200_000, 3), (5_000, 1 << 40)]
        {
            let items: Vec<(u64, u32)> = (0..n).map(|i| (next() % spread, i as u32)).collect();
            let mut want = items.clone();
            want.sort_by_key(|&(k, _)| k);
            let mut got = items;
            sort_by_key(&mut got, |&(k, _)| k);
            assert!(got == want, "{n} keys below {spread}");
        }
    }

    #[test]
    fn sorting_orders_as_documented() {
        check_sorting(&[0.0f64, -0.0, 1.5, -1.5, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN, 1e-300, -2.0]);
        check_sorting(&[0.0f32, -0.0, 2.5, -7.0, f32::INFINITY, f32::NAN, f32::MIN_POSITIVE, -1e30]);
        check_sorting(&[i16::MIN, -1, 0, 1, 300, i16::MAX]);
        check_sorting(&[0u64, 1, u64::MAX, 1 << 40, 7]);
        check_sorting(&[i64::MIN, -5, 0, 9, i64::MAX]);
        check_sorting(&[true, false]);
        check_sorting(&[200u8, 0, 17]);
        // Values that differ in every byte (each pass of the radix sort moves them).
        let wide: Vec<i64> = (0..5000i64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64)).collect();
        check_sorting(&wide);
        check_sorting(&wide.iter().map(|&i| i as f64 * 1.5e-12).collect::<Vec<_>>());
        check_sorting(&wide.iter().map(|&i| (i >> 32) as f32 / 7.0).collect::<Vec<_>>());
    }

    /// Searches sorted values for keys in a drawn order against counting: a key goes after
    /// the values below it (`left`) or not above it (`right`), NaNs above every number.
    fn check_search<T: SortKey + PartialOrd + std::fmt::Debug>(pool: &[T]) {
        let nan = |v: &T| v.partial_cmp(v).is_none();
        let less = |a: &T, b: &T| if nan(a) { false } else { nan(b) || a < b };
        for (n, seed) in [(0, 4), (1, 5), (37, 6), (700, 7), (20_000, 8)] {
            let mut sorted = drawn(pool, n, seed);
            sort_lines(&mut sorted, &[n], 0);
            let drawn_keys = drawn(pool, 300, seed + 10);
            // All keys (a table of the values, but for 20,000 of them) and a few (searched
            // among the values as they are, but for the shortest).
            for (keys, right) in [(&drawn_keys[..], false), (&drawn_keys[..], true), (&drawn_keys[..5], true)] {
                let mut got = vec![0i64; keys.len()];
                search_sorted(&sorted, keys, right, &mut got);
                let want: Vec<i64> = keys
                    .iter()
                    .map(|k| sorted.iter().filter(|v| if right { !less(k, v) } else { less(v, k) }).count() as i64)
                    .collect();
                assert_eq!(got, want, "{n} values, right {right}");
            }
        }
    }

    #[test]
    fn searches_count_the_values_before_each_key() {
        check_search(&[0.0f64, -0.0, 1.5, -1.5, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-300, -2.0]);
        check_search(&[0.0f32, -0.0, 2.5, -7.0, f32::NAN, f32::MIN_POSITIVE]);
        check_search(&[i16::MIN, -1, 0, 1, 300, i16::MAX]);
        check_search(&[0u64, 1, u64::MAX, 7]);
        check_search(&[true, false]);
    }

    #[test]
    fn an_unsorted_search_gives_numpys_positions() {
        // np.searchsorted(a, k) and np.searchsorted(a, k, side="right") in NumPy 2.4.
        let nan = f64::NAN;
        let a = [3.0, 1.0, 2.0, nan, 0.0, 5.0, 4.0];
        let k = [2.0, 0.0, 5.0, 1.0, 1.0, nan, -1.0, 3.0];
        let mut got = [0i64; 8];
        search_sorted(&a, &k, false, &mut got);
        assert_eq!(got, [2, 0, 3, 0, 0, 3, 0, 3]);
        search_sorted(&a, &k, true, &mut got);
        assert_eq!(got, [3, 0, 3, 2, 5, 7, 0, 3]);
        // Few keys among many values out of order: searched as they are, with the table's
        // positions (NumPy's).
        let many: Vec<f64> = (0..3000).map(|i| ((i * 7919) % 1000) as f64 * 0.5).collect();
        for right in [false, true] {
            let (mut direct, mut table) = ([0i64; 8], [0i64; 8]);
            search_sorted(&many, &k, right, &mut direct);
            SearchTable::new(&many).search(&k, right, &mut table);
            assert_eq!(direct, table, "right {right}");
        }
    }

    #[test]
    fn lines_along_an_inner_axis_sort_apart() {
        // shape [2, 3], sorted along axis 0: each column alone.
        let mut xs = [3.0f64, 1.0, f64::NAN, -1.0, 5.0, 0.0];
        sort_lines(&mut xs, &[2, 3], 0);
        assert_eq!(format!("{xs:?}"), "[-1.0, 1.0, 0.0, 3.0, 5.0, NaN]");
        let mut positions = [0i64; 6];
        argsort_lines(&[3.0f64, 1.0, f64::NAN, -1.0, 5.0, 0.0], &[2, 3], 0, &mut positions);
        assert_eq!(positions, [1, 0, 1, 0, 1, 0]);
    }
}
