//! The analysis on checked-in fixture logs, against values worked out by hand.

use std::path::{Path, PathBuf};

use analysis::report::{Report, RowReport};
use analysis::{analyse, Options};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run_report() -> Report {
    let (report, problems) = analyse(&fixture("run"), &Options::default());
    assert!(problems.is_empty(), "{problems:?}");
    report.expect("the fixture run is analysable")
}

fn row<'a>(report: &'a Report, table: &str, name: &str) -> &'a RowReport {
    report
        .tables
        .iter()
        .find(|t| t.name == table)
        .and_then(|t| t.rows.iter().find(|r| r.name == name))
        .unwrap_or_else(|| panic!("no row {table}/{name}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

/// base.log: a header, 3 warm-up lines, then 1000 ms intervals of 100, 200,
/// 300, 400, 500 requests. Mean 300; sample sd sqrt(100000 / 4) = 158.11388...
#[test]
fn original_format_mean_and_sample_sd_by_hand() {
    let r = run_report();
    let base = row(&r, "original", "base");
    assert_eq!(base.rps.n, 5);
    assert!(close(base.rps.mean, 300.0), "{}", base.rps.mean);
    assert!(
        close(base.rps.sd, 158.113_883_008_418_97),
        "{}",
        base.rps.sd
    );
    assert_eq!(
        (base.rps.median, base.rps.min, base.rps.max),
        (300.0, 100.0, 500.0)
    );
    // 2000 ms intervals of 1200, 1400, 1000, 1600, 800: 600, 700, 500, 800, 400 /s.
    let fast = row(&r, "original", "fast");
    assert!(close(fast.rps.mean, 600.0) && close(fast.ratio, 2.0));
    assert!(base.welch.is_none());
    // One repetition each: its intervals are not independent, so there is
    // no test (Welch over intervals would say t = 3, p = 0.017: a figure
    // about the wrong unit). The textbook Welch is checked below.
    assert!(fast.welch.is_none());
    // The original format has no error counts.
    assert_eq!((base.errors, base.availability_pct), (None, None));
    // table.toml sets the order, the labels and the baseline.
    let t = &r.tables.iter().find(|t| t.name == "original").unwrap();
    assert_eq!(t.title, "Original client format");
    assert_eq!(t.baseline, "base");
    let labels: Vec<_> = t.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["Faster (2 s intervals)", "Baseline"]);
}

/// ntex: repetition 1 has shards a and b (b starts 40 ms later and has an
/// extra interval, dropped); merged by wall-clock slot: 110, 220, 330.
/// Repetition 2: 150, 250, and 100 in 500 ms = 200. Pooled mean 210, sample
/// sd sqrt(29800 / 5) = 77.2010...; repetition means 220 and 200.
#[test]
fn shards_merge_by_wall_clock_and_repetitions_pool() {
    let r = run_report();
    let ntex = row(&r, "loadgen", "ntex");
    assert_eq!((ntex.rps.n, ntex.repetitions, ntex.shards), (6, 2, 2));
    assert!(close(ntex.rps.mean, 210.0), "{}", ntex.rps.mean);
    assert!(close(ntex.rps.sd, 77.201_036_262_475_13), "{}", ntex.rps.sd);
    assert_eq!(ntex.repetition_means, [220.0, 200.0]);
    assert_eq!((ntex.errors, ntex.non_2xx), (Some(1), Some(2)));
    assert!(close(
        ntex.availability_pct.unwrap(),
        1160.0 * 100.0 / 1163.0
    ));
    // Old logs without histograms: the mean of per-log percentiles, marked.
    let lat = ntex.latency_us.as_ref().unwrap();
    assert!(close(lat.p50, 310.0 / 3.0) && close(lat.p99, 640.0 / 3.0));
    assert!(!lat.exact);
    // actix: 2 intervals marked warm-up, then 90, 110, 100, 100.
    let actix = row(&r, "loadgen", "actix");
    assert!(close(actix.rps.mean, 100.0) && close(actix.rps.sd, 8.164_965_809_277_26));
    assert!(close(ntex.ratio, 2.1));
    // A loadgen text log: the warm-up line is marked, the summary block read.
    let text = row(&r, "loadgen", "ntex-text");
    assert!(close(text.rps.mean, 25.0) && close(text.rps.sd, 50f64.sqrt()));
    let lat = text.latency_us.as_ref().unwrap();
    assert_eq!((lat.p50, lat.p99, lat.exact), (81.0, 115.0, false));
    assert!(close(text.availability_pct.unwrap(), 5000.0 / 51.0));
}

#[test]
fn skip_and_baseline_options_apply() {
    let opts = Options {
        skip: 5,
        baseline: Some("fast".into()),
    };
    let (report, _) = analyse(&fixture("run"), &opts);
    let report = report.unwrap();
    let base = row(&report, "original", "base");
    assert_eq!(base.rps.n, 3); // 300, 400, 500
                               // fast keeps 1000, 1600, 800 per 2 s: 500, 800, 400 /s, mean 566.67.
    assert!(close(base.ratio, 400.0 / (1700.0 / 3.0)), "{}", base.ratio);
    // Logs that mark their warm-up ignore --skip.
    assert_eq!(row(&report, "loadgen", "actix").rps.n, 4);
}

#[test]
fn rendered_markdown_snapshot() {
    let files = analysis::render(&run_report()).unwrap();
    let readme = &files.iter().find(|(n, _)| n == "README.md").unwrap().1;
    insta::assert_snapshot!(String::from_utf8(readme.clone()).unwrap());
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "README.md",
            "summary.json.gz",
            "loadgen-rps-over-time.svg",
            "loadgen-rps-ci.svg",
            "original-rps-over-time.svg",
            "original-rps-ci.svg",
            "index.html"
        ]
    );
    for (name, bytes) in &files {
        if name.ends_with(".svg") {
            let svg = String::from_utf8(bytes.clone()).unwrap();
            assert!(
                svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
                "{name}"
            );
        }
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&analysis::input::raw::gunzip(&files[1].1).unwrap()).unwrap();
    assert_eq!(summary["tables"][0]["rows"][1]["rps"]["mean"], 210.0);
}

/// Wikipedia's first example for Welch's t-test (also scipy's
/// `ttest_ind(a1, a2, equal_var=False)`): t = -2.4554, df = 24.9885, p = 0.021378.
#[test]
fn welch_matches_the_textbook_example() {
    let a1 = [
        27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4,
    ];
    let a2 = [
        27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4,
    ];
    let w = analysis::stats::welch(&a1, &a2).unwrap();
    assert!((w.t - -2.455_356_398).abs() < 1e-6, "{}", w.t);
    assert!((w.df - 24.988_529_29).abs() < 1e-5, "{}", w.df);
    assert!((w.p - 0.021_378_001).abs() < 1e-6, "{}", w.p);
}

#[test]
fn bad_files_are_reported_and_the_rest_analysed() {
    let dir = fixture("bad");
    let (report, problems) = analyse(&dir, &Options::default());
    let report = report.expect("good.log and the readable parts still analyse");
    let messages: Vec<String> = problems
        .iter()
        .map(|p| p.0.replace(&format!("{}/", dir.display()), ""))
        .collect();
    assert_eq!(
        messages,
        [
            "empty.log: no interval records",
            "garbage.log:2: not a record: this is not a record",
            "garbage.log:3: not a record: nor is this",
            "garbage.log: no interval records",
            "mixed.log:7: not a record: stray text in the middle",
            "truncated.jsonl:5: truncated record ignored",
            "short.log: 2 intervals, all inside the warm-up (--skip 3)",
        ]
    );
    let names: Vec<&str> = report.tables[0]
        .rows
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["good", "mixed", "truncated"]);
    assert!(close(row(&report, "bad", "mixed").rps.mean, 50.0));
    assert!(close(row(&report, "bad", "truncated").rps.mean, 8.0));
}

#[test]
fn nothing_analysable_is_an_error_and_the_cli_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.log"), "").unwrap();
    let (report, problems) = analyse(dir.path(), &Options::default());
    assert!(report.is_none());
    assert!(problems
        .iter()
        .any(|p| p.0.ends_with("no log could be analysed")));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_analysis"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("README.md").exists());
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_analysis"))
        .arg(dir.path().join("nope"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let err = String::from_utf8(missing.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_cli_writes_readme_summary_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    for table in ["original", "loadgen"] {
        let to = dir.path().join(table);
        std::fs::create_dir(&to).unwrap();
        for entry in std::fs::read_dir(fixture("run").join(table)).unwrap() {
            let p = entry.unwrap().path();
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
    analysis_cli(&[dir.path().as_os_str()]);
    for f in [
        "README.md",
        "summary.json.gz",
        "original-rps-ci.svg",
        "loadgen-rps-over-time.svg",
    ] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    // --out puts the report elsewhere, with another baseline.
    let other = dir.path().join("vs-fast");
    analysis_cli(&[
        dir.path().as_os_str(),
        "--baseline".as_ref(),
        "fast".as_ref(),
        "--out".as_ref(),
        other.as_os_str(),
    ]);
    let readme = std::fs::read_to_string(other.join("README.md")).unwrap();
    assert!(
        readme.contains("| Faster (2 s intervals) | 600 | 158 | 600 | 400 | 800 | ± 196 | 26.4% | 1 | 1.000 (baseline) |"),
        "{readme}"
    );
    assert!(other.join("original-rps-ci.svg").is_file());
}

/// Runs the `analysis` binary and asserts that it succeeded.
fn analysis_cli(args: &[&std::ffi::OsStr]) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_analysis"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes an original-format log whose measured intervals are all `rps`.
fn flat_log(path: &Path, rps: u64) {
    let mut text = String::from("header\n");
    for _ in 0..3 + 4 {
        text.push_str(&format!(
            "Total requests: 0. Requests in the last 1000ms: {rps} [1s total] [0 avg. RPS]\n"
        ));
    }
    std::fs::write(path, text).unwrap();
}

/// Three repetitions per row: the ratio's CI comes from the repetition
/// means, and the published ratio is judged against it.
#[test]
fn ratio_ci_from_repetitions_and_published_figures() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    for (rep, (a, b)) in [(190, 95), (200, 100), (210, 105)].iter().enumerate() {
        flat_log(&t.join(format!("a.rep{}.log", rep + 1)), *a);
        flat_log(&t.join(format!("b.rep{}.log", rep + 1)), *b);
        flat_log(&t.join(format!("c.rep{}.log", rep + 1)), *b);
    }
    std::fs::write(
        t.join("table.toml"),
        "baseline = \"b\"\n\
         [[row]]\nname = \"a\"\noriginal = { rps = 300, sd = 5 }\n\
         [[row]]\nname = \"b\"\noriginal = { rps = 100 }\n\
         [[row]]\nname = \"c\"\noriginal = { rps = 150 }\n",
    )
    .unwrap();
    let (report, problems) = analyse(dir.path(), &Options::default());
    assert!(problems.is_empty(), "{problems:?}");
    let report = report.unwrap();
    let (a, b, c) = (
        row(&report, "t", "a"),
        row(&report, "t", "b"),
        row(&report, "t", "c"),
    );
    let want = analysis::stats::ratio_ci95(&[190.0, 200.0, 210.0], &[95.0, 100.0, 105.0]).unwrap();
    assert!(close(a.ratio, 2.0) && close(a.ratio_ci95.unwrap(), want));
    assert_eq!(b.ratio_ci95, Some(0.0));
    // The mean's CI comes from the 3 repetition means (190, 200, 210), not
    // from the 12 flat intervals: t(0.975, 2) * 10 / sqrt(3).
    assert!(
        (a.rps.ci95 - 4.302_652_73 * 10.0 / 3f64.sqrt()).abs() < 1e-6,
        "{}",
        a.rps.ci95
    );
    // a: published 3.0 against ours 2.0 ± 0.2: outside.
    let oa = a.original.unwrap();
    assert_eq!((oa.ratio, oa.within_ci), (Some(3.0), Some(false)));
    assert!(close(oa.ratio_difference.unwrap(), -1.0));
    // c: the same runs as the baseline, published 1.5: outside.
    assert_eq!(c.original.unwrap().within_ci, Some(false));
    let readme = analysis::render(&report).unwrap().remove(0).1;
    let readme = String::from_utf8(readme).unwrap();
    assert!(
        readme.contains("### Against the original study"),
        "{readme}"
    );
    assert!(
        readme.contains("| a | 200 | 300 (sd 5) | 3.000 | 2.000 ± "),
        "{readme}"
    );
}

/// Every committed run under `results/`: its README.md and summary.json are
/// what the analysis makes of its raw logs today, byte for byte (so the
/// published tables cannot drift from the data, or the data from them).
#[test]
fn committed_results_match_their_raw_logs() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut checked = 0;
    for entry in std::fs::read_dir(&results).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(meta) = analysis::input::raw::read(&dir.join("meta.json")) else {
            continue;
        };
        let meta: serde_json::Value = serde_json::from_slice(&meta).unwrap();
        // A script's run (scripts/profile-runtimes) is re-rendered by
        // shootout's committed-results test, not analysed here.
        if meta.get("script").is_some() {
            continue;
        }
        let (report, problems) = analyse(&dir, &Options::default());
        assert!(problems.is_empty(), "{}: {problems:?}", dir.display());
        let files = analysis::render(&report.unwrap()).unwrap();
        for (name, bytes) in files
            .iter()
            .filter(|(n, _)| ["README.md", "summary.json.gz", "index.html"].contains(&n.as_str()))
        {
            let committed = std::fs::read(dir.join(name)).unwrap();
            assert!(
                committed == *bytes,
                "{}/{name} differs from a fresh analysis of its logs",
                dir.display()
            );
        }
        // coverage.json: recomputed from this run and the alone run it names,
        // or (the coverage plan's) from the sittings and reference it names.
        if let Ok(committed) = std::fs::read(dir.join("coverage.json")) {
            let v: serde_json::Value = serde_json::from_slice(&committed).unwrap();
            if v.get("plan").is_some() {
                use analysis::sittings::coverage_plan as plan;
                let sittings: Vec<_> = v["sittings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| plan::sitting_rows(&results.join(s.as_str().unwrap())).unwrap())
                    .collect();
                let name = v["reference"].as_str().unwrap();
                let reference = plan::reference(&results.join(name), "control-496").unwrap();
                let fresh = plan::judge(
                    v["plan"].as_str().unwrap(),
                    &sittings,
                    name,
                    reference,
                    "control-496",
                );
                assert!(
                    committed == serde_json::to_vec_pretty(&fresh).unwrap(),
                    "{}/coverage.json differs from the coverage plan's fresh computation",
                    dir.display()
                );
                checked += 1;
                continue;
            }
            let alone = v["alone_run"].as_str().map(|a| results.join(a));
            let fresh = analysis::sittings::coverage::coverage(&dir, alone.as_deref()).unwrap();
            assert!(
                committed == analysis::sittings::coverage::to_json(&fresh).unwrap(),
                "{}/coverage.json differs from a fresh computation",
                dir.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} committed runs found");
}

/// results/README.md (the index) and every other page directly in results/
/// (`results/*.md`): each page's generated tables are what the runs' reports
/// say today, and every interval typed into its other tables is in a report
/// of a run its section links to. The index stays under 150 lines and each
/// page under 400.
#[test]
fn results_readme_tables_come_from_the_runs() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    assert!(
        pages.iter().any(|p| p.ends_with("README.md")),
        "results/README.md is missing"
    );
    let mut problems = Vec::new();
    for page in &pages {
        let name = format!("results/{}", page.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(page).unwrap();
        let limit = if page.ends_with("README.md") {
            150
        } else {
            400
        };
        let lines = text.lines().count();
        if lines >= limit {
            problems.push(format!(
                "{name} has {lines} lines; it must stay under {limit} (split it by topic)"
            ));
        }
        match analysis::sittings::digest::fill(&text, &results) {
            Ok(filled) if filled == text => {}
            Ok(_) => problems.push(format!(
                "{name} has stale generated tables: run `cargo run -p analysis --bin results-tables -- {name}`"
            )),
            Err(e) => problems.push(format!("{name}: {e:#}")),
        }
        for p in analysis::sittings::digest::unsourced_figures(&text, &results) {
            problems.push(format!("{name}: {p}"));
        }
    }
    assert!(pages.len() > 1, "no topic pages beside results/README.md");
    assert!(problems.is_empty(), "{problems:#?}");
}
