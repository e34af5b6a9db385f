//! Two network namespaces of the runner's own, joined by a veth pair: the
//! same-datacenter "other host" case on one machine. Removed on drop.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

/// Address of the server side of the veth pair (inside our own namespace).
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// Address of the loadgen side.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

/// The pair of namespaces; deleting them removes the veth link too.
pub struct Netns {
    pub server: String,
    pub client: String,
    /// Why a requested link delay could not be applied, if it could not.
    pub netem: Option<String>,
}

/// Runs `ip ARGS`; an error with its stderr when it fails.
pub(crate) fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running ip (install iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Netns {
    /// Creates `shootout-<pid>-<n>-srv` and `-cli` with a veth pair between
    /// them. Needs root (CAP_NET_ADMIN).
    pub fn create(n: usize, delay_ms: Option<f64>) -> anyhow::Result<Netns> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            bail!("netns topology needs root (CAP_NET_ADMIN): run as root, or use topology = \"loopback\"");
        }
        let pid = std::process::id();
        let ns = Netns {
            server: format!("shootout-{pid}-{n}-srv"),
            client: format!("shootout-{pid}-{n}-cli"),
            netem: None,
        };
        // From here on, `ns` drops (and deletes whatever exists) on error.
        let (va, vb) = (
            format!("sho{}{n}a", pid % 100_000),
            format!("sho{}{n}b", pid % 100_000),
        );
        ip(&["netns", "add", &ns.server])?;
        ip(&["netns", "add", &ns.client])?;
        ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb])?;
        let set = |dev: &str, to: &str| ip(&["link", "set", dev, "netns", to]);
        if let Err(e) = set(&va, &ns.server).and_then(|_| set(&vb, &ns.client)) {
            let _ = ip(&["link", "del", &va]);
            return Err(e);
        }
        let s_addr = format!("{SERVER_ADDR}/24");
        let c_addr = format!("{CLIENT_ADDR}/24");
        ip(&["-n", &ns.server, "addr", "add", &s_addr, "dev", &va])?;
        ip(&["-n", &ns.client, "addr", "add", &c_addr, "dev", &vb])?;
        for (name, dev) in [(&ns.server, &va), (&ns.client, &vb)] {
            ip(&["-n", name, "link", "set", "lo", "up"])?;
            ip(&["-n", name, "link", "set", dev, "up"])?;
        }
        let mut ns = ns;
        if let Some(ms) = delay_ms {
            let delay = format!("{ms}ms");
            let out = Command::new("ip")
                .args([
                    "netns", "exec", &ns.client, "tc", "qdisc", "add", "dev", &vb, "root", "netem",
                    "delay", &delay,
                ])
                .output();
            ns.netem = match out {
                Ok(o) if o.status.success() => None,
                Ok(o) => Some(String::from_utf8_lossy(&o.stderr).trim().to_string()),
                Err(e) => Some(e.to_string()),
            };
        }
        Ok(ns)
    }

    /// The prefix that runs a command inside `name`.
    pub fn exec(name: &str) -> Vec<String> {
        vec!["ip".into(), "netns".into(), "exec".into(), name.into()]
    }

    /// Every runner's namespaces on this machine (`shootout-<pid>-…`),
    /// for the next run to find what a killed one left.
    pub fn all_runners() -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output();
        let text = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        text.lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with("shootout-"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for name in [&self.client, &self.server] {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// Runs `f` on a thread that entered network namespace `name` (or here, for
/// `None`): how the runner itself talks to a server inside a namespace.
pub fn within<T: Send + 'static>(
    name: Option<&str>,
    f: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    let Some(name) = name else { return Ok(f()) };
    let path = format!("/var/run/netns/{name}");
    std::thread::spawn(move || -> anyhow::Result<T> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(&path).with_context(|| format!("opening {path}"))?;
        // SAFETY: setns on a namespace file we opened; it changes only this thread.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            bail!("entering {path}: {}", std::io::Error::last_os_error());
        }
        Ok(f())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("thread in namespace {name} panicked"))?
}
