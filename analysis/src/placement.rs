//! Where a row's processes could run, as the runner read it back from their
//! hosts' /proc (`Cpus_allowed_list` of every thread): one record format for
//! every design's records (rows, blocks, memory repetitions).

use serde::{Deserialize, Serialize};

/// One process role's CPUs as read: every distinct `Cpus_allowed_list` of
/// its threads, and how many processes and threads were read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadCpus {
    /// `server`, `nginx`, `loadgen`.
    pub process: String,
    /// What the scenario asks for (`server_cpus`...); none: the scheduler's.
    pub wanted: Option<String>,
    /// The distinct CPU lists its threads may run on (one when all agree).
    pub read: Vec<String>,
    pub processes: usize,
    pub threads: usize,
}
