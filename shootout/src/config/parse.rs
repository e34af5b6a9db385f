//! Parsing a scenario file: `[defaults]`, `[[scenario]]` rows, the design
//! tables (`[paired]`, `[memory]`) and the hosts, with every default
//! applied and every error naming the file and the line.

use std::path::Path;
use std::time::Duration;

use app_core::workers::Workers;
use serde::Deserialize;
use toml::Spanned;

use crate::config::hosts::{Remote, RowHosts};
use crate::config::scenario::{
    Design, Libc, LogSink, MemorySettings, PairedSettings, Request, Scenario, ScenarioError,
    ScenarioFile, Schedule, Server, SlowClients, Topology, FEATURES,
};

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
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    /// nginx's CPUs; the server's (on its host) when absent.
    pub nginx_cpus: Option<String>,
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
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    title: Option<String>,
    baseline: Option<Spanned<String>>,
    design: Option<Spanned<String>>,
    /// `"memory"` for memory rows; throughput when absent.
    kind: Option<Spanned<String>>,
    paired: Option<Spanned<RawPaired>>,
    memory: Option<Spanned<RawMemory>>,
    sweep: Option<Spanned<crate::config::sweep::RawSweep>>,
    sinks: Option<Spanned<crate::config::sinks::RawSinks>>,
    #[serde(default)]
    defaults: Settings,
    #[serde(default)]
    scenario: Vec<Settings>,
    /// Remote hosts: accepted here, read by `crate::config::hosts`.
    #[serde(rename = "ssh")]
    _ssh: Option<toml::Value>,
    #[serde(rename = "hosts")]
    _hosts: Option<toml::Value>,
}

/// The `[paired]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPaired {
    schedule: Option<Schedule>,
    block: Option<String>,
    settle: Option<String>,
    blocks: Option<u32>,
    runs: Option<i64>,
    seed: Option<u64>,
    turn: Option<String>,
    // Gone: refused with the reason (see `paired_settings`).
    budget: Option<toml::Value>,
    target_ci_pct: Option<toml::Value>,
    min_blocks: Option<toml::Value>,
}

/// The `[memory]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    hold: Option<String>,
    settle: Option<String>,
    after: Option<String>,
    setup_timeout: Option<String>,
}

/// Reads and checks a scenario file.
pub fn load(path: &Path) -> Result<ScenarioFile, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: path.to_owned(),
        line: 0,
        message: format!("cannot read: {e}"),
    })?;
    parse(path, &text)
}
/// How errors are made: `err(offset, message)` names the file and line.
type Err<'a> = dyn Fn(usize, String) -> ScenarioError + 'a;

/// Parses scenario text (`path` is used in messages and for the table name).
pub fn parse(path: &Path, text: &str) -> Result<ScenarioFile, ScenarioError> {
    let err = |offset: usize, message: String| ScenarioError {
        file: path.to_owned(),
        line: line_of(text, offset),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        err(offset, e.message().to_string())
    })?;
    let remote = crate::config::hosts::parse_spanned(path, text).map_err(|(at, m)| err(at, m))?;
    if raw.scenario.is_empty() {
        return Err(err(0, "no [[scenario]]".into()));
    }
    check_defaults(&raw.defaults, &err)?;
    check_ranges(&raw.defaults, &err)?;
    for o in &raw.scenario {
        check_ranges(o, &err)?;
    }
    let mut scenarios = Vec::new();
    for (index, o) in raw.scenario.iter().enumerate() {
        let s = row(index, o, &raw.defaults, remote.as_ref(), &scenarios, &err)?;
        scenarios.push(s);
    }
    if let Some(b) = &raw.baseline {
        if !scenarios.iter().any(|s| &s.name == b.get_ref()) {
            return Err(err(
                b.span().start,
                format!("baseline {:?} is not a scenario name", b.get_ref()),
            ));
        }
    }
    let design = design(&raw, &scenarios, &err)?;
    if matches!(design, Design::Paired(_)) {
        check_pinned(&raw, &scenarios, &err)?;
    }
    let name = path
        .file_stem()
        .map_or("scenarios".into(), |s| s.to_string_lossy().into_owned());
    Ok(ScenarioFile {
        path: path.to_owned(),
        title: raw.title.unwrap_or_else(|| name.clone()),
        name,
        baseline: raw.baseline.map(Spanned::into_inner),
        design,
        scenarios,
        remote,
    })
}

/// A row's own value of a key, else `[defaults]`'s.
fn pick<T: Copy>(own: &Option<Spanned<T>>, def: &Option<Spanned<T>>) -> Option<T> {
    own.as_ref().or(def.as_ref()).map(|v| *v.get_ref())
}

/// Every count and rate in range, at the line that sets it, before
/// anything is built or started. (`backlog` is left to the servers, which
/// refuse 0 at start in their own words: the terminal-row test relies on
/// a row that fails there.)
fn check_ranges(s: &Settings, err: &Err) -> Result<(), ScenarioError> {
    let counts = [
        (
            "connections",
            s.connections
                .as_ref()
                .map(|v| (v.span().start, u64::from(*v.get_ref()))),
        ),
        (
            "threads",
            s.threads
                .as_ref()
                .map(|v| (v.span().start, u64::from(*v.get_ref()))),
        ),
        (
            "nginx_workers",
            s.nginx_workers
                .as_ref()
                .map(|v| (v.span().start, *v.get_ref() as u64)),
        ),
        (
            "repetitions",
            s.repetitions
                .as_ref()
                .map(|v| (v.span().start, u64::from(*v.get_ref()))),
        ),
        (
            "slow_clients",
            s.slow_clients
                .as_ref()
                .map(|v| (v.span().start, u64::from(*v.get_ref()))),
        ),
    ];
    for (key, value) in counts {
        if let Some((at, 0)) = value {
            return Err(err(at, format!("{key} must be at least 1, not 0")));
        }
    }
    if let Some(r) = &s.rate {
        let v = *r.get_ref();
        if !(v.is_finite() && v > 0.0) {
            return Err(err(
                r.span().start,
                format!("rate must be a number of requests per second above 0, not {v}"),
            ));
        }
    }
    Ok(())
}

/// `[defaults]` may not set what belongs to one row.
fn check_defaults(d: &Settings, err: &Err) -> Result<(), ScenarioError> {
    if let Some(n) = &d.name {
        return Err(err(
            n.span().start,
            "[defaults] cannot set a scenario's name".into(),
        ));
    }
    if let Some(n) = &d.server {
        return Err(err(
            n.span().start,
            "[defaults] cannot set the server: each scenario names its own".into(),
        ));
    }
    if let Some(n) = &d.original {
        return Err(err(
            n.span().start,
            "[defaults] cannot set a published figure: it belongs to one scenario".into(),
        ));
    }
    if let Some(n) = &d.against {
        return Err(err(
            n.span().start,
            "[defaults] cannot set against: each row names the row it is compared with".into(),
        ));
    }
    Ok(())
}

/// Row `index` of the file (`o`) with `[defaults]` (`d`) applied and every
/// rule checked; `earlier` are the rows before it.
fn row(
    index: usize,
    o: &Settings,
    d: &Settings,
    remote: Option<&Remote>,
    earlier: &[Scenario],
    err: &Err,
) -> Result<Scenario, ScenarioError> {
    let (name, at, server) = name_and_server(index, o, earlier, err)?;
    let features = features(o, d, server, err)?;
    let duration = |own: &Option<Spanned<String>>,
                    def: &Option<Spanned<String>>,
                    fallback: &str,
                    zero_ok: bool| {
        pick_duration(own.as_ref().or(def.as_ref()), fallback, zero_ok, err)
    };
    let request = o.request.or(d.request).unwrap_or(Request::Post);
    let proxy = o
        .proxy
        .clone()
        .or_else(|| d.proxy.clone())
        .filter(|p| p != "none");
    let spin_ns = o.spin_ns.or(d.spin_ns);
    let log = o.log.or(d.log).unwrap_or(LogSink::None);
    let topology = o.topology.or(d.topology).unwrap_or(Topology::Loopback);
    let hosts = remote_hosts(o, d, remote, proxy.is_some(), at, err)?;
    if hosts.is_some() && topology != Topology::Loopback {
        return Err(err(
            at,
            "a row on remote hosts has no topology: its hosts are the placement".into(),
        ));
    }
    let ssh_terminal = ssh_terminal_of(o, d, log, remote, hosts.as_ref(), at, err)?;
    let jump_scroll = jump_scroll(o, d, log, ssh_terminal.as_ref(), err)?;
    let writer_gap = match o.writer_gap.as_ref().or(d.writer_gap.as_ref()) {
        None => None,
        Some(sp) => Some(pick_duration(Some(sp), "0s", false, err)?),
    };
    let client_timeout = o.client_timeout.or(d.client_timeout);
    let needs = [
        (
            request == Request::Binary,
            "binary-payload",
            "request = \"binary\" needs the binary-payload feature",
        ),
        (
            spin_ns.is_some(),
            "calibrate",
            "spin_ns needs the calibrate feature",
        ),
        (
            client_timeout == Some(0),
            "keepalive-os",
            "client_timeout = 0 needs the keepalive-os feature (the servers refuse it otherwise)",
        ),
    ];
    for (set, feature, why) in needs {
        if set && !features.iter().any(|f| f == feature) {
            return Err(err(at, why.into()));
        }
    }
    Ok(Scenario {
        label: o.label.clone().unwrap_or_else(|| name.clone()),
        name,
        server,
        features,
        workers: workers(o.workers.as_ref().or(d.workers.as_ref()), err)?,
        backlog: pick(&o.backlog, &d.backlog).unwrap_or(1024),
        topology,
        link_delay: link_delay(o.link_delay.as_ref().or(d.link_delay.as_ref()), err)?,
        proxy,
        nginx_workers: pick(&o.nginx_workers, &d.nginx_workers).unwrap_or(1),
        log,
        log_level: o
            .log_level
            .clone()
            .or_else(|| d.log_level.clone())
            .unwrap_or_else(|| "info".into()),
        request,
        connections: pick(&o.connections, &d.connections).unwrap_or(64),
        threads: pick(&o.threads, &d.threads).unwrap_or(1),
        duration: duration(&o.duration, &d.duration, "10s", false)?,
        warmup: duration(&o.warmup, &d.warmup, "3s", true)?,
        interval: duration(&o.interval, &d.interval, "1s", false)?,
        rate: pick(&o.rate, &d.rate),
        server_cpus: o.server_cpus.clone().or_else(|| d.server_cpus.clone()),
        loadgen_cpus: o.loadgen_cpus.clone().or_else(|| d.loadgen_cpus.clone()),
        nginx_cpus_key: o.nginx_cpus.clone().or_else(|| d.nginx_cpus.clone()),
        placement_free: placement_free(o, d, err)?,
        repetitions: o
            .repetitions
            .as_ref()
            .or(d.repetitions.as_ref())
            .map_or(1, |r| *r.get_ref()),
        spin_ns,
        client_timeout,
        hosts,
        libc: match o.libc.or(d.libc) {
            None | Some(LibcToml::Glibc) => Libc::Glibc,
            Some(LibcToml::Musl) => Libc::Musl,
        },
        original: match &o.original {
            Some(sp) => Some(original(sp, err)?),
            None => None,
        },
        against: o.against.as_ref().map(|a| a.get_ref().clone()),
        slow: slow_clients(o, d, err)?,
        ssh_terminal,
        jump_scroll,
        writer_gap,
        log_style_always: false,
    })
}

/// `placement = "free"` (true) or `"pinned"` (false, the default); CPU
/// lists are checked where they are set.
fn placement_free(o: &Settings, d: &Settings, err: &Err) -> Result<bool, ScenarioError> {
    let at = o.name.as_ref().map_or(0, |n| n.span().start);
    for list in [
        &o.server_cpus,
        &o.loadgen_cpus,
        &o.nginx_cpus,
        &d.server_cpus,
        &d.loadgen_cpus,
        &d.nginx_cpus,
    ]
    .into_iter()
    .flatten()
    {
        crate::place::affinity::parse_list(list).map_err(|e| err(at, format!("{e:#}")))?;
    }
    match o.placement.as_ref().or(d.placement.as_ref()) {
        None => Ok(false),
        Some(p) => match p.get_ref().as_str() {
            "free" => Ok(true),
            "pinned" => Ok(false),
            other => Err(err(
                p.span().start,
                format!("placement {other:?}: use \"pinned\" (the default) or \"free\""),
            )),
        },
    }
}

/// `jump_scroll = false`: only where xterm draws the row's stdout (a
/// `[defaults]` key is taken by the file's xterm rows and ignored by the
/// others; a row's own key on another sink is refused).
fn jump_scroll(
    o: &Settings,
    d: &Settings,
    log: LogSink,
    ssh: Option<&crate::config::scenario::SshTerminal>,
    err: &Err,
) -> Result<bool, ScenarioError> {
    let xterm = log == LogSink::Xterm
        || ssh.is_some_and(|t| t.terminal == crate::config::scenario::Drawn::Xterm);
    match (&o.jump_scroll, &d.jump_scroll) {
        (Some(own), _) if !xterm => Err(err(
            own.span().start,
            "jump_scroll is xterm's: it needs log = \"xterm\", or log = \"ssh-terminal\" with terminal = \"xterm\"".into(),
        )),
        (Some(v), _) | (None, Some(v)) if xterm => Ok(*v.get_ref()),
        _ => Ok(true),
    }
}

/// `slow_clients = N` and `slow_every = "1s"` (row or `[defaults]`).
fn slow_clients(
    o: &Settings,
    d: &Settings,
    err: &Err,
) -> Result<Option<SlowClients>, ScenarioError> {
    let every = o.slow_every.as_ref().or(d.slow_every.as_ref());
    let Some(connections) = pick(&o.slow_clients, &d.slow_clients) else {
        if let Some(e) = every {
            return Err(err(
                e.span().start,
                "slow_every needs slow_clients (how many slow clients)".into(),
            ));
        }
        return Ok(None);
    };
    let every = match every {
        None => Duration::from_secs(1),
        Some(e) => match humantime::parse_duration(e.get_ref()) {
            Ok(v) if !v.is_zero() => v,
            Ok(_) => {
                return Err(err(
                    e.span().start,
                    "slow_every must be more than zero".into(),
                ))
            }
            Err(x) => {
                return Err(err(
                    e.span().start,
                    format!("slow_every {:?}: {x} (examples: 500ms, 1s)", e.get_ref()),
                ))
            }
        },
    };
    Ok(Some(SlowClients { connections, every }))
}

/// `workers = N` or `"logical"`/`"physical"`, as the servers' `--workers`.
fn workers(
    set: Option<&Spanned<WorkersToml>>,
    err: &Err,
) -> Result<Option<Workers>, ScenarioError> {
    let Some(sp) = set else { return Ok(None) };
    let text = match sp.get_ref() {
        WorkersToml::Count(n) => n.to_string(),
        WorkersToml::Rule(r) => r.clone(),
    };
    text.parse::<Workers>()
        .map(Some)
        .map_err(|e| err(sp.span().start, format!("bad workers: {e}")))
}

/// `link_delay = "1ms"` (netns rows).
fn link_delay(set: Option<&Spanned<String>>, err: &Err) -> Result<Option<Duration>, ScenarioError> {
    let Some(sp) = set else { return Ok(None) };
    humantime::parse_duration(sp.get_ref())
        .map(Some)
        .map_err(|e| {
            err(
                sp.span().start,
                format!("bad link_delay {:?}: {e}", sp.get_ref()),
            )
        })
}

/// A published figure, checked.
fn original(
    sp: &Spanned<analysis::Original>,
    err: &Err,
) -> Result<analysis::Original, ScenarioError> {
    match sp.get_ref().problem() {
        Some(why) => Err(err(sp.span().start, why.into())),
        None => Ok(*sp.get_ref()),
    }
}

/// The remote hosts a row names (`server_host`, `proxy_host`,
/// `load_hosts`), checked against the file's hosts; `None` for a local row.
fn remote_hosts(
    o: &Settings,
    d: &Settings,
    remote: Option<&Remote>,
    has_proxy: bool,
    at: usize,
    err: &Err,
) -> Result<Option<RowHosts>, ScenarioError> {
    crate::config::hosts::row_hosts(
        remote,
        o.server_host.as_ref().or(d.server_host.as_ref()),
        o.proxy_host.as_ref().or(d.proxy_host.as_ref()),
        o.load_hosts.as_ref().or(d.load_hosts.as_ref()),
        has_proxy,
    )
    .map_err(|(a, m)| err(a.unwrap_or(at), m))
}

/// Row `index`'s name (letters, digits, - and _; not used by an `earlier`
/// row), where it stands, and its server.
fn name_and_server(
    index: usize,
    o: &Settings,
    earlier: &[Scenario],
    err: &Err,
) -> Result<(String, usize, Server), ScenarioError> {
    let Some(name_sp) = &o.name else {
        return Err(err(0, format!("scenario {} has no name", index + 1)));
    };
    let name = name_sp.get_ref().clone();
    let at = name_sp.span().start;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(err(
            at,
            format!("scenario name {name:?}: use letters, digits, - and _"),
        ));
    }
    if earlier.iter().any(|x| x.name == name) {
        return Err(err(at, format!("scenario name {name:?} is used twice")));
    }
    let Some(server_sp) = &o.server else {
        return Err(err(at, format!("scenario {name:?} has no server")));
    };
    let Some(server) = Server::from_name(server_sp.get_ref()) else {
        return Err(err(
            server_sp.span().start,
            format!(
                "unknown server {:?}: use \"actix\" or \"ntex\"",
                server_sp.get_ref()
            ),
        ));
    };
    Ok((name, at, server))
}

/// A row's features: known, one runtime, one log sink, in the order of
/// [`FEATURES`] (so equal sets make equal variants).
fn features(
    o: &Settings,
    d: &Settings,
    server: Server,
    err: &Err,
) -> Result<Vec<String>, ScenarioError> {
    let empty = Spanned::new(0..0, Vec::new());
    let feature_list = o
        .features
        .as_ref()
        .or(d.features.as_ref())
        .unwrap_or(&empty);
    let mut features = Vec::new();
    for f in feature_list.get_ref() {
        if !FEATURES.contains(&f.get_ref().as_str()) {
            return Err(err(
                f.span().start,
                format!(
                    "unknown feature {:?}: one of {}",
                    f.get_ref(),
                    FEATURES.join(", ")
                ),
            ));
        }
        features.push(f.get_ref().clone());
    }
    let runtimes: Vec<&String> = features.iter().filter(|f| f.starts_with("rt-")).collect();
    if runtimes.len() > 1 {
        return Err(err(
            feature_list.span().start,
            format!("features {runtimes:?}: one runtime per row"),
        ));
    }
    if server == Server::Actix
        && runtimes
            .iter()
            .any(|r| app_core::runtime::REPLACES_DEFAULT.contains(&r.as_str()))
    {
        return Err(err(
            feature_list.span().start,
            "actix-web runs on tokio only: rt-neon, rt-uring and rt-compio are ntex's runtimes"
                .into(),
        ));
    }
    if features.iter().any(|f| f == "log-stdout") && features.iter().any(|f| f == "log-file") {
        return Err(err(
            feature_list.span().start,
            "features log-stdout and log-file cannot go together".into(),
        ));
    }
    // Keep the order of FEATURES, so equal sets make equal variants.
    features.sort_by_key(|f| FEATURES.iter().position(|k| k == f));
    features.dedup();
    Ok(features)
}

/// A duration setting: `fallback` when unset; zero only where `zero_ok`.
fn pick_duration(
    set: Option<&Spanned<String>>,
    fallback: &str,
    zero_ok: bool,
    err: &Err,
) -> Result<Duration, ScenarioError> {
    let Some(sp) = set else {
        return Ok(humantime::parse_duration(fallback).expect("valid default"));
    };
    let d = humantime::parse_duration(sp.get_ref()).map_err(|e| {
        err(
            sp.span().start,
            format!("bad duration {:?}: {e}", sp.get_ref()),
        )
    })?;
    if d.is_zero() && !zero_ok {
        return Err(err(
            sp.span().start,
            "duration must be more than zero".into(),
        ));
    }
    Ok(d)
}

/// Paired files: every `against` names another row, and the baseline, which
/// every other row is compared with by default, is compared with nothing.
fn check_against(raw: &RawFile, err: &Err) -> Result<(), ScenarioError> {
    let names: Vec<&str> = raw
        .scenario
        .iter()
        .filter_map(|o| o.name.as_ref().map(|n| n.get_ref().as_str()))
        .collect();
    let baseline = raw.baseline.as_ref().map(|b| b.get_ref().as_str());
    for o in &raw.scenario {
        let (Some(a), Some(name)) = (&o.against, &o.name) else {
            continue;
        };
        let (a, at, name) = (
            a.get_ref().as_str(),
            a.span().start,
            name.get_ref().as_str(),
        );
        let problem = if !names.contains(&a) {
            format!("against {a:?} is not a scenario name")
        } else if a == name {
            format!("scenario {name:?} is against itself: an A/A row is a second row with the same settings")
        } else if Some(name) == baseline {
            format!("{name:?} is the baseline: it is compared with nothing, so it takes no against")
        } else {
            continue;
        };
        return Err(err(at, problem));
    }
    Ok(())
}

/// The file's design (`design`, `kind` and their tables), checked against
/// its rows.
fn design(raw: &RawFile, scenarios: &[Scenario], err: &Err) -> Result<Design, ScenarioError> {
    let design = match raw
        .design
        .as_ref()
        .map(|d| (d.get_ref().as_str(), d.span()))
    {
        None | Some(("sequential", _)) => Design::Sequential,
        Some(("paired", span)) => {
            if raw.baseline.is_none() {
                return Err(err(
                    span.start,
                    "design = \"paired\" needs a baseline: every row is compared with it".into(),
                ));
            }
            // Blocks, not repetitions or per-row durations, time a paired run.
            refuse_timing_keys(
                raw,
                false,
                "paired",
                "block, settle and blocks in [paired]",
                err,
            )?;
            check_against(raw, err)?;
            Design::Paired(paired_settings(raw.paired.as_ref(), err)?)
        }
        Some(("sweep", span)) => Design::Sweep(sweep_design(raw, scenarios, span.start, err)?),
        Some(("sinks", _)) => Design::Sinks(sinks_design(raw, scenarios, err)?),
        Some((other, span)) => {
            return Err(err(
                span.start,
                format!(
                "unknown design {other:?}: use \"sequential\", \"paired\", \"sweep\" or \"sinks\""
            ),
            ))
        }
    };
    check_design_tables(raw, &design, err)?;
    writer_gap_only_in_sinks(raw, &design, err)?;
    ssh_terminal_only_in_sinks(raw, &design, scenarios, err)?;
    if !matches!(design, Design::Paired(_)) {
        if let Some(a) = raw.scenario.iter().find_map(|o| o.against.as_ref()) {
            return Err(err(
                a.span().start,
                "against is for design = \"paired\" (a row compared with another)".into(),
            ));
        }
        let slow = std::iter::once(&raw.defaults)
            .chain(&raw.scenario)
            .find_map(|o| o.slow_clients.as_ref());
        if let Some(s) = slow {
            return Err(err(
                s.span().start,
                "slow_clients is for design = \"paired\" (the row with slow clients against the same row without)".into(),
            ));
        }
    }
    if let (Design::Sequential, Some(p)) = (&design, &raw.paired) {
        return Err(err(
            p.span().start,
            "[paired] needs design = \"paired\"".into(),
        ));
    }
    if raw.kind.as_ref().is_some_and(|k| k.get_ref() == "memory") {
        if let Some(s) = scenarios.iter().find(|s| s.hosts.is_some()) {
            return Err(err(
                0,
                format!(
                    "row {:?} is on remote hosts: the memory design reads the server's memory on this machine only",
                    s.name
                ),
            ));
        }
    }
    if matches!(design, Design::Paired(_)) {
        let several = |s: &&Scenario| s.hosts.as_ref().is_some_and(|h| h.load.len() > 1);
        if let Some(s) = scenarios.iter().find(several) {
            return Err(err(
                0,
                format!(
                    "row {:?}: in the paired design a row on remote hosts has one load host",
                    s.name
                ),
            ));
        }
    }
    if let Design::Paired(p) = &design {
        check_interleave(raw, scenarios, p, err)?;
    }
    let design = match raw.kind.as_ref().map(|k| (k.get_ref().as_str(), k.span())) {
        None | Some(("throughput", _)) => {
            if let Some(m) = &raw.memory {
                return Err(err(
                    m.span().start,
                    "[memory] needs kind = \"memory\"".into(),
                ));
            }
            design
        }
        Some(("memory", span)) => {
            if let Some(d) = &raw.design {
                return Err(err(
                    d.span().start,
                    "design is for throughput rows; memory rows run one at a time".into(),
                ));
            }
            check_memory_rows(raw, scenarios, err)?;
            let _ = span;
            Design::Memory(memory_settings(raw.memory.as_ref(), err)?)
        }
        Some((other, span)) => {
            return Err(err(
                span.start,
                format!("unknown kind {other:?}: use \"throughput\" or \"memory\""),
            ))
        }
    };
    Ok(design)
}

/// A design that times its rows itself refuses the rows' `duration`,
/// `warmup` and `repetitions` (and `rate` when `rate_too`), at their line.
fn refuse_timing_keys(
    raw: &RawFile,
    rate_too: bool,
    design: &str,
    instead: &str,
    err: &Err,
) -> Result<(), ScenarioError> {
    for o in raw.scenario.iter().chain([&raw.defaults]) {
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

/// The sweep design of `raw` (its rows checked, its `[sweep]` read).
fn sweep_design(
    raw: &RawFile,
    scenarios: &[Scenario],
    at: usize,
    err: &Err,
) -> Result<crate::config::sweep::SweepSettings, ScenarioError> {
    check_sweep_rows(raw, scenarios, err)?;
    let settings =
        crate::config::sweep::settings(raw.sweep.as_ref(), at).map_err(|(at, m)| err(at, m))?;
    if let Some((names, at)) = raw.sweep.as_ref().and_then(|s| s.get_ref().compare()) {
        if let Some(bad) = names
            .iter()
            .find(|n| !scenarios.iter().any(|s| &s.name == *n))
        {
            return Err(err(
                at,
                format!("[sweep] compare names {bad:?}, which is no row of this file"),
            ));
        }
        let baseline = raw
            .baseline
            .as_ref()
            .map_or(scenarios[0].name.as_str(), |b| b.get_ref());
        if names.iter().any(|n| n == baseline) {
            return Err(err(at, format!("[sweep] compare names the baseline {baseline:?}: it is what the others are compared with")));
        }
    }
    Ok(settings)
}

/// The row's ssh terminal (`log = "ssh-terminal"`), checked against its
/// hosts: a served ssh terminal's server runs on its ssh host. (A remote
/// row takes every sink; all but the ssh terminal are on the server's
/// host.)
fn ssh_terminal_of(
    o: &Settings,
    d: &Settings,
    log: LogSink,
    remote: Option<&Remote>,
    hosts: Option<&RowHosts>,
    at: usize,
    err: &Err,
) -> Result<Option<crate::config::scenario::SshTerminal>, ScenarioError> {
    // `[defaults]` may set the ssh keys for the file's ssh-terminal rows;
    // a row that logs elsewhere is refused only for keys it sets itself.
    let inherit = log == LogSink::SshTerminal;
    let keys = crate::config::ssh_terminal::Keys {
        ssh_host: inherited(&o.ssh_host, &d.ssh_host, inherit),
        terminal: inherited(&o.terminal, &d.terminal, inherit),
        link_rate: inherited(&o.link_rate, &d.link_rate, inherit),
    };
    let ssh_terminal =
        crate::config::ssh_terminal::check(log, keys, remote, at).map_err(|(a, m)| err(a, m))?;
    if let (Some(h), Some(t)) = (hosts, &ssh_terminal) {
        if h.server != t.host {
            return Err(err(
                at,
                format!(
                    "log = \"ssh-terminal\" serves from its ssh_host: set server_host = {:?} (it is {:?})",
                    t.host, h.server
                ),
            ));
        }
    }
    Ok(ssh_terminal)
}

/// A row's own key, else (when `inherit`) the default's.
fn inherited<'a>(
    own: &'a Option<Spanned<String>>,
    def: &'a Option<Spanned<String>>,
    inherit: bool,
) -> Option<&'a Spanned<String>> {
    own.as_ref().or(def.as_ref().filter(|_| inherit))
}

/// `log = "ssh-terminal"` rows: the sinks design measures the terminal
/// alone; every other design serves the row, so its server runs on the
/// ssh host (`server_host`, the same host as `ssh_host`).
fn ssh_terminal_only_in_sinks(
    raw: &RawFile,
    design: &Design,
    scenarios: &[Scenario],
    err: &Err,
) -> Result<(), ScenarioError> {
    match scenarios
        .iter()
        .find(|s| s.ssh_terminal.is_some() && s.hosts.is_none())
    {
        Some(s) if !matches!(design, Design::Sinks(_)) => Err(err(
            row_at(raw, &s.name),
            format!(
                "row {:?}: a served log = \"ssh-terminal\" row runs its server on the ssh host: set server_host = {:?}",
                s.name,
                s.ssh_terminal.as_ref().map_or("", |t| t.host.as_str())
            ),
        )),
        _ => Ok(()),
    }
}

/// `writer_gap` paces the sinks design's writer; a served row's server
/// writes as its requests come.
fn writer_gap_only_in_sinks(
    raw: &RawFile,
    design: &Design,
    err: &Err,
) -> Result<(), ScenarioError> {
    if matches!(design, Design::Sinks(_)) {
        return Ok(());
    }
    let set = raw
        .scenario
        .iter()
        .chain([&raw.defaults])
        .find_map(|o| o.writer_gap.as_ref());
    match set {
        Some(sp) => Err(err(
            sp.span().start,
            "writer_gap paces the writer of design = \"sinks\"; a served row's server writes as its requests come".into(),
        )),
        None => Ok(()),
    }
}

/// A design's own table (`[sweep]`, `[sinks]`) only with that design.
fn check_design_tables(raw: &RawFile, design: &Design, err: &Err) -> Result<(), ScenarioError> {
    let tables = [
        (
            "sweep",
            raw.sweep.as_ref().map(|t| t.span().start),
            matches!(design, Design::Sweep(_)),
        ),
        (
            "sinks",
            raw.sinks.as_ref().map(|t| t.span().start),
            matches!(design, Design::Sinks(_)),
        ),
    ];
    for (name, at, ok) in tables {
        if let (false, Some(at)) = (ok, at) {
            return Err(err(at, format!("[{name}] needs design = \"{name}\"")));
        }
    }
    Ok(())
}

/// The sinks design of `raw`: rows that log to stdout (here, or into a
/// sink on their remote server host), timed by `[sinks]`.
fn sinks_design(
    raw: &RawFile,
    rows: &[Scenario],
    err: &Err,
) -> Result<crate::config::sinks::SinksSettings, ScenarioError> {
    refuse_timing_keys(
        raw,
        true,
        "sinks",
        "runs, length, settle and sample in [sinks]",
        err,
    )?;
    for s in rows {
        let why = if !s.features.iter().any(|f| f == "log-stdout") {
            Some("logs nothing to stdout: a sink's lines are the server's own, so add the log-stdout feature")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(err(row_at(raw, &s.name), format!("row {:?} {why}", s.name)));
        }
    }
    crate::config::sinks::settings(raw.sinks.as_ref()).map_err(|(at, m)| err(at, m))
}

/// Sweep rows take their rates and step times from `[sweep]`, and run on
/// this machine.
fn check_sweep_rows(raw: &RawFile, rows: &[Scenario], err: &Err) -> Result<(), ScenarioError> {
    refuse_timing_keys(
        raw,
        true,
        "sweep",
        "rates, step, settle and repeats in [sweep]",
        err,
    )?;
    if let Some(s) = rows.iter().find(|s| s.hosts.is_some()) {
        return Err(err(
            row_at(raw, &s.name),
            format!(
                "row {:?} is on remote hosts: sweeps run on this machine for now",
                s.name
            ),
        ));
    }
    Ok(())
}

/// Memory rows take their connections from `connections` and hold them;
/// what only throughput rows use is refused, so a file says what it measures.
fn check_memory_rows(raw: &RawFile, rows: &[Scenario], err: &Err) -> Result<(), ScenarioError> {
    for o in raw.scenario.iter().chain([&raw.defaults]) {
        let keys = [
            ("duration", o.duration.as_ref().map(|x| x.span().start)),
            ("warmup", o.warmup.as_ref().map(|x| x.span().start)),
            ("interval", o.interval.as_ref().map(|x| x.span().start)),
        ];
        if let Some((key, at)) = keys.iter().find_map(|(k, a)| a.map(|a| (k, a))) {
            return Err(err(
                at,
                format!("{key} is not used by memory rows: set hold, settle and after in [memory]"),
            ));
        }
    }
    for s in rows {
        let at = row_at(raw, &s.name);
        let why = if s.rate.is_some() {
            Some(
                "rate is not used by memory rows (loadgen --hold makes one request per connection)",
            )
        } else if s.proxy.is_some() {
            Some("memory rows measure the server's own connections: no proxy in front")
        } else if s.threads != 1 {
            Some("threads is not used by memory rows (connections are opened one after another)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(err(at, format!("scenario {:?}: {why}", s.name)));
        }
    }
    Ok(())
}

/// The interleaved schedule's rows: every interval a whole number of
/// turns, and the closed model (each loadgen loads as fast as its server
/// answers in its turn).
fn check_interleave(
    raw: &RawFile,
    scenarios: &[Scenario],
    p: &PairedSettings,
    err: &Err,
) -> Result<(), ScenarioError> {
    if p.schedule != Schedule::Interleave {
        return Ok(());
    }
    let turn = p.turn;
    let uneven = |s: &&Scenario| {
        turn < Duration::from_millis(2) || !s.interval.as_nanos().is_multiple_of(turn.as_nanos())
    };
    if let Some(s) = scenarios.iter().find(uneven) {
        return Err(err(
            row_at(raw, &s.name),
            format!(
                "scenario {:?}: its interval {} is not a whole number of turns of {} (turn is at least 2ms)",
                s.name,
                humantime::format_duration(s.interval),
                humantime::format_duration(turn)
            ),
        ));
    }
    if let Some(s) = scenarios.iter().find(|s| s.hosts.is_some()) {
        return Err(err(
            row_at(raw, &s.name),
            format!("scenario {:?} is on remote hosts: the interleaved schedule needs both loadgens on one clock (a host's may be off by up to [ssh] clock_limit, a quarter of a turn); use schedule = \"duet\"", s.name),
        ));
    }
    if let Some(s) = scenarios.iter().find(|s| s.rate.is_some()) {
        return Err(err(
            row_at(raw, &s.name),
            format!("scenario {:?}: rate is not used by schedule = \"interleave\" (each loadgen loads as fast as its server answers, in its half of every turn)", s.name),
        ));
    }
    Ok(())
}

/// A paired row leaves no process to the scheduler unless it says
/// `placement = "free"`: the answer would depend on where the scheduler put
/// it, which nobody controls (nginx in front was unplaced when the main
/// command's answer moved from 0.29 to 0.48 between two machines).
fn check_pinned(raw: &RawFile, scenarios: &[Scenario], err: &Err) -> Result<(), ScenarioError> {
    for s in scenarios.iter().filter(|s| !s.placement_free) {
        let free = s.unpinned();
        if !free.is_empty() {
            let keys: Vec<String> = free.iter().map(|p| format!("{p}_cpus")).collect();
            return Err(err(
                row_at(raw, &s.name),
                format!(
                    "scenario {:?}: its {} would run where the scheduler puts them; set {} or say placement = \"free\"",
                    s.name,
                    free.join(", "),
                    keys.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Where row `name` is named in the file (0 when it is not).
fn row_at(raw: &RawFile, name: &str) -> usize {
    raw.scenario
        .iter()
        .find_map(|o| o.name.as_ref().filter(|n| n.get_ref() == name))
        .map_or(0, |n| n.span().start)
}

/// A duration key of a design table (`[memory]`, `[paired]`): `fallback`
/// when unset; zero only where `zero_ok`; else the message.
fn table_duration(
    table: &str,
    key: &str,
    value: &Option<String>,
    fallback: Duration,
    zero_ok: bool,
) -> Result<Duration, String> {
    let Some(text) = value else {
        return Ok(fallback);
    };
    match humantime::parse_duration(text) {
        Ok(d) if zero_ok || !d.is_zero() => Ok(d),
        Ok(_) => Err(format!("[{table}] {key} must be more than zero")),
        Err(e) => Err(format!("[{table}] bad {key} {text:?}: {e}")),
    }
}

fn memory_settings(
    raw: Option<&Spanned<RawMemory>>,
    err: &Err,
) -> Result<MemorySettings, ScenarioError> {
    let mut m = MemorySettings::default();
    let Some(raw) = raw else { return Ok(m) };
    let at = raw.span().start;
    let r = raw.get_ref();
    let dur = |v: &Option<String>, key: &str, fallback: Duration| {
        table_duration("memory", key, v, fallback, false).map_err(|m| err(at, m))
    };
    m.hold = dur(&r.hold, "hold", m.hold)?;
    m.settle = dur(&r.settle, "settle", m.settle)?;
    m.after = dur(&r.after, "after", m.after)?;
    m.setup_timeout = dur(&r.setup_timeout, "setup_timeout", m.setup_timeout)?;
    if m.settle >= m.hold {
        return Err(err(
            at,
            "[memory] settle must be shorter than hold: the held sample is taken settle after every connection is open".into(),
        ));
    }
    Ok(m)
}

fn paired_settings(
    raw: Option<&Spanned<RawPaired>>,
    err: &Err,
) -> Result<PairedSettings, ScenarioError> {
    let mut p = PairedSettings::default();
    let Some(raw) = raw else { return Ok(p) };
    let at = raw.span().start;
    let r = raw.get_ref();
    if r.budget.is_some() || r.target_ci_pct.is_some() || r.min_blocks.is_some() {
        return Err(err(
            at,
            "[paired] budget, target_ci_pct and min_blocks are gone: a comparison runs a fixed number of blocks (blocks = N), because stopping once the interval looked narrow made it too narrow".into(),
        ));
    }
    let dur = |v: &Option<String>, key: &str, fallback: Duration, zero_ok: bool| {
        table_duration("paired", key, v, fallback, zero_ok).map_err(|m| err(at, m))
    };
    p.schedule = r.schedule.unwrap_or(p.schedule);
    p.block = dur(&r.block, "block", p.block, false)?;
    p.settle = dur(&r.settle, "settle", p.settle, true)?;
    if let Some(n) = r.blocks {
        p.blocks = checked_blocks(n).map_err(|why| err(at, format!("[paired] {why}")))?;
    }
    if let Some(n) = r.runs {
        p.runs = u32::try_from(n)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| err(at, format!("[paired] runs must be at least 1, not {n}")))?;
    }
    p.seed = r.seed.unwrap_or(p.seed);
    p.turn = dur(&r.turn, "turn", p.turn, false)?;
    if r.turn.is_some() && p.schedule != Schedule::Interleave {
        return Err(err(
            at,
            "[paired] turn is for schedule = \"interleave\"".into(),
        ));
    }
    Ok(p)
}

/// A planned number of blocks: even (AB and BA alike) and at least
/// [`PairedSettings::MIN_BLOCKS`].
pub fn checked_blocks(n: u32) -> Result<u32, String> {
    if n < PairedSettings::MIN_BLOCKS || n % 2 == 1 {
        return Err(format!(
            "blocks must be even and at least {} (AB and BA alike; the interval has blocks - 1 degrees of freedom), not {n}",
            PairedSettings::MIN_BLOCKS
        ));
    }
    Ok(n)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<ScenarioFile, String> {
        parse(Path::new("t.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_apply_and_features_are_ordered() {
        let f = parse_str(
            "[defaults]\nduration = \"2s\"\nrequest = \"get\"\n\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"no-alloc\", \"global-counter\"]\n",
        )
        .unwrap();
        let s = &f.scenarios[0];
        assert_eq!(s.original, None);
        assert_eq!(s.duration, Duration::from_secs(2));
        assert_eq!(s.request, Request::Get);
        assert_eq!(s.variant(), "ntex-server+global-counter+no-alloc");
        assert_eq!(
            (s.topology, s.log, s.repetitions),
            (Topology::Loopback, LogSink::None, 1)
        );
    }

    /// `text` with every process of its rows pinned (server on CPU 1,
    /// loadgen on 0) in its `[defaults]`.
    fn pinned(text: &str) -> String {
        const CPUS: &str = "server_cpus = \"1\"\nloadgen_cpus = \"0\"\n";
        match text.find("[defaults]\n") {
            Some(at) => format!("{}{CPUS}{}", &text[..at + 11], &text[at + 11..]),
            None => {
                let at = text.find("[[scenario]]").expect("a row");
                format!("{}[defaults]\n{CPUS}{}", &text[..at], &text[at..])
            }
        }
    }

    #[test]
    fn nginx_runs_on_the_server_cpus_unless_the_row_says_otherwise() {
        let rows = "[[scenario]]\nname = \"floor\"\nserver = \"actix\"\nproxy = \"static\"\n\n\
                    [[scenario]]\nname = \"behind\"\nserver = \"ntex\"\nproxy = \"proxy\"\n\n\
                    [[scenario]]\nname = \"own\"\nserver = \"ntex\"\nproxy = \"proxy\"\nnginx_cpus = \"0\"\n\n\
                    [[scenario]]\nname = \"direct\"\nserver = \"actix\"\n";
        let pinned = parse_str(&pinned(rows)).unwrap();
        let cpus: Vec<Option<String>> = pinned.scenarios.iter().map(|s| s.nginx_cpus()).collect();
        let some = |c: &str| Some(c.to_string());
        assert_eq!(cpus, [some("1"), some("1"), some("0"), None]);
        let free = parse_str(rows).unwrap();
        let cpus: Vec<Option<String>> = free.scenarios.iter().map(|s| s.nginx_cpus()).collect();
        assert_eq!(cpus, [None, None, some("0"), None]);
    }

    #[test]
    fn a_paired_row_with_an_unpinned_process_is_refused_unless_it_says_free() {
        let file = |extra: &str| {
            format!("design = \"paired\"\nbaseline = \"a\"\n[defaults]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nproxy = \"proxy\"\n{extra}")
        };
        parse_str(&file("")).unwrap();
        let e = parse_str(&file("server_cpus = \"0-1\"\nnginx_cpus = \"0\"\n"));
        assert!(e.is_ok(), "{e:?}");
        let no_loadgen = file("").replace("loadgen_cpus = \"0\"\n", "");
        let e = parse_str(&no_loadgen).unwrap_err();
        assert!(
            e.starts_with("t.toml:6: scenario \"a\": its loadgen would run where the scheduler puts them; set loadgen_cpus or say placement = \"free\""),
            "{e}"
        );
        let free =
            parse_str(&no_loadgen.replace("[defaults]\n", "[defaults]\nplacement = \"free\"\n"))
                .unwrap();
        assert!(free.scenarios.iter().all(|s| s.placement_free));
        let e = parse_str(&file("placement = \"loose\"\n")).unwrap_err();
        assert!(
            e.starts_with("t.toml:13: placement \"loose\": use \"pinned\""),
            "{e}"
        );
        let e = parse_str(&file("nginx_cpus = \"one\"\n")).unwrap_err();
        assert!(e.contains("\"one\" is not a CPU list"), "{e}");
        // Sequential rows may leave processes free (their answers say so).
        parse_str("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n").unwrap();
    }

    #[test]
    fn paired_design_and_its_settings() {
        let f = parse_str(&pinned(
            "design = \"paired\"\nbaseline = \"a\"\n[paired]\nblock = \"5s\"\nblocks = 6\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"actix\"\n",
        ))
        .unwrap();
        let Design::Paired(p) = f.design else {
            panic!("not paired")
        };
        assert_eq!(p.block, Duration::from_secs(5));
        assert_eq!(p.blocks, 6);
        assert_eq!(p.settle, PairedSettings::default().settle);
        assert_eq!(p.schedule, Schedule::Interleave);
        assert_eq!(p.turn, Duration::from_millis(200));
        let alt = parse_str(&pinned(
            "design = \"paired\"\nbaseline = \"a\"\n[paired]\nschedule = \"alternate\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n",
        ))
        .unwrap();
        assert!(matches!(alt.design, Design::Paired(p) if p.schedule == Schedule::Alternate));
        assert_eq!(
            parse_str("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n")
                .unwrap()
                .design,
            Design::Sequential
        );
    }

    #[test]
    fn a_comparison_plans_its_blocks_and_never_stops_on_its_interval() {
        let file = |paired: &str| {
            pinned(&format!("design = \"paired\"\nbaseline = \"a\"\n[paired]\n{paired}\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n"))
        };
        for bad in ["blocks = 3", "blocks = 2", "blocks = 0"] {
            let e = parse_str(&file(bad)).unwrap_err();
            assert!(
                e.contains("t.toml:3: [paired] blocks must be even and at least 4"),
                "{bad}: {e}"
            );
        }
        for gone in ["target_ci_pct = 0.5", "budget = \"2m\"", "min_blocks = 6"] {
            let e = parse_str(&file(gone)).unwrap_err();
            assert!(
                e.contains("are gone: a comparison runs a fixed number of blocks"),
                "{gone}: {e}"
            );
        }
        let Design::Paired(p) = parse_str(&file("blocks = 4")).unwrap().design else {
            panic!("not paired")
        };
        assert_eq!(p.blocks, PairedSettings::MIN_BLOCKS);
        for bad in ["runs = 0", "runs = -1"] {
            let e = parse_str(&file(bad)).unwrap_err();
            assert!(
                e.starts_with("t.toml:3: [paired] runs must be at least 1"),
                "{bad}: {e}"
            );
        }
        let Design::Paired(p) = parse_str(&file("runs = 3")).unwrap().design else {
            panic!("not paired")
        };
        assert_eq!((p.runs, p.blocks), (3, 8));
    }

    #[test]
    fn workers_take_a_count_or_a_rule() {
        let f = parse_str(
            "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nworkers = \"logical\"\n\
             [[scenario]]\nname = \"b\"\nserver = \"actix\"\nworkers = \"physical\"\n\
             [[scenario]]\nname = \"c\"\nserver = \"actix\"\nworkers = 2\n",
        )
        .unwrap();
        let got: Vec<String> = f
            .scenarios
            .iter()
            .map(|s| s.workers.unwrap().to_string())
            .collect();
        assert_eq!(got, ["logical", "physical", "2"]);
    }

    #[test]
    fn paired_rows_name_what_they_are_compared_with_and_a_same_setup_row_is_an_aa() {
        let f = parse_str(&pinned("design = \"paired\"\nbaseline = \"actix\"\n[defaults]\nconnections = 8\n[[scenario]]\nname = \"actix\"\nserver = \"actix\"\n[[scenario]]\nname = \"ntex\"\nserver = \"ntex\"\n[[scenario]]\nname = \"ntex-nginx\"\nserver = \"ntex\"\nproxy = \"proxy\"\nagainst = \"ntex\"\n[[scenario]]\nname = \"aa\"\nlabel = \"A/A\"\nserver = \"actix\"\n"))
            .unwrap();
        let [actix, ntex, nginx, aa] = &f.scenarios[..] else {
            panic!("{:?}", f.scenarios)
        };
        assert_eq!(nginx.against.as_deref(), Some("ntex"));
        assert_eq!(
            (ntex.against.as_deref(), aa.against.as_deref()),
            (None, None)
        );
        assert!(aa.same_setup(actix));
        assert!(!ntex.same_setup(actix));
        assert!(
            !nginx.same_setup(ntex),
            "a proxy in front is not the same setup"
        );
    }

    #[test]
    fn slow_clients_make_a_row_that_is_not_an_aa() {
        let f = parse_str(&pinned("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 1000\n[[scenario]]\nname = \"c\"\nserver = \"ntex\"\nslow_clients = 5\nslow_every = \"250ms\"\n"))
            .unwrap();
        let [a, b, c] = &f.scenarios[..] else {
            panic!("{:?}", f.scenarios)
        };
        assert_eq!(a.slow, None);
        let want = |connections, ms| {
            Some(SlowClients {
                connections,
                every: Duration::from_millis(ms),
            })
        };
        assert_eq!((b.slow, c.slow), (want(1000, 1000), want(5, 250)));
        assert!(!b.same_setup(a));
    }

    #[test]
    fn memory_files_and_musl_rows() {
        let f = parse_str("kind = \"memory\"\n[memory]\nhold = \"4s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nconnections = 10000\nlibc = \"musl\"\n").unwrap();
        let Design::Memory(m) = &f.design else {
            panic!("{:?}", f.design)
        };
        assert_eq!(m.hold, Duration::from_secs(4));
        assert_eq!(m.after, MemorySettings::default().after);
        assert_eq!(f.scenarios[0].connections, 10000);
        assert_eq!(f.scenarios[0].libc, Libc::Musl);
        assert_eq!(f.scenarios[0].variant(), "ntex-server@musl");
        let t = parse_str("kind = \"throughput\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n")
            .unwrap();
        assert_eq!(t.design, Design::Sequential);
        assert_eq!(t.scenarios[0].libc, Libc::Glibc);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let cases = [
            ("[[scenario]]\nname = \"a\"\nserver = \"rocket\"\n", "t.toml:3: unknown server \"rocket\""),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\n  \"turbo\"]\n", "t.toml:5: unknown feature \"turbo\""),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nduration = \"ten\"\n", "t.toml:4: bad duration \"ten\""),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\ncolour = 1\n", "t.toml:4: unknown field `colour`"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:5: scenario name \"a\" is used twice"),
            ("[defaults]\noriginal = { rps = 5 }\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: [defaults] cannot set a published figure"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\noriginal = { rps = 0 }\n", "t.toml:4: original needs rps > 0"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\noriginal = { rps = 1, sd = -2 }\n", "t.toml:4: original needs rps > 0 and sd >= 0"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\noriginal = { rps = 1, mean = 2 }\n", "t.toml:4: unknown field `mean`"),
            ("design = \"paired\"\nbaseline = \"nope\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: baseline \"nope\" is not a scenario name"),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nagainst = \"c\"\n", "t.toml:9: against \"c\" is not a scenario name"),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nagainst = \"b\"\n", "t.toml:9: scenario \"b\" is against itself"),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nagainst = \"b\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\n", "t.toml:6: \"a\" is the baseline: it is compared with nothing"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nagainst = \"a\"\n", "t.toml:7: against is for design = \"paired\""),
            ("design = \"paired\"\nbaseline = \"a\"\n[defaults]\nagainst = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:4: [defaults] cannot set against"),
            ("design = \"paired\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: design = \"paired\" needs a baseline"),
            ("design = \"duet\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: unknown design \"duet\""),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrepetitions = 3\n", "t.toml:6: repetitions is not used by design = \"paired\""),
            ("baseline = \"a\"\n[paired]\nblock = \"5s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: [paired] needs design = \"paired\""),
            ("design = \"paired\"\nbaseline = \"a\"\n[paired]\nblocks = 3\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:3: [paired] blocks must be even"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nspin_ns = 10\n", "t.toml:2: spin_ns needs the calibrate feature"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nserver_host = \"x\"\n", "t.toml:4: server_host needs [ssh] and [hosts.NAME] tables"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nclient_timeout = 0\n", "t.toml:2: client_timeout = 0 needs the keepalive-os feature (the servers refuse it otherwise)"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nworkers = \"all\"\n", "t.toml:4: bad workers: \"all\": expected a number above 0, logical or physical"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nworkers = 0\n", "t.toml:4: bad workers"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nconnections = 0\n", "t.toml:4: connections must be at least 1, not 0"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nslow_clients = 10\n", "t.toml:4: slow_clients is for design = \"paired\""),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 0\n", "t.toml:9: slow_clients must be at least 1, not 0"),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_every = \"1s\"\n", "t.toml:9: slow_every needs slow_clients"),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 5\nslow_every = \"0s\"\n", "t.toml:10: slow_every must be more than zero"),
            ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 5\nslow_every = \"soon\"\n", "t.toml:10: slow_every \"soon\": "),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nconnections = -1\n", "t.toml:4: invalid value: integer `-1`"),
            ("[defaults]\nthreads = 0\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: threads must be at least 1, not 0"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nnginx_workers = 0\n", "t.toml:4: nginx_workers must be at least 1, not 0"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrepetitions = 0\n", "t.toml:4: repetitions must be at least 1, not 0"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = 0.0\n", "t.toml:4: rate must be a number of requests per second above 0, not 0"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = -5.0\n", "t.toml:4: rate must be a number of requests per second above 0, not -5"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = nan\n", "t.toml:4: rate must be a number of requests per second above 0, not NaN"),
            ("kind = \"disk\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: unknown kind \"disk\""),
            ("kind = \"memory\"\ndesign = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: design is for throughput rows"),
            ("kind = \"memory\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nduration = \"5s\"\n", "t.toml:5: duration is not used by memory rows"),
            ("kind = \"memory\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nproxy = \"nginx\"\n", "t.toml:3: scenario \"a\": memory rows measure the server's own connections"),
            ("kind = \"memory\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = 5.0\n", "t.toml:3: scenario \"a\": rate is not used by memory rows"),
            ("design = \"paired\"\nbaseline = \"a\"\n[paired]\nschedule = \"interleave\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = 5.0\n", "t.toml:6: scenario \"a\": rate is not used by schedule = \"interleave\""),
            ("kind = \"memory\"\n[memory]\nhold = \"1s\"\nsettle = \"2s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: [memory] settle must be shorter than hold"),
            ("[memory]\nhold = \"1s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: [memory] needs kind = \"memory\""),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nlibc = \"bionic\"\n", "t.toml:4: unknown variant `bionic`"),
            ("[[scenario]]\nname = \"a\"\nserver = \"actix\"\nfeatures = [\"rt-neon\"]\n", "t.toml:4: actix-web runs on tokio only"),
            ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"rt-neon\", \"rt-uring\"]\n", "t.toml:4: features [\"rt-neon\", \"rt-uring\"]: one runtime per row"),
        ];
        for (text, want) in cases {
            let got = parse_str(text).unwrap_err();
            assert!(got.starts_with(want), "{got:?} should start with {want:?}");
        }
    }
}
