//! Where commands run. A stack is started the same way on every host; only
//! how an argv is wrapped and how the runner itself reaches the host differ.
//!
//! Today a host is this machine or one of the runner's own network
//! namespaces on it. A remote host (argv wrapped in `ssh`, files copied
//! over) is one more variant of [`Host`]; nothing above this module needs
//! to know which it is.

use std::net::{IpAddr, Ipv4Addr};

use crate::netns::{self, Netns};
use crate::scenario::{Scenario, Topology};

/// A place to run commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// This machine, as it is.
    Local,
    /// A network namespace of the runner's own on this machine.
    Netns(String),
}

impl Host {
    /// `argv` as it must be spawned to run on this host.
    pub fn wrap(&self, argv: Vec<String>) -> Vec<String> {
        match self {
            Host::Local => argv,
            Host::Netns(name) => {
                let mut w = Netns::exec(name);
                w.extend(argv);
                w
            }
        }
    }

    /// Runs `f` in the runner with this host's view of the network (to
    /// verify a server, read a count, find a free port).
    pub fn within<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        match self {
            Host::Local => Ok(f()),
            Host::Netns(name) => netns::within(Some(name), f),
        }
    }
}

/// The hosts one stack and its loadgen use, and what holds them up.
pub struct Placement {
    pub server: Host,
    pub client: Host,
    /// The address the server's side listens on.
    pub listen_ip: IpAddr,
    /// Set when a link delay was asked for and could not be applied.
    pub netem: Option<String>,
    /// Removes the namespaces on drop.
    _netns: Option<Netns>,
}

impl Placement {
    /// Creates the hosts `s.topology` asks for; `index` keeps the namespaces
    /// of stacks that run at the same time apart.
    pub fn new(s: &Scenario, index: usize) -> anyhow::Result<Placement> {
        match s.topology {
            Topology::Loopback => Ok(Placement {
                server: Host::Local,
                client: Host::Local,
                listen_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                netem: None,
                _netns: None,
            }),
            Topology::Netns => {
                let ns = Netns::create(index, s.link_delay.map(|d| d.as_secs_f64() * 1000.0))?;
                Ok(Placement {
                    server: Host::Netns(ns.server.clone()),
                    client: Host::Netns(ns.client.clone()),
                    listen_ip: IpAddr::V4(netns::SERVER_ADDR),
                    netem: ns
                        .netem
                        .as_ref()
                        .map(|why| format!("link delay asked for but not applied: {why}")),
                    _netns: Some(ns),
                })
            }
        }
    }
}
