//! Renders a config from `nginx/` into a private prefix and runs nginx in
//! the foreground on its host. The system's nginx configuration is never read.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::config::scenario::{Scenario, ScenarioError};
use crate::place::host::{Host, HostDir, Launch};
use crate::place::running::Running;

/// The template a row's nginx runs: the user's (`proxy_conf`), or
/// `nginx/<name>.conf`.
pub fn template(root: &Path, s: &Scenario) -> Option<PathBuf> {
    match (&s.proxy_conf, &s.proxy) {
        (Some(c), _) => Some(c.path.clone()),
        (None, Some(name)) => Some(root.join("nginx").join(format!("{name}.conf"))),
        (None, None) => None,
    }
}

/// Fills the placeholders of the template at `path`.
pub fn render(
    path: &Path,
    prefix: &Path,
    workers: usize,
    listen: SocketAddr,
    upstream: Option<SocketAddr>,
    tls: Option<&(String, String)>,
) -> anyhow::Result<String> {
    let template = std::fs::read_to_string(path).with_context(|| {
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        format!("nginx config {name:?}: reading {}", path.display())
    })?;
    Ok(template
        .replace("{{WORKERS}}", &workers.to_string())
        .replace("{{PREFIX}}", &prefix.display().to_string())
        .replace("{{LISTEN}}", &listen.to_string())
        .replace(
            "{{UPSTREAM}}",
            &upstream.map_or("127.0.0.1:1".into(), |u| u.to_string()),
        )
        .replace("{{ACCESS_LOG}}", "off")
        .replace("{{TLS_CERT}}", tls.map_or("", |t| t.0.as_str()))
        .replace("{{TLS_KEY}}", tls.map_or("", |t| t.1.as_str())))
}

/// nginx's arguments after its program: the private `prefix`, the config
/// `conf`, errors to stderr, in the foreground. The run and its `nginx -t`
/// check ([`preflight`]) both take these.
fn args(prefix: &str, conf: &str) -> [String; 8] {
    [
        "-p",
        prefix,
        "-c",
        conf,
        "-e",
        "stderr",
        "-g",
        "daemon off;",
    ]
    .map(String::from)
}

/// The nginx a row runs: its config template, its worker count and the
/// CPUs it is pinned to (none: the scheduler's choice).
pub struct Proxy<'a> {
    pub template: &'a Path,
    pub workers: usize,
    pub cpus: Option<String>,
    /// The certificate's and key's paths on nginx's host, when it ends TLS.
    pub tls: Option<(String, String)>,
}

/// Starts nginx `proxy` on `host`, in the private prefix `dir`, listening
/// on `ip`, in front of `upstream`: on a port the host gives it (a few
/// tried when it cannot say which is free), and only once it accepts
/// connections there. Its error log goes to its stderr.
pub fn start(
    host: &Host,
    proxy: &Proxy,
    dir: &HostDir,
    ip: IpAddr,
    upstream: Option<SocketAddr>,
) -> anyhow::Result<(Running, SocketAddr)> {
    let Proxy {
        template,
        workers,
        ref cpus,
        ref tls,
    } = *proxy;
    let prefix = &dir.path;
    let conf = format!("{prefix}/nginx.conf");
    let program = host.nginx_program()?;
    let mut last = String::new();
    for _ in 0..5 {
        let listen = SocketAddr::new(ip, host.pick_port(ip)?);
        let config = render(
            template,
            Path::new(prefix),
            workers,
            listen,
            upstream,
            tls.as_ref(),
        )?;
        host.write_file(&conf, config.as_bytes())?;
        host.write_file(&format!("{prefix}/tmp/.keep"), b"")?;
        host.write_file(&format!("{prefix}/logs/.keep"), b"")?;
        let mut argv = vec![program.clone()];
        argv.extend(args(prefix, &conf));
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

/// Each row's own nginx template (`proxy_conf`), rendered into a scratch
/// prefix and checked with `nginx -t` (the arguments the run starts it
/// with), before anything is built or started: a template nginx refuses is
/// an error at the line that names it, in nginx's words.
pub fn preflight(file: &Path, rows: &[Scenario]) -> Result<(), ScenarioError> {
    let mut seen: Vec<&Path> = Vec::new();
    for s in rows {
        let Some(c) = &s.proxy_conf else { continue };
        if seen.contains(&c.path.as_path()) {
            continue;
        }
        seen.push(&c.path);
        check(s, &c.path).map_err(|e| ScenarioError {
            file: file.to_owned(),
            line: c.line,
            message: format!("{}: proxy_conf {:?}: {e:#}", s.name, c.shown),
        })?;
    }
    Ok(())
}

fn check(s: &Scenario, template: &Path) -> anyhow::Result<()> {
    crate::prepare::setup::ensure(&crate::prepare::setup::needs_of([s]))?;
    let scratch = tempfile::tempdir().context("making a scratch prefix")?;
    let prefix = scratch.path();
    for d in ["tmp", "logs"] {
        std::fs::create_dir_all(prefix.join(d))?;
    }
    let listen = SocketAddr::from(([127, 0, 0, 1], 8080));
    let upstream = SocketAddr::from(([127, 0, 0, 1], 8081));
    // A template that ends TLS is checked with a certificate made for it.
    let tls = if s.tls {
        let m = crate::stack::tls::Material::make(listen.ip())?;
        Some(m.place_front(&Host::here(), &prefix.display().to_string())?)
    } else {
        None
    };
    let config = render(
        template,
        prefix,
        s.nginx_workers,
        listen,
        Some(upstream),
        tls.as_ref(),
    )?;
    let conf = prefix.join("nginx.conf");
    std::fs::write(&conf, config)?;
    let out = std::process::Command::new(crate::prepare::setup::nginx_binary()?)
        .arg("-t")
        .args(args(
            &prefix.display().to_string(),
            &conf.display().to_string(),
        ))
        .stdin(Stdio::null())
        .output()
        .context("running nginx -t")?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let line = said
        .lines()
        .find(|l| l.contains("[emerg]") || l.contains("[alert]"))
        .or_else(|| said.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("no reason given");
    bail!("nginx -t refuses it: {}", nginx_reason(line, &conf))
}

/// nginx's reason without its date, level and pid (`2026/12/05 17:55:40
/// [emerg] 251#251: unknown directive "x" in /tmp/…/nginx.conf:16`), the
/// scratch copy named as the template (rendering keeps its lines).
fn nginx_reason(line: &str, conf: &Path) -> String {
    let reason = line
        .split_once("]")
        .map(|(_, rest)| rest.split_once(": ").map_or(rest, |(_, r)| r))
        .unwrap_or(line)
        .trim();
    reason.replace(
        &format!(" in {}:", conf.display()),
        " at the template's line ",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_reasons_lose_their_date_and_pid_and_name_the_template() {
        let conf = Path::new("/tmp/x/nginx.conf");
        let line = "2026/12/05 17:55:40 [emerg] 25145#25145: unknown directive \"no_such\" in /tmp/x/nginx.conf:16";
        assert_eq!(
            nginx_reason(line, conf),
            "unknown directive \"no_such\" at the template's line 16"
        );
        assert_eq!(nginx_reason("plain words", conf), "plain words");
    }
}
