//! `design = "sweep"` over a file's rows: rows on this machine without
//! timing keys of their own, and `[sweep]` (read in `sweep.rs`) comparing
//! rows the file has.

use toml::Spanned;

use crate::config::scenario::{Scenario, ScenarioError};
use crate::config::settings::{refuse_timing_keys, row_at, Written};
use crate::config::spans::Err;
use crate::config::sweep::{RawSweep, SweepSettings};

/// The sweep design of `raw` (its rows checked, its `[sweep]` read).
pub fn sweep_design(
    raw: &Written,
    table: Option<&Spanned<RawSweep>>,
    scenarios: &[Scenario],
    at: usize,
    err: &Err,
) -> Result<SweepSettings, ScenarioError> {
    check_sweep_rows(raw, scenarios, err)?;
    let settings = crate::config::sweep::settings(table, at).map_err(|(at, m)| err(at, m))?;
    if let Some((names, at)) = table.and_then(|s| s.get_ref().compare()) {
        if let Some(bad) = names
            .iter()
            .find(|n| !scenarios.iter().any(|s| &s.name == *n))
        {
            return Err(err(
                at,
                format!("[sweep] compare names {bad:?}, which is no row of this file"),
            ));
        }
        let baseline = raw
            .baseline
            .map_or(scenarios[0].name.as_str(), |b| b.get_ref());
        if names.iter().any(|n| n == baseline) {
            return Err(err(at, format!("[sweep] compare names the baseline {baseline:?}: it is what the others are compared with")));
        }
    }
    Ok(settings)
}

/// Sweep rows take their rates and step times from `[sweep]`, and run on
/// this machine.
fn check_sweep_rows(raw: &Written, rows: &[Scenario], err: &Err) -> Result<(), ScenarioError> {
    refuse_timing_keys(
        raw,
        true,
        "sweep",
        "rates, step, settle and repeats in [sweep]",
        err,
    )?;
    if let Some(s) = rows.iter().find(|s| s.hosts.is_some()) {
        return Err(err(
            row_at(raw, &s.name),
            format!(
                "row {:?} is on remote hosts: sweeps run on this machine for now",
                s.name
            ),
        ));
    }
    Ok(())
}
