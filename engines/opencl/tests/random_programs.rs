//! The test kit's random programs on opencl against interp: long programs over one shape at a
//! time (so that element-wise chains fuse into device programs with contracted temporaries),
//! the kit's default programs (every opcode of the table but gather and scatter), and programs
//! over bases of uneven sizes in several batches with host writes between them (copies to and
//! from the device). A failure names the seed and lists the program.

mod common;

use common::*;
use vm_ir::{DType, Opcode};
use vm_testkit::{Program, ProgramSpec, random_program};

/// How many programs to run (`VM_RANDOM_PROGRAMS` overrides).
fn count(default: u64) -> u64 {
    std::env::var("VM_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Every opcode but `copysign`: of a NaN it copies the sign, and the sign of a NaN that
/// arithmetic makes is the math library's (the device's built-ins, `pow` among them, make NaNs
/// of another sign than the host's C library). The per-opcode tests cover `copysign`.
fn nan_sign_unobserved(op: Opcode, _: DType) -> bool {
    op != Opcode::Copysign
}

/// Runs `program` on `cl` and on interp, within `Agree::REORDERED` (tree reductions add in
/// another order; the math built-ins are within a few ulp), then frees its bases on the device.
fn check(cl: &mut vm_opencl::OpenClEngine, program: &Program, data: Data, what: &str) {
    let mut reference = vm_interp::Interp::new(None);
    if let Err(e) = vm_testkit::differential(cl, &mut reference, program, data, Agree::REORDERED) {
        panic!("{what}: {e}\n{}", program.listing());
    }
    release(cl, &mut vm_runtime::HostMemory::new(), &program.bases);
}

/// Sixty programs of up to twenty instructions over one shape at a time: their element-wise
/// instructions mostly fuse, and a long program tests more per program the device compiler
/// builds (the cost of a cold run) than several short ones.
#[test]
fn random_programs_match_interp() {
    let Some(mut cl) = engine() else { return };
    let spec = ProgramSpec {
        dtypes: vec![DType::F64, DType::F32, DType::I32, DType::I64],
        max_dims: 3,
        max_len: 20,
        allow: nan_sign_unobserved,
        ..ProgramSpec::default()
    };
    for seed in 0..count(60) {
        check(&mut cl, &random_program(seed, &spec), Data::Wild, &format!("seed {seed}"));
    }
    let s = cl.stats();
    assert!(s.launches > 120, "{s:?}");
}

/// The kit's default programs (every opcode of the table but gather and scatter, dtypes f64 to
/// u8, up to 4-d).
#[test]
fn shared_random_programs_match_interp() {
    let Some(mut cl) = engine() else { return };
    let spec = ProgramSpec { allow: nan_sign_unobserved, ..ProgramSpec::default() };
    let mut instructions = 0;
    for seed in 0..count(120) {
        let program = random_program(seed, &spec);
        instructions += program.instructions().count() as u64;
        check(&mut cl, &program, Data::small_if(seed % 2 == 0), &format!("seed {seed}"));
    }
    let s = cl.stats();
    // Only instructions whose output partially overlaps an input go to the fallback.
    assert!(s.fallback_instructions * 20 < instructions, "{s:?} of {instructions} instructions");
}

/// Programs over bases of uneven sizes (1 to 1500 elements, empty and 0-d views), in several
/// batches with host writes between them: what the host writes must reach the device, and what
/// the device computed must reach the host before it is overwritten.
#[test]
fn uneven_programs_with_host_writes_match_interp() {
    let Some(mut cl) = engine() else { return };
    let spec = ProgramSpec { max_len: 16, allow: nan_sign_unobserved, ..ProgramSpec::uneven() };
    for seed in 0..count(40) {
        check(&mut cl, &random_program(seed, &spec), Data::Full, &format!("uneven seed {seed}"));
    }
}
