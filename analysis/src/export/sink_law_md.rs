//! Markdown for the sink law: each served row's predicted and measured
//! rate, the placements' ceilings, and the rule.

use std::fmt::Write;

use crate::sink_law::{Law, TOLERANCE};

fn ci(c: Option<f64>) -> String {
    c.map_or("-".into(), |c| format!("± {c:.1}%"))
}

/// The law's report: what it joins, the ceilings, one line per row.
pub fn report(law: &Law) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    writeln!(out, "# The sink law: predicted against measured\n")?;
    writeln!(
        out,
        "Predicted 2xx/s = min(drain lines/s ÷ lines per request, the placement's no-logging \
         rate). Drain rates come from the drain run `{}` (each sink alone, fed a server's own \
         log lines); measured rates from the served run `{}` (each row against a no-logging \
         baseline). A measured rate is the mean of each block's mean 2xx/s, with a 95 % \
         interval over blocks (Student's t); a ceiling pools every block of the placement's \
         no-logging sides. The law holds on a row when measured ÷ predicted is within ±{:.0} %. \
         `sinks.json` holds these rows.\n",
        law.drain_run,
        law.served_run,
        TOLERANCE * 100.0
    )?;
    writeln!(out, "## Ceilings (no logging)\n")?;
    writeln!(
        out,
        "| Placement | 2xx/s | 95% CI over blocks | Blocks | From |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---|")?;
    for c in &law.ceilings {
        writeln!(
            out,
            "| {} | {:.0} | {} | {} | {} |",
            c.placement,
            c.rps,
            ci(c.ci95_pct),
            c.blocks,
            c.from.join(", ")
        )?;
    }
    writeln!(out, "\n## Rows\n")?;
    writeln!(
        out,
        "| Row | Sink | Placement | Drain lines/s | Lines per request | Predicted 2xx/s | Measured 2xx/s | 95% CI over blocks | Measured ÷ predicted | Sink is the bottleneck | Within ±{:.0} % |",
        TOLERANCE * 100.0
    )?;
    writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|")?;
    for r in &law.rows {
        let mut sink = r.sink.clone();
        if let Some(t) = &r.terminal {
            sink += &format!(", {t}");
        }
        if let Some(bps) = r.link_rate_bps {
            sink += &format!(", {} Mbit/s", bps as f64 / 1e6);
        }
        writeln!(
            out,
            "| {} | {sink} | {} | {:.0} {} | {:.3} | {:.0} | {:.0} | {} | {:.3} | {} | {} |",
            r.row,
            r.placement,
            r.drain_lines_per_s,
            ci(r.drain_ci95_pct),
            r.lines_per_request,
            r.predicted_rps,
            r.measured_rps,
            ci(r.measured_ci95_pct),
            r.measured_over_predicted,
            if r.bottleneck { "yes" } else { "no" },
            if r.within_tolerance { "yes" } else { "no" },
        )?;
    }
    let held = law.rows.iter().filter(|r| r.bottleneck).collect::<Vec<_>>();
    writeln!(
        out,
        "\nWhere the sink is the bottleneck, the law held on {} of {} rows.\n\n![measured against drain](sink-law.svg)",
        held.iter().filter(|r| r.within_tolerance).count(),
        held.len()
    )?;
    Ok(out)
}
