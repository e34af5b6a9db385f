//! Drain rate of log sinks (`design = "sinks"`): from each row's
//! `ROW.sinks.json` (the runner's record of a sample of the server's own
//! log lines and of each drain run), lines/s per run, their mean with a
//! Student's t interval over the runs (each run a fresh sink and writer,
//! so runs are the independent unit), bytes/s, and the request rate the
//! sink allows: lines/s ÷ lines per request. The law that sets them
//! beside a served run is [`law`].

pub mod law;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::input::Problem;

/// One sink table (a scenario file of design = "sinks").
#[derive(Debug, Clone, Serialize)]
pub struct SinkTable {
    pub name: String,
    pub title: String,
    pub rows: Vec<SinkRow>,
}

/// One row: its sink and what it drained.
#[derive(Debug, Clone, Serialize)]
pub struct SinkRow {
    pub row: String,
    pub label: String,
    /// The server whose lines were written.
    pub server: String,
    /// `none`, `file`, `pipe`, `terminal`, `xterm`, `alacritty` or
    /// `ssh-terminal`.
    pub sink: String,
    pub log_level: String,
    /// The terminal emulator and its settings (emulator rows; absent in
    /// runs before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal: Option<String>,
    /// Rows on a remote server host: that host (the sink and the writer
    /// were there); none here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// ssh-terminal rows: the stand-in link's shaped rate, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_rate_bps: Option<u64>,
    /// ssh-terminal rows: what took the session's output here
    /// (`drained`, `xterm`, `alacritty`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawn: Option<String>,
    /// `false` where xterm ran with jump scroll off (`+j`); none otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump_scroll: Option<bool>,
    /// The writer's least time between lines, µs (`writer_gap`): lines
    /// reached the sink one at a time, as a server writes them at up to
    /// 1e6 / gap a second; none where it wrote back to back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_gap_us: Option<f64>,
    /// Seconds each run wrote first, uncounted (0 in runs before it).
    #[serde(skip_serializing_if = "is_zero")]
    pub settle_s: f64,
    /// Lines the server logged per answer during its sample load.
    pub lines_per_request: f64,
    /// Mean bytes of a written line (newline included).
    pub line_bytes: f64,
    /// Each run's lines/s.
    pub runs: Vec<f64>,
    pub drain_lines_per_s: f64,
    /// Half-width of the 95 % interval of the mean over runs, percent.
    pub drain_ci95_pct: Option<f64>,
    pub drain_bytes_per_s: f64,
    /// The request rate the sink allows: lines/s ÷ lines per request.
    pub max_rps: f64,
}

#[derive(Debug, Deserialize)]
struct Index {
    row: String,
    label: String,
    server: String,
    sink: String,
    log_level: String,
    #[serde(default)]
    terminal: Option<String>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    link_rate_bps: Option<u64>,
    #[serde(default)]
    drawn: Option<String>,
    #[serde(default)]
    jump_scroll: Option<bool>,
    #[serde(default)]
    writer_gap_us: Option<f64>,
    #[serde(default)]
    settle_s: f64,
    sample_lines: u64,
    sample_requests: u64,
    runs: Vec<Run>,
}

#[derive(Debug, Deserialize)]
struct Run {
    lines: u64,
    bytes: u64,
    seconds: f64,
}

/// The sink table in `dir`, rows in `order` (the file's order; others
/// after, by name); rows that cannot be read become problems.
pub fn build(
    name: &str,
    dir: &Path,
    title: &str,
    order: &[String],
    problems: &mut Vec<Problem>,
) -> SinkTable {
    let mut rows = Vec::new();
    for f in crate::sweep::files_ending(dir, ".sinks.json") {
        match std::fs::read(&f)
            .map_err(anyhow::Error::from)
            .and_then(|b| row(serde_json::from_slice(&b)?))
        {
            Ok(r) => rows.push(r),
            Err(e) => problems.push(Problem(format!("{}: {e:#}", f.display()))),
        }
    }
    rows.sort_by_key(|r| {
        order
            .iter()
            .position(|n| n == &r.row)
            .unwrap_or(order.len())
    });
    SinkTable {
        name: name.into(),
        title: title.into(),
        rows,
    }
}

fn row(ix: Index) -> anyhow::Result<SinkRow> {
    if ix.sample_requests == 0 || ix.sample_lines == 0 {
        anyhow::bail!("row {}: an empty sample", ix.row);
    }
    if ix.runs.iter().any(|r| r.seconds <= 0.0 || r.lines == 0) {
        anyhow::bail!("row {}: a run wrote nothing", ix.row);
    }
    let runs: Vec<f64> = ix.runs.iter().map(|r| r.lines as f64 / r.seconds).collect();
    let d =
        crate::stats::describe(&runs).ok_or_else(|| anyhow::anyhow!("row {}: no run", ix.row))?;
    let (lines, bytes) = ix
        .runs
        .iter()
        .fold((0u64, 0u64), |(l, b), r| (l + r.lines, b + r.bytes));
    let line_bytes = bytes as f64 / lines as f64;
    let lines_per_request = ix.sample_lines as f64 / ix.sample_requests as f64;
    Ok(SinkRow {
        drain_ci95_pct: (runs.len() >= 2).then(|| 100.0 * d.ci95 / d.mean),
        drain_bytes_per_s: d.mean * line_bytes,
        max_rps: d.mean / lines_per_request,
        drain_lines_per_s: d.mean,
        runs,
        line_bytes,
        lines_per_request,
        row: ix.row,
        label: ix.label,
        server: ix.server,
        sink: ix.sink,
        log_level: ix.log_level,
        terminal: ix.terminal,
        host: ix.host,
        link_rate_bps: ix.link_rate_bps,
        drawn: ix.drawn,
        jump_scroll: ix.jump_scroll,
        writer_gap_us: ix.writer_gap_us,
        settle_s: ix.settle_s,
    })
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_is_the_mean_of_runs_with_a_t_interval_and_allows_lines_over_lines_per_request() {
        // Two lines per request; runs of 1,000, 1,200 and 1,100 lines/s of
        // 100-byte lines.
        let ix = Index {
            row: "r".into(),
            label: "r".into(),
            server: "actix".into(),
            sink: "terminal".into(),
            log_level: "info".into(),
            terminal: None,
            host: None,
            link_rate_bps: None,
            drawn: None,
            jump_scroll: None,
            writer_gap_us: None,
            settle_s: 0.0,
            sample_lines: 400,
            sample_requests: 200,
            runs: vec![
                Run {
                    lines: 2000,
                    bytes: 200_000,
                    seconds: 2.0,
                },
                Run {
                    lines: 2400,
                    bytes: 240_000,
                    seconds: 2.0,
                },
                Run {
                    lines: 2200,
                    bytes: 220_000,
                    seconds: 2.0,
                },
            ],
        };
        let r = row(ix).unwrap();
        assert!((r.drain_lines_per_s - 1100.0).abs() < 1e-9);
        // sd 100, t(0.975, 2) = 4.303: half-width 4.303 * 100 / sqrt(3) = 248.4.
        let ci = r.drain_ci95_pct.unwrap();
        assert!((ci - 100.0 * 248.43 / 1100.0).abs() < 0.01, "{ci}");
        assert!((r.line_bytes - 100.0).abs() < 1e-9);
        assert!((r.drain_bytes_per_s - 110_000.0).abs() < 1e-6);
        assert!((r.max_rps - 550.0).abs() < 1e-9);
    }

    #[test]
    fn an_empty_sample_is_refused() {
        let ix = Index {
            row: "r".into(),
            label: "r".into(),
            server: "actix".into(),
            sink: "file".into(),
            log_level: "info".into(),
            terminal: None,
            host: None,
            link_rate_bps: None,
            drawn: None,
            jump_scroll: None,
            writer_gap_us: None,
            settle_s: 0.0,
            sample_lines: 0,
            sample_requests: 10,
            runs: vec![],
        };
        assert!(row(ix).unwrap_err().to_string().contains("empty sample"));
    }
}
