//! `shootout report [--pack] DIR…`: each run's page (its raw records
//! packed first with --pack), and the index of the runs
//! (`results/index.html`) where the runs' directory keeps a history.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::record::report;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Run directories, e.g. results/2026-11-23T20-51-00Z-quick.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// First pack the run's loose raw records (`*.jsonl`) into its
    /// raw.tar.xz and gzip its meta.json, as a finished run does (for a
    /// run written before runs packed, one a crash left loose, or one
    /// packed into raw.tar.gz before 2026-11-29, which it turns into xz).
    #[arg(long)]
    pack: bool,
}

pub(super) fn run(a: Args) -> ExitCode {
    let mut failed = false;
    for dir in &a.dirs {
        if a.pack {
            if let Err(e) = analysis::input::raw::pack(dir) {
                eprintln!("shootout: {}: {e:#}", dir.display());
                failed = true;
                continue;
            }
        }
        match report::rebuild(dir) {
            Ok(page) => {
                let _ = writeln!(std::io::stdout().lock(), "{}", page.display());
            }
            Err(e) => {
                eprintln!("shootout: {}: {e:#}", dir.display());
                failed = true;
            }
        }
    }
    // A results directory that keeps a history (`history.json`) keeps an
    // index of its runs too: rebuilt once for each such directory.
    let mut parents: Vec<&std::path::Path> = a
        .dirs
        .iter()
        .filter_map(|d| d.parent())
        .filter(|p| p.join("history.json").is_file())
        .collect();
    parents.dedup();
    for results in parents {
        match analysis::export::runs_html::write(results) {
            Ok(()) => {
                let _ = writeln!(
                    std::io::stdout().lock(),
                    "{}",
                    results.join("index.html").display()
                );
            }
            Err(e) => {
                eprintln!("shootout: {}: index of runs: {e:#}", results.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
