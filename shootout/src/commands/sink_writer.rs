//! `shootout sink-writer LINES --for D [--settle S] [--after FILE] --report PATH` (hidden): the writer
//! of the sinks design. It stands in for a server's logger: it writes the
//! lines of LINES (a server's own log lines, sampled) to stdout over and
//! over, one `write(2)` per line through Rust's line-buffered stdout (as
//! env_logger does: it formats a record into a buffer and writes it with
//! one call), for S uncounted and then D, then writes what it wrote in D
//! to PATH. With `--after FILE` it writes nothing until FILE exists.

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
    /// Write this long first, uncounted: until the buffers between the
    /// writer and what drains it (a pty, ssh's channel window, TCP) are
    /// full, writes go faster than the sink drains.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    settle: Duration,
    /// At least this long from one write's start to the next's: lines
    /// arrive as a server emits them, one at a time, rather than back to
    /// back (a sink that frames each read, as ssh does, takes them at a
    /// different rate). None by default: as fast as the sink takes them.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    gap: Duration,
    /// Write nothing until this file exists (30 s at most, then fail): the
    /// runner creates it once it has read back where the sink's reader
    /// runs, which it can only do while the reader (and so this writer)
    /// still runs.
    #[arg(long)]
    after: Option<PathBuf>,
    /// Where to write the report (JSON: lines, bytes, seconds).
    #[arg(long)]
    report: PathBuf,
}

/// How long `--after` waits for its file.
const AFTER_WAIT: Duration = Duration::from_secs(30);

/// What one writer wrote: `shootout::design::sinks` reads it back.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct WriterReport {
    pub lines: u64,
    pub bytes: u64,
    /// From the first counted write's start to the last write's return.
    pub seconds: f64,
    /// Written first and not counted (`--settle`).
    #[serde(default)]
    pub settle_s: f64,
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
    if let Some(after) = &a.after {
        let waited = Instant::now();
        while !after.exists() {
            if waited.elapsed() >= AFTER_WAIT {
                bail!(
                    "{} did not appear within {}",
                    after.display(),
                    humantime::format_duration(AFTER_WAIT)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let mut out = std::io::stdout().lock();
    let (mut n, mut bytes) = (0u64, 0u64);
    let begun = Instant::now();
    let mut start = begun;
    let mut settled = a.settle.is_zero();
    'outer: loop {
        for line in &lines {
            let due = Instant::now() + a.gap;
            out.write_all(line.as_bytes())
                .context("writing to the sink")?;
            if !settled && begun.elapsed() >= a.settle {
                // Counting starts from this write's return.
                settled = true;
                start = Instant::now();
                continue;
            }
            if settled {
                n += 1;
                bytes += line.len() as u64;
                if start.elapsed() >= a.length {
                    break 'outer;
                }
            }
            // Spin: a sleep's wake-up is coarser than the gaps asked for.
            while Instant::now() < due {
                std::hint::spin_loop();
            }
        }
    }
    let report = WriterReport {
        lines: n,
        bytes,
        seconds: start.elapsed().as_secs_f64(),
        settle_s: a.settle.as_secs_f64(),
    };
    analysis::files::write_atomic(&a.report, &serde_json::to_vec(&report)?)
}
