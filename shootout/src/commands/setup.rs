//! `shootout setup [FILE…] [--all]`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::prepare::setup;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    files: Vec<PathBuf>,
    #[arg(long)]
    all: bool,
}

pub(super) fn run(a: Args) -> ExitCode {
    let ensured = setup::needs_of_files(&a.files, a.all)
        .and_then(|needs| setup::ensure(&needs).map(|()| needs))
        .and_then(|needs| {
            let rows = setup::rows_of_files(&a.files)?;
            setup::ensure_rust_targets(&rows).map(|()| needs)
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
