//! `design = "sinks"` over a file's rows: rows that log to stdout, timed by
//! `[sinks]` (read in `sinks.rs`) and not by their own keys, and the keys
//! only this design takes (`writer_gap`, an ssh terminal that is not
//! served from its ssh host) refused in the others.

use toml::Spanned;

use crate::config::scenario::{Design, Scenario, ScenarioError};
use crate::config::settings::{refuse_timing_keys, row_at, Written};
use crate::config::sinks::{RawSinks, SinksSettings};
use crate::config::spans::Err;

/// The sinks design of `raw`: rows that log to stdout (here, or into a
/// sink on their remote server host), timed by `[sinks]`.
pub fn sinks_design(
    raw: &Written,
    table: Option<&Spanned<RawSinks>>,
    rows: &[Scenario],
    err: &Err,
) -> Result<SinksSettings, ScenarioError> {
    refuse_timing_keys(
        raw,
        true,
        "sinks",
        "runs, length, settle and sample in [sinks]",
        err,
    )?;
    for s in rows {
        let why = if s.command.is_some() {
            Some("is a command row: the sinks design writes the twins' own lines, with no server")
        } else if !s.features.iter().any(|f| f == "log-stdout") {
            Some("logs nothing to stdout: a sink's lines are the server's own, so add the log-stdout feature")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(err(row_at(raw, &s.name), format!("row {:?} {why}", s.name)));
        }
    }
    crate::config::sinks::settings(table).map_err(|(at, m)| err(at, m))
}

/// `log = "ssh-terminal"` rows: the sinks design measures the terminal
/// alone; every other design serves the row, so its server runs on the
/// ssh host (`server_host`, the same host as `ssh_host`).
pub fn ssh_terminal_only_in_sinks(
    raw: &Written,
    design: &Design,
    scenarios: &[Scenario],
    err: &Err,
) -> Result<(), ScenarioError> {
    match scenarios
        .iter()
        .find(|s| s.ssh_terminal.is_some() && s.hosts.is_none())
    {
        Some(s) if !matches!(design, Design::Sinks(_)) => Err(err(
            row_at(raw, &s.name),
            format!(
                "row {:?}: a served log = \"ssh-terminal\" row runs its server on the ssh host: set server_host = {:?}",
                s.name,
                s.ssh_terminal.as_ref().map_or("", |t| t.host.as_str())
            ),
        )),
        _ => Ok(()),
    }
}

/// `writer_gap` paces the sinks design's writer; a served row's server
/// writes as its requests come.
pub fn writer_gap_only_in_sinks(
    raw: &Written,
    design: &Design,
    err: &Err,
) -> Result<(), ScenarioError> {
    if matches!(design, Design::Sinks(_)) {
        return Ok(());
    }
    let set = raw
        .scenario
        .iter()
        .chain([raw.defaults])
        .find_map(|o| o.writer_gap.as_ref());
    match set {
        Some(sp) => Err(err(
            sp.span().start,
            "writer_gap paces the writer of design = \"sinks\"; a served row's server writes as its requests come".into(),
        )),
        None => Ok(()),
    }
}
