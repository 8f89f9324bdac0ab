//! `VM_PERF_MAP=1`: the JIT's code named in `/tmp/perf-<pid>.map` (see `vm_cpu::compile::perfmap`). The
//! test runs itself again in a child process with the variable set, so that no other test
//! writes a map.

use std::process::Command;
use vm_cpu::compile::cache::{Cache, Tiers};
use vm_cpu::compile::perfmap;
use vm_cpu::compile::program::{Dst, Inner, Op, Program, SlotInfo, Src};
use vm_cpu::x86;
use vm_ir::{DType, Opcode};

/// `out = (x * c0 - y) * x`, f64, contiguous: a kernel that gets a row routine.
fn program() -> Program {
    let op = |opcode, srcs: &[Src], dst| Op {
        opcode,
        dtype: DType::F64,
        in_dtype: DType::F64,
        srcs: srcs.iter().copied().collect(),
        dst,
    };
    let unit = SlotInfo { dtype: DType::F64, inner: Inner::Unit };
    Program {
        ndim: 2,
        slots: vec![unit; 3],
        partials: vec![],
        consts: vec![DType::F64],
        ops: vec![
            op(Opcode::Multiply, &[Src::Mem(0), Src::Const(0)], Dst::Value),
            op(Opcode::Subtract, &[Src::Val(0), Src::Mem(1)], Dst::Value),
            op(Opcode::Multiply, &[Src::Val(1), Src::Mem(0)], Dst::Store(2)),
        ],
    }
}

/// The map's lines: start, size, name.
fn lines(path: &str) -> Vec<(usize, usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let mut hex = || usize::from_str_radix(f.next().expect("a field"), 16).expect("hexadecimal");
            let (start, size) = (hex(), hex());
            (start, size, f.next().expect("a name").to_string())
        })
        .collect()
}

#[test]
fn the_perf_map_names_every_kernel_and_routine() {
    const NAME: &str = "the_perf_map_names_every_kernel_and_routine";
    if std::env::var("VM_PERF_MAP").ok().as_deref() != Some("1") {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env("VM_PERF_MAP", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "the child failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("perf map checked"), "the child checked nothing: {stdout}");
        return;
    }
    let path = format!("/tmp/perf-{}.map", std::process::id());
    let _ = std::fs::remove_file(&path);
    assert!(perfmap::enabled());
    let p = program();
    let isa = x86::Isa::best();
    let mut cache = Cache::new("speed", Tiers::Tiered, false, false, isa).unwrap();
    // A kernel of the fast tier, then of the good one.
    let (fast, _, _) = cache.get(&p, 1).unwrap();
    let (good, _, _) = cache.get(&p, 1 << 30).unwrap();
    let map = lines(&path);
    let named = |stem: String| map.iter().filter(|l| l.2.starts_with(&format!("{stem}."))).collect::<Vec<_>>();
    match isa.filter(|&i| x86::eligible(&p, i)) {
        Some(isa) => {
            // The row routine is the same at every tier: one kernel, one routine, compiled once.
            let kernel = named(perfmap::kernel_name(&p, false));
            assert!(kernel.iter().any(|l| (l.0..l.0 + l.1).contains(&(fast as usize))), "{map:?}");
            let routine = named(perfmap::routine_name(&p, isa));
            assert!(!routine.is_empty(), "{map:?}");
            let (start, size) = (routine[0].0, routine[0].1);
            // SAFETY: the routine's code is mapped (readable and executable) while `cache` lives.
            let code = unsafe { std::slice::from_raw_parts(start as *const u8, size) };
            assert_eq!(code, x86::assemble(&p, isa).unwrap(), "the map's range holds the routine");
        }
        None => {
            for (f, good) in [(fast, false), (good, true)] {
                let kernel = named(perfmap::kernel_name(&p, good));
                assert!(kernel.iter().any(|l| (l.0..l.0 + l.1).contains(&(f as usize))), "{map:?}");
            }
        }
    }
    assert!(
        map.iter().all(|l| l.1 > 0 && (l.2.starts_with("vm-kernel-") || l.2.starts_with("vm-rowcode-"))),
        "{map:?}"
    );
    drop(cache);
    let _ = std::fs::remove_file(&path);
    println!("perf map checked: {} lines", map.len());
}
