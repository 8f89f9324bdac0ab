//! The benchmark suite at its tiny sizes under MPI: `mpirun -n N cluster_suite interp|cpu`. For
//! every benchmark, size and precision (f64, f32), rank 0 runs the program on the eager
//! reference (`node -> interp`) and then on the cluster, whose ranks run `node -> interp`
//! (`interp`: the checksum must equal the reference bit for bit, the distribution changes no
//! result) or the `cpu` stack of the built-in config with one thread each (`cpu`: the checksum
//! must agree within the suite's tolerance). Every cluster run is a session of its own; the
//! other ranks serve them all on the stack of the first and exit when rank 0 does. Exits
//! nonzero on a disagreement.

use vm_bench::check::{Tolerance, compare};
use vm_bench::size::SizeName;
use vm_bench::stacks::StackSpec;
use vm_bench::{Precision, benchmarks};
use vm_frontend::Vm;
use vm_runtime::Component;

/// Every rank's stack below the cluster: `node -> interp` (exact) or the config's `cpu` stack.
fn child(exact: bool) -> Box<dyn Component> {
    if exact {
        return Box::new(vm_node::Node::new(Box::new(vm_interp::Interp::default())));
    }
    let (plan, registry) = StackSpec::new(None, Some("cpu")).plan(Some(1)).expect("the cpu stack plans");
    plan.build(&registry).expect("the cpu stack builds")
}

fn main() {
    let exact = match std::env::args().nth(1).as_deref() {
        Some("interp") | None => true,
        Some("cpu") => false,
        Some(other) => {
            eprintln!("cluster_suite: unknown child stack `{other}` (interp or cpu)");
            std::process::exit(2);
        }
    };
    let mut failures = Vec::new();
    let mut runs = 0;
    for precision in [Precision::F64, Precision::F32] {
        for def in benchmarks::all() {
            for size in def.sizes(SizeName::Tiny) {
                let at = format!("{} {size} {}", def.name, precision.as_str());
                // Only rank 0 gets this far past the first session; it computes the reference.
                let (eager, _) = StackSpec::eager().build(None).expect("the eager stack builds");
                let reference = (def.vm)(&eager, size.dims(), precision).expect("the reference runs");
                eager.shutdown().expect("eager shutdown");
                {
                    let Some(cluster) = vm_cluster::start(child(exact)).expect("joining the MPI job") else {
                        return; // a rank other than 0: it served every session, and rank 0 has exited
                    };
                    let ranks = cluster.ranks();
                    let vm = Vm::from_stack(Box::new(cluster)).expect("the cluster VM");
                    let tol = if exact || def.exact { Tolerance::EXACT } else { Tolerance::for_precision(precision) };
                    let label = if exact { "cluster(node->interp)" } else { "cluster(cpu)" };
                    match (def.vm)(&vm, size.dims(), precision) {
                        Ok(m) => {
                            let c = compare(reference.checksum, m.checksum, tol);
                            if c.failed() {
                                failures.push(format!("{at} {label} on {ranks} ranks: {:?}", c.note));
                            }
                        }
                        Err(e) => failures.push(format!("{at} {label} on {ranks} ranks: {e}")),
                    }
                    if let Err(e) = vm.shutdown() {
                        failures.push(format!("{at} {label}: shutdown: {e}"));
                    }
                    runs += 1;
                }
            }
        }
    }
    let label = if exact { "node -> interp" } else { "cpu" };
    println!("cluster_suite: {runs} cluster runs of the tiny suite over {label}, {} disagreements", failures.len());
    for f in &failures {
        eprintln!("DISAGREES {f}");
    }
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
