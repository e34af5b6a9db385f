//! `shootout list FILE`.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    file: PathBuf,
}

pub(super) fn run(a: Args) -> ExitCode {
    let file = match super::load_file(&a.file) {
        Ok(f) => f,
        Err(code) => return code,
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
