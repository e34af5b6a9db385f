//! `shootout coverage-plan --reference ALONE SITTING…`: the pre-registered
//! coverage plan of issue 44 (`docs/coverage-plan.md`) judged on its
//! sittings; writes `coverage.json` into the newest sitting.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use analysis::sittings::coverage_plan::{self, Share};
use analysis::sittings::span;

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
    /// The plan that judges them: its page.
    #[arg(long, default_value = "docs/coverage-plan.md", value_parser = ["docs/coverage-plan.md", "docs/coverage-plan-2.md"])]
    plan: String,
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
        // The plan's sittings are at least an hour apart, and an hour from
        // the reference: each measured span read from the raw records.
        let spans = a
            .sittings
            .iter()
            .map(|d| span::span(d))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let names: Vec<String> = a.sittings.iter().map(|d| d.display().to_string()).collect();
        let judged: Vec<(&str, span::Span)> = names.iter().map(String::as_str).zip(spans).collect();
        span::check_gaps((&name, span::span(&a.reference)?), &judged)?;
        let c = coverage_plan::judge(&a.plan, &sittings, &name, reference, CONTROL);
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
    let needs = |s: &Share| match s.min_count {
        0 | 1 => ">= 90 %".to_string(),
        n => format!(">= 90 % of >= {n}"),
    };
    let line = |what: &str, s: &Share| {
        if s.n == 0 {
            return format!("{what}: none yet (the plan needs {})", needs(s));
        }
        format!(
            "{what}: {} of {} ({:.0} %, 95 % CI {:.0}-{:.0} %){}",
            s.k,
            s.n,
            s.share * 100.0,
            s.lo * 100.0,
            s.hi * 100.0,
            if s.meets_plan {
                "; meets the plan".to_string()
            } else {
                format!("; does not meet the plan ({})", needs(s))
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
