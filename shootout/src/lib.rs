//! The shootout runner: one command runs a scenario matrix end to end and
//! leaves raw data, metadata and the analysed report in `results/<run>/`.

pub mod build;
pub mod meta;
pub mod netns;
pub mod nginx;
pub mod output;
pub mod procs;
pub mod run;
pub mod scenario;
pub mod verify;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::run::{Job, RowRecord};
use crate::scenario::{Scenario, ScenarioFile};

/// The run was stopped by SIGINT or SIGTERM.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// How to run a scenario file.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Run only this scenario.
    pub only: Option<String>,
    /// Override every scenario's measured duration.
    pub duration: Option<Duration>,
    /// Parent of the run directory.
    pub out: PathBuf,
    /// Cargo profile of the builds: `release` for measurements; `dev` only
    /// for quick checks of the machinery (its numbers mean nothing).
    pub profile: build::Profile,
}

/// What a run produced.
pub struct RunOutcome {
    pub dir: PathBuf,
    pub rows: Vec<RowRecord>,
    pub interrupted: bool,
}

impl RunOutcome {
    pub fn failed(&self) -> usize {
        self.rows.iter().filter(|r| r.error.is_some()).count()
    }
}

/// Runs every scenario (or `--only` one) of `file`, writing as it goes.
pub fn run_file(
    file: &ScenarioFile,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<RunOutcome> {
    let root = build::workspace_root();
    let mut scenarios: Vec<_> = file
        .scenarios
        .iter()
        .filter(|s| opts.only.as_ref().is_none_or(|o| o == &s.name))
        .cloned()
        .collect();
    if scenarios.is_empty() {
        anyhow::bail!(
            "{}: no scenario named {:?}",
            file.path.display(),
            opts.only.as_deref().unwrap_or("")
        );
    }
    if let Some(d) = opts.duration {
        for s in &mut scenarios {
            s.duration = d;
        }
    }
    let run_id = format!("{}-{}", meta::timestamp(), file.name);
    // Absolute, because nginx resolves its prefix's paths itself and the
    // servers and nginx run from other directories.
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    let out = std::fs::canonicalize(&opts.out)
        .with_context(|| format!("resolving {}", opts.out.display()))?;
    let dir = out.join(&run_id);
    let table_dir = dir.join(&file.name);
    std::fs::create_dir_all(&table_dir)
        .with_context(|| format!("creating {}", table_dir.display()))?;
    write_table_toml(&table_dir, file, &scenarios)?;

    eprintln!("shootout: building loadgen and {} server variant(s)", {
        let mut v: Vec<String> = scenarios.iter().map(|s| s.variant()).collect();
        v.sort();
        v.dedup();
        v.len()
    });
    let loadgen = build::loadgen(&root, opts.profile)?;
    let mut binaries = std::collections::HashMap::new();
    for s in &scenarios {
        if let std::collections::hash_map::Entry::Vacant(slot) = binaries.entry(s.variant()) {
            slot.insert(build::server(&root, s, opts.profile)?);
        }
    }

    let mut meta = meta::Meta::collect(&root, file);
    let mut rows = Vec::new();
    let mut interrupted = false;
    // Repetitions run in rounds (A B C, A B C, ...), not row after row, so
    // that drift on a shared machine spreads over every row alike.
    let rounds = scenarios.iter().map(|s| s.repetitions).max().unwrap_or(1);
    let order = (1..=rounds).flat_map(|rep| {
        scenarios
            .iter()
            .enumerate()
            .filter(move |(_, s)| rep <= s.repetitions)
            .map(move |(i, s)| (i, s, rep))
    });
    for (i, s, rep) in order {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let stem = if s.repetitions > 1 {
            format!("{}.rep{rep}", s.name)
        } else {
            s.name.clone()
        };
        let job = Job {
            root: &root,
            scenario: s,
            repetition: rep,
            server_bin: &binaries[&s.variant()],
            loadgen_bin: &loadgen,
            table_dir: &table_dir,
            tmp: dir.join("tmp").join(&stem),
            stem,
            ns_index: i,
            stop,
        };
        let (rec, stopped) = run::run(&job);
        print_row(&rec, s.repetitions);
        rows.push(rec);
        meta.rows = rows.clone();
        meta.write(&dir)?;
        if stopped.is_some() {
            interrupted = true;
            break;
        }
    }
    let _ = std::fs::remove_dir_all(dir.join("tmp"));
    meta.rows = rows.clone();
    meta.interrupted = interrupted;
    meta.write(&dir)?;
    analyse(&dir);
    Ok(RunOutcome {
        dir,
        rows,
        interrupted,
    })
}

fn write_table_toml(table_dir: &Path, file: &ScenarioFile, run: &[Scenario]) -> anyhow::Result<()> {
    let mut t = toml::map::Map::new();
    t.insert("title".into(), file.title.clone().into());
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
    let path = table_dir.join("table.toml");
    std::fs::write(&path, toml::to_string(&t)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn print_row(r: &RowRecord, reps: u32) {
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

/// Renders README.md, summary.json and charts for the run directory.
fn analyse(dir: &Path) {
    let (report, problems) = analysis::analyse(dir, &analysis::Options::default());
    for p in &problems {
        eprintln!("shootout: analysis: {p}");
    }
    if let Some(report) = report {
        if let Err(e) =
            analysis::render(&report).and_then(|files| analysis::write_outputs(dir, &files))
        {
            eprintln!("shootout: analysis: {e:#}");
        }
    }
}
