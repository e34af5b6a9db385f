//! A stack: the server with its log sink and, when the scenario has one,
//! nginx in front. Started on a [`Placement`]'s hosts, verified, and stopped;
//! dropping a stack stops whatever it still runs.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::emulator::{self, Emulator};
use crate::host::{Host, Placement};
use crate::load::{command, taskset};
use crate::nginx;
use crate::output::Sink;
use crate::procs::Proc;
use crate::scenario::{LogSink, Request, Scenario};
use crate::verify::{self, Verified};

/// The server's command line for scenario `s`: pinning, `bin`, the bind
/// address and the flags the row sets; a counter file and an access log
/// (for the features that need them) in `files`. Local and remote stacks
/// start their servers with it.
pub fn server_argv(s: &Scenario, bin: String, bind: SocketAddr, files: &Path) -> Vec<String> {
    let mut argv = taskset(&s.server_cpus);
    argv.extend([
        bin,
        "--bind".into(),
        bind.to_string(),
        "--backlog".into(),
        s.backlog.to_string(),
    ]);
    if let Some(w) = s.workers {
        argv.extend(["--workers".into(), w.to_string()]);
    }
    if let Some(secs) = s.client_timeout {
        argv.extend(["--client-timeout".into(), secs.to_string()]);
    }
    if let Some(ns) = s.spin_ns {
        argv.extend(["--spin-ns".into(), ns.to_string()]);
    }
    for (feature, flag, file) in [
        ("mmap-backend", "--counter-file", "count"),
        ("log-file", "--log-file", "access.log"),
    ] {
        if s.features.iter().any(|f| f == feature) {
            argv.extend([flag.into(), files.join(file).display().to_string()]);
        }
    }
    argv
}

/// What a stack needs to start.
pub struct StackSpec<'a> {
    pub root: &'a Path,
    pub scenario: &'a Scenario,
    pub server_bin: &'a Path,
    /// Private files: counter file, log sinks, nginx prefix.
    pub tmp: PathBuf,
}

/// The server process: a child of the runner, or inside a terminal emulator.
enum ServerProc {
    Direct(Proc),
    InTerminal(Box<Emulator>),
}

impl ServerProc {
    fn pid(&self) -> i32 {
        match self {
            ServerProc::Direct(p) => p.pid(),
            ServerProc::InTerminal(x) => x.server_pid,
        }
    }

    fn try_wait(&mut self) -> Option<ExitStatus> {
        match self {
            ServerProc::Direct(p) => p.try_wait(),
            ServerProc::InTerminal(x) => x.try_wait(),
        }
    }

    fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        match self {
            ServerProc::Direct(p) => p.stop(grace),
            ServerProc::InTerminal(x) => x.stop(grace),
        }
    }
}

/// A running stack.
pub struct Stack {
    // Field order is drop order: nginx stops before the server.
    nginx: Option<Proc>,
    server: ServerProc,
    /// Ends the thread following a server's stderr file (emulator rows).
    stderr_done: Arc<AtomicBool>,
    /// The terminal emulator, for meta.json (emulator rows).
    pub terminal: Option<String>,
    sink: Option<Sink>,
    stderr: Lines,
    pub startup_line: String,
    /// Where loadgen sends requests: nginx when there is one, else the server.
    pub target: SocketAddr,
    /// The `log-file` sink's path.
    pub log_file: Option<PathBuf>,
    binary: bool,
    ceiling: bool,
}

/// How a stack ended.
#[derive(Debug, Clone, Default)]
pub struct Stopped {
    pub server_exit: Option<i32>,
    pub nginx_exit: Option<i32>,
    pub server_stdout_bytes: u64,
    pub log_file_bytes: Option<u64>,
}

impl Stack {
    /// Starts the server (and nginx) on `place.server`, waits for the
    /// start-up line and for the target to accept connections from
    /// `place.client`.
    pub fn start(spec: &StackSpec, place: &Placement) -> anyhow::Result<Stack> {
        let s = spec.scenario;
        std::fs::create_dir_all(&spec.tmp)
            .with_context(|| format!("creating {}", spec.tmp.display()))?;
        // Behind nginx the server listens on loopback of its host.
        let bind_ip = if s.proxy.is_some() {
            IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        } else {
            place.listen_ip
        };
        let argv = server_argv(
            s,
            spec.server_bin.display().to_string(),
            SocketAddr::new(bind_ip, 0),
            &spec.tmp,
        );
        // Logs are sinks under test, not results: they live in the temp
        // dir (removed afterwards); their sizes are recorded.
        let log_file = s
            .features
            .iter()
            .any(|f| f == "log-file")
            .then(|| spec.tmp.join("access.log"));
        let mut sink = Sink::new(s.log, &spec.tmp.join("server-stdout.txt"))?;
        let (line_tx, line_rx) = mpsc::channel();
        let stderr_done = Arc::new(AtomicBool::new(false));
        let emulator = match s.log {
            LogSink::Xterm => Some(emulator::Kind::Xterm),
            LogSink::Alacritty => Some(emulator::Kind::Alacritty),
            _ => None,
        };
        let (mut server, stderr, terminal) = if let Some(kind) = emulator {
            // The emulator and its display run here; the server inside it runs on
            // the server's host (`ip netns exec` replaces itself with it).
            let tag = spec.tmp.display().to_string();
            let argv = place.server.wrap(argv);
            let x = Emulator::start(kind, &spec.tmp, &argv, &[("RUST_LOG", &s.log_level)], &tag)?;
            let lines = follow_file(x.stderr.clone(), line_tx, Arc::clone(&stderr_done));
            let terminal = Some(x.describe());
            (ServerProc::InTerminal(Box::new(x)), lines, terminal)
        } else {
            let mut cmd = command(&place.server, argv);
            cmd.env("RUST_LOG", &s.log_level)
                .stdout(sink.stdio.take().expect("fresh sink"))
                .stderr(Stdio::piped());
            let mut proc = Proc::spawn_session("server", &mut cmd)?;
            drop(cmd);
            let lines = server_stderr(&mut proc, line_tx)?;
            (ServerProc::Direct(proc), lines, None)
        };
        let startup_line = wait_startup(&mut server, &line_rx, &stderr)?;
        let server_addr: SocketAddr = startup_line
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("addr="))
            .and_then(|a| a.parse().ok())
            .with_context(|| format!("no addr= in the start-up line {startup_line:?}"))?;

        let mut stack = Stack {
            nginx: None,
            server,
            stderr_done,
            terminal,
            sink: Some(sink),
            stderr,
            startup_line,
            target: server_addr,
            log_file,
            binary: s.request == Request::Binary,
            ceiling: s.proxy.as_deref() == Some("static"),
        };
        if let Some(name) = &s.proxy {
            let ip = place.listen_ip;
            let port = place.server.within(move || free_port(ip))??;
            let listen = SocketAddr::new(ip, port);
            let prefix = spec.tmp.join("nginx");
            let config = nginx::render(
                spec.root,
                name,
                &prefix,
                s.nginx_workers,
                listen,
                Some(server_addr),
            )?;
            stack.nginx = Some(nginx::start(
                &config,
                &prefix,
                &place.server.wrap(Vec::new()),
            )?);
            stack.target = listen;
        }
        let target = stack.target;
        place.client.within(move || wait_port(target))??;
        Ok(stack)
    }

    /// Checks the app as TechEmpower would, from `client`; returns what it
    /// found, with the count before the load. The static ceiling row checks
    /// only nginx's answer (there is no app behind it).
    pub fn verify(&self, client: &Host) -> anyhow::Result<Option<Verified>> {
        let target = self.target;
        if self.ceiling {
            let ex = client.within(move || verify::exchange(target, "GET", None))??;
            if ex.status != 200 {
                bail!("nginx static answered {} instead of 200", ex.status);
            }
            return Ok(None);
        }
        let binary = self.binary;
        let v = client
            .within(move || verify::verify(target, binary))?
            .with_context(|| format!("verifying the server at {target}"))?;
        Ok(Some(v))
    }

    /// The app's count now, read from `client`.
    pub fn count(&self, client: &Host) -> anyhow::Result<u64> {
        let (target, binary) = (self.target, self.binary);
        client.within(move || {
            verify::exchange(target, "GET", None).and_then(|ex| verify::count_of(&ex, binary))
        })?
    }

    /// True for the nginx static ceiling row (no app, no counter).
    pub fn is_ceiling(&self) -> bool {
        self.ceiling
    }

    pub fn server_pid(&self) -> i32 {
        self.server.pid()
    }

    /// The server's stderr lines so far (the first 200).
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().expect("stderr lines").clone()
    }

    pub fn nginx_pid(&self) -> Option<i32> {
        self.nginx.as_ref().map(Proc::pid)
    }

    /// An error when the server has exited (during a load, that is a failure).
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if self.server.try_wait().is_some() {
            bail!("the server exited during the load: {}", tail(&self.stderr));
        }
        Ok(())
    }

    /// Stops nginx, then the server (SIGTERM, SIGKILL after 10 s); an error
    /// when the server did not exit 0, with the tail of its stderr.
    pub fn stop(mut self) -> (Stopped, anyhow::Result<()>) {
        let mut out = Stopped::default();
        if let Some(mut n) = self.nginx.take() {
            out.nginx_exit = n.stop(Duration::from_secs(10)).and_then(|s| s.code());
        }
        let exit = self.server.stop(Duration::from_secs(10));
        // Let the stderr follower read the last lines, then end it.
        std::thread::sleep(Duration::from_millis(if self.terminal.is_some() {
            60
        } else {
            0
        }));
        self.stderr_done.store(true, Ordering::Relaxed);
        out.server_exit = exit.and_then(|s| s.code());
        out.server_stdout_bytes = self.sink.take().map_or(0, Sink::finish);
        out.log_file_bytes = self
            .log_file
            .as_ref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.len());
        let result = if out.server_exit == Some(0) {
            Ok(())
        } else {
            Err(anyhow::anyhow!(
                "the server did not exit 0 on SIGTERM ({exit:?}): {}",
                tail(&self.stderr)
            ))
        };
        (out, result)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.stderr_done.store(true, Ordering::Relaxed);
    }
}

type Lines = Arc<std::sync::Mutex<Vec<String>>>;

fn server_stderr(server: &mut Proc, first: mpsc::Sender<String>) -> anyhow::Result<Lines> {
    let pipe = server.take_stderr().context("server stderr")?;
    let lines: Lines = Arc::default();
    let sink = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if line.contains(" listening addr=") {
                let _ = first.send(line.clone());
            }
            let mut l = sink.lock().expect("stderr lines");
            if l.len() < 200 {
                l.push(line);
            }
        }
    });
    Ok(lines)
}

/// Follows a server's stderr file (emulator rows) as [`server_stderr`] reads
/// a pipe, until `done`.
fn follow_file(path: PathBuf, first: mpsc::Sender<String>, done: Arc<AtomicBool>) -> Lines {
    let lines: Lines = Arc::default();
    let sink = Arc::clone(&lines);
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
                    let l = line.trim_end().to_string();
                    line.clear();
                    if l.contains(" listening addr=") {
                        let _ = first.send(l.clone());
                    }
                    let mut v = sink.lock().expect("stderr lines");
                    if v.len() < 200 {
                        v.push(l);
                    }
                }
                // End of what was written so far (a partial line stays in
                // `line` until its end arrives).
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    lines
}

fn tail(lines: &Lines) -> String {
    let l = lines.lock().expect("stderr lines");
    l.iter()
        .rev()
        .take(3)
        .rev()
        .cloned()
        .collect::<Vec<_>>()
        .join(" | ")
}

fn wait_startup(
    server: &mut ServerProc,
    rx: &mpsc::Receiver<String>,
    stderr: &Lines,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(50)) {
            return Ok(line);
        }
        if let Some(status) = server.try_wait() {
            std::thread::sleep(Duration::from_millis(50));
            bail!(
                "the server exited ({status}) before listening: {}",
                tail(stderr)
            );
        }
        if Instant::now() > deadline {
            bail!("the server printed no start-up line within 30 s");
        }
    }
}

fn free_port(ip: IpAddr) -> anyhow::Result<u16> {
    let l = TcpListener::bind(SocketAddr::new(ip, 0))
        .with_context(|| format!("finding a free port on {ip}"))?;
    Ok(l.local_addr()?.port())
}

fn wait_port(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{addr} did not answer within 20 s")
}
