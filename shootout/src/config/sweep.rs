//! `design = "sweep"` and its `[sweep]` table: latency against load, and
//! the highest rate that meets a latency target.

use std::time::Duration;

use analysis::sweep::Slo;
use serde::Deserialize;
use toml::Spanned;

/// Settings of the sweep design (see the crate README, "Sweeps").
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSettings {
    /// The latency targets every step is judged by (at least one); the
    /// first is the one comparisons take their rate from.
    pub slos: Vec<Slo>,
    /// The rates to step through (requests/s, increasing); when absent,
    /// geometric steps from `start_pct` of the row's closed-model rate.
    pub rates: Option<Vec<f64>>,
    /// First rate as a percentage of the closed-model probe's 2xx/s.
    pub start_pct: f64,
    /// Each rate this many times the one before.
    pub factor: f64,
    /// Most steps of the sweep (it stops earlier past saturation).
    pub max_steps: u32,
    /// Shortest measured time of a step; longer when `min_requests` needs it.
    pub step: Duration,
    /// Fewest requests a step measures (so that p99.9 rests on at least
    /// `min_requests / 1000` responses).
    pub min_requests: u64,
    /// Load before each step's measured part, left out.
    pub settle: Duration,
    /// The closed-model probe that finds the row's saturation rate.
    pub probe: Duration,
    /// Bisection rounds between the last passing and first failing rate.
    pub bisect: u32,
    /// Independent searches (each `bisect` rounds from the sweep's
    /// bracket); the max rate's interval comes from them.
    pub repeats: u32,
    /// Most steps that decide a rate by their majority: the bracket's ends
    /// and each search step are measured again until it is settled (one:
    /// a rate is its single step).
    pub votes: u32,
    /// Comparisons at equal rates, after every row's sweep: at these
    /// percentages of the baseline row's max rate at the first target.
    pub compare_at: Vec<f64>,
    /// The rows compared with the baseline (none given: every other row).
    pub compare: Option<Vec<String>>,
    /// Blocks of each comparison (fixed before it starts): a block runs
    /// the row and the baseline, each in fresh processes, in random order.
    pub compare_blocks: u32,
    /// loadgen wakes this long before each open-model send and polls
    /// without sleeping (`--spin-before`, at most 1 ms; 1 ms: it never
    /// sleeps); none: it sleeps until the send is due.
    pub client_spin: Option<Duration>,
    /// Each search on a fresh stack, after every row's sweep, in rounds
    /// across the rows (search 1 of every row, then search 2 in the
    /// reverse order, ...), so that a max rate's interval is over
    /// independent processes spread over the run, and a row's searches
    /// pair with the baseline's round by round. Off: a row's searches run
    /// on its sweep's stack, right after its sweep. On by default: searches
    /// on one stack agreed with each other about four times better than
    /// with a rerun, so their interval was over the wrong unit.
    pub interleave: bool,
}

impl SweepSettings {
    /// The settings with `slos` and every default.
    pub fn new(slos: Vec<Slo>) -> SweepSettings {
        SweepSettings {
            slos,
            rates: None,
            start_pct: 10.0,
            factor: 1.5,
            max_steps: 12,
            step: Duration::from_secs(3),
            min_requests: 20_000,
            settle: Duration::from_secs(1),
            probe: Duration::from_secs(3),
            bisect: 4,
            repeats: 3,
            votes: 3,
            compare_at: Vec::new(),
            compare: None,
            compare_blocks: 6,
            client_spin: None,
            interleave: true,
        }
    }

    /// The bounds steps are judged by for target `slo` (a spinning client
    /// is always busy: its busy share then bounds nothing).
    pub fn rules(&self, slo: Slo) -> analysis::sweep::Rules {
        let r = analysis::sweep::Rules::for_slo(slo);
        match self.client_spin {
            Some(_) => r.spinning(),
            None => r,
        }
    }

    /// How long a step at `rate` measures: `step`, or longer until
    /// `min_requests` are due, in whole seconds.
    pub fn step_length(&self, rate: f64) -> Duration {
        let needed = (self.min_requests as f64 / rate).ceil();
        self.step.max(Duration::from_secs_f64(needed))
    }
}

/// The `[sweep]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    slo: Option<Spanned<toml::Value>>,
    rates: Option<Spanned<Vec<f64>>>,
    start_pct: Option<Spanned<f64>>,
    factor: Option<Spanned<f64>>,
    max_steps: Option<Spanned<i64>>,
    step: Option<Spanned<String>>,
    min_requests: Option<Spanned<i64>>,
    settle: Option<Spanned<String>>,
    probe: Option<Spanned<String>>,
    bisect: Option<Spanned<i64>>,
    repeats: Option<Spanned<i64>>,
    votes: Option<Spanned<i64>>,
    compare_at: Option<Spanned<Vec<f64>>>,
    compare: Option<Spanned<Vec<String>>>,
    compare_blocks: Option<Spanned<i64>>,
    client_spin: Option<Spanned<String>>,
    interleave: Option<bool>,
}

impl RawSweep {
    /// `compare`'s names and where the list is, to check them against the
    /// file's rows.
    pub fn compare(&self) -> Option<(&[String], usize)> {
        self.compare
            .as_ref()
            .map(|c| (c.get_ref().as_slice(), c.span().start))
    }
}

/// Checks `raw` (the table at offset `at`); an error is (offset, message).
pub fn settings(
    raw: Option<&Spanned<RawSweep>>,
    at: usize,
) -> Result<SweepSettings, (usize, String)> {
    let Some(raw) = raw else {
        return Err((at, "design = \"sweep\" needs a [sweep] table with slo = \"p99 <= 1ms\" (the latency target)".into()));
    };
    let table = raw.span().start;
    let r = raw.get_ref();
    let slo = r.slo.as_ref().ok_or((
        table,
        "[sweep] needs slo, e.g. slo = \"p99 <= 1ms\"".to_string(),
    ))?;
    let mut s = SweepSettings::new(slos(slo)?);
    if let Some(rates) = &r.rates {
        let at = rates.span().start;
        let v = rates.get_ref();
        if v.is_empty() {
            return Err((at, "[sweep] rates is empty: give the rates to step through, or leave it out for geometric steps".into()));
        }
        if let Some(bad) = v.iter().find(|x| !(x.is_finite() && **x > 0.0)) {
            return Err((
                at,
                format!("[sweep] rates must be more than zero, not {bad}"),
            ));
        }
        if v.windows(2).any(|w| w[1] <= w[0]) {
            return Err((at, "[sweep] rates must increase".into()));
        }
        s.rates = Some(v.clone());
    }
    let float =
        |v: &Option<Spanned<f64>>, key: &str, fallback: f64, ok: fn(f64) -> bool, rule: &str| {
            v.as_ref().map_or(Ok(fallback), |x| {
                let n = *x.get_ref();
                if n.is_finite() && ok(n) {
                    Ok(n)
                } else {
                    Err((
                        x.span().start,
                        format!("[sweep] {key} must be {rule}, not {n}"),
                    ))
                }
            })
        };
    s.start_pct = float(
        &r.start_pct,
        "start_pct",
        s.start_pct,
        |n| n > 0.0 && n <= 100.0,
        "in (0, 100]",
    )?;
    s.factor = float(&r.factor, "factor", s.factor, |n| n > 1.0, "more than 1")?;
    counts(r, table, &mut s)?;
    let dur = |v: &Option<Spanned<String>>, key: &str, fallback: Duration, zero_ok: bool| {
        v.as_ref().map_or(Ok(fallback), |x| {
            match humantime::parse_duration(x.get_ref()) {
                Ok(d) if zero_ok || !d.is_zero() => Ok(d),
                Ok(_) => Err((
                    x.span().start,
                    format!("[sweep] {key} must be more than zero"),
                )),
                Err(e) => Err((
                    x.span().start,
                    format!("[sweep] bad {key} {:?}: {e}", x.get_ref()),
                )),
            }
        })
    };
    compare_settings(r, table, &mut s)?;
    s.step = dur(&r.step, "step", s.step, false)?;
    s.settle = dur(&r.settle, "settle", s.settle, true)?;
    s.probe = dur(&r.probe, "probe", s.probe, false)?;
    s.interleave = r.interleave.unwrap_or(true);
    if let Some(x) = &r.client_spin {
        let d = dur(&r.client_spin, "client_spin", Duration::ZERO, false)?;
        if d > Duration::from_millis(1) {
            return Err((
                x.span().start,
                "[sweep] client_spin must be at most 1ms (loadgen's --spin-before)".into(),
            ));
        }
        s.client_spin = Some(d);
    }
    Ok(s)
}

/// The whole-number settings (`max_steps`, `min_requests`, `bisect`,
/// `repeats`, `votes`) into `s`.
fn counts(r: &RawSweep, table: usize, s: &mut SweepSettings) -> Result<(), (usize, String)> {
    let count = |v: &Option<Spanned<i64>>, key: &str, fallback: u64, least: i64| {
        v.as_ref().map_or(Ok(fallback), |x| {
            let n = *x.get_ref();
            if n >= least {
                Ok(n as u64)
            } else {
                Err((
                    x.span().start,
                    format!("[sweep] {key} must be at least {least}, not {n}"),
                ))
            }
        })
    };
    let small = |n: u64, key: &str, v: &Option<Spanned<i64>>| {
        u32::try_from(n).map_err(|_| {
            (
                v.as_ref().map_or(table, |x| x.span().start),
                format!("[sweep] {key} is too large"),
            )
        })
    };
    s.max_steps = small(
        count(&r.max_steps, "max_steps", s.max_steps.into(), 2)?,
        "max_steps",
        &r.max_steps,
    )?;
    s.min_requests = count(&r.min_requests, "min_requests", s.min_requests, 1)?;
    s.bisect = small(
        count(&r.bisect, "bisect", s.bisect.into(), 0)?,
        "bisect",
        &r.bisect,
    )?;
    s.repeats = small(
        count(&r.repeats, "repeats", s.repeats.into(), 1)?,
        "repeats",
        &r.repeats,
    )?;
    s.votes = small(
        count(&r.votes, "votes", s.votes.into(), 1)?,
        "votes",
        &r.votes,
    )?;
    if s.votes.is_multiple_of(2) {
        let at = r.votes.as_ref().map_or(table, |x| x.span().start);
        return Err((
            at,
            format!(
                "[sweep] votes must be odd (so that two outcomes cannot tie), not {}",
                s.votes
            ),
        ));
    }
    Ok(())
}

/// `slo = "p99 <= 1ms"` or a list of them.
fn slos(v: &Spanned<toml::Value>) -> Result<Vec<Slo>, (usize, String)> {
    let at = v.span().start;
    let texts: Vec<&str> = match v.get_ref() {
        toml::Value::String(t) => vec![t.as_str()],
        toml::Value::Array(a) => a
            .iter()
            .map(|x| x.as_str())
            .collect::<Option<Vec<_>>>()
            .ok_or((
                at,
                "[sweep] slo must be a string or a list of strings".to_string(),
            ))?,
        _ => {
            return Err((
                at,
                "[sweep] slo must be a string or a list of strings".into(),
            ))
        }
    };
    if texts.is_empty() {
        return Err((at, "[sweep] slo is empty: give at least one target".into()));
    }
    let slos = texts
        .iter()
        .map(|t| t.parse::<Slo>().map_err(|m| (at, format!("[sweep] {m}"))))
        .collect::<Result<Vec<Slo>, _>>()?;
    if let Some(i) = (1..slos.len()).find(|&i| slos[..i].contains(&slos[i])) {
        return Err((at, format!("[sweep] slo {} is given twice", slos[i])));
    }
    Ok(slos)
}

/// `compare_at`, `compare` and `compare_blocks` into `s`.
fn compare_settings(
    r: &RawSweep,
    table: usize,
    s: &mut SweepSettings,
) -> Result<(), (usize, String)> {
    if let Some(b) = &r.compare_blocks {
        let n = *b.get_ref();
        s.compare_blocks = u32::try_from(n).ok().filter(|n| *n >= 2).ok_or((
            b.span().start,
            format!("[sweep] compare_blocks must be at least 2, not {n}"),
        ))?;
    }
    if let Some(c) = &r.compare_at {
        if let Some(bad) = c
            .get_ref()
            .iter()
            .find(|x| !(x.is_finite() && **x > 0.0 && **x <= 100.0))
        {
            return Err((
                c.span().start,
                format!("[sweep] compare_at takes percentages in (0, 100], not {bad}"),
            ));
        }
        s.compare_at = c.get_ref().clone();
    }
    s.compare = r.compare.as_ref().map(|c| c.get_ref().clone());
    if s.compare.is_some() && s.compare_at.is_empty() {
        return Err((
            r.compare.as_ref().map_or(table, |c| c.span().start),
            "[sweep] compare needs compare_at, the rates (percent of the baseline's max rate) to compare at".into(),
        ));
    }
    Ok(())
}
