//! The data protocol: device copies made lazily, copied back only on SYNC, dropped on DISCARD
//! after a host write; programs built once for a repeated kernel, and loaded from the disk cache
//! by a second engine; clear errors (no fallback, a base larger than the device allows).

mod common;

use common::*;
use vm_ir::{DType, Instruction, Opcode, Scalar};
use vm_runtime::Component;

#[test]
fn sync_copies_back_and_discard_after_a_host_write_drops_the_device_copy() {
    let Some(mut cl) = engine() else { return };
    let (x, y) = (base(1, DType::F64, 1000), base(2, DType::F64, 1000));
    let mut mem = vm_runtime::HostMemory::new();
    mem.ensure(&x).unwrap().as_mut_slice::<f64>().fill(1.0);
    let step = |cl: &mut vm_opencl::OpenClEngine, mem: &mut vm_runtime::HostMemory| {
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
    // x went up twice (at first, and after the host wrote it); x came back twice and y once.
    let s = cl.stats();
    assert_eq!((s.uploads, s.upload_bytes, s.downloads, s.download_bytes), (2, 16_000, 3, 24_000), "{s:?}");
    assert!(s.wait_time <= s.exec_time, "{s:?}");
    let profile = s.to_string();
    assert!(profile.contains("uploads              2 (16000 bytes)"), "{profile}");
    cl.execute(&[Instruction::new(Opcode::Free, [whole(x)])], &mut mem).unwrap();
    assert!(!mem.is_allocated(x.id));
}

#[test]
fn a_new_base_in_a_reused_device_buffer_reads_as_zeros() {
    let Some(mut cl) = engine() else { return };
    let (mut a, mut b) = twin(&[], 1);
    for round in 0..3u64 {
        // x is written and freed; y (same size, never written by the host) is read next.
        let (x, y, out) = (
            base(10 * round + 1, DType::I32, 500),
            base(10 * round + 2, DType::I32, 500),
            base(10 * round + 3, DType::I32, 500),
        );
        let batch = [
            Instruction::new(Opcode::Add, [whole(x), whole(x), Scalar::I32(7).into()]),
            Instruction::new(Opcode::Free, [whole(x)]),
            Instruction::new(Opcode::Add, [whole(out), whole(y), Scalar::I32(1).into()]),
        ];
        compare(&mut cl, &batch, &mut a, &mut b, &[out], &format!("round {round}"));
        release(&mut cl, &mut a, &[y, out]);
    }
}

#[test]
fn without_a_fallback_unsupported_instructions_are_a_clear_error() {
    if engine().is_none() {
        return;
    }
    let config = vm_opencl::Config::from_settings(&vm_runtime::Settings::default()).unwrap();
    let mut cl = vm_opencl::OpenClEngine::new(config, None).unwrap();
    let x = base(1, DType::I32, 10);
    let mut mem = vm_runtime::HostMemory::new();
    // An output partially overlapping its input is left to the fallback.
    let shifted = |start| vm_ir::Operand::View(vm_ir::View::contiguous(x, start, &[9]).unwrap());
    let e = cl
        .execute(&[Instruction::new(Opcode::Add, [shifted(1), shifted(0), Scalar::I32(1).into()])], &mut mem)
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
    let settings = vm_runtime::Settings::from_pairs("opencl", &[("work_group_size", toml::Value::Integer(64))]);
    let mut cl =
        (vm_opencl::IMPLEMENTATION.construct)(&settings, Some(Box::new(vm_interp::Interp::new(None)))).unwrap();
    let (out, grid) = (base(1, DType::U32, 1001), base(2, DType::I64, 7 * 100));
    let (mut a, mut b) = twin(&[grid], 1);
    // Work items past the end of a padded launch, 1-d and 2-d (13 columns of a 7 x 100 grid),
    // must do nothing.
    let cols = vm_ir::Operand::View(vm_ir::View::new(grid, 3, &[7, 13], &[100, 2]).unwrap());
    let batch = [
        Instruction::new(Opcode::Range, [whole(out)]),
        Instruction::new(Opcode::Add, [cols.clone(), cols, Scalar::I64(5).into()]),
        Instruction::new(Opcode::Sync, [whole(out)]),
        Instruction::new(Opcode::Sync, [whole(grid)]),
    ];
    cl.execute(&batch, &mut a).unwrap();
    vm_interp::Interp::new(None).execute(&batch, &mut b).unwrap();
    assert_eq!(a.get(out.id).unwrap().bytes(), b.get(out.id).unwrap().bytes());
    assert_eq!(a.get(grid.id).unwrap().bytes(), b.get(grid.id).unwrap().bytes());
}

#[test]
fn a_base_larger_than_the_largest_device_buffer_is_out_of_memory() {
    let Some(mut cl) = engine() else { return };
    let max = cl.device().max_alloc;
    assert!(max > 0);
    let huge = vm_ir::Base { id: vm_ir::BaseId(1), dtype: DType::U8, nelem: max + 1 };
    let mut mem = vm_runtime::HostMemory::new();
    let head = vm_ir::Operand::View(vm_ir::View::contiguous(huge, 0, &[10]).unwrap());
    let e = cl.execute(&[Instruction::new(Opcode::Range, [head])], &mut mem).unwrap_err();
    assert!(matches!(e, vm_ir::Error::OutOfMemory(_)), "{e:?}");
    assert!(e.to_string().contains("CL_DEVICE_MAX_MEM_ALLOC_SIZE"), "{e}");
    assert!(!mem.is_allocated(huge.id), "nothing allocated on the host either");
    // The engine still works.
    let small = base(2, DType::U8, 10);
    let batch = [Instruction::new(Opcode::Range, [whole(small)]), Instruction::new(Opcode::Sync, [whole(small)])];
    cl.execute(&batch, &mut mem).unwrap();
    assert_eq!(mem.get(small.id).unwrap().bytes()[9], 9);
}

#[test]
fn a_second_engine_loads_programs_from_the_disk_cache_and_a_corrupt_file_is_rebuilt() {
    if engine().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("vm-opencl-disk-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let settings = vm_runtime::Settings::from_pairs(
        "opencl",
        &[("cache_dir", toml::Value::String(dir.to_string_lossy().into_owned()))],
    );
    let x = base(1, DType::F32, 64);
    let batch = [
        Instruction::new(Opcode::Range, [whole(x)]),
        Instruction::new(Opcode::Sqrt, [whole(x), whole(x)]),
        Instruction::new(Opcode::Multiply, [whole(x), whole(x), Scalar::F32(3.0).into()]),
        Instruction::new(Opcode::Sync, [whole(x)]),
    ];
    let run = || {
        let config = vm_opencl::Config::from_settings(&settings).unwrap();
        let mut cl = vm_opencl::OpenClEngine::new(config, None).unwrap();
        let mut mem = vm_runtime::HostMemory::new();
        cl.execute(&batch, &mut mem).unwrap();
        let values = mem.get(x.id).unwrap().as_slice::<f32>().to_vec();
        (cl.stats(), values)
    };
    let want: Vec<f32> = (0..64).map(|i| (i as f32).sqrt() * 3.0).collect();
    let (first, values) = run();
    assert_eq!((first.builds, first.disk_hits, first.disk_stores), (1, 0, 1), "{first:?}");
    assert_eq!(values, want);
    let (second, values) = run();
    assert_eq!((second.builds, second.disk_hits), (0, 1), "{second:?}");
    assert_eq!(values, want);
    // Damage every cached file: the next engine builds from source and stores a good one again.
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let mut data = std::fs::read(&files[0]).unwrap();
    let n = data.len();
    data[n / 2..].fill(0x5a);
    std::fs::write(&files[0], &data).unwrap();
    let (third, values) = run();
    assert_eq!((third.builds, third.disk_hits, third.disk_stores), (1, 0, 1), "{third:?}");
    assert_eq!(values, want);
    let (fourth, _) = run();
    assert_eq!((fourth.builds, fourth.disk_hits), (0, 1), "{fourth:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_platform_and_device_is_described() {
    let lines = vm_opencl::device::describe_platforms();
    assert!(!lines.is_empty());
    if engine().is_none() {
        assert!(lines[0].contains("OpenCL"), "{lines:?}");
        return;
    }
    for l in &lines {
        assert!(l.contains("MiB") && l.contains("compute units") && l.contains("fp64"), "{l}");
    }
}
