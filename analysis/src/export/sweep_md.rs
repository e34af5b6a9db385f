//! Markdown for sweep tables: each row's max rate at the target with its
//! interval over the searches, its knee, and every step.

use std::fmt::Write;

use crate::sweep::report::{StepFigures, SweepTable};

/// Appends every sweep table (nothing when there are none).
pub fn sections(out: &mut String, tables: &[SweepTable]) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Sweeps: each row's stack started once, a closed-model probe for its saturation rate, then \
         open-model steps at rising rates (latency from each request's intended send time, so \
         coordinated omission is corrected), each after a settle time left out, until achieved \
         2xx/s fell below 95 % of the rate or the target's percentile passed 10 times its limit. \
         A step passes when the client was valid, it achieved at least 99 % of its rate with no \
         error or non-2xx, and the target's percentile is within the limit. A step is invalid \
         (it measured the client) when loadgen's send lateness p99 exceeds a fifth of the limit \
         (at least 200 µs) or loadgen was busier than 90 % of its threads. Max rate at the target: \
         each search bisects (geometric mean) between the sweep's last passing and first failing \
         rate and keeps its highest passing rate (an invalid search step counts as failing); the \
         figure is their mean with a 95 % interval over the searches (Student's t). When the \
         first step that did not pass was invalid, no search runs: the max rate is at least the \
         last passing rate, and this client cannot say more. Knee: the highest rate before the first valid step whose p99 exceeds twice \
         the lightest valid step's.\n"
    )?;
    for t in tables {
        writeln!(out, "## {}\n", t.title)?;
        writeln!(out, "| Configuration | Target | Closed-model 2xx/s | Max rate at target | 95% CI over searches | Searches | Knee |")?;
        writeln!(out, "|---|---|---:|---:|---:|---|---:|")?;
        for r in &t.rows {
            let max = match (r.max_rate_at_slo, r.bracket) {
                (Some(m), Some("client")) => format!("at least {m:.0} (the client was the limit)"),
                (None, Some("client")) => "the client was the limit".into(),
                (Some(m), _) => format!("{m:.0}"),
                (None, Some("below")) => "below the lightest step".into(),
                (None, _) => "above the heaviest step".into(),
            };
            let searches: Vec<String> = r.searches.iter().map(|s| format!("{s:.0}")).collect();
            writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.label,
                r.slo,
                r.closed_rps.map_or("-".into(), |v| format!("{v:.0}")),
                max,
                r.max_rate_ci95_pct
                    .map_or("-".into(), |c| format!("± {c:.1}%")),
                searches.join(", "),
                r.knee.map_or("-".into(), |k| format!("{k:.0}")),
            )?;
        }
        writeln!(out)?;
        if !t.rows.is_empty() {
            writeln!(
                out,
                "![Latency against load: {}]({})\n",
                t.title,
                super::sweep_chart_name(t)
            )?;
        }
        for r in &t.rows {
            writeln!(out, "### {}: steps\n", r.label)?;
            steps(out, &r.steps)?;
        }
    }
    Ok(())
}

fn steps(out: &mut String, steps: &[StepFigures]) -> std::fmt::Result {
    writeln!(out, "| Rate | Achieved 2xx/s | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | Errors | Send lateness p99 µs | loadgen busy | Server CPU µs/2xx | Valid | Meets target |")?;
    writeln!(
        out,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    )?;
    for f in steps {
        let s = &f.step;
        writeln!(
            out,
            "| {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.0} | {} | {} | {} | {} |",
            s.rate,
            s.achieved,
            s.p50_us,
            s.p90_us,
            s.p99_us,
            s.p999_us,
            s.max_us,
            s.errors,
            s.lateness_p99_us,
            s.loadgen_busy.map_or("-".into(), |b| format!("{:.0}%", b * 100.0)),
            s.server_cpu_us.map_or("-".into(), |c| format!("{c:.2}")),
            if f.valid { "yes" } else { "no" },
            if f.passes { "yes" } else { "no" },
        )?;
    }
    writeln!(out)
}
