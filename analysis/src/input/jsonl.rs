//! loadgen's jsonl records, read with loadgen's own definition of them.

use std::path::Path;

use loadgen::Record;

use super::Problem;
use crate::model::{Interval, Latency};

/// The latency of a summary record.
pub(crate) fn latency_of(s: loadgen::SummaryRecord) -> Latency {
    let l = &s.latency_us;
    Latency {
        p50: l.p50 as f64,
        p99: l.p99 as f64,
        p90: Some(l.p90 as f64),
        p99_9: Some(l.p99_9 as f64),
        max: Some(l.max as f64),
        histogram: s.histogram,
    }
}

/// The latency of a log's summary record, if it has one.
pub(crate) fn summary_latency(text: &str) -> Option<Latency> {
    text.lines()
        .rev()
        .find_map(|l| match serde_json::from_str::<Record>(l) {
            Ok(Record::Summary(s)) => Some(latency_of(s)),
            _ => None,
        })
}

pub fn read(
    path: &Path,
    text: &str,
    problems: &mut Vec<Problem>,
) -> Option<(Vec<Interval>, Option<Latency>)> {
    let shown = path.display();
    let mut intervals = Vec::new();
    let mut latency = None;
    let lines: Vec<&str> = text.lines().collect();
    for (n, line) in lines.iter().enumerate() {
        let number = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(Record::Interval(r)) => intervals.push(Interval {
                start_unix_ms: Some(r.start_unix_ms),
                length_ms: r.length_ms,
                count: r.ok,
                non_ok: Some(r.non_2xx.total()),
                errors: Some(r.errors.total()),
                warmup: r.warmup,
            }),
            Ok(Record::Summary(s)) => latency = Some(latency_of(s)),
            Ok(Record::Held(_) | Record::HoldSummary(_)) => problems.push(Problem(format!(
                "{shown}:{number}: a --hold record in a throughput log"
            ))),
            Ok(Record::SlowSummary(_)) => problems.push(Problem(format!(
                "{shown}:{number}: a --slowloris record in a throughput log"
            ))),
            Err(_) if number == lines.len() && !text.ends_with('\n') => problems.push(Problem(
                format!("{shown}:{number}: truncated record ignored"),
            )),
            Err(e) => problems.push(Problem(format!(
                "{shown}:{number}: not a loadgen record: {e}"
            ))),
        }
    }
    intervals.retain(|i| i.length_ms > 0.0);
    if intervals.is_empty() {
        problems.push(Problem(format!("{shown}: no interval records")));
        return None;
    }
    Some((intervals, latency))
}
