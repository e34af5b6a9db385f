use std::fmt::Write;

use super::{ci_chart_name, time_chart_name, Exporter};
use crate::latency::RowLatency;
use crate::report::{Report, RowReport, TableReport};

/// `README.md`: one table per scenario file in the original study's form
/// (Configuration | RPS | Standard Deviation), the extra columns after it,
/// and the charts.
pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn serialize(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        let mut out = String::new();
        writeln!(out, "# Results\n")?;
        if !report.tables.is_empty() {
            writeln!(
            out,
            "RPS per interval is its 2xx count over its measured length (the original study's rule); \
             each table shows the mean and the sample standard deviation (n - 1) of the interval RPS \
             of every repetition pooled. The 95% CI of the mean comes from the repetition means \
             (Student's t) when a row has two or more, else from its intervals. Warm-up left out: intervals loadgen marked as warm-up, or the \
             first {} intervals of logs that mark none. Ratio is the row's mean over the baseline's, \
             with the 95% confidence interval from the repetition means (delta method, Student's t \
             with the fewer repetitions less one degree of freedom); p is Welch's t-test of the row's repetition means against the baseline's (n/a with fewer \
             than two repetitions on either side: the intervals of one run are not independent).\n",
            report.skip
        )?;
        }
        for table in &report.tables {
            table_section(&mut out, table)?;
        }
        super::paired_md::sections(&mut out, &report.paired)?;
        super::memory_md::sections(&mut out, &report.memory)?;
        super::sweep_md::sections(&mut out, &report.sweeps)?;
        super::sinks_md::sections(&mut out, &report.sinks)?;
        Ok(out.into_bytes())
    }
}

fn table_section(out: &mut String, table: &TableReport) -> std::fmt::Result {
    writeln!(out, "## {}\n", table.title)?;
    writeln!(
        out,
        "| Configuration | RPS | Standard Deviation | Median | Min | Max | 95% CI of mean | CV | Repetitions | Ratio to baseline | p (Welch) | p50 latency | p99 latency | p99.9 latency | Errors / non-2xx | Availability |"
    )?;
    writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    for row in &table.rows {
        row_line(out, row, row.name == table.baseline)?;
    }
    writeln!(out)?;
    let approximate: Vec<&str> = table
        .rows
        .iter()
        .filter(|r| r.latency_us.as_ref().is_some_and(|l| !l.exact))
        .map(|r| r.name.as_str())
        .collect();
    if approximate.is_empty() {
        writeln!(
            out,
            "Latency: percentiles of the merged HdrHistograms of every shard and repetition.\n"
        )?;
    } else {
        writeln!(
            out,
            "Latency: percentiles of the merged HdrHistograms of every shard and repetition, except rows marked ≈ ({}): their logs carry no histogram, so those figures are means of per-log percentiles, an approximation.\n",
            approximate.join(", ")
        )?;
    }
    if table.rows.iter().any(|r| r.original.is_some()) {
        compared_section(out, table)?;
    }
    writeln!(
        out,
        "![RPS over time: {}]({})\n",
        table.title,
        time_chart_name(table)
    )?;
    writeln!(
        out,
        "![Mean RPS with 95% CI: {}]({})\n",
        table.title,
        ci_chart_name(table)
    )?;
    Ok(())
}

fn row_line(out: &mut String, row: &RowReport, baseline: bool) -> std::fmt::Result {
    let r = &row.rps;
    let ratio = ratio_text(row, baseline);
    let p = match (&row.welch, baseline) {
        (_, true) => "".to_string(),
        (Some(w), false) if w.p < 0.001 => "< 0.001".to_string(),
        (Some(w), false) => format!("{:.3}", w.p),
        (None, false) => "n/a".to_string(),
    };
    let reps = if row.repetition_means.len() > 1 {
        let lo = row
            .repetition_means
            .iter()
            .cloned()
            .fold(f64::INFINITY, f64::min);
        let hi = row
            .repetition_means
            .iter()
            .cloned()
            .fold(f64::NEG_INFINITY, f64::max);
        format!(
            "{} (means {}–{})",
            row.repetitions,
            thousands(lo),
            thousands(hi)
        )
    } else {
        row.repetitions.to_string()
    };
    let label = if row.shards > 1 {
        format!("{} ({} shards)", row.label, row.shards)
    } else {
        row.label.clone()
    };
    writeln!(
        out,
        "| {label} | {} | {} | {} | {} | {} | ± {} | {} | {reps} | {ratio} | {p} | {} | {} | {} | {} | {} |",
        thousands(r.mean),
        thousands(r.sd),
        thousands(r.median),
        thousands(r.min),
        thousands(r.max),
        thousands(r.ci95),
        pct(r.cv * 100.0),
        latency(row, |l| Some(l.p50)),
        latency(row, |l| Some(l.p99)),
        latency(row, |l| l.p99_9),
        row.errors.zip(row.non_2xx).map_or("n/a".into(), |(e, n)| format!("{e} / {n}")),
        row.availability_pct.map_or("n/a".into(), |a| format!("{a:.3}%")),
    )
}

/// Our rows beside the published ones: both ratios to their baselines and
/// whether the published ratio lies inside our ratio's 95% CI.
fn compared_section(out: &mut String, table: &TableReport) -> std::fmt::Result {
    writeln!(out, "### Against the original study\n")?;
    writeln!(
        out,
        "| Configuration | RPS | Original RPS | Original ratio | Our ratio (95% CI) | Difference | Original inside our CI? |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---|")?;
    for row in &table.rows {
        let baseline = row.name == table.baseline;
        let (orig, orig_ratio, diff, verdict) = match &row.original {
            None => (
                "n/a".into(),
                "n/a".into(),
                "".into(),
                "no published figure".into(),
            ),
            Some(o) => (
                match o.sd {
                    Some(sd) => format!("{} (sd {})", thousands(o.rps), thousands(sd)),
                    None => thousands(o.rps),
                },
                o.ratio.map_or("n/a".into(), |r| format!("{r:.3}")),
                o.ratio_difference
                    .filter(|_| !baseline)
                    .map_or(String::new(), |d| format!("{d:+.3}")),
                match (baseline, o.within_ci) {
                    (true, _) => "baseline".to_string(),
                    (false, Some(true)) => "yes".into(),
                    (false, Some(false)) => "**no**".into(),
                    (false, None) => "n/a".into(),
                },
            ),
        };
        writeln!(
            out,
            "| {} | {} | {orig} | {orig_ratio} | {} | {diff} | {verdict} |",
            row.label,
            thousands(row.rps.mean),
            ratio_text(row, baseline),
        )?;
    }
    writeln!(out)
}

/// "1.000 (baseline)", "0.512 ± 0.020", or "0.512" without a CI.
fn ratio_text(row: &RowReport, baseline: bool) -> String {
    if baseline {
        return "1.000 (baseline)".into();
    }
    match row.ratio_ci95 {
        Some(ci) if ci.is_finite() => format!("{:.3} ± {ci:.3}", row.ratio),
        _ => format!("{:.3}", row.ratio),
    }
}

/// 43904.4 -> "43,904"; NaN -> "n/a".
fn thousands(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let n = x.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1}%")
    } else {
        "n/a".into()
    }
}

/// One latency figure, `≈` in front when the row's is approximate.
fn latency(row: &RowReport, pick: impl Fn(&RowLatency) -> Option<f64>) -> String {
    match row
        .latency_us
        .as_ref()
        .and_then(|l| Some((pick(l)?, l.exact)))
    {
        Some((v, true)) => format!("{v:.0} µs"),
        Some((v, false)) => format!("≈{v:.0} µs"),
        None => "n/a".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(43_904.4), "43,904");
        assert_eq!(thousands(999.5), "1,000");
        assert_eq!(thousands(7.0), "7");
        assert_eq!(thousands(-1234.0), "-1,234");
        assert_eq!(thousands(f64::NAN), "n/a");
    }
}
