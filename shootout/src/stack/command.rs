//! A command row's server: its command line with the placeholders filled
//! in, the wait until it answers its readiness probe, and the check, made
//! before anything is measured, that it starts, listens and answers.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::bail;
use app_core::workers::Workers;

use crate::config::command_row::CommandRow;
use crate::config::scenario::{Scenario, ScenarioError};
use crate::place::host::{Host, Launch};
use crate::place::procs::StderrLines;

/// `{workers}`: the row's count, else one per CPU it runs on.
fn workers(s: &Scenario) -> usize {
    match s.workers {
        Some(Workers::Count(n)) => n.get(),
        _ => s
            .server_cpus
            .as_deref()
            .and_then(|c| crate::place::affinity::parse_list(c).ok())
            .map_or_else(
                || std::thread::available_parallelism().map_or(1, |n| n.get()),
                |set| set.len(),
            ),
    }
}

/// Row `s`'s command with its placeholders filled in: `{port}` and
/// `{host}` where it must listen, `{cpus}` the row's server CPUs,
/// `{workers}` its workers.
pub fn argv(c: &CommandRow, s: &Scenario, ip: IpAddr, port: u16) -> Vec<String> {
    let cpus = s.server_cpus.clone().unwrap_or_default();
    let workers = workers(s).to_string();
    c.argv
        .iter()
        .map(|a| {
            a.replace("{port}", &port.to_string())
                .replace("{host}", &ip.to_string())
                .replace("{cpus}", &cpus)
                .replace("{workers}", &workers)
        })
        .collect()
}

/// What a process under a readiness wait can tell.
pub trait Starting {
    /// Its exit status, once it has exited.
    fn exited(&mut self) -> Option<std::process::ExitStatus>;
    /// Its stderr so far.
    fn stderr(&self) -> &StderrLines;
}

/// Waits, the probe's `within` at most, until `addr` on `host` answers `c`'s
/// readiness probe with its status; an error in one line when the process
/// exits first, the port never opens, or it answers otherwise. Returns
/// what the row records in place of a twin's start-up line.
pub fn await_ready(
    p: &mut dyn Starting,
    host: &Host,
    addr: SocketAddr,
    c: &CommandRow,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + c.ready.within;
    let mut last = String::from("the port never opened");
    while Instant::now() < deadline {
        if let Some(status) = p.exited() {
            // Let the stderr follower read its last lines.
            std::thread::sleep(Duration::from_millis(50));
            bail!(
                "the command exited at start ({}) before answering on {addr}: {}",
                crate::place::procs::ended(status),
                p.stderr().tail()
            );
        }
        if host.accepts(addr)? {
            let r = &c.ready;
            match host.exchange_at(addr, &r.method, &r.path, None) {
                Ok(ex) if ex.status == r.status => {
                    return Ok(format!(
                        "command row ready: {} {} on {addr} answered {}",
                        r.method, r.path, ex.status
                    ));
                }
                Ok(ex) => {
                    last = format!(
                        "{} {} answered {} where ready wants {}",
                        r.method, r.path, ex.status, r.status
                    );
                }
                Err(e) => last = format!("{} {} failed: {e:#}", r.method, r.path),
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!(
        "the command was not ready on {addr} within {} ({last})",
        humantime::format_duration(c.ready.within)
    )
}

/// Starts every command row of `rows` once on this machine, waits for its
/// readiness probe and stops it with its children: a program that exits
/// at start, a port that never opens or a probe answered otherwise is
/// refused before anything is built or measured, at the row's `command`
/// line in `file`.
pub fn preflight(file: &Path, rows: &[Scenario]) -> Result<(), ScenarioError> {
    let mut seen = Vec::new();
    let mut built: Vec<Vec<String>> = Vec::new();
    for s in rows {
        let Some(c) = &s.command else { continue };
        if seen.contains(&s.variant()) {
            continue;
        }
        seen.push(s.variant());
        let at = |e: anyhow::Error| ScenarioError {
            file: file.to_owned(),
            line: c.line,
            message: format!("{}: {e:#}", s.name),
        };
        if let Some(b) = &c.build {
            if !built.contains(b) {
                build(b, c.cwd.as_deref()).map_err(at)?;
                built.push(b.clone());
            }
            crate::config::command::resolve(&c.argv[0], None)
                .map_err(|m| at(anyhow::anyhow!("after its build, {m}")))?;
        }
        try_start(s, c).map_err(|e| ScenarioError {
            file: file.to_owned(),
            line: c.line,
            message: format!("{}: {e:#}", s.name),
        })?;
    }
    Ok(())
}

/// Runs a command row's build, its output kept for the error.
fn build(argv: &[String], cwd: Option<&Path>) -> anyhow::Result<()> {
    eprintln!("shootout: building with `{}`", argv.join(" "));
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null());
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let out = cmd
        .output()
        .map_err(|e| anyhow::anyhow!("build `{}` did not start: {e}", argv.join(" ")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!(
            "build `{}` failed ({}): {}",
            argv.join(" "),
            crate::place::procs::ended(out.status),
            last.trim()
        );
    }
    Ok(())
}

fn try_start(s: &Scenario, c: &CommandRow) -> anyhow::Result<()> {
    let host = Host::here();
    let ip = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    let port = host.pick_port(ip)?;
    let mut p = host.spawn(Launch {
        name: "server",
        argv: argv(c, s, ip, port),
        cpus: s.server_cpus.as_deref(),
        env: c.env.clone(),
        cwd: c.cwd.as_deref(),
        stdout: Stdio::null(),
        session: true,
        cgroup: true,
    })?;
    let ready = await_ready(&mut p, &host, SocketAddr::new(ip, port), c);
    p.stop(Duration::from_secs(5))?;
    ready.map(|_| ())
}

impl Starting for crate::place::running::Running {
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.try_wait()
    }
    fn stderr(&self) -> &StderrLines {
        crate::place::running::Running::stderr(self)
    }
}

impl Starting for crate::stack::server::ServerProc {
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.try_wait()
    }
    fn stderr(&self) -> &StderrLines {
        crate::stack::server::ServerProc::stderr(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(command: &str) -> Scenario {
        let text = format!(
            "[[scenario]]\nname = \"c\"\nserver_cpus = \"0-1\"\nworkers = 2\ncommand = {command}\n"
        );
        let f = crate::config::parse::parse(Path::new("t.toml"), &text).unwrap();
        f.scenarios[0].clone()
    }

    #[test]
    fn placeholders_are_filled_in() {
        let s = row("[\"sh\", \"-c\", \"exec x {host}:{port} {cpus} {workers}\"]");
        let c = s.command.clone().unwrap();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let v = argv(&c, &s, ip, 8080);
        assert_eq!(v[2], "exec x 127.0.0.1:8080 0-1 2");
        assert!(v[0].ends_with("/sh"), "{v:?}");
    }

    #[test]
    fn a_command_that_never_listens_or_exits_is_refused_at_its_line() {
        let exits = row("[\"sh\", \"-c\", \"echo bad flag >&2; exit 3\", \"{port}\"]");
        let e = preflight(Path::new("t.toml"), &[exits]).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("exited at start (exit status 3)"), "{e}");
        assert!(e.message.contains("bad flag"), "{e}");
    }
}
