//! The committed results that analysis's regression test does not cover:
//! every `calibration.json` is recomputed from its run's `meta.json` and raw
//! windows, every sink law (`sink-law.json`) from its two runs, and every script run (`meta.json` with `"script"`) re-renders
//! its README.md from its raw files.

use std::path::{Path, PathBuf};
use std::process::Command;

fn results() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

fn runs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every committed run keeps its raw records packed in its `raw.tar.xz`
/// (none loose, no gzip'd archive of before 2026-11-29 left), and the
/// archive reads whole.
#[test]
fn every_committed_run_keeps_its_raw_records_packed() {
    let mut loose = Vec::new();
    let mut packed = 0;
    for dir in runs() {
        for f in analysis::input::raw::walk(&dir) {
            let on_disk = f.is_file();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if on_disk && analysis::input::raw::is_raw(&name) {
                loose.push(f.display().to_string());
            }
        }
        assert!(
            !dir.join(analysis::input::raw::OLD_ARCHIVE).exists(),
            "{}: an old gzip'd archive: `shootout report --pack` turns it into xz",
            dir.display()
        );
        let names = analysis::input::raw::packed(&dir).unwrap();
        assert!(
            names.iter().all(|n| analysis::input::raw::is_raw(n)),
            "{}: {names:?}",
            dir.display()
        );
        packed += names.len();
    }
    assert!(loose.is_empty(), "raw records not packed: {loose:#?}");
    assert!(packed > 1000, "only {packed} packed records");
}

#[test]
fn every_results_directory_has_its_meta_json_with_git_dirty() {
    let mut missing = Vec::new();
    for dir in runs() {
        let Ok(bytes) = analysis::input::raw::read(&dir.join("meta.json")) else {
            missing.push(format!("{}: no meta.json", dir.display()));
            continue;
        };
        let meta: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        if !meta["git_dirty"].is_boolean() || !meta["git_sha"].is_string() {
            missing.push(format!("{}: no git_sha and git_dirty", dir.display()));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn committed_calibrations_match_their_raw_logs() {
    let mut checked = 0;
    for dir in runs()
        .into_iter()
        .filter(|d| d.join("calibration.json").is_file())
    {
        let fresh = shootout::design::calibrate::recompute(&dir)
            .unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()));
        assert!(
            std::fs::read(dir.join("calibration.json")).unwrap()
                == shootout::design::calibrate::to_json(&fresh).unwrap(),
            "{}/calibration.json differs from a fresh computation",
            dir.display()
        );
        checked += 1;
    }
    assert!(checked >= 1, "no committed calibration found");
}

#[test]
fn committed_script_runs_render_from_their_raw_files() {
    let mut checked = 0;
    for dir in runs() {
        let Ok(bytes) = analysis::input::raw::read(&dir.join("meta.json")) else {
            continue;
        };
        let meta: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let Some(script) = meta["script"].as_str() else {
            continue;
        };
        let out = Command::new(results().join("..").join(script))
            .arg("--render")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::read(dir.join("README.md")).unwrap() == out.stdout,
            "{}/README.md differs from `{script} --render`",
            dir.display()
        );
        // Its page is the one `shootout report` makes from that README.
        let page = analysis::render_page_from_readme(&dir).unwrap();
        assert!(
            std::fs::read(dir.join("index.html")).unwrap() == page[0].1,
            "{}/index.html is stale: run `shootout report` on it",
            dir.display()
        );
        checked += 1;
    }
    assert!(checked >= 1, "no committed script run found");
}

#[test]
fn committed_sink_laws_match_their_runs() {
    let mut checked = 0;
    for dir in runs()
        .into_iter()
        .filter(|d| d.join("sink-law.json").is_file())
    {
        let law: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("sink-law.json")).unwrap()).unwrap();
        let drain = results().join(law["drain_run"].as_str().unwrap());
        let fresh = analysis::sinks::law::law(&drain, &dir)
            .unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()));
        for (name, bytes) in analysis::export::sink_law_md::files(&fresh).unwrap() {
            assert!(
                std::fs::read(dir.join(name)).unwrap() == bytes,
                "{}/{name} differs from a fresh computation",
                dir.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 1, "no committed sink law found");
}

/// `results/history.json` is what every committed paired run gives, and
/// the main command's comparisons are in it with every sitting.
#[test]
fn committed_history_is_what_the_runs_give() {
    let root = results().join("..");
    let fresh = shootout::record::history::gather(&results(), &root).unwrap();
    assert!(
        std::fs::read(results().join("history.json")).unwrap()
            == analysis::sittings::history::to_json(&fresh).unwrap(),
        "results/history.json is stale: run `shootout history --write`"
    );
    let quick: Vec<_> = fresh
        .comparisons
        .iter()
        .filter(|c| c.identity.file == "scenarios/quick.toml")
        .collect();
    for row in ["ntex", "ntex-nginx", "ntex-netns", "aa"] {
        assert!(
            quick.iter().any(|c| c.identity.row == row),
            "no quick.toml comparison {row} in the history"
        );
    }
    // Every sitting's interval holds its ratio, and its standard error is
    // what its interval and degrees of freedom give.
    for c in &fresh.comparisons {
        for s in &c.sittings {
            assert!(
                s.lo <= s.ratio && s.ratio <= s.hi,
                "{}: {s:?}",
                c.identity.row
            );
            assert!(s.se_log >= 0.0 && s.df >= 1.0, "{}: {s:?}", c.identity.row);
        }
        // An interval for the next sitting exactly where three sittings
        // came before, over those only, and never narrower than its own.
        for (j, s) in c.sittings.iter().enumerate() {
            assert_eq!(s.next.is_some(), j >= 3, "{}: {s:?}", c.identity.row);
            if let Some(n) = &s.next {
                let tau = analysis::sittings::history::across(&c.sittings[..j])
                    .unwrap()
                    .tau_log;
                assert_eq!((n.earlier, n.tau_log), (j, tau), "{}", c.identity.row);
                assert!(
                    n.lo <= s.lo * 1.000_001 && n.hi * 1.000_001 >= s.hi,
                    "{s:?}"
                );
            }
        }
    }
}

/// `shootout history NAME` prints each of the main command's comparisons
/// by sitting; an unknown name is one line and exit 2.
#[test]
fn history_prints_a_comparison_by_sitting_and_refuses_an_unknown_name() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_shootout"))
            .arg("history")
            .args(args)
            .arg("--results")
            .arg(results())
            .output()
            .unwrap()
    };
    let out = run(&["ntex/actix"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // Every file with an ntex/actix comparison has a block of its own (in
    // file order), each headed by the name; the main command's among them.
    assert!(text.starts_with("ntex/actix  ["), "{text}");
    assert!(
        text.contains("\nntex/actix  [scenarios/quick.toml]\n")
            || text.starts_with("ntex/actix  [scenarios/quick.toml]\n"),
        "{text}"
    );
    assert!(text.contains("sittings that agree: "), "{text}");
    // The main command's has sittings with three before them.
    assert!(
        text.contains("by their intervals for the next sitting") && text.contains("; next 0."),
        "{text}"
    );
    // With four sittings or more, their drift over time.
    assert!(
        text.contains("\n  trend: ") && text.contains(" % per "),
        "{text}"
    );
    let out = run(&["no-such-row"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no comparison named \"no-such-row\""), "{err}");
    let out = run(&["A/A", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["identity"]["aa"] == true));
}

/// A cloner has only the repository: no tracked text (raw run data aside)
/// names a relative path that climbs out of it.
#[test]
fn no_tracked_file_points_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(listed.status.success());
    let mut found = Vec::new();
    for file in listed.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let file = String::from_utf8_lossy(file).into_owned();
        if file.ends_with(".jsonl") || file.ends_with("meta.json") {
            continue; // raw run data, as recorded
        }
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue; // binary (screenshots)
        };
        for (n, line) in text.lines().enumerate() {
            for path in climbing_paths(line) {
                if escapes(&file, &path) {
                    found.push(format!("{file}:{}: {path}", n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "paths outside the repository: {found:#?}");
}

/// Each `../…` in `line`, with the path characters that follow it.
fn climbing_paths(line: &str) -> Vec<String> {
    let is_path = |c: char| c.is_ascii_alphanumeric() || "._/-".contains(c);
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("../") {
        // Back up over earlier `../` and `./` of the same path.
        let start = rest[..i].rfind(|c: char| !is_path(c)).map_or(0, |j| j + 1);
        let end = rest[i..]
            .find(|c: char| !is_path(c))
            .map_or(rest.len(), |j| i + j);
        out.push(rest[start..end].to_string());
        rest = &rest[end..];
    }
    out
}

/// Whether `path`, read from the folder of repository file `file`, leaves
/// the repository.
fn escapes(file: &str, path: &str) -> bool {
    let mut depth = file.matches('/').count() as i64;
    for part in path.split('/') {
        match part {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

#[test]
fn a_path_climbing_past_the_root_is_seen() {
    assert_eq!(
        climbing_paths("see (`../shared/x.md`) and ../y"),
        ["../shared/x.md", "../y"]
    );
    assert!(escapes("README.md", "../shared/x.md"));
    assert!(!escapes("results/README.md", "../docs/original-study.md"));
    assert!(escapes("results/README.md", "../../x"));
}

/// `results/index.html` is the index this code renders from the committed
/// runs (`shootout report` rebuilds it), and links every run's page.
#[test]
fn the_index_of_runs_is_current_and_lists_every_run() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let runs = analysis::sittings::runs_index::gather(&results).unwrap();
    let page = analysis::export::runs_html::page(&runs);
    let committed = std::fs::read_to_string(results.join("index.html")).unwrap_or_default();
    assert!(
        committed == page,
        "results/index.html is stale: run `cargo run -p shootout -- report` on any run under results/"
    );
    for dir in std::fs::read_dir(&results).unwrap().flatten() {
        if analysis::input::raw::is_file(&dir.path().join("meta.json")) {
            let name = dir.file_name().to_string_lossy().into_owned();
            assert!(
                page.contains(&format!("href=\"{name}/")),
                "results/index.html does not link {name}"
            );
        }
    }
}
