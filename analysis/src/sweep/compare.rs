//! Comparisons at equal rates (`compare_at` in `[sweep]`), recomputed from
//! each compared row's `ROW.compare.json` and the loadgen logs it names: per
//! rate, the ratio row / baseline of p50, p99 and p99.9 latency, of achieved
//! 2xx/s and of server CPU per request. A block ran both sides in fresh
//! processes, so blocks are the independent unit: Student's t over the
//! blocks' ln ratios (blocks − 1 degrees of freedom). A block counts only
//! when both of its steps are valid (the client kept its schedule).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::rules::{Rules, Step};
use crate::paired::stats::{t_ratio, RatioCi};

/// One compared row at one rate.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub row: String,
    pub label: String,
    pub against: String,
    pub against_label: String,
    /// The target whose max rate the rate is a share of.
    pub target: String,
    pub base_max_rate: f64,
    /// True when `base_max_rate` is the baseline's highest passing step
    /// only (its sweep never got past the target, or met the client limit).
    pub base_max_is_lower_bound: bool,
    /// Percent of `base_max_rate`, and the rate it made.
    pub pct: f64,
    pub rate: f64,
    /// Blocks planned, and those with both steps valid.
    pub blocks_planned: u32,
    pub blocks: usize,
    /// Ratios row / baseline with their 95 % intervals over blocks (none
    /// with fewer than two valid blocks).
    pub p50: Option<RatioCi>,
    pub p99: Option<RatioCi>,
    pub p999: Option<RatioCi>,
    pub achieved: Option<RatioCi>,
    pub cpu_per_request: Option<RatioCi>,
    /// Medians over valid blocks of each side's p99 (µs), for orientation.
    pub row_p99_us: Option<f64>,
    pub base_p99_us: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Index {
    row: String,
    label: String,
    against: String,
    against_label: String,
    target: Rules,
    base_max_rate: f64,
    #[serde(default)]
    base_max_is_lower_bound: bool,
    blocks: u32,
    steps: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    pct: f64,
    block: u32,
    side: String,
    log: String,
    rate: Option<f64>,
    loadgen_busy: Option<f64>,
    server_cpu_s: Option<f64>,
}

/// Every `ROW.compare.json` in `dir`, a comparison per row and rate.
pub fn build(dir: &Path) -> anyhow::Result<Vec<Comparison>> {
    let files = super::files_ending(dir, ".compare.json");
    let mut out = Vec::new();
    for f in files {
        let ix: Index = serde_json::from_slice(&std::fs::read(&f)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        out.extend(of_index(dir, &ix)?);
    }
    Ok(out)
}

/// Both sides' steps of each block, by percentage.
type Blocks = BTreeMap<u64, BTreeMap<u32, (Option<Step>, Option<Step>)>>;

fn of_index(dir: &Path, ix: &Index) -> anyhow::Result<Vec<Comparison>> {
    let mut by_pct: Blocks = BTreeMap::new();
    for e in &ix.steps {
        let rate = e
            .rate
            .ok_or_else(|| anyhow::anyhow!("{}: a comparison step without a rate", e.log))?;
        let step = super::step_of(&dir.join(&e.log), rate, e.loadgen_busy, e.server_cpu_s)?;
        let slot = by_pct
            .entry(e.pct.to_bits())
            .or_default()
            .entry(e.block)
            .or_default();
        match e.side.as_str() {
            "row" => slot.0 = Some(step),
            "base" => slot.1 = Some(step),
            other => anyhow::bail!("{}: unknown side {other:?}", e.log),
        }
    }
    Ok(by_pct
        .into_iter()
        .map(|(pct, blocks)| {
            let pairs: Vec<(Step, Step)> = blocks
                .into_values()
                .filter_map(|(r, b)| Some((r?, b?)))
                .filter(|(r, b)| ix.target.valid(r) && ix.target.valid(b))
                .collect();
            figures(ix, f64::from_bits(pct), &pairs)
        })
        .collect())
}

fn figures(ix: &Index, pct: f64, pairs: &[(Step, Step)]) -> Comparison {
    let ratio = |f: fn(&Step) -> Option<f64>| {
        let logs: Vec<f64> = pairs
            .iter()
            .filter_map(|(r, b)| Some((f(r)? / f(b)?).ln()))
            .filter(|x| x.is_finite())
            .collect();
        (logs.len() == pairs.len())
            .then(|| t_ratio(&logs))
            .flatten()
    };
    let median = |xs: Vec<f64>| crate::stats::describe(&xs).map(|d| d.median);
    Comparison {
        row: ix.row.clone(),
        label: ix.label.clone(),
        against: ix.against.clone(),
        against_label: ix.against_label.clone(),
        target: ix.target.slo.to_string(),
        base_max_rate: ix.base_max_rate,
        base_max_is_lower_bound: ix.base_max_is_lower_bound,
        pct,
        rate: ix.base_max_rate * pct / 100.0,
        blocks_planned: ix.blocks,
        blocks: pairs.len(),
        p50: ratio(|s| Some(s.p50_us)),
        p99: ratio(|s| Some(s.p99_us)),
        p999: ratio(|s| Some(s.p999_us)),
        achieved: ratio(|s| Some(s.achieved)),
        cpu_per_request: ratio(|s| s.server_cpu_us),
        row_p99_us: median(pairs.iter().map(|(r, _)| r.p99_us).collect()),
        base_p99_us: median(pairs.iter().map(|(_, b)| b.p99_us).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(p99_us: f64, client_lateness_p99_us: f64) -> Step {
        Step {
            rate: 1000.0,
            achieved: 1000.0,
            p50_us: p99_us / 4.0,
            p90_us: p99_us / 2.0,
            p99_us,
            p999_us: p99_us * 2.0,
            max_us: p99_us * 3.0,
            ok: 10_000,
            errors: 0,
            client_lateness_p50_us: 5.0,
            client_lateness_p99_us,
            send_lateness_p99_us: client_lateness_p99_us,
            loadgen_busy: Some(0.3),
            server_cpu_us: Some(7.0),
        }
    }

    /// Worked by hand: p99 ratios 2, 2 and 3 over three valid blocks give
    /// ln ratios with mean (2 ln 2 + ln 3) / 3, so the ratio is 12^(1/3) =
    /// 2.2894; their sd is 0.2341, t(0.975, 2) = 4.3027, so the interval is
    /// exp(mean ± 4.3027 · 0.2341 / √3) = 1.2799-4.0952. A fourth block
    /// whose baseline step was late (invalid) is left out.
    #[test]
    fn ratios_are_t_intervals_over_valid_blocks() {
        let ix = Index {
            row: "ntex".into(),
            label: "ntex".into(),
            against: "actix".into(),
            against_label: "actix".into(),
            target: Rules::for_slo("p99 <= 1ms".parse().unwrap()),
            base_max_rate: 2000.0,
            base_max_is_lower_bound: false,
            blocks: 4,
            steps: Vec::new(),
        };
        let pairs = vec![
            (step(200.0, 40.0), step(100.0, 40.0)),
            (step(400.0, 40.0), step(200.0, 40.0)),
            (step(300.0, 40.0), step(100.0, 40.0)),
            (step(100.0, 40.0), step(900.0, 5_000.0)),
        ];
        let valid: Vec<(Step, Step)> = pairs
            .into_iter()
            .filter(|(r, b)| ix.target.valid(r) && ix.target.valid(b))
            .collect();
        let c = figures(&ix, 50.0, &valid);
        assert_eq!((c.blocks, c.blocks_planned, c.rate), (3, 4, 1000.0));
        let p99 = c.p99.unwrap();
        assert!((p99.ratio - 12f64.cbrt()).abs() < 1e-9, "{p99:?}");
        assert!(
            (p99.lo - 1.2799).abs() < 1e-3 && (p99.hi - 4.0952).abs() < 1e-3,
            "{p99:?}"
        );
        // The other percentiles scale alike here; 2xx/s and CPU are equal.
        assert!((c.p999.unwrap().ratio - p99.ratio).abs() < 1e-9);
        let same = c.achieved.unwrap();
        assert!((same.ratio - 1.0).abs() < 1e-12 && (same.hi - same.lo).abs() < 1e-12);
        assert_eq!(c.row_p99_us, Some(300.0));
        // One valid block gives no interval.
        assert!(figures(&ix, 50.0, &valid[..1]).p99.is_none());
    }
}
