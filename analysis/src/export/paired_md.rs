//! Markdown for paired tables: one table per scenario file, a row per
//! comparison with both metrics, then per machine state and slot order.

use std::fmt::Write;

use super::paired_chart_name;
use crate::paired::report::{schedule_effect, Metric, PairedRow, PairedTable};
use crate::paired::stats::RatioCi;

/// Appends every paired table (nothing when there are none).
pub fn sections(out: &mut String, tables: &[PairedTable]) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Paired design: each row ran beside the baseline (both stacks up, same pinning), loaded at \
         once (duet) or taking turns within every interval (interleave), as each table says, in blocks with fresh processes whose slot order (which stack starts \
         first) alternates AB/BA at random; the number of blocks is fixed before a comparison \
         starts. A pair is one interval measured on both. Ratio = exp(mean over blocks of the \
         block's mean ln(row / baseline)). CI: Student's t over the block means (blocks - 1 \
         degrees of freedom): blocks, not intervals, are the independent unit, since neighbouring \
         intervals of a block are correlated. The interval over the pairs as if independent is \
         shown as a diagnostic only (it is too narrow). A row differs from the baseline only \
         when its 2xx/s CI excludes 1 (column \"CI excludes 1?\"); where a table has an A/A row, \
         its answer lines also require the ratio to lie farther from 1 than the A/A interval \
         reaches. A comparison repeated as several runs (`runs = N`: fresh \
         processes, a new slot order, apart in time) reports Student's t over the runs' log \
         ratios (runs - 1 degrees of freedom) on the larger of their spread and their own \
         within-run variance, with the within-run intervals beside it. An interval from one \
         run covers that run's blocks only: a rerun can land outside it (runs share minutes of \
         machine state; `shootout coverage` measures how often), so a figure that must hold on a \
         rerun comes from several runs. Server CPU per request = the server's CPU time (all \
         threads; nginx's added when in front) over its 2xx in the interval; with a server \
         CPU-bound on its core (in a duet the scheduler splits the core evenly), CPU per request \
         is about the inverse of 2xx/s: it is not a second, independent test. Machine states: \
         windows split by both stacks' total 2xx/s (two-means cut; one state when the groups are \
         < 10% apart), windows next to a switch left out of the per-state figures (pairs as if \
         independent: diagnostic). Absolute 2xx/s belong to this machine on this day; the ratios \
         are the result.\n"
    )?;
    for t in tables {
        table(out, t)?;
    }
    Ok(())
}

/// A row's label, with the row it was compared with when not the baseline.
fn row_label(r: &PairedRow) -> String {
    match &r.against_label {
        Some(a) => format!("{} (against {a})", r.label),
        None => r.label.clone(),
    }
}

fn table(out: &mut String, t: &PairedTable) -> std::fmt::Result {
    writeln!(
        out,
        "## {} (paired against {})\n",
        t.title, t.baseline_label
    )?;
    if let Some(effect) = schedule_effect(&t.schedule) {
        writeln!(out, "Schedule {effect}.\n")?;
    }
    if !t.answers.is_empty() {
        writeln!(
            out,
            "What this run decides (2xx/s ratio with its 95 % interval; a difference decides \
             when its interval excludes 1 and its ratio lies farther from 1 than the A/A's interval reaches):\n\n```text"
        )?;
        for line in crate::paired::answer::lines(&t.answers) {
            writeln!(out, "{line}")?;
        }
        writeln!(out, "```\n")?;
    }
    writeln!(
        out,
        "| Configuration | 2xx/s ratio (95% CI: over runs when repeated, else over blocks) | CPU per request ratio (95% CI, the same rule) | CI excludes 1? | Pairs (blocks) | 2xx/s row / baseline | CPU µs/request row / baseline | 2xx/s CI over pairs (diagnostic) |"
    )?;
    writeln!(out, "|---|---:|---:|---|---:|---:|---:|---:|")?;
    for r in &t.rows {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} ({}) | {:.0} / {:.0} | {} / {} | {} |",
            row_label(r),
            rps_text(r),
            cpu_text(r),
            verdict(r),
            r.pairs,
            r.blocks,
            r.row_rps_mean,
            r.base_rps_mean,
            opt(r.row_cpu_us_mean, 2),
            opt(r.base_cpu_us_mean, 2),
            r.rps.as_ref().map_or("n/a".into(), |m| range(&m.pairs_t)),
        )?;
    }
    writeln!(out)?;
    slow_clients(out, t)?;
    writeln!(out, "### By machine state and slot order\n")?;
    writeln!(
        out,
        "| Configuration | State | Pairs | 2xx/s ratio (t over pairs, diagnostic) | CPU per request ratio (t over pairs, diagnostic) |"
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

/// What the slow clients of `slow_clients` rows met, when the table has any.
fn slow_clients(out: &mut String, t: &PairedTable) -> std::fmt::Result {
    let rows: Vec<_> = t
        .rows
        .iter()
        .filter_map(|r| Some((r, r.slow.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "### Slow clients\n")?;
    writeln!(
        out,
        "Beside the row's load, loadgen `--slowloris` kept this many connections open, each \
         sending its request head a byte at a time and never finishing it; a connection the \
         server ended was opened again. Lifetimes are those of the connections the server \
         ended within a block's slow-client run (from the start lead before the row's load, \
         0.5 s on a local host and 2 s on a remote one, through its settle and measured \
         time): one still open at its end is not among them, so where a block ended fewer than it kept open, the upper \
         percentiles are understated. loadgen reports percentiles per block; the table gives \
         the median of the blocks' medians, and the lowest p10 and highest p90 of any block.\n"
    )?;
    writeln!(
        out,
        "| Configuration | Slow clients (a byte every) | Ended by the server per block | What it sent first | Lifetime of an ended one: median of blocks (lowest p10 - highest p90) | Open at the end (mean) | Failed connects |"
    )?;
    writeln!(out, "|---|---:|---:|---|---:|---:|---:|")?;
    for (r, s) in rows {
        let sent: Vec<String> = s
            .answered
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let secs =
            |ms: Option<u64>| ms.map_or("n/a".into(), |v| format!("{:.1} s", v as f64 / 1e3));
        writeln!(
            out,
            "| {} | {} ({:.0} ms) | {:.0} | {} | {} ({}-{}) | {:.0} | {} |",
            r.label,
            s.connections,
            s.every_ms,
            s.ended_per_block,
            if sent.is_empty() {
                "-".into()
            } else {
                sent.join(", ")
            },
            secs(s.lifetime_p50_ms),
            secs(s.lifetime_p10_ms),
            secs(s.lifetime_p90_ms),
            s.open_at_end,
            s.connect_errors,
        )?;
    }
    writeln!(out)
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

/// The 2xx/s column: over blocks, or for a repeated comparison over runs
/// with the within-run intervals beside it.
fn rps_text(r: &PairedRow) -> String {
    let Some(across) = r.across_runs else {
        return metric_text(r.rps.as_ref());
    };
    let within: Vec<f64> = r
        .runs
        .iter()
        .filter_map(|x| x.rps.map(|m| m.ci95_pct))
        .collect();
    let (lo, hi) = within
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    format!(
        "{:.4} ± {:.2}% across {} runs (within a run ± {lo:.2}–{hi:.2}%)",
        across.ratio,
        across.half_width_pct(),
        r.runs.len()
    )
}

/// The CPU column: over blocks, or for a repeated comparison over runs by
/// the 2xx/s column's rule.
fn cpu_text(r: &PairedRow) -> String {
    match r.cpu_across_runs {
        Some(c) => format!(
            "{:.4} ± {:.2}% across {} runs",
            c.ratio,
            c.half_width_pct(),
            r.runs.len()
        ),
        None => metric_text(r.cpu.as_ref()),
    }
}

/// Whether the reported 2xx/s CI (over runs when repeated, else over
/// blocks) excludes 1 (CPU per request is not a second test: see the
/// section's note).
fn verdict(r: &PairedRow) -> String {
    let ci = r.across_runs.or(r.rps.map(|m| m.ci));
    let word = match ci {
        None => "n/a",
        Some(c) if c.contains_one() => "no difference resolved",
        Some(c) if c.ratio > 1.0 => "higher",
        Some(_) => "lower",
    };
    format!("2xx/s {word}")
}
