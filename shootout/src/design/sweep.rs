//! The sweep design: one row at a time, its stack started once, then a
//! closed-model probe for its saturation rate, open-model steps at rising
//! rates until past saturation, and searches (bisection) for the highest
//! rate that meets the file's latency target. Each step is one loadgen
//! (`ROW.step-NN.jsonl`, `ROW.search-R-NN.jsonl`); what the logs lack (the
//! rate asked for, CPU sampled by the runner) goes to `ROW.sweep.json`,
//! from which the analysis recomputes every figure.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use analysis::sweep::{rules, Rules, Step, Verdict};
use anyhow::bail;
use serde::Serialize;

use crate::check::counter;
use crate::config::scenario::Scenario;
use crate::config::sweep::SweepSettings;
use crate::design::{each, Job, Prepared, RunOutcome};
use crate::measure::load::{self, Timing};
use crate::measure::wait::{self, Limits, Waited};
use crate::place::affinity::{Check, ReadCpus};
use crate::place::placement::Placement;
use crate::place::procs::Usage;
use crate::record::meta::Meta;
use crate::record::row::{RowFacts, RowRecord};
use crate::stack::Stack;
use crate::Interrupted;

/// Every row's sweep, one row after another; with `interleave`, also the
/// rows whose searches are still to run (`sweep_search::run_rounds`).
pub fn run_all<'a>(
    run: &Prepared,
    scenarios: &'a [Scenario],
    settings: &SweepSettings,
    meta: &mut Meta,
) -> anyhow::Result<(RunOutcome, Vec<Pending<'a>>)> {
    meta.design = "sweep".into();
    let mut rows = Vec::new();
    let mut pending = Vec::new();
    let units = scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s, 1, s.name.clone()));
    let interrupted = each(run, units, |unit| {
        let index = unit.0;
        let job = Job::new(run, unit);
        let mut facts = RowFacts::default();
        let outcome = sweep_row(&job, settings, &mut facts).map(|left| {
            if let Some(left) = left {
                pending.push(Pending {
                    index,
                    scenario: &scenarios[index],
                    left,
                });
            }
        });
        let _ = std::fs::remove_dir_all(&job.tmp);
        let (rec, stopped) = RowRecord::build(job.scenario, 1, facts, outcome);
        match &rec.error {
            None => println!("{}: sweep done", rec.scenario),
            Some(e) => println!("{}: FAILED: {e}", rec.scenario),
        }
        rows.push(rec);
        crate::hold_at::stage("record");
        meta.rows = rows.clone();
        meta.write(run.dir)?;
        Ok(stopped)
    })?;
    let outcome = RunOutcome {
        rows,
        ..RunOutcome::of(run.dir, interrupted)
    };
    Ok((outcome, pending))
}

/// What a row's searches still need after its sweep.
pub struct Left {
    pub targets: Vec<Rules>,
    /// (target from 1, the bracket's low and high rate) for each target
    /// with a bracket.
    pub brackets: Vec<(usize, f64, f64)>,
    /// The row's steps so far (`ROW.sweep.json`), searches appended.
    pub entries: Vec<StepEntry>,
}

/// A row whose sweep left searches to run.
pub struct Pending<'a> {
    pub index: usize,
    pub scenario: &'a Scenario,
    pub left: Left,
}

/// One step as `ROW.sweep.json` records it: its log and what the log lacks.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct StepEntry {
    /// `probe`, `sweep` or `search-R`.
    pub phase: String,
    /// The loadgen log, relative to the table directory.
    pub log: String,
    /// The rate asked for (none for the closed-model probe).
    pub rate: Option<f64>,
    pub loadgen_busy: Option<f64>,
    /// The server's CPU seconds over the measured part (nginx's added).
    pub server_cpu_s: Option<f64>,
}

/// `ROW.sweep.json`.
#[derive(Debug, Clone, Serialize)]
struct SweepIndex<'a> {
    row: &'a str,
    label: &'a str,
    /// Each target with the bounds its steps are judged by; a search step's
    /// entry names its target by index (`search-T-R`: target T, search R).
    targets: Vec<Rules>,
    /// Most steps a rate takes to be decided by their majority.
    votes: u32,
    threads: u32,
    /// Each search ran on a fresh stack, in rounds across the rows.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    searches_interleaved: bool,
    /// A search pinned at an end of its bracket tried that end again and
    /// went past it ([`extend`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pinned_searches_retried: bool,
    steps: &'a [StepEntry],
}

/// Writes `ROW.sweep.json` for `job`'s row: its targets and the steps so
/// far.
pub(super) fn write_index(
    job: &Job,
    settings: &SweepSettings,
    targets: &[Rules],
    entries: &[StepEntry],
) -> anyhow::Result<()> {
    let s = job.scenario;
    let index = SweepIndex {
        row: &s.name,
        label: &s.label,
        targets: targets.to_vec(),
        votes: settings.votes,
        threads: s.threads,
        searches_interleaved: settings.interleave,
        pinned_searches_retried: settings.interleave,
        steps: entries,
    };
    let path = job.run.table_dir.join(format!("{}.sweep.json", s.name));
    analysis::files::write_atomic(&path, &serde_json::to_vec_pretty(&index)?)
}

/// One row's sweep on its stack; with `interleave`, what its searches
/// still need (they run later, each on a fresh stack).
fn sweep_row(
    job: &Job,
    settings: &SweepSettings,
    facts: &mut RowFacts,
) -> anyhow::Result<Option<Left>> {
    let mut left = None;
    on_fresh_stack(job, facts, |place, stack, facts| {
        let before = verify(job.scenario, place, stack, facts)?;
        let mut entries = Vec::new();
        let mut logs = Vec::new();
        let mut runner = Stepper {
            job,
            settings,
            place,
            stack,
            entries: &mut entries,
            logs: &mut logs,
            loadgen: &mut facts.loadgen,
            cpus: &mut facts.cpus,
        };
        let (targets, brackets) = sweep_steps(&mut runner, settings)?;
        write_index(job, settings, &targets, &entries)?;
        check_counter(job, place, stack, before, &logs, facts)?;
        if settings.interleave && !brackets.is_empty() {
            left = Some(Left {
                targets,
                brackets,
                entries: std::mem::take(&mut entries),
            });
        }
        Ok(())
    })?;
    Ok(left)
}

/// Places `job`'s row, starts its stack, runs `stages` on it and stops it
/// (also when the stages fail).
pub(super) fn on_fresh_stack(
    job: &Job,
    facts: &mut RowFacts,
    stages: impl FnOnce(&Placement, &mut Stack, &mut RowFacts) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let place = job.place()?;
    facts.placed = Some((place.topology.clone(), place.netem.clone()));
    let mut stack = job.start_stack(&place)?;
    facts.started = Some((
        stack.startup_line.clone(),
        stack.terminal.clone(),
        stack.log_file.as_ref().map(|p| p.display().to_string()),
    ));
    let result = stages(&place, &mut stack, facts);
    sample_stack(&stack, facts);
    let (stopped, stop_result) = stack.stop();
    facts.stopped = Some(stopped);
    result?;
    stop_result
}

/// Adds a stack's usage from its start to now to the row's record (a row
/// measured on several fresh stacks, as a comparison is, sums their CPU
/// seconds and keeps the largest peak RSS).
fn sample_stack(stack: &Stack, facts: &mut RowFacts) {
    let (server, nginx) = stack.usage();
    if let Some(u) = server {
        facts.server = facts.server.then(u);
    }
    if let Some(u) = nginx {
        facts.nginx = Some(facts.nginx.unwrap_or_default().then(u));
    }
}

/// Keeps a loadgen's CPUs as read at its first sample (none when it had
/// already ended), after checking them against its row's.
pub(super) fn keep_reading(
    cpus: &mut Vec<ReadCpus>,
    placed: Option<anyhow::Result<ReadCpus>>,
) -> anyhow::Result<()> {
    match placed {
        Some(Ok(read)) if read.threads > 0 => {
            read.check()?;
            if !cpus.contains(&read) {
                cpus.push(read);
            }
            Ok(())
        }
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// Checks the app on a started stack, and where its processes run (row
/// `s`'s CPUs; each stack's reading kept once); the count before the load.
pub(super) fn verify(
    s: &Scenario,
    place: &Placement,
    stack: &mut Stack,
    facts: &mut RowFacts,
) -> anyhow::Result<u64> {
    let verified = stack.verify(place.client())?;
    let before = verified.as_ref().map_or(0, |v| v.count);
    facts.verified = verified;
    // A process not where the file says fails the row before any load.
    for read in stack.read_cpus(s)? {
        read.check()?;
        if !facts.cpus.contains(&read) {
            facts.cpus.push(read);
        }
    }
    Ok(before)
}

/// After the loads in `logs`: the counter moved by what they acknowledged
/// (rows with a counter that POST only).
pub(super) fn check_counter(
    job: &Job,
    place: &Placement,
    stack: &mut Stack,
    before: u64,
    logs: &[PathBuf],
    facts: &mut RowFacts,
) -> anyhow::Result<()> {
    let s = job.scenario;
    let mut acknowledged = 0;
    for log in logs {
        acknowledged += load::read_log(log)?.acknowledged;
    }
    if stack.has_counter() && crate::check::verify::post_body(s.request).is_some() {
        let after = stack.count(place.client())?;
        let in_flight = s.connections.saturating_mul(logs.len() as u32);
        facts.counter = Some(counter::check(before, after, acknowledged, in_flight)?);
    }
    Ok(())
}

/// Probe, steps until past saturation (for every target), then each
/// target's searches (unless they are interleaved: later); the targets'
/// rules, and the brackets the searches run in (target from 1, low, high).
#[allow(clippy::type_complexity)]
fn sweep_steps(
    runner: &mut Stepper,
    settings: &SweepSettings,
) -> anyhow::Result<(Vec<Rules>, Vec<(usize, f64, f64)>)> {
    let targets: Vec<Rules> = settings.slos.iter().map(|s| settings.rules(*s)).collect();
    let probe = runner.probe()?;
    let rates = match &settings.rates {
        Some(r) => r.clone(),
        None => rules::geometric(
            probe * settings.start_pct / 100.0,
            settings.factor,
            settings.max_steps,
        ),
    };
    let mut steps = Vec::new();
    for (k, rate) in rates.iter().enumerate() {
        let step = runner.step("sweep", &format!("step-{:02}", k + 1), *rate)?;
        let stop = targets.iter().all(|t| t.stops(&step));
        steps.push(step);
        if stop {
            break;
        }
    }
    // The bracket's ends measured again until their majority is settled,
    // for every target (a step counts for each).
    let votes = settings.votes;
    let mut k = 0;
    while let Some(rate) = targets.iter().find_map(|t| t.unsettled(&steps, votes)) {
        k += 1;
        steps.push(runner.step("sweep", &format!("vote-{k:02}"), rate)?);
    }
    let brackets: Vec<(usize, f64, f64)> = targets
        .iter()
        .enumerate()
        .filter_map(|(t, target)| match target.bracket(&steps) {
            analysis::sweep::Bracket::Between(low, high) => Some((t + 1, low, high)),
            _ => None,
        })
        .collect();
    if !settings.interleave {
        for &(t, low, high) in &brackets {
            for r in 1..=settings.repeats {
                search(runner, settings, (t, &targets[t - 1]), (low, high), r)?;
            }
        }
    }
    Ok((targets, brackets))
}

/// Search `r` for target `t` (from 1): bisection between `low` and
/// `high`, each rate measured until its majority is settled; its steps
/// are `ROW.search-T-R-NN`. With `interleave`, a search pinned at an end
/// of the bracket (every rate passed, or none) tries that end again on
/// its own stack, since the sweep decided it on another: see [`extend`].
pub(super) fn search(
    runner: &mut Stepper,
    settings: &SweepSettings,
    (t, target): (usize, &Rules),
    (low, high): (f64, f64),
    r: u32,
) -> anyhow::Result<()> {
    let mut k = 0;
    let phase = format!("search-{t}-{r}");
    let mut decide = |rate: f64| -> anyhow::Result<bool> {
        let mut at = Vec::new();
        loop {
            k += 1;
            at.push(runner.step(&phase, &format!("{phase}-{k:02}"), rate)?);
            let refs: Vec<&Step> = at.iter().collect();
            if target.settled(&refs, settings.votes) {
                return Ok(target.verdict(&refs) == Verdict::Pass);
            }
        }
    };
    let (mut passed, mut failed) = (0, 0);
    rules::bisect(low, high, settings.bisect, |rate| {
        let pass = decide(rate)?;
        *if pass { &mut passed } else { &mut failed } += 1;
        Ok(pass)
    })?;
    if settings.interleave && settings.bisect > 0 {
        if failed == 0 {
            extend(&mut decide, settings, high, settings.factor)?;
        } else if passed == 0 {
            extend(&mut decide, settings, low, 1.0 / settings.factor)?;
        }
    }
    Ok(())
}

/// A pinned search's way out of its bracket: `end` (the failing end when
/// every rate passed, `factor` > 1; the passing end when none did, `factor`
/// < 1) decided on this stack, then rates on by `factor`, at most
/// [`rules::MAX_EXTEND`] past `end`, until the verdict turns; then `bisect`
/// rounds between the last two rates. When `end` itself turns, the search
/// is done: its answer is now bounded on its own stack.
fn extend(
    decide: &mut impl FnMut(f64) -> anyhow::Result<bool>,
    settings: &SweepSettings,
    end: f64,
    factor: f64,
) -> anyhow::Result<()> {
    // Stepping up, rates keep passing until one fails; down, the reverse.
    let keeps = |pass: bool| pass == (factor > 1.0);
    let mut inside: Option<f64> = None;
    let mut rate = end;
    for _ in 0..=rules::MAX_EXTEND {
        if !keeps(decide(rate)?) {
            if let Some(last) = inside {
                let (low, high) = if factor > 1.0 {
                    (last, rate)
                } else {
                    (rate, last)
                };
                rules::bisect(low, high, settings.bisect, &mut *decide)?;
            }
            return Ok(());
        }
        inside = Some(rate);
        rate *= factor;
    }
    Ok(())
}

/// Runs the steps of one row on its stack.
pub(super) struct Stepper<'a, 'b> {
    pub(super) job: &'a Job<'b>,
    pub(super) settings: &'a SweepSettings,
    pub(super) place: &'a Placement,
    pub(super) stack: &'a mut Stack,
    pub(super) entries: &'a mut Vec<StepEntry>,
    pub(super) logs: &'a mut Vec<PathBuf>,
    /// Every loadgen's usage so far, one after another.
    pub(super) loadgen: &'a mut Usage,
    /// Where the row's processes ran (each distinct reading once): every
    /// step's loadgen is read at its first sample.
    pub(super) cpus: &'a mut Vec<ReadCpus>,
}

impl Stepper<'_, '_> {
    /// The closed-model probe's 2xx/s.
    fn probe(&mut self) -> anyhow::Result<f64> {
        let loaded = self.load("probe", "probe", None)?;
        let rps = load::read_log(&loaded.log)?
            .rps
            .ok_or_else(|| anyhow::anyhow!("{}: no summary", loaded.log.display()))?;
        eprintln!(
            "  {} probe: closed model: {rps:.0} 2xx/s",
            self.job.scenario.name
        );
        Ok(rps)
    }

    /// One open-model step at `rate`: its figures.
    pub(super) fn step(&mut self, phase: &str, name: &str, rate: f64) -> anyhow::Result<Step> {
        let l = self.load(phase, name, Some(rate))?;
        let step = analysis::sweep::step_of(&l.log, rate, l.loadgen_busy, l.server_cpu_s)?;
        eprintln!(
            "  {} {name}: rate {rate:.0}: {:.0} 2xx/s, p99 {:.0} µs, p99.9 {:.0} µs",
            self.job.scenario.name, step.achieved, step.p99_us, step.p999_us
        );
        Ok(step)
    }

    /// One loadgen at `rate` (closed model when none), settle then
    /// measure; its log, kept and recorded in `ROW.sweep.json`.
    fn load(&mut self, phase: &str, name: &str, rate: Option<f64>) -> anyhow::Result<Loaded> {
        let run = self.job.run;
        if run.stopping() {
            return Err(Interrupted.into());
        }
        let s = self.job.scenario;
        let mut row = s.clone();
        row.rate = rate;
        let duration = match rate {
            Some(r) => self.settings.step_length(r),
            None => self.settings.probe,
        };
        let timing = Timing {
            warmup: self.settings.settle,
            duration,
            start_at: None,
            turn: None,
        };
        let host = self.place.client();
        let bin = host.place_binary(run.loadgen)?;
        let ca = self.stack.ca_file(host);
        let mut argv = load::argv(&bin, &row, self.stack.target, ca, timing);
        if let (Some(_), Some(spin)) = (rate, self.settings.client_spin) {
            argv = load::spinning(argv, spin);
        }
        let file = format!("{}.{name}.jsonl", s.name);
        let log = run.table_dir.join(&file);
        let proc_ = load::spawn(host, row.loadgen_cpus.as_deref(), argv, &log)?;
        let started = Instant::now();
        let settle = self.settings.settle;
        let mut cpu_at_settle = None;
        let mut usage: Option<Usage> = None;
        let limits = Limits {
            deadline: settle + duration + Duration::from_secs(30),
            every: Duration::from_millis(100),
            poll: Duration::from_millis(100),
            stopping: &|| run.stopping(),
        };
        let mut procs = [proc_];
        let mut placed = None;
        let waited = wait::wait(
            &mut procs,
            |p| p,
            self.stack,
            limits,
            |stack, procs, t| {
                if placed.is_none() {
                    placed = Some(procs[0].read_cpus("loadgen", s.loadgen_cpus.as_deref()));
                }
                // A reading as the loadgen ends (a zombie has no memory
                // figures left) keeps the peak read before.
                if let Some(u) = procs[0].usage() {
                    usage = Some(usage.map_or(u, |before| before.updated(u)));
                }
                if cpu_at_settle.is_none() && t >= settle {
                    cpu_at_settle = Some(server_cpu(stack));
                }
            },
        )?;
        let [proc_] = procs;
        let status: ExitStatus = match waited {
            Waited::Done(st) => st[0],
            Waited::Interrupted(_) => {
                let _ = std::fs::remove_file(analysis::files::partial(&log));
                return Err(Interrupted.into());
            }
        };
        let wall = started.elapsed().as_secs_f64();
        let server_cpu_s = cpu_at_settle.map(|c0| server_cpu(self.stack) - c0);
        if let Err(e) = load::keep(&log) {
            if !status.success() {
                bail!("loadgen exited with {status}: {}", proc_.stderr().tail());
            }
            return Err(e);
        }
        if !status.success() {
            bail!("loadgen exited with {status}: {}", proc_.stderr().tail());
        }
        keep_reading(self.cpus, placed)?;
        self.logs.push(log.clone());
        let loadgen_busy = usage.map(|u| u.cpu_seconds / (wall * f64::from(s.threads)));
        if let Some(u) = usage {
            *self.loadgen = self.loadgen.then(u);
        }
        self.entries.push(StepEntry {
            phase: phase.into(),
            log: file,
            rate,
            loadgen_busy,
            server_cpu_s,
        });
        Ok(Loaded {
            log,
            loadgen_busy,
            server_cpu_s,
        })
    }
}

/// A finished loadgen's log and what the runner sampled beside it.
struct Loaded {
    log: PathBuf,
    loadgen_busy: Option<f64>,
    server_cpu_s: Option<f64>,
}

/// The server's CPU seconds so far, nginx's added.
fn server_cpu(stack: &Stack) -> f64 {
    let (server, nginx) = stack.usage();
    server.map_or(0.0, |u| u.cpu_seconds) + nginx.map_or(0.0, |u| u.cpu_seconds)
}
