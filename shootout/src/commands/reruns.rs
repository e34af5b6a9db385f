//! `shootout reruns RUN RUN...`: sweep runs of the same scenario file set
//! side by side (`analysis::sweep::reruns`): each row's max rate at each
//! target per run, the spread, whether it reproduced within 5 %, and
//! whether one run's intervals held another's figures; the same for the
//! comparisons at equal rates. Markdown on stdout, or JSON with `--json`.

use std::path::PathBuf;
use std::process::ExitCode;

use analysis::sweep::reruns;

use super::report_error;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Two or more sweep run directories (of the same scenario file).
    #[arg(required = true, num_args = 2..)]
    runs: Vec<PathBuf>,
    /// Print JSON instead of markdown tables.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(a: Args) -> ExitCode {
    let out = reruns::reruns(&a.runs).and_then(|r| {
        Ok(if a.json {
            serde_json::to_string_pretty(&r)? + "\n"
        } else {
            reruns::to_markdown(&r)
        })
    });
    match out {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            report_error(&e);
            ExitCode::FAILURE
        }
    }
}
