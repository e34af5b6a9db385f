//! loadgen: the shootout's HTTP/1.1 load generator, as a library the binary
//! and the tests call. See the crate README.

pub mod cli;
pub mod config;
pub mod gate;
pub mod histlog;
pub mod hold;
pub mod limits;
pub mod output;
pub mod record;
pub mod request;
pub mod response;
pub mod run;
pub mod schedule;
pub mod slow;
pub mod stats;
pub mod timer;
pub mod worker;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use config::{Config, Model, Sched};
pub use record::{HoldRecord, IntervalRecord, Record, SlowRecord, SummaryRecord};
pub use run::{run, RunError, Sink};

/// A problem with how loadgen was called: one line, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Exit status for a finished run: 0, or 1 when no request succeeded or the
/// error rate passed `max_error_rate`.
pub fn verdict(summary: &SummaryRecord, max_error_rate: Option<f64>) -> Result<(), String> {
    if summary.ok == 0 {
        return Err(format!(
            "no request succeeded ({} requests, {} errors, {} non-2xx)",
            summary.requests,
            summary.errors.total(),
            summary.non_2xx.total()
        ));
    }
    if let Some(max) = max_error_rate {
        let rate = summary.error_rate();
        if rate > max {
            return Err(format!(
                "error rate {rate:.4} is over --max-error-rate {max}"
            ));
        }
    }
    Ok(())
}

/// The whole program after argument parsing: runs, prints, and picks the exit code.
pub fn main_with(args: cli::Args) -> ExitCode {
    if args.hold.is_some() {
        return hold_main(args);
    }
    if args.slowloris.is_some() {
        return slow_main(args);
    }
    let format = args.format;
    let max_error_rate = args.max_error_rate;
    let config = match args.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = limits::open_files(config.connections, config.threads) {
        eprintln!("loadgen: {e}");
        return ExitCode::from(2);
    }
    let stop = match stop_flag() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let expected = config
        .total_duration()
        .map(|d| (d.as_nanos().div_ceil(config.interval.as_nanos())) as u64);
    let mut sink = output::StreamSink::new(std::io::stdout().lock(), format, expected);
    let summary = match run(config, &mut sink, stop) {
        Ok(s) => s,
        Err(e @ RunError::Unreachable { .. }) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(1);
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = sink.summary(&summary) {
        eprintln!("loadgen: writing the summary: {e}");
        return ExitCode::from(1);
    }
    match verdict(&summary, max_error_rate) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("loadgen: {why}");
            ExitCode::from(1)
        }
    }
}

/// A flag SIGINT and SIGTERM raise.
fn stop_flag() -> Result<Arc<AtomicBool>, ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            eprintln!("loadgen: installing signal handler: {e}");
            return Err(ExitCode::from(2));
        }
    }
    Ok(stop)
}

/// `--slowloris`: prints one record at the end. Exit 1 when no slow
/// connection could be opened.
fn slow_main(args: cli::Args) -> ExitCode {
    use std::io::Write;
    let format = args.format;
    let config = match args.into_slow_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = limits::open_files(config.connections, 1) {
        eprintln!("loadgen: {e}");
        return ExitCode::from(2);
    }
    let stop = match stop_flag() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let summary = match slow::slowloris(&config, &stop) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(1);
        }
    };
    let written = (|| -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        match format {
            cli::Format::Jsonl => {
                serde_json::to_writer(&mut out, &Record::SlowSummary(summary.clone()))?
            }
            cli::Format::Text => write!(out, "{}", summary.text_line())?,
        }
        writeln!(out)?;
        out.flush()
    })();
    if let Err(e) = written {
        eprintln!("loadgen: writing the summary: {e}");
        return ExitCode::from(1);
    }
    if summary.opened == 0 {
        eprintln!(
            "loadgen: no slow connection could be opened ({} connects failed)",
            summary.connect_errors
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `--hold`: prints a record when the hold starts and one when it ends.
/// Exit 1 when no connection could be held.
fn hold_main(args: cli::Args) -> ExitCode {
    use std::io::Write;
    let format = args.format;
    let config = match args.into_hold_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = limits::open_files(config.connections, 1) {
        eprintln!("loadgen: {e}");
        return ExitCode::from(2);
    }
    let stop = match stop_flag() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let write = |record: &Record| -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        match (format, record) {
            (cli::Format::Jsonl, r) => {
                serde_json::to_writer(&mut out, r)?;
                writeln!(out)?;
            }
            (cli::Format::Text, Record::Held(h)) => writeln!(out, "{}", h.text_line(true))?,
            (cli::Format::Text, Record::HoldSummary(h)) => writeln!(out, "{}", h.text_line(false))?,
            (cli::Format::Text, _) => {}
        }
        out.flush()
    };
    let summary = match hold::hold(&config, &mut |r| write(r), &stop) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = write(&Record::HoldSummary(summary.clone())) {
        eprintln!("loadgen: writing the summary: {e}");
        return ExitCode::from(1);
    }
    if summary.established == 0 {
        eprintln!(
            "loadgen: no connection could be held ({} failed, {} not attempted)",
            summary.errors.total(),
            summary.not_attempted
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
