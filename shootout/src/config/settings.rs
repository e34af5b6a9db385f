//! The keys as a file writes them: `Settings` (one `[[scenario]]` table or
//! `[defaults]`, every key a row may set) and `Written` (a file's rows and
//! defaults together, for the rules a design checks across them: where a
//! row stands, and the timing keys a design refuses).

use serde::Deserialize;
use toml::Spanned;

use crate::config::scenario::{LogSink, Request, ScenarioError, Topology};
use crate::config::spans::Err;

/// `ready = { method = "GET", path = "/", status = 200 }` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadyToml {
    pub method: Option<String>,
    pub path: Option<String>,
    pub status: Option<u16>,
    /// How long it may take to answer so after its start (`20s`).
    pub within: Option<String>,
}

/// The environment table as written.
pub type EnvToml = std::collections::BTreeMap<String, String>;

/// `libc = "glibc"` or `"musl"`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LibcToml {
    Glibc,
    Musl,
}

/// `workers = 1` or `workers = "physical"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum WorkersToml {
    Count(u64),
    Rule(String),
}

/// One `[[scenario]]` table, or `[defaults]` (which may not name a row).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub name: Option<Spanned<String>>,
    pub label: Option<String>,
    pub server: Option<Spanned<String>>,
    pub features: Option<Spanned<Vec<Spanned<String>>>>,
    /// A number, `"logical"` or `"physical"` (the servers' `--workers`).
    pub workers: Option<Spanned<WorkersToml>>,
    pub backlog: Option<Spanned<u32>>,
    pub topology: Option<Topology>,
    /// One-way delay added on the client's veth (netns rows; needs netem).
    pub link_delay: Option<Spanned<String>>,
    pub proxy: Option<String>,
    /// The user's own nginx config template, in place of a config of
    /// `nginx/` (`{{LISTEN}}` and `{{UPSTREAM}}` filled by the runner).
    pub proxy_conf: Option<Spanned<String>>,
    /// A twin built at this commit (sha, tag, branch) of this repository.
    pub rev: Option<Spanned<String>>,
    /// A diff applied to this repository's tree (at `rev`, or HEAD) before
    /// the twin is built: another version of a dependency, say.
    pub patch: Option<Spanned<String>>,
    pub nginx_workers: Option<Spanned<usize>>,
    pub log: Option<LogSink>,
    pub log_level: Option<String>,
    pub request: Option<Request>,
    pub connections: Option<Spanned<u32>>,
    pub threads: Option<Spanned<u32>>,
    pub duration: Option<Spanned<String>>,
    pub warmup: Option<Spanned<String>>,
    pub interval: Option<Spanned<String>>,
    pub rate: Option<Spanned<f64>>,
    /// Connection churn: loadgen closes each connection after this many
    /// answers and opens a new one.
    pub requests_per_connection: Option<Spanned<u64>>,
    /// The client speaks HTTPS to the stack's front: nginx ends TLS (its
    /// template has `{{TLS_CERT}}` and `{{TLS_KEY}}`), or without a proxy
    /// the twin does (its `tls` feature). The certificate is made at run
    /// time.
    pub tls: Option<Spanned<bool>>,
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    /// nginx's CPUs; the server's (on its host) when absent.
    pub nginx_cpus: Option<String>,
    /// A terminal emulator's CPUs (it and its Xvfb display); for xterm and
    /// alacritty rows the server's when absent.
    pub terminal_cpus: Option<String>,
    /// The CPUs of a pipe's or pty's reader (the runner's thread here,
    /// `cat` or `script` on a remote server host; the server's when
    /// absent), or of the ssh client here of an ssh terminal drained here
    /// (none when absent).
    pub sink_cpus: Option<String>,
    /// The CPUs of the sshd process on the server's host that serves an
    /// ssh terminal's session (`log = "ssh-terminal"`); none when absent.
    pub sshd_cpus: Option<String>,
    /// `"free"`: some process is left to the scheduler, on purpose;
    /// `"pinned"` (the default): every process has its CPUs.
    pub placement: Option<Spanned<String>>,
    pub repetitions: Option<Spanned<u32>>,
    /// CPU work per request in ns (`--spin-ns`; needs the calibrate feature).
    pub spin_ns: Option<u64>,
    /// The servers' `--client-timeout` in seconds (0 = off, which needs
    /// keepalive-os); the servers' default, 5, when none.
    pub client_timeout: Option<u16>,
    /// `"musl"` builds the server for x86_64-unknown-linux-musl.
    pub libc: Option<LibcToml>,
    /// The figure a published study gave for this row, to set ours beside.
    pub original: Option<Spanned<analysis::Original>>,
    /// Remote rows: the `[hosts.NAME]` the server, nginx and loadgens run on.
    pub server_host: Option<Spanned<String>>,
    pub proxy_host: Option<Spanned<String>>,
    pub load_hosts: Option<Spanned<Vec<String>>>,
    /// Paired files: the row this one is compared with (the file's
    /// baseline when absent).
    pub against: Option<Spanned<String>>,
    /// Paired rows: slow clients beside the load (loadgen --slowloris).
    pub slow_clients: Option<Spanned<u32>>,
    /// How often each slow client sends a byte; 1s when absent.
    pub slow_every: Option<Spanned<String>>,
    /// `log = "ssh-terminal"` rows: the `[hosts.NAME]` whose sshd gives
    /// the terminal, what draws it here, and a stand-in's link rate.
    pub ssh_host: Option<Spanned<String>>,
    pub terminal: Option<Spanned<String>>,
    pub link_rate: Option<Spanned<String>>,
    /// xterm rows (`log = "xterm"`, or an ssh terminal drawn by xterm):
    /// `false` turns xterm's jump scroll off (`+j`).
    pub jump_scroll: Option<Spanned<bool>>,
    /// Sinks design: at least this long from one line's write to the next
    /// (`shootout sink-writer --gap`), so lines reach the sink one at a
    /// time as a server writes them; back to back when absent.
    pub writer_gap: Option<Spanned<String>>,
    /// A command row: the server's command line, with `{port}` and the
    /// other placeholders (`{host}`, `{cpus}`, `{workers}`).
    pub command: Option<Spanned<Vec<String>>>,
    /// A command row's build: run once, in the runner's directory (or
    /// `cwd`), before the command is first started.
    pub build: Option<Spanned<Vec<String>>>,
    /// A command row's environment, working directory, readiness probe
    /// and request path.
    pub env: Option<Spanned<EnvToml>>,
    pub cwd: Option<Spanned<String>>,
    pub ready: Option<Spanned<ReadyToml>>,
    pub path: Option<Spanned<String>>,
}

/// A file's `[[scenario]]` rows, its `[defaults]` and its baseline, as
/// written.
pub struct Written<'a> {
    pub defaults: &'a Settings,
    pub scenario: &'a [Settings],
    pub baseline: Option<&'a Spanned<String>>,
}

/// Where row `name` is named in the file (0 when it is not).
pub fn row_at(raw: &Written, name: &str) -> usize {
    raw.scenario
        .iter()
        .find_map(|o| o.name.as_ref().filter(|n| n.get_ref() == name))
        .map_or(0, |n| n.span().start)
}

/// A design that times its rows itself refuses the rows' `duration`,
/// `warmup` and `repetitions` (and `rate` when `rate_too`), at their line.
pub fn refuse_timing_keys(
    raw: &Written,
    rate_too: bool,
    design: &str,
    instead: &str,
    err: &Err,
) -> Result<(), ScenarioError> {
    for o in raw.scenario.iter().chain([raw.defaults]) {
        let keys = [
            ("duration", o.duration.as_ref().map(|x| x.span().start)),
            ("warmup", o.warmup.as_ref().map(|x| x.span().start)),
            (
                "repetitions",
                o.repetitions.as_ref().map(|x| x.span().start),
            ),
            (
                "rate",
                o.rate.as_ref().filter(|_| rate_too).map(|x| x.span().start),
            ),
        ];
        if let Some((key, at)) = keys.iter().find_map(|(k, a)| a.map(|a| (k, a))) {
            return Err(err(
                at,
                format!("{key} is not used by design = \"{design}\": set {instead}"),
            ));
        }
    }
    Ok(())
}
