//! Designs: the schedules that run a file's rows. Each is a loop over units
//! (a row's repetition, a comparison) that places, starts, measures, checks
//! and records them through the stages of the other folders. This module
//! prepares a run once (setup, builds, hosts), hands it to the file's
//! design, and runs the loop they share.

pub mod calibrate;
pub mod memory;
pub mod paired;
pub mod paired_plan;
pub mod sequential;
pub mod sinks;
pub mod sweep;
pub mod sweep_compare;
pub mod sweep_search;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::config::scenario::{Design, Scenario, ScenarioFile};
use crate::place::connect;
use crate::place::placement::{Hosts, Placement};
use crate::prepare::{build, setup};
use crate::record::comparison::ComparisonRecord;
use crate::record::meta::{self, Meta};
use crate::record::report;
use crate::record::row::RowRecord;
use crate::stack::{Stack, StackSpec};
use crate::Interrupted;

/// How to run a scenario file.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Run only this scenario.
    pub only: Option<String>,
    /// Override every scenario's measured duration (paired design: the block).
    pub duration: Option<Duration>,
    /// Paired design: override the planned blocks of each comparison.
    pub blocks: Option<u32>,
    /// Paired design: override the settle before each block.
    pub settle: Option<Duration>,
    /// Paired design: override the runs of each comparison.
    pub runs: Option<u32>,
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
    /// A stop (SIGINT, SIGTERM) came once the run was recorded; the report
    /// was completed, and the command still exits as interrupted.
    pub stopped_in_report: bool,
}

impl RunOutcome {
    /// An outcome of `dir` with nothing run yet.
    pub fn of(dir: &Path, interrupted: bool) -> RunOutcome {
        RunOutcome {
            dir: dir.to_path_buf(),
            rows: Vec::new(),
            comparisons: Vec::new(),
            memory_failed: 0,
            memory_total: 0,
            interrupted,
            stopped_in_report: false,
        }
    }

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

/// What every design needs once the builds are done.
pub struct Prepared<'a> {
    pub root: &'a Path,
    /// The run directory.
    pub dir: &'a Path,
    /// Where the table's raw files go.
    pub table_dir: &'a Path,
    pub loadgen: &'a Path,
    /// Server binary per variant.
    pub binaries: &'a HashMap<String, PathBuf>,
    /// Where rows can be placed.
    pub hosts: &'a Hosts,
    pub stop: &'a Arc<AtomicBool>,
}

impl Prepared<'_> {
    /// The binary of row `s`'s variant.
    pub fn server_bin(&self, s: &Scenario) -> &Path {
        &self.binaries[&s.variant()]
    }

    /// A private directory under the run's temp directory (removed at the end).
    pub fn tmp(&self, name: &str) -> PathBuf {
        self.dir.join("tmp").join(name)
    }

    /// True once SIGINT or SIGTERM came.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Runs every scenario (or `--only` one) of `file`, writing as it goes.
pub fn run_file(
    file: &ScenarioFile,
    opts: &RunOptions,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<RunOutcome> {
    let root = build::workspace_root();
    let (scenarios, design) = select(file, opts)?;
    // Before anything is built or written: what these rows run must be here.
    setup::ensure(&setup::needs_of(&scenarios))?;
    setup::ensure_rust_targets(&scenarios)?;
    // What a runner killed earlier (SIGKILL) left: ended before this run
    // starts anything, and said in one line.
    let ended = crate::place::orphans::end_leftovers();
    if !ended.is_empty() {
        eprintln!("shootout: {}", ended.line());
    }
    let dir = run_dir(&opts.out, &format!("{}-{}", meta::timestamp(), file.name))?;
    // Registered while it is written, for the next run to end if this one
    // is killed.
    let registered = crate::place::orphans::register(&dir)?;
    let result = run_in(&dir, &root, file, opts, &scenarios, &design, stop);
    // Whatever happened, no temporary or partial file stays: each file of
    // the run is complete or absent. A run that failed before it recorded
    // anything (no meta.json, no loadgen log) leaves no directory; one that
    // has raw data keeps it, even when meta.json could not be written.
    analysis::files::tidy(&dir);
    if result.is_err()
        && !analysis::input::raw::is_file(&dir.join("meta.json"))
        && !has_raw_data(&dir)
    {
        let _ = std::fs::remove_dir_all(&dir);
    } else if result.is_err() {
        // A failed run's records are packed as a finished run's are. A pack
        // that fails (a full disk, a read-only directory: the error already
        // reported) leaves them loose, where every reader finds them too.
        let _ = analysis::input::raw::pack(&dir);
    }
    drop(registered);
    result
}

/// Every row's sweep, then the comparisons at equal rates the file asks
/// for (after the baseline's sweep, whose max rate sets their rates).
fn sweep_then_compare(
    run: &Prepared,
    file: &ScenarioFile,
    scenarios: &[Scenario],
    settings: &crate::config::sweep::SweepSettings,
    meta: &mut Meta,
) -> anyhow::Result<RunOutcome> {
    let (mut outcome, mut pending) = sweep::run_all(run, scenarios, settings, meta)?;
    // With `interleave`, the searches the sweeps left, in rounds.
    outcome.interrupted = outcome.interrupted
        || sweep_search::run_rounds(run, settings, &mut pending, meta, &mut outcome.rows)?;
    if !outcome.interrupted && !settings.compare_at.is_empty() {
        let baseline = file.baseline.as_deref().unwrap_or(&scenarios[0].name);
        outcome.interrupted =
            sweep_compare::run_all(run, scenarios, settings, baseline, &mut outcome.rows)?;
        meta.rows = outcome.rows.clone();
        meta.write(run.dir)?;
    }
    Ok(outcome)
}

/// True when some loadgen log (`*.jsonl`, or the run's raw archive)
/// lies under `dir`.
fn has_raw_data(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let p = e.path();
            if p.is_dir() {
                has_raw_data(&p)
            } else {
                let name = e.file_name().to_string_lossy().into_owned();
                analysis::input::raw::is_raw(&name) || analysis::input::raw::is_archive(&name)
            }
        })
}

/// [`run_file`] in its run directory `dir`.
fn run_in(
    dir: &Path,
    root: &Path,
    file: &ScenarioFile,
    opts: &RunOptions,
    scenarios: &[Scenario],
    design: &Design,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<RunOutcome> {
    let table_dir = dir.join(&file.name);
    std::fs::create_dir_all(&table_dir)
        .with_context(|| format!("creating {}", table_dir.display()))?;
    report::write_table_toml(&table_dir, file, scenarios, design, None)?;
    crate::hold_at::stage("build");
    // The record's dirty flag covers the builds: taken before them too.
    let dirty_before = crate::record::meta::git_dirty(root);
    let built = build_all(root, scenarios, opts.profile, stop);
    // Ctrl-C reaches cargo too: a build it cut short is an interruption.
    if stop.load(Ordering::Relaxed) {
        return Err(Interrupted.into());
    }
    let (loadgen, binaries) = built?;
    let mut meta = Meta::collect(root, &file.path.display().to_string()).dirty_before(dirty_before);
    // Remote rows: every host of the file connected and checked once, before
    // any row runs; a host that fails stops the run here, named.
    let hosts = match &file.remote {
        Some(r)
            if scenarios
                .iter()
                .any(|s| s.hosts.is_some() || s.ssh_terminal.is_some()) =>
        {
            Hosts::with_remote(connect::connect(r, &loadgen)?)
        }
        _ => Hosts::here(),
    };
    meta.hosts = hosts.checked();
    let run = Prepared {
        root,
        dir,
        table_dir: &table_dir,
        loadgen: &loadgen,
        binaries: &binaries,
        hosts: &hosts,
        stop,
    };
    let outcome = match design {
        Design::Sequential => sequential::run_all(&run, scenarios, &mut meta)?,
        Design::Paired(p) => {
            paired_plan::run_all(&run, scenarios, opts.only.as_deref(), p, &mut meta)?
        }
        Design::Memory(m) => memory::run_all(&run, scenarios, m, &mut meta)?,
        Design::Sweep(w) => sweep_then_compare(&run, file, scenarios, w, &mut meta)?,
        Design::Sinks(k) => sinks::run_all(&run, scenarios, k, &mut meta)?,
    };
    meta.interrupted = outcome.interrupted;
    meta.write(dir)?;
    // The raw records into the run's raw.tar.xz, before the report lists
    // the run's files.
    analysis::input::raw::pack(dir)?;
    // The run is measured and recorded: a stop from here on lets the
    // report finish (seconds of writing what is recorded), so the folder,
    // its page and the shared history are complete, and then says so.
    if let Some(r) = report::analyse(dir)? {
        report::print_answers(&r);
        crate::hold_at::stage("report");
        crate::record::history::after_run(dir)?;
    }
    let mut outcome = outcome;
    if !outcome.interrupted && stop.load(Ordering::Relaxed) {
        eprintln!("shootout: stopped during the report: the run had finished, so its report was completed first");
        outcome.stopped_in_report = true;
    }
    Ok(outcome)
}

/// The rows of `file` this run measures (`--only`, with the baseline of a
/// paired file first), and its design with the command line's overrides.
fn select(file: &ScenarioFile, opts: &RunOptions) -> anyhow::Result<(Vec<Scenario>, Design)> {
    let path = file.path.display();
    let mut scenarios: Vec<_> = file
        .scenarios
        .iter()
        .filter(|s| opts.only.as_ref().is_none_or(|o| o == &s.name))
        .cloned()
        .collect();
    if scenarios.is_empty() {
        bail!(
            "{path}: no scenario named {:?}",
            opts.only.as_deref().unwrap_or("")
        );
    }
    let mut design = file.design.clone();
    if opts.settle.is_some() && !matches!(design, Design::Paired(_)) {
        bail!("{path}: --settle is for design = \"paired\" (the other designs take their warm-ups from the file)");
    }
    match &mut design {
        Design::Sequential => {
            if opts.blocks.is_some() || opts.runs.is_some() {
                bail!("{path}: --blocks and --runs are for design = \"paired\" (sequential rows take repetitions)");
            }
            if let Some(d) = opts.duration {
                for s in &mut scenarios {
                    s.duration = d;
                }
            }
        }
        Design::Sweep(_) => {
            if opts.duration.is_some() || opts.blocks.is_some() || opts.runs.is_some() {
                bail!("{path}: sweep rows take their times from [sweep] (step, settle, probe, repeats), not --duration, --blocks or --runs");
            }
        }
        Design::Sinks(k) => {
            if opts.blocks.is_some() || opts.duration.is_some() {
                bail!("{path}: sinks take their times from [sinks] (runs, length, sample), not --duration or --blocks");
            }
            k.runs = opts.runs.unwrap_or(k.runs);
            if k.runs < 2 {
                bail!("{path}: --runs must be at least 2 for sinks (the interval is over runs)");
            }
        }
        Design::Memory(_) => {
            if opts.duration.is_some() || opts.blocks.is_some() || opts.runs.is_some() {
                bail!("{path}: memory rows take their times from [memory] (hold, settle, after), not --duration, --blocks or --runs");
            }
        }
        Design::Paired(p) => {
            p.block = opts.duration.unwrap_or(p.block);
            p.blocks = opts.blocks.unwrap_or(p.blocks);
            p.settle = opts.settle.unwrap_or(p.settle);
            p.runs = opts.runs.unwrap_or(p.runs);
            // Every row is measured against the baseline, which runs in
            // every comparison (and is not compared with itself).
            let base = file.baseline.as_deref().context("no baseline")?;
            if opts.only.as_deref() == Some(base) {
                bail!("{path}: {base:?} is the baseline; compare it with itself through a row with the same settings (an A/A row)");
            }
            // Rows a selected row is compared with run too (after the
            // baseline), without being compared themselves.
            let wanted: Vec<String> = scenarios.iter().filter_map(|s| s.against.clone()).collect();
            for name in wanted.iter().rev().chain([&base.to_string()]) {
                if !scenarios.iter().any(|s| &s.name == name) {
                    let r = file.scenarios.iter().find(|s| &s.name == name);
                    scenarios.insert(0, r.context("no such row")?.clone());
                }
            }
            if let Some(i) = scenarios.iter().position(|s| s.name == base) {
                let b = scenarios.remove(i);
                scenarios.insert(0, b);
            }
        }
    }
    Ok((scenarios, design))
}

/// `OUT/NAME`, created; absolute, because nginx resolves its prefix's paths
/// itself and the servers and nginx run from other directories.
fn run_dir(out: &Path, name: &str) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let out = std::fs::canonicalize(out).with_context(|| format!("resolving {}", out.display()))?;
    let dir = out.join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// loadgen and every distinct server variant of `scenarios`, built once each.
fn build_all(
    root: &Path,
    scenarios: &[Scenario],
    profile: build::Profile,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(PathBuf, HashMap<String, PathBuf>)> {
    let mut variants: Vec<String> = scenarios
        .iter()
        .filter(|s| s.is_twin())
        .map(Scenario::variant)
        .collect();
    variants.sort();
    variants.dedup();
    eprintln!(
        "shootout: building loadgen and {} server variant(s)",
        variants.len()
    );
    let loadgen = build::loadgen(root, profile, stop)?;
    let mut binaries = HashMap::new();
    for s in scenarios {
        if let std::collections::hash_map::Entry::Vacant(slot) = binaries.entry(s.variant()) {
            // A command row's program is its own, found when the file was read.
            slot.insert(match &s.command {
                Some(c) => PathBuf::from(&c.argv[0]),
                None => build::server(root, s, profile, stop)?,
            });
        }
    }
    Ok((loadgen, binaries))
}

/// The loop every design runs: one unit after another (a row's
/// repetition, a comparison), each recorded by `one` (which writes
/// meta.json) as it ends. Stops before the next unit once the run is
/// stopped, or when `one` reports that it was interrupted; returns whether
/// it was.
pub fn each<T>(
    run: &Prepared,
    units: impl IntoIterator<Item = T>,
    mut one: impl FnMut(T) -> anyhow::Result<Option<Interrupted>>,
) -> anyhow::Result<bool> {
    for unit in units {
        if run.stopping() || one(unit)?.is_some() {
            return Ok(true);
        }
    }
    // A stop that came as the last unit was recorded still counts.
    Ok(run.stopping())
}

/// The order of a design's repetitions: in rounds (A B C, A B C, ...), not
/// row after row, so that drift on a shared machine spreads over every row
/// alike. Yields (row index, row, repetition, file stem).
pub fn rounds(scenarios: &[Scenario]) -> impl Iterator<Item = (usize, &Scenario, u32, String)> {
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

/// One repetition of one row, for the designs that run a row at a time.
pub struct Job<'a> {
    pub run: &'a Prepared<'a>,
    pub scenario: &'a Scenario,
    pub repetition: u32,
    /// File stem for this repetition's files.
    pub stem: String,
    /// Its private files (removed after the repetition).
    pub tmp: PathBuf,
    /// Keeps its namespaces apart from other rows'.
    pub ns_index: usize,
}

impl<'a> Job<'a> {
    /// The job of one unit of [`rounds`].
    pub fn new(run: &'a Prepared<'a>, unit: (usize, &'a Scenario, u32, String)) -> Job<'a> {
        let (ns_index, scenario, repetition, stem) = unit;
        Job {
            run,
            scenario,
            repetition,
            tmp: run.tmp(&stem),
            stem,
            ns_index,
        }
    }

    /// The row's hosts.
    pub fn place(&self) -> anyhow::Result<Placement> {
        self.run.hosts.place(self.scenario, self.ns_index)
    }

    /// Starts the row's stack on `place`.
    pub fn start_stack(&self, place: &Placement) -> anyhow::Result<Stack> {
        let spec = StackSpec {
            root: self.run.root,
            scenario: self.scenario,
            server_bin: self.run.server_bin(self.scenario),
            tmp: self.tmp.clone(),
        };
        let stack = Stack::start(&spec, place)?;
        if self.run.stopping() {
            let _ = stack.stop();
            return Err(Interrupted.into());
        }
        Ok(stack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settle_overrides_a_paired_file_and_is_refused_elsewhere() {
        let parse = |name: &str| {
            let text = std::fs::read_to_string(build::workspace_root().join(name)).unwrap();
            crate::config::parse::parse(Path::new(name), &text).unwrap()
        };
        let opts = RunOptions {
            only: None,
            duration: None,
            blocks: None,
            settle: Some(Duration::from_millis(500)),
            runs: None,
            out: PathBuf::new(),
            profile: build::Profile::Dev,
        };
        let (_, design) = select(&parse("scenarios/quick.toml"), &opts).unwrap();
        let Design::Paired(p) = design else {
            panic!("quick.toml is paired")
        };
        assert_eq!(p.settle, Duration::from_millis(500));
        let err = select(&parse("shootout/tests/fixtures/sequential.toml"), &opts)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--settle is for design = \"paired\""), "{err}");
    }

    #[test]
    fn only_a_row_runs_with_the_rows_it_is_compared_with_baseline_first() {
        let file = crate::config::parse::parse(
            Path::new("scenarios/quick.toml"),
            &std::fs::read_to_string(build::workspace_root().join("scenarios/quick.toml")).unwrap(),
        )
        .unwrap();
        let opts = |only: Option<&str>| RunOptions {
            only: only.map(String::from),
            duration: None,
            blocks: None,
            settle: None,
            runs: None,
            out: PathBuf::new(),
            profile: build::Profile::Dev,
        };
        let names = |only| -> Vec<String> {
            let (rows, _) = select(&file, &opts(only)).unwrap();
            rows.into_iter().map(|s| s.name).collect()
        };
        assert_eq!(names(Some("ntex-nginx")), ["actix", "ntex", "ntex-nginx"]);
        assert_eq!(names(Some("aa")), ["actix", "aa"]);
        assert_eq!(
            names(None),
            [
                "actix",
                "ntex",
                "actix-log-pipe",
                "ntex-nginx",
                "ntex-netns",
                "aa"
            ]
        );
        assert_eq!(names(Some("actix-log-pipe")), ["actix", "actix-log-pipe"]);
        assert!(select(&file, &opts(Some("actix"))).is_err());
    }
}
