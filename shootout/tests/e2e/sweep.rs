//! The sweep design end to end: steps through its rates, votes, the
//! comparison at equal rates, interleaved searches, and `shootout reruns`.

use super::*;

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
        serde_json::from_str(&analysis::input::raw::read_to_string(&meta_path).unwrap()).unwrap();
    meta["cpu_model"] = "Another CPU".into();
    let _ = std::fs::remove_file(analysis::input::raw::gz_path(&meta_path));
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

#[test]
fn interleaved_searches_run_in_rounds_on_fresh_stacks() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let run = Ran::ok(
        &["run", "shootout/tests/fixtures/sweep-interleave.toml"],
        out.path(),
    );
    let stdout = &run.stdout;
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
    let m = run.meta();
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
    let table = run.dir().join("sweep-interleave");
    for row in ["actix", "ntex"] {
        for r in [1, 2] {
            let f = format!("{row}.search-1-{r}-01.jsonl");
            assert!(is_raw(&table.join(&f)), "{f}");
            // One bisection round pins every search at an end of its
            // bracket (2 passes, 1,000,000 fails): it tries that end
            // again on its own stack, which settles it at once.
            let f = format!("{row}.search-1-{r}-02.jsonl");
            assert!(is_raw(&table.join(&f)), "{f}");
            let f = format!("{row}.search-1-{r}-03.jsonl");
            assert!(!is_raw(&table.join(&f)), "{f}");
        }
        let index = json(&table.join(format!("{row}.sweep.json")));
        assert_eq!(index["searches_interleaved"], true, "{index}");
        assert_eq!(index["pinned_searches_retried"], true, "{index}");
    }
    // Two searches each, paired round by round against actix.
    let summary = run.summary();
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
    run.left_nothing();
}

#[test]
fn a_sweep_steps_through_its_rates_and_records_every_step() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let run = Ran::ok(&["run", "shootout/tests/fixtures/sweep.toml"], out.path());
    let stdout = &run.stdout;
    assert!(stdout.contains("actix: sweep done"), "{stdout}");
    assert!(stdout.contains("ntex: compared with actix"), "{stdout}");
    let m = run.meta();
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
        // Where the server ran, read from /proc once it answered, and
        // each step's loadgen at its first sample (the file leaves them to
        // the scheduler: nothing to hold them to).
        let cpus = row["cpus"].as_array().unwrap();
        for who in ["server", "loadgen"] {
            assert!(
                cpus.iter().any(|p| p["process"] == who
                    && p["wanted"].is_null()
                    && p["threads"].as_u64() >= Some(1)),
                "{who}: {row}"
            );
        }
        // The server's and the loadgens' CPU and peak memory over the row
        // (its stacks and steps): each process used some CPU and held
        // some memory. CPU is read from /proc in 10 ms ticks, each
        // process's rounded down. The comparison (repetition 2) runs
        // fresh stacks for two one-second steps at 2/s: its loadgens can
        // each use less than a tick when the lanes' load cuts their spins
        // short (one clean run read 0.0 for the row), and so can its
        // servers, which start and answer four requests in all (CI read
        // 0.0 for ntex's). For that row only a reading is required;
        // below, its loadgens' record is checked not to hold the sweep's
        // CPU.
        let compared = row["repetition"] == 2;
        for who in ["server", "loadgen"] {
            let cpu = row[who]["cpu_seconds"].as_f64().unwrap();
            if compared {
                assert!(cpu >= 0.0, "{who}: {row}");
            } else {
                assert!(cpu > 0.0, "{who}: {row}");
            }
            assert!(
                row[who]["peak_rss_bytes"].as_u64().unwrap() > 0,
                "{who}: {row}"
            );
            assert_eq!(row[who]["processes"], 1, "{who}: {row}");
        }
    }
    let table = run.dir().join("sweep");
    // The comparison's record sums ntex's fresh stacks, one per block,
    // so its loadgens' CPU is that of its steps alone, not the sweep's.
    // Each of its steps used at least its busy share of one-second steps
    // (a step's wall time is longer): a record that also held the sweep's
    // CPU would reach the sweep's plus that. (Comparing the two records
    // with each other would measure the lanes' load: their loadgens spin,
    // and a spin is cut short while another process has the core.)
    let cmp = json(&table.join("ntex.compare.json"));
    let threads = json(&table.join("ntex.sweep.json"))["threads"]
        .as_f64()
        .unwrap();
    let own_at_least: f64 = cmp["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["side"] == "row")
        .map(|s| s["loadgen_busy"].as_f64().unwrap() * threads * 1.0)
        .sum();
    let sweep_cpu = rows[1]["loadgen"]["cpu_seconds"].as_f64().unwrap();
    let cmp_cpu = rows[2]["loadgen"]["cpu_seconds"].as_f64().unwrap();
    // Both in the same 10 ms ticks: the comparison's own share may be
    // zero (above), the sweep's CPU is not.
    assert!(own_at_least >= 0.0, "{cmp}");
    assert!(sweep_cpu > 0.0, "{m}");
    assert!(cmp_cpu < sweep_cpu + own_at_least, "{m}");
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
        assert!(is_raw(&table.join(f)), "{f}");
    }
    // summary.json's sweeps, recomputed from the logs: a line per row and
    // target; both rates met both 10 s targets, so no search ran and the
    // sweep never got past them.
    let summary = run.summary();
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
    let readme = run.text("README.md");
    assert!(
        readme.contains("Client spin: loadgen woke early"),
        "{readme}"
    );
    let steps = r["steps"].as_array().unwrap();
    let mut rates: Vec<f64> = steps.iter().map(|s| s["rate"].as_f64().unwrap()).collect();
    rates.dedup();
    assert_eq!(rates, [2.0, 4.0], "{r}");
    // p50 <= 1 µs: every valid step fails (dev builds may wake the timer
    // late, so a step may be invalid). The first rate with a
    // valid step (so failing) was measured again until two of three
    // failed or three steps ran; no
    // rate took more than three steps; each extra step is a vote log.
    let impossible = &lines[2];
    let judged = impossible["steps"].as_array().unwrap();
    let mut extra = 0;
    let mut first_fail_seen = false;
    for rate in [2.0, 4.0] {
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
            is_raw(&table.join(format!("actix.vote-{k:02}.jsonl"))),
            "{k}"
        );
    }
    assert!(!is_raw(
        &table.join(format!("actix.vote-{:02}.jsonl", extra + 1))
    ));
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
    // The comparison: half of actix's highest passing step (4, a lower
    // bound: its sweep never got past the target), two blocks, ratios with
    // intervals over them.
    let c = &summary["sweeps"][0]["comparisons"][0];
    assert_eq!(
        (c["row"].as_str(), c["against"].as_str()),
        (Some("ntex"), Some("actix")),
        "{c}"
    );
    assert_eq!(c["rate"], 2.0, "{c}");
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
    assert!(readme.contains("| Configuration | Target |"), "{readme}");
    assert!(readme.contains("### At equal rates"), "{readme}");
    reruns_set_runs_side_by_side(&run.dir());
    run.left_nothing();
}
