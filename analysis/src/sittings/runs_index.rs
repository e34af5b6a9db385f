//! `results/index.html`: every run under a results directory, newest
//! first, read from each run's `meta.json` and `summary.json` (what it
//! decided, or the titles of its tables), with a link to the run's page.
//! The page itself, and writing it, is [`crate::export::runs_html`].

use std::path::Path;

use crate::paired::answer::Answer;

/// One run's line in the index.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEntry {
    /// The run's directory name, e.g. `2026-11-27T01-18-24Z-quick`.
    pub run: String,
    /// `meta.json`'s start time, else the directory name's.
    pub date: String,
    /// The design (`paired`, `sweep`, `sinks`, `memory`, `sequential`), or
    /// `script` for a run a script made.
    pub design: String,
    /// The scenario file, or the script, the run came from.
    pub source: String,
    /// The commit, 8 hex digits, and whether the tree had changes.
    pub commit: String,
    pub dirty: Option<bool>,
    /// What the run decided, one comparison each (paired runs).
    pub answers: Vec<Answer>,
    /// Beside each answer, where its processes ran when that was not
    /// pinned and checked: "placement not recorded" (a run from before
    /// placement was read back from /proc; nginx in front was then left to
    /// the scheduler, and those nginx answers are withdrawn) or "placement
    /// free" (the file said so).
    pub placement: Vec<Option<&'static str>>,
    /// The titles of its tables (every run that has them).
    pub titles: Vec<String>,
    /// The run's page relative to the results directory.
    pub page: String,
}

fn json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_slice(&crate::input::raw::read(path).ok()?).ok()
}

fn text(v: Option<&serde_json::Value>) -> Option<String> {
    v?.as_str().map(str::to_owned)
}

/// The run in `dir` (named `name`), or None when it is not a run (no
/// `meta.json`).
fn entry(dir: &Path, name: &str) -> Option<RunEntry> {
    let meta = json(&dir.join("meta.json"))?;
    let summary = json(&dir.join("summary.json"));
    let design = if meta.get("script").is_some() {
        "script".to_string()
    } else {
        text(meta.get("design")).unwrap_or_else(|| "sequential".into())
    };
    let source = text(meta.get("scenario_file"))
        .or_else(|| text(meta.get("script")))
        .unwrap_or_default();
    let mut answers = Vec::new();
    let mut titles = Vec::new();
    if let Some(s) = &summary {
        for key in ["paired", "tables", "sweeps", "sinks", "memory"] {
            let items = match s.get(key) {
                Some(serde_json::Value::Array(items)) => items.clone(),
                Some(v @ serde_json::Value::Object(_)) => vec![v.clone()],
                _ => Vec::new(),
            };
            for t in items {
                titles.extend(text(t.get("title")));
                if let Some(serde_json::Value::Array(a)) = t.get("answers") {
                    answers.extend(
                        a.iter()
                            .filter_map(|x| serde_json::from_value::<Answer>(x.clone()).ok()),
                    );
                }
            }
        }
    }
    if titles.is_empty() {
        titles.extend(
            std::fs::read_to_string(dir.join("README.md"))
                .ok()
                .and_then(|r| {
                    r.lines()
                        .find_map(|l| l.strip_prefix("# "))
                        .map(str::to_owned)
                }),
        );
    }
    // Each answer's comparison record in meta.json: its placement.
    let placement = answers
        .iter()
        .map(|a| {
            let rec = meta
                .get("paired")?
                .as_array()?
                .iter()
                .find(|c| c.get("row").and_then(|r| r.as_str()) == Some(a.row.as_str()))?;
            match rec.get("placement").and_then(|p| p.as_str()) {
                None => Some("placement not recorded"),
                Some("free") => Some("placement free"),
                Some(_) => None,
            }
        })
        .collect();
    let sha = text(meta.get("git_sha")).unwrap_or_default();
    let page = if dir.join("index.html").is_file() {
        "index.html"
    } else {
        "README.md"
    };
    Some(RunEntry {
        run: name.to_string(),
        date: text(meta.get("date")).unwrap_or_else(|| name.chars().take(20).collect()),
        design,
        source,
        commit: sha.chars().take(8).collect(),
        dirty: meta.get("git_dirty").and_then(serde_json::Value::as_bool),
        answers,
        placement,
        titles,
        page: format!("{name}/{page}"),
    })
}

/// Every run directly under `results`, newest first (run directories are
/// named by their start time).
pub fn gather(results: &Path) -> anyhow::Result<Vec<RunEntry>> {
    let mut names: Vec<String> = std::fs::read_dir(results)?
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.reverse();
    Ok(names
        .iter()
        .filter_map(|n| entry(&results.join(n), n))
        .collect())
}
