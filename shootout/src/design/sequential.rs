//! The sequential design: one scenario repetition at a time, alone on the
//! machine (or its hosts). Stages: place (hosts) -> start the stack ->
//! verify from every load host -> load (one loadgen per load host) ->
//! counter check -> stop; each stage owns what it started, so every exit
//! path cleans up, here and on remote hosts alike. What the stages find is
//! kept in [`RowFacts`] and made into the row's record once.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};

use crate::check::{counter, verify};
use crate::config::scenario::Scenario;
use crate::design::{each, rounds, Job, Prepared, RunOutcome};
use crate::measure::load::{self, Timing};
use crate::measure::wait::{self, Limits, Waited};
use crate::place::affinity::{Check, ReadCpus};
use crate::place::host::Host;
use crate::place::placement::Placement;
use crate::place::procs::Usage;
use crate::place::running::Running;
use crate::record::meta::Meta;
use crate::record::report;
use crate::record::row::{RowFacts, RowRecord};
use crate::stack::Stack;
use crate::Interrupted;

/// Every repetition of every row, in rounds.
pub fn run_all(
    run: &Prepared,
    scenarios: &[Scenario],
    meta: &mut Meta,
) -> anyhow::Result<RunOutcome> {
    let mut rows = Vec::new();
    let interrupted = each(run, rounds(scenarios), |unit| {
        let job = Job::new(run, unit);
        let (rec, stopped) = self::run(&job);
        report::print_row(&rec, job.scenario.repetitions);
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

/// Runs one repetition; errors are recorded in the returned record.
pub fn run(job: &Job) -> (RowRecord, Option<Interrupted>) {
    let mut facts = RowFacts::default();
    let outcome = run_stages(job, &mut facts);
    let _ = std::fs::remove_dir_all(&job.tmp);
    RowRecord::build(job.scenario, job.repetition, facts, outcome)
}

/// How long a failed loadgen waits for news of its server before its own
/// error is the row's: a server that died (a remote one is heard of over
/// ssh) is the cause to report.
const LOADGEN_FAILED_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

fn run_stages(job: &Job, facts: &mut RowFacts) -> anyhow::Result<()> {
    let s = job.scenario;
    let place = job.place()?;
    facts.placed = Some((place.topology.clone(), place.netem.clone()));
    let mut stack = job.start_stack(&place)?;
    facts.started = Some((
        stack.startup_line.clone(),
        stack.terminal.clone(),
        stack.log_file.as_ref().map(|p| p.display().to_string()),
    ));
    // Every load host must reach the app; the first one's findings are kept.
    let mut verified = None;
    for client in place.clients.iter().rev() {
        verified = stack.verify(client)?;
    }
    let before = verified.as_ref().map_or(0, |v| v.count);
    facts.verified = verified;
    // Where the stack's processes run, read once they answer: a process
    // not where the file says fails the row before any load.
    facts.cpus = stack.read_cpus(s)?;
    if let Err(e) = facts.cpus.iter().try_for_each(ReadCpus::check) {
        let _ = stack.stop();
        return Err(e);
    }
    if job.run.stopping() {
        let _ = stack.stop();
        return Err(Interrupted.into());
    }

    let mut loadgens = start_loadgens(job, &place, &stack)?;
    crate::hold_at::stage("measure");
    let status = measure(job, &place, facts, &mut stack, &mut loadgens)?;
    let mut acknowledged = 0;
    let mut rps = None;
    for (l, st) in loadgens.iter().zip(&status) {
        // A loadgen that exited wrote its summary (also when stopped by
        // SIGINT); one killed left a partial log, removed and reported.
        if st.code().is_some() {
            if let Err(e) = load::keep(&l.log) {
                if !st.success() {
                    stack.died_within(LOADGEN_FAILED_GRACE)?;
                    let why = l.proc_.stderr().tail();
                    bail!("{}loadgen exited with {st}: {why}", l.host.prefix());
                }
                return Err(e);
            }
        }
    }
    for l in &loadgens {
        let totals = load::read_log(&l.log)?;
        acknowledged += totals.acknowledged;
        rps = match (rps, totals.rps) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
    facts.loaded = Some((worst_exit(&status), rps));
    for (l, st) in loadgens.iter().zip(&status) {
        if !st.success() {
            stack.died_within(LOADGEN_FAILED_GRACE)?;
            bail!(
                "{}loadgen exited with {st}: {}",
                l.host.prefix(),
                l.proc_.stderr().tail()
            );
        }
    }
    if verify::post_body(s.request).is_some() && stack.has_counter() {
        let after = stack.count(place.client())?;
        facts.counter = Some(counter::check(before, after, acknowledged, s.connections)?);
    }
    let (stopped, result) = stack.stop();
    facts.stopped = Some(stopped);
    result
}

fn worst_exit(status: &[ExitStatus]) -> Option<i32> {
    status.iter().filter_map(ExitStatus::code).max()
}

/// One loadgen of a row: where it runs, the process, its log here.
struct Loadgen<'p> {
    host: &'p Host,
    proc_: Running,
    log: PathBuf,
}

/// One loadgen per load host. A row with one writes `ROW[.repN].jsonl`;
/// several start at one instant (`--start-at`, far enough ahead for every
/// host to start one), each with its share of the connections and rate,
/// and write `ROW[.repN].shard-HOST.jsonl`, which the analysis merges by
/// wall-clock interval.
fn start_loadgens<'p>(
    job: &Job,
    place: &'p Placement,
    stack: &Stack,
) -> anyhow::Result<Vec<Loadgen<'p>>> {
    let target = stack.target;
    let s = job.scenario;
    let n = place.clients.len();
    // Binaries first (an upload can take a while), then the common start.
    let bins = place
        .clients
        .iter()
        .map(|h| h.place_binary(job.run.loadgen))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let start_at = (n > 1).then(|| SystemTime::now() + place.start_lead());
    let mut out = Vec::new();
    for (i, (host, bin)) in place.clients.iter().zip(&bins).enumerate() {
        let share = load::share_of(s, i, n);
        let timing = Timing {
            warmup: s.warmup,
            duration: s.duration,
            start_at,
            turn: None,
        };
        let mut argv = load::argv(bin, &share, target, stack.ca_file(host), timing);
        let log = if n > 1 {
            let name = host.name();
            if let Some(p) = argv.iter().position(|a| a == "--shard") {
                argv[p + 1] = name.to_string();
            }
            job.run
                .table_dir
                .join(format!("{}.shard-{name}.jsonl", job.stem))
        } else {
            job.run.table_dir.join(format!("{}.jsonl", job.stem))
        };
        let proc_ = load::spawn(host, share.loadgen_cpus.as_deref(), argv, &log)?;
        out.push(Loadgen { host, proc_, log });
    }
    Ok(out)
}

/// Waits for every loadgen, sampling usage (at the placement's sampling
/// period) and showing progress; Ctrl-C stops the loadgens early (SIGINT:
/// they still write their summaries) and becomes [`Interrupted`]. Their
/// exit statuses, in the loadgens' order.
fn measure(
    job: &Job,
    place: &Placement,
    facts: &mut RowFacts,
    stack: &mut Stack,
    loadgens: &mut [Loadgen],
) -> anyhow::Result<Vec<ExitStatus>> {
    let s = job.scenario;
    let total = s.warmup + s.duration;
    let lead = if loadgens.len() > 1 {
        place.start_lead()
    } else {
        Duration::ZERO
    };
    // A loadgen stops by itself after its run; one that does not is lost.
    let limits = Limits {
        deadline: lead + total + Duration::from_secs(30),
        every: place.sampling_period(),
        poll: Duration::from_millis(200),
        stopping: &|| job.run.stopping(),
    };
    let bar = progress_bar(s, job.repetition, total);
    // Where each loadgen runs, read at the first sample (it has started;
    // one that already ended is not read).
    let mut placed: Option<anyhow::Result<Vec<ReadCpus>>> = None;
    let waited = wait::wait(
        loadgens,
        |l| &mut l.proc_,
        stack,
        limits,
        |stack, loadgens, elapsed| {
            if placed.is_none() {
                placed = Some(read_loadgen_cpus(s, loadgens));
            }
            sample(facts, stack, loadgens);
            let secs = elapsed.saturating_sub(lead).as_secs();
            bar.set_position(secs.min(total.as_secs()));
        },
    );
    let (status, interrupted) = match waited {
        Ok(Waited::Done(st)) => (st, false),
        Ok(Waited::Interrupted(st)) => (st, true),
        Err(e) => {
            bar.finish_and_clear();
            return Err(e);
        }
    };
    bar.finish_and_clear();
    match placed {
        Some(Ok(read)) => facts.cpus.extend(read),
        Some(Err(e)) => return Err(e),
        None => {}
    }
    // The server's (and nginx's) figures after the load.
    sample(facts, stack, &[]);
    if interrupted {
        facts.loaded = Some((worst_exit(&status), None));
        // Stopped by SIGINT, loadgen still wrote its summary: its log is
        // whole and kept (an incomplete one is removed).
        for (l, st) in loadgens.iter().zip(&status) {
            if st.code().is_some() {
                let _ = load::keep(&l.log);
            }
        }
        return Err(Interrupted.into());
    }
    Ok(status)
}

/// The loadgens' CPUs as read (those still running), each checked against
/// the row's `loadgen_cpus`.
fn read_loadgen_cpus(s: &Scenario, loadgens: &[Loadgen]) -> anyhow::Result<Vec<ReadCpus>> {
    let mut out = Vec::new();
    for l in loadgens {
        let read = l.proc_.read_cpus("loadgen", s.loadgen_cpus.as_deref())?;
        if read.threads > 0 {
            read.check()
                .with_context(|| format!("{}loadgen", l.host.prefix()))?;
            out.push(read);
        }
    }
    Ok(out)
}

fn progress_bar(s: &Scenario, repetition: u32, total: Duration) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total.as_secs().max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "  {prefix} [{elapsed_precise}] {wide_bar} {pos}/{len}s",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} #{repetition}", s.name));
    bar
}

/// Records the latest usage of the server, nginx and the loadgens (summed
/// over the load hosts); a process that has just ended keeps its last
/// figures.
fn sample(facts: &mut RowFacts, stack: &Stack, loadgens: &[Loadgen]) {
    let (server, nginx) = stack.usage();
    if let Some(u) = server {
        facts.server = u;
    }
    facts.nginx = nginx.or(facts.nginx);
    let all: Vec<Usage> = loadgens.iter().filter_map(|l| l.proc_.usage()).collect();
    if !loadgens.is_empty() && all.len() == loadgens.len() {
        facts.loadgen = facts.loadgen.updated(Usage {
            cpu_seconds: all.iter().map(|u| u.cpu_seconds).sum(),
            peak_rss_bytes: all.iter().map(|u| u.peak_rss_bytes).sum(),
            processes: all.iter().map(|u| u.processes).sum(),
        });
    }
}
