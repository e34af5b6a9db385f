//! Statistics over paired windows: the mean log ratio with Student's t over
//! blocks (the independent unit), and the split of windows by machine state.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// A ratio and its 95% confidence interval (all as ratios, not logs).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RatioCi {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
}

impl RatioCi {
    /// Half-width as a percentage of the ratio (the wider side).
    pub fn half_width_pct(&self) -> f64 {
        (self.hi - self.ratio).max(self.ratio - self.lo) / self.ratio * 100.0
    }

    /// True when the interval contains 1.0.
    pub fn contains_one(&self) -> bool {
        self.lo <= 1.0 && self.hi >= 1.0
    }
}

/// exp(mean) of log ratios with the t interval over the values as
/// independent pairs; `None` with fewer than 2 values.
pub fn t_ratio(logs: &[f64]) -> Option<RatioCi> {
    let n = logs.len();
    if n < 2 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(0.975);
    let half = t * (var / n as f64).sqrt();
    Some(RatioCi {
        ratio: mean.exp(),
        lo: (mean - half).exp(),
        hi: (mean + half).exp(),
    })
}

/// The ln ratio of a 95 % t interval with `df` degrees of freedom, and
/// its standard error recovered from the interval's half-width.
pub fn log_and_se(ci: &RatioCi, df: f64) -> (f64, f64) {
    let half = (ci.hi.ln() - ci.lo.ln()) / 2.0;
    (ci.ratio.ln(), half / crate::stats::t_quantile(0.975, df))
}

/// a / b of two ln effects with their standard errors: the ratio and its
/// delta-method 95 % interval (normal approximation).
pub fn log_ratio_ci((a, a_se): (f64, f64), (b, b_se): (f64, f64)) -> (f64, [f64; 2]) {
    let r = a / b;
    let se = r.abs() * ((a_se / a).powi(2) + (b_se / b).powi(2)).sqrt();
    (r, [r - 1.96 * se, r + 1.96 * se])
}

/// The run-level interval of a repeated comparison from each run's ln
/// ratio and its within-run standard error: exp(mean) with Student's t
/// (runs − 1 degrees of freedom) on the larger of the runs' observed
/// variance and their mean within-run variance. A run's result cannot vary
/// less from run to run than its own error says (the between-run variance
/// of a random-effects model, truncated at 0 as DerSimonian and Laird do).
/// With 2-3 runs that happen to agree, the bare t interval came out
/// narrower than every run's own interval (ntex on tokio ± 0.34 % across 3
/// runs each ± 1.4-3.5 %). `None` with fewer than 2 runs.
pub fn runs_t(runs: &[(f64, f64)]) -> Option<RatioCi> {
    let n = runs.len();
    if n < 2 {
        return None;
    }
    let mean = runs.iter().map(|r| r.0).sum::<f64>() / n as f64;
    let between = runs.iter().map(|r| (r.0 - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let within = runs.iter().map(|r| r.1 * r.1).sum::<f64>() / n as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(0.975);
    let half = t * (between.max(within) / n as f64).sqrt();
    Some(RatioCi {
        ratio: mean.exp(),
        lo: (mean - half).exp(),
        hi: (mean + half).exp(),
    })
}

/// The ratio of block means and its 95% interval: Student's t over the
/// mean log ratio of each block, with blocks − 1 degrees of freedom. A
/// block's windows share two processes, a slot order and a few seconds of
/// machine state (their 1 s ratios are autocorrelated, lag-1 0.3-0.8 on the
/// development VM), so the block, not the window, is the independent unit.
/// `None` with fewer than 2 non-empty blocks.
pub fn block_t(blocks: &[Vec<f64>]) -> Option<RatioCi> {
    let means: Vec<f64> = blocks
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| b.iter().sum::<f64>() / b.len() as f64)
        .collect();
    t_ratio(&means)
}

/// Machine state of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Fast,
    Slow,
    /// Next to a window of the other state in the same block: it may hold
    /// both states, so per-state figures leave it out.
    Switch,
    /// No second state found: every window is in one.
    Steady,
}

/// Relative gap between the two groups' means below which the machine is
/// taken to have one state.
pub const STATE_GAP: f64 = 0.10;

/// Splits windows by machine state from their total throughput (both stacks
/// together, which the compared settings change little). The rule: sort the
/// totals and cut them in two where the within-group variance is least
/// (Otsu's method, 1-D two-means); if the groups' means differ by less than
/// [`STATE_GAP`] of the lower, everything is [`State::Steady`]. A window
/// next to one of the other group in the same block is [`State::Switch`].
/// `blocks[i]` is the block of window `i`; windows are in time order.
pub fn states(totals: &[f64], blocks: &[u32]) -> (Vec<State>, Option<f64>) {
    let n = totals.len();
    if n < 4 {
        return (vec![State::Steady; n], None);
    }
    let mut sorted = totals.to_vec();
    sorted.sort_by(f64::total_cmp);
    let sum: f64 = sorted.iter().sum();
    let (mut best, mut cut) = (f64::INFINITY, 0);
    let mut left = 0.0;
    for i in 1..n {
        left += sorted[i - 1];
        let (nl, nr) = (i as f64, (n - i) as f64);
        let (ml, mr) = (left / nl, (sum - left) / nr);
        let within: f64 = sorted[..i].iter().map(|x| (x - ml).powi(2)).sum::<f64>()
            + sorted[i..].iter().map(|x| (x - mr).powi(2)).sum::<f64>();
        if within < best {
            best = within;
            cut = i;
        }
    }
    let ml = sorted[..cut].iter().sum::<f64>() / cut as f64;
    let mr = sorted[cut..].iter().sum::<f64>() / (n - cut) as f64;
    if (mr - ml) / ml < STATE_GAP {
        return (vec![State::Steady; n], None);
    }
    let threshold = (sorted[cut - 1] + sorted[cut]) / 2.0;
    let raw: Vec<State> = totals
        .iter()
        .map(|&t| {
            if t >= threshold {
                State::Fast
            } else {
                State::Slow
            }
        })
        .collect();
    let out = (0..n)
        .map(|i| {
            let differs = |j: usize| blocks[j] == blocks[i] && raw[j] != raw[i];
            if (i > 0 && differs(i - 1)) || (i + 1 < n && differs(i + 1)) {
                State::Switch
            } else {
                raw[i]
            }
        })
        .collect();
    (out, Some(threshold))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_worked_by_hand() {
        // logs 0.01, 0.03, 0.02, 0.00, 0.04: mean 0.02, sd 0.0158114,
        // se 0.00707107, t(0.975, 4) = 2.776445 -> half 0.0196324.
        let ci = t_ratio(&[0.01, 0.03, 0.02, 0.00, 0.04]).unwrap();
        assert!((ci.ratio - 0.02f64.exp()).abs() < 1e-12);
        assert!(
            (ci.lo - (0.02f64 - 0.019_632_4).exp()).abs() < 1e-6,
            "{ci:?}"
        );
        assert!(
            (ci.hi - (0.02f64 + 0.019_632_4).exp()).abs() < 1e-6,
            "{ci:?}"
        );
        assert!(t_ratio(&[0.1]).is_none());
    }

    #[test]
    fn block_interval_is_t_over_block_means_worked_by_hand() {
        // Equal block means: no width, however the windows inside vary.
        let same = vec![vec![0.01, 0.03], vec![0.02, 0.02], vec![0.03, 0.01]];
        let ci = block_t(&same).unwrap();
        assert!((ci.lo - 0.02f64.exp()).abs() < 1e-12 && (ci.hi - 0.02f64.exp()).abs() < 1e-12);
        // Block means 0.1, 0.1, 0.05, -0.02 (blocks of 2, 1, 3 and 1
        // windows weigh alike): mean 0.0575; squared deviations
        // 0.00180625 × 2 + 0.00005625 + 0.00600625 = 0.009675; sd
        // sqrt(0.009675 / 3) = 0.0567891; se 0.0283945; t(0.975, 3) =
        // 3.182446 -> half-width 0.0903633 in logs. An empty block is no block.
        let spread = vec![
            vec![0.0, 0.2],
            vec![0.1],
            vec![],
            vec![0.05; 3],
            vec![-0.02],
        ];
        let ci = block_t(&spread).unwrap();
        assert!((ci.ratio - 0.0575f64.exp()).abs() < 1e-9, "{ci:?}");
        assert!(
            (ci.lo - (0.0575f64 - 0.090_363_3).exp()).abs() < 1e-6,
            "{ci:?}"
        );
        assert!(
            (ci.hi - (0.0575f64 + 0.090_363_3).exp()).abs() < 1e-6,
            "{ci:?}"
        );
        // Over the 7 windows as if independent it would be narrower.
        let windows: Vec<f64> = spread.iter().flatten().copied().collect();
        assert!(t_ratio(&windows).unwrap().half_width_pct() < ci.half_width_pct());
        assert!(block_t(&[vec![0.1, 0.2], vec![]]).is_none());
    }

    #[test]
    fn two_states_split_and_switches_marked() {
        // Block 1: fast fast slow slow; block 2: slow slow slow fast.
        let totals = [400.0, 410.0, 200.0, 205.0, 210.0, 198.0, 202.0, 405.0];
        let blocks = [1, 1, 1, 1, 2, 2, 2, 2];
        let (s, cut) = states(&totals, &blocks);
        use State::*;
        assert_eq!(
            s,
            vec![Fast, Switch, Switch, Slow, Slow, Slow, Switch, Switch]
        );
        assert!((cut.unwrap() - (210.0 + 400.0) / 2.0).abs() < 1e-9);
        // One state: within 10%.
        let (s, cut) = states(&[100.0, 104.0, 101.0, 108.0], &[1, 1, 2, 2]);
        assert_eq!((s, cut), (vec![Steady; 4], None));
    }
}

#[cfg(test)]
mod runs_tests {
    use super::*;

    /// Three runs that agree (ln ratios 0.010, 0.011, 0.012: sd 0.001), each
    /// with a within-run standard error of 0.01. The runs' variance 1e-6 is
    /// below their own 1e-4, so the interval uses 1e-4: se sqrt(1e-4 / 3) =
    /// 0.0057735, t(0.975, 2) = 4.302653, half-width 0.0248414 in logs (the
    /// bare t over the runs would give 0.0024841, ten times narrower).
    #[test]
    fn runs_that_agree_by_chance_do_not_narrow_the_interval_below_their_errors() {
        let ci = runs_t(&[(0.010, 0.01), (0.011, 0.01), (0.012, 0.01)]).unwrap();
        assert!((ci.ratio.ln() - 0.011).abs() < 1e-12);
        assert!((ci.hi.ln() - 0.011 - 0.024_841_4).abs() < 1e-6, "{ci:?}");
        assert!((0.011 - ci.lo.ln() - 0.024_841_4).abs() < 1e-6, "{ci:?}");
        // Runs that disagree more than their errors: the runs' own spread.
        let wide = runs_t(&[(0.0, 0.001), (0.1, 0.001), (0.2, 0.001)]).unwrap();
        let bare = t_ratio(&[0.0, 0.1, 0.2]).unwrap();
        assert!((wide.hi - bare.hi).abs() < 1e-12 && (wide.lo - bare.lo).abs() < 1e-12);
        assert!(runs_t(&[(0.1, 0.01)]).is_none());
    }
}
