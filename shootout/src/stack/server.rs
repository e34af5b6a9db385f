//! The server process of a stack: its command line, started on its host or
//! inside a terminal emulator here, and its start-up line.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::config::scenario::Scenario;
use crate::place::affinity::{self, ReadCpus};
use crate::place::procs::{self, StderrLines, Usage};
use crate::place::running::{Boundaries, CpuReader, Running};
use crate::stack::emulator::Emulator;
use crate::stack::ssh_served::OverSsh;

/// The servers' `--shutdown-timeout` (seconds). The runner stops a server
/// only once its load has ended and its counter is checked, so no request
/// is in flight; ntex 3.12.3 after interleaved load sometimes waits out its
/// whole shutdown timeout with no connection left (about one stop in
/// three in the main command's ntex blocks: 5 s each at the default).
pub const STOP_TIMEOUT_SECS: u16 = 1;

/// The server's command line for scenario `s`: `bin`, the bind address
/// and the flags the row sets; a counter file and an access log (for the
/// features that need them) in `files`. Local and remote stacks start
/// their servers with it, on `server_cpus` (`stack::in_sink` places them).
pub fn server_argv(s: &Scenario, bin: String, bind: SocketAddr, files: &Path) -> Vec<String> {
    let mut argv = vec![
        bin,
        "--bind".into(),
        bind.to_string(),
        "--backlog".into(),
        s.backlog.to_string(),
        "--shutdown-timeout".into(),
        STOP_TIMEOUT_SECS.to_string(),
    ];
    if let Some(w) = s.workers {
        argv.extend(["--workers".into(), w.to_string()]);
    }
    if let Some(secs) = s.client_timeout {
        argv.extend(["--client-timeout".into(), secs.to_string()]);
    }
    if let Some(ns) = s.spin_ns {
        argv.extend(["--spin-ns".into(), ns.to_string()]);
    }
    for (flag, path) in s.build_variant().file_args(files) {
        argv.extend([flag.into(), path.display().to_string()]);
    }
    argv
}

/// The server process: started on its host, inside a terminal emulator
/// here (with its stderr followed from a file), or on its host through
/// `ssh -tt` (`log = "ssh-terminal"`).
pub(crate) enum ServerProc {
    Started(Box<Running>),
    InTerminal(Box<Emulator>, StderrLines),
    OverSsh(Box<OverSsh>),
}

impl ServerProc {
    pub(crate) fn try_wait(&mut self) -> Option<ExitStatus> {
        match self {
            ServerProc::Started(p) => p.try_wait(),
            ServerProc::InTerminal(x, _) => x.try_wait(),
            ServerProc::OverSsh(o) => o.try_wait(),
        }
    }

    pub(crate) fn stop(&mut self, grace: Duration) -> anyhow::Result<Option<ExitStatus>> {
        match self {
            ServerProc::Started(p) => p.stop(grace),
            ServerProc::InTerminal(x, _) => Ok(x.stop(grace)),
            ServerProc::OverSsh(o) => o.stop(grace),
        }
    }

    pub(crate) fn cpu_reader(&self, b: Boundaries, scratch: &Path) -> anyhow::Result<CpuReader> {
        match self {
            ServerProc::Started(p) => p.cpu_reader(b, scratch),
            ServerProc::InTerminal(x, _) => Ok(CpuReader::of_group_here(x.server_pid)),
            ServerProc::OverSsh(o) => o.cpu_reader(b, scratch),
        }
    }

    /// The CPUs every thread of the server (its process group here, it
    /// and its children on a remote host) may run on, as read.
    pub(crate) fn read_cpus(&self, wanted: Option<&str>) -> anyhow::Result<ReadCpus> {
        let lines = match self {
            ServerProc::Started(p) => return p.read_cpus("server", wanted),
            ServerProc::InTerminal(x, _) => affinity::group_lines_here(x.server_pid),
            ServerProc::OverSsh(o) => o.ssh().run(&affinity::remote_script(o.pid()))?,
        };
        Ok(affinity::from_lines("server", wanted, &lines))
    }

    /// The CPUs of the terminal emulator (and its display) that draws
    /// the server's output, here or on the server's host, as read against
    /// `wanted`; none when no emulator draws.
    pub(crate) fn terminal_cpus(&self, wanted: Option<&str>) -> anyhow::Result<Option<ReadCpus>> {
        match self {
            ServerProc::InTerminal(x, _) => Ok(Some(x.read_cpus(wanted))),
            ServerProc::OverSsh(o) => o.terminal_cpus(wanted),
            ServerProc::Started(_) => Ok(None),
        }
    }

    /// The CPUs of the ssh client here whose pseudo-terminal the runner
    /// drains (an ssh terminal drained here), as read against `wanted`;
    /// none for any other server.
    pub(crate) fn client_cpus(&self, wanted: Option<&str>) -> anyhow::Result<Option<ReadCpus>> {
        match self {
            ServerProc::OverSsh(o) => o.client_cpus(wanted),
            _ => Ok(None),
        }
    }

    /// The CPUs of the sshd process serving an ssh terminal here, on the
    /// server's host, as read against `wanted`; none for any other server.
    pub(crate) fn sshd_cpus(&self, wanted: Option<&str>) -> anyhow::Result<Option<ReadCpus>> {
        match self {
            ServerProc::OverSsh(o) => o.sshd_cpus(wanted),
            _ => Ok(None),
        }
    }

    pub(crate) fn resident_kib(&self) -> anyhow::Result<(u64, Option<u64>)> {
        match self {
            ServerProc::Started(p) => p.resident_kib(),
            ServerProc::InTerminal(x, _) => {
                procs::resident_kib(x.server_pid).context("reading the server's memory from /proc")
            }
            ServerProc::OverSsh(o) => o.resident_kib(),
        }
    }

    pub(crate) fn stderr(&self) -> &StderrLines {
        match self {
            ServerProc::Started(p) => p.stderr(),
            ServerProc::InTerminal(_, l) => l,
            ServerProc::OverSsh(o) => o.stderr(),
        }
    }

    /// What a shaped ssh link carried (ssh-terminal rows with `link_rate`).
    pub(crate) fn link(&self) -> Option<crate::place::ssh_terminal::LinkStats> {
        match self {
            ServerProc::OverSsh(o) => o.link(),
            _ => None,
        }
    }

    pub(crate) fn usage(&self) -> Option<Usage> {
        match self {
            ServerProc::Started(p) => p.usage(),
            ServerProc::InTerminal(x, _) => procs::usage(x.server_pid),
            ServerProc::OverSsh(o) => o.usage(),
        }
    }
}

/// Follows a server's stderr file (emulator rows) as a pipe is followed,
/// until `done`.
pub(crate) fn follow_file(path: PathBuf, done: Arc<AtomicBool>) -> StderrLines {
    let (sink, lines) = StderrLines::pair();
    std::thread::spawn(move || {
        let mut reader = None;
        let mut line = String::new();
        while !done.load(Ordering::Relaxed) {
            if reader.is_none() {
                reader = std::fs::File::open(&path).ok().map(BufReader::new);
            }
            let Some(r) = reader.as_mut() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            match r.read_line(&mut line) {
                Ok(n) if n > 0 && line.ends_with('\n') => {
                    sink.push(line.trim_end().to_string());
                    line.clear();
                }
                // End of what was written so far (a partial line stays in
                // `line` until its end arrives).
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    lines
}

/// The server's start-up line, within 30 s; an error with the tail of its
/// stderr when it exits first.
pub(crate) fn wait_startup(server: &mut ServerProc) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match server.stderr().next(Duration::from_millis(50)) {
            Ok(line) if app_core::is_startup_line(&line) => return Ok(line),
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            // The pipe closed: the server is exiting.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(50))
            }
        }
        if let Some(status) = server.try_wait() {
            std::thread::sleep(Duration::from_millis(50));
            bail!(
                "the server exited ({status}) before listening: {}",
                server.stderr().tail()
            );
        }
        if Instant::now() > deadline {
            bail!("the server printed no start-up line within 30 s");
        }
    }
}
