//! The runner end to end, with dev builds (fast; the numbers mean nothing):
//! the quick matrix, the counter cross-check, cleanup after a failure and
//! after SIGINT, and scenario-file errors. Needs root for the netns row.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{leftovers, namespaces_of, tagged};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/` of the workspace, made if missing (a CARGO_TARGET_DIR elsewhere
/// leaves a fresh clone without one).
fn target_dir() -> PathBuf {
    let t = root().join("target");
    std::fs::create_dir_all(&t).unwrap();
    t
}

fn shootout(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shootout"));
    tagged(&mut cmd)
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null());
    cmd
}

/// Waits until the run under `out` has a non-empty `rel` log (loadgen has
/// written its first record; `REL.partial` while loadgen writes it); fails
/// if shootout exits first.
fn wait_for_first_record(child: &mut std::process::Child, out: &Path, rel: &str, secs: u64) {
    let rel = &format!("{rel}.partial");
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let log = std::fs::read_dir(out)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join(rel));
        if log
            .as_ref()
            .is_some_and(|l| std::fs::metadata(l).is_ok_and(|m| m.len() > 0))
        {
            return;
        }
        assert!(Instant::now() < deadline, "loadgen never started");
        assert!(child.try_wait().unwrap().is_none(), "shootout exited early");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGINT to shootout; its exit status, which must come within `secs`.
fn interrupt(child: &mut std::process::Child, secs: u64) -> std::process::ExitStatus {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(secs),
            "shootout did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn meta(out: &Path) -> serde_json::Value {
    let run = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .next()
        .expect("a run directory")
        .path();
    serde_json::from_slice(&std::fs::read(run.join("meta.json")).unwrap()).unwrap()
}

#[test]
fn sequential_matrix_end_to_end_with_counter_check() {
    // --out relative to the working directory, as a user types it: nginx
    // (the ntex-nginx row) must still find its private prefix.
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let child = shootout(&[
        "run",
        "shootout/tests/fixtures/sequential.toml",
        "--duration",
        "2s",
        "--build-profile",
        "dev",
        "--out",
    ])
    .arg(Path::new("target").join(out.path().file_name().unwrap()))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stdout}\n{stderr}");
    for row in ["actix", "ntex", "ntex-nginx", "ntex-netns"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{row}: ")) && l.contains("counter ok")),
            "{row}: {stdout}"
        );
    }
    let m = meta(out.path());
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
    let run = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    for f in [
        "README.md",
        "summary.json",
        "index.html",
        "sequential-rps-ci.svg",
        "sequential/ntex-netns.jsonl",
        "sequential/table.toml",
    ] {
        assert!(run.join(f).is_file(), "{f} missing");
    }
    assert!(!run.join("tmp").exists(), "temp dirs removed");
    assert!(
        leftovers(out.path()).is_empty(),
        "{:?}",
        leftovers(out.path())
    );
    assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
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
    let out = dir.path().join("out");
    let child = shootout(&["run", "--build-profile", "dev", "--out"])
        .arg(&out)
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert_eq!(result.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("no-such-proxy: FAILED: nginx config \"missing-config\""),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("fine: ") && l.contains("counter ok")),
        "{stdout}"
    );
    assert!(leftovers(&out).is_empty(), "{:?}", leftovers(&out));
    assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
}

/// The children of `pid` whose command line contains `needle`.
fn children_matching(pid: u32, needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the ppid follows the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(pid) && String::from_utf8_lossy(&cmd).contains(needle) {
            found.push(child);
        }
    }
    found
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
    let text = std::fs::read_to_string(&log).unwrap();
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
fn bad_command_line_values_are_refused_in_one_line_with_exit_2() {
    for (args, want) in [
        (&["calibrate", "--minutes", "0"][..], "--minutes"),
        (&["calibrate", "--spin-pct", "1,150"], "--spin-pct"),
        (&["calibrate", "--connections", "0"], "--connections"),
        (&["calibrate", "--block", "0s"], "--block"),
        (
            &["run", "scenarios/quick.toml", "--blocks", "3"],
            "--blocks",
        ),
        (&["run", "scenarios/quick.toml", "--runs", "0"], "--runs"),
        (
            &["run", "scenarios/quick.toml", "--duration", "0s"],
            "--duration",
        ),
        (&["run"], "<FILE>"),
        (&["report"], "<DIR>"),
    ] {
        let out = shootout(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("shootout: ") && err.contains(want),
            "{args:?}: {err}"
        );
    }
    let help = shootout(&["run", "--help"]).output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage:"));
}

#[test]
fn scenario_file_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "[[scenario]]\nname = \"a\"\nserver = \"rocket\"\n",
            ":3: unknown server \"rocket\"",
        ),
        (
            "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"turbo\"]\n",
            ":4: unknown feature \"turbo\"",
        ),
        (
            "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n\nduration = \"soon\"\n",
            ":5: bad duration \"soon\"",
        ),
    ] {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, text).unwrap();
        for sub in ["list", "run"] {
            let out = shootout(&[sub]).arg(&file).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{sub}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(&format!("bad.toml{want}")), "{sub}: {err}");
        }
    }
    let out = shootout(&["list", "scenarios/quick.toml"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("ntex-netns"));
    // Every committed scenario file parses.
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        let out = shootout(&["list"]).arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn run_dir(out: &Path) -> PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .next()
        .expect("a run directory")
        .path()
}

#[test]
fn the_main_command_is_paired_and_prints_what_it_decides() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let child = shootout(&[
        "run",
        "scenarios/quick.toml",
        "--blocks",
        "4",
        "--duration",
        "1s",
        "--build-profile",
        "dev",
        "--out",
    ])
    .arg(out.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stdout}\n{stderr}");
    // Each comparison against the row it names, and one answer line each,
    // after the table's title (the words depend on this run's numbers).
    let m = meta(out.path());
    let pairs: Vec<(String, String)> = m["paired"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["row"].as_str().unwrap().into(),
                c["baseline"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("ntex", "actix"),
        ("ntex-nginx", "ntex"),
        ("ntex-netns", "ntex"),
        ("aa", "actix"),
    ];
    assert_eq!(
        pairs,
        want.map(|(a, b)| (a.to_string(), b.to_string())),
        "{stdout}"
    );
    let answers: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Quick matrix"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(answers.len(), 4, "{stdout}");
    let words = ["is ", "no difference this run can resolve", "resolves"];
    for (line, name) in
        answers
            .iter()
            .zip(["ntex/actix", "ntex-nginx/ntex", "ntex-netns/ntex", "A/A"])
    {
        assert!(line.trim_start().starts_with(name), "{line}");
        assert!(line.contains(", 95 %)"), "{line}");
        assert!(words.iter().any(|w| line.contains(w)), "{line}");
    }
    let run = run_dir(out.path());
    let page = std::fs::read_to_string(run.join("index.html")).unwrap();
    assert!(page.contains("<table class=\"answers\">"));
    let readme = std::fs::read_to_string(run.join("README.md")).unwrap();
    assert!(
        readme.contains(
            "ntex behind nginx (proxy.conf) (against ntex, global counter, KeepAlive::Os)"
        ),
        "{readme}"
    );
    assert!(
        leftovers(out.path()).is_empty(),
        "{:?}",
        leftovers(out.path())
    );
    assert!(namespaces_of(pid).is_empty());
}

#[test]
fn paired_design_runs_both_stacks_at_once_and_leaves_nothing() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let child = shootout(&[
        "run",
        "shootout/tests/fixtures/paired.toml",
        "--build-profile",
        "dev",
        "--out",
    ])
    .arg(out.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stdout}\n{stderr}");
    for row in ["aa", "ntex-nginx-netns"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{row} vs base: 2xx/s "))),
            "{row}: {stdout}"
        );
    }
    let m = meta(out.path());
    assert_eq!(m["design"], "paired");
    let comps = m["paired"].as_array().unwrap();
    assert_eq!(comps.len(), 2);
    for c in comps {
        assert!(c["error"].is_null(), "{c}");
        let blocks = c["blocks"].as_array().unwrap();
        // Exactly the planned blocks ran, whatever the interval looked
        // like on the way (no stopping on the interval).
        assert_eq!(blocks.len(), 4, "{c}");
        assert_eq!(c["stopped_by"], "blocks", "{c}");
        let orders: Vec<&str> = blocks
            .iter()
            .map(|b| b["order"].as_str().unwrap())
            .collect();
        assert!(
            orders.contains(&"ab") && orders.contains(&"ba"),
            "{orders:?}"
        );
        for b in blocks {
            assert!(b["error"].is_null(), "{b}");
            for side in ["row", "base"] {
                assert_eq!(b[format!("{side}_server_exit")], 0, "{b}");
                assert_eq!(b[format!("{side}_loadgen_exit")], 0, "{b}");
                assert_eq!(b[format!("{side}_counter")]["ok"], true, "{b}");
                // Every process's CPUs, read from /proc, are the file's.
                let read = b[format!("{side}_cpus")].as_array().unwrap();
                let mut seen: Vec<&str> = Vec::new();
                for p in read {
                    let name = p["process"].as_str().unwrap();
                    let want = if name == "loadgen" { "0" } else { "1" };
                    assert_eq!(p["wanted"], want, "{p}");
                    assert_eq!(p["read"], serde_json::json!([want]), "{p}");
                    assert!(p["threads"].as_u64().unwrap() >= 1, "{p}");
                    seen.push(name);
                }
                let nginx = c["row"] == "ntex-nginx-netns" && side == "row";
                let want: &[&str] = if nginx {
                    &["server", "nginx", "loadgen"]
                } else {
                    &["server", "loadgen"]
                };
                assert_eq!(seen, want, "{b}");
            }
        }
        assert_eq!(c["placement"], "pinned", "{c}");
    }
    // Both stacks were loaded at once: in every block both servers' CPU
    // time grew over the same measured intervals, and both loadgens'
    // intervals started within a few milliseconds of each other.
    let table = run_dir(out.path()).join("paired");
    for row in ["aa", "ntex-nginx-netns"] {
        let dir = table.join(row);
        let mut cpu_files = 0;
        for f in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".cpu.jsonl") {
                continue;
            }
            cpu_files += 1;
            let text = std::fs::read_to_string(f.path()).unwrap();
            let samples: Vec<serde_json::Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let (first, last) = (&samples[1], samples.last().unwrap());
            for side in ["row_cpu_ns", "base_cpu_ns"] {
                assert!(
                    last[side].as_u64().unwrap() > first[side].as_u64().unwrap(),
                    "{name}: {side} did not grow"
                );
            }
            let starts = |role: &str| -> Vec<u64> {
                let p = dir.join(name.replace(".cpu.", &format!(".{role}.")));
                std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .filter(|v| v["type"] == "interval")
                    .map(|v| v["start_unix_ms"].as_u64().unwrap())
                    .collect()
            };
            let (r, b) = (starts("row"), starts("base"));
            // One side may close with a short fragment the other has not
            // (the analysis leaves such fragments out): at most one more.
            assert!(
                r.len().min(b.len()) >= 2 && r.len().abs_diff(b.len()) <= 1,
                "{name}: {r:?} {b:?}"
            );
            for (x, y) in r.iter().zip(&b) {
                assert!(x.abs_diff(*y) < 100, "{name}: intervals {x} and {y} apart");
            }
        }
        assert!(cpu_files >= 2, "{row}: {cpu_files} blocks");
    }
    let readme = std::fs::read_to_string(run_dir(out.path()).join("README.md")).unwrap();
    assert!(readme.contains("(paired against base)"), "{readme}");
    assert!(
        leftovers(out.path()).is_empty(),
        "{:?}",
        leftovers(out.path())
    );
    assert!(namespaces_of(pid).is_empty());
}

#[test]
fn memory_rows_sample_idle_held_and_after_and_leave_nothing() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let child = shootout(&[
        "run",
        "shootout/tests/fixtures/memory.toml",
        "--build-profile",
        "dev",
        "--out",
    ])
    .arg(out.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stdout}\n{stderr}");
    let m = meta(out.path());
    assert_eq!(m["design"], "memory");
    let records = m["memory"].as_array().unwrap();
    // Two repetitions of one row, one of the other, in rounds.
    let order: Vec<(&str, u64)> = records
        .iter()
        .map(|r| {
            (
                r["scenario"].as_str().unwrap(),
                r["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("actix-glibc", 1),
            ("ntex-reclaim-netns", 1),
            ("actix-glibc", 2)
        ]
    );
    for r in records {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["hold"]["established"], 300, "{r}");
        assert_eq!(r["hold"]["closed_early"], 0, "{r}");
        assert_eq!(r["allocator"], "glibc", "{r}");
        let kib = |k: &str| r[k]["rss_kib"].as_u64().unwrap();
        // Samples in time order, and 300 connections cost something.
        assert!(kib("held") > kib("idle"), "{r}");
        assert!(
            r["held_peak_rss_kib"].as_u64().unwrap() >= kib("held"),
            "{r}"
        );
        let at = |k: &str| r[k]["at_ms"].as_u64().unwrap();
        assert!(at("idle") < at("held") && at("held") < at("after"), "{r}");
    }
    // The reclaim row: the server said it reclaimed, and kept less after.
    let reclaim = &records[1];
    assert_eq!(reclaim["reclaim_feature"], true);
    let lines = reclaim["reclaims"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{reclaim}");
    assert!(
        lines[0]["rss_after_kib"].as_u64() < lines[0]["rss_before_kib"].as_u64(),
        "{reclaim}"
    );
    assert!(records[0]["reclaims"].as_array().unwrap().is_empty());
    // The raw records and loadgen's beside them; the report renders them.
    let table = run_dir(out.path()).join("memory");
    for f in [
        "actix-glibc.rep1.memory.json",
        "actix-glibc.rep2.hold.jsonl",
        "ntex-reclaim-netns.memory.json",
        "table.toml",
    ] {
        assert!(table.join(f).is_file(), "{f}");
    }
    let readme = std::fs::read_to_string(run_dir(out.path()).join("README.md")).unwrap();
    assert!(
        readme.contains("| Server | Allocator | Workers | Connections |"),
        "{readme}"
    );
    assert!(
        readme.contains("| ntex-server | glibc | 1 | 300 |"),
        "{readme}"
    );
    assert!(run_dir(out.path()).join("memory-memory.svg").is_file());
    assert!(
        leftovers(out.path()).is_empty(),
        "{:?}",
        leftovers(out.path())
    );
    assert!(namespaces_of(pid).is_empty());
}

#[test]
fn calibrate_control_adds_cpu_per_request() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    // A 50% control at a short duration: only its direction is asserted.
    let result = shootout(&[
        "calibrate",
        "--minutes",
        "0.3",
        "--block",
        "2s",
        "--settle",
        "1s",
        "--connections",
        "8",
        "--spin-pct",
        "50",
        "--build-profile",
        "dev",
        "--out",
    ])
    .arg(out.path())
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("resolution on this machine: A/A "),
        "{stdout}"
    );
    let cal: serde_json::Value = serde_json::from_slice(
        &std::fs::read(run_dir(out.path()).join("calibration.json")).unwrap(),
    )
    .unwrap();
    for key in ["ratio", "ci95_pct"] {
        assert!(cal["aa"][key].is_f64(), "{cal}");
        assert!(cal["aa"]["cpu"][key].is_f64(), "{cal}");
    }
    assert!(cal["pairs"].as_u64().unwrap() >= 12 && cal["seconds"].as_f64().unwrap() > 0.0);
    let controls = cal["controls"].as_array().unwrap();
    assert_eq!(controls.len(), 1, "{cal}");
    let c = &controls[0];
    assert_eq!(c["set_pct"], 50.0);
    assert!(c["spin_ns"].as_u64().unwrap() > 0);
    for key in [
        "alone_pct",
        "measured_pct",
        "reported_pct",
        "alone_cpu_pct",
        "amplification",
    ] {
        assert!(c[key].is_f64(), "{key}: {cal}");
    }
    for key in [
        "alone_ci95_pct",
        "measured_ci95_pct",
        "ci95_pct",
        "amplification_ci95",
    ] {
        assert_eq!(c[key].as_array().map(Vec::len), Some(2), "{key}: {cal}");
    }
    assert!(cal["amplification"]["value"].is_f64(), "{cal}");
    assert_eq!(
        cal["amplification"]["ci95_pct"].as_array().map(Vec::len),
        Some(2)
    );
    // The spin makes each request cost more CPU and the server answer
    // fewer, alone on the core and in the duet.
    assert!(c["alone_cpu_pct"].as_f64().unwrap() > 10.0, "{cal}");
    assert!(c["alone_pct"].as_f64().unwrap() < 0.0, "{cal}");
    assert!(c["measured_pct"].as_f64().unwrap() < 0.0, "{cal}");
    // Both schedules leave their table.
    let dir = run_dir(out.path());
    // calibration.json is what its meta.json and raw windows give.
    let again = shootout::design::calibrate::recompute(&dir).unwrap();
    assert_eq!(
        std::fs::read(dir.join("calibration.json")).unwrap(),
        shootout::design::calibrate::to_json(&again).unwrap()
    );
    for table in ["calibration", "calibration-duet"] {
        assert!(dir.join(table).join("table.toml").is_file(), "{table}");
    }
    assert!(leftovers(out.path()).is_empty());
}

#[test]
fn paired_file_with_an_unknown_baseline_is_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "design = \"paired\"\nbaseline = \"nope\"\n[[scenario]]\nname = \"a\"\nserver = \"actix\"\n",
    )
    .unwrap();
    let out = shootout(&["run"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:2: baseline \"nope\" is not a scenario name"),
        "{err}"
    );
}

#[test]
fn paired_file_with_an_unpinned_process_is_refused_unless_it_says_free() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("free.toml");
    let text = "design = \"paired\"\nbaseline = \"a\"\n[defaults]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n\
                [[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\n\
                proxy = \"proxy\"\nnginx_cpus = \"0-1\"\n[[scenario]]\nname = \"c\"\nserver = \"actix\"\nserver_cpus = \"0\"\n";
    // nginx on both CPUs is a placement too; only an unset one is refused.
    std::fs::write(&file, text).unwrap();
    let out = shootout(&["list"]).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&file, text.replace("server_cpus = \"1\"\n", "")).unwrap();
    let out = shootout(&["run"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("free.toml:6: scenario \"a\": its server would run where the scheduler puts them; set server_cpus or say placement = \"free\""),
        "{err}"
    );
    let free = text.replace("server_cpus = \"1\"\n", "placement = \"free\"\n");
    std::fs::write(&file, free).unwrap();
    let out = shootout(&["list"]).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `shootout reruns` on a sweep run given twice: every line reproduced
/// with no spread, each comparison's intervals held; one run, or a run
/// that is not a sweep, refused in one line.
fn reruns_set_runs_side_by_side(run: &Path) {
    let run = run.to_str().unwrap();
    let out = shootout(&["reruns", run, run, "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let targets = r["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 6, "{r}");
    for t in targets {
        assert_eq!(t["runs"].as_array().unwrap().len(), 2, "{t}");
        assert_eq!(t["runs"][0], t["runs"][1], "{t}");
    }
    let c = &r["comparisons"][0];
    assert_eq!(
        (c["pairs"].as_u64(), c["p99_held"].as_u64()),
        (Some(2), Some(2)),
        "{c}"
    );
    assert_eq!(r["same_machine"], true, "{r}");
    let md = shootout(&["reruns", run, run]).output().unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains("| Spread | Reproduced |"));
    assert!(String::from_utf8_lossy(&md.stdout).contains("| Knee per run | Knee spread |"));
    // The same run twice: the same knee, or none in both (a target whose
    // steps were all invalid on a busy machine has no knee).
    for t in targets {
        let none = t["runs"][0]["knee"].is_null() && t["knee_spread_pct"].is_null();
        assert!(none || t["knee_spread_pct"] == 0.0, "{t}");
    }

    // The same run with another CPU in its meta.json: no row is judged.
    let elsewhere = tempfile::tempdir_in(target_dir()).unwrap();
    let copy = elsewhere.path().join("run");
    let cp = Command::new("cp")
        .args(["-r", run])
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let meta_path = copy.join("meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["cpu_model"] = "Another CPU".into();
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let out = shootout(&["reruns", run, copy.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["same_machine"], false, "{r}");
    for t in r["targets"].as_array().unwrap() {
        assert!(t["reproduced"].is_null(), "{t}");
    }
    let md = shootout(&["reruns", run, copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains("come from different machines"));

    let one = shootout(&["reruns", run]).output().unwrap();
    assert_eq!(one.status.code(), Some(2));
    let fixture = root().join("analysis/tests/fixtures/run");
    let not = shootout(&["reruns", run, fixture.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&not.stderr);
    assert_eq!(not.status.code(), Some(1), "{err}");
    assert!(err.contains("not a sweep run"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `shootout ARGS --build-profile dev --out OUT`, which must succeed; its stdout.
fn run_ok(args: &[&str], out: &Path) -> String {
    let result = shootout(args)
        .args(["--build-profile", "dev", "--out"])
        .arg(out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout).into_owned();
    assert!(
        result.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    stdout
}

#[test]
fn alternate_schedule_loads_one_stack_after_the_other() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let stdout = run_ok(
        &["run", "shootout/tests/fixtures/paired-alternate.toml"],
        out.path(),
    );
    assert!(stdout.contains("aa vs base: 2xx/s "), "{stdout}");
    let dir = run_dir(out.path()).join("paired-alternate").join("aa");
    let first_interval = |role: &str| -> (u64, u64) {
        let f = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.to_string_lossy()
                    .ends_with(&format!("block-01-ab.{role}.jsonl"))
                    || p.to_string_lossy()
                        .ends_with(&format!("block-01-ba.{role}.jsonl"))
            })
            .unwrap();
        let text = std::fs::read_to_string(f).unwrap();
        let v: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|v: &serde_json::Value| v["type"] == "interval")
            .collect();
        (
            v[0]["start_unix_ms"].as_u64().unwrap(),
            v.last().unwrap()["start_unix_ms"].as_u64().unwrap(),
        )
    };
    // One load ran after the other ended: their times do not overlap.
    let (r, b) = (first_interval("row"), first_interval("base"));
    assert!(r.1 < b.0 || b.1 < r.0, "row {r:?} and base {b:?} overlap");
    assert!(leftovers(out.path()).is_empty());
}

#[test]
fn repeated_comparison_runs_in_rounds_and_reports_over_runs() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let args = [
        "run",
        "shootout/tests/fixtures/paired.toml",
        "--only",
        "aa",
        "--runs",
        "2",
        "--duration",
        "1s",
    ];
    let stdout = run_ok(&args, out.path());
    assert!(stdout.contains("aa vs base (run 1): 2xx/s "), "{stdout}");
    assert!(stdout.contains("aa vs base (run 2): 2xx/s "), "{stdout}");
    assert!(
        stdout.contains("aa vs base: 2xx/s ") && stdout.contains(" across 2 runs (within a run ± "),
        "{stdout}"
    );
    let m = meta(out.path());
    let runs: Vec<u64> = m["paired"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["run"].as_u64().unwrap())
        .collect();
    assert_eq!(runs, [1, 2]);
    let dir = run_dir(out.path()).join("paired").join("aa");
    for run in ["run-01", "run-02"] {
        let blocks = std::fs::read_dir(dir.join(run))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".cpu.jsonl"))
            .count();
        assert_eq!(blocks, 4, "{run}");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir(out.path()).join("summary.json")).unwrap())
            .unwrap();
    let row = &summary["paired"][0]["rows"][0];
    assert_eq!(row["runs"].as_array().unwrap().len(), 2, "{row}");
    assert!(row["across_runs"]["lo"].as_f64().unwrap() > 0.0, "{row}");
    assert!(leftovers(out.path()).is_empty());
}

#[test]
fn interleaved_comparison_takes_turns_and_says_which_effect_it_measures() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let args = ["run", "shootout/tests/fixtures/paired-interleave.toml"];
    let stdout = run_ok(&args, out.path());
    assert!(stdout.contains("aa vs base: 2xx/s "), "{stdout}");
    let m = meta(out.path());
    let settings = m["paired"][0]["settings"].as_str().unwrap();
    assert!(
        settings.starts_with("interleave (100ms turns), "),
        "{settings}"
    );
    let dir = run_dir(out.path());
    let table = std::fs::read_to_string(dir.join("paired-interleave").join("table.toml")).unwrap();
    assert!(table.contains("schedule = \"interleave\""), "{table}");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("Schedule interleave: "), "{readme}");
    assert!(leftovers(out.path()).is_empty());
}

#[test]
fn slow_clients_run_beside_the_row_and_are_reported() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let stdout = run_ok(
        &["run", "shootout/tests/fixtures/paired-slow.toml"],
        out.path(),
    );
    assert!(stdout.contains("slow vs base: 2xx/s "), "{stdout}");
    let dir = run_dir(out.path());
    let m = meta(out.path());
    let blocks = m["paired"][0]["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 4);
    for b in blocks {
        let slow = &b["row_slow"];
        assert_eq!(slow["connections"], 50, "{b}");
        // ntex's 1 s header timeout ends them (with 408) within the block.
        let ended = slow["closed_by_server"].as_u64().unwrap();
        assert!(ended >= 50, "{b}");
        assert_eq!(slow["answered"]["408"].as_u64(), Some(ended), "{b}");
        assert!(b.get("base_slow").is_none(), "{b}");
    }
    let logs = std::fs::read_dir(dir.join("paired-slow/slow"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".row.slow.jsonl"))
        .count();
    assert_eq!(logs, 4);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let row = &summary["paired"][0]["rows"][0];
    assert_eq!(row["slow"]["blocks"], 4, "{row}");
    assert!(
        row["slow"]["lifetime_p50_ms"].as_u64().unwrap() >= 900,
        "{row}"
    );
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("### Slow clients"), "{readme}");
    assert!(leftovers(out.path()).is_empty());
}

/// Emulator rows need Xvfb, xterm and alacritty (`shootout setup --all`
/// installs them);
/// without them the test says so and does nothing.
fn xterm_missing() -> Option<String> {
    let missing: Vec<&str> = ["Xvfb", "xterm", "alacritty"]
        .into_iter()
        .filter(|p| shootout::prepare::setup::find(p).is_none())
        .collect();
    (!missing.is_empty()).then(|| format!("{} not installed", missing.join(" and ")))
}

#[test]
fn emulator_rows_run_in_real_terminals_and_leave_nothing() {
    if let Some(why) = xterm_missing() {
        eprintln!("SKIPPED emulator_rows_run_in_real_terminals_and_leave_nothing: {why} (run: cargo run -p shootout -- setup --all)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("xterm.toml");
    std::fs::write(
        &file,
        "[defaults]\nduration = \"1s\"\nwarmup = \"0s\"\nconnections = 4\nworkers = 1\n\
         features = [\"log-stdout\"]\nlog = \"xterm\"\n\n\
         [[scenario]]\nname = \"xterm\"\nserver = \"actix\"\n\n\
         [[scenario]]\nname = \"alacritty\"\nserver = \"actix\"\nlog = \"alacritty\"\n\n\
         [[scenario]]\nname = \"refused\"\nserver = \"actix\"\nbacklog = 0\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let result = shootout(&["run", "--build-profile", "dev", "--out"])
        .arg(&out)
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    // The good row ran and its counter checked out; the bad one failed
    // with the server's own words; nothing is left of either.
    assert_eq!(result.status.code(), Some(1), "{stdout}{stderr}");
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
    assert!(leftovers(&out).is_empty(), "{:?}", leftovers(&out));
    let m = meta(&out);
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

#[test]
fn interleaved_searches_run_in_rounds_on_fresh_stacks() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let stdout = run_ok(
        &["run", "shootout/tests/fixtures/sweep-interleave.toml"],
        out.path(),
    );
    // Round 1 forward, round 2 backward. A missing search says why in the
    // rows' records (a sweep that found no bracket has nothing to search).
    let at = |line: &str| {
        stdout.find(line).unwrap_or_else(|| {
            panic!(
                "{line:?} not in {stdout}\nrows: {:#}",
                meta(out.path())["rows"]
            )
        })
    };
    assert!(at("actix: search 1 done") < at("ntex: search 1 done"));
    assert!(at("ntex: search 1 done") < at("ntex: search 2 done"));
    assert!(at("ntex: search 2 done") < at("actix: search 2 done"));
    // One record per row for its sweep, one for its search stacks.
    let m = meta(out.path());
    let names: Vec<(&str, u64)> = m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert!(r["error"].is_null(), "{r}");
            assert_eq!(r["counter"]["ok"], true, "{r}");
            (
                r["scenario"].as_str().unwrap(),
                r["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [("actix", 1), ("ntex", 1), ("actix", 3), ("ntex", 3)],
        "{m}"
    );
    let table = run_dir(out.path()).join("sweep-interleave");
    for row in ["actix", "ntex"] {
        for r in [1, 2] {
            let f = format!("{row}.search-1-{r}-01.jsonl");
            assert!(table.join(&f).is_file(), "{f}");
            // One bisection round pins every search at an end of its
            // bracket (100 passes, 1,000,000 fails): it tries that end
            // again on its own stack, which settles it at once.
            let f = format!("{row}.search-1-{r}-02.jsonl");
            assert!(table.join(&f).is_file(), "{f}");
            let f = format!("{row}.search-1-{r}-03.jsonl");
            assert!(!table.join(&f).exists(), "{f}");
        }
        let index: serde_json::Value = serde_json::from_slice(
            &std::fs::read(table.join(format!("{row}.sweep.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(index["searches_interleaved"], true, "{index}");
        assert_eq!(index["pinned_searches_retried"], true, "{index}");
    }
    // Two searches each, paired round by round against actix.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir(out.path()).join("summary.json")).unwrap())
            .unwrap();
    let lines = summary["sweeps"][0]["rows"].as_array().unwrap();
    for l in lines {
        assert_eq!(l["searches"].as_array().unwrap().len(), 2, "{l}");
        assert_eq!(l["searches_interleaved"], true, "{l}");
        assert!(
            l.get("pinned_top").is_none() && l.get("pinned_bottom").is_none(),
            "{l}"
        );
    }
    let ntex = lines.iter().find(|l| l["row"] == "ntex").unwrap();
    assert_eq!(ntex["vs_baseline"]["paired"], true, "{ntex}");
    assert!(ntex["vs_baseline"]["ci95"].is_array(), "{ntex}");
}

#[test]
fn a_sweep_steps_through_its_rates_and_records_every_step() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let stdout = run_ok(&["run", "shootout/tests/fixtures/sweep.toml"], out.path());
    assert!(stdout.contains("actix: sweep done"), "{stdout}");
    assert!(stdout.contains("ntex: compared with actix"), "{stdout}");
    let m = meta(out.path());
    assert_eq!(m["design"], "sweep");
    // Each row's sweep, then ntex's comparison (repetition 2).
    let rows = m["rows"].as_array().unwrap();
    let names: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["scenario"].as_str().unwrap(),
                r["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("actix", 1), ("ntex", 1), ("ntex", 2)], "{m}");
    // The comparison's record is ntex's own stacks', whichever side of a
    // block ran last.
    let startup = rows[2]["startup_line"].as_str().unwrap();
    assert!(startup.starts_with("ntex-server listening"), "{startup}");
    for row in rows {
        assert!(row["error"].is_null(), "{row}");
        // Every POST the steps acknowledged is in the server's count.
        assert_eq!(row["counter"]["ok"], true, "{row}");
        // The server's and the loadgens' CPU and peak memory over the row
        // (its stacks and steps): a server that served thousands of
        // requests used some CPU, and each process held some memory.
        for who in ["server", "loadgen"] {
            let cpu = row[who]["cpu_seconds"].as_f64().unwrap();
            assert!(cpu > 0.0, "{who}: {row}");
            assert!(
                row[who]["peak_rss_bytes"].as_u64().unwrap() > 0,
                "{who}: {row}"
            );
            assert_eq!(row[who]["processes"], 1, "{who}: {row}");
        }
    }
    // The comparison's record sums ntex's fresh stacks, one per block,
    // so its loadgens' CPU is that of its steps alone, not the sweep's.
    assert!(
        rows[2]["loadgen"]["cpu_seconds"].as_f64() < rows[1]["loadgen"]["cpu_seconds"].as_f64(),
        "{m}"
    );
    let table = run_dir(out.path()).join("sweep");
    for f in [
        "actix.probe.jsonl",
        "actix.step-01.jsonl",
        "actix.step-02.jsonl",
        "actix.sweep.json",
        "ntex.sweep.json",
        "ntex.compare.json",
        "ntex.cmp-ntex-50-b01.jsonl",
        "actix.cmp-ntex-50-b01.jsonl",
        "ntex.cmp-ntex-50-b02.jsonl",
        "actix.cmp-ntex-50-b02.jsonl",
        "table.toml",
    ] {
        assert!(table.join(f).is_file(), "{f}");
    }
    // summary.json's sweeps, recomputed from the logs: a line per row and
    // target; both rates met both 10 s targets, so no search ran and the
    // sweep never got past them.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir(out.path()).join("summary.json")).unwrap())
            .unwrap();
    let lines = summary["sweeps"][0]["rows"].as_array().unwrap();
    let keys: Vec<(&str, &str)> = lines
        .iter()
        .map(|r| (r["row"].as_str().unwrap(), r["slo"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("actix", "p99 <= 10s"),
            ("actix", "p99.9 <= 10s"),
            ("actix", "p50 <= 1us"),
            ("ntex", "p99 <= 10s"),
            ("ntex", "p99.9 <= 10s"),
            ("ntex", "p50 <= 1us")
        ]
    );
    let r = &lines[0];
    // client_spin: loadgen was told to spin, and the rules say so.
    assert_eq!(r["client_spins"], true, "{r}");
    let readme = std::fs::read_to_string(run_dir(out.path()).join("README.md")).unwrap();
    assert!(
        readme.contains("Client spin: loadgen woke early"),
        "{readme}"
    );
    let steps = r["steps"].as_array().unwrap();
    let mut rates: Vec<f64> = steps.iter().map(|s| s["rate"].as_f64().unwrap()).collect();
    rates.dedup();
    assert_eq!(rates, [200.0, 400.0], "{r}");
    // p50 <= 1 µs: every valid step fails (dev builds often wake the timer
    // late at 200/s, so a step may be invalid). The first rate with a
    // valid step (so failing) was measured again until two of three
    // failed or three steps ran; no
    // rate took more than three steps; each extra step is a vote log.
    let impossible = &lines[2];
    let judged = impossible["steps"].as_array().unwrap();
    let mut extra = 0;
    let mut first_fail_seen = false;
    for rate in [200.0, 400.0] {
        let at: Vec<&serde_json::Value> = judged.iter().filter(|s| s["rate"] == rate).collect();
        assert!((1..=3).contains(&at.len()), "{impossible}");
        extra += at.len() - 1;
        let fails = at.iter().filter(|s| s["valid"] == true).count();
        if fails > 0 && !first_fail_seen {
            first_fail_seen = true;
            assert!(at.len() >= 2, "a failing rate not voted on: {impossible}");
        }
    }
    for k in 1..=extra {
        assert!(
            table.join(format!("actix.vote-{k:02}.jsonl")).is_file(),
            "{k}"
        );
    }
    assert!(!table
        .join(format!("actix.vote-{:02}.jsonl", extra + 1))
        .exists());
    assert!(
        ["below", "client"].contains(&impossible["bracket"].as_str().unwrap()),
        "{impossible}"
    );
    assert_eq!(lines[2]["votes"], 3, "{}", lines[2]);
    for s in steps {
        for k in ["achieved", "p50_us", "p99_us", "p999_us"] {
            assert!(s[k].as_f64().unwrap() > 0.0, "{k}: {s}");
        }
        assert!(s["valid"].is_boolean(), "{s}");
    }
    assert_eq!(r["bracket"], "above", "{r}");
    assert!(r["searches"].as_array().unwrap().is_empty(), "{r}");
    // The comparison: half of actix's highest passing step (400, a lower
    // bound: its sweep never got past the target), two blocks, ratios with
    // intervals over them.
    let c = &summary["sweeps"][0]["comparisons"][0];
    assert_eq!(
        (c["row"].as_str(), c["against"].as_str()),
        (Some("ntex"), Some("actix")),
        "{c}"
    );
    assert_eq!(c["rate"], 200.0, "{c}");
    assert_eq!(c["base_max_is_lower_bound"], true, "{c}");
    assert_eq!(
        (c["blocks_planned"].as_u64(), c["blocks"].as_u64()),
        (Some(2), Some(2)),
        "{c}"
    );
    let p99 = &c["p99"];
    assert!(
        p99["lo"].as_f64().unwrap() <= p99["ratio"].as_f64().unwrap(),
        "{c}"
    );
    assert!(
        p99["ratio"].as_f64().unwrap() <= p99["hi"].as_f64().unwrap(),
        "{c}"
    );
    let readme = std::fs::read_to_string(run_dir(out.path()).join("README.md")).unwrap();
    assert!(readme.contains("| Configuration | Target |"), "{readme}");
    assert!(readme.contains("### At equal rates"), "{readme}");
    reruns_set_runs_side_by_side(&run_dir(out.path()));
    assert!(
        leftovers(out.path()).is_empty(),
        "{:?}",
        leftovers(out.path())
    );
}

#[test]
fn sinks_drain_the_servers_own_lines_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sinks.toml");
    let mut text = String::from(
        "design = \"sinks\"\n[sinks]\nruns = 2\nlength = \"300ms\"\nsample = \"500ms\"\n\n\
         [defaults]\nconnections = 4\nworkers = 1\nrequest = \"post\"\n\
         features = [\"log-stdout\"]\nlog_level = \"info\"\n\n\
         [[scenario]]\nname = \"file\"\nserver = \"actix\"\nlog = \"file\"\n\n\
         [[scenario]]\nname = \"pipe\"\nserver = \"ntex\"\nlog = \"pipe\"\n\n\
         [[scenario]]\nname = \"pty\"\nserver = \"actix\"\nlog = \"terminal\"\n\n\
         [[scenario]]\nname = \"devnull\"\nserver = \"ntex\"\nlog = \"none\"\n",
    );
    // xterm where it is installed (`shootout setup --all`); the other four
    // sinks are checked either way.
    let xterm = xterm_missing().is_none();
    if xterm {
        text += "\n[[scenario]]\nname = \"xterm\"\nserver = \"actix\"\nlog = \"xterm\"\n";
    } else {
        eprintln!("sinks test: xterm row left out: {:?}", xterm_missing());
    }
    std::fs::write(&file, text).unwrap();
    let out = tempfile::tempdir().unwrap();
    let stdout = run_ok(&["run", file.to_str().unwrap()], out.path());
    assert!(stdout.contains("pty: sink measured"), "{stdout}");
    let run = run_dir(out.path());
    let m = meta(out.path());
    assert_eq!(m["design"], "sinks");
    // The sample's server and loadgen usage is recorded, not left at its
    // default: each read its process and memory. CPU time comes in clock
    // ticks (10 ms), which a slow sink's loadgen may not reach in a 500 ms
    // sample on a busy machine, so it counts over all rows.
    let mut cpu = [0.0, 0.0];
    for row in m["rows"].as_array().unwrap() {
        for (i, who) in ["server", "loadgen"].into_iter().enumerate() {
            assert!(row[who]["processes"].as_u64().unwrap() >= 1, "{who}: {row}");
            assert!(
                row[who]["peak_rss_bytes"].as_u64().unwrap() > 0,
                "{who}: {row}"
            );
            cpu[i] += row[who]["cpu_seconds"].as_f64().unwrap();
        }
    }
    assert!(
        cpu[0] > 0.0 && cpu[1] > 0.0,
        "CPU seconds of servers, loadgens: {cpu:?}"
    );
    let table = run.join("sinks");
    // The lines are the server's own: actix's access log names the request.
    let lines = std::fs::read_to_string(table.join("file.lines.txt")).unwrap();
    assert!(lines.lines().count() >= 1, "{lines}");
    assert!(
        lines.lines().all(|l| l.contains("POST / HTTP/1.1")),
        "{lines}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap();
    let rows = summary["sinks"][0]["rows"].as_array().unwrap();
    let mut names: Vec<&str> = rows.iter().map(|r| r["row"].as_str().unwrap()).collect();
    names.sort();
    let mut want = vec!["devnull", "file", "pipe", "pty"];
    if xterm {
        want.push("xterm");
    }
    want.sort();
    assert_eq!(names, want, "{summary}");
    for r in rows {
        // One access-log line per request at info level, on both twins.
        let lpr = r["lines_per_request"].as_f64().unwrap();
        assert!((0.9..=1.1).contains(&lpr), "{r}");
        assert_eq!(r["runs"].as_array().unwrap().len(), 2, "{r}");
        assert!(r["drain_lines_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["drain_ci95_pct"].is_number(), "{r}");
        let allows = r["max_rps"].as_f64().unwrap();
        let drain = r["drain_lines_per_s"].as_f64().unwrap();
        assert!((allows * lpr - drain).abs() < 1e-6 * drain, "{r}");
        if r["sink"] == "xterm" {
            assert!(
                r["terminal"].as_str().unwrap().starts_with("xterm on Xvfb"),
                "{r}"
            );
        }
    }
    let readme = std::fs::read_to_string(run.join("README.md")).unwrap();
    assert!(readme.contains("| Drain lines/s |"), "{readme}");
    assert!(
        leftovers(out.path()).is_empty(),
        "{:?}",
        leftovers(out.path())
    );
    assert!(!run.join("tmp").exists());
}
