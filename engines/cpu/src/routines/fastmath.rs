//! Block routines for `exp` and `log`: [`vm_math`]'s slice functions, which the interpreter
//! computes these opcodes with too (the same bits on small arrays run at once and in kernels).

use crate::routines::calls::BlockFn;

macro_rules! block {
    ($name:ident, $t:ty, $slice_fn:path) => {
        /// # Safety
        /// `dst` and `a` must be valid for `n` elements (see [`BlockFn`]).
        unsafe extern "C" fn $name(n: i64, dst: *mut u8, a: *const u8, _b: *const u8) {
            // SAFETY: the generated code passes scratch buffers of n elements.
            unsafe {
                let d = std::slice::from_raw_parts_mut(dst.cast::<$t>(), n as usize);
                let a = std::slice::from_raw_parts(a.cast::<$t>(), n as usize);
                $slice_fn(d, a)
            }
        }
    };
}

block!(exp_block_f64, f64, vm_math::exp_f64s);
block!(exp_block_f32, f32, vm_math::exp_f32s);
block!(ln_block_f64, f64, vm_math::ln_f64s);
block!(ln_block_f32, f32, vm_math::ln_f32s);

/// The block routine of `op` on `dtype` from [`vm_math`], if there is one.
pub fn block_fn(op: vm_ir::Opcode, dtype: vm_ir::DType) -> Option<BlockFn> {
    use vm_ir::{DType, Opcode};
    Some(match (op, dtype) {
        (Opcode::Exp, DType::F64) => exp_block_f64,
        (Opcode::Exp, DType::F32) => exp_block_f32,
        (Opcode::Log, DType::F64) => ln_block_f64,
        (Opcode::Log, DType::F32) => ln_block_f32,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_compute_what_vm_math_computes() {
        let xs: Vec<f64> = (0..1000).map(|i| (i as f64 - 500.0) * 0.37).collect();
        for (op, f) in [(vm_ir::Opcode::Exp, vm_math::exp_f64 as fn(f64) -> f64), (vm_ir::Opcode::Log, vm_math::ln_f64)]
        {
            let mut d = vec![0f64; xs.len()];
            let block = block_fn(op, vm_ir::DType::F64).unwrap();
            // SAFETY: both buffers hold xs.len() f64.
            unsafe { block(xs.len() as i64, d.as_mut_ptr().cast(), xs.as_ptr().cast(), std::ptr::null()) };
            assert!(xs.iter().zip(&d).all(|(&x, &y)| f(x).to_bits() == y.to_bits()), "{op}");
        }
    }
}
