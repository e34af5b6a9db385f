//! `design = "sinks"` and its `[sinks]` table: how fast each row's log
//! sink takes the row's own log lines, measured alone (no server load).

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// Settings of the sinks design (see the crate README, "Drain rate of a
/// sink").
#[derive(Debug, Clone, PartialEq)]
pub struct SinksSettings {
    /// Independent runs per sink (a fresh sink and writer each); the
    /// interval is over them.
    pub runs: u32,
    /// How long the writer writes in each run.
    pub length: Duration,
    /// How long it writes first, uncounted, in each run (buffers fill:
    /// an ssh terminal's hold megabytes; see `shootout sink-writer`).
    pub settle: Duration,
    /// How long the row's server is loaded (closed model, its own
    /// connections) to sample the lines it logs per request.
    pub sample: Duration,
}

impl Default for SinksSettings {
    fn default() -> Self {
        SinksSettings {
            runs: 5,
            length: Duration::from_secs(2),
            settle: Duration::ZERO,
            sample: Duration::from_secs(1),
        }
    }
}

/// The `[sinks]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSinks {
    runs: Option<Spanned<i64>>,
    length: Option<Spanned<String>>,
    settle: Option<Spanned<String>>,
    sample: Option<Spanned<String>>,
}

/// Checks `raw` (absent: every default); an error is (offset, message).
pub fn settings(raw: Option<&Spanned<RawSinks>>) -> Result<SinksSettings, (usize, String)> {
    let mut s = SinksSettings::default();
    let Some(raw) = raw else {
        return Ok(s);
    };
    let r = raw.get_ref();
    if let Some(n) = &r.runs {
        let v = *n.get_ref();
        s.runs = u32::try_from(v)
            .ok()
            .filter(|v| (2..=1000).contains(v))
            .ok_or((
                n.span().start,
                format!("[sinks] runs must be 2 to 1000 (the interval is over runs), not {v}"),
            ))?;
    }
    let dur = |v: &Option<Spanned<String>>, key: &str, fallback: Duration| {
        v.as_ref().map_or(Ok(fallback), |x| {
            let zero_ok = key == "settle";
            match humantime::parse_duration(x.get_ref()) {
                Ok(d) if (zero_ok || !d.is_zero()) && d <= Duration::from_secs(600) => Ok(d),
                Ok(_) if zero_ok => {
                    Err((x.span().start, format!("[sinks] {key} must be at most 10m")))
                }
                Ok(_) => Err((
                    x.span().start,
                    format!("[sinks] {key} must be more than zero and at most 10m"),
                )),
                Err(e) => Err((
                    x.span().start,
                    format!("[sinks] bad {key} {:?}: {e}", x.get_ref()),
                )),
            }
        })
    };
    s.length = dur(&r.length, "length", s.length)?;
    s.settle = dur(&r.settle, "settle", s.settle)?;
    s.sample = dur(&r.sample, "sample", s.sample)?;
    Ok(s)
}
