//! What a paired table decides, one line per comparison: the ratio, its
//! interval, and the answer in words, e.g.
//!
//! ```text
//! ntex/actix  0.812 (0.798-0.826, 95 %)  ntex is 18.8 % slower
//! A/A         1.002 (0.994-1.010, 95 %)  this run resolves about ±0.8 %
//! ```
//!
//! The rule: a comparison decides when its interval excludes 1 *and* its ratio's
//! distance from 1 is larger than what the table's A/A rows say the run can
//! resolve. Otherwise it says "no difference this run can resolve". An A/A
//! compares a build with itself, so any distance from 1 inside its interval
//! is one the run can show with no difference there: the resolution is the
//! end of the A/A interval farthest from 1 (for 1.002 (0.994-1.010), ±1.0
//! %). An A/A whose interval misses 1 says so (this run's intervals are too
//! narrow) and its far end still sets the resolution, so only differences
//! larger than that decide.
//!
//! Interleaved, each stack has the server's core alone in its turns, half
//! of every interval: its CPU per second (its 2xx/s x its CPU per request,
//! both over whole intervals) stays near half a core. A stack that used
//! more than [`TURN_CORES`] ran into the other's turns (a new TLS
//! connection's handshakes queued at its turn's end, say): the 2xx/s ratio
//! then compares unequal shares of the core and is no answer, and the line
//! gives the CPU per request ratio instead, which does not depend on whose
//! turn it is. (A stack may use less than half: a terminal emulator or a
//! sink's reader beside it takes CPU its figures do not count.)
//!
//! The interval is the comparison's reported one: over its runs when it ran
//! several (`runs = N`), else over the blocks of its one run (which covers
//! that run's blocks only; see the README's coverage section).

pub use super::report::{Answer, Verdict};
use super::report::{PairedRow, PairedTable};
use super::stats::RatioCi;
use crate::input::TableSpec;

/// The most of a core per second an interleaved stack on one core may use
/// and still count as having kept to its turns (half a core; runs that
/// kept to them read 0.48-0.51).
pub const TURN_CORES: f64 = 0.6;

/// Each side's CPU per second in cores (row, base), when both were measured.
fn cores(r: &PairedRow) -> Option<(f64, f64)> {
    Some((
        r.row_rps_mean * r.row_cpu_us_mean? / 1e6,
        r.base_rps_mean * r.base_cpu_us_mean? / 1e6,
    ))
}

/// How far from 1 an A/A interval reaches, percent: what the run can show
/// with no difference there.
pub fn reach_pct(ci: &RatioCi) -> f64 {
    (ci.hi - 1.0).max(1.0 - ci.lo).max(0.0) * 100.0
}

/// The reported interval of a row: across runs when it ran several, else
/// over its blocks.
fn reported(r: &PairedRow) -> Option<(RatioCi, usize)> {
    match r.across_runs {
        Some(ci) => Some((ci, r.runs.len())),
        None => r.rps.map(|m| (m.ci, 1)),
    }
}

/// Every comparison of `t` that has an interval, in the table's order.
pub fn answers(t: &PairedTable) -> Vec<Answer> {
    let aa: Vec<RatioCi> = t
        .rows
        .iter()
        .filter(|r| r.aa)
        .filter_map(|r| reported(r).map(|(ci, _)| ci))
        .collect();
    let resolution = aa.iter().map(reach_pct).fold(0.0, f64::max);
    let without_aa = !t.rows.iter().any(|r| r.aa);
    t.rows
        .iter()
        .filter_map(|r| {
            let (ratio, runs) = reported(r)?;
            let distance = (ratio.ratio - 1.0).abs() * 100.0;
            let overran = (t.schedule == "interleave")
                .then(|| cores(r))
                .flatten()
                .filter(|(row, base)| row.max(*base) > TURN_CORES)
                .zip(r.cpu_across_runs.or(r.cpu.map(|m| m.ci)));
            let verdict = if let (Some(((row_cores, base_cores), cpu)), false) = (overran, r.aa) {
                Verdict::Overran {
                    row_cores,
                    base_cores,
                    cpu,
                }
            } else if r.aa {
                let pct = reach_pct(&ratio);
                if ratio.contains_one() {
                    Verdict::Resolves { pct }
                } else {
                    Verdict::AaMissed { pct }
                }
            } else if ratio.contains_one() || distance <= resolution {
                Verdict::Unresolved
            } else if ratio.ratio < 1.0 {
                Verdict::Slower { pct: distance }
            } else {
                Verdict::Faster { pct: distance }
            };
            Some(Answer {
                row: r.name.clone(),
                against: r.against.clone().unwrap_or_else(|| t.baseline.clone()),
                aa: r.aa,
                ratio,
                runs,
                verdict,
                placement_free: r.placement_free,
                without_aa,
            })
        })
        .collect()
}

impl Answer {
    /// `ntex/actix`, or `A/A` for an A/A row.
    pub fn name(&self) -> String {
        if self.aa {
            "A/A".into()
        } else {
            format!("{}/{}", self.row, self.against)
        }
    }

    /// `0.812 (0.798-0.826, 95 %)`, with the runs when there are several.
    pub fn figure(&self) -> String {
        let runs = if self.runs > 1 {
            format!(", {} runs", self.runs)
        } else {
            String::new()
        };
        format!(
            "{:.3} ({:.3}-{:.3}, 95 %{runs})",
            self.ratio.ratio, self.ratio.lo, self.ratio.hi
        )
    }

    /// The answer in words; marked where the table has no A/A and where
    /// placement was left free.
    pub fn words(&self) -> String {
        let mut words = self.verdict_words();
        let differs = matches!(
            self.verdict,
            Verdict::Slower { .. } | Verdict::Faster { .. }
        );
        if self.without_aa && differs {
            words.push_str(" (no A/A in this run: by its interval alone)");
        }
        if self.placement_free {
            format!("{words} [placement free: where the scheduler put it]")
        } else {
            words
        }
    }

    fn verdict_words(&self) -> String {
        match self.verdict {
            Verdict::Slower { pct } => format!("{} is {pct:.1} % slower", self.row),
            Verdict::Faster { pct } => format!("{} is {pct:.1} % faster", self.row),
            Verdict::Unresolved => "no difference this run can resolve".into(),
            Verdict::Resolves { pct } => format!("this run resolves about ±{pct:.1} %"),
            Verdict::Overran {
                row_cores,
                base_cores,
                cpu,
            } => format!(
                "2xx/s no answer: the stacks used {row_cores:.2} and {base_cores:.2} of a core, not the half their turns give each; CPU per request {:.3} ({:.3}-{:.3})",
                cpu.ratio, cpu.lo, cpu.hi
            ),
            Verdict::AaMissed { pct } => format!(
                "the A/A misses 1 (this run's intervals are too narrow): it resolves only about ±{pct:.1} %"
            ),
        }
    }
}

/// `t` with its answers, only where the runner recorded which rows are
/// A/A rows (`spec`'s rows in `t` all say).
pub fn with_answers(mut t: PairedTable, spec: &TableSpec) -> PairedTable {
    let recorded = spec
        .row
        .iter()
        .filter(|r| t.rows.iter().any(|x| x.name == r.name))
        .all(|r| r.aa.is_some());
    if recorded {
        t.answers = answers(&t);
    }
    t
}

/// The answer lines of `answers`, names padded to one column.
pub fn lines(answers: &[Answer]) -> Vec<String> {
    let width = answers.iter().map(|a| a.name().len()).max().unwrap_or(0);
    let fig = answers.iter().map(|a| a.figure().len()).max().unwrap_or(0);
    answers
        .iter()
        .map(|a| format!("{:<width$}  {:<fig$}  {}", a.name(), a.figure(), a.words()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paired::report::row_figures;

    fn row(name: &str, aa: bool, ci: (f64, f64, f64)) -> PairedRow {
        let mut r = row_figures(name, name, &[]);
        r.aa = aa;
        r.across_runs = Some(RatioCi {
            ratio: ci.0,
            lo: ci.1,
            hi: ci.2,
        });
        r.runs = vec![Default::default(); 3];
        r
    }

    fn table(rows: Vec<PairedRow>) -> PairedTable {
        PairedTable {
            name: "t".into(),
            title: "t".into(),
            baseline: "actix".into(),
            baseline_label: "actix".into(),
            schedule: "interleave".into(),
            answers: Vec::new(),
            rows,
        }
    }

    #[test]
    fn a_comparison_decides_only_outside_its_interval_and_the_aa_resolution() {
        let mut nginx = row("ntex-nginx", false, (0.5, 0.49, 0.51));
        nginx.against = Some("ntex".into());
        let t = table(vec![
            row("ntex", false, (0.812, 0.798, 0.826)),
            // Excludes 1, but by less than the A/A reaches (±1.0 %).
            row("small", false, (0.99, 0.985, 0.995)),
            row("none", false, (1.01, 0.98, 1.04)),
            nginx,
            row("aa", true, (1.002, 0.994, 1.010)),
        ]);
        let a = answers(&t);
        let verdicts: Vec<Verdict> = a.iter().map(|a| a.verdict).collect();
        assert!(matches!(verdicts[0], Verdict::Slower { pct } if (pct - 18.8).abs() < 1e-9));
        assert_eq!(verdicts[1], Verdict::Unresolved);
        assert_eq!(verdicts[2], Verdict::Unresolved);
        assert_eq!(a[3].name(), "ntex-nginx/ntex");
        assert!(matches!(verdicts[4], Verdict::Resolves { pct } if (pct - 1.0).abs() < 1e-9));
        let text = lines(&a);
        assert_eq!(
            text[0],
            "ntex/actix       0.812 (0.798-0.826, 95 %, 3 runs)  ntex is 18.8 % slower"
        );
        assert!(text[4].starts_with("A/A  "), "{}", text[4]);
        assert!(text[4].ends_with("this run resolves about ±1.0 %"));
    }

    #[test]
    fn an_interleaved_row_that_ran_into_the_other_turns_answers_by_cpu_per_request() {
        let cpu = RatioCi {
            ratio: 2.114,
            lo: 1.990,
            hi: 2.245,
        };
        // The churning stack: 9,487 2xx/s at 70.9 µs (0.67 of a core)
        // against 9,737 at 33.6 (0.33); the other row kept to its turns
        // (0.51 and 0.49).
        let mut churn = row("churn", false, (0.976, 0.909, 1.048));
        (churn.row_rps_mean, churn.base_rps_mean) = (9487.0, 9737.0);
        (churn.row_cpu_us_mean, churn.base_cpu_us_mean) = (Some(70.9), Some(33.6));
        churn.cpu_across_runs = Some(cpu);
        let mut even = row("even", false, (0.787, 0.757, 0.817));
        (even.row_rps_mean, even.base_rps_mean) = (17005.0, 21622.0);
        (even.row_cpu_us_mean, even.base_cpu_us_mean) = (Some(29.7), Some(22.8));
        // A terminal beside the row takes CPU its figures do not count: 0.25
        // of a core is no overrun.
        let mut xterm = row("xterm", false, (0.234, 0.232, 0.236));
        (xterm.row_rps_mean, xterm.base_rps_mean) = (10000.0, 42000.0);
        (xterm.row_cpu_us_mean, xterm.base_cpu_us_mean) = (Some(25.0), Some(12.0));
        let aa = row("aa", true, (0.998, 0.961, 1.037));
        let mut t = table(vec![churn, even, xterm, aa]);
        let a = answers(&t);
        assert!(
            matches!(a[0].verdict, Verdict::Overran { row_cores, base_cores, cpu: c }
                if (row_cores - 0.673).abs() < 1e-3 && (base_cores - 0.327).abs() < 1e-3 && c == cpu),
            "{:?}",
            a[0].verdict
        );
        assert!(a[0]
            .words()
            .starts_with("2xx/s no answer: the stacks used 0.67 and 0.33 of a core"));
        assert!(a[0]
            .words()
            .ends_with("CPU per request 2.114 (1.990-2.245)"));
        assert!(matches!(a[1].verdict, Verdict::Slower { .. }));
        assert!(matches!(a[2].verdict, Verdict::Slower { .. }));
        // Loaded at once (duet), the scheduler splits the core: no turns to
        // run into, and the 2xx/s ratio stands.
        t.schedule = "duet".into();
        assert_eq!(answers(&t)[0].verdict, Verdict::Unresolved);
    }

    #[test]
    fn an_aa_that_misses_one_widens_what_the_run_resolves() {
        let t = table(vec![
            row("ntex", false, (0.812, 0.798, 0.826)),
            row("ntex-2", false, (0.975, 0.965, 0.985)),
            row("aa", true, (1.012, 1.0001, 1.024)),
        ]);
        let a = answers(&t);
        assert!(matches!(a[0].verdict, Verdict::Slower { .. }));
        // 2.5 % from 1: beyond the A/A's reach of 2.4 %.
        assert!(matches!(a[1].verdict, Verdict::Slower { .. }));
        assert!(matches!(a[2].verdict, Verdict::AaMissed { pct } if (pct - 2.4).abs() < 1e-9));
        let t = table(vec![
            row("ntex-2", false, (0.978, 0.968, 0.988)),
            row("aa", true, (1.012, 1.0001, 1.024)),
        ]);
        assert_eq!(answers(&t)[0].verdict, Verdict::Unresolved);
        // Without an A/A, the interval alone decides.
        // Without an A/A, the interval alone decides, and the words say so.
        let t = table(vec![
            row("ntex", false, (1.05, 1.01, 1.09)),
            row("same", false, (1.0, 0.98, 1.02)),
        ]);
        let a = answers(&t);
        assert!(matches!(a[0].verdict, Verdict::Faster { .. }));
        assert_eq!(
            a[0].words(),
            "ntex is 5.0 % faster (no A/A in this run: by its interval alone)"
        );
        assert_eq!(a[1].words(), "no difference this run can resolve");
    }

    #[test]
    fn an_answer_with_free_placement_says_so() {
        let mut free = row("ntex-nginx", false, (0.5, 0.49, 0.51));
        free.placement_free = true;
        let t = table(vec![
            row("ntex", false, (0.812, 0.798, 0.826)),
            free,
            row("aa", true, (1.0, 0.99, 1.01)),
        ]);
        let a = answers(&t);
        assert!(!a[0].words().contains("placement"));
        assert_eq!(
            a[1].words(),
            "ntex-nginx is 50.0 % slower [placement free: where the scheduler put it]"
        );
    }
}
