//! `shootout coverage RUN [ALONE]`: how often the paired design's run
//! intervals held the true value, from a run of one of
//! `scenarios/coverage*.toml`, checked against an alone run (each server
//! alone on its core; required for a duet run); writes `RUN/coverage.json`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::report_error;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// A run directory whose comparisons ran as several runs (runs = N).
    run: PathBuf,
    /// A run directory of the same controls with each server alone on its
    /// core (scenarios/coverage-alone.toml): the reference of a duet run,
    /// a cross-check of an interleaved one.
    alone: Option<PathBuf>,
}

pub(super) fn run(a: Args) -> ExitCode {
    let written =
        analysis::sittings::coverage::coverage(&a.run, a.alone.as_deref()).and_then(|c| {
            let path = a.run.join("coverage.json");
            analysis::files::write_atomic(&path, &analysis::sittings::coverage::to_json(&c)?)?;
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
        "{} schedule. A/A: {} of {} run intervals hold 1 ({:.0} %, nominal 95 %); CPU per request {} of {}",
        c.schedule,
        c.aa.covered,
        c.aa.runs,
        share(c.aa.covered, c.aa.runs),
        c.cpu.aa.covered,
        c.cpu.aa.runs
    );
    for s in &c.sizes {
        let mut line = format!(
            "{}: {} of {} run intervals hold the alone effect; measured {:+.2} % ({:+.2} to {:+.2}) over runs",
            s.row,
            s.covered,
            s.runs,
            s.measured_pct,
            s.measured_ci95_pct[0],
            s.measured_ci95_pct[1]
        );
        if let (Some(al), Some(amp), Some(ci)) =
            (s.alone_pct, s.amplification, s.amplification_ci95)
        {
            line += &format!(
                "; alone run {al:+.2} %, measured / alone {amp:.2} ({:.2}-{:.2})",
                ci[0], ci[1]
            );
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(l) = &c.run_level {
        let mut line = format!(
            "run level (groups of {} runs): A/A {} of {} hold 1",
            l.runs_per_group, l.aa.covered, l.aa.runs
        );
        if l.control.runs > 0 {
            line += &format!(
                "; controls {} of {} hold the other runs' effect",
                l.control.covered, l.control.runs
            );
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "written: {}", a.run.join("coverage.json").display());
    ExitCode::SUCCESS
}
