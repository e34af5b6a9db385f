//! `shootout sink-law --drain DRAIN SERVED`: the sink law (issue 24, part
//! 4) from a drain run (`design = "sinks"`) and a served run (`design =
//! "paired"`, the same sinks as rows against a no-logging baseline):
//! writes SERVED/sinks.json, sink-law.json, sink-law.md and sink-law.svg,
//! each whole or not at all, rebuilds SERVED's report (its index.html
//! lists them), and prints the markdown. The drain run is
//! named by its directory name in them: keep both runs side by side under
//! `results/`.

use std::path::PathBuf;
use std::process::ExitCode;

use analysis::export::sink_law_md;
use analysis::files::write_atomic;

use super::report_error;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The drain run: a run directory of design = "sinks".
    #[arg(long)]
    drain: PathBuf,
    /// The served run: a run directory of design = "paired" whose rows log
    /// into the drain run's sinks; the law's files are written into it.
    served: PathBuf,
}

pub(super) fn run(a: Args) -> ExitCode {
    let out = (|| -> anyhow::Result<String> {
        let law = analysis::sinks::law::law(&a.drain, &a.served)?;
        let files = sink_law_md::files(&law)?;
        for (name, bytes) in &files {
            write_atomic(&a.served.join(name), bytes)?;
        }
        // The run's page lists its files: the law's are new.
        crate::record::report::rebuild(&a.served)?;
        Ok(sink_law_md::report(&law)?)
    })();
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
