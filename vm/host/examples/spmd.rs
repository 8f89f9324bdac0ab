//! The SPMD start as a user gets it: `mpirun -n N spmd MODE`. Every rank builds the `cluster`
//! stack of a config through the registry of built-in engines, as `vm_init` does; on ranks
//! other than 0 that call serves rank 0 and exits the process when rank 0 exits.
//!
//! Modes:
//! - `ok`: rank 0 runs a heat-equation program in two sessions (init, run, shutdown, twice),
//!   compares each result with the reference engine's and exits 0 (1 on a mismatch).
//! - `exit-in-session`: rank 0 runs a batch, then exits with status 0 without shutting the VM
//!   down; the job must still end cleanly.
//! - `die`: rank 0 runs a batch, then aborts (SIGABRT); `mpirun` must end the whole job with a
//!   nonzero status instead of leaving the other ranks waiting.

use vm_frontend::Vm;
use vm_frontend::s;
use vm_ir::Result;
use vm_runtime::Component;
use vm_runtime::config::{Config, Env, StackChoice};
use vm_runtime::stack::StackPlan;

const CONFIG: &str = "stack = \"cluster\"\n[stacks]\ncluster = [\"cluster\", \"node\", \"interp\"]\n";

/// The `cluster` stack of [`CONFIG`], built as `vm_init` builds a stack.
fn cluster_stack() -> Result<Box<dyn Component>> {
    let registry = vm_host::engines::registry()?;
    let config = Config::parse(CONFIG, "<spmd example>")?;
    let env = Env::process();
    let stack = config.select_stack(&StackChoice::FromEnv, &env)?;
    StackPlan::new(&config, &stack, &registry, &env)?.build(&registry)
}

/// A few steps of the 2-D heat equation; the grid and its sum.
fn heat(vm: &Vm) -> Result<Vec<f64>> {
    let grid = vm.full::<f64>(&[23, 17], 0.0)?;
    grid.slice(s![0, ..])?.fill(40.0)?;
    let center = grid.slice(s![1..-1, 1..-1])?;
    let (north, south) = (grid.slice(s![..-2, 1..-1])?, grid.slice(s![2.., 1..-1])?);
    let (west, east) = (grid.slice(s![1..-1, ..-2])?, grid.slice(s![1..-1, 2..])?);
    for _ in 0..4 {
        let work = (&center + &north + &south + &east + &west) * 0.2;
        center.assign(&work)?;
    }
    let mut v = grid.to_vec()?;
    v.push(grid.sum_all().to_scalar()?);
    Ok(v)
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "ok".into());
    let want = heat(&Vm::from_stack(Box::new(vm_interp::Interp::default())).expect("the VM")).expect("interp runs");
    let sessions = if mode == "ok" { 2 } else { 1 };
    for session in 0..sessions {
        // On ranks other than 0 this never returns: they serve, then exit with status 0.
        let stack = cluster_stack().unwrap_or_else(|e| {
            eprintln!("spmd: cannot build the cluster stack: {e}");
            std::process::exit(2)
        });
        let vm = Vm::from_stack(stack).unwrap_or_else(|e| {
            eprintln!("spmd: {e}");
            std::process::exit(2)
        });
        let got = heat(&vm).expect("the cluster runs");
        if got != want {
            eprintln!("spmd: session {session}: MISMATCH with the reference");
            std::process::exit(1);
        }
        match mode.as_str() {
            "exit-in-session" => {
                println!("spmd: rank 0 exits inside a session");
                std::process::exit(0);
            }
            "die" => {
                eprintln!("spmd: rank 0 aborts inside a session");
                std::process::abort();
            }
            _ => vm.shutdown().expect("shutdown"),
        }
    }
    println!("spmd: {sessions} sessions agree with the reference");
}
