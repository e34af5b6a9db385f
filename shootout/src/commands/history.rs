//! `shootout history [NAME]`: each comparison's answer in every committed
//! sitting, whether the sittings agree, and the answer across them once
//! there are three (see [`analysis::sittings::history`]); `--write` writes
//! `results/history.json` anew from the runs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use analysis::sittings::history::{agreement, Comparison, History};

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

/// `c` as text: its identity, a line per sitting (with its interval for
/// the next sitting once three sittings came before it), pairwise
/// agreement both ways and the answer across sittings.
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
            "  {} vs {}; {}; {}; {}; on {}",
            id.row_variant, id.base_variant, id.schedule, id.placement, id.load, id.machine
        ),
    ];
    for s in &c.sittings {
        let runs = if s.runs > 1 {
            format!(", {} runs", s.runs)
        } else {
            String::new()
        };
        let next = s
            .next
            .as_ref()
            .map(|n| format!("; next {:.3}-{:.3}", n.lo, n.hi))
            .unwrap_or_default();
        out.push(format!(
            "  {}  {:.3} ({:.3}-{:.3}{runs}{next})  {}{}  {} {}",
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
    if c.sittings.len() >= 2 {
        let a = agreement(&c.sittings);
        let mut line = format!(
            "  sittings that agree: {} of {} pairs by their own intervals",
            a.own.0, a.own.1
        );
        if a.next.1 > 0 {
            line += &format!(
                "; {} of {} by their intervals for the next sitting",
                a.next.0, a.next.1
            );
        }
        out.push(line);
        for (i, j, z, zn) in a.disagree {
            let how = match (z > 1.96, zn.map(|z| z > 1.96)) {
                (true, Some(true)) => "both ways",
                (true, _) => "by their own intervals",
                _ => "for the next sitting",
            };
            let next = zn
                .map(|z| format!(", for the next sitting {z:.3}"))
                .unwrap_or_default();
            out.push(format!(
                "  disagree {how}: {} and {} (|z| {z:.3}{next}; above 1.96 disagrees)",
                c.sittings[i].date, c.sittings[j].date
            ));
        }
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
    if let Some(t) = analysis::sittings::history::trend(&c.sittings) {
        let note = if t.lo > 0.0 || t.hi < 0.0 {
            "; it drifts, which the answer across sittings does not model"
        } else {
            ""
        };
        out.push(format!(
            "  trend: {:+.1} % per {unit} ({:+.1} to {:+.1}) over {} sittings in {:.1} {unit}s{note}",
            t.pct,
            t.lo,
            t.hi,
            c.sittings.len(),
            t.span_hours / if t.unit == "hour" { 1.0 } else { 24.0 },
            unit = t.unit,
        ));
    }
    out
}
