//! `shootout coverage-plan --reference ALONE SITTING…`: the pre-registered
//! coverage plan of issue 44 (`docs/coverage-plan.md`) judged on its
//! sittings; writes `coverage.json` into the newest sitting.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use analysis::coverage_plan::{self, Share};

use super::report_error;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The reference: a run of scenarios/coverage-sittings-alone.toml, made
    /// in a sitting of its own.
    #[arg(long, value_name = "DIR")]
    reference: PathBuf,
    /// The judged sittings: runs of scenarios/coverage-sittings.toml, each
    /// from a clean tree at or after the plan's commit, in the order run.
    #[arg(required = true, value_name = "SITTING")]
    sittings: Vec<PathBuf>,
}

/// The row the plan judges against the reference.
const CONTROL: &str = "control-496";

pub(super) fn run(a: Args) -> ExitCode {
    let judged = (|| {
        let sittings = a
            .sittings
            .iter()
            .map(|d| coverage_plan::sitting_rows(d))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let reference = coverage_plan::reference(&a.reference, CONTROL)?;
        let name = a
            .reference
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let c = coverage_plan::judge(&sittings, &name, reference, CONTROL);
        let newest = a.sittings.iter().max().expect("at least one sitting");
        let path = newest.join("coverage.json");
        analysis::files::write_atomic(&path, &serde_json::to_vec_pretty(&c)?)?;
        Ok::<_, anyhow::Error>((c, path))
    })();
    let (c, path) = match judged {
        Ok(x) => x,
        Err(e) => {
            report_error(&e);
            return ExitCode::FAILURE;
        }
    };
    let line = |what: &str, s: &Share| {
        if s.n == 0 {
            return format!("{what}: none yet (the plan needs >= 20)");
        }
        format!(
            "{what}: {} of {} ({:.0} %, 95 % CI {:.0}-{:.0} %){}",
            s.k,
            s.n,
            s.share * 100.0,
            s.lo * 100.0,
            s.hi * 100.0,
            if s.meets_plan {
                "; meets the plan"
            } else {
                "; does not meet the plan (>= 90 % of >= 20)"
            }
        )
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{} sittings, reference {}",
        c.sittings.len(),
        c.reference
    );
    let _ = writeln!(out, "{}", line("A/A intervals holding 1", &c.aa));
    let _ = writeln!(out, "{}", line("pairs of sittings agreeing", &c.pairs));
    let _ = writeln!(
        out,
        "{}",
        line("controls agreeing with the reference", &c.controls)
    );
    let _ = writeln!(out, "{}", path.display());
    ExitCode::SUCCESS
}
