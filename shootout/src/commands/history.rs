//! `shootout history [NAME]`: each comparison's answer in every committed
//! sitting, whether the sittings agree, and the answer across them once
//! there are three (see [`analysis::history`]); `--write` writes
//! `results/history.json` anew from the runs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use analysis::history::{Comparison, History};

use super::report_error;
use crate::record::history;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Only comparisons whose row, `row/against` or `A/A` is NAME.
    name: Option<String>,
    /// The results directory (every run folder in it is read).
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// Write RESULTS/history.json anew.
    #[arg(long)]
    write: bool,
    /// Print the history as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(a: Args) -> ExitCode {
    let repo = crate::prepare::build::workspace_root();
    let got = if a.write {
        history::write(&a.results, &repo)
    } else {
        history::gather(&a.results, &repo)
    };
    let h = match got {
        Ok(h) => h,
        Err(e) => {
            report_error(&e);
            return ExitCode::from(2);
        }
    };
    let chosen: Vec<&Comparison> = h
        .comparisons
        .iter()
        .filter(|c| a.name.as_deref().is_none_or(|n| matches(c, n)))
        .collect();
    if chosen.is_empty() {
        eprintln!(
            "shootout: no comparison named {:?} in {}",
            a.name.unwrap_or_default(),
            a.results.display()
        );
        return ExitCode::from(2);
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        let only = History {
            comparisons: chosen.into_iter().cloned().collect(),
            ..h
        };
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&only).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    for c in chosen {
        for line in lines(c) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out);
    }
    ExitCode::SUCCESS
}

/// Whether comparison `c` goes by `name`.
fn matches(c: &Comparison, name: &str) -> bool {
    let id = &c.identity;
    name == id.row
        || name == format!("{}/{}", id.row, id.against)
        || (id.aa && name.eq_ignore_ascii_case("a/a"))
}

/// `c` as text: its identity, a line per sitting, pairwise agreement and
/// the answer across sittings.
pub fn lines(c: &Comparison) -> Vec<String> {
    let id = &c.identity;
    let name = if id.aa {
        format!("A/A ({}/{})", id.row, id.against)
    } else {
        format!("{}/{}", id.row, id.against)
    };
    let mut out = vec![
        format!("{name}  [{}]", id.file),
        format!(
            "  {} vs {}; {}; {}; {}",
            id.row_variant, id.base_variant, id.schedule, id.placement, id.load
        ),
    ];
    for s in &c.sittings {
        let runs = if s.runs > 1 {
            format!(", {} runs", s.runs)
        } else {
            String::new()
        };
        out.push(format!(
            "  {}  {:.3} ({:.3}-{:.3}{runs})  {}{}  {} {}",
            s.date,
            s.ratio,
            s.lo,
            s.hi,
            s.git_sha.get(..8).unwrap_or(&s.git_sha),
            if s.git_dirty { " dirty" } else { "" },
            s.cpu_model,
            s.kernel
        ));
    }
    let n = c.sittings.len();
    if n >= 2 {
        let mut pairs = 0;
        let mut disagree = Vec::new();
        for (i, a) in c.sittings.iter().enumerate() {
            for b in &c.sittings[i + 1..] {
                pairs += 1;
                if !a.agrees_with(b) {
                    disagree.push(format!(
                        "  disagree: {} and {} (|z| {:.3} > 1.96)",
                        a.date,
                        b.date,
                        a.z_with(b)
                    ));
                }
            }
        }
        let agree = pairs - disagree.len();
        out.push(format!("  sittings that agree: {agree} of {pairs} pairs"));
        out.extend(disagree);
    }
    if let Some(x) = &c.across {
        out.push(format!(
            "  across {} sittings: {:.3} ({:.3}-{:.3}), between sittings ±{:.1} %",
            x.sittings,
            x.ratio,
            x.lo,
            x.hi,
            x.tau_log * 100.0
        ));
    }
    out
}
