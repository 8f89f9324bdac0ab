//! Unit tests of the frontend: the bytecode it records (shapes, strides, broadcasting, slicing,
//! frees), checked through a stack that only records, and the host-side reads of written data.
//! Numbers computed by an engine are tested in `vm/frontend/tests/frontend_end_to_end.rs`.

use super::*;
use crate::s;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use vm_ir::dtype::DType;
use vm_ir::instr::Operand;
use vm_ir::view::Base;
use vm_runtime::component::ComponentInfo;
use vm_runtime::memory::HostMemory;

/// Records every executed instruction; fails batches while `fail` is set; implements the
/// extension `matmul` only.
struct Recorder {
    log: Arc<Mutex<Vec<Instruction>>>,
    fail: Arc<AtomicBool>,
}

impl Component for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn execute(&mut self, batch: &[Instruction], mem: &mut HostMemory) -> Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(Error::Execution("the recorder was told to fail".into()));
        }
        for i in batch {
            if i.opcode == Opcode::Free {
                mem.free(i.operands[0].as_view().unwrap().base.id);
            }
        }
        self.log.lock().unwrap().extend_from_slice(batch);
        Ok(())
    }
    fn register_extension(&mut self, name: &str, _: Opcode) -> Result<bool> {
        Ok(name == "matmul")
    }
    fn info(&self) -> ComponentInfo {
        ComponentInfo::default()
    }
}

struct Setup {
    vm: Vm,
    log: Arc<Mutex<Vec<Instruction>>>,
    fail: Arc<AtomicBool>,
}

impl Setup {
    fn with_limit(batch_limit: usize) -> Setup {
        let log = Arc::default();
        let fail = Arc::default();
        let stack = Recorder { log: Arc::clone(&log), fail: Arc::clone(&fail) };
        let rt = Runtime::new(Box::new(stack), RuntimeOptions { batch_limit, ..RuntimeOptions::default() });
        Setup { vm: Vm::new(rt), log, fail }
    }

    fn new() -> Setup {
        Setup::with_limit(1 << 20)
    }

    /// Flushes and returns the instructions executed since the last call, without the
    /// `discard`s of host writes; asserts that no error was deferred.
    fn take(&self) -> Vec<Instruction> {
        self.vm.flush().unwrap();
        assert!(self.vm.take_error().is_none());
        let mut log = self.log.lock().unwrap();
        std::mem::take(&mut *log).into_iter().filter(|i| i.opcode != Opcode::Discard).collect()
    }
}

fn view_of(op: &Operand) -> &View {
    op.as_view().expect("a view operand")
}

fn layout(op: &Operand) -> (i64, Vec<usize>, Vec<i64>) {
    let v = view_of(op);
    (v.start, v.shape.to_vec(), v.stride.to_vec())
}

fn iota(vm: &Vm, shape: &[usize]) -> Array<f64> {
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n).map(|i| i as f64).collect();
    vm.from_slice(shape, &data).unwrap()
}

#[test]
fn constructors_record_their_instructions() {
    let t = Setup::new();
    let z = t.vm.zeros::<f64>(&[2, 3]).unwrap();
    let o = t.vm.ones::<i32>(&[4]).unwrap();
    let f = t.vm.full::<f32>(&[], 2.5).unwrap();
    let r = t.vm.arange::<i64>(5).unwrap();
    let log = t.take();
    assert_eq!(log.len(), 4);
    assert_eq!(log[0].opcode, Opcode::Identity);
    assert_eq!(layout(&log[0].operands[0]), (0, vec![2, 3], vec![3, 1]));
    assert_eq!(log[0].operands[1], Operand::Const(Scalar::F64(0.0)));
    assert_eq!(log[1].operands[1], Operand::Const(Scalar::I32(1)));
    assert_eq!(layout(&log[2].operands[0]), (0, vec![], vec![]));
    assert_eq!(log[2].operands[1], Operand::Const(Scalar::F32(2.5)));
    assert_eq!(log[3].opcode, Opcode::Range);
    assert_eq!((z.shape(), o.len(), f.ndim(), r.shape()), (&[2, 3][..], 4, 0, &[5][..]));
    assert_eq!(view_of(&log[3].operands[0]).base.dtype, DType::I64);
    assert!(t.vm.zeros::<f64>(&[usize::MAX, 2]).is_err());
    assert!(t.vm.zeros::<f64>(&[1; 17]).is_err());
    assert!(t.vm.from_slice::<f64>(&[2, 2], &[1.0; 3]).is_err());
}

#[test]
fn random_draws_continue_each_seeds_stream() {
    let t = Setup::new();
    let _a = t.vm.random::<f64>(&[4], 7).unwrap();
    let _b = t.vm.random::<f64>(&[2, 3], 7).unwrap();
    let _c = t.vm.random::<u32>(&[3], 8).unwrap();
    let _d = t.vm.random_at::<f64>(&[3], 7, 100).unwrap();
    let _e = t.vm.random::<f64>(&[1], 7).unwrap();
    let params: Vec<(Scalar, Scalar)> = t
        .take()
        .iter()
        .map(|i| {
            assert_eq!(i.opcode, Opcode::Random);
            (i.operands[1].as_const().unwrap(), i.operands[2].as_const().unwrap())
        })
        .collect();
    let u = Scalar::U64;
    assert_eq!(params, [(u(7), u(0)), (u(7), u(4)), (u(8), u(0)), (u(7), u(100)), (u(7), u(10))]);
}

#[test]
fn host_writes_read_back_through_views() {
    let t = Setup::new();
    let a = iota(&t.vm, &[3, 4]);
    assert_eq!(a.to_vec().unwrap(), (0..12).map(f64::from).collect::<Vec<_>>());
    assert_eq!(a.slice(s![1.., ..;2]).unwrap().to_vec().unwrap(), [4.0, 6.0, 8.0, 10.0]);
    assert_eq!(a.slice(s![..;-1, -1]).unwrap().to_vec().unwrap(), [11.0, 7.0, 3.0]);
    assert_eq!(a.slice(s![-2..0;-1]).unwrap().to_vec().unwrap(), [4.0, 5.0, 6.0, 7.0]);
    assert_eq!(a.transpose().to_vec().unwrap(), [0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0]);
    assert_eq!(a.index_axis(1, -2).unwrap().to_vec().unwrap(), [2.0, 6.0, 10.0]);
    assert_eq!(a.index_axis(0, 1).unwrap().to_vec().unwrap(), [4.0, 5.0, 6.0, 7.0]);
    let row = a.index_axis(0, 0).unwrap();
    assert_eq!(row.broadcast_to(&[2, 4]).unwrap().to_vec().unwrap(), [0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0]);
    let col = a.slice(s![.., 1, NewAxis]).unwrap();
    assert_eq!(col.shape(), [3, 1]);
    assert_eq!(col.broadcast_to(&[3, 2]).unwrap().to_vec().unwrap(), [1.0, 1.0, 5.0, 5.0, 9.0, 9.0]);
    assert_eq!(a.slice(s![1, 2]).unwrap().to_scalar().unwrap(), 6.0);
    assert!(a.to_scalar().is_err());
    let b = iota(&t.vm, &[2, 3, 4]);
    let p = b.permute(&[2, 0, 1]).unwrap();
    assert_eq!(p.shape(), [4, 2, 3]);
    assert_eq!(p.slice(s![1]).unwrap().to_vec().unwrap(), [1.0, 5.0, 9.0, 13.0, 17.0, 21.0]);
    assert_eq!(b.reshape(&[4, 6]).unwrap().slice(s![3, ..2]).unwrap().to_vec().unwrap(), [18.0, 19.0]);
    let e = a.slice(s![2..1]).unwrap();
    assert_eq!((e.shape(), e.is_empty()), (&[0, 4][..], true));
    assert_eq!(e.to_vec().unwrap(), Vec::<f64>::new());
    // Nothing was computed: the reads needed no flush.
    assert!(t.take().is_empty());
}

#[test]
fn slices_follow_python() {
    type Case = (Option<isize>, Option<isize>, isize, &'static [usize]);
    let cases: &[Case] = &[
        (None, None, 1, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        (Some(2), None, 1, &[2, 3, 4, 5, 6, 7, 8, 9]),
        (None, Some(-2), 1, &[0, 1, 2, 3, 4, 5, 6, 7]),
        (Some(-3), None, 1, &[7, 8, 9]),
        (Some(1), Some(8), 3, &[1, 4, 7]),
        (None, None, -1, &[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]),
        (Some(-2), Some(2), -3, &[8, 5]),
        (Some(8), None, -2, &[8, 6, 4, 2, 0]),
        (None, Some(3), -1, &[9, 8, 7, 6, 5, 4]),
        (Some(20), Some(-20), -1, &[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]),
        (Some(-20), Some(20), 2, &[0, 2, 4, 6, 8]),
        (Some(5), Some(5), 1, &[]),
        (Some(7), Some(2), 1, &[]),
        (Some(2), Some(7), -1, &[]),
        (Some(-1), None, -4, &[9, 5, 1]),
        (None, None, 4, &[0, 4, 8]),
        (Some(3), Some(-100), -1, &[3, 2, 1, 0]),
    ];
    let t = Setup::new();
    let a = t.vm.from_slice::<u64>(&[10], &(0..10).collect::<Vec<u64>>()).unwrap();
    for &(start, stop, step, want) in cases {
        let got = a.slice([SliceArg::range(start, stop, step)]).unwrap().to_vec().unwrap();
        let want: Vec<u64> = want.iter().map(|&x| x as u64).collect();
        assert_eq!(got, want, "[{start:?}:{stop:?}:{step}]");
    }
    assert_eq!(s![..=-1][0], SliceArg::ALL);
    assert_eq!(s![1..=3][0], SliceArg::range(Some(1), Some(4), 1));
    assert_eq!(s![..=2usize][0], SliceArg::range(None, Some(3), 1));
    assert_eq!(s![-1][0], SliceArg::Index(-1));
    assert_eq!(s![].len(), 0);
    assert_eq!(a.slice(s![]).unwrap().shape(), [10]);
}

#[test]
fn bad_indexing_is_an_error() {
    let t = Setup::new();
    let a = t.vm.zeros::<f64>(&[3, 4]).unwrap();
    let err = |r: Result<Array<f64>>| r.unwrap_err().to_string();
    assert!(err(a.slice(s![..;0])).contains("step cannot be zero"));
    assert!(err(a.slice(s![.., .., 1])).contains("too many indices"));
    assert!(err(a.slice(s![3])).contains("index 3 is out of range"));
    assert!(err(a.slice(s![-4])).contains("out of range"));
    assert!(err(a.index_axis(2, 0)).contains("axis 2 is out of range"));
    assert!(err(a.transpose().reshape(&[12])).contains("non-contiguous"));
    assert!(err(a.reshape(&[5, 2])).contains("cannot reshape"));
    assert!(err(a.permute(&[0, 0])).contains("not a permutation"));
    assert!(err(a.permute(&[1])).contains("not a permutation"));
    assert!(err(a.broadcast_to(&[4, 4])).contains("cannot broadcast"));
    assert!(err(a.broadcast_to(&[4])).contains("cannot broadcast"));
    assert_eq!(a.new_axis(-1).unwrap().shape(), [3, 4, 1]);
    assert_eq!(a.new_axis(0).unwrap().shape(), [1, 3, 4]);
    assert!(a.new_axis(3).is_err());
    assert_eq!(a.reshape(&[2, 2, 3]).unwrap().shape(), [2, 2, 3]);
    assert_eq!(a.slice(s![1..2, ..]).unwrap().reshape(&[2, 2]).unwrap().view().start, 4);
    assert!(t.vm.take_error().is_none());
}

#[test]
fn binary_operations_broadcast_with_stride_zero_views() {
    let t = Setup::new();
    let a = t.vm.zeros::<f64>(&[3, 1]).unwrap();
    let b = t.vm.zeros::<f64>(&[4]).unwrap();
    t.take();
    let c = &a + &b;
    assert_eq!(c.shape(), [3, 4]);
    let log = t.take();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].opcode, Opcode::Add);
    assert_eq!(layout(&log[0].operands[0]), (0, vec![3, 4], vec![4, 1]));
    assert_eq!(view_of(&log[0].operands[0]).base, c.base());
    assert_eq!(layout(&log[0].operands[1]), (0, vec![3, 4], vec![1, 0]));
    assert_eq!(layout(&log[0].operands[2]), (0, vec![3, 4], vec![0, 1]));

    let _d = &c * 0.5;
    let _e = 2.0 - &c;
    let _f = -&c;
    let _g = c.maximum(&b).unwrap();
    let log = t.take();
    let ops: Vec<Opcode> = log.iter().map(|i| i.opcode).collect();
    assert_eq!(ops, [Opcode::Multiply, Opcode::Subtract, Opcode::Negative, Opcode::Maximum]);
    assert_eq!(log[0].operands[2], Operand::Const(Scalar::F64(0.5)));
    assert_eq!(log[1].operands[1], Operand::Const(Scalar::F64(2.0)));
    assert_eq!(layout(&log[1].operands[2]), (0, vec![3, 4], vec![4, 1]));
    assert_eq!(layout(&log[3].operands[2]), (0, vec![3, 4], vec![0, 1]));

    // Comparisons, masks, select and casts.
    let m = c.lt(1.0).unwrap();
    let n = !&m & m.clone();
    let s = Array::select(&m, &c, 0.0).unwrap();
    let i = s.cast::<i32>();
    let log = t.take();
    let ops: Vec<Opcode> = log.iter().map(|i| i.opcode).collect();
    assert_eq!(ops, [Opcode::Less, Opcode::Invert, Opcode::BitwiseAnd, Opcode::Free, Opcode::Select, Opcode::Identity]);
    assert_eq!(view_of(&log[0].operands[0]).base.dtype, DType::Bool);
    assert_eq!((n.dtype(), s.dtype(), i.dtype()), (DType::Bool, DType::F64, DType::I32));
    assert_eq!(log[4].operands[3], Operand::Const(Scalar::F64(0.0)));
}

#[test]
#[should_panic(
    expected = "array operator `+`: invalid argument: operands could not be broadcast together with shapes [3], [4]"
)]
fn operators_panic_when_shapes_do_not_broadcast() {
    let t = Setup::new();
    let a = t.vm.zeros::<f64>(&[3]).unwrap();
    let b = t.vm.zeros::<f64>(&[4]).unwrap();
    let _ = &a + &b;
}

#[test]
fn fallible_twins_of_operators_return_errors() {
    let t = Setup::new();
    let a = t.vm.zeros::<i32>(&[2, 3]).unwrap();
    let b = t.vm.zeros::<i32>(&[3, 2]).unwrap();
    t.take();
    assert!(a.try_add(&b).unwrap_err().to_string().contains("[2, 3], [3, 2]"));
    assert!(a.try_sub(&b).is_err() && a.try_mul(&b).is_err() && a.try_rem(&b).is_err());
    assert!(a.bitwise_and(&b).is_err() && a.lt(&b).is_err() && a.left_shift(&b).is_err());
    assert!(Array::select(&a.lt(0).unwrap(), &b, 1).is_err());
    assert!(t.take().iter().all(|i| i.opcode != Opcode::Add), "nothing recorded for failed calls");
    let other = Setup::new();
    let c = other.vm.zeros::<i32>(&[2, 3]).unwrap();
    assert!(a.try_add(&c).unwrap_err().to_string().contains("different VMs"));
    assert!(a.assign(&c).is_err());
    assert!(!a.vm().same_vm(c.vm()));
}

#[test]
fn assign_and_fill_write_through_views() {
    let t = Setup::new();
    let grid = t.vm.zeros::<f64>(&[6, 6]).unwrap();
    let work = t.vm.zeros::<f64>(&[4, 4]).unwrap();
    t.take();
    let center = grid.slice(s![1..-1, 1..-1]).unwrap();
    center.assign(&work).unwrap();
    grid.slice(s![0, ..]).unwrap().fill(40.0).unwrap();
    center.assign(work.slice(s![0]).unwrap()).unwrap(); // broadcast row
    let log = t.take();
    assert_eq!(log.len(), 3);
    assert!(log.iter().all(|i| i.opcode == Opcode::Identity));
    assert_eq!(layout(&log[0].operands[0]), (7, vec![4, 4], vec![6, 1]));
    assert_eq!(view_of(&log[0].operands[0]).base, grid.base());
    assert_eq!(layout(&log[1].operands[0]), (0, vec![6], vec![1]));
    assert_eq!(log[1].operands[1], Operand::Const(Scalar::F64(40.0)));
    assert_eq!(layout(&log[2].operands[1]), (0, vec![4, 4], vec![0, 1]));
    let bcast = work.slice(s![0]).unwrap().broadcast_to(&[4, 4]).unwrap();
    assert!(bcast.fill(1.0).unwrap_err().to_string().contains("more than once"));
    assert!(center.assign(t.vm.zeros::<f64>(&[3]).unwrap()).is_err());
}

#[test]
fn in_place_operators_update_the_view() {
    let t = Setup::new();
    let mut v = t.vm.zeros::<f64>(&[3, 2]).unwrap();
    let f = t.vm.zeros::<f64>(&[2]).unwrap();
    t.take();
    v += &f;
    v *= 2.0;
    let mut row = v.slice(s![1]).unwrap();
    row -= f.clone();
    let log = t.take();
    let ops: Vec<Opcode> = log.iter().map(|i| i.opcode).collect();
    assert_eq!(ops, [Opcode::Add, Opcode::Multiply, Opcode::Subtract]);
    assert_eq!(log[0].operands[0], log[0].operands[1]);
    assert_eq!(layout(&log[0].operands[2]), (0, vec![3, 2], vec![0, 1]));
    assert_eq!(layout(&log[2].operands[0]), (2, vec![2], vec![1]));
    assert_eq!(log[2].operands[0], log[2].operands[1]);
}

#[test]
#[should_panic(expected = "array operator `+=`")]
fn in_place_operators_panic_on_broadcast_targets() {
    let t = Setup::new();
    let mut b = t.vm.zeros::<f64>(&[2]).unwrap().broadcast_to(&[3, 2]).unwrap();
    b += 1.0;
}

#[test]
fn temporaries_are_freed_and_time_steps_do_not_grow() {
    let t = Setup::new();
    let grid = t.vm.zeros::<f64>(&[8, 8]).unwrap();
    let c = grid.slice(s![1..-1, 1..-1]).unwrap();
    let n = grid.slice(s![..-2, 1..-1]).unwrap();
    let s = grid.slice(s![2.., 1..-1]).unwrap();
    let e = grid.slice(s![1..-1, 2..]).unwrap();
    let w = grid.slice(s![1..-1, ..-2]).unwrap();
    t.take();
    let live = t.vm.live_bases();
    let mut per_step = Vec::new();
    for _ in 0..3 {
        let work = (&c + &n + &s + &e + &w) * 0.2;
        let delta = (&work - &c).abs().sum_all();
        c.assign(&work).unwrap();
        drop((work, delta));
        assert_eq!(t.vm.live_bases(), live);
        per_step.push(t.take());
    }
    let ops: Vec<Opcode> = per_step[0].iter().map(|i| i.opcode).collect();
    use Opcode::*;
    assert_eq!(
        ops,
        [
            Add, Add, Free, Add, Free, Add, Free, Multiply, Free, // work
            Subtract, Absolute, AddReduce, Free, Free, // delta: a flattened reduction
            Identity, Free, Free, // assign; drop work and delta
        ]
    );
    assert_eq!(per_step[1].len(), per_step[0].len());
    assert_eq!(per_step[2].len(), per_step[0].len());
    // The views of `grid` keep it alive; the last of them frees it.
    drop((c, n, s, e, w));
    assert!(t.take().is_empty());
    drop(grid);
    let log = t.take();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].opcode, Opcode::Free);
    assert_eq!(t.vm.live_bases(), 0);
}

#[test]
fn reductions_and_scans_record_axis_and_shapes() {
    let t = Setup::new();
    let a = t.vm.zeros::<f64>(&[2, 3, 4]).unwrap();
    t.take();
    assert_eq!(a.sum(1).unwrap().shape(), [2, 4]);
    assert_eq!(a.max(-1).unwrap().shape(), [2, 3]);
    assert_eq!(a.cumsum(0).unwrap().shape(), [2, 3, 4]);
    assert_eq!(a.any(2).unwrap().dtype(), DType::Bool);
    assert!(a.sum(3).unwrap_err().to_string().contains("axis 3 is out of range"));
    assert!(a.sum(-4).is_err());
    let log = t.take();
    let axes: Vec<(Opcode, Scalar)> = log
        .iter()
        .filter(|i| i.opcode != Opcode::Free)
        .map(|i| (i.opcode, i.operands[2].as_const().unwrap()))
        .collect();
    use Opcode::*;
    let i = Scalar::I64;
    assert_eq!(axes, [(AddReduce, i(1)), (MaximumReduce, i(2)), (AddAccumulate, i(0)), (LogicalOrReduce, i(2))]);

    let total = a.sum_all();
    assert_eq!(total.shape(), [] as [usize; 0]);
    let log = t.take();
    assert_eq!(log.len(), 1, "a contiguous array reduces in one instruction");
    assert_eq!(layout(&log[0].operands[1]), (0, vec![24], vec![1]));
    assert_eq!(layout(&log[0].operands[0]), (0, vec![], vec![]));

    let _m = a.transpose().min_all();
    let log = t.take();
    let ops: Vec<Opcode> = log.iter().map(|i| i.opcode).collect();
    assert_eq!(ops, [MinimumReduce, MinimumReduce, Free]);
    assert_eq!(layout(&log[0].operands[1]), (0, vec![4, 3, 2], vec![1, 4, 12]));
    assert_eq!(layout(&log[1].operands[1]), (0, vec![12], vec![1]));

    let _s = a.reshape(&[24]).unwrap().slice(s![..;-3]).unwrap().sum_all();
    let log = t.take();
    assert_eq!(log.len(), 1, "a 1-d view reduces in one instruction");
    assert_eq!(layout(&log[0].operands[1]), (23, vec![8], vec![-3]));

    let _mean = a.mean(0).unwrap();
    let _all = a.all_all();
    let s = t.vm.full::<f64>(&[], 1.0).unwrap();
    let _s = s.sum_all();
    let log = t.take();
    let ops: Vec<Opcode> = log.iter().map(|i| i.opcode).collect();
    assert_eq!(ops, [AddReduce, Divide, Free, LogicalAndReduce, Identity, AddReduce]);
    assert_eq!(log[1].operands[2], Operand::Const(Scalar::F64(2.0)));
    assert_eq!(layout(&log[5].operands[1]), (0, vec![1], vec![1]), "a 0-d array reduces as one element");
}

#[test]
fn gather_scatter_and_matmul_record_their_operands() {
    let t = Setup::new();
    let a = t.vm.zeros::<f32>(&[2, 3]).unwrap();
    let b = t.vm.zeros::<f32>(&[3, 4]).unwrap();
    let idx = t.vm.arange::<i64>(4).unwrap();
    t.take();
    let g = a.gather(&idx.reshape(&[2, 2]).unwrap()).unwrap();
    assert_eq!(g.shape(), [2, 2]);
    a.scatter(&idx, 1.5).unwrap();
    let src = t.vm.zeros::<f32>(&[1]).unwrap();
    a.scatter(&idx, &src).unwrap();
    let p = a.matmul(&b).unwrap();
    assert_eq!(p.shape(), [2, 4]);
    let v = t.vm.zeros::<f32>(&[3]).unwrap();
    assert_eq!(v.matmul(&b).unwrap().shape(), [4]);
    assert_eq!(a.matmul(&v).unwrap().shape(), [2]);
    assert_eq!(v.matmul(&v).unwrap().shape(), [] as [usize; 0]);
    let log: Vec<Instruction> = t.take().into_iter().filter(|i| i.opcode != Opcode::Free).collect();
    assert_eq!(log[0].opcode, Opcode::Gather);
    assert_eq!(layout(&log[0].operands[2]), (0, vec![2, 2], vec![2, 1]));
    assert_eq!(log[1].opcode, Opcode::Scatter);
    assert_eq!(log[1].operands[1], Operand::Const(Scalar::F32(1.5)));
    assert_eq!(layout(&log[3].operands[1]), (0, vec![4], vec![0]));
    let mm: Vec<&Instruction> = log.iter().filter(|i| i.opcode == Opcode::Extension(0)).collect();
    assert_eq!(mm.len(), 4);
    assert_eq!(layout(&mm[0].operands[0]), (0, vec![2, 4], vec![4, 1]));
    assert_eq!(layout(&mm[1].operands[1]), (0, vec![1, 3], vec![0, 1]));
    assert_eq!(layout(&mm[2].operands[2]), (0, vec![3, 1], vec![1, 0]));
    assert!(a.matmul(&a).unwrap_err().to_string().contains("do not fit"));
    assert!(t.vm.zeros::<f32>(&[1, 1, 1]).unwrap().matmul(&b).is_err());
    assert!(t.vm.register_extension("fft").is_err());
    assert!(a.broadcast_to(&[2, 2, 3]).unwrap().scatter(&idx, 0.0).is_err());
}

#[test]
fn deferred_errors_are_reported_at_the_next_sync_point() {
    let t = Setup::with_limit(4);
    let a = t.vm.zeros::<f64>(&[4]).unwrap();
    t.fail.store(true, Ordering::SeqCst);
    let b = &a + 1.0;
    assert!(t.vm.flush().unwrap_err().to_string().contains("told to fail"));
    assert!(t.vm.take_error().is_none(), "the error was reported once");
    // An implicit flush (the batch limit) fails inside an operator: the error waits.
    let mut x = b.clone();
    for _ in 0..4 {
        x = &x * 2.0;
    }
    t.fail.store(false, Ordering::SeqCst);
    let e = x.to_vec().unwrap_err();
    assert!(matches!(e, Error::Execution(_)), "{e}");
    assert_eq!(x.to_vec().unwrap(), [0.0; 4], "the recorder computes nothing");
    assert!(t.vm.take_error().is_none());
}

#[test]
fn drops_while_the_runtime_is_borrowed_are_deferred() {
    let t = Setup::new();
    let a = t.vm.zeros::<f64>(&[4]).unwrap();
    let base: Base = a.base();
    let before = t.vm.live_bases();
    {
        let rt = t.vm.runtime();
        drop(a);
        assert_eq!(rt.live_bases(), before, "the free waits for the runtime");
    }
    assert_eq!(t.vm.live_bases(), before - 1);
    let log = t.take();
    assert_eq!(log.last().unwrap().opcode, Opcode::Free);
    assert_eq!(view_of(&log.last().unwrap().operands[0]).base, base);
}

#[test]
fn the_runtime_comes_back_when_no_array_is_alive() {
    let t = Setup::new();
    let a = t.vm.zeros::<f64>(&[4]).unwrap();
    let vm = match t.vm.into_runtime() {
        Ok(_) => panic!("an array is alive"),
        Err(vm) => vm,
    };
    assert!(vm.clone().shutdown().unwrap_err().to_string().contains("alive"));
    drop(a);
    let rt = vm.into_runtime().expect("no array is alive");
    assert_eq!(rt.live_bases(), 0);
    rt.shutdown().unwrap();
}

#[test]
fn linspace_and_stats() {
    let t = Setup::new();
    let l = t.vm.linspace(0.0f64, 1.0, 5).unwrap();
    assert_eq!(l.shape(), [5]);
    let log = t.take();
    let ops: Vec<Opcode> = log.iter().map(|i| i.opcode).collect();
    assert_eq!(ops, [Opcode::Range, Opcode::Multiply, Opcode::Add, Opcode::Free, Opcode::Identity, Opcode::Free]);
    assert_eq!(log[1].operands[2], Operand::Const(Scalar::F64(0.25)));
    assert_eq!(layout(&log[4].operands[0]), (4, vec![], vec![]));
    assert_eq!(log[4].operands[1], Operand::Const(Scalar::F64(1.0)));
    assert!(t.vm.stats().instructions >= 6);
    assert!(format!("{:?} {:?}", t.vm, l).contains("shape"));
}
