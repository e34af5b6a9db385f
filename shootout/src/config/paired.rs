//! `design = "paired"` and its `[paired]` table: each row against the
//! baseline (or its `against` row) in blocks, and the rules its rows keep
//! (pinned processes, one load host, whole turns when interleaved); the
//! paired keys (`against`, `slow_clients`, `[paired]`) refused elsewhere.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::config::scenario::{Design, PairedSettings, Scenario, ScenarioError, Schedule, Spread};
use crate::config::settings::{refuse_timing_keys, row_at, Written};
use crate::config::spans::{table_duration, Err};

/// The `[paired]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPaired {
    schedule: Option<Schedule>,
    block: Option<String>,
    settle: Option<String>,
    blocks: Option<u32>,
    runs: Option<i64>,
    seed: Option<u64>,
    spread: Option<Spread>,
    turn: Option<String>,
    // Gone: refused with the reason (see `paired_settings`).
    budget: Option<toml::Value>,
    target_ci_pct: Option<toml::Value>,
    min_blocks: Option<toml::Value>,
}

/// The paired design of `raw` (`design` at `at`): a baseline, no timing
/// keys on the rows, every `against` a row, and `[paired]` read.
pub fn paired_design(
    raw: &Written,
    table: Option<&Spanned<RawPaired>>,
    at: usize,
    err: &Err,
) -> Result<PairedSettings, ScenarioError> {
    if raw.baseline.is_none() {
        return Err(err(
            at,
            "design = \"paired\" needs a baseline: every row is compared with it".into(),
        ));
    }
    // Blocks, not repetitions or per-row durations, time a paired run.
    refuse_timing_keys(
        raw,
        false,
        "paired",
        "block, settle and blocks in [paired]",
        err,
    )?;
    check_against(raw, err)?;
    paired_settings(table, err)
}

/// What only the paired design takes: a row's `against` and
/// `slow_clients` (row or `[defaults]`) in any other design, and a
/// `[paired]` table in a sequential file.
pub fn paired_keys_only_in_paired(
    raw: &Written,
    table: Option<&Spanned<RawPaired>>,
    design: &Design,
    err: &Err,
) -> Result<(), ScenarioError> {
    if !matches!(design, Design::Paired(_)) {
        if let Some(a) = raw.scenario.iter().find_map(|o| o.against.as_ref()) {
            return Err(err(
                a.span().start,
                "against is for design = \"paired\" (a row compared with another)".into(),
            ));
        }
        let slow = std::iter::once(raw.defaults)
            .chain(raw.scenario)
            .find_map(|o| o.slow_clients.as_ref());
        if let Some(s) = slow {
            return Err(err(
                s.span().start,
                "slow_clients is for design = \"paired\" (the row with slow clients against the same row without)".into(),
            ));
        }
    }
    if let (Design::Sequential, Some(p)) = (design, table) {
        return Err(err(
            p.span().start,
            "[paired] needs design = \"paired\"".into(),
        ));
    }
    Ok(())
}

/// Paired rows on remote hosts have one load host each, and the schedule
/// `p` fits the rows (see `check_interleave`).
pub fn check_paired_rows(
    raw: &Written,
    scenarios: &[Scenario],
    p: &PairedSettings,
    err: &Err,
) -> Result<(), ScenarioError> {
    let several = |s: &&Scenario| s.hosts.as_ref().is_some_and(|h| h.load.len() > 1);
    if let Some(s) = scenarios.iter().find(several) {
        return Err(err(
            0,
            format!(
                "row {:?}: in the paired design a row on remote hosts has one load host",
                s.name
            ),
        ));
    }
    check_interleave(raw, scenarios, p, err)
}

/// Paired files: every `against` names another row, and the baseline, which
/// every other row is compared with by default, is compared with nothing.
fn check_against(raw: &Written, err: &Err) -> Result<(), ScenarioError> {
    let names: Vec<&str> = raw
        .scenario
        .iter()
        .filter_map(|o| o.name.as_ref().map(|n| n.get_ref().as_str()))
        .collect();
    let baseline = raw.baseline.map(|b| b.get_ref().as_str());
    for o in raw.scenario {
        let (Some(a), Some(name)) = (&o.against, &o.name) else {
            continue;
        };
        let (a, at, name) = (
            a.get_ref().as_str(),
            a.span().start,
            name.get_ref().as_str(),
        );
        let problem = if !names.contains(&a) {
            format!("against {a:?} is not a scenario name")
        } else if a == name {
            format!("scenario {name:?} is against itself: an A/A row is a second row with the same settings")
        } else if Some(name) == baseline {
            format!("{name:?} is the baseline: it is compared with nothing, so it takes no against")
        } else {
            continue;
        };
        return Err(err(at, problem));
    }
    Ok(())
}

/// The interleaved schedule's rows: every interval a whole number of
/// turns, and the closed model (each loadgen loads as fast as its server
/// answers in its turn).
fn check_interleave(
    raw: &Written,
    scenarios: &[Scenario],
    p: &PairedSettings,
    err: &Err,
) -> Result<(), ScenarioError> {
    if p.schedule != Schedule::Interleave {
        return Ok(());
    }
    let turn = p.turn;
    let uneven = |s: &&Scenario| {
        turn < Duration::from_millis(2) || !s.interval.as_nanos().is_multiple_of(turn.as_nanos())
    };
    if let Some(s) = scenarios.iter().find(uneven) {
        return Err(err(
            row_at(raw, &s.name),
            format!(
                "scenario {:?}: its interval {} is not a whole number of turns of {} (turn is at least 2ms)",
                s.name,
                humantime::format_duration(s.interval),
                humantime::format_duration(turn)
            ),
        ));
    }
    if let Some(s) = scenarios.iter().find(|s| s.hosts.is_some()) {
        return Err(err(
            row_at(raw, &s.name),
            format!("scenario {:?} is on remote hosts: the interleaved schedule needs both loadgens on one clock (a host's may be off by up to [ssh] clock_limit, a quarter of a turn); use schedule = \"duet\"", s.name),
        ));
    }
    if let Some(s) = scenarios.iter().find(|s| s.rate.is_some()) {
        return Err(err(
            row_at(raw, &s.name),
            format!("scenario {:?}: rate is not used by schedule = \"interleave\" (each loadgen loads as fast as its server answers, in its half of every turn)", s.name),
        ));
    }
    Ok(())
}

/// A paired row leaves no process to the scheduler unless it says
/// `placement = "free"`: the answer would depend on where the scheduler put
/// it, which nobody controls (nginx in front was unplaced when the main
/// command's answer moved from 0.29 to 0.48 between two machines).
pub fn check_pinned(raw: &Written, scenarios: &[Scenario], err: &Err) -> Result<(), ScenarioError> {
    for s in scenarios.iter().filter(|s| !s.placement_free) {
        let free = s.unpinned();
        if !free.is_empty() {
            // The key that places each: `sink reader` is `sink_cpus`.
            let keys: Vec<String> = free
                .iter()
                .map(|p| format!("{}_cpus", p.split(' ').next().unwrap_or(p)))
                .collect();
            return Err(err(
                row_at(raw, &s.name),
                format!(
                    "scenario {:?}: its {} would run where the scheduler puts them; set {} or say placement = \"free\"",
                    s.name,
                    free.join(", "),
                    keys.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `[paired]` read (absent: every default), errors at the table.
fn paired_settings(
    raw: Option<&Spanned<RawPaired>>,
    err: &Err,
) -> Result<PairedSettings, ScenarioError> {
    let mut p = PairedSettings::default();
    let Some(raw) = raw else { return Ok(p) };
    let at = raw.span().start;
    let r = raw.get_ref();
    if r.budget.is_some() || r.target_ci_pct.is_some() || r.min_blocks.is_some() {
        return Err(err(
            at,
            "[paired] budget, target_ci_pct and min_blocks are gone: a comparison runs a fixed number of blocks (blocks = N), because stopping once the interval looked narrow made it too narrow".into(),
        ));
    }
    let dur = |v: &Option<String>, key: &str, fallback: Duration, zero_ok: bool| {
        table_duration("paired", key, v, fallback, zero_ok).map_err(|m| err(at, m))
    };
    p.schedule = r.schedule.unwrap_or(p.schedule);
    p.block = dur(&r.block, "block", p.block, false)?;
    p.settle = dur(&r.settle, "settle", p.settle, true)?;
    if let Some(n) = r.blocks {
        p.blocks = checked_blocks(n).map_err(|why| err(at, format!("[paired] {why}")))?;
    }
    if let Some(n) = r.runs {
        p.runs = u32::try_from(n)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| err(at, format!("[paired] runs must be at least 1, not {n}")))?;
    }
    p.seed = r.seed.unwrap_or(p.seed);
    p.spread = r.spread.unwrap_or(p.spread);
    p.turn = dur(&r.turn, "turn", p.turn, false)?;
    if r.turn.is_some() && p.schedule != Schedule::Interleave {
        return Err(err(
            at,
            "[paired] turn is for schedule = \"interleave\"".into(),
        ));
    }
    Ok(p)
}

/// A planned number of blocks: even (AB and BA alike) and at least
/// [`PairedSettings::MIN_BLOCKS`].
pub fn checked_blocks(n: u32) -> Result<u32, String> {
    if n < PairedSettings::MIN_BLOCKS || n % 2 == 1 {
        return Err(format!(
            "blocks must be even and at least {} (AB and BA alike; the interval has blocks - 1 degrees of freedom), not {n}",
            PairedSettings::MIN_BLOCKS
        ));
    }
    Ok(n)
}
