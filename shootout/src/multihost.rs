//! One repetition of a row on remote hosts (`server_host`, `proxy_host`,
//! `load_hosts`), over the sessions the run opened: the server built here is
//! uploaded and started on its host, nginx on the proxy host, the app is
//! checked from every load host, and one loadgen per load host starts at a
//! common instant (`--start-at`) with its share of the connections and rate,
//! its jsonl streamed into `ROW[.repN].shard-HOST.jsonl` as it comes, which
//! the analysis merges by wall-clock interval. Remote processes are stopped
//! and the row's remote directories removed on every exit path; a host that
//! fails is named, with the tail of its stderr.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};

use crate::hosts::{Connected, RowHosts};
use crate::load::{self, Timing};
use crate::record::RowRecord;
use crate::remote::RemoteProc;
use crate::scenario::Scenario;
use crate::sequential::Job;
use crate::ssh::{quote, Session};
use crate::Interrupted;

/// How long before the loadgens' common start the runner picks it: time
/// for every ssh start to land.
const START_DELAY: Duration = Duration::from_secs(2);

/// Runs the job on its hosts; errors are recorded in the returned record.
pub fn run(job: &Job, hosts: &Connected) -> (RowRecord, Option<Interrupted>) {
    let mut rec = RowRecord::new(job.scenario, job.repetition);
    rec.topology = "hosts".into();
    let row = job.scenario.hosts.as_ref().expect("a remote row");
    let mut dirs = Dirs::default();
    let outcome = run_stages(job, hosts, row, &mut rec, &mut dirs);
    dirs.remove();
    rec.finish(outcome)
}

/// The row's directories on its hosts, removed at the end.
#[derive(Default)]
struct Dirs(Vec<(Session, String)>);

impl Dirs {
    fn make(&mut self, session: &Session, stem: &str) -> anyhow::Result<String> {
        let dir = format!(
            "{}/rows/{}-{stem}",
            session.host.workdir,
            std::process::id()
        );
        session.run(&format!("mkdir -p {}", quote(&dir)))?;
        self.0.push((session.handle(), dir.clone()));
        Ok(dir)
    }

    fn remove(&mut self) {
        for (session, dir) in self.0.drain(..) {
            let _ = session.run(&format!("rm -rf {}", quote(&dir)));
        }
    }
}

fn run_stages(
    job: &Job,
    hosts: &Connected,
    row: &RowHosts,
    rec: &mut RowRecord,
    dirs: &mut Dirs,
) -> anyhow::Result<()> {
    let s = job.scenario;
    let srv = hosts.session(&row.server)?;
    let srv_dir = dirs.make(srv, &job.stem)?;
    let mut server = start_server(job, srv, &srv_dir)?;
    rec.startup_line = Some(server.1.clone());
    let server_addr = server.2;

    let mut nginx = None;
    let target = match (&s.proxy, &row.proxy) {
        (Some(conf), Some(proxy)) => {
            let px = hosts.session(proxy)?;
            let px_dir = dirs.make(px, &job.stem)?;
            let (proc_, listen) = start_nginx(job.root, s, conf, px, &px_dir, server_addr)?;
            nginx = Some(proc_);
            listen
        }
        _ => server_addr,
    };

    let loads: Vec<&Session> = row
        .load
        .iter()
        .map(|n| hosts.session(n))
        .collect::<anyhow::Result<_>>()?;
    let mut bins = Vec::new();
    for l in &loads {
        let (bin, _) = l.upload(job.loadgen_bin)?;
        check_from(l, &bin, s, target)?;
        bins.push(bin);
    }

    let start_at = SystemTime::now() + START_DELAY;
    let mut loadgens = Vec::new();
    for (i, (l, bin)) in loads.iter().zip(&bins).enumerate() {
        let share = share_of(s, i, loads.len());
        let timing = Timing {
            warmup: s.warmup,
            duration: s.duration,
            start_at: Some(start_at),
        };
        let mut argv = load::argv(Path::new(bin), &share, target, timing);
        if let Some(p) = argv.iter().position(|a| a == "--shard") {
            argv[p + 1] = l.host.name.clone();
        }
        let path = job
            .table_dir
            .join(format!("{}.shard-{}.jsonl", job.stem, l.host.name));
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        loadgens.push(RemoteProc::spawn(l, &argv, Stdio::from(file))?);
    }

    let deadline = START_DELAY + s.warmup + s.duration + Duration::from_secs(30);
    let started = std::time::Instant::now();
    let mut sampled = started;
    loop {
        // Usage from the hosts' /proc once a second (each read is an ssh
        // round trip through the open connection).
        if sampled.elapsed() >= Duration::from_secs(1) {
            sampled = std::time::Instant::now();
            sample(rec, &server.0, nginx.as_ref(), &loadgens);
        }
        if job.stop.load(Ordering::Relaxed) {
            for l in &mut loadgens {
                let _ = l.stop(Duration::from_secs(2));
            }
            return Err(Interrupted.into());
        }
        if server.0.wait(Duration::ZERO).is_some() {
            bail!(
                "host {}: the server exited during the load: {}",
                row.server,
                server.0.stderr().join(" | ")
            );
        }
        if loadgens
            .iter_mut()
            .all(|l| l.wait(Duration::ZERO).is_some())
        {
            break;
        }
        if started.elapsed() > deadline {
            bail!("the loadgens did not finish within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for (l, name) in loadgens.iter_mut().zip(&row.load) {
        let status = l.wait(Duration::ZERO).expect("ended");
        if !status.success() {
            bail!(
                "host {name}: loadgen exited with {status}: {}",
                l.stderr().join(" | ")
            );
        }
    }
    rec.loadgen_exit = Some(0);
    let mut ok = 0.0;
    for name in &row.load {
        let path = job
            .table_dir
            .join(format!("{}.shard-{name}.jsonl", job.stem));
        ok += load::read_log(&path)?.rps.unwrap_or(0.0);
    }
    rec.rps = Some(ok);
    sample(rec, &server.0, nginx.as_ref(), &[]);
    if let Some(mut n) = nginx {
        rec.nginx_exit = n.stop(Duration::from_secs(10))?.and_then(|s| s.code());
    }
    let status = server.0.stop(Duration::from_secs(10))?;
    rec.server_exit = status.and_then(|s| s.code());
    if rec.server_exit != Some(0) {
        bail!(
            "host {}: the server did not exit 0 on SIGTERM ({status:?}): {}",
            row.server,
            server.0.stderr().join(" | ")
        );
    }
    Ok(())
}

/// Records the latest usage of the server, nginx (its master and workers)
/// and the loadgens (summed over the load hosts); a process that has just
/// ended keeps its last figures.
fn sample(
    rec: &mut RowRecord,
    server: &RemoteProc,
    nginx: Option<&RemoteProc>,
    loadgens: &[RemoteProc],
) {
    let to = |u: crate::remote::Usage, n: usize| crate::procs::Usage {
        cpu_seconds: u.cpu_s,
        peak_rss_bytes: u.peak_rss_kib * 1024,
        processes: n,
    };
    if let Ok(u) = server.usage() {
        rec.server = to(u, 1);
    }
    if let Some((u, n)) = nginx.and_then(|p| p.usage_with_children().ok()) {
        rec.nginx = Some(to(u, n));
    }
    if !loadgens.is_empty() {
        let all: Vec<_> = loadgens.iter().filter_map(|l| l.usage().ok()).collect();
        if all.len() == loadgens.len() {
            let sum = crate::remote::Usage {
                cpu_s: all.iter().map(|u| u.cpu_s).sum(),
                peak_rss_kib: all.iter().map(|u| u.peak_rss_kib).sum(),
            };
            rec.loadgen = to(sum, all.len());
        }
    }
}

/// The server on its host: (process, start-up line, listening address).
fn start_server(
    job: &Job,
    srv: &Session,
    dir: &str,
) -> anyhow::Result<(RemoteProc, String, SocketAddr)> {
    let s = job.scenario;
    let (bin, _) = srv.upload(job.server_bin)?;
    let ip = srv
        .host
        .address
        .parse()
        .with_context(|| format!("host {}: address is not an IP", srv.host.name))?;
    let argv = crate::stack::server_argv(s, bin, SocketAddr::new(ip, 0), Path::new(dir));
    let mut proc_ = RemoteProc::spawn(srv, &argv, Stdio::null())?;
    let line = proc_.wait_line(Duration::from_secs(30), |l| l.contains(" listening addr="))?;
    let addr = line
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("addr="))
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("host {}: no addr= in {line:?}", srv.host.name))?;
    Ok((proc_, line, addr))
}

/// nginx on the proxy host, on a port it accepts: a few random ports are
/// tried (the runner cannot ask the host for a free one).
fn start_nginx(
    root: &Path,
    s: &Scenario,
    conf: &str,
    px: &Session,
    dir: &str,
    upstream: SocketAddr,
) -> anyhow::Result<(RemoteProc, SocketAddr)> {
    use rand::Rng;
    let prefix = format!("{dir}/nginx");
    let ip = px
        .host
        .address
        .parse()
        .with_context(|| format!("host {}: address is not an IP", px.host.name))?;
    let mut last = String::new();
    for _ in 0..5 {
        let port = rand::thread_rng().gen_range(20_000..30_000);
        let listen = SocketAddr::new(ip, port);
        let config = crate::nginx::render(
            root,
            conf,
            Path::new(&prefix),
            s.nginx_workers,
            listen,
            Some(upstream),
        )?;
        px.write_file(&format!("{prefix}/nginx.conf"), config.as_bytes())?;
        px.run(&format!(
            "mkdir -p {}/tmp {}/logs",
            quote(&prefix),
            quote(&prefix)
        ))?;
        let argv: Vec<String> = [
            "nginx",
            "-p",
            &prefix,
            "-c",
            &format!("{prefix}/nginx.conf"),
            "-e",
            "stderr",
            "-g",
            "daemon off;",
        ]
        .map(String::from)
        .to_vec();
        let mut proc_ = RemoteProc::spawn(px, &argv, Stdio::null())?;
        // nginx says nothing when it listens: give it a moment, then check
        // that it still runs and answers from the proxy host itself.
        std::thread::sleep(Duration::from_millis(300));
        if proc_.wait(Duration::ZERO).is_none() {
            return Ok((proc_, listen));
        }
        last = proc_.stderr().join(" | ");
        if !last.contains("Address already in use") {
            break;
        }
    }
    bail!("host {}: nginx did not start: {last}", px.host.name)
}

/// The app answers 2xx from this load host: three requests of the row's kind.
fn check_from(l: &Session, bin: &str, s: &Scenario, target: SocketAddr) -> anyhow::Result<()> {
    let mut argv = vec![
        bin.to_string(),
        "-c".into(),
        "1".into(),
        "-n".into(),
        "3".into(),
        "--max-error-rate".into(),
        "0".into(),
        "--timeout".into(),
        "5s".into(),
    ];
    match s.request {
        crate::scenario::Request::Get => {}
        crate::scenario::Request::Post => argv.extend(["--body".into(), "0".into()]),
        crate::scenario::Request::Binary => argv.extend(["--body-hex".into(), "0000".into()]),
    }
    argv.push(format!("http://{target}/"));
    let line: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    l.run(&format!("{} >/dev/null", line.join(" ")))
        .with_context(|| format!("checking the app at {target} from host {}", l.host.name))?;
    Ok(())
}

/// Load host `i` of `n`'s share: the connections and rate split evenly,
/// the first hosts taking the remainder.
fn share_of(s: &Scenario, i: usize, n: usize) -> Scenario {
    let mut share = s.clone();
    let (c, n32) = (s.connections, n as u32);
    share.connections = c / n32 + u32::from((i as u32) < c % n32);
    share.rate = s.rate.map(|r| r / n as f64);
    share
}
