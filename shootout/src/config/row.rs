//! One row's keys: a `[[scenario]]` table with `[defaults]` applied, every
//! default filled in (name and server, features, workers, placement,
//! durations, slow clients, remote hosts, a published figure) and every
//! per-row rule checked at the line that breaks it.

use std::time::Duration;

use app_core::workers::Workers;
use toml::Spanned;

use crate::config::hosts::{Remote, RowHosts};
use crate::config::scenario::{
    Libc, LogSink, Request, Scenario, ScenarioError, Server, SlowClients, Topology, FEATURES,
};
use crate::config::settings::{LibcToml, Settings, WorkersToml};
use crate::config::spans::Err;
use crate::config::ssh_terminal::ssh_terminal_of;

/// Every count and rate in range, at the line that sets it, before
/// anything is built or started. (`backlog` is left to the servers, which
/// refuse 0 at start in their own words: the terminal-row test relies on
/// a row that fails there.)
pub fn check_ranges(s: &Settings, err: &Err) -> Result<(), ScenarioError> {
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

/// The commit a twin is built at (`rev`), resolved in this repository.
fn rev(
    o: &Settings,
    d: &Settings,
    command: bool,
    err: &Err,
) -> Result<Option<crate::config::scenario::Rev>, ScenarioError> {
    let rev = o.rev.as_ref().or(d.rev.as_ref());
    let patch = o.patch.as_ref().or(d.patch.as_ref());
    let at = match (rev, patch) {
        (None, None) => return Ok(None),
        (Some(r), _) => r.span().start,
        (None, Some(p)) => p.span().start,
    };
    if command {
        return Err(err(
            at,
            "rev and patch build a twin from this repository; a command row runs its own program"
                .into(),
        ));
    }
    let asked = rev.map(|r| r.get_ref().clone());
    let sha = variants::rev::resolve(
        &variants::workspace_root(),
        asked.as_deref().unwrap_or("HEAD"),
    )
    .map_err(|m| err(at, m))?;
    let (patch, patch_shown) = match patch {
        Some(p) => {
            let shown = p.get_ref().clone();
            let path = std::path::absolute(&shown).unwrap_or_else(|_| shown.clone().into());
            if !path.is_file() {
                return Err(err(
                    p.span().start,
                    format!("patch {shown:?}: no such file"),
                ));
            }
            let tree_patch = variants::rev::TreePatch::of(&path)
                .map_err(|m| err(p.span().start, format!("patch {shown:?}: {m}")))?;
            (Some(tree_patch), Some(shown))
        }
        None => (None, None),
    };
    Ok(Some(crate::config::scenario::Rev {
        asked,
        sha,
        patch,
        patch_shown,
    }))
}

/// Connection churn (`requests_per_connection`): at least 1.
fn churn(o: &Settings, d: &Settings, err: &Err) -> Result<Option<u64>, ScenarioError> {
    let Some(n) = o
        .requests_per_connection
        .as_ref()
        .or(d.requests_per_connection.as_ref())
    else {
        return Ok(None);
    };
    if *n.get_ref() == 0 {
        return Err(err(
            n.span().start,
            "requests_per_connection must be at least 1".into(),
        ));
    }
    Ok(Some(*n.get_ref()))
}

/// The row's nginx: a config of `nginx/` by name, or the user's own
/// template (named in records by its path as written).
fn proxy(
    o: &Settings,
    d: &Settings,
    err: &Err,
) -> Result<(Option<String>, Option<crate::config::scenario::ProxyConf>), ScenarioError> {
    let conf = proxy_conf(o, d, err)?;
    let proxy = match &conf {
        Some(c) => Some(c.shown.clone()),
        None => o
            .proxy
            .clone()
            .or_else(|| d.proxy.clone())
            .filter(|p| p != "none"),
    };
    Ok((proxy, conf))
}

/// The row's own nginx template (`proxy_conf`): a readable file with the
/// two addresses the runner fills in, and no `proxy` name beside it.
fn proxy_conf(
    o: &Settings,
    d: &Settings,
    err: &Err,
) -> Result<Option<crate::config::scenario::ProxyConf>, ScenarioError> {
    let Some(conf) = o.proxy_conf.as_ref().or(d.proxy_conf.as_ref()) else {
        return Ok(None);
    };
    let at = conf.span().start;
    if o.proxy
        .as_deref()
        .or(d.proxy.as_deref())
        .is_some_and(|p| p != "none")
    {
        return Err(err(
            at,
            "set proxy (a config of nginx/) or proxy_conf (your own), not both".into(),
        ));
    }
    let shown = conf.get_ref().clone();
    let path = std::path::absolute(&shown).unwrap_or_else(|_| shown.clone().into());
    let text = std::fs::read_to_string(&path)
        .map_err(|e| err(at, format!("proxy_conf {shown:?}: {e}")))?;
    for placeholder in ["{{LISTEN}}", "{{UPSTREAM}}"] {
        if !text.contains(placeholder) {
            return Err(err(
                at,
                format!(
                    "proxy_conf {shown:?} has no {placeholder}: the runner fills in the address nginx \
                     listens on and the server's (see nginx/proxy.conf)"
                ),
            ));
        }
    }
    Ok(Some(crate::config::scenario::ProxyConf {
        path,
        shown,
        line: err(at, String::new()).line,
    }))
}

/// `[defaults]` may not set what belongs to one row.
pub fn check_defaults(d: &Settings, err: &Err) -> Result<(), ScenarioError> {
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
pub fn row(
    index: usize,
    o: &Settings,
    d: &Settings,
    remote: Option<&Remote>,
    earlier: &[Scenario],
    err: &Err,
) -> Result<Scenario, ScenarioError> {
    let command = crate::config::command::command_of(o, d, err)?;
    let (name, at, server) = name_and_server(index, o, earlier, command.is_some(), err)?;
    let features = features(o, d, server, command.is_some(), err)?;
    let duration = |own: &Option<Spanned<String>>,
                    def: &Option<Spanned<String>>,
                    fallback: &str,
                    zero_ok: bool| {
        pick_duration(own.as_ref().or(def.as_ref()), fallback, zero_ok, err)
    };
    let request = o.request.or(d.request).unwrap_or(default_request(&command));
    let (proxy, proxy_conf) = proxy(o, d, err)?;
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
    command_rules(o, d, command.is_some(), hosts.is_some(), at, err)?;
    needs(&features, request, spin_ns, client_timeout, at, err)?;
    let slow = slow_clients(o, d, err)?;
    let tls = crate::config::tls::tls_of(
        o,
        d,
        crate::config::tls::Front {
            proxy: proxy.as_deref(),
            proxy_conf: proxy_conf.as_ref(),
            command: command.is_some(),
            features: &features,
            slow: slow.is_some(),
        },
        at,
        err,
    )?;
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
        proxy_conf,
        rev: rev(o, d, command.is_some(), err)?,
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
        terminal_cpus_key: o.terminal_cpus.clone().or_else(|| d.terminal_cpus.clone()),
        sink_cpus_key: o.sink_cpus.clone().or_else(|| d.sink_cpus.clone()),
        sshd_cpus: o.sshd_cpus.clone().or_else(|| d.sshd_cpus.clone()),
        placement_free: placement_free(o, d, err)?,
        repetitions: o
            .repetitions
            .as_ref()
            .or(d.repetitions.as_ref())
            .map_or(1, |r| *r.get_ref()),
        spin_ns,
        requests_per_connection: churn(o, d, err)?,
        tls,
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
        slow,
        ssh_terminal,
        jump_scroll,
        writer_gap,
        log_style_always: false,
        command,
    })
}

/// The features a row's other keys need, each refused at the row without it.
fn needs(
    features: &[String],
    request: Request,
    spin_ns: Option<u64>,
    client_timeout: Option<u16>,
    at: usize,
    err: &Err,
) -> Result<(), ScenarioError> {
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
    Ok(())
}

/// A command row asks GET unless it says (the twins' rows, POST).
fn default_request(command: &Option<crate::config::command_row::CommandRow>) -> Request {
    match command {
        Some(_) => Request::Get,
        None => Request::Post,
    }
}

/// What a command row (`is_command`) may not set: remote hosts (it runs
/// on this machine or its namespaces), and the twins' own flags and
/// builds.
fn command_rules(
    o: &Settings,
    d: &Settings,
    is_command: bool,
    remote: bool,
    at: usize,
    err: &Err,
) -> Result<(), ScenarioError> {
    if !is_command {
        return Ok(());
    }
    if remote {
        return Err(err(
            at,
            "a command row runs on this machine or its namespaces, not on remote hosts".into(),
        ));
    }
    let twin_only = [
        ("spin_ns", o.spin_ns.or(d.spin_ns).is_some()),
        (
            "client_timeout",
            o.client_timeout.or(d.client_timeout).is_some(),
        ),
        ("libc", o.libc.or(d.libc).is_some()),
        ("backlog", o.backlog.is_some() || d.backlog.is_some()),
        (
            "log = \"ssh-terminal\"",
            o.log.or(d.log) == Some(LogSink::SshTerminal),
        ),
    ];
    if let Some((key, _)) = twin_only.iter().find(|(_, set)| *set) {
        return Err(err(
            at,
            format!("{key} is a setting of the twins: a command row passes its own flags in its command"),
        ));
    }
    Ok(())
}

/// `placement = "free"` (true) or `"pinned"` (false, the default); CPU
/// lists are checked where they are set.
fn placement_free(o: &Settings, d: &Settings, err: &Err) -> Result<bool, ScenarioError> {
    let at = o.name.as_ref().map_or(0, |n| n.span().start);
    for list in [
        &o.server_cpus,
        &o.loadgen_cpus,
        &o.nginx_cpus,
        &o.terminal_cpus,
        &o.sink_cpus,
        &o.sshd_cpus,
        &d.server_cpus,
        &d.loadgen_cpus,
        &d.nginx_cpus,
        &d.terminal_cpus,
        &d.sink_cpus,
        &d.sshd_cpus,
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
    command: bool,
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
    if command {
        // Not built and never named: `Scenario::server_name` says `command`.
        return Ok((name, at, Server::Actix));
    }
    let Some(server_sp) = &o.server else {
        return Err(err(
            at,
            format!("scenario {name:?} has no server (actix, ntex) and no command"),
        ));
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
    is_command: bool,
    err: &Err,
) -> Result<Vec<String>, ScenarioError> {
    // A command row builds nothing (its own `features` key is refused).
    if is_command {
        return Ok(Vec::new());
    }
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
    if features.iter().any(|f| f == "ntex-read-once")
        && (server == Server::Actix
            || runtimes
                .iter()
                .any(|r| app_core::runtime::REPLACES_DEFAULT.contains(&r.as_str())))
    {
        return Err(err(
            feature_list.span().start,
            "ntex-read-once patches ntex's tokio read path: ntex rows on rt-tokio only".into(),
        ));
    }
    if server == Server::Actix && features.iter().any(|f| f == "ntex-call-nowait") {
        return Err(err(
            feature_list.span().start,
            "ntex-call-nowait patches ntex's service calls: ntex rows only".into(),
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

/// A row's own value of a key, else `[defaults]`'s.
fn pick<T: Copy>(own: &Option<Spanned<T>>, def: &Option<Spanned<T>>) -> Option<T> {
    own.as_ref().or(def.as_ref()).map(|v| *v.get_ref())
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
