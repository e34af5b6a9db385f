//! `loadgen`: parse the command line, hand over to the library.

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

fn main() -> ExitCode {
    match loadgen::cli::Args::try_parse() {
        Ok(args) => loadgen::main_with(args),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        Err(e) => {
            // clap's message without its usage block: one line, exit 2.
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("bad usage");
            eprintln!("loadgen: {}", line.trim_start_matches("error: "));
            ExitCode::from(2)
        }
    }
}
