//! What a run prints and renders: one line per row, repetition or
//! comparison as it ends, `table.toml` for the analysis, and the analysed
//! report (README.md, summary.json, charts) at the end.

use std::path::Path;

use anyhow::Context;

use crate::config::scenario::{Design, Scenario, ScenarioFile};
use crate::record::comparison::ComparisonRecord;
use crate::record::row::RowRecord;

pub(crate) fn print_memory(r: &analysis::memory::MemoryRecord, reps: u32) {
    use std::io::Write;
    let rep = if reps > 1 {
        format!(" #{}", r.repetition)
    } else {
        String::new()
    };
    let mib = |kib: u64| kib as f64 / 1024.0;
    let line = match &r.error {
        None => format!(
            "{}{rep}: {} idle {:.1} MiB, {} connections {:.1} MiB, after {:.1} MiB{}",
            r.scenario,
            r.allocator,
            mib(r.idle.rss_kib),
            r.hold.as_ref().map_or(0, |h| h.established),
            mib(r.held.rss_kib),
            mib(r.after.rss_kib),
            r.reclaims.last().map_or(String::new(), |x| format!(
                " (reclaimed {:.1} -> {:.1} MiB)",
                mib(x.rss_before_kib),
                mib(x.rss_after_kib)
            )),
        ),
        Some(e) => format!("{}{rep}: FAILED: {e}", r.scenario),
    };
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// A comparison's line as it ends; `effect` says which effect its schedule
/// measures.
pub(crate) fn print_comparison(c: &ComparisonRecord, effect: &str) {
    use std::io::Write;
    let run = c.run.map_or(String::new(), |r| format!(" (run {r})"));
    let line = match &c.error {
        None => format!(
            "{} vs {}{run}: {} in {} blocks, {:.0} s (stopped by {}) [{effect}]",
            c.row,
            c.baseline,
            c.progress(),
            c.blocks.len(),
            c.seconds,
            c.stopped_by
        ),
        Some(e) => format!("{} vs {}{run}: FAILED: {e}", c.row, c.baseline),
    };
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// Writes `table.toml` for the analysis. In a paired table every compared
/// row says whether it is an A/A row: the rows `aa_rows` names, or when
/// `None`, every row that runs exactly what it is compared with.
pub(crate) fn write_table_toml(
    table_dir: &Path,
    file: &ScenarioFile,
    run: &[Scenario],
    design: &Design,
    aa_rows: Option<&[&str]>,
) -> anyhow::Result<()> {
    let mut t = toml::map::Map::new();
    t.insert("title".into(), file.title.clone().into());
    match design {
        Design::Paired(p) => {
            t.insert("design".into(), "paired".into());
            let schedule = format!("{:?}", p.schedule).to_lowercase();
            t.insert("schedule".into(), schedule.into());
        }
        Design::Memory(_) => {
            t.insert("kind".into(), "memory".into());
        }
        Design::Sweep(_) => {
            t.insert("design".into(), "sweep".into());
        }
        Design::Sinks(_) => {
            t.insert("design".into(), "sinks".into());
        }
        Design::Sequential => {}
    }
    if let Some(b) = file
        .baseline
        .as_ref()
        .filter(|b| run.iter().any(|s| &&s.name == b))
    {
        t.insert("baseline".into(), b.clone().into());
    }
    let rows: Vec<toml::Value> = run
        .iter()
        .map(|s| {
            let mut r = toml::map::Map::new();
            r.insert("name".into(), s.name.clone().into());
            r.insert("label".into(), s.label.clone().into());
            if let Design::Paired(_) = design {
                if let Some(a) = &s.against {
                    r.insert("against".into(), a.clone().into());
                }
                let base = s.against.as_ref().or(file.baseline.as_ref());
                let base = base.and_then(|b| run.iter().find(|x| &x.name == b));
                if let Some(b) = base.filter(|b| b.name != s.name) {
                    let aa = match aa_rows {
                        Some(names) => names.contains(&s.name.as_str()),
                        None => s.same_setup(b),
                    };
                    r.insert("aa".into(), aa.into());
                    if s.placement_free || b.placement_free {
                        r.insert("placement".into(), "free".into());
                    }
                }
            }
            if let Some(o) = s.original {
                let mut t = toml::map::Map::new();
                t.insert("rps".into(), o.rps.into());
                if let Some(sd) = o.sd {
                    t.insert("sd".into(), sd.into());
                }
                r.insert("original".into(), toml::Value::Table(t));
            }
            toml::Value::Table(r)
        })
        .collect();
    t.insert("row".into(), rows.into());
    analysis::files::write_atomic(
        &table_dir.join("table.toml"),
        toml::to_string(&t)?.as_bytes(),
    )
}

pub(crate) fn print_row(r: &RowRecord, reps: u32) {
    use std::io::Write;
    let rep = if reps > 1 {
        format!(" #{}", r.repetition)
    } else {
        String::new()
    };
    let line = match &r.error {
        None => format!(
            "{}{rep}: {} 2xx/s, server CPU {:.2} s, peak RSS {} MiB{}",
            r.scenario,
            r.rps.map_or("?".into(), |v| format!("{v:.0}")),
            r.server.cpu_seconds,
            r.server.peak_rss_bytes / (1024 * 1024),
            r.counter.as_ref().map_or(String::new(), |c| format!(
                ", counter ok ({} acknowledged)",
                c.acknowledged
            )),
        ),
        Some(e) => format!("{}{rep}: FAILED: {e}", r.scenario),
    };
    let line = match &r.netem {
        Some(n) => format!("{line} ({n})"),
        None => line,
    };
    // A closed stdout must not stop the run: its results go to files.
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// After every run of a repeated comparison: the run-level line, e.g.
/// `ntex vs actix: 0.7962 ± 3.10 % across 3 runs (within a run ± 1.06-2.39 %)`.
pub(crate) fn print_across_runs(row: &str, baseline: &str, dir: &Path, effect: &str) {
    use std::io::Write;
    let runs = analysis::paired::input::read_runs(dir, &mut Vec::new());
    let figures = analysis::paired::report::row_figures(row, row, &runs);
    let Some(across) = figures.across_runs else {
        return;
    };
    let within: Vec<f64> = figures
        .runs
        .iter()
        .filter_map(|r| r.rps.map(|m| m.ci95_pct))
        .collect();
    let lo = within.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = within.iter().copied().fold(0.0, f64::max);
    let line = format!(
        "{row} vs {baseline}: 2xx/s {:.4} ± {:.2} % across {} runs (within a run ± {lo:.2}-{hi:.2} %) [{effect}]",
        across.ratio,
        across.half_width_pct(),
        figures.runs.len()
    );
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// Renders README.md, summary.json, charts and index.html for the run
/// directory; returns the report (none when nothing could be analysed).
pub(crate) fn analyse(dir: &Path) -> anyhow::Result<Option<analysis::Report>> {
    let (report, problems) = analysis::analyse(dir, &analysis::Options::default());
    for p in &problems {
        eprintln!("shootout: analysis: {p}");
    }
    if let Some(report) = &report {
        // Raw data and meta.json are written by now; a report that cannot
        // be written (a full disk) fails the run, and
        // `shootout report DIR` makes it later.
        analysis::render(report)
            .and_then(|files| analysis::write_outputs(dir, &files))
            .context("writing the report (raw data and meta.json are complete; `shootout report DIR` rebuilds it)")?;
    }
    Ok(report)
}

/// Rebuilds `dir`'s report from its raw data (the analysis's README.md,
/// summary.json, charts and index.html); a script's run (`meta.json` names
/// its script) or one the analysis cannot read gets index.html from its
/// own README.md. Returns the page's path.
pub fn rebuild(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    if !dir.is_dir() {
        anyhow::bail!("not a run directory");
    }
    let meta: Option<serde_json::Value> = analysis::input::raw::read(&dir.join("meta.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let script = meta.as_ref().is_some_and(|m| m.get("script").is_some());
    let files = if script {
        analysis::render_page_from_readme(dir)?
    } else {
        let (report, problems) = analysis::analyse(dir, &analysis::Options::default());
        match report {
            Some(r) => {
                for p in &problems {
                    eprintln!("shootout: analysis: {p}");
                }
                analysis::render(&r)?
            }
            None if dir.join("README.md").is_file() => analysis::render_page_from_readme(dir)?,
            None => {
                let why: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
                anyhow::bail!("nothing to report: {}", why.join("; "));
            }
        }
    };
    analysis::write_outputs(dir, &files)?;
    Ok(dir.join("index.html"))
}

/// What each paired table decides, after its title (see
/// [`analysis::paired::answer`]): the end of `shootout run`.
pub(crate) fn print_answers(report: &analysis::Report) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for t in report.paired.iter().filter(|t| !t.answers.is_empty()) {
        let _ = writeln!(out, "\n{}:", t.title);
        for line in analysis::paired::answer::lines(&t.answers) {
            let _ = writeln!(out, "  {line}");
        }
    }
}
