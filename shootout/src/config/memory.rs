//! `kind = "memory"` and its `[memory]` table: the server's memory idle,
//! with connections held and after they closed, on this machine; the keys
//! only throughput rows use are refused.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::config::scenario::{MemorySettings, Scenario, ScenarioError};
use crate::config::settings::{row_at, Written};
use crate::config::spans::{table_duration, Err};

/// The `[memory]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    hold: Option<String>,
    settle: Option<String>,
    after: Option<String>,
    setup_timeout: Option<String>,
}

/// The memory design of `raw`: no `design` key (`design`, where it is
/// set), its rows checked, its `[memory]` read.
pub fn memory_design(
    raw: &Written,
    design: Option<&Spanned<String>>,
    table: Option<&Spanned<RawMemory>>,
    scenarios: &[Scenario],
    err: &Err,
) -> Result<MemorySettings, ScenarioError> {
    if let Some(d) = design {
        return Err(err(
            d.span().start,
            "design is for throughput rows; memory rows run one at a time".into(),
        ));
    }
    check_memory_rows(raw, scenarios, err)?;
    memory_settings(table, err)
}

/// Memory rows run on this machine: the server's memory is read here.
pub fn check_memory_hosts(scenarios: &[Scenario], err: &Err) -> Result<(), ScenarioError> {
    if let Some(s) = scenarios.iter().find(|s| s.hosts.is_some()) {
        return Err(err(
            0,
            format!(
                "row {:?} is on remote hosts: the memory design reads the server's memory on this machine only",
                s.name
            ),
        ));
    }
    Ok(())
}

/// Memory rows take their connections from `connections` and hold them;
/// what only throughput rows use is refused, so a file says what it measures.
fn check_memory_rows(raw: &Written, rows: &[Scenario], err: &Err) -> Result<(), ScenarioError> {
    for o in raw.scenario.iter().chain([raw.defaults]) {
        let keys = [
            ("duration", o.duration.as_ref().map(|x| x.span().start)),
            ("warmup", o.warmup.as_ref().map(|x| x.span().start)),
            ("interval", o.interval.as_ref().map(|x| x.span().start)),
        ];
        if let Some((key, at)) = keys.iter().find_map(|(k, a)| a.map(|a| (k, a))) {
            return Err(err(
                at,
                format!("{key} is not used by memory rows: set hold, settle and after in [memory]"),
            ));
        }
    }
    for s in rows {
        let at = row_at(raw, &s.name);
        let why = if s.rate.is_some() {
            Some(
                "rate is not used by memory rows (loadgen --hold makes one request per connection)",
            )
        } else if s.proxy.is_some() {
            Some("memory rows measure the server's own connections: no proxy in front")
        } else if s.tls {
            Some("tls is not used by memory rows (loadgen --hold speaks plain HTTP)")
        } else if s.threads != 1 {
            Some("threads is not used by memory rows (connections are opened one after another)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(err(at, format!("scenario {:?}: {why}", s.name)));
        }
    }
    Ok(())
}

/// `[memory]` read (absent: every default), errors at the table.
fn memory_settings(
    raw: Option<&Spanned<RawMemory>>,
    err: &Err,
) -> Result<MemorySettings, ScenarioError> {
    let mut m = MemorySettings::default();
    let Some(raw) = raw else { return Ok(m) };
    let at = raw.span().start;
    let r = raw.get_ref();
    let dur = |v: &Option<String>, key: &str, fallback: Duration| {
        table_duration("memory", key, v, fallback, false).map_err(|m| err(at, m))
    };
    m.hold = dur(&r.hold, "hold", m.hold)?;
    m.settle = dur(&r.settle, "settle", m.settle)?;
    m.after = dur(&r.after, "after", m.after)?;
    m.setup_timeout = dur(&r.setup_timeout, "setup_timeout", m.setup_timeout)?;
    if m.settle >= m.hold {
        return Err(err(
            at,
            "[memory] settle must be shorter than hold: the held sample is taken settle after every connection is open".into(),
        ));
    }
    Ok(m)
}
