//! A process with its stdout in a row's log sink, on the row's server host:
//! the server of a stack, or the sinks design's writer in its place (so a
//! drain is measured in the very sink a served row logs into).
//!
//! Here, the runner's [`Sink`] opens the file, drains the pipe or the pty,
//! or an emulator draws; on a remote host the process's stdout is
//! redirected there (a file, a FIFO that `cat` drains into a file,
//! `/dev/null`), a pty is drained there by `script`, an emulator draws on
//! an Xvfb display there, and nothing comes back over ssh. `log =
//! "ssh-terminal"` starts it on its host through `ssh -tt` instead.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::scenario::{Drawn, LogSink, Scenario};
use crate::place::affinity::{self, ReadCpus};
use crate::place::host::{reader_pid_file, Host, HostDir, Launch};
use crate::place::placement::Placement;
use crate::stack::emulator::{self, Emulator};
use crate::stack::server::{follow_file, ServerProc};
use crate::stack::sink::Sink;
use crate::stack::ssh_served::{self, OverSsh};

/// The started process and where its stdout went.
pub(crate) struct InSink {
    pub proc_: ServerProc,
    /// The terminal that took it (emulators, ptys on a host, ssh), for
    /// meta.json.
    pub terminal: Option<String>,
    /// A file sink's file, on the server's host: its size is the bytes
    /// written.
    pub stdout_file: Option<String>,
    /// The runner's end of a local sink.
    pub sink: Sink,
    /// Where the reader on a remote server host (`cat` of a pipe,
    /// `script` of a pty) left its pid there.
    pub reader_file: Option<String>,
    /// Ends the thread following an emulator's stderr file.
    pub stderr_done: Arc<AtomicBool>,
}

/// Starts `argv` on `place.server` with its stdout in row `s`'s sink; `files`
/// is the row's private directory on that host, `tmp` its private one here.
pub(crate) fn start(
    s: &Scenario,
    tmp: &Path,
    place: &Placement,
    argv: Vec<String>,
    files: &HostDir,
) -> anyhow::Result<InSink> {
    let remote = place.server.ssh().is_ok();
    let local_out = tmp.join("server-stdout.txt");
    let (argv, stdout_file, local_sink) = match s.log {
        LogSink::File | LogSink::Pipe => {
            let pipe = s.log == LogSink::Pipe;
            let reader = s.sink_cpus();
            let (argv, path, wrapped) =
                place
                    .server
                    .stdout_file(argv, files, &local_out, pipe, reader.as_deref());
            match (wrapped, s.log) {
                // The host's own file (or FIFO and file) takes it.
                (true, _) => (argv, Some(path), LogSink::None),
                // Here a pipe's reader counts what it drains into the file.
                (false, LogSink::Pipe) => (argv, None, LogSink::Pipe),
                (false, _) => (argv, Some(path), s.log),
            }
        }
        // On a remote host, nothing is /dev/null there (not ssh's channel
        // back here).
        LogSink::None if remote => {
            let mut v = vec![
                "sh".to_string(),
                "-c".into(),
                "exec \"$@\" >/dev/null".into(),
                "sh".into(),
            ];
            v.extend(argv);
            (v, None, LogSink::None)
        }
        // A pty on a remote host is drained there (by `script`, into a
        // file whose size is the bytes).
        LogSink::Terminal if remote => (argv, Some(host_stdout(files)), LogSink::None),
        // An ssh terminal drained here is a pseudo-terminal drained here
        // (ssh's output is what it reads).
        LogSink::SshTerminal
            if s.ssh_terminal.as_ref().map(|t| t.terminal) == Some(Drawn::Drained) =>
        {
            (argv, None, LogSink::Terminal)
        }
        _ => (argv, None, s.log),
    };
    let reader_file = stdout_file
        .as_deref()
        .filter(|_| remote && matches!(s.log, LogSink::Pipe | LogSink::Terminal))
        .map(reader_pid_file);
    let mut sink = Sink::new(local_sink, &local_out, s.sink_cpus().as_deref())?;
    let stderr_done = Arc::new(AtomicBool::new(false));
    let stdout = sink.stdio.take().expect("fresh sink");
    let (proc_, terminal) = launch(s, tmp, place, argv, files, stdout, &stderr_done)?;
    Ok(InSink {
        proc_,
        terminal,
        stdout_file,
        sink,
        reader_file,
        stderr_done,
    })
}

impl InSink {
    /// The CPUs of the sink's reader as read against row `s`'s
    /// `sink_cpus`: the runner's thread here, `cat` or `script` on the
    /// server's host, and the ssh client here that an ssh terminal drained
    /// here reads; none for a sink without a reader.
    pub(crate) fn reader_cpus(&self, s: &Scenario, host: &Host) -> anyhow::Result<Vec<ReadCpus>> {
        readers_cpus(
            s,
            &self.sink,
            self.reader_file.as_deref(),
            host,
            &self.proc_,
        )
    }
}

/// [`InSink::reader_cpus`] from its parts (a [`crate::stack::Stack`] keeps
/// them apart).
pub(crate) fn readers_cpus(
    s: &Scenario,
    sink: &Sink,
    reader_file: Option<&str>,
    host: &Host,
    server: &ServerProc,
) -> anyhow::Result<Vec<ReadCpus>> {
    let wanted = s.sink_cpus();
    let mut out: Vec<ReadCpus> = sink.read_cpus(wanted.as_deref()).into_iter().collect();
    out.extend(server.client_cpus(wanted.as_deref())?);
    out.extend(server.sshd_cpus(s.sshd_cpus.as_deref())?);
    if let Some(file) = reader_file {
        let script = format!(
            "{}{}",
            affinity::await_pid_file(file),
            affinity::remote_script("$p")
        );
        let lines = host.ssh()?.run(&script)?;
        out.push(affinity::from_lines(
            "sink reader",
            wanted.as_deref(),
            &lines,
        ));
    }
    Ok(out)
}

/// Where a remote host's pty sink leaves the process's stdout.
fn host_stdout(files: &HostDir) -> String {
    format!("{}/server-stdout.txt", files.path)
}

/// Starts `argv` on `place.server` as row `s`'s log sink asks: inside a
/// terminal emulator here, through `ssh -tt`, or plainly with `stdout` as
/// its stdout; with a description of the terminal, if any.
fn launch(
    s: &Scenario,
    tmp: &Path,
    place: &Placement,
    argv: Vec<String>,
    files: &HostDir,
    stdout: std::process::Stdio,
    stderr_done: &Arc<AtomicBool>,
) -> anyhow::Result<(ServerProc, Option<String>)> {
    let emulator = match s.log {
        LogSink::Xterm | LogSink::Alacritty => emulator::Kind::of(s),
        _ => None,
    };
    // A terminal on a remote server host is there, drained or drawn.
    let on_host = match s.log {
        _ if place.server.ssh().is_err() => None,
        LogSink::Terminal => Some(ssh_served::Where::OnHost {
            out: host_stdout(files),
            cpus: s.sink_cpus(),
        }),
        LogSink::Xterm | LogSink::Alacritty => emulator.map(ssh_served::Where::OnHostDrawn),
        _ => None,
    };
    let over_ssh = s
        .ssh_terminal
        .as_ref()
        .filter(|_| s.log == LogSink::SshTerminal)
        .map(|t| ssh_served::Where::Here {
            t,
            drawn: emulator::Kind::of(s),
        })
        .or(on_host);
    // Started inside another program (an ssh session, an emulator's
    // shell), it is placed by `taskset` there; started by the runner, at
    // exec.
    let inside = || [affinity::pinned(s.server_cpus.as_deref()), argv.clone()].concat();
    if let Some(terminal) = over_ssh {
        let argv = inside();
        let (o, describe) = OverSsh::start(ssh_served::Start {
            host: &place.server,
            terminal,
            argv,
            dir: files,
            log_level: &s.log_level,
            stdout,
            tmp,
            terminal_cpus: s.terminal_cpus(),
            sink_cpus: s.sink_cpus(),
            sshd_cpus: s.sshd_cpus.clone(),
        })?;
        return Ok((ServerProc::OverSsh(Box::new(o)), Some(describe)));
    }
    if let Some(kind) = emulator {
        // The emulator and its display run here; the process inside it runs
        // on the server's host (`ip netns exec` replaces itself with it).
        let tag = tmp.display().to_string();
        let argv = place.server.terminal_argv(inside())?;
        let cpus = s.terminal_cpus();
        let env = [("RUST_LOG", s.log_level.as_str())];
        let x = Emulator::start(kind, tmp, &argv, &env, &tag, cpus.as_deref())?;
        let lines = follow_file(x.stderr.clone(), Arc::clone(stderr_done));
        let terminal = Some(x.describe());
        return Ok((ServerProc::InTerminal(Box::new(x), lines), terminal));
    }
    let mut env = vec![("RUST_LOG".to_string(), s.log_level.clone())];
    if s.log_style_always {
        env.push(("RUST_LOG_STYLE".into(), "always".into()));
    }
    // A command row's own environment, after the runner's.
    env.extend(s.command.iter().flat_map(|c| c.env.iter().cloned()));
    let proc_ = place.server.spawn(Launch {
        name: "server",
        argv,
        cpus: s.server_cpus.as_deref(),
        env,
        cwd: s.command.as_ref().and_then(|c| c.cwd.as_deref()),
        stdout,
        session: true,
        cgroup: s.command.is_some(),
    })?;
    Ok((ServerProc::Started(Box::new(proc_)), None))
}
