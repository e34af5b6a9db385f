//! Runs one scenario repetition end to end: namespaces, server, nginx,
//! verification, loadgen, usage sampling, the counter cross-check, and a
//! clean stop of everything, whatever happens.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;

use crate::netns::{self, Netns};
use crate::output::Sink;
use crate::procs::{usage, Proc, Usage};
use crate::scenario::{Request, Scenario, Topology};
use crate::verify::{self, Verified};
use crate::{nginx, Interrupted};

/// Everything recorded about one scenario repetition (part of meta.json).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RowRecord {
    pub scenario: String,
    pub repetition: u32,
    pub variant: String,
    pub topology: String,
    pub proxy: Option<String>,
    pub log: String,
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    pub startup_line: Option<String>,
    pub verified: Option<Verified>,
    /// The `log-file` sink's file (in the temp dir) and its size at the end.
    pub log_file: Option<String>,
    pub log_file_bytes: Option<u64>,
    /// Bytes the server wrote to its stdout pipe or terminal.
    pub server_stdout_bytes: u64,
    pub server: Usage,
    pub nginx: Option<Usage>,
    pub loadgen: Usage,
    pub server_exit: Option<i32>,
    pub nginx_exit: Option<i32>,
    pub loadgen_exit: Option<i32>,
    pub rps: Option<f64>,
    pub counter: Option<CounterCheck>,
    /// Set when a link delay was asked for and could not be applied.
    pub netem: Option<String>,
    pub error: Option<String>,
}

/// The POST cross-check: what the server counted against what loadgen saw.
#[derive(Debug, Clone, Serialize)]
pub struct CounterCheck {
    pub before: u64,
    pub after: u64,
    /// 2xx responses loadgen read, warm-up included.
    pub acknowledged: u64,
    /// Requests that may have been in flight when loadgen stopped (one per connection).
    pub in_flight_max: u64,
    pub value: u64,
    pub ok: bool,
}

/// What one repetition needs from the run.
pub struct Job<'a> {
    pub root: &'a Path,
    pub scenario: &'a Scenario,
    pub repetition: u32,
    pub server_bin: &'a Path,
    pub loadgen_bin: &'a Path,
    /// Where the loadgen log and the server's output go.
    pub table_dir: &'a Path,
    /// File stem for this repetition's files.
    pub stem: String,
    pub tmp: PathBuf,
    pub ns_index: usize,
    pub stop: &'a Arc<AtomicBool>,
}

/// Runs the job; errors are recorded in the returned record.
pub fn run(job: &Job) -> (RowRecord, Option<Interrupted>) {
    let s = job.scenario;
    let mut rec = RowRecord {
        scenario: s.name.clone(),
        repetition: job.repetition,
        variant: s.variant(),
        topology: format!("{:?}", s.topology).to_lowercase(),
        proxy: s.proxy.clone(),
        log: format!("{:?}", s.log).to_lowercase(),
        server_cpus: s.server_cpus.clone(),
        loadgen_cpus: s.loadgen_cpus.clone(),
        ..RowRecord::default()
    };
    let outcome = run_inner(job, &mut rec);
    let _ = std::fs::remove_dir_all(&job.tmp);
    match outcome {
        Ok(()) => (rec, None),
        Err(e) if e.is::<Interrupted>() => {
            rec.error = Some("interrupted".into());
            (rec, Some(Interrupted))
        }
        Err(e) => {
            rec.error = Some(format!("{e:#}"));
            (rec, None)
        }
    }
}

fn taskset(cpus: &Option<String>) -> Vec<String> {
    cpus.as_ref()
        .map_or_else(Vec::new, |c| vec!["taskset".into(), "-c".into(), c.clone()])
}

fn command(argv: &[String]) -> Command {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null());
    cmd
}

fn run_inner(job: &Job, rec: &mut RowRecord) -> anyhow::Result<()> {
    let s = job.scenario;
    std::fs::create_dir_all(&job.tmp).with_context(|| format!("creating {}", job.tmp.display()))?;
    let ns = match s.topology {
        Topology::Netns => Some(Netns::create(
            job.ns_index,
            s.link_delay.map(|d| d.as_secs_f64() * 1000.0),
        )?),
        Topology::Loopback => None,
    };
    if let Some(why) = ns.as_ref().and_then(|n| n.netem.clone()) {
        rec.netem = Some(format!("link delay asked for but not applied: {why}"));
    }
    let server_ns = ns.as_ref().map(|n| n.server.clone());
    let client_ns = ns.as_ref().map(|n| n.client.clone());
    let in_server = |mut v: Vec<String>| {
        if let Some(n) = &server_ns {
            let mut w = Netns::exec(n);
            w.append(&mut v);
            v = w;
        }
        v
    };

    // The server.
    let bind_ip: IpAddr = match (&ns, &s.proxy) {
        (Some(_), None) => IpAddr::V4(netns::SERVER_ADDR),
        _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    let mut argv = in_server(taskset(&s.server_cpus));
    argv.push(job.server_bin.display().to_string());
    argv.extend([
        "--bind".into(),
        SocketAddr::new(bind_ip, 0).to_string(),
        "--backlog".into(),
        s.backlog.to_string(),
    ]);
    if let Some(w) = s.workers {
        argv.extend(["--workers".into(), w.to_string()]);
    }
    if s.features.iter().any(|f| f == "mmap-backend") {
        argv.extend([
            "--counter-file".into(),
            job.tmp.join("count").display().to_string(),
        ]);
    }
    if s.features.iter().any(|f| f == "log-file") {
        // Logs are sinks under test, not results: they live in the temp dir
        // (removed after the row); their size is recorded.
        let log = job.tmp.join("access.log");
        rec.log_file = Some(log.display().to_string());
        argv.extend(["--log-file".into(), log.display().to_string()]);
    }
    // The piped-into-a-file sink is a log under test, not a result: it
    // lives in the temp dir like the others; its size is recorded.
    let mut sink = Sink::new(s.log, &job.tmp.join("server-stdout.txt"))?;
    let mut cmd = command(&argv);
    cmd.env("RUST_LOG", &s.log_level)
        .stdout(sink.stdio.take().expect("fresh sink"))
        .stderr(Stdio::piped());
    let mut server = Proc::spawn("server", &mut cmd)?;
    drop(cmd);
    let (line_tx, line_rx) = mpsc::channel();
    let stderr = server_stderr(&mut server, line_tx)?;
    let startup = wait_startup(&mut server, &line_rx, &stderr)?;
    rec.startup_line = Some(startup.clone());
    let server_addr: SocketAddr = startup
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("addr="))
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("no addr= in the start-up line {startup:?}"))?;

    // nginx in front, in the server's namespace.
    let mut proxy = None;
    let target = match &s.proxy {
        None => server_addr,
        Some(name) => {
            let listen_ip = if ns.is_some() {
                IpAddr::V4(netns::SERVER_ADDR)
            } else {
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            };
            let port = netns::within(server_ns.as_deref(), move || free_port(listen_ip))??;
            let listen = SocketAddr::new(listen_ip, port);
            let prefix = job.tmp.join("nginx");
            let config = nginx::render(
                job.root,
                name,
                &prefix,
                s.nginx_workers,
                listen,
                Some(server_addr),
            )?;
            proxy = Some(nginx::start(&config, &prefix, &in_server(Vec::new()))?);
            listen
        }
    };
    let reach = client_ns.clone();
    netns::within(reach.as_deref(), move || wait_port(target))??;

    // Verify, then measure. The static ceiling row measures nginx alone:
    // only its answer is checked, and there is no counter to cross-check.
    let binary = s.request == Request::Binary;
    let ceiling = s.proxy.as_deref() == Some("static");
    let before = if ceiling {
        let ex = netns::within(reach.as_deref(), move || {
            verify::exchange(target, "GET", None)
        })??;
        if ex.status != 200 {
            bail!("nginx static answered {} instead of 200", ex.status);
        }
        0
    } else {
        let verified = netns::within(reach.as_deref(), move || verify::verify(target, binary))?
            .with_context(|| format!("verifying {} at {target}", s.variant()))?;
        let before = verified.count;
        rec.verified = Some(verified);
        before
    };

    let log_path = job.table_dir.join(format!("{}.jsonl", job.stem));
    let mut argv = client_ns.as_ref().map_or_else(Vec::new, |n| Netns::exec(n));
    argv.extend(taskset(&s.loadgen_cpus));
    argv.push(job.loadgen_bin.display().to_string());
    for (flag, value) in [
        ("-c", s.connections.to_string()),
        ("-t", s.threads.to_string()),
        ("-d", humantime::format_duration(s.duration).to_string()),
        ("--warmup", humantime::format_duration(s.warmup).to_string()),
        (
            "--interval",
            humantime::format_duration(s.interval).to_string(),
        ),
        ("--format", "jsonl".into()),
        ("--shard", s.name.clone()),
    ] {
        argv.extend([flag.into(), value]);
    }
    if let Some(rate) = s.rate {
        argv.extend(["--rate".into(), rate.to_string()]);
    }
    match s.request {
        Request::Get => {}
        Request::Post => argv.extend(["--body".into(), "500".into()]),
        Request::Binary => argv.extend(["--body-hex".into(), "f401".into()]),
    }
    argv.push(format!("http://{target}/"));
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let lg_err = job.tmp.join("loadgen.stderr");
    let mut cmd = command(&argv);
    cmd.stdout(log).stderr(File::create(&lg_err)?);
    let mut loadgen = Proc::spawn("loadgen", &mut cmd)?;
    drop(cmd);

    let total = s.warmup + s.duration;
    let bar = indicatif::ProgressBar::new(total.as_secs().max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "  {prefix} [{elapsed_precise}] {wide_bar} {pos}/{len}s",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} #{}", s.name, job.repetition));
    let started = Instant::now();
    let mut interrupted = false;
    let status = loop {
        if let Some(status) = loadgen.try_wait() {
            break status;
        }
        if let Some(u) = usage(server.pid()) {
            rec.server = u;
        }
        if let Some(n) = &proxy {
            rec.nginx = usage(n.pid()).or(rec.nginx);
        }
        if let Some(u) = usage(loadgen.pid()) {
            rec.loadgen = u;
        }
        if job.stop.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            loadgen.signal(libc::SIGINT);
        }
        if server.try_wait().is_some() {
            loadgen.stop(Duration::from_secs(2));
            bar.finish_and_clear();
            bail!("the server exited during the load: {}", tail(&stderr));
        }
        bar.set_position(started.elapsed().as_secs().min(total.as_secs()));
        std::thread::sleep(Duration::from_millis(200));
    };
    bar.finish_and_clear();
    rec.loadgen_exit = status.code();
    if interrupted {
        return Err(Interrupted.into());
    }
    let lg_msg = std::fs::read_to_string(&lg_err).unwrap_or_default();
    let (summary_rps, acknowledged) = read_log(&log_path)?;
    rec.rps = summary_rps;
    if !status.success() {
        bail!("loadgen exited with {status}: {}", lg_msg.trim());
    }

    if verify::post_body(s.request).is_some() && !ceiling {
        let after = netns::within(reach.as_deref(), move || {
            verify::exchange(target, "GET", None).and_then(|ex| verify::count_of(&ex, binary))
        })??;
        let value = 500;
        let in_flight_max = u64::from(s.connections);
        let low = before + acknowledged * value;
        let ok = after >= low && after <= low + in_flight_max * value;
        rec.counter = Some(CounterCheck {
            before,
            after,
            acknowledged,
            in_flight_max,
            value,
            ok,
        });
        if !ok {
            bail!(
                "counter check: the server counts {after}, loadgen acknowledged {acknowledged} POSTs of {value} on top of {before} (at most {in_flight_max} more in flight)"
            );
        }
    }

    // Stop nginx, then the server; record how they ended.
    if let Some(mut n) = proxy.take() {
        rec.nginx_exit = n.stop(Duration::from_secs(10)).and_then(|s| s.code());
    }
    let exit = server.stop(Duration::from_secs(10));
    rec.server_exit = exit.and_then(|s| s.code());
    rec.server_stdout_bytes = sink.finish();
    rec.log_file_bytes = rec
        .log_file
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len());
    if rec.server_exit != Some(0) {
        bail!(
            "the server did not exit 0 on SIGTERM ({exit:?}): {}",
            tail(&stderr)
        );
    }
    Ok(())
}

type Lines = Arc<std::sync::Mutex<Vec<String>>>;

fn server_stderr(server: &mut Proc, first: mpsc::Sender<String>) -> anyhow::Result<Lines> {
    let pipe = server.take_stderr().context("server stderr")?;
    let lines: Lines = Arc::default();
    let sink = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if line.contains(" listening addr=") {
                let _ = first.send(line.clone());
            }
            let mut l = sink.lock().expect("stderr lines");
            if l.len() < 200 {
                l.push(line);
            }
        }
    });
    Ok(lines)
}

fn tail(lines: &Lines) -> String {
    let l = lines.lock().expect("stderr lines");
    l.iter()
        .rev()
        .take(3)
        .rev()
        .cloned()
        .collect::<Vec<_>>()
        .join(" | ")
}

fn wait_startup(
    server: &mut Proc,
    rx: &mpsc::Receiver<String>,
    stderr: &Lines,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(50)) {
            return Ok(line);
        }
        if let Some(status) = server.try_wait() {
            std::thread::sleep(Duration::from_millis(50));
            bail!(
                "the server exited ({status}) before listening: {}",
                tail(stderr)
            );
        }
        if Instant::now() > deadline {
            bail!("the server printed no start-up line within 30 s");
        }
    }
}

fn free_port(ip: IpAddr) -> anyhow::Result<u16> {
    let l = TcpListener::bind(SocketAddr::new(ip, 0))
        .with_context(|| format!("finding a free port on {ip}"))?;
    Ok(l.local_addr()?.port())
}

fn wait_port(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{addr} did not answer within 20 s")
}

/// (summary RPS, 2xx acknowledged including warm-up) from a loadgen jsonl log.
fn read_log(path: &Path) -> anyhow::Result<(Option<f64>, u64)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut rps = None;
    let mut acknowledged = 0;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match v["type"].as_str() {
            Some("interval") => acknowledged = v["total_ok"].as_u64().unwrap_or(acknowledged),
            Some("summary") => rps = v["rps"].as_f64(),
            _ => {}
        }
    }
    Ok((rps, acknowledged))
}
