//! Connecting to the remote hosts of a file before any row runs: one ssh
//! connection each, preflight (architecture, cores, kernel), the clock
//! offset against this machine (refused above `clock_limit`), and loadgen
//! uploaded to every load host. `shootout hosts FILE` reports the same.

use std::path::Path;

use anyhow::{bail, Context};

use crate::config::hosts::{HostEntry, Remote, Role};
use crate::place::ssh::{self, ClockOffset, Preflight, Session};

/// What the check found on one host.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Checked {
    pub name: String,
    pub role: Role,
    pub address: String,
    pub preflight: Preflight,
    pub clock: ClockOffset,
    /// Where loadgen is on a load host, and whether this check copied it.
    pub loadgen: Option<(String, bool)>,
}

/// Open sessions to every host of a file, checked. The sessions close
/// before their control directory goes (field order).
pub struct Connected {
    pub hosts: Vec<(HostEntry, Session, Checked)>,
    _control: tempfile::TempDir,
}

impl Connected {
    /// The session to host `name`.
    pub fn session(&self, name: &str) -> anyhow::Result<&Session> {
        self.hosts
            .iter()
            .find(|(e, _, _)| e.host.name == name)
            .map(|(_, s, _)| s)
            .with_context(|| format!("no session to host {name}"))
    }
}

/// Connects to every host at once (all of them, not stopping at the first
/// failure): one ssh connection each, preflight, clock offset, loadgen
/// uploaded to load hosts. An error lists every host that failed, one line
/// each, and closes the others.
pub fn connect(remote: &Remote, loadgen: &Path) -> anyhow::Result<Connected> {
    let control = tempfile::Builder::new()
        .prefix("shootout-ssh")
        .tempdir_in("/tmp")
        .context("creating the ssh control directory")?;
    let results: Vec<anyhow::Result<(Session, Checked)>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = remote
            .hosts
            .iter()
            .map(|entry| {
                let control = control.path();
                scope.spawn(move || check_one(remote, entry, loadgen, control))
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().unwrap_or_else(|_| bail!("a host check panicked")))
            .collect()
    });
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (entry, r) in remote.hosts.iter().zip(results) {
        match r {
            Ok((session, checked)) => ok.push((entry.clone(), session, checked)),
            Err(e) => failed.push(format!("{e:#}")),
        }
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("\n"));
    }
    Ok(Connected {
        hosts: ok,
        _control: control,
    })
}

/// [`connect`], then close: what `shootout hosts` reports.
pub fn check(remote: &Remote, loadgen: &Path) -> anyhow::Result<Vec<Checked>> {
    let connected = connect(remote, loadgen)?;
    Ok(connected.hosts.iter().map(|(_, _, c)| c.clone()).collect())
}

fn check_one(
    remote: &Remote,
    entry: &HostEntry,
    loadgen: &Path,
    control: &Path,
) -> anyhow::Result<(Session, Checked)> {
    let session = Session::open(&entry.host, &remote.ssh, control)?;
    let preflight = session.preflight()?;
    let clock = session.clock_offset(8)?;
    ssh::check_offset(&entry.host.name, clock, remote.clock_limit_ms)?;
    let loadgen = match entry.role {
        Role::Load => Some(session.upload(loadgen)?),
        _ => None,
    };
    let checked = Checked {
        name: entry.host.name.clone(),
        role: entry.role,
        address: entry.host.address.clone(),
        preflight,
        clock,
        loadgen,
    };
    Ok((session, checked))
}
