//! Markdown for sweep tables: each row's max rate at the target with its
//! interval over the searches, its knee, and every step.

use std::fmt::Write;

use crate::sweep::report::{SweepRow, SweepTable};

/// Appends every sweep table (nothing when there are none).
pub fn sections(out: &mut String, tables: &[SweepTable]) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    preamble(out, tables)?;
    for t in tables {
        table(out, t)?;
    }
    Ok(())
}

/// What every sweep section rests on: how a sweep runs and what its
/// figures mean; votes and client spin where some row used them.
fn preamble(out: &mut String, tables: &[SweepTable]) -> std::fmt::Result {
    writeln!(
        out,
        "Sweeps: each row's stack started once, a closed-model probe for its saturation rate, then \
         open-model steps at rising rates (latency from each request's intended send time, so \
         coordinated omission is corrected), each after a settle time left out, until achieved \
         2xx/s fell below 95 % of the rate or the target's percentile passed 10 times its limit. \
         A step passes when the client was valid, it achieved at least 99 % of its rate with no \
         error or non-2xx, and the target's percentile is within the limit. A step is invalid \
         (it measured the client) when loadgen's own send lateness p99 (the steps tables' \
         \"Client lateness p99\": requests that fell due on an idle connection; one due while its connection waited for a response is late \
         because of the server, and that wait is in its latency; a saturated step has none) exceeds a fifth of the limit \
         (at least 200 µs) or loadgen was busier than 98 % of its threads. Max rate at the target: \
         each search bisects (geometric mean) between the sweep's last passing and first failing \
         rate and keeps its highest passing rate (a search rate where no valid step passed counts \
         as failing; see Votes when a rate has several steps); the \
         figure is their mean with a 95 % interval over the searches (Student's t; searches that \
         share a row's stack run minutes apart on it, so their interval is not a promise about a \
         rerun, see \"Interleaved searches\" where they did not; an interval narrower than a \
         search's resolution, the width of its last bracket, only says they agree to within it; \
         the table's resolution is the sweep's bracket after the search's halvings, and a \
         retried search that stepped past that bracket halved one of its own instead). \
         The bracket \
         ends at the first rate that fails, and starts at the last rate below it that passed; \
         invalid steps neither start nor end it. When no rate below the first failing one passed \
         (the lightest rate failed, or the lighter rates were invalid), no search runs and the table \
         says \"no rate passed below the first failing one\". When no valid step failed but some \
         were invalid, no search runs: the max rate is at least the highest passing rate, and \
         this client cannot say more. Knee (after the \"Kneedle\" rule of Satopää et al., 2011, without its normalisation and threshold): on the curve of p99 \
         against rate, both on log scales, over the rates valid for the target, the rate whose \
         p99 lies farthest below the chord from the lightest rate to the heaviest (the lightest \
         rate when none lies below it; validity depends on the target, so a row's knee can \
         differ between its lines). With several targets, the steps are shared (the sweep stops \
         when every target's stop rule holds), each target has its own searches, and a row has a \
         line per target. A search pinned at its bracket's top passed every rate it tried: it \
         answered its highest bisection point, and the bracket's failing end, decided in the \
         sweep, was not tried again (unless pinned searches were retried: see below); one \
         pinned at the bottom passed none and answered the bracket's low end. Where searches are pinned, their spread is the bracket's, not theirs, \
         and the max rate may lie outside the bracket (the Searches column counts them). A \
         search none of whose steps was valid for the target measured the client only: it is \
         left out of the max rate and of the ratio to the baseline (the Searches column says \
         how many).\n"
    )?;
    let votes = tables
        .iter()
        .flat_map(|t| &t.rows)
        .map(|r| r.votes)
        .max()
        .unwrap_or(1);
    if votes > 1 {
        writeln!(
            out,
            "Votes: a rate passes or fails by the strict majority of its valid steps, up to \
             {votes} steps at it (invalid steps take a place but no side, so one valid step that \
             passes beside two invalid ones is a pass; a steps table can list a rate more than \
             once). In the sweep, the first failing rate, any rate below it whose \
             valid steps disagree, and the last passing rate below it were measured again until \
             no later step could change their majority; each search step ran until the same held \
             at its rate. A rate without a majority neither starts nor ends a bracket, and in a \
             search counts as failing. The knee takes a rate's median p99 over its valid steps.\n"
        )?;
    }
    if tables.iter().flat_map(|t| &t.rows).any(|r| r.client_spins) {
        writeln!(
            out,
            "Client spin: loadgen woke early and polled without sleeping until each send was \
             due (`[sweep] client_spin`, loadgen `--spin-before`), so that an idle vCPU's wake-up \
             latency is not counted as the server's. It is then busy while it waits as well as \
             while it works (how much depends on the rate and on how long answers take; the steps \
             tables' \"loadgen busy\"), so its busy share bounds nothing here: its own send \
             lateness alone decides whether a step is valid.\n"
        )?;
    }
    Ok(())
}

/// One sweep table: its notes, its lines, charts and each row's steps.
fn table(out: &mut String, t: &SweepTable) -> std::fmt::Result {
    writeln!(out, "## {}\n", t.title)?;
    let against = t.rows.iter().find_map(|r| r.vs_baseline.as_ref());
    if t.rows.iter().any(|r| r.searches_interleaved) {
        writeln!(
            out,
            "Interleaved searches: after every row's sweep, each row's search R (one per target, \
             one after another) ran on a fresh stack, in rounds across the rows (search 1 of \
             every row, then search 2 in the reverse order, and so on), so a max rate's interval \
             is over independent processes spread over the run; it still leaves out a drift of \
             the machine between runs. Where both rows' searches were interleaved, the ratio to the baseline pairs \
             them round by round: exp(mean of the rounds' ln ratios), Student's t over the \
             rounds.\n"
        )?;
    }
    if t.rows.iter().any(|r| r.pinned_searches_retried) {
        writeln!(
            out,
            "Pinned searches retried: a search that passed every rate of its bisection then \
             tried the bracket's failing end on its own stack, and one that passed none the \
             bracket's passing end; where the verdict held, it went on past that end by the \
             sweep's factor (at most {} rates) until the verdict turned, and bisected between \
             the last two. Its answer is its highest passing rate wherever it tried it; a \
             search counted as pinned never saw the verdict turn.\n",
            crate::sweep::rules::MAX_EXTEND
        )?;
    }
    if let Some(a) = against.filter(|a| !a.paired) {
        writeln!(
            out,
            "Ratio: the row's max rate at the target over {}'s at the same target, with a 95 % \
             interval over both rows' searches (delta method, Student's t with the fewer \
             searches less one degrees of freedom). The rows ran minutes apart and so did \
             the searches, so it says how well this run's searches agree, not where a rerun \
             will land; shown only where both rows ran searches.\n",
            a.against
        )?;
    }
    writeln!(out, "| Configuration | Target | Closed-model 2xx/s | Max rate at target | 95% CI over searches | Ratio to the baseline (95% CI) | Resolution of a search | Searches | Knee |")?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---|---:|")?;
    for r in &t.rows {
        let max = max_rate_cell(r);
        let searches = searches_cell(r);
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            r.slo,
            r.closed_rps.map_or("-".into(), |v| format!("{v:.0}")),
            max,
            r.max_rate_ci95_pct
                .map_or("-".into(), |c| format!("± {c:.1}%")),
            ratio_cell(r, against.map(|a| a.against.as_str())),
            r.resolution_pct.map_or("-".into(), |c| format!("{c:.1}%")),
            searches,
            r.knee.map_or("-".into(), |k| format!("{k:.0}")),
        )?;
    }
    writeln!(out)?;
    to_reproduce(out, &t.rows)?;
    comparisons(out, t)?;
    if !t.rows.is_empty() {
        writeln!(
            out,
            "![Latency against load: {}]({})\n",
            t.title,
            super::sweep_chart_name(t)
        )?;
    }
    if t.rows.iter().any(|r| !r.searches.is_empty()) {
        writeln!(
            out,
            "![Max rate at each target: {}]({})\n",
            t.title,
            super::sweep_max_chart_name(t)
        )?;
    }
    // A row appears once per target, with the same steps: its steps
    // once, judged by each target.
    let mut done: Vec<&str> = Vec::new();
    for r in &t.rows {
        if done.contains(&r.row.as_str()) {
            continue;
        }
        done.push(&r.row);
        let mine: Vec<&SweepRow> = t.rows.iter().filter(|x| x.row == r.row).collect();
        writeln!(out, "### {}: steps\n", r.label)?;
        steps(out, &mine)?;
    }
    Ok(())
}

/// A line's max rate at its target, or why there is none.
fn max_rate_cell(r: &SweepRow) -> String {
    match (r.max_rate_at_slo, r.bracket) {
        (Some(m), Some("client")) => format!("at least {m:.0} (the client was the limit)"),
        (None, Some("client")) => "the client was the limit".into(),
        (Some(m), _) if r.client_in_search => {
            format!("{m:.0} (a search rate had invalid steps and no valid majority, and counted as failing: may be the client's limit)")
        }
        (Some(m), _) => format!("{m:.0}"),
        (None, Some("below")) => "no rate passed below the first failing one".into(),
        (None, _) => "above the heaviest step".into(),
    }
}

/// A line's searches, with how many were pinned or left out.
fn searches_cell(r: &SweepRow) -> String {
    let mut searches = r
        .searches
        .iter()
        .map(|s| format!("{s:.0}"))
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(pins) = pinned(r.pinned_top, r.pinned_bottom) {
        searches.push_str(&format!(" ({pins})"));
    }
    if !r.void_searches.is_empty() {
        let n = r.void_searches.len();
        searches.push_str(&format!(" ({n} left out: no valid step)"));
    }
    searches
}

/// How many searches each line would need for a rerun to land within
/// ±5 % of this run, from the spread of this run's searches.
fn to_reproduce(out: &mut String, rows: &[SweepRow]) -> std::fmt::Result {
    use crate::sweep::reruns::{search_cv, searches_to_reproduce, REPRODUCED_PCT};
    let lines: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let cv = search_cv(&r.searches)?;
            let n = searches_to_reproduce(cv);
            Some(format!("{} at {}: cv {cv:.3}, {n}", r.label, r.slo))
        })
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Searches for a rerun within ±{REPRODUCED_PCT} %: at least how many searches per row two \
         runs would need for their max rates to land within {REPRODUCED_PCT} % of each other with \
         95 % odds, 2·(1.96·cv / 0.05)² rounded up (at least 2), cv the SD / mean of this run's \
         searches. A lower bound for planning: it counts only the spread between searches, not \
         a drift of the machine between runs, and cv rests on this run's few searches (pinned \
         answers understate it): {}.{}\n",
        lines.join("; "),
        if rows
            .iter()
            .any(|r| !r.searches_interleaved && r.searches.len() >= 2)
        {
            " These searches shared their sweep's stack, and such searches agree with each other \
             better than with a rerun: here the figure understates."
        } else {
            ""
        }
    )
}

/// The steps of a row (the same in each of `targets`), with whether each
/// target judged a step valid and met.
fn steps(out: &mut String, targets: &[&SweepRow]) -> std::fmt::Result {
    let judged: String = targets.iter().map(|t| format!(" {} |", t.slo)).collect();
    writeln!(out, "| Rate | Achieved 2xx/s | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | Errors | Client lateness p99 µs | Send lateness p99 µs (all) | loadgen busy | Server CPU µs/2xx |{judged}")?;
    writeln!(
        out,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|{}",
        "---|".repeat(targets.len())
    )?;
    for (k, f) in targets[0].steps.iter().enumerate() {
        let s = &f.step;
        let verdicts: String = targets
            .iter()
            .map(|t| match t.steps.get(k) {
                Some(g) if !g.valid => " invalid (client) |",
                Some(g) if g.passes => " meets |",
                _ => " fails |",
            })
            .collect();
        writeln!(
            out,
            "| {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {} | {} |{verdicts}",
            s.rate,
            s.achieved,
            s.p50_us,
            s.p90_us,
            s.p99_us,
            s.p999_us,
            s.max_us,
            s.errors,
            s.client_lateness_p99_us,
            s.send_lateness_p99_us,
            s.loadgen_busy.map_or("-".into(), |b| format!("{:.0}%", b * 100.0)),
            s.server_cpu_us.map_or("-".into(), |c| format!("{c:.2}")),
        )?;
    }
    writeln!(out)
}

/// The comparisons at equal rates, when the table has any.
fn comparisons(out: &mut String, t: &SweepTable) -> std::fmt::Result {
    if t.comparisons.is_empty() {
        return Ok(());
    }
    writeln!(out, "### At equal rates\n")?;
    writeln!(
        out,
        "Each row and the baseline at the same open-model rate, a share of the baseline's max \
         rate at the target. A block runs both, each in fresh processes, in an order planned \
         before the first block (AB and BA balanced); a block counts when both of its steps were \
         valid, and a comparison with fewer than two such blocks shows n/a. Ratio = row / baseline, exp(mean of the blocks' ln ratios); 95 % CI: Student's t \
         over the blocks (blocks - 1 degrees of freedom). A ratio above 1 means the row's latency \
         (or CPU per request) is higher.\n"
    )?;
    writeln!(out, "| Configuration (against) | Rate (% of the baseline's max at target) | Blocks valid / planned | p99 ratio (95% CI) | p50 ratio | p99.9 ratio | 2xx/s ratio | CPU per request ratio | p99 µs row / baseline (medians) |")?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    for c in &t.comparisons {
        let ci = |r: &Option<crate::paired::stats::RatioCi>| {
            r.map_or("n/a".into(), |r| {
                format!("{:.3} ({:.3}-{:.3})", r.ratio, r.lo, r.hi)
            })
        };
        let us = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.0}"));
        writeln!(
            out,
            "| {} (against {}) | {:.0} ({}% of {:.0}{} at {}) | {} / {} | {} | {} | {} | {} | {} | {} / {} |",
            c.label,
            c.against_label,
            c.rate,
            c.pct,
            c.base_max_rate,
            if c.base_max_is_lower_bound {
                ", its highest passing step"
            } else {
                ""
            },
            c.target,
            c.blocks,
            c.blocks_planned,
            ci(&c.p99),
            ci(&c.p50),
            ci(&c.p999),
            ci(&c.achieved),
            ci(&c.cpu_per_request),
            us(c.row_p99_us),
            us(c.base_p99_us),
        )?;
    }
    writeln!(out)
}

/// A row's max rate over the baseline's: "baseline" on the baseline's own
/// lines, "-" where either is a bound.
fn ratio_cell(r: &crate::sweep::report::SweepRow, baseline: Option<&str>) -> String {
    if baseline == Some(r.row.as_str()) {
        return "baseline".into();
    }
    r.vs_baseline
        .as_ref()
        .map_or("-".into(), ToString::to_string)
}

/// "2 of 4 pinned at the bracket's top, 1 at its bottom", or none.
fn pinned(top: u32, bottom: u32) -> Option<String> {
    match (top, bottom) {
        (0, 0) => None,
        (t, 0) => Some(format!("{t} pinned at the bracket's top")),
        (0, b) => Some(format!("{b} pinned at the bracket's bottom")),
        (t, b) => Some(format!(
            "{t} pinned at the bracket's top, {b} at its bottom"
        )),
    }
}
