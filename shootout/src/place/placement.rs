//! Placement: the hosts of one row, decided once from the row's hosts or
//! its topology.

use std::net::{IpAddr, Ipv4Addr};

use anyhow::Context;

use crate::config::scenario::{Scenario, Topology};
use crate::place::connect::Connected;
use crate::place::host::Host;
use crate::place::netns::{self, Netns};

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
    /// Removes the namespaces on drop.
    _netns: Option<Netns>,
}

impl Placement {
    /// The hosts row `s` asks for: its remote hosts (over `remote`'s
    /// sessions), or loopback, or namespaces it creates; `index` keeps the
    /// namespaces of stacks that run at the same time apart.
    pub fn new(
        s: &Scenario,
        index: usize,
        remote: Option<&Connected>,
    ) -> anyhow::Result<Placement> {
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
                    _netns: Some(ns),
                })
            }
        }
    }

    /// The (first) load host: the one that checks the app and reads its count.
    pub fn client(&self) -> &Host {
        &self.clients[0]
    }

    /// The topology as meta.json names it.
    pub fn topology(&self, s: &Scenario) -> String {
        if self.server.is_remote() {
            "hosts".into()
        } else {
            format!("{:?}", s.topology).to_lowercase()
        }
    }
}
