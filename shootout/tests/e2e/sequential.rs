//! The sequential design end to end: the quick matrix with its counter
//! cross-check, a failing row among good ones, a server killed mid-row,
//! SIGINT, and rows logging into real terminals.

use super::*;

#[test]
fn sequential_matrix_end_to_end_with_counter_check() {
    // --out relative to the working directory, as a user types it: nginx
    // (the ntex-nginx row) must still find its private prefix.
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let mut cmd = shootout(&[
        "run",
        "shootout/tests/fixtures/sequential.toml",
        "--duration",
        "2s",
        "--build-profile",
        "dev",
        "--out",
    ]);
    cmd.arg(Path::new("target").join(out.path().file_name().unwrap()));
    let r = Ran::wait(&mut cmd, out.path());
    assert!(r.status.success(), "{}\n{}", r.stdout, r.stderr);
    for row in ["actix", "ntex", "ntex-nginx", "ntex-netns"] {
        assert!(
            r.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{row}: ")) && l.contains("counter ok")),
            "{row}: {}",
            r.stdout
        );
    }
    let m = r.meta();
    let rows = m["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["server_exit"], 0, "{r}");
        assert_eq!(r["loadgen_exit"], 0, "{r}");
        assert_eq!(r["counter"]["ok"], true, "{r}");
        assert!(r["counter"]["acknowledged"].as_u64().unwrap() > 0);
        assert!(r["server"]["cpu_seconds"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["verified"]["date_header"].as_bool().unwrap());
        // Where each process ran, read from /proc: the server (and nginx)
        // once it answered, the loadgen under load; each checked against
        // the row's CPUs when it names them.
        let read: Vec<&str> = r["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["process"].as_str().unwrap())
            .collect();
        assert_eq!(read.first(), Some(&"server"), "{r}");
        assert_eq!(read.last(), Some(&"loadgen"), "{r}");
        for c in r["cpus"].as_array().unwrap() {
            assert!(c["threads"].as_u64().unwrap() >= 1, "{c}");
            if let Some(want) = c["wanted"].as_str() {
                assert_eq!(c["read"], serde_json::json!([want]), "{c}");
            }
        }
    }
    assert_eq!(
        rows[2]["verified"]["server_header"]
            .as_str()
            .map(|s| s.starts_with("nginx/")),
        Some(true)
    );
    assert_eq!(rows[2]["nginx_exit"], 0);
    for key in ["git_sha", "rustc", "nginx", "kernel", "cpu_model"] {
        assert!(m[key].is_string(), "meta.json lacks {key}: {m}");
    }
    for f in [
        "README.md",
        "summary.json",
        "index.html",
        "sequential-rps-ci.svg",
        "sequential/ntex-netns.jsonl",
        "sequential/table.toml",
    ] {
        assert!(is_raw(&r.dir().join(f)), "{f} missing");
    }
    assert!(!r.dir().join("tmp").exists(), "temp dirs removed");
    r.left_nothing();
}

#[test]
fn a_failing_scenario_is_reported_the_others_run_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.toml");
    std::fs::write(
        &file,
        "[defaults]\nduration = \"1s\"\nwarmup = \"0s\"\nconnections = 4\nworkers = 1\n\n\
         [[scenario]]\nname = \"no-such-proxy\"\nserver = \"ntex\"\nproxy = \"missing-config\"\ntopology = \"netns\"\n\n\
         [[scenario]]\nname = \"fine\"\nserver = \"ntex\"\n\n\
         [[scenario]]\nname = \"delayed\"\nserver = \"ntex\"\ntopology = \"netns\"\nlink_delay = \"1ms\"\n",
    )
    .unwrap();
    let r = Ran::new(&["run", file.to_str().unwrap()], &dir.path().join("out"));
    assert_eq!(r.status.code(), Some(1), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("no-such-proxy: FAILED: nginx config \"missing-config\""),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("fine: ") && l.contains("counter ok")),
        "{}",
        r.stdout
    );
    r.left_nothing();
}

#[test]
fn a_server_killed_mid_row_is_reported_with_its_signal() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("killed.toml");
    std::fs::write(
        &file,
        "[defaults]\nduration = \"60s\"\nwarmup = \"0s\"\nconnections = 4\nworkers = 1\n\n\
         [[scenario]]\nname = \"victim\"\nserver = \"ntex\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut child = shootout(&["run", "--build-profile", "dev", "--out"])
        .arg(&out)
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_first_record(&mut child, &out, "killed/victim.jsonl", 300);
    let servers = children_matching(child.id(), "ntex-server");
    assert_eq!(servers.len(), 1, "{servers:?}");
    // SAFETY: kill(2) on the server this test's runner started.
    unsafe {
        libc::kill(servers[0] as i32, libc::SIGKILL);
    }
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert_eq!(result.status.code(), Some(1), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("victim: FAILED: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("the server died during the load (killed by signal 9 (SIGKILL)); its last stderr: ntex-server listening"),
        "{line}"
    );
    assert!(leftovers(&out).is_empty(), "{:?}", leftovers(&out));
}

#[test]
fn sigint_stops_everything_and_exits_130() {
    let out = tempfile::tempdir().unwrap();
    let mut child = shootout(&[
        "run",
        "shootout/tests/fixtures/sequential.toml",
        "--only",
        "ntex-netns",
        "--duration",
        "60s",
        "--build-profile",
        "dev",
        "--out",
    ])
    .arg(out.path())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let pid = child.id();
    wait_for_first_record(&mut child, out.path(), "sequential/ntex-netns.jsonl", 300);
    assert!(
        !namespaces_of(pid).is_empty(),
        "the netns row should be running"
    );
    assert_eq!(interrupt(&mut child, 20).code(), Some(130));
    assert!(
        leftovers(out.path()).is_empty(),
        "{:?}",
        leftovers(out.path())
    );
    assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
    assert_eq!(meta(out.path())["interrupted"], true);
    // loadgen wrote its summary as it stopped: its log is kept, whole.
    let log = run_dir(out.path()).join("sequential/ntex-netns.jsonl");
    let text = analysis::input::raw::read_to_string(&log).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains("\"type\":\"summary\""),
        "{text}"
    );
    assert!(!log.with_extension("jsonl.partial").exists());
}

#[test]
fn emulator_rows_run_in_real_terminals_and_leave_nothing() {
    require_terminals();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("xterm.toml");
    std::fs::write(
        &file,
        "[defaults]\nduration = \"1s\"\nwarmup = \"0s\"\nconnections = 4\nworkers = 1\n\
         features = [\"log-stdout\"]\nlog = \"xterm\"\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n\n\
         [[scenario]]\nname = \"xterm\"\nserver = \"actix\"\n\n\
         [[scenario]]\nname = \"alacritty\"\nserver = \"actix\"\nlog = \"alacritty\"\n\n\
         [[scenario]]\nname = \"refused\"\nserver = \"actix\"\nbacklog = 0\n\n\
         [[scenario]]\nname = \"pipe\"\nserver = \"actix\"\nlog = \"pipe\"\n\n\
         [[scenario]]\nname = \"pty\"\nserver = \"actix\"\nlog = \"terminal\"\nsink_cpus = \"0\"\n",
    )
    .unwrap();
    let run = Ran::new(&["run", file.to_str().unwrap()], &dir.path().join("out"));
    let (stdout, stderr) = (&run.stdout, &run.stderr);
    // The good row ran and its counter checked out; the bad one failed
    // with the server's own words; nothing is left of either.
    assert_eq!(run.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("xterm: ") && l.contains("counter ok")),
        "{stdout}{stderr}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("refused: FAILED") && l.contains("backlog")),
        "{stdout}"
    );
    run.left_nothing();
    let m = run.meta();
    let row = &m["rows"][0];
    assert!(
        row["terminal"]
            .as_str()
            .unwrap()
            .starts_with("xterm on Xvfb :"),
        "{row}"
    );
    assert!(
        row["server"]["cpu_seconds"].as_f64().unwrap() > 0.0,
        "{row}"
    );
    // The emulator and its Xvfb ran on the server's CPU, as read back.
    for row in [&m["rows"][0], &m["rows"][1]] {
        let cpus = row["cpus"].as_array().unwrap();
        let term = cpus.iter().find(|c| c["process"] == "terminal");
        let term = term.unwrap_or_else(|| panic!("no terminal record: {row}"));
        assert_eq!(term["wanted"], "1", "{term}");
        assert_eq!(term["read"], serde_json::json!(["1"]), "{term}");
        assert!(term["processes"].as_u64().unwrap() >= 2, "{term}");
    }
    // The runner's reader of a pipe, on the server's CPU by default, and
    // of a pty where the row puts it, each as read back (one thread).
    for (name, cpu) in [("pipe", "1"), ("pty", "0")] {
        let row = m["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scenario"] == name)
            .unwrap_or_else(|| panic!("no {name} row: {m}"));
        let cpus = row["cpus"].as_array().unwrap();
        let reader = cpus.iter().find(|c| c["process"] == "sink reader");
        let reader = reader.unwrap_or_else(|| panic!("no sink reader record: {row}"));
        assert_eq!(reader["wanted"], cpu, "{reader}");
        assert_eq!(reader["read"], serde_json::json!([cpu]), "{reader}");
        assert_eq!(reader["threads"], 1, "{reader}");
        assert!(row["server_stdout_bytes"].as_u64().unwrap() > 0, "{row}");
    }

    // SIGINT while the xterm row is loaded: exit 130, nothing left.
    let out = dir.path().join("out-sigint");
    let mut child = shootout(&[
        "run",
        "--build-profile",
        "dev",
        "--only",
        "xterm",
        "--duration",
        "60s",
        "--out",
    ])
    .arg(&out)
    .arg(&file)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_for_first_record(&mut child, &out, "xterm/xterm.jsonl", 120);
    assert!(
        !leftovers(&out).is_empty(),
        "the xterm row should be running"
    );
    assert_eq!(interrupt(&mut child, 30).code(), Some(130));
    assert!(leftovers(&out).is_empty(), "{:?}", leftovers(&out));
}
