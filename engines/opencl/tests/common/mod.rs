//! Shared helpers: an opencl engine (interp as fallback) or a skip note, host data, and
//! comparison with interp.

#![allow(dead_code)]

use vm_core::{Base, BaseId, Component, DType, Error, HostMemory, Instruction, Operand, Scalar, Settings, View};
use vm_opencl::{Config, OpenClEngine};

/// An opencl engine over the first device with interp as its fallback child, or `None` (after
/// printing a note) when this machine has no OpenCL platform.
pub fn engine() -> Option<OpenClEngine> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("POCL_CACHE_DIR").is_none() {
            // SAFETY: every test thread passes this Once before touching OpenCL (or the
            // environment), so nothing reads the environment while it is written.
            unsafe { std::env::set_var("POCL_CACHE_DIR", std::env::temp_dir().join("vm-opencl-pocl-cache")) };
        }
    });
    let config = Config::from_settings(&Settings::default()).unwrap();
    match OpenClEngine::new(config, Some(Box::new(vm_interp::Interp::new(None)))) {
        Ok(e) => Some(e),
        Err(Error::Device(m)) => {
            eprintln!("skipping: no usable OpenCL device ({m})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// A base.
pub fn base(id: u64, dtype: DType, nelem: u64) -> Base {
    Base { id: BaseId(id), dtype, nelem }
}

/// xorshift64.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One interesting value of `d`: random bits, small integers, or float specials.
pub fn value(r: &mut Rng, d: DType) -> Scalar {
    let specials = [0.0, -0.0, 0.5, -1.5, 2.5, 1e30, -1e30, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 3.0, 1e-40];
    match r.below(4) {
        0 => Scalar::from_payload(d, r.next()),
        1 if d.is_float() => {
            let x = f64::from_bits(r.next());
            let x = if d == DType::F32 { f64::from(f32::from_bits(x.to_bits() as u32)) } else { x };
            Scalar::F64(x).cast(d)
        }
        2 if d.is_float() => Scalar::F64(specials[r.below(specials.len())]).cast(d),
        _ => Scalar::I64(r.below(9) as i64 - 4).cast(d),
    }
}

/// The bytes of a scalar in its dtype.
pub fn bytes(s: Scalar) -> Vec<u8> {
    let v: Vec<u8> = match s {
        Scalar::F32(x) => x.to_le_bytes().to_vec(),
        Scalar::F64(x) => x.to_le_bytes().to_vec(),
        s => s.to_payload().to_le_bytes().to_vec(),
    };
    v[..s.dtype().size()].to_vec()
}

/// Fills `b` in `mem` with values from `r`.
pub fn fill(mem: &mut HostMemory, r: &mut Rng, b: &Base) {
    let data: Vec<u8> = (0..b.nelem).flat_map(|_| bytes(value(r, b.dtype))).collect();
    mem.ensure(b).unwrap().write_bytes(0, &data).unwrap();
}

/// A contiguous 1-d view of the whole base.
pub fn whole(b: Base) -> Operand {
    Operand::View(View::contiguous(b, 0, &[b.nelem as usize]).unwrap())
}

/// Two host memories with the same inputs.
pub fn twin(inputs: &[Base], seed: u64) -> (HostMemory, HostMemory) {
    let (mut a, mut b) = (HostMemory::new(), HostMemory::new());
    let mut r1 = Rng(seed);
    let mut r2 = Rng(seed);
    for x in inputs {
        fill(&mut a, &mut r1, x);
        fill(&mut b, &mut r2, x);
    }
    (a, b)
}

/// Element `i` of `b` as comparable bits (all NaNs equal).
fn elem(mem: &HostMemory, b: &Base, i: usize) -> u64 {
    let s = b.dtype.size();
    let raw = &mem.get(b.id).expect("synced base").bytes()[i * s..(i + 1) * s];
    let mut w = [0u8; 8];
    w[..s].copy_from_slice(raw);
    let bits = u64::from_le_bytes(w);
    match b.dtype {
        DType::F32 if f32::from_bits(bits as u32).is_nan() => u64::MAX,
        DType::F64 if f64::from_bits(bits).is_nan() => u64::MAX,
        _ => bits,
    }
}

/// How opencl's float results must agree with interp's (integers and bools always exactly).
#[derive(Debug, Clone, Copy)]
pub enum Agree {
    /// The same bits (all NaNs equal).
    Exact,
    /// At most this many units in the last place apart (NaN equals NaN only).
    Ulps(u64),
    /// Within `vm_core::testing::Tolerance` (relative, for sums in another order).
    Relative(vm_core::testing::Tolerance),
}

/// The distance in ulps between two floats given as bits of `d` (NaN: 0 to NaN, else huge).
pub fn ulps(d: DType, x: u64, y: u64) -> u64 {
    let ordered = |bits: u64| -> i128 {
        let (v, sign) =
            if d == DType::F32 { (bits & 0x7fff_ffff, bits >> 31 & 1) } else { (bits & !(1 << 63), bits >> 63) };
        if sign == 1 { -(v as i128) } else { v as i128 }
    };
    match (x == u64::MAX, y == u64::MAX) {
        (true, true) => 0,
        (false, false) => (ordered(x) - ordered(y)).unsigned_abs().min(u64::MAX as u128) as u64,
        _ => u64::MAX,
    }
}

/// [`compare_within`] with [`Agree::Exact`].
pub fn compare(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    outputs: &[Base],
    what: &str,
) {
    compare_within(cl, batch, a, b, outputs, what, Agree::Exact)
}

/// Runs `batch` on opencl (memory `a`) and interp (memory `b`), then syncs `outputs` in both
/// and asserts their contents agree as `agree` says; `what` names the case. Both failing with
/// the same error code counts as agreeing.
pub fn compare_within(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    outputs: &[Base],
    what: &str,
    agree: Agree,
) {
    let checks: Vec<Check> =
        outputs.iter().map(|&o| Check { base: o, start: 0, len: o.nelem as usize, what: what.into(), agree }).collect();
    run_and_compare(cl, batch, a, b, &checks, true)
}

/// Elements `start..start + len` of output `base`, the result of case `what`, which must agree
/// as `agree` says.
#[derive(Debug, Clone)]
pub struct Check {
    /// The output base.
    pub base: Base,
    /// The first element.
    pub start: usize,
    /// How many elements.
    pub len: usize,
    /// The case, for failure messages.
    pub what: String,
    /// How opencl's floats must agree with interp's.
    pub agree: Agree,
}

impl Check {
    /// The check of the elements `view` (a contiguous slice) holds after case `what`.
    pub fn of(view: &View, what: String, agree: Agree) -> Check {
        Check { base: view.base, start: view.start as usize, len: view.nelem(), what, agree }
    }
}

/// Runs `batch` on opencl (memory `a`) and interp (memory `b`), both of which must succeed,
/// then syncs the bases of `checks` in both and asserts each check's elements agree.
pub fn compare_checks(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    checks: &[Check],
) {
    run_and_compare(cl, batch, a, b, checks, false)
}

/// [`compare_checks`], where both engines failing with the same error code counts as agreeing
/// when `both_may_fail`.
fn run_and_compare(
    cl: &mut OpenClEngine,
    batch: &[Instruction],
    a: &mut HostMemory,
    b: &mut HostMemory,
    checks: &[Check],
    both_may_fail: bool,
) {
    let mut batch = batch.to_vec();
    let mut synced: Vec<BaseId> = Vec::new();
    for c in checks {
        if !synced.contains(&c.base.id) {
            synced.push(c.base.id);
            batch.push(Instruction::new(vm_core::Opcode::Sync, [whole(c.base)]));
        }
    }
    let mut interp = vm_interp::Interp::new(None);
    let want = interp.execute(&batch, b);
    let got = cl.execute(&batch, a);
    let what = || checks.first().map_or("", |c| c.what.as_str());
    match (&want, &got) {
        (Ok(()), Ok(())) => {}
        (Err(x), Err(y)) if both_may_fail && x.code() == y.code() => return,
        _ => panic!("{}: interp {want:?}, opencl {got:?}", what()),
    }
    for c in checks {
        let o = &c.base;
        for i in c.start..c.start + c.len {
            let (x, y) = (elem(a, o, i), elem(b, o, i));
            let ok = match c.agree {
                _ if x == y => true,
                _ if !o.dtype.is_float() => false,
                Agree::Exact => false,
                Agree::Ulps(n) => ulps(o.dtype, x, y) <= n,
                Agree::Relative(t) => {
                    let s = |bits: u64| match o.dtype {
                        _ if bits == u64::MAX => Scalar::F64(f64::NAN),
                        DType::F32 => Scalar::F32(f32::from_bits(bits as u32)),
                        _ => Scalar::F64(f64::from_bits(bits)),
                    };
                    t.agrees(o.dtype, s(x), s(y))
                }
            };
            assert!(
                ok,
                "{}: element {} of base {}: opencl {x:#x}, interp {y:#x} ({:?})",
                c.what,
                i - c.start,
                o.id,
                c.agree
            );
        }
    }
}

/// Frees `bases` in the engine, as a frontend would before reusing their ids.
pub fn release(cl: &mut OpenClEngine, mem: &mut HostMemory, bases: &[Base]) {
    let frees: Vec<Instruction> = bases.iter().map(|b| Instruction::new(vm_core::Opcode::Free, [whole(*b)])).collect();
    cl.execute(&frees, mem).unwrap();
}

/// Output slices of `n` elements for a batch that gives each instruction its own output (so
/// that the whole batch fuses into one program): one base per dtype of `dtypes` (id `first` plus
/// the dtype's id), and the slice of each entry of `dtypes`, in order.
pub fn slices(dtypes: &[DType], n: usize, first: u64) -> (Vec<Base>, Vec<View>) {
    let mut bases: Vec<Base> = Vec::new();
    for &d in dtypes {
        let count = dtypes.iter().filter(|&&e| e == d).count();
        if !bases.iter().any(|b| b.dtype == d) {
            bases.push(base(first + u64::from(d.id()), d, (count * n) as u64));
        }
    }
    let mut used = vec![0usize; bases.len()];
    let views = dtypes
        .iter()
        .map(|&d| {
            let k = bases.iter().position(|b| b.dtype == d).unwrap();
            used[k] += 1;
            View::contiguous(bases[k], ((used[k] - 1) * n) as i64, &[n]).unwrap()
        })
        .collect();
    (bases, views)
}
