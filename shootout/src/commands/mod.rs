//! The subcommands, one file each: the command line is parsed here and each
//! file turns its options into a call of the stages and an exit code.

mod ab;
mod calibrate;
mod coverage;
mod coverage_plan;
mod history;
mod hosts;
mod list;
mod report;
mod reruns;
mod run;
mod setup;
mod sink_law;
pub mod sink_writer;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::prepare::build::Profile;

#[derive(Debug, Parser)]
#[command(
    name = "shootout",
    version,
    about = "Run a scenario matrix of the actix-web / ntex shootout end to end."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Build, verify, measure and analyse every scenario of FILE.
    Run(run::Args),
    /// Two servers' commands (each one string, with {port}) in the paired
    /// design with an A/A: B against A, and A against a second A.
    Ab(ab::Args),
    /// Install what the rows of FILEs (or all rows and tests, --all) run and
    /// this machine lacks: as root with apt-get, else one line naming the
    /// command. `run` and `calibrate` do this themselves first.
    Setup(setup::Args),
    /// List the scenarios of FILE with their settings.
    List(list::Args),
    /// Rebuild a past run's report from its raw data: README.md,
    /// summary.json.gz, the charts and index.html (one page, beside its
    /// charts, to open in a browser); a script's run gets index.html from
    /// its README.
    Report(report::Args),
    /// Measure what difference this machine can resolve: an A/A comparison
    /// and a positive control (a known added CPU cost per request), both in
    /// the paired design; writes calibration.json.
    Calibrate(calibrate::Args),
    /// How often the paired design's intervals held the true value: from a
    /// run of scenarios/coverage.toml (DUET) and one of
    /// scenarios/coverage-alone.toml (ALONE); writes DUET/coverage.json.
    Coverage(coverage::Args),
    /// The pre-registered coverage plan (docs/coverage-plan.md) judged on
    /// its sittings and its alone reference; writes coverage.json into the
    /// newest sitting.
    CoveragePlan(coverage_plan::Args),
    /// Sweep runs of one scenario file side by side: each max rate per run,
    /// its spread, whether it reproduced within 5 %, and whether one run's
    /// intervals held the others' figures (markdown, or --json).
    Reruns(reruns::Args),
    /// The sink law: a drain run (design = "sinks") beside a served run
    /// (design = "paired") of the same sinks; predicted against measured
    /// 2xx/s per sink and placement, into SERVED/sinks.json, sink-law.md
    /// and sink-law.svg.
    SinkLaw(sink_law::Args),
    /// Each comparison's answer in every committed sitting (run folder):
    /// its identity, whether sittings agree, and the answer across them
    /// once there are three; --write writes results/history.json.
    History(history::Args),
    /// The writer of design = "sinks" (a server's log lines into a sink).
    #[command(hide = true)]
    SinkWriter(sink_writer::Args),
    /// Check the remote hosts of FILE's [ssh] and [hosts.NAME] tables: one
    /// ssh connection each, architecture, cores, kernel, clock offset
    /// (refused above clock_limit), loadgen uploaded to load hosts.
    Hosts(hosts::Args),
}

/// Build profile flag shared by the subcommands that build.
#[derive(Debug, clap::Args)]
struct BuildArgs {
    /// Build profile: `dev` only checks the machinery quickly; its numbers mean nothing.
    #[arg(long, value_enum, default_value_t = ProfileArg::Release)]
    build_profile: ProfileArg,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ProfileArg {
    Release,
    Dev,
}

impl BuildArgs {
    fn profile(&self) -> Profile {
        match self.build_profile {
            ProfileArg::Release => Profile::Release,
            ProfileArg::Dev => Profile::Dev,
        }
    }
}

/// Parses the command line and runs the subcommand.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return command_line_error(&e),
    };
    match cli.command {
        Cmd::Run(a) => run::run(a),
        Cmd::Ab(a) => ab::run(a),
        Cmd::Setup(a) => setup::run(a),
        Cmd::List(a) => list::run(a),
        Cmd::Report(a) => report::run(a),
        Cmd::Calibrate(a) => calibrate::run(a),
        Cmd::Hosts(a) => hosts::run(a),
        Cmd::Coverage(a) => coverage::run(a),
        Cmd::CoveragePlan(a) => coverage_plan::run(a),
        Cmd::Reruns(a) => reruns::run(a),
        Cmd::SinkLaw(a) => sink_law::run(a),
        Cmd::History(a) => history::run(a),
        Cmd::SinkWriter(a) => sink_writer::run(a),
    }
}

/// A bad command line: clap's message on one line (`shootout: invalid value
/// '0' for '--minutes <MINUTES>': …`), without its usage and tips, exit 2;
/// help and version print as usual.
fn command_line_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let what: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    eprintln!("shootout: {}", what.join(" ").trim_start_matches("error: "));
    ExitCode::from(2)
}

/// `10s`, `2m`: a humantime duration above zero.
fn duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("must be more than zero".into());
    }
    Ok(d)
}

/// Set by SIGINT or SIGTERM: the run stops what it started and exits 130.
fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    stop
}

/// The scenario file at `path`, or exit code 2 after its `file:line` error.
fn load_file(path: &std::path::Path) -> Result<crate::config::scenario::ScenarioFile, ExitCode> {
    crate::config::parse::load(path).map_err(|e| {
        eprintln!("shootout: {e}");
        ExitCode::from(2)
    })
}

/// Prints an error as `shootout: …` lines on stderr.
fn report_error(e: &anyhow::Error) {
    for line in format!("{e:#}").lines() {
        eprintln!("shootout: {line}");
    }
}

/// The exit of a run that ended: 130 when interrupted.
fn interrupted_exit() -> ExitCode {
    eprintln!("shootout: interrupted; everything started was stopped");
    ExitCode::from(130)
}
