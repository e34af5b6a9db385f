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

/// What a command row's records say of the server the project did not
/// build: its command as written, what became of the twins' checks it
/// skips, and how its CPU was read. Every field is absent for a twin's
/// row; one definition for every design's records (rows, comparisons'
/// sides, memory repetitions), flattened into them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin_checks: Option<String>,
    /// From its own cgroup, or from /proc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_accounting: Option<String>,
}
