//! Slow clients beside a paired row's load (`slow_clients` rows): what
//! every block's `block-NN-xy.row.slow.jsonl` (loadgen `--slowloris`)
//! says, summed over the blocks of a comparison.

use std::collections::BTreeMap;

use loadgen::SlowRecord;

/// A comparison's slow clients over its blocks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SlowFigures {
    /// Slow connections kept open, and how often each sent a byte (ms).
    pub connections: u64,
    pub every_ms: f64,
    /// Blocks with a slow-client log.
    pub blocks: usize,
    /// Slow connections the server ended, per block (mean).
    pub ended_per_block: f64,
    /// What the server sent before ending them (a status, `none`), summed.
    pub answered: BTreeMap<String, u64>,
    /// Median over blocks of each block's median lifetime of an ended
    /// connection (ms), and the lowest p10 and highest p90 of any block.
    pub lifetime_p50_ms: Option<u64>,
    pub lifetime_p10_ms: Option<u64>,
    pub lifetime_p90_ms: Option<u64>,
    /// Slow connections open at the end of a block (mean).
    pub open_at_end: f64,
    /// Connects that failed, summed.
    pub connect_errors: u64,
}

/// The summary of `records` (one per block); `None` when there are none.
pub fn figures(records: &[SlowRecord]) -> Option<SlowFigures> {
    let first = records.first()?;
    let n = records.len() as f64;
    let mut answered = BTreeMap::new();
    for r in records {
        for (k, v) in &r.answered {
            *answered.entry(k.clone()).or_default() += v;
        }
    }
    let mut p50: Vec<u64> = records
        .iter()
        .filter_map(|r| r.lifetime_ms.map(|l| l.p50))
        .collect();
    p50.sort_unstable();
    let lifetime_p50_ms = (!p50.is_empty()).then(|| p50[p50.len() / 2]);
    Some(SlowFigures {
        connections: first.connections,
        every_ms: first.every_ms,
        blocks: records.len(),
        ended_per_block: records
            .iter()
            .map(|r| r.closed_by_server as f64)
            .sum::<f64>()
            / n,
        answered,
        lifetime_p50_ms,
        lifetime_p10_ms: records
            .iter()
            .filter_map(|r| r.lifetime_ms.map(|l| l.p10))
            .min(),
        lifetime_p90_ms: records
            .iter()
            .filter_map(|r| r.lifetime_ms.map(|l| l.p90))
            .max(),
        open_at_end: records.iter().map(|r| r.open_at_end as f64).sum::<f64>() / n,
        connect_errors: records.iter().map(|r| r.connect_errors).sum(),
    })
}

/// The slow-client record of a `--slowloris` log's text.
pub fn record_of(text: &str) -> Option<SlowRecord> {
    text.lines()
        .find_map(|l| match serde_json::from_str::<loadgen::Record>(l) {
            Ok(loadgen::Record::SlowSummary(s)) => Some(s),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgen::record::SlowLifetime;

    fn rec(ended: u64, p10: u64, p50: u64, p90: u64, status: &str) -> SlowRecord {
        SlowRecord {
            connections: 1000,
            every_ms: 1000.0,
            closed_by_server: ended,
            answered: [(status.to_string(), ended)].into(),
            lifetime_ms: Some(SlowLifetime {
                p10,
                p50,
                p90,
                max: p90 + 10,
            }),
            open_at_end: 1000,
            ..SlowRecord::default()
        }
    }

    #[test]
    fn sums_over_blocks_worked_by_hand() {
        let f = figures(&[
            rec(1000, 4900, 5000, 5100, "408"),
            rec(2000, 4800, 5200, 5300, "408"),
            rec(0, 0, 0, 0, "none"),
        ])
        .unwrap();
        assert_eq!(f.blocks, 3);
        assert_eq!(f.ended_per_block, 1000.0);
        assert_eq!(f.answered["408"], 3000);
        assert_eq!(f.answered["none"], 0);
        // Block medians 0, 5000, 5200: the middle one.
        assert_eq!(f.lifetime_p50_ms, Some(5000));
        assert_eq!(
            (f.lifetime_p10_ms, f.lifetime_p90_ms),
            (Some(0), Some(5300))
        );
        assert!(figures(&[]).is_none());
    }

    #[test]
    fn reads_the_record_from_a_log() {
        let line =
            serde_json::to_string(&loadgen::Record::SlowSummary(rec(5, 1, 2, 3, "408"))).unwrap();
        assert_eq!(record_of(&format!("{line}\n")).unwrap().closed_by_server, 5);
        assert!(record_of("{}\n").is_none());
    }
}
