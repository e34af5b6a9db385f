//! The run report (`index.html`) in a real browser: Debian's chromium,
//! headless, driven over the DevTools protocol through a pipe (`cdp`). Copies of
//! committed runs of each kind (paired, sequential, memory, a script's run)
//! get their page rebuilt by `shootout report`, then each page is opened
//! from `file://` at 390 px and at 1280 px wide. Fails on any console error,
//! uncaught exception or failed resource; checks that the page fetches
//! nothing but its own charts (SVG files beside it), that every one of
//! those loaded, that its tables hold the figures of `summary.json`, that
//! every chart has a size, and that nothing widens the page past the window.
//!
//! chromium is installed by `shootout setup --all` (CI runs it first); a
//! machine without it fails this test with that command, it does not skip.
//! `SHOOTOUT_SCREENSHOT=PATH` also saves the quick run's page at 1280 px
//! (the README's picture).

mod cdp;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cdp::{Browser, Tab};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The newest committed run whose directory name ends with `-{kind}`.
fn newest(kind: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(&format!("-{kind}")))
        })
        .collect();
    dirs.sort();
    dirs.pop()
        .unwrap_or_else(|| panic!("no committed results/*-{kind} run"))
}

/// The newest main-command run with a sitting interval for the next
/// sitting (three sittings of its comparisons, on its machine, came
/// before it), as `results/history.json` records it: its page draws both
/// forest plots and the thin lines.
fn newest_quick_with_next() -> PathBuf {
    let text = std::fs::read_to_string(root().join("results/history.json")).unwrap();
    let h: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut runs: Vec<String> = h["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["identity"]["file"] == "scenarios/quick.toml")
        .flat_map(|c| c["sittings"].as_array().unwrap().iter())
        .filter(|s| !s["next"].is_null())
        .map(|s| s["run"].as_str().unwrap().to_string())
        .collect();
    runs.sort();
    let run = runs
        .pop()
        .expect("no main-command sitting with three before it");
    root().join("results").join(run)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("chromium is missing: run `cargo run -p shootout -- setup --all` (CI does)")
}

/// Every test's pages open within this; a browser that stops answering
/// is killed then, and the test fails instead of hanging.
fn browser() -> Browser {
    Browser::launch(&chromium(), Duration::from_secs(300))
}

/// What the page says about itself, read by script in the page.
const PROBE: &str = r#"JSON.stringify({
  inner: window.innerWidth,
  scroll: document.documentElement.scrollWidth,
  fetches: [...document.querySelectorAll('[src], link[href], iframe, object, embed')]
    .filter(e => !(e.tagName == 'IMG' && /^[^/:]+\.svg$/.test(e.getAttribute('src')))).length,
  unloaded: [...document.querySelectorAll('img')]
    .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
  svgs: [...document.querySelectorAll('svg, img')].map(s => {
    const r = s.getBoundingClientRect(); return [r.width, r.height];
  }),
  forests: [...document.querySelectorAll('svg.forest')].map(s => {
    const r = s.getBoundingClientRect();
    return [s.id, s.querySelectorAll('circle').length, r.width, r.height,
      s.querySelectorAll('line[stroke-width="1"]').length];
  }),
  answers: [...document.querySelectorAll('table.answers tbody tr')]
    .map(tr => [...tr.cells].map(td => td.textContent.trim())),
  comparisons: [...document.querySelectorAll('table.comparisons tbody tr')]
    .map(tr => [tr.dataset.row, ...[...tr.cells].map(td => td.textContent.trim())]),
  cells: [...document.querySelectorAll('td')].map(td => td.textContent.trim()),
  title: document.title
})"#;

/// Opens `page` in a fresh tab with a viewport `width` px wide; returns
/// the probe's JSON and every error the browser reported (console,
/// exceptions, failed loads).
fn open(browser: &mut Browser, page: &Path, width: u32) -> (serde_json::Value, Vec<String>, Tab) {
    let mut tab = browser.new_tab(width);
    browser.navigate(&mut tab, &format!("file://{}", page.display()));
    // Late console messages (none are expected) get a moment to arrive.
    std::thread::sleep(Duration::from_millis(300));
    let value = browser.evaluate(&mut tab, PROBE);
    let probe: serde_json::Value = serde_json::from_str(&value).unwrap();
    let errors = tab.errors.clone();
    (probe, errors, tab)
}

/// The figures of a run's summary.json that its page's tables must hold.
fn check_figures(dir: &Path, probe: &serde_json::Value) {
    let summary: serde_json::Value =
        serde_json::from_slice(&analysis::input::raw::read(&dir.join("summary.json")).unwrap())
            .unwrap();
    let cells: Vec<&str> = probe["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for t in summary["paired"].as_array().into_iter().flatten() {
        let answers = t["answers"].as_array().unwrap();
        let shown = probe["answers"].as_array().unwrap();
        assert!(!answers.is_empty(), "{}: no answers", dir.display());
        for a in answers {
            let r = &a["ratio"];
            let figure = format!(
                "{:.3} ({:.3}-{:.3}, 95 %",
                r["ratio"].as_f64().unwrap(),
                r["lo"].as_f64().unwrap(),
                r["hi"].as_f64().unwrap()
            );
            assert!(
                shown
                    .iter()
                    .any(|row| row[1].as_str().unwrap().starts_with(&figure)),
                "{}: answer {figure} not on the page: {shown:?}",
                dir.display()
            );
        }
        for row in t["rows"].as_array().unwrap() {
            let name = row["name"].as_str().unwrap();
            let shown = probe["comparisons"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r[0] == name)
                .unwrap_or_else(|| panic!("{name}: no comparison row on the page"));
            let ratio = row["across_runs"]["ratio"]
                .as_f64()
                .or(row["rps"]["ratio"].as_f64())
                .unwrap();
            assert!(
                shown[2]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{ratio:.4}")),
                "{name}: {ratio:.4} not in {shown}"
            );
        }
    }
    for t in summary["tables"].as_array().into_iter().flatten() {
        for row in t["rows"].as_array().unwrap() {
            let label = row["label"].as_str().unwrap();
            assert!(
                cells.iter().any(|c| c.starts_with(label)),
                "{}: row {label:?} not in a table",
                dir.display()
            );
        }
    }
}

#[test]
fn every_kind_of_run_report_opens_cleanly_in_chromium_at_phone_and_desktop_width() {
    let tmp = tempfile::tempdir().unwrap();
    // The history beside the runs, as in results/: the quick page draws
    // its comparisons' earlier sittings from it.
    std::fs::copy(
        root().join("results/history.json"),
        tmp.path().join("history.json"),
    )
    .unwrap();
    let kinds = ["quick", "frameworks", "memory", "profiles"];
    let mut dirs = Vec::new();
    for kind in kinds {
        let from = match kind {
            "quick" => newest_quick_with_next(),
            _ => newest(kind),
        };
        let to = tmp.path().join(from.file_name().unwrap());
        copy_dir(&from, &to);
        std::fs::remove_file(to.join("index.html")).ok();
        let out = Command::new(env!("CARGO_BIN_EXE_shootout"))
            .arg("report")
            .arg(&to)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page = to.join("index.html");
        // The run's page, then the index of the runs beside it (the copy of
        // history.json marks tmp as a results directory).
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!(
                "{}\n{}",
                page.display(),
                tmp.path().join("index.html").display()
            )
        );
        // The committed page is the one this code renders.
        let committed = std::fs::read(from.join("index.html"))
            .unwrap_or_else(|_| panic!("{}: no committed index.html", from.display()));
        assert!(
            committed == std::fs::read(&page).unwrap(),
            "{}: index.html is stale: run `shootout report` on it",
            from.display()
        );
        dirs.push((kind, to));
    }
    let mut browser = browser();
    for width in [390, 1280] {
        for (kind, dir) in &dirs {
            let (probe, errors, mut tab) = open(&mut browser, &dir.join("index.html"), width);
            let at = format!("{kind} at {width} px");
            assert!(errors.is_empty(), "{at}: {errors:?}");
            assert_eq!(probe["fetches"], 0, "{at}: the page loads something");
            assert_eq!(
                probe["unloaded"],
                serde_json::json!([]),
                "{at}: a chart did not load"
            );
            assert_eq!(probe["inner"], width, "{at}: the viewport");
            assert!(
                probe["scroll"].as_u64() <= probe["inner"].as_u64(),
                "{at}: the page is wider than the window: {} > {}",
                probe["scroll"],
                probe["inner"]
            );
            let svgs = probe["svgs"].as_array().unwrap();
            if *kind != "profiles" {
                assert!(!svgs.is_empty(), "{at}: no chart");
            }
            for s in svgs {
                assert!(
                    s[0].as_f64().unwrap() > 50.0 && s[1].as_f64().unwrap() > 50.0,
                    "{at}: a chart of size {s}"
                );
            }
            if *kind != "profiles" {
                check_figures(dir, &probe);
            }
            // The main command's page: its answers as a forest plot, and the
            // same comparisons in every sitting up to it, each drawn whole.
            if *kind == "quick" {
                let forests = probe["forests"].as_array().unwrap();
                let ids: Vec<&str> = forests.iter().map(|f| f[0].as_str().unwrap()).collect();
                assert_eq!(ids, ["forest-run", "forest-history"], "{at}");
                let answers = probe["answers"].as_array().unwrap().len() as u64;
                assert_eq!(forests[0][1].as_u64(), Some(answers), "{at}");
                assert!(
                    forests[1][1].as_u64().unwrap() > answers,
                    "{at}: {forests:?}"
                );
                for f in forests {
                    assert!(f[2].as_f64().unwrap() > 300.0, "{at}: {f}");
                }
                // This main command has sittings with three before them:
                // their intervals for the next sitting, drawn thin.
                assert_eq!(forests[0][4].as_u64(), Some(0), "{at}: {forests:?}");
                assert!(
                    forests[1][4].as_u64().unwrap() >= answers,
                    "{at}: {forests:?}"
                );
            }
            if let (Ok(path), "quick", 1280) = (std::env::var("SHOOTOUT_SCREENSHOT"), *kind, width)
            {
                std::fs::write(path, browser.screenshot(&mut tab)).unwrap();
            }
        }
    }
}

/// The index of every committed run (`results/index.html`, as this code
/// renders it) at phone and desktop width: opens cleanly, fetches
/// nothing, fits the window, lists every run, and its two menus filter
/// the rows by design and by comparison.
#[test]
fn the_index_of_runs_opens_cleanly_and_filters_at_phone_and_desktop_width() {
    let results = root().join("results");
    let runs = analysis::sittings::runs_index::gather(&results).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("index.html");
    std::fs::write(&page, analysis::export::runs_html::page(&runs)).unwrap();
    let sweeps = runs.iter().filter(|r| r.design == "sweep").count();
    let with_aa = runs
        .iter()
        .filter(|r| r.answers.iter().any(|a| a.aa))
        .count();
    assert!(sweeps > 0 && with_aa > 0 && runs.len() > sweeps + with_aa);
    let mut browser = browser();
    for width in [390, 1280] {
        let at = format!("the index at {width} px");
        let (probe, errors, mut tab) = open(&mut browser, &page, width);
        let mut shown =
            |design: &str, comparison: &str| shown(&mut browser, &mut tab, design, comparison);
        assert!(errors.is_empty(), "{at}: {errors:?}");
        assert_eq!(probe["fetches"], 0, "{at}: the page loads something");
        assert_eq!(
            probe["unloaded"],
            serde_json::json!([]),
            "{at}: a chart did not load"
        );
        assert!(
            probe["scroll"].as_u64() <= probe["inner"].as_u64(),
            "{at}: the page is wider than the window: {} > {}",
            probe["scroll"],
            probe["inner"]
        );
        let n = runs.len() as u64;
        assert_eq!(shown("", ""), (n, n.to_string()), "{at}");
        let s = sweeps as u64;
        assert_eq!(shown("sweep", ""), (s, s.to_string()), "{at}");
        let a = with_aa as u64;
        assert_eq!(shown("", "A/A"), (a, a.to_string()), "{at}");
        assert_eq!(shown("sweep", "A/A").0, 0, "{at}");
    }
}

/// The rows of the index shown after choosing `design` and `comparison` in
/// its menus, and the count it says it shows.
fn shown(browser: &mut Browser, tab: &mut Tab, design: &str, comparison: &str) -> (u64, String) {
    let js = format!(
        "(() => {{ for (const [id, v] of [['design', '{design}'], ['comparison', '{comparison}']]) {{\
           const s = document.getElementById(id); s.value = v; s.dispatchEvent(new Event('change')); }}\
           const rows = [...document.querySelectorAll('tbody tr')].filter(r => !r.hidden);\
           return JSON.stringify([rows.length, document.getElementById('shown').textContent]); }})()"
    );
    let v: serde_json::Value = serde_json::from_str(&browser.evaluate(tab, &js)).unwrap();
    (v[0].as_u64().unwrap(), v[1].as_str().unwrap().to_string())
}
