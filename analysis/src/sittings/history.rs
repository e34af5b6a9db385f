//! Each comparison's history: its answer in every sitting (one invocation
//! of the runner, one results folder), and once it has three or more, one
//! answer across them with a between-sitting variance component.
//!
//! A comparison's identity is everything that makes two answers the same
//! question: the scenario file, the row and what it is compared with, both
//! builds, the schedule, where every process runs, the load, and the CPU
//! model it ran on. Two
//! sittings of one identity agree when their log ratios differ by at most
//! 1.96 times the square root of the sum of their squared standard errors.
//!
//! Across sittings (random effects on the log ratio): the between-sitting
//! variance tau² by DerSimonian and Laird, each sitting weighted by
//! 1 / (se² + tau²), and the interval by Hartung, Knapp, Sidik and
//! Jonkman (Student's t with sittings - 1 degrees of freedom, on a variance
//! never below the weights' own), which holds its level with few sittings
//! where the plain normal interval is too narrow.
//!
//! For the next sitting (plan 3 of issue 44, `docs/sitting-interval-plan.md`):
//! a sitting with three earlier sittings or more of its comparison also
//! reports an interval that adds their between-sitting spread (tau over
//! the earlier sittings only) to its own error, since a sitting's blocks
//! see its own minutes, not the next hour.

use serde::{Deserialize, Serialize};

/// What makes two answers the same question.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Identity {
    /// The scenario file, as the run names it (`scenarios/quick.toml`).
    pub file: String,
    pub row: String,
    pub against: String,
    pub aa: bool,
    pub row_variant: String,
    pub base_variant: String,
    /// `interleave (200ms turns)`, `duet`...
    pub schedule: String,
    /// Where each process ran (`server 1, loadgen 0, nginx 1`); a process
    /// left to the scheduler says `scheduler`.
    pub placement: String,
    /// `post, 256 connections, 1 thread, loopback`.
    pub load: String,
    /// The CPU model the sittings ran on (meta.json's `cpu_model`): the
    /// same comparison on another machine is another question (the main
    /// command's nginx answer moved from 0.28 to 0.35 between two VMs).
    #[serde(default)]
    pub machine: String,
    /// The nginx config in front of each side (`row proxy-tls, base
    /// proxy`), empty when neither has nginx: two rows that differ only in
    /// their nginx config are two questions.
    #[serde(default)]
    pub nginx: String,
}

/// One sitting's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sitting {
    /// The run's folder name.
    pub run: String,
    pub date: String,
    pub git_sha: String,
    pub git_dirty: bool,
    pub kernel: String,
    pub cpu_model: String,
    /// 2xx/s ratio row / against, and its 95 % interval.
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Runs the interval is over (1: over one run's blocks).
    pub runs: usize,
    /// Degrees of freedom of the interval.
    pub df: f64,
    /// Standard error of the log ratio, from the interval.
    pub se_log: f64,
    /// With three earlier sittings or more: this sitting's interval for
    /// the next sitting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Next>,
}

/// A sitting's interval for the next sitting: its own error and the
/// between-sitting spread of the sittings before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Next {
    /// Earlier sittings the spread is over.
    pub earlier: usize,
    /// Their between-sitting standard deviation of the log ratio.
    pub tau_log: f64,
    /// ln x +- sqrt((t * se)^2 + (1.96 * tau)^2).
    pub lo: f64,
    pub hi: f64,
    /// sqrt(se^2 + tau^2).
    pub se_log: f64,
}

/// One answer across sittings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Across {
    pub sittings: usize,
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Between-sitting standard deviation of the log ratio (tau).
    pub tau_log: f64,
}

/// A comparison and its sittings, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub identity: Identity,
    pub sittings: Vec<Sitting>,
    /// With three sittings or more.
    pub across: Option<Across>,
}

/// `results/history.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct History {
    /// The rule two sittings agree by, in words.
    pub agreement_rule: String,
    pub comparisons: Vec<Comparison>,
}

/// The agreement rule, as history.json states it.
pub const AGREEMENT_RULE: &str =
    "two sittings agree when |ln x1 - ln x2| <= 1.96 * sqrt(se1^2 + se2^2)";

impl Sitting {
    /// The standard error of the log ratio of interval `lo..hi` with `df`
    /// degrees of freedom (Student's t).
    pub fn se_of(lo: f64, hi: f64, df: f64) -> f64 {
        (hi.ln() - lo.ln()) / 2.0 / crate::stats::t_quantile(0.975, df)
    }

    /// |ln x1 - ln x2| in units of its joint standard error.
    pub fn z_with(&self, other: &Sitting) -> f64 {
        let d = (self.ratio.ln() - other.ratio.ln()).abs();
        d / (self.se_log.powi(2) + other.se_log.powi(2)).sqrt()
    }

    /// Whether this sitting and `other` agree (see [`AGREEMENT_RULE`]).
    pub fn agrees_with(&self, other: &Sitting) -> bool {
        self.z_with(other) <= 1.96
    }

    /// |ln x1 - ln x2| in units of its joint standard error for the next
    /// sitting; none unless both sittings have one.
    pub fn z_next_with(&self, other: &Sitting) -> Option<f64> {
        let (a, b) = (self.next.as_ref()?, other.next.as_ref()?);
        let d = (self.ratio.ln() - other.ratio.ln()).abs();
        Some(d / (a.se_log.powi(2) + b.se_log.powi(2)).sqrt())
    }

    /// This sitting's interval for the next one, given the between-sitting
    /// spread `tau_log` of `earlier` sittings before it.
    pub fn next_with(&self, earlier: usize, tau_log: f64) -> Next {
        let t = crate::stats::t_quantile(0.975, self.df);
        let half = ((t * self.se_log).powi(2) + (1.96 * tau_log).powi(2)).sqrt();
        let mid = self.ratio.ln();
        Next {
            earlier,
            tau_log,
            lo: (mid - half).exp(),
            hi: (mid + half).exp(),
            se_log: (self.se_log.powi(2) + tau_log.powi(2)).sqrt(),
        }
    }
}

/// Pairs of `sittings` that agree, of all pairs: by their own intervals,
/// and by their intervals for the next sitting (pairs where both have
/// one). Each disagreeing pair with its |z|.
pub struct Agreement {
    pub own: (usize, usize),
    pub next: (usize, usize),
    /// (first, second, |z| own, |z| next) of pairs that disagree by either.
    pub disagree: Vec<(usize, usize, f64, Option<f64>)>,
}

/// Pairwise agreement of `sittings` both ways.
pub fn agreement(sittings: &[Sitting]) -> Agreement {
    let mut out = Agreement {
        own: (0, 0),
        next: (0, 0),
        disagree: Vec::new(),
    };
    for (i, a) in sittings.iter().enumerate() {
        for (j, b) in sittings.iter().enumerate().skip(i + 1) {
            let z = a.z_with(b);
            out.own.1 += 1;
            out.own.0 += usize::from(z <= 1.96);
            let zn = a.z_next_with(b);
            if let Some(zn) = zn {
                out.next.1 += 1;
                out.next.0 += usize::from(zn <= 1.96);
            }
            if z > 1.96 || zn.is_some_and(|z| z > 1.96) {
                out.disagree.push((i, j, z, zn));
            }
        }
    }
    out
}

/// The answer across `sittings` (three or more), else none.
pub fn across(sittings: &[Sitting]) -> Option<Across> {
    let k = sittings.len();
    if k < 3
        || sittings
            .iter()
            .any(|s| !s.se_log.is_finite() || s.se_log <= 0.0)
    {
        return None;
    }
    let y: Vec<f64> = sittings.iter().map(|s| s.ratio.ln()).collect();
    let v: Vec<f64> = sittings.iter().map(|s| s.se_log.powi(2)).collect();
    let w: Vec<f64> = v.iter().map(|v| 1.0 / v).collect();
    let sw: f64 = w.iter().sum();
    let fixed = w.iter().zip(&y).map(|(w, y)| w * y).sum::<f64>() / sw;
    let q: f64 = w.iter().zip(&y).map(|(w, y)| w * (y - fixed).powi(2)).sum();
    let c = sw - w.iter().map(|w| w * w).sum::<f64>() / sw;
    let tau2 = ((q - (k as f64 - 1.0)) / c).max(0.0);
    let ws: Vec<f64> = v.iter().map(|v| 1.0 / (v + tau2)).collect();
    let sws: f64 = ws.iter().sum();
    let mu = ws.iter().zip(&y).map(|(w, y)| w * y).sum::<f64>() / sws;
    let hk = ws
        .iter()
        .zip(&y)
        .map(|(w, y)| w * (y - mu).powi(2))
        .sum::<f64>()
        / ((k as f64 - 1.0) * sws);
    let se = hk.max(1.0 / sws).sqrt();
    let half = crate::stats::t_quantile(0.975, k as f64 - 1.0) * se;
    Some(Across {
        sittings: k,
        ratio: mu.exp(),
        lo: (mu - half).exp(),
        hi: (mu + half).exp(),
        tau_log: tau2.sqrt(),
    })
}

/// A comparison's drift over its sittings: the weighted least-squares
/// slope of the log ratio on time, per `unit`, as a percentage, with its
/// 95 % interval. Descriptive: the answer across sittings and the
/// intervals for the next sitting treat sittings as exchangeable, and a
/// drift is what they cannot see.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    pub pct: f64,
    pub lo: f64,
    pub hi: f64,
    /// "hour" when the sittings span less than two days, else "day".
    pub unit: &'static str,
    pub span_hours: f64,
}

/// The drift of `sittings` (four or more, at distinct times), else none.
/// Each sitting is weighed by its own error alone (a drift is part of
/// what the between-sitting spread would take in), and the slope's error
/// by the residuals' scatter where it exceeds those errors (t with k - 2
/// degrees of freedom).
pub fn trend(sittings: &[Sitting]) -> Option<Trend> {
    let k = sittings.len();
    if k < 4 {
        return None;
    }
    let mut t = Vec::with_capacity(k);
    for s in sittings {
        let at = humantime::parse_rfc3339_weak(&s.date).ok()?;
        if !s.se_log.is_finite() || s.se_log <= 0.0 {
            return None;
        }
        t.push(at);
    }
    let first = *t.iter().min()?;
    let hours: Vec<f64> = t
        .iter()
        .map(|at| {
            at.duration_since(first)
                .map_or(0.0, |d| d.as_secs_f64() / 3600.0)
        })
        .collect();
    let span_hours = hours.iter().cloned().fold(0.0, f64::max);
    let (unit, per) = if span_hours < 48.0 {
        ("hour", 1.0)
    } else {
        ("day", 24.0)
    };
    let x: Vec<f64> = hours.iter().map(|h| h / per).collect();
    let y: Vec<f64> = sittings.iter().map(|s| s.ratio.ln()).collect();
    let w: Vec<f64> = sittings.iter().map(|s| 1.0 / s.se_log.powi(2)).collect();
    let sw: f64 = w.iter().sum();
    let xm = w.iter().zip(&x).map(|(w, x)| w * x).sum::<f64>() / sw;
    let ym = w.iter().zip(&y).map(|(w, y)| w * y).sum::<f64>() / sw;
    let sxx: f64 = w.iter().zip(&x).map(|(w, x)| w * (x - xm).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = w
        .iter()
        .zip(x.iter().zip(&y))
        .map(|(w, (x, y))| w * (x - xm) * (y - ym))
        .sum::<f64>()
        / sxx;
    let scatter = w
        .iter()
        .zip(x.iter().zip(&y))
        .map(|(w, (x, y))| w * (y - ym - b * (x - xm)).powi(2))
        .sum::<f64>()
        / (k as f64 - 2.0);
    let se = (scatter.max(1.0) / sxx).sqrt();
    let half = crate::stats::t_quantile(0.975, k as f64 - 2.0) * se;
    let pct = |v: f64| v.exp_m1() * 100.0;
    Some(Trend {
        pct: pct(b),
        lo: pct(b - half),
        hi: pct(b + half),
        unit,
        span_hours,
    })
}

/// Groups `answers` (identity, sitting) by identity, each group's
/// sittings by date, with the answer across them.
pub fn build(mut answers: Vec<(Identity, Sitting)>) -> History {
    answers.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.date.cmp(&b.1.date))
            .then_with(|| a.1.run.cmp(&b.1.run))
    });
    let mut comparisons: Vec<Comparison> = Vec::new();
    for (identity, sitting) in answers {
        match comparisons.last_mut() {
            Some(c) if c.identity == identity => c.sittings.push(sitting),
            _ => comparisons.push(Comparison {
                identity,
                sittings: vec![sitting],
                across: None,
            }),
        }
    }
    for c in &mut comparisons {
        c.across = across(&c.sittings);
        let spreads: Vec<Option<f64>> = (0..c.sittings.len())
            .map(|j| across(&c.sittings[..j]).map(|x| x.tau_log))
            .collect();
        for (j, (s, tau)) in c.sittings.iter_mut().zip(spreads).enumerate() {
            s.next = tau.map(|tau| s.next_with(j, tau));
        }
    }
    History {
        agreement_rule: AGREEMENT_RULE.into(),
        comparisons,
    }
}

/// history.json's bytes (pretty, with a closing newline).
pub fn to_json(h: &History) -> anyhow::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(h)?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sitting(run: &str, ratio: f64, lo: f64, hi: f64) -> Sitting {
        Sitting {
            run: run.into(),
            date: run.into(),
            git_sha: "x".into(),
            git_dirty: false,
            kernel: "k".into(),
            cpu_model: "c".into(),
            ratio,
            lo,
            hi,
            runs: 1,
            df: 7.0,
            se_log: Sitting::se_of(lo, hi, 7.0),
            next: None,
        }
    }

    #[test]
    fn a_drift_over_sittings_is_found_and_a_steady_answer_is_not() {
        let at = |h: u32, r: f64| {
            let mut s = sitting("x", r, r * 0.97, r / 0.97);
            s.date = format!("2026-11-27T{h:02}:00:00Z");
            s
        };
        // ntex behind nginx on the Intel VM: 0.355, 0.343, 0.336, 0.327
        // an hour apart, each about ±3 %.
        let falling: Vec<Sitting> = [(20, 0.355), (21, 0.343), (22, 0.336), (23, 0.327)]
            .into_iter()
            .map(|(h, r)| at(h, r))
            .collect();
        let t = trend(&falling).unwrap();
        assert_eq!(t.unit, "hour");
        assert!(t.hi < 0.0 && (-4.0..-2.0).contains(&t.pct), "{t:?}");
        let steady: Vec<Sitting> = [(20, 0.33), (21, 0.34), (22, 0.325), (23, 0.335)]
            .into_iter()
            .map(|(h, r)| at(h, r))
            .collect();
        let t = trend(&steady).unwrap();
        assert!(t.lo < 0.0 && t.hi > 0.0, "{t:?}");
        assert!(trend(&falling[..3]).is_none());
    }

    #[test]
    fn sittings_agree_only_within_their_joint_error() {
        let a = sitting("a", 0.292, 0.278, 0.308);
        let b = sitting("b", 0.481, 0.441, 0.524);
        let c = sitting("c", 0.278, 0.267, 0.289);
        assert!(!a.agrees_with(&b));
        assert!(a.agrees_with(&c) && c.agrees_with(&a));
        assert_eq!(a.z_with(&a), 0.0);
        assert!(a.z_with(&b) > 1.96 && (a.z_with(&b) - b.z_with(&a)).abs() < 1e-12);
    }

    #[test]
    fn across_sittings_widens_with_their_spread_and_needs_three() {
        let same = [
            sitting("a", 0.80, 0.78, 0.82),
            sitting("b", 0.80, 0.78, 0.82),
        ];
        assert_eq!(across(&same), None);
        let three = [
            sitting("a", 0.80, 0.78, 0.82),
            sitting("b", 0.80, 0.78, 0.82),
            sitting("c", 0.80, 0.78, 0.82),
        ];
        let x = across(&three).unwrap();
        assert!((x.ratio - 0.80).abs() < 1e-9 && x.tau_log == 0.0, "{x:?}");
        // With no spread, the weights' own error sets the width: t with 2
        // degrees of freedom on se / sqrt(3).
        let se = three[0].se_log / 3f64.sqrt();
        let half = crate::stats::t_quantile(0.975, 2.0) * se;
        assert!((x.hi.ln() - 0.80f64.ln() - half).abs() < 1e-9, "{x:?}");
        let spread = [
            sitting("a", 0.75, 0.73, 0.77),
            sitting("b", 0.80, 0.78, 0.82),
            sitting("c", 0.85, 0.83, 0.87),
        ];
        let y = across(&spread).unwrap();
        assert!(y.tau_log > 0.03, "{y:?}");
        assert!(y.lo < 0.75 && y.hi > 0.85, "{y:?}");
    }

    #[test]
    fn the_next_sitting_interval_adds_only_earlier_sittings_spread() {
        let id = Identity {
            file: "f".into(),
            row: "r".into(),
            against: "b".into(),
            aa: false,
            row_variant: "v".into(),
            base_variant: "v".into(),
            schedule: "s".into(),
            placement: "p".into(),
            load: "l".into(),
            machine: "m".into(),
            nginx: String::new(),
        };
        let all = [
            sitting("1", 0.75, 0.74, 0.76),
            sitting("2", 0.80, 0.79, 0.81),
            sitting("3", 0.85, 0.84, 0.86),
            sitting("4", 0.81, 0.80, 0.82),
        ];
        let h = build(all.iter().map(|s| (id.clone(), s.clone())).collect());
        let got = &h.comparisons[0].sittings;
        assert!(got[..3].iter().all(|s| s.next.is_none()), "{got:?}");
        let next = got[3].next.as_ref().unwrap();
        // The spread of the three before it, not of all four.
        let tau = across(&all[..3]).unwrap().tau_log;
        assert_eq!(next.earlier, 3);
        assert!((next.tau_log - tau).abs() < 1e-12 && tau > 0.03, "{next:?}");
        assert!(next.lo < got[3].lo && next.hi > got[3].hi, "{next:?}");
        let se = (got[3].se_log.powi(2) + tau * tau).sqrt();
        assert!((next.se_log - se).abs() < 1e-12);
        // With no spread the interval is as wide as the sitting's own (on
        // the log scale, around its ratio).
        let same = got[3].next_with(3, 0.0);
        let width = |lo: f64, hi: f64| hi.ln() - lo.ln();
        assert!((width(same.lo, same.hi) - width(got[3].lo, got[3].hi)).abs() < 1e-12);
        assert!((same.lo * same.hi - 0.81f64.powi(2)).abs() < 1e-12);
        // The pair (2, 4) counts both ways; pairs with sitting 1 to 3 only
        // by their own intervals.
        let a = agreement(got);
        assert_eq!(a.own.1, 6);
        assert_eq!(a.next, (0, 0));
        let mut late = got.to_vec();
        for s in &mut late[..3] {
            s.next = Some(s.next_with(3, tau));
        }
        let b = agreement(&late);
        assert_eq!(b.next.1, 6);
        assert!(b.next.0 > b.own.0, "{:?} {:?}", b.next, b.own);
    }

    #[test]
    fn build_groups_by_identity_and_orders_by_date() {
        let id = |row: &str| Identity {
            file: "f".into(),
            row: row.into(),
            against: "b".into(),
            aa: false,
            row_variant: "v".into(),
            base_variant: "v".into(),
            schedule: "s".into(),
            placement: "p".into(),
            load: "l".into(),
            machine: "m".into(),
            nginx: String::new(),
        };
        let h = build(vec![
            (id("x"), sitting("2", 0.9, 0.8, 1.0)),
            (id("y"), sitting("1", 0.9, 0.8, 1.0)),
            (id("x"), sitting("1", 0.9, 0.8, 1.0)),
        ]);
        assert_eq!(h.comparisons.len(), 2);
        let runs: Vec<&str> = h.comparisons[0]
            .sittings
            .iter()
            .map(|s| s.run.as_str())
            .collect();
        assert_eq!(runs, ["1", "2"]);
        // The same comparison on another CPU model is another question.
        let other = Identity {
            machine: "n".into(),
            nginx: String::new(),
            ..id("x")
        };
        let h = build(vec![
            (id("x"), sitting("1", 0.9, 0.8, 1.0)),
            (other, sitting("2", 0.7, 0.6, 0.8)),
        ]);
        assert_eq!(h.comparisons.len(), 2);
    }
}
