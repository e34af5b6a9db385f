//! Coverage: how often the paired design's run intervals hold the true
//! value, from a committed run whose comparisons were repeated as runs
//! (`scenarios/coverage*.toml`). Written as `coverage.json` by `shootout
//! coverage`; the regression test recomputes it.
//!
//! - An A/A run (a row named `aa…`) covers when its interval over blocks
//!   holds 1.
//! - A control run (a row named `control…`) covers when its interval holds
//!   the control's effect with the server alone on its core:
//!   - a run whose schedule measures that effect itself (`interleave`,
//!     `alternate`): the mean of the *other* runs' log ratios (leave one
//!     out, so a run is never judged against itself; with 20+ runs the
//!     reference's own error is small beside a run's interval);
//!   - a duet run: the alone run's ratio (over its runs), which must then be
//!     given. The reference's own uncertainty is not added, so a control
//!     interval has to hold that point.
//! - With an alone run given, each control's measured effect (over runs) is
//!   set against it: amplification = ln(measured ratio) / ln(alone ratio),
//!   with a 95 % interval by the delta method (normal approximation; each
//!   standard error recovered from its t interval and degrees of freedom).
//!   An unbiased alone schedule reads about 1; the duet reads less.
//! - The same counts for server CPU per request (`cpu`): in a duet it is the
//!   inverse of 2xx/s (the core splits evenly), in the interleaved schedule
//!   a measurement of its own.
//! - The run-level interval (`runs = 3`, what the results report) is checked
//!   the same way in `run_level`: the runs cut, in order, into disjoint
//!   groups of 3, each group's interval from [`runs_t`]; an A/A group covers
//!   when it holds 1, a control group when it holds the mean log ratio of
//!   the runs outside the group (interleaved and alternate runs only).

use std::path::Path;

use anyhow::{bail, Context};
use serde::Serialize;

use crate::paired::report::{run_logs, Metric, PairedRow, PairedTable, RunFigures};
use crate::paired::stats::{log_and_se, log_ratio_ci, runs_t, RatioCi};
use crate::Options;

/// Runs and how many of their intervals held the true value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Count {
    pub runs: usize,
    pub covered: usize,
}

impl Count {
    fn add(&mut self, other: Count) {
        self.runs += other.runs;
        self.covered += other.covered;
    }
}

/// One control size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Size {
    pub row: String,
    pub label: String,
    pub runs: usize,
    pub covered: usize,
    /// The effect on 2xx/s over the runs, percent, with its 95 % CI.
    pub measured_pct: f64,
    pub measured_ci95_pct: [f64; 2],
    /// The same control in the alone run, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_ci95_pct: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amplification: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amplification_ci95: Option<[f64; 2]>,
    /// Server CPU per request: runs whose interval held its reference.
    pub cpu: Count,
    pub cpu_measured_pct: Option<f64>,
}

/// `coverage.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    pub aa: Count,
    pub control: Count,
    pub method: String,
    /// How the run loaded its stacks (`duet`, `interleave`, `alternate`).
    pub schedule: String,
    pub sizes: Vec<Size>,
    /// The same counts for server CPU per request.
    pub cpu: CpuCoverage,
    /// The run directory it was computed from, and the alone run it was
    /// checked against (their names).
    pub run: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_run: Option<String>,
    /// Coverage of the run-level interval over groups of [`GROUP`] runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_level: Option<RunLevel>,
}

/// Runs per group in [`RunLevel`]: the scenario files' `runs = 3`.
pub const GROUP: usize = 3;

/// Coverage of the run-level interval: `runs` counts groups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunLevel {
    pub runs_per_group: usize,
    pub aa: Count,
    pub control: Count,
}

/// Coverage of the CPU-per-request intervals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuCoverage {
    pub aa: Count,
    pub control: Count,
}

/// The method, as `coverage.json` states it.
pub const METHOD: &str = "95 % intervals: Student's t over each run's block means (blocks - 1 df). A/A covers when its interval holds 1. A control covers when its interval holds the control's effect with the server alone on its core: for an interleaved or alternate run, the mean log ratio of its other runs (leave one out); for a duet run, the alone run's ratio. Amplification: ln(measured ratio over runs) / ln(alone run's ratio), delta-method 95 % interval. Run level (run_level): the runs, in order, cut into disjoint groups of 3; a group's interval is Student's t over its runs' log ratios (2 df) on the larger of their spread and their mean within-run variance; an A/A group covers when it holds 1, a control group when it holds the mean log ratio of the runs outside the group.";

fn only_paired_table(dir: &Path) -> anyhow::Result<PairedTable> {
    let (report, problems) = crate::analyse(dir, &Options::default());
    if let Some(p) = problems.first() {
        bail!("{}: {}", dir.display(), p.0);
    }
    let report = report.with_context(|| format!("{}: nothing to analyse", dir.display()))?;
    let [table] = report.paired.as_slice() else {
        bail!("{}: expected one paired table", dir.display());
    };
    Ok(table.clone())
}

/// A row's reported interval and its degrees of freedom: over runs when it
/// has several, else over blocks.
fn reported(r: &PairedRow) -> Option<(RatioCi, f64)> {
    match r.across_runs {
        Some(c) => Some((c, (r.runs.len() - 1) as f64)),
        None => r.rps.map(|m| (m.ci, (m.blocks - 1) as f64)),
    }
}

fn pct(x: f64) -> f64 {
    (x - 1.0) * 100.0
}

/// Runs of one metric whose interval holds `truth(i)` (run `i`'s reference).
fn count(cis: &[RatioCi], truth: impl Fn(usize) -> f64) -> Count {
    Count {
        runs: cis.len(),
        covered: (0..cis.len())
            .filter(|&i| cis[i].lo <= truth(i) && truth(i) <= cis[i].hi)
            .count(),
    }
}

/// The reference of run `i` by leave one out: exp(mean of the other runs'
/// log ratios).
fn leave_one_out(cis: &[RatioCi], i: usize) -> f64 {
    let logs: Vec<f64> = cis.iter().map(|c| c.ratio.ln()).collect();
    mean_outside(&logs, i..i + 1)
}

/// Each run's interval of one metric.
fn run_cis(runs: &[RunFigures], metric: impl Fn(&RunFigures) -> Option<Metric>) -> Vec<RatioCi> {
    runs.iter()
        .filter_map(|r| metric(r).map(|m| m.ci))
        .collect()
}

/// Groups of [`GROUP`] consecutive runs whose run-level interval holds
/// `truth(group)` (None: the row is not judged).
fn count_groups(logs: &[(f64, f64)], truth: impl Fn(std::ops::Range<usize>) -> f64) -> Count {
    let mut c = Count::default();
    for start in (0..logs.len() / GROUP).map(|g| g * GROUP) {
        let range = start..start + GROUP;
        let Some(ci) = runs_t(&logs[range.clone()]) else {
            continue;
        };
        let x = truth(range);
        c.runs += 1;
        c.covered += usize::from(ci.lo <= x && x <= ci.hi);
    }
    c
}

/// exp(mean ln ratio of the runs outside `group`).
fn leave_group_out(logs: &[(f64, f64)], group: std::ops::Range<usize>) -> f64 {
    let lns: Vec<f64> = logs.iter().map(|l| l.0).collect();
    mean_outside(&lns, group)
}

/// exp(mean of the ln ratios outside `skip`).
fn mean_outside(lns: &[f64], skip: std::ops::Range<usize>) -> f64 {
    let others: Vec<f64> = (0..lns.len())
        .filter(|i| !skip.contains(i))
        .map(|i| lns[i])
        .collect();
    (others.iter().sum::<f64>() / others.len().max(1) as f64).exp()
}

/// The run-level coverage of a table's A/A and control rows.
fn run_level(table: &PairedTable, self_alone: bool) -> Option<RunLevel> {
    let mut level = RunLevel {
        runs_per_group: GROUP,
        aa: Count::default(),
        control: Count::default(),
    };
    for r in &table.rows {
        let logs = run_logs(&r.runs);
        if r.name.starts_with("aa") {
            level.aa.add(count_groups(&logs, |_| 1.0));
        } else if r.name.starts_with("control") && self_alone && logs.len() > GROUP {
            level
                .control
                .add(count_groups(&logs, |g| leave_group_out(&logs, g)));
        }
    }
    (level.aa.runs + level.control.runs > 0).then_some(level)
}

/// Coverage of the repeated comparisons in `run`, checked against the
/// alone run `alone` when given (required for a duet run).
pub fn coverage(run: &Path, alone: Option<&Path>) -> anyhow::Result<Coverage> {
    let table = only_paired_table(run)?;
    let self_alone = matches!(table.schedule.as_str(), "interleave" | "alternate");
    let alone_rows = match alone {
        Some(a) => Some(only_paired_table(a)?.rows),
        None if self_alone => None,
        None => bail!(
            "{}: a {} run needs an alone run to judge its controls against",
            run.display(),
            table.schedule
        ),
    };
    let (mut aa, mut control, mut cpu) =
        (Count::default(), Count::default(), CpuCoverage::default());
    let mut sizes = Vec::new();
    for r in &table.rows {
        let rps = run_cis(&r.runs, |x| x.rps);
        let cpus = run_cis(&r.runs, |x| x.cpu);
        if r.name.starts_with("aa") {
            aa.add(count(&rps, |_| 1.0));
            cpu.aa.add(count(&cpus, |_| 1.0));
            continue;
        }
        if !r.name.starts_with("control") {
            continue;
        }
        let alone_row = match &alone_rows {
            Some(rows) => Some(
                rows.iter()
                    .find(|a| a.name == r.name)
                    .with_context(|| format!("{}: no row {}", alone.unwrap().display(), r.name))?,
            ),
            None => None,
        };
        let alone_ci = match alone_row {
            Some(a) => Some(reported(a).with_context(|| format!("{}: no figure", a.name))?),
            None => None,
        };
        let (rps_count, cpu_count) = match (self_alone, alone_ci, alone_row) {
            (false, Some((a, _)), Some(a_row)) => {
                let a_cpu = a_row.cpu.map_or(f64::NAN, |m| m.ratio);
                (count(&rps, |_| a.ratio), count(&cpus, |_| a_cpu))
            }
            _ => (
                count(&rps, |i| leave_one_out(&rps, i)),
                count(&cpus, |i| leave_one_out(&cpus, i)),
            ),
        };
        control.add(rps_count);
        cpu.control.add(cpu_count);
        let (m_ci, m_df) = reported(r).with_context(|| format!("{}: no figure", r.name))?;
        let amp =
            alone_ci.map(|(a, a_df)| log_ratio_ci(log_and_se(&m_ci, m_df), log_and_se(&a, a_df)));
        sizes.push(Size {
            row: r.name.clone(),
            label: r.label.clone(),
            runs: rps_count.runs,
            covered: rps_count.covered,
            measured_pct: pct(m_ci.ratio),
            measured_ci95_pct: [pct(m_ci.lo), pct(m_ci.hi)],
            alone_pct: alone_ci.map(|(a, _)| pct(a.ratio)),
            alone_ci95_pct: alone_ci.map(|(a, _)| [pct(a.lo), pct(a.hi)]),
            amplification: amp.map(|a| a.0),
            amplification_ci95: amp.map(|a| a.1),
            cpu: cpu_count,
            cpu_measured_pct: r.cpu.map(|m| pct(m.ratio)),
        });
    }
    let name = |p: &Path| {
        p.file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned())
    };
    Ok(Coverage {
        aa,
        control,
        method: METHOD.into(),
        schedule: table.schedule.clone(),
        sizes,
        cpu,
        run: name(run),
        alone_run: alone.map(name),
        run_level: run_level(&table, self_alone),
    })
}

/// `coverage.json`'s bytes (pretty JSON and a newline).
pub fn to_json(c: &Coverage) -> anyhow::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(c)?;
    bytes.push(b'\n');
    Ok(bytes)
}
