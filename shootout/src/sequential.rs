//! The sequential design: one scenario repetition at a time, alone on the
//! machine. Stages: place (hosts) -> start the stack -> verify -> load ->
//! counter check -> stop; each stage owns what it started, so every exit
//! path cleans up.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::host::Placement;
use crate::load::{self, Timing};
use crate::procs::usage;
use crate::record::RowRecord;
use crate::scenario::Scenario;
use crate::stack::{Stack, StackSpec};
use crate::{counter, verify, Interrupted};

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
    let place = Placement::new(s, job.ns_index)?;
    rec.netem = place.netem.clone();
    let mut stack = job.start_stack(&place)?;
    rec.startup_line = Some(stack.startup_line.clone());
    rec.terminal = stack.terminal.clone();
    rec.log_file = stack.log_file.as_ref().map(|p| p.display().to_string());
    rec.verified = stack.verify(&place.client)?;
    let before = rec.verified.as_ref().map_or(0, |v| v.count);

    let log_path = job.table_dir.join(format!("{}.jsonl", job.stem));
    let timing = Timing {
        warmup: s.warmup,
        duration: s.duration,
        start_at: None,
    };
    let argv = load::argv(job.loadgen_bin, s, stack.target, timing);
    let mut loadgen = load::spawn(
        &place.client,
        argv,
        &log_path,
        &job.tmp.join("loadgen.stderr"),
    )?;
    let status = measure(job, rec, &mut stack, &mut loadgen)?;
    rec.loadgen_exit = status.code();
    let totals = load::read_log(&log_path)?;
    rec.rps = totals.rps;
    if !status.success() {
        let msg = std::fs::read_to_string(job.tmp.join("loadgen.stderr")).unwrap_or_default();
        bail!("loadgen exited with {status}: {}", msg.trim());
    }
    if verify::post_body(s.request).is_some() && !stack.is_ceiling() {
        let after = stack.count(&place.client)?;
        rec.counter = Some(counter::check(
            before,
            after,
            totals.acknowledged,
            s.connections,
        )?);
    }
    let (stopped, result) = stack.stop();
    rec.stopped(&stopped);
    result
}

/// Waits for loadgen, sampling usage and showing progress; Ctrl-C stops
/// loadgen early and becomes [`Interrupted`].
fn measure(
    job: &Job,
    rec: &mut RowRecord,
    stack: &mut Stack,
    loadgen: &mut crate::procs::Proc,
) -> anyhow::Result<std::process::ExitStatus> {
    let s = job.scenario;
    let total = s.warmup + s.duration;
    let bar = indicatif::ProgressBar::new(total.as_secs().max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "  {prefix} [{elapsed_precise}] {wide_bar} {pos}/{len}s",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} #{}", s.name, job.repetition));
    let started = Instant::now();
    let mut interrupted = false;
    let status = loop {
        if let Some(status) = loadgen.try_wait() {
            break status;
        }
        if let Some(u) = usage(stack.server_pid()) {
            rec.server = u;
        }
        if let Some(pid) = stack.nginx_pid() {
            rec.nginx = usage(pid).or(rec.nginx);
        }
        if let Some(u) = usage(loadgen.pid()) {
            rec.loadgen = u;
        }
        if job.stop.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            loadgen.signal(libc::SIGINT);
        }
        if let Err(e) = stack.check_alive() {
            loadgen.stop(Duration::from_secs(2));
            bar.finish_and_clear();
            return Err(e);
        }
        bar.set_position(started.elapsed().as_secs().min(total.as_secs()));
        std::thread::sleep(Duration::from_millis(200));
    };
    bar.finish_and_clear();
    if interrupted {
        rec.loadgen_exit = status.code();
        return Err(Interrupted.into());
    }
    Ok(status)
}
