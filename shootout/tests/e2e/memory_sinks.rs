//! The memory and sinks designs end to end: memory samples idle, held and
//! after; sinks drain the servers' own lines.

use super::*;

#[test]
fn memory_rows_sample_idle_held_and_after_and_leave_nothing() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let run = Ran::ok(&["run", "shootout/tests/fixtures/memory.toml"], out.path());
    let m = run.meta();
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
        // Where the server ran once it answered, and loadgen while it held
        // its connections, read from /proc: where the file puts them.
        let cpus = r["cpus"].as_array().unwrap();
        let names: Vec<&str> = cpus
            .iter()
            .map(|p| p["process"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["server", "loadgen"], "{r}");
        for p in cpus {
            let want = if p["process"] == "loadgen" { "0" } else { "1" };
            assert_eq!(p["wanted"], want, "{p}");
            assert_eq!(p["read"], serde_json::json!([want]), "{p}");
            assert!(p["threads"].as_u64().unwrap() >= 1, "{p}");
        }
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
    let table = run.dir().join("memory");
    for f in [
        "actix-glibc.rep1.memory.json",
        "actix-glibc.rep2.hold.jsonl",
        "ntex-reclaim-netns.memory.json",
        "table.toml",
    ] {
        assert!(is_raw(&table.join(f)), "{f}");
    }
    let readme = run.text("README.md");
    assert!(
        readme.contains("| Server | Allocator | Workers | Connections |"),
        "{readme}"
    );
    assert!(
        readme.contains("| ntex-server | glibc | 1 | 300 |"),
        "{readme}"
    );
    assert!(run.dir().join("memory-memory.svg").is_file());
    run.left_nothing();
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
    require_terminals();
    text += "\n[[scenario]]\nname = \"xterm\"\nserver = \"actix\"\nlog = \"xterm\"\n";
    std::fs::write(&file, text).unwrap();
    let out = tempfile::tempdir().unwrap();
    let ran = Ran::ok(&["run", file.to_str().unwrap()], out.path());
    assert!(ran.stdout.contains("pty: sink measured"), "{}", ran.stdout);
    let run = ran.dir();
    let m = ran.meta();
    assert_eq!(m["design"], "sinks");
    // The sample's server and loadgen usage is recorded, not left at its
    // default: each read its process and memory. CPU time comes in clock
    // ticks (10 ms), which a slow sink's loadgen may not reach in a 500 ms
    // sample on a busy machine, so it counts over all rows.
    let mut cpu = [0.0, 0.0];
    for row in m["rows"].as_array().unwrap() {
        // Where the server ran, read from /proc once it answered, and the
        // sample's loadgen at its first sample.
        let cpus = row["cpus"].as_array().unwrap();
        for who in ["server", "loadgen"] {
            assert!(
                cpus.iter()
                    .any(|p| p["process"] == who && p["threads"].as_u64() >= Some(1)),
                "{who}: {row}"
            );
        }
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
    let lines = analysis::input::raw::read_to_string(&table.join("file.lines.txt")).unwrap();
    assert!(lines.lines().count() >= 1, "{lines}");
    assert!(
        lines.lines().all(|l| l.contains("POST / HTTP/1.1")),
        "{lines}"
    );
    let summary = ran.summary();
    let rows = summary["sinks"][0]["rows"].as_array().unwrap();
    let mut names: Vec<&str> = rows.iter().map(|r| r["row"].as_str().unwrap()).collect();
    names.sort();
    let want = vec!["devnull", "file", "pipe", "pty", "xterm"];
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
    let readme = ran.text("README.md");
    assert!(readme.contains("| Drain lines/s |"), "{readme}");
    ran.left_nothing();
    assert!(!run.join("tmp").exists());
}
