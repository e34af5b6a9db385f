//! `shootout report DIR…`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::record::report;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Run directories, e.g. results/2026-11-23T20-51-00Z-quick.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
}

pub(super) fn run(a: Args) -> ExitCode {
    let mut failed = false;
    for dir in &a.dirs {
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
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
