//! A test program and how it runs: the bases the host fills before it starts, its steps
//! (batches, and host writes between them), and the differential run of an engine against the
//! reference on the same program.

use crate::agree::{Agree, compare};
use crate::data::{Data, fill};
use vm_ir::{Base, Instruction, Opcode, Result, View};
use vm_runtime::{Component, HostMemory};

/// One step of a program.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Execute a batch.
    Batch(Vec<Instruction>),
    /// The host syncs a base, overwrites its element `index` with `bytes` and announces the
    /// write with a `discard`, as a frontend does.
    HostWrite(Base, usize, Vec<u8>),
}

/// A program with the bases it uses. Programs of the generators end by syncing every base of
/// `bases` they have not freed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Program {
    /// The bases that hold data before the program runs: [`run`] fills base `i` from seed
    /// `i + 1` and announces them with a `discard`.
    pub inputs: Vec<Base>,
    /// Every base the program may write: the inputs and the ones it creates.
    pub bases: Vec<Base>,
    /// What runs, in order.
    pub steps: Vec<Step>,
}

impl Program {
    /// A program of one batch over `bases`, with no inputs filled by the host.
    pub fn of_batch(batch: Vec<Instruction>, bases: Vec<Base>) -> Program {
        Program { inputs: Vec::new(), bases, steps: vec![Step::Batch(batch)] }
    }

    /// The batches, in order.
    pub fn batches(&self) -> impl Iterator<Item = &[Instruction]> {
        self.steps.iter().filter_map(|s| match s {
            Step::Batch(b) => Some(b.as_slice()),
            Step::HostWrite(..) => None,
        })
    }

    /// Every instruction of every batch, in order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.batches().flatten()
    }

    /// The program in the text form, for failure messages (host writes as comments).
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            match step {
                Step::Batch(b) => out.push_str(&vm_ir::asm::print_batch(b)),
                Step::HostWrite(base, index, bytes) => {
                    out.push_str(&format!("# the host writes {bytes:?} into element {index} of base {}\n", base.id));
                }
            }
        }
        out
    }
}

/// A batch syncing each of `bases` whole.
pub fn sync_all(bases: &[Base]) -> Vec<Instruction> {
    bases.iter().map(|b| Instruction::new(Opcode::Sync, [View::of_base(*b).into()])).collect()
}

/// Runs `program` on `stack` from inputs of `data` and returns the host memory it leaves.
pub fn run(stack: &mut dyn Component, program: &Program, data: Data) -> Result<HostMemory> {
    let mut mem = HostMemory::new();
    run_in(stack, program, data, &mut mem)?;
    Ok(mem)
}

/// [`run`] in the given host memory.
pub fn run_in(stack: &mut dyn Component, program: &Program, data: Data, mem: &mut HostMemory) -> Result<()> {
    for (i, b) in program.inputs.iter().enumerate() {
        fill(mem, b, i as u64 + 1, data)?;
    }
    if !program.inputs.is_empty() {
        let discards: Vec<Instruction> =
            program.inputs.iter().map(|b| Instruction::new(Opcode::Discard, [View::of_base(*b).into()])).collect();
        stack.execute(&discards, mem)?;
    }
    for step in &program.steps {
        match step {
            Step::Batch(b) => stack.execute(b, mem)?,
            Step::HostWrite(base, index, bytes) => {
                stack.execute(&sync_all(&[*base]), mem)?;
                mem.ensure(base)?.write_bytes(index * base.dtype.size(), bytes)?;
                stack.execute(&[Instruction::new(Opcode::Discard, [View::of_base(*base).into()])], mem)?;
            }
        }
    }
    Ok(())
}

/// Runs `program` on `subject` and on `reference` from the same inputs of `data`, syncs in the
/// subject every base the reference holds afterwards (the host reads a base after syncing it;
/// an engine may have deferred it), and compares them as `agree` says. Both failing with the
/// same error code counts as agreeing.
pub fn differential(
    subject: &mut dyn Component,
    reference: &mut dyn Component,
    program: &Program,
    data: Data,
    agree: Agree,
) -> std::result::Result<(), String> {
    let mut got = HostMemory::new();
    let r1 = run_in(subject, program, data, &mut got);
    let r2 = run(reference, program, data);
    match (r1, r2) {
        (Ok(()), Ok(want)) => {
            let held: Vec<Base> = program.bases.iter().filter(|b| want.get(b.id).is_some()).copied().collect();
            subject.execute(&sync_all(&held), &mut got).map_err(|e| format!("engine: {e}"))?;
            compare(&got, &want, &program.bases, agree)
        }
        (Err(a), Err(b)) if a.code() == b.code() => Ok(()),
        (a, b) => Err(format!("engine {:?}, reference {:?}", a.err(), b.err().map(|e| e.to_string()))),
    }
}

/// How many random programs a differential test runs: `VM_RANDOM_PROGRAMS`, else `default`.
pub fn random_program_count(default: u64) -> u64 {
    std::env::var("VM_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Runs the random programs of seeds `0..count` ([`crate::random_program`] with the default
/// spec) on the component `make` builds (a fresh one after each disagreement) against a fresh
/// reference engine `interp`, with inputs of `data`, compared as `agree` says. Returns the
/// subject (for what it reports) and one text per disagreeing program: `name`, the seed, the
/// error and the program's listing.
pub fn random_program_failures(
    name: &str,
    count: u64,
    data: Data,
    agree: Agree,
    mut make: impl FnMut() -> Box<dyn Component>,
) -> (Box<dyn Component>, Vec<String>) {
    let spec = crate::ProgramSpec::default();
    let mut failures = Vec::new();
    let mut subject = make();
    for seed in 0..count {
        let program = crate::random_program(seed, &spec);
        let mut reference = vm_interp::Interp::new(None);
        if let Err(e) = differential(subject.as_mut(), &mut reference, &program, data, agree) {
            failures.push(format!("{name}, seed {seed}: {e}\n{}", program.listing()));
            subject = make();
        }
    }
    (subject, failures)
}
