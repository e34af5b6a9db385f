//! Renders a config from `nginx/` into a private prefix and runs nginx in
//! the foreground on its host. The system's nginx configuration is never read.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::place::host::{Host, HostDir, Launch};
use crate::place::running::Running;

/// Fills the placeholders of `nginx/<name>.conf`.
pub fn render(
    root: &Path,
    name: &str,
    prefix: &Path,
    workers: usize,
    listen: SocketAddr,
    upstream: Option<SocketAddr>,
) -> anyhow::Result<String> {
    let path = root.join("nginx").join(format!("{name}.conf"));
    let template = std::fs::read_to_string(&path)
        .with_context(|| format!("nginx config {name:?}: reading {}", path.display()))?;
    Ok(template
        .replace("{{WORKERS}}", &workers.to_string())
        .replace("{{PREFIX}}", &prefix.display().to_string())
        .replace("{{LISTEN}}", &listen.to_string())
        .replace(
            "{{UPSTREAM}}",
            &upstream.map_or("127.0.0.1:1".into(), |u| u.to_string()),
        )
        .replace("{{ACCESS_LOG}}", "off"))
}

/// The nginx a row runs: its config name under `nginx/`, its worker count
/// and the CPUs it is pinned to (none: the scheduler's choice).
pub struct Proxy<'a> {
    pub name: &'a str,
    pub workers: usize,
    pub cpus: Option<String>,
}

/// Starts nginx `proxy` on `host`, in the private prefix `dir`, listening
/// on `ip`, in front of `upstream`: on a port the host gives it (a few
/// tried when it cannot say which is free), and only once it accepts
/// connections there. Its error log goes to its stderr.
pub fn start(
    host: &Host,
    root: &Path,
    proxy: &Proxy,
    dir: &HostDir,
    ip: IpAddr,
    upstream: Option<SocketAddr>,
) -> anyhow::Result<(Running, SocketAddr)> {
    let Proxy {
        name,
        workers,
        ref cpus,
    } = *proxy;
    let prefix = &dir.path;
    let conf = format!("{prefix}/nginx.conf");
    let program = host.nginx_program()?;
    let mut last = String::new();
    for _ in 0..5 {
        let listen = SocketAddr::new(ip, host.pick_port(ip)?);
        let config = render(root, name, Path::new(prefix), workers, listen, upstream)?;
        host.write_file(&conf, config.as_bytes())?;
        host.write_file(&format!("{prefix}/tmp/.keep"), b"")?;
        host.write_file(&format!("{prefix}/logs/.keep"), b"")?;
        let argv = [
            program.as_str(),
            "-p",
            prefix,
            "-c",
            &conf,
            "-e",
            "stderr",
            "-g",
            "daemon off;",
        ]
        .map(String::from)
        .to_vec();
        let mut proc_ = host.spawn(Launch {
            name: "nginx",
            argv,
            cpus: cpus.as_deref(),
            env: Vec::new(),
            cwd: None,
            stdout: Stdio::null(),
            session: false,
            cgroup: false,
        })?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while proc_.try_wait().is_none() && Instant::now() < deadline {
            if host.accepts(listen)? {
                return Ok((proc_, listen));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Let the follower read its last lines.
        std::thread::sleep(Duration::from_millis(50));
        last = proc_.stderr().tail();
        if !last.contains("Address already in use") {
            break;
        }
    }
    bail!("{}nginx did not start: {last}", host.prefix())
}
