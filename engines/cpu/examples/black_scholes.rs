//! Black-Scholes call prices with the 5-term polynomial CND (BENCHMARKS.md), as the frontend
//! emits it (one temporary per operation, all freed in the batch), one batch per iteration:
//! `cargo run --release --example black_scholes -- N ITERS THREADS`. Prints the median
//! milliseconds per iteration of 5 runs and the profile.

use vm_cpu::{Config, CpuEngine};
use vm_ir::{Base, BaseId, DType, Instruction, Opcode, Operand, Scalar, View};
use vm_runtime::{Component, HostMemory};

/// Emits one instruction per operation into fresh temporaries.
struct Builder {
    n: usize,
    next: u64,
    instrs: Vec<Instruction>,
    temps: Vec<Operand>,
}

impl Builder {
    fn op(&mut self, op: Opcode, dtype: DType, ins: &[Operand]) -> Operand {
        self.next += 1;
        let t = Operand::View(View::of_base(Base { id: BaseId(self.next), dtype, nelem: self.n as u64 }));
        self.instrs.push(Instruction::new(op, std::iter::once(t.clone()).chain(ins.iter().cloned())));
        self.temps.push(t.clone());
        t
    }
    fn f(&mut self, op: Opcode, ins: &[Operand]) -> Operand {
        self.op(op, DType::F64, ins)
    }
    fn cnd(&mut self, x: &Operand) -> Operand {
        let c = |v: f64| Operand::from(Scalar::F64(v));
        let a = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];
        let l = self.f(Opcode::Absolute, std::slice::from_ref(x));
        let t = self.f(Opcode::Multiply, &[l.clone(), c(0.2316419)]);
        let t = self.f(Opcode::Add, &[t, c(1.0)]);
        let k = self.f(Opcode::Divide, &[c(1.0), t]);
        let mut p = self.f(Opcode::Multiply, &[k.clone(), c(a[4])]);
        for &ai in a[..4].iter().rev() {
            let s = self.f(Opcode::Add, &[p, c(ai)]);
            p = self.f(Opcode::Multiply, &[k.clone(), s]);
        }
        let l2 = self.f(Opcode::Multiply, &[l.clone(), l]);
        let e = self.f(Opcode::Multiply, &[l2, c(-0.5)]);
        let e = self.f(Opcode::Exp, &[e]);
        let e = self.f(Opcode::Multiply, &[e, c(1.0 / (2.0 * std::f64::consts::PI).sqrt())]);
        let e = self.f(Opcode::Multiply, &[e, p]);
        let w = self.f(Opcode::Subtract, &[c(1.0), e]);
        let neg = self.op(Opcode::Less, DType::Bool, &[x.clone(), c(0.0)]);
        let mirrored = self.f(Opcode::Subtract, &[c(1.0), w.clone()]);
        self.f(Opcode::Select, &[neg, mirrored, w])
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let arg = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let (n, iters, threads) = (arg(0, 2_000_000), arg(1, 20), arg(2, 1));
    let (x, r, v) = (65.0f64, 0.08f64, 0.3f64);
    let s = Operand::View(View::of_base(Base { id: BaseId(1), dtype: DType::F64, nelem: n as u64 }));
    let mean = Base { id: BaseId(2), dtype: DType::F64, nelem: 1 };
    let mv = Operand::View(View::new(mean, 0, &[], &[]).unwrap());
    let mut cpu = CpuEngine::new(Config { threads, ..Config::default() }, None).unwrap();
    let mut mem = HostMemory::new();
    let c = |v: f64| Operand::from(Scalar::F64(v));
    let init = [
        Instruction::new(Opcode::Random, [s.clone(), Scalar::U64(42).into(), Scalar::U64(0).into()]),
        Instruction::new(Opcode::Multiply, [s.clone(), s.clone(), c(4.0)]),
        Instruction::new(Opcode::Add, [s.clone(), s.clone(), c(58.0)]),
    ];
    cpu.execute(&init, &mut mem).unwrap();
    let step = |i: usize| {
        let t = (i + 1) as f64 / 365.0;
        let (a, b) = ((r + v * v / 2.0) * t, v * t.sqrt());
        let mut bl = Builder { n, next: 100, instrs: Vec::new(), temps: Vec::new() };
        let q = bl.f(Opcode::Divide, &[s.clone(), c(x)]);
        let q = bl.f(Opcode::Log, &[q]);
        let q = bl.f(Opcode::Add, &[q, c(a)]);
        let d1 = bl.f(Opcode::Divide, &[q, c(b)]);
        let d2 = bl.f(Opcode::Subtract, &[d1.clone(), c(b)]);
        let n1 = bl.cnd(&d1);
        let n2 = bl.cnd(&d2);
        let p1 = bl.f(Opcode::Multiply, &[s.clone(), n1]);
        let p2 = bl.f(Opcode::Multiply, &[n2, c(x * (-r * t).exp())]);
        let price = bl.f(Opcode::Subtract, &[p1, p2]);
        bl.instrs.push(Instruction::new(Opcode::AddReduce, [mv.clone(), price, Scalar::I64(0).into()]));
        let frees: Vec<Instruction> = bl.temps.iter().map(|t| Instruction::new(Opcode::Free, [t.clone()])).collect();
        bl.instrs.extend(frees);
        bl.instrs
    };
    let mut times = Vec::new();
    let mut total = 0.0;
    for _ in 0..5 {
        total = 0.0;
        let t0 = std::time::Instant::now();
        for i in 0..iters {
            cpu.execute(&step(i), &mut mem).unwrap();
            total += mem.get(mean.id).unwrap().as_slice::<f64>()[0] / n as f64;
        }
        times.push(t0.elapsed().as_secs_f64() / iters as f64);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "n={n} threads={threads}: median {:.3} ms/iter, min {:.3} (checksum {total:.9})",
        times[2] * 1e3,
        times[0] * 1e3
    );
    eprintln!("{}", cpu.profile());
}
