//! A process started through a [`crate::place::host::Host`]: a child of the
//! runner here (in this machine's network or one of its namespaces) or a
//! process on a remote host. Waiting, stopping, signalling, stderr and
//! usage work alike for both; dropping one stops it wherever it runs.

use std::process::ExitStatus;
use std::time::Duration;

use crate::place::procs::{self, Proc, StderrLines, Usage};
use crate::place::remote::RemoteProc;

/// A running process, here or there.
pub enum Running {
    Here(Proc, StderrLines),
    There(RemoteProc),
}

impl Running {
    /// Its pid on its own host.
    pub fn pid(&self) -> i32 {
        match self {
            Running::Here(p, _) => p.pid(),
            Running::There(r) => r.pid as i32,
        }
    }

    /// Its pid when it runs on this machine (for designs that read /proc
    /// here at every interval).
    pub fn local_pid(&self) -> Option<i32> {
        match self {
            Running::Here(p, _) => Some(p.pid()),
            Running::There(_) => None,
        }
    }

    /// The remote process, when it runs on another host.
    pub fn remote(&self) -> Option<&RemoteProc> {
        match self {
            Running::Here(..) => None,
            Running::There(r) => Some(r),
        }
    }

    /// The exit status, once it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        match self {
            Running::Here(p, _) => p.try_wait(),
            Running::There(r) => r.wait(Duration::ZERO),
        }
    }

    /// SIGTERM, up to `grace` to exit, then SIGKILL (to its group here, to
    /// it and its children there); an error only when its host cannot be
    /// reached.
    pub fn stop(&mut self, grace: Duration) -> anyhow::Result<Option<ExitStatus>> {
        match self {
            Running::Here(p, _) => Ok(p.stop(grace)),
            Running::There(r) => r.stop(grace),
        }
    }

    /// SIGINT: loadgen stops early and still writes its summary.
    pub fn interrupt(&self) -> anyhow::Result<()> {
        match self {
            Running::Here(p, _) => {
                p.signal(libc::SIGINT);
                Ok(())
            }
            Running::There(r) => r.signal("INT"),
        }
    }

    /// Its stderr, as it comes.
    pub fn stderr(&self) -> &StderrLines {
        match self {
            Running::Here(_, l) => l,
            Running::There(r) => r.lines(),
        }
    }

    /// CPU time and peak RSS of it and its children (nginx's workers),
    /// from its host's /proc; `None` once it is gone or unreachable.
    pub fn usage(&self) -> Option<Usage> {
        match self {
            Running::Here(p, _) => procs::usage(p.pid()),
            Running::There(r) => r.usage_with_children().ok().map(|(u, n)| Usage {
                cpu_seconds: u.cpu_s,
                peak_rss_bytes: u.peak_rss_kib * 1024,
                processes: n,
            }),
        }
    }
}
