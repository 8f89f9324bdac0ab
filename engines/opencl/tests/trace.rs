//! The engine's spans in the process-wide trace (`vm_runtime::trace`): building a program,
//! copies to and from the device with their bytes, each launch, and the wait for the device.
//! (A test binary of its own: the recorder is one per process.)

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar};
use vm_runtime::Component;

#[test]
fn a_batch_shows_its_build_copies_launch_and_wait() {
    let Some(mut cl) = engine() else { return };
    let (x, y) = (base(1, DType::F64, 1000), base(2, DType::F64, 1000));
    let mut mem = vm_runtime::HostMemory::new();
    mem.ensure(&x).unwrap().as_mut_slice::<f64>().fill(1.0);
    vm_runtime::trace::start();
    let batch = [
        Instruction::new(Opcode::Add, [whole(y), whole(x), Scalar::F64(2.0).into()]),
        Instruction::new(Opcode::Sync, [whole(y)]),
    ];
    cl.execute(&batch, &mut mem).unwrap();
    let (spans, dropped) = vm_runtime::trace::stop();
    assert_eq!(dropped, 0);
    assert_eq!(mem.get(y.id).unwrap().as_slice::<f64>()[7], 3.0);
    let find = |cat: &str, name: &str| {
        spans
            .iter()
            .find(|s| s.cat == cat && s.name.contains(name))
            .unwrap_or_else(|| panic!("no {cat} span named like {name:?} in {spans:#?}"))
    };
    assert!(find("compile", "OpenCL program").seconds > 0.0);
    assert_eq!(find("copy", "upload of base #1").args, vec![("bytes", 8000)]);
    assert_eq!(find("copy", "download of base #2").args, vec![("bytes", 8000)]);
    assert_eq!(find("launch", "[add]").args, vec![("instructions", 1)]);
    find("kernel", "waiting for the device");
    // Off again: nothing more is recorded.
    cl.execute(&batch, &mut mem).unwrap();
    assert!(vm_runtime::trace::snapshot().is_empty());
}
