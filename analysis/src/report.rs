//! The numbers behind every table: built once, rendered by the exporters.

use serde::Serialize;

use crate::input::merge::{self, Repetition};
use crate::input::{Original, Problem, TableInput};
use crate::latency::RowLatency;
use crate::model::RunLog;
use crate::stats::{describe, ratio_ci95, welch, Describe, Welch};

/// How to analyse.
#[derive(Debug, Clone)]
pub struct Options {
    /// Intervals dropped at the start of logs that do not mark their warm-up.
    pub skip: usize,
    /// Baseline row name for every table that has it.
    pub baseline: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            skip: 3,
            baseline: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub skip: usize,
    pub tables: Vec<TableReport>,
    /// Tables of the paired design (absent from summary.json when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<crate::paired::report::PairedTable>,
    /// Memory tables (absent from summary.json when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<crate::memory::report::MemoryTable>,
    /// Sweep tables (absent from summary.json when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sweeps: Vec<crate::sweep::report::SweepTable>,
    /// Drain rates of log sinks (`design = "sinks"`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sinks: Vec<crate::sinks::SinkTable>,
    /// Where the report came from, for index.html (not in summary.json).
    #[serde(skip)]
    pub source: Source,
}

/// A run directory's name, its `meta.json` and its files, for the page.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The run directory's name.
    pub run: String,
    pub meta: Option<serde_json::Value>,
    /// Every file under the run directory (relative, sorted), except the
    /// rendered outputs at its top (README.md, summary.json, index.html,
    /// the charts), so that rendering twice gives the same page.
    pub files: Vec<String>,
    /// The raw record files packed in the run's archive (relative to
    /// the run directory, sorted).
    pub packed: Vec<String>,
    /// The comparisons of this run in `../history.json` (when the run sits
    /// in a results directory that keeps one), each with its sittings up
    /// to this run's date, so that a later run leaves this page as it is.
    pub history: Vec<crate::sittings::history::Comparison>,
}

impl Source {
    /// Reads `dir`'s name, meta.json and file list.
    pub fn read(dir: &std::path::Path) -> Source {
        let meta = crate::input::raw::read(&dir.join("meta.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    if e.file_name() != "tmp" {
                        stack.push(p);
                    }
                } else if let Ok(rel) = p.strip_prefix(dir) {
                    let rel = rel.to_string_lossy().into_owned();
                    let rendered = !rel.contains('/')
                        && (["README.md", "summary.json", "summary.json.gz", "index.html"]
                            .contains(&rel.as_str())
                            || rel.ends_with(".svg"));
                    if !rel.starts_with('.') && !rendered {
                        files.push(rel);
                    }
                }
            }
        }
        files.sort();
        let packed = crate::input::raw::packed(dir).unwrap_or_default();
        let run = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        Source {
            history: dir
                .parent()
                .map(|d| history_of(d, &run))
                .unwrap_or_default(),
            run,
            meta,
            files,
            packed,
        }
    }
}

/// The comparisons of run `run` in `results/history.json`, each with its
/// sittings up to that run's.
fn history_of(results: &std::path::Path, run: &str) -> Vec<crate::sittings::history::Comparison> {
    let Some(h) = std::fs::read(results.join("history.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<crate::sittings::history::History>(&b).ok())
    else {
        return Vec::new();
    };
    h.comparisons
        .into_iter()
        .filter_map(|mut c| {
            let date = c.sittings.iter().find(|s| s.run == run)?.date.clone();
            c.sittings.retain(|s| s.date <= date);
            // The pool of those sittings alone, so that a later sitting
            // leaves this page as it is.
            c.across = crate::sittings::history::across(&c.sittings);
            Some(c)
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct TableReport {
    pub name: String,
    pub title: String,
    pub baseline: String,
    pub rows: Vec<RowReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowReport {
    pub name: String,
    pub label: String,
    /// Interval requests per second, every repetition pooled; `ci95` is
    /// that of the mean of the repetition means when there are two or more.
    pub rps: Describe,
    pub repetitions: usize,
    /// Mean RPS of each repetition.
    pub repetition_means: Vec<f64>,
    /// Most shards merged in one repetition.
    pub shards: usize,
    /// Rows merged from several shards: each shard's own figure.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_shard: Vec<crate::input::merge::ShardFigure>,
    /// Mean RPS over the baseline row's.
    pub ratio: f64,
    /// Half-width of the ratio's 95% confidence interval, from the
    /// repetition means (0 for the baseline; none with one repetition).
    pub ratio_ci95: Option<f64>,
    /// The published figure for this row and its ratio to the published
    /// baseline, when table.toml gives them.
    pub original: Option<Compared>,
    /// Welch's t-test against the baseline row (none for the baseline).
    pub welch: Option<Welch>,
    /// Percentiles of the merged histograms of every log of the row
    /// (approximate for old logs, see [`crate::latency`]).
    pub latency_us: Option<RowLatency>,
    pub non_2xx: Option<u64>,
    pub errors: Option<u64>,
    /// 2xx over all responses and errors, percent (loadgen logs only).
    pub availability_pct: Option<f64>,
    /// Interval RPS over time, one series per repetition (for the charts).
    #[serde(skip)]
    pub series: Vec<Vec<(f64, f64)>>,
}

/// A row set beside a published figure.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Compared {
    pub rps: f64,
    pub sd: Option<f64>,
    /// The published row over the published baseline (none when the
    /// baseline has no published figure).
    pub ratio: Option<f64>,
    /// Our ratio minus the published one.
    pub ratio_difference: Option<f64>,
    /// True when the published ratio lies inside our ratio's 95% CI.
    pub within_ci: Option<bool>,
}

/// Builds the report; problems with single files or rows are collected.
pub fn build(tables: &[TableInput], opts: &Options, problems: &mut Vec<Problem>) -> Report {
    let mut out = Vec::new();
    let mut paired = Vec::new();
    let mut memory = Vec::new();
    let mut sweeps = Vec::new();
    let mut sinks = Vec::new();
    for table in tables {
        if table.spec.design.as_deref() == Some("sinks") {
            let title = table
                .spec
                .title
                .clone()
                .unwrap_or_else(|| table.name.clone());
            let order: Vec<String> = table.spec.row.iter().map(|r| r.name.clone()).collect();
            sinks.push(crate::sinks::build(
                &table.name,
                &table.dir,
                &title,
                &order,
                problems,
            ));
            continue;
        }
        if table.spec.design.as_deref() == Some("sweep") {
            let title = table
                .spec
                .title
                .clone()
                .unwrap_or_else(|| table.name.clone());
            let baseline = opts.baseline.as_deref().or(table.spec.baseline.as_deref());
            sweeps.push(crate::sweep::report::build(
                &table.name,
                &table.dir,
                &title,
                baseline,
                problems,
            ));
            continue;
        }
        if table.spec.kind.as_deref() == Some("memory") {
            memory.extend(crate::memory::report::build(table, problems));
            continue;
        }
        if table.spec.design.as_deref() == Some("paired") {
            let built =
                crate::paired::report::build(&table.name, &table.dir, &table.spec, problems);
            // Answers only where the runner recorded which rows are A/A rows.
            paired.extend(built.map(|t| crate::paired::answer::with_answers(t, &table.spec)));
            continue;
        }
        out.extend(sequential_table(table, opts, problems));
    }
    Report {
        skip: opts.skip,
        tables: out,
        paired,
        memory,
        sweeps,
        sinks,
        source: Source::default(),
    }
}

/// The rows of a sequential table with usable logs, in `row_order`:
/// (name, label, repetitions).
fn logged_rows(
    table: &TableInput,
    opts: &Options,
    problems: &mut Vec<Problem>,
) -> Vec<(String, String, Vec<Repetition>)> {
    let mut rows = Vec::new();
    for name in row_order(table) {
        let logs: Vec<&RunLog> = table.logs.iter().filter(|l| l.row == name).collect();
        let reps = merge::repetitions(&logs, opts.skip, problems);
        if reps.is_empty() {
            continue;
        }
        let label = table
            .spec
            .row
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.label.clone())
            .unwrap_or_else(|| name.clone());
        rows.push((name, label, reps));
    }
    rows
}

/// A sequential table: each row's mean RPS and its ratio to the baseline
/// row, or None when no row has a usable log.
fn sequential_table(
    table: &TableInput,
    opts: &Options,
    problems: &mut Vec<Problem>,
) -> Option<TableReport> {
    let rows = logged_rows(table, opts, problems);
    if rows.is_empty() {
        return None;
    }
    let wanted = opts
        .baseline
        .clone()
        .or_else(|| table.spec.baseline.clone());
    let base_idx = match &wanted {
        Some(b) => rows.iter().position(|(n, _, _)| n == b).unwrap_or_else(|| {
            problems.push(Problem(format!(
                "{}: baseline {b:?} has no usable log; using {:?}",
                table.dir.display(),
                rows[0].0
            )));
            0
        }),
        None => 0,
    };
    let base_sample = sample(&rows[base_idx].2);
    let base_mean = describe(&base_sample).map_or(f64::NAN, |d| d.mean);
    let base_means = repetition_means(&rows[base_idx].2);
    let original_of = |name: &str| -> Option<Original> {
        table.spec.row.iter().find(|r| r.name == name)?.original
    };
    let base_original = original_of(&rows[base_idx].0);
    let built = rows
        .iter()
        .enumerate()
        .filter_map(|(i, (name, label, reps))| {
            let s = sample(reps);
            let mut rps = describe(&s)?;
            let means = repetition_means(reps);
            // Intervals of one run are not independent; with two or
            // more runs, the mean's CI comes from the runs' means.
            if let Some(d) = describe(&means).filter(|d| d.n > 1) {
                rps.ci95 = d.ci95;
            }
            let ratio = rps.mean / base_mean;
            // Over repetitions, the independent unit: none with fewer
            // than two on either side.
            let welch_p = if i == base_idx {
                None
            } else {
                welch(&means, &base_means)
            };
            let ratio_ci95 = if i == base_idx {
                Some(0.0)
            } else {
                ratio_ci95(&means, &base_means)
            };
            let original = original_of(name).map(|o| {
                let ratio_o = base_original.map(|b| o.rps / b.rps);
                let difference = ratio_o.map(|r| ratio - r);
                Compared {
                    rps: o.rps,
                    sd: o.sd,
                    ratio: ratio_o,
                    ratio_difference: difference,
                    within_ci: difference.zip(ratio_ci95).map(|(d, ci)| d.abs() <= ci),
                }
            });
            Some(RowReport {
                name: name.clone(),
                label: label.clone(),
                rps,
                repetitions: reps.len(),
                repetition_means: means,
                shards: reps.iter().map(|r| r.shards).max().unwrap_or(1),
                per_shard: reps.iter().flat_map(|r| r.per_shard.clone()).collect(),
                ratio,
                ratio_ci95,
                original,
                welch: welch_p,
                latency_us: crate::latency::of_row(reps),
                non_2xx: sum_opt(
                    reps.iter()
                        .flat_map(|r| r.intervals.iter().map(|i| i.non_ok)),
                ),
                errors: sum_opt(
                    reps.iter()
                        .flat_map(|r| r.intervals.iter().map(|i| i.errors)),
                ),
                availability_pct: availability(reps),
                series: reps.iter().map(series).collect(),
            })
        })
        .collect();
    Some(TableReport {
        name: table.name.clone(),
        title: table
            .spec
            .title
            .clone()
            .unwrap_or_else(|| table.name.clone()),
        baseline: rows[base_idx].0.clone(),
        rows: built,
    })
}

/// Rows named in `table.toml` first, in its order, then the others by name.
fn row_order(table: &TableInput) -> Vec<String> {
    let mut names: Vec<String> = table.spec.row.iter().map(|r| r.name.clone()).collect();
    let mut rest: Vec<String> = table
        .logs
        .iter()
        .map(|l| l.row.clone())
        .filter(|r| !names.contains(r))
        .collect();
    rest.sort();
    rest.dedup();
    names.extend(rest);
    names
}

fn rps_of(rep: &Repetition) -> Vec<f64> {
    rep.intervals.iter().map(|i| i.rps()).collect()
}

fn repetition_means(reps: &[Repetition]) -> Vec<f64> {
    reps.iter()
        .filter_map(|r| describe(&rps_of(r)).map(|d| d.mean))
        .collect()
}

fn sample(reps: &[Repetition]) -> Vec<f64> {
    reps.iter().flat_map(rps_of).collect()
}

fn series(rep: &Repetition) -> Vec<(f64, f64)> {
    let mut t = 0.0;
    rep.intervals
        .iter()
        .map(|i| {
            t += i.length_ms / 1000.0;
            (t, i.rps())
        })
        .collect()
}

fn sum_opt(xs: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    xs.sum()
}

fn availability(reps: &[Repetition]) -> Option<f64> {
    let mut ok = 0u64;
    let mut bad = 0u64;
    for i in reps.iter().flat_map(|r| &r.intervals) {
        ok += i.count;
        bad += i.non_ok? + i.errors?;
    }
    (ok + bad > 0).then(|| ok as f64 * 100.0 / (ok + bad) as f64)
}
