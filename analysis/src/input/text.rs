//! Text logs: loadgen's text format and the original study's client lines.
//!
//! An interval is any line with `ms:`; by the original rule its length in ms
//! is the last token before `ms:` and its count the first token after.
//! loadgen adds `2xx=`, `non-2xx=`, `errors=` and `warmup` tokens after that,
//! and a `Summary:` block at the end whose latency line is read. The first
//! line, if it is not an interval, is the original client's header.

use std::path::Path;

use super::Problem;
use crate::model::{Interval, Latency};

pub fn read(
    path: &Path,
    text: &str,
    problems: &mut Vec<Problem>,
) -> Option<(Vec<Interval>, Option<Latency>)> {
    let shown = path.display();
    let mut intervals = Vec::new();
    let mut latency = None;
    let mut in_summary = false;
    let lines: Vec<&str> = text.lines().collect();
    let complete_last = text.ends_with('\n');
    for (n, line) in lines.iter().enumerate() {
        let number = n + 1;
        let is_last = number == lines.len();
        if line.trim().is_empty() {
            continue;
        }
        if line.contains("ms:") {
            match interval(line) {
                Some(i) => intervals.push(i),
                None if is_last && !complete_last => problems.push(Problem(format!(
                    "{shown}:{number}: truncated record ignored"
                ))),
                None => problems.push(Problem(format!(
                    "{shown}:{number}: unreadable interval line: {line}"
                ))),
            }
            continue;
        }
        if line.starts_with("Summary:") {
            in_summary = true;
            continue;
        }
        if in_summary && line.starts_with("  ") {
            if let Some(rest) = line.trim_start().strip_prefix("latency (us):") {
                latency = summary_latency(rest);
            }
            continue;
        }
        if number == 1 {
            continue; // the original client's header line
        }
        problems.push(Problem(format!("{shown}:{number}: not a record: {line}")));
    }
    if intervals.is_empty() {
        problems.push(Problem(format!("{shown}: no interval records")));
        return None;
    }
    Some((intervals, latency))
}

fn interval(line: &str) -> Option<Interval> {
    let (before, after) = line.split_once("ms:")?;
    let length_ms: f64 = before.split_whitespace().last()?.parse().ok()?;
    let mut tokens = after.split_whitespace();
    let count: u64 = tokens.next()?.parse().ok()?;
    if length_ms <= 0.0 || !length_ms.is_finite() {
        return None;
    }
    let mut interval = Interval {
        start_unix_ms: None,
        length_ms,
        count,
        non_ok: None,
        errors: None,
        warmup: false,
    };
    for token in tokens {
        if token == "warmup" {
            interval.warmup = true;
        } else if let Some(v) = token.strip_prefix("non-2xx=") {
            interval.non_ok = v.parse().ok();
        } else if let Some(v) = token.strip_prefix("errors=") {
            interval.errors = v.parse().ok();
        }
    }
    Some(interval)
}

/// `p50 81 p75 101 p90 107 p99 115 p99.9 130 max 140 ...` -> percentiles.
fn summary_latency(rest: &str) -> Option<Latency> {
    let tokens: Vec<&str> = rest.split_whitespace().collect();
    let find = |key: &str| {
        tokens
            .windows(2)
            .find(|w| w[0] == key)
            .and_then(|w| w[1].parse::<f64>().ok())
    };
    Some(Latency {
        p50: find("p50")?,
        p99: find("p99")?,
        p90: find("p90"),
        p99_9: find("p99.9"),
        max: find("max"),
        histogram: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_original_line() {
        let line = "Total requests: 231044. Requests in the last 1000ms: 230877 [1.001s total] [230877 avg. RPS]";
        let i = interval(line).unwrap();
        assert_eq!((i.length_ms, i.count, i.warmup), (1000.0, 230877, false));
        assert_eq!(i.errors, None);
    }

    #[test]
    fn reads_loadgen_extras() {
        let line = "Total requests: 5. Requests in the last 1001ms: 5 [1.001s total] [5 avg. RPS] 2xx=5 non-2xx=2 errors=1 warmup";
        let i = interval(line).unwrap();
        assert_eq!(
            (i.length_ms, i.count, i.non_ok, i.errors, i.warmup),
            (1001.0, 5, Some(2), Some(1), true)
        );
    }
}
