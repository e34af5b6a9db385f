//! `shootout run FILE` / `shootout list FILE`. See the crate README.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

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
    Run {
        /// Scenario file (TOML), e.g. scenarios/quick.toml.
        file: PathBuf,
        /// Run only the scenario with this name.
        #[arg(long, value_name = "NAME")]
        only: Option<String>,
        /// Measured duration of every scenario (e.g. 2s), overriding the file;
        /// with design = "paired", the length of a block.
        #[arg(long, value_parser = duration)]
        duration: Option<Duration>,
        /// With design = "paired": the most measuring time per comparison.
        #[arg(long, value_parser = duration)]
        budget: Option<Duration>,
        /// Where run directories go.
        #[arg(long, default_value = "results", value_name = "DIR")]
        out: PathBuf,
        /// Build profile: `dev` only checks the machinery quickly; its numbers mean nothing.
        #[arg(long, value_enum, default_value_t = shootout::build::Profile::Release)]
        build_profile: shootout::build::Profile,
    },
    /// Install what the rows of FILEs (or all rows and tests, --all) run and
    /// this machine lacks: as root with apt-get, else one line naming the
    /// command. `run` and `calibrate` do this themselves first.
    Setup {
        files: Vec<PathBuf>,
        #[arg(long)]
        all: bool,
    },
    /// List the scenarios of FILE with their settings.
    List { file: PathBuf },
    /// Measure what difference this machine can resolve: an A/A comparison
    /// and a positive control (a known added CPU cost per request), both in
    /// the paired design; writes calibration.json.
    Calibrate {
        /// Measuring time for both comparisons together, in minutes.
        #[arg(long, default_value_t = 8.0)]
        minutes: f64,
        /// Where the run directory goes.
        #[arg(long, default_value = "results", value_name = "DIR")]
        out: PathBuf,
        /// Server to calibrate with.
        #[arg(long, value_enum, default_value_t = ServerArg::Actix)]
        server: ServerArg,
        /// The control's added CPU per request, in percent of the measured cost.
        #[arg(long, default_value_t = 2.0, value_name = "PERCENT")]
        spin_pct: f64,
        /// Measured length of one block.
        #[arg(long, default_value = "10s", value_parser = duration)]
        block: Duration,
        /// Load before each block's measured part (left out).
        #[arg(long, default_value = "2s", value_parser = duration)]
        settle: Duration,
        /// Connections per loadgen.
        #[arg(long, default_value_t = 256)]
        connections: u32,
        /// Build profile: `dev` only checks the machinery quickly; its numbers mean nothing.
        #[arg(long, value_enum, default_value_t = shootout::build::Profile::Release)]
        build_profile: shootout::build::Profile,
    },
    /// Check the remote hosts of FILE's [ssh] and [hosts.NAME] tables: one
    /// ssh connection each, architecture, cores, kernel, clock offset
    /// (refused above clock_limit), loadgen uploaded to load hosts.
    Hosts {
        file: PathBuf,
        /// Build profile of the loadgen uploaded.
        #[arg(long, value_enum, default_value_t = shootout::build::Profile::Release)]
        build_profile: shootout::build::Profile,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ServerArg {
    Actix,
    Ntex,
}

fn duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("must be more than zero".into());
    }
    Ok(d)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Calibrate {
            minutes,
            out,
            server,
            spin_pct,
            block,
            settle,
            connections,
            build_profile,
        } => {
            let opts = shootout::calibrate::CalibrateOptions {
                server: match server {
                    ServerArg::Actix => shootout::scenario::Server::Actix,
                    ServerArg::Ntex => shootout::scenario::Server::Ntex,
                },
                minutes,
                spin_pct,
                block,
                settle,
                connections,
                out,
                profile: build_profile,
            };
            calibrate(&opts)
        }
        Cmd::Setup { files, all } => {
            let ensured = shootout::setup::needs_of_files(&files, all)
                .and_then(|needs| shootout::setup::ensure(&needs).map(|()| needs))
                .and_then(|needs| {
                    let rows = shootout::setup::rows_of_files(&files)?;
                    shootout::setup::ensure_rust_targets(&rows).map(|()| needs)
                });
            match ensured {
                Ok(needs) => {
                    let names: Vec<&str> = needs.iter().map(|n| n.program).collect();
                    eprintln!("shootout: present: {}", names.join(", "));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("shootout: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Hosts {
            file,
            build_profile,
        } => match shootout::hosts::check_file(&file, build_profile) {
            Ok(table) => {
                print!("{table}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                for line in format!("{e:#}").lines() {
                    eprintln!("shootout: {line}");
                }
                ExitCode::FAILURE
            }
        },
        Cmd::List { file } => match shootout::scenario::load(&file) {
            Ok(f) => match f.write_list(&mut std::io::stdout().lock()) {
                // A reader that stops early (`| head`) is not an error.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("shootout: writing the list: {e}");
                    ExitCode::FAILURE
                }
                _ => ExitCode::SUCCESS,
            },
            Err(e) => {
                eprintln!("shootout: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run {
            file,
            only,
            duration,
            budget,
            out,
            build_profile,
        } => {
            let file = match shootout::scenario::load(&file) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("shootout: {e}");
                    return ExitCode::from(2);
                }
            };
            let stop = stop_flag();
            let opts = shootout::RunOptions {
                only,
                duration,
                budget,
                out,
                profile: build_profile,
            };
            match shootout::run_file(&file, &opts, &stop) {
                Ok(outcome) => {
                    let _ = writeln!(
                        std::io::stdout().lock(),
                        "results: {}",
                        outcome.dir.display()
                    );
                    if outcome.interrupted {
                        eprintln!("shootout: interrupted; everything started was stopped");
                        ExitCode::from(130)
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
                Err(e) => {
                    eprintln!("shootout: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    stop
}

fn calibrate(opts: &shootout::calibrate::CalibrateOptions) -> ExitCode {
    match shootout::calibrate::run(opts, &stop_flag()) {
        Ok(outcome) => {
            let mut out = std::io::stdout().lock();
            if let Some(c) = &outcome.calibration {
                for line in shootout::calibrate::summary_lines(c) {
                    let _ = writeln!(out, "{line}");
                }
            }
            let _ = writeln!(out, "results: {}", outcome.dir.display());
            if outcome.interrupted {
                eprintln!("shootout: interrupted; everything started was stopped");
                ExitCode::from(130)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("shootout: {e:#}");
            ExitCode::FAILURE
        }
    }
}
