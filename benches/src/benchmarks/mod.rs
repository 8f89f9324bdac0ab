//! The suite of BENCHMARKS.md: one folder per benchmark, each written once against the Rust
//! frontend ([`vm_frontend`]) so that the same program runs on every stack, beside its
//! hand-written twin, and this module's registry of them ([`all`], [`find`]).
//!
//! A benchmark's folder `<name>/` holds:
//! - `mod.rs`: its [`BenchDef`] (`DEF`: sizes, NumPy script, entry points) and what both of its
//!   sides share (constants, seeds, input generators);
//! - `vm.rs`: the VM program, generic over the element type ([`vm_kit::Elem`]);
//! - `hand.rs`: the `hand` baseline, fused Rust loops written inside `native_copies!`
//!   ([`hand_kit`]), which also compiles them for `hand-native`.
//!
//! The twins outside Rust stay where they are run from: the NumPy scripts in `benches/numpy/`
//! (sharing `_common.py`; [`BenchDef::numpy_script`] names each), the peers' versions in
//! `benches/peers/`, the C and C++ programs in `benches/c/`; each folder's `mod.rs` names its own.
//!
//! The dependencies go one way: `vm.rs` and `hand.rs` use their folder's `mod.rs` and the kits
//! below them ([`real`], [`vm_kit`], [`hand_kit`]), never each other or another benchmark; the
//! kits use no benchmark. `tests/layout.rs` checks it.
//!
//! Every program does its setup (inputs, random draws that are not part of the algorithm's
//! iterations), runs it with [`Vm::flush`](vm_frontend::Vm::flush), and then times the
//! iterations and the read-back of the checksum: the timed region is the same for every stack
//! and baseline.

/// The entry points of a benchmark, `run_vm`, `run_hand` and `run_hand_native` (what its
/// [`BenchDef`] names), written in its folder's `mod.rs`: `vm::program` and `hand`'s `run` and
/// `run_on`, each in the precision asked for.
macro_rules! entry_points {
    () => {
        fn run_vm(vm: &vm_frontend::Vm, dims: &[usize], p: $crate::Precision) -> vm_ir::Result<$crate::Measured> {
            use self::vm::program;
            $crate::dispatch!(p, program(vm, dims))
        }

        fn run_hand(dims: &[usize], p: $crate::Precision, threads: usize) -> $crate::Measured {
            use self::hand::run;
            $crate::dispatch!(p, run(dims, threads))
        }

        fn run_hand_native(
            dims: &[usize],
            p: $crate::Precision,
            threads: usize,
            target: $crate::benchmarks::hand_kit::Native,
        ) -> $crate::Measured {
            use self::hand::run_on;
            $crate::dispatch!(p, run_on(target, dims, threads))
        }
    };
}

pub mod hand_kit;
pub mod real;
pub mod vm_kit;

pub mod black_scholes;
pub mod equation_of_state;
pub mod heat_equation;
pub mod knn;
pub mod leibnitz_pi;
pub mod montecarlo_pi;
pub mod nbody;
pub mod overhead;
pub mod shallow_water;

use crate::size::{Size, SizeName};
use crate::{Measured, Precision};
use hand_kit::Native;
use vm_frontend::Vm;
use vm_ir::Result;

/// The VM program of a benchmark: runs one repetition at `dims` in `precision`.
pub type VmProgram = fn(&Vm, &[usize], Precision) -> Result<Measured>;

/// The hand-written twin: runs one repetition at `dims` in `precision` on `threads` threads.
pub type HandProgram = fn(&[usize], Precision, usize) -> Measured;

/// The hand-written twin compiled for a target's features (`native_copies!` in [`hand_kit`]):
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
    /// The hand baseline compiled for wider vectors (`hand-native`: [`hand_kit::native`]).
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

/// Calls a function generic over the element type ([`Elem`](crate::benchmarks::vm_kit::Elem) or
/// [`Real`](crate::benchmarks::real::Real)) with the type `precision` names.
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

    /// Every copy runs the same arithmetic in the same order (no FMA contraction, the same
    /// partial sums), so its checksum is `run`'s to the bit, for every benchmark at its tiny
    /// sizes, in both precisions, on every target this machine can run.
    #[test]
    fn every_native_copy_computes_what_run_computes() {
        let targets: Vec<Native> = Native::ALL.into_iter().filter(|t| t.available()).collect();
        for def in all() {
            for size in def.sizes(SizeName::Tiny) {
                for p in [Precision::F64, Precision::F32] {
                    for threads in [1, 2] {
                        let plain = (def.hand)(size.dims(), p, threads).checksum;
                        for &t in &targets {
                            let copy = (def.hand_native)(size.dims(), p, threads, t).checksum;
                            assert_eq!(
                                copy.to_bits(),
                                plain.to_bits(),
                                "{} {size} {} on {threads} thread(s), {}: {copy} against {plain}",
                                def.name,
                                p.as_str(),
                                t.name()
                            );
                        }
                    }
                }
            }
        }
    }
}
