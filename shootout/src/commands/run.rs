//! `shootout run FILE`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::{duration, interrupted_exit, stop_flag, BuildArgs};
use crate::design::{run_file, RunOptions};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Scenario file (TOML), e.g. scenarios/quick.toml.
    file: PathBuf,
    /// Run only the scenario with this name.
    #[arg(long, value_name = "NAME")]
    only: Option<String>,
    /// Measured duration of every scenario (e.g. 2s), overriding the file;
    /// with design = "paired", the length of a block.
    #[arg(long, value_parser = duration)]
    duration: Option<Duration>,
    /// With design = "paired": blocks per comparison, fixed before it starts
    /// (even, at least 4), overriding the file.
    #[arg(long, value_parser = blocks)]
    blocks: Option<u32>,
    /// With design = "paired": the settle before each block's measured part
    /// (the load runs, its seconds are left out), overriding the file.
    #[arg(long, value_parser = settle)]
    settle: Option<Duration>,
    /// With design = "paired": runs of each comparison (fresh processes, a
    /// new slot order, apart in time), overriding the file; with several,
    /// the reported interval is over runs.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    runs: Option<u32>,
    /// Where run directories go.
    #[arg(long, default_value = "results", value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    build: BuildArgs,
}

/// A settle may be zero, as in the file.
pub(super) fn settle(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| e.to_string())
}

fn blocks(s: &str) -> Result<u32, String> {
    let n = s.parse::<u32>().map_err(|e| e.to_string())?;
    crate::config::paired::checked_blocks(n)
}

/// What `run`'s flags override in a file.
#[derive(Debug, Default)]
pub(super) struct Overrides {
    pub only: Option<String>,
    pub duration: Option<Duration>,
    pub blocks: Option<u32>,
    pub settle: Option<Duration>,
    pub runs: Option<u32>,
}

pub(super) fn run(a: Args) -> ExitCode {
    crate::place::orphans::mark_runner();
    let file = match super::load_file(&a.file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    // Command rows start, listen and answer, or the file is refused at
    // their line before anything is built or measured.
    let rows: Vec<_> = file
        .scenarios
        .iter()
        .filter(|s| a.only.as_ref().is_none_or(|o| *o == s.name))
        .cloned()
        .collect();
    let checked = crate::stack::nginx::preflight(&file.path, &rows)
        .and_then(|()| crate::stack::command::preflight(&file.path, &rows));
    if let Err(e) = checked {
        eprintln!("shootout: {e}");
        return ExitCode::from(2);
    }
    let overrides = Overrides {
        only: a.only,
        duration: a.duration,
        blocks: a.blocks,
        settle: a.settle,
        runs: a.runs,
    };
    run_parsed(file, overrides, a.out, a.build.profile(), None)
}

/// Runs `file` as `shootout run` does, into a run folder under `out`;
/// `keep` is a file (name, text) to leave in that folder (`shootout ab`'s
/// scenario, which no file on disk holds).
pub(super) fn run_parsed(
    file: crate::config::scenario::ScenarioFile,
    o: Overrides,
    out: PathBuf,
    profile: crate::prepare::build::Profile,
    keep: Option<(&str, String)>,
) -> ExitCode {
    let opts = RunOptions {
        only: o.only,
        duration: o.duration,
        blocks: o.blocks,
        settle: o.settle,
        runs: o.runs,
        out,
        profile,
    };
    let outcome = match run_file(&file, &opts, &stop_flag()) {
        Ok(outcome) => outcome,
        Err(e) if e.is::<crate::Interrupted>() => {
            eprintln!("shootout: interrupted before anything was recorded");
            return interrupted_exit();
        }
        Err(e) => {
            eprintln!("shootout: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if let Some((name, text)) = keep {
        // Beside its records, then the page again, which lists the run's
        // files: as a fresh `shootout report` of the folder renders it.
        let path = outcome.dir.join(name);
        let kept = analysis::files::write_atomic(&path, text.as_bytes())
            .and_then(|()| crate::record::report::analyse(&outcome.dir).map(|_| ()));
        if let Err(e) = kept {
            eprintln!("shootout: {e:#}");
        }
    }
    let _ = writeln!(
        std::io::stdout().lock(),
        "results: {}",
        outcome.dir.display()
    );
    if outcome.interrupted || outcome.stopped_in_report {
        interrupted_exit()
    } else if outcome.failed() > 0 {
        eprintln!(
            "shootout: {} of {} scenario runs failed",
            outcome.failed(),
            outcome.total()
        );
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
