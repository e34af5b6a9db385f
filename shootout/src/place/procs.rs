//! Child processes the runner owns: each in its own process group, stopped
//! with SIGTERM then SIGKILL after a grace period, and never left behind
//! (the guard's `Drop` stops whatever is still running, also on a panic).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

/// The status a POSIX shell wrapper reported as `$?` for its child: 128+N
/// is death by signal N (a shell cannot tell it from that exit code; the
/// servers exit 0, 1 or 101), any other code an exit with it.
pub fn from_shell(code: i32) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    match code {
        129..=191 => ExitStatus::from_raw(code - 128),
        _ => ExitStatus::from_raw((code & 0xff) << 8),
    }
}

/// How a process ended, in words: `exit status 101`, `killed by signal 9
/// (SIGKILL)`.
pub fn ended(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    let Some(sig) = status.signal() else {
        return format!("{status}");
    };
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("killed by signal {sig}"),
    };
    let core = if status.core_dumped() {
        ", core dumped"
    } else {
        ""
    };
    format!("killed by signal {sig} ({name}{core})")
}

/// A running child, stopped on drop.
pub struct Proc {
    pub name: String,
    child: Child,
    status: Option<ExitStatus>,
    /// The cgroup it was started in, when it has one of its own (a
    /// command row's server): its CPU, its members, and a kill that
    /// reaches every one. Dropped after the child is stopped.
    cgroup: Option<crate::place::cgroup::Cgroup>,
}

impl Proc {
    /// Spawns `cmd` in a new process group.
    pub fn spawn(name: &str, cmd: &mut Command) -> anyhow::Result<Proc> {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        let child = cmd.spawn().with_context(|| format!("starting {name}"))?;
        Ok(Proc {
            name: name.into(),
            child,
            status: None,
            cgroup: None,
        })
    }

    /// Spawns `cmd` as the leader of a new session (and so of a new process
    /// group). With the kernel's autogroup scheduling (on by default), a
    /// session is what CPU time is shared between: every server gets its own,
    /// so that two servers sharing a CPU get equal shares whatever else runs
    /// in the runner's session, and a server inside a terminal emulator
    /// (which makes its own session) is on the same footing as one that is not.
    pub fn spawn_session(name: &str, cmd: &mut Command) -> anyhow::Result<Proc> {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe; it cannot fail in a freshly
        // forked child, which is never a process-group leader.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let child = cmd.spawn().with_context(|| format!("starting {name}"))?;
        Ok(Proc {
            name: name.into(),
            child,
            status: None,
            cgroup: None,
        })
    }

    /// Keeps `cg`, the cgroup the child was started in (see
    /// [`crate::place::cgroup::Cgroup::join_at_exec`]), for its readers
    /// and its stop.
    pub fn in_cgroup(mut self, cg: Option<crate::place::cgroup::Cgroup>) -> Proc {
        self.cgroup = cg;
        self
    }

    /// Its own cgroup, when it has one.
    pub fn cgroup(&self) -> Option<&crate::place::cgroup::Cgroup> {
        self.cgroup.as_ref()
    }

    /// The child's piped stderr, once.
    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// The child's piped stdout, once.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Sends `sig` to the whole process group.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the process group this runner created.
        unsafe {
            libc::kill(-self.pid(), sig);
        }
    }

    /// SIGTERM to the group and to every process of its session outside
    /// it (`group`: a child that made a group of its own), SIGKILL after
    /// `grace`; whatever of them outlives the child itself is killed then.
    /// Returns the exit status.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let me = self.pid();
        // The processes of its session outside its group: the group's own
        // get each signal once, through the group.
        let tree = || -> Vec<i32> {
            group(me)
                .unwrap_or_default()
                .into_iter()
                .filter(|(_, f)| f.get(2).and_then(|g| g.parse::<i32>().ok()) != Some(me))
                .map(|(p, _)| p)
                .collect()
        };
        let members = tree();
        let kill_all = |members: &[i32], sig: i32| {
            for &p in members {
                // SAFETY: kill(2) on processes of the tree this runner started.
                unsafe {
                    libc::kill(p, sig);
                }
            }
        };
        let status = match self.try_wait() {
            Some(s) => Some(s),
            None => {
                self.signal(libc::SIGTERM);
                kill_all(&members, libc::SIGTERM);
                let deadline = Instant::now() + grace;
                let mut done = None;
                while Instant::now() < deadline {
                    if let Some(s) = self.try_wait() {
                        done = Some(s);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                done.or_else(|| {
                    self.signal(libc::SIGKILL);
                    kill_all(&members, libc::SIGKILL);
                    let s = self.child.wait().ok();
                    self.status = s;
                    s
                })
            }
        };
        // What outlives it (of its group or session, or named before it
        // went): a moment, then SIGKILL.
        let mut left: Vec<i32> = members
            .into_iter()
            .chain(group(me).unwrap_or_default().into_iter().map(|(p, _)| p))
            .collect();
        left.retain(|&p| p != me && alive(p));
        if !left.is_empty() {
            let deadline = Instant::now() + grace.min(Duration::from_secs(1));
            while Instant::now() < deadline && left.iter().any(|&p| alive(p)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            kill_all(&left, libc::SIGKILL);
        }
        // And whatever of its cgroup left the session too.
        if let Some(cg) = &self.cgroup {
            if !cg.pids().is_empty() {
                cg.kill();
            }
        }
        status
    }

    /// Waits for the child to exit on its own.
    pub fn wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
        self.status
    }
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
        st.rfind(')')
            .and_then(|c| st[c + 2..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

/// CPU seconds (user + system) and peak RSS of a process group, from /proc.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Usage {
    pub cpu_seconds: f64,
    /// Sum over the group's processes of each one's peak RSS.
    pub peak_rss_bytes: u64,
    pub processes: usize,
}

impl Usage {
    /// A later reading of the same process (group): its CPU seconds (which
    /// only grow), and the larger peak RSS and process count. A reading
    /// taken as the process ends (a zombie has no memory figures left)
    /// keeps the peak read before.
    pub fn updated(self, later: Usage) -> Usage {
        Usage {
            cpu_seconds: self.cpu_seconds.max(later.cpu_seconds),
            peak_rss_bytes: self.peak_rss_bytes.max(later.peak_rss_bytes),
            processes: self.processes.max(later.processes),
        }
    }

    /// This usage followed by `next`, a process (group) that ran after it
    /// (a sweep's loadgens, step by step, or its fresh stacks): CPU
    /// seconds add up, peak RSS and the process count are the larger.
    pub fn then(self, next: Usage) -> Usage {
        Usage {
            cpu_seconds: self.cpu_seconds + next.cpu_seconds,
            peak_rss_bytes: self.peak_rss_bytes.max(next.peak_rss_bytes),
            processes: self.processes.max(next.processes),
        }
    }
}

/// Reads the usage of every process in group `pgid` (nginx's master and
/// workers; a server is a group of one); `None` once none is left.
pub fn usage(pgid: i32) -> Option<Usage> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut total = Usage::default();
    for (pid, fields) in group(pgid)? {
        let ticks: f64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
            .sum();
        let hwm_kb = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            })
            .unwrap_or(0);
        total.cpu_seconds += ticks / hz;
        total.peak_rss_bytes += hwm_kb * 1024;
        total.processes += 1;
    }
    (total.processes > 0).then_some(total)
}

/// Resident memory of process `pid` now, KiB: VmRSS, and the proportional
/// set size from `/proc/PID/smaps_rollup` when that is readable.
pub fn resident_kib(pid: i32) -> Option<(u64, Option<u64>)> {
    let kib = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = kib(&status, "VmRSS:")?;
    let pss = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|t| kib(&t, "Pss:"));
    Some((rss, pss))
}

/// The processes of group `pgid` and of the session it leads (a server
/// starts one: a child that made a group of its own in it is still the
/// server's; one that starts a session of its own, as a daemon does, is
/// not followed), each with the fields of its `/proc/PID/stat` after the
/// command name (field 0 is the state, 2 the group, 3 the session).
pub(crate) fn group(pgid: i32) -> Option<Vec<(i32, Vec<String>)>> {
    let field = |f: &[String], i: usize| f.get(i).and_then(|v| v.parse::<i32>().ok());
    Some(
        all_processes()?
            .into_iter()
            .filter(|(_, f)| field(f, 2) == Some(pgid) || field(f, 3) == Some(pgid))
            .collect(),
    )
}

/// Every process on this machine with its `/proc/PID/stat` fields after
/// the command name.
fn all_processes() -> Option<Vec<(i32, Vec<String>)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces) start after ')'.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<String> = stat[close + 2..]
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        out.push((pid, fields));
    }
    Some(out)
}

/// CPU time (user + system) of every thread of every process in group
/// `pgid`, in nanoseconds, from `/proc/PID/task/TID/schedstat` (nanosecond
/// resolution, where `/proc/PID/stat` counts 10 ms ticks). `None` once no
/// process of the group is left.
pub fn group_cpu_ns(pgid: i32) -> Option<u64> {
    let procs = group(pgid)?;
    let mut total = 0u64;
    for (pid, _) in &procs {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Some(ns) = std::fs::read_to_string(task.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            {
                total += ns;
            }
        }
    }
    (!procs.is_empty()).then_some(total)
}

/// A process's stderr, read line by line as it comes (on a thread, or by a
/// [`LineSink`]'s owner): the first 200 lines kept for error messages and
/// meta.json, and every line passed on to whoever waits for one (a start-up
/// line). Local and remote processes report through the same type.
pub struct StderrLines {
    kept: Arc<Mutex<Vec<String>>>,
    rx: Receiver<String>,
}

/// The writing end of a [`StderrLines`].
pub struct LineSink {
    kept: Arc<Mutex<Vec<String>>>,
    tx: Sender<String>,
}

impl LineSink {
    pub fn push(&self, line: String) {
        if let Ok(mut k) = self.kept.lock() {
            if k.len() < 200 {
                k.push(line.clone());
            }
        }
        let _ = self.tx.send(line);
    }
}

impl StderrLines {
    /// A sink and the lines it fills.
    pub fn pair() -> (LineSink, StderrLines) {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        (
            LineSink {
                kept: Arc::clone(&kept),
                tx,
            },
            StderrLines { kept, rx },
        )
    }

    /// Follows `pipe` to its end on a thread of its own.
    pub fn follow(pipe: impl Read + Send + 'static) -> StderrLines {
        let (sink, lines) = StderrLines::pair();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                sink.push(line);
            }
        });
        lines
    }

    /// The next line, up to `timeout`; `Disconnected` once the stream ended.
    pub fn next(&self, timeout: Duration) -> Result<String, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }

    /// Waits up to `timeout` for a line that `pred` accepts; an error, with
    /// the tail, when none comes or the stream ends first.
    pub fn wait_line(
        &self,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Ok(l) if pred(&l) => return Ok(l),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    anyhow::bail!("no such line within {timeout:?}: {}", self.tail())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    anyhow::bail!("it ended first: {}", self.tail())
                }
            }
        }
    }

    /// The lines kept so far.
    pub fn lines(&self) -> Vec<String> {
        self.kept.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The last three kept lines, on one line.
    pub fn tail(&self) -> String {
        let l = self.lines();
        let t = l[l.len().saturating_sub(3)..].join(" | ");
        if t.is_empty() {
            "no message".into()
        } else {
            t
        }
    }
}

#[cfg(test)]
mod ended_tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::{ended, from_shell};

    #[test]
    fn an_exit_says_its_status_or_its_signal() {
        assert_eq!(ended(ExitStatus::from_raw(101 << 8)), "exit status 101");
        assert_eq!(
            ended(ExitStatus::from_raw(9)),
            "killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            ended(ExitStatus::from_raw(11 | 0x80)),
            "killed by signal 11 (SIGSEGV, core dumped)"
        );
        assert_eq!(ended(ExitStatus::from_raw(40)), "killed by signal 40");
        assert_eq!(ended(from_shell(137)), "killed by signal 9 (SIGKILL)");
        assert_eq!(ended(from_shell(101)), "exit status 101");
        assert_eq!(ended(from_shell(0)), "exit status 0");
    }
}

#[cfg(test)]
mod usage_tests {
    use super::Usage;

    #[test]
    fn a_reading_as_the_process_ends_keeps_the_peak_read_before() {
        let alive = Usage {
            cpu_seconds: 0.01,
            peak_rss_bytes: 4096,
            processes: 1,
        };
        // A zombie: CPU time still readable, memory figures gone.
        let ending = Usage {
            cpu_seconds: 0.02,
            peak_rss_bytes: 0,
            processes: 1,
        };
        let u = Usage::default().updated(alive).updated(ending);
        assert_eq!(
            (u.cpu_seconds, u.peak_rss_bytes, u.processes),
            (0.02, 4096, 1)
        );
    }
}
