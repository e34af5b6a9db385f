//! `shootout calibrate`: the paired design's resolution on this machine, and
//! how the duet reads an effect against the server alone on its core.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::{duration, interrupted_exit, stop_flag, BuildArgs};
use crate::config::scenario::Server;
use crate::design::calibrate::{self, CalibrateOptions};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Measuring time for every comparison together, in minutes.
    #[arg(long, default_value_t = 12.0, value_parser = minutes)]
    minutes: f64,
    /// Where the run directory goes.
    #[arg(long, default_value = "results", value_name = "DIR")]
    out: PathBuf,
    /// Server to calibrate with.
    #[arg(long, value_enum, default_value_t = ServerArg::Actix)]
    server: ServerArg,
    /// The controls' added CPU per request, in percent of the measured
    /// cost: one control per size, each measured interleaved and in the duet.
    #[arg(long, value_delimiter = ',', default_values_t = [1.0, 4.0], value_name = "PERCENT", value_parser = percent)]
    spin_pct: Vec<f64>,
    /// Measured length of one block.
    #[arg(long, default_value = "5s", value_parser = duration)]
    block: Duration,
    /// Load before each block's measured part (left out).
    #[arg(long, default_value = "2s", value_parser = duration)]
    settle: Duration,
    /// Connections per loadgen.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    connections: u32,
    #[command(flatten)]
    build: BuildArgs,
    /// Measure nothing: rewrite calibration.json of the finished calibrate
    /// run in DIR from its meta.json and raw windows, and print its lines.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["minutes", "out", "server", "spin_pct", "block", "settle", "connections"])]
    recompute: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ServerArg {
    Actix,
    Ntex,
}

/// `--recompute DIR`: calibration.json again from the run's own files.
fn recompute(dir: &std::path::Path) -> ExitCode {
    let written = calibrate::recompute(dir).and_then(|c| {
        calibrate::write_json(&dir.join("calibration.json"), &c)?;
        Ok(c)
    });
    match written {
        Ok(c) => {
            let mut out = std::io::stdout().lock();
            for line in calibrate::summary_lines(&c) {
                let _ = writeln!(out, "{line}");
            }
            let _ = writeln!(out, "written: {}", dir.join("calibration.json").display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("shootout: {}: {e:#}", dir.display());
            ExitCode::FAILURE
        }
    }
}

/// `--minutes`: above 0, at most 120 (refused by clap: exit 2, before
/// anything is built).
fn minutes(s: &str) -> Result<f64, String> {
    let m: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if m > 0.0 && m <= 120.0 {
        Ok(m)
    } else {
        Err("must be above 0 and at most 120".into())
    }
}

/// One `--spin-pct` size: a percentage strictly between 0 and 100.
fn percent(s: &str) -> Result<f64, String> {
    let p: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if p > 0.0 && p < 100.0 {
        Ok(p)
    } else {
        Err("a size is a percentage between 0 and 100, for example 1,4".into())
    }
}

pub(super) fn run(a: Args) -> ExitCode {
    if let Some(dir) = &a.recompute {
        return recompute(dir);
    }
    let opts = CalibrateOptions {
        server: match a.server {
            ServerArg::Actix => Server::Actix,
            ServerArg::Ntex => Server::Ntex,
        },
        minutes: a.minutes,
        sizes: a.spin_pct,
        block: a.block,
        settle: a.settle,
        connections: a.connections,
        profile: a.build.profile(),
        out: a.out,
    };
    let outcome = match calibrate::run(&opts, &stop_flag()) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("shootout: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    if let Some(c) = &outcome.calibration {
        for line in calibrate::summary_lines(c) {
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = writeln!(out, "results: {}", outcome.dir.display());
    if outcome.interrupted {
        interrupted_exit()
    } else {
        ExitCode::SUCCESS
    }
}
