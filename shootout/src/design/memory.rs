//! Memory rows (`kind = "memory"`): one repetition is place -> start the
//! stack -> verify -> idle sample -> `loadgen --hold` (held sample once
//! every connection is open, peak while held) -> sample after they closed
//! -> stop. The record goes to `ROW[.repN].memory.json` (see
//! [`analysis::memory`]), loadgen's records beside it.

use std::path::Path;
use std::time::{Duration, Instant};

use analysis::memory::{MemoryRecord, Reclaim, Sample};
use anyhow::{bail, Context};

use crate::config::scenario::{MemorySettings, Scenario};
use crate::design::{each, rounds, Job, Prepared, RunOutcome};
use crate::place::affinity::Check;
use crate::place::running::Running;
use crate::record::meta::Meta;
use crate::record::report;
use crate::stack::Stack;
use crate::Interrupted;

/// Memory rows, one repetition at a time, in rounds.
pub fn run_all(
    run: &Prepared,
    scenarios: &[Scenario],
    settings: &MemorySettings,
    meta: &mut Meta,
) -> anyhow::Result<RunOutcome> {
    meta.design = "memory".into();
    let mut failed = 0;
    let interrupted = each(run, rounds(scenarios), |unit| {
        let job = Job::new(run, unit);
        let (rec, stopped) = self::run(&job, settings);
        report::print_memory(&rec, job.scenario.repetitions);
        failed += usize::from(rec.error.is_some());
        crate::hold_at::stage("record");
        write(run.table_dir, &job.stem, &rec)?;
        meta.memory.push(rec);
        meta.write(run.dir)?;
        Ok(stopped)
    })?;
    Ok(RunOutcome {
        memory_failed: failed,
        memory_total: meta.memory.len(),
        ..RunOutcome::of(run.dir, interrupted)
    })
}

/// Runs one repetition; errors are recorded in the returned record.
pub fn run(job: &Job, m: &MemorySettings) -> (MemoryRecord, Option<Interrupted>) {
    let s = job.scenario;
    let mut rec = MemoryRecord {
        scenario: s.name.clone(),
        repetition: job.repetition,
        reclaim_feature: s.features.iter().any(|f| f == "alloc-reclaim"),
        connections: u64::from(s.connections),
        ..MemoryRecord::default()
    };
    let outcome = stages(job, m, &mut rec);
    let _ = std::fs::remove_dir_all(&job.tmp);
    let stopped = match outcome {
        Ok(()) => None,
        Err(e) if e.is::<Interrupted>() => {
            rec.error = Some("interrupted".into());
            Some(Interrupted)
        }
        Err(e) => {
            rec.error = Some(format!("{e:#}"));
            None
        }
    };
    (rec, stopped)
}

/// Writes the record through a temporary file and a rename.
pub fn write(table_dir: &Path, stem: &str, rec: &MemoryRecord) -> anyhow::Result<()> {
    let path = table_dir.join(format!("{stem}.memory.json"));
    analysis::files::write_atomic(&path, &serde_json::to_vec_pretty(rec)?)
}

fn stages(job: &Job, m: &MemorySettings, rec: &mut MemoryRecord) -> anyhow::Result<()> {
    let s = job.scenario;
    let place = job.place()?;
    let mut stack = job.start_stack(&place)?;
    let started = Instant::now();
    rec.startup_line = stack.startup_line.clone();
    let field = |key: &str| app_core::startup_field(&stack.startup_line, key).map(str::to_owned);
    rec.server = match &s.command {
        Some(_) => s.server_name(),
        None => s.server.binary().to_string(),
    };
    rec.command = s.command_facts();
    rec.allocator = field("allocator").unwrap_or_else(|| "unknown".into());
    rec.workers = field("workers").and_then(|w| w.parse().ok());
    stack.verify(place.client())?;
    // Where the stack's processes run, read once they answer: a process not
    // where the file says fails the repetition before any connection.
    rec.cpus = stack.read_cpus(s)?;
    rec.cpus.iter().try_for_each(Check::check)?;
    let sample = |stack: &Stack| -> anyhow::Result<Sample> {
        let (rss_kib, pss_kib) = stack.server_resident_kib()?;
        Ok(Sample {
            rss_kib,
            pss_kib,
            at_ms: started.elapsed().as_millis() as u64,
        })
    };
    pause(job, m.settle)?;
    rec.idle = sample(&stack)?;

    let log = job.run.table_dir.join(format!("{}.hold.jsonl", job.stem));
    let mut argv = vec![place.client().place_binary(job.run.loadgen)?];
    for (flag, value) in [
        ("--hold", humantime::format_duration(m.hold).to_string()),
        ("-c", s.connections.to_string()),
        (
            "--timeout",
            humantime::format_duration(m.setup_timeout).to_string(),
        ),
        ("--format", "jsonl".into()),
        ("--shard", s.name.clone()),
    ] {
        argv.extend([flag.into(), value]);
    }
    argv.push(crate::measure::load::url(s, stack.target));
    let mut loadgen =
        crate::measure::load::spawn(place.client(), s.loadgen_cpus.as_deref(), argv, &log)?;
    crate::hold_at::stage("measure");

    // Set-up: wait for the `held` record.
    let mut held_at = None;
    let mut peak = 0;
    let status = loop {
        if let Some(status) = loadgen.try_wait() {
            break status;
        }
        watch(job, &mut stack, &mut loadgen)?;
        if held_at.is_none() && read_hold(&analysis::files::partial(&log))?.0.is_some() {
            held_at = Some(Instant::now());
            // Where loadgen runs, read while it holds its connections.
            let read = loadgen.read_cpus("loadgen", s.loadgen_cpus.as_deref())?;
            read.check()?;
            rec.cpus.push(read);
        }
        if let Some(t) = held_at {
            if let Ok((rss, _)) = stack.server_resident_kib() {
                peak = peak.max(rss);
            }
            if rec.held.rss_kib == 0 && t.elapsed() >= m.settle {
                rec.held = sample(&stack)?;
                peak = peak.max(rec.held.rss_kib);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    rec.held_peak_rss_kib = peak;
    if status.code().is_some() {
        crate::measure::load::keep(&log)?;
    }
    let (_, summary) = read_hold(&log)?;
    rec.hold = summary;
    if !status.success() {
        bail!("loadgen exited with {status}: {}", loadgen.stderr().tail());
    }
    if rec.held.rss_kib == 0 {
        bail!("the hold ended before the held sample (hold must outlast settle)");
    }
    pause(job, m.after)?;
    stack.check_alive()?;
    rec.after = sample(&stack)?;
    rec.reclaims = stack
        .stderr_lines()
        .iter()
        .filter_map(|l| Reclaim::parse(l))
        .collect();
    let (_, result) = stack.stop();
    result
}

/// Sleeps `d` unless the run is stopped.
fn pause(job: &Job, d: Duration) -> anyhow::Result<()> {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if job.run.stopping() {
            return Err(Interrupted.into());
        }
        std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
    }
    Ok(())
}

/// Ctrl-C stops loadgen and becomes [`Interrupted`]; a server that died is
/// an error.
fn watch(job: &Job, stack: &mut Stack, loadgen: &mut Running) -> anyhow::Result<()> {
    if job.run.stopping() {
        let _ = loadgen.stop(Duration::from_secs(2));
        return Err(Interrupted.into());
    }
    if let Err(e) = stack.check_alive() {
        let _ = loadgen.stop(Duration::from_secs(2));
        return Err(e);
    }
    Ok(())
}

/// The `held` and `hold_summary` records of a hold log, as far as written.
fn read_hold(
    log: &Path,
) -> anyhow::Result<(Option<loadgen::HoldRecord>, Option<loadgen::HoldRecord>)> {
    let text = analysis::input::raw::read_to_string(log)
        .with_context(|| format!("reading {}", log.display()))?;
    let (mut held, mut summary) = (None, None);
    for line in text.lines() {
        match serde_json::from_str::<loadgen::Record>(line) {
            Ok(loadgen::Record::Held(h)) => held = Some(h),
            Ok(loadgen::Record::HoldSummary(h)) => summary = Some(h),
            _ => {}
        }
    }
    Ok((held, summary))
}
