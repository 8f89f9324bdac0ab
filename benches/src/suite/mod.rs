//! The suite of BENCHMARKS.md, each benchmark written once against the Rust frontend
//! ([`vm_frontend`]) so that the same program runs on every stack, with its sizes and its
//! hand-written twin ([`crate::hand`]).
//!
//! Every program does its setup (inputs, random draws that are not part of the algorithm's
//! iterations), runs it with [`Vm::flush`], and then times the iterations and the read-back of
//! the checksum: the timed region is the same for every stack and baseline.

/// The entry points of a benchmark module, `run_vm`, `run_hand` and `run_hand_native` (what its
/// [`BenchDef`] names): the module's generic `program` and `crate::hand::$hand`'s `run` and
/// `run_on`, each in the precision asked for.
macro_rules! entry_points {
    ($hand:ident) => {
        fn run_vm(vm: &vm_frontend::Vm, dims: &[usize], p: $crate::Precision) -> vm_ir::Result<$crate::Measured> {
            $crate::dispatch!(p, program(vm, dims))
        }

        fn run_hand(dims: &[usize], p: $crate::Precision, threads: usize) -> $crate::Measured {
            use $crate::hand::$hand::run;
            $crate::dispatch!(p, run(dims, threads))
        }

        fn run_hand_native(
            dims: &[usize],
            p: $crate::Precision,
            threads: usize,
            target: $crate::hand::Native,
        ) -> $crate::Measured {
            use $crate::hand::$hand::run_on;
            $crate::dispatch!(p, run_on(target, dims, threads))
        }
    };
}

pub mod black_scholes;
pub mod equation_of_state;
pub mod heat_equation;
pub mod knn;
pub mod leibnitz_pi;
pub mod montecarlo_pi;
pub mod nbody;
pub mod overhead;
pub mod shallow_water;

use crate::hand::{Native, Real};
use crate::size::{Size, SizeName};
use crate::{Measured, Precision};
use std::time::Instant;
use vm_frontend::{Array, Float, Vm};
use vm_ir::Result;

/// The element types the suite runs in: the frontend's floats with the hand baselines' helpers,
/// and the constant-on-the-left operators that generic code cannot name otherwise.
pub trait Elem: Float + Real {
    /// `self - a`, one `subtract` instruction with a constant first operand.
    fn minus(self, a: &Array<Self>) -> Array<Self>;
    /// `self / a`, one `divide` instruction with a constant first operand.
    fn over(self, a: &Array<Self>) -> Array<Self>;
}

impl Elem for f64 {
    fn minus(self, a: &Array<f64>) -> Array<f64> {
        self - a
    }
    fn over(self, a: &Array<f64>) -> Array<f64> {
        self / a
    }
}

impl Elem for f32 {
    fn minus(self, a: &Array<f32>) -> Array<f32> {
        self - a
    }
    fn over(self, a: &Array<f32>) -> Array<f32> {
        self / a
    }
}

/// Reads a 0-d (or one-element) array back as `f64`: runs all recorded work.
pub fn read<T: Elem>(a: &Array<T>) -> Result<f64> {
    Ok(a.to_scalar()?.to_f64())
}

/// Times `body` after flushing the setup recorded so far; `body` returns the checksum. While the
/// trace records, the timed region is a span of category [`crate::split::TIMED`].
pub fn timed(vm: &Vm, body: impl FnOnce() -> Result<f64>) -> Result<Measured> {
    vm.flush()?;
    let start = Instant::now();
    let checksum = body()?;
    let seconds = start.elapsed().as_secs_f64();
    vm_runtime::trace::record(start, crate::split::TIMED, || "timed region", Vec::new);
    Ok(Measured { seconds, checksum })
}

/// The VM program of a benchmark: runs one repetition at `dims` in `precision`.
pub type VmProgram = fn(&Vm, &[usize], Precision) -> Result<Measured>;

/// The hand-written twin: runs one repetition at `dims` in `precision` on `threads` threads.
pub type HandProgram = fn(&[usize], Precision, usize) -> Measured;

/// The hand-written twin compiled for a target's features (`crate::hand::native_copies!`):
/// runs one repetition at `dims` in `precision` on `threads` threads with the copy for `target`,
/// which this machine must be able to run ([`Native::available`]).
pub type NativeHandProgram = fn(&[usize], Precision, usize, Native) -> Measured;

/// One benchmark of the suite.
#[derive(Debug, Clone, Copy)]
pub struct BenchDef {
    /// Its name on the command line and in reports.
    pub name: &'static str,
    /// One line saying what it does.
    pub summary: &'static str,
    /// What each number of its size means, e.g. `["h", "w", "iterations"]`.
    pub dims: &'static [&'static str],
    /// The default sizes (BENCHMARKS.md); several for `overhead`.
    pub default: &'static [&'static [usize]],
    /// The seed's sizes, where the seed gives them (else the default).
    pub paper: Option<&'static [&'static [usize]]>,
    /// `--quick` sizes.
    pub quick: &'static [&'static [usize]],
    /// The sizes the tests use.
    pub tiny: &'static [&'static [usize]],
    /// The smallest value each number of the size may take.
    pub min_dims: &'static [usize],
    /// Whether the inputs are deterministic, so that NumPy's checksum is comparable.
    pub deterministic: bool,
    /// Whether checksums must agree exactly (counts), not within a float tolerance.
    pub exact: bool,
    /// Its NumPy script under `benches/numpy/`.
    pub numpy_script: &'static str,
    /// The VM program.
    pub vm: VmProgram,
    /// The hand baseline.
    pub hand: HandProgram,
    /// The hand baseline compiled for wider vectors (`hand-native`: [`crate::hand::native`]).
    pub hand_native: NativeHandProgram,
}

impl BenchDef {
    /// The sizes of the given name.
    pub fn sizes(&self, name: SizeName) -> Vec<Size> {
        let list = match name {
            SizeName::Default => self.default,
            SizeName::Paper => self.paper.unwrap_or(self.default),
            SizeName::Quick => self.quick,
            SizeName::Tiny => self.tiny,
        };
        list.iter().map(|d| Size(d.to_vec())).collect()
    }

    /// The size form, e.g. `h*w*iterations`.
    pub fn size_form(&self) -> String {
        self.dims.join("*")
    }

    /// Checks that `size` has this benchmark's arity and minimum values.
    pub fn check_size(&self, size: &Size) -> std::result::Result<(), String> {
        if size.arity() != self.dims.len() {
            return Err(format!(
                "{}: size `{size}` has {} numbers, the form is {}",
                self.name,
                size.arity(),
                self.size_form()
            ));
        }
        for ((&v, &min), name) in size.dims().iter().zip(self.min_dims).zip(self.dims) {
            if v < min {
                return Err(format!("{}: {name} = {v} is below the minimum {min}", self.name));
            }
        }
        Ok(())
    }
}

/// Calls a function generic over [`Elem`] with the type `precision` names.
#[macro_export]
macro_rules! dispatch {
    ($precision:expr, $f:ident ( $($arg:expr),* )) => {
        match $precision {
            $crate::Precision::F64 => $f::<f64>($($arg),*),
            $crate::Precision::F32 => $f::<f32>($($arg),*),
        }
    };
}

/// Every benchmark, in BENCHMARKS.md's order.
pub fn all() -> Vec<BenchDef> {
    vec![
        heat_equation::DEF,
        shallow_water::DEF,
        black_scholes::DEF,
        montecarlo_pi::DEF,
        leibnitz_pi::DEF,
        nbody::DEF,
        knn::DEF,
        equation_of_state::DEF,
        overhead::DEF,
    ]
}

/// The benchmark called `name`.
pub fn find(name: &str) -> Option<BenchDef> {
    all().into_iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_size_fits_its_benchmark() {
        for b in all() {
            for name in SizeName::ALL {
                for s in b.sizes(name) {
                    b.check_size(&s).unwrap_or_else(|e| panic!("{} {}: {e}", b.name, name.as_str()));
                }
            }
            assert_eq!(b.min_dims.len(), b.dims.len(), "{}", b.name);
            assert!(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("numpy").join(b.numpy_script).is_file());
        }
    }

    #[test]
    fn sizes_of_the_wrong_form_are_refused() {
        let heat = find("heat_equation").unwrap();
        assert!(heat.check_size(&"10*10".parse().unwrap()).unwrap_err().contains("h*w*iterations"));
        assert!(find("shallow_water").unwrap().check_size(&"4*40*1".parse().unwrap()).unwrap_err().contains("h = 4"));
        assert!(find("nope").is_none());
    }
}
