//! `shootout sink-writer LINES --for D --report PATH` (hidden): the writer
//! of the sinks design. It stands in for a server's logger: it writes the
//! lines of LINES (a server's own log lines, sampled) to stdout over and
//! over, one `write(2)` per line through Rust's line-buffered stdout (as
//! env_logger does: it formats a record into a buffer and writes it with
//! one call), for D, then writes what it wrote to PATH.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::report_error;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The lines to write, one per line, cycled.
    lines: PathBuf,
    /// How long to write.
    #[arg(long = "for", value_parser = humantime::parse_duration)]
    length: Duration,
    /// Where to write the report (JSON: lines, bytes, seconds).
    #[arg(long)]
    report: PathBuf,
}

/// What one writer wrote: `shootout::design::sinks` reads it back.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct WriterReport {
    pub lines: u64,
    pub bytes: u64,
    /// From the first write's start to the last write's return.
    pub seconds: f64,
}

pub(super) fn run(a: Args) -> ExitCode {
    match write_lines(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report_error(&e);
            ExitCode::FAILURE
        }
    }
}

fn write_lines(a: &Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&a.lines)
        .with_context(|| format!("reading {}", a.lines.display()))?;
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    if lines.is_empty() {
        bail!("{}: no line to write", a.lines.display());
    }
    let mut out = std::io::stdout().lock();
    let (mut n, mut bytes) = (0u64, 0u64);
    let start = Instant::now();
    'outer: loop {
        for line in &lines {
            out.write_all(line.as_bytes())
                .context("writing to the sink")?;
            n += 1;
            bytes += line.len() as u64;
            if start.elapsed() >= a.length {
                break 'outer;
            }
        }
    }
    let report = WriterReport {
        lines: n,
        bytes,
        seconds: start.elapsed().as_secs_f64(),
    };
    analysis::files::write_atomic(&a.report, &serde_json::to_vec(&report)?)
}
