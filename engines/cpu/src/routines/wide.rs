//! Square roots at the machine's widest vectors. Cranelift's vectors are 128-bit on x86-64,
//! where a square root of two f64 costs about what one of four or eight does at AVX2 or
//! AVX-512 width. A kernel that takes square roots hands its blocks of operands to these
//! routines, compiled for AVX-512 and for AVX2 and chosen once at run time; without either the
//! generated code computes them inline. A square root is correctly rounded at every width
//! (IEEE 754), so the results are the reference interpreter's, bit for bit.
//!
//! Division would gain as much per operation, but not per kernel: its operands are computed
//! values that would have to be staged in scratch memory around the call, and the kernels that
//! divide most (shallow_water's fluxes, sixteen divisions among a hundred operations per cell)
//! ran 40% slower that way than with inline 128-bit divisions, which overlap with the rest of
//! the arithmetic. Every operation at AVX-512 width through routines (a block interpreter, as
//! numexpr runs) ran those kernels 2.2x slower still: each routine reads and writes its operands
//! through memory. What does make them faster is whole rows in AVX-512 code with the values in
//! registers: [`crate::x86`] (shallow_water 1.45x).

use crate::routines::calls::BlockFn;
use std::sync::OnceLock;
use vm_ir::{DType, Opcode};

macro_rules! variants {
    ($name:ident, $t:ty, |$x:ident| $f:expr) => {
        mod $name {
            #[inline(always)]
            fn body(d: &mut [$t], a: &[$t]) {
                for (d, &$x) in d.iter_mut().zip(a) {
                    *d = $f;
                }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx2")]
            pub(super) fn avx512(d: &mut [$t], a: &[$t]) {
                body(d, a)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            pub(super) fn avx2(d: &mut [$t], a: &[$t]) {
                body(d, a)
            }
        }
    };
}

variants!(sqrt64, f64, |x| x.sqrt());
variants!(sqrt32, f32, |x| x.sqrt());

type SliceFn<T> = unsafe fn(&mut [T], &[T]);

/// The routines for this CPU, when it has vectors wider than 128 bits.
struct Table {
    sqrt64: SliceFn<f64>,
    sqrt32: SliceFn<f32>,
}

/// The widest vectors of this CPU that the engine's Rust routines are compiled for: 512 bits
/// (AVX-512F with VL), 256 (AVX2) or 128.
pub fn vector_bits() -> u32 {
    static BITS: OnceLock<u32> = OnceLock::new();
    *BITS.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") {
                return 512;
            }
            if is_x86_feature_detected!("avx2") {
                return 256;
            }
        }
        128
    })
}

fn table() -> Option<&'static Table> {
    static TABLE: OnceLock<Option<Table>> = OnceLock::new();
    TABLE
        .get_or_init(|| match vector_bits() {
            #[cfg(target_arch = "x86_64")]
            512 => Some(Table { sqrt64: sqrt64::avx512, sqrt32: sqrt32::avx512 }),
            #[cfg(target_arch = "x86_64")]
            256 => Some(Table { sqrt64: sqrt64::avx2, sqrt32: sqrt32::avx2 }),
            _ => None,
        })
        .as_ref()
}

macro_rules! block {
    ($name:ident, $t:ty, $field:ident) => {
        /// # Safety
        /// `dst` and `a` must be valid for `n` elements (see [`BlockFn`]); only called when
        /// [`table`] found a variant for this CPU.
        unsafe extern "C" fn $name(n: i64, dst: *mut u8, a: *const u8, _b: *const u8) {
            // SAFETY: the generated code passes buffers of n elements; the variant in the
            // table was chosen for features this CPU has.
            unsafe {
                let n = n as usize;
                let d = std::slice::from_raw_parts_mut(dst.cast::<$t>(), n);
                let a = std::slice::from_raw_parts(a.cast::<$t>(), n);
                let table = table().expect("wide routines are handed out only when the table exists");
                (table.$field)(d, a)
            }
        }
    };
}

block!(sqrt_block_f64, f64, sqrt64);
block!(sqrt_block_f32, f32, sqrt32);

/// The wide block routine of `op` on `dtype`, when this CPU has vectors wider than 128 bits.
pub fn block_fn(op: Opcode, dtype: DType) -> Option<BlockFn> {
    table()?;
    Some(match (op, dtype) {
        (Opcode::Sqrt, DType::F64) => sqrt_block_f64,
        (Opcode::Sqrt, DType::F32) => sqrt_block_f32,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: Copy + Default>(f: BlockFn, a: &[T]) -> Vec<T> {
        let mut d = vec![T::default(); a.len()];
        // SAFETY: both buffers hold a.len() elements of T.
        unsafe { f(a.len() as i64, d.as_mut_ptr().cast(), a.as_ptr().cast(), std::ptr::null()) };
        d
    }

    #[test]
    fn wide_square_roots_give_the_bits_of_scalar_code() {
        let Some(sqrt) = block_fn(Opcode::Sqrt, DType::F64) else {
            return; // no vectors wider than 128 bits on this CPU: square roots stay inline
        };
        // Special values, then a length that is no multiple of any vector width.
        let mut a = vec![0.0, -0.0, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 5e-324, 2.2e-308, f64::MAX];
        a.extend((0..1000).map(|i| (i as f64 * 0.37).sin().abs() * 10f64.powi(i % 40 - 20)));
        let got = run(sqrt, &a);
        for (&x, &y) in a.iter().zip(&got) {
            let want = x.sqrt();
            assert!(y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()), "sqrt({x:e}) = {y:e}");
        }
        let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
        let got = run(block_fn(Opcode::Sqrt, DType::F32).expect("with f64"), &a32);
        for (&x, &y) in a32.iter().zip(&got) {
            let want = x.sqrt();
            assert!(y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()), "sqrt({x:e}) = {y:e}");
        }
        assert!(block_fn(Opcode::Divide, DType::F64).is_none(), "division stays inline");
        assert!(block_fn(Opcode::Sqrt, DType::I64).is_none());
    }
}
