//! A stack: the server with its log sink and, when the scenario has one,
//! nginx in front. Started on a [`Placement`]'s hosts (here, in namespaces
//! or on remote hosts, all through [`Host`]), verified from each load host,
//! and stopped; dropping a stack stops whatever it still runs, wherever.

pub mod emulator;
pub mod nginx;
pub mod server;
pub mod sink;
pub mod ssh_served;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::check::verify::{self, Verified};
use crate::config::scenario::{Drawn, LogSink, Request, Scenario};
use crate::place::host::{Host, HostDir, Launch};
use crate::place::placement::Placement;
use crate::place::procs::Usage;
use crate::place::running::{Boundaries, CpuReader, Running};
use crate::stack::emulator::Emulator;
use crate::stack::server::{follow_file, server_argv, wait_startup, ServerProc};
use crate::stack::sink::Sink;
use crate::stack::ssh_served::OverSsh;

/// What a stack needs to start.
pub struct StackSpec<'a> {
    pub root: &'a Path,
    pub scenario: &'a Scenario,
    pub server_bin: &'a Path,
    /// Private files here: log sinks, and on local hosts the counter file
    /// and the nginx prefix too (remote hosts get directories of their own).
    pub tmp: PathBuf,
}

/// A running stack.
pub struct Stack {
    // Field order is drop order: nginx stops before the server, and the
    // hosts' private directories go last.
    nginx: Option<Running>,
    server: ServerProc,
    /// Ends the thread following a server's stderr file (emulator rows).
    stderr_done: Arc<AtomicBool>,
    /// The terminal emulator, for meta.json (emulator rows).
    pub terminal: Option<String>,
    sink: Option<Sink>,
    pub startup_line: String,
    /// Where loadgen sends requests: nginx when there is one, else the server.
    pub target: SocketAddr,
    /// The `log-file` sink's path (on the server's host).
    pub log_file: Option<PathBuf>,
    /// `log = "file"`: the file the server's stdout goes to, on its host
    /// (on a remote host, in the row's private directory there).
    stdout_file: Option<String>,
    /// The server's host: file sizes are read there, messages name it.
    server_host: Host,
    binary: bool,
    ceiling: bool,
    _dirs: Vec<HostDir>,
}

/// How a stack ended.
#[derive(Debug, Clone, Default)]
pub struct Stopped {
    pub server_exit: Option<i32>,
    pub nginx_exit: Option<i32>,
    pub server_stdout_bytes: u64,
    pub log_file_bytes: Option<u64>,
    /// `log = "ssh-terminal"` with `link_rate`: what the shaped link
    /// carried from the server's start to its stop.
    pub link: Option<crate::place::ssh_terminal::LinkStats>,
}

impl Stack {
    /// Starts the server on `place.server` (and nginx on `place.proxy`),
    /// waits for the start-up line and for the target to accept
    /// connections from every load host.
    pub fn start(spec: &StackSpec, place: &Placement) -> anyhow::Result<Stack> {
        let s = spec.scenario;
        std::fs::create_dir_all(&spec.tmp)
            .with_context(|| format!("creating {}", spec.tmp.display()))?;
        let files = place.server.private_dir(&spec.tmp)?;
        // Behind nginx on the same host the server listens on its loopback.
        let bind_ip = if s.proxy.is_some() && place.proxy.same(&place.server) {
            IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        } else {
            place.listen_ip
        };
        let argv = server_argv(
            s,
            place.server.place_binary(spec.server_bin)?,
            SocketAddr::new(bind_ip, 0),
            Path::new(&files.path),
        );
        // Logs are sinks under test, not results: they live in the private
        // dirs (removed afterwards); their sizes are recorded.
        let log_file = s
            .build_variant()
            .file_args(Path::new(&files.path))
            .into_iter()
            .find_map(|(flag, path)| (flag == "--log-file").then_some(path));
        // A file or pipe sink ends in a file on the server's host (here, the
        // runner's `Sink` opens it or drains the pipe into it; on a remote
        // host the server's stdout is redirected there, and nothing comes
        // back over ssh); its size is the bytes the server wrote.
        let local_out = spec.tmp.join("server-stdout.txt");
        let (argv, stdout_file, local_sink) = match s.log {
            LogSink::File | LogSink::Pipe => {
                let pipe = s.log == LogSink::Pipe;
                let (argv, path, wrapped) =
                    place.server.stdout_file(argv, &files, &local_out, pipe);
                match (wrapped, s.log) {
                    // The host's own file (or FIFO and file) takes it.
                    (true, _) => (argv, Some(path), LogSink::None),
                    // Here a pipe's reader counts what it drains into the file.
                    (false, LogSink::Pipe) => (argv, None, LogSink::Pipe),
                    (false, _) => (argv, Some(path), s.log),
                }
            }
            // A pty on a remote host is drained there (by `script`, into a
            // file whose size is the bytes).
            LogSink::Terminal if place.server.ssh().is_ok() => {
                (argv, Some(host_stdout(&files)), LogSink::None)
            }
            // An ssh terminal drained here is a pseudo-terminal drained here
            // (ssh's output is what it reads).
            LogSink::SshTerminal
                if s.ssh_terminal.as_ref().map(|t| t.terminal) == Some(Drawn::Drained) =>
            {
                (argv, None, LogSink::Terminal)
            }
            _ => (argv, None, s.log),
        };
        let mut sink = Sink::new(local_sink, &local_out)?;
        let stderr_done = Arc::new(AtomicBool::new(false));
        let (mut server, terminal) = launch(
            spec,
            place,
            argv,
            &files,
            sink.stdio.take().expect("fresh sink"),
            &stderr_done,
        )?;
        crate::hold_at::stage("start");
        let startup_line = wait_startup(&mut server)
            .map_err(|e| anyhow::anyhow!("{}{e:#}", place.server.prefix()))?;
        let server_addr: SocketAddr = app_core::startup_addr(&startup_line)
            .with_context(|| format!("no addr= in the start-up line {startup_line:?}"))?;

        let mut stack = Stack {
            nginx: None,
            server,
            stderr_done,
            terminal,
            sink: Some(sink),
            startup_line,
            target: server_addr,
            log_file,
            stdout_file,
            server_host: place.server.clone(),
            binary: s.request == Request::Binary,
            ceiling: s.proxy.as_deref() == Some("static"),
            _dirs: vec![files],
        };
        if let Some(name) = &s.proxy {
            let dir = place.proxy.private_dir(&spec.tmp.join("nginx"))?;
            let (proc_, listen) = nginx::start(
                &place.proxy,
                spec.root,
                name,
                &dir,
                s.nginx_workers,
                place.proxy_ip,
                Some(server_addr),
            )?;
            stack._dirs.push(dir);
            stack.nginx = Some(proc_);
            stack.target = listen;
        }
        for client in &place.clients {
            client.wait_port(stack.target)?;
        }
        Ok(stack)
    }

    /// Checks the app as TechEmpower would, from `client`; returns what it
    /// found, with the count before the load. The static ceiling row checks
    /// only nginx's answer (there is no app behind it).
    pub fn verify(&self, client: &Host) -> anyhow::Result<Option<Verified>> {
        crate::hold_at::stage("verify");
        let target = self.target;
        let exchange = |method: &str, body: Option<&[u8]>| client.exchange(target, method, body);
        if self.ceiling {
            let ex = exchange("GET", None)?;
            if ex.status != 200 {
                bail!("nginx static answered {} instead of 200", ex.status);
            }
            return Ok(None);
        }
        let v = verify::verify(exchange, self.binary)
            .with_context(|| format!("{}verifying the server at {target}", client.prefix()))?;
        Ok(Some(v))
    }

    /// The app's count now, read from `client`.
    pub fn count(&self, client: &Host) -> anyhow::Result<u64> {
        let ex = client.exchange(self.target, "GET", None)?;
        verify::count_of(&ex, self.binary)
    }

    /// True for the nginx static ceiling row (no app, no counter).
    pub fn is_ceiling(&self) -> bool {
        self.ceiling
    }

    /// The server's stderr lines so far (the first 200).
    pub fn stderr_lines(&self) -> Vec<String> {
        self.server.stderr().lines()
    }

    /// CPU readers of the server and nginx (master and workers) at
    /// boundaries `b`, each on its own host; remote samplers write into
    /// `scratch` here.
    pub fn cpu_readers(&self, b: Boundaries, scratch: &Path) -> anyhow::Result<Vec<CpuReader>> {
        let mut readers = vec![self.server.cpu_reader(b, scratch)?];
        if let Some(n) = &self.nginx {
            readers.push(n.cpu_reader(b, scratch)?);
        }
        Ok(readers)
    }

    /// The server's resident and proportional set size in KiB, from its
    /// host's /proc.
    pub fn server_resident_kib(&self) -> anyhow::Result<(u64, Option<u64>)> {
        self.server.resident_kib()
    }

    /// CPU time and peak RSS of the server and of nginx (master and
    /// workers), wherever they run.
    pub fn usage(&self) -> (Option<Usage>, Option<Usage>) {
        (
            self.server.usage(),
            self.nginx.as_ref().and_then(Running::usage),
        )
    }

    /// An error when the server has exited (during a load, that is a failure).
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.server.try_wait() {
            // Let the stderr follower read its last lines.
            std::thread::sleep(Duration::from_millis(50));
            bail!(
                "{}the server died during the load ({}); its last stderr: {}",
                self.server_host.prefix(),
                crate::place::procs::ended(status),
                self.server.stderr().tail()
            );
        }
        Ok(())
    }

    /// Stops nginx, then the server (SIGTERM, SIGKILL after 10 s); an error
    /// when the server did not exit 0, with the tail of its stderr.
    pub fn stop(mut self) -> (Stopped, anyhow::Result<()>) {
        let mut out = Stopped::default();
        if let Some(mut n) = self.nginx.take() {
            match n.stop(Duration::from_secs(10)) {
                Ok(status) => out.nginx_exit = status.and_then(|s| s.code()),
                Err(e) => return (out, Err(e)),
            }
        }
        let exit = match self.server.stop(Duration::from_secs(10)) {
            Ok(exit) => exit,
            Err(e) => return (out, Err(e)),
        };
        // Let the stderr follower read the last lines, then end it.
        std::thread::sleep(Duration::from_millis(if self.terminal.is_some() {
            60
        } else {
            0
        }));
        self.stderr_done.store(true, Ordering::Relaxed);
        out.server_exit = exit.and_then(|s| s.code());
        out.link = self.server.link();
        out.server_stdout_bytes = self.sink.take().map_or(0, Sink::finish)
            + self
                .stdout_file
                .as_ref()
                .and_then(|f| self.server_host.file_size(f))
                .unwrap_or(0);
        out.log_file_bytes = self
            .log_file
            .as_ref()
            .and_then(|p| self.server_host.file_size(&p.display().to_string()));
        let result = if out.server_exit == Some(0) {
            Ok(())
        } else {
            Err(anyhow::anyhow!(
                "{}the server did not exit 0 on SIGTERM ({}): {}",
                self.server_host.prefix(),
                exit.map_or("no exit status".into(), crate::place::procs::ended),
                self.server.stderr().tail()
            ))
        };
        (out, result)
    }
}

/// Where a remote host's file or pty sink leaves the server's stdout.
fn host_stdout(files: &HostDir) -> String {
    format!("{}/server-stdout.txt", files.path)
}

/// Starts the server of `spec` on `place.server` as its log sink asks:
/// inside a terminal emulator here, through `ssh -tt`, or plainly with
/// `stdout` as its stdout; with a description of the terminal, if any.
fn launch(
    spec: &StackSpec,
    place: &Placement,
    argv: Vec<String>,
    files: &HostDir,
    stdout: std::process::Stdio,
    stderr_done: &Arc<AtomicBool>,
) -> anyhow::Result<(ServerProc, Option<String>)> {
    let s = spec.scenario;
    let emulator = match s.log {
        LogSink::Xterm => Some(emulator::Kind::Xterm),
        LogSink::Alacritty => Some(emulator::Kind::Alacritty),
        _ => None,
    };
    // A terminal on a remote server host is there, drained or drawn.
    let on_host = match s.log {
        _ if place.server.ssh().is_err() => None,
        LogSink::Terminal => Some(ssh_served::Where::OnHost {
            out: host_stdout(files),
        }),
        LogSink::Xterm => Some(ssh_served::Where::OnHostDrawn(emulator::Kind::Xterm)),
        LogSink::Alacritty => Some(ssh_served::Where::OnHostDrawn(emulator::Kind::Alacritty)),
        _ => None,
    };
    let over_ssh = s
        .ssh_terminal
        .as_ref()
        .filter(|_| s.log == LogSink::SshTerminal)
        .map(ssh_served::Where::Here)
        .or(on_host);
    if let Some(terminal) = over_ssh {
        let (o, describe) = OverSsh::start(ssh_served::Start {
            host: &place.server,
            terminal,
            argv,
            dir: files,
            log_level: &s.log_level,
            stdout,
            tmp: &spec.tmp,
        })?;
        return Ok((ServerProc::OverSsh(Box::new(o)), Some(describe)));
    }
    if let Some(kind) = emulator {
        // The emulator and its display run here; the server inside it runs on
        // the server's host (`ip netns exec` replaces itself with it).
        let tag = spec.tmp.display().to_string();
        let argv = place.server.terminal_argv(argv)?;
        let x = Emulator::start(kind, &spec.tmp, &argv, &[("RUST_LOG", &s.log_level)], &tag)?;
        let lines = follow_file(x.stderr.clone(), Arc::clone(stderr_done));
        let terminal = Some(x.describe());
        return Ok((ServerProc::InTerminal(Box::new(x), lines), terminal));
    }
    let mut env = vec![("RUST_LOG", s.log_level.clone())];
    if s.log_style_always {
        env.push(("RUST_LOG_STYLE", "always".into()));
    }
    let proc_ = place.server.spawn(Launch {
        name: "server",
        argv,
        env,
        stdout,
        session: true,
    })?;
    Ok((ServerProc::Started(Box::new(proc_)), None))
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.stderr_done.store(true, Ordering::Relaxed);
    }
}
