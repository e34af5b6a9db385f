//! Rows on remote hosts, end to end over ssh: four stand-in hosts
//! (`scripts/netns-hosts`: a server, a proxy and two load hosts, each with
//! its own sshd), one `shootout run` with a direct row and a row through
//! nginx on the proxy host, both loaded from the two load hosts; then a load
//! host lost mid-run, named, with nothing left behind; and a skewed clock
//! refused before anything starts. Needs root, nginx and openssh-server.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

mod support;
use support::{scratch, Hosts};

fn scenario(hosts_toml: &str, rows: &str) -> String {
    format!(
        "title = \"multihost\"\n\n{hosts_toml}\n[defaults]\nrequest = \"post\"\nconnections = 6\nwarmup = \"1s\"\nduration = \"1s\"\n\n{rows}"
    )
}

const ROWS: &str = r#"
[[scenario]]
name = "direct"
server = "actix"
server_host = "server"
load_hosts = ["load1", "load2"]

[[scenario]]
name = "proxied"
server = "actix"
proxy = "proxy"
server_host = "server"
proxy_host = "proxy"
load_hosts = ["load1", "load2"]
"#;

/// Writes `dir/name`: the hosts `scripts/netns-hosts` made, then `rows`
/// with the shared defaults.
fn scenario_file(dir: &Path, name: &str, rows: &str) -> std::path::PathBuf {
    let hosts_toml = std::fs::read_to_string(dir.join("hosts.toml")).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, scenario(&hosts_toml, rows)).unwrap();
    file
}

fn shootout(file: &Path, out: &Path, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_shootout"))
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .args(["--build-profile", "dev"])
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to 5 min: builds may queue behind other tests') until a
/// process matching `pattern` runs; fails at once if the run ended first.
/// Runs `file` into `out`, SIGINTs the run `after` a process matching
/// `pattern` appears, and checks that it exited with 130.
fn interrupt_when_running(file: &Path, out: &Path, pattern: &str, after: Duration) {
    let mut child = shootout(file, out, &[]);
    wait_for(&mut child, pattern);
    std::thread::sleep(after);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
}

/// Runs `file` into `out`, SIGKILLs the processes matching `pattern`
/// `after` one appears, and checks that the run failed (exit 1); returns
/// what it printed.
fn kill_when_running(file: &Path, out: &Path, pattern: &str, after: Duration) -> String {
    let mut child = shootout(file, out, &[]);
    wait_for(&mut child, pattern);
    std::thread::sleep(after);
    let killed = Command::new("pkill")
        .args(["-9", "-f", pattern])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    all
}

fn wait_for(child: &mut std::process::Child, pattern: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        let ps = Command::new("pgrep")
            .args(["-f", pattern])
            .output()
            .unwrap();
        if ps.status.success() {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("the run ended ({status}) before {pattern:?} ran: {err}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{pattern:?} never ran"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `file` with results under `dir`, which must succeed; the run's
/// directory and its meta.json.
fn run_to_end(file: &Path, dir: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let out = shootout(file, &dir.join("results"), &[])
        .wait_with_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let run = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let meta = serde_json::from_str(
        &analysis::input::raw::read_to_string(&run.join("meta.json")).unwrap(),
    );
    (run, meta.unwrap())
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// No process runs from the hosts' work directories and no row directory
/// is left in them.
fn nothing_left(hosts: &Hosts) {
    let dir = hosts.dir.display().to_string();
    let ps = Command::new("pgrep").args(["-af", &dir]).output().unwrap();
    let procs = String::from_utf8_lossy(&ps.stdout);
    let procs: Vec<&str> = procs.lines().filter(|l| !l.contains("sshd")).collect();
    assert!(procs.is_empty(), "left running: {procs:?}");
    // nginx workers whose master died would be adopted by init.
    let ps = Command::new("ps")
        .args(["-eo", "ppid=,comm="])
        .output()
        .unwrap();
    let orphans: Vec<String> = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| {
            let mut f = l.split_whitespace();
            f.next() == Some("1") && f.next() == Some("nginx")
        })
        .map(str::to_owned)
        .collect();
    assert!(orphans.is_empty(), "orphaned nginx: {orphans:?}");
    for h in ["server", "proxy", "load1", "load2"] {
        let rows = hosts.dir.join("hosts").join(h).join("work/rows");
        let left: Vec<_> = std::fs::read_dir(&rows)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{h}: left {left:?}");
    }
}

#[test]
fn two_load_hosts_through_a_proxy_host_end_to_end() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server proxy load1 load2", 3);
    let file = scenario_file(dir.path(), "multihost.toml", ROWS);
    let (run, meta) = run_to_end(&file, dir.path());
    let checked = meta["hosts"].as_array().unwrap();
    assert_eq!(checked.len(), 4, "{meta}");
    for h in checked {
        assert!(h["preflight"]["cores"].as_u64().unwrap() >= 1, "{h}");
        assert!(
            h["clock"]["offset_ms"].as_f64().unwrap().abs() < 50.0,
            "{h}"
        );
    }
    for row in meta["rows"].as_array().unwrap() {
        assert!(row["error"].is_null(), "{row}");
        assert_eq!(row["server_exit"], 0, "{row}");
        assert!(row["rps"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["startup_line"]
            .as_str()
            .unwrap()
            .contains(" listening addr=10."));
        assert_eq!(row["topology"], "hosts", "{row}");
        // Verified from the load hosts, and the count after the load
        // reconciled with the 2xx both loadgens read, as on one machine.
        assert!(row["verified"]["count"].is_u64(), "{row}");
        assert!(row["counter"].is_object(), "{row}");
    }
    for row in meta["rows"].as_array().unwrap() {
        // CPU from the hosts' /proc: the server's, and both loadgens'.
        assert!(
            row["server"]["cpu_seconds"].as_f64().unwrap() > 0.0,
            "{row}"
        );
        assert_eq!(row["loadgen"]["processes"], 2, "{row}");
    }
    let proxied = &meta["rows"][1];
    assert_eq!(proxied["nginx_exit"], 0, "{meta}");
    assert!(
        proxied["nginx"]["processes"].as_u64().unwrap() >= 2,
        "{proxied}"
    );
    // One shard per load host and row, both with 2xx, merged by the analysis.
    for row in ["direct", "proxied"] {
        for load in ["load1", "load2"] {
            let shard = run
                .join("multihost")
                .join(format!("{row}.shard-{load}.jsonl"));
            let log = analysis::input::raw::read_to_string(&shard).unwrap();
            let last: serde_json::Value =
                serde_json::from_str(log.lines().last().unwrap()).unwrap();
            assert_eq!(
                (last["type"].as_str(), last["shard"].as_str()),
                (Some("summary"), Some(load))
            );
            assert!(last["ok"].as_u64().unwrap() > 0, "{last}");
        }
    }
    // The merged row keeps each load host's own figure.
    let summary: serde_json::Value = serde_json::from_str(
        &analysis::input::raw::read_to_string(&run.join("summary.json")).unwrap(),
    )
    .unwrap();
    let text = summary.to_string();
    for load in ["load1", "load2"] {
        assert!(text.contains(&format!("\"shard\":\"{load}\"")), "{text}");
    }
    let readme = std::fs::read_to_string(run.join("README.md")).unwrap();
    assert!(
        readme.contains("proxied") && readme.contains("direct"),
        "{readme}"
    );
    nothing_left(&hosts);
}

#[test]
fn a_load_host_lost_mid_run_is_named_and_nothing_is_left() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server proxy load1 load2", 4);
    let rows = ROWS.replace("name = \"direct\"", "name = \"direct\"\nduration = \"10s\"");
    let file = scenario_file(dir.path(), "lost.toml", &rows);
    let mut child = shootout(&file, &dir.path().join("results"), &[]);
    // Wait until load2's loadgen runs, then take load2 away.
    let load2_bin = dir.path().join("hosts/load2/work/bin");
    wait_for(&mut child, &format!("{}.*--start-at", load2_bin.display()));
    std::thread::sleep(Duration::from_secs(3));
    hosts.stop_sshd("load2");
    let out = child.wait_with_output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("host load2: "), "{all}");
    nothing_left(&hosts);
}

#[test]
fn a_skewed_clock_is_refused_before_anything_starts() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server load1", 5);
    let rows = "[[scenario]]\nname = \"direct\"\nserver = \"actix\"\nserver_host = \"server\"\nload_hosts = [\"load1\"]\n";
    let file = scenario_file(dir.path(), "skew.toml", rows);
    let out = shootout(
        &file,
        &dir.path().join("results"),
        &[(
            "SHOOTOUT_TEST_CLOCK_CMD",
            "echo $(( $(date +%s) + 2 )).$(date +%N)",
        )],
    )
    .wait_with_output()
    .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("its clock is +"), "{all}");
    assert!(
        all.contains("host server: ") && all.contains("host load1: "),
        "{all}"
    );
    nothing_left(&hosts);
}

#[test]
fn ctrl_c_mid_run_stops_everything_on_every_host() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server proxy load1 load2", 6);
    let rows = ROWS.replace(
        "name = \"proxied\"",
        "name = \"proxied\"\nduration = \"30s\"",
    );
    let file = scenario_file(dir.path(), "ctrlc.toml", &rows);
    let mut child = shootout(&file, &dir.path().join("results"), &[]);
    let load1_bin = dir.path().join("hosts/load1/work/bin");
    // The proxied row's loadgens: nginx runs on the proxy host by then.
    wait_for(
        &mut child,
        &format!("{}.* -d 30s .*--start-at", load1_bin.display()),
    );
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    nothing_left(&hosts);
}

/// The paired design on remote hosts: an A/A row and a row behind nginx on
/// the proxy host, each against a baseline on the server host, loaded from
/// a load host, both stacks up at once. The servers' and nginx's CPU time at
/// every interval boundary is read on their own hosts (a sampler each) and
/// lands in the block's cpu.jsonl; counters reconcile; nothing is left.
#[test]
fn a_paired_comparison_on_remote_hosts() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server proxy load1", 7);
    let hosts_toml = std::fs::read_to_string(dir.path().join("hosts.toml")).unwrap();
    let file = dir.path().join("paired.toml");
    let text_of_file = format!(
        r#"title = "paired on hosts"
baseline = "base"
design = "paired"

{hosts_toml}
[paired]
schedule = "duet"
block = "1s"
settle = "500ms"
blocks = 4

[defaults]
request = "post"
connections = 8
workers = 1
server_host = "server"
load_hosts = ["load1"]
placement = "free"

[[scenario]]
name = "base"
server = "actix"

[[scenario]]
name = "aa"
server = "actix"

[[scenario]]
name = "proxied"
server = "actix"
proxy = "proxy"
proxy_host = "proxy"
"#
    );
    std::fs::write(&file, text_of_file).unwrap();
    let (run, meta) = run_to_end(&file, dir.path());
    assert_eq!(meta["design"], "paired");
    let comps = meta["paired"].as_array().unwrap();
    assert_eq!(comps.len(), 2, "{meta}");
    for c in comps {
        assert!(c["error"].is_null(), "{c}");
        assert!(c["cpu_ratio"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["rps_ratio"].as_f64().unwrap() > 0.0, "{c}");
        let blocks = c["blocks"].as_array().unwrap();
        assert!(blocks.len() >= 2, "{c}");
        for b in blocks {
            assert!(b["error"].is_null(), "{b}");
            for side in ["row", "base"] {
                assert_eq!(b[format!("{side}_server_exit")], 0, "{b}");
                assert_eq!(b[format!("{side}_counter")]["ok"], true, "{b}");
                assert!(b[format!("{side}_startup_line")]
                    .as_str()
                    .unwrap()
                    .contains(" listening addr=10."));
            }
        }
    }
    // Every boundary has both slots' CPU, read on the hosts, and it grows.
    for row in ["aa", "proxied"] {
        let mut files = 0;
        for entry in analysis::input::raw::read_dir(&run.join("paired").join(row)).unwrap() {
            let name = entry.name();
            if !name.ends_with(".cpu.jsonl") {
                continue;
            }
            files += 1;
            let lines: Vec<serde_json::Value> = analysis::input::raw::read_to_string(&entry.path)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert!(lines.len() >= 3, "{name}");
            for side in ["row_cpu_ns", "base_cpu_ns"] {
                let first = lines[0][side].as_u64().unwrap();
                let last = lines.last().unwrap()[side].as_u64().unwrap();
                assert!(
                    first > 0 && last > first,
                    "{name} {side}: {first} -> {last}"
                );
            }
        }
        assert!(files >= 2, "{row}: {files} cpu files");
    }
    nothing_left(&hosts);
}

/// A sinks file whose rows log into an ssh terminal on the stand-in
/// `server` (`rows` adds `[[scenario]]` tables; each run writes `settle`
/// uncounted, then `length`).
fn ssh_sinks_file(
    dir: &Path,
    name: &str,
    (settle, length): (&str, &str),
    rows: &str,
) -> std::path::PathBuf {
    let hosts_toml = std::fs::read_to_string(dir.join("hosts.toml")).unwrap();
    let text = format!(
        "title = \"ssh sinks\"\ndesign = \"sinks\"\n\n[sinks]\nruns = 2\nsettle = \"{settle}\"\nlength = \"{length}\"\nsample = \"500ms\"\n\n{hosts_toml}\n[defaults]\nrequest = \"post\"\nconnections = 4\nworkers = 1\nfeatures = [\"log-stdout\"]\nlog = \"ssh-terminal\"\nssh_host = \"server\"\n\n{rows}"
    );
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

/// xterm and Xvfb are installed (`scripts/test` installs them as root);
/// a test that draws fails without them, naming them, rather than leaving
/// its xterm row out.
fn require_xterm() {
    use shootout::prepare::setup::{require, FIXED_FONT, XAUTH, XTERM, XVFB};
    if let Err(e) = require(&[XVFB, XAUTH, XTERM, FIXED_FONT]) {
        panic!("{e}");
    }
}

/// The stand-in's link carries no shaping left by the run.
fn no_qdisc_left(hosts: &Hosts) {
    let ns = format!("{}-server", hosts.prefix);
    let out = Command::new("ip")
        .args(["netns", "exec", &ns, "tc", "qdisc", "show"])
        .output()
        .unwrap();
    let qdiscs = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{qdiscs}");
    assert!(!qdiscs.contains("tbf"), "left shaped: {qdiscs}");
}

/// Nothing of an ssh-terminal run is left: no ssh client or writer (their
/// command lines name the host's work directory), no Xvfb or xterm the
/// run tagged, no row directory on the host, no qdisc.
fn no_terminal_left(hosts: &Hosts, out: &Path) {
    nothing_left(hosts);
    no_qdisc_left(hosts);
    // Only this test's: the others of this file run at the same time
    // (their servers run from the hosts' work directories, so a server
    // from target/shootout/ here is a sinks sample's; another test's live
    // sample has a live parent, one left behind is an orphan).
    let mut left = support::left_under(out);
    left.extend(support::orphans(&support::own_builds()));
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn an_ssh_terminal_sink_runs_through_ssh_and_a_shaped_link() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server", 8);
    let mut rows = String::from(
        // The ssh client here and the sshd there where the row puts them:
        // checked before the drain counts.
        "[[scenario]]\nname = \"shaped\"\nserver = \"actix\"\nlink_rate = \"8mbit\"\nsink_cpus = \"0\"\nsshd_cpus = \"1\"\n",
    );
    require_xterm();
    rows += "\n[[scenario]]\nname = \"xterm\"\nserver = \"ntex\"\nterminal = \"xterm\"\n";
    // A second uncounted, then three counted: the writer counts what its
    // writes hand over, and the link's buffers (ssh's window, TCP's send
    // buffer as autotuning grows it) take more than the link carries
    // until they are full. In a clean run's busy lanes, after 300 ms one
    // run counted 1.92 MB in 1.06 s through the 1 MB/s link; after 1 s,
    // with the lanes' load beside it, 1.52 MB in 1.00 s. Over 3 s the
    // same half megabyte of filling buffers stays well inside the bound
    // below; the bound itself is unchanged.
    let file = ssh_sinks_file(dir.path(), "ssh-sinks.toml", ("1s", "3s"), &rows);
    let (run, meta) = run_to_end(&file, dir.path());
    assert_eq!(meta["design"], "sinks");
    // The sink by the name the file gives it.
    assert_eq!(meta["rows"][0]["log"], "ssh-terminal", "{meta}");
    let table = run.join("ssh-sinks");
    let shaped: serde_json::Value =
        serde_json::from_slice(&std::fs::read(table.join("shaped.sinks.json")).unwrap()).unwrap();
    assert_eq!(shaped["sink"], "ssh-terminal", "{shaped}");
    assert_eq!(shaped["drawn"], "drained", "{shaped}");
    assert_eq!(shaped["link_rate_bps"], 8_000_000, "{shaped}");
    let path = shaped["terminal"].as_str().unwrap();
    assert!(path.starts_with("ssh -tt to host server ("), "{path}");
    assert!(path.contains("tbf rate 8000000 bit/s"), "{path}");
    for r in shaped["runs"].as_array().unwrap() {
        let (lines, bytes, secs) = (
            r["lines"].as_f64().unwrap(),
            r["bytes"].as_f64().unwrap(),
            r["seconds"].as_f64().unwrap(),
        );
        assert!(lines > 0.0, "{r}");
        assert_eq!(r["settle_s"], 1.0, "{r}");
        // The server's lines as it writes them to a terminal: coloured
        // (about 146 bytes; 110 in a file).
        assert!(bytes / lines > 130.0, "{r}");
        // The shaper holds: no run took more than the link carries (1 MB/s
        // at 8 Mbit/s, with room for tbf's burst and the writer's last
        // write). A limit, not a speed: a slow machine only lowers it.
        assert!(bytes / secs < 1.5e6, "{r}");
    }
    {
        let x: serde_json::Value =
            serde_json::from_slice(&std::fs::read(table.join("xterm.sinks.json")).unwrap())
                .unwrap();
        let path = x["terminal"].as_str().unwrap();
        assert!(
            path.contains("link not shaped; drawn by xterm on Xvfb"),
            "{path}"
        );
    }
    let readme = std::fs::read_to_string(run.join("README.md")).unwrap();
    assert!(readme.contains("| Drain lines/s |"), "{readme}");
    no_terminal_left(&hosts, &dir.path().join("results"));
}

#[test]
fn an_ssh_terminal_writer_killed_or_a_sigint_leaves_nothing() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server", 9);
    let row = "[[scenario]]\nname = \"shaped\"\nserver = \"actix\"\nlink_rate = \"8mbit\"\nterminal = \"xterm\"\n";
    require_xterm();
    let row = row.to_string();
    let file = ssh_sinks_file(dir.path(), "ssh-long.toml", ("300ms", "30s"), &row);
    let writer = dir.path().join("hosts/server/work/bin");
    let writer = format!("{}.*sink-writer", writer.display());

    // The writer dies on its host: the row fails, named, and the run
    // takes everything down.
    let all = kill_when_running(
        &file,
        &dir.path().join("results"),
        &writer,
        Duration::from_millis(500),
    );
    assert!(all.contains("the sink writer exited with"), "{all}");
    no_terminal_left(&hosts, &dir.path().join("results"));

    // SIGINT mid-drain: exit 130, nothing left.
    let results = dir.path().join("results-int");
    interrupt_when_running(&file, &results, &writer, Duration::from_millis(500));
    no_terminal_left(&hosts, &results);
}

#[test]
fn logs_into_files_on_the_server_host() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server load1", 10);
    // The file sink's row runs the tuned build conformance runs (its
    // file-sink test: one access line per request), not one of its own.
    let rows = r#"
[[scenario]]
name = "stdout-file"
server = "actix"
features = ["log-stdout"]
log = "file"
server_host = "server"
load_hosts = ["load1"]

[[scenario]]
name = "log-file"
server = "ntex"
features = ["global-counter", "keepalive-os", "snmalloc", "no-alloc", "log-file"]
server_host = "server"
load_hosts = ["load1"]

[[scenario]]
name = "stdout-pipe"
server = "ntex"
features = ["log-stdout"]
log = "pipe"
server_host = "server"
load_hosts = ["load1"]
server_cpus = "1"

[[scenario]]
name = "stdout-pty"
server = "actix"
features = ["log-stdout"]
log = "terminal"
server_host = "server"
load_hosts = ["load1"]
server_cpus = "1"
sink_cpus = "0"

[[scenario]]
name = "stdout-pty-error"
server = "actix"
features = ["log-stdout"]
log = "terminal"
log_level = "error"
server_host = "server"
load_hosts = ["load1"]

[[scenario]]
name = "stdout-xterm"
server = "ntex"
features = ["log-stdout"]
log = "xterm"
server_host = "server"
load_hosts = ["load1"]
"#;
    let file = scenario_file(dir.path(), "files.toml", rows);
    let (run, meta) = run_to_end(&file, dir.path());
    // One load host: a row's log has no shard suffix.
    let answered = |name: &str| -> u64 {
        let path = run.join("files").join(format!("{name}.jsonl"));
        let log =
            analysis::input::raw::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
        last["ok"].as_u64().unwrap()
    };
    for (i, key) in [
        (0, "server_stdout_bytes"),
        (1, "log_file_bytes"),
        (2, "server_stdout_bytes"),
        (3, "server_stdout_bytes"),
        (4, "server_stdout_bytes"),
    ] {
        let row = &meta["rows"][i];
        assert!(row["error"].is_null(), "{row}");
        let name = row["scenario"].as_str().unwrap();
        let answered = answered(name);
        assert!(answered > 0, "{row}");
        let bytes = row[key].as_u64().unwrap_or(0);
        if name == "stdout-pty-error" {
            // At error level a served request logs nothing (the start-up
            // and shutdown lines go to stderr).
            assert!(bytes < 5 * answered, "{bytes} for {answered}: {row}");
            continue;
        }
        // One access-log line (about 110 bytes) per answered request, in
        // a file on the server's host: nothing came back over ssh.
        assert!(
            bytes >= 50 * answered,
            "{key} {bytes} for {answered}: {row}"
        );
        if name == "stdout-pty" {
            // A terminal on the server's host: the server saw a tty and
            // coloured its lines (about 137 bytes and a carriage return).
            let t = row["terminal"].as_str().unwrap_or_default();
            assert!(t.contains("script(1) drains"), "{row}");
            assert!(bytes >= 130 * answered, "{bytes} for {answered}: {row}");
        }
    }
    // The readers there, as read back on the server's host: `cat` of the
    // pipe on the server's CPU by default (not the server's child: the
    // server is one process), `script` of the pty (and the shell it runs)
    // where the row puts it.
    for (i, cpu, procs) in [(2, "1", 1), (3, "0", 2)] {
        let row = &meta["rows"][i];
        let cpus = row["cpus"].as_array().unwrap();
        let find = |p: &str| {
            cpus.iter()
                .find(|c| c["process"] == p)
                .unwrap_or_else(|| panic!("no {p} record: {row}"))
        };
        let reader = find("sink reader");
        assert_eq!(reader["wanted"], cpu, "{reader}");
        assert_eq!(reader["read"], serde_json::json!([cpu]), "{reader}");
        assert_eq!(reader["processes"], procs, "{reader}");
        let server = find("server");
        assert_eq!(server["read"], serde_json::json!(["1"]), "{server}");
        assert_eq!(server["processes"], 1, "{server}");
    }
    // xterm drew on an Xvfb display on the server's host (xvfb-run), and
    // neither is left there (their command lines name the row's directory).
    let row = &meta["rows"][5];
    assert!(row["error"].is_null(), "{row}");
    let t = row["terminal"].as_str().unwrap_or_default();
    assert!(
        t.contains("drawn by xterm") && t.contains("on host server"),
        "{row}"
    );
    assert!(answered("stdout-xterm") > 0, "{row}");
    nothing_left(&hosts);
}

/// Served rows whose server runs on the stand-in `server` through `ssh
/// -tt` (`rows` adds `[[scenario]]` tables), loaded from `load1`.
fn served_ssh_file(dir: &Path, name: &str, duration: &str, rows: &str) -> std::path::PathBuf {
    let hosts_toml = std::fs::read_to_string(dir.join("hosts.toml")).unwrap();
    let text = format!(
        "title = \"served over ssh\"\n\n{hosts_toml}\n[defaults]\nrequest = \"post\"\nconnections = 4\nworkers = 1\nwarmup = \"1s\"\nduration = \"{duration}\"\nfeatures = [\"log-stdout\"]\nlog_level = \"info\"\nlog = \"ssh-terminal\"\nssh_host = \"server\"\nserver_host = \"server\"\nload_hosts = [\"load1\"]\n\n{rows}"
    );
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_served_row_logs_into_an_ssh_terminal() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server load1", 11);
    let mut rows = String::from(
        "[[scenario]]\nname = \"shaped\"\nserver = \"actix\"\nlink_rate = \"4mbit\"\nsink_cpus = \"0\"\nsshd_cpus = \"1\"\n",
    );
    require_xterm();
    rows += "\n[[scenario]]\nname = \"xterm\"\nserver = \"ntex\"\nterminal = \"xterm\"\n";
    let file = served_ssh_file(dir.path(), "served-ssh.toml", "2s", &rows);
    let (run, meta) = run_to_end(&file, dir.path());
    let shaped = &meta["rows"][0];
    assert!(shaped["error"].is_null(), "{shaped}");
    assert_eq!(shaped["log"], "ssh-terminal", "{shaped}");
    let path = shaped["terminal"].as_str().unwrap();
    assert!(
        path.starts_with("server started through ssh -tt to host server ("),
        "{path}"
    );
    assert!(path.contains("for sshd's traffic only"), "{path}");
    // The lines crossed ssh to the pseudo-terminal drained here, through
    // the shaped class, whose counters were kept.
    assert!(
        shaped["server_stdout_bytes"].as_u64().unwrap() > 0,
        "{shaped}"
    );
    assert!(shaped["link"]["bytes"].as_u64().unwrap() > 0, "{shaped}");
    // The ssh client here and the runner's thread draining its pty, where
    // the row puts them, as read back.
    let cpus = shaped["cpus"].as_array().unwrap();
    // The sshd there serving the session, where the row puts it (one
    // process: the session's own, not the host's daemon).
    for (p, cpu) in [("ssh client", "0"), ("sink reader", "0"), ("sshd", "1")] {
        let c = cpus.iter().find(|c| c["process"] == p);
        let c = c.unwrap_or_else(|| panic!("no {p} record: {shaped}"));
        assert_eq!(c["wanted"], cpu, "{c}");
        assert_eq!(c["read"], serde_json::json!([cpu]), "{c}");
        assert_eq!(c["processes"], 1, "{c}");
    }
    let log = analysis::input::raw::read_to_string(&run.join("served-ssh/shaped.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert!(last["ok"].as_u64().unwrap() > 0, "{last}");
    {
        let x = &meta["rows"][1];
        assert!(x["error"].is_null(), "{x}");
        let path = x["terminal"].as_str().unwrap();
        assert!(path.contains("drawn here by xterm on Xvfb"), "{path}");
        // xterm and its Xvfb here, read back with the server (no CPUs
        // named: the row leaves them to the scheduler).
        let cpus = x["cpus"].as_array().unwrap();
        let term = cpus.iter().find(|c| c["process"] == "terminal");
        let term = term.unwrap_or_else(|| panic!("no terminal record: {x}"));
        assert!(
            term["wanted"].is_null() && term["processes"].as_u64() >= Some(2),
            "{term}"
        );
    }
    no_terminal_left(&hosts, &dir.path().join("results"));

    // The server killed on its host mid-row: the row fails, named, and
    // nothing is left. (The shaped row alone: after it fails the run would
    // go on to the xterm row's 60 s.)
    let shaped = "[[scenario]]\nname = \"shaped\"\nserver = \"actix\"\nlink_rate = \"4mbit\"\n";
    let long = served_ssh_file(dir.path(), "served-long.toml", "60s", shaped);
    let server = format!(
        "{}.*--bind",
        dir.path().join("hosts/server/work/bin").display()
    );
    let results = dir.path().join("results-kill");
    let mut child = shootout(&long, &results, &[]);
    // Once the load runs (the server has answered, on a loaded machine
    // later than 2 s after it started): loadgen with its URL, not the
    // binary being placed.
    let loadgen = format!(
        "{}/[^ ]*loadgen .*http://",
        dir.path().join("hosts/load1/work/bin").display()
    );
    wait_for(&mut child, &loadgen);
    std::thread::sleep(Duration::from_secs(1));
    assert!(Command::new("pkill")
        .args(["-9", "-f", &server])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("host server: the server died"), "{all}");
    no_terminal_left(&hosts, &results);

    // SIGINT mid-row: exit 130, nothing left.
    let results = dir.path().join("results-int");
    let mut child = shootout(&long, &results, &[]);
    wait_for(&mut child, &server);
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    no_terminal_left(&hosts, &results);
}

/// xterm drawing on the server's host (xvfb-run there): a SIGINT while it
/// draws ends the run with 130, and a server killed on its host ends the
/// row with its signal; either way no Xvfb, xterm or server is left there.
#[test]
fn an_emulator_on_the_server_host_stops_with_the_run() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server load1", 12);
    let rows = "[[scenario]]\nname = \"xterm-there\"\nserver = \"actix\"\nfeatures = [\"log-stdout\"]\nlog = \"xterm\"\nduration = \"30s\"\nserver_host = \"server\"\nload_hosts = [\"load1\"]\n";
    let file = scenario_file(dir.path(), "xterm-there.toml", rows);
    let work = dir.path().join("hosts/server/work");
    let xterm = format!("^xterm .*{}", work.display());

    let results = dir.path().join("results-int");
    interrupt_when_running(&file, &results, &xterm, Duration::from_secs(3));
    nothing_left(&hosts);

    // The server (started by the wrapper, not xterm's `sh -c`) is killed.
    let server = format!("^{}/bin/.*actix-server", work.display());
    let results = dir.path().join("results");
    let all = kill_when_running(&file, &results, &server, Duration::from_secs(3));
    assert!(
        all.contains("xterm-there") && all.contains("killed by signal 9 (SIGKILL)"),
        "{all}"
    );
    nothing_left(&hosts);
}

/// A sinks file whose rows (`rows`: `[[scenario]]` tables) run on the
/// stand-in `server`, loaded from `load1` for their sample; each run writes
/// for `length`.
fn host_sinks_file(dir: &Path, name: &str, length: &str, rows: &str) -> std::path::PathBuf {
    let hosts_toml = std::fs::read_to_string(dir.join("hosts.toml")).unwrap();
    let text = format!(
        "title = \"sinks on a host\"\ndesign = \"sinks\"\n\n[sinks]\nruns = 2\nlength = \"{length}\"\nsample = \"500ms\"\n\n{hosts_toml}\n[defaults]\nrequest = \"post\"\nconnections = 4\nworkers = 1\nfeatures = [\"log-stdout\"]\nserver_host = \"server\"\nload_hosts = [\"load1\"]\n\n{rows}"
    );
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn sinks_on_the_server_host_are_drained_there() {
    let dir = scratch();
    let hosts = Hosts::up(dir.path(), "server load1", 13);
    let mut rows = String::from(
        "[[scenario]]\nname = \"file\"\nserver = \"actix\"\nlog = \"file\"\n\n[[scenario]]\nname = \"pty\"\nserver = \"ntex\"\nlog = \"terminal\"\n",
    );
    require_xterm();
    rows += "\n[[scenario]]\nname = \"xterm\"\nserver = \"actix\"\nlog = \"xterm\"\n";
    let file = host_sinks_file(dir.path(), "host-sinks.toml", "300ms", &rows);
    let (run, meta) = run_to_end(&file, dir.path());
    assert_eq!(meta["design"], "sinks");
    let table = run.join("host-sinks");
    let read = |row: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(table.join(format!("{row}.sinks.json"))).unwrap())
            .unwrap()
    };
    let names = [
        ("file", 100.0, 125.0),
        ("pty", 130.0, 160.0),
        ("xterm", 130.0, 160.0),
    ];
    for (row, low, high) in names {
        let ix = read(row);
        assert_eq!(ix["host"], "server", "{ix}");
        // About a line a request, sampled from the server on its host.
        let (lines, requests) = (
            ix["sample_lines"].as_f64().unwrap(),
            ix["sample_requests"].as_f64().unwrap(),
        );
        assert!(
            requests > 0.0 && (lines / requests - 1.0).abs() < 0.2,
            "{ix}"
        );
        for r in ix["runs"].as_array().unwrap() {
            let (lines, bytes) = (r["lines"].as_f64().unwrap(), r["bytes"].as_f64().unwrap());
            assert!(lines > 0.0, "{r}");
            // A file gets the plain line (about 110 bytes); a terminal there
            // the coloured one (about 137).
            assert!((low..high).contains(&(bytes / lines)), "{row}: {r}");
        }
        if row != "file" {
            let t = ix["terminal"].as_str().unwrap_or_default();
            assert!(t.contains("on host server"), "{ix}");
        }
    }
    let readme = std::fs::read_to_string(run.join("README.md")).unwrap();
    assert!(readme.contains("file (info, on host server)"), "{readme}");
    nothing_left(&hosts);

    // SIGINT while the writer writes into a pty (or xterm) on the host:
    // exit 130, nothing left there or here.
    let row = "[[scenario]]\nname = \"long\"\nserver = \"actix\"\nlog = \"xterm\"\n";
    let file = host_sinks_file(dir.path(), "host-long.toml", "30s", row);
    let writer = format!(
        "{}.*sink-writer",
        dir.path().join("hosts/server/work/bin").display()
    );
    let results = dir.path().join("results-int");
    interrupt_when_running(&file, &results, &writer, Duration::from_millis(500));
    no_terminal_left(&hosts, &results);
}
