//! A process on a remote host, started over a [`Session`]: its remote pid,
//! its stderr lines as they arrive, its stdout wherever the caller sends it
//! (a loadgen shard streams straight into the results file), its CPU time
//! and peak RSS from the host's /proc, and a stop that SIGTERMs it there,
//! waits, and SIGKILLs it if it has to. Dropping one that still runs kills
//! it on its host, so nothing the runner started outlives it there.

use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};

use crate::place::procs::StderrLines;
use crate::place::ssh::{quote, Session};

/// Marks the line the wrapper prints before `exec`: the remote pid.
const PID_MARK: &str = "shootout-remote-pid ";

/// A running remote process.
pub struct RemoteProc {
    ssh: Session,
    pub pid: u32,
    child: Child,
    lines: StderrLines,
    exit: Option<ExitStatus>,
}

/// CPU time and peak resident memory of a remote process.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Usage {
    pub cpu_s: f64,
    pub peak_rss_kib: u64,
}

impl RemoteProc {
    /// Starts `argv` on `session`'s host, in its workdir, with stdout to
    /// `stdout`; returns once the remote pid is known.
    pub fn spawn(session: &Session, argv: &[String], stdout: Stdio) -> anyhow::Result<RemoteProc> {
        RemoteProc::spawn_on(session, argv, stdout, None)
    }

    /// [`RemoteProc::spawn`] on `cpus` (none: where the host's scheduler
    /// puts it): the wrapper shell puts itself there before it prints its
    /// pid, so every reading by that pid, the shell's or the program's it
    /// becomes, finds the process placed.
    pub fn spawn_on(
        session: &Session,
        argv: &[String],
        stdout: Stdio,
        cpus: Option<&str>,
    ) -> anyhow::Result<RemoteProc> {
        let line: Vec<String> = argv.iter().map(|a| quote(a)).collect();
        let pin = cpus.map_or(String::new(), |c| {
            format!("taskset -p -c {} $$ >/dev/null && ", quote(c))
        });
        let script = format!(
            "mkdir -p {wd} && cd {wd} && {pin}echo {PID_MARK}$$ >&2 && exec {}",
            line.join(" "),
            wd = quote(&session.host.workdir),
        );
        let mut child = session
            .command(&script)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .context("running ssh")?;
        let lines = StderrLines::follow(child.stderr.take().expect("piped"));
        let name = &session.host.name;
        let deadline = Instant::now() + Duration::from_secs(15);
        let pid = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.next(left) {
                Ok(l) => {
                    if let Some(p) = l.strip_prefix(PID_MARK) {
                        break p
                            .trim()
                            .parse::<u32>()
                            .with_context(|| format!("host {name}: the wrapper printed {l:?}"))?;
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let status = child.wait().ok();
                    bail!(
                        "host {name}: `{}` did not start ({status:?}): {}",
                        argv.first().map_or("", String::as_str),
                        lines.tail()
                    );
                }
            }
        };
        Ok(RemoteProc {
            ssh: session.handle(),
            pid,
            child,
            lines,
            exit: None,
        })
    }

    /// Waits up to `timeout` for a stderr line that `pred` accepts.
    pub fn wait_line(
        &mut self,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> anyhow::Result<String> {
        self.lines
            .wait_line(timeout, pred)
            .with_context(|| format!("host {}", self.ssh.host.name))
    }

    /// The first 200 stderr lines so far.
    pub fn stderr(&self) -> Vec<String> {
        self.lines.lines()
    }

    /// Its stderr as it comes.
    pub fn lines(&self) -> &StderrLines {
        &self.lines
    }

    /// The host's name.
    pub fn host(&self) -> &str {
        &self.ssh.host.name
    }

    /// The session it was started over.
    pub fn session(&self) -> &Session {
        &self.ssh
    }

    /// Sends `sig` (a name: INT, TERM) to the process on its host.
    pub fn signal(&self, sig: &str) -> anyhow::Result<()> {
        signal(&self.ssh, self.pid, sig)
    }

    /// CPU seconds and peak RSS from the host's /proc.
    pub fn usage(&self) -> anyhow::Result<Usage> {
        usage_of(&self.ssh, self.pid)
    }

    /// Resident and proportional set size in KiB from the host's /proc
    /// (`VmRSS`, and `Pss` where `smaps_rollup` exists).
    pub fn resident_kib(&self) -> anyhow::Result<(u64, Option<u64>)> {
        resident_kib_of(&self.ssh, self.pid)
    }

    /// [`RemoteProc::usage`] summed over the process and its children
    /// (nginx's master and workers), with how many there were.
    pub fn usage_with_children(&self) -> anyhow::Result<(Usage, usize)> {
        let pids = self.ssh.run(&format!(
            "echo {pid}; pgrep -P {pid} || true",
            pid = self.pid
        ))?;
        let mut total = Usage {
            cpu_s: 0.0,
            peak_rss_kib: 0,
        };
        let mut n = 0;
        for pid in pids.split_whitespace() {
            let text = self.ssh.run(&format!(
                "cat /proc/{pid}/stat; grep VmHWM /proc/{pid}/status; getconf CLK_TCK"
            ))?;
            let u = parse_usage(&text)?;
            total.cpu_s += u.cpu_s;
            total.peak_rss_kib += u.peak_rss_kib;
            n += 1;
        }
        Ok((total, n))
    }

    /// Waits for the process to end by itself, up to `timeout`; its exit
    /// status as ssh reports it, or `None` if it still runs.
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
            if self.exit.is_some() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.exit
    }

    /// SIGTERM on its host, up to `grace` to exit, then SIGKILL. The exit
    /// status, or an error naming the host when it cannot be reached.
    pub fn stop(&mut self, grace: Duration) -> anyhow::Result<Option<ExitStatus>> {
        if let Some(s) = self.wait(Duration::ZERO) {
            return Ok(Some(s));
        }
        self.signal("TERM")?;
        if let Some(s) = self.wait(grace) {
            return Ok(Some(s));
        }
        self.ssh.run(&kill_tree(self.pid))?;
        let _ = self.child.kill();
        Ok(self.wait(Duration::from_secs(5)))
    }

    /// True while the process exists on its host.
    pub fn alive_there(&self) -> anyhow::Result<bool> {
        let out = self.ssh.run(&format!(
            "kill -0 {} 2>/dev/null && echo yes || echo no",
            self.pid
        ))?;
        Ok(out.trim() == "yes")
    }
}

impl Drop for RemoteProc {
    fn drop(&mut self) {
        if self.wait(Duration::ZERO).is_none() {
            // SIGTERM first, so that a parent (nginx's master) takes its
            // children with it; then SIGKILL to the process and its children.
            let _ = self.signal("TERM");
            if self.wait(Duration::from_secs(2)).is_none() {
                let _ = self.ssh.run(&kill_tree(self.pid));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts, on `session`'s host, a reader of the CPU time of `pids` and
/// their children (nginx's workers) at the interval boundaries
/// `start + k * interval`, k = 0..=last, by the host's clock: what the
/// paired design reads from this machine's /proc for local stacks, read
/// there, so that a reading is not late by an ssh round trip. One line
/// `k nanoseconds` per boundary (the sum of every thread's run time from
/// `/proc/PID/task/TID/schedstat`) goes to `out`; it ends by itself after
/// the last boundary.
pub fn cpu_sampler(
    session: &Session,
    pids: &[u32],
    start: SystemTime,
    interval: Duration,
    last: u64,
    out: Stdio,
) -> anyhow::Result<RemoteProc> {
    let start_ns = start.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    let script = format!(
        r#"k=0
while [ $k -le {last} ]; do
  d=$(( {start_ns} + k * {interval_ns} - $(date +%s%N) ))
  if [ $d -gt 0 ]; then sleep "$((d / 1000000000)).$(printf %09d $((d % 1000000000)))"; fi
  ns=0
  for p in {pids}; do
    for q in $p $(pgrep -P $p); do
      for f in /proc/$q/task/*/schedstat; do
        {{ read t rest < "$f"; }} 2>/dev/null && ns=$((ns + t))
      done
    done
  done
  echo "$k $ns"
  k=$((k + 1))
done"#,
        interval_ns = interval.as_nanos(),
        pids = pids.join(" "),
    );
    RemoteProc::spawn(session, &["sh".into(), "-c".into(), script], out)
}

/// What [`cpu_sampler`] wrote: nanoseconds by boundary.
pub fn read_cpu_samples(text: &str) -> std::collections::HashMap<u64, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, ns) = l.split_once(' ')?;
            Some((k.parse().ok()?, ns.trim().parse().ok()?))
        })
        .collect()
}

/// Sends `sig` (a name: INT, TERM, KILL) to process `pid` on `ssh`'s host;
/// one that has gone is not an error.
pub fn signal(ssh: &Session, pid: u32, sig: &str) -> anyhow::Result<()> {
    ssh.run(&format!("kill -{sig} {pid} 2>/dev/null || true"))
        .map(drop)
}

impl Usage {
    /// As the runner's own usage record, summed over `processes`.
    pub fn of_processes(self, processes: usize) -> crate::place::procs::Usage {
        crate::place::procs::Usage {
            cpu_seconds: self.cpu_s,
            peak_rss_bytes: self.peak_rss_kib * 1024,
            processes,
        }
    }
}

/// CPU seconds and peak RSS of process `pid` on `ssh`'s host, from its /proc.
pub fn usage_of(ssh: &Session, pid: u32) -> anyhow::Result<Usage> {
    let text = ssh.run(&format!(
        "cat /proc/{pid}/stat; grep VmHWM /proc/{pid}/status; getconf CLK_TCK"
    ))?;
    parse_usage(&text).with_context(|| format!("host {}: reading /proc/{pid}", ssh.host.name))
}

/// Resident and proportional set size in KiB of process `pid` on `ssh`'s
/// host (`VmRSS`, and `Pss` where `smaps_rollup` exists).
pub fn resident_kib_of(ssh: &Session, pid: u32) -> anyhow::Result<(u64, Option<u64>)> {
    let text = ssh.run(&format!(
        "grep VmRSS /proc/{pid}/status; grep '^Pss:' /proc/{pid}/smaps_rollup 2>/dev/null || true"
    ))?;
    let kib = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    let rss =
        kib("VmRSS:").with_context(|| format!("host {}: no VmRSS for {pid}", ssh.host.name))?;
    Ok((rss, kib("Pss:")))
}

/// SIGKILL to `pid`'s children, then to it: nginx's workers would outlive a
/// killed master.
fn kill_tree(pid: u32) -> String {
    format!("pkill -KILL -P {pid} 2>/dev/null; kill -KILL {pid} 2>/dev/null; true")
}

/// `/proc/PID/stat`, the `VmHWM:` line and `getconf CLK_TCK`, as `usage`
/// reads them.
fn parse_usage(text: &str) -> anyhow::Result<Usage> {
    let mut lines = text.lines();
    let stat = lines.next().context("no stat line")?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').context("no ) in stat")? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
    let ticks: f64 = fields
        .get(11)
        .zip(fields.get(12))
        .context("short stat line")
        .and_then(|(u, s)| Ok(u.parse::<f64>()? + s.parse::<f64>()?))?;
    let hwm = lines.next().context("no VmHWM line")?;
    let peak_rss_kib = hwm
        .split_whitespace()
        .nth(1)
        .context("bad VmHWM line")?
        .parse()?;
    let hz: f64 = lines.next().context("no CLK_TCK")?.trim().parse()?;
    Ok(Usage {
        cpu_s: ticks / hz,
        peak_rss_kib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_from_proc_text() {
        let text = "4242 (actix server) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 150 0 0 20 0 3 0 100 0 0\nVmHWM:\t   12345 kB\n100\n";
        assert_eq!(
            parse_usage(text).unwrap(),
            Usage {
                cpu_s: 4.0,
                peak_rss_kib: 12345
            }
        );
        assert!(parse_usage("garbage").is_err());
    }
}
