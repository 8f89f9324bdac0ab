//! `vm`: the vector VM's command-line tool.
//!
//! - `vm info [--config FILE] [--stack NAME]`: the configuration in effect, the stack it picks,
//!   each component with its implementation and effective settings, the engines compiled in, and
//!   every OpenCL platform's devices;
//! - `vm run FILE [--config FILE] [--stack NAME]`: runs a text bytecode file and prints every
//!   array it syncs;
//! - `vm header`: prints the C header `vm.h`.
//! - `vm component-header`: prints the C header of the component ABI, `vm_component.h`.

use clap::{Parser, Subcommand};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use vm::run::{Failure, RunError};
use vm_host::StackChoice;
use vm_host::engines;
use vm_host::stack;
use vm_ir::{Error, Result};

/// The vector VM's command-line tool.
#[derive(Debug, Parser)]
#[command(
    name = "vm",
    version,
    about = "The vector VM's tool: show the configuration and stack, run text bytecode, print the C header"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the stack comes from.
#[derive(Debug, clap::Args)]
struct StackArgs {
    /// The configuration file (default: $VM_CONFIG, ./vm.toml, $XDG_CONFIG_HOME/vm/config.toml,
    /// ~/.config/vm/config.toml, then the built-in default).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The stack to build (default: $VM_STACK, else the configuration's `stack`).
    #[arg(long, value_name = "NAME")]
    stack: Option<String>,
}

impl StackArgs {
    /// The stack `--stack` names, else the one `VM_STACK` or the configuration picks.
    fn choice(&self) -> StackChoice {
        StackChoice::named_or_env(self.stack.as_deref())
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the configuration in effect, the stack with each component's settings, and the
    /// engines compiled in.
    Info {
        #[command(flatten)]
        stack: StackArgs,
    },
    /// Run a text bytecode file and print every array it syncs.
    Run {
        /// The bytecode file (see docs/bytecode.md).
        file: PathBuf,
        #[command(flatten)]
        stack: StackArgs,
    },
    /// Print the C header vm.h (generated from the Rust tables).
    Header,
    /// Print the C header of the component ABI, vm_component.h (for engine plugins).
    ComponentHeader,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { stack } => info(&stack).map_err(|e| e.to_string()),
        Command::Run { file, stack } => run(&file, &stack),
        Command::ComponentHeader => {
            emit(&vm::component_header::render());
            Ok(())
        }
        Command::Header => {
            emit(&vm::header::render());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vm: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` to stdout. A closed pipe (`vm info | head`) is not an error worth a panic.
fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn info(args: &StackArgs) -> Result<()> {
    let env = vm_runtime::config::Env::process();
    let (plan, registry) = stack::plan(args.config.as_deref(), &args.choice(), &env)?;
    let mut s = plan.describe();
    let built = plan.build(&registry).and_then(|mut top| {
        let info = top.describe();
        top.shutdown()?;
        Ok(info)
    });
    match &built {
        Ok(components) => {
            for c in components.iter().filter(|c| !c.notes.is_empty() || !c.statistics.is_empty()) {
                let _ = writeln!(s, "notes on {} ({}):", c.name, c.implementation);
                for n in &c.notes {
                    let _ = writeln!(s, "  {n}");
                }
                if !c.statistics.is_empty() {
                    let _ = writeln!(s, "  statistics: {}", c.statistics);
                }
            }
            s += "status: the stack builds\n";
        }
        Err(e) => {
            let _ = writeln!(s, "status: the stack does not build: {e}");
        }
    }
    s += "engines compiled in:\n";
    let width = engines::engines_compiled_in().iter().map(|n| n.len()).max().unwrap_or(0);
    for imp in engines::implementations() {
        let kind = if imp.needs_child { "manager" } else { "engine" };
        let missing = if imp.name == "cluster" && !engines::MPI_COMPILED_IN { " [built without MPI]" } else { "" };
        let _ = writeln!(s, "  {:width$}  {kind:7}  {}{missing}", imp.name, imp.summary);
    }
    s += "OpenCL devices:\n";
    for line in engines::describe_platforms() {
        let _ = writeln!(s, "  {line}");
    }
    emit(&s);
    built.map(|_| ())
}

/// `vm run FILE`: the synced arrays stream to stdout as they are printed; errors in the program
/// come back as `FILE:LINE: message`.
fn run(file: &Path, args: &StackArgs) -> std::result::Result<(), String> {
    let shown = file.display().to_string();
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::InvalidArgument(format!("cannot read {shown}: {e}")).to_string())?;
    let (mut rt, _) = stack::build_runtime(args.config.as_deref(), &args.choice()).map_err(|e| e.to_string())?;
    let result = {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        vm::run::run_text(&text, &mut rt, &mut out)
    };
    let shut = rt.shutdown().map_err(|e| e.to_string());
    match result {
        // The reader went away (`vm run big.vm | head`): what it wanted was written.
        Err(RunError { failure: Failure::Output(e), .. }) if e.kind() == std::io::ErrorKind::BrokenPipe => shut,
        Err(e) => Err(e.in_file(&shown)),
        Ok(()) => shut,
    }
}
