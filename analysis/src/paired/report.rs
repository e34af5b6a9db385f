//! Figures of a paired table: per compared row, the ratio to the baseline of
//! 2xx/s and of server CPU per request, each with its 95% CIs, per machine
//! state and per slot order.

use std::path::Path;

use super::input::{read_runs, Comparison, Window};
use super::stats::{self, RatioCi, State};
use super::Order;
use crate::input::{Problem, TableSpec};

/// One metric's ratio and the interval a conclusion rests on: Student's t
/// over block means ([`stats::block_t`]). The interval over windows as if
/// they were independent is kept as a diagnostic only (it is too narrow:
/// neighbouring windows are correlated).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Metric {
    pub ratio: f64,
    /// Student's t over block means: the reported interval.
    pub ci: RatioCi,
    pub ci95_pct: f64,
    pub blocks: usize,
    pub pairs: usize,
    /// Student's t over the windows as if independent: a diagnostic, never
    /// reported as the interval.
    pub pairs_t: RatioCi,
}

/// Builds a metric from windows (`None` with fewer than 2 blocks that have
/// a usable pair).
pub fn metric(windows: &[Window], f: impl Fn(&Window) -> Option<f64>) -> Option<Metric> {
    let logs: Vec<f64> = windows.iter().filter_map(&f).collect();
    let pairs_t = stats::t_ratio(&logs)?;
    let mut blocks: Vec<Vec<f64>> = Vec::new();
    let mut last = None;
    for w in windows {
        if let Some(x) = f(w) {
            if last != Some((w.run, w.block)) {
                blocks.push(Vec::new());
                last = Some((w.run, w.block));
            }
            blocks.last_mut().expect("pushed").push(x);
        }
    }
    let ci = stats::block_t(&blocks)?;
    Some(Metric {
        ratio: ci.ratio,
        ci,
        ci95_pct: ci.half_width_pct(),
        blocks: blocks.len(),
        pairs: logs.len(),
        pairs_t,
    })
}

/// The RPS metric of `windows`.
pub fn rps_metric(windows: &[Window]) -> Option<Metric> {
    metric(windows, |w| Some(w.log_rps()))
}

/// The server-CPU-per-request metric of `windows`.
pub fn cpu_metric(windows: &[Window]) -> Option<Metric> {
    metric(windows, Window::log_cpu)
}

/// One run of a repeated comparison (`runs = N`): its own figures.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RunFigures {
    pub run: u32,
    pub blocks: u32,
    pub rps: Option<Metric>,
    pub cpu: Option<Metric>,
}

/// The run-level interval of a repeated comparison, what a reader gets if
/// they run the comparison again: Student's t over the runs' log ratios
/// (runs − 1 degrees of freedom), never narrower than the runs' own
/// errors allow ([`stats::runs_t`]). `None` with fewer than 2 runs.
pub fn across_runs(runs: &[RunFigures]) -> Option<RatioCi> {
    stats::runs_t(&run_logs(runs))
}

/// The same run-level interval for server CPU per request.
pub fn cpu_across_runs(runs: &[RunFigures]) -> Option<RatioCi> {
    stats::runs_t(&logs_of(runs, |r| r.cpu))
}

/// Each run's 2xx/s ln ratio and its standard error (from its t interval
/// over blocks): what [`across_runs`] and coverage's run level combine.
pub fn run_logs(runs: &[RunFigures]) -> Vec<(f64, f64)> {
    logs_of(runs, |r| r.rps)
}

fn logs_of(runs: &[RunFigures], f: impl Fn(&RunFigures) -> Option<Metric>) -> Vec<(f64, f64)> {
    runs.iter()
        .filter_map(|r| f(r).map(|m| (m.ratio.ln(), within_se(&m))))
        .collect()
}

/// A run's standard error of its ln ratio, from its t interval over blocks.
fn within_se(m: &Metric) -> f64 {
    stats::log_and_se(&m.ci, m.blocks.saturating_sub(1).max(1) as f64).1
}

/// Ratios within one machine state (t interval only: fewer windows).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StateFigures {
    pub state: State,
    pub pairs: usize,
    pub rps: Option<RatioCi>,
    pub cpu: Option<RatioCi>,
}

/// One compared row.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PairedRow {
    pub name: String,
    pub label: String,
    /// The row it was compared with when not the table's baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against_label: Option<String>,
    /// An A/A row: it runs exactly what it is compared with.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub aa: bool,
    /// A process of the row or its base ran where the scheduler put it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub placement_free: bool,
    pub blocks: u32,
    pub pairs: usize,
    /// Intervals the pairing rules left out.
    pub dropped: usize,
    /// Absolute means on this machine on this day, for orientation only.
    pub row_rps_mean: f64,
    pub base_rps_mean: f64,
    pub row_cpu_us_mean: Option<f64>,
    pub base_cpu_us_mean: Option<f64>,
    /// Latency percentiles of every block's merged histogram, row and base
    /// (closed-model load at saturation: mostly queueing; absent for logs
    /// without histograms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_latency_us: Option<crate::latency::RowLatency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_latency_us: Option<crate::latency::RowLatency>,
    /// The row's slow clients (`slow_clients` rows) over its blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow: Option<super::slow::SlowFigures>,
    /// Over every block of every run.
    pub rps: Option<Metric>,
    pub cpu: Option<Metric>,
    /// A repeated comparison's runs, each with its within-run figures
    /// (empty when it ran once).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunFigures>,
    /// 2xx/s ratio over the runs with its run-level 95% CI: the reported
    /// figure of a repeated comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub across_runs: Option<RatioCi>,
    /// CPU per request ratio over the runs, by the same rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_across_runs: Option<RatioCi>,
    /// RPS ratio with the row in the first slot, and with the baseline there.
    pub rps_ab: Option<f64>,
    pub rps_ba: Option<f64>,
    /// Total 2xx/s (both stacks) dividing fast from slow windows, if two
    /// states were found.
    pub state_threshold: Option<f64>,
    pub states: Vec<StateFigures>,
    /// Every window, for the chart (not in summary.json).
    #[serde(skip)]
    pub windows: Vec<(Window, State)>,
}

/// A paired table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PairedTable {
    pub name: String,
    pub title: String,
    pub baseline: String,
    pub baseline_label: String,
    /// How the stacks were loaded: `duet`, `alternate` or `interleave`.
    pub schedule: String,
    /// What the table decides, a line per comparison (see
    /// [`super::answer`]); none for runs that did not record their A/A rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<Answer>,
    pub rows: Vec<PairedRow>,
}

/// Which effect a schedule measures, for every printed comparison (`None`:
/// not a schedule).
pub fn schedule_effect(schedule: &str) -> Option<&'static str> {
    Some(match schedule {
        "duet" => {
            "duet: both stacks loaded at once, sharing one core. An effect differs from the \
             effect with each server alone on its core, smaller or larger (see results/README.md, \
             Coverage)"
        }
        "alternate" => {
            "alternate: one stack loaded, then the other, in each block: the effect with each \
             server alone on its core, exposed to machine-state changes between the two"
        }
        "interleave" => {
            "interleave: the two loadgens take turns, one half of every interval each: the \
             effect with each server alone on its core, both seeing the same machine state to \
             within an interval. 2xx/s counts over whole intervals, so absolute 2xx/s are about \
             half a server's rate"
        }
        _ => return None,
    })
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// Figures for one compared row from its runs' windows.
pub fn row_figures(name: &str, label: &str, runs: &[(u32, Comparison)]) -> PairedRow {
    let run_figures: Vec<RunFigures> = if runs.len() > 1 {
        runs.iter()
            .map(|(n, c)| RunFigures {
                run: *n,
                blocks: c.blocks,
                rps: rps_metric(&c.windows),
                cpu: cpu_metric(&c.windows),
            })
            .collect()
    } else {
        Vec::new()
    };
    let latency = |f: fn(&Comparison) -> &Vec<crate::model::Latency>| {
        let all: Vec<&crate::model::Latency> = runs.iter().flat_map(|(_, c)| f(c)).collect();
        crate::latency::merged(&all)
    };
    let (row_latency_us, base_latency_us) =
        (latency(|c| &c.row_latency), latency(|c| &c.base_latency));
    let c = Comparison {
        row_latency: Vec::new(),
        base_latency: Vec::new(),
        windows: runs.iter().flat_map(|(_, c)| c.windows.clone()).collect(),
        blocks: runs.iter().map(|(_, c)| c.blocks).sum(),
        dropped: runs.iter().map(|(_, c)| c.dropped).sum(),
        row_slow: runs.iter().flat_map(|(_, c)| c.row_slow.clone()).collect(),
    };
    let c = &c;
    let w = &c.windows;
    let totals: Vec<f64> = w.iter().map(|w| w.row_rps + w.base_rps).collect();
    let blocks: Vec<u32> = w.iter().map(|w| w.block).collect();
    let (states, state_threshold) = stats::states(&totals, &blocks);
    let by_state = |s: State| -> Vec<Window> {
        w.iter()
            .zip(&states)
            .filter(|(_, st)| **st == s)
            .map(|(w, _)| w.clone())
            .collect()
    };
    let state_list: &[State] = if state_threshold.is_some() {
        &[State::Fast, State::Slow]
    } else {
        &[]
    };
    let order_ratio =
        |o: Order| mean(w.iter().filter(|w| w.order == o).map(Window::log_rps)).map(f64::exp);
    PairedRow {
        name: name.into(),
        label: label.into(),
        against: None,
        against_label: None,
        aa: false,
        placement_free: false,
        blocks: c.blocks,
        pairs: w.len(),
        dropped: c.dropped,
        row_rps_mean: mean(w.iter().map(|w| w.row_rps)).unwrap_or(0.0),
        base_rps_mean: mean(w.iter().map(|w| w.base_rps)).unwrap_or(0.0),
        row_cpu_us_mean: mean(w.iter().filter_map(|w| w.row_cpu_us)),
        base_cpu_us_mean: mean(w.iter().filter_map(|w| w.base_cpu_us)),
        row_latency_us,
        base_latency_us,
        slow: super::slow::figures(&c.row_slow),
        rps: rps_metric(w),
        cpu: cpu_metric(w),
        across_runs: across_runs(&run_figures),
        cpu_across_runs: cpu_across_runs(&run_figures),
        runs: run_figures,
        rps_ab: order_ratio(Order::Ab),
        rps_ba: order_ratio(Order::Ba),
        state_threshold,
        states: state_list
            .iter()
            .map(|&s| {
                let ws = by_state(s);
                let logs: Vec<f64> = ws.iter().map(Window::log_rps).collect();
                let cpu: Vec<f64> = ws.iter().filter_map(Window::log_cpu).collect();
                StateFigures {
                    state: s,
                    pairs: ws.len(),
                    rps: stats::t_ratio(&logs),
                    cpu: stats::t_ratio(&cpu),
                }
            })
            .collect(),
        windows: w.iter().cloned().zip(states).collect(),
    }
}

/// One comparison's answer (as `summary.json` keeps it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    /// The compared row and the row it was compared with (names).
    pub row: String,
    pub against: String,
    pub aa: bool,
    /// 2xx/s ratio row / against, with its 95 % interval.
    pub ratio: RatioCi,
    /// Runs the interval is over (1: over the blocks of one run).
    pub runs: usize,
    pub verdict: Verdict,
    /// A process ran where the scheduler put it (`placement = "free"`):
    /// the answer may measure the scheduler, and says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub placement_free: bool,
    /// The table has no A/A row: a difference rests on its interval
    /// alone, and says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_aa: bool,
}

/// What a comparison decides.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// The row serves fewer 2xx/s, by `pct` percent.
    Slower { pct: f64 },
    /// The row serves more 2xx/s, by `pct` percent.
    Faster { pct: f64 },
    /// Inside the interval or inside the A/A's resolution.
    Unresolved,
    /// An A/A row whose interval holds 1: the run resolves about ±`pct`.
    Resolves { pct: f64 },
    /// An A/A row whose interval misses 1: this run's intervals are too
    /// narrow; only differences beyond ±`pct` decide.
    AaMissed { pct: f64 },
    /// Interleaved, a stack used more of a core per second (`row_cores`,
    /// `base_cores`) than the half its turns give it: its work ran into
    /// the other stack's turns, so the 2xx/s ratio compares unequal shares
    /// of the core and is no answer; the CPU per request ratio `cpu` is.
    Overran {
        row_cores: f64,
        base_cores: f64,
        cpu: super::stats::RatioCi,
    },
}

/// Reads a paired table directory: one sub-directory per compared row, in
/// `table.toml`'s order. Without answers: `answer::with_answers` adds them.
pub fn build(
    name: &str,
    dir: &Path,
    spec: &TableSpec,
    problems: &mut Vec<Problem>,
) -> Option<PairedTable> {
    let Some(baseline) = spec.baseline.clone() else {
        problems.push(Problem(format!(
            "{}: a paired table.toml needs a baseline",
            dir.display()
        )));
        return None;
    };
    let label_of = |n: &str| {
        spec.row
            .iter()
            .find(|r| r.name == n)
            .and_then(|r| r.label.clone())
            .unwrap_or_else(|| n.to_string())
    };
    let mut rows = Vec::new();
    for r in spec.row.iter().filter(|r| r.name != baseline) {
        let sub = dir.join(&r.name);
        if !crate::input::raw::is_dir(&sub) {
            continue;
        }
        let runs = read_runs(&sub, problems);
        if runs.iter().all(|(_, c)| c.windows.is_empty()) {
            problems.push(Problem(format!("{}: no paired window", sub.display())));
            continue;
        }
        let mut figures = row_figures(&r.name, &label_of(&r.name), &runs);
        figures.against_label = r.against.as_deref().map(label_of);
        figures.against = r.against.clone();
        figures.aa = r.aa == Some(true);
        figures.placement_free = r.placement.as_deref() == Some("free");
        rows.push(figures);
    }
    if rows.is_empty() {
        return None;
    }
    let schedule = spec.schedule.clone().unwrap_or_else(|| "duet".into());
    if schedule_effect(&schedule).is_none() {
        problems.push(Problem(format!(
            "{}: unknown schedule {schedule:?} in table.toml (duet, alternate or interleave)",
            dir.display()
        )));
        return None;
    }
    Some(PairedTable {
        schedule,
        name: name.into(),
        title: spec.title.clone().unwrap_or_else(|| name.into()),
        baseline_label: label_of(&baseline),
        baseline,
        answers: Vec::new(),
        rows,
    })
}
