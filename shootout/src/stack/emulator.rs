//! `log = "xterm"` and `log = "alacritty"`: the server runs inside a real
//! terminal emulator drawing on a private Xvfb display, so its stdout costs
//! what it costs on a desktop (the pty sink only drains bytes; nothing is
//! drawn). xterm draws with X core fonts; alacritty with OpenGL, here Mesa's
//! software renderer (`LIBGL_ALWAYS_SOFTWARE=1`), as on a machine without a
//! GPU, its shader disk cache off (`MESA_SHADER_CACHE_DISABLE=true`: the
//! cache's threads set their own CPUs, out of the row's placement).
//!
//! Xvfb picks a free display (`-displayfd`), the emulator runs a small `sh`
//! wrapper that starts the server (leading its own session) in the
//! background with its stderr in a file and writes the server's pid, then
//! its exit status, to files the runner reads. Stopping: SIGTERM to the
//! server, the emulator exits when its child is gone, then Xvfb. Every
//! process is also stopped on drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::config::scenario::{Drawn, LogSink, Scenario};
use crate::place::affinity::{self, ReadCpus};
use crate::place::procs::Proc;

/// Window size in character cells.
pub const COLUMNS: u32 = 120;
pub const LINES: u32 = 40;
/// Lines kept in the scrollback.
pub const SCROLLBACK: u32 = 1024;
/// Xvfb's screen, wherever it runs.
pub const SCREEN: &str = "1280x800x24";

/// Which terminal emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// xterm with its core font `fixed` (xfonts-base, 6x13 pixels).
    /// `jump_scroll: false` is xterm's `+j` (scenario key `jump_scroll =
    /// false`): it scrolls and draws every line instead of skipping to the
    /// last screenful when output comes faster than it draws.
    Xterm { jump_scroll: bool },
    /// alacritty at font size 10 (its default family), software OpenGL.
    Alacritty,
}

impl Kind {
    /// The emulator row `s` draws its server's stdout in (`log = "xterm"`
    /// or `"alacritty"`, here or on its server's host), or its ssh
    /// session's output here (`log = "ssh-terminal"`); none for the others.
    pub fn of(s: &Scenario) -> Option<Kind> {
        let xterm = Kind::Xterm {
            jump_scroll: s.jump_scroll,
        };
        match s.log {
            LogSink::Xterm => Some(xterm),
            LogSink::Alacritty => Some(Kind::Alacritty),
            LogSink::SshTerminal => match s.ssh_terminal.as_ref()?.terminal {
                Drawn::Xterm => Some(xterm),
                Drawn::Alacritty => Some(Kind::Alacritty),
                Drawn::Drained => None,
            },
            _ => None,
        }
    }

    fn program(self) -> &'static str {
        match self {
            Kind::Xterm { .. } => "xterm",
            Kind::Alacritty => "alacritty",
        }
    }

    /// The font, and xterm's scrolling when it is not its default.
    fn font(self) -> &'static str {
        match self {
            Kind::Xterm { jump_scroll: true } => "fixed (6x13)",
            Kind::Xterm { jump_scroll: false } => "fixed (6x13), jump scroll off (+j)",
            Kind::Alacritty => "default family, size 10",
        }
    }

    /// The emulator's command line up to `-e`, for display `:display`,
    /// pinned to `cpus` (see [`pinned`]).
    fn command(self, display: u32, cpus: Option<&str>) -> anyhow::Result<Command> {
        let mut cmd = pinned(self.program(), cpus)?;
        if matches!(self, Kind::Xterm { .. }) {
            cmd.args(["-display", &format!(":{display}")]);
        }
        cmd.env("DISPLAY", format!(":{display}"));
        let (env, args) = self.settings();
        cmd.envs(env).args(args);
        Ok(cmd)
    }

    /// The emulator's program, environment and arguments up to `-e` for
    /// the display in `DISPLAY` (as `xvfb-run` sets it on a remote host).
    pub fn argv(self) -> (Vec<(&'static str, &'static str)>, Vec<String>) {
        let (env, args) = self.settings();
        let mut argv = vec![self.program().to_string()];
        argv.extend(args);
        (env, argv)
    }

    /// One window size, scrollback and font wherever the emulator runs.
    fn settings(self) -> (Vec<(&'static str, &'static str)>, Vec<String>) {
        match self {
            Kind::Xterm { jump_scroll } => (Vec::new(), {
                let mut args: Vec<String> = vec![
                    "-geometry".into(),
                    format!("{COLUMNS}x{LINES}"),
                    "-sl".into(),
                    SCROLLBACK.to_string(),
                    "-fn".into(),
                    "fixed".into(),
                ];
                if !jump_scroll {
                    args.push("+j".into());
                }
                args
            }),
            // Mesa's shader disk cache writes from threads that set their
            // own CPUs (all of them), so a pinned alacritty would not stay
            // where the row puts it; without the cache its shaders compile
            // at start-up, before anything is measured, and nothing is
            // written to disk during a run.
            Kind::Alacritty => (
                vec![
                    ("LIBGL_ALWAYS_SOFTWARE", "1"),
                    ("MESA_SHADER_CACHE_DISABLE", "true"),
                ],
                vec![
                    "-o".into(),
                    format!("window.dimensions.columns={COLUMNS}"),
                    "-o".into(),
                    format!("window.dimensions.lines={LINES}"),
                    "-o".into(),
                    format!("scrolling.history={SCROLLBACK}"),
                    "-o".into(),
                    "font.size=10".into(),
                ],
            ),
        }
    }

    /// What draws, for meta.json: the emulator, its cells and font.
    pub fn settings_text(self) -> String {
        format!(
            "{} ({COLUMNS}x{LINES} cells, scrollback {SCROLLBACK} lines, font {})",
            self.program(),
            self.font()
        )
    }
}

/// The wrapper the emulator runs: the server in the background, stderr in a file,
/// its pid and then its exit status in files (written atomically).
/// `setsid` makes the server the leader of its own session and process
/// group, as the runner's other servers are (see `Proc::spawn_session`):
/// CPU and RSS are read the same way, and the kernel's autogroup scheduling
/// gives it the same share of a CPU.
const WRAPPER: &str = r#"setsid "$@" 2>"$SHOOTOUT_STDERR" &
echo $! >"$SHOOTOUT_PID.tmp" && mv "$SHOOTOUT_PID.tmp" "$SHOOTOUT_PID"
wait $!
echo $? >"$SHOOTOUT_EXIT.tmp" && mv "$SHOOTOUT_EXIT.tmp" "$SHOOTOUT_EXIT""#;

/// `program`'s command, placed on `cpus` when it names some (set before it
/// execs, as the runner starts servers and loadgens), so that it and every
/// process it starts may run only there.
fn pinned(program: &str, cpus: Option<&str>) -> anyhow::Result<Command> {
    let mut cmd = Command::new(program);
    affinity::pin_at_exec(&mut cmd, cpus)?;
    Ok(cmd)
}

/// A server running in a terminal emulator on its own Xvfb display.
pub struct Emulator {
    kind: Kind,
    // Drop order: the emulator before Xvfb.
    term: Proc,
    xvfb: Proc,
    pub server_pid: i32,
    pub display: u32,
    /// The server's stderr.
    pub stderr: PathBuf,
    exit_file: PathBuf,
    status: Option<ExitStatus>,
}

impl Emulator {
    /// Starts Xvfb and the emulator running `argv` (with `env` set) in
    /// `dir`, both on `cpus` when it names some; `tag` goes into their
    /// environment so tests can find them.
    pub fn start(
        kind: Kind,
        dir: &Path,
        argv: &[String],
        env: &[(&str, &str)],
        tag: &str,
        cpus: Option<&str>,
    ) -> anyhow::Result<Emulator> {
        let xvfb_err = dir.join("xvfb.stderr");
        let mut cmd = pinned("Xvfb", cpus)?;
        cmd.args([
            "-displayfd",
            "1",
            "-nolisten",
            "tcp",
            "-screen",
            "0",
            SCREEN,
        ])
        .env("SHOOTOUT_TAG", tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(file(&xvfb_err)?);
        let mut xvfb = Proc::spawn("Xvfb", &mut cmd)?;
        let display = read_display(&mut xvfb)
            .with_context(|| format!("Xvfb did not start: {}", last_line(&xvfb_err)))?;

        let (pid_file, exit_file) = (dir.join("server.pid"), dir.join("server.exit"));
        let stderr = dir.join("server.stderr");
        let term_err = dir.join(format!("{}.stderr", kind.program()));
        let mut cmd = kind.command(display, cpus)?;
        cmd.args(["-e", "/bin/sh", "-c", WRAPPER, "sh"])
            .args(argv)
            .envs(env.iter().copied())
            .env("SHOOTOUT_TAG", tag)
            .env("SHOOTOUT_PID", &pid_file)
            .env("SHOOTOUT_EXIT", &exit_file)
            .env("SHOOTOUT_STDERR", &stderr)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file(&term_err)?);
        let mut term = Proc::spawn(kind.program(), &mut cmd)?;
        let deadline = Instant::now() + Duration::from_secs(15);
        let server_pid = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                break pid;
            }
            if let Some(st) = term.try_wait() {
                bail!("{} exited ({st}): {}", kind.program(), last_line(&term_err));
            }
            if Instant::now() > deadline {
                bail!(
                    "{} started no server within 15 s: {}",
                    kind.program(),
                    last_line(&term_err)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Ok(Emulator {
            kind,
            term,
            xvfb,
            server_pid,
            display,
            stderr,
            exit_file,
            status: None,
        })
    }

    /// What meta.json records about the terminal.
    pub fn describe(&self) -> String {
        format!(
            "{} on Xvfb :{} ({COLUMNS}x{LINES} cells, scrollback {SCROLLBACK} lines, font {})",
            self.kind.program(),
            self.display,
            self.kind.font()
        )
    }

    /// The CPUs every thread of the emulator and of its display may run
    /// on, read from /proc, as one record (`terminal`) against `wanted`.
    pub fn read_cpus(&self, wanted: Option<&str>) -> ReadCpus {
        let lines = [self.term.pid(), self.xvfb.pid()]
            .map(affinity::group_lines_here)
            .concat();
        affinity::from_lines("terminal", wanted, &lines)
    }

    /// The server's exit status, once it has exited (or the emulator has gone).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            if let Some(code) = std::fs::read_to_string(&self.exit_file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                self.status = Some(crate::place::procs::from_shell(code));
            } else if let Some(st) = self.term.try_wait() {
                self.status = Some(st);
            }
        }
        self.status
    }

    /// SIGTERM to the server, SIGKILL after `grace`; then the emulator and Xvfb.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.try_wait().is_none() {
            self.signal(libc::SIGTERM);
            let deadline = Instant::now() + grace;
            while self.try_wait().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.try_wait().is_none() {
                self.signal(libc::SIGKILL);
                let deadline = Instant::now() + Duration::from_secs(2);
                while self.try_wait().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        // The emulator leaves once its child has; then the display goes.
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.term.try_wait().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.term.stop(Duration::from_secs(2));
        self.xvfb.stop(Duration::from_secs(2));
        self.status
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the server this terminal started (its pid file).
        unsafe {
            libc::kill(self.server_pid, sig);
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

/// Xvfb writes its display number on stdout once it accepts clients.
fn read_display(xvfb: &mut Proc) -> anyhow::Result<u32> {
    let out = xvfb.take_stdout().context("Xvfb stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(line) => line
            .trim()
            .parse()
            .with_context(|| format!("unexpected display {line:?}")),
        Err(_) => bail!("no display within 10 s"),
    }
}

fn file(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))
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
