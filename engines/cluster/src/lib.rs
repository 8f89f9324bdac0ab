//! # vm-cluster: the cluster manager (VEM)
//!
//! Runs one unchanged program on many machines over MPI, the way DistNumPy did: start it with
//! `mpirun -n N ./app` and a stack whose top is `cluster` (`["cluster", "node", "cpu"]`).
//!
//! - **SPMD.** Rank 0 runs the program. On every other rank, building the stack (the `vm_init`
//!   path) enters the serving loop: it executes the batches rank 0 broadcasts, session after
//!   session (each `vm_init` .. `vm_shutdown` of rank 0 is one; the serving ranks keep the stack
//!   of their first), and when rank 0's process exits (an `atexit` hook broadcasts the end of the
//!   job, closing a session left open) they shut down, finalise MPI and exit with status 0. If
//!   rank 0 dies, `mpirun` aborts the job with its message. With one rank the cluster behaves
//!   like the node manager.
//! - **Distribution** ([`dist`]): each base is cut into contiguous blocks of its flat index
//!   space, one per rank; every rank knows every block, so only the batch is broadcast.
//! - **Owner computes** ([`split`], [`plan`]): each rank runs, through its own child stack, the
//!   part of each instruction whose output it owns, with views rewritten into views of its
//!   blocks. Input elements owned elsewhere are the only ones sent, by non-blocking
//!   point-to-point messages. Each rank schedules its part of a whole batch at once ([`exec`]):
//!   its local work reaches the child in as few calls as the messages allow (so the child's
//!   kernel fusion still works), messages are posted as early as their data is ready, and
//!   local work runs while they travel; the setting `overlap = false` waits for every message
//!   in flight before each child call, and `profile = true` prints every rank's child calls,
//!   traffic, time in batches and time waiting at shutdown.
//! - **Fusion across ranks** ([`fuse`]): a run of element-wise instructions the child would
//!   fuse is planned as a whole, split once at the block boundaries of all its operands, so
//!   each rank's child still gets one kernel per box and contracts the run's temporaries
//!   (`fuse = false` plans instruction by instruction).
//! - **Exactness**: every result is bit for bit the reference engine's when the ranks run it.
//!   Reductions (same-type, input disjoint from the output) and scans along any axis are
//!   pipelines: each rank works on the input it owns and continues from the partial results
//!   just before it along the axis (one running value per output element travels), combining in
//!   the reference order. Over a child that reassociates floating-point reductions itself
//!   ([`vm_runtime::ReductionOrder`]; cpu, opencl), and for integers, each rank reduces its part at
//!   once and folds the carry in afterwards: the cluster is as exact as its child. Logical reductions and reductions whose output overlaps their input
//!   fetch whole rows to the output's owner. Range and random are pure functions of the global
//!   position. Gather, scatter and extension methods (matmul) run on rank 0 with their operands
//!   fetched (correct, not scalable). SYNC moves only the synced view to rank 0.
//!
//! ## Measuring
//!
//! Build the benchmark harness with MPI and run it under `mpirun`; every rank runs one cpu
//! thread, and the settings go through the environment (all ranks read it):
//!
//! ```sh
//! export CARGO_TARGET_DIR=target
//! cargo build --release -p vm-bench --features vm-bridge-c/mpi
//! VM_CPU_THREADS=1 VM_CLUSTER_PROFILE=true VM_CLUSTER_OVERLAP=true \
//!   mpirun -n 2 --oversubscribe target/release/vm-bench -s cluster --no-eager --no-hand \
//!   --no-numpy --no-c -q -b heat_equation --size 1000*1000*50 --reps 5 --warmup 1
//! ```
//!
//! `VM_CLUSTER_OVERLAP=false` measures without latency hiding; `-n 1` gives the baseline;
//! `VM_PROFILE=1` adds each rank's cpu kernel statistics. Pass
//! `GLIBC_TUNABLES=glibc.malloc.trim_threshold=4294967295:glibc.malloc.mmap_threshold=4294967295`
//! with `mpirun -x GLIBC_TUNABLES` (without it every fresh temporary of the cpu engine is zeroed
//! on newly faulted pages, which makes timings vary twofold from run to run).
//!
//! Medians of 11 after 1 warm-up on a 2-core VM (AMD EPYC, shared memory bus), one cpu thread
//! per rank, all from one run (waiting: share of rank 0's / rank 1's batch time):
//!
//! | benchmark | 1 rank | 2 ranks | 2 ranks, no latency hiding | 2 ranks, planned one by one |
//! |---|---|---|---|---|
//! | `heat_equation 1000*1000*50` | 41.6 ms | 39.6 ms (waiting 7 % / 23 %) | 53.1 ms (41 % / 43 %) | 55.6 ms |
//! | `shallow_water 1000*1000*10` | 152 ms | 110 ms (24 % / 25 %) | 114 ms (25 % / 25 %) | 283 ms |
//!
//! Two-rank timings of the heat equation vary from run to run on this VM (the fastest
//! repetition took 31.0 ms; one rank's, 39.3 ms). Planning runs of element-wise instructions
//! together ([`fuse`]) is what makes two ranks pay: instruction by instruction, the shifted
//! stencil views cut every instruction at other rows, so each rank's child formed twice the
//! kernels and contracted few temporaries. Now each rank's child fuses its bulk of a step into
//! one kernel, contracts its temporaries, and reduces `delta` inside it, and moves 32 MB per
//! heat step (`VM_PROFILE=1`: 9.6 GB over 300 steps on each rank), half of the 64 MB one rank
//! moves. What is left on the heat equation is the memory bus the two processes share (the
//! cpu engine itself gains 1.6x from a second thread on this machine) and the halo exchange
//! each step waits for. `shallow_water`'s halos depend on values computed within the same
//! step, so its ranks wait for each other several times per step.
//!
//! The MPI transport needs the cargo feature `mpi` (it links libmpi); without it the crate
//! builds, all the logic is usable with [`local_cluster`] (ranks as threads), and the `cluster`
//! implementation reports that MPI is missing.

pub mod cluster;
pub mod codec;
pub mod dist;
pub mod exec;
pub mod fuse;
#[cfg(feature = "mpi")]
pub mod mpi_transport;
pub mod pack;
pub mod plan;
pub mod split;
pub mod transport;

pub use cluster::{Cluster, Options, local_cluster, local_cluster_with, profile_report, serve_job, serve_with};
pub use exec::Stats;
pub use transport::{LocalTransport, Transport};
use vm_ir::{Error, Result};
use vm_runtime::component::Settings;
use vm_runtime::{Component, Implementation};

/// Why the `cluster` component cannot be built without the `mpi` feature.
pub const NO_MPI: &str = "the cluster manager needs MPI: build with --features mpi (vm-cluster's cargo feature, \
     which links libmpi through rsmpi; needs OpenMPI or MPICH and libclang) and start the program with mpirun";

/// Joins the MPI job this process belongs to (initialising MPI once per process) with the
/// default [`Options`]; see [`start_with`].
#[cfg(feature = "mpi")]
pub fn start(child: Box<dyn Component>) -> Result<Option<Cluster<mpi_transport::MpiTransport>>> {
    start_with(child, Options::default())
}

/// Joins the MPI job this process belongs to (initialising MPI once per process). On rank 0
/// returns a cluster component (a session) over `child`; rank 0 may open any number of sessions,
/// one after the other. On every other rank serves every session of rank 0 on `child` until
/// rank 0's process exits, then returns `None`: the caller should then exit.
///
/// This is the entry point for the C bridge: `vm_init` building a stack whose top is `cluster`
/// gets this behaviour from the `cluster` constructor, which on ranks other than 0 never returns
/// (it exits the process with status 0 after serving).
#[cfg(feature = "mpi")]
pub fn start_with(child: Box<dyn Component>, options: Options) -> Result<Option<Cluster<mpi_transport::MpiTransport>>> {
    let transport = mpi_transport::MpiTransport::new()?;
    if transport.rank() == 0 {
        Ok(Some(Cluster::new(transport, child).with_options(options)))
    } else {
        serve_job(transport, child, options)?;
        Ok(None)
    }
}

/// Without the `mpi` feature there is no job to join: always [`NO_MPI`].
#[cfg(not(feature = "mpi"))]
pub fn start(child: Box<dyn Component>) -> Result<Option<Cluster<LocalTransport>>> {
    start_with(child, Options::default())
}

/// Without the `mpi` feature there is no job to join: always [`NO_MPI`].
#[cfg(not(feature = "mpi"))]
pub fn start_with(child: Box<dyn Component>, options: Options) -> Result<Option<Cluster<LocalTransport>>> {
    drop((child, options));
    Err(Error::Device(NO_MPI.into()))
}

/// This process's MPI rank (initialising MPI if needed); [`NO_MPI`] without the feature.
pub fn rank() -> Result<usize> {
    #[cfg(feature = "mpi")]
    return mpi_transport::init().map(|(rank, _)| rank);
    #[cfg(not(feature = "mpi"))]
    Err(Error::Device(NO_MPI.into()))
}

fn construct(settings: &Settings, child: Option<Box<dyn Component>>) -> Result<Box<dyn Component>> {
    let child = child.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "the cluster manager `{}` needs a component below it in the stack (e.g. node)",
            settings.component
        ))
    })?;
    let options = Options::from_settings(settings)?;
    match start_with(child, options) {
        Ok(Some(cluster)) => Ok(Box::new(cluster.with_settings(settings))),
        Ok(None) => std::process::exit(0),
        Err(e) => Err(e),
    }
}

/// The `cluster` implementation, for the stack builder's registry.
pub const IMPLEMENTATION: Implementation = Implementation {
    name: "cluster",
    summary: "cluster manager: distributes every base over the MPI ranks in blocks; owner computes",
    needs_child: true,
    settings: Options::SPECS,
    construct,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "mpi"))]
    #[test]
    fn without_the_feature_the_constructor_says_what_to_do() {
        let child: Box<dyn Component> = Box::new(vm_interp::Interp::default());
        let e = (IMPLEMENTATION.construct)(&Settings::from_pairs("cluster", &[]), Some(child)).err().unwrap();
        assert!(matches!(e, Error::Device(_)));
        assert!(e.to_string().contains("--features mpi"), "{e}");
        assert!(rank().is_err());
    }

    #[test]
    fn the_constructor_needs_a_child() {
        let e = (IMPLEMENTATION.construct)(&Settings::from_pairs("cluster", &[]), None).err().unwrap();
        assert!(e.to_string().contains("needs a component below it"), "{e}");
    }
}
