//! What the readers produce: one run log's intervals, whatever the format.

use std::path::PathBuf;

/// One interval as read from a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// Wall-clock start (jsonl only), for merging shards.
    pub start_unix_ms: Option<u64>,
    pub length_ms: f64,
    /// The interval's throughput count (2xx for loadgen, completed requests
    /// for the original client).
    pub count: u64,
    /// Non-2xx responses and errors, when the format has them.
    pub non_ok: Option<u64>,
    pub errors: Option<u64>,
    /// Marked as warm-up by loadgen.
    pub warmup: bool,
}

impl Interval {
    /// Requests per second: count / measured ms × 1000, as the original.
    pub fn rps(&self) -> f64 {
        self.count as f64 * 1000.0 / self.length_ms
    }
}

/// Latency from one log's summary, microseconds: its percentiles, and its
/// histogram (loadgen's HdrHistogram encoding) when the log has one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub p90: Option<f64>,
    pub p99_9: Option<f64>,
    pub max: Option<f64>,
    pub histogram: Option<String>,
}

/// One log file: one loadgen (or original client) process.
#[derive(Debug, Clone)]
pub struct RunLog {
    pub path: PathBuf,
    /// Row (scenario) name, from the file name.
    pub row: String,
    /// Repetition number, from the file name (1 when absent).
    pub rep: u32,
    /// Shard name, from the file name (empty when absent).
    pub shard: String,
    pub intervals: Vec<Interval>,
    pub latency: Option<Latency>,
}

impl RunLog {
    /// True when the log marks its warm-up intervals itself.
    pub fn marks_warmup(&self) -> bool {
        self.intervals.iter().any(|i| i.warmup)
    }

    /// The measured intervals: without those marked warm-up, or, in a log
    /// that marks none, without the first `skip`.
    pub fn measured(&self, skip: usize) -> Vec<Interval> {
        if self.marks_warmup() {
            self.intervals
                .iter()
                .filter(|i| !i.warmup)
                .cloned()
                .collect()
        } else {
            self.intervals.iter().skip(skip).cloned().collect()
        }
    }
}
