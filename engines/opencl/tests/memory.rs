//! The data protocol: device copies made lazily, copied back only on SYNC, dropped on DISCARD
//! after a host write; programs built once for a repeated kernel; clear errors.

mod common;

use common::*;
use vm_core::{Component, DType, Instruction, Opcode, Scalar};

#[test]
fn sync_copies_back_and_discard_after_a_host_write_drops_the_device_copy() {
    let Some(mut cl) = engine() else { return };
    let (x, y) = (base(1, DType::F64, 1000), base(2, DType::F64, 1000));
    let mut mem = vm_core::HostMemory::new();
    mem.ensure(&x).unwrap().as_mut_slice::<f64>().fill(1.0);
    let step = |cl: &mut vm_opencl::OpenClEngine, mem: &mut vm_core::HostMemory| {
        let batch = [
            Instruction::new(Opcode::Add, [whole(y), whole(x), Scalar::F64(2.0).into()]),
            Instruction::new(Opcode::Multiply, [whole(x), whole(y), Scalar::F64(0.5).into()]),
        ];
        cl.execute(&batch, mem).unwrap();
    };
    for _ in 0..10 {
        step(&mut cl, &mut mem);
    }
    let s = cl.stats();
    assert_eq!((s.builds, s.launches, s.downloads), (1, 10, 0), "{s:?}");
    assert_eq!(mem.get(x.id).unwrap().as_slice::<f64>()[0], 1.0, "no sync, no copy back");
    cl.execute(&[Instruction::new(Opcode::Sync, [whole(x)])], &mut mem).unwrap();
    let want = (0..10).fold(1.0f64, |v, _| (v + 2.0) * 0.5);
    assert_eq!(mem.get(x.id).unwrap().as_slice::<f64>()[999], want);
    // The host writes x and announces it with DISCARD: the next kernel reads the host data.
    mem.get_mut(x.id).unwrap().as_mut_slice::<f64>().fill(10.0);
    cl.execute(&[Instruction::new(Opcode::Discard, [whole(x)])], &mut mem).unwrap();
    step(&mut cl, &mut mem);
    cl.execute(&[Instruction::new(Opcode::Sync, [whole(x)]), Instruction::new(Opcode::Sync, [whole(y)])], &mut mem)
        .unwrap();
    assert_eq!(mem.get(x.id).unwrap().as_slice::<f64>()[5], 6.0);
    assert_eq!(mem.get(y.id).unwrap().as_slice::<f64>()[5], 12.0);
    cl.execute(&[Instruction::new(Opcode::Free, [whole(x)])], &mut mem).unwrap();
    assert!(!mem.is_allocated(x.id));
}

#[test]
fn without_a_fallback_unsupported_instructions_are_a_clear_error() {
    if engine().is_none() {
        return;
    }
    let config = vm_opencl::Config::from_settings(&vm_core::Settings::default()).unwrap();
    let mut cl = vm_opencl::OpenClEngine::new(config, None).unwrap();
    let (x, y) = (base(1, DType::I32, 10), base(2, DType::I32, 10));
    let mut mem = vm_core::HostMemory::new();
    let e = cl
        .execute(&[Instruction::new(Opcode::AddAccumulate, [whole(y), whole(x), Scalar::I64(0).into()])], &mut mem)
        .unwrap_err();
    assert!(e.to_string().contains("no fallback"), "{e}");
    let info = cl.describe();
    assert!(info[0].notes.iter().any(|n| n.contains("fp64")), "{:?}", info[0].notes);
}

#[test]
fn a_work_group_size_from_the_settings_is_used() {
    if engine().is_none() {
        return;
    }
    let settings = vm_core::Settings::from_pairs("opencl", &[("work_group_size", toml::Value::Integer(64))]);
    let mut cl =
        (vm_opencl::IMPLEMENTATION.construct)(&settings, Some(Box::new(vm_interp::Interp::new(None)))).unwrap();
    let out = base(1, DType::U32, 1001);
    let (mut a, mut b) = twin(&[], 1);
    let batch = [Instruction::new(Opcode::Range, [whole(out)]), Instruction::new(Opcode::Sync, [whole(out)])];
    cl.execute(&batch, &mut a).unwrap();
    vm_interp::Interp::new(None).execute(&batch, &mut b).unwrap();
    assert_eq!(a.get(out.id).unwrap().bytes(), b.get(out.id).unwrap().bytes());
}
