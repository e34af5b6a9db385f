//! Parsing a scenario file: its tables as written (`RawFile`), the rows in
//! order, and the design that `design` and `kind` pick, with every error
//! naming the file and the line. Each design's keys, defaults and rules
//! live next to it: `row.rs` (a row's keys), `paired.rs`, `memory.rs`,
//! `sweep_rules.rs` and `sinks_rules.rs`, over the keys in `settings.rs`.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::config::memory::{check_memory_hosts, memory_design, RawMemory};
use crate::config::paired::{
    check_paired_rows, check_pinned, paired_design, paired_keys_only_in_paired, RawPaired,
};
use crate::config::row::{check_defaults, check_ranges, row};
use crate::config::scenario::{Design, Scenario, ScenarioError, ScenarioFile};
use crate::config::settings::Written;
use crate::config::sinks_rules::{
    sinks_design, ssh_terminal_only_in_sinks, writer_gap_only_in_sinks,
};
use crate::config::spans::{line_of, Err};
use crate::config::sweep_rules::sweep_design;

/// The keys of a row (or `[defaults]`) as written.
pub use crate::config::settings::{LibcToml, Settings, WorkersToml};

/// The file as written: its top-level keys, each design's table, the rows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    title: Option<String>,
    baseline: Option<Spanned<String>>,
    design: Option<Spanned<String>>,
    /// `"memory"` for memory rows; throughput when absent.
    kind: Option<Spanned<String>>,
    paired: Option<Spanned<RawPaired>>,
    memory: Option<Spanned<RawMemory>>,
    sweep: Option<Spanned<crate::config::sweep::RawSweep>>,
    sinks: Option<Spanned<crate::config::sinks::RawSinks>>,
    #[serde(default)]
    defaults: Settings,
    #[serde(default)]
    scenario: Vec<Settings>,
    /// Remote hosts: accepted here, read by `crate::config::hosts`.
    #[serde(rename = "ssh")]
    _ssh: Option<toml::Value>,
    #[serde(rename = "hosts")]
    _hosts: Option<toml::Value>,
}

impl RawFile {
    /// The rows, `[defaults]` and baseline, for the designs' rules.
    fn written(&self) -> Written<'_> {
        Written {
            defaults: &self.defaults,
            scenario: &self.scenario,
            baseline: self.baseline.as_ref(),
        }
    }
}

/// Reads and checks a scenario file.
pub fn load(path: &Path) -> Result<ScenarioFile, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: path.to_owned(),
        line: 0,
        message: format!("cannot read: {e}"),
    })?;
    parse(path, &text)
}

/// Parses scenario text (`path` is used in messages and for the table name).
pub fn parse(path: &Path, text: &str) -> Result<ScenarioFile, ScenarioError> {
    let err = |offset: usize, message: String| ScenarioError {
        file: path.to_owned(),
        line: line_of(text, offset),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        err(offset, e.message().to_string())
    })?;
    let remote = crate::config::hosts::parse_spanned(path, text).map_err(|(at, m)| err(at, m))?;
    if raw.scenario.is_empty() {
        return Err(err(0, "no [[scenario]]".into()));
    }
    check_defaults(&raw.defaults, &err)?;
    check_ranges(&raw.defaults, &err)?;
    for o in &raw.scenario {
        check_ranges(o, &err)?;
    }
    let mut scenarios = Vec::new();
    for (index, o) in raw.scenario.iter().enumerate() {
        let s = row(index, o, &raw.defaults, remote.as_ref(), &scenarios, &err)?;
        scenarios.push(s);
    }
    if let Some(b) = &raw.baseline {
        if !scenarios.iter().any(|s| &s.name == b.get_ref()) {
            return Err(err(
                b.span().start,
                format!("baseline {:?} is not a scenario name", b.get_ref()),
            ));
        }
    }
    let design = design(&raw, &scenarios, &err)?;
    if matches!(design, Design::Paired(_)) {
        check_pinned(&raw.written(), &scenarios, &err)?;
    }
    let name = path
        .file_stem()
        .map_or("scenarios".into(), |s| s.to_string_lossy().into_owned());
    Ok(ScenarioFile {
        path: path.to_owned(),
        title: raw.title.unwrap_or_else(|| name.clone()),
        name,
        baseline: raw.baseline.map(Spanned::into_inner),
        design,
        scenarios,
        remote,
    })
}

/// The file's design (`design`, `kind` and their tables), checked against
/// its rows by each design's own rules (a file that breaks several is
/// told of the first, so the order below is part of the behaviour).
fn design(raw: &RawFile, scenarios: &[Scenario], err: &Err) -> Result<Design, ScenarioError> {
    let written = raw.written();
    let design = match raw
        .design
        .as_ref()
        .map(|d| (d.get_ref().as_str(), d.span()))
    {
        None | Some(("sequential", _)) => Design::Sequential,
        Some(("paired", span)) => Design::Paired(paired_design(
            &written,
            raw.paired.as_ref(),
            span.start,
            err,
        )?),
        Some(("sweep", span)) => Design::Sweep(sweep_design(
            &written,
            raw.sweep.as_ref(),
            scenarios,
            span.start,
            err,
        )?),
        Some(("sinks", _)) => {
            Design::Sinks(sinks_design(&written, raw.sinks.as_ref(), scenarios, err)?)
        }
        Some((other, span)) => {
            return Err(err(
                span.start,
                format!(
                "unknown design {other:?}: use \"sequential\", \"paired\", \"sweep\" or \"sinks\""
            ),
            ))
        }
    };
    check_design_tables(raw, &design, err)?;
    writer_gap_only_in_sinks(&written, &design, err)?;
    ssh_terminal_only_in_sinks(&written, &design, scenarios, err)?;
    paired_keys_only_in_paired(&written, raw.paired.as_ref(), &design, err)?;
    if raw.kind.as_ref().is_some_and(|k| k.get_ref() == "memory") {
        check_memory_hosts(scenarios, err)?;
    }
    if let Design::Paired(p) = &design {
        check_paired_rows(&written, scenarios, p, err)?;
    }
    let design = match raw.kind.as_ref().map(|k| (k.get_ref().as_str(), k.span())) {
        None | Some(("throughput", _)) => {
            if let Some(m) = &raw.memory {
                return Err(err(
                    m.span().start,
                    "[memory] needs kind = \"memory\"".into(),
                ));
            }
            design
        }
        Some(("memory", _)) => Design::Memory(memory_design(
            &written,
            raw.design.as_ref(),
            raw.memory.as_ref(),
            scenarios,
            err,
        )?),
        Some((other, span)) => {
            return Err(err(
                span.start,
                format!("unknown kind {other:?}: use \"throughput\" or \"memory\""),
            ))
        }
    };
    Ok(design)
}

/// A design's own table (`[sweep]`, `[sinks]`) only with that design.
fn check_design_tables(raw: &RawFile, design: &Design, err: &Err) -> Result<(), ScenarioError> {
    let tables = [
        (
            "sweep",
            raw.sweep.as_ref().map(|t| t.span().start),
            matches!(design, Design::Sweep(_)),
        ),
        (
            "sinks",
            raw.sinks.as_ref().map(|t| t.span().start),
            matches!(design, Design::Sinks(_)),
        ),
    ];
    for (name, at, ok) in tables {
        if let (false, Some(at)) = (ok, at) {
            return Err(err(at, format!("[{name}] needs design = \"{name}\"")));
        }
    }
    Ok(())
}
