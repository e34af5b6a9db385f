//! `results/history.json`: every committed paired run's answers, grouped by
//! comparison (see [`analysis::sittings::history`] for the identity and the rules).
//! Read from each run's meta.json and summary.json; a run that did not
//! record its load (before it was recorded) gets it from its scenario file
//! as committed at the run's commit (`git show`).

use std::path::Path;
use std::process::Command;

use analysis::sittings::history::{self, History, Identity, Sitting};
use anyhow::Context;
use serde_json::Value;

/// The history of every paired run under `results` (`repo` answers `git
/// show` for runs that did not record their load).
pub fn gather(results: &Path, repo: &Path) -> anyhow::Result<History> {
    let mut dirs: Vec<_> = std::fs::read_dir(results)
        .with_context(|| format!("reading {}", results.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            analysis::input::raw::is_file(&p.join("summary.json"))
                && analysis::input::raw::is_file(&p.join("meta.json"))
        })
        .collect();
    dirs.sort();
    let mut answers = Vec::new();
    for dir in dirs {
        let read = |name: &str| -> anyhow::Result<Value> {
            let path = dir.join(name);
            let bytes = analysis::input::raw::read(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_slice(&bytes).with_context(|| format!("{}", path.display()))
        };
        let (meta, summary) = (read("meta.json")?, read("summary.json")?);
        if meta["design"] != "paired" {
            continue;
        }
        let run = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for table in summary["paired"].as_array().into_iter().flatten() {
            for a in table["answers"].as_array().into_iter().flatten() {
                // A 2xx/s ratio that is no answer (an interleaved stack ran
                // into the other's turns) is no sitting of its comparison.
                if a["verdict"]["kind"] == "overran" {
                    continue;
                }
                if let Some(found) = answer(&run, &meta, table, a, repo) {
                    answers.push(found);
                }
            }
        }
    }
    Ok(history::build(answers))
}

/// One answer of a run's table with its identity; none when its
/// comparison's record is missing (an interrupted run).
fn answer(
    run: &str,
    meta: &Value,
    table: &Value,
    a: &Value,
    repo: &Path,
) -> Option<(Identity, Sitting)> {
    let (row, against) = (a["row"].as_str()?, a["against"].as_str()?);
    let rec = meta["paired"]
        .as_array()?
        .iter()
        .find(|c| c["row"] == row && c["baseline"] == against)?;
    let blocks = table["rows"]
        .as_array()?
        .iter()
        .find(|r| r["name"] == row)?["blocks"]
        .as_f64()?;
    let runs = a["runs"].as_u64().unwrap_or(1) as usize;
    let df = if runs > 1 {
        runs as f64 - 1.0
    } else {
        blocks - 1.0
    };
    let ci = &a["ratio"];
    let (ratio, lo, hi) = (
        ci["ratio"].as_f64()?,
        ci["lo"].as_f64()?,
        ci["hi"].as_f64()?,
    );
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let file = text(&meta["scenario_file"]);
    let sha = text(&meta["git_sha"]);
    // Runs before the load and nginx's side were recorded: from the file.
    let doc = std::cell::OnceCell::new();
    let at_sha = |name: &str| {
        past(
            doc.get_or_init(|| file_at(repo, &sha, &file)).as_ref()?,
            name,
        )
    };
    let load = match rec["load"].as_str() {
        Some(l) => l.to_string(),
        None => at_sha(row).map_or_else(|| "not recorded".into(), |p| p.load),
    };
    // Each side's nginx config, none without one.
    let config = |side: &str, name: &str| match rec.get(format!("{side}_sink")) {
        Some(sink) => sink["proxy"].as_str().map(str::to_string),
        None => at_sha(name).map(|p| p.proxy).filter(|p| p != "none"),
    };
    let configs = [config("row", row), config("base", against)];
    let nginx = [configs[0].is_some(), configs[1].is_some()];
    let nginx_text = if nginx.contains(&true) {
        let named = |c: &Option<String>| c.clone().unwrap_or_else(|| "none".into());
        format!("row {}, base {}", named(&configs[0]), named(&configs[1]))
    } else {
        String::new()
    };
    let identity = Identity {
        file,
        row: row.into(),
        against: against.into(),
        aa: a["aa"] == true,
        row_variant: text(&rec["row_variant"]),
        base_variant: text(&rec["base_variant"]),
        schedule: text(&rec["settings"])
            .split(", ")
            .next()
            .unwrap_or_default()
            .into(),
        placement: placement(rec, nginx),
        load,
        machine: text(&meta["cpu_model"]),
        nginx: nginx_text,
    };
    let sitting = Sitting {
        run: run.into(),
        date: text(&meta["date"]),
        git_sha: sha,
        git_dirty: meta["git_dirty"] == true,
        kernel: text(&meta["kernel"]),
        cpu_model: text(&meta["cpu_model"]),
        ratio,
        lo,
        hi,
        runs,
        df,
        se_log: Sitting::se_of(lo, hi, df),
        next: None,
    };
    Some((identity, sitting))
}

/// `server 1, loadgen 0, row nginx 1`: where each process of the
/// comparison ran; `scheduler` where it was left free (nginx in front
/// before it was placed, too). `nginx`: whether the row and the base have
/// nginx in front.
fn placement(rec: &Value, nginx: [bool; 2]) -> String {
    let cpus = |v: &Value| v.as_str().unwrap_or("scheduler").to_string();
    let mut out = format!(
        "server {}, loadgen {}",
        cpus(&rec["server_cpus"]),
        cpus(&rec["loadgen_cpus"])
    );
    for (side, proxied) in ["row", "base"].into_iter().zip(nginx) {
        if proxied {
            out += &format!(
                ", {side} nginx {}",
                cpus(&rec[format!("{side}_nginx_cpus")])
            );
        }
    }
    for side in ["row", "base"] {
        if let Some(c) = rec[format!("{side}_sink")]["reader_cpus"].as_str() {
            out += &format!(", {side} sink reader {c}");
        }
        if let Some(c) = rec[format!("{side}_sink")]["sshd_cpus"].as_str() {
            out += &format!(", {side} sshd {c}");
        }
    }
    if let Some(h) = rec["row_sink"]["server_host"].as_str() {
        out += &format!(", server host {h}");
    }
    out
}

/// A row of a past run as its scenario file set it at the run's commit.
struct Past {
    load: String,
    /// The row's nginx config, `none` without one.
    proxy: String,
}

/// Scenario file `file` as committed at `sha` (`git show`), parsed.
fn file_at(repo: &Path, sha: &str, file: &str) -> Option<toml::Value> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["show", &format!("{sha}:{file}")])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    toml::from_str(&String::from_utf8_lossy(&out.stdout)).ok()
}

/// Row `row` of a past scenario file `doc`.
fn past(doc: &toml::Value, row: &str) -> Option<Past> {
    let defaults = doc.get("defaults");
    let own = doc
        .get("scenario")?
        .as_array()?
        .iter()
        .find(|s| s.get("name").and_then(|n| n.as_str()) == Some(row))?;
    let key = |k: &str| own.get(k).or_else(|| defaults.and_then(|d| d.get(k)));
    let int = |k: &str, d: i64| key(k).and_then(toml::Value::as_integer).unwrap_or(d) as u32;
    let word = |k: &str, d: &str| key(k).and_then(|v| v.as_str()).unwrap_or(d).to_string();
    let load = crate::config::scenario::load_text(
        &word("request", "post"),
        int("connections", 64),
        int("threads", 1),
        &word("topology", "loopback"),
        key("rate").and_then(toml::Value::as_float),
    );
    let proxy = key("proxy_conf")
        .and_then(|v| v.as_str())
        .map_or_else(|| word("proxy", "none"), str::to_string);
    Some(Past { load, proxy })
}

/// Writes `results/history.json` anew from every run under `results`.
pub fn write(results: &Path, repo: &Path) -> anyhow::Result<History> {
    let h = gather(results, repo)?;
    analysis::files::write_atomic(&results.join("history.json"), &history::to_json(&h)?)?;
    Ok(h)
}

/// After a paired run into a results directory that keeps a history
/// (`history.json` beside the run): writes it and the index of runs
/// (`index.html`) anew, renders the run's page
/// again (it draws its comparisons' sittings from it) and prints, for each of
/// this run's comparisons, its interval for the next sitting once three
/// sittings came before it and its answer across sittings once there are
/// three. Elsewhere (a test's scratch directory) it does nothing.
pub fn after_run(run_dir: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    let Some(results) = run_dir.parent() else {
        return Ok(());
    };
    if !results.join("history.json").is_file() {
        return Ok(());
    }
    let h = write(results, &crate::prepare::build::workspace_root())?;
    // Its page draws the comparisons' sittings from the history just
    // written: render it again.
    crate::record::report::analyse(run_dir)?;
    analysis::export::runs_html::write(results)?;
    let run = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let mut out = std::io::stdout().lock();
    for c in &h.comparisons {
        let Some(here) = c.sittings.iter().find(|s| Some(&s.run) == run.as_ref()) else {
            continue;
        };
        let id = &c.identity;
        let name = if id.aa {
            "A/A".to_string()
        } else {
            format!("{}/{}", id.row, id.against)
        };
        if let Some(n) = &here.next {
            let _ = writeln!(
                out,
                "  {name} for the next sitting: {:.3} ({:.3}-{:.3}), this sitting's interval with the ±{:.1} % between its {} earlier sittings",
                here.ratio, n.lo, n.hi, n.tau_log * 100.0, n.earlier
            );
        }
        if let Some(x) = &c.across {
            let _ = writeln!(
                out,
                "  {name} across {} sittings: {:.3} ({:.3}-{:.3}), between sittings ±{:.1} % (shootout history {})",
                x.sittings, x.ratio, x.lo, x.hi, x.tau_log * 100.0, id.row
            );
        }
    }
    Ok(())
}
