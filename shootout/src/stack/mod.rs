//! A stack: the server with its log sink and, when the scenario has one,
//! nginx in front. Started on a [`Placement`]'s hosts (here, in namespaces
//! or on remote hosts, all through [`Host`]), verified from each load host,
//! and stopped; dropping a stack stops whatever it still runs, wherever.

pub mod command;
pub mod emulator;
pub(crate) mod in_sink;
pub mod nginx;
pub mod server;
pub mod sink;
pub mod ssh_served;
pub mod tls;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::check::verify::{self, Verified};
use crate::config::scenario::{Request, Scenario};
use crate::place::affinity::ReadCpus;
use crate::place::host::{Host, HostDir};
use crate::place::placement::Placement;
use crate::place::procs::Usage;
use crate::place::running::{Boundaries, CpuReader, Running};
use crate::stack::in_sink::InSink;
use crate::stack::server::{server_argv, wait_startup, ServerProc};
use crate::stack::sink::Sink;

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
    /// Where a reader on the server's host left its pid (see
    /// [`InSink::reader_file`]).
    reader_file: Option<String>,
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
    /// `tls = true`: the CA on each load host, the runner's TLS client.
    tls: Option<tls::Clients>,
    binary: bool,
    ceiling: bool,
    /// False for a command row: the counter's checks are the twins'.
    twin: bool,
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
        // A command row's server is told its port (picked here, free a
        // moment ago); a twin picks its own and prints it.
        // `tls = true`: certificates for the front (nginx's address, or the
        // server's), made now; the twin ends TLS when nginx does not.
        let front_ip = if s.proxy.is_some() {
            place.proxy_ip
        } else {
            bind_ip
        };
        let material = s.tls.then(|| tls::Material::make(front_ip)).transpose()?;
        let (mut argv, command_addr) = match &s.command {
            Some(c) => {
                let port = place.server.pick_port(bind_ip)?;
                (
                    command::argv(c, s, bind_ip, port),
                    Some(SocketAddr::new(bind_ip, port)),
                )
            }
            None => (
                server_argv(
                    s,
                    place.server.place_binary(spec.server_bin)?,
                    SocketAddr::new(bind_ip, 0),
                    Path::new(&files.path),
                ),
                None,
            ),
        };
        if let (Some(m), None) = (&material, &s.proxy) {
            let (cert, key) = m.place_front(&place.server, &files.path)?;
            argv.extend(["--tls-cert".into(), cert, "--tls-key".into(), key]);
        }
        // Logs are sinks under test, not results: they live in the private
        // dirs (removed afterwards); their sizes are recorded.
        let log_file = s
            .build_variant()
            .file_args(Path::new(&files.path))
            .into_iter()
            .find_map(|(flag, path)| (flag == "--log-file").then_some(path));
        let InSink {
            proc_: mut server,
            terminal,
            stdout_file,
            sink,
            reader_file,
            stderr_done,
        } = in_sink::start(s, &spec.tmp, place, argv, &files)?;
        crate::hold_at::stage("start");
        let (startup_line, server_addr) = match (&s.command, command_addr) {
            (Some(c), Some(addr)) => {
                let line = command::await_ready(&mut server, &place.server, addr, c)?;
                (line, addr)
            }
            _ => {
                let line = wait_startup(&mut server)
                    .map_err(|e| anyhow::anyhow!("{}{e:#}", place.server.prefix()))?;
                let addr: SocketAddr = app_core::startup_addr(&line)
                    .with_context(|| format!("no addr= in the start-up line {line:?}"))?;
                (line, addr)
            }
        };

        let mut stack = Stack {
            nginx: None,
            server,
            stderr_done,
            terminal,
            sink: Some(sink),
            reader_file,
            startup_line,
            target: server_addr,
            log_file,
            stdout_file,
            server_host: place.server.clone(),
            tls: None,
            binary: s.request == Request::Binary,
            ceiling: s.proxy.as_deref() == Some("static"),
            twin: s.is_twin(),
            _dirs: vec![files],
        };
        stack.start_nginx(spec, place, server_addr, material.as_ref())?;
        if let Some(m) = &material {
            stack.tls = Some(tls::Clients::place(
                m,
                &place.clients,
                &spec.tmp.join("tls"),
                stack.target.ip(),
            )?);
        }
        for client in &place.clients {
            client.wait_port(stack.target)?;
        }
        Ok(stack)
    }

    /// nginx in front of the server at `server_addr`, when the row has
    /// one: the stack's target becomes nginx's address.
    fn start_nginx(
        &mut self,
        spec: &StackSpec,
        place: &Placement,
        server_addr: SocketAddr,
        material: Option<&tls::Material>,
    ) -> anyhow::Result<()> {
        let s = spec.scenario;
        if let Some(template) = nginx::template(spec.root, s) {
            let dir = place.proxy.private_dir(&spec.tmp.join("nginx"))?;
            let tls_files = match material {
                Some(m) => Some(m.place_front(&place.proxy, &dir.path)?),
                None => None,
            };
            let proxy = nginx::Proxy {
                template: &template,
                workers: s.nginx_workers,
                cpus: s.nginx_cpus(),
                tls: tls_files,
            };
            let (proc_, listen) = nginx::start(
                &place.proxy,
                &proxy,
                &dir,
                place.proxy_ip,
                Some(server_addr),
            )?;
            self._dirs.push(dir);
            self.nginx = Some(proc_);
            self.target = listen;
        }
        Ok(())
    }

    /// Checks the app as TechEmpower would, from `client`; returns what it
    /// found, with the count before the load. The static ceiling row checks
    /// only nginx's answer (there is no app behind it).
    pub fn verify(&self, client: &Host) -> anyhow::Result<Option<Verified>> {
        crate::hold_at::stage("verify");
        let target = self.target;
        let exchange = |method: &str, body: Option<&[u8]>| self.ask(client, method, body);
        if self.ceiling {
            let ex = exchange("GET", None)?;
            if ex.status != 200 {
                bail!("nginx static answered {} instead of 200", ex.status);
            }
            return Ok(None);
        }
        if !self.twin {
            // A command row answered its readiness probe from the server's
            // host; here it must answer from the load's (through nginx too).
            return Ok(None);
        }
        let v = verify::verify(exchange, self.binary)
            .with_context(|| format!("{}verifying the server at {target}", client.prefix()))?;
        Ok(Some(v))
    }

    /// The app's count now, read from `client`.
    pub fn count(&self, client: &Host) -> anyhow::Result<u64> {
        let ex = self.ask(client, "GET", None)?;
        verify::count_of(&ex, self.binary)
    }

    /// One request to the front from `client`: over TLS on a `tls` row.
    fn ask(
        &self,
        client: &Host,
        method: &str,
        body: Option<&[u8]>,
    ) -> anyhow::Result<crate::place::exchange::Exchange> {
        match &self.tls {
            Some(t) => client.exchange_tls(self.target, &t.tls, t.ca_file(client), method, body),
            None => client.exchange(self.target, method, body),
        }
    }

    /// The CA file loadgen trusts on `client` (a load host of the stack):
    /// some on a `tls` row.
    pub fn ca_file(&self, client: &Host) -> Option<&str> {
        self.tls.as_ref().and_then(|t| t.ca_file(client))
    }

    /// True for the nginx static ceiling row (no app, no counter).
    pub fn is_ceiling(&self) -> bool {
        self.ceiling
    }

    /// Whether the app has the twins' counter to check acknowledged POSTs
    /// against: not the ceiling row, not a command row.
    pub fn has_counter(&self) -> bool {
        self.twin && !self.ceiling
    }

    /// What the server has written so far to a file sink (`log =
    /// "file"`), read on its host; none for other sinks.
    pub fn stdout_text(&self) -> anyhow::Result<Option<String>> {
        self.stdout_file
            .as_ref()
            .map(|f| self.server_host.read_file(f))
            .transpose()
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

    /// The CPUs the server's and nginx's threads may run on, and those of
    /// a terminal emulator drawing here or there and of the sink's reader
    /// (the runner's thread, the ssh client it reads, `cat` or `script` on
    /// the server's host),
    /// read from their hosts' /proc, each against the CPUs the scenario
    /// `s` gives it.
    pub fn read_cpus(&self, s: &Scenario) -> anyhow::Result<Vec<ReadCpus>> {
        let mut out = vec![self.server.read_cpus(s.server_cpus.as_deref())?];
        if let Some(n) = &self.nginx {
            out.push(n.read_cpus("nginx", s.nginx_cpus().as_deref())?);
        }
        out.extend(self.server.terminal_cpus(s.terminal_cpus().as_deref())?);
        if let Some(sink) = &self.sink {
            out.extend(in_sink::readers_cpus(
                s,
                sink,
                self.reader_file.as_deref(),
                &self.server_host,
                &self.server,
            )?);
        }
        Ok(out)
    }

    /// Where the server's threads may run now (every process of it), as
    /// read against row `s`'s `server_cpus`.
    pub fn server_cpus(&self, s: &Scenario) -> anyhow::Result<ReadCpus> {
        self.server.read_cpus(s.server_cpus.as_deref())
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

    /// After a loadgen failed: the server's death when the server has
    /// exited or exits within `grace` (the root cause: a loadgen whose
    /// server died fails to connect, and may say so first), else Ok.
    pub fn died_within(&mut self, grace: Duration) -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + grace;
        loop {
            self.check_alive()?;
            if std::time::Instant::now() >= deadline {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
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
        // A twin exits 0 on SIGTERM; a command row's server may also die
        // of it, as most servers do (a shell's 143 is the same).
        let by_term = || {
            use std::os::unix::process::ExitStatusExt;
            exit.is_some_and(|st| st.signal() == Some(libc::SIGTERM) || st.code() == Some(143))
        };
        let result = if out.server_exit == Some(0) || (!self.twin && by_term()) {
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

impl Drop for Stack {
    fn drop(&mut self) {
        self.stderr_done.store(true, Ordering::Relaxed);
    }
}
