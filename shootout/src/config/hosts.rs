//! `[ssh]` and `[hosts.NAME]`: the remote hosts a cross-host run uses, in a
//! hosts file or a scenario file, and `shootout hosts FILE`, which checks
//! them the way a run's first stage will: one ssh connection each, preflight
//! (architecture, cores, kernel), the clock offset against this machine
//! (refused above `clock_limit`), and loadgen uploaded to every load host.
//!
//! ```toml
//! [ssh]
//! identity = "keys/id_ed25519"       # relative to this file; else ssh's default keys
//! known_hosts = "keys/known_hosts"   # required: host keys are checked strictly
//! connect_timeout = "5s"
//! clock_limit = "50ms"               # largest clock offset a host may have
//!
//! [hosts.app]
//! address = "10.0.0.5"
//! role = "server"                    # server, proxy or load
//! user = "bench"                     # default: root
//! port = 22
//! workdir = "/home/bench/shootout"   # absolute; binaries go to its bin/
//! # netns = "shh-app"                # a stand-in only (scripts/netns-hosts): link_rate may shape it
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use toml::Spanned;

/// What a host is for in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Server,
    Proxy,
    Load,
}

/// How to reach a remote host (`[hosts.NAME]` in a scenario file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHost {
    /// The name the scenario file gives it: every error names it.
    pub name: String,
    pub address: String,
    pub user: String,
    pub port: u16,
    /// Where the runner puts binaries and temporary files on that host.
    pub workdir: String,
    /// A stand-in host (`scripts/netns-hosts`): the network namespace of
    /// this machine it lives in, so `link_rate` can shape its link.
    pub netns: Option<String>,
}

/// `[ssh]`: the settings shared by every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshSettings {
    pub identity: Option<PathBuf>,
    /// Host keys are checked strictly against this file, never learnt.
    pub known_hosts: PathBuf,
    pub connect_timeout: Duration,
}

/// One `[hosts.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    pub role: Role,
    pub host: RemoteHost,
}

/// The remote hosts of a file, with the ssh settings they share.
#[derive(Debug, Clone, PartialEq)]
pub struct Remote {
    pub ssh: SshSettings,
    /// Largest clock offset a host may have, in ms (default 50).
    pub clock_limit_ms: f64,
    /// In name order.
    pub hosts: Vec<HostEntry>,
}

#[derive(Debug, Deserialize)]
struct RawFile {
    ssh: Option<Spanned<RawSsh>>,
    #[serde(default)]
    hosts: BTreeMap<String, Spanned<RawHost>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSsh {
    identity: Option<String>,
    known_hosts: Option<String>,
    connect_timeout: Option<Spanned<String>>,
    clock_limit: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    address: String,
    role: Spanned<String>,
    user: Option<String>,
    port: Option<Spanned<u16>>,
    workdir: Spanned<String>,
    netns: Option<Spanned<String>>,
}

/// Reads the `[ssh]` and `[hosts.NAME]` tables of `path` (other tables are
/// left to whoever reads the rest); `None` when it has neither. Errors are
/// one line: `FILE:LINE: what`.
pub fn load(path: &Path) -> anyhow::Result<Option<Remote>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    parse(path, &text)
}

/// [`load`] on text already read.
pub fn parse(path: &Path, text: &str) -> anyhow::Result<Option<Remote>> {
    parse_spanned(path, text).map_err(|(offset, what)| {
        let line = text[..offset.min(text.len())].matches('\n').count() + 1;
        anyhow::anyhow!("{}:{line}: {what}", path.display())
    })
}

/// [`parse`] with errors as (byte offset, message), for the scenario parser
/// to report as it reports its own. Relative paths are taken from `path`'s
/// directory.
pub fn parse_spanned(path: &Path, text: &str) -> Result<Option<Remote>, (usize, String)> {
    let at = |offset: usize, what: String| (offset, what);
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        at(
            e.span().map_or(0, |s| s.start),
            e.message().trim().to_string(),
        )
    })?;
    let Some(raw_ssh) = raw.ssh else {
        if let Some((_, host)) = raw.hosts.iter().next() {
            return Err(at(
                host.span().start,
                "[hosts] need an [ssh] table (known_hosts at least)".into(),
            ));
        }
        return Ok(None);
    };
    if raw.hosts.is_empty() {
        return Err(at(
            raw_ssh.span().start,
            "[ssh] without any [hosts.NAME]".into(),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let relative = |p: &str| -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    };
    let ssh_at = raw_ssh.span().start;
    let s = raw_ssh.into_inner();
    let known_hosts = s.known_hosts.as_deref().map(relative).ok_or_else(|| {
        at(
            ssh_at,
            "[ssh] needs known_hosts: host keys are checked strictly, never learnt".into(),
        )
    })?;
    let duration = |key: &str, v: &Option<Spanned<String>>, default: Duration| match v {
        None => Ok(default),
        Some(sp) => match humantime::parse_duration(sp.get_ref()) {
            Ok(d) if d.is_zero() => Err(at(
                sp.span().start,
                format!("[ssh] {key} must be more than zero"),
            )),
            Ok(d) => Ok(d),
            Err(e) => Err(at(
                sp.span().start,
                format!("bad duration {:?}: {e}", sp.get_ref()),
            )),
        },
    };
    let ssh = SshSettings {
        identity: s.identity.as_deref().map(relative),
        known_hosts,
        connect_timeout: duration(
            "connect_timeout",
            &s.connect_timeout,
            Duration::from_secs(5),
        )?,
    };
    let clock_limit_ms =
        duration("clock_limit", &s.clock_limit, Duration::from_millis(50))?.as_secs_f64() * 1e3;
    let mut hosts = Vec::new();
    for (name, sp) in &raw.hosts {
        let h = sp.get_ref();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(at(
                sp.span().start,
                format!("host name {name:?}: letters, digits, - and _ only"),
            ));
        }
        let role = match h.role.get_ref().as_str() {
            "server" => Role::Server,
            "proxy" => Role::Proxy,
            "load" => Role::Load,
            other => {
                return Err(at(
                    h.role.span().start,
                    format!("host {name}: role {other:?}: server, proxy or load"),
                ))
            }
        };
        let workdir = h.workdir.get_ref();
        if !workdir.starts_with('/') || workdir.contains(char::is_whitespace) {
            return Err(at(
                h.workdir.span().start,
                format!("host {name}: workdir must be an absolute path without spaces"),
            ));
        }
        if let Some(p) = h.port.as_ref().filter(|p| *p.get_ref() == 0) {
            return Err(at(
                p.span().start,
                format!("host {name}: port must be 1 to 65535, not 0"),
            ));
        }
        hosts.push(HostEntry {
            role,
            host: RemoteHost {
                name: name.clone(),
                address: h.address.clone(),
                user: h.user.clone().unwrap_or_else(|| "root".into()),
                port: h.port.as_ref().map_or(22, |p| *p.get_ref()),
                workdir: workdir.trim_end_matches('/').to_string(),
                netns: netns(name, h.netns.as_ref())?,
            },
        });
    }
    Ok(Some(Remote {
        ssh,
        clock_limit_ms,
        hosts,
    }))
}

/// The hosts one row runs on (`server_host`, `proxy_host`, `load_hosts`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RowHosts {
    pub server: String,
    pub proxy: Option<String>,
    /// Each runs one loadgen with its share of the connections and rate.
    pub load: Vec<String>,
}

/// A row's host keys checked against the file's hosts and roles; `None`
/// for a local row. Errors carry the key's offset when there is one.
pub fn row_hosts(
    remote: Option<&Remote>,
    server: Option<&Spanned<String>>,
    proxy: Option<&Spanned<String>>,
    load: Option<&Spanned<Vec<String>>>,
    has_proxy: bool,
) -> Result<Option<RowHosts>, (Option<usize>, String)> {
    let first = server
        .map(|s| ("server_host", s.span().start))
        .or(proxy.map(|s| ("proxy_host", s.span().start)))
        .or(load.map(|s| ("load_hosts", s.span().start)));
    let Some((key, key_at)) = first else {
        return Ok(None);
    };
    let Some(remote) = remote else {
        return Err((
            Some(key_at),
            format!("{key} needs [ssh] and [hosts.NAME] tables"),
        ));
    };
    let role_of = |name: &str, at: usize, want: Role| -> Result<String, (Option<usize>, String)> {
        match remote.hosts.iter().find(|h| h.host.name == name) {
            None => Err((Some(at), format!("no [hosts.{name}]"))),
            Some(h) if h.role != want => Err((
                Some(at),
                format!("host {name} has role {:?}, not {want:?}", h.role),
            )),
            Some(_) => Ok(name.to_string()),
        }
    };
    let Some(server) = server else {
        return Err((
            Some(key_at),
            "a row on remote hosts needs server_host".into(),
        ));
    };
    let server = role_of(server.get_ref(), server.span().start, Role::Server)?;
    let proxy = match (proxy, has_proxy) {
        (Some(p), true) => Some(role_of(p.get_ref(), p.span().start, Role::Proxy)?),
        (None, true) => {
            return Err((
                Some(key_at),
                "a remote row with proxy needs proxy_host".into(),
            ))
        }
        (Some(p), false) => return Err((Some(p.span().start), "proxy_host without proxy".into())),
        (None, false) => None,
    };
    let Some(load) = load.filter(|l| !l.get_ref().is_empty()) else {
        return Err((
            Some(key_at),
            "a row on remote hosts needs load_hosts (one or more)".into(),
        ));
    };
    let mut loads = Vec::new();
    for name in load.get_ref() {
        let name = role_of(name, load.span().start, Role::Load)?;
        if loads.contains(&name) {
            return Err((
                Some(load.span().start),
                format!("load host {name} named twice"),
            ));
        }
        loads.push(name);
    }
    Ok(Some(RowHosts {
        server,
        proxy,
        load: loads,
    }))
}

/// `netns = "NAME"`: a namespace name as `ip netns` takes it.
fn netns(host: &str, set: Option<&Spanned<String>>) -> Result<Option<String>, (usize, String)> {
    let Some(sp) = set else { return Ok(None) };
    let n = sp.get_ref();
    if n.is_empty()
        || n.len() > 64
        || !n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err((
            sp.span().start,
            format!("host {host}: netns {n:?}: letters, digits, '-', '_' and '.' only"),
        ));
    }
    Ok(Some(n.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> anyhow::Result<Option<Remote>> {
        parse(Path::new("/etc/shootout/h.toml"), text)
    }

    #[test]
    fn hosts_with_defaults_and_relative_paths() {
        let r = parse_str(
            "[ssh]\nknown_hosts = \"kh\"\nidentity = \"/k/id\"\n\n[hosts.b]\naddress = \"10.0.0.2\"\nrole = \"load\"\nworkdir = \"/w/\"\n\n[hosts.a]\naddress = \"10.0.0.1\"\nrole = \"server\"\nuser = \"bench\"\nport = 2222\nworkdir = \"/srv/x\"\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.ssh.known_hosts, Path::new("/etc/shootout/kh"));
        assert_eq!(r.ssh.identity.as_deref(), Some(Path::new("/k/id")));
        assert_eq!(r.ssh.connect_timeout, Duration::from_secs(5));
        assert!((r.clock_limit_ms - 50.0).abs() < 1e-9);
        let names: Vec<_> = r.hosts.iter().map(|h| h.host.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(r.hosts[0].role, Role::Server);
        assert_eq!(
            (r.hosts[0].host.user.as_str(), r.hosts[0].host.port),
            ("bench", 2222)
        );
        assert_eq!(
            (r.hosts[1].host.user.as_str(), r.hosts[1].host.port),
            ("root", 22)
        );
        assert_eq!(r.hosts[1].host.workdir, "/w");
    }

    #[test]
    fn no_tables_is_none_and_bad_tables_are_one_line_errors() {
        assert!(parse_str("title = \"x\"\n").unwrap().is_none());
        for (text, want) in [
            (
                "[hosts.a]\naddress = \"x\"\nrole = \"load\"\nworkdir = \"/w\"\n",
                "h.toml:1: [hosts] need an [ssh] table",
            ),
            ("[ssh]\nknown_hosts = \"k\"\n", "h.toml:1: [ssh] without any [hosts.NAME]"),
            (
                "[ssh]\nidentity = \"i\"\n[hosts.a]\naddress = \"x\"\nrole = \"load\"\nworkdir = \"/w\"\n",
                "h.toml:1: [ssh] needs known_hosts",
            ),
            (
                "[ssh]\nknown_hosts = \"k\"\n[hosts.a]\naddress = \"x\"\nrole = \"client\"\nworkdir = \"/w\"\n",
                "h.toml:5: host a: role \"client\": server, proxy or load",
            ),
            (
                "[ssh]\nknown_hosts = \"k\"\n[hosts.a]\naddress = \"x\"\nrole = \"load\"\nworkdir = \"w\"\n",
                "h.toml:6: host a: workdir must be an absolute path",
            ),
            (
                "[ssh]\nknown_hosts = \"k\"\nclock_limit = \"soon\"\n[hosts.a]\naddress = \"x\"\nrole = \"load\"\nworkdir = \"/w\"\n",
                "h.toml:3: bad duration \"soon\"",
            ),
            (
                "[ssh]\nknown_hosts = \"k\"\nclock_limit = \"0s\"\n[hosts.a]\naddress = \"x\"\nrole = \"load\"\nworkdir = \"/w\"\n",
                "h.toml:3: [ssh] clock_limit must be more than zero",
            ),
            (
                "[ssh]\nknown_hosts = \"k\"\nconnect_timeout = \"0ms\"\n[hosts.a]\naddress = \"x\"\nrole = \"load\"\nworkdir = \"/w\"\n",
                "h.toml:3: [ssh] connect_timeout must be more than zero",
            ),
            (
                "[ssh]\nknown_hosts = \"k\"\n[hosts.a]\naddress = \"x\"\nrole = \"load\"\nport = 0\nworkdir = \"/w\"\n",
                "h.toml:6: host a: port must be 1 to 65535, not 0",
            ),
            (
                "[ssh]\nknown_hosts = \"k\"\n[hosts.a]\naddress = \"x\"\nrole = \"load\"\nworkdir = \"/w\"\nsecret = 1\n",
                "h.toml:7: unknown field `secret`",
            ),
        ] {
            let err = parse_str(text).unwrap_err().to_string();
            assert!(err.starts_with("/etc/shootout/"), "{err}");
            assert!(err.contains(want), "{err} (wanted {want})");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}
