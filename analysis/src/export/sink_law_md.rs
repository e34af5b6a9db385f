//! Markdown for the sink law: each served row's predicted and measured
//! rate, the placements' ceilings, and the rule.

use std::fmt::Write;

use crate::sinks::law::{Law, TOLERANCE};

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
         rate). Drain rates come from the drain run `results/{}` (each sink alone, fed a server's own \
         log lines); measured rates from the served run `results/{}` (each row against a no-logging \
         baseline). A measured rate is the mean of each block's mean 2xx/s, with a 95 % \
         interval over blocks (Student's t); a ceiling pools every block of the placement's \
         no-logging sides. The law holds on a row when measured ÷ predicted is within ±{:.0} %. \
         `sinks.json` holds these rows.\n",
        law.drain_run,
        law.served_run,
        TOLERANCE * 100.0
    )?;
    if law.active_share < 1.0 {
        writeln!(
            out,
            "The served run interleaves its loadgens (each loads one half of every turn), so its \
             rates are per second of load: each interval's 2xx over {:.0} % of its length.\n",
            law.active_share * 100.0
        )?;
    }
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
        match &r.terminal {
            // `xterm +j` for the sink `xterm`.
            Some(t) if t.starts_with(&r.sink) => sink = t.clone(),
            Some(t) => sink += &format!(", {t}"),
            None => {}
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
    let bound: Vec<_> = law.rows.iter().filter(|r| r.bottleneck).collect();
    if bound.is_empty() {
        writeln!(
            out,
            "\nNo row's sink drains slower than the no-logging rate: the law predicts that rate for every row, and the rows' shortfall from it is what logging costs besides the sink's drain."
        )?;
    } else {
        writeln!(
            out,
            "\nWhere the sink is the bottleneck, the law held on {} of {} rows.",
            bound.iter().filter(|r| r.within_tolerance).count(),
            bound.len()
        )?;
    }
    writeln!(out, "\n![measured against drain](sink-law.svg)")?;
    Ok(out)
}

/// Every file the law writes into the served run, by name: `sinks.json`
/// (one object per row), `sink-law.json` (the whole law: runs, ceilings,
/// rows), `sink-law.md` and `sink-law.svg`.
pub fn files(law: &Law) -> anyhow::Result<Vec<(&'static str, Vec<u8>)>> {
    Ok(vec![
        (
            "sinks.json",
            (serde_json::to_string_pretty(&law.rows)? + "\n").into_bytes(),
        ),
        (
            "sink-law.json",
            (serde_json::to_string_pretty(law)? + "\n").into_bytes(),
        ),
        ("sink-law.md", report(law)?.into_bytes()),
        ("sink-law.svg", super::sink_law_svg::chart(law)?),
    ])
}
