//! Scenario files: one TOML file per table, one `[[scenario]]` per row.
//! Every error names the file and the line.

use std::path::PathBuf;
use std::time::Duration;

use app_core::workers::Workers;
use serde::Deserialize;

/// Server features both crates define.
pub use app_core::ALL_FEATURES as FEATURES;
use variants::Variant;
/// The twins, and the C library a server is built against (glibc, or a
/// static musl build).
pub use variants::{Libc, Server};

/// A scenario file problem: `file:line: message`.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    /// Server and loadgen on 127.0.0.1.
    Loopback,
    /// Server and loadgen in two network namespaces of the runner's own,
    /// joined by a veth pair.
    Netns,
}

/// Where the server's stdout (its log, with `log-stdout`) goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogSink {
    /// Discarded (`/dev/null`).
    None,
    /// A pseudo-terminal the runner drains, as a terminal emulator would.
    Terminal,
    /// A pipe into a reader that writes a file.
    Pipe,
    /// A plain file redirect.
    File,
    /// A real terminal emulator, xterm, drawing on a private Xvfb display.
    Xterm,
    /// alacritty (OpenGL, software rendering) on a private Xvfb display.
    Alacritty,
    /// The terminal of an ssh session (`ssh -tt` from this machine to
    /// `ssh_host`): an sshd pseudo-terminal there, carried back over ssh
    /// and drawn (or drained) here; see [`SshTerminal`].
    #[serde(rename = "ssh-terminal")]
    SshTerminal,
}

impl LogSink {
    /// The name the scenario file uses (`ssh-terminal`, `file`...).
    pub fn file_name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// `log = "ssh-terminal"`: where the ssh session goes, what draws its
/// output on this machine, and the link's rate when it is shaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTerminal {
    /// The `[hosts.NAME]` whose sshd gives the writer (or server) its
    /// terminal.
    pub host: String,
    pub terminal: Drawn,
    /// `link_rate`: the stand-in host's link to this machine shaped to
    /// this many bits per second (`tc qdisc tbf`).
    pub link_rate_bps: Option<u64>,
}

/// What takes an ssh terminal's output on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Drawn {
    /// A pseudo-terminal the runner drains, drawing nothing.
    Drained,
    Xterm,
    Alacritty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Request {
    Get,
    Post,
    /// POST with the binary body (u16 500 little-endian).
    Binary,
}

/// Settings of memory rows (`kind = "memory"`; see the crate README).
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    /// How long loadgen holds the connections once all are open.
    pub hold: Duration,
    /// Wait before the idle sample and, once all connections are open,
    /// before the held sample.
    pub settle: Duration,
    /// Wait after loadgen closed every connection before the last sample.
    pub after: Duration,
    /// Most time loadgen may take to open and answer every connection.
    pub setup_timeout: Duration,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            hold: Duration::from_secs(3),
            settle: Duration::from_secs(1),
            after: Duration::from_secs(2),
            setup_timeout: Duration::from_secs(60),
        }
    }
}

/// How the rows of a file are measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Design {
    /// Each row alone, repetitions in rounds (A B C, A B C).
    Sequential,
    /// Each row against the baseline, both stacks up and loaded at once.
    Paired(PairedSettings),
    /// Memory rows: the server's memory idle, with connections held, after
    /// they closed (`kind = "memory"`), repetitions in rounds.
    Memory(MemorySettings),
    /// Latency against load: each row through open-model rates up to
    /// saturation, and the highest rate that meets a latency target.
    Sweep(crate::config::sweep::SweepSettings),
    /// How fast each row's log sink takes the row's own log lines, alone.
    Sinks(crate::config::sinks::SinksSettings),
}

/// How the two stacks of a paired block are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// Both at once, sharing the core (see `paired.rs`): the narrowest
    /// intervals, but effects differ from alone (smaller or larger).
    Duet,
    /// One after the other within the block, each for settle + block.
    Alternate,
    /// Both stacks up, their loadgens taking turns (slot 1's in the first
    /// half of every `turn`, slot 2's in the second; loadgen
    /// `--active-half`): each server has its core to itself while it is
    /// measured, and both see the same machine state to within a turn. The
    /// default.
    Interleave,
}

/// How a paired file's blocks lie over the sitting (`[paired] spread`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Spread {
    /// Each comparison's blocks one after another; runs in rounds.
    #[default]
    Comparison,
    /// Rounds of one block of every comparison and run, each round in a
    /// seeded order: each comparison's blocks sample the whole sitting.
    Sitting,
}

/// Settings of the paired design (see the crate README).
#[derive(Debug, Clone, PartialEq)]
pub struct PairedSettings {
    pub schedule: Schedule,
    /// Measured length of one block (both stacks fresh, one slot order).
    pub block: Duration,
    /// Load before each block's measured part, left out.
    pub settle: Duration,
    /// Blocks per comparison, fixed before it starts (even: AB and BA
    /// alike; at least [`PairedSettings::MIN_BLOCKS`]). A comparison never
    /// stops on what its interval looks like: stopping when the interval
    /// first dips under a target makes it too narrow.
    pub blocks: u32,
    /// Independent runs of each comparison (fresh processes, a new slot
    /// order, apart in time, in rounds over the comparisons); the reported
    /// interval comes from the runs when there are several.
    pub runs: u32,
    /// Seed of the slot orders and of the spread plan (recorded, so a run
    /// can be repeated).
    pub seed: u64,
    /// How the blocks lie over the sitting.
    pub spread: Spread,
    /// The interleaved schedule's turn period: each stack is loaded alone
    /// for half of it (every row's interval is a whole number of turns).
    pub turn: Duration,
}

impl PairedSettings {
    /// Fewest blocks a comparison may plan: with 4, the block-level t
    /// interval has 3 degrees of freedom (t = 3.18).
    pub const MIN_BLOCKS: u32 = 4;

    /// Which effect a comparison on this schedule measures, for every line
    /// that prints one.
    pub fn effect(&self) -> &'static str {
        match self.schedule {
            Schedule::Duet => "duet: the servers share a core, so effects differ from alone",
            Schedule::Alternate | Schedule::Interleave => "each server alone on its core",
        }
    }

    /// The schedule as the records and listings name it: `duet`,
    /// `alternate`, `interleave (200ms turns)`.
    pub fn schedule_text(&self) -> String {
        match self.schedule {
            Schedule::Duet => "duet".into(),
            Schedule::Alternate => "alternate".into(),
            Schedule::Interleave => format!(
                "interleave ({} turns)",
                humantime::format_duration(self.turn)
            ),
        }
    }
}

impl Default for PairedSettings {
    fn default() -> Self {
        PairedSettings {
            schedule: Schedule::Interleave,
            block: Duration::from_secs(10),
            settle: Duration::from_secs(2),
            blocks: 8,
            runs: 1,
            seed: 1,
            spread: Spread::Comparison,
            turn: Duration::from_millis(200),
        }
    }
}

/// A user's nginx config template (`proxy_conf = "path"`): its path from
/// the runner's directory, as written, and the line that names it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConf {
    pub path: PathBuf,
    pub shown: String,
    pub line: usize,
}

/// The tree a twin is built from when it is not this one: a commit of
/// this repository (`rev = "v0.1.0"`, as written and its full sha; HEAD
/// when only `patch` is given), and a diff applied to it (`patch`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rev {
    /// The `rev` as written; none when only `patch` is given (the tree at
    /// HEAD: this tree, as the rows without either are).
    pub asked: Option<String>,
    pub sha: String,
    pub patch: Option<variants::rev::TreePatch>,
    /// `patch` as written.
    pub patch_shown: Option<String>,
}

impl Rev {
    /// What the variant name carries: `@` and the commit (12 digits) when
    /// `rev` names one, and `+` the diff's name and contents (12 digits of
    /// its blob id). A `patch` alone is this tree with the diff, so, as a
    /// row without either, its name does not change with each commit: its
    /// comparisons gather sittings in the history as the others do.
    pub fn tag(&self) -> String {
        let mut tag = String::new();
        if self.asked.is_some() {
            tag.push('@');
            tag.push_str(&self.sha[..12]);
        }
        if let (Some(p), Some(shown)) = (&self.patch, &self.patch_shown) {
            let stem = std::path::Path::new(shown)
                .file_stem()
                .map_or_else(|| shown.clone(), |s| s.to_string_lossy().into_owned());
            tag.push_str(&format!("+{stem}.{}", &p.blob[..12]));
        }
        tag
    }

    /// What records say of it: the full sha, and the diff with its blob id.
    pub fn recorded(&self) -> String {
        match (&self.patch, &self.patch_shown) {
            (Some(p), Some(shown)) => format!("{} + {shown} (blob {})", self.sha, p.blob),
            _ => self.sha.clone(),
        }
    }
}

/// One row, with every default applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub label: String,
    pub server: Server,
    pub features: Vec<String>,
    /// The servers' `--workers` (their default, `logical`, when none).
    pub workers: Option<Workers>,
    pub backlog: u32,
    pub topology: Topology,
    /// netem delay asked for on netns rows.
    pub link_delay: Option<Duration>,
    /// nginx config name under `nginx/` (e.g. `proxy`), the user's
    /// template as written (`proxy_conf`), or none.
    pub proxy: Option<String>,
    /// The user's own nginx config template (`proxy_conf`).
    pub proxy_conf: Option<ProxyConf>,
    /// A twin built at another commit of this repository (`rev`).
    pub rev: Option<Rev>,
    pub nginx_workers: usize,
    pub log: LogSink,
    pub log_level: String,
    pub request: Request,
    pub connections: u32,
    pub threads: u32,
    pub duration: Duration,
    pub warmup: Duration,
    pub interval: Duration,
    pub rate: Option<f64>,
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    /// `nginx_cpus`: where nginx runs when not where [`Scenario::nginx_cpus`]
    /// puts it by default.
    pub nginx_cpus_key: Option<String>,
    /// `terminal_cpus`: where a terminal emulator and its display run when
    /// not where [`Scenario::terminal_cpus`] puts them by default.
    pub terminal_cpus_key: Option<String>,
    /// `sink_cpus`: where the runner's reader of a pipe or pty sink runs
    /// when not where [`Scenario::sink_cpus`] puts it by default.
    pub sink_cpus_key: Option<String>,
    /// `sshd_cpus`: where the sshd process that serves an ssh terminal's
    /// session on the server's host runs (`log = "ssh-terminal"`); no
    /// default: it is the host's own daemon's, and where it runs is the
    /// host's unless the row says.
    pub sshd_cpus: Option<String>,
    /// `placement = "free"`: the row leaves some process to the scheduler,
    /// and says so (every table and answer line marks it).
    pub placement_free: bool,
    pub repetitions: u32,
    pub spin_ns: Option<u64>,
    /// Connection churn: a new connection every this many requests.
    pub requests_per_connection: Option<u64>,
    /// `tls = true`: loadgen and the verification speak HTTPS to the
    /// stack's front (nginx, or the twin itself), with a certificate made
    /// for the run.
    pub tls: bool,
    pub client_timeout: Option<u16>,
    pub libc: Libc,
    pub original: Option<analysis::Original>,
    /// Set for rows on remote hosts (`server_host`, `load_hosts`…).
    pub hosts: Option<crate::config::hosts::RowHosts>,
    /// Paired files: the row this one is compared with, when not the file's
    /// baseline (`against = "ntex"`: ntex behind nginx against ntex).
    pub against: Option<String>,
    /// Slow clients beside the load (`slow_clients`, `slow_every`).
    pub slow: Option<SlowClients>,
    /// Set when `log = "ssh-terminal"`.
    pub ssh_terminal: Option<SshTerminal>,
    /// xterm's jump scroll (`jump_scroll = false` is `xterm +j`: it draws
    /// every line); true, xterm's default, unless the row turns it off.
    pub jump_scroll: bool,
    /// Sinks design: the least time from one line's write to the next
    /// (`writer_gap`); none writes back to back.
    pub writer_gap: Option<std::time::Duration>,
    /// Not a file key: the sinks design's sample sets it for terminal
    /// sinks, so that the server writes (into a file) the lines it writes
    /// to a terminal, colours included (`RUST_LOG_STYLE=always`).
    pub log_style_always: bool,
    /// A command row: a server the project did not build (`server` is
    /// then only a placeholder; [`Scenario::server_name`] says `command`).
    pub command: Option<crate::config::command_row::CommandRow>,
}

/// Slow clients that run beside a paired row's load against its server
/// (loadgen `--slowloris`): `connections` request heads trickled a byte
/// every `every`, never finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowClients {
    pub connections: u32,
    pub every: Duration,
}

/// A parsed scenario file.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    pub path: PathBuf,
    /// File stem: the table's name.
    pub name: String,
    pub title: String,
    pub baseline: Option<String>,
    pub design: Design,
    pub scenarios: Vec<Scenario>,
    /// `[ssh]` and `[hosts.NAME]`, when the file has them.
    pub remote: Option<crate::config::hosts::Remote>,
}

impl Scenario {
    /// The server build this row runs: its server, features and libc.
    pub fn build_variant(&self) -> Variant {
        Variant {
            server: self.server,
            features: self.features.clone(),
            libc: self.libc,
        }
    }

    /// True when this row runs exactly what `other` runs (only the name,
    /// label, published figure and comparison differ): compared with it, it
    /// is an A/A row, which measures how finely a run resolves.
    pub fn same_setup(&self, other: &Scenario) -> bool {
        let plain = |s: &Scenario| Scenario {
            name: String::new(),
            label: String::new(),
            original: None,
            against: None,
            // Where a command is written is not what it runs.
            command: s
                .command
                .clone()
                .map(|c| crate::config::command_row::CommandRow { line: 0, ..c }),
            ..s.clone()
        };
        plain(self) == plain(other)
    }

    /// `actix-server+global-counter+keepalive-os`: one build per distinct
    /// value; a command row's command line (`command: ./srv --port {port}`).
    pub fn variant(&self) -> String {
        match (&self.command, &self.rev) {
            (Some(c), _) => format!("command: {}", c.shown()),
            (None, Some(r)) => format!("{}{}", self.build_variant().name(), r.tag()),
            (None, None) => self.build_variant().name(),
        }
    }

    /// `actix`, `ntex`, or `command` for a command row.
    pub fn server_name(&self) -> String {
        match &self.command {
            Some(_) => "command".into(),
            None => format!("{:?}", self.server).to_lowercase(),
        }
    }

    /// Whether the twins' own checks apply (the counter's conformance,
    /// acknowledged POSTs equal to the count): not for a command row.
    pub fn is_twin(&self) -> bool {
        self.command.is_none()
    }

    /// What a command row's records say of it: its command, the twins'
    /// checks it skips and how its CPU is read; nothing for a twin.
    pub fn command_facts(&self) -> analysis::placement::CommandFacts {
        let Some(c) = &self.command else {
            return Default::default();
        };
        analysis::placement::CommandFacts {
            command: Some(c.shown()),
            twin_checks: Some(
                "skipped: a command row (the counter's conformance and acknowledged POSTs \
                 against the server's count are the twins' checks; it must only answer \
                 its readiness probe)"
                    .into(),
            ),
            cpu_accounting: Some(crate::place::cgroup::accounting()),
        }
    }

    /// The CPUs nginx is pinned to: `nginx_cpus` when the row sets it,
    /// else the server's when nginx runs on the server's host (so the
    /// server side pays for its proxy, and the static ceiling row answers
    /// in the server's place); none when nginx has a host of its own.
    pub fn nginx_cpus(&self) -> Option<String> {
        if self.nginx_cpus_key.is_some() {
            return self.nginx_cpus_key.clone();
        }
        self.proxy.as_ref()?;
        let own_host = self
            .hosts
            .as_ref()
            .and_then(|h| h.proxy.as_ref().filter(|p| **p != h.server));
        match own_host {
            None => self.server_cpus.clone(),
            Some(_) => None,
        }
    }

    /// The CPUs a row's terminal emulator (and its Xvfb display) is
    /// pinned to: `terminal_cpus` when the row sets it, else the server's
    /// when the emulator draws the server's stdout where the server runs
    /// (`log = "xterm"` or `"alacritty"`, here or on the server's host: the
    /// server side pays for its terminal, as for its proxy); none when the
    /// row draws nothing, or draws an ssh session here from a server
    /// elsewhere (`log = "ssh-terminal"`).
    pub fn terminal_cpus(&self) -> Option<String> {
        if self.terminal_cpus_key.is_some() {
            return self.terminal_cpus_key.clone();
        }
        match self.log {
            LogSink::Xterm | LogSink::Alacritty => self.server_cpus.clone(),
            _ => None,
        }
    }

    /// The CPUs the reader of the row's sink runs on: the runner's thread
    /// that drains a pipe or a pty here, `cat` draining a pipe or
    /// `script` a pty on a remote server host, or, for an ssh terminal
    /// drained here, the ssh client here with the runner's thread reading
    /// it. `sink_cpus` when the row sets it, else the server's for a pipe
    /// or a pty (here or on the server's host: the server side pays for
    /// draining its output, as for its terminal and its proxy); none for
    /// an ssh terminal drained here (this machine stands for the
    /// operator's, which has no CPU of the server's to default to: the
    /// row says, or the reader is unpinned).
    pub fn sink_cpus(&self) -> Option<String> {
        if self.sink_cpus_key.is_some() {
            return self.sink_cpus_key.clone();
        }
        match self.log {
            LogSink::Pipe | LogSink::Terminal => self.server_cpus.clone(),
            _ => None,
        }
    }

    /// Whether the row's sink has a reader (see [`Scenario::sink_cpus`]).
    fn has_reader(&self) -> bool {
        match self.log {
            LogSink::Pipe | LogSink::Terminal => true,
            LogSink::SshTerminal => self
                .ssh_terminal
                .as_ref()
                .is_some_and(|t| t.terminal == Drawn::Drained),
            _ => false,
        }
    }

    /// Whether an emulator draws the row's output (xterm or alacritty,
    /// here or on the server's host, or an ssh session drawn here).
    fn draws(&self) -> bool {
        match self.log {
            LogSink::Xterm | LogSink::Alacritty => true,
            LogSink::SshTerminal => self
                .ssh_terminal
                .as_ref()
                .is_some_and(|t| t.terminal != Drawn::Drained),
            _ => false,
        }
    }

    /// The load as a comparison's identity names it: `post, 256
    /// connections, 1 thread, loopback` (a rate when the row has one).
    pub fn load_text(&self) -> String {
        let text = load_text(
            &format!("{:?}", self.request).to_lowercase(),
            self.connections,
            self.threads,
            &format!("{:?}", self.topology).to_lowercase(),
            self.rate,
        );
        let text = match self.requests_per_connection {
            Some(n) => format!("{text}, a new connection every {n} requests"),
            None => text,
        };
        if self.tls {
            format!("{text}, over TLS")
        } else {
            text
        }
    }

    /// The row's processes that run where the scheduler puts them
    /// (`server`, `nginx`, `loadgen`): none on a fully placed row.
    pub fn unpinned(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.server_cpus.is_none() {
            out.push("server");
        }
        if self.proxy.is_some() && self.nginx_cpus().is_none() {
            out.push("nginx");
        }
        if self.loadgen_cpus.is_none() {
            out.push("loadgen");
        }
        if self.draws() && self.terminal_cpus().is_none() {
            out.push("terminal");
        }
        if self.has_reader() && self.sink_cpus().is_none() {
            out.push("sink reader");
        }
        if self.log == LogSink::SshTerminal && self.sshd_cpus.is_none() {
            out.push("sshd");
        }
        out
    }
}

/// [`Scenario::load_text`] from its parts (the history reads them from a
/// past run's scenario file too).
pub fn load_text(
    request: &str,
    connections: u32,
    threads: u32,
    topology: &str,
    rate: Option<f64>,
) -> String {
    let plural = |n: u32, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let mut out = format!(
        "{request}, {}, {}, {topology}",
        plural(connections, "connection"),
        plural(threads, "thread")
    );
    if let Some(r) = rate {
        out += &format!(", {r}/s");
    }
    out
}

#[cfg(test)]
mod rev_tests {
    use super::Rev;

    #[test]
    fn a_revs_tag_names_the_commit_only_when_rev_names_one() {
        let sha = "079850cb0746b63bd4ea2db1b1fe12b7ca11600b".to_string();
        let patch = Some(variants::rev::TreePatch {
            path: "/w/patches/x.diff".into(),
            blob: "2d922fe24e1d0000000000000000000000000000".into(),
        });
        let rev = |asked: Option<&str>, patch: Option<variants::rev::TreePatch>| Rev {
            asked: asked.map(String::from),
            sha: sha.clone(),
            patch_shown: patch.as_ref().map(|_| "patches/x.diff".to_string()),
            patch,
        };
        assert_eq!(rev(Some("v0.1.0"), None).tag(), "@079850cb0746");
        assert_eq!(rev(None, patch.clone()).tag(), "+x.2d922fe24e1d");
        assert_eq!(
            rev(Some("v0.1.0"), patch).tag(),
            "@079850cb0746+x.2d922fe24e1d"
        );
    }
}
