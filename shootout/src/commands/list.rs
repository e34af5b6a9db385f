//! `shootout list FILE`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::parse;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    file: PathBuf,
}

pub(super) fn run(a: Args) -> ExitCode {
    let file = match parse::load(&a.file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("shootout: {e}");
            return ExitCode::from(2);
        }
    };
    match file.write_list(&mut std::io::stdout().lock()) {
        // A reader that stops early (`| head`) is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("shootout: writing the list: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}
