//! Sweeps measured again: the same rows and targets in several runs, set
//! side by side (`shootout reruns RUN RUN...`). Within a run, the interval
//! of a max rate is over searches minutes apart on one stack, and that of a
//! comparison is over blocks; only a rerun says whether either is a promise
//! about the next run. Per row and target: each run's max rate, the spread
//! (largest / smallest − 1), whether it is within the ±5 % that issue 25
//! asks, and how often one run's interval held another's estimate; the
//! same for the max rate over the baseline's, and the knees' spread; per
//! comparison at equal rates the same for the p99 and CPU-per-request
//! ratios.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Serialize;

use super::compare::Comparison;
use super::report::{MaxRateRatio, SweepRow};
use crate::paired::stats::RatioCi;

/// The spread a rerun may show and still count as reproduced (issue 25:
/// "max rate at SLO reproducible within ±5 % across two runs"; read here
/// as largest / smallest − 1 ≤ 5 %, the stricter reading).
pub const REPRODUCED_PCT: f64 = 5.0;

#[derive(Debug, Clone, Serialize)]
pub struct Reruns {
    pub runs: Vec<String>,
    /// Per run, the machine its `meta.json` names.
    pub machines: Vec<Machine>,
    /// Whether every run names the same CPU model, core count and kernel.
    /// When they differ, no spread counts as reproduced or not: runs on
    /// two machines say nothing about a rerun on one.
    pub same_machine: bool,
    pub targets: Vec<TargetAcross>,
    pub comparisons: Vec<ComparisonAcross>,
}

/// What a run's `meta.json` says of its machine (absent fields stay
/// `None`; a run without `meta.json` is an error, as for the analysis).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    pub cpu_model: Option<String>,
    pub cores: Option<u64>,
    pub kernel: Option<String>,
}

impl Machine {
    fn read(dir: &Path) -> anyhow::Result<Machine> {
        let path = dir.join("meta.json");
        let text = crate::input::raw::read_to_string(&path)
            .with_context(|| format!("{}", path.display()))?;
        let meta: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
        let text = |k: &str| meta.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        Ok(Machine {
            cpu_model: text("cpu_model"),
            cores: meta.get("cores").and_then(|v| v.as_u64()),
            kernel: text("kernel"),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{}, {} cores, kernel {}",
            self.cpu_model.as_deref().unwrap_or("CPU unknown"),
            self.cores.map_or("?".into(), |c| c.to_string()),
            self.kernel.as_deref().unwrap_or("?")
        )
    }
}

/// One row and target across runs.
#[derive(Debug, Clone, Serialize)]
pub struct TargetAcross {
    pub row: String,
    pub label: String,
    pub slo: String,
    /// Per run, in the order given; `None` when that run lacks the row.
    pub runs: Vec<Option<MaxRate>>,
    /// Largest / smallest − 1 over the runs with a max rate (percent);
    /// none unless every run has one.
    pub spread_pct: Option<f64>,
    pub reproduced: Option<bool>,
    /// Ordered pairs of runs (i, j): run i's interval held run j's max
    /// rate, out of the pairs where run i had an interval.
    pub held: usize,
    pub pairs: usize,
    /// The knees' largest / smallest − 1 (percent), when every run has one.
    pub knee_spread_pct: Option<f64>,
    /// The same for the max rate over the baseline's, and ordered pairs of
    /// runs where one run's interval of that ratio held the other's.
    pub ratio_spread_pct: Option<f64>,
    pub ratio_held: usize,
    pub ratio_pairs: usize,
    /// Searches per row that would bring two runs' max rates within
    /// [`REPRODUCED_PCT`] of each other with 95 % odds, from the spread
    /// of these runs' searches ([`searches_to_reproduce`]); none when no
    /// run has two searches.
    pub searches_to_reproduce: Option<u32>,
}

/// A run's answer for one row and target.
#[derive(Debug, Clone, Serialize)]
pub struct MaxRate {
    /// The row's closed-model 2xx/s in that run (the probe): how much the
    /// machine itself moved between runs.
    pub closed_rps: Option<f64>,
    /// The max rate at the target, when a search ran.
    pub rate: Option<f64>,
    pub ci95_pct: Option<f64>,
    /// Why no search ran (`below`, `above`, `client`), as the run says.
    pub bracket: Option<String>,
    /// The highest passing step: a lower bound when `bracket` is `client`.
    pub highest_pass: Option<f64>,
    pub client_in_search: bool,
    /// Searches pinned at an end of the sweep's bracket (top or bottom),
    /// and the searches counted: pinned answers are the bracket's, so
    /// reruns may disagree by the bracket's width.
    pub pinned: u32,
    pub searches: usize,
    /// The searches' coefficient of variation (sample SD / mean), with at
    /// least two: how much one search's answer moves from stack to stack
    /// (pinned answers are the bracket's, so they understate it).
    pub search_cv: Option<f64>,
    /// The row's knee for this target (`rules::knee`): a property of the
    /// curve, not of the target's limit.
    pub knee: Option<f64>,
    /// The max rate over the baseline row's in the same run.
    pub vs_baseline: Option<MaxRateRatio>,
}

/// One comparison at equal rates across runs.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonAcross {
    pub row: String,
    pub against: String,
    pub label: String,
    pub pct: f64,
    /// Per run: the rate it ran at, and the ratios.
    pub runs: Vec<Option<RunRatios>>,
    /// Ordered pairs (i, j) where run i's p99 interval held run j's ratio.
    pub p99_held: usize,
    pub cpu_held: usize,
    pub pairs: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunRatios {
    pub rate: f64,
    pub p99: Option<RatioCi>,
    pub cpu_per_request: Option<RatioCi>,
}

/// Reads every run's sweeps (recomputed from its raw logs) and sets them
/// side by side.
pub fn reruns(dirs: &[PathBuf]) -> anyhow::Result<Reruns> {
    if dirs.len() < 2 {
        bail!("reruns needs at least two run directories");
    }
    let mut rows = Vec::new();
    let mut comps = Vec::new();
    let mut machines = Vec::new();
    for dir in dirs {
        let (r, c) = sweeps_of(dir)?;
        rows.push(r);
        comps.push(c);
        machines.push(Machine::read(dir)?);
    }
    let same_machine = machines.windows(2).all(|w| w[0] == w[1]);
    Ok(Reruns {
        runs: dirs.iter().map(|d| name_of(d)).collect(),
        machines,
        same_machine,
        targets: targets_across(&rows, same_machine),
        comparisons: comparisons_across(&comps),
    })
}

fn name_of(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

fn sweeps_of(dir: &Path) -> anyhow::Result<(Vec<SweepRow>, Vec<Comparison>)> {
    let (report, problems) = crate::analyse(dir, &crate::Options::default());
    let report = report.with_context(|| {
        let why: Vec<String> = problems.iter().map(|p| p.0.clone()).collect();
        format!("{}: {}", dir.display(), why.join("; "))
    })?;
    if report.sweeps.iter().all(|t| t.rows.is_empty()) {
        bail!("{}: not a sweep run (no sweep rows)", dir.display());
    }
    let rows = report.sweeps.iter().flat_map(|t| t.rows.clone()).collect();
    let comps = report
        .sweeps
        .iter()
        .flat_map(|t| t.comparisons.clone())
        .collect();
    Ok((rows, comps))
}

fn max_rate(r: &SweepRow) -> MaxRate {
    MaxRate {
        closed_rps: r.closed_rps,
        rate: r.max_rate_at_slo,
        ci95_pct: r.max_rate_ci95_pct,
        bracket: r.bracket.map(str::to_owned),
        highest_pass: r
            .steps
            .iter()
            .filter(|s| s.passes)
            .map(|s| s.step.rate)
            .reduce(f64::max),
        client_in_search: r.client_in_search,
        pinned: r.pinned_top + r.pinned_bottom,
        searches: r.searches.len(),
        search_cv: search_cv(&r.searches),
        knee: r.knee,
        vs_baseline: r.vs_baseline.clone(),
    }
}

/// Sample SD / mean of a row's search answers, with at least two.
pub fn search_cv(values: &[f64]) -> Option<f64> {
    crate::stats::describe(values)
        .filter(|d| d.n >= 2 && d.mean > 0.0)
        .map(|d| d.cv)
}

/// Searches per row for two runs' max rates (means of their searches) to
/// land within [`REPRODUCED_PCT`] of each other with 95 % odds, when one
/// search's answer has coefficient of variation `cv`: two means of n
/// differ by about cv·√(2/n) (one SD), so n ≥ 2·(1.96·cv / 0.05)², at
/// least 2. A planning figure: `cv` is itself estimated from few searches.
pub fn searches_to_reproduce(cv: f64) -> u32 {
    let h = REPRODUCED_PCT / 100.0;
    (2.0 * (1.96 * cv / h).powi(2)).ceil().max(2.0) as u32
}

/// Largest / smallest − 1, percent.
fn spread(rates: &[f64]) -> f64 {
    let hi = rates.iter().cloned().fold(f64::MIN, f64::max);
    let lo = rates.iter().cloned().fold(f64::MAX, f64::min);
    (hi / lo - 1.0) * 100.0
}

/// Ordered pairs (i, j), i ≠ j, where `holds(i, j)`; and how many pairs
/// had an interval to ask.
fn held_pairs(n: usize, holds: impl Fn(usize, usize) -> Option<bool>) -> (usize, usize) {
    let (mut held, mut pairs) = (0, 0);
    for i in 0..n {
        for j in (0..n).filter(|&j| j != i) {
            if let Some(h) = holds(i, j) {
                pairs += 1;
                held += usize::from(h);
            }
        }
    }
    (held, pairs)
}

fn targets_across(runs: &[Vec<SweepRow>], same_machine: bool) -> Vec<TargetAcross> {
    let mut out = Vec::new();
    for first in &runs[0] {
        let per: Vec<Option<MaxRate>> = runs
            .iter()
            .map(|rows| {
                rows.iter()
                    .find(|r| r.row == first.row && r.slo == first.slo)
                    .map(max_rate)
            })
            .collect();
        let rates: Vec<f64> = per.iter().flatten().filter_map(|m| m.rate).collect();
        let spread_pct = (rates.len() == per.len()).then(|| spread(&rates));
        let knees: Vec<f64> = per.iter().flatten().filter_map(|m| m.knee).collect();
        let knee_spread_pct = (knees.len() == per.len()).then(|| spread(&knees));
        let ratios: Vec<f64> = per
            .iter()
            .flatten()
            .filter_map(|m| m.vs_baseline.as_ref().map(|v| v.ratio))
            .collect();
        let ratio_spread_pct = (ratios.len() == per.len()).then(|| spread(&ratios));
        let (ratio_held, ratio_pairs) = held_pairs(per.len(), |i, j| {
            let [lo, hi] = per[i].as_ref()?.vs_baseline.as_ref()?.ci95?;
            let other = per[j].as_ref()?.vs_baseline.as_ref()?.ratio;
            Some(lo <= other && other <= hi)
        });
        let (held, pairs) = held_pairs(per.len(), |i, j| {
            let a = per[i].as_ref()?;
            let (m, ci) = (a.rate?, a.ci95_pct?);
            let other = per[j].as_ref()?.rate?;
            Some((other - m).abs() <= m * ci / 100.0)
        });
        // The runs' CVs pooled as the root of their mean square.
        let cvs: Vec<f64> = per.iter().flatten().filter_map(|m| m.search_cv).collect();
        let searches_to_reproduce = (!cvs.is_empty()).then(|| {
            let pooled = (cvs.iter().map(|c| c * c).sum::<f64>() / cvs.len() as f64).sqrt();
            searches_to_reproduce(pooled)
        });
        out.push(TargetAcross {
            row: first.row.clone(),
            label: first.label.clone(),
            slo: first.slo.clone(),
            runs: per,
            spread_pct,
            reproduced: spread_pct
                .filter(|_| same_machine)
                .map(|s| s <= REPRODUCED_PCT),
            held,
            pairs,
            knee_spread_pct,
            ratio_spread_pct,
            ratio_held,
            ratio_pairs,
            searches_to_reproduce,
        });
    }
    out
}

fn comparisons_across(runs: &[Vec<Comparison>]) -> Vec<ComparisonAcross> {
    let mut out = Vec::new();
    for first in &runs[0] {
        let per: Vec<Option<RunRatios>> = runs
            .iter()
            .map(|cs| {
                cs.iter()
                    .find(|c| {
                        c.row == first.row && c.against == first.against && c.pct == first.pct
                    })
                    .map(|c| RunRatios {
                        rate: c.rate,
                        p99: c.p99,
                        cpu_per_request: c.cpu_per_request,
                    })
            })
            .collect();
        let holds = |pick: fn(&RunRatios) -> Option<&RatioCi>| {
            held_pairs(per.len(), |i, j| {
                let a = pick(per[i].as_ref()?)?;
                let b = pick(per[j].as_ref()?)?;
                Some(a.lo <= b.ratio && b.ratio <= a.hi)
            })
        };
        let (p99_held, pairs) = holds(|r| r.p99.as_ref());
        let (cpu_held, _) = holds(|r| r.cpu_per_request.as_ref());
        out.push(ComparisonAcross {
            row: first.row.clone(),
            against: first.against.clone(),
            label: format!("{} against {}", first.label, first.against_label),
            pct: first.pct,
            runs: per,
            p99_held,
            cpu_held,
            pairs,
        });
    }
    out
}

fn rate_cell(m: &Option<MaxRate>) -> String {
    let Some(m) = m else {
        return "not in this run".into();
    };
    match (m.rate, m.bracket.as_deref()) {
        (Some(r), _) => {
            let mut s = format!("{r:.0}");
            if let Some(ci) = m.ci95_pct {
                s += &format!(
                    " ({:.0}-{:.0})",
                    r * (1.0 - ci / 100.0),
                    r * (1.0 + ci / 100.0)
                );
            }
            if m.client_in_search {
                s += " (a search rate without a valid majority)";
            }
            if m.pinned > 0 {
                s += &format!(" ({} of {} searches pinned)", m.pinned, m.searches);
            }
            s
        }
        (None, Some("client")) => match m.highest_pass {
            Some(p) => format!("at least {p:.0} (the client was the limit)"),
            None => "the client was the limit".into(),
        },
        (None, Some("below")) => "no rate passed below the first failing one".into(),
        (None, Some("above")) => "above the heaviest step".into(),
        _ => "-".into(),
    }
}

fn ratio_cell(r: Option<&RatioCi>) -> String {
    r.map(|r| format!("{:.3} ({:.3}-{:.3})", r.ratio, r.lo, r.hi))
        .unwrap_or_else(|| "-".into())
}

/// The tables as markdown: max rates, then comparisons.
pub fn to_markdown(r: &Reruns) -> String {
    let runs: Vec<String> = r
        .runs
        .iter()
        .zip(&r.machines)
        .map(|(n, m)| format!("{n} ({})", m.describe()))
        .collect();
    let mut s = format!(
        "Runs: {}.\n\nMax rate at the target in each run (95 % interval over that run's searches); spread = largest / smallest - 1; reproduced = spread within {REPRODUCED_PCT} %; held = ordered pairs of runs where one run's interval held the other's max rate; the closed-model 2xx/s (the row's probe) shows how much the machine itself moved between runs; the knee (a property of the p99 curve, on steps 1.5 times apart) and its spread; searches for ±{REPRODUCED_PCT} % = at least how many searches per row would bring two runs within {REPRODUCED_PCT} % with 95 % odds, 2·(1.96·cv / 0.05)² rounded up (at least 2) with cv the searches' SD / mean pooled over these runs: a lower bound, since it leaves out a drift of the machine between runs.\n\n",
        runs.join(", ")
    );
    if !r.same_machine {
        s += "These runs come from different machines (CPU model, cores or kernel differ): a spread between them is not a rerun's, and no row is called reproduced or not.\n\n";
    }
    s += "| Configuration | Target |";
    for i in 1..=r.runs.len() {
        s += &format!(" Run {i} |");
    }
    s += &format!(" Spread | Reproduced | Intervals held | Closed-model 2xx/s per run | Knee per run | Knee spread | Searches for ±{REPRODUCED_PCT} % |\n|---|---|");
    s += &"---:|".repeat(r.runs.len());
    s += "---:|---|---:|---:|---:|---:|---:|\n";
    for t in &r.targets {
        s += &format!("| {} | {} |", t.label, t.slo);
        for m in &t.runs {
            s += &format!(" {} |", rate_cell(m));
        }
        let spread = t
            .spread_pct
            .map(|p| format!("{p:.1}%"))
            .unwrap_or_else(|| "-".into());
        let rep = match t.reproduced {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        };
        let closed: Vec<String> = t
            .runs
            .iter()
            .map(|m| {
                m.as_ref()
                    .and_then(|m| m.closed_rps)
                    .map_or("-".into(), |c| format!("{c:.0}"))
            })
            .collect();
        let knees: Vec<String> = t
            .runs
            .iter()
            .map(|m| {
                m.as_ref()
                    .and_then(|m| m.knee)
                    .map_or("-".into(), |k| format!("{k:.0}"))
            })
            .collect();
        let knee_spread = t.knee_spread_pct.map_or("-".into(), |p| format!("{p:.1}%"));
        let needed = t
            .searches_to_reproduce
            .map_or("-".into(), |n| n.to_string());
        s += &format!(
            " {spread} | {rep} | {} of {} | {} | {} | {knee_spread} | {needed} |\n",
            t.held,
            t.pairs,
            closed.join(" / "),
            knees.join(" / ")
        );
    }
    s += &ratios_table(r);
    if r.comparisons.is_empty() {
        return s;
    }
    s += "\nComparisons at equal rates in each run: ratio row / baseline (95 % interval over that run's blocks); held = ordered pairs of runs where one run's interval held the other's ratio.\n\n";
    s += "| Configuration | Rate: % of the baseline's max (each run's req/s) |";
    for i in 1..=r.runs.len() {
        s += &format!(" p99 ratio, run {i} |");
    }
    for i in 1..=r.runs.len() {
        s += &format!(" CPU/request ratio, run {i} |");
    }
    s += " p99 intervals held | CPU intervals held |\n|---|---:|";
    s += &"---:|".repeat(2 * r.runs.len());
    s += "---:|---:|\n";
    for c in &r.comparisons {
        let rates: Vec<String> = c
            .runs
            .iter()
            .map(|x| x.as_ref().map_or("-".into(), |x| format!("{:.0}", x.rate)))
            .collect();
        s += &format!("| {} | {}% ({}) |", c.label, c.pct, rates.join(" / "));
        for x in &c.runs {
            s += &format!(" {} |", ratio_cell(x.as_ref().and_then(|x| x.p99.as_ref())));
        }
        for x in &c.runs {
            let cell = ratio_cell(x.as_ref().and_then(|x| x.cpu_per_request.as_ref()));
            s += &format!(" {cell} |");
        }
        s += &format!(
            " {} of {} | {} of {} |\n",
            c.p99_held, c.pairs, c.cpu_held, c.pairs
        );
    }
    s
}

/// Each row's max rate over the baseline's in each run (rows with one in
/// some run).
fn ratios_table(r: &Reruns) -> String {
    let lines: Vec<&TargetAcross> = r
        .targets
        .iter()
        .filter(|t| t.runs.iter().flatten().any(|m| m.vs_baseline.is_some()))
        .collect();
    let Some(against) = lines
        .iter()
        .flat_map(|t| t.runs.iter().flatten())
        .find_map(|m| m.vs_baseline.as_ref().map(|v| v.against.clone()))
    else {
        return String::new();
    };
    let mut s = format!(
        "\nMax rate at the target over {against}'s in the same run (95 % interval over both rows' searches); spread = largest / smallest - 1; held = ordered pairs of runs where one run's interval held the other's ratio.\n\n| Configuration | Target |"
    );
    for i in 1..=r.runs.len() {
        s += &format!(" Run {i} |");
    }
    s += " Spread | Intervals held |\n|---|---|";
    s += &"---:|".repeat(r.runs.len());
    s += "---:|---:|\n";
    for t in lines {
        s += &format!("| {} | {} |", t.label, t.slo);
        for m in &t.runs {
            let cell = m
                .as_ref()
                .and_then(|m| m.vs_baseline.as_ref())
                .map_or("-".into(), ToString::to_string);
            s += &format!(" {cell} |");
        }
        let spread = t
            .ratio_spread_pct
            .map_or("-".into(), |p| format!("{p:.1}%"));
        s += &format!(" {spread} | {} of {} |\n", t.ratio_held, t.ratio_pairs);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_largest_over_smallest() {
        assert!((spread(&[100.0, 104.0]) - 4.0).abs() < 1e-9);
        assert!((spread(&[106.0, 100.0, 103.0]) - 6.0).abs() < 1e-9);
        assert!(spread(&[100.0, 106.0]) > REPRODUCED_PCT);
    }

    #[test]
    fn searches_to_reproduce_follows_the_spread() {
        // 2·(1.96·0.09/0.05)² = 24.9; 2·(1.96·0.22/0.05)² = 148.8.
        assert_eq!(searches_to_reproduce(0.09), 25);
        assert_eq!(searches_to_reproduce(0.22), 149);
        assert_eq!(searches_to_reproduce(0.0), 2);
        // SD of (90, 100, 110) is 10: cv 0.1.
        assert!((search_cv(&[90.0, 100.0, 110.0]).unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(search_cv(&[100.0]), None);
    }

    #[test]
    fn held_pairs_counts_ordered_pairs_that_had_an_interval() {
        // Run 0: 100 ± 10 %; run 1: 108 ± 2 %; run 2: no interval, 95.
        let runs: [(f64, Option<f64>); 3] = [(100.0, Some(10.0)), (108.0, Some(2.0)), (95.0, None)];
        let (held, pairs) = held_pairs(3, |i, j| {
            let (m, ci) = runs[i];
            Some((runs[j].0 - m).abs() <= m * ci? / 100.0)
        });
        // 0 holds 1 (108) and 2 (95); 1 holds neither; 2 asks nothing.
        assert_eq!((held, pairs), (2, 4));
    }
}
