//! The sweep design: one row at a time, its stack started once, then a
//! closed-model probe for its saturation rate, open-model steps at rising
//! rates until past saturation, and searches (bisection) for the highest
//! rate that meets the file's latency target. Each step is one loadgen
//! (`ROW.step-NN.jsonl`, `ROW.search-R-NN.jsonl`); what the logs lack (the
//! rate asked for, CPU sampled by the runner) goes to `ROW.sweep.json`,
//! from which the analysis recomputes every figure.

use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use analysis::sweep::{rules, Rules, Step};
use anyhow::bail;
use serde::Serialize;

use crate::check::counter;
use crate::config::scenario::Scenario;
use crate::config::sweep::SweepSettings;
use crate::design::{each, Job, Prepared, RunOutcome};
use crate::measure::load::{self, Timing};
use crate::place::placement::Placement;
use crate::record::meta::Meta;
use crate::record::row::{RowFacts, RowRecord};
use crate::stack::Stack;
use crate::Interrupted;

/// Every row's sweep, one row after another.
pub fn run_all(
    run: &Prepared,
    scenarios: &[Scenario],
    settings: &SweepSettings,
    meta: &mut Meta,
) -> anyhow::Result<RunOutcome> {
    meta.design = "sweep".into();
    let mut rows = Vec::new();
    let units = scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s, 1, s.name.clone()));
    let interrupted = each(run, units, |unit| {
        let job = Job::new(run, unit);
        let mut facts = RowFacts::default();
        let outcome = sweep_row(&job, settings, &mut facts);
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
    Ok(RunOutcome {
        rows,
        ..RunOutcome::of(run.dir, interrupted)
    })
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
    slo: String,
    max_lateness_us: f64,
    max_loadgen_busy: f64,
    threads: u32,
    steps: &'a [StepEntry],
}

fn sweep_row(job: &Job, settings: &SweepSettings, facts: &mut RowFacts) -> anyhow::Result<()> {
    let place = job.place()?;
    facts.placed = Some((place.topology.clone(), place.netem.clone()));
    let mut stack = job.start_stack(&place)?;
    facts.started = Some((
        stack.startup_line.clone(),
        stack.terminal.clone(),
        stack.log_file.as_ref().map(|p| p.display().to_string()),
    ));
    let result = sweep_stages(job, settings, &place, &mut stack, facts);
    let (stopped, stop_result) = stack.stop();
    facts.stopped = Some(stopped);
    result?;
    stop_result
}

/// Probe, steps and searches on a started stack, then the counter check.
fn sweep_stages(
    job: &Job,
    settings: &SweepSettings,
    place: &Placement,
    stack: &mut Stack,
    facts: &mut RowFacts,
) -> anyhow::Result<()> {
    let s = job.scenario;
    let rules = Rules::for_slo(settings.slo);
    let verified = stack.verify(place.client())?;
    let before = verified.as_ref().map_or(0, |v| v.count);
    facts.verified = verified;
    let mut entries = Vec::new();
    let mut logs = Vec::new();
    let mut runner = Stepper {
        job,
        settings,
        place,
        stack,
        entries: &mut entries,
        logs: &mut logs,
    };
    let probe = runner.run("probe", "probe".into(), None)?;
    let rates = match &settings.rates {
        Some(r) => r.clone(),
        None => rules::geometric(
            probe.achieved * settings.start_pct / 100.0,
            settings.factor,
            settings.max_steps,
        ),
    };
    let mut steps = Vec::new();
    for (k, rate) in rates.iter().enumerate() {
        let step = runner.run("sweep", format!("step-{:02}", k + 1), Some(*rate))?;
        let stop = rules.stops(&step);
        steps.push(step);
        if stop {
            break;
        }
    }
    if let analysis::sweep::Bracket::Between(low, high) = rules.bracket(&steps) {
        for r in 1..=settings.repeats {
            let mut k = 0;
            rules::bisect(low, high, settings.bisect, |rate| {
                k += 1;
                let phase = format!("search-{r}");
                let step = runner.run(&phase, format!("search-{r}-{k:02}"), Some(rate))?;
                Ok(rules.passes(&step))
            })?;
        }
    }
    let index = SweepIndex {
        row: &s.name,
        label: &s.label,
        slo: settings.slo.to_string(),
        max_lateness_us: rules.max_lateness_us,
        max_loadgen_busy: rules.max_loadgen_busy,
        threads: s.threads,
        steps: &entries,
    };
    let path = job.run.table_dir.join(format!("{}.sweep.json", s.name));
    analysis::files::write_atomic(&path, &serde_json::to_vec_pretty(&index)?)?;
    let mut acknowledged = 0;
    for log in &logs {
        acknowledged += load::read_log(log)?.acknowledged;
    }
    if !stack.is_ceiling() && crate::check::verify::post_body(s.request).is_some() {
        let after = stack.count(place.client())?;
        let in_flight = s.connections.saturating_mul(logs.len() as u32);
        facts.counter = Some(counter::check(before, after, acknowledged, in_flight)?);
    }
    Ok(())
}

/// Runs the steps of one row on its stack.
struct Stepper<'a, 'b> {
    job: &'a Job<'b>,
    settings: &'a SweepSettings,
    place: &'a Placement,
    stack: &'a mut Stack,
    entries: &'a mut Vec<StepEntry>,
    logs: &'a mut Vec<std::path::PathBuf>,
}

impl Stepper<'_, '_> {
    /// One loadgen at `rate` (closed model when none), settle then
    /// measure; its figures.
    fn run(&mut self, phase: &str, name: String, rate: Option<f64>) -> anyhow::Result<Step> {
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
        let argv = load::argv(&bin, &row, self.stack.target, timing);
        let file = format!("{}.{name}.jsonl", s.name);
        let log = run.table_dir.join(&file);
        let mut proc_ = load::spawn(host, argv, &log)?;
        let started = Instant::now();
        let deadline = self.settings.settle + duration + Duration::from_secs(30);
        let mut cpu_at_settle = None;
        let mut busy = None;
        let status: ExitStatus = loop {
            if let Some(st) = proc_.try_wait() {
                break st;
            }
            if let Some(u) = proc_.usage() {
                busy = Some(u.cpu_seconds);
            }
            if cpu_at_settle.is_none() && started.elapsed() >= self.settings.settle {
                cpu_at_settle = Some(server_cpu(self.stack));
            }
            if run.stopping() {
                let _ = proc_.interrupt();
                let _ = proc_.stop(Duration::from_secs(2));
                let _ = std::fs::remove_file(analysis::files::partial(&log));
                return Err(Interrupted.into());
            }
            if let Err(e) = self.stack.check_alive() {
                let _ = proc_.stop(Duration::from_secs(2));
                return Err(e);
            }
            if started.elapsed() > deadline {
                let _ = proc_.stop(Duration::from_secs(2));
                bail!("loadgen did not finish within {deadline:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
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
        self.logs.push(log.clone());
        let loadgen_busy = busy.map(|c| c / (wall * f64::from(s.threads)));
        let step = match rate {
            Some(r) => analysis::sweep::step_of(&log, r, loadgen_busy, server_cpu_s)?,
            None => probe_step(&log)?,
        };
        self.entries.push(StepEntry {
            phase: phase.into(),
            log: file,
            rate,
            loadgen_busy,
            server_cpu_s,
        });
        eprintln!(
            "  {} {name}: {} {:.0} 2xx/s, p99 {:.0} µs, p99.9 {:.0} µs",
            s.name,
            rate.map_or("closed model:".into(), |r| format!("rate {r:.0}:")),
            step.achieved,
            step.p99_us,
            step.p999_us
        );
        Ok(step)
    }
}

/// The server's CPU seconds so far, nginx's added.
fn server_cpu(stack: &Stack) -> f64 {
    let (server, nginx) = stack.usage();
    server.map_or(0.0, |u| u.cpu_seconds) + nginx.map_or(0.0, |u| u.cpu_seconds)
}

/// The closed-model probe's 2xx/s (its other figures are not used).
fn probe_step(log: &Path) -> anyhow::Result<Step> {
    let rps = load::read_log(log)?
        .rps
        .ok_or_else(|| anyhow::anyhow!("{}: no summary", log.display()))?;
    Ok(Step {
        rate: rps,
        achieved: rps,
        p50_us: 0.0,
        p90_us: 0.0,
        p99_us: 0.0,
        p999_us: 0.0,
        max_us: 0.0,
        ok: 0,
        errors: 0,
        lateness_p50_us: 0.0,
        lateness_p99_us: 0.0,
        loadgen_busy: None,
        server_cpu_us: None,
    })
}
