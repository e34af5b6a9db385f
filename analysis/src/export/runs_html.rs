//! The page of every run (`results/index.html`): one row per run, newest
//! first, with what it decided and a link to its own page; two menus
//! filter the rows by design and by comparison. Self-contained like a
//! run's page: inline CSS and a few lines of inline script, nothing
//! fetched.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

use super::html::head;
use super::parts::esc;
use crate::sittings::runs_index::{gather, RunEntry};

/// Filters the rows by the two menus (a row shows when it matches both).
const SCRIPT: &str = "\
const design = document.getElementById('design');\n\
const comparison = document.getElementById('comparison');\n\
const shown = document.getElementById('shown');\n\
function filter() {\n\
  let n = 0;\n\
  for (const row of document.querySelectorAll('tr[data-design]')) {\n\
    const hide = (design.value && row.dataset.design !== design.value)\n\
      || (comparison.value && !row.dataset.comparisons.includes('|' + comparison.value + '|'));\n\
    row.hidden = hide;\n\
    if (!hide) n += 1;\n\
  }\n\
  shown.textContent = n;\n\
}\n\
design.addEventListener('change', filter);\n\
comparison.addEventListener('change', filter);\n";

/// Writes `results/index.html` anew.
pub fn write(results: &Path) -> anyhow::Result<()> {
    let page = page(&gather(results)?);
    crate::files::write_atomic(&results.join("index.html"), page.as_bytes())
}

/// The page for `runs` (newest first, as [`crate::sittings::runs_index::gather`]
/// gives them).
pub fn page(runs: &[RunEntry]) -> String {
    let mut out = String::new();
    head(&mut out, "Every run");
    let _ = writeln!(
        out,
        "<header><h1>Every run</h1>\n<p class=\"sub\"><span id=\"shown\">{}</span> of {} runs, \
         newest first. Each links to its own page; ratios are 2xx/s with their 95 % intervals. \
         Rebuilt by <code>shootout report</code>.</p></header>",
        runs.len(),
        runs.len()
    );
    menus(&mut out, runs);
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><table class=\"runs\"><thead><tr><th>Run</th><th>Design</th>\
         <th>Scenario</th><th>Commit</th><th>What it decided</th></tr></thead><tbody>"
    );
    for r in runs {
        row(&mut out, r);
    }
    let _ = writeln!(
        out,
        "</tbody></table></div>\n<script>\n{SCRIPT}</script>\n</main>\n</body>\n</html>"
    );
    out
}

fn menus(out: &mut String, runs: &[RunEntry]) {
    let designs: BTreeSet<&str> = runs.iter().map(|r| r.design.as_str()).collect();
    let comparisons: BTreeSet<String> = runs
        .iter()
        .flat_map(|r| r.answers.iter().map(|a| a.name()))
        .collect();
    let options = |all: &str, values: Vec<&str>| {
        let mut s = format!("<option value=\"\">{all}</option>");
        for v in values {
            let _ = write!(s, "<option>{}</option>", esc(v));
        }
        s
    };
    let _ = writeln!(
        out,
        "<p class=\"filters\"><label>Design <select id=\"design\">{}</select></label> \
         <label>Comparison <select id=\"comparison\">{}</select></label></p>",
        options("every design", designs.into_iter().collect()),
        options(
            "every comparison",
            comparisons.iter().map(String::as_str).collect()
        )
    );
}

fn row(out: &mut String, r: &RunEntry) {
    let comparisons: String = r.answers.iter().map(|a| format!("{}|", a.name())).collect();
    let dirty = match r.dirty {
        Some(true) => " <span class=\"note\">(uncommitted changes)</span>",
        Some(false) => "",
        None => " <span class=\"note\">(tree unknown)</span>",
    };
    let decided = if r.answers.is_empty() {
        r.titles
            .iter()
            .map(|t| esc(t))
            .collect::<Vec<_>>()
            .join("<br>")
    } else {
        r.answers
            .iter()
            .zip(r.placement.iter().chain(std::iter::repeat(&None)))
            .map(|(a, placed)| {
                let note = placed.map_or(String::new(), |p| {
                    format!(" <span class=\"note\">({p})</span>")
                });
                format!(
                    "{} {}: {}{note}",
                    esc(&a.name()),
                    esc(&a.figure()),
                    esc(&a.words())
                )
            })
            .collect::<Vec<_>>()
            .join("<br>")
    };
    let _ = writeln!(
        out,
        "<tr data-design=\"{}\" data-comparisons=\"|{}\"><td><a href=\"{}\">{}</a><br>\
         <span class=\"note\">{}</span></td><td>{}</td><td><code>{}</code></td>\
         <td><code>{}</code>{dirty}</td><td>{decided}</td></tr>",
        esc(&r.design),
        esc(&comparisons),
        esc(&r.page),
        esc(&r.date),
        esc(&r.run),
        esc(&r.design),
        esc(&r.source),
        esc(&r.commit),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paired run named `name` whose one comparison's record says
    /// `placement` (or nothing, as runs before placement was read back).
    fn run(results: &Path, name: &str, placement: Option<&str>) {
        let dir = results.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut rec = serde_json::json!({"row": "ntex", "baseline": "actix"});
        if let Some(p) = placement {
            rec["placement"] = p.into();
        }
        let meta = serde_json::json!({"design": "paired", "git_sha": "abc", "git_dirty": false, "paired": [rec]});
        std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
        let answer = r#"{"row": "ntex", "against": "actix", "aa": false, "ratio": {"ratio": 0.83, "lo": 0.81, "hi": 0.85}, "runs": 1, "verdict": {"kind": "slower", "pct": 17.0}}"#;
        let summary = format!(r#"{{"paired": [{{"title": "T", "answers": [{answer}]}}]}}"#);
        std::fs::write(dir.join("summary.json"), summary).unwrap();
    }

    #[test]
    fn answers_say_when_their_placement_was_not_recorded_or_free() {
        let results = tempfile::tempdir().unwrap();
        run(results.path(), "2026-11-20T00-00-00Z-old", None);
        run(
            results.path(),
            "2026-11-21T00-00-00Z-pinned",
            Some("pinned"),
        );
        run(results.path(), "2026-11-22T00-00-00Z-free", Some("free"));
        let runs = gather(results.path()).unwrap();
        let by: Vec<(&str, Vec<Option<&str>>)> = runs
            .iter()
            .map(|r| (r.run.as_str(), r.placement.clone()))
            .collect();
        assert_eq!(
            by,
            [
                ("2026-11-22T00-00-00Z-free", vec![Some("placement free")]),
                ("2026-11-21T00-00-00Z-pinned", vec![None]),
                (
                    "2026-11-20T00-00-00Z-old",
                    vec![Some("placement not recorded")]
                ),
            ]
        );
        let page = page(&runs);
        assert_eq!(page.matches("(placement not recorded)").count(), 1);
        assert_eq!(page.matches("(placement free)").count(), 1);
    }
}
