//! Designs: the schedules that run a file's rows. Each design is a loop
//! over rows (or comparisons) that places, starts, measures, checks and
//! records them through the stages of the other folders; this module
//! prepares a run once (setup, builds, hosts) and hands it to the file's
//! design.

pub mod calibrate;
pub mod memory;
pub mod paired;
pub mod sequential;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::config::scenario::{self, Design, Scenario, ScenarioFile};
use crate::design::sequential::Job;
use crate::prepare::{build, setup};
use crate::record::comparison::ComparisonRecord;
use crate::record::row::RowRecord;
use crate::record::{meta, report};

pub struct RunOptions {
    /// Run only this scenario.
    pub only: Option<String>,
    /// Override every scenario's measured duration (paired design: the block).
    pub duration: Option<Duration>,
    /// Paired design: override the budget of each comparison.
    pub budget: Option<Duration>,
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
    pub comparisons: Vec<ComparisonRecord>,
    /// Memory rows: repetitions that failed, and all run.
    pub memory_failed: usize,
    pub memory_total: usize,
    pub interrupted: bool,
}

impl RunOutcome {
    /// Rows or comparisons that failed.
    pub fn failed(&self) -> usize {
        self.rows.iter().filter(|r| r.error.is_some()).count()
            + self
                .comparisons
                .iter()
                .filter(|c| c.error.is_some())
                .count()
            + self.memory_failed
    }

    /// Rows or comparisons run.
    pub fn total(&self) -> usize {
        self.rows.len() + self.comparisons.len() + self.memory_total
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
    let mut design = file.design.clone();
    match &mut design {
        Design::Sequential => {
            if let Some(d) = opts.duration {
                for s in &mut scenarios {
                    s.duration = d;
                }
            }
        }
        Design::Memory(_) => {
            if opts.duration.is_some() || opts.budget.is_some() {
                anyhow::bail!(
                    "{}: memory rows take their times from [memory] (hold, settle, after), not --duration or --budget",
                    file.path.display()
                );
            }
        }
        Design::Paired(p) => {
            p.block = opts.duration.unwrap_or(p.block);
            p.budget = opts.budget.unwrap_or(p.budget);
            // Every row is measured against the baseline, which runs in
            // every comparison (and is not compared with itself).
            let base = file
                .baseline
                .clone()
                .expect("the parser requires a baseline");
            if opts.only.as_ref() == Some(&base) {
                anyhow::bail!(
                    "{}: {base:?} is the baseline; compare it with itself through a row with the same settings (an A/A row)",
                    file.path.display()
                );
            }
            if !scenarios.iter().any(|s| s.name == base) {
                let b = file
                    .scenarios
                    .iter()
                    .find(|s| s.name == base)
                    .expect("parsed");
                scenarios.insert(0, b.clone());
            }
        }
    }
    // Before anything is built or written: what these rows run must be here.
    setup::ensure(&setup::needs_of(&scenarios))?;
    setup::ensure_rust_targets(&scenarios)?;
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
    report::write_table_toml(&table_dir, file, &scenarios, &design)?;

    eprintln!("shootout: building loadgen and {} server variant(s)", {
        let mut v: Vec<String> = scenarios.iter().map(|s| s.variant()).collect();
        v.sort();
        v.dedup();
        v.len()
    });
    let loadgen = build::loadgen(&root, opts.profile)?;
    let mut binaries = HashMap::new();
    for s in &scenarios {
        if let std::collections::hash_map::Entry::Vacant(slot) = binaries.entry(s.variant()) {
            slot.insert(build::server(&root, s, opts.profile)?);
        }
    }

    let mut meta = meta::Meta::collect(&root, file);
    // Remote rows: every host of the file connected and checked once, before
    // any row runs; a host that fails stops the run here, named.
    let remote = match &file.remote {
        Some(r) if scenarios.iter().any(|s| s.hosts.is_some()) => {
            let connected = crate::place::connect::connect(r, &loadgen)?;
            meta.hosts = connected.hosts.iter().map(|(_, _, c)| c.clone()).collect();
            Some(connected)
        }
        _ => None,
    };
    let run = Prepared {
        root: &root,
        dir: &dir,
        table_dir: &table_dir,
        loadgen: &loadgen,
        binaries: &binaries,
        stop,
        remote: remote.as_ref(),
    };
    let outcome = match &design {
        Design::Sequential => run_sequential(&run, &scenarios, &mut meta)?,
        Design::Paired(p) => run_paired(&run, file, &scenarios, p, &mut meta)?,
        Design::Memory(m) => run_memory(&run, &scenarios, m, &mut meta)?,
    };
    let _ = std::fs::remove_dir_all(dir.join("tmp"));
    meta.interrupted = outcome.interrupted;
    meta.write(&dir)?;
    report::analyse(&dir);
    Ok(outcome)
}

/// What every design needs once the builds are done.
struct Prepared<'a> {
    root: &'a Path,
    dir: &'a Path,
    table_dir: &'a Path,
    loadgen: &'a Path,
    binaries: &'a HashMap<String, PathBuf>,
    stop: &'a Arc<AtomicBool>,
    /// The remote hosts' sessions, when rows run on them.
    remote: Option<&'a crate::place::connect::Connected>,
}

fn run_sequential(
    run: &Prepared,
    scenarios: &[Scenario],
    meta: &mut meta::Meta,
) -> anyhow::Result<RunOutcome> {
    let (root, dir, table_dir, loadgen, binaries, stop) = (
        run.root,
        run.dir,
        run.table_dir,
        run.loadgen,
        run.binaries,
        run.stop,
    );
    let mut rows = Vec::new();
    let mut interrupted = false;
    for (i, s, rep, stem) in rounds(scenarios) {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let job = Job {
            root,
            scenario: s,
            repetition: rep,
            server_bin: &binaries[&s.variant()],
            loadgen_bin: loadgen,
            table_dir,
            tmp: dir.join("tmp").join(&stem),
            stem,
            ns_index: i,
            stop,
            remote: run.remote,
        };
        let (rec, stopped) = sequential::run(&job);
        report::print_row(&rec, s.repetitions);
        rows.push(rec);
        meta.rows = rows.clone();
        meta.write(dir)?;
        if stopped.is_some() {
            interrupted = true;
            break;
        }
    }
    meta.rows = rows.clone();
    Ok(RunOutcome {
        dir: dir.to_path_buf(),
        rows,
        comparisons: Vec::new(),
        memory_failed: 0,
        memory_total: 0,
        interrupted,
    })
}

/// The order of a design's repetitions: in rounds (A B C, A B C, ...), not
/// row after row, so that drift on a shared machine spreads over every row
/// alike. Yields (row index, row, repetition, file stem).
fn rounds(scenarios: &[Scenario]) -> impl Iterator<Item = (usize, &Scenario, u32, String)> {
    let rounds = scenarios.iter().map(|s| s.repetitions).max().unwrap_or(1);
    (1..=rounds).flat_map(move |rep| {
        scenarios
            .iter()
            .enumerate()
            .filter(move |(_, s)| rep <= s.repetitions)
            .map(move |(i, s)| {
                let stem = if s.repetitions > 1 {
                    format!("{}.rep{rep}", s.name)
                } else {
                    s.name.clone()
                };
                (i, s, rep, stem)
            })
    })
}

/// Memory rows, one repetition at a time, in rounds.
fn run_memory(
    run: &Prepared,
    scenarios: &[Scenario],
    settings: &scenario::MemorySettings,
    meta: &mut meta::Meta,
) -> anyhow::Result<RunOutcome> {
    meta.design = "memory".into();
    let mut interrupted = false;
    let mut failed = 0;
    for (i, s, rep, stem) in rounds(scenarios) {
        if run.stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let job = Job {
            root: run.root,
            scenario: s,
            repetition: rep,
            server_bin: &run.binaries[&s.variant()],
            loadgen_bin: run.loadgen,
            table_dir: run.table_dir,
            tmp: run.dir.join("tmp").join(&stem),
            stem: stem.clone(),
            ns_index: i,
            stop: run.stop,
            remote: None,
        };
        let (rec, stopped) = memory::run(&job, settings);
        report::print_memory(&rec, s.repetitions);
        failed += usize::from(rec.error.is_some());
        memory::write(run.table_dir, &stem, &rec)?;
        meta.memory.push(rec);
        meta.write(run.dir)?;
        if stopped.is_some() {
            interrupted = true;
            break;
        }
    }
    Ok(RunOutcome {
        dir: run.dir.to_path_buf(),
        rows: Vec::new(),
        comparisons: Vec::new(),
        memory_failed: failed,
        memory_total: meta.memory.len(),
        interrupted,
    })
}

/// Every row against the baseline, one comparison after another.
fn run_paired(
    run: &Prepared,
    file: &ScenarioFile,
    scenarios: &[Scenario],
    settings: &scenario::PairedSettings,
    meta: &mut meta::Meta,
) -> anyhow::Result<RunOutcome> {
    let base_name = file
        .baseline
        .as_deref()
        .expect("the parser requires a baseline");
    let base = scenarios
        .iter()
        .find(|s| s.name == base_name)
        .expect("baseline added");
    let ctx = paired::Ctx {
        root: run.root,
        loadgen_bin: run.loadgen,
        binaries: run.binaries,
        table_dir: run.table_dir,
        tmp: run.dir.join("tmp"),
        settings,
        stop: run.stop,
        remote: run.remote,
    };
    meta.design = "paired".into();
    let mut comparisons = Vec::new();
    let mut interrupted = false;
    for (i, row) in scenarios.iter().filter(|s| s.name != base_name).enumerate() {
        if run.stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let (rec, stopped) = paired::compare(&ctx, base, row, i);
        report::print_comparison(&rec);
        comparisons.push(rec);
        meta.paired = comparisons.clone();
        meta.write(run.dir)?;
        if stopped.is_some() {
            interrupted = true;
            break;
        }
    }
    Ok(RunOutcome {
        dir: run.dir.to_path_buf(),
        rows: Vec::new(),
        comparisons,
        memory_failed: 0,
        memory_total: 0,
        interrupted,
    })
}
