//! From logs to one sample per row: warm-up dropped, shards of one
//! repetition merged interval by interval (counts added), repetitions pooled.

use std::collections::BTreeMap;

use crate::input::Problem;
use crate::model::{Interval, Latency, RunLog};

/// One repetition after its shards were merged and its warm-up dropped.
#[derive(Debug, Clone)]
pub struct Repetition {
    pub rep: u32,
    pub shards: usize,
    /// With several shards: each one's own figure, before the merge.
    pub per_shard: Vec<ShardFigure>,
    pub intervals: Vec<Interval>,
    pub latency: Vec<Latency>,
}

/// One shard of a merged repetition (one load host of a cross-host row).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShardFigure {
    pub shard: String,
    pub repetition: u32,
    /// Mean of its measured intervals' rates (count per second).
    pub rps: f64,
    pub intervals: usize,
}

/// Merges the logs of one row. Problems name the files involved.
pub fn repetitions(logs: &[&RunLog], skip: usize, problems: &mut Vec<Problem>) -> Vec<Repetition> {
    let mut by_rep: BTreeMap<u32, Vec<&RunLog>> = BTreeMap::new();
    for log in logs {
        by_rep.entry(log.rep).or_default().push(log);
    }
    let mut reps = Vec::new();
    for (rep, shards) in by_rep {
        let mut measured = Vec::new();
        let mut per_shard = Vec::new();
        for log in &shards {
            let m = log.measured(skip);
            if m.is_empty() {
                let why = if log.marks_warmup() {
                    "every interval is marked warm-up".to_string()
                } else {
                    format!(
                        "{} intervals, all inside the warm-up (--skip {skip})",
                        log.intervals.len()
                    )
                };
                problems.push(Problem(format!("{}: {why}", log.path.display())));
                continue;
            }
            if shards.len() > 1 {
                let rates: Vec<f64> = m
                    .iter()
                    .map(|i| i.count as f64 * 1000.0 / i.length_ms.max(1e-9))
                    .collect();
                per_shard.push(ShardFigure {
                    shard: log.shard.clone(),
                    repetition: rep,
                    rps: rates.iter().sum::<f64>() / rates.len() as f64,
                    intervals: rates.len(),
                });
            }
            measured.push(m);
        }
        if measured.is_empty() {
            continue;
        }
        let intervals = if measured.len() == 1 {
            measured.pop().expect("one")
        } else {
            merge_shards(&measured)
        };
        if intervals.is_empty() {
            let names: Vec<String> = shards
                .iter()
                .map(|l| l.path.display().to_string())
                .collect();
            problems.push(Problem(format!(
                "{}: shards share no interval",
                names.join(", ")
            )));
            continue;
        }
        reps.push(Repetition {
            rep,
            shards: shards.len(),
            per_shard,
            intervals,
            latency: shards.iter().filter_map(|l| l.latency.clone()).collect(),
        });
    }
    reps
}

/// Adds the counts of matching intervals. With wall-clock starts (jsonl),
/// intervals match when they start in the same interval-length slot; without
/// them (text), by position, as the original study did. Only intervals every
/// shard has are kept: a slot one shard missed would look like a dip.
pub fn merge_shards(shards: &[Vec<Interval>]) -> Vec<Interval> {
    let timed = shards
        .iter()
        .all(|s| s.iter().all(|i| i.start_unix_ms.is_some()));
    let slot_ms = {
        let mut lengths: Vec<f64> = shards.iter().flatten().map(|i| i.length_ms).collect();
        lengths.sort_by(f64::total_cmp);
        lengths[lengths.len() / 2].max(1.0)
    };
    let key = |pos: usize, i: &Interval| -> i64 {
        match (timed, i.start_unix_ms) {
            (true, Some(start)) => (start as f64 / slot_ms).round() as i64,
            _ => pos as i64,
        }
    };
    let mut slots: BTreeMap<i64, (usize, Interval)> = BTreeMap::new();
    for shard in shards {
        for (pos, i) in shard.iter().enumerate() {
            let entry = slots.entry(key(pos, i)).or_insert_with(|| {
                (
                    0,
                    Interval {
                        count: 0,
                        length_ms: 0.0,
                        non_ok: Some(0),
                        errors: Some(0),
                        ..i.clone()
                    },
                )
            });
            entry.0 += 1;
            let m = &mut entry.1;
            m.count += i.count;
            m.length_ms += i.length_ms;
            m.non_ok = m.non_ok.zip(i.non_ok).map(|(a, b)| a + b);
            m.errors = m.errors.zip(i.errors).map(|(a, b)| a + b);
        }
    }
    slots
        .into_values()
        .filter(|(n, _)| *n == shards.len())
        .map(|(n, mut i)| {
            i.length_ms /= n as f64;
            i
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: Option<u64>, ms: f64, count: u64) -> Interval {
        Interval {
            start_unix_ms: start,
            length_ms: ms,
            count,
            non_ok: Some(0),
            errors: Some(1),
            warmup: false,
        }
    }

    #[test]
    fn timed_shards_merge_by_wall_clock_slot() {
        // Shard b started 30 ms later and has one interval more at the front.
        let a = vec![iv(Some(10_000), 1000.0, 10), iv(Some(11_000), 1000.0, 20)];
        let b = vec![
            iv(Some(9_030), 1000.0, 1),
            iv(Some(10_030), 1002.0, 5),
            iv(Some(11_030), 998.0, 7),
        ];
        let m = merge_shards(&[a, b]);
        let got: Vec<_> = m.iter().map(|i| (i.count, i.length_ms, i.errors)).collect();
        assert_eq!(got, [(15, 1001.0, Some(2)), (27, 999.0, Some(2))]);
    }

    #[test]
    fn untimed_shards_merge_by_position() {
        let a = vec![iv(None, 1000.0, 1), iv(None, 1000.0, 2)];
        let b = vec![
            iv(None, 1000.0, 10),
            iv(None, 1000.0, 20),
            iv(None, 1000.0, 30),
        ];
        let m = merge_shards(&[a, b]);
        assert_eq!(m.iter().map(|i| i.count).collect::<Vec<_>>(), [11, 22]);
    }
}
