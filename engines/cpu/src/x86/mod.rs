//! Rows of float arithmetic at the machine's full vector width (AVX-512 or AVX2), in machine
//! code the engine writes itself: which kernels get a routine and its frame ([`routine`]), the
//! loop body and its registers ([`regalloc`]), the instructions' encodings ([`encode`]).
//!
//! Cranelift's vectors are 128-bit on x86-64: two f64 per instruction, where an AVX-512 machine
//! computes eight and an AVX2 one four. The kernels of stencils and fluxes (shallow_water: a
//! hundred additions, multiplications and divisions per cell) are bound by the number of
//! instructions, so this module assembles their rows itself: a kernel whose operations are all
//! f64 (or all f32) additions, subtractions, multiplications, divisions, square roots,
//! negations, absolute values, squares, reciprocals, copies, maxima and minima (NumPy's, NaNs
//! winning) and sums, on operands contiguous or broadcast along the row, gets a row
//! routine in AVX-512 (or AVX2) code, and its Cranelift function calls it for each row. Every
//! one of those operations is correctly rounded (IEEE 754) at any width, and sums are combined
//! in the order of Cranelift's vector loop, so the results are bit for bit those of the engine
//! without routines. Anything else keeps Cranelift's code.
//!
//! The routine, `row(ptrs, consts, n)`, computes positions `0..n` of a row: `ptrs[k]` is memory
//! slot `k`'s address at position 0 (then the reductions' partial results), `consts` the
//! kernel's constant words. Its loop takes a vector of positions a step (eight f64 or sixteen
//! f32 with AVX-512, half as many with AVX2) and the rest under a mask. Values live in the
//! vector registers (32, or 15 with AVX2: the 16th holds the tail's mask), allocated in one
//! pass over the operations (a value needed again later when none is free is stored on the
//! stack, the one needed furthest ahead first; a memory operand or a constant is read again
//! rather than stored). Memory operations keep the operations' order, as in Cranelift's code:
//! the fusion rules (a written view is read back only through itself) make that correct at any
//! width. A sum along the row keeps Cranelift's order of lanes (eight f64 or sixteen f32): one
//! AVX-512 accumulator, two AVX2 ones (a step then computes two vectors).

mod encode;
mod regalloc;
mod routine;
#[cfg(test)]
mod tests;

pub use encode::{Emitted, Mem, Rm, Routine, replay};
pub(crate) use routine::audit;
pub use routine::{Isa, MAX_FRAME, assemble, assemble_listed, eligible, set_audit};
