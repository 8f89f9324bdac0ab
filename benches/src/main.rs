//! `vm-bench`: see the crate documentation of `vm_bench` and `vm-bench --help`.

use clap::Parser;

fn main() {
    let args = vm_bench::cli::Args::parse();
    std::process::exit(vm_bench::cli::main(args));
}
