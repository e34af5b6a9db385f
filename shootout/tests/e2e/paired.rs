//! The paired design end to end: the main command, both stacks at once,
//! the alternate and interleaved schedules, runs in rounds, slow clients
//! beside a row, and calibrate's control.

use super::*;

#[test]
fn the_main_command_is_paired_and_prints_what_it_decides() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let args = [
        "run",
        "scenarios/quick.toml",
        "--blocks",
        "4",
        "--duration",
        "1s",
        "--settle",
        "500ms",
    ];
    let r = Ran::ok(&args, out.path());
    let stdout = &r.stdout;
    // Each comparison against the row it names, and one answer line each,
    // after the table's title (the words depend on this run's numbers).
    let m = r.meta();
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
        ("actix-log-pipe", "actix"),
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
    assert_eq!(answers.len(), 5, "{stdout}");
    let words = ["is ", "no difference this run can resolve", "resolves"];
    let names = [
        "ntex/actix",
        "actix-log-pipe/actix",
        "ntex-nginx/ntex",
        "ntex-netns/ntex",
        "A/A",
    ];
    for (line, name) in answers.iter().zip(names) {
        assert!(line.trim_start().starts_with(name), "{line}");
        assert!(line.contains(", 95 %)"), "{line}");
        assert!(words.iter().any(|w| line.contains(w)), "{line}");
    }
    assert!(r.text("index.html").contains("<table class=\"answers\">"));
    let readme = r.text("README.md");
    assert!(
        readme.contains(
            "ntex behind nginx (proxy.conf) (against ntex, global counter, KeepAlive::Os)"
        ),
        "{readme}"
    );
    r.left_nothing();
}

#[test]
fn paired_design_runs_both_stacks_at_once_and_leaves_nothing() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let r = Ran::ok(&["run", "shootout/tests/fixtures/paired.toml"], out.path());
    for row in ["aa", "ntex-nginx-netns"] {
        assert!(
            r.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{row} vs base: 2xx/s "))),
            "{row}: {}",
            r.stdout
        );
    }
    let m = r.meta();
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
                // The nginx row logs into a pipe: the runner's reader of
                // it is placed on the server's CPU too.
                let nginx = c["row"] == "ntex-nginx-netns" && side == "row";
                let want: &[&str] = if nginx {
                    &["server", "nginx", "sink reader", "loadgen"]
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
    let table = r.dir().join("paired");
    for row in ["aa", "ntex-nginx-netns"] {
        let dir = table.join(row);
        let mut cpu_files = 0;
        for name in names_in(&dir) {
            if !name.ends_with(".cpu.jsonl") {
                continue;
            }
            cpu_files += 1;
            let samples = jsonl(&dir.join(&name));
            let (first, last) = (&samples[1], samples.last().unwrap());
            for side in ["row_cpu_ns", "base_cpu_ns"] {
                assert!(
                    last[side].as_u64().unwrap() > first[side].as_u64().unwrap(),
                    "{name}: {side} did not grow"
                );
            }
            let starts = |role: &str| -> Vec<u64> {
                jsonl(&dir.join(name.replace(".cpu.", &format!(".{role}."))))
                    .into_iter()
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
    let readme = r.text("README.md");
    assert!(readme.contains("(paired against base)"), "{readme}");
    r.left_nothing();
}

#[test]
fn calibrate_control_adds_cpu_per_request() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    // A 50% control at a short duration: only its direction is asserted.
    let args = [
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
    ];
    let run = Ran::ok(&args, out.path());
    assert!(
        run.stdout.starts_with("resolution on this machine: A/A "),
        "{}",
        run.stdout
    );
    let cal = json(&run.dir().join("calibration.json"));
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
    let dir = run.dir();
    // calibration.json is what its meta.json and raw windows give.
    let again = shootout::design::calibrate::recompute(&dir).unwrap();
    assert_eq!(
        std::fs::read(dir.join("calibration.json")).unwrap(),
        shootout::design::calibrate::to_json(&again).unwrap()
    );
    for table in ["calibration", "calibration-duet"] {
        assert!(dir.join(table).join("table.toml").is_file(), "{table}");
    }
    run.left_nothing();
}

#[test]
fn alternate_schedule_loads_one_stack_after_the_other() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let run = Ran::ok(
        &["run", "shootout/tests/fixtures/paired-alternate.toml"],
        out.path(),
    );
    assert!(run.stdout.contains("aa vs base: 2xx/s "), "{}", run.stdout);
    let dir = run.dir().join("paired-alternate").join("aa");
    let first_interval = |role: &str| -> (u64, u64) {
        let f = names_in(&dir)
            .into_iter()
            .find(|n| {
                n == &format!("block-01-ab.{role}.jsonl")
                    || n == &format!("block-01-ba.{role}.jsonl")
            })
            .map(|n| dir.join(n))
            .unwrap();
        let v: Vec<serde_json::Value> = jsonl(&f)
            .into_iter()
            .filter(|v| v["type"] == "interval")
            .collect();
        (
            v[0]["start_unix_ms"].as_u64().unwrap(),
            v.last().unwrap()["start_unix_ms"].as_u64().unwrap(),
        )
    };
    // One load ran after the other ended: their times do not overlap.
    let (r, b) = (first_interval("row"), first_interval("base"));
    assert!(r.1 < b.0 || b.1 < r.0, "row {r:?} and base {b:?} overlap");
    run.left_nothing();
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
    let run = Ran::ok(&args, out.path());
    let stdout = &run.stdout;
    assert!(stdout.contains("aa vs base (run 1): 2xx/s "), "{stdout}");
    assert!(stdout.contains("aa vs base (run 2): 2xx/s "), "{stdout}");
    assert!(
        stdout.contains("aa vs base: 2xx/s ") && stdout.contains(" across 2 runs (within a run ± "),
        "{stdout}"
    );
    let m = run.meta();
    let runs: Vec<u64> = m["paired"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["run"].as_u64().unwrap())
        .collect();
    assert_eq!(runs, [1, 2]);
    let dir = run.dir().join("paired").join("aa");
    for n in ["run-01", "run-02"] {
        let blocks = names_in(&dir.join(n))
            .iter()
            .filter(|e| e.ends_with(".cpu.jsonl"))
            .count();
        assert_eq!(blocks, 4, "{n}");
    }
    let summary = run.summary();
    let row = &summary["paired"][0]["rows"][0];
    assert_eq!(row["runs"].as_array().unwrap().len(), 2, "{row}");
    assert!(row["across_runs"]["lo"].as_f64().unwrap() > 0.0, "{row}");
    run.left_nothing();
}

#[test]
fn interleaved_comparison_takes_turns_and_says_which_effect_it_measures() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let args = ["run", "shootout/tests/fixtures/paired-interleave.toml"];
    let run = Ran::ok(&args, out.path());
    assert!(run.stdout.contains("aa vs base: 2xx/s "), "{}", run.stdout);
    let m = run.meta();
    let settings = m["paired"][0]["settings"].as_str().unwrap();
    assert!(
        settings.starts_with("interleave (100ms turns), "),
        "{settings}"
    );
    let table = run.text("paired-interleave/table.toml");
    assert!(table.contains("schedule = \"interleave\""), "{table}");
    let readme = run.text("README.md");
    assert!(readme.contains("Schedule interleave: "), "{readme}");
    run.left_nothing();
}

#[test]
fn slow_clients_run_beside_the_row_and_are_reported() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let run = Ran::ok(
        &["run", "shootout/tests/fixtures/paired-slow.toml"],
        out.path(),
    );
    assert!(
        run.stdout.contains("slow vs base: 2xx/s "),
        "{}",
        run.stdout
    );
    let dir = run.dir();
    let m = run.meta();
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
    let logs = names_in(&dir.join("paired-slow/slow"))
        .iter()
        .filter(|e| e.ends_with(".row.slow.jsonl"))
        .count();
    assert_eq!(logs, 4);
    let summary = run.summary();
    let row = &summary["paired"][0]["rows"][0];
    assert_eq!(row["slow"]["blocks"], 4, "{row}");
    assert!(
        row["slow"]["lifetime_p50_ms"].as_u64().unwrap() >= 900,
        "{row}"
    );
    let readme = run.text("README.md");
    assert!(readme.contains("### Slow clients"), "{readme}");
    run.left_nothing();
}

#[test]
fn spread_comparisons_run_their_blocks_in_rounds_over_the_sitting() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let run = Ran::ok(
        &["run", "shootout/tests/fixtures/paired-spread.toml"],
        out.path(),
    );
    let m = run.meta();
    // The plan: 4 rounds of one block of each comparison.
    let plan: Vec<&str> = m["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["row"].as_str().unwrap())
        .collect();
    assert_eq!(plan.len(), 8, "{m}");
    for round in plan.chunks(2) {
        let mut r = round.to_vec();
        r.sort_unstable();
        assert_eq!(r, ["aa", "aa2"], "{plan:?}");
    }
    for c in m["paired"].as_array().unwrap() {
        assert_eq!(c["blocks"].as_array().unwrap().len(), 4, "{c}");
        assert_eq!(c["stopped_by"], "blocks", "{c}");
        let settings = c["settings"].as_str().unwrap();
        assert!(
            settings.ends_with(", blocks spread over the sitting"),
            "{settings}"
        );
    }
    // The blocks ran in the plan's order: each block's first interval.
    let mut ran: Vec<(u64, &str)> = Vec::new();
    for row in ["aa", "aa2"] {
        let dir = run.dir().join("paired-spread").join(row);
        for name in names_in(&dir).iter().filter(|n| n.ends_with(".row.jsonl")) {
            let first = jsonl(&dir.join(name))
                .into_iter()
                .find(|v| v["type"] == "interval")
                .unwrap();
            ran.push((first["start_unix_ms"].as_u64().unwrap(), row));
        }
    }
    ran.sort_unstable();
    let order: Vec<&str> = ran.iter().map(|(_, r)| *r).collect();
    assert_eq!(order, plan);
    run.left_nothing();
}
