//! # vm-cluster: the cluster manager (VEM)
//!
//! Runs one unchanged program on many machines over MPI, the way DistNumPy did: start it with
//! `mpirun -n N ./app` and a stack whose top is `cluster` (`["cluster", "node", "cpu"]`).
//!
//! - **SPMD.** Rank 0 runs the program. On every other rank, building the stack (the `vm_init`
//!   path) enters the serving loop: it executes the batches rank 0 broadcasts and, when rank 0
//!   shuts the stack down, finalises MPI and exits the process with status 0. If rank 0 dies,
//!   `mpirun` aborts the job. With one rank the cluster behaves like the node manager.
//! - **Distribution** ([`dist`]): each base is cut into contiguous blocks of its flat index
//!   space, one per rank; every rank knows every block, so only the batch is broadcast.
//! - **Owner computes** ([`split`], [`plan`]): each rank runs, through its own child stack, the
//!   part of each instruction whose output it owns, with views rewritten into views of its
//!   blocks. Input elements owned elsewhere are the only ones sent, by non-blocking
//!   point-to-point messages; local work runs while they travel ([`exec`]).
//! - **Exactness**: reductions fetch whole rows to the output's owner, so they combine in the
//!   reference order; range and random are pure functions of the global position; accumulate,
//!   gather, scatter and extension methods run on rank 0 with their operands fetched (simple and
//!   correct, not scalable). SYNC moves only the synced view to rank 0.
//!
//! The MPI transport needs the cargo feature `mpi` (it links libmpi); without it the crate
//! builds, all the logic is usable with [`local_cluster`] (ranks as threads), and the `cluster`
//! implementation reports that MPI is missing.

pub mod cluster;
pub mod codec;
pub mod dist;
pub mod exec;
#[cfg(feature = "mpi")]
pub mod mpi_transport;
pub mod pack;
pub mod plan;
pub mod split;
pub mod testprog;
pub mod transport;

pub use cluster::{Cluster, local_cluster, serve_with};
pub use exec::Stats;
pub use transport::{LocalTransport, Transport};
use vm_core::component::Settings;
use vm_core::{Component, Error, Implementation, Result};

/// Why the `cluster` component cannot be built without the `mpi` feature.
pub const NO_MPI: &str = "the cluster manager needs MPI: build with --features mpi (vm-cluster's cargo feature, \
     which links libmpi through rsmpi; needs OpenMPI or MPICH and libclang) and start the program with mpirun";

/// Joins the MPI job this process belongs to (initialising MPI once per process). On rank 0
/// returns the cluster component over `child`; on every other rank serves rank 0's batches on
/// `child` until rank 0 shuts down, then returns `None`: the caller should then exit.
///
/// This is the entry point for the C bridge: `vm_init` building a stack whose top is `cluster`
/// gets this behaviour from the `cluster` constructor, which on ranks other than 0 never returns
/// (it exits the process after serving).
#[cfg(feature = "mpi")]
pub fn start(child: Box<dyn Component>) -> Result<Option<Cluster<mpi_transport::MpiTransport>>> {
    let transport = mpi_transport::MpiTransport::new()?;
    if transport.rank() == 0 {
        Ok(Some(Cluster::new(transport, child)))
    } else {
        serve_with(transport, child)?;
        Ok(None)
    }
}

/// Without the `mpi` feature there is no job to join: always [`NO_MPI`].
#[cfg(not(feature = "mpi"))]
pub fn start(child: Box<dyn Component>) -> Result<Option<Cluster<LocalTransport>>> {
    drop(child);
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
    match start(child) {
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
    settings: &[],
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
