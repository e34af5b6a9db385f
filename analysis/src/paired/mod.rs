//! The paired design's data and statistics: a row and the baseline measured
//! at the same time (both stacks loaded at once, "duet"), in blocks whose
//! slot order alternates (AB, BA) at random.
//!
//! Layout of a paired table directory (`table.toml` says `design = "paired"`):
//! one sub-directory per compared row, holding for each block `NN` and slot
//! order `ab` (the row's stack started first) or `ba`:
//!
//! - `block-NN-ab.row.jsonl`, `block-NN-ab.base.jsonl`: the two loadgen logs,
//!   started at one `--start-at` barrier, so interval `i` of one covers the
//!   same wall-clock second as interval `i` of the other;
//! - `block-NN-ab.cpu.jsonl`: one [`CpuSample`] per interval boundary, the
//!   CPU time of both servers read from /proc by the runner.

pub mod answer;
pub mod input;
pub mod report;
pub mod slow;
pub mod stats;

use serde::{Deserialize, Serialize};

/// Both servers' CPU time at one interval boundary of a block: the runner
/// writes one line per boundary, the analysis reads them back. Under
/// `schedule = "alternate"` each side's figure is read at boundary `k` of
/// its own load, one side after the other, and `unix_ms` is the first
/// side's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSample {
    /// Boundary number: `k` = start + k × interval (0 = the loadgens' start).
    pub k: u64,
    /// When it was read, Unix milliseconds.
    pub unix_ms: u64,
    /// CPU time (user + system, all threads) of the row's server, and of
    /// nginx in front of it when there is one, nanoseconds.
    pub row_cpu_ns: u64,
    pub base_cpu_ns: u64,
}

/// Which stack took the first slot (started first, its loadgen spawned first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// The row first.
    Ab,
    /// The baseline first.
    Ba,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Ab => "ab",
            Order::Ba => "ba",
        }
    }
}

/// `block-NN-ab` for block `n` (1-based).
pub fn block_stem(n: u32, order: Order) -> String {
    format!("block-{n:02}-{}", order.as_str())
}
