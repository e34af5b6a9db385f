//! `analysis RESULTS_DIR`: tables, charts and summary.json.gz from a shootout run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Analyse the logs of a shootout run and write README.md, summary.json.gz and
/// SVG charts into the same directory.
#[derive(Debug, Parser)]
#[command(name = "analysis", version)]
struct Args {
    /// Results directory: one sub-directory per table, one log per row (see the crate README).
    results_dir: PathBuf,
    /// Intervals dropped at the start of logs that do not mark their warm-up.
    #[arg(long, default_value_t = 3)]
    skip: usize,
    /// Row name to compare every table against [default: table.toml's, else the first row].
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Directory for README.md, summary.json.gz and the charts [default: RESULTS_DIR].
    /// Image links in README.md are relative, so the charts go beside it.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = analysis::Options {
        skip: args.skip,
        baseline: args.baseline,
    };
    let (report, problems) = analysis::analyse(&args.results_dir, &opts);
    for p in &problems {
        eprintln!("analysis: {p}");
    }
    let Some(report) = report else {
        return ExitCode::FAILURE;
    };
    let out = args.out.as_ref().unwrap_or(&args.results_dir);
    let outcome = analysis::render(&report).and_then(|files| {
        std::fs::create_dir_all(out)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", out.display()))?;
        analysis::write_outputs(out, &files)?;
        Ok(files.len())
    });
    match outcome {
        Ok(n) => {
            let rows: usize = report.tables.iter().map(|t| t.rows.len()).sum::<usize>()
                + report.paired.iter().map(|t| t.rows.len()).sum::<usize>()
                + report.memory.iter().map(|t| t.rows.len()).sum::<usize>();
            let tables = report.tables.len() + report.paired.len() + report.memory.len();
            println!(
                "analysis: {tables} tables, {rows} rows; wrote {n} files to {}",
                out.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("analysis: {e:#}");
            ExitCode::FAILURE
        }
    }
}
