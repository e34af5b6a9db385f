//! Markdown for paired tables: one table per scenario file, a row per
//! comparison with both metrics, then per machine state and slot order.

use std::fmt::Write;

use super::paired_chart_name;
use crate::paired::report::{Metric, PairedRow, PairedTable};
use crate::paired::stats::RatioCi;

/// Appends every paired table (nothing when there are none).
pub fn sections(out: &mut String, tables: &[PairedTable]) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Paired design: each row ran at the same time as the baseline (both stacks up, same pinning, \
         both loaded at once), in blocks with fresh processes whose slot order (which stack starts \
         first) alternates AB/BA at random. A pair is one interval measured on both. Ratio = \
         exp(mean of ln(row / baseline)) over the pairs. CI: the wider, on each side, of Student's t \
         over the pairs and a percentile bootstrap over blocks (4000 resamples, fixed seed); a row \
         differs from the baseline only when that CI excludes 1. Server CPU per request = the \
         server's CPU time (all threads, from /proc; nginx's added when in front) over its 2xx in \
         the interval. Machine states: windows split by both stacks' total 2xx/s (two-means cut; \
         one state when the groups are < 10% apart), windows next to a switch left out of the \
         per-state figures. Absolute 2xx/s belong to this machine on this day; the ratios are the \
         result.\n"
    )?;
    for t in tables {
        table(out, t)?;
    }
    Ok(())
}

fn table(out: &mut String, t: &PairedTable) -> std::fmt::Result {
    writeln!(
        out,
        "## {} (paired against {})\n",
        t.title, t.baseline_label
    )?;
    writeln!(
        out,
        "| Configuration | 2xx/s ratio (95% CI) | CPU per request ratio (95% CI) | Decides? | Pairs (blocks) | 2xx/s row / baseline | CPU µs/request row / baseline | t CI | bootstrap CI |"
    )?;
    writeln!(out, "|---|---:|---:|---|---:|---:|---:|---:|---:|")?;
    for r in &t.rows {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} ({}) | {:.0} / {:.0} | {} / {} | {} | {} |",
            r.label,
            metric_text(r.rps.as_ref()),
            metric_text(r.cpu.as_ref()),
            verdict(r),
            r.pairs,
            r.blocks,
            r.row_rps_mean,
            r.base_rps_mean,
            opt(r.row_cpu_us_mean, 2),
            opt(r.base_cpu_us_mean, 2),
            r.rps.as_ref().map_or("n/a".into(), |m| range(&m.t)),
            r.rps
                .as_ref()
                .and_then(|m| m.bootstrap)
                .map_or("n/a".into(), |b| range(&b)),
        )?;
    }
    writeln!(out)?;
    writeln!(out, "### By machine state and slot order\n")?;
    writeln!(
        out,
        "| Configuration | State | Pairs | 2xx/s ratio (t 95% CI) | CPU per request ratio (t 95% CI) |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|")?;
    for r in &t.rows {
        if r.states.is_empty() {
            writeln!(
                out,
                "| {} | one state (steady) | {} | | |",
                r.label, r.pairs
            )?;
        }
        for s in &r.states {
            writeln!(
                out,
                "| {} | {:?} | {} | {} | {} |",
                r.label,
                s.state,
                s.pairs,
                s.rps.as_ref().map_or("n/a".into(), ci_text),
                s.cpu.as_ref().map_or("n/a".into(), ci_text),
            )?;
        }
        let switch = r
            .windows
            .iter()
            .filter(|(_, s)| *s == crate::paired::stats::State::Switch)
            .count();
        if switch > 0 {
            writeln!(
                out,
                "| {} | next to a switch (left out above) | {switch} | | |",
                r.label
            )?;
        }
        writeln!(
            out,
            "| {} | slot order AB / BA (2xx/s ratio) | | {} / {} | |",
            r.label,
            opt(r.rps_ab, 4),
            opt(r.rps_ba, 4)
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "![Per-pair 2xx/s ratio over time: {}]({})\n",
        t.title,
        paired_chart_name(t)
    )
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.digits$}"))
}

fn range(c: &RatioCi) -> String {
    format!("{:.4}–{:.4}", c.lo, c.hi)
}

fn ci_text(c: &RatioCi) -> String {
    format!("{:.4} ± {:.2}%", c.ratio, c.half_width_pct())
}

fn metric_text(m: Option<&Metric>) -> String {
    m.map_or("n/a".into(), |m| {
        format!("{:.4} ± {:.2}%", m.ratio, m.ci95_pct)
    })
}

/// Whether the RPS and CPU CIs exclude 1.
fn verdict(r: &PairedRow) -> String {
    let word = |m: Option<&Metric>| match m {
        None => "n/a",
        Some(m) if m.ci.contains_one() => "no difference resolved",
        Some(m) if m.ratio > 1.0 => "higher",
        Some(_) => "lower",
    };
    format!(
        "2xx/s {}; CPU/request {}",
        word(r.rps.as_ref()),
        word(r.cpu.as_ref())
    )
}
