//! Running compiled kernels: the persistent pool of threads with work stealing ([`pool`]), a
//! kernel's blocks on it ([`exec`]), and consecutive kernels over the same rows run a block of
//! rows at a time ([`rows`], planned by [`groups`]).

pub mod exec;
pub mod groups;
pub mod pool;
pub mod rows;
