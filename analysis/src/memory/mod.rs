//! Memory rows (`kind = "memory"`): a server's resident memory idle, with N
//! connections held open (`loadgen --hold`), after they all closed, and what
//! the server's own reclaim line (`alloc-reclaim`) said.
//!
//! Layout of a memory table directory (`table.toml` says `kind = "memory"`):
//! one [`MemoryRecord`] per row repetition in `ROW[.repN].memory.json`,
//! written by the runner; beside it `ROW[.repN].hold.jsonl`, loadgen's two
//! hold records.

pub mod report;

use serde::{Deserialize, Serialize};

/// One reading of the server's memory, KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// Resident set size (VmRSS in /proc/PID/status).
    pub rss_kib: u64,
    /// Proportional set size (/proc/PID/smaps_rollup), when readable.
    pub pss_kib: Option<u64>,
    /// Milliseconds since the server's start-up line.
    pub at_ms: u64,
}

/// What the server printed when it reclaimed (`alloc-reclaim`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reclaim {
    pub call: String,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub took_us: u64,
}

impl Reclaim {
    /// Reads `<bin> reclaim allocator=… call=… rss_before_kib=… rss_after_kib=… took_us=…`.
    pub fn parse(line: &str) -> Option<Reclaim> {
        if !line.contains(" reclaim ") {
            return None;
        }
        let get = |key: &str| {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        };
        Some(Reclaim {
            call: get("call")?.to_string(),
            rss_before_kib: get("rss_before_kib")?.parse().ok()?,
            rss_after_kib: get("rss_after_kib")?.parse().ok()?,
            took_us: get("took_us")?.parse().ok()?,
        })
    }
}

/// Everything measured in one memory row repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub scenario: String,
    pub repetition: u32,
    /// `actix-server` or `ntex-server`.
    pub server: String,
    /// From the start-up line: `glibc`, `snmalloc`, `mimalloc`, `jemalloc`.
    pub allocator: String,
    /// The build has `alloc-reclaim`.
    pub reclaim_feature: bool,
    pub workers: Option<u32>,
    pub startup_line: String,
    /// Connections asked for.
    pub connections: u64,
    /// After start and verification, before any connection is held.
    pub idle: Sample,
    /// While every connection is held (after the settle time).
    pub held: Sample,
    /// The highest RSS seen while connections were held.
    pub held_peak_rss_kib: u64,
    /// The settle time after loadgen closed every connection.
    pub after: Sample,
    /// loadgen's `hold_summary` record.
    pub hold: Option<loadgen::HoldRecord>,
    /// The server's reclaim lines during this repetition.
    pub reclaims: Vec<Reclaim>,
    /// Where the server (and nginx) ran once it answered, and loadgen once
    /// it held its connections, read from /proc (none before 2026-11-27).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<crate::placement::ReadCpus>,
    /// A command row's command, checks and CPU source (none for a twin's).
    #[serde(flatten)]
    pub command: crate::placement::CommandFacts,
    pub error: Option<String>,
}

impl MemoryRecord {
    /// KiB each held connection added: (held - idle) / established.
    pub fn kib_per_connection(&self) -> Option<f64> {
        let n = self.hold.as_ref()?.established;
        (n > 0).then(|| (self.held.rss_kib as f64 - self.idle.rss_kib as f64) / n as f64)
    }
}

/// `ROW[.repN].memory.json` for a row repetition.
pub fn file_name(row: &str, repetition: u32, repetitions: u32) -> String {
    if repetitions > 1 {
        format!("{row}.rep{repetition}.memory.json")
    } else {
        format!("{row}.memory.json")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_servers_reclaim_line() {
        let l = "actix-server reclaim allocator=glibc call=malloc_trim(0) rss_before_kib=104712 rss_after_kib=3624 took_us=13665";
        let r = Reclaim::parse(l).unwrap();
        assert_eq!(r.call, "malloc_trim(0)");
        assert_eq!(
            (r.rss_before_kib, r.rss_after_kib, r.took_us),
            (104712, 3624, 13665)
        );
        assert!(Reclaim::parse("actix-server listening addr=127.0.0.1:1").is_none());
        assert!(Reclaim::parse("x reclaim call=y rss_before_kib=?").is_none());
    }
}
