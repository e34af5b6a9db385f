//! The shootout's analysis: reads loadgen (and original-client) logs from a
//! results directory and renders tables, charts and `summary.json`. A
//! library the runner calls, and the `analysis` binary.

pub mod export;
pub mod files;
pub mod input;
pub mod latency;
pub mod memory;
pub mod model;
pub mod paired;
pub mod placement;
pub mod report;
pub mod sinks;
pub mod sittings;
pub mod stats;
pub mod sweep;

use std::path::Path;

use anyhow::Context;

use export::Exporter;
pub use input::{Original, Problem};
pub use report::{Options, Report};

/// Reads and analyses `dir`. Problems with single files are returned beside
/// the report; the report is `None` when nothing could be analysed.
pub fn analyse(dir: &Path, opts: &Options) -> (Option<Report>, Vec<Problem>) {
    let (tables, mut problems) = match input::read_results(dir) {
        Ok(r) => r,
        Err(p) => return (None, vec![p]),
    };
    let mut report = report::build(&tables, opts, &mut problems);
    report.source = report::Source::read(dir);
    if report.tables.is_empty()
        && report.paired.is_empty()
        && report.memory.is_empty()
        && report.sweeps.iter().all(|t| t.rows.is_empty())
        && report.sinks.iter().all(|t| t.rows.is_empty())
    {
        problems.push(Problem(format!(
            "{}: no log could be analysed",
            dir.display()
        )));
        return (None, problems);
    }
    (Some(report), problems)
}

/// Every output file of a report: (file name, bytes).
pub fn render(report: &Report) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut files = vec![
        (
            "README.md".to_string(),
            export::MarkdownExporter.serialize(report)?,
        ),
        // gzip'd: a sweep's summary runs to hundreds of KB of steps, and
        // `input::raw::read` (`shootout history`, the runs index) reads either form.
        (
            "summary.json.gz".to_string(),
            input::raw::gzip(&export::JsonExporter.serialize(report)?)?,
        ),
    ];
    let charts = export::charts(report)?;
    let readme = String::from_utf8_lossy(&files[0].1).into_owned();
    let page = export::html::page(report, &readme, &charts);
    files.extend(charts);
    files.push(("index.html".to_string(), page.into_bytes()));
    Ok(files)
}

/// `index.html` for a run directory the analysis cannot read (a script's
/// run with its own README.md): that README, the machine and the raw files.
pub fn render_page_from_readme(dir: &Path) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let path = dir.join("README.md");
    let readme =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let page = export::html::page_from_readme(&report::Source::read(dir), &readme);
    Ok(vec![("index.html".to_string(), page.into_bytes())])
}

/// Writes the rendered files into `dir`, each through a temporary file and a
/// rename, so a failure never leaves a half-written file. A gzip'd file
/// replaces its plain form (`summary.json` of a run rendered before
/// 2026-11-29), which readers would otherwise take first.
pub fn write_outputs(dir: &Path, files: &[(String, Vec<u8>)]) -> anyhow::Result<()> {
    for (name, bytes) in files {
        files::write_atomic(&dir.join(name), bytes)?;
        if let Some(plain) = name.strip_suffix(".gz") {
            match std::fs::remove_file(dir.join(plain)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(anyhow::Error::new(e).context(format!("removing {plain}")))
                }
                _ => {}
            }
        }
    }
    Ok(())
}
