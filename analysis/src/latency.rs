//! A row's latency percentiles from the merged histograms of all its logs.
//!
//! Percentiles cannot be averaged: the p99 of two runs is not the mean of
//! their p99s. loadgen's summary records carry the measured part's latency
//! histogram ([`loadgen::histlog`]); the histograms of every shard and
//! repetition of a row are added and the percentiles taken from the sum.
//! Logs written before histograms existed (and the original's text logs)
//! have only percentiles; a row with any such log gets the mean of its
//! logs' percentiles, marked approximate (`exact = false`).

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::input::merge::Repetition;
use crate::model::Latency;

/// Latency of one row, microseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowLatency {
    pub p50: f64,
    pub p90: Option<f64>,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p99_9: Option<f64>,
    pub max: Option<f64>,
    /// True when every figure comes from the merged histograms.
    pub exact: bool,
    /// Logs that gave latency.
    pub logs: usize,
    /// Responses in the merged histogram (exact rows only).
    pub samples: Option<u64>,
}

/// The row's latency, or none when no log gave any.
pub fn of_row(reps: &[Repetition]) -> Option<RowLatency> {
    let all: Vec<&Latency> = reps.iter().flat_map(|r| &r.latency).collect();
    if all.is_empty() {
        return None;
    }
    Some(merged(&all).unwrap_or_else(|| approximate(&all)))
}

/// Percentiles of the sum of every log's histogram; none when a log has no
/// histogram or one does not decode or add.
pub fn merged(logs: &[&Latency]) -> Option<RowLatency> {
    let mut sum: Option<Histogram<u64>> = None;
    for l in logs {
        let h = loadgen::histlog::decode(l.histogram.as_deref()?).ok()?;
        match sum.as_mut() {
            None => sum = Some(h),
            Some(s) => s.add(&h).ok()?,
        }
    }
    let h = sum?;
    let q = |x: f64| h.value_at_quantile(x) as f64;
    Some(RowLatency {
        p50: q(0.5),
        p90: Some(q(0.9)),
        p99: q(0.99),
        p99_9: Some(q(0.999)),
        max: Some(h.max() as f64),
        exact: true,
        logs: logs.len(),
        samples: Some(h.len()),
    })
}

/// The mean of the logs' percentiles (each only where every log has it).
fn approximate(logs: &[&Latency]) -> RowLatency {
    let mean = |f: &dyn Fn(&Latency) -> Option<f64>| -> Option<f64> {
        let v: Option<Vec<f64>> = logs.iter().map(|l| f(l)).collect();
        v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
    };
    RowLatency {
        p50: mean(&|l| Some(l.p50)).unwrap_or(0.0),
        p90: mean(&|l| l.p90),
        p99: mean(&|l| Some(l.p99)).unwrap_or(0.0),
        p99_9: mean(&|l| l.p99_9),
        max: mean(&|l| l.max),
        exact: false,
        logs: logs.len(),
        samples: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    fn log(values: &[u64]) -> Latency {
        let h = hist(values);
        Latency {
            p50: h.value_at_quantile(0.5) as f64,
            p99: h.value_at_quantile(0.99) as f64,
            histogram: Some(loadgen::histlog::encode(&h)),
            ..Latency::default()
        }
    }

    #[test]
    fn merged_percentiles_equal_one_histogram_of_all_samples() {
        // Two logs of very different shape: the mean of their percentiles
        // would be far off.
        let a: Vec<u64> = (1..=900).map(|i| 100 + i % 50).collect();
        let b: Vec<u64> = (1..=100).map(|i| 5_000 + i * 37).collect();
        let got = merged(&[&log(&a), &log(&b)]).unwrap();
        let all = hist(&[a.clone(), b.clone()].concat());
        let q = |x: f64| all.value_at_quantile(x) as f64;
        assert_eq!(got.p50, q(0.5));
        assert_eq!(got.p90, Some(q(0.9)));
        assert_eq!(got.p99, q(0.99));
        assert_eq!(got.p99_9, Some(q(0.999)));
        assert_eq!(got.max, Some(all.max() as f64));
        assert_eq!(got.samples, Some(1000));
        assert!(got.exact);
        let averaged = (log(&a).p99 + log(&b).p99) / 2.0;
        assert_ne!(got.p99, averaged);
    }

    #[test]
    fn a_log_without_histogram_makes_the_row_approximate() {
        let old = Latency {
            p50: 300.0,
            p99: 900.0,
            ..Latency::default()
        };
        let new = log(&[100, 200, 300]);
        let reps = vec![Repetition {
            rep: 1,
            shards: 2,
            per_shard: vec![],
            intervals: vec![],
            latency: vec![old.clone(), new.clone()],
        }];
        let got = of_row(&reps).unwrap();
        assert!(!got.exact);
        assert_eq!(got.p50, (300.0 + new.p50) / 2.0);
        assert_eq!(got.p90, None);
        assert_eq!(got.logs, 2);
    }
}
