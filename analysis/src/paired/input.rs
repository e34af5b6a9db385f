//! Reads one compared row's blocks (see the module docs for the layout) and
//! pairs their intervals into windows.

use std::collections::BTreeMap;
use std::path::Path;

use super::{CpuSample, Order};
use crate::input::Problem;

/// One interval measured on both stacks at once.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Window {
    /// The run it belongs to (1 when a comparison ran once).
    pub run: u32,
    pub block: u32,
    pub order: Order,
    /// Interval number within the block (warm-up included in the count).
    pub index: u64,
    pub start_unix_ms: u64,
    pub row_rps: f64,
    pub base_rps: f64,
    /// Server CPU microseconds per 2xx response, when both boundaries' CPU
    /// samples exist.
    pub row_cpu_us: Option<f64>,
    pub base_cpu_us: Option<f64>,
}

impl Window {
    /// ln(row / baseline) of 2xx/s.
    pub fn log_rps(&self) -> f64 {
        (self.row_rps / self.base_rps).ln()
    }

    /// ln(row / baseline) of server CPU per request.
    pub fn log_cpu(&self) -> Option<f64> {
        Some((self.row_cpu_us? / self.base_cpu_us?).ln())
    }
}

/// A compared row's windows, in time order.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    pub windows: Vec<Window>,
    /// Each block's latency (its loadgen's summary), row and base.
    pub row_latency: Vec<crate::model::Latency>,
    pub base_latency: Vec<crate::model::Latency>,
    pub blocks: u32,
    /// Intervals left out by the pairing rules (see [`read_comparison`]).
    pub dropped: usize,
    /// Each block's slow clients (`STEM.row.slow.jsonl`), when it had any.
    pub row_slow: Vec<loadgen::SlowRecord>,
}

/// Relative difference in measured length above which two intervals are
/// not taken as one window.
pub const LENGTH_TOLERANCE: f64 = 0.05;

/// Reads every block in `dir`. A window needs the same interval (not
/// warm-up) in both logs, both with 2xx responses and measured lengths
/// within [`LENGTH_TOLERANCE`] of each other and of the block's median
/// (a closing fragment is not a window).
pub fn read_comparison(dir: &Path, problems: &mut Vec<Problem>) -> Comparison {
    let mut out = Comparison::default();
    let Ok(entries) = crate::input::raw::read_dir(dir) else {
        problems.push(Problem(format!("{}: cannot read directory", dir.display())));
        return out;
    };
    let mut stems: Vec<String> = entries
        .iter()
        .filter_map(|e| e.name().strip_suffix(".row.jsonl").map(str::to_owned))
        .collect();
    stems.sort();
    for stem in stems {
        let Some((n, order)) = parse_stem(&stem) else {
            problems.push(Problem(format!(
                "{}: {stem}.row.jsonl: not block-NN-ab or block-NN-ba",
                dir.display()
            )));
            continue;
        };
        let read = |suffix: &str| {
            let path = dir.join(format!("{stem}.{suffix}.jsonl"));
            crate::input::raw::read_to_string(&path)
                .map_err(|e| Problem(format!("{}: {e}", path.display())))
        };
        let (row, base) = match (read("row"), read("base")) {
            (Ok(r), Ok(b)) => (r, b),
            (r, b) => {
                problems.extend(r.err().into_iter().chain(b.err()));
                continue;
            }
        };
        let cpu = read("cpu").unwrap_or_default();
        if let Ok(text) = read("row.slow") {
            out.row_slow.extend(super::slow::record_of(&text));
        }
        out.row_latency
            .extend(crate::input::jsonl::summary_latency(&row));
        out.base_latency
            .extend(crate::input::jsonl::summary_latency(&base));
        let row = intervals(&row);
        let base = intervals(&base);
        let samples: BTreeMap<u64, CpuSample> = cpu
            .lines()
            .filter_map(|l| serde_json::from_str::<CpuSample>(l).ok())
            .map(|s| (s.k, s))
            .collect();
        let mut lengths: Vec<f64> = row.values().map(|i| i.length_ms).collect();
        lengths.sort_by(f64::total_cmp);
        let median = lengths.get(lengths.len() / 2).copied().unwrap_or(0.0);
        out.blocks += 1;
        for (index, r) in &row {
            let Some(b) = base.get(index) else {
                out.dropped += 1;
                continue;
            };
            let near = |a: f64, b: f64| (a - b).abs() <= LENGTH_TOLERANCE * a.max(b);
            if r.ok == 0
                || b.ok == 0
                || !near(r.length_ms, b.length_ms)
                || !near(r.length_ms, median)
            {
                out.dropped += 1;
                continue;
            }
            let cpu_us = |ok: u64, f: fn(&CpuSample) -> u64| {
                let (s0, s1) = (samples.get(index)?, samples.get(&(index + 1))?);
                Some(f(s1).checked_sub(f(s0))? as f64 / 1000.0 / ok as f64)
            };
            out.windows.push(Window {
                run: 1,
                block: n,
                order,
                index: *index,
                start_unix_ms: r.start_unix_ms,
                row_rps: r.ok as f64 * 1000.0 / r.length_ms,
                base_rps: b.ok as f64 * 1000.0 / b.length_ms,
                row_cpu_us: cpu_us(r.ok, |s| s.row_cpu_ns),
                base_cpu_us: cpu_us(b.ok, |s| s.base_cpu_ns),
            });
        }
        out.dropped += base.keys().filter(|k| !row.contains_key(k)).count();
    }
    out
}

/// A compared row's runs: the `run-NN` directories of `dir` when the
/// comparison was repeated (`runs = N`), else `dir` itself as run 1. Each
/// run's windows carry its number.
pub fn read_runs(dir: &Path, problems: &mut Vec<Problem>) -> Vec<(u32, Comparison)> {
    run_dirs(dir)
        .into_iter()
        .map(|(n, path)| {
            let mut c = read_comparison(&path, problems);
            for w in &mut c.windows {
                w.run = n;
            }
            (n, c)
        })
        .collect()
}

/// A compared row's run directories, numbered: its `run-NN` directories
/// in order, else `dir` itself as run 1.
pub fn run_dirs(dir: &Path) -> Vec<(u32, std::path::PathBuf)> {
    let mut runs: Vec<(u32, std::path::PathBuf)> = crate::input::raw::read_dir(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.is_dir)
        .filter_map(|e| {
            let n = e.name().strip_prefix("run-")?.parse().ok()?;
            Some((n, e.path))
        })
        .collect();
    if runs.is_empty() {
        return vec![(1, dir.to_path_buf())];
    }
    runs.sort();
    runs
}

/// `block-NN-ab` -> (NN, order).
fn parse_stem(stem: &str) -> Option<(u32, Order)> {
    let rest = stem.strip_prefix("block-")?;
    let (n, order) = rest.split_once('-')?;
    let order = match order {
        "ab" => Order::Ab,
        "ba" => Order::Ba,
        _ => return None,
    };
    Some((n.parse().ok()?, order))
}

/// Measured (not warm-up) intervals of a loadgen jsonl log, by index.
fn intervals(text: &str) -> BTreeMap<u64, loadgen::IntervalRecord> {
    text.lines()
        .filter_map(|l| match serde_json::from_str::<loadgen::Record>(l) {
            Ok(loadgen::Record::Interval(i)) if !i.warmup => Some((i.index, i)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems() {
        assert_eq!(parse_stem("block-03-ab"), Some((3, Order::Ab)));
        assert_eq!(parse_stem("block-12-ba"), Some((12, Order::Ba)));
        assert_eq!(parse_stem("block-x-ab"), None);
        assert_eq!(parse_stem("block-01-aa"), None);
    }
}
