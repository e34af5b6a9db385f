//! A process started through a [`crate::place::host::Host`]: a child of the
//! runner here (in this machine's network or one of its namespaces) or a
//! process on a remote host. Waiting, stopping, signalling, stderr and
//! usage work alike for both; dropping one stops it wherever it runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

use crate::place::procs::{self, Proc, StderrLines, Usage};
use crate::place::remote::{self, RemoteProc};
use crate::place::ssh::Session;

/// A running process, here or there.
pub enum Running {
    Here(Proc, StderrLines),
    There(RemoteProc),
}

impl Running {
    /// Starts `argv` on this machine on `cpus` (set before it execs; none:
    /// where the scheduler puts it), leading a session of its own, its
    /// stdin closed, its stdout to `stdout` and its stderr followed.
    pub fn here(
        name: &str,
        argv: &[String],
        cpus: Option<&str>,
        stdout: std::process::Stdio,
    ) -> anyhow::Result<Running> {
        let mut cmd = std::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(std::process::Stdio::null())
            .stdout(stdout)
            .stderr(std::process::Stdio::piped());
        crate::place::affinity::pin_at_exec(&mut cmd, cpus)?;
        let mut p = Proc::spawn_session(name, &mut cmd)?;
        let lines = StderrLines::follow(p.take_stderr().context("stderr")?);
        Ok(Running::Here(p, lines))
    }

    /// Its pid on its own host.
    pub fn pid(&self) -> i32 {
        match self {
            Running::Here(p, _) => p.pid(),
            Running::There(r) => r.pid as i32,
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

    /// The CPUs every thread of it and its children may run on, read from
    /// its host's /proc, as process `name` that the scenario puts on
    /// `wanted`.
    pub fn read_cpus(
        &self,
        name: &str,
        wanted: Option<&str>,
    ) -> anyhow::Result<crate::place::affinity::ReadCpus> {
        use crate::place::affinity::{
            from_lines, group_lines_here, process_lines_here, remote_script,
        };
        // Read as it is, however early: every process the runner starts
        // is placed before its program runs ([`Launch::cpus`]), so no
        // reading can find it unplaced and none waits for a better one.
        //
        // [`Launch::cpus`]: crate::place::host::Launch::cpus
        let lines = match self {
            // Every process of its cgroup, however it left its session.
            Running::Here(p, _) if p.cgroup().is_some() => {
                let cg = p.cgroup().expect("checked");
                let mut pids = cg.pids();
                pids.sort_unstable();
                pids.iter().map(process_lines_here).collect()
            }
            Running::Here(p, _) => group_lines_here(p.pid()),
            Running::There(r) => r.session().run(&remote_script(r.pid))?,
        };
        Ok(from_lines(name, wanted, &lines))
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
            // A cgroup's CPU counts what ended too; memory is the session's.
            Running::Here(p, _) if p.cgroup().is_some() => {
                let mut u = procs::usage(p.pid()).unwrap_or_default();
                u.cpu_seconds = p.cgroup()?.usage_ns()? as f64 / 1e9;
                Some(u)
            }
            Running::Here(p, _) => procs::usage(p.pid()),
            Running::There(r) => r.usage_with_children().ok().map(|(u, n)| u.of_processes(n)),
        }
    }
}

/// When CPU readers read: boundary `k` at `start + k * interval` by the
/// clock of the process's host, for k = 0..=last.
#[derive(Debug, Clone, Copy)]
pub struct Boundaries {
    pub start: SystemTime,
    pub interval: Duration,
    pub last: u64,
}

/// Reads one process's CPU time (with its group or its children: nginx's
/// workers) at every boundary, on its own host: here from /proc when the
/// design reaches a boundary; on a remote host by a sampler that runs
/// there by the host's clock, so that no reading is late by an ssh round
/// trip. Either way [`CpuReader::finish`] gives nanoseconds by boundary.
pub enum CpuReader {
    Here {
        pgid: i32,
        read: HashMap<u64, u64>,
    },
    /// A process in a cgroup of its own here: the cgroup's `cpu.stat`.
    Cgroup {
        dir: PathBuf,
        read: HashMap<u64, u64>,
    },
    There {
        sampler: Box<RemoteProc>,
        out: PathBuf,
    },
}

impl CpuReader {
    /// A reader of process group `pgid` on this machine (a server in a
    /// terminal emulator, which always runs here).
    pub fn of_group_here(pgid: i32) -> CpuReader {
        CpuReader::Here {
            pgid,
            read: HashMap::new(),
        }
    }

    /// A reader of process `pid` (and its children) on `ssh`'s host: a
    /// sampler there writes its readings into `scratch` here.
    pub fn there(
        ssh: &Session,
        pid: u32,
        b: Boundaries,
        scratch: &Path,
    ) -> anyhow::Result<CpuReader> {
        std::fs::create_dir_all(scratch)
            .with_context(|| format!("creating {}", scratch.display()))?;
        let out = scratch.join(format!("cpu-{}-{pid}.txt", ssh.host.name));
        let file =
            std::fs::File::create(&out).with_context(|| format!("creating {}", out.display()))?;
        let sampler = remote::cpu_sampler(ssh, &[pid], b.start, b.interval, b.last, file.into())?;
        Ok(CpuReader::There {
            sampler: Box::new(sampler),
            out,
        })
    }

    /// Boundary `k` is due: read it now if this reader reads here. A group
    /// that has gone reads 0 (the design notices the dead server).
    pub fn at(&mut self, k: u64) {
        match self {
            CpuReader::Here { pgid, read } => {
                read.insert(k, procs::group_cpu_ns(*pgid).unwrap_or(0));
            }
            CpuReader::Cgroup { dir, read } => {
                read.insert(k, crate::place::cgroup::usage_ns(dir).unwrap_or(0));
            }
            CpuReader::There { .. } => {}
        }
    }

    /// Nanoseconds at every boundary 0..=`last`, waiting for a remote
    /// sampler until `deadline`; an error naming the host when a boundary
    /// has no reading.
    pub fn finish(self, last: u64, deadline: Instant) -> anyhow::Result<Vec<u64>> {
        let (read, host, tail) = match self {
            CpuReader::Here { read, .. } | CpuReader::Cgroup { read, .. } => {
                (read, String::from("this machine"), String::new())
            }
            CpuReader::There { mut sampler, out } => {
                sampler.wait(deadline.saturating_duration_since(Instant::now()));
                let _ = sampler.stop(Duration::from_secs(2));
                let text = std::fs::read_to_string(&out)
                    .with_context(|| format!("reading {}", out.display()))?;
                let host = format!("host {}", sampler.host());
                (
                    remote::read_cpu_samples(&text),
                    host,
                    sampler.lines().tail(),
                )
            }
        };
        (0..=last)
            .map(|k| {
                read.get(&k).copied().with_context(|| {
                    format!("{host}: the CPU sampler has no reading at boundary {k}: {tail}")
                })
            })
            .collect()
    }
}

impl Running {
    /// A CPU reader of this process at boundaries `b`, started on its host;
    /// a remote sampler writes its readings into `scratch` here.
    pub fn cpu_reader(&self, b: Boundaries, scratch: &Path) -> anyhow::Result<CpuReader> {
        match self {
            Running::Here(p, _) => Ok(match p.cgroup() {
                Some(cg) => CpuReader::Cgroup {
                    dir: cg.dir().to_owned(),
                    read: HashMap::new(),
                },
                None => CpuReader::of_group_here(p.pid()),
            }),
            Running::There(r) => CpuReader::there(r.session(), r.pid, b, scratch),
        }
    }

    /// Resident set size and proportional set size (when the kernel gives
    /// it) in KiB, from its host's /proc.
    pub fn resident_kib(&self) -> anyhow::Result<(u64, Option<u64>)> {
        match self {
            Running::Here(p, _) => {
                procs::resident_kib(p.pid()).context("reading the server's memory from /proc")
            }
            Running::There(r) => r.resident_kib(),
        }
    }
}
