//! `log = "ssh-terminal"` in a served row (issue 24, parts 1-2): the
//! server is started on its host through `ssh -tt` from this machine, so
//! its stdout is an sshd pseudo-terminal there and every log line crosses
//! ssh (a TCP connection of its own, its link optionally shaped for ssh
//! traffic only) to what takes it here: a drained pseudo-terminal, or
//! xterm or alacritty on Xvfb. This is an operator who started the server
//! from an ssh session and left it running in the foreground.
//!
//! The pty merges stderr into stdout, so the server's pid and stderr cannot
//! come back through the terminal: the wrapper writes the pid to a file and
//! sends stderr to another, which a second ssh follows (`tail -F`). The
//! server is stopped with SIGTERM on its host; the ssh client here then
//! exits with the server's status. Dropping one stops everything it
//! started, there and here.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::config::scenario::SshTerminal;
use crate::place::affinity::{self, ReadCpus};
use crate::place::host::{reader_pid_file, taskset_prefix, Host, HostDir};
use crate::place::procs::StderrLines;
use crate::place::remote::{self, RemoteProc};
use crate::place::running::{Boundaries, CpuReader, Running};
use crate::place::ssh::{quote, Session};
use crate::place::ssh_terminal::{LinkStats, Shaped};
use crate::stack::emulator::{Emulator, Kind};

/// The ssh client here: drained, or drawn by an emulator. (Where the
/// terminal is on the server's host, the ssh client here carries no
/// output: a plain process, held as `Drained`.)
enum Client {
    Drained(Box<Running>),
    Drawn(Box<Emulator>),
}

/// A server under `ssh -tt`, and the ssh client that shows its output.
pub(crate) struct OverSsh {
    ssh: Session,
    pub pid: u32,
    client: Client,
    follower: RemoteProc,
    shaped: Option<Shaped>,
    /// The shaped class's counters when the server stopped.
    link: Option<LinkStats>,
    /// The row's directory on the server's host when an emulator draws
    /// there (`xvfb-run`).
    drawn_there: Option<String>,
    /// The ssh client here carries the output into a pseudo-terminal the
    /// runner drains: it is part of the sink's reader.
    reads_here: bool,
    /// Where the sshd process serving an ssh terminal here left its pid
    /// on the server's host.
    sshd_file: Option<String>,
    status: Option<ExitStatus>,
}

/// Where the server's terminal is drained or drawn.
pub(crate) enum Where<'a> {
    /// Here, through `ssh -tt` (`log = "ssh-terminal"`), drawn by the
    /// emulator `drawn` (none: a drained pseudo-terminal).
    Here {
        t: &'a SshTerminal,
        drawn: Option<Kind>,
    },
    /// On the server's host: a pty that util-linux `script` drains into
    /// `out` there (`log = "terminal"` on a remote host), on `cpus` there
    /// (none: the scheduler's), its pid beside `out`
    /// ([`crate::place::host::reader_pid_file`]).
    OnHost { out: String, cpus: Option<String> },
    /// On the server's host: the emulator drawing on an Xvfb display there
    /// that `xvfb-run` starts and stops (`log = "xterm"` or `"alacritty"`
    /// on a remote host).
    OnHostDrawn(Kind),
}

/// What the server needs to start over ssh.
pub(crate) struct Start<'a> {
    pub host: &'a Host,
    pub terminal: Where<'a>,
    pub argv: Vec<String>,
    pub dir: &'a HostDir,
    pub log_level: &'a str,
    /// The drained pseudo-terminal's slave, for `terminal = "drained"`.
    pub stdout: Stdio,
    /// Private files here (the emulator's).
    pub tmp: &'a Path,
    /// The CPUs of an emulator drawing here (none: the scheduler's).
    pub terminal_cpus: Option<String>,
    /// The CPUs of the ssh client here whose pseudo-terminal is drained
    /// (none: the scheduler's).
    pub sink_cpus: Option<String>,
    /// The CPUs of the sshd process there that serves the session of an
    /// ssh terminal here (none: where the host's sshd runs it).
    pub sshd_cpus: Option<String>,
}

impl OverSsh {
    /// Starts the server; returns once its pid is known (its start-up line
    /// comes on [`OverSsh::stderr`]), with a description for meta.json.
    pub(crate) fn start(s: Start) -> anyhow::Result<(OverSsh, String)> {
        let ssh = s.host.ssh()?;
        let name = ssh.host.name.clone();
        let rate = match &s.terminal {
            Where::Here { t, .. } => t.link_rate_bps,
            Where::OnHost { .. } | Where::OnHostDrawn(_) => None,
        };
        let shaped = match rate {
            None => None,
            Some(bps) => Some(Shaped::ssh_of(&ssh, bps)?),
        };
        let file = |name: &str| format!("{}/server.{name}", s.dir.path);
        let (pid_file, err_file, exit_file) = (file("pid"), file("stderr"), file("exit"));
        let line: Vec<String> = s.argv.iter().map(|a| quote(a)).collect();
        // The server runs as the wrapper's child (so the wrapper can write
        // its exit status); `$!` is the server itself (a simple command in
        // the background is exec'd in the forked child; `taskset` execs too).
        let script = format!(
            "cd {dir} || exit 1; RUST_LOG={lvl} {argv} 2>{err} & echo $! >{pid}; wait $!; echo $? >{exit}.tmp && mv {exit}.tmp {exit}",
            dir = quote(&s.dir.path),
            pid = quote(&pid_file),
            lvl = quote(s.log_level),
            argv = line.join(" "),
            err = quote(&err_file),
            exit = quote(&exit_file),
        );
        let drawn_there = matches!(s.terminal, Where::OnHostDrawn(_)).then(|| s.dir.path.clone());
        let reads_here = matches!(s.terminal, Where::Here { drawn: None, .. });
        let sshd_file = matches!(s.terminal, Where::Here { .. }).then(|| file("sshd"));
        let (client, drawn) = match &s.terminal {
            Where::OnHost { out, cpus } => {
                // `script` gives the server a pty and copies what it reads
                // to its stdout, here the file; it runs `$SHELL -c` on the
                // wrapper. Nothing comes back over ssh. It is the sink's
                // reader there: on the row's sink CPUs, its pid beside the
                // file.
                let on_host = format!(
                    "cd {dir} || exit 1; echo $$ >{pid}; exec {pin}script -q -f -c {script} /dev/null >{out}",
                    dir = quote(&s.dir.path),
                    pid = quote(&reader_pid_file(out)),
                    pin = taskset_prefix(cpus.as_deref()),
                    script = quote(&script),
                    out = quote(out),
                );
                let p = Running::here("ssh", &ssh.argv(&on_host), None, Stdio::null())?;
                (
                    Client::Drained(Box::new(p)),
                    format!(
                        "a pseudo-terminal on host {name} that script(1) drains into a file there"
                    ),
                )
            }
            Where::OnHostDrawn(kind) => {
                let cpus = s.terminal_cpus.as_deref();
                let on_host = drawn_on_host(*kind, &s.dir.path, &script, cpus);
                let p = Running::here("ssh", &ssh.argv(&on_host), None, Stdio::null())?;
                (
                    Client::Drained(Box::new(p)),
                    format!("{} on an Xvfb display on host {name}", kind.settings_text()),
                )
            }
            Where::Here { drawn, .. } => {
                // The sshd process serving this session carries every line
                // of it: on the row's sshd CPUs, its pid kept for the
                // read-back.
                let pin = sshd_file
                    .as_deref()
                    .map(|f| affinity::sshd_prefix(f, s.sshd_cpus.as_deref()))
                    .unwrap_or_default();
                let argv = ssh.terminal_argv(&format!("{pin}{script}"));
                let cpus = match drawn {
                    Some(_) => s.terminal_cpus.as_deref(),
                    None => s.sink_cpus.as_deref(),
                };
                client_here(*drawn, argv, s.stdout, s.tmp, cpus)?
            }
        };
        let mut client = client;
        let pid = wait_pid(&ssh, &pid_file, &mut client)
            .with_context(|| format!("host {name}: starting the server in its terminal"))?;
        // Follows the server's stderr until the server has gone, then
        // exits with its status (255 when the wrapper wrote none within 5
        // s: it died with its session).
        let follow = format!(
            "tail --pid={pid} -n +1 -F {err} >&2 2>/dev/null; n=0; while [ ! -s {exit} ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done; [ -s {exit} ] && exit $(cat {exit}); exit 255",
            err = quote(&err_file),
            exit = quote(&exit_file),
        );
        let follower = RemoteProc::spawn(&ssh, &["sh".into(), "-c".into(), follow], Stdio::null())?;
        let describe = match &s.terminal {
            Where::OnHost { .. } => format!("server's stdout {drawn}"),
            Where::OnHostDrawn(_) => format!("server's stdout drawn by {drawn}"),
            Where::Here { .. } => format!(
                "server started through ssh -tt to host {name} ({}@{}:{}, a connection of its own), its stdout that session's pseudo-terminal, drawn here by {drawn}{}",
                ssh.host.user,
                ssh.host.address,
                ssh.host.port,
                shaped
                    .as_ref()
                    .map_or(String::new(), |sh| format!("; {}", sh.describe)),
            ),
        };
        Ok((
            OverSsh {
                ssh,
                pid,
                client,
                follower,
                shaped,
                link: None,
                drawn_there,
                reads_here,
                sshd_file,
                status: None,
            },
            describe,
        ))
    }

    /// The server's exit status on its host (the follower exits with it),
    /// once it has exited.
    pub(crate) fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            // The wrapper's `$?` (255: it wrote none, or ssh failed).
            self.status = self
                .follower
                .wait(Duration::ZERO)
                .map(|st| match st.code() {
                    Some(code) if code != 255 => crate::place::procs::from_shell(code),
                    _ => st,
                });
        }
        self.status
    }

    /// SIGTERM to the server on its host, up to `grace` for it to exit,
    /// then SIGKILL; then the ssh client here goes at once (what ssh still
    /// carries from before the stop is not the row's).
    pub(crate) fn stop(&mut self, grace: Duration) -> anyhow::Result<Option<ExitStatus>> {
        for (sig, wait) in [("TERM", grace), ("KILL", Duration::from_secs(7))] {
            if self.try_wait().is_some() {
                break;
            }
            remote::signal(&self.ssh, self.pid, sig)?;
            let deadline = Instant::now() + wait;
            while self.try_wait().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        match &mut self.client {
            Client::Drained(p) => {
                // The server is gone: what runs it there (script(1), or the
                // emulator on Xvfb) ends by itself, Xvfb last; wait for that
                // before the ssh client here goes, so nothing is left there.
                let deadline = Instant::now() + Duration::from_secs(7);
                while self.status.is_some() && p.try_wait().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                drop(p.stop(Duration::from_secs(5)))
            }
            Client::Drawn(x) => drop(x.stop(Duration::from_secs(5))),
        }
        let _ = self.follower.stop(Duration::from_secs(2));
        if let Some(sh) = self.shaped.take() {
            self.link = sh.stats();
        }
        Ok(self.status)
    }

    /// What the shaped link carried from start to stop (after a stop).
    pub(crate) fn link(&self) -> Option<LinkStats> {
        self.link
    }

    pub(crate) fn stderr(&self) -> &StderrLines {
        self.follower.lines()
    }

    pub(crate) fn cpu_reader(&self, b: Boundaries, scratch: &Path) -> anyhow::Result<CpuReader> {
        CpuReader::there(&self.ssh, self.pid, b, scratch)
    }

    /// The session the server runs in, and its pid on its host.
    pub(crate) fn ssh(&self) -> &Session {
        &self.ssh
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The CPUs of the emulator drawing the server's output, and of its
    /// Xvfb, as read against `wanted`: here (an ssh session drawn here) or
    /// on the server's host (`xvfb-run` there: it and its children, found
    /// through the Xvfb that uses the row's authority file); none when
    /// nothing draws.
    pub(crate) fn terminal_cpus(&self, wanted: Option<&str>) -> anyhow::Result<Option<ReadCpus>> {
        if let Client::Drawn(x) = &self.client {
            return Ok(Some(x.read_cpus(wanted)));
        }
        let Some(dir) = &self.drawn_there else {
            return Ok(None);
        };
        let xvfb = quote(&format!("^Xvfb .*-auth {dir}/xauthority"));
        let script = format!(
            "x=$(pgrep -f -- {xvfb} | head -n 1); [ -n \"$x\" ] || exit 0; \
             r=$(ps -o ppid= -p \"$x\" | tr -d ' '); {}",
            affinity::remote_script("$r")
        );
        let lines = self.ssh.run(&script)?;
        Ok(Some(affinity::from_lines("terminal", wanted, &lines)))
    }

    /// The CPUs of the ssh client here whose pseudo-terminal the runner
    /// drains, as read against `wanted`; none for other terminals.
    pub(crate) fn client_cpus(&self, wanted: Option<&str>) -> anyhow::Result<Option<ReadCpus>> {
        match &self.client {
            Client::Drained(p) if self.reads_here => Ok(Some(p.read_cpus("ssh client", wanted)?)),
            _ => Ok(None),
        }
    }

    /// The CPUs of the sshd process there that serves an ssh terminal
    /// here, as read against `wanted`; none for other terminals.
    pub(crate) fn sshd_cpus(&self, wanted: Option<&str>) -> anyhow::Result<Option<ReadCpus>> {
        self.sshd_file
            .as_deref()
            .map(|f| affinity::sshd_read(&self.ssh, f, wanted))
            .transpose()
    }

    pub(crate) fn resident_kib(&self) -> anyhow::Result<(u64, Option<u64>)> {
        remote::resident_kib_of(&self.ssh, self.pid)
    }

    pub(crate) fn usage(&self) -> Option<crate::place::procs::Usage> {
        remote::usage_of(&self.ssh, self.pid)
            .ok()
            .map(|u| u.of_processes(1))
    }
}

impl Drop for OverSsh {
    fn drop(&mut self) {
        // Idempotent: after a stop, only the (gone) client is asked again.
        let _ = self.stop(Duration::from_secs(2));
    }
}

/// The command that runs `script` (the server's wrapper) in `kind` on the
/// server's host, in `dir`: `xvfb-run` picks a free display (`-a`), keeps
/// its X authority file in `dir` (so the Xvfb command line names the row's
/// directory, as every process the row starts there does) and stops Xvfb
/// when the emulator exits, which it does when the server has. xvfb-run
/// only signals Xvfb on its way out, so the command then waits (up to 5 s,
/// then SIGKILL) until no Xvfb with the row's authority file is left: the
/// row ends with nothing of it running. Their stderr comes back over ssh
/// (a missing `xvfb-run` is reported).
fn drawn_on_host(kind: Kind, dir: &str, script: &str, cpus: Option<&str>) -> String {
    let (env, argv) = kind.argv();
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    let argv: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    format!(
        "cd {dir} || exit 1; env {env} {pin}xvfb-run -a -f {auth} -s {screen} {argv} -e sh -c {script} >/dev/null; rc=$?; \
         i=0; while pgrep -f -- {xvfb} >/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; \
         pkill -KILL -f -- {xvfb}; exit $rc",
        dir = quote(dir),
        env = env.join(" "),
        pin = taskset_prefix(cpus),
        auth = quote(&format!("{dir}/xauthority")),
        xvfb = quote(&format!("^Xvfb .*-auth {dir}/xauthority")),
        screen = quote(&format!("-screen 0 {}", crate::stack::emulator::SCREEN)),
        argv = argv.join(" "),
        script = quote(script),
    )
}

/// The ssh client here for `log = "ssh-terminal"`: its output in a
/// drained pty (`stdout`) or drawn by an emulator (`drawn`); with what
/// drew it.
fn client_here(
    drawn: Option<Kind>,
    argv: Vec<String>,
    stdout: Stdio,
    tmp: &Path,
    cpus: Option<&str>,
) -> anyhow::Result<(Client, String)> {
    Ok(match drawn {
        None => {
            let p = Running::here("ssh", &argv, cpus, stdout)?;
            (
                Client::Drained(Box::new(p)),
                "a drained pseudo-terminal".into(),
            )
        }
        Some(kind) => {
            let tag = tmp.display().to_string();
            let x = Emulator::start(kind, tmp, &argv, &[], &tag, cpus)?;
            let d = x.describe();
            (Client::Drawn(Box::new(x)), d)
        }
    })
}

/// The server's pid from the wrapper's file on its host, within 15 s; an
/// error with the ssh client's last words when it exits first.
fn wait_pid(ssh: &Session, pid_file: &str, client: &mut Client) -> anyhow::Result<u32> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let text = ssh.run(&format!("cat {} 2>/dev/null || true", quote(pid_file)))?;
        if let Ok(pid) = text.trim().parse::<u32>() {
            return Ok(pid);
        }
        let ended = match client {
            Client::Drained(p) => p.try_wait().map(|st| (st, p.stderr().tail())),
            Client::Drawn(x) => x.try_wait().map(|st| (st, String::new())),
        };
        if let Some((st, tail)) = ended {
            bail!("ssh exited ({st}) before the server started: {tail}");
        }
        if Instant::now() > deadline {
            bail!("no server pid within 15 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
