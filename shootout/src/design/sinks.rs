//! The sinks design: how fast each row's log sink takes the row's own log
//! lines, with no server in the way. For each row, one after another:
//!
//! 1. **Sample.** The row's stack starts with its stdout in a file, is
//!    checked, and loaded for `sample` (closed model, the row's own
//!    connections and request); for a terminal sink the server is told to
//!    colour its lines as it does on a terminal (`RUST_LOG_STYLE=always`:
//!    env_logger's style for a tty). The lines it logged during the load, and
//!    loadgen's count of answers, give its lines per request. The last
//!    [`KEEP`] lines go to `ROW.lines.txt`.
//! 2. **Drain.** `runs` times, a fresh sink of the row's kind (`log`:
//!    file, pipe, our drained pty, xterm or alacritty on a private Xvfb,
//!    or /dev/null) takes the writer (`shootout sink-writer`, pinned where
//!    the server would be; on a row's remote server host, started there
//!    as the server would be, in the same sink: `crate::stack::in_sink`)
//!    writing those lines for `length` (after
//!    `settle`, uncounted), one `write(2)` each, as fast as the sink takes
//!    them. An ssh-terminal row's writer runs on its `ssh_host` through
//!    `ssh -tt` (`crate::place::ssh_terminal`), its link shaped while the
//!    row runs when `link_rate` is set, and the sink here takes ssh's
//!    output (a drained pty, xterm or alacritty).
//!
//! `ROW.sinks.json` records the sample and each run's lines, bytes and
//! seconds; the analysis gives lines/s with an interval over runs.

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;

use super::sweep::{keep_reading, on_fresh_stack, verify};
use crate::commands::sink_writer::WriterReport;
use crate::config::scenario::{Drawn, LogSink, Scenario};
use crate::config::sinks::SinksSettings;
use crate::design::{each, Job, Prepared, RunOutcome};
use crate::measure::load::{self, Timing};
use crate::measure::wait::{self, Limits, Waited};
use crate::place::affinity::{self, pinned, Check};
use crate::place::placement::Placement;
use crate::place::procs::Proc;
use crate::place::running::Running;
use crate::place::ssh_terminal::{Shaped, SshEnd};
use crate::record::meta::Meta;
use crate::record::row::{RowFacts, RowRecord};
use crate::stack::emulator::{self, Emulator};
use crate::stack::in_sink;
use crate::stack::sink::Sink;
use crate::stack::Stack;
use crate::Interrupted;

/// Sampled lines kept in `ROW.lines.txt` (the writer cycles through them).
pub const KEEP: usize = 200;

/// Every row's sample and drain runs, one row after another.
pub fn run_all(
    run: &Prepared,
    scenarios: &[Scenario],
    settings: &SinksSettings,
    meta: &mut Meta,
) -> anyhow::Result<RunOutcome> {
    meta.design = "sinks".into();
    let mut rows = Vec::new();
    let units = scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s, 1, s.name.clone()));
    let interrupted = each(run, units, |unit| {
        let job = Job::new(run, unit);
        let mut facts = RowFacts::default();
        let outcome = sink_row(&job, settings, &mut facts);
        let _ = std::fs::remove_dir_all(&job.tmp);
        let (rec, stopped) = RowRecord::build(job.scenario, 1, facts, outcome);
        match &rec.error {
            None => println!("{}: sink measured", rec.scenario),
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

/// `ROW.sinks.json`.
#[derive(Debug, Serialize)]
struct SinkIndex<'a> {
    row: &'a str,
    label: &'a str,
    server: String,
    sink: LogSink,
    log_level: &'a str,
    /// The sample: lines the server logged during its load, and the
    /// answers loadgen counted.
    sample_lines: u64,
    sample_requests: u64,
    /// `ROW.lines.txt`, the lines the writer cycled through.
    lines_file: String,
    /// The terminal emulator and its settings (emulator rows), and the ssh
    /// path (ssh-terminal rows).
    terminal: Option<String>,
    /// Rows on a remote server host: that host, where the sink and the
    /// writer were.
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<String>,
    /// ssh-terminal rows: what draws the session here, and the shaped
    /// link's rate (bits/s) when `link_rate` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    drawn: Option<Drawn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    link_rate_bps: Option<u64>,
    /// `false` where the row turned xterm's jump scroll off.
    #[serde(skip_serializing_if = "Option::is_none")]
    jump_scroll: Option<bool>,
    /// The writer's least time between lines, µs (`writer_gap`); absent
    /// where it wrote back to back.
    #[serde(skip_serializing_if = "Option::is_none")]
    writer_gap_us: Option<f64>,
    length_s: f64,
    /// Written first in each run and not counted.
    settle_s: f64,
    runs: &'a [WriterReport],
}

fn sink_row(job: &Job, settings: &SinksSettings, facts: &mut RowFacts) -> anyhow::Result<()> {
    let s = job.scenario;
    let run = job.run;
    let (lines, requests) = sample_enough(job, settings, facts)?;
    let kept = &lines[lines.len().saturating_sub(KEEP)..];
    let lines_file = format!("{}.lines.txt", s.name);
    let lines_path = run.table_dir.join(&lines_file);
    analysis::files::write_atomic(&lines_path, (kept.join("\n") + "\n").as_bytes())?;
    eprintln!(
        "  {} sample: {} lines for {requests} requests",
        s.name,
        lines.len()
    );
    let far = match &s.ssh_terminal {
        Some(t) => Some(Far::open(job, t, &lines_path)?),
        None => None,
    };
    // A row on a remote server host: its sink is there.
    let on_host = match &s.hosts {
        Some(_) => Some(job.place()?),
        None => None,
    };
    let mut runs = Vec::new();
    let mut terminal = None;
    for k in 1..=settings.runs {
        if run.stopping() {
            return Err(Interrupted.into());
        }
        let (r, term) = match &on_host {
            Some(place) => drain_on_host(job, place, &lines_path, settings, k)?,
            None => drain_once(job, &lines_path, settings, k, far.as_ref())?,
        };
        terminal = terminal.or(term);
        eprintln!(
            "  {} drain {k}: {:.0} lines/s",
            s.name,
            r.lines as f64 / r.seconds
        );
        runs.push(r);
    }
    let index = SinkIndex {
        row: &s.name,
        label: &s.label,
        server: format!("{:?}", s.server).to_lowercase(),
        sink: s.log,
        log_level: &s.log_level,
        sample_lines: lines.len() as u64,
        sample_requests: requests,
        lines_file,
        terminal: match &far {
            Some(f) => Some(f.describe(terminal.as_deref())),
            None => terminal,
        },
        host: on_host.as_ref().map(|p| p.server.name().to_string()),
        drawn: s.ssh_terminal.as_ref().map(|t| t.terminal),
        link_rate_bps: s.ssh_terminal.as_ref().and_then(|t| t.link_rate_bps),
        jump_scroll: crate::record::comparison::jump_scroll_off(s),
        writer_gap_us: s.writer_gap.map(|g| g.as_secs_f64() * 1e6),
        length_s: settings.length.as_secs_f64(),
        settle_s: settings.settle.as_secs_f64(),
        runs: &runs,
    };
    let path = run.table_dir.join(format!("{}.sinks.json", s.name));
    analysis::files::write_atomic(&path, &serde_json::to_vec_pretty(&index)?)
}

/// The row's stack with its stdout in a file, loaded for `sample`: the
/// lines logged during the load, and loadgen's count of answers.
/// Answers a sample needs per connection. The requests in flight when its
/// load stops (up to one per connection) are logged but not acknowledged,
/// so lines per request reads high by up to connections / answers: at
/// most 1 % with this many. A machine too busy to load the server can
/// leave a sample with a handful of answers (seen once in the test
/// command: 2 lines per request where every run reads 1.00).
const ANSWERS_PER_CONNECTION: u64 = 100;
/// Samples taken, each twice as long as the one before, before a row
/// whose samples stay short is refused.
const SAMPLE_TRIES: u32 = 4;

/// Whether `answers` on `connections` make a sample that counts lines
/// per request (see [`ANSWERS_PER_CONNECTION`]).
fn enough_answers(answers: u64, connections: u32) -> bool {
    answers >= ANSWERS_PER_CONNECTION * u64::from(connections)
}

/// The row's sample, taken again twice as long while it has too few
/// answers, [`SAMPLE_TRIES`] times at most.
fn sample_enough(
    job: &Job,
    settings: &SinksSettings,
    facts: &mut RowFacts,
) -> anyhow::Result<(Vec<String>, u64)> {
    let s = job.scenario;
    let mut length = settings.sample;
    for k in 1..=SAMPLE_TRIES {
        let (lines, answers) = sample(job, length, facts)?;
        if enough_answers(answers, s.connections) {
            return Ok((lines, answers));
        }
        if k == SAMPLE_TRIES {
            break;
        }
        eprintln!(
            "  {} sample {k}: {answers} answers in {}, fewer than {ANSWERS_PER_CONNECTION} per connection: taken again, twice as long",
            s.name,
            humantime::format_duration(length)
        );
        length *= 2;
    }
    bail!(
        "{}: {SAMPLE_TRIES} samples, the last {} long, each got fewer than {ANSWERS_PER_CONNECTION} answers per connection ({} connections): too few to count lines per request (is the machine busy?)",
        s.name,
        humantime::format_duration(length),
        s.connections
    )
}

/// Whether loadgen's last words say it got no answer and no error at all
/// ([`loadgen::SummaryRecord::verdict`]'s exit 1 with nothing counted): a server that
/// answered nothing yet, not one that refused or failed.
fn no_answer(stderr_tail: &str) -> bool {
    stderr_tail.contains("loadgen: no request succeeded (0 requests, 0 errors, 0 non-2xx)")
}

fn sample(job: &Job, length: Duration, facts: &mut RowFacts) -> anyhow::Result<(Vec<String>, u64)> {
    let mut row = job.scenario.clone();
    // A server whose stdout is a terminal colours its lines (env_logger
    // sees a tty): 146 bytes where a file gets 110. The writer must write
    // those.
    row.log_style_always = matches!(
        row.log,
        LogSink::Terminal | LogSink::Xterm | LogSink::Alacritty | LogSink::SshTerminal
    );
    row.log = LogSink::File;
    row.rate = None;
    let capture = Job::new(job.run, (job.ns_index, &row, 1, job.stem.clone()));
    let mut lines = Vec::new();
    let mut answers = 0;
    on_fresh_stack(&capture, facts, |place, stack, facts| {
        verify(capture.scenario, place, stack, facts)?;
        // The check's own lines are not the load's.
        std::thread::sleep(Duration::from_millis(200));
        let before = logged(stack)?.len();
        let run = job.run;
        let host = place.client();
        let bin = host.place_binary(run.loadgen)?;
        let timing = Timing {
            warmup: Duration::ZERO,
            duration: length,
            start_at: None,
            turn: None,
        };
        let argv = load::argv(&bin, &row, stack.target, stack.ca_file(host), timing);
        let log = run.table_dir.join(format!("{}.sample.jsonl", row.name));
        let mut procs = [load::spawn(host, row.loadgen_cpus.as_deref(), argv, &log)?];
        let limits = Limits {
            deadline: length + Duration::from_secs(30),
            // Usage sampled often: the sample lasts a second or so.
            every: Duration::from_millis(100),
            poll: Duration::from_millis(50),
            stopping: &|| run.stopping(),
        };
        // meta.json's usage for the row: the sample's loadgen (its last
        // reading, up to 100 ms before it ended) and server (below).
        let mut placed = None;
        let tick = |_: &Stack, procs: &[Running], _| {
            if placed.is_none() {
                placed = Some(procs[0].read_cpus("loadgen", row.loadgen_cpus.as_deref()));
            }
            if let Some(u) = procs[0].usage() {
                facts.loadgen = facts.loadgen.updated(u);
            }
        };
        match wait::wait(&mut procs, |p| p, stack, limits, tick)? {
            Waited::Done(st) if st[0].success() => {}
            // No answer at all in the sample (a clean clone's busy lanes
            // had an xterm row's server answer nothing in its 1 s): too
            // few answers, which `sample_enough` takes again, twice as
            // long, rather than a failed row.
            Waited::Done(_) if no_answer(&procs[0].stderr().tail()) => {}
            Waited::Done(st) => bail!(
                "loadgen exited with {}: {}",
                st[0],
                procs[0].stderr().tail()
            ),
            Waited::Interrupted(_) => {
                let _ = std::fs::remove_file(analysis::files::partial(&log));
                return Err(Interrupted.into());
            }
        }
        keep_reading(&mut facts.cpus, placed)?;
        if let Some(u) = stack.usage().0 {
            facts.server = u;
        }
        load::keep(&log)?;
        answers = load::read_log(&log)?.acknowledged;
        // Every answer is logged by now; the server's shutdown lines
        // that follow are not the load's either. (Read before the stop: a
        // remote host's file goes with the stack.)
        std::thread::sleep(Duration::from_millis(200));
        lines = logged(stack)?;
        lines.drain(..before.min(lines.len()));
        Ok(())
    })?;
    if lines.is_empty() && answers > 0 {
        bail!(
            "the server logged {} lines for {answers} answers: nothing to write into the sink (is its log level {:?} one that logs requests?)",
            lines.len(),
            job.scenario.log_level
        );
    }
    Ok((lines, answers))
}

/// The non-empty lines a stack's server has written to its file sink, on
/// its host.
fn logged(stack: &Stack) -> anyhow::Result<Vec<String>> {
    let text = stack
        .stdout_text()?
        .context("the sample's stdout is a file")?;
    Ok(text
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// The far end of an ssh-terminal row, open for all its drain runs: the
/// private directory on the host with the lines and the writer in it, and
/// the shaped link (unshaped when this drops).
struct Far {
    end: SshEnd,
    exe: String,
    lines: String,
    shaped: Option<Shaped>,
}

impl Far {
    fn open(
        job: &Job,
        t: &crate::config::scenario::SshTerminal,
        lines: &Path,
    ) -> anyhow::Result<Far> {
        let end = job.run.hosts.ssh_end(&t.host)?;
        let exe = std::env::current_exe().context("finding shootout's own binary")?;
        let exe = end.place_binary(&exe)?;
        let text = std::fs::read(lines).with_context(|| format!("reading {}", lines.display()))?;
        let lines = end.put("lines.txt", &text)?;
        let shaped = match t.link_rate_bps {
            None => None,
            Some(bps) => Some(end.shape(bps)?),
        };
        Ok(Far {
            end,
            exe,
            lines,
            shaped,
        })
    }

    /// The path, then what drew it (`drawn`: the emulator's description).
    fn describe(&self, drawn: Option<&str>) -> String {
        let link = self
            .shaped
            .as_ref()
            .map_or("link not shaped".to_string(), |s| s.describe.clone());
        format!(
            "{}; {link}; drawn by {}",
            self.end.describe(),
            drawn.unwrap_or("a pseudo-terminal the runner drains (nothing drawn)")
        )
    }
}

/// One drain run: a fresh sink of the row's kind, the writer in it for
/// `length` (after `settle`, uncounted); what the writer wrote, and the
/// emulator's description. With `far`, the writer runs on the far host
/// through `ssh -tt`, and the sink takes ssh's output here.
fn drain_once(
    job: &Job,
    lines: &Path,
    settings: &SinksSettings,
    k: u32,
    far: Option<&Far>,
) -> anyhow::Result<(WriterReport, Option<String>)> {
    let s = job.scenario;
    let dir = job.tmp.join(format!("drain-{k:02}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let report = dir.join("report.json");
    let far_report = format!("report-{k:02}.json");
    let writer =
        |exe: String, lines: String, report: String| writer_argv(job, settings, exe, lines, report);
    // A writer here runs where the row's server would (inside an emulator
    // too); one over ssh is placed there.
    let writer_here = far.is_none().then_some(s.server_cpus.as_deref()).flatten();
    let (argv, kind) = match far {
        Some(f) => {
            // Pinned there by `taskset` inside the session's command.
            let own = writer(f.exe.clone(), f.lines.clone(), far_report.clone());
            let remote = [pinned(s.server_cpus.as_deref()), own].concat();
            let t = s.ssh_terminal.as_ref().context("an ssh-terminal row")?;
            let kind = match t.terminal {
                Drawn::Drained => LogSink::Terminal,
                Drawn::Xterm => LogSink::Xterm,
                Drawn::Alacritty => LogSink::Alacritty,
            };
            let sshd = format!("sshd-{k:02}.pid");
            (
                f.end.terminal_argv(&remote, &sshd, s.sshd_cpus.as_deref()),
                kind,
            )
        }
        None => {
            let exe = std::env::current_exe().context("finding shootout's own binary")?;
            let local = writer(
                exe.display().to_string(),
                lines.display().to_string(),
                report.display().to_string(),
            );
            (local, s.log)
        }
    };
    // An ssh terminal drains its buffers (1 MB or more) after: at 1 Mbit/s, 10 s.
    let deadline = settings.settle + settings.length + Duration::from_secs(60);
    let stopping = || job.run.stopping();
    let stderr = dir.join("server.stderr");
    let mut terminal = None;
    let status = match kind {
        LogSink::Xterm | LogSink::Alacritty => {
            let kind = emulator::Kind::of(s).context("an emulator row")?;
            let tag = job.tmp.display().to_string();
            // The emulator on the row's terminal CPUs, read back before anything counts.
            let cpus = s.terminal_cpus();
            let inside = [pinned(writer_here), argv].concat();
            let mut term = Emulator::start(kind, &dir, &inside, &[], &tag, cpus.as_deref())?;
            term.read_cpus(cpus.as_deref()).check()?;
            terminal = Some(term.describe());
            let status = until(deadline, &stopping, || term.try_wait());
            term.stop(Duration::from_secs(2));
            status
        }
        kind => {
            // The reader on the row's sink CPUs (the writer's, here), read
            // back before anything counts; with `far`, the ssh client here
            // that it reads is part of it and runs there too (the writer here, where
            // the row's server would be).
            let cpus = s.sink_cpus();
            let mut sink = Sink::new(kind, &dir.join("out.txt"), cpus.as_deref())?;
            if let Some(read) = sink.read_cpus(cpus.as_deref()) {
                read.check()?;
            }
            let mut cmd = Command::new(&argv[0]);
            affinity::pin_at_exec(&mut cmd, writer_here.or(far.and(cpus.as_deref())))?;
            cmd.args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(sink.stdio.take().context("the sink's stdout")?)
                .stderr(std::fs::File::create(&stderr)?);
            let mut writer = Proc::spawn("sink-writer", &mut cmd)?;
            // Our copy of the sink's write end closes here, so the reader
            // sees the end when the writer exits.
            drop(cmd);
            if far.is_some() && cpus.is_some() {
                let lines = affinity::process_lines_here(writer.pid());
                affinity::from_lines("ssh client", cpus.as_deref(), &lines).check()?;
            }
            // The sshd process there that serves the session, where the
            // row puts it, read back once the session has started.
            if let (Some(f), Some(_)) = (far, &s.sshd_cpus) {
                let sshd = format!("sshd-{k:02}.pid");
                f.end.sshd_cpus(&sshd, s.sshd_cpus.as_deref())?.check()?;
            }
            let status = until(deadline, &stopping, || writer.try_wait());
            writer.stop(Duration::from_secs(2));
            sink.finish();
            status
        }
    };
    writer_ended(status, stopping(), deadline, &stderr)?;
    let text = match far {
        Some(f) => f.end.read(&far_report)?,
        None => std::fs::read(&report).with_context(|| format!("reading {}", report.display()))?,
    };
    Ok((serde_json::from_slice(&text)?, terminal))
}

/// How a local drain's writer ended: an error unless it exited 0 in time
/// (interrupted when the run was `stopping`).
fn writer_ended(
    status: Option<ExitStatus>,
    stopping: bool,
    deadline: Duration,
    stderr: &Path,
) -> anyhow::Result<()> {
    let Some(status) = status else {
        if stopping {
            return Err(Interrupted.into());
        }
        bail!(
            "the sink writer did not finish within {}",
            humantime::format_duration(deadline)
        );
    };
    if !status.success() {
        bail!(
            "the sink writer exited with {status}: {}",
            last_line(stderr)
        );
    }
    Ok(())
}

/// The writer's command line (started where the row's server would be),
/// writing `lines` for `length` after `settle`, its report to `report`.
fn writer_argv(
    job: &Job,
    settings: &SinksSettings,
    exe: String,
    lines: String,
    report: String,
) -> Vec<String> {
    let mut argv = vec![
        exe,
        "sink-writer".into(),
        lines,
        "--for".into(),
        humantime::format_duration(settings.length).to_string(),
        "--settle".into(),
        humantime::format_duration(settings.settle).to_string(),
        "--report".into(),
        report,
    ];
    if let Some(gap) = job.scenario.writer_gap {
        argv.extend(["--gap".into(), humantime::format_duration(gap).to_string()]);
    }
    argv
}

/// One drain run of a row on a remote server host: the writer started
/// there as the row's server would be, in the same sink
/// ([`crate::stack::in_sink`]: a file, a pipe `cat` drains, a pty `script`
/// drains, /dev/null, or xterm or alacritty on an Xvfb display there), in
/// a private directory there with the lines and its report.
fn drain_on_host(
    job: &Job,
    place: &Placement,
    lines: &Path,
    settings: &SinksSettings,
    k: u32,
) -> anyhow::Result<(WriterReport, Option<String>)> {
    let host = &place.server;
    let tmp = job.tmp.join(format!("drain-{k:02}"));
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let files = host.private_dir(&tmp)?;
    let exe = std::env::current_exe().context("finding shootout's own binary")?;
    let exe = host.place_binary(&exe)?;
    let text = std::fs::read(lines).with_context(|| format!("reading {}", lines.display()))?;
    let there = format!("{}/lines.txt", files.path);
    host.write_file(&there, &text)?;
    let report = format!("{}/report.json", files.path);
    let mut argv = writer_argv(job, settings, exe, there, report.clone());
    // The writer waits for this file: the reader lives only as long as the
    // writer, and reading it back takes a new ssh command, which on a
    // loaded machine can outlast a short run.
    let go = format!("{}/go", files.path);
    argv.extend(["--after".into(), go.clone()]);
    let mut w = in_sink::start(job.scenario, &tmp, place, argv, &files)?;
    // `cat` or `script` there on the row's sink CPUs, read back before
    // anything is written.
    for read in w.reader_cpus(job.scenario, host)? {
        read.check()?;
    }
    host.write_file(&go, b"")?;
    let deadline = settings.settle + settings.length + Duration::from_secs(60);
    let stopping = || job.run.stopping();
    let status = until(deadline, &stopping, || w.proc_.try_wait());
    let stopped = w.proc_.stop(Duration::from_secs(2));
    w.stderr_done
        .store(true, std::sync::atomic::Ordering::Relaxed);
    w.sink.finish();
    let Some(status) = status else {
        if stopping() {
            return Err(Interrupted.into());
        }
        bail!(
            "{}the sink writer did not finish within {}",
            host.prefix(),
            humantime::format_duration(deadline)
        );
    };
    stopped?;
    if !status.success() {
        bail!(
            "{}the sink writer exited with {}: {}",
            host.prefix(),
            crate::place::procs::ended(status),
            w.proc_.stderr().tail()
        );
    }
    let text = host.read_file(&report)?;
    Ok((serde_json::from_str(&text)?, w.terminal))
}

/// Polls `done` until it gives a status, `deadline` passes or the run
/// stops (then none).
fn until(
    deadline: Duration,
    stopping: &dyn Fn() -> bool,
    mut done: impl FnMut() -> Option<ExitStatus>,
) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(st) = done() {
            return Some(st);
        }
        if stopping() || start.elapsed() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn last_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sample_with_nothing_counted_is_no_answer() {
        assert!(no_answer(
            "x\nloadgen: no request succeeded (0 requests, 0 errors, 0 non-2xx)\n"
        ));
        assert!(!no_answer(
            "loadgen: no request succeeded (0 requests, 12 errors, 0 non-2xx)"
        ));
        assert!(!no_answer(
            "loadgen: no request succeeded (40 requests, 0 errors, 40 non-2xx)"
        ));
        assert!(!no_answer(
            "loadgen: error rate 0.5000 is over --max-error-rate 0.1"
        ));
    }

    #[test]
    fn a_sample_counts_lines_per_request_only_with_a_hundred_answers_per_connection() {
        // The test command's one bad sample: 4 connections, a handful of
        // answers, each with a line in flight besides.
        assert!(!enough_answers(4, 4));
        assert!(!enough_answers(399, 4));
        assert!(enough_answers(400, 4));
        assert!(enough_answers(3604, 4));
        assert!(!enough_answers(25_599, 256));
        assert!(enough_answers(25_600, 256));
    }
}
