//! The sequential design: one scenario repetition at a time, alone on the
//! machine (or its hosts). Stages: place (hosts) -> start the stack ->
//! verify from every load host -> load (one loadgen per load host) ->
//! counter check -> stop; each stage owns what it started, so every exit
//! path cleans up, here and on remote hosts alike.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::bail;

use crate::check::{counter, verify};
use crate::config::scenario::Scenario;
use crate::measure::load::{self, Timing};
use crate::place::connect::Connected;
use crate::place::host::Host;
use crate::place::placement::Placement;
use crate::place::procs::Usage;
use crate::place::running::Running;
use crate::record::row::RowRecord;
use crate::stack::{Stack, StackSpec};
use crate::Interrupted;

/// What one repetition needs from the run.
pub struct Job<'a> {
    pub root: &'a Path,
    pub scenario: &'a Scenario,
    pub repetition: u32,
    pub server_bin: &'a Path,
    pub loadgen_bin: &'a Path,
    /// Where the loadgen log goes.
    pub table_dir: &'a Path,
    /// File stem for this repetition's files.
    pub stem: String,
    pub tmp: PathBuf,
    pub ns_index: usize,
    pub stop: &'a Arc<AtomicBool>,
    /// The remote hosts' sessions, for rows that name hosts.
    pub remote: Option<&'a Connected>,
}

/// Runs the job; errors are recorded in the returned record.
pub fn run(job: &Job) -> (RowRecord, Option<Interrupted>) {
    let mut rec = RowRecord::new(job.scenario, job.repetition);
    let outcome = run_stages(job, &mut rec);
    let _ = std::fs::remove_dir_all(&job.tmp);
    rec.finish(outcome)
}

impl Job<'_> {
    /// Starts the row's stack on `place`: a stage of every design that runs
    /// one row at a time.
    pub fn start_stack(&self, place: &Placement) -> anyhow::Result<Stack> {
        let spec = StackSpec {
            root: self.root,
            scenario: self.scenario,
            server_bin: self.server_bin,
            tmp: self.tmp.clone(),
        };
        Stack::start(&spec, place)
    }
}

fn run_stages(job: &Job, rec: &mut RowRecord) -> anyhow::Result<()> {
    let s = job.scenario;
    let place = Placement::new(s, job.ns_index, job.remote)?;
    rec.topology = place.topology(s);
    rec.netem = place.netem.clone();
    let mut stack = job.start_stack(&place)?;
    rec.startup_line = Some(stack.startup_line.clone());
    rec.terminal = stack.terminal.clone();
    rec.log_file = stack.log_file.as_ref().map(|p| p.display().to_string());
    // Every load host must reach the app; the first one's findings are kept.
    for client in place.clients.iter().rev() {
        rec.verified = stack.verify(client)?;
    }
    let before = rec.verified.as_ref().map_or(0, |v| v.count);

    let mut loadgens = start_loadgens(job, &place, stack.target)?;
    let status = measure(job, rec, &mut stack, &mut loadgens)?;
    rec.loadgen_exit = status.iter().filter_map(ExitStatus::code).max();
    let mut acknowledged = 0;
    let mut rps = None;
    for l in &loadgens {
        let totals = load::read_log(&l.log)?;
        acknowledged += totals.acknowledged;
        rps = match (rps, totals.rps) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
    rec.rps = rps;
    for (l, st) in loadgens.iter().zip(&status) {
        if !st.success() {
            bail!(
                "{}loadgen exited with {st}: {}",
                l.host.prefix(),
                l.proc_.stderr().tail()
            );
        }
    }
    if verify::post_body(s.request).is_some() && !stack.is_ceiling() {
        let after = stack.count(place.client())?;
        rec.counter = Some(counter::check(before, after, acknowledged, s.connections)?);
    }
    let (stopped, result) = stack.stop();
    rec.stopped(&stopped);
    result
}

/// One loadgen of a row: where it runs, the process, its log here.
struct Loadgen<'p> {
    host: &'p Host,
    proc_: Running,
    log: PathBuf,
}

/// How long before the loadgens' common start the runner picks it when a
/// row has several load hosts: time for every ssh start to land.
const START_DELAY: Duration = Duration::from_secs(2);

/// One loadgen per load host. A row with one writes `ROW[.repN].jsonl`;
/// several start at one instant (`--start-at`), each with its share of the
/// connections and rate, and write `ROW[.repN].shard-HOST.jsonl`, which the
/// analysis merges by wall-clock interval.
fn start_loadgens<'p>(
    job: &Job,
    place: &'p Placement,
    target: std::net::SocketAddr,
) -> anyhow::Result<Vec<Loadgen<'p>>> {
    let s = job.scenario;
    let n = place.clients.len();
    // Binaries first (an upload can take a while), then the common start.
    let bins = place
        .clients
        .iter()
        .map(|h| h.place_binary(job.loadgen_bin))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let start_at = (n > 1).then(|| SystemTime::now() + START_DELAY);
    let mut out = Vec::new();
    for (i, (host, bin)) in place.clients.iter().zip(&bins).enumerate() {
        let share = load::share_of(s, i, n);
        let timing = Timing {
            warmup: s.warmup,
            duration: s.duration,
            start_at,
        };
        let mut argv = load::argv(bin, &share, target, timing);
        let log = match host {
            Host::Remote(session) if n > 1 => {
                let name = &session.host.name;
                if let Some(p) = argv.iter().position(|a| a == "--shard") {
                    argv[p + 1] = name.clone();
                }
                job.table_dir
                    .join(format!("{}.shard-{name}.jsonl", job.stem))
            }
            _ => job.table_dir.join(format!("{}.jsonl", job.stem)),
        };
        let proc_ = load::spawn(host, argv, &log)?;
        out.push(Loadgen { host, proc_, log });
    }
    Ok(out)
}

/// Waits for every loadgen, sampling usage (every 200 ms here, every second
/// on remote hosts, where each read is an ssh round trip) and showing
/// progress; Ctrl-C stops the loadgens early (SIGINT: they still write
/// their summaries) and becomes [`Interrupted`]. Their exit statuses, in
/// the loadgens' order.
fn measure(
    job: &Job,
    rec: &mut RowRecord,
    stack: &mut Stack,
    loadgens: &mut [Loadgen],
) -> anyhow::Result<Vec<ExitStatus>> {
    let s = job.scenario;
    let total = s.warmup + s.duration;
    let remote = loadgens.iter().any(|l| l.host.is_remote());
    let every = Duration::from_millis(if remote { 1000 } else { 200 });
    let lead = if loadgens.len() > 1 {
        START_DELAY
    } else {
        Duration::ZERO
    };
    // A loadgen stops by itself after its run; one that does not is lost.
    let deadline = lead + total + Duration::from_secs(30);
    let bar = indicatif::ProgressBar::new(total.as_secs().max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "  {prefix} [{elapsed_precise}] {wide_bar} {pos}/{len}s",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} #{}", s.name, job.repetition));
    let started = Instant::now();
    let mut sampled: Option<Instant> = None;
    let mut interrupted = false;
    let fail = |loadgens: &mut [Loadgen], bar: &indicatif::ProgressBar, e: anyhow::Error| {
        for l in loadgens.iter_mut() {
            let _ = l.proc_.stop(Duration::from_secs(2));
        }
        bar.finish_and_clear();
        Err(e)
    };
    let status = loop {
        let done: Vec<ExitStatus> = loadgens
            .iter_mut()
            .filter_map(|l| l.proc_.try_wait())
            .collect();
        if done.len() == loadgens.len() {
            break done;
        }
        if sampled.is_none_or(|t| t.elapsed() >= every) {
            sampled = Some(Instant::now());
            sample(rec, stack, loadgens);
        }
        if job.stop.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            for l in loadgens.iter() {
                let _ = l.proc_.interrupt();
            }
        }
        if let Err(e) = stack.check_alive() {
            return fail(loadgens, &bar, e);
        }
        if started.elapsed() > deadline {
            let e = anyhow::anyhow!("the loadgens did not finish within {deadline:?}");
            return fail(loadgens, &bar, e);
        }
        bar.set_position(
            started
                .elapsed()
                .saturating_sub(lead)
                .as_secs()
                .min(total.as_secs()),
        );
        std::thread::sleep(Duration::from_millis(if interrupted { 20 } else { 200 }));
    };
    bar.finish_and_clear();
    // The server's (and nginx's) figures after the load.
    sample(rec, stack, &[]);
    if interrupted {
        rec.loadgen_exit = status.iter().filter_map(ExitStatus::code).max();
        return Err(Interrupted.into());
    }
    Ok(status)
}

/// Records the latest usage of the server, nginx and the loadgens (summed
/// over the load hosts); a process that has just ended keeps its last
/// figures.
fn sample(rec: &mut RowRecord, stack: &Stack, loadgens: &[Loadgen]) {
    let (server, nginx) = stack.usage();
    if let Some(u) = server {
        rec.server = u;
    }
    rec.nginx = nginx.or(rec.nginx);
    let all: Vec<Usage> = loadgens.iter().filter_map(|l| l.proc_.usage()).collect();
    if !loadgens.is_empty() && all.len() == loadgens.len() {
        rec.loadgen = Usage {
            cpu_seconds: all.iter().map(|u| u.cpu_seconds).sum(),
            peak_rss_bytes: all.iter().map(|u| u.peak_rss_bytes).sum(),
            processes: all.iter().map(|u| u.processes).sum(),
        };
    }
}
