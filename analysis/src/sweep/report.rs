//! A sweep table's figures, recomputed from its raw files: every row's
//! `ROW.sweep.json` (the runner's index: the rate each step asked for and
//! the CPU it sampled) and the loadgen logs it names.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::rules::{self, Bracket, Rules, Step};
use crate::input::Problem;

/// A sweep table (summary.json `sweeps` holds its rows).
#[derive(Debug, Clone, Serialize)]
pub struct SweepTable {
    pub name: String,
    pub title: String,
    pub rows: Vec<SweepRow>,
    /// Comparisons at equal rates (`compare_at`), a row and rate each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<super::compare::Comparison>,
}

/// One row's sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub row: String,
    pub label: String,
    pub slo: String,
    /// The closed-model probe's 2xx/s.
    pub closed_rps: Option<f64>,
    /// The sweep's steps, in increasing rate.
    pub steps: Vec<StepFigures>,
    /// Each search's highest passing rate.
    pub searches: Vec<f64>,
    pub max_rate_at_slo: Option<f64>,
    pub max_rate_ci95_pct: Option<f64>,
    /// What one search resolves: the width of its last bracket, percent
    /// (an interval over searches narrower than this says they agree to
    /// within the method's resolution, not better).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution_pct: Option<f64>,
    /// Some search rate had no valid majority and an invalid step (it
    /// counted as failing): the max rate may be the client's limit rather
    /// than the server's. With one vote: some search step was invalid.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub client_in_search: bool,
    /// Searches that passed every rate they tried: each answered its
    /// highest rate without a failing one above it on its own stack (with
    /// `pinned_searches_retried`, not even past the bracket), so the max
    /// rate may be higher and their spread is the bracket's, not theirs.
    #[serde(skip_serializing_if = "is_zero")]
    pub pinned_top: u32,
    /// Searches that passed no rate they tried: each answered the
    /// bracket's low end, a rate that passed in the sweep, not in them.
    #[serde(skip_serializing_if = "is_zero")]
    pub pinned_bottom: u32,
    /// The rounds (from 1) of searches left out of the max rate and the
    /// ratio: none of their steps was valid for the target (the client
    /// could not drive any rate they tried).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub void_searches: Vec<u32>,
    /// Why no search ran: `"below"` (the lightest step already failed),
    /// `"above"` (no step failed) or `"client"` (the first step that did
    /// not pass was invalid; the max rate is then a lower bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bracket: Option<&'static str>,
    pub knee: Option<f64>,
    /// Search steps (bisection), for the record.
    pub search_steps: Vec<StepFigures>,
    /// Most steps a rate took to be decided by their majority (absent:
    /// one, a rate was its step).
    #[serde(skip_serializing_if = "is_one")]
    pub votes: u32,
    /// loadgen spun before each send (`[sweep] client_spin`), so its busy
    /// share bounded nothing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub client_spins: bool,
    /// Each search ran on a fresh stack, in rounds across the rows
    /// (`[sweep] interleave`): search R of every row ran in round R.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub searches_interleaved: bool,
    /// A search pinned at an end of its bracket tried that end again on
    /// its own stack and rates past it until the verdict turned; pinned
    /// counts then name searches that never saw it turn.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pinned_searches_retried: bool,
    /// This row's max rate over the baseline row's at the same target,
    /// when both ran searches (absent for the baseline itself, and where
    /// either max rate is only a bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<MaxRateRatio>,
}

/// A max rate at a target over the baseline row's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxRateRatio {
    pub against: String,
    pub ratio: f64,
    /// 95 % interval. Searches on one stack (the default): over both
    /// rows' searches (delta method, `stats::ratio_ci95`); they ran
    /// minutes apart on one process, so this says how well the run's
    /// searches agree, not where a rerun will land (`shootout reruns`
    /// tests that). Interleaved searches (`paired`): the ratio is
    /// exp(mean of the rounds' ln ratios), with Student's t over the
    /// rounds. None with fewer than two searches (rounds) on either side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
    /// Paired by round (both rows' searches interleaved, as many each).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paired: bool,
}

impl std::fmt::Display for MaxRateRatio {
    /// "0.751 (0.654-0.862)", or the ratio alone without an interval.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.ci95 {
            Some([lo, hi]) => write!(f, "{:.3} ({lo:.3}-{hi:.3})", self.ratio),
            None => write!(f, "{:.3}", self.ratio),
        }
    }
}

/// Sets each row's [`MaxRateRatio`] against `baseline`'s line at the same
/// target.
pub fn against_baseline(rows: &mut [SweepRow], baseline: &str) {
    let bases: Vec<SweepRow> = rows.iter().filter(|r| r.row == baseline).cloned().collect();
    for r in rows.iter_mut().filter(|r| r.row != baseline) {
        let Some(b) = bases.iter().find(|b| b.slo == r.slo) else {
            continue;
        };
        let (Some(m), Some(bm)) = (r.max_rate_at_slo, b.max_rate_at_slo) else {
            continue;
        };
        if r.searches.is_empty() || b.searches.is_empty() {
            continue;
        }
        let paired = r.searches_interleaved
            && b.searches_interleaved
            && r.searches.len() + r.void_searches.len() == b.searches.len() + b.void_searches.len();
        // Rounds where either side's search was left out drop from the pairs.
        let base = by_round(b);
        let logs: Vec<f64> = by_round(r)
            .iter()
            .filter_map(|(k, x)| {
                let (_, y) = base.iter().find(|(j, _)| j == k)?;
                Some((x / y).ln())
            })
            .collect();
        r.vs_baseline = Some(if paired {
            let Some(d) = crate::stats::describe(&logs) else {
                continue;
            };
            MaxRateRatio {
                against: baseline.to_owned(),
                ratio: d.mean.exp(),
                ci95: (d.n >= 2).then(|| [(d.mean - d.ci95).exp(), (d.mean + d.ci95).exp()]),
                paired: true,
            }
        } else {
            let ratio = m / bm;
            MaxRateRatio {
                against: baseline.to_owned(),
                ratio,
                ci95: crate::stats::ratio_ci95(&r.searches, &b.searches)
                    .map(|h| [ratio - h, ratio + h]),
                paired: false,
            }
        });
    }
}

/// A line's counted searches with their rounds (from 1): the rounds of its
/// left-out searches skipped.
fn by_round(r: &SweepRow) -> Vec<(u32, f64)> {
    (1..)
        .filter(|k| !r.void_searches.contains(k))
        .zip(r.searches.iter().copied())
        .collect()
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One step as summary.json gives it: its figures, and how the rules
/// judged them.
#[derive(Debug, Clone, Serialize)]
pub struct StepFigures {
    #[serde(flatten)]
    pub step: Step,
    /// The client kept its schedule and had CPU to spare.
    pub valid: bool,
    pub passes: bool,
}

#[derive(Debug, Deserialize)]
struct Index {
    row: String,
    label: String,
    /// Each target and its bounds; search phases `search-T-R` name the
    /// target by its place here (from 1).
    targets: Vec<Rules>,
    /// Most steps a rate may take to be decided by majority (runs before
    /// votes existed: one).
    #[serde(default = "one")]
    votes: u32,
    /// Each search ran on a fresh stack, in rounds across the rows.
    #[serde(default)]
    searches_interleaved: bool,
    /// A search pinned at an end of its bracket tried that end again on
    /// its stack and went past it (runs before 2026-11-26: no).
    #[serde(default)]
    pinned_searches_retried: bool,
    steps: Vec<Entry>,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
struct Entry {
    phase: String,
    log: String,
    rate: Option<f64>,
    loadgen_busy: Option<f64>,
    server_cpu_s: Option<f64>,
}

/// The sweep table in `dir`, each row's max rate set against `baseline`'s
/// when one is named; rows that cannot be read become problems.
pub fn build(
    name: &str,
    dir: &Path,
    title: &str,
    baseline: Option<&str>,
    problems: &mut Vec<Problem>,
) -> SweepTable {
    let files = super::files_ending(dir, ".sweep.json");
    let mut rows = Vec::new();
    for f in files {
        match row(dir, &f) {
            Ok(r) => rows.extend(r),
            Err(e) => problems.push(Problem(format!("{}: {e:#}", f.display()))),
        }
    }
    if let Some(b) = baseline {
        against_baseline(&mut rows, b);
    }
    let comparisons = super::compare::build(dir).unwrap_or_else(|e| {
        problems.push(Problem(format!("{}: comparisons: {e:#}", dir.display())));
        Vec::new()
    });
    SweepTable {
        name: name.into(),
        title: title.into(),
        rows,
        comparisons,
    }
}

/// A row's figures for each of its targets, from its `ROW.sweep.json`.
pub fn row(dir: &Path, index: &Path) -> anyhow::Result<Vec<SweepRow>> {
    let ix: Index = serde_json::from_slice(&crate::input::raw::read(index)?)?;
    let mut closed_rps = None;
    let mut steps = Vec::new();
    let mut search: Vec<(String, Step)> = Vec::new();
    for e in &ix.steps {
        let log = dir.join(&e.log);
        match e.rate {
            None => closed_rps = crate::sweep::closed_rps(&log)?,
            Some(rate) => {
                let s = super::step_of(&log, rate, e.loadgen_busy, e.server_cpu_s)?;
                if e.phase == "sweep" {
                    // Vote steps ran after the sweep: in rate order, a
                    // rate's steps in the order they ran.
                    steps.push(s);
                } else {
                    search.push((e.phase.clone(), s));
                }
            }
        }
    }
    steps.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    Ok(ix
        .targets
        .iter()
        .enumerate()
        .map(|(t, rules)| {
            let prefix = format!("search-{}-", t + 1);
            let mine: Vec<(String, Step)> = search
                .iter()
                .filter(|(p, _)| p.starts_with(&prefix))
                .cloned()
                .collect();
            target_row(&ix, rules, closed_rps, &steps, &mine)
        })
        .collect())
}

/// One target's figures: its bracket among the steps, its searches, the
/// max rate and the knee.
fn target_row(
    ix: &Index,
    rules: &Rules,
    closed_rps: Option<f64>,
    steps: &[Step],
    search: &[(String, Step)],
) -> SweepRow {
    let bracket = rules.bracket(steps);
    let Answers {
        searches,
        void_searches,
        pinned_top,
        pinned_bottom,
        rounds,
        client_in_search,
    } = answers(rules, bracket, search);
    // What one search can resolve: its final bracket's width after its
    // rounds (each halves the log width), in percent.
    let resolution_pct = match bracket {
        Bracket::Between(low, high) if rounds > 0 => {
            Some(((high / low).powf(0.5f64.powi(rounds as i32)) - 1.0) * 100.0)
        }
        _ => None,
    };
    let (max_rate_at_slo, max_rate_ci95_pct) = match (rules::max_rate(&searches), bracket) {
        (Some((m, ci)), _) => (Some(m), ci),
        (None, Bracket::Between(low, _) | Bracket::Client(Some(low))) => (Some(low), None),
        (None, _) => (None, None),
    };
    let figures = |s: &Step| StepFigures {
        step: s.clone(),
        valid: rules.valid(s),
        passes: rules.passes(s),
    };
    SweepRow {
        row: ix.row.clone(),
        label: ix.label.clone(),
        slo: rules.slo.to_string(),
        closed_rps,
        resolution_pct,
        client_in_search,
        pinned_top,
        pinned_bottom,
        void_searches,
        knee: rules::knee(steps, rules),
        steps: steps.iter().map(figures).collect(),
        searches,
        max_rate_at_slo,
        max_rate_ci95_pct,
        bracket: bracket.limit(),
        search_steps: search.iter().map(|(_, s)| figures(s)).collect(),
        votes: ix.votes,
        client_spins: rules.max_loadgen_busy.is_none(),
        searches_interleaved: ix.searches_interleaved,
        pinned_searches_retried: ix.pinned_searches_retried,
        vs_baseline: None,
    }
}

/// What a line's searches answered.
struct Answers {
    /// Each counted search's answer, in round order.
    searches: Vec<f64>,
    /// The rounds (from 1) of searches left out: none of their steps was
    /// valid for the target, so they measured the client only.
    void_searches: Vec<u32>,
    pinned_top: u32,
    pinned_bottom: u32,
    /// Most rates a search tried.
    rounds: usize,
    client_in_search: bool,
}

/// Each search's answer: its highest passing rate (by the majority of the
/// valid steps at it, wherever it tried it: an interleaved search pinned
/// at an end of its bracket tries rates at and past that end), or the
/// bracket's low end when none passed. A search
/// rate without a passing majority of valid steps counts as a failure (the
/// answer is then a lower bound). A search with no valid step at all is
/// left out: its answer would be the bracket's low end, untested.
fn answers(rules: &Rules, bracket: Bracket, search: &[(String, Step)]) -> Answers {
    let mut out = Answers {
        searches: Vec::new(),
        void_searches: Vec::new(),
        pinned_top: 0,
        pinned_bottom: 0,
        rounds: 0,
        client_in_search: false,
    };
    let mut phases: Vec<&String> = search.iter().map(|(p, _)| p).collect();
    phases.dedup();
    for (i, p) in phases.iter().enumerate() {
        let mine: Vec<Step> = search
            .iter()
            .filter(|(q, _)| q == *p)
            .map(|(_, s)| s.clone())
            .collect();
        let points = super::points(&mine);
        // Bisection rounds: the rates inside the sweep's bracket (a pinned
        // interleaved search also tries rates at and past its ends).
        if let Bracket::Between(low, high) = bracket {
            let inside = points.iter().filter(|(r, _)| *r > low && *r < high);
            out.rounds = out.rounds.max(inside.count());
        }
        // A search rate without a valid majority (the client could not
        // drive it) counts as failing, so the search may have stopped
        // short of the server's limit.
        out.client_in_search |= points.iter().any(|(_, at)| {
            rules.verdict(at) == super::Verdict::Neither && at.iter().any(|s| !rules.valid(s))
        });
        let Bracket::Between(low, _) = bracket else {
            continue;
        };
        if !mine.iter().any(|s| rules.valid(s)) {
            let round = p.rsplit('-').next().and_then(|r| r.parse().ok());
            out.void_searches.push(round.unwrap_or(i as u32 + 1));
            continue;
        }
        let passing: Vec<f64> = points
            .iter()
            .filter(|(_, at)| rules.verdict(at) == super::Verdict::Pass)
            .map(|(rate, _)| *rate)
            .collect();
        match passing.len() {
            0 => out.pinned_bottom += 1,
            n if n == points.len() => out.pinned_top += 1,
            _ => {}
        }
        // A search that stepped below the bracket found its passing rate
        // there.
        out.searches
            .push(passing.into_iter().reduce(f64::max).unwrap_or(low));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(row: &str, slo: &str, searches: &[f64]) -> SweepRow {
        let max = rules::max_rate(searches);
        SweepRow {
            row: row.into(),
            label: row.into(),
            slo: slo.into(),
            closed_rps: None,
            steps: Vec::new(),
            searches: searches.to_vec(),
            max_rate_at_slo: max.map(|m| m.0).or(Some(40.0)),
            max_rate_ci95_pct: max.and_then(|m| m.1),
            resolution_pct: None,
            client_in_search: false,
            pinned_top: 0,
            pinned_bottom: 0,
            void_searches: Vec::new(),
            bracket: None,
            knee: None,
            search_steps: Vec::new(),
            votes: 1,
            client_spins: false,
            searches_interleaved: false,
            pinned_searches_retried: false,
            vs_baseline: None,
        }
    }

    #[test]
    fn searches_that_pass_every_rate_or_none_are_pinned() {
        use crate::sweep::rules::tests::step;
        let rules = Rules::for_slo("p99 <= 1ms".parse().unwrap());
        let ix = Index {
            row: "r".into(),
            label: "r".into(),
            targets: vec![rules],
            votes: 1,
            searches_interleaved: true,
            pinned_searches_retried: false,
            steps: Vec::new(),
        };
        // The sweep: 100 and 200 pass, 400 fails; the bracket is 200-400.
        let steps = [
            step(100.0, 100.0, 300.0),
            step(200.0, 200.0, 400.0),
            step(400.0, 400.0, 5000.0),
        ];
        let search = |r: u32, p99s: [f64; 3]| -> Vec<(String, Step)> {
            [283.0, 336.0, 366.0]
                .into_iter()
                .zip(p99s)
                .map(|(rate, p99)| (format!("search-1-{r}"), step(rate, rate, p99)))
                .collect()
        };
        let mut all = search(1, [500.0, 600.0, 700.0]); // every rate passes
        all.extend(search(2, [500.0, 600.0, 5000.0])); // one fails
        all.extend(search(3, [5000.0, 5000.0, 5000.0])); // none passes
        all.extend(search(4, [500.0, 700.0, 900.0])); // every rate passes
                                                      // Search 5: every step invalid (the client was late): left out.
        all.extend(
            search(5, [500.0, 500.0, 500.0])
                .into_iter()
                .map(|(p, mut s)| {
                    s.client_lateness_p99_us = 5_000.0;
                    (p, s)
                }),
        );
        let row = target_row(&ix, &rules, None, &steps, &all);
        assert_eq!(row.searches, [366.0, 336.0, 200.0, 366.0]);
        assert_eq!((row.pinned_top, row.pinned_bottom), (2, 1));
        assert_eq!(row.void_searches, [5]);
        let json = serde_json::to_string(&row).unwrap();
        assert!(
            json.contains("\"pinned_top\":2,\"pinned_bottom\":1"),
            "{json}"
        );
        // Pinned searches that stepped out of the bracket on their stack:
        // up (400 passes, 600 fails, 490 passes) and down (200 fails, 133
        // passes): answered there, not pinned, rounds still three.
        let mut out = search(1, [500.0, 600.0, 700.0]);
        for (rate, p99) in [(400.0, 800.0), (600.0, 5000.0), (490.0, 900.0)] {
            out.push(("search-1-1".into(), step(rate, rate, p99)));
        }
        out.extend(search(2, [5000.0, 5000.0, 5000.0]));
        for (rate, p99) in [(200.0, 5000.0), (133.0, 500.0)] {
            out.push(("search-1-2".into(), step(rate, rate, p99)));
        }
        let row = target_row(&ix, &rules, None, &steps, &out);
        assert_eq!(row.searches, [490.0, 133.0]);
        assert_eq!((row.pinned_top, row.pinned_bottom), (0, 0));
        assert_eq!(row.resolution_pct.map(|r| r.round()), Some(9.0));
        // None pinned: neither is written.
        let row = target_row(
            &ix,
            &rules,
            None,
            &steps,
            &search(2, [500.0, 600.0, 5000.0]),
        );
        assert_eq!((row.pinned_top, row.pinned_bottom), (0, 0));
        assert!(!serde_json::to_string(&row).unwrap().contains("pinned"));
    }

    #[test]
    fn max_rates_are_set_against_the_baselines_at_the_same_target() {
        let mut rows = vec![
            line("base", "p99 <= 1ms", &[45.0, 50.0, 55.0]),
            line("base", "p99.9 <= 10ms", &[100.0, 100.0]),
            line("row", "p99 <= 1ms", &[90.0, 100.0, 110.0]),
            line("row", "p99.9 <= 10ms", &[150.0]),
            // No search ran: its max rate (40) is only a bound.
            line("other", "p99 <= 1ms", &[]),
        ];
        against_baseline(&mut rows, "base");
        assert_eq!(rows[0].vs_baseline, None);
        // 100 / 50 = 2. Each side's relative standard error is
        // (5 or 10) / sqrt(3) / (50 or 100) = 0.0577; together
        // sqrt(2) x 0.0577 = 0.08165; t(0.975, 2) = 4.3027, so the
        // half-width is 4.3027 x 2 x 0.08165 = 0.7026.
        let v = rows[2].vs_baseline.as_ref().unwrap();
        assert_eq!((v.against.as_str(), v.ratio), ("base", 2.0));
        let [lo, hi] = v.ci95.unwrap();
        assert!(
            (lo - 1.2974).abs() < 1e-3 && (hi - 2.7026).abs() < 1e-3,
            "{lo} {hi}"
        );
        // One search on a side: the ratio, no interval.
        let v = rows[3].vs_baseline.as_ref().unwrap();
        assert_eq!((v.ratio, v.ci95), (1.5, None));
        assert_eq!(rows[4].vs_baseline, None);
    }

    #[test]
    fn rounds_with_a_left_out_search_drop_from_the_pairs() {
        let mut base = line("a", "p99 <= 1ms", &[100.0, 200.0, 100.0]);
        base.void_searches = vec![2]; // rounds 1, 3, 4 counted
        let mut row = line("b", "p99 <= 1ms", &[50.0, 60.0, 100.0]);
        row.void_searches = vec![3]; // rounds 1, 2, 4 counted
        for r in [&mut base, &mut row] {
            r.searches_interleaved = true;
        }
        let mut rows = vec![base, row];
        against_baseline(&mut rows, "a");
        let v = rows[1].vs_baseline.as_ref().unwrap();
        // Common rounds 1 and 4: 50 / 100 and 100 / 100.
        assert!(v.paired);
        assert!((v.ratio - 0.5f64.sqrt()).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn interleaved_searches_pair_by_round() {
        // Rounds: 100/50, 90/50, 110/50: ln ratios ln 2, ln 1.8, ln 2.2;
        // their mean is ln(7.92) / 3 = 0.68990 (ratio 1.99333) and their
        // sd 0.10036; t(0.975, 2) = 4.30265 gives a half-width of
        // 4.30265 x 0.10036 / sqrt(3) = 0.24932 on the log scale.
        let mut rows = vec![
            line("base", "p99 <= 1ms", &[50.0, 50.0, 50.0]),
            line("row", "p99 <= 1ms", &[100.0, 90.0, 110.0]),
        ];
        for r in &mut rows {
            r.searches_interleaved = true;
        }
        against_baseline(&mut rows, "base");
        let v = rows[1].vs_baseline.as_ref().unwrap();
        assert!(v.paired);
        assert!((v.ratio - 1.99333).abs() < 1e-4, "{v:?}");
        let [lo, hi] = v.ci95.unwrap();
        assert!((lo - (0.68990f64 - 0.24932).exp()).abs() < 1e-3, "{lo}");
        assert!((hi - (0.68990f64 + 0.24932).exp()).abs() < 1e-3, "{hi}");
        // A round missing on one side: the delta method, unpaired.
        rows[1].searches.pop();
        rows[1].vs_baseline = None;
        against_baseline(&mut rows, "base");
        assert!(!rows[1].vs_baseline.as_ref().unwrap().paired);
    }
}
