//! Coverage: how often the paired design's intervals hold the true value,
//! from two committed runs of `scenarios/coverage.toml` (the duet, every
//! comparison repeated as runs) and `scenarios/coverage-alone.toml` (the
//! same controls with each server alone on its core). Written as
//! `coverage.json` by `shootout coverage`; the regression test recomputes it.
//!
//! - An A/A run (a row named `aa…`) covers when its interval over blocks
//!   holds 1.
//! - A control run (a row named `control…`) covers when its interval holds
//!   the control's alone-on-the-core effect (the alone run's ratio, over its
//!   runs when it has several): the effect the control has on a server
//!   that has its core to itself. The alone figure's own uncertainty is not
//!   added, so a control interval has to hold that point.
//! - Amplification = ln(duet ratio) / ln(alone ratio), both over runs, with
//!   a 95 % interval by the delta method (normal approximation; each
//!   standard error recovered from its t interval and degrees of freedom).

use std::path::Path;

use anyhow::{bail, Context};
use serde::Serialize;

use crate::paired::report::PairedRow;
use crate::paired::stats::RatioCi;
use crate::stats::t_quantile;
use crate::Options;

/// Runs and how many of their intervals held the true value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Count {
    pub runs: usize,
    pub covered: usize,
}

/// One control size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Size {
    pub row: String,
    pub label: String,
    pub runs: usize,
    pub covered: usize,
    /// The duet's effect on 2xx/s over its runs, percent, with its 95 % CI.
    pub duet_pct: f64,
    pub duet_ci95_pct: [f64; 2],
    /// The same control with the server alone on its core.
    pub alone_pct: f64,
    pub alone_ci95_pct: [f64; 2],
    pub amplification: f64,
    pub amplification_ci95: [f64; 2],
}

/// `coverage.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    pub aa: Count,
    pub control: Count,
    pub method: String,
    pub sizes: Vec<Size>,
    /// The two run directories it was computed from (their names).
    pub duet_run: String,
    pub alone_run: String,
}

/// The method, as `coverage.json` states it.
pub const METHOD: &str = "95 % intervals: Student's t over each run's block means (blocks - 1 df). A/A covers when its interval holds 1; a control covers when its interval holds the control's effect with the server alone on its core (alternate schedule, over its runs). Amplification: ln(duet ratio) / ln(alone ratio), delta-method 95 % interval.";

fn only_paired_rows(dir: &Path) -> anyhow::Result<Vec<PairedRow>> {
    let (report, problems) = crate::analyse(dir, &Options::default());
    if let Some(p) = problems.first() {
        bail!("{}: {}", dir.display(), p.0);
    }
    let report = report.with_context(|| format!("{}: nothing to analyse", dir.display()))?;
    let [table] = report.paired.as_slice() else {
        bail!("{}: expected one paired table", dir.display());
    };
    Ok(table.rows.clone())
}

/// A row's reported interval and its degrees of freedom: over runs when it
/// has several, else over blocks.
fn reported(r: &PairedRow) -> Option<(RatioCi, f64)> {
    match r.across_runs {
        Some(c) => Some((c, (r.runs.len() - 1) as f64)),
        None => r.rps.map(|m| (m.ci, (m.blocks - 1) as f64)),
    }
}

/// ln of the ratio and its standard error, from a 95 % t interval.
fn log_and_se((ci, df): (RatioCi, f64)) -> (f64, f64) {
    let half = (ci.hi.ln() - ci.lo.ln()) / 2.0;
    (ci.ratio.ln(), half / t_quantile(0.975, df))
}

fn pct(x: f64) -> f64 {
    (x - 1.0) * 100.0
}

/// Coverage of the duet run `duet` against the alone run `alone`.
pub fn coverage(duet: &Path, alone: &Path) -> anyhow::Result<Coverage> {
    let duet_rows = only_paired_rows(duet)?;
    let alone_rows = only_paired_rows(alone)?;
    let mut aa = Count {
        runs: 0,
        covered: 0,
    };
    let mut control = Count {
        runs: 0,
        covered: 0,
    };
    let mut sizes = Vec::new();
    for r in &duet_rows {
        let cis: Vec<RatioCi> = r.runs.iter().filter_map(|x| x.rps.map(|m| m.ci)).collect();
        if r.name.starts_with("aa") {
            aa.runs += cis.len();
            aa.covered += cis.iter().filter(|c| c.contains_one()).count();
        } else if r.name.starts_with("control") {
            let a = alone_rows
                .iter()
                .find(|a| a.name == r.name)
                .with_context(|| format!("{}: no row {}", alone.display(), r.name))?;
            let (a_ci, a_df) = reported(a).with_context(|| format!("{}: no figure", a.name))?;
            let (d_ci, d_df) = reported(r).with_context(|| format!("{}: no figure", r.name))?;
            let truth = a_ci.ratio;
            let covered = cis
                .iter()
                .filter(|c| c.lo <= truth && truth <= c.hi)
                .count();
            control.runs += cis.len();
            control.covered += covered;
            let (d, d_se) = log_and_se((d_ci, d_df));
            let (al, a_se) = log_and_se((a_ci, a_df));
            let amp = d / al;
            let amp_se = amp.abs() * ((d_se / d).powi(2) + (a_se / al).powi(2)).sqrt();
            sizes.push(Size {
                row: r.name.clone(),
                label: r.label.clone(),
                runs: cis.len(),
                covered,
                duet_pct: pct(d_ci.ratio),
                duet_ci95_pct: [pct(d_ci.lo), pct(d_ci.hi)],
                alone_pct: pct(a_ci.ratio),
                alone_ci95_pct: [pct(a_ci.lo), pct(a_ci.hi)],
                amplification: amp,
                amplification_ci95: [amp - 1.96 * amp_se, amp + 1.96 * amp_se],
            });
        }
    }
    let name = |p: &Path| {
        p.file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned())
    };
    Ok(Coverage {
        aa,
        control,
        method: METHOD.into(),
        sizes,
        duet_run: name(duet),
        alone_run: name(alone),
    })
}

/// `coverage.json`'s bytes (pretty JSON and a newline).
pub fn to_json(c: &Coverage) -> anyhow::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(c)?;
    bytes.push(b'\n');
    Ok(bytes)
}
