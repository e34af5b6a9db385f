//! Command rows end to end: a server the project did not build (Python's
//! http.server, alone and under a shell that forks it as a child) in the
//! paired, sequential, sweep and memory designs, `shootout ab`, and the
//! command rows' refusals.

use super::*;

/// Python's http.server on the port the runner picks.
const PY: &str = r#"["python3", "-m", "http.server", "{port}", "--bind", "{host}"]"#;
/// The Python example's counter (HTTP/1.1 keep-alive, which holding
/// connections needs), from the workspace root.
const COUNTER: &str =
    r#"["python3", "examples/python-counter/counter.py", "--port", "{port}", "--host", "{host}"]"#;
/// The same under a shell that forks it as its child and waits: the
/// server the row names is the shell, the one answering its child.
const FORKED: &str =
    r#"["sh", "-c", "python3 -m http.server \"$0\" --bind \"$1\" & wait", "{port}", "{host}"]"#;

/// The same, the child in a session of its own (as a daemon starts): only
/// the row's cgroup still holds it.
const DAEMON: &str = r#"["sh", "-c", "setsid python3 -m http.server \"$0\" --bind \"$1\" & wait", "{port}", "{host}"]"#;

fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A record's `server` placement: on CPU 1, with `processes` processes.
fn server_placed(cpus: &serde_json::Value, processes: u64) {
    let server = cpus
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["process"] == "server")
        .unwrap_or_else(|| panic!("no server record: {cpus}"));
    assert_eq!(server["wanted"], "1", "{server}");
    assert_eq!(server["read"], serde_json::json!(["1"]), "{server}");
    assert_eq!(server["processes"], processes, "{server}");
}

#[test]
fn command_rows_run_paired_with_a_forked_child_pinned_and_nothing_left() {
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let f = file(
        dir.path(),
        "cmd-paired.toml",
        &format!(
            "title = \"command rows, paired\"\nbaseline = \"py\"\ndesign = \"paired\"\n\n\
             [paired]\nblocks = 4\nblock = \"1s\"\nsettle = \"0s\"\n\n\
             [defaults]\nconnections = 4\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n\n\
             [[scenario]]\nname = \"py\"\ncommand = {PY}\n\n\
             [[scenario]]\nname = \"forked\"\ncommand = {DAEMON}\n"
        ),
    );
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let ran = Ran::ok(&["run", f.to_str().unwrap()], out.path());
    assert!(ran.stdout.contains("forked/py"), "{}", ran.stdout);
    let m = ran.meta();
    let c = &m["paired"][0];
    assert_eq!(c["row_sink"]["server"], "command", "{c}");
    assert!(
        c["row_sink"]["twin_checks"]
            .as_str()
            .unwrap()
            .starts_with("skipped: a command row"),
        "{c}"
    );
    assert!(c["row_sink"]["command"]
        .as_str()
        .unwrap()
        .starts_with("sh -c"));
    // Read from the row's own cgroup: the child that left the session is
    // read back, counted and stopped with it.
    assert!(
        c["row_sink"]["cpu_accounting"]
            .as_str()
            .unwrap()
            .starts_with("cgroup:"),
        "{c}"
    );
    assert!(c["rps_ratio"].as_f64().unwrap() > 0.0, "{c}");
    for b in c["blocks"].as_array().unwrap() {
        assert!(b["error"].is_null(), "{b}");
        // The shell and the child it started in a session of its own, both
        // on the row's CPU.
        server_placed(&b["row_cpus"], 2);
        server_placed(&b["base_cpus"], 1);
        // Read again under load, the threads its connections started too.
        let loaded = b["row_cpus"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["process"] == "server under load")
            .unwrap_or_else(|| panic!("no reading under load: {b}"));
        assert_eq!(loaded["read"], serde_json::json!(["1"]), "{loaded}");
        assert_eq!(loaded["processes"], 2, "{loaded}");
        assert!(b["row_counter"].is_null(), "{b}");
        assert!(
            b["row_startup_line"]
                .as_str()
                .unwrap()
                .starts_with("command row ready: GET / on 127.0.0.1:"),
            "{b}"
        );
    }
    ran.left_nothing();
}

#[test]
fn command_rows_run_sequential_in_a_namespace_and_memory() {
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let seq = file(
        dir.path(),
        "cmd-seq.toml",
        &format!(
            "title = \"command rows, sequential\"\n\n\
             [defaults]\nduration = \"1s\"\nwarmup = \"0s\"\nconnections = 4\n\
             server_cpus = \"1\"\nloadgen_cpus = \"0\"\n\n\
             [[scenario]]\nname = \"forked-netns\"\ntopology = \"netns\"\ncommand = {FORKED}\n\
             ready = {{ path = \"/\", status = 200 }}\nenv = {{ PYTHONDONTWRITEBYTECODE = \"1\" }}\n"
        ),
    );
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let ran = Ran::ok(&["run", seq.to_str().unwrap()], out.path());
    let m = ran.meta();
    let r = &m["rows"][0];
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(r["topology"], "netns", "{r}");
    assert!(r["rps"].as_f64().unwrap() > 0.0, "{r}");
    assert!(
        r["twin_checks"].as_str().unwrap().contains("skipped"),
        "{r}"
    );
    server_placed(&r["cpus"], 2);
    // CPU over the whole tree: the shell idles, its child answers.
    assert!(r["server"]["cpu_seconds"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(r["server"]["processes"], 2, "{r}");
    ran.left_nothing();

    let mem = file(
        dir.path(),
        "cmd-mem.toml",
        &format!(
            "title = \"command rows, memory\"\nkind = \"memory\"\n\n\
             [memory]\nhold = \"1s\"\nsettle = \"300ms\"\nafter = \"500ms\"\nsetup_timeout = \"20s\"\n\n\
             [defaults]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\nconnections = 20\n\n\
             [[scenario]]\nname = \"py\"\ncommand = {COUNTER}\n"
        ),
    );
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let ran = Ran::ok(&["run", mem.to_str().unwrap()], out.path());
    let m = ran.meta();
    let r = &m["memory"][0];
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(r["server"], "command", "{r}");
    assert!(r["held"]["rss_kib"].as_u64().unwrap() > 0, "{r}");
    assert!(
        r["twin_checks"].as_str().unwrap().contains("skipped"),
        "{r}"
    );
    server_placed(&r["cpus"], 1);
    ran.left_nothing();
}

#[test]
fn command_rows_run_in_the_sweep() {
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let f = file(
        dir.path(),
        "cmd-sweep.toml",
        &format!(
            "title = \"command rows, sweep\"\ndesign = \"sweep\"\nbaseline = \"py\"\n\n\
             [sweep]\nslo = \"p99 <= 10s\"\nrates = [2.0, 4.0]\nstep = \"2s\"\nmin_requests = 1\n\
             settle = \"0s\"\nprobe = \"1s\"\nbisect = 0\nvotes = 1\n\n\
             [defaults]\nconnections = 2\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n\n\
             [[scenario]]\nname = \"py\"\ncommand = {FORKED}\n"
        ),
    );
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let ran = Ran::ok(&["run", f.to_str().unwrap()], out.path());
    let m = ran.meta();
    let r = &m["rows"][0];
    assert!(r["error"].is_null(), "{r}");
    assert!(
        r["twin_checks"].as_str().unwrap().contains("skipped"),
        "{r}"
    );
    server_placed(&r["cpus"], 2);
    ran.left_nothing();
}

#[test]
fn ab_compares_two_commands_with_an_aa_and_leaves_a_page_and_history() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let a = "python3 -m http.server {port} --bind {host}";
    let b = "sh -c 'python3 -m http.server \"$0\" --bind \"$1\" & wait' {port} {host}";
    let ran = Ran::ok(
        &[
            "ab", a, b, "--blocks", "4", "--block", "1s", "--settle", "0s", "-c", "4",
        ],
        out.path(),
    );
    assert!(ran.stdout.contains("b/a "), "{}", ran.stdout);
    assert!(ran.stdout.contains("A/A "), "{}", ran.stdout);
    let run = ran.dir();
    assert!(run.join("index.html").is_file());
    let kept = std::fs::read_to_string(run.join("ab.toml")).unwrap();
    assert!(kept.contains("name = \"aa\""), "{kept}");
    assert!(out.path().join("history.json").is_file());
    let m = ran.meta();
    assert_eq!(m["paired"].as_array().unwrap().len(), 2, "{m}");
    ran.left_nothing();

    // Bad commands: one line, exit 2, nothing started or written.
    let bad = tempfile::tempdir_in(target_dir()).unwrap();
    for (a, b, says) in [
        (
            "python3 -m http.server 8080",
            "true {port}",
            "command A: command has no {port}",
        ),
        (
            "no-such-server-here {port}",
            "true {port}",
            "command A: command program \"no-such-server-here\" is not on PATH",
        ),
        (
            a,
            "sh -c 'echo no such flag >&2; exit 4' {port}",
            "command B: b: the command exited at start (exit status 4)",
        ),
        (
            a,
            "sh -c 'exec sleep 30' {port}",
            "command B: b: the command was not ready",
        ),
        (a, "{port", "command B: command argument"),
    ] {
        let r = Ran::new(&["ab", a, b, "--ready-within", "2s"], bad.path());
        assert_eq!(r.status.code(), Some(2), "{a} / {b}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    }
    assert_eq!(std::fs::read_dir(bad.path()).map_or(0, |d| d.count()), 0);
    let left = leftovers(bad.path());
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bad_command_rows_are_refused_at_their_line() {
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let head = "[defaults]\nconnections = 4\n\n[[scenario]]\nname = \"c\"\n";
    for (row, line, says) in [
        ("command = [\"nope-not-here\", \"{port}\"]\n", 6, "is not on PATH"),
        ("command = [\"sh\", \"-c\", \"exit 3\"]\n", 6, "command has no {port}"),
        ("command = [\"sh\", \"{prot}\"]\n", 6, "unknown placeholder {prot}"),
        ("server = \"actix\"\ncommand = [\"sh\", \"{port}\"]\n", 6, "a server or a command, not both"),
        ("command = [\"sh\", \"-c\", \"exit 3\", \"{port}\"]\n", 6, "exited at start (exit status 3)"),
        (
            "command = [\"sh\", \"-c\", \"exec sleep 30\", \"{port}\"]\nready = { within = \"1s\" }\n",
            6,
            "not ready on 127.0.0.1:",
        ),
    ] {
        let f = file(dir.path(), "bad.toml", &format!("{head}{row}"));
        let out = tempfile::tempdir_in(target_dir()).unwrap();
        let r = Ran::new(&["run", f.to_str().unwrap()], out.path());
        assert_eq!(r.status.code(), Some(2), "{row}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("bad.toml:{line}:")) && r.stderr.contains(says),
            "{row}: {}",
            r.stderr
        );
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
        assert_eq!(std::fs::read_dir(out.path()).map_or(0, |d| d.count()), 0);
        let left = leftovers(out.path());
        assert!(left.is_empty(), "{left:?}");
    }
}
