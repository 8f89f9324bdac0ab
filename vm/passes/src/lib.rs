//! # vm-passes: the batch optimizer
//!
//! An engine that forms kernels runs a batch through these passes first. Each pass rewrites the
//! batch it is given into an equivalent one that runs faster: the same values in every array the
//! frontend can see, bit for bit unless the pass's documentation says otherwise. A pass is a
//! [`Pass`]: a name, the [`Stage`] it acts in and a `run` over the batch's [`Rewritten`] form,
//! which keeps, for every instruction, the position of the submitted instruction it stands for
//! (errors name that position). A [`Pipeline`] holds an engine's passes in order, the state they
//! share ([`lazy::Lazy`], the recipes of pure arrays) and the counters they keep, and turns passes
//! off by name (the `cpu` engine's setting `passes_off`).
//!
//! The passes, in the order [`Pipeline::standard`] runs them:
//!
//! | name | stage | what it does |
//! |------|-------|--------------|
//! | `lazy` | batch | replays the recipes of deferred pure arrays the batch refers to ([`lazy`]) |
//! | `hoist` | batch | reads loop-invariant costly results from bases kept across batches ([`hoist`]) |
//! | `flat-reductions` | batch | splits full reductions of flat views by the shape that wrote them ([`rewrite::split_flat_reductions`]) |
//! | `widen-f32-sums` | batch | sums float32 in float64, rounded once ([`rewrite::widen_float32_reductions`]) |
//! | `subview-fills` | batch | constants written into part of a fresh array become a select over all of it ([`rewrite::fold_subview_fills`]) |
//! | `copyback` | batch | copy-backs of stencil temporaries become buffer swaps ([`copyback`]) |
//! | `reciprocals` | batch | divisions by powers of two become exact multiplications ([`rewrite::exact_reciprocals`]) |
//! | `recycle` | kernels | large temporaries reuse buffers kept between batches ([`recycle`]) |
//!
//! After the kernel stage the pipeline records which arrays the batch leaves pure, and defers
//! the ones that qualify ([`Pipeline::record`]); turning `lazy` off turns deferral off with it.
//!
//! `VM_TRACE=passes` (or a `VM_TRACE` list naming `passes`) prints the batch in the text form
//! after every pass that changed it, to stderr.
//!
//! Synthetic bases the passes make have ids from the top of the id space down ([`bases`]).

pub mod bases;
pub mod copyback;
pub mod hoist;
pub mod lazy;
pub mod recycle;
pub mod rewrite;
mod rewritten;

pub use rewritten::Rewritten;

use vm_fusion::Step;
use vm_ir::{BaseId, DType, Error, Instruction, Opcode, Result};
use vm_runtime::HostMemory;

/// What an engine tells the passes about its costs.
pub trait Costs {
    /// True when the engine computes `opcode` on `dtype` by calling out to a routine (a
    /// transcendental function): recomputing it costs more than reading a kept result.
    fn calls_out(&self, opcode: Opcode, dtype: DType) -> bool;
}

/// When a pass acts on a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before kernel formation: the pass may add, drop and reorder instructions.
    Batch,
    /// After kernel formation: the pass keeps every instruction at its position, so the kernels
    /// formed stay valid (it renames bases, say).
    Kernels,
}

/// The counters the passes keep (the engine's profile shows them).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Pure arrays deferred (never written to memory unless replayed).
    pub deferred: u64,
    /// Deferred arrays replayed because a later batch referred to them.
    pub replayed: u64,
    /// Loop-invariant results read from a kept base instead of computed again.
    pub hoisted: u64,
    /// Copy-backs turned into buffer swaps.
    pub swapped: u64,
}

/// What a pass works with besides the batch.
pub struct Context<'a> {
    /// The engine's host memory (what is allocated, pinned; passes free what they release).
    pub mem: &'a mut HostMemory,
    /// The recipes of the pure arrays, shared by the passes.
    pub lazy: &'a mut lazy::Lazy,
    /// The engine's costs.
    pub costs: &'a dyn Costs,
    /// The kernels formed from the batch, in the [`Stage::Kernels`] stage (empty before).
    pub steps: &'a [Step],
    /// The counters to add to.
    pub counters: &'a mut Counters,
}

/// One rewrite of a batch (see the crate documentation).
pub trait Pass: Send {
    /// The pass's name, in traces and in the setting that turns passes off.
    fn name(&self) -> &'static str;

    /// When the pass runs.
    fn stage(&self) -> Stage {
        Stage::Batch
    }

    /// Rewrites `work` (leaving it as it is when there is nothing to do).
    fn run(&mut self, work: &mut Rewritten<'_>, cx: &mut Context<'_>);

    /// True when a FREE of base `id` in the batch running must keep its buffer: the pass holds it
    /// for the next batch.
    fn keeps(&self, _id: BaseId) -> bool {
        false
    }

    /// After the batch ran (or failed, `succeeded` false): releases or keeps what the pass made
    /// for it.
    fn finish(&mut self, _succeeded: bool, _cx: &mut Context<'_>) {}
}

/// The names of [`Pipeline::standard`]'s passes, in order.
pub const STANDARD: &[&str] =
    &["lazy", "hoist", "flat-reductions", "widen-f32-sums", "subview-fills", "copyback", "reciprocals", "recycle"];

/// The passes an engine runs, in order, with the state they share.
pub struct Pipeline {
    passes: Vec<Box<dyn Pass>>,
    lazy: lazy::Lazy,
    counters: Counters,
    trace: bool,
}

/// How a [`Pipeline`] is made.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Names of passes not to run.
    pub off: Vec<String>,
    /// Bytes of loop-invariant results kept across batches ([`hoist`]); 0 turns `hoist` off.
    pub hoist_bytes: u64,
    /// Print the batch after every pass that changed it.
    pub trace: bool,
}

impl Options {
    /// Options turning off the passes of `off`, a comma-separated list of names (spaces around
    /// names are ignored; an empty list turns none off).
    pub fn with_off_list(off: &str, hoist_bytes: u64, trace: bool) -> Options {
        let off = off.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        Options { off, hoist_bytes, trace }
    }
}

impl Pipeline {
    /// The standard passes ([`STANDARD`]) but those `options` turn off; a name that is not one of
    /// them is [`Error::InvalidArgument`] listing the names.
    pub fn standard(options: &Options) -> Result<Pipeline> {
        Pipeline::of(STANDARD, options)
    }

    /// The passes named in `names`, in that order, but those `options` turn off. Every name, in
    /// `names` and in `options.off`, must be one of [`STANDARD`].
    pub fn of(names: &[&str], options: &Options) -> Result<Pipeline> {
        let unknown = |name: &str| {
            Error::InvalidArgument(format!("no optimizer pass is named `{name}`; the passes: {}", STANDARD.join(", ")))
        };
        if let Some(name) =
            names.iter().copied().chain(options.off.iter().map(String::as_str)).find(|n| !STANDARD.contains(n))
        {
            return Err(unknown(name));
        }
        let on = |name: &str| !options.off.iter().any(|o| o == name);
        let passes = names.iter().filter(|n| on(n)).map(|&n| make(n, options)).collect();
        Ok(Pipeline { passes, lazy: lazy::Lazy::new(on("lazy")), counters: Counters::default(), trace: options.trace })
    }

    /// The names of the passes this pipeline runs, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// Runs the passes of `stage` on `work`, in order. In the [`Stage::Kernels`] stage, `steps`
    /// are the kernels formed from `work`.
    pub fn run(
        &mut self,
        stage: Stage,
        work: &mut Rewritten<'_>,
        steps: &[Step],
        mem: &mut HostMemory,
        costs: &dyn Costs,
    ) {
        let mut cx = Context { mem, lazy: &mut self.lazy, costs, steps, counters: &mut self.counters };
        for pass in self.passes.iter_mut().filter(|p| p.stage() == stage) {
            let changes = work.changes();
            pass.run(work, &mut cx);
            if self.trace && work.changes() != changes {
                trace(pass.name(), work.batch());
            }
        }
    }

    /// Follows `batch` as it will run, cut into `steps` (none when another component runs it
    /// whole): records the arrays it leaves pure and, unless `lazy` is off, defers those that
    /// qualify by making them temporaries of their kernel ([`lazy::Lazy::record`]).
    pub fn record(&mut self, batch: &[Instruction], steps: &mut [Step], mem: &mut HostMemory) {
        self.lazy.record(batch, steps, mem);
    }

    /// True when a FREE of base `id` in the batch running must keep its buffer.
    pub fn keeps(&self, id: BaseId) -> bool {
        self.passes.iter().any(|p| p.keeps(id))
    }

    /// After a batch ran (or failed): every pass releases or keeps what it made for it.
    pub fn finish(&mut self, succeeded: bool, mem: &mut HostMemory, costs: &dyn Costs) {
        let mut cx = Context { mem, lazy: &mut self.lazy, costs, steps: &[], counters: &mut self.counters };
        for pass in &mut self.passes {
            pass.finish(succeeded, &mut cx);
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        Counters { deferred: self.lazy.deferred_count, replayed: self.lazy.replayed_count, ..self.counters }
    }
}

/// The pass named `name` (one of [`STANDARD`]).
fn make(name: &str, options: &Options) -> Box<dyn Pass> {
    match name {
        "lazy" => Box::new(lazy::Replay),
        "hoist" => Box::new(hoist::Hoist::new(options.hoist_bytes)),
        "flat-reductions" => Box::new(rewrite::FlatReductions),
        "widen-f32-sums" => Box::new(rewrite::WidenFloat32Sums),
        "subview-fills" => Box::new(rewrite::SubviewFills),
        "copyback" => Box::new(copyback::CopyBacks::default()),
        "reciprocals" => Box::new(rewrite::ExactReciprocals),
        "recycle" => Box::new(recycle::Spares::default()),
        _ => unreachable!("names are checked against STANDARD"),
    }
}

/// Prints `batch` after pass `name` (`VM_TRACE=passes`).
fn trace(name: &str, batch: &[Instruction]) {
    eprintln!("--- VM_TRACE pass {name} ({} instructions) ---\n{}", batch.len(), vm_ir::asm::print_batch(batch));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_run_the_passes_named_in_order_but_those_turned_off() {
        let all = Pipeline::standard(&Options::default()).unwrap();
        assert_eq!(all.names(), STANDARD);
        let some = Pipeline::standard(&Options::with_off_list(" hoist,recycle ,", 0, false)).unwrap();
        assert_eq!(
            some.names(),
            ["lazy", "flat-reductions", "widen-f32-sums", "subview-fills", "copyback", "reciprocals"]
        );
        let two = Pipeline::of(&["reciprocals", "subview-fills"], &Options::default()).unwrap();
        assert_eq!(two.names(), ["reciprocals", "subview-fills"]);
    }

    #[test]
    fn an_unknown_pass_name_is_an_error_listing_the_names() {
        for options in [Options::with_off_list("hoist,hoisting", 0, false), Options::default()] {
            let names: &[&str] = if options.off.is_empty() { &["lazy", "fusion"] } else { STANDARD };
            let Err(e) = Pipeline::of(names, &options) else { panic!("accepted {names:?} off {:?}", options.off) };
            let text = e.to_string();
            assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
            assert!(text.contains("no optimizer pass is named") && text.contains(&STANDARD.join(", ")), "{text}");
        }
    }

    #[test]
    fn turning_lazy_off_stops_deferral_too() {
        use vm_ir::asm;
        let program = asm::parse(
            ".base k f64 100\n.base s f64 1\nrange k\nadd_reduce s{start=0 shape=[] stride=[]}, k, 0i64\nsync s\n",
        )
        .unwrap();
        let options = vm_fusion::Options { max_instructions: 512, ordered_float_products: true };
        for (off, deferred) in [("", 1), ("lazy", 0)] {
            let mut pipeline = Pipeline::standard(&Options::with_off_list(off, 0, false)).unwrap();
            let mut mem = HostMemory::new();
            let mut steps = vm_fusion::partition(&program.instructions, &options);
            pipeline.record(&program.instructions, &mut steps, &mut mem);
            assert_eq!(pipeline.counters().deferred, deferred, "off: {off:?}");
        }
    }
}
