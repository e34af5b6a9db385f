//! Placement: the hosts of one row, decided once from the row's hosts or
//! its topology.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use anyhow::Context;

use crate::config::scenario::{Scenario, Topology};
use crate::place::connect::{Checked, Connected};
use crate::place::host::Host;
use crate::place::netns::{self, Netns};

/// The hosts a run places its rows on: this machine and namespaces of the
/// runner's own always, and the remote hosts of the file once connected.
pub struct Hosts {
    remote: Option<Connected>,
}

impl Hosts {
    /// This machine and its namespaces only.
    pub fn here() -> Hosts {
        Hosts { remote: None }
    }

    /// With the remote hosts of `connected` too.
    pub fn with_remote(connected: Connected) -> Hosts {
        Hosts {
            remote: Some(connected),
        }
    }

    /// What the connection checks found on each remote host (meta.json).
    pub fn checked(&self) -> Vec<Checked> {
        self.remote.as_ref().map_or_else(Vec::new, |r| {
            r.hosts.iter().map(|(_, _, c)| c.clone()).collect()
        })
    }

    /// The session to remote host `name` (connected when a row named it).
    pub fn session(&self, name: &str) -> anyhow::Result<&crate::place::ssh::Session> {
        match &self.remote {
            Some(r) => r.session(name),
            None => anyhow::bail!("no session to host {name}: no row asked for remote hosts"),
        }
    }

    /// The hosts row `s` asks for; `index` keeps the namespaces of stacks
    /// that run at the same time apart.
    pub fn place(&self, s: &Scenario, index: usize) -> anyhow::Result<Placement> {
        Placement::new(s, index, self.remote.as_ref())
    }
}

/// The hosts of one row: where the server runs, where nginx runs (the
/// server's host unless the row names a proxy host), where the loadgens
/// run (one, or several remote load hosts sharing the load), and what
/// holds them up.
pub struct Placement {
    pub server: Host,
    pub proxy: Host,
    pub clients: Vec<Host>,
    /// The address the server's host listens on.
    pub listen_ip: IpAddr,
    /// The address the proxy's host listens on.
    pub proxy_ip: IpAddr,
    /// Set when a link delay was asked for and could not be applied.
    pub netem: Option<String>,
    /// As meta.json names it: `loopback`, `netns` or `hosts`.
    pub topology: String,
    /// Removes the namespaces on drop.
    _netns: Option<Netns>,
}

impl Placement {
    /// The hosts row `s` asks for: its remote hosts (over `remote`'s
    /// sessions), or loopback, or namespaces it creates; `index` keeps the
    /// namespaces of stacks that run at the same time apart.
    fn new(s: &Scenario, index: usize, remote: Option<&Connected>) -> anyhow::Result<Placement> {
        if let Some(row) = &s.hosts {
            let remote = remote.context("a row on remote hosts, but no hosts are connected")?;
            let host = |name: &str| -> anyhow::Result<(Host, IpAddr)> {
                let session = remote.session(name)?;
                let ip = session
                    .host
                    .address
                    .parse()
                    .with_context(|| format!("host {name}: address is not an IP"))?;
                Ok((Host::Remote(session.handle()), ip))
            };
            let (server, listen_ip) = host(&row.server)?;
            let (proxy, proxy_ip) = match &row.proxy {
                Some(p) => host(p)?,
                None => (server.clone(), listen_ip),
            };
            let clients = row
                .load
                .iter()
                .map(|n| host(n).map(|(h, _)| h))
                .collect::<anyhow::Result<_>>()?;
            return Ok(Placement {
                server,
                proxy,
                clients,
                listen_ip,
                proxy_ip,
                netem: None,
                topology: "hosts".into(),
                _netns: None,
            });
        }
        match s.topology {
            Topology::Loopback => Ok(Placement {
                server: Host::Local,
                proxy: Host::Local,
                clients: vec![Host::Local],
                listen_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                proxy_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                netem: None,
                topology: "loopback".into(),
                _netns: None,
            }),
            Topology::Netns => {
                let ns = Netns::create(index, s.link_delay.map(|d| d.as_secs_f64() * 1000.0))?;
                let server = Host::Netns(ns.server.clone());
                Ok(Placement {
                    proxy: server.clone(),
                    server,
                    clients: vec![Host::Netns(ns.client.clone())],
                    listen_ip: IpAddr::V4(netns::SERVER_ADDR),
                    proxy_ip: IpAddr::V4(netns::SERVER_ADDR),
                    netem: ns
                        .netem
                        .as_ref()
                        .map(|why| format!("link delay asked for but not applied: {why}")),
                    topology: "netns".into(),
                    _netns: Some(ns),
                })
            }
        }
    }

    /// The (first) load host: the one that checks the app and reads its count.
    pub fn client(&self) -> &Host {
        &self.clients[0]
    }

    /// Every host of the row.
    fn hosts(&self) -> impl Iterator<Item = &Host> {
        [&self.server, &self.proxy].into_iter().chain(&self.clients)
    }

    /// How far ahead of a common start processes must be started: the
    /// longest lead of the row's hosts.
    pub fn start_lead(&self) -> Duration {
        self.hosts().map(Host::start_lead).max().unwrap_or_default()
    }

    /// How often to read usage on the row's hosts: the slowest host's period.
    pub fn sampling_period(&self) -> Duration {
        self.hosts()
            .map(Host::sampling_period)
            .max()
            .unwrap_or_default()
    }
}
