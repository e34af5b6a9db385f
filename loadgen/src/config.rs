//! A validated run configuration, built by the CLI or by tests.

use std::time::Duration;

use crate::gate::Gate;
use crate::request::Target;

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Each connection sends its next request (or batch of `pipeline`
    /// requests) as soon as the previous one is answered.
    Closed { pipeline: usize },
    /// `rate` requests per second in total, each on its own schedule; latency
    /// counts from the intended send time (coordinated omission corrected).
    Open { rate: f64 },
}

/// Scheduling policy of the worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sched {
    /// SCHED_BATCH: a worker's wake-ups do not preempt the server, so a
    /// server sharing a CPU with loadgen answers whole batches of requests
    /// per turn instead of being interrupted for each response.
    Batch,
    /// The default policy (SCHED_OTHER), as wrk and oha run.
    Normal,
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub target: Target,
    pub connections: usize,
    pub threads: usize,
    pub model: Model,
    /// Measured duration (after warm-up); `None` runs until `requests`.
    pub duration: Option<Duration>,
    /// Total requests to send (warm-up included); `None` runs for `duration`.
    pub requests: Option<u64>,
    /// Load runs during the warm-up but is left out of the summary. Rounded
    /// up to whole intervals.
    pub warmup: Duration,
    pub interval: Duration,
    /// A request outstanding longer than this is a timeout error.
    pub timeout: Duration,
    /// Responses have no body (HEAD requests).
    pub head_only: bool,
    /// Tag for every record.
    pub shard: Option<String>,
    pub sched: Sched,
    /// Open model: wake this long before a due send and spin until it is
    /// due (`--spin-before`; zero: wake at the due time).
    pub spin_before: Duration,
    /// Wall-clock moment to start the load at (`--start-at`): a barrier that
    /// lets several loadgen processes share interval boundaries.
    pub start_at: Option<std::time::SystemTime>,
    /// Closed model: send only in one half of every turn period
    /// (`--active-half`, `--turn`; see [`crate::gate`]).
    pub gate: Option<Gate>,
    /// Connection churn (`--requests-per-connection`): each connection
    /// closes after this many answers and a new one takes its place.
    pub requests_per_connection: Option<u64>,
}

impl Config {
    /// A closed-model run of `duration` with defaults for the rest.
    pub fn closed(target: Target, connections: usize, duration: Duration) -> Config {
        Config {
            target,
            connections,
            threads: 1,
            model: Model::Closed { pipeline: 1 },
            duration: Some(duration),
            requests: None,
            warmup: Duration::ZERO,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            head_only: false,
            shard: None,
            sched: Sched::Batch,
            spin_before: Duration::ZERO,
            start_at: None,
            gate: None,
            requests_per_connection: None,
        }
    }

    /// Warm-up intervals: the warm-up rounded up to whole intervals.
    pub fn warmup_intervals(&self) -> u64 {
        let i = self.interval.as_nanos();
        self.warmup.as_nanos().div_ceil(i) as u64
    }

    /// When load stops, from the start: warm-up plus duration.
    pub fn total_duration(&self) -> Option<Duration> {
        self.duration
            .map(|d| self.interval * self.warmup_intervals() as u32 + d)
    }
}
