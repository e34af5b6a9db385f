//! Where commands run: this machine, one of the runner's own network
//! namespaces on it, or a remote host over ssh. Every row, whatever its
//! hosts, is started, checked, loaded and stopped through [`Host`]; only
//! how a command is spawned, a file written, a binary placed and a request
//! made differ between the variants, and nothing above this module needs to
//! know which one it has.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::place::exchange::{self, Exchange};
use crate::place::netns::{self, Netns};
use crate::place::procs::{Proc, StderrLines};
use crate::place::remote::RemoteProc;
use crate::place::running::Running;
use crate::place::ssh::{quote, Session};

/// A place to run commands.
pub enum Host {
    /// This machine, as it is.
    Local,
    /// A network namespace of the runner's own on this machine.
    Netns(String),
    /// Another machine, over an open ssh session.
    Remote(Session),
}

impl Clone for Host {
    fn clone(&self) -> Host {
        match self {
            Host::Local => Host::Local,
            Host::Netns(n) => Host::Netns(n.clone()),
            Host::Remote(s) => Host::Remote(s.handle()),
        }
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Local => write!(f, "Local"),
            Host::Netns(n) => write!(f, "Netns({n})"),
            Host::Remote(s) => write!(f, "Remote({})", s.host.name),
        }
    }
}

/// What to start on a host.
pub struct Launch<'a> {
    /// For messages: "server", "nginx", "loadgen".
    pub name: &'a str,
    pub argv: Vec<String>,
    /// The CPUs it runs on (none: where the scheduler puts it), set before
    /// its program starts: here between fork and exec, on a remote host by
    /// its wrapper shell before that shell names its pid. No reading of its
    /// placement can see it elsewhere, however early it comes.
    pub cpus: Option<&'a str>,
    pub env: Vec<(String, String)>,
    /// Where it runs (here and in namespaces); the runner's directory when
    /// none.
    pub cwd: Option<&'a Path>,
    pub stdout: Stdio,
    /// Lead a session of its own (servers; see [`Proc::spawn_session`]),
    /// else a process group of its own.
    pub session: bool,
    /// Start it in a cgroup of its own where the machine has one (a
    /// command row's server, which may start and end threads and
    /// processes: [`crate::place::cgroup`]); here and in namespaces only.
    pub cgroup: bool,
}

/// A directory of the runner's on a host. One on a remote host is the
/// runner's alone and is removed when this drops; one here lives in the
/// run's temp directory, which the runner removes.
pub struct HostDir {
    host: Host,
    pub path: String,
}

impl Drop for HostDir {
    fn drop(&mut self) {
        if let Host::Remote(s) = &self.host {
            let _ = s.run(&format!("rm -rf {}", quote(&self.path)));
        }
    }
}

impl Host {
    /// This machine as it is: where a command row is tried before any row
    /// is placed, and where the runner's own tests spawn.
    pub fn here() -> Host {
        Host::Local
    }

    /// True for the same place (the same namespace, the same remote host).
    pub fn same(&self, other: &Host) -> bool {
        match (self, other) {
            (Host::Local, Host::Local) => true,
            (Host::Netns(a), Host::Netns(b)) => a == b,
            (Host::Remote(a), Host::Remote(b)) => a.host.name == b.host.name,
            _ => false,
        }
    }

    /// Its name in file names and messages: the remote host's name, the
    /// namespace's, or `local`.
    pub fn name(&self) -> &str {
        match self {
            Host::Local => "local",
            Host::Netns(n) => n,
            Host::Remote(s) => &s.host.name,
        }
    }

    /// How often the sequential design reads usage on this host: every
    /// 200 ms here, every second on a remote host (each read there is an
    /// ssh round trip).
    pub fn sampling_period(&self) -> Duration {
        match self {
            Host::Remote(_) => Duration::from_secs(1),
            _ => Duration::from_millis(200),
        }
    }

    /// How far ahead of a common start (`--start-at`) processes on this
    /// host must be started: time for an ssh start to land there.
    pub fn start_lead(&self) -> Duration {
        match self {
            Host::Remote(_) => Duration::from_secs(2),
            _ => Duration::from_millis(500),
        }
    }

    /// `host NAME: ` for a remote host's messages, else nothing (a local
    /// process needs no naming).
    pub fn prefix(&self) -> String {
        match self {
            Host::Remote(s) => format!("host {}: ", s.host.name),
            _ => String::new(),
        }
    }

    /// `argv` as a terminal emulator on this machine must run it for it to
    /// run on this host (in its namespace: `ip netns exec` replaces itself
    /// with the command, so the emulator's child is the server). An error
    /// for a remote host: its rows log to none (the scenario parser refuses
    /// other sinks there).
    pub fn terminal_argv(&self, argv: Vec<String>) -> anyhow::Result<Vec<String>> {
        self.wrap(argv)
    }

    /// `argv` as it must be spawned here to run in this host's network.
    fn wrap(&self, argv: Vec<String>) -> anyhow::Result<Vec<String>> {
        match self {
            Host::Local => Ok(argv),
            Host::Netns(name) => {
                let mut w = Netns::exec(name);
                w.extend(argv);
                Ok(w)
            }
            Host::Remote(s) => bail!(
                "host {}: this step runs only on this machine or its namespaces",
                s.host.name
            ),
        }
    }

    /// Runs `f` in the runner with this host's view of the network (to find
    /// a free port, make a request). Only for this machine and its
    /// namespaces: every method that uses it asks a remote host over ssh.
    fn within<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        match self {
            Host::Local => Ok(f()),
            Host::Netns(name) => netns::within(Some(name), f),
            Host::Remote(s) => bail!(
                "host {}: the runner cannot enter a remote host's network",
                s.host.name
            ),
        }
    }

    /// Starts `l` on this host, its stdin closed and its stderr followed.
    pub fn spawn(&self, l: Launch) -> anyhow::Result<Running> {
        if let Host::Remote(s) = self {
            if let Some(dir) = l.cwd {
                bail!(
                    "host {}: {} would run in {}, which only this machine has",
                    s.host.name,
                    l.name,
                    dir.display()
                );
            }
            let mut argv: Vec<String> = Vec::new();
            if !l.env.is_empty() {
                argv.push("env".into());
                argv.extend(l.env.iter().map(|(k, v)| format!("{k}={v}")));
            }
            argv.extend(l.argv);
            return Ok(Running::There(RemoteProc::spawn_on(
                s, &argv, l.stdout, l.cpus,
            )?));
        }
        let argv = self.wrap(l.argv)?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .envs(l.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(l.stdout)
            .stderr(Stdio::piped());
        if let Some(dir) = l.cwd {
            cmd.current_dir(dir);
        }
        // `ip netns exec` is placed too, and its program inherits the set.
        crate::place::affinity::pin_at_exec(&mut cmd, l.cpus)?;
        let cgroup = l
            .cgroup
            .then(crate::place::cgroup::Cgroup::create)
            .flatten();
        if let Some(cg) = &cgroup {
            cg.join_at_exec(&mut cmd);
        }
        let mut p = if l.session {
            Proc::spawn_session(l.name, &mut cmd)?
        } else {
            Proc::spawn(l.name, &mut cmd)?
        }
        .in_cgroup(cgroup);
        let lines = StderrLines::follow(p.take_stderr().context("stderr")?);
        Ok(Running::Here(p, lines))
    }

    /// The ssh session to this host; an error for this machine and its
    /// namespaces (what only a remote host's sshd can give).
    pub fn ssh(&self) -> anyhow::Result<Session> {
        match self {
            Host::Remote(s) => Ok(s.handle()),
            _ => bail!("this step needs a remote host (a [hosts.NAME] reached over ssh)"),
        }
    }

    /// Where `local` (a binary built here) is on this host: itself here,
    /// else uploaded by content hash (skipped when the host has it).
    pub fn place_binary(&self, local: &Path) -> anyhow::Result<String> {
        match self {
            Host::Remote(s) => Ok(s.upload(local)?.0),
            _ => Ok(local.display().to_string()),
        }
    }

    /// The nginx to run on this host: the one setup found here, or `nginx`
    /// on the remote host's PATH.
    pub fn nginx_program(&self) -> anyhow::Result<String> {
        match self {
            Host::Remote(_) => Ok("nginx".into()),
            _ => Ok(crate::prepare::setup::nginx_binary()?.display().to_string()),
        }
    }

    /// A private directory: `local` here (created), or a fresh one under
    /// the remote host's workdir.
    pub fn private_dir(&self, local: &Path) -> anyhow::Result<HostDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = match self {
            Host::Remote(s) => {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let dir = format!("{}/rows/{}-{n}", s.host.workdir, std::process::id());
                s.run(&format!("mkdir -p {}", quote(&dir)))?;
                dir
            }
            _ => {
                std::fs::create_dir_all(local)
                    .with_context(|| format!("creating {}", local.display()))?;
                local.display().to_string()
            }
        };
        Ok(HostDir {
            host: self.clone(),
            path,
        })
    }

    /// A file sink for a server's stdout on this host: here the runner
    /// opens `local` and hands it over as stdout (`argv` comes back
    /// unchanged, `false`); on a remote host `argv` is wrapped to send its
    /// stdout to `server-stdout.txt` in `dir` there and the new argv comes
    /// back (`true`): straight into the file (`sh -c 'exec "$@" >FILE'`),
    /// or with `pipe` through a FIFO that `cat` drains into the file, as
    /// the local pipe sink's reader does, on `reader_cpus` (none: where
    /// the scheduler puts it), its pid in the file's path plus `.reader`
    /// ([`reader_pid_file`]). Either keeps the server's pid (`exec`). The
    /// path is the file's on this host, for [`Host::file_size`].
    pub fn stdout_file(
        &self,
        argv: Vec<String>,
        dir: &HostDir,
        local: &Path,
        pipe: bool,
        reader_cpus: Option<&str>,
    ) -> (Vec<String>, String, bool) {
        match self {
            Host::Remote(_) => {
                let file = format!("{}/server-stdout.txt", dir.path);
                let script = if pipe {
                    // The shell holds the FIFO open both ways (fd 3) while
                    // `cat` opens it, so neither open waits, and closes it
                    // as it becomes the server: `cat` then sees the end
                    // when the server exits, or at once if the server
                    // could not start (no reader is left waiting). `cat`
                    // is started from a subshell that exits, so it is not
                    // the server's child: neither counted in the server's
                    // CPU nor read back as the server.
                    format!(
                        "mkfifo \"$0.fifo\" || exit 1; exec 3<>\"$0.fifo\"; \
                         ( (exec {pin}cat \"$0.fifo\" >\"$0\" 3>&-) & echo $! >\"$0.reader\" ); \
                         exec \"$@\" >\"$0.fifo\" 3>&-",
                        pin = taskset_prefix(reader_cpus),
                    )
                } else {
                    "exec \"$@\" >\"$0\"".to_string()
                };
                let mut v = vec!["sh".to_string(), "-c".into(), script, file.clone()];
                v.extend(argv);
                (v, file, true)
            }
            _ => (argv, local.display().to_string(), false),
        }
    }

    /// The size of file `path` on this host; none when it cannot be read.
    pub fn file_size(&self, path: &str) -> Option<u64> {
        match self {
            Host::Remote(s) => s
                .run(&format!("stat -c %s {}", quote(path)))
                .ok()?
                .trim()
                .parse()
                .ok(),
            _ => std::fs::metadata(path).ok().map(|m| m.len()),
        }
    }

    /// The text of file `path` on this host.
    pub fn read_file(&self, path: &str) -> anyhow::Result<String> {
        match self {
            Host::Remote(s) => s
                .run(&format!("cat {}", quote(path)))
                .with_context(|| format!("{}reading {path}", self.prefix())),
            _ => std::fs::read_to_string(path).with_context(|| format!("reading {path}")),
        }
    }

    /// Writes `bytes` to `path` on this host, its directory created.
    pub fn write_file(&self, path: &str, bytes: &[u8]) -> anyhow::Result<()> {
        match self {
            Host::Remote(s) => s.write_file(path, bytes),
            _ => {
                let p = Path::new(path);
                if let Some(d) = p.parent() {
                    std::fs::create_dir_all(d)
                        .with_context(|| format!("creating {}", d.display()))?;
                }
                analysis::files::write_atomic(p, bytes)
            }
        }
    }

    /// A port that was free on `ip` here a moment ago; on a remote host,
    /// which the runner does not ask (binding a port there would need a tool
    /// such as python on the host), a random one for the caller to try.
    pub fn pick_port(&self, ip: IpAddr) -> anyhow::Result<u16> {
        match self {
            Host::Remote(_) => {
                use rand::Rng;
                Ok(rand::thread_rng().gen_range(20_000..30_000))
            }
            _ => self.within(move || {
                let l = TcpListener::bind(SocketAddr::new(ip, 0))
                    .with_context(|| format!("finding a free port on {ip}"))?;
                Ok(l.local_addr()?.port())
            })?,
        }
    }

    /// One request to `addr` made from this host, on a fresh connection
    /// (from a remote host through bash's /dev/tcp, the bytes carried over
    /// ssh both ways).
    pub fn exchange(
        &self,
        addr: SocketAddr,
        method: &str,
        body: Option<&[u8]>,
    ) -> anyhow::Result<Exchange> {
        self.exchange_at(addr, method, "/", body)
    }

    /// [`Host::exchange`] to `path` (a command row's readiness probe).
    pub fn exchange_at(
        &self,
        addr: SocketAddr,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> anyhow::Result<Exchange> {
        match self {
            Host::Remote(s) => {
                let script = format!(
                    "timeout 10 bash -c {}",
                    quote(&format!(
                        "exec 3<>/dev/tcp/{}/{} && cat >&3 && cat <&3",
                        addr.ip(),
                        addr.port()
                    ))
                );
                let raw = s.run_with_input(
                    &script,
                    &exchange::request(addr, method, path, body),
                    &format!("{method} http://{addr}{path}"),
                )?;
                exchange::parse(&raw)
                    .with_context(|| format!("host {}: the answer from {addr}", s.host.name))
            }
            _ => {
                let (method, path) = (method.to_string(), path.to_string());
                let body = body.map(<[u8]>::to_vec);
                self.within(move || exchange::exchange(addr, &method, &path, body.as_deref()))?
            }
        }
    }

    /// [`Host::exchange`] over TLS: from here or a namespace with the
    /// runner's client `tls`; from a remote host with `openssl s_client`
    /// there, trusting the CA file `ca` on it (the bytes carried over ssh).
    pub fn exchange_tls(
        &self,
        addr: SocketAddr,
        tls: &loadgen::tls::Tls,
        ca: Option<&str>,
        method: &str,
        body: Option<&[u8]>,
    ) -> anyhow::Result<Exchange> {
        match self {
            Host::Remote(s) => {
                let ca = ca.context("no CA file on the load host")?;
                let script = format!(
                    "timeout 10 openssl s_client -quiet -verify_return_error -alpn http/1.1 \
                     -CAfile {} -verify_ip {} -connect {} 2>/dev/null",
                    quote(ca),
                    addr.ip(),
                    quote(&addr.to_string())
                );
                let raw = s.run_with_input(
                    &script,
                    &exchange::request(addr, method, "/", body),
                    &format!("{method} https://{addr}/"),
                )?;
                exchange::parse(&raw).with_context(|| {
                    format!("host {}: the answer from {addr} over TLS", s.host.name)
                })
            }
            _ => {
                let (method, tls) = (method.to_string(), tls.clone());
                let body = body.map(<[u8]>::to_vec);
                self.within(move || {
                    exchange::exchange_tls(&tls, addr, &method, "/", body.as_deref())
                })?
            }
        }
    }

    /// Whether `addr` accepts a connection from this host; an error when a
    /// remote host itself cannot be reached (its ssh fails), so that a lost
    /// host is named at once rather than probed until a deadline.
    pub fn accepts(&self, addr: SocketAddr) -> anyhow::Result<bool> {
        match self {
            Host::Remote(s) => Ok(s
                .run(&format!(
                    "timeout 2 bash -c {} 2>/dev/null && echo yes || echo no",
                    quote(&format!("exec 3<>/dev/tcp/{}/{}", addr.ip(), addr.port()))
                ))?
                .trim()
                == "yes"),
            _ => Ok(self
                .within(move || {
                    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
                })
                .unwrap_or(false)),
        }
    }

    /// Waits up to 20 s for `addr` to accept a connection from this host.
    pub fn wait_port(&self, addr: SocketAddr) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.accepts(addr)? {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("{}{addr} did not answer within 20 s", self.prefix())
    }
}

/// `taskset -c CPUS ` before a command in a shell line, for `cpus` (none:
/// nothing, the scheduler places it).
pub fn taskset_prefix(cpus: Option<&str>) -> String {
    cpus.map_or(String::new(), |c| format!("taskset -c {} ", quote(c)))
}

/// Where a reader on a remote server host (`cat` of a pipe, `script` of a
/// pty) leaves its pid: beside the file `stdout` it drains into.
pub fn reader_pid_file(stdout: &str) -> String {
    format!("{stdout}.reader")
}
