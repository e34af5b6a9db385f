//! The sink law (issue 24, part 4): a server that logs `l` lines per answer
//! into a sink that drains `d` lines/s answers at most
//! `min(d / l, c)` requests/s, where `c` is the same placement's rate
//! without logging. This sets a drain run (`design = "sinks"`: each sink
//! alone, fed the servers' own lines) beside a served run (`design =
//! "paired"`: the same sinks as served rows, each against a no-logging
//! baseline) and reports, per sink and placement, the predicted rate, the
//! measured one with its interval, and whether the sink is the bottleneck.
//!
//! Rows are joined by what the scenario files set: the sink's name, its
//! level, the host it is on (a row's remote server host), and for an ssh
//! terminal what drew it and the link's rate. A
//! measured rate is the mean over blocks of each block's mean 2xx/s (over
//! every measured interval, those with no answer too), with
//! Student's t over blocks (blocks are the independent unit; seconds within
//! one are autocorrelated). A placement's ceiling pools every block of its
//! no-logging sides (the build without `log-stdout`).
//!
//! Rates are per second of load. Under `schedule = "interleave"` each
//! loadgen sends in one half of every turn and an interval is a whole
//! number of turns, so its 2xx count covers half the interval's seconds of
//! load: such a run's rates are its counts over [`INTERLEAVE_ACTIVE_SHARE`]
//! of each interval's length (a drain rate is per second of writing, so
//! the two compare). Before 2026-11-26 they were over the whole length,
//! which halved an interleaved run's measured rates and ceiling alike.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::input::Problem;
use crate::sinks::SinkRow;

/// How far measured may be from predicted for the law to hold on a row.
pub const TOLERANCE: f64 = 0.15;

/// The share of each interval a loadgen loads under `schedule =
/// "interleave"` (`loadgen --active-half`: one half of every turn).
pub const INTERLEAVE_ACTIVE_SHARE: f64 = 0.5;

/// The share of each measured interval a served run's loadgens load.
fn active_share(schedule: Option<&str>) -> f64 {
    match schedule {
        Some("interleave") => INTERLEAVE_ACTIVE_SHARE,
        _ => 1.0,
    }
}

/// One served row set beside its sink's drain rate (a line of sinks.json).
#[derive(Debug, Clone, Serialize)]
pub struct LawRow {
    pub sink: String,
    /// What took a terminal sink's lines: `drained` (a pseudo-terminal
    /// the runner drains), `xterm` or `alacritty`; none for files and pipes.
    pub terminal: Option<String>,
    /// `direct`, or `behind nginx (NAME)`.
    pub placement: String,
    pub drain_lines_per_s: f64,
    pub predicted_rps: f64,
    pub measured_rps: f64,
    pub measured_ci95_pct: Option<f64>,
    /// True where the sink allows less than the no-logging rate.
    pub bottleneck: bool,
    pub row: String,
    pub label: String,
    pub log_level: String,
    pub link_rate_bps: Option<u64>,
    /// The drain run's row the rate comes from, and its interval.
    pub drain_row: String,
    pub drain_ci95_pct: Option<f64>,
    pub lines_per_request: f64,
    /// The placement's no-logging rate.
    pub ceiling_rps: f64,
    pub measured_over_predicted: f64,
    /// |measured / predicted − 1| ≤ [`TOLERANCE`].
    pub within_tolerance: bool,
    pub blocks: usize,
}

/// A placement's no-logging rate.
#[derive(Debug, Clone, Serialize)]
pub struct Ceiling {
    pub placement: String,
    /// The sides it pools (`row` or `baseline of ROW`).
    pub from: Vec<String>,
    pub rps: f64,
    pub ci95_pct: Option<f64>,
    pub blocks: usize,
}

/// Both runs set side by side.
#[derive(Debug, Clone, Serialize)]
pub struct Law {
    /// The runs' directory names (siblings under `results/`).
    pub drain_run: String,
    pub served_run: String,
    /// The share of each interval the served run's loadgens loaded (0.5
    /// interleaved, else 1): its rates are counts over that share.
    pub active_share: f64,
    pub ceilings: Vec<Ceiling>,
    pub rows: Vec<LawRow>,
}

/// The rate the law predicts and whether the sink is the bottleneck.
pub fn predict(drain_lines_per_s: f64, lines_per_request: f64, ceiling_rps: f64) -> (f64, bool) {
    let sink = drain_lines_per_s / lines_per_request;
    (sink.min(ceiling_rps), sink < ceiling_rps)
}

/// Mean of block means and the half-width of its 95 % t interval, percent
/// (none with one block).
pub fn over_blocks(block_means: &[f64]) -> Option<(f64, Option<f64>)> {
    let d = crate::stats::describe(block_means)?;
    Some((
        d.mean,
        (block_means.len() >= 2).then(|| 100.0 * d.ci95 / d.mean),
    ))
}

#[derive(Debug, Deserialize)]
struct Meta {
    #[serde(default)]
    paired: Vec<Comparison>,
}

#[derive(Debug, Deserialize)]
struct Comparison {
    row: String,
    baseline: String,
    #[serde(default)]
    row_sink: Option<Sink>,
    #[serde(default)]
    base_sink: Option<Sink>,
}

#[derive(Debug, Clone, Deserialize)]
struct Sink {
    /// Empty in runs before it was recorded: any server's drain row then.
    #[serde(default)]
    server: String,
    log: String,
    log_level: String,
    log_stdout: bool,
    drawn: Option<String>,
    link_rate_bps: Option<u64>,
    /// `false` where xterm ran with jump scroll off (absent otherwise).
    #[serde(default)]
    jump_scroll: Option<bool>,
    proxy: Option<String>,
    /// The row's remote server host (absent here, and in runs before it
    /// was recorded).
    #[serde(default)]
    server_host: Option<String>,
}

impl Sink {
    fn placement(&self) -> String {
        let front = match &self.proxy {
            None => "direct".into(),
            Some(p) => format!("behind nginx ({p})"),
        };
        match &self.server_host {
            None => front,
            Some(h) => format!("{front}, server on host {h}"),
        }
    }

    /// The host the sink is on: the server's, but an ssh terminal's is
    /// here (the drain run's ssh rows have no server host).
    fn sink_host(&self) -> Option<&str> {
        match self.log.as_str() {
            "ssh-terminal" => None,
            _ => self.server_host.as_deref(),
        }
    }

    /// What drew (or drained) the lines, for terminal sinks: an ssh
    /// terminal's `drawn`, else the local sink's own terminal; xterm with
    /// jump scroll off is `xterm +j`.
    fn terminal(&self) -> Option<String> {
        let t = match self.log.as_str() {
            "ssh-terminal" => self.drawn.clone(),
            "terminal" => Some("drained".into()),
            "xterm" | "alacritty" => Some(self.log.clone()),
            _ => None,
        };
        match self.jump_scroll {
            Some(false) => t.map(|t| format!("{t} +j")),
            _ => t,
        }
    }

    /// A served row's sink takes the drain of the same sink fed back to
    /// back: a paced drain (`writer_gap`) is a drain at one pace, not the
    /// sink's rate.
    fn drains_into(&self, d: &SinkRow) -> bool {
        d.writer_gap_us.is_none()
            && (self.server.is_empty() || self.server == d.server)
            && self.log == d.sink
            && self.log_level == d.log_level
            && self.drawn == d.drawn
            && self.link_rate_bps == d.link_rate_bps
            && self.jump_scroll == d.jump_scroll
            && self.sink_host() == d.host.as_deref()
    }
}

/// Each block's mean 2xx/s of the row and of the baseline, in run and
/// block order (every run of a repeated comparison, `runs = N`).
type Blocks = (Vec<f64>, Vec<f64>);

/// Unlike the paired ratios, which need both sides' windows with answers
/// (a log ratio of 0 is undefined), a rate here counts every measured
/// interval of its side, those with no answer too: a server stalled for a
/// second behind its sink answered nothing in it. Left out: warm-up and a
/// closing fragment (length off the block's median by more than
/// [`crate::paired::input::LENGTH_TOLERANCE`]).
fn blocks(dir: &Path, share: f64, problems: &mut Vec<Problem>) -> Blocks {
    let mut out: Blocks = (Vec::new(), Vec::new());
    for (_, run) in crate::paired::input::run_dirs(dir) {
        for row_log in crate::sweep::files_ending(&run, ".row.jsonl") {
            let base_log = PathBuf::from(
                row_log
                    .display()
                    .to_string()
                    .replace(".row.jsonl", ".base.jsonl"),
            );
            match (side_mean(&row_log), side_mean(&base_log)) {
                (Ok(r), Ok(b)) => {
                    out.0.push(r / share);
                    out.1.push(b / share);
                }
                (r, b) => problems.extend(
                    r.err()
                        .into_iter()
                        .chain(b.err())
                        .map(|e| Problem(format!("{e:#}"))),
                ),
            }
        }
    }
    out
}

/// The mean 2xx/s over one side's measured intervals in a block's log.
fn side_mean(log: &Path) -> anyhow::Result<f64> {
    let text = crate::input::raw::read_to_string(log)
        .with_context(|| format!("reading {}", log.display()))?;
    let intervals: Vec<loadgen::IntervalRecord> = text
        .lines()
        .filter_map(|l| match serde_json::from_str::<loadgen::Record>(l) {
            Ok(loadgen::Record::Interval(i)) if !i.warmup => Some(i),
            _ => None,
        })
        .collect();
    let mut lengths: Vec<f64> = intervals.iter().map(|i| i.length_ms).collect();
    lengths.sort_by(f64::total_cmp);
    let median = lengths.get(lengths.len() / 2).copied().unwrap_or(0.0);
    let tol = crate::paired::input::LENGTH_TOLERANCE;
    let rates: Vec<f64> = intervals
        .iter()
        .filter(|i| (i.length_ms - median).abs() <= tol * median && i.length_ms > 0.0)
        .map(|i| i.ok as f64 * 1000.0 / i.length_ms)
        .collect();
    if rates.is_empty() {
        anyhow::bail!("{}: no measured interval", log.display());
    }
    Ok(rates.iter().sum::<f64>() / rates.len() as f64)
}

/// The one subdirectory of `run` holding `file` (a run's table).
fn table_dir(run: &Path, has: impl Fn(&Path) -> bool) -> anyhow::Result<PathBuf> {
    let mut dirs = Vec::new();
    for e in std::fs::read_dir(run).with_context(|| format!("reading {}", run.display()))? {
        let p = e?.path();
        if p.is_dir() && has(&p) {
            dirs.push(p);
        }
    }
    match dirs.as_slice() {
        [one] => Ok(one.clone()),
        _ => anyhow::bail!(
            "{}: expected one table, found {}",
            run.display(),
            dirs.len()
        ),
    }
}

/// The served run's `meta.json` (a paired run's), its table directory and
/// that table's `table.toml`.
fn served_run(served: &Path) -> anyhow::Result<(Meta, PathBuf, crate::input::TableSpec)> {
    let meta: Meta = serde_json::from_slice(
        &crate::input::raw::read(&served.join("meta.json"))
            .with_context(|| format!("reading {}/meta.json", served.display()))?,
    )
    .with_context(|| format!("{}/meta.json", served.display()))?;
    if meta.paired.is_empty() {
        anyhow::bail!(
            "{}: not a paired run (the served rows are compared against a no-logging baseline)",
            served.display()
        );
    }
    let served_table = table_dir(served, |p| p.join("table.toml").exists())?;
    let spec_path = served_table.join("table.toml");
    let spec: crate::input::TableSpec = toml::from_str(
        &std::fs::read_to_string(&spec_path)
            .with_context(|| format!("reading {}", spec_path.display()))?,
    )
    .with_context(|| format!("{}", spec_path.display()))?;
    Ok((meta, served_table, spec))
}

/// The ceilings (no-logging sides by placement) that have blocks measured.
fn ceilings_of(by_placement: BTreeMap<String, (Vec<String>, Vec<f64>)>) -> Vec<Ceiling> {
    by_placement
        .into_iter()
        .filter_map(|(placement, (from, b))| {
            let (rps, ci95_pct) = over_blocks(&b)?;
            Some(Ceiling {
                placement,
                from,
                rps,
                ci95_pct,
                blocks: b.len(),
            })
        })
        .collect()
}

/// A run's directory name (its path when it has none).
fn run_name(p: &Path) -> String {
    p.file_name().map_or(p.display().to_string(), |n| {
        n.to_string_lossy().into_owned()
    })
}

/// Sets the drain run `drain` beside the served run `served`.
pub fn law(drain: &Path, served: &Path) -> anyhow::Result<Law> {
    let mut problems = Vec::new();
    let drain_table = table_dir(drain, |p| {
        !crate::sweep::files_ending(p, ".sinks.json").is_empty()
    })
    .context("the drain run (design = \"sinks\")")?;
    let name = drain_table
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let drains = crate::sinks::build(&name, &drain_table, "", &[], &mut problems).rows;
    let (meta, served_table, spec) = served_run(served)?;
    let share = active_share(spec.schedule.as_deref());
    let label = |row: &str| {
        spec.row
            .iter()
            .find(|r| r.name == row)
            .and_then(|r| r.label.clone())
            .unwrap_or_default()
    };
    let mut ceilings: BTreeMap<String, (Vec<String>, Vec<f64>)> = BTreeMap::new();
    let mut sides = Vec::new();
    // A repeated comparison appears once per run; its directory holds them all.
    let mut seen = std::collections::BTreeSet::new();
    for c in meta.paired.iter().filter(|c| seen.insert(c.row.clone())) {
        let (Some(row), Some(base)) = (&c.row_sink, &c.base_sink) else {
            anyhow::bail!(
                "{}: comparison {} has no sink record (run before sinks were recorded)",
                served.display(),
                c.row
            );
        };
        let (row_blocks, base_blocks) = blocks(&served_table.join(&c.row), share, &mut problems);
        for (side, sink, b) in [
            (c.row.clone(), row, &row_blocks),
            (
                format!("baseline {} (of {})", c.baseline, c.row),
                base,
                &base_blocks,
            ),
        ] {
            if !sink.log_stdout {
                let e = ceilings.entry(sink.placement()).or_default();
                e.0.push(side);
                e.1.extend(b.iter().copied());
            }
        }
        sides.push((c, row.clone(), row_blocks));
    }
    let ceilings = ceilings_of(ceilings);
    let mut rows = Vec::new();
    for (c, sink, b) in sides {
        if !sink.log_stdout {
            continue;
        }
        let placement = sink.placement();
        let Some(d) = drains.iter().find(|d| sink.drains_into(d)) else {
            problems.push(Problem(format!(
                "row {}: no drain row for sink {} ({:?}, {:?} bit/s, level {}, on {})",
                c.row,
                sink.log,
                sink.drawn,
                sink.link_rate_bps,
                sink.log_level,
                sink.sink_host()
                    .map_or("this machine".into(), |h| format!("host {h}"))
            )));
            continue;
        };
        let Some(ceiling) = ceilings.iter().find(|x| x.placement == placement) else {
            problems.push(Problem(format!(
                "row {}: no no-logging row {placement} to give the ceiling",
                c.row
            )));
            continue;
        };
        let Some((measured, ci)) = over_blocks(&b) else {
            problems.push(Problem(format!("row {}: no block measured", c.row)));
            continue;
        };
        let (predicted, bottleneck) =
            predict(d.drain_lines_per_s, d.lines_per_request, ceiling.rps);
        let ratio = measured / predicted;
        rows.push(LawRow {
            sink: sink.log.clone(),
            terminal: sink.terminal(),
            placement,
            drain_lines_per_s: d.drain_lines_per_s,
            predicted_rps: predicted,
            measured_rps: measured,
            measured_ci95_pct: ci,
            bottleneck,
            row: c.row.clone(),
            label: label(&c.row),
            log_level: sink.log_level.clone(),
            link_rate_bps: sink.link_rate_bps,
            drain_row: d.row.clone(),
            drain_ci95_pct: d.drain_ci95_pct,
            lines_per_request: d.lines_per_request,
            ceiling_rps: ceiling.rps,
            measured_over_predicted: ratio,
            within_tolerance: (ratio - 1.0).abs() <= TOLERANCE,
            blocks: b.len(),
        });
    }
    if !problems.is_empty() {
        let all: Vec<String> = problems.into_iter().map(|p| p.0).collect();
        anyhow::bail!("{}", all.join("; "));
    }
    Ok(Law {
        drain_run: run_name(drain),
        served_run: run_name(served),
        active_share: share,
        ceilings,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_law_is_the_lesser_of_the_sink_and_the_ceiling() {
        // 1,000 lines/s at 2 lines a request allows 500/s, below 30,000.
        assert_eq!(predict(1000.0, 2.0, 30_000.0), (500.0, true));
        // 90,000 lines/s at 1 line a request: the ceiling holds.
        assert_eq!(predict(90_000.0, 1.0, 30_000.0), (30_000.0, false));
    }

    #[test]
    fn a_rate_is_the_mean_of_block_means_with_t_over_blocks() {
        // Blocks 800, 900, 1000: mean 900, sd 100, t(0.975, 2) = 4.303,
        // half-width 4.303 * 100 / sqrt(3) = 248.4, 27.6 % of 900.
        let (m, ci) = over_blocks(&[800.0, 900.0, 1000.0]).unwrap();
        assert!((m - 900.0).abs() < 1e-9);
        assert!((ci.unwrap() - 27.60).abs() < 0.01, "{ci:?}");
        assert_eq!(over_blocks(&[5.0]), Some((5.0, None)));
        assert_eq!(over_blocks(&[]), None);
    }

    /// A loadgen interval line: `ok` answers in one second.
    fn interval(index: u64, ok: u64) -> String {
        format!(
            r#"{{"type": "interval", "index": {index}, "start_unix_ms": {}, "length_ms": 1000.0, "warmup": false, "ok": {ok}, "non_2xx": {{"1xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, "other": 0}}, "errors": {{"connect": 0, "read": 0, "write": 0, "timeout": 0, "parse": 0, "closed": 0}}, "late": 0, "total_ok": 0, "elapsed_s": 1.0, "latency_us": {{"p50": 1, "p99": 1, "max": 1}}, "histogram": null}}"#,
            1_000_000 + index * 1000
        )
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A served row's two blocks: each block's row and base answers per
    /// interval (two intervals a block).
    fn served_row(dir: &Path, row: &str, blocks: [([u64; 2], [u64; 2]); 2]) {
        for (n, (r, b)) in blocks.iter().enumerate() {
            let stem = dir.join(row).join(format!("block-0{}-ab", n + 1));
            let lines = |v: &[u64; 2]| format!("{}\n{}\n", interval(1, v[0]), interval(2, v[1]));
            write(&stem.with_extension("row.jsonl"), &lines(r));
            write(&stem.with_extension("base.jsonl"), &lines(b));
        }
    }

    #[test]
    fn a_drain_run_and_a_served_run_joined_by_sink_worked_by_hand() {
        let root = std::env::temp_dir().join(format!("sink-law-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (drain, served) = (root.join("drain"), root.join("served"));
        // Drain: 2 lines a request; "slow" drains 1,000 lines/s (allows
        // 500/s), "fast" 100,000 (allows 50,000).
        for (row, link, lines) in [("slow", "1000000", 2000), ("fast", "null", 200_000)] {
            write(
                &drain.join("t").join(format!("{row}.sinks.json")),
                &format!(
                    r#"{{"row": "{row}", "label": "{row}", "server": "actix", "sink": "ssh-terminal", "log_level": "info", "drawn": "drained", "link_rate_bps": {link}, "sample_lines": 200, "sample_requests": 100, "runs": [{{"lines": {lines}, "bytes": 1, "seconds": 2.0}}, {{"lines": {lines}, "bytes": 1, "seconds": 2.0}}]}}"#
                ),
            );
        }
        let sink = |log: &str, stdout: bool, link: &str| {
            format!(
                r#"{{"server": "actix", "log": "{log}", "log_level": "info", "log_stdout": {stdout}, "drawn": {}, "link_rate_bps": {link}, "proxy": null}}"#,
                if stdout { "\"drained\"" } else { "null" }
            )
        };
        let none = sink("none", false, "null");
        write(
            &served.join("meta.json"),
            &format!(
                r#"{{"paired": [{{"row": "slow", "baseline": "nolog", "row_sink": {}, "base_sink": {none}}}, {{"row": "fast", "baseline": "nolog", "row_sink": {}, "base_sink": {none}}}]}}"#,
                sink("ssh-terminal", true, "1000000"),
                sink("ssh-terminal", true, "null")
            ),
        );
        let t = served.join("t");
        write(
            &t.join("table.toml"),
            "[[row]]\nname = \"slow\"\nlabel = \"a slow sink\"\n",
        );
        // slow: blocks of 460 and 500/s; the baseline 10,000/s throughout.
        served_row(
            &t,
            "slow",
            [([450, 470], [10_000; 2]), ([490, 510], [10_000; 2])],
        );
        served_row(
            &t,
            "fast",
            [([9_000; 2], [10_000; 2]), ([9_000; 2], [10_000; 2])],
        );
        let got = law(&drain, &served).unwrap();
        assert_eq!(got.ceilings.len(), 1);
        assert_eq!(got.ceilings[0].placement, "direct");
        assert!((got.ceilings[0].rps - 10_000.0).abs() < 1e-9);
        assert_eq!(got.ceilings[0].blocks, 4);
        let slow = &got.rows[0];
        assert_eq!(
            (slow.row.as_str(), slow.label.as_str()),
            ("slow", "a slow sink")
        );
        assert!((slow.predicted_rps - 500.0).abs() < 1e-9);
        assert!((slow.measured_rps - 480.0).abs() < 1e-9);
        // Blocks 460 and 500: sd 28.28, t(0.975, 1) = 12.706, half-width
        // 12.706 * 28.28 / sqrt(2) = 254.1, 52.9 % of 480.
        let ci = slow.measured_ci95_pct.unwrap();
        assert!((ci - 52.94).abs() < 0.05, "{ci}");
        assert!(slow.bottleneck && slow.within_tolerance);
        let fast = &got.rows[1];
        assert!((fast.predicted_rps - 10_000.0).abs() < 1e-9);
        assert!(!fast.bottleneck);
        assert!((fast.measured_over_predicted - 0.9).abs() < 1e-9);
        assert_eq!(got.active_share, 1.0);
        // Interleaved, each loadgen loaded half of every interval: the same
        // counts are twice the rates per second of load.
        write(
            &t.join("table.toml"),
            "schedule = \"interleave\"\n[[row]]\nname = \"slow\"\nlabel = \"a slow sink\"\n",
        );
        let got = law(&drain, &served).unwrap();
        assert_eq!(got.active_share, 0.5);
        assert!((got.ceilings[0].rps - 20_000.0).abs() < 1e-9);
        let slow = &got.rows[0];
        assert!((slow.measured_rps - 960.0).abs() < 1e-9);
        assert!((slow.predicted_rps - 500.0).abs() < 1e-9);
        assert!((slow.measured_ci95_pct.unwrap() - 52.94).abs() < 0.05);
        let fast = &got.rows[1];
        assert!((fast.predicted_rps - 20_000.0).abs() < 1e-9);
        assert!((fast.measured_rps - 18_000.0).abs() < 1e-9);
        // A served run without sink records is refused, named.
        write(
            &served.join("meta.json"),
            r#"{"paired": [{"row": "slow", "baseline": "nolog"}]}"#,
        );
        let e = law(&drain, &served).unwrap_err().to_string();
        assert!(e.contains("comparison slow has no sink record"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_sink_on_a_remote_host_takes_that_hosts_drain_and_an_ssh_terminal_the_local_one() {
        let root = std::env::temp_dir().join(format!("sink-law-host-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (drain, served) = (root.join("drain"), root.join("served"));
        // One line a request. A file here drains 100,000 lines/s, a file on
        // host "server" 2,000, an ssh terminal (drained here) 1,000.
        for (row, sink, host, lines) in [
            ("file-here", "file", "null", 200_000),
            ("file-there", "file", "\"server\"", 4_000),
            ("ssh", "ssh-terminal", "null", 2_000),
        ] {
            write(
                &drain.join("t").join(format!("{row}.sinks.json")),
                &format!(
                    r#"{{"row": "{row}", "label": "{row}", "server": "actix", "sink": "{sink}", "log_level": "info", "host": {host}, "drawn": {}, "sample_lines": 100, "sample_requests": 100, "runs": [{{"lines": {lines}, "bytes": 1, "seconds": 2.0}}, {{"lines": {lines}, "bytes": 1, "seconds": 2.0}}]}}"#,
                    if sink == "ssh-terminal" {
                        "\"drained\""
                    } else {
                        "null"
                    }
                ),
            );
        }
        let sink = |log: &str, stdout: bool| {
            format!(
                r#"{{"server": "actix", "log": "{log}", "log_level": "info", "log_stdout": {stdout}, "drawn": {}, "link_rate_bps": null, "proxy": null, "server_host": "server"}}"#,
                if log == "ssh-terminal" {
                    "\"drained\""
                } else {
                    "null"
                }
            )
        };
        let none = sink("none", false);
        write(
            &served.join("meta.json"),
            &format!(
                r#"{{"paired": [{{"row": "file", "baseline": "nolog", "row_sink": {}, "base_sink": {none}}}, {{"row": "ssh", "baseline": "nolog", "row_sink": {}, "base_sink": {none}}}]}}"#,
                sink("file", true),
                sink("ssh-terminal", true)
            ),
        );
        let t = served.join("t");
        write(&t.join("table.toml"), "");
        for row in ["file", "ssh"] {
            served_row(
                &t,
                row,
                [([900; 2], [10_000; 2]), ([1_100; 2], [10_000; 2])],
            );
        }
        let got = law(&drain, &served).unwrap();
        assert_eq!(got.ceilings[0].placement, "direct, server on host server");
        assert_eq!(got.rows[0].drain_row, "file-there");
        assert!((got.rows[0].predicted_rps - 2_000.0).abs() < 1e-9);
        assert_eq!(got.rows[1].drain_row, "ssh");
        assert!((got.rows[1].predicted_rps - 1_000.0).abs() < 1e-9);
        // Without the remote host's drain, the file row is named as missing.
        std::fs::remove_file(drain.join("t").join("file-there.sinks.json")).unwrap();
        let e = law(&drain, &served).unwrap_err().to_string();
        assert!(
            e.contains("row file: no drain row for sink file") && e.contains("on host server"),
            "{e}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn xterm_with_jump_scroll_off_takes_only_its_own_drain() {
        let root = std::env::temp_dir().join(format!("sink-law-j-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (drain, served) = (root.join("drain"), root.join("served"));
        // One line a request: xterm drains 50,000 lines/s, xterm +j 1,000,
        // and 500 fed a line every 50 µs at most (a paced drain, which the
        // law leaves out whatever its order).
        for (row, j, lines) in [
            (
                "a-paced",
                r#""jump_scroll": false, "writer_gap_us": 50.0, "#,
                1_000,
            ),
            ("xterm", "", 100_000),
            ("xterm-j", r#""jump_scroll": false, "#, 2_000),
        ] {
            write(
                &drain.join("t").join(format!("{row}.sinks.json")),
                &format!(
                    r#"{{"row": "{row}", "label": "{row}", "server": "actix", "sink": "xterm", "log_level": "info", {j}"sample_lines": 100, "sample_requests": 100, "runs": [{{"lines": {lines}, "bytes": 1, "seconds": 2.0}}, {{"lines": {lines}, "bytes": 1, "seconds": 2.0}}]}}"#
                ),
            );
        }
        let sink = |log: &str, stdout: bool, j: &str| {
            format!(
                r#"{{"server": "actix", "log": "{log}", "log_level": "info", "log_stdout": {stdout}, "drawn": null, "link_rate_bps": null, {j}"proxy": null}}"#
            )
        };
        let none = sink("none", false, "");
        write(
            &served.join("meta.json"),
            &format!(
                r#"{{"paired": [{{"row": "j", "baseline": "nolog", "row_sink": {}, "base_sink": {none}}}, {{"row": "x", "baseline": "nolog", "row_sink": {}, "base_sink": {none}}}]}}"#,
                sink("xterm", true, r#""jump_scroll": false, "#),
                sink("xterm", true, "")
            ),
        );
        let t = served.join("t");
        write(&t.join("table.toml"), "");
        for row in ["j", "x"] {
            served_row(
                &t,
                row,
                [([900; 2], [10_000; 2]), ([1_100; 2], [10_000; 2])],
            );
        }
        let got = law(&drain, &served).unwrap();
        let (j, x) = (&got.rows[0], &got.rows[1]);
        assert_eq!(
            (j.drain_row.as_str(), x.drain_row.as_str()),
            ("xterm-j", "xterm")
        );
        assert_eq!(j.terminal.as_deref(), Some("xterm +j"));
        assert_eq!(x.terminal.as_deref(), Some("xterm"));
        assert!((j.predicted_rps - 1_000.0).abs() < 1e-9 && j.bottleneck && j.within_tolerance);
        // xterm allows 50,000, above the 10,000 ceiling.
        assert!((x.predicted_rps - 10_000.0).abs() < 1e-9 && !x.bottleneck);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
