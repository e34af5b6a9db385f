//! One loadgen process against one stack: its command line, its process and
//! what its jsonl log says afterwards.

use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use analysis::files::partial;
use anyhow::{bail, Context};

use crate::config::scenario::{Request, Scenario, SlowClients};
use crate::place::host::{Host, Launch};
use crate::place::running::Running;

/// How long and when one loadgen runs.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub warmup: Duration,
    pub duration: Duration,
    /// A common start (`--start-at`) for loadgens that must share interval
    /// boundaries.
    pub start_at: Option<SystemTime>,
    /// loadgen `--active-half` (`"first"`, `"second"`) and `--turn`: load
    /// only in that half of every turn (the interleaved paired schedule).
    pub turn: Option<(&'static str, Duration)>,
}

/// Builds loadgen's argv for scenario `s` against `target` (its CPUs are
/// the launch's, [`spawn`]'s `cpus`); `ca_file`, on the load's host, is
/// the CA a `tls` row's loadgen trusts ([`crate::stack::Stack::ca_file`]).
pub fn argv(
    loadgen: &str,
    s: &Scenario,
    target: SocketAddr,
    ca_file: Option<&str>,
    t: Timing,
) -> Vec<String> {
    let mut argv = vec![loadgen.to_string()];
    for (flag, value) in [
        ("-c", s.connections.to_string()),
        ("-t", s.threads.to_string()),
        ("-d", humantime::format_duration(t.duration).to_string()),
        ("--warmup", humantime::format_duration(t.warmup).to_string()),
        (
            "--interval",
            humantime::format_duration(s.interval).to_string(),
        ),
        ("--format", "jsonl".into()),
        ("--shard", s.name.clone()),
    ] {
        argv.extend([flag.into(), value]);
    }
    if let Some(at) = t.start_at {
        let ms = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        argv.extend(["--start-at".into(), ms.to_string()]);
    }
    if let Some((half, period)) = t.turn {
        let period = humantime::format_duration(period).to_string();
        argv.extend(["--active-half".into(), half.into(), "--turn".into(), period]);
    }
    if let Some(rate) = s.rate {
        argv.extend(["--rate".into(), rate.to_string()]);
    }
    if let Some(n) = s.requests_per_connection {
        argv.extend(["--requests-per-connection".into(), n.to_string()]);
    }
    if let Some(ca) = ca_file {
        argv.extend(["--ca-file".into(), ca.into()]);
    }
    match s.request {
        Request::Get => {}
        Request::Post => argv.extend(["--body".into(), "500".into()]),
        Request::Binary => argv.extend(["--body-hex".into(), "f401".into()]),
    }
    argv.push(url(s, target));
    argv
}

/// What row `s`'s loadgen requests at `target`: `/`, or a command row's
/// own path.
pub fn url(s: &Scenario, target: SocketAddr) -> String {
    let path = s.command.as_ref().map_or("/", |c| c.path.as_str());
    let scheme = if s.tls { "https" } else { "http" };
    format!("{scheme}://{target}{path}")
}

/// `argv` (from [`argv`], an open-model load) with loadgen told to wake
/// `spin` before each send and poll until it is due (`--spin-before`),
/// the flag before the target, loadgen's last argument.
pub fn spinning(mut argv: Vec<String>, spin: Duration) -> Vec<String> {
    let at = argv.len().saturating_sub(1);
    argv.splice(
        at..at,
        [
            "--spin-before".to_string(),
            humantime::format_duration(spin).to_string(),
        ],
    );
    argv
}

/// The argv of row `s`'s slow clients against `target`, for `duration`
/// (loadgen `--slowloris`: the row's request head, trickled).
pub fn slow_argv(
    loadgen: &str,
    s: &Scenario,
    slow: SlowClients,
    target: SocketAddr,
    duration: Duration,
) -> Vec<String> {
    let mut argv = vec![loadgen.to_string()];
    for (flag, value) in [
        (
            "--slowloris",
            humantime::format_duration(slow.every).to_string(),
        ),
        ("-c", slow.connections.to_string()),
        ("-d", humantime::format_duration(duration).to_string()),
        ("--format", "jsonl".into()),
        ("--shard", format!("{}-slow", s.name)),
    ] {
        argv.extend([flag.into(), value]);
    }
    argv.push(url(s, target));
    argv
}

/// What a finished `--slowloris` loadgen's log (kept) says.
pub fn read_slow(path: &Path) -> anyhow::Result<loadgen::SlowRecord> {
    let text = analysis::input::raw::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .find_map(|l| match serde_json::from_str::<loadgen::Record>(l) {
            Ok(loadgen::Record::SlowSummary(s)) => Some(s),
            _ => None,
        })
        .with_context(|| format!("{}: no slow_summary record", path.display()))
}

/// Load host `i` of `n`'s share of row `s`: the connections and rate split
/// evenly, the first hosts taking the remainder.
pub fn share_of(s: &Scenario, i: usize, n: usize) -> Scenario {
    let mut share = s.clone();
    let (c, n32) = (s.connections, n as u32);
    share.connections = c / n32 + u32::from((i as u32) < c % n32);
    share.rate = s.rate.map(|r| r / n as f64);
    share
}

/// A loadgen on `host` on `cpus` (the row's `loadgen_cpus`, set before it
/// starts) writing its jsonl to `log` here (streamed back from a remote
/// host as it comes); `argv` as [`argv`] built it with the binary
/// [`Host::place_binary`] gave. The log is written as `LOG.partial` until
/// [`keep`] finds it complete, so a log cut short (a full disk, a killed
/// loadgen) never stands under its final name.
pub fn spawn(
    host: &Host,
    cpus: Option<&str>,
    argv: Vec<String>,
    log: &Path,
) -> anyhow::Result<Running> {
    let log = &partial(log);
    let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
    host.spawn(Launch {
        name: "loadgen",
        argv,
        cpus,
        env: Vec::new(),
        cwd: None,
        stdout: Stdio::from(out),
        session: false,
        cgroup: false,
    })
}

/// A finished loadgen's log, complete (it ends with loadgen's summary,
/// which it writes also when interrupted), moved to its final name `log`;
/// an incomplete one is removed and named in the error.
pub fn keep(log: &Path) -> anyhow::Result<()> {
    let from = partial(log);
    let text =
        std::fs::read_to_string(&from).with_context(|| format!("reading {}", from.display()))?;
    let last = text.lines().rev().find(|l| !l.trim().is_empty());
    let complete = text.ends_with('\n')
        && last.is_some_and(|l| {
            matches!(
                serde_json::from_str::<loadgen::Record>(l),
                Ok(loadgen::Record::Summary(_)
                    | loadgen::Record::HoldSummary(_)
                    | loadgen::Record::SlowSummary(_))
            )
        });
    if !complete {
        let _ = std::fs::remove_file(&from);
        bail!(
            "{} ended without loadgen's summary (a full disk, or loadgen killed); removed",
            log.display()
        );
    }
    std::fs::rename(&from, log).with_context(|| format!("writing {}", log.display()))
}

/// What a finished loadgen's log says.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogTotals {
    /// The summary's 2xx/s (measured part only).
    pub rps: Option<f64>,
    /// 2xx responses read, warm-up included.
    pub acknowledged: u64,
}

/// Reads a loadgen jsonl log.
pub fn read_log(path: &Path) -> anyhow::Result<LogTotals> {
    let text = analysis::input::raw::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let mut t = LogTotals::default();
    for line in text.lines() {
        match serde_json::from_str::<loadgen::Record>(line) {
            Ok(loadgen::Record::Interval(i)) => t.acknowledged = i.total_ok,
            Ok(loadgen::Record::Summary(s)) => t.rps = Some(s.rps),
            Ok(_) | Err(_) => {}
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 68: a loadgen read back at once, as the sweep reads it at its
    /// first poll, while four threads keep both cores busy, 400 times. On
    /// faf5185, where the launch went through `taskset` and the read
    /// waited only while the process was named `taskset`, 32 of 1,200 such
    /// readings (3 runs) found the runner's own CPUs, 0-1: `spawn` returns
    /// once the child has its new program's memory, before the kernel
    /// renames it, so a read in between saw neither name and read the
    /// CPUs it had inherited. Placed before exec, no reading can.
    #[test]
    fn a_loadgen_read_at_once_is_on_its_cpus_in_every_cycle() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;

        use crate::place::affinity::{parse_list, Check};

        let mine = std::fs::read_to_string("/proc/self/status").unwrap();
        let mine = mine
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap();
        assert!(
            parse_list(mine).unwrap().len() >= 2,
            "this test needs two CPUs to tell a pinned loadgen from an unpinned one; it has {mine}"
        );
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("loadgen.jsonl");
        let stop = Arc::new(AtomicBool::new(false));
        let busy: Vec<_> = (0..4)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let until = std::time::Instant::now() + Duration::from_secs(120);
                    while !stop.load(Ordering::Relaxed) && std::time::Instant::now() < until {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        const CYCLES: usize = 400;
        let mut wrong = Vec::new();
        for _ in 0..CYCLES {
            let argv = vec!["sleep".to_string(), "10".into()];
            let mut p = spawn(&Host::here(), Some("0"), argv, &log).unwrap();
            let read = p.read_cpus("loadgen", Some("0")).unwrap();
            if let Err(e) = read.check() {
                wrong.push(e.to_string());
            }
            p.stop(Duration::from_secs(2)).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for b in busy {
            b.join().unwrap();
        }
        assert!(
            wrong.is_empty(),
            "{} of {CYCLES} readings wrong, the first: {}",
            wrong.len(),
            wrong[0]
        );
    }

    #[test]
    fn a_turn_becomes_active_half_and_turn() {
        let file = crate::config::parse::parse(
            std::path::Path::new("t.toml"),
            "[[scenario]]\nname = \"a\"\nserver = \"actix\"\n",
        )
        .unwrap();
        let s = &file.scenarios[0];
        let target: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let timing = Timing {
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(2),
            start_at: None,
            turn: None,
        };
        let plain = argv("loadgen", s, target, None, timing);
        assert!(!plain.iter().any(|a| a == "--active-half"), "{plain:?}");
        let turn = Some(("second", Duration::from_millis(200)));
        let turns = argv("loadgen", s, target, None, Timing { turn, ..timing });
        let at = turns.iter().position(|a| a == "--active-half").unwrap();
        assert_eq!(
            turns[at..at + 4],
            ["--active-half", "second", "--turn", "200ms"]
        );
        // A spinning client: the flag and its duration, the target still last.
        let spun = spinning(plain.clone(), Duration::from_millis(1));
        assert_eq!(spun.len(), plain.len() + 2);
        assert_eq!(
            spun[spun.len() - 3..],
            ["--spin-before", "1ms", "http://127.0.0.1:8080/"]
        );
    }

    #[test]
    fn a_tls_row_asks_https_and_trusts_its_stacks_ca() {
        let file = crate::config::parse::parse(
            std::path::Path::new("t.toml"),
            "[[scenario]]\nname = \"a\"\nserver = \"actix\"\nfeatures = [\"tls\"]\ntls = true\n",
        )
        .unwrap();
        let s = &file.scenarios[0];
        let target: SocketAddr = "10.1.2.3:8443".parse().unwrap();
        let timing = Timing {
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
            start_at: None,
            turn: None,
        };
        let v = argv("loadgen", s, target, Some("/x/tls-ca.pem"), timing);
        assert_eq!(v.last().unwrap(), "https://10.1.2.3:8443/");
        let at = v.iter().position(|a| a == "--ca-file").unwrap();
        assert_eq!(v[at + 1], "/x/tls-ca.pem");
    }
}
