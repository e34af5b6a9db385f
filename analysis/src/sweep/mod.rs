//! Latency against load (`design = "sweep"`): the target ([`slo`]), the
//! rules that step, stop, judge and search ([`rules`]), and a step's
//! figures from its loadgen log ([`step_of`]).

pub mod compare;
pub mod report;
pub mod reruns;
pub mod rules;
pub mod slo;
pub mod votes;

use std::path::Path;

use anyhow::Context;

pub use rules::{Bracket, Rules, Step};
pub use slo::{Quantile, Slo};
pub use votes::{points, Verdict};

/// The figures of one open-model step at `rate` from its finished loadgen
/// log (the measured part's merged histogram; the settle time is the
/// log's warm-up), with the CPU the runner sampled.
pub fn step_of(
    log: &Path,
    rate: f64,
    loadgen_busy: Option<f64>,
    server_cpu_s: Option<f64>,
) -> anyhow::Result<Step> {
    let text = crate::input::raw::read_to_string(log)
        .with_context(|| format!("reading {}", log.display()))?;
    let summary = text
        .lines()
        .find_map(|l| match serde_json::from_str::<loadgen::Record>(l) {
            Ok(loadgen::Record::Summary(s)) => Some(s),
            _ => None,
        })
        .with_context(|| format!("{}: no summary record", log.display()))?;
    let h = summary
        .histogram
        .as_deref()
        .map(loadgen::histlog::decode)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{}: bad histogram: {e}", log.display()))?
        .with_context(|| format!("{}: no latency histogram", log.display()))?;
    let q = |x: f64| h.value_at_quantile(x) as f64;
    let lateness = summary.send_lateness_us.with_context(|| {
        format!(
            "{}: no send lateness (not an open-model run)",
            log.display()
        )
    })?;
    // No client lateness: no request fell due on an idle connection (a
    // saturated step: every request waited for its connection's previous
    // response), so the client delayed none. Falling back to every
    // request's lateness would call the server's saturation the client's
    // (found by an audit of the first committed sweeps). Sweeps need a
    // loadgen that reports it (every committed sweep has one).
    let zero = loadgen::record::SummaryLatency {
        p50: 0,
        p75: 0,
        p90: 0,
        p99: 0,
        p99_9: 0,
        max: 0,
        mean: 0.0,
    };
    let client = summary.client_lateness_us.unwrap_or(zero);
    Ok(Step {
        rate,
        achieved: summary.rps,
        p50_us: q(0.5),
        p90_us: q(0.9),
        p99_us: q(0.99),
        p999_us: q(0.999),
        max_us: h.max() as f64,
        ok: summary.ok,
        errors: summary.non_2xx.total() + summary.errors.total(),
        client_lateness_p50_us: client.p50 as f64,
        client_lateness_p99_us: client.p99 as f64,
        send_lateness_p99_us: lateness.p99 as f64,
        loadgen_busy,
        server_cpu_us: server_cpu_s
            .filter(|_| summary.ok > 0)
            .map(|s| s * 1e6 / summary.ok as f64),
    })
}

/// The 2xx/s of a closed-model log's summary (the sweep's probe).
pub fn closed_rps(log: &Path) -> anyhow::Result<Option<f64>> {
    let text = crate::input::raw::read_to_string(log)
        .with_context(|| format!("reading {}", log.display()))?;
    Ok(text
        .lines()
        .find_map(|l| match serde_json::from_str::<loadgen::Record>(l) {
            Ok(loadgen::Record::Summary(s)) => Some(s.rps),
            _ => None,
        }))
}

/// The files in `dir` whose names end in `suffix`, sorted.
pub(crate) fn files_ending(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = crate::input::raw::read_dir(dir)
        .into_iter()
        .flatten()
        .map(|e| e.path)
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}
