//! OpenSSH sessions against real sshds in network namespaces standing for
//! hosts (`scripts/netns-hosts`): preflight, upload by content hash, clock
//! offset, a skewed clock refused, a host whose sshd stops named in the
//! error, `shootout hosts` on the file the script writes, and nothing left
//! behind. Needs root and openssh-server (`shootout setup --all`).

use std::process::Command;
use std::time::Duration;

use shootout::place::affinity::Check;
use shootout::place::ssh::{check_offset, Session};

mod support;
use support::{control_dir, dev_actix_server, dev_loadgen, scratch, Hosts};

fn local(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn sessions_check_upload_time_and_name_a_lost_host() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "alpha beta", 0);
    let control = control_dir(dir.path());
    let settings = hosts.settings();
    let alpha = Session::open(&hosts.host("alpha", 1), &settings, &control).unwrap();
    let beta = Session::open(&hosts.host("beta", 2), &settings, &control).unwrap();

    // Preflight: the same machine underneath.
    let pre = alpha.preflight().unwrap();
    assert_eq!(pre.arch, local("uname", &["-m"]));
    assert_eq!(pre.kernel, local("uname", &["-r"]));
    assert_eq!(pre.cores.to_string(), local("nproc", &[]));
    // Each host is its own network: alpha sees its own address.
    assert!(alpha
        .run("ip -4 -o addr")
        .unwrap()
        .contains(&hosts.host("alpha", 1).address));
    // A stand-in is a fresh host: its shell runs none of this machine's rc
    // files (here, ~/.bashrc's `pyenv init` took a lock that a killed host
    // left behind, and every later command stalled 60 s).
    assert_eq!(
        alpha
            .run("wc -c < \"$HOME/.bashrc\" 2>/dev/null || echo 0")
            .unwrap()
            .trim(),
        "0"
    );

    // Upload: copied once, skipped when the same bytes are there, copied
    // again when they change, and runnable.
    let tool = dir.path().join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho one\n").unwrap();
    let (path1, copied) = alpha.upload(&tool).unwrap();
    assert!(copied);
    assert!(
        path1.starts_with(&hosts.host("alpha", 1).workdir),
        "{path1}"
    );
    assert_eq!(alpha.run(&path1).unwrap().trim(), "one");
    let (again, copied) = alpha.upload(&tool).unwrap();
    assert_eq!((again.as_str(), copied), (path1.as_str(), false));
    std::fs::write(&tool, "#!/bin/sh\necho two\n").unwrap();
    let (path2, copied) = alpha.upload(&tool).unwrap();
    assert!(copied && path2 != path1);
    assert_eq!(alpha.run(&path2).unwrap().trim(), "two");

    // Clock: the same clock underneath, so a small offset and a real round trip.
    let clock = beta.clock_offset(5).unwrap();
    assert!(clock.rtt_ms > 0.0, "{clock:?}");
    assert!(clock.offset_ms.abs() < clock.rtt_ms + 20.0, "{clock:?}");
    check_offset("beta", clock, 50.0).unwrap();
    // A host whose clock command says it is 3 s ahead is refused.
    std::env::set_var(
        "SHOOTOUT_TEST_CLOCK_CMD",
        // One reading of the clock: two `date` calls can straddle a second.
        "t=$(date +%s.%N); echo $(( ${t%.*} + 3 )).${t#*.}",
    );
    let skewed = beta.clock_offset(3);
    std::env::remove_var("SHOOTOUT_TEST_CLOCK_CMD");
    let skewed = skewed.unwrap();
    assert!((skewed.offset_ms - 3000.0).abs() < 200.0, "{skewed:?}");
    let err = check_offset("beta", skewed, 50.0).unwrap_err().to_string();
    assert!(err.starts_with("host beta: its clock is +"), "{err}");

    // A failing command names the host and the tail of its stderr.
    let err = alpha
        .run("echo broken >&2; exit 3")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("host alpha: `echo broken"), "{err}");
    assert!(err.ends_with(": broken"), "{err}");

    // beta's sshd stops: the next command fails and names beta.
    hosts.stop_sshd("beta");
    let err = beta.run("true").unwrap_err().to_string();
    assert!(err.starts_with("host beta: "), "{err}");
    assert_eq!(alpha.run("echo still").unwrap().trim(), "still");

    drop((alpha, beta));
    let names = hosts.namespaces();
    assert_eq!(names.len(), 2, "{names:?}");
    drop(hosts);
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !names.iter().any(|n| left.contains(n.as_str())),
        "namespaces left: {left}"
    );
    assert!(!dir.path().join("netns-hosts.state").exists());
}

/// `shootout hosts` on the hosts.toml netns-hosts wrote: a table naming every
/// host; then a host that is gone is named in one line and the command
/// fails, and the other host's check still ran (its loadgen already there).
#[test]
fn the_hosts_command_checks_every_host_and_names_the_one_that_fails() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server load1", 1);
    let file = dir.path().join("hosts.toml");
    let shootout = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shootout"))
            .args(args)
            .arg(&file)
            .args(["--build-profile", "dev"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, table, err) = shootout(&["hosts"]);
    assert_eq!(code, Some(0), "{err}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {table}"))
            .to_string()
    };
    assert!(row("server ").contains(" server "), "{table}");
    assert!(row("server ").ends_with(" -"), "{table}");
    assert!(row("load1 ").contains(" load "), "{table}");
    assert!(row("load1 ").contains("copied to "), "{table}");
    let (_, again, _) = shootout(&["hosts"]);
    assert!(
        again
            .lines()
            .any(|l| l.starts_with("load1 ") && l.contains("already at ")),
        "{again}"
    );

    hosts.stop_sshd("server");
    let (code, _, err) = shootout(&["hosts"]);
    assert_eq!(code, Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("shootout: host server: ssh root@"),
        "{err}"
    );
}

/// The pieces of a cross-host run, by hand: actix-server started on the
/// server host (its start-up line read through ssh), loadgen on two load
/// hosts with one start barrier (`--start-at`) and their shards streamed
/// back, remote CPU and peak RSS, a graceful stop (exit 0), and a process
/// still running when its handle drops killed on its host.
#[test]
fn a_server_and_two_loadgens_on_three_hosts() {
    use shootout::place::remote::RemoteProc;
    use std::process::Stdio;

    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server load1 load2", 2);
    let control = control_dir(dir.path());
    let settings = hosts.settings();
    let open =
        |name: &str, i: u32| Session::open(&hosts.host(name, i), &settings, &control).unwrap();
    let (server, load1, load2) = (open("server", 1), open("load1", 2), open("load2", 3));

    let (server_bin, _) = server.upload(&dev_actix_server()).unwrap();
    let loadgen = dev_loadgen();
    let addr = hosts.host("server", 1).address;
    let argv = [
        server_bin,
        "--bind".into(),
        format!("{addr}:0"),
        "--workers".into(),
        "1".into(),
    ];
    let mut app = RemoteProc::spawn(&server, &argv, Stdio::null()).unwrap();
    let line = app
        .wait_line(Duration::from_secs(15), |l| l.contains(" listening addr="))
        .unwrap();
    let listen = line
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("addr="))
        .unwrap()
        .to_string();
    assert!(listen.starts_with(&format!("{addr}:")), "{line}");

    let mut bins = Vec::new();
    for session in [&load1, &load2] {
        let (bin, copied) = session.upload(&loadgen).unwrap();
        assert!(copied);
        bins.push(bin);
    }
    let start_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 2000;
    let mut loads = Vec::new();
    for ((session, name), bin) in [(&load1, "load1"), (&load2, "load2")]
        .into_iter()
        .zip(&bins)
    {
        let shard = std::fs::File::create(dir.path().join(format!("{name}.jsonl"))).unwrap();
        let argv: Vec<String> = [
            bin.as_str(),
            "-c",
            "4",
            "-d",
            "2s",
            "--format",
            "jsonl",
            "--shard",
            name,
            "--start-at",
            &start_at.to_string(),
            &format!("http://{listen}/"),
        ]
        .map(String::from)
        .to_vec();
        loads.push(RemoteProc::spawn(session, &argv, Stdio::from(shard)).unwrap());
    }
    for l in &mut loads {
        let status = l.wait(Duration::from_secs(30)).expect("loadgen ended");
        assert!(status.success(), "{:?}", l.stderr());
    }
    // Both shards: records tagged with their shard, their intervals
    // starting at the barrier (the same instant on both, as their clocks
    // are one clock here), 2xx counted.
    let mut starts = Vec::new();
    for name in ["load1", "load2"] {
        let text = std::fs::read_to_string(dir.path().join(format!("{name}.jsonl"))).unwrap();
        let records: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let first = &records[0];
        assert_eq!(
            (first["type"].as_str(), first["shard"].as_str()),
            (Some("interval"), Some(name))
        );
        let summary = records.last().unwrap();
        assert_eq!(summary["type"], "summary", "{text}");
        assert!(summary["ok"].as_u64().unwrap() > 0, "{summary}");
        starts.push(first["start_unix_ms"].as_u64().unwrap());
    }
    for s in &starts {
        assert!(
            s.abs_diff(start_at as u64) < 100,
            "{starts:?} against {start_at}"
        );
    }

    let usage = app.usage().unwrap();
    assert!(usage.cpu_s > 0.0 && usage.peak_rss_kib > 1000, "{usage:?}");
    let status = app.stop(Duration::from_secs(10)).unwrap().expect("stopped");
    assert!(status.success(), "{status:?}: {:?}", app.stderr());
    assert!(!app.alive_there().unwrap());

    // A process still running when its handle drops is killed on its host.
    let argv: Vec<String> = ["sleep", "60"].map(String::from).to_vec();
    let long = RemoteProc::spawn(&load1, &argv, Stdio::null()).unwrap();
    let pid = long.pid;
    assert!(long.alive_there().unwrap());
    drop(long);
    let gone = load1
        .run(&format!(
            "kill -0 {pid} 2>/dev/null && echo alive || echo gone"
        ))
        .unwrap();
    assert_eq!(gone.trim(), "gone");
}

/// One host seam for every row: the same steps through `Host` on this
/// machine, in a network namespace and on a remote host over ssh. Each
/// gets a private directory, a file written into it and the server binary
/// placed; starts actix-server in a session of its own; reads its start-up
/// line; requests from the host itself (POST 7, then GET: the count is 7);
/// reads its usage from the host's /proc; stops it (exit 0). A remote
/// host's directory goes when it drops.
#[test]
fn one_host_seam_here_in_a_namespace_and_over_ssh() {
    use shootout::place::host::{Host, Launch};
    use std::net::SocketAddr;
    use std::process::Stdio;

    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server", 3);
    let control = control_dir(dir.path());
    let server = hosts.host("server", 1);
    let session = Session::open(&server, &hosts.settings(), &control).unwrap();
    let bin = dev_actix_server();
    let ns = format!("{}-server", hosts.prefix);
    assert!(hosts.namespaces().contains(&ns), "{:?}", hosts.namespaces());

    let places = [
        (Host::Local, "127.0.0.1"),
        (Host::Netns(ns), server.address.as_str()),
        (Host::Remote(session.handle()), server.address.as_str()),
    ];
    for (i, (host, ip)) in places.iter().enumerate() {
        let what = format!("{host:?}");
        let private = host.private_dir(&dir.path().join(format!("p{i}"))).unwrap();
        let note = format!("{}/note.txt", private.path);
        host.write_file(&note, b"hello").unwrap();
        assert_eq!(std::fs::read(&note).unwrap(), b"hello", "{what}");
        let placed = host.place_binary(&bin).unwrap();
        assert_eq!(
            matches!(host, Host::Remote(_)),
            placed != bin.display().to_string()
        );
        let mut app = host
            .spawn(Launch {
                name: "server",
                argv: vec![
                    placed,
                    "--bind".into(),
                    format!("{ip}:0"),
                    "--workers".into(),
                    "1".into(),
                ],
                cpus: Some("0"),
                env: vec![("RUST_LOG".into(), "info".into())],
                cwd: None,
                stdout: Stdio::null(),
                session: true,
                cgroup: false,
            })
            .unwrap();
        // Placed before its program starts, on every kind of host: read
        // at once, it is already on CPU 0 (issue 68).
        let read = app.read_cpus("server", Some("0")).unwrap();
        read.check().unwrap_or_else(|e| panic!("{what}: {e:#}"));
        let line = app
            .stderr()
            .wait_line(Duration::from_secs(15), app_core::is_startup_line)
            .unwrap();
        let addr: SocketAddr = app_core::startup_addr(&line).unwrap();
        assert_eq!(addr.ip().to_string(), *ip, "{what}: {line}");
        host.wait_port(addr).unwrap();
        let post = host.exchange(addr, "POST", Some(b"7")).unwrap();
        assert_eq!(post.status, 200, "{what}");
        let get = host.exchange(addr, "GET", None).unwrap();
        assert_eq!(get.body, b"7", "{what}: {get:?}");
        let usage = app.usage().expect("usage");
        assert!(usage.peak_rss_bytes > 1 << 20, "{what}: {usage:?}");
        assert_eq!(usage.processes, 1, "{what}");
        let status = app.stop(Duration::from_secs(10)).unwrap().expect("ended");
        assert!(
            status.success(),
            "{what}: {status:?} {:?}",
            app.stderr().lines()
        );
        assert!(!host.accepts(addr).unwrap(), "{what}: still accepting");
        let path = private.path.clone();
        drop(private);
        assert_eq!(
            std::path::Path::new(&path).exists(),
            !matches!(host, Host::Remote(_)),
            "{what}: {path}"
        );
    }
    // A step that runs only on this machine (a terminal emulator drawing
    // the server's output) names the remote host it cannot run for.
    let remote = Host::Remote(session.handle());
    let err = remote
        .terminal_argv(vec!["true".into()])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("host server: "), "{err}");
}
