//! `results-tables FILE [--check]`: rebuild the generated tables of a
//! results digest (`results/README.md`) from the runs' reports, and list
//! interval figures typed into its tables that no linked run reports.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Rebuild a results digest's generated tables (`<!-- table from=RUN/README.md#N ... -->`
/// blocks) from the runs' own reports, and check every interval figure typed
/// into its other tables against the runs its section links to.
#[derive(Debug, Parser)]
#[command(name = "results-tables", version)]
struct Args {
    /// The digest, for example results/README.md; run paths in it are relative to its directory.
    file: PathBuf,
    /// Change nothing: exit 1 when a block is stale or a figure is unsourced.
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let base = args.file.parent().unwrap_or(std::path::Path::new("."));
    let outcome = std::fs::read_to_string(&args.file)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", args.file.display()))
        .and_then(|text| Ok((analysis::sittings::digest::fill(&text, base)?, text)));
    let (filled, text) = match outcome {
        Ok(v) => v,
        Err(e) => {
            eprintln!("results-tables: {}: {e:#}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let problems = analysis::sittings::digest::unsourced_figures(&filled, base);
    for p in &problems {
        eprintln!("results-tables: {}: {p}", args.file.display());
    }
    if args.check {
        if filled != text {
            eprintln!(
                "results-tables: {}: generated tables are stale (run without --check)",
                args.file.display()
            );
            return ExitCode::FAILURE;
        }
    } else if filled != text {
        if let Err(e) = analysis::files::write_atomic(&args.file, filled.as_bytes()) {
            eprintln!("results-tables: {e:#}");
            return ExitCode::from(2);
        }
        println!(
            "results-tables: rebuilt the tables of {}",
            args.file.display()
        );
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
