//! `shootout coverage DUET ALONE`: how often the paired design's intervals
//! held the true value, from a run of `scenarios/coverage.toml` and one of
//! `scenarios/coverage-alone.toml`; writes `DUET/coverage.json`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::report_error;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// A run directory of scenarios/coverage.toml (the duet, runs = N).
    duet: PathBuf,
    /// A run directory of scenarios/coverage-alone.toml (each server alone on its core).
    alone: PathBuf,
}

pub(super) fn run(a: Args) -> ExitCode {
    let written = analysis::coverage::coverage(&a.duet, &a.alone).and_then(|c| {
        let path = a.duet.join("coverage.json");
        let tmp = a.duet.join(".coverage.json.tmp");
        std::fs::write(&tmp, analysis::coverage::to_json(&c)?)?;
        std::fs::rename(&tmp, &path)?;
        Ok(c)
    });
    let c = match written {
        Ok(c) => c,
        Err(e) => {
            report_error(&e);
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let share = |k: usize, n: usize| 100.0 * k as f64 / n.max(1) as f64;
    let _ = writeln!(
        out,
        "A/A: {} of {} run intervals hold 1 ({:.0} %, nominal 95 %)",
        c.aa.covered,
        c.aa.runs,
        share(c.aa.covered, c.aa.runs)
    );
    for s in &c.sizes {
        let _ = writeln!(
            out,
            "{}: {} of {} run intervals hold the alone effect {:+.2} %; duet {:+.2} %, amplification {:.2} ({:.2}-{:.2})",
            s.row,
            s.covered,
            s.runs,
            s.alone_pct,
            s.duet_pct,
            s.amplification,
            s.amplification_ci95[0],
            s.amplification_ci95[1]
        );
    }
    let _ = writeln!(out, "written: {}", a.duet.join("coverage.json").display());
    ExitCode::SUCCESS
}
