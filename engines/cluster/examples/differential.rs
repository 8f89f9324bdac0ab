//! Differential test under MPI: `mpirun -n N differential`. Every rank builds the cluster
//! stack for each program (a session each); rank 0 runs the program on it and on a local `interp`,
//! compares the synced bases byte for byte, and exits nonzero on a mismatch. Other ranks serve
//! every session until rank 0 exits.

use vm_runtime::Component;
use vm_testkit::per_opcode::opcode_programs;
use vm_testkit::{Agree, Data, Program, ProgramSpec, compare, random_program, run};

fn child() -> Box<dyn Component> {
    Box::new(vm_node::Node::new(Box::new(vm_interp::Interp::default())))
}

fn main() {
    let mut programs: Vec<(String, Program)> =
        opcode_programs().into_iter().map(|(op, p)| (format!("opcode {}", op.name()), p)).collect();
    let seeds: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(40);
    programs.extend((0..seeds).map(|s| (format!("random program {s}"), random_program(s, &ProgramSpec::uneven()))));
    let mut failures = 0;
    let mut ranks = 0;
    let mut sent = 0u64;
    let mut waited = 0.0f64;
    for (name, prog) in &programs {
        let Some(mut cluster) = vm_cluster::start(child()).expect("joining the MPI job") else {
            return; // a rank other than 0: it served every program, and rank 0 has exited
        };
        ranks = cluster.ranks();
        let want = run(&mut vm_interp::Interp::default(), prog, Data::Full).expect("interp runs the program");
        let got = run(&mut cluster, prog, Data::Full);
        cluster.shutdown().expect("shutdown");
        sent += cluster.rank_stats().iter().map(|s| s.bytes_sent).sum::<u64>();
        waited += cluster.rank_stats().iter().map(|s| s.wait_seconds).sum::<f64>();
        match got.map_err(|e| e.to_string()).and_then(|m| compare(&m, &want, &prog.bases, Agree::Bits)) {
            Ok(()) => {}
            Err(e) => {
                eprintln!("MISMATCH {name} on {ranks} ranks: {e}");
                failures += 1;
            }
        }
    }
    if vm_cluster::rank().expect("rank") == 0 {
        println!(
            "differential: {} programs on {ranks} ranks, {failures} mismatches; {sent} bytes sent, {waited:.4} s waiting",
            programs.len()
        );
        if failures > 0 {
            std::process::exit(1);
        }
    }
}
