//! Finding the logs of a results directory and reading them: every file
//! through [`raw`] (plain, gzip'd or packed), and a row's logs merged into
//! one sample by [`merge`].
//!
//! Layout: every sub-directory of the results directory is one table (files
//! directly inside it form one more table, named after the directory). In a
//! table, each log is `ROW[.repN][.shard-NAME].log` (text) or `.jsonl`:
//! repetitions are pooled, shards of one repetition merged. An optional
//! `table.toml` gives the title, the row order, labels and the baseline:
//!
//! ```toml
//! title = "Frameworks (localhost)"
//! baseline = "actix-log-stdout"
//! [[row]]
//! name = "actix-log-stdout"
//! label = "Baseline (actix, logging at info to stdout)"
//! # optional: the figure another study published for this row
//! original = { rps = 43904, sd = 7729 }
//! ```

pub(crate) mod jsonl;
pub mod merge;
pub mod raw;
mod text;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::RunLog;

/// A problem with one file (or line); the rest is still analysed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Problem(pub String);

/// The optional `table.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    pub title: Option<String>,
    pub baseline: Option<String>,
    /// `"paired"`: the table's rows were measured against the baseline at
    /// the same time (see [`crate::paired`]); absent: sequential.
    pub design: Option<String>,
    /// Paired tables: how the two stacks were loaded (`"duet"`, the
    /// default, `"alternate"` or `"interleave"`; see [`crate::paired`]).
    pub schedule: Option<String>,
    /// `"memory"`: memory rows (see [`crate::memory`]); absent: throughput.
    pub kind: Option<String>,
    #[serde(default)]
    pub row: Vec<RowSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    pub name: String,
    pub label: Option<String>,
    pub original: Option<Original>,
    /// Paired tables: the row this one was compared with, when not the
    /// table's baseline.
    pub against: Option<String>,
    /// Paired tables: whether the row runs exactly what it is compared
    /// with (an A/A row, whose interval shows how finely the run resolves).
    /// Runs recorded before this existed have none, and get no answer
    /// lines: which of their rows was an A/A is not on record.
    pub aa: Option<bool>,
    /// Paired tables: `"free"` where the row or what it is compared with
    /// left a process to the scheduler (`placement = "free"`); its answer
    /// says so. Absent: every process pinned (or a run from before).
    pub placement: Option<String>,
}

/// A published figure to compare a row with: mean RPS and, when given, its
/// standard deviation.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Original {
    pub rps: f64,
    pub sd: Option<f64>,
}

impl Original {
    /// Why these figures cannot be compared with (none when they can).
    pub fn problem(&self) -> Option<&'static str> {
        (!(self.rps > 0.0 && self.sd.is_none_or(|x| x >= 0.0)))
            .then_some("original needs rps > 0 and sd >= 0")
    }
}

/// One table's logs as found on disk.
#[derive(Debug, Clone)]
pub struct TableInput {
    pub name: String,
    pub dir: PathBuf,
    pub spec: TableSpec,
    pub logs: Vec<RunLog>,
}

/// Reads every table under `dir`. Problems are returned beside what could be read.
pub fn read_results(dir: &Path) -> Result<(Vec<TableInput>, Vec<Problem>), Problem> {
    let mut problems = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    let entries = crate::input::raw::read_dir(dir)
        .map_err(|e| Problem(format!("{}: cannot read directory: {e}", dir.display())))?;
    let mut subdirs: Vec<PathBuf> = entries
        .into_iter()
        .filter(|e| e.is_dir)
        .map(|e| e.path)
        .collect();
    subdirs.sort();
    dirs.extend(subdirs);

    let mut tables = Vec::new();
    for table_dir in dirs {
        let name = table_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results".into());
        let spec = match read_spec(&table_dir) {
            Ok(s) => s,
            Err(p) => {
                problems.push(p);
                TableSpec::default()
            }
        };
        let own_reader = matches!(spec.design.as_deref(), Some("paired" | "sweep"));
        if own_reader || spec.kind.as_deref() == Some("memory") {
            tables.push(TableInput {
                name,
                dir: table_dir,
                spec,
                logs: Vec::new(),
            });
            continue;
        }
        let logs = read_table(&table_dir, &mut problems);
        if !logs.is_empty() {
            tables.push(TableInput {
                name,
                dir: table_dir,
                spec,
                logs,
            });
        }
    }
    Ok((tables, problems))
}

pub(crate) fn read_spec(dir: &Path) -> Result<TableSpec, Problem> {
    let path = dir.join("table.toml");
    if !path.exists() {
        return Ok(TableSpec::default());
    }
    let text =
        std::fs::read_to_string(&path).map_err(|e| Problem(format!("{}: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| Problem(format!("{}: {}", path.display(), e.message())))
}

fn read_table(dir: &Path, problems: &mut Vec<Problem>) -> Vec<RunLog> {
    let Ok(entries) = crate::input::raw::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .into_iter()
        .filter(|e| !e.is_dir)
        .map(|e| e.path)
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("log" | "jsonl")
            )
        })
        .collect();
    files.sort();
    let mut logs = Vec::new();
    for path in files {
        let (row, rep, shard) = parse_name(&path);
        let text = match crate::input::raw::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                problems.push(Problem(format!("{}: {e}", path.display())));
                continue;
            }
        };
        let jsonl = path.extension().is_some_and(|e| e == "jsonl");
        let read = if jsonl {
            jsonl::read(&path, &text, problems)
        } else {
            text::read(&path, &text, problems)
        };
        let Some((intervals, latency)) = read else {
            continue;
        };
        logs.push(RunLog {
            path,
            row,
            rep,
            shard,
            intervals,
            latency,
        });
    }
    logs
}

/// `ROW[.repN][.shard-NAME].ext` -> (row, rep, shard).
fn parse_name(path: &Path) -> (String, u32, String) {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut parts: Vec<&str> = stem.split('.').collect();
    let mut rep = 1;
    let mut shard = String::new();
    while parts.len() > 1 {
        let last = parts[parts.len() - 1];
        if let Some(name) = last.strip_prefix("shard-") {
            shard = name.to_string();
        } else if let Some(n) = last.strip_prefix("rep").and_then(|n| n.parse().ok()) {
            rep = n;
        } else {
            break;
        }
        parts.pop();
    }
    (parts.join("."), rep, shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_row_repetition_and_shard() {
        let p = |s: &str| parse_name(Path::new(s));
        assert_eq!(
            p("a/ntex-keepalive.log"),
            ("ntex-keepalive".into(), 1, String::new())
        );
        assert_eq!(p("ntex.rep2.log"), ("ntex".into(), 2, String::new()));
        assert_eq!(
            p("ntex.rep3.shard-east.jsonl"),
            ("ntex".into(), 3, "east".into())
        );
        assert_eq!(p("x.shard-b.jsonl"), ("x".into(), 1, "b".into()));
    }
}
