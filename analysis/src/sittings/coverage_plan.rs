//! The pre-registered coverage plan of issue 44 (`docs/coverage-plan.md`):
//! from the judged sittings (runs of `scenarios/coverage-sittings.toml`)
//! and the alone reference (a run of
//! `scenarios/coverage-sittings-alone.toml`), read from their
//! `summary.json`:
//!
//! 1. A/A coverage: every single-run A/A interval holds 1?
//! 2. Agreement: for each comparison, run 1 of every pair of sittings
//!    agrees by `|ln x1 - ln x2| <= 1.96 sqrt(se1² + se2²)`?
//! 3. Controls: every single-run control interval agrees with the
//!    reference's answer over its runs, by the same rule?
//!
//! Each share comes with its count and a Clopper-Pearson 95 % interval.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use statrs::distribution::{Beta, ContinuousCDF};

use crate::stats::t_quantile;

/// The plan's thresholds: a share of at least this, over at least
/// [`MIN_COUNT`] intervals or pairs.
pub const THRESHOLD: f64 = 0.90;
pub const MIN_COUNT: usize = 20;

/// A ratio with its 95 % interval and the standard error of its log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    pub se_log: f64,
}

impl Estimate {
    /// From an interval by Student's t on `df` degrees of freedom.
    pub fn from_ci(ratio: f64, lo: f64, hi: f64, df: f64) -> Estimate {
        let se_log = (hi.ln() - lo.ln()) / 2.0 / t_quantile(0.975, df);
        Estimate {
            ratio,
            lo,
            hi,
            se_log,
        }
    }

    /// The plan's agreement rule.
    pub fn agrees(&self, other: &Estimate) -> bool {
        (self.ratio.ln() - other.ratio.ln()).abs()
            <= 1.96 * (self.se_log.powi(2) + other.se_log.powi(2)).sqrt()
    }
}

/// k of n, the share and its Clopper-Pearson 95 % interval, and whether
/// it meets the plan: share >= 90 % over at least `min_count` (20 for the
/// A/A intervals and the pairs; the plan sets no count for the controls).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Share {
    pub k: usize,
    pub n: usize,
    pub share: f64,
    pub lo: f64,
    pub hi: f64,
    pub min_count: usize,
    pub meets_plan: bool,
}

impl Share {
    pub fn of(k: usize, n: usize, min_count: usize) -> Share {
        let beta = |a: f64, b: f64, p: f64| Beta::new(a, b).map_or(f64::NAN, |d| d.inverse_cdf(p));
        let (kf, nf) = (k as f64, n as f64);
        let lo = if k == 0 {
            0.0
        } else {
            beta(kf, nf - kf + 1.0, 0.025)
        };
        let hi = if k == n {
            1.0
        } else {
            beta(kf + 1.0, nf - kf, 0.975)
        };
        let share = if n == 0 { f64::NAN } else { kf / nf };
        Share {
            k,
            n,
            share,
            lo,
            hi,
            min_count,
            meets_plan: n >= min_count.max(1) && share >= THRESHOLD,
        }
    }
}

/// One comparison's single-run intervals in one sitting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SittingRow {
    pub sitting: String,
    pub row: String,
    pub aa: bool,
    /// Run 1, 2, 3... in order.
    pub runs: Vec<Estimate>,
}

/// A verdict on one interval or one pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judged {
    pub what: String,
    pub holds: bool,
}

/// What the plan finds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanCoverage {
    /// The plan's page (`docs/coverage-plan.md`, `docs/coverage-plan-2.md`).
    pub plan: String,
    pub sittings: Vec<String>,
    pub reference: String,
    pub reference_estimate: Estimate,
    pub aa: Share,
    pub pairs: Share,
    pub controls: Share,
    pub judged: Vec<Judged>,
}

/// The single-run intervals of every comparison of one sitting.
pub fn sitting_rows(dir: &Path) -> anyhow::Result<Vec<SittingRow>> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let s = summary(dir)?;
    let table = &s["paired"][0];
    let aa_rows: Vec<&str> = table["answers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["aa"] == true)
        .filter_map(|a| a["row"].as_str())
        .collect();
    let mut out = Vec::new();
    for r in table["rows"].as_array().context("no rows")? {
        let row = r["name"].as_str().context("a row without a name")?;
        let runs = r["runs"]
            .as_array()
            .with_context(|| format!("{row}: no runs"))?
            .iter()
            .map(|run| {
                let ci = &run["rps"]["ci"];
                let blocks = run["rps"]["blocks"].as_f64().unwrap_or(0.0);
                let f = |k: &str| ci[k].as_f64().with_context(|| format!("{row}: no {k}"));
                Ok(Estimate::from_ci(
                    f("ratio")?,
                    f("lo")?,
                    f("hi")?,
                    blocks - 1.0,
                ))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        out.push(SittingRow {
            sitting: name.clone(),
            row: row.to_string(),
            aa: aa_rows.contains(&row),
            runs,
        });
    }
    Ok(out)
}

fn summary(dir: &Path) -> anyhow::Result<serde_json::Value> {
    let path = dir.join("summary.json");
    serde_json::from_slice(
        &crate::input::raw::read(&path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("parsing {}", path.display()))
}

/// The reference's answer for `row`: over its runs (t on runs - 1).
pub fn reference(dir: &Path, row: &str) -> anyhow::Result<Estimate> {
    let s = summary(dir)?;
    let r = s["paired"][0]["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["name"] == row)
        .with_context(|| format!("{}: no row {row}", dir.display()))?;
    let ci = &r["across_runs"];
    let runs = r["runs"].as_array().map_or(0, Vec::len) as f64;
    let f = |k: &str| {
        ci[k]
            .as_f64()
            .with_context(|| format!("reference {row}: no across_runs {k}"))
    };
    Ok(Estimate::from_ci(
        f("ratio")?,
        f("lo")?,
        f("hi")?,
        runs - 1.0,
    ))
}

/// Judges the sittings' rows against the reference of `control`.
pub fn judge(
    plan: &str,
    sittings: &[Vec<SittingRow>],
    reference_name: &str,
    reference: Estimate,
    control: &str,
) -> PlanCoverage {
    let mut judged = Vec::new();
    let (mut aa, mut pairs, mut controls) = ((0, 0), (0, 0), (0, 0));
    let mut count = |tally: &mut (usize, usize), what: String, holds: bool| {
        tally.1 += 1;
        tally.0 += usize::from(holds);
        judged.push(Judged { what, holds });
    };
    for rows in sittings {
        for r in rows {
            for (i, e) in r.runs.iter().enumerate() {
                let what = format!("{} {} run {}", r.sitting, r.row, i + 1);
                if r.aa {
                    count(
                        &mut aa,
                        format!("A/A holds 1: {what}"),
                        e.lo <= 1.0 && 1.0 <= e.hi,
                    );
                } else if r.row == control {
                    count(
                        &mut controls,
                        format!("control agrees with the reference: {what}"),
                        e.agrees(&reference),
                    );
                }
            }
        }
    }
    for (i, a) in sittings.iter().enumerate() {
        for b in &sittings[i + 1..] {
            for ra in a {
                let Some(rb) = b.iter().find(|r| r.row == ra.row) else {
                    continue;
                };
                if let (Some(x), Some(y)) = (ra.runs.first(), rb.runs.first()) {
                    count(
                        &mut pairs,
                        format!("{} run 1 agrees: {} and {}", ra.row, ra.sitting, rb.sitting),
                        x.agrees(y),
                    );
                }
            }
        }
    }
    PlanCoverage {
        plan: plan.to_string(),
        sittings: sittings
            .iter()
            .filter_map(|rows| rows.first().map(|r| r.sitting.clone()))
            .collect(),
        reference: reference_name.to_string(),
        reference_estimate: reference,
        aa: Share::of(aa.0, aa.1, MIN_COUNT),
        pairs: Share::of(pairs.0, pairs.1, MIN_COUNT),
        // The plan: "Reported as a share with its count; threshold: at
        // least 90 %" (no minimum count: 5 sittings give 15).
        controls: Share::of(controls.0, controls.1, 1),
        judged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(ratio: f64, half: f64) -> Estimate {
        Estimate::from_ci(ratio, ratio * (1.0 - half), ratio * (1.0 + half), 7.0)
    }

    fn sitting(name: &str, aa: [f64; 2], control: f64) -> Vec<SittingRow> {
        let row = |row: &str, is_aa: bool, x: f64| SittingRow {
            sitting: name.into(),
            row: row.into(),
            aa: is_aa,
            runs: vec![est(x, 0.02), est(1.0, 0.02), est(1.0, 0.02)],
        };
        vec![
            row("aa-1", true, aa[0]),
            row("aa-2", true, aa[1]),
            row("control-496", false, control),
        ]
    }

    #[test]
    fn shares_count_intervals_pairs_and_controls() {
        let s = vec![
            sitting("s1", [1.0, 1.05], 0.90),
            sitting("s2", [1.0, 1.0], 0.90),
        ];
        let c = judge(
            "docs/coverage-plan.md",
            &s,
            "ref",
            est(0.90, 0.01),
            "control-496",
        );
        // 12 A/A intervals, one (1.05 ± 2 %) misses 1.
        assert_eq!((c.aa.k, c.aa.n), (11, 12));
        // One pair of sittings, three comparisons: aa-2 1.05 vs 1.0 disagrees.
        assert_eq!((c.pairs.k, c.pairs.n), (2, 3));
        // Six control runs: run 1 at 0.90 agrees, runs 2 and 3 at 1.0 do not.
        assert_eq!((c.controls.k, c.controls.n), (2, 6));
        assert!(!c.aa.meets_plan, "12 intervals are fewer than 20");
        assert!(!c.controls.meets_plan, "2 of 6 is under 90 %");
        assert_eq!(c.sittings, ["s1", "s2"]);
    }

    #[test]
    fn clopper_pearson_bounds_hold_the_share_and_meet_the_plan_only_from_20() {
        let s = Share::of(19, 20, MIN_COUNT);
        assert!(s.lo < 0.95 && 0.95 < s.hi && s.meets_plan);
        assert!((s.lo - 0.7513).abs() < 1e-3, "{s:?}");
        assert!(!Share::of(18, 19, MIN_COUNT).meets_plan);
        assert_eq!(Share::of(20, 20, MIN_COUNT).hi, 1.0);
        assert_eq!(Share::of(0, 20, MIN_COUNT).lo, 0.0);
        // The controls' share has no minimum count, only the 90 %.
        assert!(Share::of(14, 15, 1).meets_plan && !Share::of(13, 15, 1).meets_plan);
        assert!(!Share::of(0, 0, 1).meets_plan);
    }

    #[test]
    fn agreement_is_the_rule_of_shootout_history() {
        let a = Estimate::from_ci(0.286, 0.268, 0.306, 7.0);
        let b = Estimate::from_ci(0.268, 0.258, 0.279, 7.0);
        // |z| 1.962 > 1.96 in the committed history: disagree.
        assert!(!a.agrees(&b));
        let c = Estimate::from_ci(0.277, 0.270, 0.284, 7.0);
        assert!(a.agrees(&c) && b.agrees(&c));
    }
}
