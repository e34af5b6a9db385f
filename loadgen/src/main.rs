//! `loadgen`: parse the command line, hand over to the mode it asks for.

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;
use loadgen::cli::{Args, Mode};
use loadgen::{exit, hold, load, slow};

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // clap's message without its usage block: one line, exit 2.
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("bad usage");
            return exit::usage(line.trim_start_matches("error: "));
        }
    };
    match args.into_mode() {
        Ok(Mode::Load {
            config,
            format,
            max_error_rate,
        }) => load::main(config, format, max_error_rate),
        Ok(Mode::Hold(config, format)) => hold::main(config, format),
        Ok(Mode::Slow(config, format)) => slow::main(config, format),
        Err(e) => exit::usage(e),
    }
}
